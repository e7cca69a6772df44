{{- define "sandbar.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sandbar.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sandbar.labels" -}}
app.kubernetes.io/name: {{ include "sandbar.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "sandbar.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sandbar.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end -}}

{{- define "sandbar.serviceAccountName" -}}
{{ include "sandbar.fullname" . }}-manager
{{- end -}}

{{- /* The public URL of the OAuth route: oauth.resourceURL, or made from the route. */ -}}
{{- define "sandbar.oauthResourceURL" -}}
{{- if .Values.oauth.resourceURL -}}
{{- .Values.oauth.resourceURL -}}
{{- else if eq .Values.oauth.route "host" -}}
{{- if not .Values.oauth.host }}{{ fail "oauth.route=host needs oauth.host" }}{{ end -}}
{{- printf "https://%s/mcp" .Values.oauth.host -}}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts -}}
{{- printf "https://%s%s" (first .Values.ingress.hosts).host .Values.oauth.path -}}
{{- else -}}
{{- fail "OAuth is on (oauth.issuerURL or oauth.authorizationServer.enabled): set oauth.resourceURL to the public URL of the OAuth route, or enable the Ingress" -}}
{{- end -}}
{{- end -}}

{{- /* The origin clients reach the server at: mcp.publicURL, or the first Ingress
host (https with the Ingress's TLS, http without, as NOTES.txt says). */ -}}
{{- define "sandbar.publicURL" -}}
{{- if .Values.mcp.publicURL -}}
{{- .Values.mcp.publicURL -}}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts -}}
{{- printf "%s://%s" (ternary "https" "http" (gt (len .Values.ingress.tls) 0)) (first .Values.ingress.hosts).host -}}
{{- end -}}
{{- end -}}

{{- /* sandbar.oauthEnabled is "true" when the OAuth route is served: tokens of an
issuer, or of the authorization server in the manager. */ -}}
{{- define "sandbar.oauthEnabled" -}}
{{- if or .Values.oauth.issuerURL .Values.oauth.authorizationServer.enabled }}true{{ end -}}
{{- end -}}

{{- /* sandbar.authServerPaths are the Ingress paths of the authorization server. */ -}}
{{- define "sandbar.authServerPaths" -}}
{{- if .Values.oauth.authorizationServer.enabled -}}
- path: /oauth2
  pathType: Prefix
  backend:
    service:
      name: {{ include "sandbar.fullname" . }}-mcp
      port:
        name: mcp
{{- range list "/.well-known/oauth-authorization-server/oauth2" "/.well-known/openid-configuration/oauth2" }}
- path: {{ . }}
  pathType: Exact
  backend:
    service:
      name: {{ include "sandbar.fullname" $ }}-mcp
      port:
        name: mcp
{{- end }}
{{- end -}}
{{- end -}}
