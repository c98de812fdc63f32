#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build a static fio from Debian's own fio source package and print its path.
# Debian's fio binary drags ~84 MB of shared libraries (ceph, gluster, ...) into
# the guest initramfs; the static one is ~3 MB. Cached by source version.
set -euo pipefail
. "$(dirname "$0")/common.sh"

ver=$(dpkg-query -W -f='${Version}' fio 2>/dev/null) || die "fio is not installed (run scripts/deps.sh)"
out="$SSC_CACHE/fio-$ver/fio"
if [ -x "$out" ]; then
	echo "$out"
	exit 0
fi

work="$SSC_CACHE/fio-$ver"
rm -rf "$work"
mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/src"
# A private deb-src list so /etc/apt is left alone; same mirror the machine uses.
mirror=$(grep -hoE '^URIs: *[^ ]+' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | head -n1)
[ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || die "cannot find the Debian mirror in the apt sources"
printf 'deb-src %s bookworm main\n' "$mirror" > "$work/apt/sources.list"
apt_opts=(-o Dir::Etc::SourceList="$work/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
	  -o Dir::State::Lists="$work/apt/lists" -o Dir::Cache="$work/apt/cache"
	  -o APT::Sandbox::User=root)
log "fetching Debian's fio $ver source"
apt-get "${apt_opts[@]}" -qq update
(cd "$work/src" && apt-get "${apt_opts[@]}" -qq source --download-only "fio=$ver" >/dev/null)
for t in "$work"/src/fio_*.orig.tar.*; do
	case $t in *.asc) ;; *) tar -xf "$t" -C "$work/src" ;; esac
done
src=$(find "$work/src" -maxdepth 1 -type d -name 'fio-*' | head -n1)
log "building static fio"
(cd "$src" && ./configure --build-static --disable-native >"$work/build.log" 2>&1 &&
	make -j"$(nproc)" >>"$work/build.log" 2>&1) || die "static fio build failed: $work/build.log"
strip -o "$out" "$src/fio"
rm -rf "$work/src" "$work/apt"
echo "$out"
