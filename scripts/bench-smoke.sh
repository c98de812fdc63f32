#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The bench stage of make check: each benchmark script (make bench, bench-traces,
# bench-hashcache, bench-flashvm, bench-ssdalloc, bench-locks) run as a user runs it,
# at a tiny size, so that none rots unseen. Asserts that its table is produced and
# sane: every row there, the counts that cannot be zero not zero. Never a timing: the
# sizes are far too small for the figures to mean anything. Runs in out/smoke
# (SSC_OUT), so a real benchmark's results in out/ stay as they were.
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
# the tables, each a list of rows (the header first)
tables, cur = [], []
for l in text.splitlines() + [""]:
    if l.startswith("|"):
        if not l.startswith("|---"):
            cur.append([c.strip() for c in l.strip().strip("|").split("|")])
    elif cur:
        tables.append(cur)
        cur = []
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
# throughput for all; the same over an NBD origin, with ratios to dm-linear there
sane_bench() {
	sane bench "$1" "nbd_targets = '${BENCH_NBD:-linear,ssc_wt,ssc_wb,dmcache_wb,writecache}'.split(',')"'
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
            need(num(r[3]) > 0, "ssc_wb_full at %s MiB: nothing dirty" % mb)
# the origin over NBD: every target but raw flash a row, with IOPS and ratios to dm-linear
need("origin over NBD" in text, "no table of the NBD origin")
nbd = {r[0]: r for r in rows if r[0].endswith("/nbd")}
for t in nbd_targets:
    need(t + "/nbd" in nbd, "NBD origin: no row for " + t)
    r = nbd[t + "/nbd"]
    need(num(r[2]) > 0 and num(r[4]) > 0, t + "/nbd: no read or zipf IOPS")
    need(num(r[3]) > 0 and num(r[5]) > 0, t + "/nbd: no ratio to dm-linear over NBD")
    if t != "linear":
        need(num(r[1]) > 0, t + "/nbd: nothing cached")'
}

# make bench-traces: a built-in trace, a user's trace file (a name with a space) and a
# trace 8 KiB longer than the origin forced to 64 MiB, the cache 80 % of each one's
# footprint (no power of two). Every target a row of each: the first two measured
# (throughput, hits, cached blocks, a legal geometry), every row of the third a
# failed replay.
BT_MEASURED="zipf-read web_01.csv" BT_SHORT=short_by_8K.csv
sane_bench_traces() {
	sane bench-traces "$1" "
measured, short = '$BT_MEASURED'.split(), '$BT_SHORT'
targets = '${BT_TG:-ssc_wt,ssc_wb,dmcache,writecache,bcache}'.split(',')
"'
need(len(tables) == 2, "not two tables (targets, traces)")
col = {h: i for i, h in enumerate(tables[0][0])}
for h in ("KiB/s (TCG)", "read hits, own counter: cold / warm", "flash B written per user B written",
          "cached 4 KiB blocks", "data slots", "slot"):
    need(h in col, "no column " + h)
by = {(r[0], r[1]): r for r in tables[0][1:]}
for tr in measured:
    for t in targets:
        need((tr, t) in by, "no row for %s/%s" % (tr, t))
        r = by[(tr, t)]
        c = lambda h: r[col[h]]
        need("crashed" not in r[2], "%s/%s crashed the kernel" % (tr, t))
        need("failed" not in r[2], "%s/%s failed: %s" % (tr, t, r[2]))
        need(num(c("KiB/s (TCG)")) > 0, "%s/%s: no throughput" % (tr, t))
        need(c("read hits, own counter: cold / warm").split("/")[1].strip() != "-", "%s/%s: no warm hit ratio" % (tr, t))
        need(c("flash B written per user B written") != "-", "%s/%s: no flash bytes per user byte written" % (tr, t))
        need(int(c("cached 4 KiB blocks")) > 0, "%s/%s: nothing cached" % (tr, t))
        need(int(c("data slots")) > 0 and "KiB" in c("slot"), "%s/%s: no geometry" % (tr, t))
        if t == "bcache":
            need(int(c("data slots")) >= 1024, "%s/bcache: %s buckets, fewer than 1024" % (tr, c("data slots")))
for t in targets:
    need((short, t) in by, "no row for %s/%s" % (short, t))
    need(by[(short, t)][2].startswith("**failed replay** (replay 1 of 2:"),
         "%s/%s: not a failed replay: %s" % (short, t, by[(short, t)][2]))
trs = {r[0]: r for r in tables[1][1:]}
need(all(tr in trs for tr in measured + [short]), "a trace missing from the table of traces")
need(all(trs[tr][6].endswith(": 80 % of the footprint") for tr in measured), "a cache not 80 % of the footprint")
need(trs[short][5].endswith("**smaller than the extent**"), "the short trace: origin not smaller than the extent")'
}

# make bench-hashcache: every policy a row of the fill table, each counting I/Os per
# hit and insert; every policy and workload a row of the counted table; the goal line
sane_bench_hashcache() {
	sane bench-hashcache "$1" "
pcts = '${HB_PCTS:-0,40,80}'.split(',')
workloads = '${HB_WORKLOADS:-fill,lookup-insert,ycsb}'.split(',')
dists = '${HB_DISTS:-hotspot,zipfian,normal}'.split(',')
attach_pols = '${HB_ATTACH_POLICIES:-basic,set,setmem,setmemlru,log,loglru}'.split(',')
attach_mb = '${HB_ATTACH_MB:-64,256}'.split(',')
"'
need(len(tables) == 5, "not five tables (fill, counted, cascade tiers, cascade gc, attach)")
pols = ["basic", "set", "setmem", "setmemlru", "log", "loglru", "log+prefetch", "loglru+prefetch",
        "bufferhash", "bufferhash+lru", "bufferhash+partial", "cascade"]
# the policies that buffer inserts (none of the I/Os a put is needed)
buffered = lambda p: p.startswith("log") or p.startswith("bufferhash") or p == "cascade"
by = {r[0]: r for r in tables[0][1:]}
for p in pols:
    need(p in by, "no row for " + p)
    r = by[p]
    need(num(r[2]) > 0, p + ": no I/Os per hit")
    need(num(r[3]) > 0 or buffered(p), p + ": no I/Os per insert")
    need(len(r[5].split("/")) == len(pcts) and all(num(x) > 0 for x in r[5].split("/")),
         p + ": lookups/s ratios missing")
need(num(by["setmem"][1]) > 0 and num(by["log"][1]) > 0 and num(by["bufferhash"][1]) > 0,
     "RAM bits per slot missing")
cnt = {(r[0], r[1]): r for r in tables[1][1:]}
for p in pols:
    for wl in workloads:
        if wl != "fill" and p.endswith("+prefetch"):
            continue
        for q in (dists if wl == "ycsb" else pcts):
            k = (p, "%s %s%s" % (wl, q, "" if wl == "ycsb" else " %"))
            need(k in cnt, "counted: no row for %s %s" % k)
            r = cnt[k]
            h, m = (int(x) for x in r[7].split("/"))
            need(h + m > 0, "%s %s: no requests" % k)
            need(int(r[8]) > 0, "%s %s: no objects held" % k)
            if wl == "ycsb":
                need(h > 0, "%s %s: no hits" % k)
                need(num(r[5]) > 0 or buffered(p), "%s %s: no I/Os per put" % k)
            if p in ("setmem", "log", "bufferhash", "bufferhash+lru", "bufferhash+partial",
                     "cascade"):
                need(num(r[2]) > 0, "%s %s: no DRAM bits per object" % k)
need("goal (<= 8 DRAM bits an object" in text, "no goal line")
# the tiers of Cascade: a row for each distribution run, its shares adding up
# to 100, T1 settling some (at this size the rest may all be in RAM: no I/Os)
tier = {r[0]: r for r in tables[2][1:]}
for d in dists:
    need(d in tier, "tiers: no row for " + d)
    sh = [num(x) for x in tier[d][1].split("/")]
    need(len(sh) == 3 and abs(sum(sh) - 100) < 0.5 and sh[0] > 0, "tiers %s: shares %s" % (d, sh))
# Cascade GC: both modes a row; hit mode copied records forward (the SETs
# go round the ring, and the GETs put hot keys in T1), space mode none
gc = {r[0]: r for r in tables[3][1:]}
for m in ("hit", "space"):
    need(m in gc, "gc: no row for " + m)
    need(num(gc[m][1].rstrip(" %")) > 0, "gc %s: no GET hits" % m)
    need(num(gc[m][3]) > 0, "gc %s: nothing evicted (the ring never came round)" % m)
need(num(gc["hit"][2]) > 0, "gc hit: nothing copied forward")
need(num(gc["space"][2]) == 0, "gc space: records copied forward")
# the attach table: every policy drawn at both sizes; the checkpoint read less
# than the scan, and the scan more of the larger device
att = {(r[0], r[1]): r for r in tables[4][1:]}
for p in attach_pols:
    for mb in attach_mb:
        k = (p, mb + " MiB")
        need(k in att, "attach: no row for %s %s" % k)
        r = att[k]
        need(r[2] != "none", "attach %s %s: no checkpoint region" % k)
        need(num(r[5]) < 1, "attach %s %s: the checkpoint read no less than the scan" % k)
    small, large = (int(att[(p, mb + " MiB")][4].split()[0]) for mb in attach_mb[:2])
    need(large > small, "attach %s: the scan read no more of the larger device" % p)'
}

# make bench-flashvm: every config and workload run a row with faults, writes and their
# requests (zswap's pages stay in memory: no writes needed), every discard mode a row
sane_bench_flashvm() {
	sane bench-flashvm "$1" "workloads = '${FB_WL:-seq,stride,random,hotrw,kv}'.split(',')
configs = '${FB_CFG:-stock,zswap,prefetch,sampling,clustering,preclean,all}'.split(',')"'
by = {(r[0], r[1]): r for r in rows if len(r) == 10}
for cfg in configs:
    for wl in workloads:
        need((cfg, wl) in by, "no row for %s/%s" % (cfg, wl))
        r = by[(cfg, wl)]
        need(int(r[2]) > 0, "%s/%s: no major faults (nothing swapped)" % (cfg, wl))
        if cfg != "zswap":
            need(int(r[4]) > 0 and int(r[6]) > 0, "%s/%s: no pages written" % (cfg, wl))
            need(float(r[7]) >= 4, "%s/%s: writes of under a page" % (cfg, wl))
disc = {r[0]: r for r in rows if len(r) == 5}
for d in ("none", "stock discard=pages", "flashvm merged", "flashvm merged + dummy"):
    need(d in disc, "no discard row " + d)
need(int(disc["stock discard=pages"][1]) > 0, "stock discard sent no request")
need(int(disc["flashvm merged"][1]) > 0, "merged discard sent no request")
probe = {r[0]: r for r in rows if len(r) == 3}
for a in ("stock", "flashvm clustering"):
    need(a in probe and int(probe[a][1]) > 0, "clustering probe: no B pages swapped with " + a)
need(int(probe["flashvm clustering"][2]) == 0, "clustering probe: B pages next to live ones")'
}

# make bench-ssdalloc (Debian 6.12: stock swap, SSDAlloc MP and OPP; with the debug
# kernel's boot, stock and FlashVM swap too): both workloads a table, every way a row
# of each, none failed, with faults per operation, flash bytes written (a number: at
# this size the difference of two runs may be 0, or below), device reads for swap,
# Object Table bytes per object for SSDAlloc
sane_bench_ssdalloc() {
	sane bench-ssdalloc "$1" '
tables, cur = {}, None
for l in text.splitlines():
    if l.startswith(("Microbenchmark", "Key-value cache")):
        cur = tables.setdefault(l.split(":")[0], [])
    elif l.startswith("|") and not l.startswith("|---") and cur is not None:
        cur.append([c.strip() for c in l.strip().strip("|").split("|")])
need("Microbenchmark" in tables, "no table: Microbenchmark")
# the key-value cache needs memcached built from the Debian source: make check-full,
# make bench-ssdalloc; the smoke of make check runs the microbenchmark
for t in [t for t in ("Microbenchmark", "Key-value cache") if t in tables]:
    by = {(r[0], r[1]): r for r in tables[t][1:]}
    want = [("malloc, stock swap", "6.12"), ("SSDAlloc MP (ssd_malloc)", "6.12"),
            ("SSDAlloc OPP (ssd_oalloc)", "6.12")]
    if any(k[1] != "6.12" for k in by):
        want += [("malloc, stock swap", "debug (KASAN)"), ("malloc, FlashVM swap", "debug (KASAN)")]
    for way, kern in want:
        need((way, kern) in by, "%s: no row for %s on %s" % (t, way, kern))
        r = by[(way, kern)]
        w = "%s: %s on %s" % (t, way, kern)
        need(not r[2].startswith("**failed"), w + " failed: " + r[2])
        need(num(r[2]) > 0, w + ": no ops/s ratio")
        need(num(r[4]) > 0, w + ": no faults per operation")
        # flash bytes: a difference of two runs, which at this size may be 0 or below
        num(r[5])
        if way.startswith("SSDAlloc"):
            need("(library: " in r[5], w + ": no flash bytes by the library count: " + r[5])
            need(num(r[6]) > 0, w + ": no Object Table bytes per object")
        else:
            need(num(r[3]) > 0, w + ": no device reads (nothing swapped in)")'
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
	bench|bench-traces|bench-hashcache|bench-flashvm|bench-ssdalloc|bench-locks) "sane_${2//-/_}" "${3:?a table}" ;;
	*) result fail "--check: no check for '${2:-}'" ;;
	esac
	echo "bench: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit
fi

# nothing of an earlier run may pass for this one's (a table, the plot)
rm -rf "$SSC_OUT"/bench "$SSC_OUT"/bench-traces "$SSC_OUT"/bench-traces-in "$SSC_OUT"/bench-hashcache "$SSC_OUT"/bench-flashvm \
	"$SSC_OUT"/bench-ssdalloc "$SSC_OUT"/bench-locks
# one round of each measurement (3 make a median), 1 s idle between warm-up passes
# over NBD: dm-linear (the ratios' base) and one of the caches, drawn by SSC_SEED
BENCH_NBD="linear,$(pick 1 ssc_wt ssc_wb dmcache_wb writecache)"
if run bench bench.sh BENCH_WS_MB=16 BENCH_RT=1 BENCH_ROUNDS=1 BENCH_WARM_IDLE=1 BENCH_RECOVERY_MB=24,32 \
	BENCH_NBD_TARGETS="$BENCH_NBD"; then
	sane_bench "$SSC_OUT/bench/results.md"
fi
# make bench-traces: the traces sane_bench_traces expects, in one boot; the run must
# fail (exit 1, its tables made) on the short trace's first replays and nothing else
d="$SSC_OUT/bench-traces-in/user traces"
mkdir -p "$d"
"$SSC_TOP/scripts/gentrace.py" zipf-read --blocks 16384 --requests 6000 -o "$d/web 01.csv"
# 8 reads of 1 MiB, one of 16 KiB at 64 MiB - 8 KiB, 8 of 1 MiB (MSR CSV; reads: a cache
# in writeback would take its time to write back what a short replay left dirty)
awk 'BEGIN { for (i = 0; i < 17; i++) printf "1281663720%08d,synth,0,Read,%d,%d,100\n", i * 1000,
	i == 8 ? 67100672 : (i - (i > 8)) * 1048576, i == 8 ? 16384 : 1048576 }' \
	> "$d/short by 8K.csv"
# two of the five targets, drawn by SSC_SEED, in the order the tables list them: one
# of ours and one peer (two of ours leave no peer for the plot, whose check then
# failed one seed in ten: 168018289)
drawn=" $(pick 1 ssc_wt ssc_wb) $(pick 1 dmcache writecache bcache) "
BT_TG=$(for t in ssc_wt ssc_wb dmcache writecache bcache; do
	[[ $drawn == *" $t "* ]] && echo "$t"; done | paste -sd ,)
t0=$SECONDS
rc=0
env BT_TRACES=zipf-read BT_REQUESTS=6000 BT_TRACE_FILE="$d/web 01.csv" BT_CACHE=80% BT_ORIGIN=64M BT_TARGETS="$BT_TG" \
	"$SSC_TOP/scripts/bench-traces.sh" --trace "$d/short by 8K.csv" > "$SSC_OUT/bench-traces.out" 2>&1 || rc=$?
want=$(for t in ${BT_TG//,/ }; do
	echo "$BT_SHORT $t: replay 1 replayed the whole trace"; done)
got=$(sed -n 's/^not ok [0-9]* - bench-traces: //p' "$SSC_OUT/results/bench-traces.tap" 2>/dev/null)
if [ "$rc" -eq 1 ] && [ -s "$SSC_OUT/bench-traces/results.md" ] && [ "$got" = "$want" ]; then
	result ok "bench-traces runs at a tiny size ($BT_TG), failing on the short replays only ($((SECONDS - t0)) s)"
	sane_bench_traces "$SSC_OUT/bench-traces/results.md"
	[ "$(head -c 8 "$SSC_OUT/bench-traces/results.png" 2>/dev/null | od -An -tx1 | tr -d ' ')" = \
		89504e470d0a1a0a ] && result ok "bench-traces: plot drawn" ||
		result fail "bench-traces: plot drawn" "$SSC_OUT/bench-traces.out"
else
	result fail "bench-traces runs at a tiny size, failing on the short replays only (exit $rc; failed checks: ${got:-none})" \
		"$SSC_OUT/bench-traces.out"
fi

# every policy and workload, at one lookup success rate and one YCSB distribution
# drawn by SSC_SEED (a rate with hits: the table needs I/Os per hit)
# and the attach measure at two small sizes, for one policy with a checkpoint
HB_PCTS=$(pick 1 40 80 | tr ' ' ,) HB_DISTS=$(pick 1 hotspot zipfian normal | tr ' ' ,)
HB_ATTACH_POLICIES=$(pick 1 basic set setmem setmemlru log loglru bufferhash cascade | tr ' ' ,)
HB_ATTACH_MB=16,32
if run bench-hashcache bench-hashcache.sh HB_OBJECTS=1000 HB_LOOKUPS=1000 HB_PCTS="$HB_PCTS" \
	HB_DISTS="$HB_DISTS" HB_ATTACH_MB="$HB_ATTACH_MB" HB_ATTACH_OBJECTS=300 \
	HB_ATTACH_POLICIES="$HB_ATTACH_POLICIES"; then
	sane_bench_hashcache "$SSC_OUT/bench-hashcache/results.md"
fi
# one of the five workloads and three of the six configs besides stock, drawn by
# SSC_SEED (the three rounds of each discard mode stay: one round at this size may
# leave merged discard's batch unsent), on the debug kernel the suites boot anyway:
# the bench kernel (the same without sanitizers) is built only as far as its checked
# configuration, which takes seconds, not the build's minutes
FB_WL=$(pick 1 seq stride random hotrw kv | tr ' ' ,)
FB_CFG=stock,$(pick 3 zswap prefetch sampling clustering preclean all | tr ' ' ,)
if c=$("$SSC_TOP/scripts/build-debug-kernel.sh" --bench --config-only 2>"$SSC_OUT/bench-kernel.out") &&
	grep -qx CONFIG_SWAP_POLICY_HOOKS=y "$c" && ! grep -q '^CONFIG_KASAN=y' "$c" &&
	! grep -q '^CONFIG_PROVE_LOCKING=y' "$c"; then
	result ok "bench-flashvm's kernel: the hooks, no KASAN, no lockdep ($c)"
else
	result fail "bench-flashvm's kernel configuration" "$SSC_OUT/bench-kernel.out"
fi
if run bench-flashvm bench-flashvm.sh FB_KERNEL=debug FB_MB=4 FB_LIMIT=2M \
	FB_WORKLOADS="$FB_WL" FB_CONFIGS="$FB_CFG"; then
	sane_bench_flashvm "$SSC_OUT/bench-flashvm/results.md"
fi
# the 6.12 boot only (stock swap, MP, OPP; the debug boot's FlashVM way would double
# the time) and the microbenchmark only (the key-value cache is Debian's memcached,
# built from its source: make check-full runs it on the host), tiny: 24,576 objects
# in a 2 MiB limit. 1,500 operations: the table is a difference of two runs (3,000
# and 1,500), and the device's reads in the set-up vary by a few hundred between runs
# (one run of 500 showed 78 reads more in the run twice as long, against ~400 usually)
if run bench-ssdalloc bench-ssdalloc.sh SB_KERNELS=6.12 SB_WORKLOADS=micro SB_LIMIT_MB=2 \
	SB_MARGIN_MB=1 SB_OBJECTS=24576 SB_OPS=1500; then
	sane_bench_ssdalloc "$SSC_OUT/bench-ssdalloc/results.md"
fi
if run bench-locks bench-locks.sh BENCH_LOCK_MB=16 BENCH_LOCK_RT=2; then
	sane_bench_locks "$SSC_OUT/bench-locks/results.md"
fi

echo "bench: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
