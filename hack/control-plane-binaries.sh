#!/usr/bin/env bash
# Builds the binaries of a local Kubernetes control plane (kube-apiserver, etcd and a
# matching kubectl) from the Go module proxy and puts them into one folder, the layout
# envtest expects in KUBEBUILDER_ASSETS. Prebuilt envtest archives are not used: they are
# downloaded from outside the module proxy.
#
# Usage: hack/control-plane-binaries.sh <dest-dir>
# Prints nothing when the binaries for the pinned versions are already there.
set -euo pipefail
# shellcheck source=hack/k8s-module.sh
source "$(dirname "$0")/k8s-module.sh"

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

k8s_build "$work/k8s" "$dest" kube-apiserver kubectl
echo "$want" > "$stamp"
echo ">> control plane binaries in $dest" >&2
