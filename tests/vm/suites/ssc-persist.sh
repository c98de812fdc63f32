# SPDX-License-Identifier: GPL-2.0
# dm-ssc persistence: cached blocks survive a clean shutdown, dirty data
# survives a crash (power cut simulated with dm-flakey drop_writes under the
# cache device), and a corrupted superblock, checkpoint or log block is
# refused with a clear message instead of being trusted.
# Devices: nullb0 = 64 MiB cache behind dm-flakey "fc", nullb1 = 256 MiB origin.

flaky_cache_setup 64 256

mk() { dmsetup create v --table "0 $LEN ssc $CACHE $ORIGIN 8 1 $1"; }
cut_power() { flaky_set drop_writes; }
restore_power() { flaky_set up; }
dd if=/dev/urandom of=/tmp/p1 bs=1M count=8 2>/dev/null
dd if=/dev/urandom of=/tmp/p2 bs=1M count=8 2>/dev/null

# --- clean shutdown: write-through cache contents survive ----------------------
check "create writethrough (format)" dmsetup create v --table "0 $LEN ssc $CACHE $ORIGIN 8 2 format writethrough"
check "write 8 MiB" dd if=/tmp/p1 of=/dev/mapper/v bs=1M oflag=direct
c1=$(ssc_stat v cached)
check "remove (clean shutdown)" dmsetup remove v
check "create again" mk writethrough
check_eq "cached blocks survive a clean shutdown" "$c1" "$(ssc_stat v cached)"
check_eq "no recovery after a clean shutdown" 0 "$(ssc_stat v recovered)"
check "data reads back" sh -c "dd if=/dev/mapper/v bs=1M count=8 iflag=direct 2>/dev/null | cmp - /tmp/p1"
check_eq "and every read hit the cache" 2048 "$(ssc_stat v read_hits)"
check "table reload keeps the cache" sh -c "dmsetup reload v --table \"\$(dmsetup table v)\" && dmsetup resume v"
check_eq "cached blocks survive a reload" "$c1" "$(ssc_stat v cached)"
check "remove" dmsetup remove v

# --- crash: dirty data acknowledged before a flush survives -----------------
check "create writeback" mk writeback
check "write 8 MiB dirty + fsync" dd if=/tmp/p2 of=/dev/mapper/v bs=4k oflag=direct conv=fsync
d1=$(ssc_stat v dirty)
[ "$d1" -gt 1000 ] && ok "blocks are dirty ($d1)" || not_ok "blocks are dirty # '$d1'"
check "power cut on the cache device" cut_power
dd if=/dev/urandom of=/dev/mapper/v bs=4k seek=4096 count=256 oflag=direct 2>/dev/null
check "remove (its shutdown checkpoint is lost)" dmsetup remove v
check "power back" restore_power
check "create after the crash" mk writeback
check_eq "recovery ran" 1 "$(ssc_stat v recovered)"
r=$(ssc_stat v replayed)
[ "$r" -gt 0 ] && ok "log records replayed ($r)" || not_ok "log records replayed # '$r'"
check "acknowledged dirty data survived the crash" \
	sh -c "dd if=/dev/mapper/v bs=4k count=2048 iflag=direct 2>/dev/null | cmp - /tmp/p2"
blockdev --flushbufs $ORIGIN
check_fails "(and it came from the cache, not the origin)" \
	sh -c "dd if=$ORIGIN bs=4k count=2048 iflag=direct 2>/dev/null | cmp -s - /tmp/p2"
check "remove" dmsetup remove v

# --- power cut in the middle of fio: verify what was acknowledged ----------
check "create writeback" mk writeback
# an fsync every 32 writes, and one after the last write completed: with libaio
# an fsync does not wait for writes in flight, so without end_fsync the last
# few writes are acknowledged after the last FLUSH and may be lost (they are
# committed at the next FLUSH, or within the group commit's second)
# (16 MiB at the small sizes: 44 s of the debug kernel at 32)
PW=32m
is_small && PW=16m
fio_verify "fio verify before the cut" /dev/mapper/v $PW --fsync=32 --end_fsync=1
check "power cut" cut_power
fio --name=cut --filename=/dev/mapper/v --ioengine=libaio --direct=1 --rw=randwrite --bs=4k \
	--iodepth=16 --size=32m --offset=64m --runtime=2 --time_based > /dev/null 2>&1
dmsetup remove v
restore_power
check "create after the cut" mk writeback
fio_verify "data acknowledged before the cut verifies" /dev/mapper/v $PW --verify_only
check "remove" dmsetup remove v

# --- corruption is refused, not trusted ------------------------------------
CKPT1=$(sb_u64 /dev/nullb0 48)
LOGS=$(sb_u64 /dev/nullb0 64)
LBS=$(sb_u32 /dev/nullb0 112)
[ -n "$CKPT1" ] && [ -n "$LOGS" ] && [ -n "$LBS" ] && ok "superblock fields readable (ckpt1 $CKPT1, log $LOGS, $LBS B)" ||
	not_ok "superblock fields readable"
dd if=/dev/nullb0 of=/tmp/meta bs=1M count=8 iflag=direct 2>/dev/null

refused() {	# refused WHAT MESSAGE: creating + resuming v fails with MESSAGE
	dmesg -c > /dev/null
	if dmsetup create v --table "0 $LEN ssc $CACHE $ORIGIN 8 1 writeback" > /dev/null 2>&1; then
		not_ok "$1 # accepted"
		dmsetup remove v
		return
	fi
	dmsetup remove v 2>/dev/null
	if dmesg | grep -qF "$2"; then
		ok "$1: $2"
	else
		not_ok "$1 # wanted '$2'"
		dmesg | tail -n 3 | sed 's/^/# /'
	fi
}
restore_meta() { dd if=/tmp/meta of=/dev/nullb0 bs=1M count=8 oflag=direct 2>/dev/null; }

poke /dev/nullb0 20
refused "corrupt superblock" "Cache superblock checksum mismatch"
restore_meta
poke /dev/nullb0 $((8 * 512 + 100))
poke /dev/nullb0 $((CKPT1 * 512 + 100))
refused "both checkpoints corrupt" "No valid checkpoint on the cache device"
restore_meta
check "intact metadata still loads" sh -c "dmsetup create v --table '0 $LEN ssc $CACHE $ORIGIN 8 1 writeback' && dmsetup remove v"

# a corrupt checkpoint entry block: make the current checkpoint the one to hit
dd if=/dev/nullb0 of=/tmp/meta bs=1M count=8 iflag=direct 2>/dev/null
for start in 8 "$CKPT1"; do
	restore_meta
	poke /dev/nullb0 $(((start + 8) * 512 + 200))
	dmesg -c > /dev/null
	if dmsetup create v --table "0 $LEN ssc $CACHE $ORIGIN 8 1 writeback" > /dev/null 2>&1; then
		dmsetup remove v
	elif dmesg | grep -qF "Checkpoint block is corrupt"; then
		hit=1
	fi
done
[ "${hit:-0}" = 1 ] && ok "corrupt checkpoint entry block refused: Checkpoint block is corrupt" ||
	not_ok "corrupt checkpoint entry block refused"
restore_meta

# a corrupt log block followed by a valid one: crash with a log, then poke log block 0
check "create writeback for the log test" mk writeback
check "power cut" cut_power
dmsetup remove v
restore_power
check "create (recovery checkpoint)" mk writeback
check "64 dirty writes, each committed (FUA: O_SYNC)" fio --name=fua --filename=/dev/mapper/v --rw=write --bs=4k \
	--size=256k --direct=1 --sync=1 --ioengine=psync
lu=$(ssc_stat v log | cut -d/ -f1)
[ "$lu" -ge 2 ] && ok "the log holds $lu blocks" || not_ok "the log holds blocks # '$lu'"
check "power cut" cut_power
dmsetup remove v
restore_power
dd if=/dev/nullb0 of=/tmp/meta bs=1M count=8 iflag=direct 2>/dev/null
poke /dev/nullb0 $((LOGS * 512 + 64))
refused "corrupt log block in the middle of the log" "Log block is corrupt in the middle of the log"
restore_meta
check "the same log without the corruption recovers" mk writeback
check_eq "recovery replayed the log" 1 "$(ssc_stat v recovered)"
check "remove" dmsetup remove v

# --- a table made shorter than the origin the cache holds blocks of ----------
# write-back must never write past the target's end: a dirty block there
# refuses the load (its data would be lost), a clean one is dropped
SHORT=$((LEN - 2048))
dd if=/dev/urandom of=/tmp/last bs=4k count=1 2>/dev/null
check "create writeback (format)" dmsetup create v --table "0 $LEN ssc $CACHE $ORIGIN 8 2 format writeback"
check "a dirty block in the last MiB" dd if=/tmp/last of=/dev/mapper/v bs=4k seek=$((LEN / 8 - 1)) oflag=direct
check "remove" dmsetup remove v
dmesg -c > /dev/null
check_fails "a table 1 MiB shorter is refused" dmsetup create v --table "0 $SHORT ssc $CACHE $ORIGIN 8 1 writeback"
dmsetup remove v 2>/dev/null
check "with: dirty blocks past the end of the origin" sh -c "dmesg | grep -q 'dirty blocks past the end of the origin'"
check "the full-length table still loads" dmsetup create v --table "0 $LEN ssc $CACHE $ORIGIN 8 1 writeback"
check "and the block reads back" sh -c "dd if=/dev/mapper/v bs=4k skip=$((LEN / 8 - 1)) count=1 iflag=direct 2>/dev/null | cmp - /tmp/last"
check "write it back" dmsetup message v 0 clean $((LEN / 8 - 1))
check "remove" dmsetup remove v
dmesg -c > /dev/null
check "now the shorter table loads" dmsetup create v --table "0 $SHORT ssc $CACHE $ORIGIN 8 1 writeback"
check "dropping the clean block past its end" sh -c "dmesg | grep -q 'dropped 1 clean blocks past the end'"
check "remove" dmsetup remove v

check "remove flakey" dmsetup remove fc
check "rmmod dm-ssc" rmmod dm_ssc
check "null_blk teardown" null_blk_teardown
