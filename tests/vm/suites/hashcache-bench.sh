# SPDX-License-Identifier: GPL-2.0
# make bench-hashcache: each policy, freshly formatted on a 256 MiB null_blk
# (8 KiB slots, 8 ways: 32767 slots), takes HB_OBJECTS (24000) inserts of 6000-byte
# values, then HB_LOOKUPS (40000) gets of which 0, 40 and 80 % were inserted
# (BufferHash's lookup success rates), through `hcctl index bench`: device
# I/Os per insert, hit and miss from the kernel's counters, RAM bits per slot,
# and operations per second (emulated time: compare policies, not machines).
# One line per run: "# HCBENCH POLICY HIT% JSON".

HB_OBJECTS=${HB_OBJECTS:-24000}
HB_LOOKUPS=${HB_LOOKUPS:-40000}
check "modprobe hashcache" modprobe hashcache
check "null_blk index device" null_blk_add 256
DEV=/dev/nullb0
# NAME:FORMAT OPTIONS:BENCH OPTIONS; +prefetch puts groups of 8 (a page's
# objects) and walks them in order on hits
for run in basic:--policy=basic: set:--policy=set: setmem:--policy=setmem: \
	setmemlru:--policy=setmemlru: log:--policy=log: loglru:--policy=loglru: \
	log+prefetch:--policy=log,--prefetch:--group=8 \
	loglru+prefetch:--policy=loglru,--prefetch:--group=8; do
	pol=${run%%:*} rest=${run#*:}
	fo=$(echo "${rest%%:*}" | tr ',' ' ') bo=$(echo "${rest#*:}" | tr ',' ' ')
	for pct in 0 40 80; do
		# shellcheck disable=SC2086 # option lists
		check "$pol $pct %: format" hcctl index format $fo --seed 1 $DEV
		check "$pol $pct %: attach" hcctl index attach $DEV
		# shellcheck disable=SC2086
		b=$(hcctl --json index bench $DEV --objects "$HB_OBJECTS" --lookups "$HB_LOOKUPS" \
			--hit-rate $pct --value-size 6000 $bo)
		check_eq "$pol $pct %: no wrong value" 0 "$(printf '%s' "$b" | jq -r .wrong)"
		diag "HCBENCH $pol $pct $b"
		check "$pol $pct %: detach" hcctl index detach $DEV
	done
done
check "null_blk teardown" null_blk_teardown
