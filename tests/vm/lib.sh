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
# (SSC_SLOW_CS: another threshold, in centiseconds, to profile a suite)
slow() {
	now_cs
	[ $((NOW - $2)) -ge "${SSC_SLOW_CS:-300}" ] && diag "@@SLOW $(((NOW - $2) / 100)) s: $SUITE: $1"
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

# null_blk_add SIZE_MB [BLOCK_BYTES [DISCARD [CACHE_MB [LAT_US]]]]: one more such
# disk, /dev/nullbN with the next free N (4 KiB logical blocks, discard and a
# 16 MiB volatile write cache unless told otherwise; with LAT_US > 0 every
# request completes that long after it is issued, null_blk's timer mode)
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
	if [ "${5:-0}" -gt 0 ]; then
		echo 2 > "$d/irqmode" && echo $(($5 * 1000)) > "$d/completion_nsec" || return 1
	fi
	echo 1 > "$d/power"
}

# null_blk_newest: the name (nullbN) of the null_blk disk added last
null_blk_newest() { basename "$(ls -d /sys/kernel/config/nullb/nullb* | sort -V | tail -n1)"; }

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
# pick N WORD...: N of the words, drawn by SSC_SEED (the same seed draws the
# same, so a failure replays); all of them under SSC_FULL
pick() {
	_n=$1
	shift
	if is_full || [ "$_n" -ge $# ]; then
		echo "$@"
		return
	fi
	echo "$@" | awk -v n="$_n" -v s="${SSC_SEED:-1}" '{
		srand(s % 2147483647)
		for (i = 1; i <= NF; i++) w[i] = $i
		for (i = NF; i > 1; i--) { j = int(rand() * i) + 1; t = w[i]; w[i] = w[j]; w[j] = t }
		for (i = 1; i <= n; i++) printf "%s%s", w[i], i < n ? " " : "\n" }'
}

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

# same_data DEV1 DEV2 [MIB]: the same bytes, the whole devices or their first MIB
# MiB, read past any page cache (I/O below a device, e.g. dm-ssc writing back to its
# origin, does not update that device's page cache): devcmp (tests/tools), O_DIRECT
# in 4 MiB requests and memcmp; dd | cmp spent most of its time in cmp under TCG
same_data() {
	blockdev --flushbufs "$1" && blockdev --flushbufs "$2" || return 1
	devcmp "$1" "$2" ${3:+"$3"}
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

# crash_sweep MODE SEED THREADS FEATURES...: one ssc volume with FEATURES under
# dm-log-writes, a crash-io workload (THREADS 0: the single writer, else prun with
# THREADS writers), then replay-log's sweep of the crash points (see ssc-crash.sh).
# The caller sets U (the device under the log: cache region C sectors, then origin
# region O; TOT = C + O), L (log), R (replay copy of U), S (check copy, carved into
# the mappings cs and os), NBLK, NOPS, POINTS, PICK, WHICH, SEED, CK_LEN; ssc-crash
# and ssc-nbd (whose origin region is an NBD device) share it.
crash_sweep() {
	mode=$1 seed=$2 thr=$3
	shift 3
	feat="$# $*"
	nops=$NOPS
	# several writers at once: each gets half the ops, twice as many in all
	[ "$thr" -gt 0 ] && nops=$((NOPS / 2))
	export CK_SEED=$seed CK_FEAT="$feat" CK_THREADS=$thr CK_NOPS=$nops
	for d in "$U" $R $L; do blkdiscard "$d" 2>/dev/null || dd if=/dev/zero of="$d" bs=1M oflag=direct 2>/dev/null; done
	# filled on the replay device, then copied to U in large writes (block by block
	# over the network, the fill alone would take half a minute)
	dmsetup create ou0 --table "0 $O linear $R $C" && crash-io fill /dev/mapper/ou0 $NBLK &&
		dmsetup remove ou0 && dd if=$R of="$U" bs=1M iflag=direct oflag=direct 2>/dev/null
	check "$mode: origin filled, replay base copied" same_data "$U" $R
	check "$mode: log-writes over U, cache and origin carved" sh -c \
		"dmsetup create lw --table '0 $TOT log-writes $U $L' &&
		 dmsetup create cu --table '0 $C linear /dev/mapper/lw 0' &&
		 dmsetup create ou --table '0 $O linear /dev/mapper/lw $C' &&
		 dmsetup message lw 0 mark start"
	check "$mode: create ssc" dmsetup create v --table "0 $O ssc /dev/mapper/cu /dev/mapper/ou 8 $(($# + 1)) format $*"
	if [ "$thr" -gt 0 ]; then
		check "$mode: $thr writers at once, $nops ops each, a mark after every acknowledged write" \
			crash-io prun /dev/mapper/v $NBLK $nops "$seed" "$thr" \
			"dmsetup message lw 0 mark ack" "dmsetup message v 0 checkpoint"
	else
		check "$mode: workload of $NOPS ops, a mark after every acknowledged write" \
			crash-io run /dev/mapper/v $NBLK $NOPS "$seed" "dmsetup message lw 0 mark ack" \
			"dmsetup message v 0 checkpoint"
	fi
	diag "$mode: $(dmsetup status v)"
	gc=$(ssc_stat v gc_runs) ck=$(ssc_stat v checkpoints) wb=$(ssc_stat v writebacks)
	[ "${gc:-0}" -gt 0 ] && ok "$mode: GC ran during the workload ($gc runs)" ||
		not_ok "$mode: GC ran during the workload # gc_runs '$gc'"
	[ "${ck:-0}" -gt 1 ] && ok "$mode: checkpoints taken during the workload ($ck)" ||
		not_ok "$mode: checkpoints taken during the workload # '$ck'"
	if [ "$mode" != writethrough ]; then
		[ "${wb:-0}" -gt 0 ] && ok "$mode: write-back ran during the workload ($wb blocks)" ||
			not_ok "$mode: write-back ran during the workload # '$wb'"
	fi
	check "$mode: clean shutdown (the last crash point)" dmsetup remove v
	check "$mode: log devices down" dmsetup remove ou cu lw
	# SWEEP (ssc-crash): the modes that sweep in this run; unset, every one does
	case " ${SWEEP:-$mode} " in
	*" $mode "*) ;;
	*) diag "$mode: no sweep in this run (SWEEP: $SWEEP)"; return ;;
	esac
	replay-log list $L > /tmp/log.txt
	diag "$mode: $(head -n 1 /tmp/log.txt); $(grep -cE '^[0-9]+ (F.|.U)' /tmp/log.txt) with FLUSH or FUA"
	now_cs
	t_sweep=$NOW
	# shellcheck disable=SC2086 # PICK is two options
	if replay-log sweep $PICK -m 3 -p ack $L $R $S /ssc/crash-check.sh > /tmp/sweep.out 2>&1; then
		ok "$mode: crash points checked ($WHICH): $(tail -n 1 /tmp/sweep.out)"
	else
		# the same seed draws the same positions again; the log itself can differ a
		# little from run to run (GC and write-back timing), hence entry and mark too
		not_ok "$mode: crash points ($WHICH; SSC_SEED=$SEED draws the same) # $(tail -n 1 /tmp/sweep.out)"
		tail -n 30 /tmp/sweep.out | sed 's/^/# /'
	fi
	slow "$mode: the crash-point sweep" "$t_sweep"
	# "points P failed F entries E durable D seed S drawn N"
	# shellcheck disable=SC2046 # its words
	set -- $(tail -n 1 /tmp/sweep.out)
	pts=${2:-0} dur=${8:-0} drawn=${12:-0}
	if is_full; then
		want=$((dur / ${PICK#-e })) got=$pts	# every N-th, and the final state
	else
		want=$POINTS got=$drawn			# exactly POINTS drawn FLUSH/FUA points
		[ "$dur" -lt "$want" ] && want=$dur
	fi
	# the workload makes at least two durable points an op (data, then its commit)
	[ "$dur" -ge $((NOPS * 2)) ] && [ "$got" -ge "$want" ] &&
		ok "$mode: the sweep covered $pts of $dur crash points ($got counted, $want wanted)" ||
		not_ok "$mode: the sweep covered enough crash points # $got counted of $dur, want $want"
}

# --- an origin across the network: NBD from a server in its own network namespace ---
# iproute2's ip by path: the guest's busybox sh runs its own applet for "ip", which
# knows no network namespaces
IP=/usr/bin/ip
NBD_IP=10.99.0.2
# the export: a file in the guest's tmpfs, so it outlives a killed server
NBD_EXPORT=/tmp/nbd-export.img
# nbd_net_setup: the nbd and veth modules, a network namespace "nbdsrv" with the
# server's end of a veth pair (nbds, $NBD_IP), the client's end here (nbdc, 10.99.0.1)
nbd_net_setup() {
	modprobe nbd nbds_max=8 && modprobe veth &&
	$IP netns add nbdsrv &&
	$IP link add nbdc type veth peer name nbds &&
	$IP link set nbds netns nbdsrv &&
	$IP addr add 10.99.0.1/24 dev nbdc && $IP link set nbdc up &&
	$IP netns exec nbdsrv $IP addr add $NBD_IP/24 dev nbds &&
	$IP netns exec nbdsrv $IP link set nbds up
}
# nbd_link up|down: the client's end of the link; down, the network is partitioned
# (nothing is refused: packets are lost, and only timeouts end what waits for them)
nbd_link() { $IP link set nbdc "$1"; }
# nbd_server_start SIZE_MB DELAY_MS: nbdkit (file plugin) serving NBD_EXPORT (created
# SIZE_MB large the first time) in the namespace, every read and write answered
# DELAY_MS late (its delay filter: the latency; netem on the veth pair was the first
# choice, but the guest kernel oopsed in net_rx_action under it once); in the
# foreground of a background job of this shell (NBD_PID), so not from a subshell
# such as check's; returns once its port (10809, 2A39 in hex) listens
nbd_server_start() {
	[ -e $NBD_EXPORT ] || truncate -s "$1M" $NBD_EXPORT || return 1
	$IP netns exec nbdsrv nbdkit -f -i $NBD_IP --filter=delay file $NBD_EXPORT \
		delay-read="$2ms" delay-write="$2ms" > /tmp/nbdkit.log 2>&1 &
	NBD_PID=$!
	n=0
	until $IP netns exec nbdsrv cat /proc/net/tcp | grep -q ':2A39 00000000:0000 0A'; do
		kill -0 "$NBD_PID" 2>/dev/null && [ $n -lt 100 ] || { cat /tmp/nbdkit.log; return 1; }
		sleep 0.1
		n=$((n + 1))
	done
}
# nbd_server_kill: the server dies (SIGKILL: no goodbye to its clients)
nbd_server_kill() {
	[ -n "${NBD_PID:-}" ] || return 0
	kill -9 "$NBD_PID" 2>/dev/null
	wait "$NBD_PID" 2>/dev/null
	NBD_PID=
}
# nbd_connect DEV [TIMEOUT_S]: nbd-client (netlink) to the server, 4 KiB blocks; a
# request unanswered for TIMEOUT_S (default 10) fails and shuts the connection down
nbd_connect() {
	nbd-client $NBD_IP "$1" -b 4096 -t "${2:-10}" -N "" > /tmp/nbd-client.log 2>&1 ||
		{ cat /tmp/nbd-client.log; return 1; }
}
# nbd_net_teardown: the server, every NBD connection, the namespace and the export
nbd_net_teardown() {
	for d in /sys/block/nbd*; do
		[ "$(cat "$d/size" 2>/dev/null)" != 0 ] && nbd-client -d "/dev/${d##*/}" > /dev/null 2>&1
	done
	nbd_server_kill
	$IP netns del nbdsrv 2>/dev/null
	$IP link del nbdc 2>/dev/null
	rm -f $NBD_EXPORT
	rmmod nbd 2>/dev/null
	return 0
}

# crash_until_killed DEV ACKDEV: the first boot of scripts/boot-test.sh. crash-io
# writes to DEV (the suite's NBLK, NOPS, SEED), each write durable before it is
# acknowledged; after each acknowledgment its number goes to ACKDEV (O_DIRECT:
# QEMU has written it to the host file once it completes), and at the BOOT_K-th
# the guest prints the marker the host kills it on (vm.sh --kill-after). Returns
# only if crash-io ran out of ops first, which is a failure.
crash_until_killed() {
	cat > /tmp/ack <<EOF
#!/bin/sh
n=\${1#A}
printf '%-4095s\n' "\$n" | dd of=$2 bs=4096 count=1 oflag=direct 2>/dev/null
c=\$((\$(cat /tmp/acks 2>/dev/null || echo 0) + 1))
echo \$c > /tmp/acks
[ \$c -eq ${BOOT_K:-200} ] && echo "@@KILL_ME after \$n ops"
exit 0
EOF
	chmod +x /tmp/ack
	diag "crash-io run: the host kills the VM ${BOOT_K:-200} acknowledged writes in"
	crash-io run "$1" "$NBLK" "$NOPS" "$SEED" "/tmp/ack A" "hcctl checkpoint ${1##*/}"
	not_ok "boot 1: killed before crash-io ran out of ops # crash-io ended: $?"
}

# ack_read ACKDEV: the number of the last write crash_until_killed saw acknowledged
ack_read() { dd if="$1" bs=4096 count=1 2>/dev/null | tr -d ' \n\000'; }

# rc CMD...: CMD's exit status, its output dropped
rc() { "$@" > /dev/null 2>&1; echo $?; }

# HashCache's suites (hashcache, hashcache-hostile):
# keys PREFIX N [VALUE-PREFIX]: lines "PREFIX0 VALUE-PREFIX0" .. (keys only without VALUE-PREFIX)
keys() { awk -v p="$1" -v n="$2" -v v="${3-}" 'BEGIN { for (i = 0; i < n; i++) print p i (v == "" ? "" : " " v i) }'; }
# mput_keys DEVICE PREFIX N VALUE-PREFIX: N puts in one hcctl
mput_keys() { keys "$2" "$3" "$4" | hcctl index mput "$1"; }
# tally PREFIX VALUE-PREFIX: of mget's answers, "found wrong missing"
tally() {
	awk -F'\t' -v p="$1" -v v="$2" '
		NF < 2 { m++; next }
		{ if ($2 == v substr($1, length(p) + 1)) f++; else { w++; print "# wrong: " $0 > "/dev/stderr" } }
		END { print f + 0, w + 0, m + 0 }'
}
