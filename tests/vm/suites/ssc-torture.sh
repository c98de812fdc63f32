# SPDX-License-Identifier: GPL-2.0
# dm-ssc under concurrency: I/O raced against GC, write-back, flushes,
# checkpoints, messages, suspend/resume and mode reloads, all at once, on a
# cache small enough that GC and silent eviction never stop; plus the races
# that need a hostile user (a buffer that changes under O_DIRECT I/O) or an
# interrupted suspend; and swap on an ssc volume in a memory cgroup at its
# limit. Under the debug kernel, KASAN and lockdep watch.
# Devices: nullb0 = 16 MiB cache (128 KiB segments), nullb1 = 64 MiB origin.

SEED=${SSC_SEED:-1}
check "modprobe dm-ssc" modprobe dm-ssc
check "modprobe dm-delay" modprobe dm-delay
check "null_blk cache device" null_blk_add 16
check "null_blk origin device" null_blk_add 64
CACHE=/dev/nullb0
ORIGIN=/dev/nullb1
LEN=$(sectors $ORIGIN)
diag "seed $SEED (SSC_SEED=$SEED replays fio's and the chaos loop's draws)"

table() {	# table ORIGIN MODE [features...]
	o=$1
	shift
	echo "0 $LEN ssc $CACHE $o 8 $(($# + 2)) segment_size 256 $*"
}
mk() {	# mk MODE [features...]: volume v over a freshly formatted cache
	dmsetup remove v 2>/dev/null
	dmsetup create v --table "$(table $ORIGIN format "$@")"
}
state() { dmsetup info v | awk '$1 == "State:" { print $2 }'; }

# --- a buffer that changes under O_DIRECT I/O ---------------------------------
check "origin filled with random data" dd if=/dev/urandom of=$ORIGIN bs=1M count=8 oflag=direct
check "create writethrough" mk writethrough
check "a reader scribbling on its O_DIRECT buffer cannot choose what the cache holds" \
	scribble read /dev/mapper/v $ORIGIN 0 256 4096
h=$(ssc_stat v read_hits)
[ "$h" -ge 256 ] && ok "and every block was read back from the cache ($h hits)" ||
	not_ok "blocks read back from the cache # read_hits '$h'"
check "a writer scribbling on its O_DIRECT buffer leaves cache and origin equal" \
	scribble write /dev/mapper/v $ORIGIN 512 256 4096
c=$(ssc_stat v cached)
c=${c%/*}
[ "${c:-0}" -ge 500 ] && ok "the written blocks were cached ($c)" || not_ok "written blocks cached # '$c'"
check "remove" dmsetup remove v

# --- an interrupted suspend leaves a working volume ---------------------------
# writes to the origin take 3 s; a suspend waits for them and is interrupted
check "dm-delay origin (writes take 3 s)" \
	dmsetup create slow --table "0 $LEN delay $ORIGIN 0 0 $ORIGIN 0 3000"
check "create writethrough over it" dmsetup create v --table "$(table /dev/mapper/slow format writethrough)"
dd if=/dev/zero of=/dev/mapper/v bs=4k seek=100 count=1 oflag=direct 2>/dev/null &
sleep 1
check_fails "a suspend interrupted while it waits for a write" timeout -s INT 1 dmsetup suspend v
wait
check_eq "the volume is still active" ACTIVE "$(state)"
check "and takes messages again (presuspend_undo)" dmsetup message v 0 evict 0
check "and a checkpoint" dmsetup message v 0 checkpoint
check "suspend" dmsetup suspend v
check_fails "a suspended volume refuses a checkpoint (it writes the device)" \
	dmsetup message v 0 checkpoint
check "resume" dmsetup resume v
check "remove" dmsetup remove v
check "remove dm-delay" dmsetup remove slow

# --- an in-place write against write-back's clean of the same block ----------
# (debug builds: .map is held after its lookup by an injection point) The
# write looked the dirty block up; write-back cleans it meanwhile. The write
# must not land in a block that is clean by then: nobody would write it back,
# and GC would drop it. .map takes the block's cell before the lookup.
INJ=/sys/module/dm_ssc/parameters
if is_debug_kernel; then
	check "the debug build has the map injection point" test -e $INJ/inject_map_delay_ms
	check "create writeback" mk writeback
	dd if=/dev/urandom of=/tmp/b1 bs=4k count=1 2>/dev/null
	dd if=/dev/urandom of=/tmp/b2 bs=4k count=1 2>/dev/null
	check "block 50 dirty" dd if=/tmp/b1 of=/dev/mapper/v bs=4k seek=50 oflag=direct
	echo 50 > $INJ/inject_map_block
	echo 1500 > $INJ/inject_map_delay_ms
	dd if=/tmp/b2 of=/dev/mapper/v bs=4k seek=50 oflag=direct 2>/dev/null &
	sleep 0.5
	check "write-back of block 50 while that write is held in .map" dmsetup message v 0 clean 50
	wait
	echo 0 > $INJ/inject_map_delay_ms
	check "block 50 is clean now, and evicted" dmsetup message v 0 evict 50
	check "the overwrite reached the origin (it was not written into a cleaned block)" \
		sh -c "dd if=/dev/mapper/v bs=4k skip=50 count=1 iflag=direct 2>/dev/null | cmp - /tmp/b2"
	check "remove" dmsetup remove v

	# A write that waits on a held cell belongs to the holder from then on:
	# released, the holder requeues it, and another worker may run and
	# complete it while the first is still returning. Here the first worker
	# is held after queueing it (inject_wait_delay_ms), the holder is a
	# write held in .map. A worker that touched the bio afterwards would
	# write into a completed bio (KASAN) or lose its cell, and the next
	# write to the block would hang. The holder runs on CPU 0 and the
	# waiter on CPU 1, so that a requeue that re-initialised the bio's work
	# item would run at once on CPU 0's pool; three rounds. (With the old
	# order, a store after queueing and INIT_WORK at each requeue, KASAN
	# reported a slab-use-after-free write in ssc_work in the first round.)
	check "the debug build has the cell wait injection point" test -e $INJ/inject_wait_delay_ms
	check "create writeback" mk writeback
	check "block 60 dirty" dd if=/tmp/b1 of=/dev/mapper/v bs=4k seek=60 oflag=direct
	echo 60 > $INJ/inject_map_block
	for round in 1 2 3; do
		echo 1000 > $INJ/inject_map_delay_ms
		echo 1500 > $INJ/inject_wait_delay_ms
		taskset -c 0 dd if=/tmp/b2 of=/dev/mapper/v bs=4k seek=60 oflag=direct 2>/dev/null &
		sleep 0.3
		echo 0 > $INJ/inject_map_delay_ms
		taskset -c 1 dd if=/tmp/b1 of=/dev/mapper/v bs=4k seek=60 oflag=direct 2>/dev/null &
		wait
		echo 0 > $INJ/inject_wait_delay_ms
		sleep 1.5	# the held worker returns
		# a write stuck on a lost cell sleeps uninterruptibly: poll for it
		dd if=/tmp/b2 of=/dev/mapper/v bs=4k seek=60 oflag=direct 2>/dev/null &
		p=$!
		i=0
		while kill -0 $p 2>/dev/null && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
		if kill -0 $p 2>/dev/null; then
			not_ok "round $round: the next write to the block completes # hung: its cell was lost"
			break
		fi
		wait $p
		check_eq "round $round: the next write to the block completes (its cell was released)" \
			0 $?
		check "round $round: and reads back" \
			sh -c "dd if=/dev/mapper/v bs=4k skip=60 count=1 iflag=direct 2>/dev/null | cmp - /tmp/b2"
	done
	check "remove" dmsetup remove v
fi

# --- a suspended volume leaves its cache device alone -------------------------
# dirty data past dirty_high with a cache that is all but full: GC and
# write-back both have work, and used to queue each other after suspend
check "create writeback, dirty_high 20" mk writeback dirty_high 20 dirty_low 10
fio --name=fill --filename=/dev/mapper/v --ioengine=libaio --direct=1 --rw=randwrite \
	--bs=4k --iodepth=16 --size=32m --io_size=24m --randseed="$SEED" > /dev/null 2>&1
# write-back has work (its lanes drain to dirty_low, 10 %, once past
# dirty_high) and GC ran to make room: both were busy just before
dirty=$(ssc_stat v dirty) total=$(ssc_stat v cached) gcr=$(ssc_stat v gc_runs)
total=${total#*/}
diag "before suspend: $dirty dirty of $total slots, free segments $(ssc_stat v free_segs), GC runs $gcr"
check "dirty blocks left for write-back when the suspend comes ($dirty of $total)" \
	sh -c "[ $((${dirty:-0} * 100)) -gt $((${total:-0} * 5)) ]"
check "GC ran during the fill ($gcr runs)" sh -c "[ ${gcr:-0} -gt 0 ]"
check "suspend under write-back" dmsetup suspend v
sum1=$(dd if=$CACHE bs=1M iflag=direct 2>/dev/null | md5sum)
sleep 3
sum2=$(dd if=$CACHE bs=1M iflag=direct 2>/dev/null | md5sum)
check_eq "nothing writes the cache device while suspended" "$sum1" "$sum2"
check "resume" dmsetup resume v
check "remove" dmsetup remove v

# --- torture: everything at once ---------------------------------------------
# Three fio jobs write and verify their own 8 MiB each (24 MiB of working set
# on a 11 MiB cache): one with fsync (FLUSH) every 16 writes, one with O_DSYNC
# (FUA), one mixed with reads; a fourth trims a region of its own. Meanwhile
# a loop sends checkpoint, evict and clean messages, suspends and resumes,
# reloads the table between writeback and writethrough, and asks for
# writeback_all. (fio verifies a randrw job only over one loop: a second
# loop's verify expects blocks it only read to hold its own data.)
LOOPS=6
is_small && LOOPS=3
# the debug kernel: 1 (127 s of fio at 3, 85-100 at 2; the chaos loop still runs
# throughout)
is_small && is_debug_kernel && LOOPS=1
check "zero origin" dd if=/dev/zero of=$ORIGIN bs=1M count=32 oflag=direct
check "create writeback" mk writeback dirty_high 30 dirty_low 10
chaos() {
	awk -v seed="$SEED" 'BEGIN { srand(seed); for (i = 0; i < 100000; i++) print int(rand() * 1000000) }' |
	while read -r r; do
		[ -e /tmp/torture.done ] && break
		op=$((r % 8))
		case $op in
		0) dmsetup message v 0 checkpoint ;;
		1) dmsetup message v 0 evict $((r % 6144)) ;;
		2) dmsetup message v 0 clean $((r % 6144)) 16 ;;
		3) dmsetup suspend v && dmsetup resume v ;;
		4) m=writethrough; [ $((r % 2)) = 0 ] && m=writeback
		   counters >> /tmp/torture.gc	# a new table counts from 0
		   dmsetup reload v --table "$(table $ORIGIN $m dirty_high 30 dirty_low 10)" &&
		   dmsetup resume v ;;
		5) dmsetup message v 0 writeback_all ;;
		*) dmsetup status v > /dev/null ;;
		esac
		rc=$?
		echo "$op" >> /tmp/torture.ops
		# evict and clean may refuse a block (dirty, or busy); nothing else may fail
		case $op in 1 | 2) ;; *) [ $rc = 0 ] || echo "$op" >> /tmp/torture.failed ;; esac
		sleep 0.$((r % 3))
	done
}
counters() { echo "$(ssc_stat v gc_runs) $(ssc_stat v gc_evicted) $(ssc_stat v writebacks)"; }
rm -f /tmp/torture.done /tmp/torture.ops /tmp/torture.gc /tmp/torture.failed
chaos > /tmp/chaos.log 2>&1 &
cpid=$!
now_cs
t0=$NOW
if fio --ioengine=libaio --direct=1 --bs=4k --iodepth=8 --randseed="$SEED" \
	--verify=crc32c --verify_fatal=1 --do_verify=1 --filename=/dev/mapper/v \
	--name=flush --offset=0 --size=8m --rw=randwrite --fsync=16 --loops=$LOOPS \
	--name=fua --offset=8m --size=8m --rw=randwrite --sync=dsync --loops=$LOOPS \
	--name=mixed --offset=16m --size=8m --rw=randrw --rwmixread=60 \
	--name=trim --offset=24m --size=8m --rw=randtrim --ioengine=psync --do_verify=0 \
	--verify=0 --loops=$((LOOPS * 2)) \
	> /tmp/fio.log 2>&1; then
	ok "torture: fio verified every block under GC, write-back, messages, suspends and reloads"
else
	not_ok "torture: fio verify"
	grep -iE "verify|bad|error" /tmp/fio.log | head -n 20 | sed 's/^/# /'
fi
slow "torture fio" "$t0"
touch /tmp/torture.done
wait $cpid
ops=$(wc -l < /tmp/torture.ops)
diag "chaos loop: $ops operations ($(sort /tmp/torture.ops | uniq -c | tr '\n' ' '))"
[ "$ops" -ge 8 ] && ok "the chaos loop ran alongside ($ops operations)" ||
	not_ok "the chaos loop ran alongside # $ops operations"
failed=$(sort /tmp/torture.failed 2>/dev/null | uniq -c | tr '\n' ' ')
[ -z "$failed" ] && ok "no checkpoint, suspend, resume, reload or writeback_all failed" ||
	not_ok "no checkpoint, suspend, resume, reload or writeback_all failed # count op: $failed"
counters >> /tmp/torture.gc
set -- $(awk '{ g += $1; e += $2; w += $3 } END { print g + 0, e + 0, w + 0 }' /tmp/torture.gc)
gc=$1 ev=$2 wb=$3
diag "over all tables: $gc GC runs, $ev blocks evicted silently, $wb written back"
[ "$gc" -gt 0 ] && ok "GC ran during the torture ($gc runs)" || not_ok "GC ran # '$gc'"
[ "$ev" -gt 0 ] && ok "GC evicted clean blocks silently ($ev)" || not_ok "silent eviction # '$ev'"
[ "$wb" -gt 0 ] && ok "blocks were written back during the torture, by write-back or clean messages ($wb)" ||
	not_ok "write-back # '$wb'"
check_eq "the volume is not failed" ok "$(ssc_stat v state)"
# what the volume holds now must survive write-back and a reload unchanged
sum1=$(dd if=/dev/mapper/v bs=1M count=24 iflag=direct 2>/dev/null | md5sum)
check "writeback_all" dmsetup message v 0 writeback_all
i=0
while [ "$(ssc_stat v dirty)" != 0 ] && [ $i -lt 600 ]; do i=$((i + 1)); sleep 0.2; done
check_eq "writeback_all drained the dirty blocks" 0 "$(ssc_stat v dirty)"
check "the origin holds what the volume holds" same_data /dev/mapper/v $ORIGIN
check "remove (clean shutdown)" dmsetup remove v
check "create again" dmsetup create v --table "$(table $ORIGIN writeback)"
check_eq "and the volume reads the same after the reload" "$sum1" \
	"$(dd if=/dev/mapper/v bs=1M count=24 iflag=direct 2>/dev/null | md5sum)"
check "remove" dmsetup remove v

# --- swap on an ssc volume, in a memory cgroup at its limit -------------------
# the kernel swaps out through dm-ssc while it is short of memory: every I/O
# path allocation must come from a pool or fail over (write around), never wait
# on reclaim that waits on this very swap device
CG=/sys/fs/cgroup/ssc-swap
check "create writeback for swap" mk writeback dirty_high 30 dirty_low 10
check "mkswap on the volume" mkswap /dev/mapper/v
check "swapon" swapon /dev/mapper/v
mkdir -p /sys/fs/cgroup
grep -q cgroup2 /proc/mounts || mount -t cgroup2 none /sys/fs/cgroup
echo +memory > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
mkdir -p $CG
check "cgroup memory.max 8M" sh -c "echo 8M > $CG/memory.max"
pin0=$(awk '$1 == "pswpin" { print $2 }' /proc/vmstat)
now_cs
t0=$NOW
# (16 MiB at small sizes: on the debug kernel 24 took 52 s)
SWAP_MB=24
is_small && SWAP_MB=16
check "$SWAP_MB MiB of pages swapped through the volume and verified (random, 30 % rewritten)" \
	sh -c "echo \$\$ > $CG/cgroup.procs && exec swapstress -m $SWAP_MB -o random -n 2 -w 30 -S $SEED"
slow "swap through ssc" "$t0"
pin=$(($(awk '$1 == "pswpin" { print $2 }' /proc/vmstat) - pin0))
[ "$pin" -gt 1000 ] && ok "pages came back from the volume ($pin swap-ins)" ||
	not_ok "pages came back from the volume # $pin swap-ins"
diag "swap: $(dmsetup status v)"
check "swapoff" swapoff /dev/mapper/v
rmdir $CG 2>/dev/null
check "remove" dmsetup remove v

check "rmmod dm-ssc" rmmod dm_ssc
check "null_blk teardown" null_blk_teardown
