# SPDX-License-Identifier: GPL-2.0
# make bench-traces (a benchmark: no figure has a threshold, but a replay that did not
# replay its whole trace is a failed check). scripts/bench-traces.sh converts each
# trace on the host and plans its devices: /ssc/traces/bench/NAME.iolog, and NAME.bt
# (the sizes in sectors, each target's geometry, the bytes the trace reads and
# writes); BT_TRACES names them, in order. Per trace:
#   flash  = null_blk (memory, 512 B blocks, no discard) carved into fmeta (dm-cache
#            metadata only) and fdata (the cache device of every target)
#   origin = null_blk under dm-delay (BT_DELAY ms each way, default 1), 8 KiB longer
#            than the volume every target presents (bcache's backing superblock)
# Per trace and target: a fresh cache; RAM (MemFree + per-cpu free pages, after
# drop_caches) before create; replay 1 (cold cache), replay 2 (warm), both with fio
# at iodepth 16 as fast as possible; RAM again. Each replay must give the target's
# device exactly the bytes the trace reads and writes (the device's block-layer
# counters: fio's own totals miss the requests in flight at its end) with fio
# exiting 0; if not, the pair is a failed replay and is measured no further.
# Replay 2 gives the figures: throughput (the device's bytes / fio's run time),
# read hit ratio (the target's own counters), flash bytes written, origin bytes
# read and written (block-layer counters of the null_blk devices, the same for
# every target).
# Targets run with their defaults except the geometry the cache size needs (the
# host picks it: ssc's segment_size, dm-cache's block size, bcache's bucket) and
# bcache's congestion thresholds (0: under TCG every I/O looks congested and bcache
# would bypass its cache).
# Results are "# BTRACE <trace> <target> <key> <value>" lines; the host's
# scripts/bench-traces.sh makes the table and the plot. A target that crashes the
# kernel ends the boot: the host boots again with BT_SKIP naming the pairs done
# ("ended") and the one that crashed (the last one "begun").

DELAY=${BT_DELAY:-1}
TARGETS=$(echo "${BT_TARGETS:-ssc_wt,ssc_wb,dmcache,writecache,bcache}" | tr , " ")
TRACES=$(echo "${BT_TRACES:-}" | tr , " ")
P=/ssc/traces/bench
# trace:target pairs not to run (done by an earlier boot, or they crashed it)
SKIP=",${BT_SKIP:-},"

check "modules" sh -c "modprobe dm-ssc && modprobe dm-delay && modprobe dm-cache &&
	modprobe dm-cache-smq && modprobe dm-writecache && modprobe bcache"
[ -n "$TRACES" ] || not_ok "traces planned # BT_TRACES is empty: scripts/bench-traces.sh plans them"

res() { echo "# BTRACE $TR $T $1 $2"; }
# st SYSDIR FIELD: a field of a block device's stat (3: sectors read, 7: written)
st() { awk -v f="$2" '{ print $f }' "$1/stat"; }
# sysdir DEV: the sysfs directory of block device DEV
sysdir() {
	set -- $(stat -L -c '%t %T' "$1")
	echo "/sys/dev/block/$((0x$1)):$((0x$2))"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.4f", a / b; else print "-" }'; }
# word TEXT: TEXT as one word of a BTRACE line
word() { printf '%s' "$*" | tr -s ' \n\t' '___' | cut -c1-200; }
# wipe DEV...: zero the first MiB (any target's superblock) of each
wipe() { for w in "$@"; do dd if=/dev/zero of="$w" bs=1M count=1 oflag=direct 2>/dev/null; done; }
# replay N: fio replays the trace TR onto /dev/mapper/u, a dm-linear over DEV (replay
# N of 2). Sets RB and WB (the bytes u read and wrote) and RT (fio's run time, ms);
# fails, with WHY, unless fio exited 0 and u saw exactly the trace's bytes. (u counts
# every target alike: bcache0's own counters leave out what bcache bypasses.)
replay() {
	r0=$(st "$SYS" 3) w0=$(st "$SYS" 7)
	fio --name=replay --read_iolog="$P/$TR.iolog" --replay_redirect=/dev/mapper/u \
		--ioengine=libaio --iodepth=16 --direct=1 --output-format=terse --terse-version=3 \
		> /tmp/fio.out 2> /tmp/fio.err
	rc=$?
	RB=$(( ($(st "$SYS" 3) - r0) * 512 )) WB=$(( ($(st "$SYS" 7) - w0) * 512 ))
	RT=$(awk -F';' 'NF > 50 { print ($9 > $50 ? $9 : $50); exit }' /tmp/fio.out)
	[ "$rc" -eq 0 ] && [ "$RB" -eq "$WANT_R" ] && [ "$WB" -eq "$WANT_W" ] && [ -n "$RT" ] && return 0
	WHY="replay $1 of 2: fio exit $rc, read $RB of $WANT_R B, written $WB of $WANT_W B"
	return 1
}

# Each target T: tcall ACTION runs t_<family>_ACTION, the family being T but for the
# ssc variants. t_X sets DEV; t_X_create, t_X_remove; t_X_reads prints "read_hits
# reads" so far (the target's own counters and units); t_X_cached prints the cached
# data in 4 KiB blocks; t_X_slots prints "N WHAT": its data slots and what one is.
fam() { case $T in ssc_*) echo ssc ;; *) echo "$T" ;; esac; }
tcall() { "t_$(fam)_$1"; }
known() { case $T in ssc_*) ssc_variant > /dev/null ;; dmcache|writecache|bcache) ;; *) return 1 ;; esac; }

# ssc variants: the mode and any more feature arguments of each. Segments of 256 KiB
# (FlashTier's erase block) or 128 KiB for a small cache (SSC_SEG: the host keeps 32
# segments next to the log); the default 2 MiB would leave a 32 MiB cache only 13.
ssc_variant() {
	case $T in
	ssc_wt) echo writethrough ;;
	ssc_wb) echo writeback ;;
	ssc_wt_reuse) echo writethrough admit reuse ;;
	ssc_wb_reuse) echo writeback admit reuse ;;
	*) return 1 ;;
	esac
}
t_ssc() { DEV=/dev/mapper/t; }
t_ssc_create() {
	v=$(ssc_variant) || return 1
	set -- $v
	dmsetup create t --table "0 $OSECT ssc /dev/mapper/fdata /dev/mapper/origin 8 $(($# + 3)) format $* segment_size $SSC_SEG"
}
t_ssc_reads() { echo "$(ssc_stat t read_hits) $(( $(ssc_stat t read_hits) + $(ssc_stat t read_misses) ))"; }
t_ssc_cached() { ssc_stat t cached | cut -d/ -f1; }
t_ssc_slots() { echo "$(ssc_stat t cached | cut -d/ -f2) 4_KiB_blocks,_$(ssc_stat t free_segs | cut -d/ -f2)_segments_of_$((SSC_SEG / 2))_KiB"; }
# written back before removal (not measured: it follows replay 2)
t_ssc_remove() {
	case $(ssc_variant) in writeback*) dmsetup message t 0 clean 0 $((OSECT / 8)) > /dev/null ;; esac
	dmsetup remove t
}

# dm-cache: smq, writeback, default migration threshold; blocks of DMC_BLOCK sectors
t_dmcache() { DEV=/dev/mapper/t; }
t_dmcache_create() {
	dmsetup create t --table "0 $OSECT cache /dev/mapper/fmeta /dev/mapper/fdata /dev/mapper/origin $DMC_BLOCK 1 writeback smq 0"
}
t_dmcache_reads() { dmsetup status t | awk '{ print $8, $8 + $9 }'; }
t_dmcache_cached() { dmsetup status t | awk -v b="$DMC_BLOCK" '{ split($7, a, "/"); print a[1] * b / 8 }'; }
t_dmcache_slots() { dmsetup status t | awk -v b="$DMC_BLOCK" '{ split($7, a, "/"); print a[2], b / 2 "_KiB_blocks" }'; }
t_dmcache_remove() { dmsetup remove t; }

t_writecache() { DEV=/dev/mapper/t; }
t_writecache_create() { dmsetup create t --table "0 $OSECT writecache s /dev/mapper/origin /dev/mapper/fdata 4096 0"; }
t_writecache_reads() { dmsetup status t | awk '{ print $9, $8 }'; }
t_writecache_cached() { dmsetup status t | awk '{ print $5 - $6 }'; }
t_writecache_slots() { dmsetup status t | awk '{ print $5, "4_KiB_blocks" }'; }
t_writecache_remove() { dmsetup remove t; }

# bcache: make-bcache formats fdata as the cache set (buckets of BC_BUCKET sectors: it
# wants 1,024 of them) and the origin as its backing device (data 8 KiB in); both
# registered, they attach to bcache0.
t_bcache() { DEV=/dev/bcache0; }
bc_set() { ls -d /sys/fs/bcache/*-*-*-*-* 2>/dev/null | head -n1; }
t_bcache_create() {
	make-bcache --block 4k --bucket $((BC_BUCKET / 2))k --writeback -C /dev/mapper/fdata \
		-o 16 -B /dev/mapper/origin > /dev/null &&
	echo /dev/mapper/fdata > /sys/fs/bcache/register &&
	echo /dev/mapper/origin > /sys/fs/bcache/register || return 1
	for _ in $(seq 50); do [ -b /dev/bcache0 ] && [ -n "$(bc_set)" ] && break; sleep 0.1; done
	set=$(bc_set)
	[ -n "$set" ] && [ "$(cat /sys/block/bcache0/bcache/state)" != "no cache" ] || return 1
	echo 0 > "$set/congested_read_threshold_us"
	echo 0 > "$set/congested_write_threshold_us"
}
# bcache's counters: hits, then all reads
bc_reads() {
	s=/sys/block/bcache0/bcache/stats_total
	h=$(( $(cat $s/cache_hits) + $(cat $s/cache_bypass_hits) ))
	echo "$h $((h + $(cat $s/cache_misses) + $(cat $s/cache_bypass_misses)))"
}
t_bcache_reads() {
	# bcache folds its counters into stats_total every 300/22 s: wait for the fold
	# after the replay (the counts change), 14 s at most (they were folded already)
	a=$(bc_reads)
	for _ in $(seq 70); do
		sleep 0.2
		[ "$(bc_reads)" = "$a" ] || break
	done
	sleep 0.2
	bc_reads
}
t_bcache_cached() {
	u=$(sed -n 's/^Unused: *\([0-9]*\)%.*/\1/p' "$(bc_set)/cache0/priority_stats")
	echo $(( (100 - u) * CSECT / 8 / 100 ))
}
t_bcache_slots() { echo "$(cat "$(bc_set)/cache0/nbuckets") $((BC_BUCKET / 2))_KiB_buckets_(4_KiB_blocks)"; }
t_bcache_remove() {
	set=$(bc_set)
	echo 1 > /sys/block/bcache0/bcache/stop
	for _ in $(seq 100); do [ -e /sys/block/bcache0 ] || break; sleep 0.1; done
	echo 1 > "$set/stop"
	for _ in $(seq 100); do [ -e "$set" ] || break; sleep 0.1; done
	[ ! -e /sys/block/bcache0 ] && [ ! -e "$set" ]
}

# failed STAGE WHY: the pair is a failed STAGE (a row that says so, no figures)
failed() {
	res failed "$1:$(word "$2")"
	[ -b "$DEV" ] && check "$TR $T: removed" remove
	pair_done
}
# pair_done: the pair has ended (whatever came of it), in so many seconds
pair_done() {
	now_cs
	diag "$TR $T: $(((NOW - tp) / 100)) s"
	res ended 1
}
# create, remove: the target and the dm-linear u over it
create() {
	tcall create && [ -b "$DEV" ] || return 1
	[ "$(sectors "$DEV")" = "$OSECT" ] || { echo "$DEV has $(sectors "$DEV") sectors, $OSECT planned"; return 1; }
	dmsetup create u --table "0 $OSECT linear $DEV 0"
}
remove() {
	if [ -b /dev/mapper/u ]; then dmsetup remove u || return 1; fi
	tcall remove
}

# pair: trace TR against target T, on fresh devices
pair() {
	now_cs
	tp=$NOW
	# the host's mark of the pair a crash of the kernel is in: begun, not ended
	res begun 1
	if ! known; then
		not_ok "$TR $T: a target of the bench # unknown target"
		res failed "create:unknown_target"
		pair_done
		return
	fi
	"t_$(fam)"
	wipe /dev/mapper/fmeta /dev/mapper/fdata /dev/mapper/origin
	m0=$(mem_kib /dev/nullb0)
	# the volume must be the size planned: no more (a replay past it would still
	# work) and no less
	if out=$(create 2>&1); then
		ok "$TR $T: create"
	else
		not_ok "$TR $T: create"
		printf '%s\n' "$out" | tail -n 10 | sed 's/^/# /'
		failed create "$(printf '%s\n' "$out" | tail -n 1)"
		return
	fi
	SYS=$(sysdir /dev/mapper/u)
	for n in 1 2; do
		if [ "$n" = 2 ]; then
			set -- $(tcall reads)
			h1=$1 n1=$2
			res cold_read_hit "$(ratio "$h1" "$n1")"
			f0=$(st /sys/block/nullb0 7) or0=$(st /sys/block/nullb1 3) ow0=$(st /sys/block/nullb1 7)
		fi
		if ! replay $n; then
			not_ok "$TR $T: replay $n replayed the whole trace"
			diag "$WHY"
			tail -n 5 /tmp/fio.err | sed 's/^/# fio: /'
			failed replay "$WHY"
			return
		fi
		ok "$TR $T: replay $n replayed the whole trace"
		[ "$n" = 1 ] && res cold_kib_per_s "$(ratio $(((RB + WB) / 1024 * 1000)) "$RT")"
	done
	f1=$(st /sys/block/nullb0 7) or1=$(st /sys/block/nullb1 3) ow1=$(st /sys/block/nullb1 7)
	set -- $(tcall reads)
	res read_hit "$(ratio $(($1 - h1)) $(($2 - n1)))"
	res byte_hit "$(awk -v o=$(((or1 - or0) * 512)) -v u="$RB" 'BEGIN { if (u > 0) printf "%.4f", 1 - o / u; else print "-" }')"
	res kib_per_s "$(ratio $(((RB + WB) / 1024 * 1000)) "$RT")"
	res user_kib "$((RB / 1024))/$((WB / 1024))"
	res flash_per_user "$(ratio $(((f1 - f0) * 512)) $((RB + WB)))"
	res flash_per_user_write "$(ratio $(((f1 - f0) * 512)) "$WB")"
	res origin_read_per_user_read "$(ratio $(((or1 - or0) * 512)) "$RB")"
	res origin_write_per_user_write "$(ratio $(((ow1 - ow0) * 512)) "$WB")"
	m1=$(mem_kib /dev/nullb0)
	c=$(tcall cached)
	res cached_4k "$c"
	res ram_b_per_4k "$(ratio $(((m0 - m1) * 1024)) "$c")"
	set -- $(tcall slots)
	res slots "$1"
	res slot "$2"
	if [ "$(fam)" = ssc ]; then
		res ssc_ram_b_per_4k "$(ratio "$(ssc_stat t ram_bytes)" "$c")"
		# admission's counters (both replays), where the module has them
		for k in admitted rejected; do
			v=$(ssc_stat t $k)
			[ -n "$v" ] && res "$k" "$v"
		done
		diag "$TR $T: $(dmsetup status t)"
	fi
	check "$TR $T: removed" remove
	pair_done
}

# trace_teardown: the trace's devices gone
trace_teardown() { dmsetup remove fmeta fdata origin && null_blk_teardown; }

warm=
for TR in $TRACES; do
	todo=
	for T in $TARGETS; do
		case $SKIP in *",$TR:$T,"*) ;; *) todo="$todo $T" ;; esac
	done
	[ -n "$todo" ] || continue
	if [ ! -s "$P/$TR.bt" ] || [ ! -s "$P/$TR.iolog" ]; then
		not_ok "$TR: planned # no $P/$TR.bt or .iolog"
		continue
	fi
	# OSECT CSECT MSECT FLASH_MB ONULL_MB SSC_SEG DMC_BLOCK BC_BUCKET WANT_R WANT_W
	. "$P/$TR.bt"
	check "$TR: flash null_blk ($FLASH_MB MiB, 512 B, no discard)" null_blk_add "$FLASH_MB" 512 0 16
	check "$TR: origin null_blk ($ONULL_MB MiB, 512 B, no write cache)" null_blk_add "$ONULL_MB" 512 1 0
	check "$TR: flash carved into fmeta and fdata; origin behind dm-delay ${DELAY} ms" sh -c "
		dmsetup create fmeta --table '0 $MSECT linear /dev/nullb0 0' &&
		dmsetup create fdata --table '0 $CSECT linear /dev/nullb0 $MSECT' &&
		dmsetup create origin --table '0 $((OSECT + 16)) delay /dev/nullb1 0 $DELAY /dev/nullb1 0 $DELAY'"
	# back every page of both null_blk devices before any memory snapshot
	dd if=/dev/zero of=/dev/nullb1 bs=1M oflag=direct 2>/dev/null
	dd if=/dev/zero of=/dev/nullb0 bs=1M oflag=direct 2>/dev/null
	# the first seconds of fio in a boot run slower while TCG translates its code
	if [ -z "$warm" ]; then
		fio --name=warmup --filename=/dev/mapper/fdata --rw=randread --ioengine=libaio --direct=1 \
			--iodepth=16 --runtime=3 --time_based > /dev/null
		warm=1
	fi
	for T in $todo; do
		pair
	done
	check "$TR: devices removed" trace_teardown
done
