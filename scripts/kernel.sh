#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Make a guest kernel ready and print its description as shell assignments:
#   KFLAVOR KVER KDIR MODROOT KIMAGE
# FLAVOR is 6.12 (Debian 12's 6.12 LTS from bookworm-security, the primary kernel),
# 6.1 (Debian 12's own kernel), debug (built from linux-source-6.12 with KASAN,
# lockdep and KUnit by build-debug-kernel.sh) or bench (the same without them).
#
# Debian kernels are not installed on the host: their image .deb is fetched and
# unpacked into $SSC_CACHE (no postinst, no initramfs, no bootloader), while the
# matching headers come from the installed linux-headers package (KDIR).
set -euo pipefail
. "$(dirname "$0")/common.sh"

flavor=${1:-6.12}

# Pull the ELF vmlinux out of a bzImage so qemu can boot it through the PVH entry,
# which skips real-mode setup and in-guest decompression (slow under TCG).
extract_vmlinux() {
	local bz=$1 out=$2 off magic tool
	for magic in '\x28\xb5\x2f\xfd:zstd -dcq' '\xfd\x37\x7a\x58\x5a\x00:xz -dcq'; do
		tool=${magic#*:}
		for off in $(LC_ALL=C grep -aboP "${magic%%:*}" "$bz" | cut -d: -f1); do
			tail -c +$((off + 1)) "$bz" | $tool > "$out.tmp" 2>/dev/null || true
			if [ "$(head -c 4 "$out.tmp" | od -An -c | tr -d ' ')" = "177ELF" ]; then
				mv "$out.tmp" "$out"
				return 0
			fi
		done
	done
	rm -f "$out.tmp"
	return 1
}

debian_kernel() {
	local meta=$1 kver dir
	# the ABI the installed headers meta-package points at
	kver=$(dpkg-query -W -f='${Depends}' "$meta" | grep -oE 'linux-headers-[^ ,]+' | head -n1)
	kver=${kver#linux-headers-}
	[ -n "$kver" ] && [ -d "/usr/src/linux-headers-$kver" ] ||
		die "$meta is not installed (run scripts/deps.sh)"
	dir="$SSC_CACHE/kernels/$kver"
	if [ ! -e "$dir/.done" ]; then
		log "fetching linux-image-$kver"
		rm -rf "$dir"
		mkdir -p "$dir/debs" "$dir/root"
		(cd "$dir/debs" && apt-get download -q -o APT::Sandbox::User=root "linux-image-$kver" >/dev/null)
		dpkg-deb -x "$dir"/debs/linux-image-*.deb "$dir/root"
		depmod -b "$dir/root" "$kver"
		extract_vmlinux "$dir/root/boot/vmlinuz-$kver" "$dir/vmlinux" ||
			die "cannot extract vmlinux from vmlinuz-$kver"
		rm -rf "$dir/debs"
		touch "$dir/.done"
	fi
	echo "KFLAVOR=$flavor"
	echo "KVER=$kver"
	echo "KDIR=/usr/src/linux-headers-$kver"
	echo "MODROOT=$dir/root"
	echo "KIMAGE=$dir/vmlinux"
}

case $flavor in
6.12)	debian_kernel linux-headers-6.12-amd64 ;;
6.1)	debian_kernel linux-headers-amd64 ;;
debug|bench)
	# bench: the same patched kernel without the sanitizers, for make bench-flashvm
	if [ "$flavor" = bench ]; then
		out=$("$SSC_TOP/scripts/build-debug-kernel.sh" --bench)
	else
		out=$("$SSC_TOP/scripts/build-debug-kernel.sh")
	fi
	# shellcheck disable=SC1091
	. "$out/kernel.env"
	echo "KFLAVOR=$flavor"
	echo "KVER=$KVER"
	echo "KDIR=$KDIR"
	echo "MODROOT=$MODROOT"
	# KASAN's early shadow access triple-faults on the PVH entry: boot the bzImage
	echo "KIMAGE=$BZIMAGE"
	;;
*)	die "unknown kernel flavor '$flavor' (want 6.12, 6.1, debug or bench)" ;;
esac
