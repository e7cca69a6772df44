#!/usr/bin/env bash
# Builds and fetches what a one-node cluster needs beyond the control plane of
# hack/control-plane-binaries.sh (etcd, kube-apiserver, kubectl), into one folder:
#   - kubelet, kube-proxy, kube-controller-manager and kube-scheduler, built from
#     k8s.io/kubernetes on the Go module proxy (hack/k8s-module.sh, as the control plane);
#   - containerd, its runc shim, ctr, runc, the CNI plugins and iptables (for
#     kube-proxy) with the libraries it needs beyond a base system, from Debian's
#     packages, downloaded with apt-get download (no root install) and unpacked with
#     dpkg-deb into <dest>/deb (usr/bin, usr/sbin, usr/lib/cni, usr/lib/<triplet>);
#   - <dest>/sbin: iptables, ip6tables and their -save and -restore, each a wrapper that
#     runs the unpacked iptables-nft with its libraries.
# Nothing is installed on the machine. Prints nothing when the pinned versions are there.
#
# Usage: hack/node-binaries.sh <dest-dir>
set -euo pipefail
# shellcheck source=hack/k8s-module.sh
source "$(dirname "$0")/k8s-module.sh"

KUBERNETES_VERSION="${KUBERNETES_VERSION:-v1.37.2}"
# Debian bookworm's versions: apt-get download fetches exactly these.
CONTAINERD_DEB="${CONTAINERD_DEB:-1.6.20~ds1-1+deb12u3}"
RUNC_DEB="${RUNC_DEB:-1.1.5+ds1-1+deb12u1}"
CNI_PLUGINS_DEB="${CNI_PLUGINS_DEB:-1.1.1+ds1-3+b5}"
IPTABLES_DEB="${IPTABLES_DEB:-1.8.9-2}"
# iptables' libraries that a base system lacks (libc6, libmnl0 and netbase it has).
IPTABLES_LIBS="libip4tc2=${IPTABLES_DEB} libip6tc2=${IPTABLES_DEB} libxtables12=${IPTABLES_DEB} libnftnl11=1.2.4-2 libnetfilter-conntrack3=1.0.9-3 libnfnetlink0=1.0.2-2"

dest="${1:?usage: $0 <dest-dir>}"
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
stamp="$dest/.versions"
want="kubernetes=${KUBERNETES_VERSION} containerd=${CONTAINERD_DEB} runc=${RUNC_DEB} cni=${CNI_PLUGINS_DEB} iptables=${IPTABLES_DEB}"
bins=(kubelet kube-proxy kube-controller-manager kube-scheduler)

have=1
for b in "${bins[@]}"; do [[ -x "$dest/$b" ]] || have=0; done
for b in usr/bin/containerd usr/bin/containerd-shim-runc-v2 usr/bin/ctr usr/sbin/runc usr/lib/cni/bridge usr/sbin/xtables-nft-multi; do
  [[ -x "$dest/deb/$b" ]] || have=0
done
if [[ $have == 1 && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi

export GOFLAGS="${GOFLAGS:-} -mod=mod"
export CGO_ENABLED=0
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo ">> fetching containerd ${CONTAINERD_DEB}, runc ${RUNC_DEB}, CNI plugins ${CNI_PLUGINS_DEB}, iptables ${IPTABLES_DEB} (Debian)" >&2
mkdir -p "$work/debs"
# shellcheck disable=SC2086 # IPTABLES_LIBS is a list of package=version
fetch() {
  (cd "$work/debs" && apt-get download -q "containerd=${CONTAINERD_DEB}" "runc=${RUNC_DEB}" \
    "containernetworking-plugins=${CNI_PLUGINS_DEB}" "iptables=${IPTABLES_DEB}" ${IPTABLES_LIBS}) >&2
}
# A machine whose package lists are older than the pinned versions reads them anew.
if ! fetch 2>"$work/apt.log"; then
  echo ">> apt-get download: $(grep -v '^W: Download is performed unsandboxed' "$work/apt.log" | head -3); reading the package lists again" >&2
  apt-get update -q >&2
  fetch
fi
rm -rf "$dest/deb" "$dest/sbin"
for deb in "$work"/debs/*.deb; do
  dpkg-deb -x "$deb" "$dest/deb"
done
# kube-proxy runs iptables, iptables-save and iptables-restore (and ip6tables') from
# the PATH: wrappers that run the unpacked ones with their libraries and extensions.
libdir="$(dirname "$(find "$dest/deb/usr/lib" -name 'libxtables.so.*' -print -quit)")"
mkdir -p "$dest/sbin"
for t in iptables ip6tables; do
  for suffix in "" -save -restore; do
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s XTABLES_LIBDIR=%s exec %s "$@"\n' \
      "$libdir" "$libdir/xtables" "$dest/deb/usr/sbin/${t}-nft${suffix}" > "$dest/sbin/${t}${suffix}"
    chmod +x "$dest/sbin/${t}${suffix}"
  done
done

k8s_build "$work/k8s" "$dest" "${bins[@]}"
echo "$want" > "$stamp"
echo ">> node binaries in $dest" >&2
