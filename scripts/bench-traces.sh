#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench-traces: boot one VM (Debian 6.12) that replays traces against dm-ssc
# (writethrough, writeback), dm-cache (smq), dm-writecache and bcache on the same
# devices (tests/vm/suites/bench-traces.sh has the method), then print the table
# and draw the plot.
#
#   bench-traces.sh [--trace FILE]... [--cache SIZE|N%] [--origin SIZE] [--plan]
#   bench-traces.sh --report
#
# Traces: the built-in synthetic ones BT_TRACES names (zipf-read, write-heavy, scan:
# all three unless a trace file is given), then each trace file (BT_TRACE_FILE, which
# make's TRACE= sets, then every --trace): any format scripts/trace2iolog.py reads
# (msr, fiu, csv, blktrace; gzip'ed or not) or a fio iolog (version 2 or 3). Each is
# converted here to a fio iolog of whole 4 KiB blocks, replayed as fast as it goes,
# and named in the table by its file's base name (any character but A-Z a-z 0-9 . _ -
# made _). Sizes take K, M, G, T (powers of 1024):
#   --cache, BT_CACHE    the cache device of every target: a size, or N% of the trace's
#                        footprint (the distinct 4 KiB blocks it touches). Default 32M
#                        for a built-in trace (BT_CACHE_MB=N: N MiB), 10% for a file.
#   --origin, BT_ORIGIN  the volume every target presents. Default the trace's extent,
#                        rounded up to a MiB. A trace that reaches past it cannot be
#                        replayed whole: its rows are failed replays.
# A trace whose extent is above BT_ORIGIN_MAX (default 2G: the origin is a null_blk in
# the VM's memory) has the MiB it never touches cut out: requests keep their order and
# their offsets within each MiB, and the origin shrinks to about the footprint.
# Every target gets a geometry its size allows (ssc's segment_size, dm-cache's block,
# bcache's bucket) and the table says what it got. Every replay must hand the target
# the trace's bytes exactly, fio exiting 0: otherwise its row is a failed replay and
# this script exits 1 after the table.
# Other knobs: BT_DELAY origin delay in ms (1); BT_REQUESTS requests of each built-in
# trace (20000); BT_TARGETS, a comma list of ssc_wt,
# ssc_wb, dmcache, writecache, bcache (the default), ssc_wt_reuse, ssc_wb_reuse (ssc
# with "admit reuse"); BENCH_VM_TIMEOUT, seconds a boot may take (5400).
# Output in out/bench-traces/: raw.tap, results.md (the tables), results.dat and
# results.png (the plot, with gnuplot), traces/ (the iologs and their plans). --plan
# (or BT_PLAN=1) converts and plans the traces, prints the plan and stops; --report
# makes the tables and the plot again from raw.tap without running anything.
# Timing under TCG is emulated: only ratios between targets of the same run mean something.
set -euo pipefail
. "$(dirname "$0")/common.sh"

o="$SSC_OUT/bench-traces"
BUILTIN="zipf-read write-heavy scan"
files=() mode=run
[ "${BT_PLAN:-0}" = 1 ] && mode=plan
[ -n "${BT_TRACE_FILE:-}" ] && files+=("$BT_TRACE_FILE")
cache=${BT_CACHE:-} origin=${BT_ORIGIN:-}
while [ $# -gt 0 ]; do
	case $1 in
	--trace) [ $# -ge 2 ] || die "--trace wants a file"; files+=("$2"); shift 2 ;;
	--cache) [ $# -ge 2 ] || die "--cache wants a size or N%"; cache=$2; shift 2 ;;
	--origin) [ $# -ge 2 ] || die "--origin wants a size"; origin=$2; shift 2 ;;
	--plan) mode=plan; shift ;;
	--report) mode=report; shift ;;
	*) die "bench-traces.sh: unknown argument '$1' (see the script's header)" ;;
	esac
done
[ -z "$cache" ] && [ -n "${BT_CACHE_MB:-}" ] && cache=${BT_CACHE_MB}M

# bytes SIZE: SIZE (digits, then K, M, G or T, then an optional iB or B) in bytes
bytes() {
	local s=${1^^} m=1
	s=${s%B}
	s=${s%I}
	case $s in
	*K) m=$((1 << 10)) ;; *M) m=$((1 << 20)) ;; *G) m=$((1 << 30)) ;; *T) m=$((1 << 40)) ;;
	esac
	[ "$m" -eq 1 ] || s=${s%?}
	[[ $s =~ ^[0-9]{1,12}$ ]] && [ $((10#$s)) -gt 0 ] || return 1
	echo $((10#$s * m))
}
# pow2_floor N: the largest power of two <= N (N >= 1)
pow2_floor() {
	local p=1
	while [ $((p * 2)) -le "$1" ]; do p=$((p * 2)); done
	echo "$p"
}

# plan NAME: the sizes and each target's geometry for the trace whose iolog is
# traces/NAME.iolog (stats in the variables prep sets); writes traces/NAME.bt for the
# guest and the trace's "BTRACE plan" lines for the table
plan() {
	local name=$1 want=$2 cb ob rule cs bucket seg dmc blocks meta_mb flash_mb onull_mb
	if [[ $want =~ ^([0-9]{1,3}(\.[0-9]{1,3})?)%$ ]]; then
		cb=$(awk -v f="$footprint" -v p="${BASH_REMATCH[1]}" 'BEGIN { printf "%.0f", int(f * p / 100) * 4096 }')
		rule="${BASH_REMATCH[1]}_%_of_the_footprint"
	else
		cb=$(bytes "$want") || die "cache size '$want': want a size (e.g. 26M, 1G) or N% of the footprint"
		cb=$((cb / 4096 * 4096))
		rule="$want"
	fi
	[ -n "$cache" ] || rule="${rule}_(the_default)"
	[ "$cb" -ge $((1 << 20)) ] || die "$name: a cache of $cb B ($want) is below 1 MiB: too small for any target"
	if [ -n "$origin" ]; then
		ob=$(bytes "$origin") || die "origin size '$origin': want a size (e.g. 256M, 2G)"
		[ $((ob % 4096)) -eq 0 ] || die "origin size '$origin': not a multiple of 4 KiB"
	else
		ob=$(( (extent + (1 << 20) - 1) >> 20 << 20 ))
	fi
	cs=$((cb / 512))
	# ssc: 4 KiB blocks; segments of 256 KiB (FlashTier's erase block) or, to keep 32
	# of them, 128 KiB (the smallest it takes); its metadata fits in one of them
	seg=512
	[ $((cs / seg)) -ge 32 ] || seg=256
	# dm-cache: blocks of 32 KiB, or the multiple of it that keeps them to 2^20 (above
	# that the kernel warns); its metadata device: 4 MiB and 128 B a block, 8 MiB at least
	dmc=$((64 * ((cs + 64 * 1048576 - 1) / (64 * 1048576))))
	blocks=$((cs / dmc))
	meta_mb=$(( (4 * 1048576 + blocks * 128 + 1048575) / 1048576 ))
	[ "$meta_mb" -ge 8 ] || meta_mb=8
	# bcache: a bucket of a power of two from 4 KiB to 512 KiB (make-bcache's default),
	# the largest that gives it 1,024 buckets (the kernel refuses fewer than 513)
	bucket=$(pow2_floor $((cs / 1024 > 8 ? cs / 1024 : 8)))
	[ "$bucket" -le 1024 ] || bucket=1024
	# the flash null_blk holds both; the origin's is 8 KiB longer than the volume, for
	# bcache's superblock
	flash_mb=$((meta_mb + (cb + 1048575) / 1048576))
	onull_mb=$(( (ob + 8192 + 1048575) / 1048576 ))
	cat > "$tdir/$name.bt" <<-EOF
		# $name: the plan scripts/bench-traces.sh made (sectors of 512 B, bytes)
		OSECT=$((ob / 512)) CSECT=$cs MSECT=$((meta_mb * 2048))
		FLASH_MB=$flash_mb ONULL_MB=$onull_mb
		SSC_SEG=$seg DMC_BLOCK=$dmc BC_BUCKET=$bucket
		WANT_R=$read_b WANT_W=$write_b
	EOF
	{
		for kv in "requests $reads/$writes" "user_b $read_b/$write_b" "footprint_4k $footprint" \
			"extent_b $extent" "squeezed_from_b $squeezed" "origin_b $ob" "cache_b $cb" "cache_rule $rule" \
			"mem_mb $((flash_mb + onull_mb))"; do
			echo "# # BTRACE plan $name trace $kv"
		done
	} >> "$tdir/plan"
	log "$name: $reads reads ($read_b B), $writes writes ($write_b B), footprint $footprint x 4 KiB," \
		"extent $extent B$([ "$squeezed" = 0 ] || echo " (squeezed from $squeezed B)"); origin $ob B, cache $cb B" \
		"($rule); ssc segment_size $seg, dm-cache block $dmc, bcache bucket $bucket (sectors)"
	[ "$ob" -ge "$extent" ] || log "$name: the origin is smaller than the trace's extent: its replays will be short"
}

# prep NAME SOURCE: traces/NAME.iolog from SOURCE, a fio iolog: whole 4 KiB blocks, one
# file, timestamps 1 (as fast as it goes), reads and writes only; squeezed when its
# extent is above BT_ORIGIN_MAX. Sets reads writes read_b write_b footprint extent
# squeezed other.
prep() {
	local name=$1 src=$2 omax kv
	omax=$(bytes "${BT_ORIGIN_MAX:-2G}") || die "BT_ORIGIN_MAX: want a size"
	kv=$(python3 - "$src" "$tdir/$name.iolog" "$omax" <<'PY'
import sys
src, out, omax = sys.argv[1], sys.argv[2], int(sys.argv[3])
B, CH = 4096, 1 << 20
reqs, other = [], 0
with open(src, encoding="utf-8", errors="replace") as f:
    head = f.readline().split()
    if head[:2] != ["fio", "version"] or head[2:3] not in (["2"], ["3"]) or head[3:] != ["iolog"]:
        sys.exit("not a fio iolog (version 2 or 3)")
    v3 = head[2] == "3"
    for n, line in enumerate(f, 2):
        w = line.split()[1:] if v3 else line.split()
        if not w:
            continue
        act = w[1] if len(w) > 1 else ""
        if act in ("add", "open", "close"):
            continue
        if act not in ("read", "write"):
            other += 1
            continue
        try:
            off, ln = int(w[2]), int(w[3])
        except (IndexError, ValueError):
            sys.exit(f"line {n}: want [TIME] FILE {act} OFFSET LENGTH")
        s, e = off // B * B, -(-(off + max(ln, 1)) // B) * B
        reqs.append((act == "write", s, e))
if not reqs:
    sys.exit("no read or write requests")
blocks, chunks = set(), set()
for _, s, e in reqs:
    blocks.update(range(s // B, e // B))
    chunks.update(range(s // CH, (e - 1) // CH + 1))
extent = max(e for _, _, e in reqs)
squeezed = 0
if extent > omax:
    # the MiB never touched cut out: a request's MiB are touched and consecutive, so
    # they stay consecutive
    m = {c: i for i, c in enumerate(sorted(chunks))}
    reqs = [(w, m[s // CH] * CH + s % CH, m[s // CH] * CH + s % CH + e - s) for w, s, e in reqs]
    squeezed, extent = extent, max(e for _, _, e in reqs)
with open(out, "w", encoding="utf-8") as f:
    f.write("fio version 3 iolog\n1 /dev/replay add\n1 /dev/replay open\n")
    for w, s, e in reqs:
        f.write(f"1 /dev/replay {'write' if w else 'read'} {s} {e - s}\n")
    f.write("1 /dev/replay close\n")
print(f"reads={sum(1 for w, _, _ in reqs if not w)} writes={sum(1 for w, _, _ in reqs if w)}",
      f"read_b={sum(e - s for w, s, e in reqs if not w)} write_b={sum(e - s for w, s, e in reqs if w)}",
      f"footprint={len(blocks)} extent={extent} squeezed={squeezed} other={other}")
PY
	) || die "$name: $src: cannot read it as a fio iolog"
	reads='' writes='' read_b='' write_b='' footprint='' extent='' squeezed='' other=''
	eval "$kv"
	[ "$extent" -le "$omax" ] || die "$name: footprint too large for the VM (extent $extent B once squeezed; BT_ORIGIN_MAX)"
	[ "$other" -eq 0 ] || log "$name: $other requests neither reads nor writes left out"
}

# convert NAME FILE: prep from a trace file in any format trace2iolog reads, or a fio iolog
convert() {
	local name=$1 f=$2 src=$2 sum
	[ -f "$f" ] && [ -r "$f" ] || die "trace file '$f': not a readable file"
	if gzip -t "$f" 2> /dev/null; then
		src="$tdir/$name.src"
		gzip -dc "$f" > "$src"
	fi
	if [ "$(head -c 11 "$src" | tr -d '\0')" = "fio version" ]; then
		prep "$name" "$src"
	else
		# offsets as they are (folded onto 1 PiB: none moves), whole 4 KiB blocks
		"$SSC_TOP/scripts/trace2iolog.py" --size 1024T -o "$tdir/$name.conv" "$src" 2> "$tdir/$name.log" ||
			die "$name: trace2iolog cannot convert '$f': $(cat "$tdir/$name.log")"
		prep "$name" "$tdir/$name.conv"
		check_sum "$name"
	fi
	rm -f "$tdir/$name.src" "$tdir/$name.conv"
}

# check_sum NAME: what prep counted is what trace2iolog said it wrote
check_sum() {
	sum=$(sed -nE 's/.*: ([0-9]+) reads \(([0-9]+) B\), ([0-9]+) writes \(([0-9]+) B\).*/\1 \2 \3 \4/p' "$tdir/$1.log")
	[ "$sum" = "$reads $read_b $writes $write_b" ] ||
		die "$1: trace2iolog counted '$sum' (reads B writes B), the iolog holds '$reads $read_b $writes $write_b'"
}

if [ "$mode" != report ]; then
	# the traces, in order: the built-in ones, then the files
	names=() srcs=()
	if [ -n "${BT_TRACES:-}" ] || [ ${#files[@]} -eq 0 ]; then
		for b in $(echo "${BT_TRACES:-${BUILTIN// /,}}" | tr , ' '); do
			[[ " $BUILTIN " == *" $b "* ]] || die "BT_TRACES: no built-in trace '$b' ($BUILTIN; a file: --trace FILE)"
			names+=("$b") srcs+=("")
		done
	fi
	for f in ${files[@]+"${files[@]}"}; do
		n=$(basename "$f")
		n=${n%.gz}
		n=${n//[^A-Za-z0-9._-]/_}
		[[ $n =~ [A-Za-z0-9] ]] || n=trace
		base=$n i=1
		while [[ " ${names[*]} " == *" $n "* ]]; do i=$((i + 1)) n=$base-$i; done
		names+=("$n") srcs+=("$f")
	done
	mkdir -p "$o"
	tdir=$o/traces
	rm -rf "$tdir"
	mkdir -p "$tdir"
	for i in "${!names[@]}"; do
		n=${names[$i]}
		if [ -z "${srcs[$i]}" ]; then
			# the built-in trace as mkinitramfs.sh makes it for the replay suite (BT_REQUESTS:
			# fewer requests, a shorter replay)
			"$SSC_TOP/scripts/gentrace.py" "$n" --blocks 16384 --requests "${BT_REQUESTS:-20000}" |
				"$SSC_TOP/scripts/trace2iolog.py" -f msr --size 128M -o "$tdir/$n.conv" - 2> "$tdir/$n.log" ||
				die "cannot make the $n trace: $(cat "$tdir/$n.log")"
			prep "$n" "$tdir/$n.conv"
			check_sum "$n"
			rm -f "$tdir/$n.conv"
			plan "$n" "${cache:-32M}"
		else
			convert "$n" "${srcs[$i]}"
			plan "$n" "${cache:-10%}"
		fi
	done
	if [ "$mode" = plan ]; then
		cat "$tdir/plan"
		exit 0
	fi
fi

status=0
if [ "$mode" = report ]; then
	# the table and the plot again, from the last run's raw.tap
	[ -s "$o/raw.tap" ] || die "no $o/raw.tap: run make bench-traces first"
	boot=$(grep -o 'BTRACE boot[0-9]*' "$o/raw.tap" | sort -u | wc -l)
else
	"$SSC_TOP/scripts/deps.sh" >&2
	envs=()
	for v in BT_DELAY BT_TARGETS; do
		[ -n "${!v:-}" ] && envs+=(--env "$v=${!v}")
	done
	envs+=(--env "BT_TRACES=$(IFS=,; echo "${names[*]}")")
	# the null_blk devices of the largest trace and the iologs (in the initramfs) on top of 1 GiB
	mem=$(awk -v io="$(du -cm "$tdir"/*.iolog | tail -n1 | cut -f1)" '
		$7 == "mem_mb" && $8 > m { m = $8 } END { m += 1024 + 2 * io; print m < 2048 ? 2048 : m }' "$tdir/plan")
	avail=$(awk '$1 == "MemAvailable:" { print int($2 / 1024) }' /proc/meminfo)
	[ "$mem" -le "$avail" ] || die "the VM would need $mem MiB (the largest trace's devices are in its memory): $avail MiB available"
	# Normally one boot measures everything. A peer that crashes the kernel ends its
	# boot; the next boot skips the pairs already done and the one that crashed, and
	# the table says so.
	cp "$tdir/plan" "$o/raw.tap"
	skip='' boot=0
	while :; do
		boot=$((boot + 1))
		[ "$boot" -le 6 ] || die "too many boots: see $o/vm.*.log"
		rc=0
		SSC_VM_TRACES=$tdir "$SSC_TOP/scripts/vm.sh" --kernel 6.12 --name bench-traces --suites bench-traces \
			--mem "$mem" --timeout "${BENCH_VM_TIMEOUT:-5400}" "${envs[@]}" --env "BT_SKIP=${skip#,}" \
			> "$o/vm.$boot.log" 2>&1 || rc=$?
		tap="$SSC_OUT/results/bench-traces.tap"
		[ -f "$tap" ] || { tail -n 30 "$o/vm.$boot.log" >&2; die "the VM did not start"; }
		sed "s/^# # BTRACE /# # BTRACE boot$boot /" "$tap" >> "$o/raw.tap"
		cp "$SSC_OUT/results/bench-traces.console.log" "$o/console.$boot.log"
		[ "$rc" -eq 0 ] && break
		# the VM ran to the end: its failed checks (failed replays among them) are results
		if grep -q '^ok [0-9]* - bench-traces: VM ran every suite to the end' "$tap"; then
			status=1
			break
		fi
		# setup failures are not crashes: stop
		if grep -E '^not ok [0-9]+ - bench-traces: (modules|[^ ]+: (flash|origin|devices)|[^ ]+ [a-z0-9_]+: removed)' "$tap" >&2; then
			die "the bench could not set up or tear down a target: see $o/vm.$boot.log"
		fi
		# the pair begun last is the one the kernel died in, unless it ended
		pair=$(sed -nE 's/^# # BTRACE ([A-Za-z0-9._-]+) ([a-z0-9_]+) begun .*/\1:\2/p' "$tap" | tail -n1)
		if [ -z "$pair" ] || grep -qF "# # BTRACE ${pair%:*} ${pair#*:} ended " "$tap"; then
			tail -n 30 "$o/vm.$boot.log" >&2
			die "bench-traces VM run failed, not in a target"
		fi
		why=$(grep -aoE -m1 '(list_del corruption|kernel BUG at|BUG: [^,]*|general protection fault|WARNING: CPU: [0-9]+ PID: [0-9]+ at [^ ]+|Kernel panic[^\r]*)' \
			"$o/console.$boot.log" | tr ' ' '_')
		echo "# # BTRACE boot$boot ${pair%:*} ${pair#*:} crashed ${why:-the_VM_died}" >> "$o/raw.tap"
		log "bench-traces: ${pair%:*} on ${pair#*:} crashed the kernel (${why:-?}); booting again without it"
		done_pairs=$(sed -nE 's/^# # BTRACE ([A-Za-z0-9._-]+) ([a-z0-9_]+) ended .*/\1:\2/p' "$tap" | tr '\n' ,)
		skip="$skip,$done_pairs$pair"
	done
fi

# one table row per (trace, target); the best peer is the fastest of dm-cache,
# dm-writecache and bcache on that trace, replay 2. Then a table of the traces.
grep -o 'BTRACE .*' "$o/raw.tap" | awk -v dat="$o/results.dat" -v boots="$boot" '
	{ $1 = $1; b = $2; $2 = ""; $0 = $0
	  if ($3 == "trace") { tv[$2, $4] = $5; if (!($2 in st)) { st[$2] = 1; trs[++ntr] = $2 }; next }
	  v[$2, $3, "boot"] = b; v[$2, $3, $4] = $5
	  if (!($2 in st)) { st[$2] = 1; trs[++ntr] = $2 }
	  if (!($3 in sg)) { sg[$3] = 1; tgs[++ntg] = $3 } }
	function g(tr, t, key) { return ((tr, t, key) in v) ? v[tr, t, key] : "-" }
	function f(x, p) { return x == "-" ? "-" : sprintf(p, x) }
	function pc(x) { return x == "-" ? "-" : sprintf("%.1f %%", 100 * x) }
	function sp(x) { gsub("_", " ", x); return x }
	# a size in bytes: MiB when whole, else KiB (and MiB to a tenth)
	function sz(x) {
		if (x == "" || x == "-") return "-"
		if (x % 1048576 == 0) return sprintf("%.0f MiB", x / 1048576)
		if (x % 1024 == 0) return sprintf("%.0f KiB", x / 1024) (x >= 1048576 ? sprintf(" (%.1f MiB)", x / 1048576) : "")
		return sprintf("%.0f B", x)
	}
	function ti(tr, key) { return ((tr, key) in tv) ? tv[tr, key] : "" }
	BEGIN { peer["dmcache"] = peer["writecache"] = peer["bcache"] = 1 }
	END {
		print "| trace | target | reads served by the cache (bytes) | read hits, own counter: cold / warm | KiB/s (TCG) | vs best peer | flash B written per user B | flash B written per user B written | origin B read per user B read | origin B written per user B written | cached 4 KiB blocks | RAM B per cached 4 KiB (MemFree) | (self-reported) | data slots | slot |"
		print "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
		printf "trace" > dat
		for (j = 1; j <= ntg; j++) printf " %s_speed %s_hit %s_flash", tgs[j], tgs[j], tgs[j] > dat
		printf "\n" > dat
		for (i = 1; i <= ntr; i++) {
			tr = trs[i]; best = 0
			for (j = 1; j <= ntg; j++)
				if (tgs[j] in peer && g(tr, tgs[j], "failed") == "-" && g(tr, tgs[j], "kib_per_s") != "-" &&
				    g(tr, tgs[j], "kib_per_s") + 0 > best)
					best = g(tr, tgs[j], "kib_per_s")
			printf "%s", tr > dat
			for (j = 1; j <= ntg; j++) {
				t = tgs[j]; s = g(tr, t, "kib_per_s")
				if (g(tr, t, "crashed") != "-" || g(tr, t, "failed") != "-") {
					if (g(tr, t, "crashed") != "-")
						printf "| %s | %s | **crashed the kernel** (%s; %s) |", tr, t, sp(g(tr, t, "crashed")), g(tr, t, "boot")
					else {
						c = g(tr, t, "failed"); k = c; sub(/:.*/, "", k); sub(/^[^:]*:/, "", c)
						printf "| %s | %s | **failed %s** (%s) |", tr, t, k, sp(c)
					}
					print " | | | | | | | | | | | |"
					printf " NaN NaN NaN" > dat
					continue
				}
				r = (s == "-" || best == 0) ? "-" : sprintf("%.2f", s / best)
				printf "| %s | %s | %s | %s / %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", tr, t,
					pc(g(tr, t, "byte_hit")), pc(g(tr, t, "cold_read_hit")), pc(g(tr, t, "read_hit")), f(s, "%.0f"), r,
					f(g(tr, t, "flash_per_user"), "%.3f"), f(g(tr, t, "flash_per_user_write"), "%.3f"),
					f(g(tr, t, "origin_read_per_user_read"), "%.3f"),
					f(g(tr, t, "origin_write_per_user_write"), "%.3f"),
					g(tr, t, "cached_4k"), f(g(tr, t, "ram_b_per_4k"), "%.1f"),
					f(g(tr, t, "ssc_ram_b_per_4k"), "%.1f"), g(tr, t, "slots"), sp(g(tr, t, "slot"))
				printf " %s %s %s", r == "-" ? "NaN" : r,
					g(tr, t, "byte_hit") == "-" ? "NaN" : g(tr, t, "byte_hit"),
					g(tr, t, "flash_per_user") == "-" ? "NaN" : g(tr, t, "flash_per_user") > dat
			}
			printf "\n" > dat
		}
		if (boots > 1) {
			printf "\n%d boots (a target crashed the kernel). Measured in a later boot:", boots
			for (i = 1; i <= ntr; i++)
				for (j = 1; j <= ntg; j++)
					if (g(trs[i], tgs[j], "boot") != "boot1" && g(trs[i], tgs[j], "crashed") == "-" &&
					    g(trs[i], tgs[j], "failed") == "-" && g(trs[i], tgs[j], "boot") != "-")
						printf " %s/%s (%s)", trs[i], tgs[j], g(trs[i], tgs[j], "boot")
			printf "\n"
		}
		n = 0
		for (i = 1; i <= ntr; i++) n += ti(trs[i], "cache_b") != ""
		if (!n) exit
		print ""
		print "| trace | requests: reads / writes | MiB: read / written | footprint: 4 KiB blocks (MiB) | extent | origin | cache |"
		print "|---|---|---|---|---|---|---|"
		for (i = 1; i <= ntr; i++) {
			tr = trs[i]
			if (ti(tr, "cache_b") == "") continue
			split(ti(tr, "requests"), rq, "/"); split(ti(tr, "user_b"), ub, "/")
			e = sz(ti(tr, "extent_b"))
			if (ti(tr, "squeezed_from_b") + 0 > 0) e = e " (squeezed from " sz(ti(tr, "squeezed_from_b")) ")"
			og = sz(ti(tr, "origin_b"))
			if (ti(tr, "origin_b") + 0 < ti(tr, "extent_b") + 0) og = og " **smaller than the extent**"
			printf "| %s | %s / %s | %.1f / %.1f | %s (%.1f) | %s | %s | %s: %s |\n", tr, rq[1], rq[2], ub[1] / 1048576,
				ub[2] / 1048576, ti(tr, "footprint_4k"), ti(tr, "footprint_4k") / 256, e, og, sz(ti(tr, "cache_b")),
				sp(ti(tr, "cache_rule"))
		}
	}' | tee "$o/results.md"

if ! command -v gnuplot > /dev/null; then
	echo "no gnuplot: no plot (apt-get install gnuplot-nox)" >&2
elif ! awk 'NR > 1 { for (i = 2; i <= NF; i += 3) if ($i != "NaN") n++ } END { exit !n }' "$o/results.dat"; then
	echo "no peer measured: no plot" >&2
else
	ntg=$(awk 'NR == 1 { print (NF - 1) / 3 }' "$o/results.dat")
	gnuplot <<-EOF
		set terminal pngcairo size 1500,480 font ",10" noenhanced
		set output "$o/results.png"
		set datafile missing "NaN"
		set style data histograms
		set style histogram clustered gap 1
		set style fill solid 0.85 border -1
		set key top right vertical font ",9"
		set key autotitle columnhead
		set grid ytics
		set multiplot layout 1,3 title "make bench-traces: replay 2 of each trace (cache sizes in results.md; ratios only: TCG timing is emulated)"
		set title "throughput / best peer (dm-cache, dm-writecache, bcache)"
		set yrange [0:*]
		plot for [i=1:$ntg] "$o/results.dat" using (column(3*i-1)):xtic(1) title word("$(head -n1 "$o/results.dat" | tr -s ' ' '\n' | sed -n 's/_speed$//p' | tr '\n' ' ')", i)
		set title "reads served by the cache (bytes: 1 - origin reads / user reads)"
		set yrange [0:1]
		plot for [i=1:$ntg] "$o/results.dat" using (column(3*i)):xtic(1) notitle
		set title "cache-device bytes written per user byte"
		set yrange [0:*]
		plot for [i=1:$ntg] "$o/results.dat" using (column(3*i+1)):xtic(1) notitle
		unset multiplot
	EOF
	echo "plot: $o/results.png"
fi
grep -E '^# bench-traces: .*(passed|failed)' "$o/raw.tap" || true
if [ "$status" -ne 0 ]; then
	echo "bench-traces: failed checks (a failed row is never a result):" >&2
	grep -E '^not ok ' "$SSC_OUT/results/bench-traces.tap" >&2 || true
fi
exit "$status"
