#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench-flashvm: boot the patched kernel without sanitizers (FB_KERNEL=bench, built
# once by build-debug-kernel.sh --bench; FB_KERNEL=debug for the debug kernel) once, run
# tests/vm/suites/flashvm-bench.sh (stock swap, stock with zswap, each flashvm mechanism
# alone and all of them, on the same workloads and flash-like device) and print the
# tables Documentation/flashvm.rst carries.
# Knobs: FB_MB (32), FB_LIMIT (10M), FB_WORKLOADS (seq,stride,random,hotrw,kv),
# FB_CONFIGS (stock,zswap,prefetch,sampling,clustering,preclean,all), FB_ROUNDS of
# each discard mode (3), FB_LAT_US (100: every request of the device takes this long),
# FB_WRITE_MS (0; > 0: dm-delay adds this to every write and discard, unmerged) and
# FB_ZSWAP_MAX (half of FB_LIMIT: the cgroup's memory.zswap.max). Output in
# out/bench-flashvm/: raw.tap and results.md; --report remakes the tables from raw.tap.
# Timing under TCG is emulated, so run time is a ratio to stock in the same run, next
# to counts that do not depend on time: major faults, pages read and written, I/O
# requests and their size, discard requests and bytes.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

o="$SSC_OUT/bench-flashvm"
mkdir -p "$o"
if [ "${1:-}" != --report ]; then
	"$SSC_TOP/scripts/deps.sh" >&2
	envs=()
	for v in FB_MB FB_LIMIT FB_WORKLOADS FB_CONFIGS FB_ROUNDS FB_LAT_US FB_WRITE_MS FB_ZSWAP_MAX; do
		[ -n "${!v:-}" ] && envs+=(--env "$v=${!v}")
	done
	"$SSC_TOP/scripts/vm.sh" --kernel "${FB_KERNEL:-bench}" --name bench-flashvm --suites flashvm-bench \
		--timeout "${BENCH_VM_TIMEOUT:-3600}" ${envs[@]+"${envs[@]}"} > "$o/vm.log" 2>&1 ||
		{ tail -n 30 "$o/vm.log" >&2; die "the bench run failed: see $o/vm.log"; }
	cp "$SSC_OUT/results/bench-flashvm.tap" "$o/raw.tap"
fi
[ -s "$o/raw.tap" ] || die "no $o/raw.tap: run make bench-flashvm first"
python3 - "$o/raw.tap" > "$o/results.md" <<'PY'
import sys
runs, device, probe = {}, "", {}
for line in open(sys.argv[1]):
    if "FVMPROBE " in line:
        f = line.split("FVMPROBE ", 1)[1].split()
        probe[f[0]] = {k: float(v) for k, v in (x.split("=", 1) for x in f[1:] if "=" in x)}
        continue
    if "FVMBENCH-DEVICE " in line:
        device = line.split("FVMBENCH-DEVICE ", 1)[1].strip()
        continue
    if "FVMBENCH " not in line:
        continue
    f = line.split("FVMBENCH ", 1)[1].split()
    runs[(f[0], f[1])] = {k: float(v) for k, v in (x.split("=", 1) for x in f[2:])}
if not any(cfg == "stock" for cfg, _ in runs):
    sys.exit("no FVMBENCH lines of stock swap")

def pct(v, base):
    return "%+.0f %%" % (100.0 * (v - base) / base) if base else "-"

print("Each mechanism against stock (%s; thesis: prefetch -15 to -35 %% faults; "
      "sampling -14 %% writes at no slowdown)\n" % device)
print("| config | workload | major faults | vs stock | pages written | vs stock "
      "| write requests | KiB a write | discard requests | run time vs stock |")
print("|---|---|---|---|---|---|---|---|---|---|")
for cfg in ("stock", "zswap", "prefetch", "sampling", "clustering", "preclean", "all"):
    for wl in ("seq", "stride", "random", "hotrw", "kv"):
        r, s = runs.get((cfg, wl)), runs.get(("stock", wl))
        if not r or not s:
            continue
        kib = r["write_sectors"] / 2.0 / r["write_ios"] if r["write_ios"] else 0
        print("| %s | %s | %d | %s | %d | %s | %d | %.0f | %d | %.2f |" % (
            cfg, wl, r["majflt"], pct(r["majflt"], s["majflt"]), r["pswpout"],
            pct(r["pswpout"], s["pswpout"]), r["write_ios"], kib, r["discard_ios"],
            r["wall_cs"] / s["wall_cs"]))

print("\nDiscard, three processes in a row, each freeing its swap at exit (thesis: "
      "per-page discard 12x slower than none, merged 100 MB batches 15 % slower)\n")
print("| discard | requests | MiB discarded | at 55 ms a request (s) | run time vs none |")
print("|---|---|---|---|---|")
def tot(cfg, k):
    return sum(v[k] for (c, w), v in runs.items() if c == cfg and w.startswith("round"))
base = tot("nodiscard", "wall_cs")
for cfg, name in (("nodiscard", "none"), ("pages", "stock discard=pages"),
                  ("merged", "flashvm merged"), ("dummy", "flashvm merged + dummy")):
    if (cfg, "round1") not in runs:
        continue
    n = tot(cfg, "discard_ios")
    print("| %s | %d | %.0f | %.1f | %.2f |" % (
        name, n, tot(cfg, "discard_sectors") / 2048.0, n * 0.055,
        tot(cfg, "wall_cs") / base if base else 0))
if probe:
    print("\nClustering on a fragmented swap device (swapstress -U 32: 128 KiB units; B pages "
          "paged out after A's pages were dropped from every fourth unit and half of the others)\n")
    print("| allocation | B pages swapped | in a unit with live A pages |")
    print("|---|---|---|")
    for cfg, name in (("stock", "stock"), ("clustering", "flashvm clustering")):
        if cfg in probe:
            p = probe[cfg]
            print("| %s | %d | %d |" % (name, p.get("b_swapped", 0), p.get("b_shared", 0)))
PY
cat "$o/results.md"
