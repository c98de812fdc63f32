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
run dmsetup create cached --table "0 $LEN ssc /dev/nullb0 /dev/mapper/slowdisk 8 1 passthrough"
run dmsetup table cached
run fio --name=demo --filename=/dev/mapper/cached --ioengine=libaio --direct=1 \
	--rw=randrw --bs=4k --iodepth=8 --size=64m --runtime=5 --time_based \
	--verify=crc32c --group_reporting --output-format=terse --terse-version=3 --output=/tmp/fio.terse
awk -F';' '{printf "demo:   fio: read %s IOPS, write %s IOPS\n", $8, $49}' /tmp/fio.terse
run dmsetup status cached
set -- $(dmsetup status cached)
say "status fields: mode=$4 block_sectors=$5 segments=$6 reads=$7 writes=$8 discards=$9 flushes=${10}"
[ "$7" -gt 0 ] && [ "$8" -gt 0 ] && ok "fio I/O went through the cached volume" || not_ok "fio I/O went through the cached volume"
check "remove" dmsetup remove cached slowdisk
