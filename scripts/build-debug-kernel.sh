#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build, once per config, the x86_64 debug kernel the VM harness boots: KASAN + lockdep + KUnit
# plus the in-tree block/dm modules the tests stack on, from Debian's linux-source-6.12.
# Debian's own kernels have KUNIT, KASAN and lockdep off, hence this build.
#
# Usage: scripts/build-debug-kernel.sh [--bench] [--config-only]
# --bench: the same kernel without the sanitizers (no KASAN, lockdep, kmemleak or KUnit;
# "-ssc-bench"), for make bench-flashvm, whose run-time ratios mean nothing under KASAN.
# --config-only: stop once the configuration is made and checked; print the .config's path.
# stdout: one line, the output directory. It is usable as KDIR for out-of-tree modules
# (make -C <dir> M=<module dir> modules) and holds kernel.env (KVER, BZIMAGE, MODROOT, KDIR).
# stderr: progress and errors only; the full make output goes to <dir>/build.log.
# Boot arch/x86/boot/bzImage: it is the tested path. (The feasibility study's KASAN vmlinux
# triple-faulted on the PVH entry; this config's vmlinux did boot via PVH, but don't rely on it.)
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

frag=$SSC_TOP/scripts/debug-kernel.config
[ -r "$frag" ] || die "missing $frag"
variant=debug config_only=0
for a in "$@"; do
	case $a in
	--bench) variant=bench ;;
	--config-only) config_only=1 ;;
	*) die "usage: build-debug-kernel.sh [--bench] [--config-only]" ;;
	esac
done

# The debug kernel is also the FlashVM test kernel: Debian's linux-source-6.12 with the
# swap policy hook series (kernel/flashvm/patches), which changes nothing until a policy
# module registers, so every other suite on it also checks that claim.
src=$(flashvm_src)
# kunit.sh hooks kernel/ssc into this shared tree; a stale link would break Kconfig here
hook_ssc_into_tree "$src"
debver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
# keyed by the fragment and by this script: a change to either builds anew
hash=$(cat "$frag" "${BASH_SOURCE[0]}" "$SSC_TOP"/kernel/flashvm/patches/* | sha256sum | cut -c1-12)
out=$SSC_CACHE/$variant-kernel/$debver-$hash
buildlog=$out/build.log
mkdir -p "$out"
if [ $variant = bench ]; then
	# the debug fragment less what only finds bugs (and costs run time)
	grep -vE '^CONFIG_(KASAN|KUNIT|PROVE_LOCKING|LOCK_STAT|DEBUG_ATOMIC_SLEEP|DEBUG_LIST|DEBUG_KMEMLEAK|LOCALVERSION)' \
		"$frag" >"$out/bench-kernel.config"
	echo 'CONFIG_LOCALVERSION="-ssc-bench"' >>"$out/bench-kernel.config"
	frag=$out/bench-kernel.config
fi

# Two harness runs may start at once on a cold machine; the second must wait, not build too.
exec 9>"$out.lock"
if ! flock -n 9; then
	log "$variant kernel: waiting for another build of $out"
	flock 9
fi

if [ -e "$out/.done" ] && [ "$(cat "$out/.done")" = "$hash" ]; then
	if [ $config_only = 1 ]; then echo "$out/.config"; else echo "$out"; fi
	exit 0
fi

# ARCH=x86_64 (not the default ARCH=x86): with ARCH=x86, tinyconfig would produce a 32-bit kernel.
# stdin from /dev/null: if the shared source tree's Kconfig grows a symbol after we configured
# (the UML KUnit script adds dm-ssc's), syncconfig takes its default instead of prompting.
kmake() {
	make -C "$src" O="$out" ARCH=x86_64 "$@" </dev/null >>"$buildlog" 2>&1
}

fail() {
	tail -n 30 "$buildlog" >&2
	die "$1 (full log: $buildlog)"
}

# Every line of the fragment must hold in the final .config. olddefconfig drops what it cannot
# satisfy without a word, and a kernel that quietly lost KASAN would pass every test.
verify_config() {
	local line sym want got
	local -A have=()
	local -a bad=()
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*) have[${line%%=*}]=${line#*=} ;;
		esac
	done <"$out/.config"
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*)
			sym=${line%%=*}
			want=${line#*=}
			;;
		"# CONFIG_"*" is not set")
			sym=${line#\# }
			sym=${sym%% *}
			want=n
			;;
		*) continue ;;
		esac
		got=${have[$sym]:-n}
		[ "$got" = "$want" ] || bad+=("$sym: requested $want, got $got")
	done <"$frag"
	if [ ${#bad[@]} -gt 0 ]; then
		printf '  %s\n' "${bad[@]}" >&2
		die "${#bad[@]} option(s) of $frag did not survive olddefconfig (missing dependency?); config: $out/.config"
	fi
}

# Configure only once per output dir: regenerating .config would rewrite autoconf.h and make an
# interrupted build start over instead of resuming.
if [ ! -e "$out/.configured" ]; then
	log "$variant kernel: configuring $out (tinyconfig + $(basename "$frag"))"
	: >"$buildlog"
	rm -f "$out/.config"
	kmake tinyconfig || fail "make tinyconfig failed"
	# -m: only merge here; olddefconfig below resolves dependencies, then we check the result.
	"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" "$frag" >>"$buildlog" 2>&1 ||
		fail "merge_config.sh failed"
	kmake olddefconfig || fail "make olddefconfig failed"
	verify_config
	touch "$out/.configured"
fi
if [ $config_only = 1 ]; then
	echo "$out/.config"
	exit 0
fi

log "$variant kernel: building bzImage + modules with $(nproc) jobs (about 10 min cold; log: $buildlog)"
start=$SECONDS
kmake -j"$(nproc)" bzImage modules || fail "kernel build failed"
# verify again: a Kconfig change in the shared source tree could have re-run syncconfig
verify_config

modroot=$out/modroot
rm -rf "$modroot"
# No compression and no signing (see the fragment), so depmod's modules.dep lists plain .ko files
# that `modprobe -d $MODROOT -S $KVER --show-depends` can resolve for the initramfs.
kmake INSTALL_MOD_PATH="$modroot" modules_install || fail "make modules_install failed"

kver=$(cat "$out/include/config/kernel.release")
bzimage=$out/arch/x86/boot/bzImage
[ -s "$bzimage" ] || die "no $bzimage after the build"
[ -s "$modroot/lib/modules/$kver/modules.dep" ] || die "modules_install did not run depmod for $kver"

cat >"$out/kernel.env" <<EOF
# Generated by scripts/build-debug-kernel.sh; source it.
KVER='$kver'
BZIMAGE='$bzimage'
MODROOT='$modroot'
KDIR='$out'
EOF
echo "$hash" >"$out/.done"
log "$variant kernel: $kver built in $((SECONDS - start)) s"
echo "$out"
