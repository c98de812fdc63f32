# SPDX-License-Identifier: GPL-2.0
# make bench-flashvm: stock swap, stock swap with zswap, and each flashvm
# mechanism alone and all together, on the same patched kernel, workloads and
# device. One "FVMBENCH CONFIG WORKLOAD k=v..." diagnostic a run;
# scripts/bench-flashvm.sh makes the tables. Each run is swapstress in a memory
# cgroup (FB_MB MiB of pages, FB_LIMIT allowed), two passes, every page
# verified: seq, stride (every 16th page, then the next offset) and random with
# half the visits rewriting their page; hotrw (nine visits in ten to a hot 40 %
# of the pages, every visit rewriting, half the pages never rewritten); kv, a
# memcached-style key-value load (eight requests in ten to a popular fifth of
# the items, one request in ten a set that rewrites its item).
# Device: nullb0 = 64 MiB with discard, flash-like when FB_LAT_US > 0: every
# request (read, write or discard, of any size) completes FB_LAT_US after it
# is issued (null_blk's timer), so fewer, larger requests pay, as on flash.
# FB_WRITE_MS > 0 puts dm-delay in front, adding that to every write and
# discard; its delayed bios reach nullb0 one by one, unmerged, so the write
# request counts then say nothing about merging. Counts are read at nullb0.
# zswap: its pool is charged to the cgroup, and capped at half of the limit
# (memory.zswap.max; FB_ZSWAP_MAX): uncapped, the OOM killer ended the first
# three runs tried, each within a second.

CG=/sys/fs/cgroup/fvmb
SYS=/sys/kernel/flashvm
MB=${FB_MB:-32}
LIMIT=${FB_LIMIT:-10M}
# FB_WORKLOADS, FB_CONFIGS (comma lists) and FB_ROUNDS of each discard mode: what the
# smoke trims
WORKLOADS=$(echo "${FB_WORKLOADS:-seq,stride,random,hotrw,kv}" | tr , ' ')
CONFIGS=$(echo "${FB_CONFIGS:-stock,zswap,prefetch,sampling,clustering,preclean,all}" | tr , ' ')
ROUNDS=${FB_ROUNDS:-3}
LAT_US=${FB_LAT_US:-100}
# zswap's pool is charged to the cgroup: at most half of its limit (FB_LIMIT in MiB)
ZSWAP_MAX=${FB_ZSWAP_MAX:-$(( ${LIMIT%M} * 512 ))K}
WRITE_MS=${FB_WRITE_MS:-0}
SWAPDEV=/dev/nullb0

vmev() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
bst() { awk -v f="$1" '{ print $f }' /sys/block/nullb0/stat; }
incg() { sh -c 'echo $$ > '$CG'/cgroup.procs && exec "$@"' sh "$@"; }
cs() { awk '{ printf "%d\n", $1 * 100 }' /proc/uptime; }	# centiseconds

# bench CONFIG WORKLOAD SWAPSTRESS-ARGS...
bench() {
	cfg=$1 wl=$2
	shift 2
	r0=$(bst 1) w0=$(bst 5) ws0=$(bst 7) d0=$(bst 12) ds0=$(bst 14)
	pin0=$(vmev pswpin) pout0=$(vmev pswpout) t0=$(cs)
	out=$(incg swapstress -m "$MB" "$@" 2>&1)
	rc=$?
	t1=$(cs)
	sleep 1	# discards go out from a worker after the process has gone
	diag "FVMBENCH $cfg $wl rc=$rc $out wall_cs=$((t1 - t0))" \
		"pswpin=$(($(vmev pswpin) - pin0)) pswpout=$(($(vmev pswpout) - pout0))" \
		"read_ios=$(($(bst 1) - r0)) write_ios=$(($(bst 5) - w0))" \
		"write_sectors=$(($(bst 7) - ws0)) discard_ios=$(($(bst 12) - d0))" \
		"discard_sectors=$(($(bst 14) - ds0))"
	check_eq "$cfg $wl: every page read back right" 0 "$rc"
}

zswap() { echo "$1" > /sys/module/zswap/parameters/enabled; }

# policy stock|zswap|prefetch|sampling|clustering|preclean|all|merged|dummy:
# one mechanism alone, or all of them (merged and dummy: the discard table's)
policy() {
	zswap N || return 1
	case $1 in
	stock|zswap)
		grep -q '^flashvm ' /proc/modules && rmmod flashvm
		echo max > $CG/memory.zswap.max
		[ "$1" = stock ] && return
		echo "$ZSWAP_MAX" > $CG/memory.zswap.max && zswap Y
		return
		;;
	esac
	grep -q '^flashvm ' /proc/modules || modprobe flashvm || return 1
	p=0 s=0 m=0 d=0 c=0 pc=0
	case $1 in
	prefetch) p=1 ;;
	sampling) s=1 ;;
	clustering) c=1 ;;
	preclean) pc=128 ;;
	all) p=1 s=1 m=1 d=1 c=1 pc=128 ;;
	merged) m=1 ;;
	dummy) m=1 d=1 ;;
	esac
	echo $p > $SYS/prefetch && echo $((p * 2)) > $SYS/stride_pages &&
		echo $s > $SYS/sampling && echo $m > $SYS/merged_discard &&
		echo $d > $SYS/dummy_discard && echo 50 > $SYS/dummy_free_pct &&
		echo $c > $SYS/clustering && echo $pc > $SYS/preclean_pages
}

mkdir -p /sys/fs/cgroup
grep -q cgroup2 /proc/mounts || mount -t cgroup2 none /sys/fs/cgroup
echo +memory > /sys/fs/cgroup/cgroup.subtree_control
mkdir -p $CG
check "cgroup memory.max $LIMIT" sh -c "echo $LIMIT > $CG/memory.max"
check "null_blk swap device (${LAT_US} us a request)" null_blk_add 64 4096 1 0 "$LAT_US"
echo none > /sys/block/nullb0/queue/scheduler
if [ "$WRITE_MS" -gt 0 ]; then
	check "dm-delay: ${WRITE_MS} ms more a write or discard" dmsetup create fvmbd --table \
		"0 $(sectors /dev/nullb0) delay /dev/nullb0 0 0 /dev/nullb0 0 $WRITE_MS"
	SWAPDEV=/dev/mapper/fvmbd
fi
check "mkswap" mkswap $SWAPDEV
check "swapon, discard=pages" swapon -dpages $SWAPDEV
diag "FVMBENCH-DEVICE lat_us=$LAT_US write_ms=$WRITE_MS kernel=$(uname -r)"

# each mechanism against stock, on every workload
for cfg in $CONFIGS; do
	check "policy $cfg" policy $cfg
	for wl in $WORKLOADS; do
		case $wl in
		hotrw) bench $cfg $wl -o hot -h 40:90 -R 50 -n 2 -w 100 ;;
		kv) bench $cfg $wl -o hot -h 20:80 -n 2 -w 10 ;;
		*) bench $cfg $wl -o $wl -s 16 -n 2 -w 50 ;;
		esac
	done
done
check "zswap off" zswap N

# discard: three processes in a row, each freeing its swap when it exits
for cfg in nodiscard pages merged dummy; do
	check "swapoff" swapoff $SWAPDEV
	if [ $cfg = nodiscard ]; then
		check "swapon, no discard" swapon $SWAPDEV
		check "policy stock" policy stock
	else
		check "swapon, discard=pages" swapon -dpages $SWAPDEV
		case $cfg in
		pages) check "policy stock" policy stock ;;
		*) check "policy $cfg" policy $cfg ;;
		esac
	fi
	for i in $(seq "$ROUNDS"); do
		bench $cfg round$i -o random -n 1 -w 50 -S $i
	done
done

check "swapoff" swapoff $SWAPDEV

# clustering on a fragmented device: swapstress -U (see tests/tools/swapstress.c)
# on a 16 MiB swap device, 32-slot units (128 KiB): how many of B's pages land in
# a unit that still holds live A pages, stock and with clustering
check "null_blk for the clustering probe" null_blk_add 16 4096 1 0
udev=/dev/$(null_blk_newest)
check "mkswap" mkswap $udev
check "swapon" swapon $udev
for cfg in stock clustering; do
	check "policy $cfg" policy $cfg
	[ $cfg = stock ] || echo 128 > $SYS/erase_block_kb
	out=$(swapstress -m 20 -U 32 -n 1 -o seq 2>&1)
	rc=$?
	diag "FVMPROBE $cfg rc=$rc $out"
	check_eq "probe $cfg: every page read back right" 0 "$rc"
done
check "swapoff" swapoff $udev
grep -q '^flashvm ' /proc/modules && check "rmmod flashvm" rmmod flashvm
[ $SWAPDEV = /dev/nullb0 ] || check "dm-delay removed" dmsetup remove fvmbd
rmdir $CG
check "null_blk teardown" null_blk_teardown
