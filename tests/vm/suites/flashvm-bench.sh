# SPDX-License-Identifier: GPL-2.0
# make bench-flashvm: stock swap against each flashvm policy on the same
# patched kernel, workloads and devices. One "FVMBENCH CONFIG WORKLOAD k=v..."
# diagnostic a run; scripts/bench-flashvm.sh makes the table. Each run is
# swapstress in a memory cgroup (FB_MB MiB of pages, FB_LIMIT allowed), two
# passes, half the visits rewriting their page (a tenth in "readmostly",
# random order; in "hotrw", nine visits in ten go to a hot 40 % of the pages,
# every visit rewrites its page, but half the pages are never rewritten), every
# page verified.
# Device: nullb0 = 64 MiB swap device with discard.

CG=/sys/fs/cgroup/fvmb
SYS=/sys/kernel/flashvm
MB=${FB_MB:-32}
LIMIT=${FB_LIMIT:-10M}
# FB_WORKLOADS (comma list) and FB_ROUNDS of each discard mode: what the smoke trims
WORKLOADS=$(echo "${FB_WORKLOADS:-seq,stride,random,readmostly,hotrw}" | tr , ' ')
ROUNDS=${FB_ROUNDS:-3}

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

policy() { # policy stock|prefetch|sampling|all|merged|dummy
	if [ "$1" = stock ]; then
		grep -q '^flashvm ' /proc/modules && rmmod flashvm
		return 0
	fi
	grep -q '^flashvm ' /proc/modules || modprobe flashvm || return 1
	p=0 s=0 m=0 d=0
	case $1 in
	prefetch) p=1 ;;
	sampling) s=1 ;;
	all) p=1 s=1 m=1 d=1 ;;
	merged) m=1 ;;
	dummy) m=1 d=1 ;;
	esac
	echo $p > $SYS/prefetch && echo $((p * 2)) > $SYS/stride_pages &&
		echo $s > $SYS/sampling && echo $m > $SYS/merged_discard &&
		echo $d > $SYS/dummy_discard && echo 50 > $SYS/dummy_free_pct
}

mkdir -p /sys/fs/cgroup
grep -q cgroup2 /proc/mounts || mount -t cgroup2 none /sys/fs/cgroup
echo +memory > /sys/fs/cgroup/cgroup.subtree_control
mkdir -p $CG
check "cgroup memory.max $LIMIT" sh -c "echo $LIMIT > $CG/memory.max"
check "null_blk swap device" null_blk_add 64 4096 1 0
check "mkswap" mkswap /dev/nullb0
check "swapon, discard=pages" swapon -dpages /dev/nullb0
echo false > /sys/kernel/mm/swap/vma_ra_enabled
echo none > /sys/block/nullb0/queue/scheduler

# readahead and sampling: three access patterns, stock against each policy
for cfg in stock prefetch sampling all; do
	check "policy $cfg" policy $cfg
	for wl in $WORKLOADS; do
		case $wl in
		readmostly) bench $cfg $wl -o random -n 2 -w 10 ;;
		hotrw) bench $cfg $wl -o hot -h 40:90 -R 50 -n 2 -w 100 ;;
		*) bench $cfg $wl -o $wl -s 16 -n 2 -w 50 ;;
		esac
	done
done

# discard: three processes in a row, each freeing its swap when it exits
for cfg in nodiscard pages merged dummy; do
	check "swapoff" swapoff /dev/nullb0
	if [ $cfg = nodiscard ]; then
		check "swapon, no discard" swapon /dev/nullb0
		check "policy stock" policy stock
	else
		check "swapon, discard=pages" swapon -dpages /dev/nullb0
		case $cfg in
		pages) check "policy stock" policy stock ;;
		*) check "policy $cfg" policy $cfg ;;
		esac
	fi
	for i in $(seq "$ROUNDS"); do
		bench $cfg round$i -o random -n 1 -w 50 -S $i
	done
done

check "swapoff" swapoff /dev/nullb0
grep -q '^flashvm ' /proc/modules && check "rmmod flashvm" rmmod flashvm
echo true > /sys/kernel/mm/swap/vma_ra_enabled
rmdir $CG
check "null_blk teardown" null_blk_teardown
