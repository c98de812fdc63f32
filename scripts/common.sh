# SPDX-License-Identifier: GPL-2.0
# Sourced by the harness scripts: paths and small helpers shared by all of them.
# shellcheck shell=bash

SSC_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Everything fetched, extracted or built for the harness lives here, outside the repo,
# so a warm machine does not redo it. Safe to delete at any time.
SSC_CACHE=${SSC_CACHE:-/var/cache/ssc-harness}
SSC_OUT=${SSC_OUT:-$SSC_TOP/out}
mkdir -p "$SSC_CACHE" "$SSC_OUT"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# linux_src: print the path of an extracted, pristine-plus-our-hooks linux-source-6.12
# tree (extracted once from Debian's linux-source-6.12 tarball).
linux_src() {
	local tarball ver dir
	tarball=$(ls /usr/src/linux-source-6.12.tar.* 2>/dev/null | head -n1)
	[ -n "$tarball" ] || die "linux-source-6.12 is not installed (run scripts/deps.sh)"
	ver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
	dir="$SSC_CACHE/src/linux-source-$ver"
	if [ ! -e "$dir/.extracted" ]; then
		log "extracting $tarball"
		rm -rf "$dir"
		mkdir -p "$dir"
		tar -xf "$tarball" -C "$dir" --strip-components=1
		touch "$dir/.extracted"
	fi
	echo "$dir"
}
