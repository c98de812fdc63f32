# SPDX-License-Identifier: GPL-2.0
# Crash-point sweep (a seeded sample of the points; all with SSC_FULL=1). The
# cache and the origin are two regions of one device under dm-log-writes, so
# every write to either lands in one log in the order
# it became durable. A single-writer workload (crash-io run) writes versioned
# blocks, each made durable (fdatasync or O_DSYNC), and logs a mark after each
# acknowledgement. replay-log then rebuilds the devices entry by entry and, at
# every FLUSH or FUA entry, reloads ssc on a copy and checks the oracle
# (crash-io check via crash-check.sh): no acknowledged write lost, no stale
# data, and the same data again from the origin after write-back. The
# "concurrent" sweep runs four writers at once (crash-io prun), each on its own
# blocks, reads anywhere, checkpoints, GC and write-back alongside; its marks
# carry every writer's count and its oracle (crash-io pcheck) refuses anything
# older than acknowledged.
#
# What this model does not explore: a flush of the cache device also makes
# earlier origin writes durable (one log), and writes reach the replay only in
# the order dm-log-writes logged them.

check "modprobe dm-ssc" modprobe dm-ssc
check "modprobe dm-log-writes" modprobe dm-log-writes
C=8192		# cache region, sectors (4 MiB: 31 data segments of 128 KiB, as 8 MiB had with the 4 MiB log of old)
O=32768		# origin region, sectors (16 MiB)
NBLK=$((O / 8))
TOT=$((C + O))
# make check checks a sample of the crash points, drawn by SSC_SEED (printed by
# make check, which passes it in; SSC_SEED=N make check draws the same again):
# CK_POINTS a mode (40; 12 on the KASAN + lockdep kernel, 4x slower, with a
# 120-op workload). make check-full (SSC_FULL=1) checks every point (every
# 8th on the debug kernel).
NOPS=240
POINTS=${CK_POINTS:-40}
SEED=${SSC_SEED:-1}
if is_debug_kernel; then
	NOPS=120
	POINTS=${CK_POINTS:-12}
fi
if is_full && is_debug_kernel; then
	PICK="-e 8" WHICH="every 8th point"	# its depth before make check had a budget
elif is_full; then
	PICK="-e 1" WHICH="every point"
else
	PICK="-n $POINTS -s $SEED" WHICH="$POINTS drawn by seed $SEED"
fi
check "device under log (U)" null_blk_add 24 512
check "log device (L)" null_blk_add 256 512
check "replay device (R)" null_blk_add 24 512
check "check copy (S)" null_blk_add 24 512
U=/dev/nullb0 L=/dev/nullb1 R=/dev/nullb2 S=/dev/nullb3
export CK_NBLK=$NBLK CK_NOPS=$NOPS CK_LEN=$O
check "check copy carved into cache and origin" sh -c \
	"dmsetup create cs --table '0 $C linear $S 0' && dmsetup create os --table '0 $O linear $S $C'"

sweep() {	# sweep MODE SEED THREADS FEATURES...: THREADS 0 is the single writer
	mode=$1 seed=$2 thr=$3
	shift 3
	feat="$# $*"
	nops=$NOPS
	# several writers at once: each gets half the ops, twice as many in all
	[ "$thr" -gt 0 ] && nops=$((NOPS / 2))
	export CK_SEED=$seed CK_FEAT="$feat" CK_THREADS=$thr CK_NOPS=$nops
	for d in $U $R $L; do blkdiscard "$d" 2>/dev/null || dd if=/dev/zero of="$d" bs=1M oflag=direct 2>/dev/null; done
	dmsetup create ou0 --table "0 $O linear $U $C" && crash-io fill /dev/mapper/ou0 $NBLK &&
		dmsetup remove ou0 && dd if=$U of=$R bs=1M iflag=direct oflag=direct 2>/dev/null
	check "$mode: origin filled, replay base copied" cmp $U $R
	check "$mode: log-writes over U, cache and origin carved" sh -c \
		"dmsetup create lw --table '0 $TOT log-writes $U $L' &&
		 dmsetup create cu --table '0 $C linear /dev/mapper/lw 0' &&
		 dmsetup create ou --table '0 $O linear /dev/mapper/lw $C' &&
		 dmsetup message lw 0 mark start"
	check "$mode: create ssc" dmsetup create v --table "0 $O ssc /dev/mapper/cu /dev/mapper/ou 8 $(($# + 1)) format $*"
	if [ "$thr" -gt 0 ]; then
		check "$mode: $thr writers at once, $nops ops each, a mark after every acknowledged write" \
			crash-io prun /dev/mapper/v $NBLK $nops "$seed" "$thr" \
			"dmsetup message lw 0 mark ack" "dmsetup message v 0 checkpoint"
	else
		check "$mode: workload of $NOPS ops, a mark after every acknowledged write" \
			crash-io run /dev/mapper/v $NBLK $NOPS "$seed" "dmsetup message lw 0 mark ack" \
			"dmsetup message v 0 checkpoint"
	fi
	diag "$mode: $(dmsetup status v)"
	gc=$(ssc_stat v gc_runs) ck=$(ssc_stat v checkpoints) wb=$(ssc_stat v writebacks)
	[ "${gc:-0}" -gt 0 ] && ok "$mode: GC ran during the workload ($gc runs)" ||
		not_ok "$mode: GC ran during the workload # gc_runs '$gc'"
	[ "${ck:-0}" -gt 1 ] && ok "$mode: checkpoints taken during the workload ($ck)" ||
		not_ok "$mode: checkpoints taken during the workload # '$ck'"
	if [ "$mode" != writethrough ]; then
		[ "${wb:-0}" -gt 0 ] && ok "$mode: write-back ran during the workload ($wb blocks)" ||
			not_ok "$mode: write-back ran during the workload # '$wb'"
	fi
	check "$mode: clean shutdown (the last crash point)" dmsetup remove v
	check "$mode: log devices down" dmsetup remove ou cu lw
	replay-log list $L > /tmp/log.txt
	diag "$mode: $(head -n 1 /tmp/log.txt); $(grep -cE '^[0-9]+ (F.|.U)' /tmp/log.txt) with FLUSH or FUA"
	now_cs
	t_sweep=$NOW
	# shellcheck disable=SC2086 # PICK is two options
	if replay-log sweep $PICK -m 3 -p ack $L $R $S /ssc/crash-check.sh > /tmp/sweep.out 2>&1; then
		ok "$mode: crash points checked ($WHICH): $(tail -n 1 /tmp/sweep.out)"
	else
		# the same seed draws the same positions again; the log itself can differ a
		# little from run to run (GC and write-back timing), hence entry and mark too
		not_ok "$mode: crash points ($WHICH; SSC_SEED=$SEED draws the same) # $(tail -n 1 /tmp/sweep.out)"
		tail -n 30 /tmp/sweep.out | sed 's/^/# /'
	fi
	slow "$mode: the crash-point sweep" "$t_sweep"
	# "points P failed F entries E durable D seed S drawn N"
	set -- $(tail -n 1 /tmp/sweep.out)
	pts=${2:-0} dur=${8:-0} drawn=${12:-0}
	if is_full; then
		want=$((dur / ${PICK#-e })) got=$pts	# every N-th, and the final state
	else
		want=$POINTS got=$drawn			# exactly POINTS drawn FLUSH/FUA points
		[ "$dur" -lt "$want" ] && want=$dur
	fi
	# the workload makes at least two durable points an op (data, then its commit)
	[ "$dur" -ge $((NOPS * 2)) ] && [ "$got" -ge "$want" ] &&
		ok "$mode: the sweep covered $pts of $dur crash points ($got counted, $want wanted)" ||
		not_ok "$mode: the sweep covered enough crash points # $got counted of $dur, want $want"
}

sweep writeback 11 0 writeback segment_size 256 dirty_high 5 dirty_low 1
sweep writethrough 12 0 writethrough segment_size 256
# four writers at once, against GC, write-back and checkpoints (issue 17)
sweep concurrent 13 4 writeback segment_size 256 dirty_high 5 dirty_low 1
dmsetup remove cs os
check "null_blk teardown" null_blk_teardown
