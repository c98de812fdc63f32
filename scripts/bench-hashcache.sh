#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench-hashcache: boot Debian 6.12 once, run tests/vm/suites/hashcache-bench.sh
# (every policy at 0, 40 and 80 % lookup success) and print the table that
# Documentation/hashcache.rst carries. Knobs: HB_OBJECTS (24000), HB_LOOKUPS (40000).
# Output in out/bench-hashcache/: raw.tap and results.md. --report remakes the
# table from raw.tap. Timing under TCG is emulated: operations per second are
# given as ratios to Basic's in the same run, next to the counts that do not
# depend on time (device I/Os per operation, RAM bits per slot).
set -euo pipefail
. "$(dirname "$0")/common.sh"

o="$SSC_OUT/bench-hashcache"
mkdir -p "$o"
if [ "${1:-}" != --report ]; then
	"$SSC_TOP/scripts/deps.sh" >&2
	envs=()
	for v in HB_OBJECTS HB_LOOKUPS; do
		[ -n "${!v:-}" ] && envs+=(--env "$v=${!v}")
	done
	"$SSC_TOP/scripts/vm.sh" --kernel 6.12 --name bench-hashcache --suites hashcache-bench \
		--timeout "${BENCH_VM_TIMEOUT:-3600}" ${envs[@]+"${envs[@]}"} > "$o/vm.log" 2>&1 ||
		{ tail -n 30 "$o/vm.log" >&2; die "the bench run failed: see $o/vm.log"; }
	cp "$SSC_OUT/results/bench-hashcache.tap" "$o/raw.tap"
fi
[ -s "$o/raw.tap" ] || die "no $o/raw.tap: run make bench-hashcache first"
python3 - "$o/raw.tap" > "$o/results.md" <<'PY'
import json, sys
runs = {}
for line in open(sys.argv[1]):
    if "HCBENCH " not in line:
        continue
    _, rest = line.split("HCBENCH ", 1)
    pol, pct, js = rest.split(" ", 2)
    runs[(pol, int(pct))] = json.loads(js)
pols = [p for p in ("basic", "set", "setmem", "setmemlru", "log", "loglru", "log+prefetch",
                    "loglru+prefetch") if (p, 0) in runs]
if not pols:
    sys.exit("no HCBENCH lines")
# Table 2.3 of the thesis: bits per object, seeks per read (hit), write, miss
thesis = {"basic": ("0", "1", "1", "1"), "set": ("0", "1", "1", "1"),
          "setmem": ("11", "1", "1", "0"), "setmemlru": ("<11", "1", "1", "<1"),
          "log": ("47", "1", "~0", "0"), "loglru": ("15-47", "1+e", "~0", "0"),
          "log+prefetch": ("55", "<1", "~0", "0"), "loglru+prefetch": ("23-55", "<1", "~0", "0")}
base = runs[(pols[0], 0)]
print("| policy | RAM bits/slot (thesis) | I/Os per hit (thesis) | per insert (thesis) "
      "| per miss (thesis) | lookups/s vs %s at 0 / 40 / 80 %% hits | inserts/s vs %s |"
      % (pols[0], pols[0]))
print("|---|---|---|---|---|---|---|")
for p in pols:
    r40 = runs.get((p, 40), runs[(p, 0)])
    t = thesis[p]
    ratios = " / ".join("%.2f" % (runs[(p, h)]["lookups_per_s"] / runs[(pols[0], h)]["lookups_per_s"])
                        for h in (0, 40, 80) if (p, h) in runs and (pols[0], h) in runs)
    ins = sum(runs[(p, h)]["inserts_per_s"] for h in (0, 40, 80) if (p, h) in runs) / \
          sum(runs[(pols[0], h)]["inserts_per_s"] for h in (0, 40, 80) if (p, h) in runs)
    print("| %s | %.1f (%s) | %.3f (%s) | %.3f (%s) | %.3f (%s) | %s | %.2f |" % (
        p, r40["ram_bits_per_slot"], t[0], r40["ios_per_hit"], t[1],
        r40["ios_per_insert"], t[2], runs[(p, 0)]["ios_per_miss"], t[3], ratios, ins))
print()
print("%d inserts and %d lookups a run; I/Os per hit at 40 %% hits, per miss at 0 %%; "
      "Basic's rates: %.0f lookups/s at 0 %% hits, %.0f inserts/s (emulated time)."
      % (base["objects"], base["lookups"], base["lookups_per_s"], base["inserts_per_s"]))
PY
cat "$o/results.md"
