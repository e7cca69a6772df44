#!/usr/bin/env bash
# Builds the binaries of a local Kubernetes control plane (kube-apiserver, etcd and a
# matching kubectl) from the Go module proxy and puts them into one folder, the layout
# envtest expects in KUBEBUILDER_ASSETS. Prebuilt envtest archives are not used: they are
# downloaded from outside the module proxy.
#
# Usage: hack/control-plane-binaries.sh <dest-dir>
# Prints nothing when the binaries for the pinned versions are already there.
set -euo pipefail

KUBERNETES_VERSION="${KUBERNETES_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.4}"

dest="${1:?usage: $0 <dest-dir>}"
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
stamp="$dest/.versions"
want="kubernetes=${KUBERNETES_VERSION} etcd=${ETCD_VERSION}"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -x "$dest/kube-apiserver" && -x "$dest/etcd" && -x "$dest/kubectl" ]]; then
  exit 0
fi

export GOFLAGS="${GOFLAGS:-} -mod=mod"
export CGO_ENABLED=0
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# etcd's go.mod carries replace directives, so `go install pkg@version` refuses it;
# a throwaway wrapper module builds it instead.
echo ">> building etcd ${ETCD_VERSION}" >&2
mkdir -p "$work/etcd"
(
  cd "$work/etcd"
  printf 'module sandbar.dev/etcdbuild\n\ngo 1.24\n' > go.mod
  printf '//go:build tools\n\npackage etcdbuild\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
  go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >/dev/null
  go build -trimpath -ldflags "-s -w" -o "$dest/etcd" go.etcd.io/etcd/server/v3
)

# kubernetes' own go.mod replaces every k8s.io/<staging> module with ./staging/...;
# a wrapper module replaces each with its published v0.Y.Z release instead.
staging_version="v0.${KUBERNETES_VERSION#v1.}"
echo ">> building kube-apiserver and kubectl ${KUBERNETES_VERSION} (staging ${staging_version})" >&2
k8s_gomod="$(go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
{
  echo "module sandbar.dev/controlplane"
  echo
  echo "go 1.24"
  echo
  echo "require k8s.io/kubernetes ${KUBERNETES_VERSION}"
  echo
  grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$k8s_gomod" \
    | awk -v v="$staging_version" '{print "replace " $1 " => " $1 " " v}'
} > "$work/go.mod"
cat > "$work/tools.go" <<'GO'
//go:build tools

package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
(
  cd "$work"
  go get "k8s.io/kubernetes@${KUBERNETES_VERSION}" >/dev/null
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${KUBERNETES_VERSION} -X k8s.io/client-go/pkg/version.gitVersion=${KUBERNETES_VERSION}"
  go build -trimpath -ldflags "$ldflags" -o "$dest/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
  go build -trimpath -ldflags "$ldflags" -o "$dest/kubectl" k8s.io/kubernetes/cmd/kubectl
)
echo "$want" > "$stamp"
echo ">> control plane binaries in $dest" >&2
