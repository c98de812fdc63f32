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
# that module is the one the guest loads, and the guest checks its srcversion.
# Last line: "boot: N passed, N failed".
set -euo pipefail
. "$(dirname "$0")/common.sh"

seed=${SSC_SEED:-$RANDOM}
d="$SSC_OUT/boot"
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
dk="$SSC_TOP/out/deb/dkms-ko/6.12"
pass=0 fail=0
if [ -e "$dk/dm-ssc.ko" ] && [ -s "$dk/srcversion" ]; then
	kos=(--ko "$dk/dm-ssc.ko")
	envs+=(--env "DKMS_SRCVERSION=$(cat "$dk/srcversion")")
	echo "ok - boot: the guest loads the dm-ssc.ko DKMS built ($dk)"
	pass=$((pass + 1))
else
	echo "not ok - boot: no DKMS-built dm-ssc.ko in $dk (scripts/deb-test.sh leaves it there): the tree's module is used"
	fail=$((fail + 1))
fi

drives=()
for n in cache origin ack; do
	drives+=(-drive "file=$d/$n.img,if=none,id=$n,format=raw,cache=writeback"
		 -device "virtio-blk-pci,drive=$n,serial=ssc-$n")
done

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
