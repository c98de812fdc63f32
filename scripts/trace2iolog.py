#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Convert a block trace to a fio iolog (version 3) for replay against a volume.

    trace2iolog.py [-f FORMAT] [-o OUT] [--device PATH] [--size BYTES]
                   [--map fold|scale|none] [--timing keep|fast|FACTOR]
                   [--limit N] [--align BYTES] [--disk N] [--csv SPEC] TRACE

Formats (-f, default: guessed from the first lines):
  msr       MSR Cambridge CSV: Timestamp,Hostname,DiskNumber,Type,Offset,Size,
            ResponseTime (Windows filetime ticks of 100 ns, byte offsets and sizes)
  fiu       FIU (SyLab) traces: ts pid process lba size rw major minor md5
            (ts in ns, lba and size in 512-byte sectors, rw R or W)
  csv       libCacheSim-style CSV, columns named by --csv, e.g. the default
            "time-col=1,lba-col=2,size-col=3,op-col=4,header=0,time-unit=us,
            lba-unit=512,size-unit=1" (the layout of CloudPhysics traces as
            CSV); op is R/W, read/write or SCSI 0x28/0x2a
  blktrace  a binary blktrace dump (blkparse -i DEV -d FILE): queue events

Output: "fio version 3 iolog", then add/open, one read/write line per request,
close. Replay it with
  fio --name=replay --read_iolog=OUT --replay_redirect=/dev/mapper/VOL \\
      --ioengine=libaio --direct=1 --iodepth=16
Offsets are mapped into the target (--size, or that of --device): "fold" takes
them modulo the size (keeps locality and reuse), "scale" maps the trace's
extent linearly onto the size, "none" drops requests that do not fit. Every
request is aligned to --align (default 4096) and clipped to the size.
--timing keep keeps the trace's gaps (fio sleeps), fast replays as fast as
possible, a number scales the gaps (2 = twice as fast).
Prints a one-line summary to stderr. Exit 1 on a malformed trace, 2 on usage.
"""

import argparse
import os
import struct
import sys

FILETIME_TICKS_PER_US = 10


class TraceError(Exception):
    pass


def parse_msr(lines, disk):
    for n, line in lines:
        f = line.strip().split(",")
        if len(f) < 6:
            raise TraceError(f"line {n}: want 7 comma-separated fields (MSR)")
        try:
            ts = int(f[0]) // FILETIME_TICKS_PER_US
            d, off, size = int(f[2]), int(f[4]), int(f[5])
        except ValueError:
            raise TraceError(f"line {n}: not a number where MSR has one") from None
        t = f[3].strip().lower()
        if t not in ("read", "write"):
            raise TraceError(f"line {n}: Type is '{f[3]}', want Read or Write")
        if disk is not None and d != disk:
            continue
        yield ts, t == "write", off, size


def parse_fiu(lines, disk):
    for n, line in lines:
        f = line.split()
        if len(f) < 6:
            raise TraceError(f"line {n}: want ts pid process lba size rw ... (FIU)")
        try:
            ts, lba, size = int(f[0]) // 1000, int(f[3]), int(f[4])
        except ValueError:
            raise TraceError(f"line {n}: not a number where FIU has one") from None
        rw = f[5].upper()
        if rw not in ("R", "W"):
            raise TraceError(f"line {n}: rw is '{f[5]}', want R or W")
        if disk is not None and len(f) >= 8 and int(f[7]) != disk:
            continue
        yield ts, rw == "W", lba * 512, size * 512


CSV_DEFAULT = ("time-col=1,lba-col=2,size-col=3,op-col=4,header=0,time-unit=us,"
               "lba-unit=512,size-unit=1,delimiter=comma")
TIME_UNITS = {"ns": 0.001, "us": 1, "ms": 1000, "s": 1000000}


DELIMITERS = {"comma": ",", "tab": "\t", "space": None, "semicolon": ";"}


def parse_csv_spec(spec):
    out = {}
    for p in filter(None, spec.split(",")):
        k, sep, v = p.partition("=")
        if not sep:
            raise TraceError(f"--csv: '{p}' is not key=value")
        out[k] = v
    if out.get("delimiter", "comma") not in DELIMITERS:
        raise TraceError("--csv: delimiter must be comma, tab, space or semicolon")
    for k in ("time-col", "lba-col", "size-col", "op-col"):
        if not out.get(k, "").isdigit() or int(out[k]) < 1:
            raise TraceError(f"--csv: {k} must be a column number from 1")
    if out.get("time-unit") not in TIME_UNITS:
        raise TraceError("--csv: time-unit must be ns, us, ms or s")
    for k in ("lba-unit", "size-unit"):
        if not out.get(k, "").isdigit() or int(out[k]) < 1:
            raise TraceError(f"--csv: {k} must be a positive number of bytes")
    return out


def parse_csv(lines, spec):
    s = parse_csv_spec(CSV_DEFAULT + "," + spec if spec else CSV_DEFAULT)
    delim = DELIMITERS[s["delimiter"]]
    cols = [int(s[k]) - 1 for k in ("time-col", "lba-col", "size-col", "op-col")]
    tu, lu, su = TIME_UNITS[s["time-unit"]], int(s["lba-unit"]), int(s["size-unit"])
    skip = s.get("header", "0") == "1"
    for n, line in lines:
        if skip:
            skip = False
            continue
        f = line.strip().split(delim)
        if len(f) <= max(cols):
            raise TraceError(f"line {n}: {len(f)} columns, the spec needs {max(cols) + 1}")
        try:
            ts = int(float(f[cols[0]]) * tu)
            lba, size = int(f[cols[1]], 0), int(f[cols[2]], 0)
        except ValueError:
            raise TraceError(f"line {n}: not a number in a time/lba/size column") from None
        op = f[cols[3]].strip().lower()
        if op in ("r", "read", "0x28", "40", "0x88", "136"):
            w = False
        elif op in ("w", "write", "0x2a", "42", "0x8a", "138"):
            w = True
        else:
            raise TraceError(f"line {n}: op '{f[cols[3]]}' is neither a read nor a write")
        yield ts, w, lba * lu, size * su


BLK_MAGIC = 0x65617400
BLK_HDR = struct.Struct("=IIQQIIIIIHH")
BLK_TA_QUEUE = 1
BLK_TC_READ, BLK_TC_WRITE, BLK_TC_DISCARD = 1 << 0, 1 << 1, 1 << 13


def parse_blktrace(data):
    off, t0 = 0, None
    while off + BLK_HDR.size <= len(data):
        magic, _seq, t, sector, nbytes, action, _pid, _dev, _cpu, _err, pdu = \
            BLK_HDR.unpack_from(data, off)
        if magic & 0xffffff00 != BLK_MAGIC:
            raise TraceError(f"offset {off}: bad blktrace magic {magic:#x}")
        off += BLK_HDR.size + pdu
        cat = action >> 16
        if action & 0xffff != BLK_TA_QUEUE or not nbytes:
            continue
        if cat & BLK_TC_DISCARD or not cat & (BLK_TC_READ | BLK_TC_WRITE):
            continue
        t0 = t if t0 is None else t0
        yield (t - t0) // 1000, bool(cat & BLK_TC_WRITE), sector * 512, nbytes
    if off != len(data):
        raise TraceError("truncated blktrace record at the end")


def guess(first):
    line = first.strip()
    if not line:
        return None
    if line.count(",") >= 6 and line.split(",")[3].strip().lower() in ("read", "write"):
        return "msr"
    f = line.split()
    if len(f) >= 6 and f[5].upper() in ("R", "W") and f[0].isdigit():
        return "fiu"
    if "," in line:
        return "csv"
    return None


def target_size(args):
    if args.size:
        return args.size
    if args.device:
        try:
            with open(args.device, "rb") as f:
                return f.seek(0, os.SEEK_END)
        except OSError as e:
            raise TraceError(f"{args.device}: {e.strerror}") from None
    raise TraceError("need --size or --device to map offsets")


def size_arg(v):
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    s = v.strip().lower().rstrip("b").rstrip("i")
    m = 1
    if s and s[-1] in mult:
        m, s = mult[s[-1]], s[:-1]
    if not s.isdigit() or int(s) == 0:
        raise argparse.ArgumentTypeError(f"bad size '{v}'")
    return int(s) * m


def main(argv):
    ap = argparse.ArgumentParser(prog="trace2iolog.py", description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("-f", "--format", choices=("msr", "fiu", "csv", "blktrace", "auto"),
                    default="auto")
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("--device", default=None,
                    help="the file name in the iolog, and its size if --size is not given")
    ap.add_argument("--size", type=size_arg, default=None)
    ap.add_argument("--map", choices=("fold", "scale", "none"), default="fold")
    ap.add_argument("--timing", default="fast")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--align", type=size_arg, default=4096)
    ap.add_argument("--disk", type=int, default=None)
    ap.add_argument("--csv", default="")
    args = ap.parse_args(argv)

    if args.timing == "keep":
        tscale = 1.0
    elif args.timing == "fast":
        tscale = None
    else:
        try:
            tscale = 1.0 / float(args.timing)
            if tscale <= 0:
                raise ValueError
        except (ValueError, ZeroDivisionError):
            ap.error("--timing wants keep, fast or a positive speed-up factor")
    if args.limit < 0:
        ap.error("--limit wants N >= 0")
    if args.align & (args.align - 1) or args.align < 512:
        ap.error("--align wants a power of two from 512")

    try:
        size = target_size(args) // args.align * args.align
        if size < args.align:
            raise TraceError("target smaller than one aligned block")
        fmt = args.format
        if fmt == "blktrace" or (fmt == "auto" and args.trace != "-" and _is_blktrace(args.trace)):
            fmt = "blktrace"
            with open(args.trace, "rb") as f:
                reqs = list(parse_blktrace(f.read()))
        else:
            src = sys.stdin if args.trace == "-" else open(args.trace, encoding="utf-8",
                                                           errors="replace")
            lines = [(n, line) for n, line in enumerate(src, 1)
                     if line.strip() and not line.startswith("#")]
            if fmt == "auto":
                fmt = guess(lines[0][1]) if lines else None
                if fmt is None:
                    raise TraceError("cannot tell the format; give -f")
            if fmt == "msr":
                reqs = parse_msr(lines, args.disk)
            elif fmt == "fiu":
                reqs = parse_fiu(lines, args.disk)
            else:
                reqs = parse_csv(lines, args.csv)
            reqs = list(reqs)
        if args.limit:
            reqs = reqs[:args.limit]
        if not reqs:
            raise TraceError("no read or write requests in the trace")
    except (OSError, TraceError) as e:
        print(f"trace2iolog: {e}", file=sys.stderr)
        return 1

    extent = max(off + ln for _, _, off, ln in reqs)
    name = args.device or "/dev/replay"
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    t_first = min(t for t, _, _, _ in reqs)
    nr = nw = dropped = 0
    rbytes = wbytes = 0
    # fio skips the delay after an event stamped 0: stamp everything from 1 us
    out.write(f"fio version 3 iolog\n1 {name} add\n1 {name} open\n")
    last = 1
    for t, w, off, ln in reqs:
        if args.map == "scale" and extent > size:
            off = off * size // extent
        elif args.map == "fold":
            off %= size
        start = off // args.align * args.align
        end = -(-(off + max(ln, 1)) // args.align) * args.align
        if args.map == "none" and end > size:
            dropped += 1
            continue
        end = min(end, size)
        if start >= end:
            dropped += 1
            continue
        if tscale is not None:
            last = max(last, 1 + int((t - t_first) * tscale))
        out.write(f"{last} {name} {'write' if w else 'read'} {start} {end - start}\n")
        if w:
            nw += 1
            wbytes += end - start
        else:
            nr += 1
            rbytes += end - start
    out.write(f"{last} {name} close\n")
    if out is not sys.stdout:
        out.close()
    print(f"trace2iolog: {fmt}: {nr} reads ({rbytes} B), {nw} writes ({wbytes} B), "
          f"{dropped} dropped, onto {size} B", file=sys.stderr)
    return 0


def _is_blktrace(path):
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError:
        return False
    return len(head) == 4 and struct.unpack("=I", head)[0] & 0xffffff00 == BLK_MAGIC


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
