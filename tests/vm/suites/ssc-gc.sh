# SPDX-License-Identifier: GPL-2.0
# dm-ssc garbage collection under churn, on a cache at its smallest legal
# size: a long random-write load, then a mixed one, in writeback (default
# and high dirty thresholds) and writethrough. A poller reads free_segs
# from the status line all along. Checked:
#  - free_segs never drops below the reserve less the one segment GC itself
#    opens for its moves (GC's own reserve: user data never takes it), and
#    is back at the reserve once the load stops;
#  - every fio job completes all its I/Os (count-based, no timing threshold)
#    and the volume then still caches: new writes are taken by the cache,
#    not sent around it for want of space;
#  - gc_runs stays within the segments that were actually filled, and stops
#    growing once the load stops: a GC run that frees nothing is not
#    repeated in a loop.
# Devices: nullb0 = 16 MiB, cut down with dm-linear to the smallest cache
# the target formats (128 KiB segments); nullb1 = 64 MiB origin.

SEED=${SSC_SEED:-1}
RESERVE=2	# segments only GC may open (Documentation/ssc.rst, GC)
NIOS=16384	# 4 KiB I/Os per fio job: 64 MiB, the origin's size
is_full && NIOS=32768	# (make check-full: twice the origin)
is_small && NIOS=3072
check "modprobe dm-ssc" modprobe dm-ssc
# no volatile write cache on either (null_blk_add's default is 16 MiB): GC's churn
# needs none, and 6.12's null_blk once livelocked two writers in its cache code
# here (null_make_cache_space, both CPUs, 1,000 s: the CI run of 833f6eb)
check "null_blk cache device" null_blk_add 16 4096 1 0
check "null_blk origin device" null_blk_add 64 4096 1 0
ORIGIN=/dev/nullb1
LEN=$(sectors $ORIGIN)
SEG=256

# the smallest cache device the target takes, in whole segments
cdev() { dmsetup remove c 2>/dev/null; dmsetup create c --table "0 $(($1 * SEG)) linear /dev/nullb0 0"; }
mk() {	# mk MODE [features...]
	dmsetup remove v 2>/dev/null
	dmsetup create v --table "0 $LEN ssc /dev/mapper/c $ORIGIN 8 $(($# + 3)) format $* segment_size $SEG"
}
n=8
while [ $n -le 128 ]; do
	cdev $n && mk writethrough 2>/dev/null && break
	n=$((n + 1))
done
if [ $n -gt 128 ]; then
	not_ok "a smallest cache device found # none up to 128 segments"
	dmsetup remove c 2>/dev/null
	return 0
fi
SEGS=$(ssc_stat v free_segs)
SEGS=${SEGS#*/}
SLOTS=$(ssc_stat v cached)
SLOTS=${SLOTS#*/}
ok "smallest cache: $n segments of 128 KiB ($((n * 128)) KiB), $SEGS for data, $SLOTS slots"
dmsetup remove v

# poll free_segs into /tmp/free until /tmp/stop appears
poll() {
	: > /tmp/free
	while [ ! -e /tmp/stop ]; do
		f=$(ssc_stat v free_segs)
		echo "${f%/*}" >> /tmp/free
		sleep 0.1
	done
}

# churn NAME MODE [features...]: the loads on a fresh volume, and the checks
churn() {
	name=$1
	shift
	check "$name: create" mk "$@"
	rm -f /tmp/stop
	poll &
	pp=$!
	for rw in randwrite randrw; do
		fio --name=churn --filename=/dev/mapper/v --ioengine=libaio --direct=1 \
			--rw=$rw --rwmixread=30 --bs=4k --iodepth=16 --numjobs=2 --group_reporting \
			--io_size=$((NIOS * 4))k --randseed="$SEED" --output-format=terse --terse-version=3 \
			> /tmp/fio.$rw 2>&1
		rc=$?
		# terse v3: fields 6 and 47, KiB read and written (both jobs)
		ios=$(awk -F';' '{ print int(($6 + $47) / 4) }' /tmp/fio.$rw)
		[ $rc = 0 ] && [ "${ios:-0}" -ge $((2 * NIOS)) ] &&
			ok "$name: $rw completed all $ios I/Os" ||
			{ not_ok "$name: $rw completed all I/Os # rc $rc, $ios of $((2 * NIOS))"; tail -n 5 /tmp/fio.$rw | sed 's/^/# /'; }
	done
	# let GC catch up (write-back and the periodic commit kick it), then stop polling
	i=0
	while [ $i -lt 100 ]; do
		f=$(ssc_stat v free_segs)
		[ "${f%/*}" -ge $RESERVE ] && break
		sleep 0.1
		i=$((i + 1))
	done
	touch /tmp/stop
	wait $pp
	min=$(sort -n /tmp/free | head -n1)
	cnt=$(wc -l < /tmp/free)
	[ "${min:-0}" -ge $((RESERVE - 1)) ] &&
		ok "$name: free_segs never below the reserve less GC's open segment (min $min of $SEGS, $cnt polls)" ||
		not_ok "$name: free_segs never below $((RESERVE - 1)) # min '$min' of $SEGS over $cnt polls"
	f=$(ssc_stat v free_segs)
	[ "${f%/*}" -ge $RESERVE ] && ok "$name: free_segs back at the reserve when idle ($f)" ||
		not_ok "$name: free_segs back at the reserve $RESERVE when idle # $f"
	# a GC run frees a segment: runs are bounded by the segments filled
	gc=$(ssc_stat v gc_runs) ds=$(ssc_stat v data_sectors) cp=$(ssc_stat v gc_copied)
	spb=$((SLOTS / SEGS))
	filled=$(((ds / 8 + cp) / spb + SEGS))
	[ "$gc" -le "$filled" ] && ok "$name: $gc GC runs for $filled segments filled" ||
		not_ok "$name: GC runs bounded by the segments filled # $gc runs, $filled segments ($ds data sectors, $cp copied)"
	# idle, GC cleans at most the few segments it still wants: it does not spin
	g0=$(ssc_stat v gc_runs)
	sleep 3
	g1=$(ssc_stat v gc_runs)
	[ $((g1 - g0)) -le "$SEGS" ] && ok "$name: GC idle when the load stops ($((g1 - g0)) runs in 3 s)" ||
		not_ok "$name: GC idle when the load stops # $((g1 - g0)) runs in 3 s, $SEGS segments"
	# the volume answers and the cache still takes writes
	w0=$(ssc_stat v data_sectors)
	check "$name: 64 fresh 4 KiB writes complete" \
		fio --name=after --filename=/dev/mapper/v --ioengine=libaio --direct=1 \
		--rw=randwrite --bs=4k --iodepth=4 --io_size=256k --randseed=$((SEED + 7))
	w1=$(ssc_stat v data_sectors)
	# (before the fix it took none; some may go around while GC makes room)
	[ $((w1 - w0)) -ge 128 ] && ok "$name: the cache took them ($(((w1 - w0) / 8)) blocks)" ||
		not_ok "$name: the cache took the fresh writes # $(((w1 - w0) / 8)) of 64 blocks; status: $(dmsetup status v)"
	diag "$name: $(dmsetup status v)"
	check "$name: remove" dmsetup remove v
}

churn "writeback" writeback
churn "writeback, dirty 75/50" writeback dirty_high 75 dirty_low 50
churn "writethrough" writethrough
check "remove the cache device" dmsetup remove c
check "null_blk teardown" null_blk_teardown
