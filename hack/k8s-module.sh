# shellcheck shell=bash
# Sourced by hack/control-plane-binaries.sh and hack/node-binaries.sh.
#
# k8s_build <work-dir> <dest-dir> <command>...: builds commands of k8s.io/kubernetes at
# KUBERNETES_VERSION (k8s.io/kubernetes/cmd/<command>) into dest-dir, with
# CGO_ENABLED=0. Kubernetes' own go.mod replaces every k8s.io/<staging> module with
# ./staging/...; a throwaway wrapper module in work-dir replaces each with its published
# v0.Y.Z release instead. The caller exports CGO_ENABLED=0 and GOFLAGS=-mod=mod.
k8s_build() {
  local work="$1" dest="$2"
  shift 2
  local staging_version="v0.${KUBERNETES_VERSION#v1.}"
  echo ">> building $* ${KUBERNETES_VERSION} (staging ${staging_version})" >&2
  local k8s_gomod
  k8s_gomod="$(go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  mkdir -p "$work"
  {
    echo "module sandbar.dev/k8sbuild"
    echo
    echo "go 1.24"
    echo
    echo "require k8s.io/kubernetes ${KUBERNETES_VERSION}"
    echo
    grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$k8s_gomod" \
      | awk -v v="$staging_version" '{print "replace " $1 " => " $1 " " v}'
  } > "$work/go.mod"
  {
    printf '//go:build tools\n\npackage k8sbuild\n\nimport (\n'
    local c
    for c in "$@"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
    printf ')\n'
  } > "$work/tools.go"
  (
    cd "$work" || exit 1
    go get "k8s.io/kubernetes@${KUBERNETES_VERSION}" >/dev/null
    local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=${KUBERNETES_VERSION} -X k8s.io/client-go/pkg/version.gitVersion=${KUBERNETES_VERSION}"
    # One go build for every command: the packages they share are built once, and
    # the links run side by side.
    local pkgs=()
    for c in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
    go build -trimpath -ldflags "$ldflags" -o "$dest/" "${pkgs[@]}"
  )
}
