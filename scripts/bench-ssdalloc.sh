#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# make bench-ssdalloc: SSDAlloc (MP and OPP) against malloc over stock swap and over
# FlashVM-tuned swap, on the same flash device (a null_blk with a flash-like latency)
# under the same RAM limit (cgroup v2 memory.max), and print the tables
# Documentation/ssdalloc.rst carries. Two boots, each with stock swap as its baseline:
#   Debian 6.12   stock, mp, opp    (SSDAlloc needs userfaultfd, which the debug
#                                    kernel does not have)
#   debug kernel  stock, flashvm    (flashvm.ko needs the swap policy hooks, which
#                                    only the debug kernel has)
# so every ops/s figure is a ratio to stock swap in the same boot; the counts (device
# reads and faults per operation, flash bytes per application byte, Object Table
# bytes per object) do not depend on time.
# Knobs (tests/vm/suites/bench-ssdalloc.sh has the rest): SB_LIMIT_MB (8), SB_SCALE
# (20), SB_OPS (50000), SB_WRITE_PCT (50), SB_KV_SCALE (4), SB_KV_VALUE (1024),
# SB_KV_OPS (20000), SB_LAT_US (100), SB_WORKLOADS (micro,kv), SB_KERNELS (6.12,debug),
# SB_STORE (raw: SSDAlloc on the device; file: on a file of an ext2 on it),
# SB_VM_MEM (MiB of guest RAM, 2048: the device's data lives there), SB_WAYS (the ways
# of every boot, for a partial run), SB_DEBUG_OPS_DIV (4: the debug boot makes a quarter
# of the operations), SB_DEBUG_WORKLOADS (the debug boot's, if not all).
# Output in out/bench-ssdalloc/: raw-<kernel>.tap and results.md; --report remakes the
# tables from the raw files.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"

o="$SSC_OUT/bench-ssdalloc"
mkdir -p "$o"
kernels=${SB_KERNELS:-6.12,debug}
if [ "${1:-}" != --report ]; then
	"$SSC_TOP/scripts/deps.sh" >&2
	rm -f "$o"/raw-*.tap "$o"/host-*.txt
	envs=()
	for v in SB_LIMIT_MB SB_SCALE SB_SIZE SB_OPS SB_WRITE_PCT SB_KV_SCALE SB_KV_VALUE \
		SB_KV_OPS SB_KV_SET_PCT SB_LAT_US SB_MARGIN_MB SB_META_B SB_SEED SB_WORKLOADS \
		SB_DEV_MB SB_KV_SERVER SB_STORE SB_CPU_MASK SB_OBJECTS SB_KV_KEYS SB_KV_LIMIT_MB \
		SB_KV_MARGIN_MB; do
		[ -n "${!v:-}" ] && envs+=(--env "$v=${!v}")
	done
	for k in ${kernels//,/ }; do
		kenv=()
		case $k in
		6.12) ways=${SB_WAYS:-stock,mp,opp} name=bench-ssdalloc ;;
		debug)
			ways=${SB_WAYS:-stock,flashvm} name=bench-ssdalloc-debug
			# KASAN makes the kernel's side of swap several times slower: fewer
			# operations (the ratios are within the boot), and the workloads asked
			div=${SB_DEBUG_OPS_DIV:-4}
			kenv=(--env "SB_OPS=$((${SB_OPS:-50000} / div))"
			      --env "SB_KV_OPS=$((${SB_KV_OPS:-20000} / div))")
			[ -n "${SB_DEBUG_WORKLOADS:-}" ] && kenv+=(--env "SB_WORKLOADS=$SB_DEBUG_WORKLOADS")
			;;
		*) die "SB_KERNELS: no kernel '$k' (6.12 or debug)" ;;
		esac
		log "bench-ssdalloc: $k: $ways"
		# the host's load around the boot: emulated time slows when other VMs or builds
		# share the cores, so the table says what the run shared them with
		echo "host loadavg before: $(cat /proc/loadavg)" > "$o/host-$k.txt"
		"$SSC_TOP/scripts/vm.sh" --kernel "$k" --name "$name" --suites bench-ssdalloc \
			--mem "${SB_VM_MEM:-2048}" --timeout "${BENCH_VM_TIMEOUT:-3600}" \
			--env "SB_WAYS=$ways" ${envs[@]+"${envs[@]}"} ${kenv[@]+"${kenv[@]}"} \
			> "$o/vm-$k.log" 2>&1 ||
			{ tail -n 30 "$o/vm-$k.log" >&2; die "the bench run on $k failed: see $o/vm-$k.log"; }
		echo "host loadavg after: $(cat /proc/loadavg)" >> "$o/host-$k.txt"
		cp "$SSC_OUT/results/$name.tap" "$o/raw-$k.tap"
	done
fi
ls "$o"/raw-*.tap > /dev/null 2>&1 || die "no $o/raw-*.tap: run make bench-ssdalloc first"
python3 - "$o"/raw-*.tap > "$o/results.md" <<'PY'
import sys

runs, conf = {}, {}
for path in sys.argv[1:]:
    boot = path.rsplit("raw-", 1)[1][:-len(".tap")]
    for line in open(path):
        if "SDBCONF " in line:
            conf[boot] = dict(x.split("=", 1) for x in line.split("SDBCONF ", 1)[1].split())
        if "SDBENCH " not in line:
            continue
        f = line.split("SDBENCH ", 1)[1].split()
        kv = {}
        for x in f[3:]:
            if "=" in x:
                k, v = x.split("=", 1)
                try:
                    kv[k] = float(v)
                except ValueError:
                    kv[k] = v
        runs[(boot, f[0], f[1], int(f[2]))] = kv
if not runs:
    sys.exit("no SDBENCH lines")

NAMES = {"stock": "malloc, stock swap", "flashvm": "malloc, FlashVM swap",
         "mp": "SSDAlloc MP (ssd_malloc)", "opp": "SSDAlloc OPP (ssd_oalloc)"}
LIB = ("faults_read", "faults_write", "ssd_write_bytes", "object_bytes_written",
       "app_bytes_written", "ssd_read_bytes", "majflt")
DEV = ("dev_read_ios", "dev_read_sectors", "dev_write_ios", "dev_write_sectors", "pswpin",
       "pswpout", "pgmajfault")

def num(r, k):
    v = r.get(k, 0)
    return v if isinstance(v, float) else 0.0

def result(boot, wl, way):
    """OPS operations in the steady state: the run of 2 x OPS less the run of OPS"""
    ns = sorted(k[3] for k in runs if k[:3] == (boot, wl, way))
    if not ns:
        return None
    lo, hi = runs[(boot, wl, way, ns[0])], runs[(boot, wl, way, ns[-1])]
    if len(ns) < 2 or lo.get("rc") != 0 or hi.get("rc") != 0 or "ops_per_s" not in hi:
        return {"failed": "exit %s / %s, OOM kills %s / %s" % (
            int(lo.get("rc", -1)), int(hi.get("rc", -1)), int(num(lo, "oom_kill")),
            int(num(hi, "oom_kill")))}
    d = {k: num(hi, k) - num(lo, k) for k in LIB + DEV}
    d["has_majflt"] = "majflt" in hi and "majflt" in lo
    # the rate over both runs' operations: emulated time drifts with the host's load,
    # too much for a difference of two runs' times to mean anything
    secs = num(hi, "seconds") + num(lo, "seconds")
    d.update(ops=ns[-1] - ns[0], ops_per_s=(ns[-1] + ns[0]) / secs if secs > 0 else 0,
             memmax=num(hi, "memmax"), peak=max(num(lo, "cg_peak"), num(hi, "cg_peak")),
             setup_s=num(lo, "init_seconds") or num(lo, "load_seconds"),
             ot=num(hi, "ot_bytes"), objects=num(hi, "objects"))
    return d

def fmt(x, p=2):
    return ("%%.%df" % p) % x

out = []
boots = sorted({k[0] for k in runs}, key=lambda b: b != "6.12")
wls = [w for w in ("micro", "kv") if any(k[1] == w for k in runs)]
TITLE = {"micro": "Microbenchmark: %s random operations on %s objects of %s B (%s x the RAM "
                  "limit), %s %% writes",
         "kv": "Key-value cache: %s requests over %s keys of %s B values (%s x the RAM limit), "
               "%s %% sets"}
for wl in wls:
    c = conf.get("6.12", conf[boots[0]])
    # the operations measured in each boot (the debug boot makes fewer)
    n = " / ".join("%s (%s)" % (conf[b]["ops" if wl == "micro" else "kv_ops"], b)
                   for b in boots if b in conf)
    if wl == "micro":
        args = (n, c["objects"], c["size"], c["scale"], c["write_pct"])
    else:
        args = (n, c["kv_keys"], c["kv_value"], "%.1f" % (
            float(c["kv_keys"]) * float(c["kv_value"]) /
            (float(c.get("kv_limit_mb", c["limit_mb"])) * 1048576)), c["kv_set_pct"])
    lim, mar = (("limit_mb", "margin_mb") if wl == "micro" else ("kv_limit_mb", "kv_margin_mb"))
    out.append("%s; RAM limit %s MiB (SSDAlloc's RAM: the limit less %s MiB), the device %s us "
               "a request\n" % (TITLE[wl] % args, c.get(lim, c["limit_mb"]),
                              c.get(mar, c["margin_mb"]), c["lat_us"]))
    out.append("| way | kernel | ops/s vs stock swap, same boot | device reads per op "
               "| faults per op | flash B written per app B written | Object Table B per object "
               "| device latency share of op time | memory.max / peak MiB | set-up s |")
    out.append("|---|---|---|---|---|---|---|---|---|---|")
    per = {}
    for boot in boots:
        base = result(boot, wl, "stock")
        for way in ("stock", "flashvm", "mp", "opp"):
            r = result(boot, wl, way)
            if r is None:
                continue
            kern = "6.12" if boot == "6.12" else "debug (KASAN)"
            if "failed" in r:
                out.append("| %s | %s | **failed** (%s) | | | | | | | |" % (NAMES[way], kern,
                                                                       r["failed"]))
                continue
            per[(boot, way)] = r
            ops = r["ops"] or 1
            ratio = "-"
            if base and "failed" not in base and base["ops_per_s"]:
                ratio = fmt(r["ops_per_s"] / base["ops_per_s"])
            if way in ("mp", "opp"):
                faults = (r["faults_read"] + r["faults_write"]) / ops
                # per object of the application (MP's allocations are few and large)
                nobj = float(conf[boot]["objects" if wl == "micro" else "kv_keys"])
                ot = fmt(r["ot"] / nobj, 1) if nobj else "-"
            else:
                # the program's own major faults in its operations (getrusage): the
                # machine's pgmajfault also counts the set-up's and other processes'
                # faults, enough to turn a difference of two short runs negative
                faults = (r["majflt"] if r["has_majflt"] else r["pgmajfault"]) / ops
                ot = "-"
            app = r["app_bytes_written"]
            fl = r["dev_write_sectors"] * 512
            wa = fmt(fl / app) if app else "-"
            if way in ("mp", "opp") and app:
                wa += " (library: %s)" % fmt(r["ssd_write_bytes"] / app)
            # how much of an operation's time the device's latency can explain (its
            # requests one after another): the rest is the emulated CPU
            lat = float(conf[boot]["lat_us"]) * 1e-6
            share = min(1.0, (r["dev_read_ios"] + r["dev_write_ios"]) / ops * lat * r["ops_per_s"])
            out.append("| %s | %s | %s | %s | %s | %s | %s | %.0f %% | %.1f / %.1f | %.1f |" % (
                NAMES[way], kern, ratio, fmt(r["dev_read_ios"] / ops, 3), fmt(faults, 3), wa,
                ot, 100 * share, r["memmax"] / 1048576, r["peak"] / 1048576, r["setup_s"]))
    notes = []
    m, p = per.get(("6.12", "mp")), per.get(("6.12", "opp"))
    if m and p and m["ops_per_s"]:
        notes.append("OPP / MP ops/s: %s (thesis: 1.4-3.5)" % fmt(p["ops_per_s"] / m["ops_per_s"]))
    if m and p and m["app_bytes_written"] and p["app_bytes_written"] and p["dev_write_sectors"]:
        notes.append("MP / OPP flash bytes per app byte: %s (thesis: 31.5)" % fmt(
            (m["dev_write_sectors"] / m["app_bytes_written"]) /
            (p["dev_write_sectors"] / p["app_bytes_written"]), 1))
    for boot in boots:
        s = per.get((boot, "stock"))
        if s:
            notes.append("stock swap on %s: %.0f ops/s (emulated time)" % (boot, s["ops_per_s"]))
    out.append("\n" + "; ".join(notes) + ".\n")
# the host's load around each boot (1-minute load average: the machine has 2 cores)
for boot in boots:
    try:
        h = [l.split()[3] for l in open(sys.argv[1].rsplit("/", 1)[0] + "/host-%s.txt" % boot)]
        out.append("Host load average around the %s boot: %s." % (boot, " -> ".join(h)))
    except (OSError, IndexError):
        pass
print("\n".join(out))
PY
cat "$o/results.md"
