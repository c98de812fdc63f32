# SPDX-License-Identifier: GPL-2.0
# The README demo: a cached volume over an emulated slow disk, fio, status.
say() { echo "demo: $*"; }
run() { say "\$ $*"; "$@" 2>&1 | sed 's/^/demo:   /'; }

check "null_blk: 256 MiB flash (nullb0) and 512 MiB disk (nullb1)" null_blk_setup 2 512
modprobe dm-delay
check "modprobe dm-ssc" modprobe dm-ssc
LEN=$(sectors /dev/nullb1)
say "slow disk: dm-delay adds 2 ms to every I/O of nullb1"
run dmsetup create slowdisk --table "0 $LEN delay /dev/nullb1 0 2"
say "cached volume: ssc <cache_dev> <origin_dev> <block_size> <#features> <features>"
run dmsetup create cached --table "0 $LEN ssc /dev/nullb0 /dev/mapper/slowdisk 8 1 writeback"
run dmsetup table cached
say "fio: random 4 KiB reads and writes over 64 MiB, twice (the second pass hits the cache)"
for pass in 1 2; do
	fio --name=demo --filename=/dev/mapper/cached --ioengine=libaio --direct=1 \
		--rw=randrw --bs=4k --iodepth=8 --size=64m --runtime=5 --time_based \
		--group_reporting --eta=never --output-format=terse --terse-version=3 --output=/tmp/fio.terse
	awk -F';' -v p=$pass '{printf "demo:   pass %s: read %s IOPS, write %s IOPS\n", p, $8, $49}' /tmp/fio.terse
done
run dmsetup status cached
say "status: cached=$(ssc_stat cached cached) dirty=$(ssc_stat cached dirty) read_hits=$(ssc_stat cached read_hits) read_misses=$(ssc_stat cached read_misses) write_hits=$(ssc_stat cached write_hits)"
h=$(ssc_stat cached read_hits)
[ "${h:-0}" -gt 0 ] && ok "reads hit the cache ($h)" || not_ok "reads hit the cache # '$h'"
say "retire: write everything back, then swap the table for linear"
run dmsetup message cached 0 writeback_all
i=0
while [ "$(ssc_stat cached dirty)" != 0 ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i + 1)); done
check_eq "all dirty data written back" 0 "$(ssc_stat cached dirty)"
check "remove" dmsetup remove cached slowdisk
check "null_blk teardown" null_blk_teardown
