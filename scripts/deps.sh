#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install everything the build, the lint and the VM test harness need, from Debian only.
# Idempotent: packages already present are skipped, so a warm machine pays ~1 s.
set -euo pipefail

PKGS=(
	# VM harness
	qemu-system-x86 busybox-static kmod dmsetup cpio xz-utils zstd
	# test and trace tools (fio/blktrace are also rebuilt statically for the guest)
	fio blktrace libaio-dev jq
	# memory pressure with verified data for the flashvm suite (goes into the guest)
	stress-ng
	# peers of make bench-traces (make-bcache goes into the guest) and its plot
	bcache-tools gnuplot-nox
	# make bench's BENCH_PROFILE=1 puts perf into the guest
	linux-perf
	# user tools
	libdevmapper-dev libnl-3-dev libnl-genl-3-dev libjson-c-dev pkg-config
	# SSDAlloc (user/ssdalloc): its I/O goes through io_uring (liburing 2.3); its
	# ASan + UBSan build needs gcc's sanitizer runtimes (libasan8, libubsan1)
	liburing-dev libasan8 libubsan1
	# memcached on SSDAlloc (make check-full, make bench-ssdalloc): Debian's source is
	# built with libevent; memcaslap and memccapable drive and check it
	libevent-dev libmemcached-tools
	# kernels: Debian 12's 6.12 LTS (bookworm-security) and 6.1, headers + source
	linux-headers-6.12-amd64 linux-headers-amd64 linux-source-6.12
	# kernel build (modules, debug kernel, UML KUnit) and lint
	build-essential bc bison flex libelf-dev libssl-dev dwarves python3 sparse shellcheck rsync
	# static fio from Debian's source
	dpkg-dev
	# make deb: the packages, built and checked as a Debian developer would (DKMS)
	debhelper dh-dkms dkms lintian fakeroot libblkid-dev initramfs-tools
	# the origin across the network: a real NBD server and client in the guest
	nbdkit nbd-client iproute2
	# make check-full's boot-systemd stage: a Debian guest with systemd, built from
	# Debian's packages (scripts/debian-image.sh)
	debootstrap
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#PKGS[@]} packages present"
	exit 0
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# INITRD=No: the harness boots its own initramfs; skip update-initramfs for any kernel pulled in
INITRD=No apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
