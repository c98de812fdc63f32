# SPDX-License-Identifier: GPL-2.0
# dm-ssc under a failing cache device (dm-flakey under it): never wrong data,
# never an oops. Write-through falls back to the origin for reads and fails
# the cache on a metadata write error, then refuses writes it can no longer
# order safely; write-back turns read-only, keeps serving its dirty blocks
# while the device reads, and loses nothing once the device is back. A FLUSH
# fails when the cache flush does while dirty blocks exist, in any mode. Errors
# of I/O sent straight to the origin count in origin_errors.
# Devices: nullb0 = 64 MiB cache behind dm-flakey "fc", nullb1 = 128 MiB origin.

flaky_cache_setup 64 128
mk() { dmsetup create v --table "0 $LEN ssc $CACHE $ORIGIN 8 1 $1"; }
mkf() { dmsetup create v --table "0 $LEN ssc $CACHE $ORIGIN 8 2 format $1"; }
dd if=/dev/urandom of=/tmp/e1 bs=1M count=8 2>/dev/null
dd if=/dev/urandom of=/tmp/e2 bs=1M count=4 2>/dev/null
readback() { dd if=/dev/mapper/v bs=1M count="$2" skip="${3:-0}" iflag=direct 2>/dev/null | cmp - "$1"; }

# --- writethrough: a dead cache device costs speed, never data -------------
check "create writethrough" mkf writethrough
check "write 8 MiB" dd if=/tmp/e1 of=/dev/mapper/v bs=1M oflag=direct conv=fsync
check "read it (fills nothing new: all cached)" readback /tmp/e1 8
c=$(ssc_stat v cached)
check_eq "2048 blocks cached" "2048/" "${c%%/*}/"
check "cache device fails every I/O" flaky_set down
check "reads still return the right data (from the origin)" readback /tmp/e1 8
e=$(ssc_stat v cache_errors)
[ "${e:-0}" -gt 0 ] && ok "cache read errors counted ($e)" || not_ok "cache read errors counted # '$e'"
check_eq "the cache is failed" failed "$(ssc_stat v state)"
# the failed reads evicted their blocks in memory, and those evictions cannot
# be recorded: writing the origin would leave the cache device a stale copy
# for its next load, so writes are refused
check_fails "a write to a block is refused (EIO), not sent to the origin" \
	dd if=/tmp/e2 of=/dev/mapper/v bs=1M oflag=direct conv=fsync
check_fails "also to a block that was never cached" \
	dd if=/tmp/e2 of=/dev/mapper/v bs=1M seek=16 oflag=direct conv=fsync
check "reads still return the data" readback /tmp/e1 8
check "remove (shutdown cannot write the cache)" dmsetup remove v
check "cache device back" flaky_set up
check "create again: the cache loads" mk writethrough
check "every block reads as acknowledged" readback /tmp/e1 8
check "the origin holds the same" sh -c "dd if=$ORIGIN bs=1M count=8 iflag=direct 2>/dev/null | cmp - /tmp/e1"
check "remove" dmsetup remove v
dd if=/dev/zero of=/dev/nullb0 bs=4k count=1 oflag=direct 2>/dev/null

# --- writeback: failing writes turn it read-only; dirty data survives ------
check "create writeback" mkf writeback
check "write 8 MiB dirty" dd if=/tmp/e1 of=/dev/mapper/v bs=1M oflag=direct conv=fsync
d=$(ssc_stat v dirty)
[ "${d:-0}" -gt 1000 ] && ok "blocks dirty ($d)" || not_ok "blocks dirty # '$d'"
check "cache device fails writes" flaky_set error_writes
check_fails "a write to a new block fails (EIO), not lost silently" \
	dd if=/tmp/e2 of=/dev/mapper/v bs=1M seek=32 count=1 oflag=direct conv=fsync
check_eq "state read_only" read_only "$(ssc_stat v state)"
check "dirty data is still read from the cache" readback /tmp/e1 8
check "cache device fails everything" flaky_set down
check_fails "a dirty block cannot be read: EIO, not the origin's stale data" \
	dd if=/dev/mapper/v of=/dev/null bs=4k count=1 iflag=direct
check "remove" dmsetup remove v
check "cache device back" flaky_set up
check "create again: recovery" mk writeback
check "every acknowledged dirty block is there" readback /tmp/e1 8
check "write back everything" dmsetup message v 0 clean 0 $((LEN / 8))
check_eq "nothing dirty" 0 "$(ssc_stat v dirty)"
check "origin has the data" sh -c "dd if=$ORIGIN bs=1M count=8 iflag=direct 2>/dev/null | cmp - /tmp/e1"
check "remove" dmsetup remove v

# --- a FLUSH needs the cache flush while dirty blocks exist, in any mode ----
# (writethrough over dirty blocks left by writeback: partial writes to them
# go in place, and only the cache flush makes them durable). The origin is a
# dm-delay that holds writes 10 s, so write-back cannot drain them first.
check "modprobe dm-delay" modprobe dm-delay
check "dm-delay over the origin (no delay yet)" dmsetup create slow --table "0 $LEN delay $ORIGIN 0 0"
wt="0 $LEN ssc $CACHE /dev/mapper/slow 8"
check "create writeback" dmsetup create v --table "$wt 2 format writeback"
check "write 8 MiB dirty" dd if=/tmp/e1 of=/dev/mapper/v bs=1M oflag=direct conv=fsync
check "origin writes now take 10 s" sh -c "dmsetup suspend slow &&
	dmsetup load slow --table '0 $LEN delay $ORIGIN 0 0 $ORIGIN 0 10000 $ORIGIN 0 0' &&
	dmsetup resume slow"
check "reload as writethrough" sh -c "dmsetup reload v --table '$wt 1 writethrough' && dmsetup resume v"
check "cache device fails writes" flaky_set error_writes
d=$(ssc_stat v dirty)
check "dirty blocks when the FLUSH comes ($d)" sh -c "[ ${d:-0} -gt 0 ]"
check_fails "a FLUSH (fsync of the device) fails when the cache flush does" \
	dd if=/dev/null of=/dev/mapper/v conv=fsync,notrunc
check "cache device back" flaky_set up
check "remove" dmsetup remove v
check "remove dm-delay" dmsetup remove slow

# --- a read miss completes with its origin read; the fill follows ----------
# The cache device holds writes 10 s (dm-delay in place of "fc"'s flakey
# table): the reader must not wait for the cache write of its block's fill,
# which is published only once that write is done. Waiting for it, the read
# would return with the block already cached.
check "create writethrough" dmsetup create v --table "0 $LEN ssc $CACHE $ORIGIN 8 2 format writethrough"
check "a first miss opens a segment" dd if=/dev/mapper/v of=/dev/null bs=4k skip=776 count=1 iflag=direct
i=0
while [ "$(ssc_stat v cached | cut -d/ -f1)" != 1 ] && [ $i -lt 30 ]; do sleep 1; i=$((i + 1)); done
check "cache writes now take 10 s" sh -c "dmsetup suspend --nolockfs fc &&
	dmsetup load fc --table '0 $CLEN delay /dev/nullb0 0 0 /dev/nullb0 0 10000' &&
	dmsetup resume fc"
m0=$(ssc_stat v read_misses)
check "a read miss" dd if=/dev/mapper/v of=/dev/null bs=4k skip=777 count=1 iflag=direct
c1=$(ssc_stat v cached | cut -d/ -f1)
check_eq "the read was a miss" $((m0 + 1)) "$(ssc_stat v read_misses)"
check_eq "the read completed before its fill was published" 1 "$c1"
i=0
while [ "$(ssc_stat v cached | cut -d/ -f1)" = 1 ] && [ $i -lt 60 ]; do sleep 1; i=$((i + 1)); done
check_eq "the fill is published once its cache write is done" 2 "$(ssc_stat v cached | cut -d/ -f1)"
h0=$(ssc_stat v read_hits)
check "read the block again" dd if=/dev/mapper/v of=/dev/null bs=4k skip=777 count=1 iflag=direct
check_eq "now a hit" $((h0 + 1)) "$(ssc_stat v read_hits)"
check "cache device back" flaky_set up
check "remove" dmsetup remove v

# --- errors of I/O sent straight to the origin are counted -------------------
# (a passthrough read miss is remapped to the origin in .map; its error used to
# go uncounted)
check "an origin that fails every I/O" dmsetup create eo --table "0 $LEN error"
check "create passthrough over it" dmsetup create v --table "0 $LEN ssc $CACHE /dev/mapper/eo 8 2 format passthrough"
check_fails "a read of the origin fails" dd if=/dev/mapper/v of=/dev/null bs=4k count=1 iflag=direct
check_eq "... and origin_errors counts it" 1 "$(ssc_stat v origin_errors)"
check_eq "... not as a cache error" 0 "$(ssc_stat v cache_errors)"
check "remove" dmsetup remove v
check "remove the failing origin" dmsetup remove eo
check "remove flakey" dmsetup remove fc
check "null_blk teardown" null_blk_teardown
