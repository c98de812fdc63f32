#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# One crash point of the ssc-crash sweep, run by replay-log after it has copied
# the replayed devices to the check copy (carved into /dev/mapper/cs = cache
# and /dev/mapper/os = origin). Environment: REPLAY_MARK (last acknowledged op,
# "" before the first), REPLAY_POINT, CK_NBLK CK_NOPS CK_SEED CK_FEAT CK_LEN.
# 1. load ssc over the crashed devices (recovery runs);
# 2. every block must hold what the oracle allows (crash-io check);
# 3. write back everything, evict every block, and read again: now from the
#    origin alone, the data must be the same versions as in step 2.
acked=$REPLAY_MARK
[ -n "$acked" ] || acked=0
fail() { echo "# point $REPLAY_POINT (acknowledged op $acked): $*"; dmsetup remove vc 2>/dev/null; exit 1; }
# a crash before the format's superblock landed left no cache: format it again,
# as the user would (hcctl create --format); nothing was cached yet
feat=$CK_FEAT
if [ "$(dd if=/dev/mapper/cs bs=4k count=1 iflag=direct 2>/dev/null | tr -d '\000' | wc -c)" = 0 ]; then
	# shellcheck disable=SC2086 # split into the count and the features
	set -- $CK_FEAT
	n=$1
	shift
	feat="$((n + 1)) format $*"
fi
dmsetup create vc --table "0 $CK_LEN ssc /dev/mapper/cs /dev/mapper/os 8 $feat" 2>/tmp/ck.err ||
	fail "ssc refused the crashed cache: $(cat /tmp/ck.err; dmesg | tail -n 3)"
# CK_THREADS: the workload ran that many writers at once (crash-io prun), and
# the mark holds each one's last acknowledged op
check_io() {
	if [ "${CK_THREADS:-0}" -gt 0 ]; then
		crash-io pcheck /dev/mapper/vc "$CK_NBLK" "$CK_NOPS" "$CK_SEED" "$CK_THREADS" "$acked" "$@"
	else
		crash-io check /dev/mapper/vc "$CK_NBLK" "$CK_NOPS" "$CK_SEED" "$acked" "$@"
	fi
}
check_io /tmp/ck.seen > /tmp/ck.out || fail "through the cache: $(head -n 5 /tmp/ck.out)"
dmsetup message vc 0 clean 0 "$CK_NBLK" || fail "clean (write-back) of every block failed"
dmsetup message vc 0 evict 0 "$CK_NBLK" || fail "evict of every block failed"
check_io - /tmp/ck.seen > /tmp/ck.out || fail "from the origin after write-back: $(head -n 5 /tmp/ck.out)"
dmsetup remove vc || fail "remove failed"
