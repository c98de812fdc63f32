# SPDX-License-Identifier: GPL-2.0
# Shell helpers for VM suites (busybox sh). Every check prints exactly one
# "ok"/"not ok" line; a suite never prints "ok" for something it did not check.

# Kernel log lines that fail a run whatever the suite says (one ERE, shared
# with the host's own check of the console in scripts/vm.sh).
SPLAT=$(cat /ssc/splat.re)

ok() { echo "ok $SUITE: $*"; }
not_ok() { echo "not ok $SUITE: $*"; }
diag() { echo "# $*"; }

# now_cs: NOW = the guest's uptime in centiseconds (no fork: the checks call it often)
now_cs() { read -r NOW _ < /proc/uptime; NOW=${NOW%.*}${NOW#*.}; NOW=${NOW#0}; }

# slow WHAT T0: a diagnostic when a check took 3 s or more since T0 (centiseconds), so
# the time table of make check can be traced to the checks that spend it
slow() {
	now_cs
	[ $((NOW - $2)) -ge 300 ] && diag "@@SLOW $(((NOW - $2) / 100)) s: $SUITE: $1"
	return 0
}

# check "what" cmd args...: ok if the command succeeds
check() {
	what=$1
	shift
	now_cs
	t_check=$NOW
	if out=$("$@" 2>&1); then
		ok "$what"
	else
		not_ok "$what"
		printf '%s\n' "$out" | tail -n 20 | sed 's/^/# /'
	fi
	slow "$what" "$t_check"
}

# check_fails "what" cmd args...: ok if the command fails
check_fails() {
	what=$1
	shift
	if out=$("$@" 2>&1); then
		not_ok "$what # succeeded but should have failed"
		printf '%s\n' "$out" | tail -n 5 | sed 's/^/# /'
	else
		ok "$what"
	fi
}

# check_eq "what" expected actual
check_eq() {
	if [ -z "$2" ]; then
		not_ok "$1 # empty expected value: the setup before this check failed"
	elif [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1"
		diag "expected: $2"
		diag "actual:   $3"
	fi
}

# kernel_log_check SUITE: fail if the kernel logged a splat since the suite started
kernel_log_check() {
	if dmesg | grep -E "$SPLAT" > /tmp/splat; then
		echo "not ok $1: kernel log clean"
		dmesg | tail -n 60 | sed 's/^/# /'
	else
		echo "ok $1: kernel log clean"
	fi
}

# null_blk_setup N SIZE_MB: N memory-backed null_blk disks /dev/nullb0..N-1 (4 KiB blocks,
# discard, a 16 MiB volatile write cache)
null_blk_setup() {
	i=0
	while [ "$i" -lt "$1" ]; do
		null_blk_add "$2" || return 1
		i=$((i + 1))
	done
}

# null_blk_add SIZE_MB [BLOCK_BYTES [DISCARD [CACHE_MB]]]: one more such disk,
# /dev/nullbN with the next free N (4 KiB logical blocks, discard and a 16 MiB
# volatile write cache unless told otherwise)
null_blk_add() {
	grep -q '^null_blk ' /proc/modules || modprobe null_blk nr_devices=0 || return 1
	grep -q configfs /proc/mounts || mount -t configfs configfs /sys/kernel/config || return 1
	i=0
	while [ -e "/sys/kernel/config/nullb/nullb$i" ]; do i=$((i + 1)); done
	d=/sys/kernel/config/nullb/nullb$i
	mkdir "$d" || return 1
	echo "$1" > "$d/size"
	echo 1 > "$d/memory_backed"
	echo "${2:-4096}" > "$d/blocksize"
	echo "${3:-1}" > "$d/discard"
	echo "${4:-16}" > "$d/cache_size"	# a volatile write cache, so flushes matter
	echo 1 > "$d/power"
}

null_blk_teardown() {
	for d in /sys/kernel/config/nullb/nullb*; do
		[ -d "$d" ] || continue
		echo 0 > "$d/power"
		rmdir "$d"
	done
	rmmod null_blk
}

sectors() { blockdev --getsz "$1"; }

# flaky_cache_setup CACHE_MB ORIGIN_MB: a cache device /dev/nullb0 behind
# dm-flakey "fc" (healthy) and an origin /dev/nullb1; sets CLEN (cache
# sectors), LEN (origin sectors), CACHE=/dev/mapper/fc and ORIGIN
flaky_cache_setup() {
	check "modprobe dm-ssc" modprobe dm-ssc
	check "modprobe dm-flakey" modprobe dm-flakey
	check "null_blk cache device" null_blk_add "$1"
	check "null_blk origin device" null_blk_add "$2"
	CLEN=$(sectors /dev/nullb0)
	LEN=$(sectors /dev/nullb1)
	CACHE=/dev/mapper/fc
	ORIGIN=/dev/nullb1
	check "dm-flakey over the cache device" dmsetup create fc --table "$(flaky_table up)"
}

# flaky_table up|drop_writes|error_writes|down: the table of "fc" that passes
# everything, drops writes (a power cut), fails writes, or fails every I/O
flaky_table() {
	case $1 in
	up) echo "0 $CLEN flakey /dev/nullb0 0 3600 0" ;;
	down) echo "0 $CLEN flakey /dev/nullb0 0 0 3600" ;;
	*) echo "0 $CLEN flakey /dev/nullb0 0 0 3600 1 $1" ;;
	esac
}

# flaky_set MODE: switch "fc" to flaky_table MODE
flaky_set() { dmsetup suspend --nolockfs fc && dmsetup load fc --table "$(flaky_table "$1")" && dmsetup resume fc; }

# ssc_stat DEV FIELD: one field of `dmsetup status` of an ssc volume, by name
# (the order is documented in Documentation/ssc.rst)
SSC_FIELDS="start len target mode block_sectors cached dirty free_segs read_hits read_misses \
write_hits write_misses gc_runs gc_evicted gc_copied writebacks data_sectors meta_sectors \
checkpoints log ram_bytes recovered replayed cache_errors origin_errors bypassed state admitted rejected"
ssc_stat() {
	dmsetup status "$1" | awk -v want="$2" -v names="$SSC_FIELDS" '
		{ n = split(names, k, " "); for (i = 1; i <= n; i++) if (k[i] == want) { print $i; exit } }'
}

# fio_verify WHAT DEV SIZE [fio args...]: random 4 KiB writes over SIZE, then
# read everything back and check crc32c; refuses a DEV that is not a block
# device (fio would happily create a regular file instead)
fio_verify() {
	what=$1 dev=$2 size=$3
	shift 3
	if [ ! -b "$dev" ]; then
		not_ok "$what # $dev is not a block device"
		return
	fi
	check "$what" fio --name=verify --filename="$dev" --ioengine=libaio --direct=1 \
		--rw=randwrite --bs=4k --iodepth=16 --size="$size" --verify=crc32c \
		--verify_fatal=1 --do_verify=1 --randseed=42 "$@"
}

# is_debug_kernel: the KASAN/lockdep kernel is slow; suites use smaller sizes there
is_debug_kernel() { case $(uname -r) in *ssc-debug*) return 0 ;; esac; return 1; }
# is_full: make check-full (SSC_FULL=1), the depth before make check had a budget
is_full() { [ "${SSC_FULL:-0}" = 1 ]; }
# is_small: make check on the debug kernel, where a suite runs once at small sizes
# (the same paths, fewer blocks), and where make check asks for it (SSC_SMALL=1:
# the 6.1 smoke); make check-full keeps today's sizes
is_small() { ! is_full && { [ "${SSC_SMALL:-0}" = 1 ] || is_debug_kernel; }; }

# sb_u64 DEV OFFSET / sb_u32 DEV OFFSET: a little-endian field of an ssc
# superblock, read past the page cache (the kernel writes below it)
sb_u64() { blockdev --flushbufs "$1"; od -An -t u8 -j "$2" -N 8 "$1" | tr -d ' '; }
sb_u32() { blockdev --flushbufs "$1"; od -An -t u4 -j "$2" -N 4 "$1" | tr -d ' '; }

# poke DEV BYTE_OFFSET: flip one byte on a device, durably (corruption tests)
poke() {
	blockdev --flushbufs "$1"
	b=$(od -An -t u1 -j "$2" -N 1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $(((b ^ 0xff) & 0xff)))" |
		dd of="$1" bs=1 seek="$2" count=1 conv=notrunc,fsync 2>/dev/null
	blockdev --flushbufs "$1"
}

# same_data DEV1 DEV2: byte-compare two block devices, past any page cache
# (I/O below a device, e.g. dm-ssc writing back to its origin, does not
# update that device's page cache)
same_data() {
	blockdev --flushbufs "$1" && blockdev --flushbufs "$2" && cmp "$1" "$2"
}

# mem_kib DEV: free memory in KiB (MemFree + per-cpu free pages) after
# dropping caches; DEV (a null_blk with a write cache) is flushed first so
# its cache's pages come back. For the benchmarks' RAM-per-block figures.
mem_kib() {
	dd if=/dev/zero of="$1" count=0 conv=fsync,notrunc 2>/dev/null
	sync; echo 3 > /proc/sys/vm/drop_caches; sync; echo 3 > /proc/sys/vm/drop_caches
	pcp=$(awk '$1 == "count:" { s += $2 } END { print s + 0 }' /proc/zoneinfo)
	free=$(awk '$1 == "MemFree:" { print $2 }' /proc/meminfo)
	echo $((free + pcp * 4))
}
