#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build Debian packages (make bindeb-pkg) of a kernel for flash-backed swap with FlashVM:
# Debian's linux-source-6.12 with the swap policy hook series (kernel/flashvm/patches),
# configured as Debian's own 6.12 kernel plus CONFIG_SWAP_POLICY_HOOKS=y. Install the
# linux-image .deb it makes, boot it, then build flashvm.ko against its headers package
# (make KDIR=/usr/src/linux-headers-<release>) and follow Documentation/flashvm.rst.
#
# Usage: scripts/build-flashvm-kernel.sh [--out DIR] [--config-only]
#   --out DIR      build directory (default $SSC_CACHE/flashvm-kernel); the .debs land in
#                  its parent directory, as bindeb-pkg puts them
#   --config-only  stop after writing and checking DIR/.config (a quick check of the series
#                  against Debian's configuration; the full build takes hours on 2 cores)
# The tests do not use this kernel: they boot the debug kernel (build-debug-kernel.sh),
# which carries the same series with a small QEMU configuration.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

out=$SSC_CACHE/flashvm-kernel config_only=
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=$2; shift 2 ;;
	--config-only) config_only=1; shift ;;
	*) die "build-flashvm-kernel.sh: unknown argument '$1'" ;;
	esac
done

src=$(flashvm_src)
# the copy shares the hooks of the tree it was made from: re-point its links
hook_ssc_into_tree "$src"
hdr=$(ls -d /usr/src/linux-headers-6.12.*-amd64 2>/dev/null | sort -V | tail -n1)
[ -n "$hdr" ] && [ -r "$hdr/.config" ] || die "no Debian 6.12 headers with a .config (run scripts/deps.sh)"
mkdir -p "$out"
log "flashvm kernel: $(basename "$hdr")'s configuration + CONFIG_SWAP_POLICY_HOOKS=y in $out"
cp "$hdr/.config" "$out/.config"
# Debian signs its modules with a key we do not have; a local build goes unsigned.
"$src/scripts/config" --file "$out/.config" \
	--enable SWAP_POLICY_HOOKS \
	--set-str LOCALVERSION -flashvm --disable LOCALVERSION_AUTO \
	--set-str SYSTEM_TRUSTED_KEYS '' --set-str SYSTEM_REVOCATION_KEYS '' \
	--disable MODULE_SIG_ALL --disable DEBUG_INFO_BTF_MODULES
make -C "$src" O="$out" olddefconfig </dev/null >"$out/config.log" 2>&1 ||
	{ tail -n 20 "$out/config.log" >&2; die "olddefconfig failed (log: $out/config.log)"; }
grep -qx 'CONFIG_SWAP_POLICY_HOOKS=y' "$out/.config" ||
	die "CONFIG_SWAP_POLICY_HOOKS did not survive olddefconfig"
grep -qx 'CONFIG_LRU_GEN_ENABLED=y' "$out/.config" ||
	log "note: this configuration does not enable MGLRU by default"
if [ -n "$config_only" ]; then
	echo "$out/.config"
	exit 0
fi
log "flashvm kernel: make bindeb-pkg with $(nproc) jobs (hours on a small machine; log: $out/build.log)"
make -C "$src" O="$out" -j"$(nproc)" bindeb-pkg </dev/null >"$out/build.log" 2>&1 ||
	{ tail -n 30 "$out/build.log" >&2; die "bindeb-pkg failed (log: $out/build.log)"; }
ls "$(dirname "$out")"/linux-image-*flashvm*.deb
