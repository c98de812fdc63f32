# SPDX-License-Identifier: GPL-2.0
# make bench (not a test: nothing here has a threshold). One VM boot measures
# every target in turn on the same devices, the method of
# shared/design/peer-baselines.md:
#   flash  = null_blk (memory, 512 B blocks) split into fdata (the cache device
#            of every target), fmeta (dm-cache metadata), fscratch (raw writes)
#   origin = null_blk under dm-delay (BENCH_DELAY ms each way)
# Per target: RAM (MemFree + per-cpu free pages, after drop_caches) before
# and after create+warm; then BENCH_ROUNDS (3) interleaved rounds of [raw flash,
# target] 4 KiB random reads (and writes for write-back targets) over the cached
# working set, median of the per-round ratios; flash bytes written per user byte
# (cached, uncached, fsync after every write); a zipf 4 KiB read/write mix.
# Results are "# BENCH <target> <key> <value>" lines; scripts/bench.sh
# makes the table.

WS_MB=${BENCH_WS_MB:-256}
RT=${BENCH_RT:-5}
DELAY=${BENCH_DELAY:-1}
ROUNDS=${BENCH_ROUNDS:-3}
TARGETS=$(echo "${BENCH_TARGETS:-raw_flash,linear,ssc_wt,ssc_wb,dmcache_wb,writecache}" | tr , " ")
FIO="fio --ioengine=libaio --direct=1 --bs=4k --iodepth=16 --output-format=terse --terse-version=3 --group_reporting"

check "modules" sh -c "modprobe dm-ssc && modprobe dm-delay && modprobe dm-cache && modprobe dm-cache-smq && modprobe dm-writecache && modprobe dm-flakey && modprobe dm-zero"
# No discard on the flash: it would free null_blk's backing pages, whose
# reallocation would show up as the target's RAM. A 16 MiB volatile write
# cache, so that a flush is a real command (without one, fsync on the volume
# does nothing); it is flushed empty before every memory snapshot.
check "flash null_blk (544 MiB, 512 B, no discard)" null_blk_add 544 512 0 16
check "origin null_blk (1 GiB, 512 B, no write cache)" null_blk_add 1024 512 1 0
FLASH=/dev/nullb0
OLEN=$(sectors /dev/nullb1)
M=$((32 * 2048)) D=$((480 * 2048))
check "flash carved: fmeta, fdata, fscratch" sh -c "
	dmsetup create fmeta --table '0 $M linear $FLASH 0' &&
	dmsetup create fdata --table '0 $D linear $FLASH $M' &&
	dmsetup create fscratch --table '0 $M linear $FLASH $((M + D))' &&
	dmsetup create origin --table '0 $OLEN delay /dev/nullb1 0 $DELAY /dev/nullb1 0 $DELAY'"
# back every page of both devices before any memory snapshot
dd if=/dev/zero of=/dev/nullb1 bs=1M oflag=direct 2>/dev/null
dd if=/dev/zero of=$FLASH bs=1M oflag=direct 2>/dev/null
$FIO --name=warmup --filename=/dev/mapper/fdata --rw=randread --size=${WS_MB}m --runtime=3 --time_based > /dev/null

res() { echo "# BENCH $T $1 $2"; }
flash_sectors() { awk '{ print $7 }' /sys/block/nullb0/stat; }
# fio_run DEV RW [args]: prints "iops kib" of the run (reads or writes, by RW)
fio_run() {
	dev=$1 rw=$2
	shift 2
	out=$($FIO --name=b --filename="$dev" --rw="$rw" --runtime="$RT" --time_based "$@" 2>/dev/null)
	case $rw in
	*read) echo "$out" | awk -F';' '{ printf "%d %d\n", $8, $6 }' ;;
	*) echo "$out" | awk -F';' '{ printf "%d %d\n", $49, $47 }' ;;
	esac
}
origin_ios() { awk '{ print $1 + $5 }' /sys/block/nullb1/stat; }
# profile PHASE DEV RW [fio args]: with BENCH_PROFILE=1 (perf in the guest), one more
# run of the phase under perf (cpu-clock samples on both CPUs), after every figure of
# the target is taken: where the CPU time of an I/O goes. "# PROFILE <target> <phase>
# <key> ..." lines: ios, samples, idle (samples in the idle loop), emu (samples of the
# origin's emulation: dm-delay's flush thread polls while bios wait), own_ssc and
# own_wc (in the functions of dm-ssc, of dm-writecache: their names from
# /proc/kallsyms), then "sym <samples> <dso> <symbol>" for the symbols of at least
# 0.5 % of the samples.
profile() {
	[ "${BENCH_PROFILE:-0}" = 1 ] || return 0
	if ! command -v perf > /dev/null; then
		diag "$T: no perf in the guest: no profile"
		return 0
	fi
	ph=$1 dev=$2 rw=$3
	shift 3
	if ! perf record -q -a -e cpu-clock -F 997 -o /tmp/perf.data -- $FIO --name=p --filename="$dev" \
		--rw="$rw" --runtime="$RT" --time_based "$@" > /tmp/perf.fio 2> /dev/null; then
		diag "$T: perf record of $ph failed: no profile"
		return 0
	fi
	ios=$(awk -F';' '{ printf "%d", ($6 + $47) / 4 }' /tmp/perf.fio)	# KiB of 4 KiB I/Os
	emu=$(perf report -i /tmp/perf.data --stdio -q -n --sort comm 2> /dev/null |
		awk '$1 ~ /%$/ && $3 ~ /^dm-delay/ { n += $2 } END { print n + 0 }')
	perf report -i /tmp/perf.data --stdio --no-children -q -n --sort dso,sym 2> /dev/null |
		awk -v p="# PROFILE $T $ph" -v ios="$ios" -v emu="$emu" '
		FNR == NR {
			if ($4 == "[dm_ssc]") ssc[$3] = 1
			if ($4 == "[dm_writecache]") wc[$3] = 1
			next
		}
		NF >= 5 && $1 ~ /%$/ {
			n = $2; dso = $3; sym = $5; for (i = 6; i <= NF; i++) sym = sym " " $i
			tot += n
			if (sym ~ /^(default_idle|pv_native_safe_halt|native_safe_halt|acpi_idle|cpu_idle|do_idle|poll_idle|intel_idle|mwait_idle)/)
				idle += n
			if (sym in ssc)
				own_ssc += n
			if (sym in wc)
				own_wc += n
			line[++k] = n " " dso " " sym; pct[k] = $1 + 0
		}
		END {
			print p, "ios", ios; print p, "samples", tot + 0; print p, "idle", idle + 0
			print p, "emu", emu + 0
			print p, "own_ssc", own_ssc + 0; print p, "own_wc", own_wc + 0
			for (i = 1; i <= k; i++) if (pct[i] >= 0.5) print p, "sym", line[i]
		}' /proc/kallsyms -
	rm -f /tmp/perf.data /tmp/perf.fio
}
# median: of the rounds' ratios (the middle one; the lower middle of an even count)
median() { printf '%s\n' "$@" | sort -g | sed -n "$((($# + 1) / 2))p"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "nan" }'; }

t_raw_flash() { DEV=/dev/mapper/fdata; WRITES=1; WARM=none; BLK=4096; }
t_raw_flash_create() { :; }
t_raw_flash_cached() { echo "0 0"; }
t_raw_flash_remove() { :; }

# dm-linear over the flash: what any dm target costs (the ceiling for all)
t_linear() { DEV=/dev/mapper/t; WRITES=1; WARM=none; BLK=4096; }
t_linear_create() { dmsetup create t --table "0 $D linear /dev/mapper/fdata 0"; }
t_linear_cached() { echo "0 0"; }
t_linear_remove() { dmsetup remove t; }

t_ssc_wt() { DEV=/dev/mapper/t; WRITES=0; WARM=read; BLK=4096; }
t_ssc_wt_create() { dmsetup create t --table "0 $OLEN ssc /dev/mapper/fdata /dev/mapper/origin 8 2 format writethrough"; }
t_ssc_wt_cached() { ssc_stat t cached | tr / ' '; }
t_ssc_wt_remove() { dmsetup remove t; }

t_ssc_wb() { DEV=/dev/mapper/t; WRITES=1; WARM=write; BLK=4096; }
t_ssc_wb_create() {
	dmsetup create t --table "0 $OLEN ssc /dev/mapper/fdata /dev/mapper/origin 8 6 format writeback dirty_high 75 dirty_low 70"
}
t_ssc_wb_cached() { ssc_stat t cached | tr / ' '; }
t_ssc_wb_remove() { dmsetup message t 0 clean 0 $((OLEN / 8)) > /dev/null; dmsetup remove t; }

# dm-cache refuses 4 KiB blocks: 64 sectors is its minimum
t_dmcache_wb() { DEV=/dev/mapper/t; WRITES=1; WARM=read; BLK=32768; }
t_dmcache_wb_create() {
	dd if=/dev/zero of=/dev/mapper/fmeta bs=4k count=1 oflag=direct 2>/dev/null
	dmsetup create t --table "0 $OLEN cache /dev/mapper/fmeta /dev/mapper/fdata /dev/mapper/origin 64 1 writeback smq 2 migration_threshold 10000000"
}
t_dmcache_wb_cached() { dmsetup status t | awk '{ split($7, a, "/"); print a[1], a[2] }'; }
t_dmcache_wb_remove() { dmsetup remove t; }

t_writecache() { DEV=/dev/mapper/t; WRITES=1; WARM=write; BLK=4096; }
t_writecache_create() {
	dd if=/dev/zero of=/dev/mapper/fdata bs=4k count=1 oflag=direct 2>/dev/null
	dmsetup create t --table "0 $OLEN writecache s /dev/mapper/origin /dev/mapper/fdata 4096 4 high_watermark 95 low_watermark 90"
}
t_writecache_cached() { dmsetup status t | awk '{ print $5 - $6, $5 }'; }
t_writecache_remove() { dmsetup message t 0 flush; dmsetup remove t; }

# warm: fill the cache of target T with the working set, as WARM says: reads (again,
# until the number cached stops growing: dm-cache promotes gradually, when the origin
# has been idle: WARM_IDLE s between passes) or one write pass
WARM_IDLE=${BENCH_WARM_IDLE:-3}
warm() {
	case $WARM in
	read)
		prev=-1
		for pass in 1 2 3 4; do
			$FIO --name=warm --filename="$DEV" --rw=randread --size=${WS_MB}m > /dev/null
			sleep $WARM_IDLE
			set -- $("t_${T}_cached")
			[ "$1" = "$prev" ] && break
			prev=$1
		done ;;
	write)
		$FIO --name=warm --filename="$DEV" --rw=write --bs=64k --size=${WS_MB}m > /dev/null ;;
	esac
}

for T in $TARGETS; do
	"t_$T"
	dd if=/dev/zero of=/dev/mapper/fdata bs=4k count=1 oflag=direct 2>/dev/null
	m0=$(mem_kib $FLASH)
	check "$T: create" "t_${T}_create"
	[ -b "$DEV" ] || continue
	s0=$(flash_sectors)
	warm
	s1=$(flash_sectors)
	m1=$(mem_kib $FLASH)
	set -- $("t_${T}_cached")
	cached=$1 total=$2
	res cached "$cached/$total"
	res block_bytes "$BLK"
	if [ "$cached" -gt 0 ]; then
		res warm_flash_per_cached "$(ratio $(((s1 - s0) * 512)) $((cached * BLK)))"
		res ram_b_per_block "$(ratio $(((m0 - m1) * 1024)) "$cached")"
	fi
	case $T in ssc_*) res ssc_ram_bytes_per_block "$(ratio "$(ssc_stat t ram_bytes)" "$cached")" ;; esac

	rr= wr= kib=0
	o0=$(origin_ios)
	for round in $(seq "$ROUNDS"); do
		set -- $(fio_run /dev/mapper/fdata randread --size=${WS_MB}m)
		raw=$1
		set -- $(fio_run "$DEV" randread --size=${WS_MB}m)
		kib=$((kib + ${2:-0}))
		res "read_round$round" "$1/$raw"
		rr="$rr $(ratio "$1" "$raw")"
	done
	res read_ratio "$(median $rr)"
	# what else the target did meanwhile: origin I/Os (write-back) per 1,000 read hits
	res read_origin_per_kio "$(ratio $((($(origin_ios) - o0) * 1000)) $((kib / 4)))"
	if [ "$WRITES" = 1 ]; then
		kib=0
		o0=$(origin_ios)
		for round in $(seq "$ROUNDS"); do
			set -- $(fio_run /dev/mapper/fscratch randwrite --size=32m)
			raw=$1
			s0=$(flash_sectors)
			set -- $(fio_run "$DEV" randwrite --size=${WS_MB}m)
			s1=$(flash_sectors)
			kib=$((kib + ${2:-0}))
			res "write_round$round" "$1/$raw"
			wr="$wr $(ratio "$1" "$raw")"
			wb="$(ratio $(((s1 - s0) / 2)) "$2")"
		done
		res write_ratio "$(median $wr)"
		res write_origin_per_kio "$(ratio $((($(origin_ios) - o0) * 1000)) $((kib / 4)))"
		res flash_per_user_cached "$wb"
		s0=$(flash_sectors)
		set -- $(fio_run "$DEV" randwrite --size=64m --offset=${WS_MB}m)
		s1=$(flash_sectors)
		res uncached_write_iops "$1"
		res flash_per_user_uncached "$(ratio $(((s1 - s0) / 2)) "$2")"
		s0=$(flash_sectors)
		set -- $(fio_run "$DEV" randwrite --size=${WS_MB}m --ioengine=psync --iodepth=1 --fsync=1)
		s1=$(flash_sectors)
		res fsync_write_iops "$1"
		res flash_per_user_fsync "$(ratio $(((s1 - s0) / 2)) "$2")"
		s0=$(flash_sectors)
		set -- $(fio_run "$DEV" randwrite --size=64m --offset=$((WS_MB + 64))m --ioengine=psync --iodepth=1 --fsync=1)
		s1=$(flash_sectors)
		res flash_per_user_fsync_new "$(ratio $(((s1 - s0) / 2)) "$2")"
	fi
	set -- $(fio_run /dev/mapper/fdata randread --size=${WS_MB}m)
	raw=$1
	o0=$(origin_ios)
	out=$($FIO --name=z --filename="$DEV" --rw=randrw --rwmixread=70 --random_distribution=zipf:1.1 \
		--size=$((WS_MB * 2))m --runtime=$((RT * 2)) --time_based 2>/dev/null)
	o1=$(origin_ios)
	z=$(echo "$out" | awk -F';' '{ printf "%d", $8 + $49 }')
	res zipf_iops "$z"
	# origin I/Os (reads and writes at the disk) per 1,000 I/Os of the mix
	res zipf_origin_per_kio "$(ratio $(((o1 - o0) * 1000)) "$(echo "$out" | awk -F';' '{ printf "%d", ($6 + $47) / 4 }')")"
	res zipf_raw_read_iops "$raw"
	res zipf_ratio_to_raw "$(ratio "$z" "$raw")"
	case $T in ssc_*) diag "$T: $(dmsetup status t)" ;; esac
	# the profiled reruns last, so that no figure above sees what they did
	profile read "$DEV" randread --size=${WS_MB}m
	[ "$WRITES" = 1 ] && profile write "$DEV" randwrite --size=${WS_MB}m
	profile zipf "$DEV" randrw --rwmixread=70 --random_distribution=zipf:1.1 --size=$((WS_MB * 2))m
	check "$T: measured and removed" "t_${T}_remove"
done
dmsetup remove fmeta fdata fscratch origin
check "null_blk teardown" null_blk_teardown

# The origin across the network: the same targets (BENCH_NBD_TARGETS, "-": none)
# over one NBD export, nbdkit serving a file of the guest's tmpfs from a network
# namespace over a veth pair, every read and write answered 2 x BENCH_DELAY ms late
# (its delay filter: the round trip of the origin above), nbd-client with 4 KiB blocks. dm-linear over the export is the baseline:
# per target, after the warm-up above (1 s idle between read passes), the IOPS of
# 4 KiB random reads over the working set and of the zipf mix over twice it, each
# also as a ratio to dm-linear's in this run. The flash is a fresh null_blk;
# "origin" (dm-linear over /dev/nbd0), "fdata" and "fmeta" take the names the
# targets' functions above use.
NBD_TARGETS=$(echo "${BENCH_NBD_TARGETS:-linear,ssc_wt,ssc_wb,dmcache_wb,writecache}" | tr , " ")
[ "$NBD_TARGETS" = - ] && NBD_TARGETS=	# scripts/bench.sh passes an empty list as "-"
t_linear_nbd() { DEV=/dev/mapper/t; WARM=none; }
t_linear_nbd_create() { dmsetup create t --table "0 $OLEN linear /dev/mapper/origin 0"; }
t_linear_nbd_cached() { echo "0 0"; }
t_linear_nbd_remove() { dmsetup remove t; }
now_cs
t_nbd=$NOW
if [ -n "$NBD_TARGETS" ]; then
	if nbd_net_setup > /tmp/nbd.out 2>&1 && nbd_server_start $((WS_MB * 4)) $((DELAY * 2)) >> /tmp/nbd.out 2>&1 &&
		nbd_connect /dev/nbd0 30 >> /tmp/nbd.out 2>&1; then
		ok "nbd: nbdkit in a network namespace, $((DELAY * 2)) ms a request, /dev/nbd0"
	else
		not_ok "nbd: nbdkit in a network namespace, $((DELAY * 2)) ms a request, /dev/nbd0"
		sed 's/^/# /' /tmp/nbd.out
		NBD_TARGETS=
	fi
fi
if [ -n "$NBD_TARGETS" ]; then
	OLEN=$(sectors /dev/nbd0)
	M=$((32 * 2048)) D=$((WS_MB * 2 * 2048))
	check "nbd: flash null_blk ($((WS_MB * 2 + 32)) MiB, 512 B, no discard)" null_blk_add $((WS_MB * 2 + 32)) 512 0 16
	check "nbd: fmeta, fdata on the flash, origin over /dev/nbd0" sh -c "
		dmsetup create fmeta --table '0 $M linear /dev/nullb0 0' &&
		dmsetup create fdata --table '0 $D linear /dev/nullb0 $M' &&
		dmsetup create origin --table '0 $OLEN linear /dev/nbd0 0'"
	# what the zipf mix spans written once, so that every read below is of data the
	# server holds; 1 s idle between warm-up passes (the smoke run's budget)
	dd if=/dev/zero of=/dev/mapper/origin bs=1M count=$((WS_MB * 2)) oflag=direct 2>/dev/null
	WARM_IDLE=1
	for t in $NBD_TARGETS; do
		T=$t
		[ "$t" = linear ] && T=linear_nbd
		"t_$T"
		dd if=/dev/zero of=/dev/mapper/fdata bs=4k count=1 oflag=direct 2>/dev/null
		check "$t over NBD: create" "t_${T}_create"
		[ -b "$DEV" ] || continue
		warm
		T=${t}_nbd
		set -- $("t_${t}_cached" 2>/dev/null || echo 0 0)
		res cached "$1/$2"
		res delay_ms $((DELAY * 2))
		set -- $(fio_run "$DEV" randread --size=${WS_MB}m)
		res read_iops "$1"
		out=$($FIO --name=z --filename="$DEV" --rw=randrw --rwmixread=70 --random_distribution=zipf:1.1 \
			--size=$((WS_MB * 2))m --runtime=$((RT * 2)) --time_based 2>/dev/null)
		res zipf_iops "$(echo "$out" | awk -F';' '{ printf "%d", $8 + $49 }')"
		case $t in ssc_*) diag "$T: $(dmsetup status t)" ;; esac
		T=$t
		[ "$t" = linear ] && T=linear_nbd
		check "$t over NBD: measured and removed" "t_${T}_remove"
	done
	dmsetup remove fmeta fdata origin
	check "nbd: server, connection and network down" nbd_net_teardown
	check "nbd: null_blk teardown" null_blk_teardown
	slow "the NBD origin, every target" "$t_nbd"
fi

# Recovery after a crash, dm-ssc (writeback) against dm-writecache, at each
# cache size of BENCH_RECOVERY_MB: 75 % of the cache's blocks written (4 KiB
# random writes, every block once), then the crash: the cache device, a
# dm-linear "rc", is switched to dm-flakey drop_writes and the volume is
# removed, so nothing of its shutdown reaches the flash. What is timed is
# dmsetup create of the same table without format: the in-kernel ctr and
# resume that recover the cache. The origin is dm-zero: recovery never
# reads it, and the write-back it gets is dropped.
RMB=$(echo "${BENCH_RECOVERY_MB:-256,1024}" | tr , " ")
rmax=0
for mb in $RMB; do [ "$mb" -gt "$rmax" ] && rmax=$mb; done
check "recovery: flash null_blk ($((rmax + 16)) MiB, 512 B, no discard)" null_blk_add $((rmax + 16)) 512 0 16
RFLASH=$(ls -d /dev/nullb* | tail -n1)
ROLEN=$((rmax * 4 * 2048))
dmsetup create rorigin --table "0 $ROLEN zero"
# rc_table linear|drop SECTORS: the cache device healthy, or dropping writes
rc_table() {
	case $1 in
	linear) echo "0 $2 linear $RFLASH 0" ;;
	drop) echo "0 $2 flakey $RFLASH 0 0 1 1 drop_writes" ;;
	esac
}
rc_switch() { dmsetup suspend rc && dmsetup load rc --table "$(rc_table "$1" "$2")" && dmsetup resume rc; }
r_ssc_table() {
	echo "0 $ROLEN ssc /dev/mapper/rc /dev/mapper/rorigin 8 $1 writeback dirty_high 75 dirty_low 70"
}
r_ssc_create() { dmsetup create r --table "$(r_ssc_table "6 format")"; }
r_ssc_blocks() { ssc_stat r cached | cut -d/ -f2; }
r_ssc_recreate() { dmsetup create r --table "$(r_ssc_table 5)"; }
r_writecache_table() {
	echo "0 $ROLEN writecache s /dev/mapper/rorigin /dev/mapper/rc 4096 4 high_watermark 75 low_watermark 70"
}
r_writecache_create() {
	dd if=/dev/zero of=/dev/mapper/rc bs=4k count=1 oflag=direct 2>/dev/null
	dmsetup create r --table "$(r_writecache_table)"
}
r_writecache_blocks() { dmsetup status r | awk '{ print $5 }'; }
r_writecache_recreate() { dmsetup create r --table "$(r_writecache_table)"; }
r_crash() { rc_switch drop "$RS" && dmsetup remove r; }
# r_try WHAT CMD...: ok/not ok like check, and the command's status
r_try() {
	what=$1
	shift
	if out=$("$@" 2>&1); then
		ok "$what"
	else
		not_ok "$what"
		printf '%s\n' "$out" | tail -n 10 | sed 's/^/# /'
		return 1
	fi
}
for mb in $RMB; do
	RS=$((mb * 2048))
	for T in ssc_wb_recovery writecache_recovery; do
		t=${T%_recovery}
		t=${t%_wb}
		r_try "$T $mb MiB: cache device" dmsetup create rc --table "$(rc_table linear $RS)" ||
			continue
		if r_try "$T $mb MiB: create" "r_${t}_create"; then
			n=$(( $("r_${t}_blocks") * 3 / 4 ))
			r_try "$T $mb MiB: $n blocks written" $FIO --name=fill --filename=/dev/mapper/r \
				--rw=randwrite --size=$((n * 4))k &&
			r_try "$T $mb MiB: crash (cache device drops writes, volume removed)" r_crash &&
			r_try "$T $mb MiB: cache device back" rc_switch linear "$RS" &&
			{
				now_cs
				t0=$NOW
				if r_${t}_recreate > /tmp/recreate.out 2>&1; then
					now_cs
					ok "$T $mb MiB: recovered by create"
					res "ms_$mb" $(((NOW - t0) * 10))
					res "blocks_$mb" "$n"
					if [ "$t" = ssc ]; then
						check_eq "$T $mb MiB: a crash was recovered" 1 "$(ssc_stat r recovered)"
						res "replayed_$mb" "$(ssc_stat r replayed)"
					fi
				else
					not_ok "$T $mb MiB: recovered by create"
					sed 's/^/# /' /tmp/recreate.out
				fi
			}
			dmsetup remove r 2>/dev/null
		fi
		dmsetup remove rc
	done
done

# RAM by ssc's own count on a full cache (a count, not a timing): writeback
# with a fifth of the slots' worth of blocks written dirty first, and
# writethrough; then reads of a range twice the cache fill the rest (clean),
# until the number cached stops growing. At each cache size of
# BENCH_RECOVERY_MB: the fixed part (the reserve, the shards' slack, the
# segment table) weighs less in a bigger cache.
for RAM_MB in $RMB; do
RS=$((RAM_MB * 2048))
for T in ssc_wb_full ssc_wt_full; do
	# no sequential bypass: the fill is sequential
	case $T in
	ssc_wb_full) args="8 format writeback dirty_high 75 dirty_low 70 sequential_threshold 0" ;;
	*) args="4 format writethrough sequential_threshold 0" ;;
	esac
	r_try "$T $RAM_MB MiB: cache device" dmsetup create rc --table "$(rc_table linear $RS)" ||
		continue
	if r_try "$T: create" dmsetup create r --table "0 $ROLEN ssc /dev/mapper/rc /dev/mapper/rorigin 8 $args"; then
		slots=$(ssc_stat r cached | cut -d/ -f2)
		if [ $T = ssc_wb_full ]; then
			r_try "$T: $((slots / 5)) blocks written dirty" $FIO --name=dirty \
				--filename=/dev/mapper/r --rw=write --bs=64k --size=$((slots / 5 * 4))k
		fi
		prev=-1
		for pass in 1 2 3 4; do
			$FIO --name=fill --filename=/dev/mapper/r --rw=read --bs=64k \
				--offset=$((slots * 4))k --size=$((slots * 8))k > /dev/null
			sleep 1
			c=$(ssc_stat r cached | cut -d/ -f1)
			[ "$c" = "$prev" ] && break
			prev=$c
		done
		c=$(ssc_stat r cached | cut -d/ -f1)
		res "cached_of_slots_$RAM_MB" "$(ratio "$c" "$slots")"
		res "dirty_of_cached_$RAM_MB" "$(ratio "$(ssc_stat r dirty)" "$c")"
		res "ram_own_per_cached_$RAM_MB" "$(ratio "$(ssc_stat r ram_bytes)" "$c")"
		dmsetup message r 0 clean 0 $((slots / 5)) > /dev/null 2>&1
		dmsetup remove r
	fi
	dmsetup remove rc
done
done

dmsetup remove rorigin
check "recovery: null_blk teardown" null_blk_teardown
