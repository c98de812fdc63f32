#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench: boot one VM (Debian 6.12) that measures raw flash, dm-ssc in
# writethrough and writeback, dm-cache (smq, writeback) and dm-writecache on
# the same devices (tests/vm/suites/bench.sh has the method), and print the
# table. Knobs (environment): BENCH_WS_MB (256), BENCH_RT seconds per run (5),
# BENCH_DELAY origin delay in ms (1), BENCH_TARGETS (comma list), BENCH_ROUNDS
# rounds of each read and write measurement, their median taken (3), BENCH_WARM_IDLE
# seconds idle between warm-up read passes (3),
# BENCH_RECOVERY_MB the cache sizes of the recovery measurement (256,1024),
# BENCH_NBD_TARGETS the targets measured again over an NBD origin (linear,ssc_wt,ssc_wb,
# dmcache_wb,writecache; empty: none),
# BENCH_PROFILE=1 a perf profile of the read, write and zipf phases of each target.
# Output: out/bench/bench.tap (raw) and out/bench/results.md (the table), and with
# BENCH_PROFILE out/bench/profile.md.
# Timing under TCG is emulated: compare ratios from the same run only.
set -euo pipefail
. "$(dirname "$0")/common.sh"

envs=()
for v in BENCH_WS_MB BENCH_RT BENCH_DELAY BENCH_TARGETS BENCH_RECOVERY_MB BENCH_PROFILE BENCH_ROUNDS \
	BENCH_WARM_IDLE; do
	[ -n "${!v:-}" ] && envs+=(--env "$v=${!v}")
done
# set and empty: no NBD rows (the kernel command line cannot carry an empty value: "-")
if [ -n "${BENCH_NBD_TARGETS+set}" ]; then envs+=(--env "BENCH_NBD_TARGETS=${BENCH_NBD_TARGETS:--}"); fi
# BENCH_PROFILE=1: perf goes into the guest, and each phase runs once more under it
if [ "${BENCH_PROFILE:-0}" = 1 ]; then export SSC_VM_BINS="${SSC_VM_BINS:-} perf"; fi
mkdir -p "$SSC_OUT/bench"
"$SSC_TOP/scripts/vm.sh" --kernel 6.12 --name bench --suites bench --mem 4096 --timeout "${BENCH_VM_TIMEOUT:-3600}" \
	${envs[@]+"${envs[@]}"} > "$SSC_OUT/bench/bench.log" 2>&1 ||
	{ tail -n 30 "$SSC_OUT/bench/bench.log" >&2; die "bench VM run failed"; }
cp "$SSC_OUT/results/bench.tap" "$SSC_OUT/bench/bench.tap"
grep -o 'BENCH .*' "$SSC_OUT/bench/bench.tap" | awk '
	{
		t = $2; k = $3; v = $4; val[t, k] = v
		if (t ~ /_full$/) {
			if (!(t in fseen)) { fseen[t] = 1; full[++nf] = t }
			if (k ~ /^ram_own_per_cached_/ && !((k) in fsz)) {
				fsz[k] = 1; fsize[++nfs] = substr(k, 20)
			}
		} else if (t ~ /_recovery$/) {
			if (k ~ /^ms_/ && !((k) in rseen)) { rseen[k] = 1; rsize[++nr] = substr(k, 4) }
		} else if (t ~ /_nbd$/) {
			if (!(t in nseen)) { nseen[t] = 1; nbd[++nn] = t }
		} else if (!(t in seen)) { seen[t] = 1; order[++n] = t }
	}
	function g(t, k) { return ((t, k) in val) ? val[t, k] : "-" }
	function r(a, b) { return (a == "-" || b == "-" || b == 0) ? "-" : sprintf("%.2f", a / b) }
	END {
		print "| target | block | cached/total | read hits vs raw flash | cached writes vs raw flash | flash B per user B: cached / uncached / fsync each (cached) / fsync each (new blocks) | zipf r/w IOPS | zipf vs ssc_wb | RAM B per cached block (MemFree) | RAM B per cached block (self-reported) |"
		print "|---|---|---|---|---|---|---|---|---|---|"
		for (i = 1; i <= n; i++) {
			t = order[i]
			printf "| %s | %s | %s | %s | %s | %s / %s / %s / %s | %s | %s | %s | %s |\n", t,
				g(t, "block_bytes"), g(t, "cached"), g(t, "read_ratio"), g(t, "write_ratio"),
				g(t, "flash_per_user_cached"), g(t, "flash_per_user_uncached"),
				g(t, "flash_per_user_fsync"), g(t, "flash_per_user_fsync_new"),
				g(t, "zipf_iops"), r(g(t, "zipf_iops"), g("ssc_wb", "zipf_iops")),
				g(t, "ram_b_per_block"), g(t, "ssc_ram_bytes_per_block")
		}
		print ""
		print "| target | origin I/Os per 1,000 I/Os: read hits / cached writes / zipf |"
		print "|---|---|"
		for (i = 1; i <= n; i++)
			printf "| %s | %s / %s / %s |\n", order[i], g(order[i], "read_origin_per_kio"),
				g(order[i], "write_origin_per_kio"), g(order[i], "zipf_origin_per_kio")
		print ""
		split("dmcache_wb writecache", peers, " ")
		for (j = 1; j <= 2; j++) {
			p = peers[j]
			printf "ssc_wb / %s: read hits %s, cached writes %s, zipf %s; ssc_wt / %s: read hits %s\n", p,
				r(g("ssc_wb", "read_ratio"), g(p, "read_ratio")),
				r(g("ssc_wb", "write_ratio"), g(p, "write_ratio")),
				r(g("ssc_wb", "zipf_iops"), g(p, "zipf_iops")), p,
				r(g("ssc_wt", "read_ratio"), g(p, "read_ratio"))
		}
		if (nn) {
			b = "linear_nbd"
			print ""
			printf "| target, origin over NBD (server delay %s ms a request) | cached/total | read hits IOPS | vs dm-linear over NBD | zipf r/w IOPS | vs dm-linear over NBD |\n", g(b, "delay_ms")
			print "|---|---|---|---|---|---|"
			for (i = 1; i <= nn; i++) {
				t = nbd[i]
				printf "| %s/nbd | %s | %s | %s | %s | %s |\n", substr(t, 1, length(t) - 4), g(t, "cached"),
					g(t, "read_iops"), r(g(t, "read_iops"), g(b, "read_iops")),
					g(t, "zipf_iops"), r(g(t, "zipf_iops"), g(b, "zipf_iops"))
			}
		}
		if (nf) {
			print ""
			print "| RAM on a full cache | cache MiB | cached / slots | dirty / cached | B per cached block (self-reported) |"
			print "|---|---|---|---|---|"
			for (i = 1; i <= nf; i++)
				for (j = 1; j <= nfs; j++) {
					m = fsize[j]
					printf "| %s | %s | %s | %s | %s |\n", full[i], m,
						g(full[i], "cached_of_slots_" m),
						g(full[i], "dirty_of_cached_" m),
						g(full[i], "ram_own_per_cached_" m)
				}
		}
		if (!nr)
			exit
		print ""
		print "| recovery after a crash, cache MiB | blocks written (ssc) | ssc_wb ms | log records replayed | dm-writecache ms | ssc / writecache |"
		print "|---|---|---|---|---|---|"
		s = "ssc_wb_recovery"; w = "writecache_recovery"
		for (i = 1; i <= nr; i++) {
			m = rsize[i]
			printf "| %s | %s | %s | %s | %s | %s |\n", m, g(s, "blocks_" m), g(s, "ms_" m),
				g(s, "replayed_" m), g(w, "ms_" m), r(g(s, "ms_" m), g(w, "ms_" m))
		}
		if (nr > 1)
			printf "\nrecovery growth from %s to %s MiB: ssc_wb %s x, dm-writecache %s x\n",
				rsize[1], rsize[nr], r(g(s, "ms_" rsize[nr]), g(s, "ms_" rsize[1])),
				r(g(w, "ms_" rsize[nr]), g(w, "ms_" rsize[1]))
	}' | tee "$SSC_OUT/bench/results.md"
if [ "${BENCH_PROFILE:-0}" = 1 ]; then
	# per phase: the CPU samples (both CPUs, idle loop left out) per 1,000 I/Os of each
	# target, and its top symbols in the same unit: the cost of an I/O and where it goes
	{ grep -o 'PROFILE .*' "$SSC_OUT/bench/bench.tap" || true; } | awk '
		{
			t = $2; ph = $3; k = $4
			if (!((ph) in pseen)) { pseen[ph] = 1; phs[++np] = ph }
			if (!((ph, t) in tseen)) { tseen[ph, t] = 1; ts[ph, ++nt[ph]] = t }
			if (k == "sym") {
				sym = $7; for (i = 8; i <= NF; i++) sym = sym " " $i
				syms[ph, t, ++ns[ph, t]] = $5 " " $6 " " sym
			} else val[ph, t, k] = $5
		}
		function busy(ph, t) { return val[ph, t, "samples"] - val[ph, t, "idle"] - val[ph, t, "emu"] }
		function pk(n, ph, t) { return val[ph, t, "ios"] > 0 ? sprintf("%.1f", n * 1000 / val[ph, t, "ios"]) : "-" }
		END {
			for (i = 1; i <= np; i++) {
				ph = phs[i]
				printf "\n### %s\n\n| target | I/Os | CPU samples per 1,000 I/Os (idle and the origin emulation left out) | of them in dm-ssc / dm-writecache functions | origin emulation (dm-delay) | idle share |\n|---|---|---|---|---|---|\n", ph
				for (j = 1; j <= nt[ph]; j++) {
					t = ts[ph, j]
					printf "| %s | %s | %s | %s / %s | %s | %.2f |\n", t, val[ph, t, "ios"], pk(busy(ph, t), ph, t),
						pk(val[ph, t, "own_ssc"], ph, t), pk(val[ph, t, "own_wc"], ph, t),
						pk(val[ph, t, "emu"], ph, t),
						val[ph, t, "samples"] ? val[ph, t, "idle"] / val[ph, t, "samples"] : 0
				}
				for (j = 1; j <= nt[ph]; j++) {
					t = ts[ph, j]
					printf "\n%s, %s: samples per 1,000 I/Os by symbol (0.5 %% of the samples or more)\n\n", ph, t
					for (m = 1; m <= ns[ph, t]; m++) {
						split(syms[ph, t, m], a, " ")
						rest = syms[ph, t, m]; sub(/^[^ ]+ /, "", rest)
						printf "    %7s  %s\n", pk(a[1], ph, t), rest
					}
				}
			}
		}' | tee "$SSC_OUT/bench/profile.md"
	[ -s "$SSC_OUT/bench/profile.md" ] ||
		log "BENCH_PROFILE=1 but no profile came back: see the # lines of $SSC_OUT/bench/bench.tap"
fi
grep -E '^# bench: .*(passed|failed)' "$SSC_OUT/bench/bench.tap" || true
