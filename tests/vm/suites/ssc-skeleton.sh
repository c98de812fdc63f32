# SPDX-License-Identifier: GPL-2.0
# dm-ssc skeleton: table parsing, status, messages, passthrough I/O.
# Devices: two 256 MiB memory-backed null_blk disks, nullb0 = cache, nullb1 = origin.

check "modprobe dm-ssc" modprobe dm-ssc
check "target ssc registered" sh -c 'dmsetup targets | grep -q "^ssc "'
check "null_blk devices" null_blk_setup 2 256

CACHE=/dev/nullb0
ORIGIN=/dev/nullb1
LEN=$(sectors $ORIGIN)
TABLE="0 $LEN ssc $CACHE $ORIGIN 8 1 passthrough"

check "create passthrough volume" dmsetup create ssc0 --table "$TABLE"
check_eq "volume size equals origin" "$LEN" "$(sectors /dev/mapper/ssc0)"

# table round trip: what `dmsetup table` prints must load back to the same thing
t1=$(dmsetup table ssc0)
c0=$(cat /sys/block/nullb0/dev)
c1=$(cat /sys/block/nullb1/dev)
check_eq "table shows normalised line" "0 $LEN ssc $c0 $c1 8 3 passthrough segment_size 4096" "$t1"
check "reload table from its own output" sh -c "dmsetup reload ssc0 --table '$t1' && dmsetup resume ssc0"
check_eq "table round-trips" "$t1" "$(dmsetup table ssc0)"

# a non-default segment size survives the round trip too
check "reload with segment_size 2048" sh -c "dmsetup reload ssc0 --table '0 $LEN ssc $CACHE $ORIGIN 16 3 segment_size 2048 passthrough' && dmsetup resume ssc0"
check_eq "segment_size and block size kept" "0 $LEN ssc $c0 $c1 16 3 passthrough segment_size 2048" "$(dmsetup table ssc0)"

# status: <start> <len> ssc <mode> <block_sectors> <segments> <reads> <writes> <discards> <flushes>
check "clear_stats message" dmsetup message ssc0 0 clear_stats
set -- $(dmsetup status ssc0)
check_eq "status after clear_stats" "passthrough 16 256 0 0 0 0" "$4 $5 $6 $7 $8 $9 ${10}"

check "fio verify (crc32c) through the volume" fio --name=verify --filename=/dev/mapper/ssc0 \
	--ioengine=libaio --direct=1 --rw=randwrite --bs=4k --iodepth=16 --size=64m \
	--verify=crc32c --verify_fatal=1 --do_verify=1 --fsync=64
set -- $(dmsetup status ssc0)
[ "$7" -gt 0 ] && [ "$8" -gt 0 ] && ok "status counts fio's I/O ($7 reads, $8 writes)" ||
	not_ok "status counts fio's I/O # reads '$7' writes '$8'"

# exact counts: 1024 direct 4 KiB bios each way, then one flush
dmsetup message ssc0 0 clear_stats
dd if=/dev/mapper/ssc0 of=/dev/null bs=4k count=1024 iflag=direct 2>/dev/null
dd if=/dev/zero of=/dev/mapper/ssc0 bs=4k count=1024 oflag=direct 2>/dev/null
sync /dev/mapper/ssc0
set -- $(dmsetup status ssc0)
check_eq "status counts 1024 reads and 1024 writes" "1024 1024" "$7 $8"
[ "${10}" -ge 1 ] && ok "status counts flushes (${10})" || not_ok "status counts flushes # got '${10}'"

# passthrough really puts data on the origin and nothing on the cache
dd if=/dev/urandom of=/tmp/pattern bs=1M count=4 2>/dev/null
check "write pattern at 100 MiB" dd if=/tmp/pattern of=/dev/mapper/ssc0 bs=1M seek=100 oflag=direct conv=fsync
check "pattern is on the origin" sh -c "dd if=$ORIGIN bs=1M skip=100 count=4 iflag=direct 2>/dev/null | cmp - /tmp/pattern"
check "cache device untouched" sh -c "dd if=$CACHE bs=1M skip=100 count=4 iflag=direct 2>/dev/null | cmp - /tmp/pattern; [ \$? -eq 1 ]"
check "discard passes through" blkdiscard -o $((100 << 20)) -l $((4 << 20)) /dev/mapper/ssc0
set -- $(dmsetup status ssc0)
[ "$9" -ge 1 ] && ok "status counts discards ($9)" || not_ok "status counts discards # got '$9'"

check_fails "unknown message rejected" dmsetup message ssc0 0 no_such_message
check_fails "clear_stats with an argument rejected" dmsetup message ssc0 0 clear_stats now
check "remove volume" dmsetup remove ssc0

# every bad table line is refused with its own message in the kernel log
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

dmsetup create small --table "0 8192 linear $CACHE 0"
bad_table "Not enough arguments" "0 $LEN ssc $CACHE $ORIGIN 8"
bad_table "Error opening cache device" "0 $LEN ssc /dev/nonexistent $ORIGIN 8 1 passthrough"
bad_table "Error opening origin device" "0 $LEN ssc $CACHE /dev/nonexistent 8 1 passthrough"
bad_table "Cache and origin must be different devices" "0 $LEN ssc $CACHE $CACHE 8 1 passthrough"
bad_table "Invalid block size" "0 $LEN ssc $CACHE $ORIGIN 4 1 passthrough"
bad_table "Invalid block size" "0 $LEN ssc $CACHE $ORIGIN 24 1 passthrough"
bad_table "Invalid block size" "0 $LEN ssc $CACHE $ORIGIN 4096 1 passthrough"
bad_table "Invalid block size" "0 $LEN ssc $CACHE $ORIGIN 8k 1 passthrough"
bad_table "Invalid number of feature arguments" "0 $LEN ssc $CACHE $ORIGIN 8 x passthrough"
bad_table "Invalid number of feature arguments" "0 $LEN ssc $CACHE $ORIGIN 8 4 passthrough segment_size 4096 x"
bad_table "Invalid number of feature arguments" "0 $LEN ssc $CACHE $ORIGIN 8 2 passthrough"
bad_table "Unrecognised feature argument" "0 $LEN ssc $CACHE $ORIGIN 8 1 turbo"
bad_table "Conflicting mode feature arguments" "0 $LEN ssc $CACHE $ORIGIN 8 2 passthrough writeback"
bad_table "segment_size needs a value" "0 $LEN ssc $CACHE $ORIGIN 8 2 passthrough segment_size"
bad_table "Invalid segment_size" "0 $LEN ssc $CACHE $ORIGIN 8 3 passthrough segment_size 100"
bad_table "Invalid segment_size" "0 $LEN ssc $CACHE $ORIGIN 8 3 passthrough segment_size 3000"
bad_table "Duplicate segment_size" "0 $LEN ssc $CACHE $ORIGIN 8 3 segment_size 2048 segment_size"
bad_table "segment_size is smaller than the block size" "0 $LEN ssc $CACHE $ORIGIN 2048 3 passthrough segment_size 1024"
bad_table "Too many arguments" "0 $LEN ssc $CACHE $ORIGIN 8 1 passthrough extra"
bad_table "Only passthrough mode is implemented" "0 $LEN ssc $CACHE $ORIGIN 8 0"
bad_table "Only passthrough mode is implemented" "0 $LEN ssc $CACHE $ORIGIN 8 1 writeback"
bad_table "Origin device is smaller than the target" "0 $((LEN + 8)) ssc $CACHE $ORIGIN 8 1 passthrough"
bad_table "Cache device is too small" "0 $LEN ssc /dev/mapper/small $ORIGIN 8 1 passthrough"
check "no device left behind by rejected tables" sh -c '! dmsetup info sscbad > /dev/null 2>&1'
dmsetup remove small

check "rmmod dm-ssc" rmmod dm_ssc
check "null_blk teardown" null_blk_teardown
