#!/usr/bin/env bash
# Puts Debian's Chromium, and the libraries it needs that a Debian machine may lack,
# into one folder with a `chromium` launcher, for the browser test of the
# authorization server's consent page (internal/mcpserver). Nothing is installed on
# the machine: the packages are downloaded with apt (the Debian mirror) and unpacked.
#
# Usage: hack/chromium.sh <version> <dest-dir>
# Prints nothing when that version is already there. A version the mirror no longer
# serves (Debian replaces Chromium with every security release) fails with the one it
# serves now: set CHROMIUM_VERSION in the Makefile to it.
set -euo pipefail

version="${1:?usage: $0 <version> <dest-dir>}"
dest="${2:?usage: $0 <version> <dest-dir>}"
mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
stamp="$dest/.version"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$version" && -x "$dest/chromium" ]]; then
  exit 0
fi

# The libraries Chromium links that are not in a minimal Debian 12 with Go's
# build tools, and theirs (found with ldd on the unpacked binaries).
libraries=(libdouble-conversion3 libflac12 libharfbuzz-subset0 libminizip1 libopenh264-7 libopenjp2-7
  libopus0 libpulse0 libxnvctrl0 libogg0 libsndfile1 libasyncns0 libmp3lame0 libmpg123-0 libvorbis0a libvorbisenc2)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
if ! apt-get download -q "chromium=$version" "chromium-common=$version" "${libraries[@]}" >download.log 2>&1; then
  cat download.log >&2
  served="$(apt-cache policy chromium | awk '/Candidate:/ {print $2}')"
  echo "hack/chromium.sh: Chromium $version could not be downloaded; the mirror serves $served (set CHROMIUM_VERSION)" >&2
  exit 1
fi
rm -rf "$dest/root"
for deb in ./*.deb; do
  dpkg-deb -x "$deb" "$dest/root"
done
# The libraries' folder is the machine's multiarch one (x86_64-linux-gnu, aarch64-linux-gnu).
libs="$dest/root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -dumpmachine)"
libs="${libs/-pc-/-}"
cat >"$dest/chromium" <<LAUNCHER
#!/bin/sh
LD_LIBRARY_PATH="$libs:$libs/pulseaudio\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$dest/root/usr/lib/chromium/chromium" "\$@"
LAUNCHER
chmod +x "$dest/chromium"
if missing="$(LD_LIBRARY_PATH="$libs:$libs/pulseaudio" ldd "$dest/root/usr/lib/chromium/chromium" | grep 'not found')"; then
  echo "hack/chromium.sh: Chromium still lacks libraries; add their packages to the list:" >&2
  echo "$missing" >&2
  exit 1
fi
echo "$version" >"$stamp"
