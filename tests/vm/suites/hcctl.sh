# SPDX-License-Identifier: GPL-2.0
# hcctl against live volumes: every subcommand, --json parsed with jq, exit
# codes, and the errors a user gets for bad arguments and unusable devices.
# Devices: nullb0 = 48 MiB cache, nullb1 = 512 MiB origin, nullb2 = 8 MiB,
# nullb3 = 5 GiB origin (sparse: pages only where written).

check "modprobe dm-ssc" modprobe dm-ssc
check "null_blk cache device" null_blk_add 48
check "null_blk origin device" null_blk_add 512
check "null_blk small device" null_blk_add 8
CACHE=/dev/nullb0
ORIGIN=/dev/nullb1

# rc CMD...: the exit status of a command, its output dropped
# err_of CMD...: its stderr only
err_of() { "$@" 2>&1 > /dev/null; }

# --- usage ------------------------------------------------------------------
check "--help" sh -c "hcctl --help | grep -q '^Usage: hcctl'"
check_eq "no command: exit 2" 2 "$(rc hcctl)"
check_eq "unknown command: exit 2" 2 "$(rc hcctl frobnicate)"
check_eq "status of nothing: exit 0" 0 "$(rc hcctl status)"
check_eq "--json status with no volume: an empty list" 0 "$(hcctl --json status | jq '.volumes | length')"

# --- create: validation -----------------------------------------------------
check_eq "create: not a block device: exit 2" 2 "$(rc hcctl create v --cache /dev/null --origin $ORIGIN)"
check "create: says it is not a block device" sh -c \
	"hcctl create v --cache /dev/null --origin $ORIGIN 2>&1 | grep -q 'not a block device'"
check_eq "create: same device twice: exit 2" 2 "$(rc hcctl create v --cache $CACHE --origin $CACHE)"
check_eq "create: bad mode: exit 2" 2 "$(rc hcctl create v --cache $CACHE --origin $ORIGIN --mode fast)"
check_eq "create: block size not a power of two: exit 2" 2 \
	"$(rc hcctl create v --cache $CACHE --origin $ORIGIN --block-size 5000)"
check_eq "create: dirty-high without dirty-low: exit 2" 2 \
	"$(rc hcctl create v --cache $CACHE --origin $ORIGIN --dirty-high 50)"
check_eq "create: dirty-low >= dirty-high: exit 2" 2 \
	"$(rc hcctl create v --cache $CACHE --origin $ORIGIN --dirty-high 30 --dirty-low 30)"
check_eq "create: missing --origin: exit 2" 2 "$(rc hcctl create v --cache $CACHE)"
check_eq "create: cache too small: exit 1" 1 "$(rc hcctl create v --cache /dev/nullb2 --origin $ORIGIN)"
check "create: says the cache is too small" sh -c \
	"hcctl create v --cache /dev/nullb2 --origin $ORIGIN 2>&1 | grep -q 'too small'"
dmsetup create holder --table "0 8 linear $CACHE 0"
check_eq "create: cache held by another dm device: exit 1" 1 "$(rc hcctl create v --cache $CACHE --origin $ORIGIN)"
check "create: says the device is in use" sh -c \
	"hcctl create v --cache $CACHE --origin $ORIGIN 2>&1 | grep -q 'in use'"
dmsetup remove holder
dd if=/dev/urandom of=$CACHE bs=4k count=1 oflag=direct 2>/dev/null
check_eq "create over a cache holding something else: exit 1" 1 "$(rc hcctl create v --cache $CACHE --origin $ORIGIN)"
check "create: passes on the kernel's reason" sh -c \
	"hcctl create v --cache $CACHE --origin $ORIGIN 2>&1 | grep -q 'the kernel says:.*the format feature argument formats it'"
check_fails "create: nothing left behind after a refusal" dmsetup info v

# --- create, status ------------------------------------------------------------
check_eq "create writeback with --format" /dev/mapper/v \
	"$(hcctl create v --cache $CACHE --origin $ORIGIN --mode writeback --format --dirty-high 40 --dirty-low 30 --segment-size 1M)"
check_eq "create: the table it built" \
	"0 1048576 ssc $(cat /sys/block/nullb0/dev) $(cat /sys/block/nullb1/dev) 8 11 writeback segment_size 2048 dirty_high 40 dirty_low 30 sequential_threshold 0 admit reuse" \
	"$(dmsetup table v)"
check_eq "create: the name is taken now: exit 1" 1 "$(rc hcctl create v --cache $CACHE --origin $ORIGIN)"
dmsetup create lin --table "0 2048 linear /dev/nullb2 0"
dd if=/dev/urandom of=/tmp/blk bs=4k count=4 2>/dev/null
check "write 4 blocks at block 100" dd if=/tmp/blk of=/dev/mapper/v bs=4k seek=100 oflag=direct
J=$(hcctl --json status v)
check_eq "--json: one volume" 1 "$(echo "$J" | jq '.volumes | length')"
check_eq "--json: name" v "$(echo "$J" | jq -r '.volumes[0].name')"
check_eq "--json: mode" writeback "$(echo "$J" | jq -r '.volumes[0].mode')"
check_eq "--json: state" ok "$(echo "$J" | jq -r '.volumes[0].state')"
check_eq "--json: dirty blocks" 4 "$(echo "$J" | jq '.volumes[0].dirty_blocks')"
check_eq "--json: cached blocks" "$(ssc_stat v cached | cut -d/ -f1)" "$(echo "$J" | jq '.volumes[0].cached_blocks')"
check_eq "--json: cache blocks" "$(ssc_stat v cached | cut -d/ -f2)" "$(echo "$J" | jq '.volumes[0].cache_blocks')"
check_eq "--json: size" $((512 * 1048576)) "$(echo "$J" | jq '.volumes[0].size_bytes')"
check_eq "--json: cache device" "$(cat /sys/block/nullb0/dev)" "$(echo "$J" | jq -r '.volumes[0].cache_device')"
check_eq "--json: origin device" "$(cat /sys/block/nullb1/dev)" "$(echo "$J" | jq -r '.volumes[0].origin_device')"
check_eq "--json: ram per cached block = ram_bytes / cached" \
	"$(echo "$J" | jq '.volumes[0].ram_bytes / .volumes[0].cached_blocks | floor')" \
	"$(echo "$J" | jq '.volumes[0].ram_bytes_per_cached_block | floor')"
check_eq "--json: every documented key present" 37 "$(echo "$J" | jq '.volumes[0] | keys | length')"
check_eq "status lists ssc volumes only" 1 "$(hcctl --json status | jq '.volumes | length')"
check "status: human table has the volume" sh -c "hcctl status | grep -Eq '^v +writeback +512.0MiB +4096 .* ok$'"
check_eq "status of a linear device: exit 3" 3 "$(rc hcctl status lin)"
check_eq "status of no device: exit 3" 3 "$(rc hcctl status nosuch)"

# --- exists / clean / evict / checkpoint ----------------------------------------
check_eq "exists: block numbers of the range" 100-103 "$(hcctl exists v 96+16)"
check_eq "exists FIRST-LAST" 100-103 "$(hcctl exists v 90-110)"
check_eq "exists --json" "[[100,103]]" "$(hcctl --json exists v 96+16 | jq -c .dirty)"
check "clean 101" hcctl clean v 101
check_eq "exists after clean" 100,102-103 "$(hcctl exists v 96+16)"
check_eq "evict a dirty block: exit 1" 1 "$(rc hcctl evict v 100)"
check "evict: says to clean first" sh -c "hcctl evict v 100 2>&1 | grep -q 'cleaned first'"
n0=$(ssc_stat v cached | cut -d/ -f1)
check "evict 101 (clean)" hcctl evict v 101
check_eq "evict: one block fewer cached" $((n0 - 1)) "$(hcctl --json status v | jq '.volumes[0].cached_blocks')"
c0=$(hcctl --json status v | jq '.volumes[0].checkpoints')
check "checkpoint" hcctl checkpoint v
check_eq "checkpoint counted" $((c0 + 1)) "$(hcctl --json status v | jq '.volumes[0].checkpoints')"
check_eq "range beyond the volume: exit 2" 2 "$(rc hcctl exists v 131070+8)"
check_eq "range LAST < FIRST: exit 2" 2 "$(rc hcctl exists v 5-2)"
check_eq "range not a number: exit 2" 2 "$(rc hcctl exists v abc)"
check_eq "range of 0 blocks: exit 2" 2 "$(rc hcctl exists v 5+0)"
check_eq "exists on a linear device: exit 3" 3 "$(rc hcctl exists lin 1)"
check_eq "checkpoint without a volume: exit 2" 2 "$(rc hcctl checkpoint)"

# --- flush -----------------------------------------------------------------
check "dirty 2048 more blocks" dd if=/dev/urandom of=/dev/mapper/v bs=4k seek=4096 count=2048 oflag=direct
out=$(hcctl flush v)
check_eq "flush: exit 0, nothing dirty after" 0 "$(hcctl --json status v | jq '.volumes[0].dirty_blocks')"
check "flush: progress lines when not on a terminal" sh -c "echo '$out' | grep -q '^flush: .* written back, 0 dirty$'"
check "flush: origin has the data" sh -c \
	"dd if=$ORIGIN bs=4k skip=100 count=4 iflag=direct 2>/dev/null | cmp - /tmp/blk"
check_eq "flush --no-wait on a clean volume: exit 0" 0 "$(rc hcctl flush v --no-wait)"
check_eq "flush of a linear device: exit 3" 3 "$(rc hcctl flush lin)"

# --- remove ----------------------------------------------------------------
exec 3< /dev/mapper/v
check_eq "remove while open: exit 1" 1 "$(rc hcctl remove v)"
exec 3<&-
check "remove" hcctl remove v
check_eq "removed: exit 3" 3 "$(rc hcctl status v)"
check_eq "remove of a linear device: exit 3" 3 "$(rc hcctl remove lin)"
check "the linear device is untouched" dmsetup info lin
dmsetup remove lin

# --- exists over more than the kernel answers at once (2^20 blocks) ---------
check "null_blk 5 GiB origin (sparse)" null_blk_add 5120
check "create over the 5 GiB origin" hcctl create v2 --cache $CACHE --origin /dev/nullb3 --mode writeback --format
for b in 1048575 1048576 1300000; do
	dd if=/dev/urandom of=/dev/mapper/v2 bs=4k seek=$b count=1 oflag=direct 2>/dev/null
done
check_eq "exists across the 2^20-block chunks, ranges merged" 1048575-1048576,1300000 \
	"$(hcctl exists v2 0+1310720)"
check_eq "exists --json across chunks" "[[1048575,1048576],[1300000,1300000]]" \
	"$(hcctl --json exists v2 0+1310720 | jq -c .dirty)"
check "remove v2" hcctl remove v2

check "rmmod dm-ssc" rmmod dm_ssc
check "null_blk teardown" null_blk_teardown
