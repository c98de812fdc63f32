#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the test VM's initramfs (uncompressed newc cpio: TCG decompresses slowly).
# Usage: mkinitramfs.sh OUT KVER MODROOT KO...
#   MODROOT  root holding lib/modules/KVER of the guest kernel (in-tree modules)
#   KO       our out-of-tree modules, installed under lib/modules/KVER/extra
# Contents: busybox, dmsetup, hcctl, SSDAlloc (libssdalloc.so in /usr/local/lib, its tests
# and applications in /ssc/ssdalloc/bin), jq, fio (static), tests/tools (static), blktrace, stress-ng, nbdkit (file plugin, delay filter), nbd-client, iproute2 ip, a few util-linux/coreutils
# tools, what SSC_VM_BINS names (host programs, with their libraries), the kernel's dm/null_blk/loop/virtio/ext4 modules, tests/vm as /ssc,
# synthetic traces in /ssc/traces and, for make bench-traces, the ones SSC_VM_TRACES holds.
set -euo pipefail
. "$(dirname "$0")/common.sh"

out=$1 kver=$2 modroot=$3
shift 3

# In-tree modules the suites use. Missing ones (Debian has no dm-dust) are skipped.
MODULES="dm-mod dm-linear dm-zero dm-flakey dm-delay dm-log-writes dm-dust dm-cache dm-cache-smq
	dm-writecache bcache null_blk brd loop virtio_blk virtio_pci crc32c_generic nbd veth
	ext4"
# nbdkit, nbd-client and iproute2's ip (busybox's knows no netns): ssc-nbd and make
# bench serve the origin over a veth pair from a network namespace
BINS="dmsetup blktrace blkparse dd blkdiscard blockdev cmp jq make-bcache stress-ng
	nbdkit nbd-client ip"

st=$(mktemp -d "$SSC_OUT/initramfs.XXXXXX")
trap 'rm -rf "$st"' EXIT
mkdir -p "$st"/{bin,sbin,dev,proc,sys,tmp,run,mnt,etc,lib,lib64,usr/bin,usr/sbin,ssc}
cp /bin/busybox "$st/bin/busybox"
for a in $(/bin/busybox --list); do
	[ -e "$st/bin/$a" ] || ln -s busybox "$st/bin/$a"
done

add_bin() { # add_bin PATH [DEST]: a program (or a dlopen()ed module) and its libraries
	local p=$1 lib
	install -D -m755 "$p" "$st${2:-/usr/bin/$(basename "$p")}"
	for lib in $(ldd "$p" 2>/dev/null | grep -oE '/[^ ]+' || true); do
		[ -e "$st$lib" ] || install -D -m755 "$(readlink -f "$lib")" "$st$lib"
	done
}
# SSC_VM_BINS: more host programs for one run (make bench's BENCH_PROFILE adds perf)
for b in $BINS ${SSC_VM_BINS:-}; do
	p=$(command -v "$b") || die "missing host binary $b (run scripts/deps.sh)"
	add_bin "$p"
done
add_bin "$("$SSC_TOP/scripts/static-fio.sh")"
# nbdkit dlopen()s its plugins and filters (ldd of nbdkit does not name them): the
# ones ssc-nbd and make bench use, at the paths nbdkit looks in
nbdcfg=$(nbdkit --dump-config)
for so in "$(sed -n 's/^plugindir=//p' <<<"$nbdcfg")/nbdkit-file-plugin.so" \
	"$(sed -n 's/^filterdir=//p' <<<"$nbdcfg")/nbdkit-delay-filter.so"; do
	[ -e "$so" ] || die "missing $so (run scripts/deps.sh)"
	add_bin "$so" "$so"
done
# the operator tool, dynamically linked (libdevmapper, json-c come along)
make -s -C "$SSC_TOP/user" hcctl >&2 || die "cannot build user/hcctl"
add_bin "$SSC_TOP/user/hcctl"
# SSDAlloc (user/ssdalloc): the shared library in /usr/local/lib, its tests (tests/user/
# ssdalloc, linked with the static library) and its applications in /ssc/ssdalloc/bin,
# built here when missing or stale (make decides; the user stage of make check built them
# into the same place). A build failure is a note (the programs of an earlier build, if
# any, go in), not a failure of every VM run: the ssdalloc suite fails on their absence.
sd="$SSC_OUT/ssdalloc/plain"
sdlog="$SSC_OUT/ssdalloc-vm-build.log"
: > "$sdlog"
make -s -C "$SSC_TOP/user/ssdalloc" O="$sd/lib" all >>"$sdlog" 2>&1 &&
	make -s -C "$SSC_TOP/tests/user/ssdalloc" O="$sd" all >>"$sdlog" 2>&1 ||
	log "note: SSDAlloc or its tests did not build (see $sdlog): the guest gets an older build, if any"
if [ -e "$SSC_TOP/user/ssdalloc/apps/Makefile" ] && [ -e "$sd/lib/libssdalloc.a" ]; then
	make -s -C "$SSC_TOP/user/ssdalloc/apps" O="$sd/apps" LIB="$sd/lib/libssdalloc.a" >>"$sdlog" 2>&1 ||
		log "note: SSDAlloc's applications did not build (see $sdlog): the guest gets an older build, if any"
fi
mkdir -p "$st/usr/local/lib" "$st/ssc/ssdalloc/bin"
for so in "$sd"/lib/libssdalloc.so*; do
	[ -e "$so" ] && cp -a "$so" "$st/usr/local/lib/"
done
# every program built there (ELF executables: not the scripts, objects or lists)
for b in "$sd"/test-* "$sd"/apps/*; do
	[ -f "$b" ] && [ -x "$b" ] && [ "$(head -c 4 "$b" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] &&
		add_bin "$b" "/ssc/ssdalloc/bin/$(basename "$b")"
done
# our own test tools (tests/tools/*.c), static
mkdir -p "$SSC_OUT/tools"
for src in "$SSC_TOP"/tests/tools/*.c; do
	t="$SSC_OUT/tools/$(basename "$src" .c)"
	# rebuilt when it or a header it may use (uapi, tests/tools/*.h) is newer
	if [ ! -x "$t" ] || [ "$src" -nt "$t" ] ||
		[ -n "$(find "$SSC_TOP/include/uapi" "$SSC_TOP/tests/tools" -newer "$t" -name '*.h')" ]; then
		cc -O2 -Wall -Wextra -Werror -static -o "$t" "$src" || die "cannot build $src"
	fi
	install -m755 "$t" "$st/usr/bin/"
	# what tests/vm/init's ssc.root= mode copies into the root it switches to
	basename "$t" >>"$st/ssc/tools.list"
done

md="$modroot/lib/modules/$kver"
[ -e "$md/modules.dep" ] || depmod -b "$modroot" "$kver"
for m in $MODULES; do
	deps=$(modprobe -d "$modroot" -S "$kver" --show-depends "$m" 2>/dev/null) || {
		log "note: $kver has no module $m"
		continue
	}
	awk '$1 == "insmod" {print $2}' <<<"$deps"
done | sort -u | while read -r ko; do
	rel=${ko#"$modroot"}
	install -D -m644 "$ko" "$st/${rel#/}"
done
cp "$md"/modules.order "$md"/modules.builtin* "$st/lib/modules/$kver/" 2>/dev/null || true
# busybox modprobe wants plain .ko files
find "$st/lib/modules" -name '*.ko.xz' -exec xz -d {} +
find "$st/lib/modules" -name '*.ko.zst' -exec zstd -q --rm -d {} \;
sed -i 's/\.ko\.\(xz\|zst\)/.ko/g' "$st/lib/modules/$kver/modules.order" 2>/dev/null || true
for ko in "$@"; do
	install -D -m644 "$ko" "$st/lib/modules/$kver/extra/$(basename "$ko")"
done
depmod -b "$st" "$kver"

# synthetic traces for the replay suite, converted to fio iologs on the host (the guest
# has no python); "<kind>.sum" holds the bytes each should read and write. The
# "<kind>-small" ones (a quarter of the requests over half the blocks) are what the
# replay suite takes at make check's small sizes on the debug kernel.
mkdir -p "$st/ssc/traces"
for t in zipf-read:16384:20000: write-heavy:16384:20000: scan:16384:20000: \
	zipf-read:8192:5000:-small write-heavy:8192:5000:-small scan:8192:5000:-small; do
	IFS=: read -r kind blocks reqs suf <<<"$t"
	f="$st/ssc/traces/$kind$suf"
	"$SSC_TOP/scripts/gentrace.py" "$kind" --blocks "$blocks" --requests "$reqs" |
		"$SSC_TOP/scripts/trace2iolog.py" -f msr --size 128M -o "$f.iolog" - 2>"$f.log" ||
		die "cannot make the $kind$suf trace: $(cat "$f.log")"
	sed -nE 's/.*: [0-9]+ reads \(([0-9]+) B\), [0-9]+ writes \(([0-9]+) B\).*/\1 \2/p' \
		"$f.log" > "$f.sum"
done
# the traces scripts/bench-traces.sh converted and planned for the bench-traces suite
# (SSC_VM_TRACES: a directory of NAME.iolog and NAME.bt), for this VM only
if [ -n "${SSC_VM_TRACES:-}" ]; then
	mkdir -p "$st/ssc/traces/bench"
	cp "$SSC_VM_TRACES"/*.iolog "$SSC_VM_TRACES"/*.bt "$st/ssc/traces/bench/" ||
		die "no traces in $SSC_VM_TRACES"
fi
install -m755 "$SSC_TOP/tests/vm/init" "$st/init"
cp -r "$SSC_TOP/tests/vm/run-suites.sh" "$SSC_TOP/tests/vm/lib.sh" "$SSC_TOP/tests/vm/crash-check.sh" "$SSC_TOP/tests/vm/splat.re" \
	"$SSC_TOP/tests/vm/suites" "$st/ssc/"
# the boot unit, whose ExecStart lines the boot-assemble suite runs as written
# (its paths are Debian's: /usr/sbin/hcctl, /sbin/modprobe)
mkdir -p "$st/ssc/system"
cp "$SSC_TOP"/user/system/ssc-assemble.service "$st/ssc/system/"
ln -sf ../bin/hcctl "$st/usr/sbin/hcctl"
[ -e "$st/sbin/modprobe" ] || ln -s ../bin/busybox "$st/sbin/modprobe"
echo "$kver" > "$st/etc/kver"
(cd "$st" && find . -print0 | cpio --null -o -H newc --quiet) > "$out"
