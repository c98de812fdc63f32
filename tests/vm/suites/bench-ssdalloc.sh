# SPDX-License-Identifier: GPL-2.0
# make bench-ssdalloc: SSDAlloc against swap on the same flash device, under the same
# RAM limit (a cgroup v2 memory.max), the ways a kernel allows in one boot
# (scripts/bench-ssdalloc.sh boots 6.12 and the debug kernel). Ways (SB_WAYS, commas):
#   stock    malloc over stock swap on the device (swapon, nothing tuned)
#   flashvm  malloc over FlashVM-tuned swap on the device (flashvm.ko, swapon
#            --discard=pages, hcctl swap tune): only on a kernel with the swap policy
#            hooks (the debug kernel)
#   mp, opp  SSDAlloc's ssd_malloc / ssd_oalloc with the device as its raw store
#            (SSDALLOC_DEVICE=/dev/nullb0; SB_STORE=file: a file on an ext2 of it), no
#            swap: needs userfaultfd (Debian 6.12)
# Workloads (SB_WORKLOADS): "micro", the thesis's microbenchmark (ssd-microbench: an
# array of 128 B objects SB_SCALE times the RAM limit, random reads and writes, half of
# them writes), and "kv", the key-value cache (Debian's memcached with its item memory
# on SSDAlloc, -o ssdalloc=MODE, driven by kv-load: SB_KV_SCALE times the RAM limit of
# SB_KV_VALUE-byte values, SB_KV_SET_PCT % sets, every get checked).
# The device: nullb0, memory-backed, 512 B sectors, no write cache, each request
# completed by a timer SB_LAT_US (100) microseconds late, so that the device and not
# the emulated CPU sets the pace.
# Every measurement is two runs of the same seed, each on a fresh device: OPS and
# 2 x OPS operations. scripts/bench-ssdalloc.sh subtracts the first from the second, so
# the table counts OPS operations in the steady state: the set-up (the array written
# once, the keys loaded), the start and the end (ssd-microbench reads every object
# once more at its end) are in both runs and cancel. One line a run:
#   # SDBENCH WORKLOAD WAY OPS rc=... key=value...
# (the program's own results line, then device, vmstat and cgroup counters).

L=${SB_LIMIT_MB:-8}			# RAM limit, MiB: memory.max of every way
SCALE=${SB_SCALE:-20}			# microbenchmark array / RAM limit
SIZE=${SB_SIZE:-128}			# object bytes
OPS=${SB_OPS:-50000}			# microbenchmark operations
WPCT=${SB_WRITE_PCT:-50}
KV_SCALE=${SB_KV_SCALE:-4}		# key-value working set / RAM limit
KV_VALUE=${SB_KV_VALUE:-1024}		# key-value value bytes
KV_OPS=${SB_KV_OPS:-20000}
KV_SETPCT=${SB_KV_SET_PCT:-10}
LAT=${SB_LAT_US:-100}
MARGIN=${SB_MARGIN_MB:-4}		# RAM limit - SSDALLOC_RAM: the program, heap, rings
# the key-value workload's limit and margin, if not the same (memcached's own memory,
# its hash table, buffers and threads, needs a larger margin than ssd-microbench)
KV_L=${SB_KV_LIMIT_MB:-$L}
KV_MARGIN=${SB_KV_MARGIN_MB:-$MARGIN}
META=${SB_META_B:-24}			# per virtual page of SSDAlloc: Object Table + page table
SEED=${SB_SEED:-1}
# Every process of a run on one CPU: a hand-over between threads (SSDAlloc's fault
# handler, memcached's worker and its client) is then a switch on that CPU, not a
# wake-up of another emulated CPU, which waits for a host core while other VMs run
PIN=${SB_CPU_MASK:-0x1}
STORE_KIND=${SB_STORE:-raw}		# raw: the device itself; file: a file on ext2 on it
WAYS=$(echo "${SB_WAYS:-stock,mp,opp}" | tr ',' ' ')
WORKLOADS=$(echo "${SB_WORKLOADS:-micro,kv}" | tr ',' ' ')
# SSDAlloc's library and programs (scripts/mkinitramfs.sh puts them there)
export LD_LIBRARY_PATH=/usr/local/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PATH=/ssc/ssdalloc/bin:$PATH

CG=/sys/fs/cgroup/sdb
DEV=/dev/nullb0
# SB_OBJECTS and SB_KV_KEYS, if given, instead of the scales (a smoke's tiny run)
OBJ=${SB_OBJECTS:-$((L * 1048576 * SCALE / SIZE))}
KV_KEYS=${SB_KV_KEYS:-$((KV_L * 1048576 * KV_SCALE / KV_VALUE))}
# swap or SSDAlloc's log of the larger workload, twice over (log cleaning needs room)
a=$((OBJ * SIZE)) b=$((KV_KEYS * (KV_VALUE + 256)))
DEV_MB=${SB_DEV_MB:-$(((a > b ? a : b) * 2 / 1048576 + 64))}

vmev() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
bst() { awk -v f="$1" '{ print $f }' /sys/block/nullb0/stat; }
cgev() { awk -v k="$1" '$1 == k { print $2 }' "$CG/$2"; }
# run_in_cg CMD...: CMD in the benchmark's cgroup, on the first CPU (PIN)
run_in_cg() { sh -c 'echo $$ > '$CG'/cgroup.procs && exec "$@"' sh taskset $PIN "$@"; }

# sb_nullb SIZE_MB: nullb0 with a flash-like latency (lib.sh's null_blk_add completes
# at once and has a write cache)
sb_nullb() {
	grep -q '^null_blk ' /proc/modules || modprobe null_blk nr_devices=0 || return 1
	grep -q configfs /proc/mounts || mount -t configfs configfs /sys/kernel/config || return 1
	d=/sys/kernel/config/nullb/nullb0
	mkdir "$d" && echo "$1" > "$d/size" && echo 1 > "$d/memory_backed" &&
		echo 512 > "$d/blocksize" && echo 1 > "$d/discard" && echo 0 > "$d/cache_size" &&
		echo 2 > "$d/irqmode" && echo $((LAT * 1000)) > "$d/completion_nsec" &&
		echo 1 > "$d/power"
}

# memmax WAY: memory.max in bytes. Every way gets L for its data, plus what the
# program keeps for itself about each of its NOBJ objects (PROG_B bytes: ssd-microbench's
# oracle of the last write, 8 B, and with OPP its 8 B pointer to the object), the same
# for every way that keeps it. SSDAlloc also keeps, per virtual page (an object in OPP,
# 4 KiB in MP), an Object Table entry and a page table entry: DRAM the thesis counts
# apart from the RAM the objects get (its 1.1 GB of Object Tables for a 32 GB array),
# META bytes a page on top. The table shows each way's limit and peak.
memmax() {
	b=$((LIM * 1048576 + NOBJ * PROG_B))
	[ "$1" = opp ] && [ "$WL" = micro ] && b=$((b + NOBJ * 8))
	case $1 in
	opp) echo $((b + NOBJ * META + 1048576)) ;;
	mp) echo $((b + NBYTES / 4096 * META + 1048576)) ;;
	*) echo "$b" ;;
	esac
}

# way_up WAY / way_down WAY: the device ready for the way (fresh: discarded, so the
# memory behind it is freed and SSDAlloc finds no store), and back
way_up() {
	blkdiscard $DEV || return 1
	case $1 in
	stock) mkswap $DEV > /dev/null && swapon $DEV ;;
	flashvm)
		modprobe flashvm && mkswap $DEV > /dev/null && swapon -dpages $DEV &&
			hcctl swap tune ;;
	mp|opp)
		# SB_STORE=file: SSDAlloc's store a file it creates on an ext2 of the device
		# (the raw device is the design; the file is there for a library that cannot
		# format a device from its environment)
		[ "$STORE_KIND" = file ] || return 0
		modprobe ext4 && mke2fs -q $DEV && mkdir -p /mnt/sdb && mount -t ext2 $DEV /mnt/sdb ;;
	*) echo "unknown way $1"; return 1 ;;
	esac
}
way_down() {
	case $1 in
	stock) swapoff $DEV ;;
	mp|opp) [ "$STORE_KIND" != file ] || umount /mnt/sdb ;;
	flashvm)
		swapoff $DEV && rmmod flashvm && echo true > /sys/kernel/mm/swap/vma_ra_enabled &&
			echo "$SCHED0" > /sys/block/nullb0/queue/scheduler ;;
	esac
}

# measure WORKLOAD WAY OPS CMD...: CMD in a fresh cgroup on a fresh device, one
# SDBENCH line of its results and the counters around it
measure() {
	wl=$1 way=$2 ops=$3
	shift 3
	check "$wl $way ops=$ops: device ready" way_up "$way"
	if ! { mkdir "$CG" && memmax "$way" > "$CG/memory.max"; }; then
		not_ok "$wl $way ops=$ops: a cgroup limited to $(memmax "$way") B"
		return
	fi
	r0=$(bst 1) rs0=$(bst 3) w0=$(bst 5) ws0=$(bst 7)
	pin0=$(vmev pswpin) pout0=$(vmev pswpout) maj0=$(vmev pgmajfault)
	now_cs
	t0=$NOW
	if [ "$wl" = kv ]; then
		out=$(kv_run "$way" "$ops" 2> /tmp/sb.err)
	else
		out=$("$@" 2> /tmp/sb.err)
	fi
	rc=$?
	now_cs
	# the program's results line (kv: kv-load's, then the server's counters)
	line=$(printf '%s\n' "$out" | grep -E 'ops_per_s=|exit_faults_read=' | tr '\n' ' ')
	diag "SDBENCH $wl $way $ops rc=$rc $line wall_cs=$((NOW - t0))" \
		"dev_read_ios=$(($(bst 1) - r0)) dev_read_sectors=$(($(bst 3) - rs0))" \
		"dev_write_ios=$(($(bst 5) - w0)) dev_write_sectors=$(($(bst 7) - ws0))" \
		"pswpin=$(($(vmev pswpin) - pin0)) pswpout=$(($(vmev pswpout) - pout0))" \
		"pgmajfault=$(($(vmev pgmajfault) - maj0)) memmax=$(cat $CG/memory.max)" \
		"cg_peak=$(cat $CG/memory.peak) oom_kill=$(cgev oom_kill memory.events)"
	if [ "$rc" = 0 ] && [ -n "$line" ]; then
		ok "$wl $way ops=$ops: ran, every value read back right"
	else
		not_ok "$wl $way ops=$ops: ran, every value read back right # exit $rc, oom_kill $(cgev oom_kill memory.events)"
		printf '%s\n' "$out" | tail -n 5 | sed 's/^/# /'
		tail -n 15 /tmp/sb.err | sed 's/^/# /'
	fi
	# the limit bit: the array did not fit in RAM (the set-up alone must swap already)
	case $way in
	stock|flashvm)
		[ $(($(vmev pswpout) - pout0)) -gt 0 ] && ok "$wl $way ops=$ops: swapped out" ||
			not_ok "$wl $way ops=$ops: swapped out # no pswpout: the limit did not bite" ;;
	mp|opp)
		[ $(($(bst 5) - w0)) -gt 0 ] && ok "$wl $way ops=$ops: SSDAlloc wrote to the device" ||
			not_ok "$wl $way ops=$ops: SSDAlloc wrote to the device # no write I/O" ;;
	esac
	# nothing of the run may stay in the cgroup: swapoff would have to bring its
	# pages back within the limit
	for p in $(cat "$CG/cgroup.procs"); do
		not_ok "$wl $way ops=$ops: process $p outlived the run"
		kill -KILL "$p"
	done
	n=0
	while ! rmdir "$CG" 2> /dev/null && [ $n -lt 100 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	check "$wl $way ops=$ops: device released" way_down "$way"
}

# the SSDAlloc environment of a way: the device, the RAM budget (the limit less a
# margin), a Page Buffer an eighth of it, formatted anew (the device was discarded)
ssd_env() {
	ram=$(((LIM - MAR) * 1048576))
	if [ "$STORE_KIND" = file ]; then
		echo "SSDALLOC_DEVICE=/mnt/sdb/store SSDALLOC_SIZE=$((DEV_MB * 3 / 4))M" \
			"SSDALLOC_RAM=$ram SSDALLOC_PAGE_BUFFER=$((ram / 8))"
	else
		echo "SSDALLOC_DEVICE=$DEV SSDALLOC_FORMAT=1 SSDALLOC_RAM=$ram" \
			"SSDALLOC_PAGE_BUFFER=$((ram / 8))"
	fi
}
mode_of() { case $1 in mp|opp) echo "$1" ;; *) echo malloc ;; esac; }

# kv_run WAY OPS: memcached on SSDAlloc (its item memory from malloc, ssd_malloc or
# ssd_oalloc: -o ssdalloc=MODE, malloc by default) in the cgroup, kv-load outside it
# (its own memory is not the server's); the server's counters line after kv-load's
KV_SERVER=${SB_KV_SERVER:-memcached-ssdalloc}
kv_run() {
	rm -f /tmp/sb.sock
	# memcached as root wants -u root, and a passwd entry for it (the guest has none)
	grep -q '^root:' /etc/passwd 2> /dev/null || echo 'root:x:0:0:root:/:/bin/sh' >> /etc/passwd
	# a hash table that never grows (growing walks every item) and no background walks
	# of the items (the LRU crawler and maintainer): under the limit each walk swaps
	# the whole cache in, which is memcached's tuning and not what is measured here
	hp=16
	while [ $((1 << hp)) -lt $((KV_KEYS * 2)) ]; do hp=$((hp + 1)); done
	o=no_lru_crawler,no_lru_maintainer,hashpower=$hp
	case $1 in mp|opp) o=$o,ssdalloc=$1 ;; esac
	# not run_in_cg: a function in the background is a subshell, and the signals below
	# must reach the server itself
	# shellcheck disable=SC2016,SC2046 # $$ is the inner shell's; the environment's words
	sh -c 'echo $$ > '$CG'/cgroup.procs && exec "$@"' sh taskset $PIN env $(ssd_env) SSDALLOC_STATS=1 \
		"$KV_SERVER" -u root -s /tmp/sb.sock -t 1 -m $((NBYTES * 2 / 1048576 + 16)) \
		-o "$o" > /tmp/sb.srv 2>&1 &
	spid=$!
	n=0
	until [ -S /tmp/sb.sock ]; do
		if ! kill -0 $spid 2> /dev/null || [ $n -ge 600 ]; then
			echo "the server did not listen on /tmp/sb.sock"
			tail -n 10 /tmp/sb.srv
			kill -KILL $spid 2> /dev/null
			return 1
		fi
		sleep 0.1
		n=$((n + 1))
	done
	taskset $PIN kv-load --unix /tmp/sb.sock --keys "$KV_KEYS" --value "$KV_VALUE" --ops "$2" \
		--set-pct "$KV_SETPCT" --seed "$SEED"
	lrc=$?
	# memcached ends its event loop on SIGTERM and exits (SSDAlloc prints its counters
	# then); a server that is still there a minute later is killed, and fails the run
	kill -TERM $spid
	n=0
	while kill -0 $spid 2> /dev/null && [ $n -lt 600 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	kill -KILL $spid 2> /dev/null && echo "the server did not exit on SIGTERM"
	wait $spid
	src=$?
	rm -f /tmp/sb.sock
	# kv-load's line has SSDAlloc's counters over its requests (memcached's "stats");
	# their totals at the server's exit ("name value" lines, SSDALLOC_STATS=1) follow as
	# exit_NAME=VALUE
	awk 'NF == 2 && $1 ~ /^[a-z_]+$/ && $2 ~ /^[0-9]+$/ { printf "%sexit_%s=%s", n++ ? " " : "server: ", $1, $2 }
		END { if (n) print "" }' /tmp/sb.srv
	[ $src = 0 ] || { echo "the server exited with $src"; tail -n 5 /tmp/sb.srv; }
	[ $lrc = 0 ] && [ $src = 0 ]
}

mkdir -p /sys/fs/cgroup
grep -q cgroup2 /proc/mounts || mount -t cgroup2 none /sys/fs/cgroup
echo +memory > /sys/fs/cgroup/cgroup.subtree_control
check "null_blk nullb0: ${DEV_MB} MiB, 512 B sectors, ${LAT} us a request" sb_nullb "$DEV_MB"
SCHED0=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/block/nullb0/queue/scheduler)
diag "SDBCONF limit_mb=$L scale=$SCALE size=$SIZE objects=$OBJ ops=$OPS write_pct=$WPCT" \
	"kv_keys=$KV_KEYS kv_value=$KV_VALUE kv_ops=$KV_OPS kv_set_pct=$KV_SETPCT lat_us=$LAT" \
	"kv_limit_mb=$KV_L kv_margin_mb=$KV_MARGIN" \
	"margin_mb=$MARGIN meta_b=$META dev_mb=$DEV_MB store=$STORE_KIND kernel=$(uname -r) ways=$(echo "$WAYS" | tr ' ' ,)"

# the ways interleaved, each run of OPS then each of 2 x OPS: the host's load (other
# VMs, builds) drifts over minutes, and ways measured side by side see the same drift
for wl in $WORKLOADS; do
	case $wl in
	micro) WL=micro NOBJ=$OBJ NBYTES=$((OBJ * SIZE)) PROG_B=8 n=$OPS LIM=$L MAR=$MARGIN ;;
	kv)
		WL=kv NOBJ=$KV_KEYS NBYTES=$((KV_KEYS * KV_VALUE)) PROG_B=0 n=$KV_OPS
		LIM=$KV_L MAR=$KV_MARGIN ;;
	*) not_ok "workload $wl exists"; continue ;;
	esac
	for ops in "$n" $((n * 2)); do
		for way in $WAYS; do
			if [ "$wl" = kv ]; then
				measure kv "$way" "$ops"
				continue
			fi
			# shellcheck disable=SC2046 # the environment's words
			measure micro "$way" "$ops" run_in_cg env $(ssd_env) ssd-microbench \
				--mode "$(mode_of "$way")" --objects "$OBJ" --size "$SIZE" \
				--ops "$ops" --write-pct "$WPCT" --seed "$SEED"
		done
	done
done

check "null_blk teardown" null_blk_teardown
