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

# shellcheck disable=SC2034 # TOT, PICK, WHICH, SWEEP, U, L, R: crash_sweep (lib.sh) reads them
check "modprobe dm-ssc" modprobe dm-ssc
check "modprobe dm-log-writes" modprobe dm-log-writes
C=8192		# cache region, sectors (4 MiB: 31 data segments of 128 KiB, as 8 MiB had with the 4 MiB log of old)
O=32768		# origin region, sectors (16 MiB)
NBLK=$((O / 8))
TOT=$((C + O))
# make check checks a sample of the crash points, drawn by SSC_SEED (printed by
# make check, which passes it in; SSC_SEED=N make check draws the same again):
# CK_POINTS a mode (8; 40 until the trims of issue 22, then 24, then 16 until Cascade's
# tests, then 12; 4 on the KASAN + lockdep
# kernel, 4x slower, with a 120-op workload: 12 until issue 20, 8 until issue
# 21, 6 until the budget's trim after it). On that kernel every mode runs its workload (GC, write-back
# and checkpoints under KASAN and lockdep) but only one mode, drawn by the seed,
# sweeps its crash points: a sweep costs 80 s there, mostly reloads and whole
# reads that 6.12 does at full depth. make check-full (SSC_FULL=1) checks every
# point of every mode (every 8th on the debug kernel).
NOPS=240
POINTS=${CK_POINTS:-8}
SEED=${SSC_SEED:-1}
if is_debug_kernel; then
	NOPS=120
	POINTS=${CK_POINTS:-4}
fi
if is_full && is_debug_kernel; then
	PICK="-e 8" WHICH="every 8th point"	# its depth before make check had a budget
elif is_full; then
	PICK="-e 1" WHICH="every point"
else
	PICK="-n $POINTS -s $SEED" WHICH="$POINTS drawn by seed $SEED"
fi
SWEEP="writeback writethrough concurrent"
is_debug_kernel && SWEEP=$(pick 1 $SWEEP)
diag "modes that sweep their crash points: $SWEEP"
check "device under log (U)" null_blk_add 24 512
check "log device (L)" null_blk_add 256 512
check "replay device (R)" null_blk_add 24 512
check "check copy (S)" null_blk_add 24 512
U=/dev/nullb0 L=/dev/nullb1 R=/dev/nullb2 S=/dev/nullb3
export CK_NBLK=$NBLK CK_NOPS=$NOPS CK_LEN=$O
check "check copy carved into cache and origin" sh -c \
	"dmsetup create cs --table '0 $C linear $S 0' && dmsetup create os --table '0 $O linear $S $C'"

crash_sweep writeback 11 0 writeback segment_size 256 dirty_high 5 dirty_low 1
crash_sweep writethrough 12 0 writethrough segment_size 256
# four writers at once, against GC, write-back and checkpoints (issue 17)
crash_sweep concurrent 13 4 writeback segment_size 256 dirty_high 5 dirty_low 1
dmsetup remove cs os
check "null_blk teardown" null_blk_teardown
