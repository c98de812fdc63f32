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
  csv       a CSV-like trace (comma, tab, semicolon or space separated) with a
            time, an offset, a size and an op column. Without --csv its layout
            is detected from the first 1000 lines (below) and printed as a
            --csv spec. --csv SPEC names it in libCacheSim's style, keys over
            the default "time-col=1,lba-col=2,size-col=3,op-col=4,header=0,
            time-unit=us,lba-unit=512,size-unit=1,delimiter=comma,op-values=any"
            (the layout of CloudPhysics traces as CSV); time-unit ns, 100ns,
            us, ms or s; op-values any (R/W, read/write, 0x28/0x2a, 0x88/0x8a,
            40/42, 136/138), words (R/W, read/write), scsi-hex (READ/WRITE
            6/10/12/16 opcodes in hex, 0x optional: 28/2a...), scsi-dec
  blktrace  a binary blktrace dump (blkparse -i DEV -d FILE): queue events
  An MSR or FIU trace with a line of column names over it is still MSR or FIU.

CSV layout detection (no --csv; Documentation/traces.rst has the details):
  delimiter: the first of comma, tab, semicolon, space that gives at least 4
    columns. Header: the first line has a word over a column of numbers.
  columns: by the header's names (time/timestamp/ts, lba/offset/address/sector,
    size/length/bytes/blocks, op/type/rw/opcode/io_type; response/latency
    columns are no time), else by content: the op column holds only R/W,
    read/write or SCSI opcodes in hex (a letter or 0x in it; decimal 40/42
    only under an op name), the time column goes up, offset and size are
    whole numbers side by side, offset first (several fits: time, offset, size
    in columns 1-3 if that is one, else refused).
  units: a name's unit word (_ns/_us/_ms/_s, (ms), bytes, sectors; lba and
    sector mean 512 B). Sizes: bytes if all are multiples of 512, else 512-byte
    sectors. Offsets: what runs of sequential requests show (next = offset +
    size in bytes, sectors or 4 KiB blocks), else sectors if one is no multiple
    of 512, else bytes if 8 or more distinct ones, else refused. Time: epoch
    2000-2040 in s/ms/us/ns/filetime by magnitude, s if 6+ decimals, else
    undecided: us assumed with --timing fast, refused otherwise.
  It prints "trace2iolog: csv layout: SPEC (why)"; give --csv SPEC to pin it.
  When it cannot decide it exits 1 with the line, what was ambiguous and the
  --csv specs that would read it.

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
import collections
import fractions
import os
import re
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
               "lba-unit=512,size-unit=1,delimiter=comma,op-values=any")
# a time unit: (multiply, divide) to microseconds; 100ns is Windows filetime ticks
TIME_UNITS = {"ns": (1, 1000), "100ns": (1, 10), "us": (1, 1), "ms": (1000, 1),
              "s": (1000000, 1)}


DELIMITERS = {"comma": ",", "tab": "\t", "space": None, "semicolon": ";"}

# op-values: which op column values are reads and writes. "any" is the table the
# csv format has always had; the others are what layout detection picks.
OP_VALUES = ("any", "words", "scsi-hex", "scsi-dec")
OPS_ANY = {"r": False, "read": False, "0x28": False, "40": False, "0x88": False,
           "136": False, "w": True, "write": True, "0x2a": True, "42": True,
           "0x8a": True, "138": True}
OPS_WORDS = {"r": False, "read": False, "w": True, "write": True}
# SCSI READ/WRITE (6), (10), (12), (16)
SCSI_OPS = {0x08: False, 0x28: False, 0xa8: False, 0x88: False,
            0x0a: True, 0x2a: True, 0xaa: True, 0x8a: True}
HEXDIGITS = set("0123456789abcdef")


def op_of(value, kind):
    """True for a write, False for a read, None for neither (in op-values KIND)."""
    t = value.strip().lower()
    if kind == "any":
        return OPS_ANY.get(t)
    if kind == "words":
        return OPS_WORDS.get(t)
    if kind == "scsi-hex":
        h = t[2:] if t.startswith("0x") else t
        if 1 <= len(h) <= 2 and set(h) <= HEXDIGITS:
            return SCSI_OPS.get(int(h, 16))
        return None
    if t.isdigit() and len(t) <= 3:
        return SCSI_OPS.get(int(t))
    return None


def to_int(s):
    """An integer in decimal (leading zeros allowed) or 0x hex; ValueError if not."""
    s = s.strip()
    try:
        return int(s)
    except ValueError:
        return int(s, 0)


def to_us(s, unit):
    """A timestamp in UNIT as whole microseconds; ValueError if not a number."""
    mul, div = TIME_UNITS[unit]
    try:
        us = to_int(s) * mul // div
    except ValueError:
        us = int(fractions.Fraction(s.strip()) * mul / div)   # exact, 1700000000.000350 s
    if abs(us) >= 1 << 62:
        raise ValueError(s)
    return us


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
        raise TraceError("--csv: time-unit must be ns, 100ns, us, ms or s")
    for k in ("lba-unit", "size-unit"):
        if not out.get(k, "").isdigit() or int(out[k]) < 1:
            raise TraceError(f"--csv: {k} must be a positive number of bytes")
    if out.get("op-values", "any") not in OP_VALUES:
        raise TraceError("--csv: op-values must be any, words, scsi-hex or scsi-dec")
    return out


def split_fields(line, delim):
    return line.strip().split(delim)


def parse_csv(lines, spec):
    s = parse_csv_spec(CSV_DEFAULT + "," + spec if spec else CSV_DEFAULT)
    delim = DELIMITERS[s["delimiter"]]
    cols = [int(s[k]) - 1 for k in ("time-col", "lba-col", "size-col", "op-col")]
    tu, lu, su = s["time-unit"], int(s["lba-unit"]), int(s["size-unit"])
    kind = s["op-values"]
    skip = s.get("header", "0") == "1"
    for n, line in lines:
        if skip:
            skip = False
            continue
        f = split_fields(line, delim)
        if len(f) <= max(cols):
            raise TraceError(f"line {n}: {len(f)} columns, the spec needs {max(cols) + 1}: "
                             f"{line.strip()[:200]}")
        try:
            ts = to_us(f[cols[0]], tu)
            lba, size = to_int(f[cols[1]]), to_int(f[cols[2]])
        except ValueError:
            raise TraceError(f"line {n}: not a number in a time/lba/size column: "
                             f"{line.strip()[:200]}") from None
        w = op_of(f[cols[3]], kind)
        if w is None:
            raise TraceError(f"line {n}: op '{f[cols[3]].strip()}' is neither a read nor a "
                             f"write (op-values={kind}): {line.strip()[:200]}")
        yield ts, w, lba * lu, size * su


# Layout detection for the csv format without --csv (Documentation/traces.rst has
# the rules): the first SAMPLE_LINES lines decide, the whole file is then read
# with the spec they give, which is printed.
SAMPLE_LINES = 1000
MAX_IO = 32 << 20            # the largest request taken for plausible, bytes
# absolute timestamps: 2000-01-01 to 2040-01-01 since the epoch (filetime: 1601)
EPOCH_S = (946684800, 2208988800)
EPOCH_RANGES = (("s", 1), ("ms", 10**3), ("us", 10**6), ("ns", 10**9))
FILETIME_RANGE = ((946684800 + 11644473600) * 10**7, (2208988800 + 11644473600) * 10**7)
SPEC_KEYS = ("header", "delimiter", "time-col", "time-unit", "lba-col", "lba-unit",
             "size-col", "size-unit", "op-col", "op-values")

# header names: a name's words (camelCase and punctuation split) say a column's role
ROLE_WORDS = {
    "size": {"size", "length", "len", "count", "blocks", "nblocks", "blkcnt", "nsectors",
             "nbytes", "iosize"},
    "op": {"op", "ops", "type", "rw", "opcode", "iotype", "operation", "cmd", "command",
           "direction", "rwbs"},
    "time": {"timestamp", "time", "ts", "tstamp", "t", "arrival", "clock"},
    "lba": {"lba", "offset", "address", "addr", "sector", "lbn", "pos", "position", "blkno",
            "block", "blk", "slba"},
}
NOT_A_ROLE = {"response", "resp", "latency", "elapsed", "service", "duration", "wait"}
TIME_WORDS = {"ns": "ns", "nsec": "ns", "nanosec": "ns", "nanoseconds": "ns",
              "us": "us", "usec": "us", "microsec": "us", "microseconds": "us",
              "ms": "ms", "msec": "ms", "millisec": "ms", "milliseconds": "ms",
              "s": "s", "sec": "s", "secs": "s", "seconds": "s"}
SPACE_WORDS = {"b": 1, "byte": 1, "bytes": 1, "nbytes": 1, "sector": 512, "sectors": 512,
               "nsectors": 512, "lba": 512, "kb": 1024, "kib": 1024}


class LayoutError(TraceError):
    """Detection could not decide: the line, why, and specs that would read it."""

    def __init__(self, n, line, why, specs=(), hint=""):
        msg = f"line {n}: {why}\n  the line: {line.strip()[:200]}"
        if specs:
            msg += "\n  read it with " + "\n          or ".join(f"--csv '{s}'" for s in specs)
        if hint:
            msg += "\n  " + hint
        super().__init__(msg)


def name_words(name):
    name = name.strip().strip('"').replace("\u00b5", "u").replace("\u03bc", "u")
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.findall(r"[a-z]+", name.lower())


def header_roles(names):
    """{role: (column, unit or None)} of the roles the names give, first column wins."""
    roles = {}
    for c, name in enumerate(names):
        words = name_words(name)
        if set(words) & NOT_A_ROLE:
            continue
        role = next((r for r in ("size", "op", "time", "lba") if set(words) & ROLE_WORDS[r]),
                    None)
        if role is None and set(words) & {"bytes", "sectors"}:
            role = "size"               # "bytes" alone is a size, "offset_bytes" an offset
        if role is None or role in roles:
            continue
        units = TIME_WORDS if role == "time" else SPACE_WORDS
        roles[role] = (c, next((units[w] for w in words if w in units), None))
    return roles


def is_num(s):
    try:
        float(s)
        return True
    except ValueError:
        try:
            to_int(s)
            return True
        except ValueError:
            return False


def op_kinds(values, named):
    """The op-values kinds that read every value, most specific first."""
    kinds = []
    low = [v.strip().lower() for v in values]
    if all(op_of(v, "words") is not None for v in low):
        kinds.append("words")
    if all(op_of(v, "scsi-hex") is not None for v in low) and (
            named or any(v.startswith("0x") or set(v) & set("abcdef") for v in low)):
        kinds.append("scsi-hex")
    if named and all(op_of(v, "scsi-dec") is not None for v in low):
        kinds.append("scsi-dec")
    if all(op_of(v, "any") is not None for v in low) and (
            named or any(not v.isdigit() for v in low)):
        kinds.append("any")
    return kinds


OP_NOTES = {"words": "R/W words", "scsi-hex": "SCSI hex", "scsi-dec": "SCSI decimal",
            "any": "mixed R/W words and SCSI opcodes"}


def time_like(vals):
    """Non-decreasing in at least 95 % of steps, and not constant."""
    if len(vals) < 2 or max(vals) == min(vals):
        return False
    down = sum(b < a for a, b in zip(vals, vals[1:]))
    return down <= 0.05 * (len(vals) - 1)


def size_unit_of(sizes):
    """(unit, note) of a size column, or (None, why) when neither unit fits."""
    nz = [v for v in sizes if v > 0]
    if not nz or all(v % 512 == 0 for v in nz):
        return 1, "bytes (all multiples of 512)"
    if max(nz) * 512 <= MAX_IO:
        return 512, "512-byte sectors (not all multiples of 512)"
    return None, (f"sizes are not all multiples of 512 (not bytes) and up to {max(nz)} "
                  f"(above {MAX_IO >> 20} MiB as sectors)")


def lba_unit_of(offs, size_bytes):
    """(unit, note) of an offset column, or (None, why) when it cannot tell."""
    votes = {1: 0, 512: 0, 4096: 0}
    for a, b, sb in zip(offs, offs[1:], size_bytes):
        if b > a and sb > 0:
            for unit in votes:
                if (b - a) * unit == sb:
                    votes[unit] += 1
    aligned = all(o % 512 == 0 for o in offs)
    best = max(votes, key=votes.get)
    if votes[best] >= 2 and votes[best] * 10 >= sum(votes.values()) * 9 and (
            best != 1 or aligned):
        what = {1: "bytes", 512: "512-byte sectors", 4096: "4 KiB blocks"}[best]
        return best, f"{what} (sequential requests: next offset = offset + size)"
    if not aligned:
        return 512, "512-byte sectors (not all multiples of 512)"
    distinct = len({o for o in offs if o})
    if distinct >= 8:
        return 1, f"bytes (all {distinct} distinct ones multiples of 512)"
    return None, (f"every offset is a multiple of 512 (bytes?) but only {distinct} distinct "
                  f"ones, too few to rule out 512-byte sectors, and no sequential run tells")


def time_unit_of(raw):
    """(unit, note) of a time column, or (None, why)."""
    vals = [numval(v) for v in raw]
    lo, hi = min(vals), max(vals)
    for unit, mul in EPOCH_RANGES:
        if EPOCH_S[0] * mul <= lo and hi <= EPOCH_S[1] * mul:
            return unit, f"{unit} (absolute: 2000-2040 since 1970 in {unit})"
    if FILETIME_RANGE[0] <= lo and hi <= FILETIME_RANGE[1]:
        return "100ns", "100ns (absolute: Windows filetime ticks)"
    if any(len(v.strip().partition(".")[2]) >= 6 for v in raw if "." in v):
        return "s", "s (fractions of 6 or more digits)"
    return None, "relative times with no unit in the header or in their magnitude"


def spec_str(lay):
    return ",".join(f"{k}={lay[k]}" for k in SPEC_KEYS)


def detect_csv(lines, timed):
    """The --csv spec of LINES (and notes on why), or LayoutError. TIMED: the times
    matter (--timing keep or a factor)."""
    sample = lines[:SAMPLE_LINES]
    if not sample:
        raise TraceError("no read or write requests in the trace")
    n0, l0 = sample[0]
    delim = None
    for name in ("comma", "tab", "semicolon", "space"):
        counts = collections.Counter(len(split_fields(line, DELIMITERS[name]))
                                     for _, line in sample)
        if counts.most_common(1)[0][0] >= 4:
            delim = name
            break
    if delim is None:
        raise LayoutError(n0, l0, f"{len(l0.strip().split(','))} columns: a CSV trace needs "
                          "at least 4 columns (time, offset, size, op), separated by commas, "
                          "tabs, semicolons or spaces")
    d = DELIMITERS[delim]
    rows = [(n, line, split_fields(line, d)) for n, line in sample]
    ncols = collections.Counter(len(f) for _, _, f in rows).most_common(1)[0][0]
    for n, line, f in rows:
        if len(f) < ncols:
            raise LayoutError(n, line, f"{len(f)} columns where the lines around have {ncols}",
                              hint="mend or delete that line")
    first = rows[0][2]
    rest = rows[1:]
    if rest:
        # a name over a column of decimal numbers (an op such as 2a over 28s is no name)
        numeric = [c for c in range(ncols) if all(_isdec(f[c]) for _, _, f in rest)]
        header = any(not _isdec(first[c]) and op_of(first[c], "any") is None
                     and op_of(first[c], "scsi-hex") is None for c in numeric)
    else:
        header = not any(is_num(v) for v in first)
    data = rest if header else rows
    if not data:
        raise TraceError("no read or write requests in the trace")
    roles = header_roles(first[:ncols]) if header else {}
    names = first if header else None
    notes = []
    if roles:
        notes.append("columns by the header's names")
    col = [[f[c] for _, _, f in data] for c in range(ncols)]

    def first_bad(c, ok):
        for n, line, f in data:
            if not ok(f[c]):
                return n, line
        return data[0][:2]

    def label(c):
        return f"column {c + 1}" + (f" ({names[c].strip()})" if names else "")

    lay = {"header": int(header), "delimiter": delim}
    # the op column
    if "op" in roles:
        oc = roles["op"][0]
        kinds = op_kinds(col[oc], True)
        if not kinds:
            best = max(OP_VALUES, key=lambda k: sum(op_of(v, k) is not None for v in col[oc]))
            n, line = first_bad(oc, lambda v: op_of(v, best) is not None)
            raise LayoutError(n, line, f"op '{split_fields(line, d)[oc].strip()}' in "
                              f"{label(oc)} is neither a read nor a write",
                              hint="ops are R/W, read/write or SCSI READ/WRITE opcodes "
                              "(28/2a, 88/8a, a8/aa, 08/0a in hex); leave other lines out")
    else:
        cands = [(c, op_kinds(col[c], False)) for c in range(ncols)]
        cands = [(c, k) for c, k in cands if k]
        if not cands:
            near = [c for c in range(ncols)
                    if sum(op_of(v, "any") is not None or op_of(v, "scsi-hex") is not None
                           for v in col[c]) * 2 >= len(col[c])
                    and any(not is_num(v) for v in col[c])]
            if near:
                oc = near[0]
                n, line = first_bad(oc, lambda v: op_of(v, "any") is not None
                                    or op_of(v, "scsi-hex") is not None)
                raise LayoutError(n, line, f"op '{split_fields(line, d)[oc].strip()}' in "
                                  f"{label(oc)} is neither a read nor a write",
                                  hint="ops are R/W, read/write or SCSI READ/WRITE opcodes "
                                  "(28/2a, 88/8a, a8/aa, 08/0a in hex); leave other lines out")
            raise LayoutError(data[0][0], data[0][1], "no column holds only reads and writes "
                              "(R/W, read/write or SCSI opcodes in hex with a letter or 0x)",
                              hint="name the columns with --csv time-col=,lba-col=,size-col=,"
                              "op-col=,op-values=words|scsi-hex|scsi-dec (and the units)")
        oc, kinds = cands[0]
    lay["op-col"], lay["op-values"] = oc + 1, kinds[0]
    notes.append("ops: " + OP_NOTES[kinds[0]])
    # time, offset and size columns
    nums = [c for c in range(ncols) if c != oc and all(is_num(v) for v in col[c])]

    def ints(c):
        try:
            return [to_int(v) for v in col[c]]
        except ValueError:
            return None

    for role in ("time", "lba", "size"):
        if role in roles and roles[role][0] != oc:
            c = roles[role][0]
            ok = is_num if role == "time" else _isint
            if not all(ok(v) for v in col[c]):
                n, line = first_bad(c, ok)
                raise LayoutError(n, line, f"{label(c)}, the {role} column by its name, holds "
                                  f"'{split_fields(line, d)[c].strip()}'")
    intcols = [c for c in nums if ints(c) is not None and min(ints(c)) >= 0]
    fixed = {r: roles[r][0] for r in ("time", "lba", "size") if r in roles}
    tcands = [fixed["time"]] if "time" in fixed else \
        [c for c in nums if time_like([numval(v) for v in col[c]])]
    cands = []
    for t in tcands:
        for lc in ([fixed["lba"]] if "lba" in fixed else intcols):
            for sc in ([fixed["size"]] if "size" in fixed else intcols):
                if len({t, lc, sc, oc}) < 4:
                    continue
                if "lba" not in fixed and "size" not in fixed and sc != lc + 1:
                    continue
                if "size" not in fixed and size_unit_of(ints(sc))[0] is None:
                    continue
                cands.append((t, lc, sc))
    if not cands:
        raise LayoutError(data[0][0], data[0][1], "cannot find the time, offset and size "
                          "columns (time: numbers that go up; offset and size: whole numbers, "
                          "side by side, offset first)",
                          hint="name them with --csv time-col=,lba-col=,size-col= (and the units)")
    if len(cands) > 1 and (0, 1, 2) in cands:
        cands = [(0, 1, 2)]
        notes.append("columns time, offset, size in the default order")
    if len(cands) > 1:
        specs = []
        for t, lc, sc in cands[:4]:
            lay2 = dict(lay, **{"time-col": t + 1, "lba-col": lc + 1, "size-col": sc + 1})
            lay2.update({"time-unit": "us", "lba-unit": 512, "size-unit": 1})
            specs.append(spec_str(lay2))
        raise LayoutError(data[0][0], data[0][1], "cannot tell the time, offset and size "
                          "columns apart: " + "; ".join(
                              f"{t + 1}, {lc + 1}, {sc + 1}" for t, lc, sc in cands[:4]) +
                          " would all do (units below are a guess)", specs)
    t, lc, sc = cands[0]
    lay.update({"time-col": t + 1, "lba-col": lc + 1, "size-col": sc + 1})
    sizes, offs = ints(sc), ints(lc)
    # units
    su = roles["size"][1] if "size" in roles and roles["size"][0] == sc else None
    if su:
        notes.append(f"sizes: {'bytes' if su == 1 else f'units of {su} B'} by the header")
    else:
        su, why = size_unit_of(sizes)
        if su is None:
            big = max(range(len(sizes)), key=lambda i: sizes[i])
            lay.update({"time-unit": "us", "lba-unit": 512})
            raise LayoutError(data[big][0], data[big][1], f"cannot tell the sizes' unit: {why}",
                              [spec_str(dict(lay, **{"size-unit": u})) for u in (1, 512)])
        notes.append("sizes: " + why)
    lay["size-unit"] = su
    lu = roles["lba"][1] if "lba" in roles and roles["lba"][0] == lc else None
    if lu:
        notes.append(f"offsets: {'bytes' if lu == 1 else f'units of {lu} B'} by the header")
    else:
        lu, why = lba_unit_of(offs, [v * su for v in sizes])
        if lu is None:
            lay["time-unit"] = "us"
            raise LayoutError(data[0][0], data[0][1], f"cannot tell the offsets' unit: {why}",
                              [spec_str(dict(lay, **{"lba-unit": u})) for u in (1, 512)])
        notes.append("offsets: " + why)
    lay["lba-unit"] = lu
    tu = roles["time"][1] if "time" in roles and roles["time"][0] == t else None
    if tu:
        notes.append(f"time: {tu} by the header")
    else:
        tu, why = time_unit_of(col[t])
        if tu is None and timed:
            raise LayoutError(data[0][0], data[0][1], f"cannot tell the time unit: {why}; "
                              "--timing needs it",
                              [spec_str(dict(lay, **{"time-unit": u}))
                               for u in ("ns", "us", "ms", "s")])
        if tu is None:
            tu = "us"
            why = "us assumed (" + why + "; only --timing keep or a factor uses it)"
        notes.append("time: " + why)
    lay["time-unit"] = tu
    return spec_str(lay), notes


def numval(v):
    try:
        return float(v)
    except ValueError:
        return float(to_int(v))


def _isdec(v):
    try:
        float(v)
        return True
    except ValueError:
        return False


def _isint(v):
    try:
        to_int(v)
        return True
    except ValueError:
        return False


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
    if "," in line or any(len(line.split(d)) >= 4 for d in ("\t", ";", None)):
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
                # an MSR or FIU trace with a line of column names over it
                if (fmt != "msr" and len(lines) > 1 and guess(lines[1][1]) in ("msr", "fiu")
                        and not any(is_num(w) for w in re.split(r"[,\s]+", lines[0][1].strip()))):
                    fmt, lines = guess(lines[1][1]), lines[1:]
                if fmt is None:
                    raise TraceError("cannot tell the format; give -f")
            if fmt == "msr":
                reqs = parse_msr(lines, args.disk)
            elif fmt == "fiu":
                reqs = parse_fiu(lines, args.disk)
            elif args.csv:
                reqs = parse_csv(lines, args.csv)
            else:
                spec, notes = detect_csv(lines, tscale is not None)
                print(f"trace2iolog: csv layout: {spec} ({'; '.join(notes)})", file=sys.stderr)
                reqs = parse_csv(lines, spec)
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
