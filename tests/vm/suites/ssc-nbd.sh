# SPDX-License-Identifier: GPL-2.0
# The origin across the network: an NBD export served by nbdkit (file plugin, the
# export a file in the guest's tmpfs; its delay filter answers every read and write
# DELAY ms late) from its own network namespace over a veth pair, and the kernel's
# NBD client (nbd-client, netlink, 4 KiB blocks, a request timeout of TMO s). The
# cache is a null_blk.
#   1. crash points (crash_sweep of lib.sh, as ssc-crash): the origin region of the
#      logged device is the NBD export, so the workload runs against its latency;
#   2. writethrough and writeback volumes (hcctl create) over /dev/nbd0: fio verify,
#      the origin holds the data (writeback: after hcctl flush);
#   3. the server dies (SIGKILL) with dirty blocks and I/O in flight: the I/O in
#      flight fails (EIO) within the NBD timeout, later reads of uncached blocks at
#      once, origin_errors counts,
#      dirty blocks stay dirty and readable, clean cached blocks stay readable,
#      new writes are cached (the FLUSH after them fails: it needs the origin),
#      write-back retries; the server back, a new NBD device (the dead one cannot
#      be reconnected while the volume holds it) and a table reload onto it: write-back
#      drains to 0 dirty and the origin holds every acknowledged write;
#   4. the network partitioned (the veth link down), the volume in writethrough: an
#      uncached read fails within the NBD timeout, then writes fail too, cached
#      blocks still read; healed, the same recovery.
# make check: the writeback sweep at CK_POINTS (2) points drawn by SSC_SEED;
# make check-full (SSC_FULL=1): writeback and writethrough, every 8th point.

# shellcheck disable=SC2034 # TOT, PICK, WHICH, U, L, R: crash_sweep (lib.sh) reads them
DELAY=2		# ms the server takes for each read and write
TMO=5		# nbd-client -t: seconds before an unanswered request fails
check "modprobe dm-ssc" modprobe dm-ssc
check "modprobe dm-log-writes" modprobe dm-log-writes
check "network namespace nbdsrv, veth pair" nbd_net_setup
# (not under check: its subshell would keep the server's pid, NBD_PID)
nbd_server_start 64 $DELAY > /tmp/start.out 2>&1 &&
	ok "nbdkit serves a 64 MiB export in the namespace, $DELAY ms a request" ||
	{ not_ok "nbdkit serves a 64 MiB export in the namespace"; sed 's/^/# /' /tmp/start.out; }
check "nbd-client: /dev/nbd0 (timeout $TMO s)" nbd_connect /dev/nbd0 $TMO
check_eq "/dev/nbd0: 64 MiB, 4 KiB logical blocks" "131072 4096" \
	"$(sectors /dev/nbd0) $(cat /sys/block/nbd0/queue/logical_block_size)"
now_cs
t0=$NOW
dd if=/dev/nbd0 of=/dev/null bs=4k count=50 iflag=direct 2>/dev/null
now_cs
[ $((NOW - t0)) -ge $((DELAY * 5)) ] && ok "latency injected: 50 reads one after the other took $((NOW - t0)) cs" ||
	not_ok "latency injected # 50 reads one after the other took $((NOW - t0)) cs, want >= $((DELAY * 5))"

# --- 1. crash points, the origin region on NBD ------------------------------
C=8192		# cache region (null_blk), sectors
O=32768		# origin region (the first 16 MiB of the NBD export), sectors
NBLK=$((O / 8))
TOT=$((C + O))
NOPS=120
POINTS=${CK_POINTS:-2}
SEED=${SSC_SEED:-1}
MODES=writeback
if is_full; then
	PICK="-e 8" WHICH="every 8th point"
	MODES="writeback writethrough"
else
	PICK="-n $POINTS -s $SEED" WHICH="$POINTS drawn by seed $SEED"
fi
check "cache region (null_blk)" null_blk_add 4 512
check "log device (L)" null_blk_add 256 512
check "replay device (R)" null_blk_add 20 512
check "check copy (S)" null_blk_add 20 512
U=/dev/mapper/nu L=/dev/nullb1 R=/dev/nullb2 S=/dev/nullb3
check "U: the cache region on null_blk, the origin region on NBD" sh -c \
	"printf '0 $C linear /dev/nullb0 0\n$C $O linear /dev/nbd0 0\n' | dmsetup create nu"
export CK_NBLK=$NBLK CK_NOPS=$NOPS CK_LEN=$O
check "check copy carved into cache and origin" sh -c \
	"dmsetup create cs --table '0 $C linear $S 0' && dmsetup create os --table '0 $O linear $S $C'"
for m in $MODES; do
	case $m in
	writeback) crash_sweep writeback 21 0 writeback segment_size 256 dirty_high 5 dirty_low 1 ;;
	*) crash_sweep writethrough 22 0 writethrough segment_size 256 ;;
	esac
done
dmsetup remove cs os nu
check "crash devices torn down" null_blk_teardown

# --- 2. writethrough and writeback over NBD ----------------------------------
check "cache device (null_blk 64 MiB)" null_blk_add 64
check "writethrough: hcctl create over /dev/nbd0" \
	hcctl create v --cache /dev/nullb0 --origin /dev/nbd0 --mode writethrough --admit all --format
fio_verify "writethrough: fio verify, 8 MiB" /dev/mapper/v 8m
check "writethrough: the origin holds the same 8 MiB" same_data /dev/mapper/v /dev/nbd0 8
c=$(ssc_stat v cached)
[ "${c%%/*}" -gt 0 ] && ok "writethrough: blocks cached (${c%%/*})" || not_ok "writethrough: blocks cached # '$c'"
check "writethrough: remove" hcctl remove v
check "writeback: hcctl create over /dev/nbd0 (write-back at 75 %)" \
	hcctl create v --cache /dev/nullb0 --origin /dev/nbd0 --mode writeback --admit all --format \
	--dirty-high 75 --dirty-low 70
fio_verify "writeback: fio verify, 8 MiB" /dev/mapper/v 8m --offset=8m
d=$(ssc_stat v dirty)
[ "${d:-0}" -gt 0 ] && ok "writeback: blocks dirty ($d)" || not_ok "writeback: blocks dirty # '$d'"
check "writeback: hcctl flush" timeout 120 hcctl flush v
check_eq "writeback: 0 dirty" 0 "$(ssc_stat v dirty)"
check "writeback: the origin holds the same 16 MiB" same_data /dev/mapper/v /dev/nbd0 16
dd if=/dev/mapper/v of=/tmp/clean bs=1M count=8 skip=8 iflag=direct 2>/dev/null

# --- 3. the server dies ------------------------------------------------------
dd if=/dev/urandom of=/tmp/ref bs=1M count=4 2>/dev/null
check "4 MiB written dirty at 16 MiB" dd if=/tmp/ref of=/dev/mapper/v bs=1M seek=16 oflag=direct conv=fsync
d0=$(ssc_stat v dirty)
check_eq "1024 blocks dirty" 1024 "$d0"
# reads of blocks never cached (32 to 48 MiB) in flight when the server dies
fio --name=bg --filename=/dev/mapper/v --ioengine=psync --direct=1 --rw=randread --bs=4k \
	--offset=32m --size=16m --runtime=60 --time_based > /tmp/bg.out 2>&1 &
bg=$!
sleep 2
now_cs
t_kill=$NOW
nbd_server_kill
rc=0
wait $bg || rc=$?
now_cs
s=$(((NOW - t_kill) / 100))
[ $rc -ne 0 ] && [ $s -le $((TMO * 2)) ] &&
	ok "the reads in flight fail (fio exit $rc) within $((TMO * 2)) s ($s s)" ||
	not_ok "the reads in flight fail within $((TMO * 2)) s # fio exit $rc after $s s"
grep -m 2 -iE 'error|err=' /tmp/bg.out | sed 's/^/# fio: /'
now_cs
t0=$NOW
check_fails "a read of an uncached block fails (EIO)" \
	dd if=/dev/mapper/v of=/dev/null bs=4k count=1 skip=13000 iflag=direct
now_cs
[ $((NOW - t0)) -le $((TMO * 100)) ] && ok "... at once ($((NOW - t0)) cs)" ||
	not_ok "... at once # took $((NOW - t0)) cs"
oe=$(ssc_stat v origin_errors)
[ "${oe:-0}" -gt 0 ] && ok "origin_errors counted ($oe)" || not_ok "origin_errors counted # '$oe'"
check_eq "dirty blocks kept" "$d0" "$(ssc_stat v dirty)"
check_eq "state ok (the cache device is fine)" ok "$(ssc_stat v state)"
check "dirty blocks read back from the cache" \
	sh -c "dd if=/dev/mapper/v bs=1M count=4 skip=16 iflag=direct 2>/dev/null | cmp - /tmp/ref"
check "clean cached blocks read back (fio's 8 MiB)" \
	sh -c "dd if=/dev/mapper/v bs=1M count=8 skip=8 iflag=direct 2>/dev/null | cmp - /tmp/clean"
dd if=/dev/urandom of=/tmp/ref2 bs=4k count=1 2>/dev/null
check "a write to a new block is cached (dirty), no origin needed" \
	dd if=/tmp/ref2 of=/dev/mapper/v bs=4k seek=14000 oflag=direct
check_eq "one more block dirty" $((d0 + 1)) "$(ssc_stat v dirty)"
check_fails "the FLUSH after it fails (EIO): it flushes the origin too" sync /dev/mapper/v
check "writeback_all accepted" dmsetup message v 0 writeback_all
oe=$(ssc_stat v origin_errors)
sleep 2
oe2=$(ssc_stat v origin_errors)
[ "${oe2:-0}" -gt "${oe:-0}" ] && ok "write-back keeps trying: origin_errors $oe -> $oe2" ||
	not_ok "write-back keeps trying # origin_errors $oe -> $oe2"
check_eq "every dirty block kept" $((d0 + 1)) "$(ssc_stat v dirty)"
check_eq "state writeback_all" writeback_all "$(ssc_stat v state)"
diag "server gone: $(dmsetup status v)"
dmesg | grep -m 1 'write-back of block' | sed 's/^/# /'

# the server back; the volume moves to a new NBD device
nbd_server_start 64 $DELAY > /tmp/start.out 2>&1 && ok "the server restarts (same export)" ||
	{ not_ok "the server restarts (same export)"; sed 's/^/# /' /tmp/start.out; }
# shellcheck disable=SC2015 # diag either way
nbd-client -d /dev/nbd0 > /dev/null 2>&1 && nbd_connect /dev/nbd0 $TMO > /dev/null 2>&1 &&
	diag "/dev/nbd0 reconnected in place" ||
	diag "/dev/nbd0 cannot be reconnected while the volume holds it: $(dmesg | grep -m 1 'nbd0 already in use')"
check "nbd-client: /dev/nbd1" nbd_connect /dev/nbd1 $TMO
# reload_origin DEV [MODE]: the volume's table again, with DEV as its origin (and MODE)
reload_origin() {
	t=$(dmsetup table v | awk -v o="$1" -v m="${2:-}" '{ $5 = o
		for (i = 8; i <= NF; i++) if (m != "" && $i ~ /^(writeback|writethrough|writearound|passthrough)$/) $i = m
		print }') && dmsetup reload v --table "$t" && dmsetup resume v
}
now_cs
t0=$NOW
check "table reloaded onto /dev/nbd1 (dmsetup reload, resume)" reload_origin /dev/nbd1
slow "the reload onto a live origin" "$t0"
check_eq "every dirty block still dirty after the reload" $((d0 + 1)) "$(ssc_stat v dirty)"
check_eq "state ok" ok "$(ssc_stat v state)"
check "hcctl flush: write-back resumes and drains" timeout 120 hcctl flush v
check_eq "0 dirty" 0 "$(ssc_stat v dirty)"
check "the origin holds the 4 MiB written while it was there" \
	sh -c "dd if=/dev/nbd1 bs=1M count=4 skip=16 iflag=direct 2>/dev/null | cmp - /tmp/ref"
check "and the block written while it was away" \
	sh -c "dd if=/dev/nbd1 bs=4k count=1 skip=14000 iflag=direct 2>/dev/null | cmp - /tmp/ref2"
check "the origin holds the first 16 MiB as the volume reads them" same_data /dev/mapper/v /dev/nbd1 16
check "the dead /dev/nbd0, no longer held, disconnects" nbd-client -d /dev/nbd0

# --- 4. the network partitioned, the volume in writethrough -------------------
check "reloaded in writethrough (0 dirty)" reload_origin /dev/nbd1 writethrough
check "the network is partitioned (the veth link down)" nbd_link down
now_cs
t0=$NOW
check_fails "a read of an uncached block fails (EIO)" \
	timeout $((TMO * 6)) dd if=/dev/mapper/v of=/dev/null bs=4k count=1 skip=15001 iflag=direct
now_cs
[ $((NOW - t0)) -le $((TMO * 300)) ] && ok "... within the NBD timeout ($((NOW - t0)) cs, timeout $TMO s)" ||
	not_ok "... within the NBD timeout # took $((NOW - t0)) cs, timeout $TMO s"
check "cached blocks still read" \
	sh -c "dd if=/dev/mapper/v bs=1M count=4 skip=16 iflag=direct 2>/dev/null | cmp - /tmp/ref"
check_fails "a write fails (EIO): writethrough writes the origin" \
	dd if=/tmp/ref2 of=/dev/mapper/v bs=4k seek=15100 oflag=direct
oe=$(ssc_stat v origin_errors)
[ "${oe:-0}" -gt 0 ] && ok "origin_errors counted ($oe)" || not_ok "origin_errors counted # '$oe'"
diag "partitioned: $(dmsetup status v)"
check "the network heals" nbd_link up
check "nbd-client: /dev/nbd2" nbd_connect /dev/nbd2 $TMO
check "table reloaded onto /dev/nbd2" reload_origin /dev/nbd2
check "the block reads now" dd if=/dev/mapper/v of=/dev/null bs=4k count=1 skip=15001 iflag=direct
check "the write goes through now" dd if=/tmp/ref2 of=/dev/mapper/v bs=4k seek=15100 oflag=direct conv=fsync
check "the origin holds it" \
	sh -c "dd if=/dev/nbd2 bs=4k count=1 skip=15100 iflag=direct 2>/dev/null | cmp - /tmp/ref2"
check "remove" hcctl remove v
check "network and server torn down" nbd_net_teardown
check "null_blk teardown" null_blk_teardown
