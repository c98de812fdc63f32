# SPDX-License-Identifier: GPL-2.0
# dm-ssc data path in every mode, with a cache much smaller than the working
# set so that garbage collection, silent eviction and write-back really run.
# Devices: nullb0 = 48 MiB cache (24 segments of 2 MiB, 23 for data),
# nullb1 = 512 MiB origin (128 MiB in make check on the debug kernel, where
# the working set is 48 MiB: still past the cache, so GC and eviction run,
# and every whole-device compare reads 4x less under KASAN).

OMB=512 WS=160m
# make check on 6.12: 128 MiB (3.5 x the cache; 160 until issue 22's third trim)
is_full || WS=128m
is_debug_kernel && WS=96m
is_small && OMB=128 WS=48m
# what fio wrote (its first WS): the compares of the origin with the volume
# (the rest of the origin was never written: reading it through the volume only
# fills the cache, at KASAN's price)
CMP_MB=${WS%m}
# writearound fills the cache on reads alone: at the small sizes half the working
# set does (its writes go around, and writethrough already ran GC on fills)
WA_WS=$WS
is_small && WA_WS=24m
check "modprobe dm-ssc" modprobe dm-ssc
check "null_blk cache device" null_blk_add 48
check "null_blk origin device" null_blk_add $OMB
CACHE=/dev/nullb0
ORIGIN=/dev/nullb1
LEN=$(sectors $ORIGIN)

mk() {	# mk MODE [features...]: volume v over a freshly formatted cache
	dmsetup remove v 2>/dev/null
	n=$(($# + 1))
	dmsetup create v --table "0 $LEN ssc $CACHE $ORIGIN 8 $n format $*"
}

# --- writethrough: misses fill, GC silently evicts clean blocks -------------
check "create writethrough" mk writethrough
fio_verify "writethrough: fio verify over $WS (cache 36 MiB)" /dev/mapper/v $WS
gc=$(ssc_stat v gc_runs) ev=$(ssc_stat v gc_evicted) cp=$(ssc_stat v gc_copied)
[ "$gc" -gt 0 ] && [ "$ev" -gt 0 ] && ok "writethrough: GC ran ($gc runs) and silently evicted $ev blocks" ||
	not_ok "writethrough: GC ran and evicted # runs '$gc' evicted '$ev'"
check_eq "writethrough: GC copied nothing (all clean)" 0 "$cp"
check_eq "writethrough: nothing dirty" 0 "$(ssc_stat v dirty)"
check "writethrough: origin holds the data ($CMP_MB MiB)" same_data /dev/mapper/v $ORIGIN $CMP_MB
hits=$(ssc_stat v read_hits)
[ "$hits" -gt 0 ] && ok "writethrough: verify reads hit the cache ($hits)" || not_ok "writethrough: read hits # '$hits'"

# --- writeback: dirty data, write-back, GC copies dirty blocks -------------
check "zero origin" dd if=/dev/zero of=$ORIGIN bs=1M count=$((OMB / 2)) oflag=direct
check "create writeback" mk writeback dirty_high 30 dirty_low 20
fio_verify "writeback: fio verify over $WS" /dev/mapper/v $WS
wb=$(ssc_stat v writebacks) gc=$(ssc_stat v gc_runs) dirty=$(ssc_stat v dirty)
[ "$wb" -gt 0 ] && ok "writeback: background write-back ran ($wb blocks)" || not_ok "writeback: write-back ran # '$wb'"
[ "$gc" -gt 0 ] && ok "writeback: GC ran ($gc runs, $(ssc_stat v gc_copied) dirty blocks copied)" ||
	not_ok "writeback: GC ran # '$gc'"
[ "$dirty" -gt 0 ] && ok "writeback: $dirty blocks still dirty" || not_ok "writeback: dirty blocks left # '$dirty'"
check_fails "writeback: origin lacks the dirty data" same_data /dev/mapper/v $ORIGIN $CMP_MB
check "writeback: writeback_all message" dmsetup message v 0 writeback_all
i=0
while [ "$(ssc_stat v dirty)" != 0 ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i + 1)); done
check_eq "writeback: writeback_all drained every dirty block" 0 "$(ssc_stat v dirty)"
check "writeback: origin now equals the volume ($CMP_MB MiB)" same_data /dev/mapper/v $ORIGIN $CMP_MB
check "writeback: retire to linear" sh -c "dmsetup reload v --table '0 $LEN linear $ORIGIN 0' && dmsetup resume v"
fio_verify "writeback: data verifies on plain linear after retiring" /dev/mapper/v $WS --verify_only

# --- SSC commands: exists / evict / clean -----------------------------------
dmsetup remove v
check "create writeback for commands" mk writeback
dd if=/dev/urandom of=/tmp/blk bs=4k count=4 2>/dev/null
dd if=/tmp/blk of=/tmp/b101 bs=4k skip=1 count=1 2>/dev/null
check "write 4 blocks at block 100" dd if=/tmp/blk of=/dev/mapper/v bs=4k seek=100 oflag=direct
check_eq "exists shows blocks 100-103 dirty" "4-7" "$(dmsetup message v 0 exists 96 16)"
check_fails "evict refuses a dirty block" dmsetup message v 0 evict 101
check "clean writes block 101 back" dmsetup message v 0 clean 101
check_eq "exists: block 101 clean now" "4,6-7" "$(dmsetup message v 0 exists 96 16)"
check "origin has block 101" sh -c "dd if=$ORIGIN bs=4k skip=101 count=1 iflag=direct 2>/dev/null | cmp - /tmp/b101"
check "evict block 101" dmsetup message v 0 evict 101
check "read after evict returns the data (from the origin)" \
	sh -c "dd if=/dev/mapper/v bs=4k skip=101 count=1 iflag=direct 2>/dev/null | cmp - /tmp/b101"
check "partial (512 B) write into a dirty block" dd if=/dev/zero of=/dev/mapper/v bs=512 seek=801 count=1 oflag=direct
check_eq "partial write keeps the block dirty" "4,6-7" "$(dmsetup message v 0 exists 96 16)"
check "discard of dirty blocks" blkdiscard -o $((100 * 4096)) -l $((4 * 4096)) /dev/mapper/v
left=$(dmsetup message v 0 exists 96 16)
[ -z "$left" ] && ok "discard dropped them" || not_ok "discard dropped them # still dirty: $left"

# --- commit at FLUSH: a new dirty block costs no log write of its own ---------
# 256 writes of new blocks, one at a time, no flush: their records wait for
# a FLUSH, a FUA write or the periodic commit (each second), and go together.
# Committed one by one (one PREFLUSH+FUA log block of 4 KiB each, as before
# commit at FLUSH) they would be at least 2,048 metadata sectors.
check "commit at FLUSH: create writeback" mk writeback dirty_high 75 dirty_low 70
if [ -b /dev/mapper/v ]; then
	m0=$(ssc_stat v meta_sectors)
	check "commit at FLUSH: 256 new blocks written one at a time, no flush" \
		fio --name=c --filename=/dev/mapper/v --rw=randwrite --bs=4k --size=1m \
		--offset=16m --ioengine=psync --direct=1
	m1=$(ssc_stat v meta_sectors)
	check_eq "commit at FLUSH: the 256 blocks are dirty" 256 "$(ssc_stat v dirty)"
	# under half of that: the periodic commit may run many times on a slow
	# (debug) kernel, each one log block
	if [ -n "$m0" ] && [ -n "$m1" ] && [ $((m1 - m0)) -lt 1024 ]; then
		ok "commit at FLUSH: $((m1 - m0)) metadata sectors for 256 new blocks"
	else
		not_ok "commit at FLUSH: '$m0' -> '$m1' metadata sectors for 256 new blocks (want < 1024 more)"
	fi
else
	not_ok "commit at FLUSH: no volume to write"
fi

# --- write-back order: least recently used dirty blocks first ---------------
# 1600 dirty blocks at even positions; read the ones at positions = 0 mod 4;
# then k more dirty blocks elsewhere, the k-th crossing dirty_high, so write-back
# starts only after the last write. Down to dirty_low it must take the blocks
# not used since they got dirty (positions = 2 mod 4, then the new ones) and
# leave every block that was read dirty. Oldest-dirtied-first would take the
# first ~920 blocks of the 1600 whatever was read.
# count_mod4 LIST R: how many indices of a %pbl list are R mod 4
count_mod4() {
	echo "$1" | awk -v r="$2" -F, '{ for (i = 1; i <= NF; i++) {
		n = split($i, ab, "-"); lo = ab[1]; hi = (n > 1) ? ab[2] : ab[1]
		for (j = lo; j <= hi; j++) if (j % 4 == r) c++ } } END { print c + 0 }'
}
dmsetup remove v
check "lru: create writeback dirty_high 20 dirty_low 10" mk writeback dirty_high 20 dirty_low 10
slots=$(ssc_stat v cached | cut -d/ -f2)
k=$((slots * 20 / 100 + 1 - 1600))
fio_hole() {	# fio_hole RW OFFSET STRIDE COUNT
	fio --name=lru --filename=/dev/mapper/v --direct=1 --ioengine=psync --bs=4k \
		--rw="$1:$3" --offset="$2" --number_ios="$4" --size=64m >/dev/null
}
check "lru: 1600 dirty blocks at even positions" fio_hole write 0 4k 1600
check "lru: read back the ones at positions 0 mod 4" fio_hole read 0 12k 800
check_eq "lru: no write-back yet" 0 "$(ssc_stat v writebacks)"
if [ "$k" -gt 0 ]; then
	check "lru: $k more dirty blocks, the last one crossing dirty_high" fio_hole write $((OMB / 2))m 4k $k
else
	not_ok "lru: cache too small for the test # $slots slots"
fi
i=0
while [ "$(ssc_stat v dirty)" -gt $((slots * 10 / 100)) ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i + 1)); done
left=$(dmsetup message v 0 exists 0 3200)
check_eq "lru: every block read since it got dirty is still dirty" 800 "$(count_mod4 "$left" 0)"
check_eq "lru: no block left unused stayed dirty" 0 "$(count_mod4 "$left" 2)"
wb=$(ssc_stat v writebacks)
[ "$wb" -ge 800 ] && ok "lru: write-back wrote $wb blocks" || not_ok "lru: write-back wrote # '$wb'"

# --- writearound: writes bypass the cache, reads fill -------------------------
dmsetup remove v
check "create writearound" mk writearound
fio_verify "writearound: fio verify over $WA_WS" /dev/mapper/v $WA_WS
check_eq "writearound: nothing dirty" 0 "$(ssc_stat v dirty)"
check "writearound: origin holds the data (${WA_WS%m} MiB)" same_data /dev/mapper/v $ORIGIN ${WA_WS%m}

# --- mode switch with dirty data: writeback -> writethrough drains ----------
dmsetup remove v
check "zero origin again" dd if=/dev/zero of=$ORIGIN bs=1M count=$((OMB / 2)) oflag=direct
check "create writeback for the switch" mk writeback dirty_high 75 dirty_low 70
fio_verify "switch: dirty the cache" /dev/mapper/v 24m
d0=$(ssc_stat v dirty)
check "switch: reload as writethrough" sh -c "dmsetup reload v --table '0 $LEN ssc $CACHE $ORIGIN 8 1 writethrough' && dmsetup resume v"
i=0
while [ "$(ssc_stat v dirty)" != 0 ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i + 1)); done
check_eq "switch: writethrough wrote back all $d0 dirty blocks" 0 "$(ssc_stat v dirty)"
fio_verify "switch: data intact" /dev/mapper/v 24m --verify_only
check "reload as writeback" sh -c "dmsetup reload v --table '0 $LEN ssc $CACHE $ORIGIN 8 1 writeback' && dmsetup resume v"
check "dirty one block" dd if=/dev/urandom of=/dev/mapper/v bs=4k count=1 oflag=direct
check "load a passthrough table" dmsetup reload v --table "0 $LEN ssc $CACHE $ORIGIN 8 1 passthrough"
dmesg -c > /dev/null
check_fails "passthrough refused while a block is dirty" dmsetup resume v
check "refusal says why" sh -c 'dmesg | grep -q "passthrough needs a clean cache, 1 blocks are dirty"'
check "back to writeback" sh -c "dmsetup reload v --table '0 $LEN ssc $CACHE $ORIGIN 8 1 writeback' && dmsetup resume v"
check_eq "the dirty block is still dirty" 1 "$(ssc_stat v dirty)"
check "remove volume" dmsetup remove v

check "rmmod dm-ssc" rmmod dm_ssc
check "null_blk teardown" null_blk_teardown
