# SPDX-License-Identifier: GPL-2.0
# SSDAlloc (user/ssdalloc) on the guest's kernel: the oracle test (tests/user/ssdalloc/
# test-oracle.c: random objects against a shadow copy, the Page Buffer and the RAM object
# cache evicting and the log cleaning all the time, a checkpoint, restores in new
# processes) on a raw null_blk (O_DIRECT through io_uring) and on an ssc volume
# (dm-ssc, writeback, four threads), through userfaultfd (missing + write-protect faults
# on anonymous memory, which 6.1 and 6.12 both have: the library must use it and say so
# at init) and through the mprotect + SIGSEGV fallback (SSDALLOC_NO_UFFD=1); kill -9
# after and inside a checkpoint, restored in a new process (test-crash).
# Devices: nullb0 = 5 MiB raw store; nullb1 = 48 MiB cache, nullb2 = 5 MiB origin of the
# ssc volume "sdv" (5 MiB). Programs from /ssc/ssdalloc/bin (scripts/mkinitramfs.sh).
# The samples are drawn from SSC_SEED (printed by make check; SSC_SEED=N replays them).
# Small: under TCG a fault costs some 50 to 100 times what it does on the host (about 90 s
# at 1500 operations, 2 MiB live on 6 MiB: these sizes take two thirds of that).

B=/ssc/ssdalloc/bin
export LD_LIBRARY_PATH=/usr/local/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
SEED=${SSC_SEED:-1}
W=/tmp/ssdalloc
rm -rf $W
mkdir -p $W
# the live data twice the RAM budget, the store three times the live data, so that every
# tier evicts and the log wraps (GC: 5 to 25 runs on the host, whatever the seed)
# (four threads on the ssc volume: fewer operations, four fault waiters on two vCPUs)
OPS=1000 COPS=300 TOPS=600	# the same at SSC_SMALL (the 6.1 smoke): small already
SZ="--ram 768K --page-buffer 256K --live 1536K"
diag "seed $SEED (SSC_SEED=$SEED replays it), RAM 768 KiB, page buffer 256 KiB, live 1.5 MiB, $OPS ops"

# logged LOG CMD...: CMD's output to LOG, killed after 300 s; on failure its tail is the
# check's diagnostic
logged() {
	l=$1
	shift
	timeout -s KILL 300 "$@" > "$l" 2>&1 || { r=$?; tail -n 25 "$l"; echo "exit $r"; return 1; }
}
# stats LOG: the workload's counters line, for the log
stats() { grep -m1 'workload: stats:' "$1" | sed 's/^workload: stats: //'; }

check "test programs present" test -x $B/test-oracle -a -x $B/test-crash
check "modprobe null_blk store" null_blk_add 5

# --- raw block device, userfaultfd ------------------------------------------------------
check "oracle on /dev/nullb0 (raw, O_DIRECT): evictions, GC, checkpoint, 2 restores" \
	logged $W/raw.log $B/test-oracle --seed "$SEED" --dir $W --device /dev/nullb0 $SZ \
	--ops $OPS --expect-uffd 1
diag "raw: $(stats $W/raw.log)"
# the library says which fault mechanism it took (not SSD_QUIET); the test itself
# never prints the word
check "the library said at init that it uses userfaultfd" grep -qi userfaultfd $W/raw.log
n=$(grep -ci userfaultfd $W/raw.log)
[ "$n" -ge 3 ] && ok "so did both restoring processes ($n lines)" ||
	not_ok "so did both restoring processes # $n lines name userfaultfd, want 3 (one an init)"

# --- the mprotect + SIGSEGV fallback ----------------------------------------------------
rm -f $W/snap-* $W/ckpt*
check "oracle with SSDALLOC_NO_UFFD=1 (mprotect + SIGSEGV) on /dev/nullb0" \
	logged $W/nouffd.log env SSDALLOC_NO_UFFD=1 $B/test-oracle --seed "$((SEED + 1))" \
	--dir $W --device /dev/nullb0 $SZ --ops $OPS --expect-uffd 0
diag "no uffd: $(stats $W/nouffd.log)"

# --- kill -9 after a checkpoint and inside one ------------------------------------------
rm -f $W/snap-* $W/ckpt*
check "kill -9 after a checkpoint and inside one, restored in a new process (/dev/nullb0)" \
	logged $W/crash.log $B/test-crash --seed "$((SEED + 2))" --rounds 1 --dir $W \
	--device /dev/nullb0 --expect-uffd 1 $SZ --ops $COPS
grep '^test-crash: round' $W/crash.log | sed 's/^/# /'

# --- an ssc volume in writeback mode, four threads ---------------------------------------
rm -f $W/snap-* $W/ckpt*
check "modprobe dm-ssc" modprobe dm-ssc
check "null_blk cache device" null_blk_add 48
check "null_blk origin device" null_blk_add 5
check "ssc volume sdv (writeback) over nullb1 + nullb2" \
	dmsetup create sdv --table "0 $(sectors /dev/nullb2) ssc /dev/nullb1 /dev/nullb2 8 2 format writeback"
check "oracle with 4 threads on the ssc volume" \
	logged $W/ssc.log $B/test-oracle --seed "$((SEED + 3))" --dir $W --device /dev/mapper/sdv \
	$SZ --ops $TOPS --threads 4 --expect-uffd 1
diag "ssc: $(stats $W/ssc.log)"
diag "ssc: $(dmsetup status sdv)"
wh=$(ssc_stat sdv write_hits) wm=$(ssc_stat sdv write_misses)
w=$((${wh:-0} + ${wm:-0}))
[ "$w" -gt 0 ] && ok "the store's writes went through the ssc cache ($w writes)" ||
	not_ok "the store's writes went through the ssc cache # write hits + misses: '$w'"
check "remove sdv" dmsetup remove sdv
null_blk_teardown > /dev/null 2>&1
rm -rf $W
