#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Volumes that come back at boot (issue 20): two boots of the 6.12 VM over the
# same disk images on host files (tests/vm/suites/boot-assemble.sh).
#   boot 1  /etc/ssctab lists a write-back volume; the boot unit's ExecStart
#           assembles it (formatting the blank cache), crash-io writes, each
#           write durable before it is acknowledged; the host kills QEMU
#           (SIGKILL) a seeded number of acknowledged writes in, plus a seeded
#           delay, so the kill lands mid-write
#   boot 2  the unit assembles it again, the kernel recovers, every write
#           acknowledged before the kill reads back
# When make deb's test left the dm-ssc.ko DKMS built (out/deb/dkms-ko/6.12),
# that module is the one the guest loads, and the guest checks its srcversion and
# build ID.
#
# --systemd (make check-full): the same two boots under the real systemd and udev
# of a Debian 12 guest (scripts/debian-image.sh, cached; the initramfs switches to a
# copy of it, tests/vm/suites/boot-systemd.sh): the hcctl package (out/deb, make
# deb) installed with dpkg -i at the first boot, its ssc-assemble.service assembles
# /etc/ssctab before a service ordered after it starts, its udev rule assembles a
# second volume whose origin disk the host hot-plugs (QEMU device_add), and
# systemctl stop ssc-assemble.service disassembles both.
# Last line: "boot: N passed, N failed".
set -euo pipefail
. "$(dirname "$0")/common.sh"

systemd=''
case ${1:-} in
--systemd) systemd=1 ;;
"") ;;
*) die "usage: boot-test.sh [--systemd]" ;;
esac
seed=${SSC_SEED:-$RANDOM}
d="$SSC_OUT/boot${systemd:+-systemd}"
rm -rf "$d"
mkdir -p "$d"
truncate -s 64M "$d/cache.img"
truncate -s 128M "$d/origin.img"
truncate -s 4K "$d/ack.img"
# the kill: 120 to 369 acknowledged writes in, then 0 to 0.9 s more
k=$((120 + seed % 250))
delay=0.$((seed / 250 % 10))
echo "boot: seed $seed: kill after $k acknowledged writes + ${delay}s"

kos=() envs=(--env "BOOT_K=$k")
dk="$SSC_OUT/deb/dkms-ko/6.12"
pass=0 fail=0
if [ -e "$dk/dm-ssc.ko" ] && [ -s "$dk/srcversion" ] && [ -s "$dk/build-id" ]; then
	kos=(--ko "$dk/dm-ssc.ko")
	envs+=(--env "DKMS_SRCVERSION=$(cat "$dk/srcversion")" --env "DKMS_BUILD_ID=$(cat "$dk/build-id")")
	echo "ok - boot: the guest loads the dm-ssc.ko DKMS built ($dk)"
	pass=$((pass + 1))
else
	echo "not ok - boot: no DKMS-built dm-ssc.ko in $dk (scripts/deb-test.sh leaves it there): the tree's module is used"
	fail=$((fail + 1))
fi

count() { # count LOG: add a vm.sh run's "NAME: N passed, N failed" to the totals
	local line p f
	line=$(grep -oE '[0-9]+ passed, [0-9]+ failed' "$1" | tail -n1)
	if [ -z "$line" ]; then
		echo "not ok - boot: $(basename "$1" .log) produced no result"
		fail=$((fail + 1))
		return
	fi
	read -r p _ f _ <<<"${line//,/}"
	pass=$((pass + p)) fail=$((fail + f))
}

if [ -n "$systemd" ]; then
	t0=$SECONDS
	img=$("$SSC_TOP/scripts/debian-image.sh") || { echo "not ok - boot: the Debian image builds"; echo "boot: $pass passed, $((fail + 1)) failed"; exit 1; }
	echo "boot: Debian image $img ready in $((SECONDS - t0))s"
	ver=$(dpkg-parsechangelog -l "$SSC_TOP/scripts/deb/debian/changelog" -S Version)
	# make deb's package (deb-test.sh builds it first in make check-full), or built
	# here; SSC_HCCTL_DEB: another one to test
	hdeb=${SSC_HCCTL_DEB:-$SSC_OUT/deb/hcctl_${ver}_$(dpkg --print-architecture).deb}
	[ -f "$hdeb" ] || [ -n "${SSC_HCCTL_DEB:-}" ] || "$SSC_TOP/scripts/deb.sh" >"$d/deb.log" 2>&1 || true
	if [ ! -f "$hdeb" ]; then
		echo "not ok - boot: the hcctl package is built ($hdeb: make deb)"
		echo "boot: $pass passed, $((fail + 1)) failed"
		exit 1
	fi
	truncate -s 32M "$d/lcache.img"
	truncate -s 64M "$d/lorig.img"
	# the origin holds crash-io's version 0 before the unit assembles it at boot
	cc -O2 -static -o "$d/crash-io" "$SSC_TOP/tests/tools/crash-io.c"
	"$d/crash-io" fill "$d/origin.img" 8192
	# the run's copy of the image (it is written to) and what its first boot
	# installs (tests/vm/init runs /var/lib/ssc-run/setup in a chroot), put in
	# with debugfs: the image is never mounted on the host
	cp --reflink=auto --sparse=always "$img" "$d/root.img"
	cat >"$d/ssctab" <<-'EOF'
	# written by scripts/boot-test.sh --systemd, the same in both boots
	data  /dev/disk/by-id/virtio-ssc-cache   /dev/disk/by-id/virtio-ssc-origin  writeback     format=blank,segment-size=128K,dirty-high=20,dirty-low=5
	late  /dev/disk/by-id/virtio-ssc-lcache  /dev/disk/by-id/virtio-ssc-lorig   writethrough  format=blank,segment-size=128K
	EOF
	cat >"$d/setup" <<-'EOF'
	#!/bin/sh
	set -e
	dpkg -i /var/lib/ssc-run/hcctl.deb
	cp /var/lib/ssc-run/ssctab /etc/ssctab
	EOF
	chmod 755 "$d/setup"
	debugfs -w -f - "$d/root.img" >"$d/debugfs.log" 2>&1 <<-EOF
	mkdir /var/lib/ssc-run
	write $hdeb /var/lib/ssc-run/hcctl.deb
	write $d/ssctab /var/lib/ssc-run/ssctab
	write $d/setup /var/lib/ssc-run/setup
	sif /var/lib/ssc-run/setup mode 0100755
	EOF
	if debugfs -R 'ls -l /var/lib/ssc-run' "$d/root.img" 2>/dev/null | grep -q ' setup'; then
		echo "ok - boot: the run's copy of the image holds $(basename "$hdeb"), /etc/ssctab and the first-boot setup"
		pass=$((pass + 1))
	else
		echo "not ok - boot: the run's copy of the image holds $(basename "$hdeb"), /etc/ssctab and the first-boot setup"
		sed 's/^/# /' "$d/debugfs.log"
		fail=$((fail + 1))
	fi
	sdrives=(-drive "file=$d/root.img,if=none,id=root,format=raw,cache=unsafe"
		 -device "virtio-blk-pci,drive=root,serial=ssc-root")
	for n in cache origin ack lcache lorig; do
		sdrives+=(-drive "file=$d/$n.img,if=none,id=$n,format=raw,cache=writeback")
	done
	for n in cache origin ack lcache; do
		sdrives+=(-device "virtio-blk-pci,drive=$n,serial=ssc-$n")
	done
	plug="virtio-blk-pci,drive=lorig,serial=ssc-lorig,id=lorig"
	t0=$SECONDS
	"$SSC_TOP/scripts/vm.sh" --kernel 6.12 --name boot-systemd-1 --root /dev/vda --suites boot-systemd \
		--timeout 900 --env BOOT=1 "${envs[@]}" ${kos[@]+"${kos[@]}"} \
		--on '^@@HOTPLUG' "device_add $plug" --kill-after '^@@KILL_ME' --kill-delay "$delay" \
		-- "${sdrives[@]}" > "$d/boot-1.log" 2>&1 || true
	grep -E '^(not )?ok |^# (# )?(boot|crash-io|@@|the journal|ssc-assemble)' "$d/boot-1.log" || true
	count "$d/boot-1.log"
	echo "boot: boot 1 took $((SECONDS - t0))s"
	t0=$SECONDS
	"$SSC_TOP/scripts/vm.sh" --kernel 6.12 --name boot-systemd-2 --root /dev/vda --suites boot-systemd \
		--timeout 900 --env BOOT=2 "${envs[@]}" ${kos[@]+"${kos[@]}"} \
		-- "${sdrives[@]}" -device "$plug" > "$d/boot-2.log" 2>&1 || true
	grep -E '^(not )?ok |^# (# )?(boot|status|@@|ssc-assemble)' "$d/boot-2.log" || true
	count "$d/boot-2.log"
	echo "boot: boot 2 took $((SECONDS - t0))s"
	echo "boot: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
fi

drives=()
for n in cache origin ack; do
	drives+=(-drive "file=$d/$n.img,if=none,id=$n,format=raw,cache=writeback"
		 -device "virtio-blk-pci,drive=$n,serial=ssc-$n")
done

"$SSC_TOP/scripts/vm.sh" --kernel 6.12 --name boot-1 --suites boot-assemble --timeout 600 \
	--env BOOT=1 "${envs[@]}" ${kos[@]+"${kos[@]}"} --kill-after '^@@KILL_ME' --kill-delay "$delay" \
	-- "${drives[@]}" > "$d/boot-1.log" 2>&1 || true
grep -E '^(not )?ok |^# (boot|crash-io|@@)' "$d/boot-1.log" || true
count "$d/boot-1.log"
"$SSC_TOP/scripts/vm.sh" --kernel 6.12 --name boot-2 --suites boot-assemble --timeout 600 \
	--env BOOT=2 "${envs[@]}" ${kos[@]+"${kos[@]}"} \
	-- "${drives[@]}" > "$d/boot-2.log" 2>&1 || true
grep -E '^(not )?ok |^# (boot|status)' "$d/boot-2.log" || true
count "$d/boot-2.log"
echo "boot: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
