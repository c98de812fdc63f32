#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench-locks: boot the debug kernel (lock statistics) once and count the
# lock contentions of read hits with two jobs, dm-ssc (writethrough) against
# dm-writecache (tests/vm/suites/bench-locks.sh has the method). Knobs:
# BENCH_LOCK_MB working set (64), BENCH_LOCK_RT seconds of reads (20),
# BENCH_LOCK_TARGETS (ssc_wt,writecache). Output in out/bench-locks/: raw.tap
# and results.md.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

o="$SSC_OUT/bench-locks"
mkdir -p "$o"
envs=()
for v in BENCH_LOCK_MB BENCH_LOCK_RT BENCH_LOCK_TARGETS; do
	[ -n "${!v:-}" ] && envs+=(--env "$v=${!v}")
done
"$SSC_TOP/scripts/vm.sh" --kernel debug --name bench-locks --suites bench-locks \
	--timeout "${BENCH_VM_TIMEOUT:-1800}" ${envs[@]+"${envs[@]}"} > "$o/vm.log" 2>&1 ||
	{ tail -n 30 "$o/vm.log" >&2; die "the bench run failed: see $o/vm.log"; }
cp "$SSC_OUT/results/bench-locks.tap" "$o/raw.tap"
grep -o 'BENCH .*' "$o/raw.tap" | awk '
	{ t = $2; val[t, $3] = $4; if (!(t in seen)) { seen[t] = 1; order[++n] = t } }
	function g(t, k) { return ((t, k) in val) ? val[t, k] : "-" }
	function pm(a, b) { return (a == "-" || b == "-" || b == 0) ? "-" : sprintf("%.0f", a * 1e6 / b) }
	END {
		print "| target | read hits | contentions, its own locks | per million hits | its acquisitions per hit | bounced from another CPU, per million hits | contentions, all locks, per million hits |"
		print "|---|---|---|---|---|---|---|"
		for (i = 1; i <= n; i++) {
			t = order[i]
			printf "| %s | %s | %s | %s | %s | %s | %s |\n", t, g(t, "hits"), g(t, "contentions"),
				pm(g(t, "contentions"), g(t, "hits")),
				(g(t, "hits") > 0) ? sprintf("%.2f", g(t, "acquisitions") / g(t, "hits")) : "-",
				pm(g(t, "bounces"), g(t, "hits")), pm(g(t, "contentions_all"), g(t, "hits"))
		}
	}' | tee "$o/results.md"
grep -E '^# bench-locks: .*(passed|failed)' "$o/raw.tap" || true
