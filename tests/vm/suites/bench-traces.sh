# SPDX-License-Identifier: GPL-2.0
# make bench-traces (not a test: nothing here has a threshold). One VM boot
# replays each synthetic trace (/ssc/traces: zipf-read, write-heavy, scan)
# against every cache on the same devices:
#   flash  = null_blk (memory, 512 B blocks, no discard) carved into fmeta
#            (8 MiB, dm-cache metadata only) and fdata (BT_CACHE_MB, default
#            32 MiB: the cache device of every target)
#   origin = null_blk under dm-delay (BT_DELAY ms each way, default 1)
# The cache is smaller than the write-heavy and scan traces' footprints (52
# and 64 MiB) and larger than zipf-read's (25 MiB).
# Per trace and target: a fresh cache; RAM (MemFree + per-cpu free pages,
# after drop_caches) before create; replay 1 (cold cache), replay 2 (warm),
# both with fio at iodepth 16 as fast as possible; RAM again. Replay 2 gives
# the figures: throughput (fio's bytes / runtime), read hit ratio (the
# target's own counters), flash bytes written, origin bytes read and written
# (block-layer counters of the null_blk devices, the same for every target).
# Targets run with their defaults except where the small cache needs a
# setting (ssc: 256 KiB segments; bcache: 32 KiB buckets, it wants 1,024) and
# bcache's congestion thresholds (0: under TCG every I/O looks congested and
# bcache would bypass its cache).
# Results are "# BTRACE <trace> <target> <key> <value>" lines; the host's
# scripts/bench-traces.sh makes the table and the plot. A target that crashes
# the kernel ends the boot: the host boots again with BT_SKIP naming the pairs
# done and the one that crashed.

CACHE_MB=${BT_CACHE_MB:-32}
DELAY=${BT_DELAY:-1}
TARGETS=$(echo "${BT_TARGETS:-ssc_wt,ssc_wb,dmcache,writecache,bcache}" | tr , " ")
TRACES=$(echo "${BT_TRACES:-zipf-read,write-heavy,scan}" | tr , " ")
# trace:target pairs not to run (measured by an earlier boot, or they crashed it)
SKIP=",${BT_SKIP:-},"

check "modules" sh -c "modprobe dm-ssc && modprobe dm-delay && modprobe dm-cache &&
	modprobe dm-cache-smq && modprobe dm-writecache && modprobe bcache"
check "flash null_blk ($((CACHE_MB + 8)) MiB, 512 B, no discard)" null_blk_add $((CACHE_MB + 8)) 512 0 16
check "origin null_blk (256 MiB, 512 B, no write cache)" null_blk_add 256 512 1 0
M=$((8 * 2048)) D=$((CACHE_MB * 2048))
OLEN=$(sectors /dev/nullb1)
check "flash carved into fmeta and fdata; origin behind dm-delay ${DELAY} ms" sh -c "
	dmsetup create fmeta --table '0 $M linear /dev/nullb0 0' &&
	dmsetup create fdata --table '0 $D linear /dev/nullb0 $M' &&
	dmsetup create origin --table '0 $OLEN delay /dev/nullb1 0 $DELAY /dev/nullb1 0 $DELAY'"
# back every page of both null_blk devices before any memory snapshot
dd if=/dev/zero of=/dev/nullb1 bs=1M oflag=direct 2>/dev/null
dd if=/dev/zero of=/dev/nullb0 bs=1M oflag=direct 2>/dev/null
# the first seconds of fio in a boot run slower while TCG translates its code
fio --name=warmup --filename=/dev/mapper/fdata --rw=randread --ioengine=libaio --direct=1 \
	--iodepth=16 --runtime=3 --time_based > /dev/null

res() { echo "# BTRACE $TR $T $1 $2"; }
# sectors read / written of a null_blk device (block-layer counters)
sect() { awk -v f="$2" '{ print $f }' "/sys/block/$1/stat"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.4f", a / b; else print "-" }'; }
# wipe DEV...: zero the first MiB (any target's superblock) of each
wipe() { for w in "$@"; do dd if=/dev/zero of="$w" bs=1M count=1 oflag=direct 2>/dev/null; done; }
# replay DEV: fio replays the trace TR onto DEV; prints "read_KiB write_KiB runtime_ms"
replay() {
	fio --name=replay --read_iolog="/ssc/traces/$TR.iolog" --replay_redirect="$1" \
		--ioengine=libaio --iodepth=16 --direct=1 --output-format=terse --terse-version=3 2>/dev/null |
		awk -F';' '{ rt = $9 > $50 ? $9 : $50; print $6, $47, rt }'
}

# Each target: t_X sets DEV; t_X_create, t_X_remove; t_X_reads prints
# "read_hits reads" so far (the target's own counters and units); t_X_cached
# prints the cached data in 4 KiB blocks.
t_ssc_wt() { DEV=/dev/mapper/t; }
# segments of 256 KiB, the erase block of FlashTier's simulated SSD: the
# default 2 MiB would leave a 32 MiB cache only 13, 4 of them GC's reserve
t_ssc_wt_create() {
	dmsetup create t --table "0 $OLEN ssc /dev/mapper/fdata /dev/mapper/origin 8 4 format writethrough segment_size 512"
}
t_ssc_wt_reads() { echo "$(ssc_stat t read_hits) $(( $(ssc_stat t read_hits) + $(ssc_stat t read_misses) ))"; }
t_ssc_wt_cached() { ssc_stat t cached | cut -d/ -f1; }
t_ssc_wt_remove() { dmsetup remove t; }
t_ssc_wb() { DEV=/dev/mapper/t; }
t_ssc_wb_create() {
	dmsetup create t --table "0 $OLEN ssc /dev/mapper/fdata /dev/mapper/origin 8 4 format writeback segment_size 512"
}
t_ssc_wb_reads() { t_ssc_wt_reads; }
t_ssc_wb_cached() { t_ssc_wt_cached; }
# written back before removal (not measured: it follows replay 2)
t_ssc_wb_remove() { dmsetup message t 0 clean 0 $((OLEN / 8)) > /dev/null; dmsetup remove t; }

# dm-cache's smallest block is 32 KiB; smq, writeback, default migration threshold
t_dmcache() { DEV=/dev/mapper/t; }
t_dmcache_create() {
	dmsetup create t --table "0 $OLEN cache /dev/mapper/fmeta /dev/mapper/fdata /dev/mapper/origin 64 1 writeback smq 0"
}
t_dmcache_reads() { dmsetup status t | awk '{ print $8, $8 + $9 }'; }
t_dmcache_cached() { dmsetup status t | awk '{ split($7, a, "/"); print a[1] * 8 }'; }
t_dmcache_remove() { dmsetup remove t; }

t_writecache() { DEV=/dev/mapper/t; }
t_writecache_create() { dmsetup create t --table "0 $OLEN writecache s /dev/mapper/origin /dev/mapper/fdata 4096 0"; }
t_writecache_reads() { dmsetup status t | awk '{ print $9, $8 }'; }
t_writecache_cached() { dmsetup status t | awk '{ print $5 - $6 }'; }
t_writecache_remove() { dmsetup remove t; }

# bcache: make-bcache formats fdata as the cache set and the origin as its
# backing device (data 8 KiB in); both registered, they attach to bcache0.
# bcache wants at least 1024 buckets: CACHE_MB KiB buckets give exactly that.
t_bcache() { DEV=/dev/bcache0; }
bc_set() { ls -d /sys/fs/bcache/*-*-*-*-* 2>/dev/null | head -n1; }
t_bcache_create() {
	make-bcache --block 4k --bucket ${CACHE_MB}k --writeback -C /dev/mapper/fdata -B /dev/mapper/origin > /dev/null &&
	echo /dev/mapper/fdata > /sys/fs/bcache/register &&
	echo /dev/mapper/origin > /sys/fs/bcache/register || return 1
	for _ in $(seq 50); do [ -b /dev/bcache0 ] && [ -n "$(bc_set)" ] && break; sleep 0.1; done
	set=$(bc_set)
	[ -n "$set" ] && [ "$(cat /sys/block/bcache0/bcache/state)" != "no cache" ] || return 1
	echo 0 > "$set/congested_read_threshold_us"
	echo 0 > "$set/congested_write_threshold_us"
}
t_bcache_reads() {
	# bcache folds its counters into stats_total every 300/22 s
	sleep 14
	s=/sys/block/bcache0/bcache/stats_total
	h=$(( $(cat $s/cache_hits) + $(cat $s/cache_bypass_hits) ))
	echo "$h $((h + $(cat $s/cache_misses) + $(cat $s/cache_bypass_misses)))"
}
t_bcache_cached() {
	u=$(sed -n 's/^Unused: *\([0-9]*\)%.*/\1/p' "$(bc_set)/cache0/priority_stats")
	echo $(( (100 - u) * D / 8 / 100 ))
}
t_bcache_remove() {
	set=$(bc_set)
	echo 1 > /sys/block/bcache0/bcache/stop
	for _ in $(seq 100); do [ -e /sys/block/bcache0 ] || break; sleep 0.1; done
	echo 1 > "$set/stop"
	for _ in $(seq 100); do [ -e "$set" ] || break; sleep 0.1; done
	[ ! -e /sys/block/bcache0 ] && [ ! -e "$set" ]
}

for TR in $TRACES; do
	for T in $TARGETS; do
		case $SKIP in *",$TR:$T,"*) continue ;; esac
		"t_$T"
		wipe /dev/mapper/fmeta /dev/mapper/fdata /dev/mapper/origin
		m0=$(mem_kib /dev/nullb0)
		check "$TR $T: create" "t_${T}_create"
		[ -b "$DEV" ] || continue
		set -- $(replay "$DEV")
		res cold_kib_per_s "$(ratio $((($1 + $2) * 1000)) "$3")"
		set -- $("t_${T}_reads")
		h1=$1 n1=$2
		res cold_read_hit "$(ratio "$h1" "$n1")"
		f0=$(sect nullb0 7) or0=$(sect nullb1 3) ow0=$(sect nullb1 7)
		set -- $(replay "$DEV")
		rk=$1 wk=$2 rt=$3
		f1=$(sect nullb0 7) or1=$(sect nullb1 3) ow1=$(sect nullb1 7)
		set -- $("t_${T}_reads")
		res read_hit "$(ratio $(($1 - h1)) $(($2 - n1)))"
		res byte_hit "$(awk -v o=$(((or1 - or0) / 2)) -v u="$rk" 'BEGIN { if (u > 0) printf "%.4f", 1 - o / u; else print "-" }')"
		res kib_per_s "$(ratio $(((rk + wk) * 1000)) "$rt")"
		res user_kib "$rk/$wk"
		res flash_per_user "$(ratio $(((f1 - f0) / 2)) $((rk + wk)))"
		res origin_read_per_user_read "$(ratio $(((or1 - or0) / 2)) "$rk")"
		res origin_write_per_user_write "$(ratio $(((ow1 - ow0) / 2)) "$wk")"
		m1=$(mem_kib /dev/nullb0)
		c=$("t_${T}_cached")
		res cached_4k "$c"
		res ram_b_per_4k "$(ratio $(((m0 - m1) * 1024)) "$c")"
		case $T in ssc_*)
			res ssc_ram_b_per_4k "$(ratio "$(ssc_stat t ram_bytes)" "$c")"
			diag "$TR $T: $(dmsetup status t)" ;;
		esac
		check "$TR $T: removed" "t_${T}_remove"
	done
done
dmsetup remove fmeta fdata origin
check "null_blk teardown" null_blk_teardown
