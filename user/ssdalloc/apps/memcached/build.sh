#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Build memcached with its item memory on SSDAlloc: Debian 12's memcached source
# package, ssdalloc.patch beside this script (-o ssdalloc=malloc|mp|opp), linked
# against libssdalloc. The source is fetched once through a private deb-src list
# (/etc/apt is left alone) and the configured tree is kept in the cache, keyed by
# the source, the patch and ssdalloc.h, so a warm rebuild only relinks.
#
#   build.sh [--lib PATH/libssdalloc.a] [--out PATH]     (default: ../memcached-ssdalloc)
#
# Needs: apt-get, dpkg-source (dpkg-dev), patch, gcc, libevent-dev.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
lib=$here/../../libssdalloc.a
out=$here/../memcached-ssdalloc
while [ $# -gt 0 ]; do
	case $1 in
	--lib) lib=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) echo "usage: build.sh [--lib LIB] [--out PATH]" >&2; exit 2 ;;
	esac
done
die() { echo "memcached/build.sh: $*" >&2; exit 1; }
log() { echo "memcached/build.sh: $*" >&2; }

incdir=$(cd "$here/../.." && pwd)
[ -f "$lib" ] || die "$lib does not exist (make -C $incdir first)"
case $lib in *.a) ;; *) die "--lib: the static library (libssdalloc.a), not $lib" ;; esac
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
pkg-config --exists libevent || die "libevent-dev is not installed (apt-get install libevent-dev)"
command -v dpkg-source >/dev/null || die "dpkg-source is missing (apt-get install dpkg-dev)"
command -v patch >/dev/null || die "patch is missing (apt-get install patch)"

cache=${SSC_CACHE:-/var/cache/ssc-harness}/memcached-ssdalloc
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9

# the source package, once
if [ -z "$(find "$cache/src" -maxdepth 1 -name "memcached_*.dsc" 2>/dev/null)" ]; then
	rm -rf "$cache/src" "$cache/apt"
	mkdir -p "$cache/apt/lists/partial" "$cache/apt/cache/archives/partial" "$cache/src"
	mirror=$(grep -hoE '^URIs: *[^ ]+' /etc/apt/sources.list.d/*.sources 2>/dev/null |
		 awk '{print $2}' | grep -v security | head -n1 || true)
	[ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
	[ -n "$mirror" ] || die "cannot find the Debian mirror in the apt sources"
	printf 'deb-src %s bookworm main\n' "$mirror" > "$cache/apt/sources.list"
	apt_opts=(-o Dir::Etc::SourceList="$cache/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
		  -o Dir::State::Lists="$cache/apt/lists" -o Dir::Cache="$cache/apt/cache"
		  -o APT::Sandbox::User=root)
	log "fetching Debian's memcached source"
	apt-get "${apt_opts[@]}" -qq update || die "apt-get update (deb-src $mirror) failed"
	(cd "$cache/src" && apt-get "${apt_opts[@]}" -qq source --download-only memcached >/dev/null) ||
		die "apt-get source memcached failed"
	rm -rf "$cache/apt"
fi
dsc=$(find "$cache/src" -maxdepth 1 -name "memcached_*.dsc" | sort | head -n1)

key=$(cat "$dsc" "$here/ssdalloc.patch" "$incdir/ssdalloc.h" | sha256sum | cut -c1-16)
tree=$cache/build-$key
if [ ! -x "$tree/configure" ] || [ ! -f "$tree/Makefile" ]; then
	rm -rf "$cache"/build-* "$cache/tmp"
	log "extracting $(basename "$dsc") and applying ssdalloc.patch"
	dpkg-source -q --no-copy -x "$dsc" "$cache/tmp" >/dev/null 2>"$cache/extract.log" ||
		die "dpkg-source -x failed: $(cat "$cache/extract.log")"
	patch -d "$cache/tmp" -p1 --no-backup-if-mismatch -s < "$here/ssdalloc.patch" ||
		die "ssdalloc.patch does not apply to $(basename "$dsc")"
	log "configuring"
	# linked as ./libssdalloc.a, a copy refreshed before each link
	cp "$lib" "$cache/tmp/libssdalloc.a"
	(cd "$cache/tmp" && ./configure --disable-extstore --disable-sasl --disable-tls \
		--disable-docs CPPFLAGS="-I$incdir" LIBS="./libssdalloc.a -luring -pthread" \
		> configure.log 2>&1) || die "configure failed: $cache/tmp/configure.log"
	mv "$cache/tmp" "$tree"
fi
# relink every time: the library changes under us
rm -f "$tree/memcached"
cp "$lib" "$tree/libssdalloc.a"
make -C "$tree" -j"$(nproc)" memcached > "$tree/make.log" 2>&1 ||
	die "make failed: $(tail -n 20 "$tree/make.log")"
mkdir -p "$(dirname "$out")"
cp "$tree/memcached" "$out.tmp"
mv "$out.tmp" "$out"
echo "$out"
