#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The bench stage of make check: each benchmark script (make bench, bench-traces,
# bench-hashcache, bench-flashvm) run as a user runs it, at a tiny size, so that none
# rots unseen. Asserts that its table is produced and sane: every row there, the
# counts that cannot be zero not zero. Never a timing: the sizes are far too small
# for the figures to mean anything. Runs in out/smoke (SSC_OUT), so a real
# benchmark's results in out/ stay as they were.
# Prints one ok/not ok line per check and "bench: N passed, N failed".
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

export SSC_OUT=$SSC_OUT/smoke
# a smoke run that hangs fails in minutes, not in the benchmarks' hour
export BENCH_VM_TIMEOUT=${BENCH_VM_TIMEOUT:-900}
mkdir -p "$SSC_OUT"
pass=0 fail=0
result() { # result ok|fail WHAT [FILE]
	if [ "$1" = ok ]; then
		pass=$((pass + 1)); echo "ok - bench: $2"
	else
		fail=$((fail + 1)); echo "not ok - bench: $2"
		[ -n "${3:-}" ] && [ -e "$3" ] && tail -n 30 "$3" | sed 's/^/#   /'
	fi
}

# run NAME SCRIPT ENV...: one benchmark, its output in $SSC_OUT/NAME.out
run() {
	local name=$1 script=$2 t0=$SECONDS
	shift 2
	if env "$@" "$SSC_TOP/scripts/$script" > "$SSC_OUT/$name.out" 2>&1; then
		result ok "$name runs at a tiny size ($* ; $((SECONDS - t0)) s)"
	else
		result fail "$name runs at a tiny size ($*)" "$SSC_OUT/$name.out"
		return 1
	fi
}

# sane NAME TABLE PYTHON-CHECK: the check reads the markdown table's rows (lists of
# cells) as `rows` and the whole file as `text`, and raises on what is wrong
sane() {
	local name=$1 table=$2 err
	if err=$(python3 - "$table" "$3" 2>&1 <<'PY'
import sys
text = open(sys.argv[1]).read()
rows = [[c.strip() for c in l.strip().strip("|").split("|")]
        for l in text.splitlines() if l.startswith("|") and not l.startswith("|---")]
def num(x):
    return float(x.split()[0].split("/")[0])
def need(cond, what):
    if not cond:
        raise SystemExit(what)
exec(sys.argv[2])
PY
	); then
		result ok "$name: table produced and sane"
	else
		result fail "$name: table produced and sane: $err" "$table"
	fi
}

# make bench: every target a row; cached blocks for the caches, read and zipf
# throughput for all
sane_bench() {
	sane bench "$1" '
targets = ["raw_flash", "linear", "ssc_wt", "ssc_wb", "dmcache_wb", "writecache"]
by, org = {}, {}
for r in rows[1:]:
    # the first table row of a target; its row of the origin I/O counts
    if len(r) == 2 and r[0] in targets:
        org[r[0]] = r
    else:
        by.setdefault(r[0], r)
for t in targets:
    need(t in org, "origin I/Os: no row for " + t)
    need(len(org[t][1].split("/")) == 3, t + ": origin I/Os not read / write / zipf")
# writethrough sends every write of the zipf mix to the origin
z = org["ssc_wt"][1].split("/")[2].strip()
need(z not in ("-", "nan") and num(z) > 0, "ssc_wt: no origin I/Os in the zipf mix: " + z)
for t in targets:
    need(t in by, "no row for " + t)
    r = by[t]
    need(num(r[3]) > 0, t + ": no read-hit ratio")
    need(num(r[6]) > 0, t + ": no zipf IOPS")
    if t not in ("raw_flash", "linear"):
        need(num(r[2]) > 0, t + ": nothing cached")
need("ssc_wb / dmcache_wb: read hits" in text, "no ratio line")
rec = [r for r in rows if r[0].isdigit()]
need(len(rec) == 2, "recovery: not a row per cache size")
for r in rec:
    need(r[2] != "-" and r[4] != "-", "recovery at " + r[0] + " MiB: not measured for both")
    need(num(r[1]) > 0, "recovery at " + r[0] + " MiB: nothing written")
need("recovery growth from" in text, "no recovery growth line")
full = {(r[0], r[1]): r for r in rows if r[0].endswith("_full")}
for t in ("ssc_wb_full", "ssc_wt_full"):
    for mb in [r[0] for r in rec]:
        need((t, mb) in full, "RAM on a full cache: no row for %s at %s MiB" % (t, mb))
        r = full[(t, mb)]
        need(num(r[2]) > 0.3, "%s at %s MiB: cache not filled: %s" % (t, mb, r[2]))
        need(num(r[4]) > 0, "%s at %s MiB: no RAM figure" % (t, mb))
        if t == "ssc_wb_full":
            need(num(r[3]) > 0, "ssc_wb_full at %s MiB: nothing dirty" % mb)'
}

# make bench-traces: one trace, every target a row with throughput and hits
sane_bench_traces() {
	sane bench-traces "$1" '
targets = ["ssc_wt", "ssc_wb", "dmcache", "writecache", "bcache"]
by = {r[1]: r for r in rows[1:] if r[0] == "zipf-read"}
for t in targets:
    need(t in by, "no row for zipf-read/" + t)
    r = by[t]
    need("crashed" not in r[2], t + " crashed the kernel")
    need(num(r[4]) > 0, t + ": no throughput")
    need(r[3].split("/")[1].strip() != "-", t + ": no warm hit ratio")
    need(int(r[9]) > 0, t + ": nothing cached")'
}

# make bench-hashcache: every policy a row, each counting I/Os per hit and insert
sane_bench_hashcache() {
	sane bench-hashcache "$1" '
pols = ["basic", "set", "setmem", "setmemlru", "log", "loglru", "log+prefetch", "loglru+prefetch"]
by = {r[0]: r for r in rows[1:]}
for p in pols:
    need(p in by, "no row for " + p)
    r = by[p]
    need(num(r[2]) > 0, p + ": no I/Os per hit")
    need(num(r[3]) > 0 or p.startswith("log"), p + ": no I/Os per insert")
    need(len(r[5].split("/")) == 3 and all(num(x) > 0 for x in r[5].split("/")),
         p + ": lookups/s ratios missing")
need(num(by["setmem"][1]) > 0 and num(by["log"][1]) > 0, "RAM bits per slot missing")'
}

# make bench-flashvm (the patched debug kernel): every policy and workload a row with
# faults and writes, every discard mode a row
sane_bench_flashvm() {
	sane bench-flashvm "$1" '
by = {(r[0], r[1]): r for r in rows if len(r) == 9}
for cfg in ("stock", "prefetch", "sampling", "all"):
    for wl in ("seq", "stride", "random", "readmostly"):
        need((cfg, wl) in by, "no row for %s/%s" % (cfg, wl))
        r = by[(cfg, wl)]
        need(int(r[2]) > 0, "%s/%s: no major faults (nothing swapped)" % (cfg, wl))
        need(int(r[6]) > 0, "%s/%s: no pages written" % (cfg, wl))
disc = {r[0]: r for r in rows if len(r) == 5}
for d in ("none", "stock discard=pages", "flashvm merged", "flashvm merged + dummy"):
    need(d in disc, "no discard row " + d)
need(int(disc["stock discard=pages"][1]) > 0, "stock discard sent no request")
need(int(disc["flashvm merged"][1]) > 0, "merged discard sent no request")'
}

# make bench-locks (the debug kernel's lock statistics): both targets a row, with read
# hits and lock acquisitions counted (contentions may well be 0)
sane_bench_locks() {
	sane bench-locks "$1" '
by = {r[0]: r for r in rows[1:]}
for t in ("ssc_wt", "writecache"):
    need(t in by, "no row for " + t)
    r = by[t]
    need(num(r[1]) > 0, t + ": no read hits")
    need(r[2] != "-" and r[3] != "-", t + ": contentions not counted")
    need(num(r[4]) > 0, t + ": no acquisitions of its locks (wrong lock classes?)")'
}

# --check NAME TABLE: only the sanity check of one table (the user stage feeds it
# good and broken tables, so a check that cannot fail would show)
if [ "${1:-}" = --check ]; then
	case ${2:-} in
	bench|bench-traces|bench-hashcache|bench-flashvm|bench-locks) "sane_${2//-/_}" "${3:?a table}" ;;
	*) result fail "--check: no check for '${2:-}'" ;;
	esac
	echo "bench: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
fi

# nothing of an earlier run may pass for this one's (a table, the plot)
rm -rf "$SSC_OUT"/bench "$SSC_OUT"/bench-traces "$SSC_OUT"/bench-hashcache "$SSC_OUT"/bench-flashvm \
	"$SSC_OUT"/bench-locks
if run bench bench.sh BENCH_WS_MB=16 BENCH_RT=1 BENCH_RECOVERY_MB=24,32; then
	sane_bench "$SSC_OUT/bench/results.md"
fi
if run bench-traces bench-traces.sh BT_TRACES=zipf-read BT_CACHE_MB=16; then
	sane_bench_traces "$SSC_OUT/bench-traces/results.md"
	[ "$(head -c 8 "$SSC_OUT/bench-traces/results.png" 2>/dev/null | od -An -tx1 | tr -d ' ')" = \
		89504e470d0a1a0a ] && result ok "bench-traces: plot drawn" ||
		result fail "bench-traces: plot drawn" "$SSC_OUT/bench-traces.out"
fi

if run bench-hashcache bench-hashcache.sh HB_OBJECTS=1500 HB_LOOKUPS=1500; then
	sane_bench_hashcache "$SSC_OUT/bench-hashcache/results.md"
fi
if run bench-flashvm bench-flashvm.sh FB_MB=8 FB_LIMIT=4M; then
	sane_bench_flashvm "$SSC_OUT/bench-flashvm/results.md"
fi
if run bench-locks bench-locks.sh BENCH_LOCK_MB=16 BENCH_LOCK_RT=2; then
	sane_bench_locks "$SSC_OUT/bench-locks/results.md"
fi

echo "bench: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
