# SPDX-License-Identifier: GPL-2.0
# make bench-hashcache: each policy, freshly formatted on a 256 MiB null_blk
# (8 KiB blocks; 8 ways for the tables: 32767 slots), takes HB_OBJECTS (24000)
# inserts, then HB_LOOKUPS (40000) requests of one workload, through
# `hcctl index bench`, counted by the kernel (device I/Os per insert, hit and
# miss, bytes written per insert, RAM bits per slot and per object stored),
# with operations per second (emulated time: compare policies, not machines):
#   fill: 6000-byte values; lookups of which 0, 40 and 80 % were inserted;
#   lookup-insert: BufferHash's, 20-byte keys (a SHA-1) and 8-byte values; each
#     key looked up, then inserted; 0, 40 and 80 % of them inserted before;
#   ycsb: Cascade Mapping's, 30-byte keys and 270-byte values, one SET per 30
#     GETs, keys drawn hotspot, zipfian or normal, over HB_YCSB_OBJECTS (twice
#     HB_OBJECTS: more than the tables' slots, so some keys were evicted).
# Cascade's tiers in the paper's proportions to each run's objects, not to
# the device's room: T1 a tenth of them (its hot tier), T2 a small FIFO (4
# partitions of 2 blocks), T3 8 buckets (their RAM blocks hold some 4,000
# mappings, the rest in chains on flash).
# HB_POLICIES, HB_WORKLOADS, HB_PCTS and HB_DISTS (comma lists) trim it (the
# smoke's draw).
# One line per run: "# HCBENCH POLICY WORKLOAD PARAM JSON". Then the attach
# measure (below).

HB_OBJECTS=${HB_OBJECTS:-24000}
HB_LOOKUPS=${HB_LOOKUPS:-40000}
HB_YCSB_OBJECTS=${HB_YCSB_OBJECTS:-$((HB_OBJECTS * 2))}
WORKLOADS=$(echo "${HB_WORKLOADS:-fill,lookup-insert,ycsb}" | tr , ' ')
PCTS=$(echo "${HB_PCTS:-0,40,80}" | tr , ' ')
DISTS=$(echo "${HB_DISTS:-hotspot,zipfian,normal}" | tr , ' ')
check "modprobe hashcache" modprobe hashcache
check "null_blk index device" null_blk_add 256
DEV=/dev/nullb0
# NAME:FORMAT OPTIONS:BENCH OPTIONS; +prefetch puts groups of 8 (a page's
# objects) and walks them in order on hits (fill only); +lru is BufferHash's LRU,
# +partial its update-based partial discard
for run in basic:--policy=basic: set:--policy=set: setmem:--policy=setmem: \
	setmemlru:--policy=setmemlru: log:--policy=log: loglru:--policy=loglru: \
	log+prefetch:--policy=log,--prefetch:--group=8 \
	loglru+prefetch:--policy=loglru,--prefetch:--group=8 bufferhash:--policy=bufferhash: \
	bufferhash+lru:--policy=bufferhash,--lru: \
	bufferhash+partial:--policy=bufferhash,--partial-discard: cascade:--policy=cascade:; do
	pol=${run%%:*} rest=${run#*:}
	case ",${HB_POLICIES:-all}," in *",$pol,"*|,all,) ;; *) continue ;; esac
	fo=$(echo "${rest%%:*}" | tr ',' ' ') bo=$(echo "${rest#*:}" | tr ',' ' ')
	for wl in $WORKLOADS; do
		case $wl in
		fill) params=$PCTS n=$HB_OBJECTS opts="--value-size 6000 $bo" ;;
		lookup-insert) params=$PCTS n=$HB_OBJECTS opts="--key-size 20 --value-size 8" ;;
		ycsb) params=$DISTS n=$HB_YCSB_OBJECTS opts="--key-size 30 --value-size 270 --set-ratio 30" ;;
		esac
		case $pol in *+prefetch) [ "$wl" = fill ] || continue ;; esac
		fx=
		[ $pol = cascade ] && fx="--resident-sets $((n / 10)) --ram-ways 4 --ways 2 --sets 8"
		for p in $params; do
			case $wl in ycsb) po="--dist $p" ;; *) po="--hit-rate $p" ;; esac
			# shellcheck disable=SC2086 # option lists
			check "$pol $wl $p: format" hcctl index format $fo $fx --seed 1 $DEV
			check "$pol $wl $p: attach" hcctl index attach $DEV
			# shellcheck disable=SC2086
			b=$(hcctl --json index bench $DEV --objects "$n" --lookups "$HB_LOOKUPS" \
				--workload "$wl" $po $opts)
			check_eq "$pol $wl $p: no wrong value" 0 "$(printf '%s' "$b" | jq -r .wrong)"
			diag "HCBENCH $pol $wl $p $b"
			check "$pol $wl $p: detach" hcctl index detach $DEV
		done
	done
done

# GC: Cascade's hit mode against its space mode (--space-gc), in the paper's
# write-heavy test (zipfian, a SET a GET: its Table 1 runs 1:1), on a ring of
# 16 slabs that holds about half of HB_GC_OBJECTS (HB_OBJECTS; 0: none)
# records of 30-byte keys and 270-byte values (328 bytes a record), T1 a
# tenth of them, the other tiers as above. One line per mode:
# "# HCGC MODE BENCH-JSON STATS-JSON".
GC_N=${HB_GC_OBJECTS:-$HB_OBJECTS}
if [ "$GC_N" != 0 ]; then
	gslab=$(((GC_N * 328 / 32 + 8191) / 8192 * 8192))
	[ $gslab -ge 16384 ] || gslab=16384
	for mode in hit space; do
		o=
		[ $mode = space ] && o=--space-gc
		# shellcheck disable=SC2086 # (an option or none)
		check "gc $mode: format" hcctl index format --policy cascade $o --buffer-size $gslab \
			--log-size $((gslab * 16)) --resident-sets $((GC_N / 10)) --ram-ways 4 --ways 2 \
			--sets 8 --seed 1 $DEV
		check "gc $mode: attach" hcctl index attach $DEV
		b=$(hcctl --json index bench $DEV --objects "$GC_N" --lookups "$HB_LOOKUPS" \
			--workload ycsb --dist zipfian --set-ratio 1 --key-size 30 --value-size 270)
		check_eq "gc $mode: no wrong value" 0 "$(printf '%s' "$b" | jq -r .wrong)"
		diag "HCGC $mode $(printf '%s' "$b" | jq -c .) $(hcctl --json index stats $DEV | jq -c .)"
		check "gc $mode: detach" hcctl index detach $DEV
	done
fi

# attach: a clean attach reads the checkpoint its detach wrote; the scan it
# replaces (the checkpoint's CRC broken with hc-ckcraft) reads the table or
# log. At each HB_ATTACH_MB size (64,256) a fresh null_blk, HB_ATTACH_OBJECTS
# (4000) objects of 100 bytes, each policy (every one has a checkpoint
# region at these sizes). Bytes read are counted by the kernel; the time
# is the guest's uptime in centiseconds (emulated: compare, don't quote).
# One line per run: "# HCATTACH POLICY MiB CKPT-BYTES CKPT-READ CKPT-CS SCAN-READ SCAN-CS OBJECTS".
ATTACH_MB=$(echo "${HB_ATTACH_MB:-64,256}" | tr , ' ')
[ "$ATTACH_MB" = none ] && ATTACH_MB=	# (none: the workloads only)
ATTACH_POLS=$(echo "${HB_ATTACH_POLICIES:-basic,set,setmem,setmemlru,log,loglru,bufferhash,cascade}" | tr , ' ')
ATTACH_N=${HB_ATTACH_OBJECTS:-4000}
aput() {
	hcctl index attach "$1" &&
	awk -v n="$ATTACH_N" 'BEGIN { for (i = 0; i < n; i++) printf "a%d %0100d\n", i, i }' |
		hcctl index mput "$1"
}
n=1
for mb in $ATTACH_MB; do
	check "attach: null_blk of $mb MiB" null_blk_add "$mb"
	AD=/dev/nullb$n
	n=$((n + 1))
	for pol in $ATTACH_POLS; do
		check "attach $pol $mb MiB: format" hcctl index format --policy $pol --seed 1 $AD
		check "attach $pol $mb MiB: $ATTACH_N puts" aput $AD
		cb=$(hcctl --json index info $AD | jq -r .checkpoint_bytes)
		check "attach $pol $mb MiB: a clean detach" hcctl index detach $AD
		now_cs; t0=$NOW
		a=$(hcctl --json index attach $AD)
		now_cs; t1=$NOW
		obj=$(hcctl --json index stats $AD | jq -r .objects)
		check "attach $pol $mb MiB: detach" hcctl index detach $AD
		if [ "$cb" != 0 ]; then
			check_eq "attach $pol $mb MiB: from the checkpoint" true "$(printf '%s' "$a" | jq -r .checkpoint)"
			check "attach $pol $mb MiB: its CRC broken" hc-ckcraft $AD crc
		fi
		now_cs; t2=$NOW
		b=$(hcctl --json index attach $AD)
		now_cs; t3=$NOW
		check_eq "attach $pol $mb MiB: the scan" false "$(printf '%s' "$b" | jq -r .checkpoint)"
		check_eq "attach $pol $mb MiB: the scan finds what the checkpoint had" "$obj" \
			"$(hcctl --json index stats $AD | jq -r .objects)"
		check "attach $pol $mb MiB: detach after the scan" hcctl index detach $AD
		diag "HCATTACH $pol $mb $cb $(printf '%s' "$a" | jq -r .read_bytes) $((t1 - t0)) $(printf '%s' "$b" | jq -r .read_bytes) $((t3 - t2)) $obj"
	done
done
check "null_blk teardown" null_blk_teardown
