# SPDX-License-Identifier: GPL-2.0
# dm-ssc interface: table lines (good and bad), table round trip, status
# fields, messages, the superblock's geometry check, passthrough I/O.
# Devices: two 256 MiB memory-backed null_blk disks, nullb0 = cache, nullb1 = origin.

check "modprobe dm-ssc" modprobe dm-ssc
check "target ssc registered" sh -c 'dmsetup targets | grep -q "^ssc "'
check "null_blk devices" null_blk_setup 2 256

CACHE=/dev/nullb0
ORIGIN=/dev/nullb1
LEN=$(sectors $ORIGIN)
c0=$(cat /sys/block/nullb0/dev)
c1=$(cat /sys/block/nullb1/dev)

# formatting is asked for, and done at the first resume: never by a table only loaded
bad_resume() {	# bad_resume WHAT TABLE: create fails (the load or the resume) with WHAT logged
	dmesg -c > /dev/null
	if dmsetup create ssc0 --table "$2" > /dev/null 2>&1; then
		not_ok "refused: $1 # accepted"
		dmsetup remove ssc0
	elif dmesg | grep -qF "$1"; then
		ok "refused: $1"
	else
		not_ok "refused: $1 # not in the kernel log"
		dmesg | tail -n 3 | sed 's/^/# /'
	fi
	dmsetup remove ssc0 2>/dev/null
}
bad_resume "Cache device is not formatted: add the format feature argument" "0 $LEN ssc $CACHE $ORIGIN 8 0"
check "load a table with format, never resume it" sh -c \
	"dmsetup create ssc0 --notable && dmsetup load ssc0 --table '0 $LEN ssc $CACHE $ORIGIN 8 1 format'"
check_eq "an inactive table shows its pending format" \
	"0 $LEN ssc $c0 $c1 8 12 format writethrough segment_size 4096 dirty_high 20 dirty_low 10 sequential_threshold 0 admit all" \
	"$(dmsetup table --inactive ssc0)"
check "remove it" dmsetup remove ssc0
check_eq "the cache device was not written" 0 "$(sb_u32 $CACHE 4)"
check "create with format only (writethrough)" dmsetup create ssc0 --table "0 $LEN ssc $CACHE $ORIGIN 8 1 format"
check_eq "volume size equals origin" "$LEN" "$(sectors /dev/mapper/ssc0)"
check "kernel formatted the zeroed cache device" sh -c 'dmesg | grep -q "dm-ssc: formatted cache"'
check_eq "superblock magic SSCS" "1397965651" "$(sb_u32 $CACHE 4)"
check_eq "table shows normalised line with defaults" \
	"0 $LEN ssc $c0 $c1 8 11 writethrough segment_size 4096 dirty_high 20 dirty_low 10 sequential_threshold 0 admit all" "$(dmsetup table ssc0)"

# every mode and knob round-trips through dmsetup table
for t in "writeback dirty_high 40 dirty_low 5" "writearound sequential_threshold 2048" "passthrough" "writethrough"; do
	set -- $t
	check "reload as $1" sh -c "dmsetup reload ssc0 --table '0 $LEN ssc $CACHE $ORIGIN 8 $# $t' && dmsetup resume ssc0"
	t1=$(dmsetup table ssc0)
	check "reload $1 from its own output" sh -c "dmsetup reload ssc0 --table '$t1' && dmsetup resume ssc0"
	check_eq "$1 table round-trips" "$t1" "$(dmsetup table ssc0)"
	check_eq "status reports mode $1" "$1" "$(ssc_stat ssc0 mode)"
done
check_eq "dirty knobs kept" "0 $LEN ssc $c0 $c1 8 11 writethrough segment_size 4096 dirty_high 20 dirty_low 10 sequential_threshold 0 admit all" \
	"$(dmsetup table ssc0)"

# status: 29 fields, documented in Documentation/ssc.rst
check_eq "status has 29 fields" 29 "$(dmsetup status ssc0 | wc -w)"
check_eq "status state ok" ok "$(ssc_stat ssc0 state)"
check "clear_stats message" dmsetup message ssc0 0 clear_stats
check_eq "counters zero after clear_stats" "0 0 0 0" \
	"$(ssc_stat ssc0 read_hits) $(ssc_stat ssc0 read_misses) $(ssc_stat ssc0 write_hits) $(ssc_stat ssc0 write_misses)"

# exact counts: 256 direct 4 KiB reads miss then hit; 256 writes hit
dd if=/dev/mapper/ssc0 of=/dev/null bs=4k count=256 iflag=direct 2>/dev/null
check_eq "256 read misses" 256 "$(ssc_stat ssc0 read_misses)"
check_eq "misses filled the cache" "256/" "$(ssc_stat ssc0 cached | sed 's,/.*,/,')"
dd if=/dev/mapper/ssc0 of=/dev/null bs=4k count=256 iflag=direct 2>/dev/null
check_eq "256 read hits" 256 "$(ssc_stat ssc0 read_hits)"
dd if=/dev/zero of=/dev/mapper/ssc0 bs=4k count=256 oflag=direct 2>/dev/null
check_eq "256 write hits" 256 "$(ssc_stat ssc0 write_hits)"
check_eq "writethrough keeps nothing dirty" 0 "$(ssc_stat ssc0 dirty)"

# messages
check "checkpoint message" dmsetup message ssc0 0 checkpoint
check "exists message" dmsetup message ssc0 0 exists 0 64
check "evict message" dmsetup message ssc0 0 evict 0 16
check_eq "evict dropped 16 blocks" "240/" "$(ssc_stat ssc0 cached | sed 's,/.*,/,')"
check_fails "unknown message rejected" dmsetup message ssc0 0 no_such_message
check_fails "clear_stats with an argument rejected" dmsetup message ssc0 0 clear_stats now
check_fails "evict without a block rejected" dmsetup message ssc0 0 evict
check_fails "evict of a non-number rejected" dmsetup message ssc0 0 evict x
check_fails "evict past the end rejected" dmsetup message ssc0 0 evict $((LEN / 8))
check_fails "exists over too many blocks rejected" dmsetup message ssc0 0 exists 0 2000000
check_fails "exists with a zero count rejected" dmsetup message ssc0 0 exists 0 0

# passthrough puts data on the origin only and drops the cached copy
check "reload as passthrough" sh -c "dmsetup reload ssc0 --table '0 $LEN ssc $CACHE $ORIGIN 8 1 passthrough' && dmsetup resume ssc0"
dd if=/dev/urandom of=/tmp/pattern bs=1k count=64 2>/dev/null
check "write pattern at blocks 16-31" dd if=/tmp/pattern of=/dev/mapper/ssc0 bs=64k seek=1 count=1 oflag=direct conv=fsync
check "pattern is on the origin" sh -c "dd if=$ORIGIN bs=64k skip=1 count=1 iflag=direct 2>/dev/null | cmp - /tmp/pattern"
check "pattern reads back" sh -c "dd if=/dev/mapper/ssc0 bs=64k skip=1 count=1 iflag=direct 2>/dev/null | cmp - /tmp/pattern"
check_eq "cached copies of written blocks dropped" "224/" "$(ssc_stat ssc0 cached | sed 's,/.*,/,')"
# a retiring cache is not read: its 224 cached blocks are read from the origin
dmsetup message ssc0 0 clear_stats
dd if=/dev/mapper/ssc0 of=/dev/null bs=1M count=$((LEN / 2048)) iflag=direct 2>/dev/null
check_eq "passthrough reads every block from the origin (no read hits)" 0 "$(ssc_stat ssc0 read_hits)"
check "discard passes through" blkdiscard -o $((100 << 20)) -l $((4 << 20)) /dev/mapper/ssc0

# sequential bypass: with a 64-sector (32 KiB) threshold, a sequential read of
# 64 blocks caches the first 8 and sends the other 56 to the origin; random
# (non-contiguous) reads are cached whatever their number
check "reload with sequential_threshold 64" sh -c "dmsetup reload ssc0 --table '0 $LEN ssc $CACHE $ORIGIN 8 3 writethrough sequential_threshold 64' && dmsetup resume ssc0"
check "evict everything" dmsetup message ssc0 0 evict 0 $((LEN / 8))
dmsetup message ssc0 0 clear_stats
dd if=/dev/mapper/ssc0 of=/dev/null bs=4k skip=1024 count=64 iflag=direct 2>/dev/null
check_eq "sequential read: 56 blocks bypassed" 56 "$(ssc_stat ssc0 bypassed)"
check_eq "sequential read: only the first 8 blocks cached" "8/" "$(ssc_stat ssc0 cached | sed 's,/.*,/,')"
# the same read again: its first 8 blocks are hits, which take no lock but
# keep the stream going, so the 56 misses after them go around the cache as
# before (were hits left out of streams, 8 more would be cached). On one CPU:
# a hit run becomes a stream when the next bio of its CPU continues it.
dmsetup message ssc0 0 clear_stats
taskset 1 dd if=/dev/mapper/ssc0 of=/dev/null bs=4k skip=1024 count=64 iflag=direct 2>/dev/null
check_eq "sequential read again: 8 read hits" 8 "$(ssc_stat ssc0 read_hits)"
check_eq "sequential read again: the hits continue the stream, 56 bypassed" 56 "$(ssc_stat ssc0 bypassed)"
check_eq "sequential read again: still 8 blocks cached" "8/" "$(ssc_stat ssc0 cached | sed 's,/.*,/,')"
for b in 3000 3002 3004 3006 3008 3010 3012 3014 3016 3018 3020 3022; do
	dd if=/dev/mapper/ssc0 of=/dev/null bs=4k skip=$b count=1 iflag=direct 2>/dev/null
done
check_eq "strided reads are not a stream: all 12 cached" "20/" "$(ssc_stat ssc0 cached | sed 's,/.*,/,')"
dd if=/dev/urandom of=/tmp/seqw bs=4k count=64 2>/dev/null
check "sequential write of 64 blocks over cached ones" \
	dd if=/tmp/seqw of=/dev/mapper/ssc0 bs=4k seek=1024 count=64 oflag=direct conv=fsync
check_eq "sequential write: 56 blocks bypassed (112 in all)" 112 "$(ssc_stat ssc0 bypassed)"
check "sequential write reads back" sh -c "dd if=/dev/mapper/ssc0 bs=4k skip=1024 count=64 iflag=direct 2>/dev/null | cmp - /tmp/seqw"
check "and is on the origin" sh -c "dd if=$ORIGIN bs=4k skip=1024 count=64 iflag=direct 2>/dev/null | cmp - /tmp/seqw"
check "reload without the threshold" sh -c "dmsetup reload ssc0 --table '0 $LEN ssc $CACHE $ORIGIN 8 0' && dmsetup resume ssc0"

check "remove volume" dmsetup remove ssc0

# the superblock pins the geometry: a different block or segment size is refused
bad_table() {
	want=$1
	shift
	dmesg -c > /dev/null
	if dmsetup create sscbad --table "$*" > /dev/null 2>&1; then
		not_ok "rejects '$*' # accepted"
		dmsetup remove sscbad
		return
	fi
	if dmesg | grep -qF "ssc: $want"; then
		ok "rejects '$*': $want"
	else
		not_ok "rejects '$*' with '$want'"
		dmesg | tail -n 3 | sed 's/^/# /'
	fi
}

bad_table "block_size does not match" "0 $LEN ssc $CACHE $ORIGIN 16 0"
bad_table "segment_size does not match" "0 $LEN ssc $CACHE $ORIGIN 8 2 segment_size 2048"

dmsetup create small --table "0 8192 linear $CACHE 0"
dmsetup create small2 --table "0 16384 linear $ORIGIN 0"
dd if=/dev/urandom of=/dev/mapper/small2 bs=4k count=1 2>/dev/null
small2_sum=$(dd if=/dev/mapper/small2 bs=4k count=1 2>/dev/null | md5sum)
bad_table "Not enough arguments" "0 $LEN ssc $CACHE $ORIGIN 8"
bad_table "Error opening cache device" "0 $LEN ssc /dev/nonexistent $ORIGIN 8 1 passthrough"
bad_table "Error opening origin device" "0 $LEN ssc $CACHE /dev/nonexistent 8 1 passthrough"
bad_table "Cache and origin must be different devices" "0 $LEN ssc $CACHE $CACHE 8 1 passthrough"
bad_table "Invalid block size" "0 $LEN ssc $CACHE $ORIGIN 4 1 passthrough"
bad_table "Invalid block size" "0 $LEN ssc $CACHE $ORIGIN 24 1 passthrough"
bad_table "Invalid block size" "0 $LEN ssc $CACHE $ORIGIN 4096 1 passthrough"
bad_table "Invalid block size" "0 $LEN ssc $CACHE $ORIGIN 8k 1 passthrough"
bad_table "Invalid number of feature arguments" "0 $LEN ssc $CACHE $ORIGIN 8 x passthrough"
bad_table "Invalid number of feature arguments" "0 $LEN ssc $CACHE $ORIGIN 8 15 format passthrough segment_size 4096 dirty_high 20 dirty_low 10 sequential_threshold 0 admit all x y"
bad_table "Duplicate format feature argument" "0 $LEN ssc $CACHE $ORIGIN 8 2 format format"
bad_table "Invalid number of feature arguments" "0 $LEN ssc $CACHE $ORIGIN 8 2 passthrough"
bad_table "Unrecognised feature argument" "0 $LEN ssc $CACHE $ORIGIN 8 1 turbo"
bad_table "Conflicting mode feature arguments" "0 $LEN ssc $CACHE $ORIGIN 8 2 passthrough writeback"
bad_table "Feature argument needs a value" "0 $LEN ssc $CACHE $ORIGIN 8 2 passthrough segment_size"
bad_table "Invalid segment_size" "0 $LEN ssc $CACHE $ORIGIN 8 3 passthrough segment_size 100"
bad_table "Invalid segment_size" "0 $LEN ssc $CACHE $ORIGIN 8 3 passthrough segment_size 3000"
bad_table "Duplicate segment_size" "0 $LEN ssc $CACHE $ORIGIN 8 4 segment_size 2048 segment_size 2048"
bad_table "Invalid dirty_high/dirty_low" "0 $LEN ssc $CACHE $ORIGIN 8 2 dirty_high 90"
bad_table "Invalid dirty_high/dirty_low" "0 $LEN ssc $CACHE $ORIGIN 8 4 dirty_high 20 dirty_low 20"
bad_table "Invalid dirty_high/dirty_low" "0 $LEN ssc $CACHE $ORIGIN 8 2 dirty_low x"
bad_table "Invalid dirty_high/dirty_low" "0 $LEN ssc $CACHE $ORIGIN 8 4 dirty_low 5 dirty_low 5"
bad_table "Invalid sequential_threshold" "0 $LEN ssc $CACHE $ORIGIN 8 2 sequential_threshold -1"
bad_table "Invalid sequential_threshold" "0 $LEN ssc $CACHE $ORIGIN 8 2 sequential_threshold 2147483649"
bad_table "Invalid sequential_threshold" "0 $LEN ssc $CACHE $ORIGIN 8 4 sequential_threshold 8 sequential_threshold 8"
bad_table "Invalid admit policy: want all or reuse" "0 $LEN ssc $CACHE $ORIGIN 8 2 admit lru"
bad_table "Invalid admit policy: want all or reuse" "0 $LEN ssc $CACHE $ORIGIN 8 4 admit all admit reuse"
bad_table "Feature argument needs a value" "0 $LEN ssc $CACHE $ORIGIN 8 1 admit"
bad_table "segment_size must hold at least two blocks" "0 $LEN ssc $CACHE $ORIGIN 2048 3 passthrough segment_size 2048"
bad_table "Too many arguments" "0 $LEN ssc $CACHE $ORIGIN 8 1 passthrough extra"
bad_table "Origin device is smaller than the target" "0 $((LEN + 8)) ssc $CACHE $ORIGIN 8 1 passthrough"
bad_table "Target length is not a multiple of the block size" "0 $((LEN - 4)) ssc $CACHE $ORIGIN 8 1 passthrough"
bad_table "Cache device is too small: it must hold at least 8 segments" "0 $LEN ssc /dev/mapper/small $ORIGIN 8 0"
bad_table "Cache device holds something else" "0 8192 ssc /dev/mapper/small2 $CACHE 8 2 segment_size 256"
check "no device left behind by rejected tables" sh -c '! dmsetup info sscbad > /dev/null 2>&1'
check_eq "a refused cache device is not overwritten" "$small2_sum" \
	"$(dd if=/dev/mapper/small2 bs=4k count=1 2>/dev/null | md5sum)"
dmsetup remove small
dmsetup remove small2

# admission (admit reuse): on a 16 MiB cache (about 3,000 slots of 4 KiB),
# once it is full a block that missed is kept out the first time and let in
# the second. The table has about 1,500 entries: of 256 blocks, about one in
# ten loses its entry to a later one, hence the bounds of 190. A block let in
# is cached only if it finds a free slot: while GC makes room (the cache is
# full) its fill may be dropped, and it is remembered for its next miss
# instead. On this small cache GC starts only once user data may no longer
# open a segment (free segments below 3, the reserve is 2), so fills and
# writes that find the open segment full go around until GC is done: 93 to
# 203 of 256 blocks let in were cached in the runs seen. Hence: at least a
# quarter of those let in must hit the next time (64).
ge() { [ "$1" -ge "$2" ]; }
dmsetup create admc --table "0 32768 linear $CACHE 0"
check "create admit reuse (writethrough, 16 MiB cache)" dmsetup create adm --table \
	"0 $LEN ssc /dev/mapper/admc $ORIGIN 8 6 format writethrough segment_size 256 admit reuse"
check_eq "table shows admit reuse" "admit reuse" "$(dmsetup table adm | grep -o 'admit [a-z]*')"
dd if=/dev/urandom of=/tmp/adm24 bs=1M count=24 2>/dev/null
check "write 24 MiB, twice the cache" dd if=/tmp/adm24 of=/dev/mapper/adm bs=1M oflag=direct conv=fsync
slots=$(ssc_stat adm cached | cut -d/ -f2)
check "writes past the full cache are rejected ($(ssc_stat adm rejected) of 6144)" \
	ge "$(ssc_stat adm rejected)" $((6144 - slots))
check "hcctl status --json has the counters" sh -c \
	"hcctl --json status adm | jq -e '.volumes[0].rejected > 0 and .volumes[0].admitted >= 0'"
# the last 256 blocks written were kept out: reading them is their second touch
dmsetup message adm 0 clear_stats
dd if=/dev/mapper/adm of=/dev/null bs=4k skip=5888 count=256 iflag=direct 2>/dev/null
check "read after a rejected write: admitted ($(ssc_stat adm admitted) of 256)" ge "$(ssc_stat adm admitted)" 190
# (one in 255 may have been let in by another block's tag)
check "read after a rejected write: no more than 3 hits ($(ssc_stat adm read_hits))" ge 3 "$(ssc_stat adm read_hits)"
dd if=/dev/mapper/adm of=/dev/null bs=4k skip=5888 count=256 iflag=direct 2>/dev/null
check "read again: hits ($(ssc_stat adm read_hits) of 256)" ge "$(ssc_stat adm read_hits)" 64
# blocks never touched: kept out, let in, then hit
dmsetup message adm 0 clear_stats
dd if=/dev/mapper/adm of=/dev/null bs=4k skip=20000 count=256 iflag=direct 2>/dev/null
check "first read of new blocks: rejected ($(ssc_stat adm rejected) of 256)" ge "$(ssc_stat adm rejected)" 250
check_eq "first read of new blocks: nothing cached, no hits" 0 "$(ssc_stat adm read_hits)"
dd if=/dev/mapper/adm of=/dev/null bs=4k skip=20000 count=256 iflag=direct 2>/dev/null
check "second read: admitted ($(ssc_stat adm admitted) of 256)" ge "$(ssc_stat adm admitted)" 190
dd if=/dev/mapper/adm of=/dev/null bs=4k skip=20000 count=256 iflag=direct 2>/dev/null
check "third read: hits ($(ssc_stat adm read_hits) of 256)" ge "$(ssc_stat adm read_hits)" 64
# writeback: a first write to a new block of a full cache goes to the origin
check "reload as writeback admit reuse" sh -c "dmsetup reload adm --table '0 $LEN ssc /dev/mapper/admc $ORIGIN 8 5 writeback segment_size 256 admit reuse' && dmsetup resume adm"
dmsetup message adm 0 clear_stats
dd if=/dev/urandom of=/tmp/adm1 bs=4k count=256 2>/dev/null
check "writeback: first write of 256 new blocks" dd if=/tmp/adm1 of=/dev/mapper/adm bs=4k seek=30000 count=256 oflag=direct conv=fsync
check "writeback: first writes rejected ($(ssc_stat adm rejected) of 256)" ge "$(ssc_stat adm rejected)" 250
# the few let in by another block's tag are dirty in the cache, not yet on the
# origin: every block the origin does not hold yet must be one of them
dirty=$(ssc_stat adm dirty)
check "writeback: nearly nothing dirty ($dirty)" ge 6 "$dirty"
stale=$(dd if=$ORIGIN bs=4k skip=30000 count=256 iflag=direct 2>/dev/null | cmp -l - /tmp/adm1 |
	awk '{ print int(($1 - 1) / 4096) }' | uniq | wc -l)
check "writeback: rejected writes are on the origin ($stale blocks not yet, $dirty dirty)" ge "$dirty" "$stale"
check "writeback: the first write reads back" sh -c \
	"dd if=/dev/mapper/adm bs=4k skip=30000 count=256 iflag=direct 2>/dev/null | cmp - /tmp/adm1"
dd if=/dev/urandom of=/tmp/adm2 bs=4k count=256 2>/dev/null
check "writeback: second write" dd if=/tmp/adm2 of=/dev/mapper/adm bs=4k seek=30000 count=256 oflag=direct conv=fsync
check "writeback: second writes let in ($(ssc_stat adm admitted) of 256)" ge "$(ssc_stat adm admitted)" 190
check "writeback: second writes absorbed ($(ssc_stat adm dirty) dirty)" ge "$(ssc_stat adm dirty)" 64
check "writeback: the second write reads back" sh -c \
	"dd if=/dev/mapper/adm bs=4k skip=30000 count=256 iflag=direct 2>/dev/null | cmp - /tmp/adm2"
# admit all: FlashTier's behaviour, every miss cached at once
check "reload as writethrough admit all" sh -c "dmsetup reload adm --table '0 $LEN ssc /dev/mapper/admc $ORIGIN 8 5 writethrough segment_size 256 admit all' && dmsetup resume adm"
dmsetup message adm 0 clear_stats
dd if=/dev/mapper/adm of=/dev/null bs=4k skip=40000 count=64 iflag=direct 2>/dev/null
dd if=/dev/mapper/adm of=/dev/null bs=4k skip=40000 count=64 iflag=direct 2>/dev/null
# (a fill that finds no free slot while GC works is dropped, see above)
check_eq "admit all: nothing rejected or counted as admitted" "0 0" \
	"$(ssc_stat adm rejected) $(ssc_stat adm admitted)"
check "admit all: the second read hits ($(ssc_stat adm read_hits) of 64)" ge "$(ssc_stat adm read_hits)" 16
check "everything written reads back" sh -c \
	"dd if=/dev/mapper/adm bs=1M count=24 iflag=direct 2>/dev/null | cmp - /tmp/adm24"
check "remove the admission volume" dmsetup remove adm
dmsetup remove admc
rm -f /tmp/adm24 /tmp/adm1 /tmp/adm2

check "rmmod dm-ssc" rmmod dm_ssc
check "null_blk teardown" null_blk_teardown
