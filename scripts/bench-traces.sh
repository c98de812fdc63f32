#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench-traces: boot one VM (Debian 6.12) that replays each synthetic trace
# against dm-ssc (writethrough, writeback), dm-cache (smq), dm-writecache and
# bcache on the same devices (tests/vm/suites/bench-traces.sh has the method),
# then print the table and draw the plot.
# Knobs (environment): BT_CACHE_MB cache device size (32), BT_DELAY origin
# delay in ms (1), BT_TARGETS and BT_TRACES (comma lists).
# Output in out/bench-traces/: raw.tap, results.md (the table), results.dat
# and results.png (the plot, with gnuplot). --report makes the table and the
# plot again from raw.tap without running anything.
# Timing under TCG is emulated: only ratios between targets of the same run mean something.
set -euo pipefail
. "$(dirname "$0")/common.sh"

o="$SSC_OUT/bench-traces"
mkdir -p "$o"
envs=()
for v in BT_CACHE_MB BT_DELAY BT_TARGETS BT_TRACES; do
	[ -n "${!v:-}" ] && envs+=(--env "$v=${!v}")
done
if [ "${1:-}" = --report ]; then
	# the table and the plot again, from the last run's raw.tap
	[ -s "$o/raw.tap" ] || die "no $o/raw.tap: run make bench-traces first"
	boot=$(grep -o 'BTRACE boot[0-9]*' "$o/raw.tap" | sort -u | wc -l)
else
	"$SSC_TOP/scripts/deps.sh" >&2
	# Normally one boot measures everything. A peer that crashes the kernel ends
	# its boot; the next boot skips the pairs already measured and the one that
	# crashed, and the table says so.
	: > "$o/raw.tap"
	skip='' boot=0
	while :; do
		boot=$((boot + 1))
		[ "$boot" -le 6 ] || die "too many boots: see $o/vm.*.log"
		rc=0
		"$SSC_TOP/scripts/vm.sh" --kernel 6.12 --name bench-traces --suites bench-traces --mem 2048 \
			--timeout "${BENCH_VM_TIMEOUT:-5400}" ${envs[@]+"${envs[@]}"} --env "BT_SKIP=${skip#,}" > "$o/vm.$boot.log" 2>&1 || rc=$?
		tap="$SSC_OUT/results/bench-traces.tap"
		[ -f "$tap" ] || { tail -n 30 "$o/vm.$boot.log" >&2; die "the VM did not start"; }
		sed "s/^# # BTRACE /# # BTRACE boot$boot /" "$tap" >> "$o/raw.tap"
		cp "$SSC_OUT/results/bench-traces.console.log" "$o/console.$boot.log"
		[ "$rc" -eq 0 ] && break
		# setup failures are not crashes: stop
		if grep -E '^not ok .*: (modules|flash|origin|null_blk|.*: removed)' "$tap" >&2; then
			die "the bench could not set up or tear down a target: see $o/vm.$boot.log"
		fi
		# the pair whose create was the last check is the one the kernel died in
		pair=$(sed -nE 's/^ok [0-9]+ - bench-traces: ([a-z-]+) ([a-z_]+): create$/\1:\2/p' "$tap" | tail -n1)
		if [ -z "$pair" ] || grep -qE "^# # BTRACE ${pair%:*} ${pair#*:} ram_b_per_4k" "$tap"; then
			tail -n 30 "$o/vm.$boot.log" >&2
			die "bench-traces VM run failed, not in a target"
		fi
		why=$(grep -aoE -m1 '(list_del corruption|kernel BUG at|BUG: [^,]*|general protection fault|WARNING: CPU: [0-9]+ PID: [0-9]+ at [^ ]+|Kernel panic[^\r]*)' \
			"$o/console.$boot.log" | tr ' ' '_')
		echo "# # BTRACE boot$boot ${pair%:*} ${pair#*:} crashed ${why:-the_VM_died}" >> "$o/raw.tap"
		log "bench-traces: ${pair%:*} on ${pair#*:} crashed the kernel (${why:-?}); booting again without it"
		done_pairs=$(sed -nE 's/^# # BTRACE ([a-z-]+) ([a-z_]+) ram_b_per_4k .*/\1:\2/p' "$tap" | tr '\n' ,)
		skip="$skip,$done_pairs$pair"
	done
fi

# one table row per (trace, target); the best peer is the fastest of dm-cache,
# dm-writecache and bcache on that trace, replay 2
grep -o 'BTRACE .*' "$o/raw.tap" | awk -v dat="$o/results.dat" -v boots="$boot" '
	{ $1 = $1; b = $2; $2 = ""; $0 = $0; v[$2, $3, "boot"] = b; v[$2, $3, $4] = $5
	  if (!($2 in st)) { st[$2] = 1; trs[++ntr] = $2 }
	  if (!($3 in sg)) { sg[$3] = 1; tgs[++ntg] = $3 } }
	function g(tr, t, key) { return ((tr, t, key) in v) ? v[tr, t, key] : "-" }
	function f(x, p) { return x == "-" ? "-" : sprintf(p, x) }
	function pc(x) { return x == "-" ? "-" : sprintf("%.1f %%", 100 * x) }
	BEGIN { peer["dmcache"] = peer["writecache"] = peer["bcache"] = 1 }
	END {
		print "| trace | target | reads served by the cache (bytes) | read hits, own counter: cold / warm | KiB/s (TCG) | vs best peer | flash B written per user B | origin B read per user B read | origin B written per user B written | cached 4 KiB blocks | RAM B per cached 4 KiB (MemFree) | (self-reported) |"
		print "|---|---|---|---|---|---|---|---|---|---|---|---|"
		printf "trace" > dat
		for (j = 1; j <= ntg; j++) printf " %s_speed %s_hit %s_flash", tgs[j], tgs[j], tgs[j] > dat
		printf "\n" > dat
		for (i = 1; i <= ntr; i++) {
			tr = trs[i]; best = 0
			for (j = 1; j <= ntg; j++)
				if (tgs[j] in peer && g(tr, tgs[j], "kib_per_s") != "-" && g(tr, tgs[j], "kib_per_s") > best)
					best = g(tr, tgs[j], "kib_per_s")
			printf "%s", tr > dat
			for (j = 1; j <= ntg; j++) {
				t = tgs[j]; s = g(tr, t, "kib_per_s")
				if (g(tr, t, "crashed") != "-") {
					c = g(tr, t, "crashed"); gsub("_", " ", c)
					printf "| %s | %s | **crashed the kernel** (%s; %s) | | | | | | | | | |\n", tr, t, c, g(tr, t, "boot")
					printf " NaN NaN NaN" > dat
					continue
				}
				r = (s == "-" || best == 0) ? "-" : sprintf("%.2f", s / best)
				printf "| %s | %s | %s | %s / %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", tr, t,
					pc(g(tr, t, "byte_hit")), pc(g(tr, t, "cold_read_hit")), pc(g(tr, t, "read_hit")), f(s, "%.0f"), r,
					f(g(tr, t, "flash_per_user"), "%.3f"),
					f(g(tr, t, "origin_read_per_user_read"), "%.3f"),
					f(g(tr, t, "origin_write_per_user_write"), "%.3f"),
					g(tr, t, "cached_4k"), f(g(tr, t, "ram_b_per_4k"), "%.1f"),
					f(g(tr, t, "ssc_ram_b_per_4k"), "%.1f")
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
					if (g(trs[i], tgs[j], "boot") != "boot1" && g(trs[i], tgs[j], "crashed") == "-")
						printf " %s/%s (%s)", trs[i], tgs[j], g(trs[i], tgs[j], "boot")
			printf "\n"
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
		set multiplot layout 1,3 title "make bench-traces: replay 2 of each trace on a 32 MiB cache (ratios only: TCG timing is emulated)"
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
