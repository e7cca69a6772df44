/*
Copyright 2026 The Sandbar Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package authserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"
	"strings"
)

// Consent is what the consent page shows a person before a client gets a token
// for them, and what its form sends back.
type Consent struct {
	// Who is what the page leads with: what the server verified of the client,
	// never the client's own words (WhoOf).
	Who string
	// ClientName is the client's name for itself (client_name), which anyone can
	// write: shown second, as its own words; first, beside Who, when Trusted (an
	// admin listed the client). ClientID is its id (its metadata document's URL).
	ClientName, ClientID string
	Trusted              bool
	// RedirectURI is where the person's browser goes with the code (or the refusal).
	RedirectURI string
	// Resource is the MCP server the token is for.
	Resource string
	// User and Groups are the Kubernetes identity the client will act as.
	User   string
	Groups []string
	// Action is the path the form posts to; Request and Token are sent back with
	// the person's answer (the sealed auth request, and the token that binds the
	// form to the browser that was shown it).
	Action, Request, Token string
}

// Headline is how the page names the client: Who, or for a client an admin
// trusts, its own name and Who.
func (c Consent) Headline() string {
	if c.Trusted && c.ClientName != "" {
		return c.ClientName + " (" + c.Who + ")"
	}
	return c.Who
}

// WhoOf is what the server verified of a client, in words for the person asked:
// a program on their computer when their browser returns to a loopback address or
// to a scheme of the client's own (whatever its document's host, anyone can run
// it there); else the host its metadata document was fetched from, over TLS; else
// (a client that registered) the site it returns to.
func WhoOf(clientID, redirectURI string) string {
	switch kind, _ := redirectURIKind(redirectURI); kind {
	case "loopback", "private-use":
		return "a program on your computer"
	}
	if u, err := url.Parse(clientID); err == nil && u.Scheme == "https" && u.Hostname() != "" {
		return strings.ToLower(u.Hostname())
	}
	u, _ := url.Parse(redirectURI)
	return "the site " + strings.ToLower(u.Hostname())
}

// consentStyle is the page's only style, allowed by its hash (no external
// assets, no inline script).
const consentStyle = `body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}
h1{font-size:1.4rem}dl{display:grid;grid-template-columns:max-content 1fr;gap:.4rem 1rem}
dt{font-weight:600}dd{margin:0;word-break:break-all}.warn{background:#fff4e5;padding:.6rem .8rem;border-radius:.3rem}
form{display:flex;gap:1rem;margin-top:1.5rem}button{font-size:1rem;padding:.5rem 1.2rem;cursor:pointer}`

var consentStyleHash = func() string {
	sum := sha256.Sum256([]byte(consentStyle))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}()

var consentPage = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Allow {{.Headline}} to use Sandbar?</title>
<style>{{.Style}}</style></head>
<body>
<h1>Allow <strong>{{.Headline}}</strong> to use Sandbar as you?</h1>
{{if and .ClientName (not .Trusted)}}<p>It calls itself <q>{{.ClientName}}</q>: <em>the client's own words</em>, which anyone
can write. What Sandbar checked is above and below.</p>
{{end}}<dl>
<dt>Client</dt><dd><code>{{.ClientID}}</code></dd>
<dt>Server</dt><dd><code>{{.Resource}}</code></dd>
<dt>You</dt><dd><code>{{.User}}</code>{{if .Groups}}, in {{range $i, $g := .Groups}}{{if $i}}, {{end}}<code>{{$g}}</code>{{end}}{{end}}</dd>
<dt>Returns to</dt><dd><code>{{.RedirectURI}}</code></dd>
</dl>
<p class="warn">The client will be able to do in the cluster whatever Kubernetes RBAC lets
<code>{{.User}}</code> do through Sandbar's tools, until you or an admin revoke it.
Allow only a client you started yourself.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="request" value="{{.Request}}">
<input type="hidden" name="token" value="{{.Token}}">
<button type="submit" name="answer" value="allow">Allow</button>
<button type="submit" name="answer" value="deny">Deny</button>
</form>
</body></html>
`))

// ServeConsent writes the consent page with headers that keep it from being
// framed, cached or read by another origin. Its CSP allows its own style only
// and form posts to itself and, as browsers apply form-action to the redirect
// that follows a post, to the redirect URI's origin.
func ServeConsent(w http.ResponseWriter, c Consent) {
	view := struct {
		Consent
		Style template.CSS
	}{c, template.CSS(consentStyle)}
	var body bytes.Buffer
	if err := consentPage.Execute(&body, view); err != nil {
		http.Error(w, "the consent page could not be rendered", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src "+consentStyleHash+
		"; form-action 'self' "+formTarget(c.RedirectURI)+"; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write(body.Bytes())
}

// formTarget is the CSP source of a redirect URI: its origin, or its scheme for
// a private-use scheme.
func formTarget(redirectURI string) string {
	u, err := url.Parse(redirectURI)
	if err != nil || u.Scheme == "" || strings.ContainsFunc(u.Scheme+u.Host, notInSource) {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return scheme + ":"
	}
	return scheme + "://" + u.Host
}

// notInSource is true of a rune a CSP source must not hold as it is written here
// (letters, digits and ".-+:[]" are the ones a scheme, host and port need).
func notInSource(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	}
	return !strings.ContainsRune(".-+:[]", r)
}
