# SPDX-License-Identifier: GPL-2.0
"""Host tests of the trace tools: scripts/trace2iolog.py and scripts/gentrace.py."""

import collections
import gzip
import os
import struct
import subprocess
import sys
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
T2I = os.path.join(TOP, "scripts", "trace2iolog.py")
GEN = os.path.join(TOP, "scripts", "gentrace.py")


def run(prog, *args, stdin=None):
    return subprocess.run([sys.executable, prog, *args], input=stdin, capture_output=True,
                          text=True, check=False)


def ios(iolog):
    """(op, offset, length, ts) of every I/O line; checks the frame of the log."""
    lines = iolog.splitlines()
    assert lines[0] == "fio version 3 iolog", lines[0]
    assert lines[1].split()[1:] == ["/dev/replay", "add"], lines[1]
    assert lines[2].split()[1:] == ["/dev/replay", "open"], lines[2]
    assert lines[-1].split()[1:] == ["/dev/replay", "close"], lines[-1]
    out = []
    for line in lines[3:-1]:
        ts, _name, op, off, ln = line.split()
        out.append((op, int(off), int(ln), int(ts)))
    return out


class Trace2Iolog(unittest.TestCase):
    def convert(self, text, *args, fmt=None):
        with tempfile.NamedTemporaryFile("w", suffix=".trace", delete=False) as f:
            f.write(text)
        self.addCleanup(os.unlink, f.name)
        a = ([f"-f{fmt}"] if fmt else []) + list(args) + [f.name]
        return run(T2I, *a)

    MSR = ("128166372000000000,hm,0,Read,8192,4096,100\n"
           "128166372000010000,hm,0,Write,1048576,8192,100\n"
           "128166372000020000,hm,1,Write,0,512,100\n")

    def test_msr(self):
        r = self.convert(self.MSR, "--size", "16M")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([i[:3] for i in ios(r.stdout)],
                         [("read", 8192, 4096), ("write", 1048576, 8192), ("write", 0, 4096)])
        self.assertIn("msr: 1 reads (4096 B), 2 writes (12288 B)", r.stderr)

    def test_msr_disk_filter(self):
        r = self.convert(self.MSR, "--size", "16M", "--disk", "1")
        self.assertEqual([i[:3] for i in ios(r.stdout)], [("write", 0, 4096)])

    def test_timing(self):
        # MSR ticks are 100 ns: 10000 ticks = 1 ms = 1000 us between requests
        keep = ios(self.convert(self.MSR, "--size", "16M", "--timing", "keep").stdout)
        self.assertEqual([i[3] for i in keep], [1, 1001, 2001])
        fast = ios(self.convert(self.MSR, "--size", "16M", "--timing", "fast").stdout)
        self.assertEqual([i[3] for i in fast], [1, 1, 1])
        x2 = ios(self.convert(self.MSR, "--size", "16M", "--timing", "2").stdout)
        self.assertEqual([i[3] for i in x2], [1, 501, 1001])

    def test_fiu(self):
        fiu = ("89966527760000 4892 syslogd 904265560 8 W 6 0 531dcd2aa1a2cd8b7bdd1fbd8bbaf4c1\n"
               "89966527770000 4892 syslogd 904265568 16 R 6 0 0\n")
        r = self.convert(fiu, "--size", "1T")
        self.assertEqual(r.returncode, 0, r.stderr)
        got = ios(r.stdout)
        self.assertEqual([i[:3] for i in got],
                         [("write", 904265560 * 512, 4096), ("read", 904265568 * 512, 8192)])
        self.assertIn("fiu:", r.stderr)

    def test_csv_cloudphysics_default(self):
        csv = "100,16,4096,R\n200,24,8192,0x2a\n"
        r = self.convert(csv, "--size", "1M", fmt="csv")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([i[:3] for i in ios(r.stdout)], [("read", 8192, 4096), ("write", 12288, 8192)])

    def test_csv_spec(self):
        csv = "op;size;lba;t\nwrite;4096;3;5\n"
        r = self.convert(csv, "--size", "1M", "--csv",
                         "time-col=4,op-col=1,size-col=2,lba-col=3,header=1,delimiter=semicolon,"
                         "lba-unit=4096", fmt="csv")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([i[:3] for i in ios(r.stdout)], [("write", 12288, 4096)])

    def test_blktrace(self):
        def rec(t, sector, nbytes, action, pdu=b""):
            return struct.pack("=IIQQIIIIIHH", 0x65617407, 0, t, sector, nbytes, action,
                               1, 0, 0, 0, len(pdu)) + pdu
        q, issue = 1, 7
        rd, wr = (1 << 0) << 16, (1 << 1) << 16
        data = (rec(5000, 8, 4096, q | rd | (1 << 20)) +
                rec(6000, 8, 4096, issue | rd, b"xx") +          # not a queue event
                rec(9000, 64, 8192, q | wr | (1 << 20), b"pdu") +
                rec(9500, 0, 0, q | wr))                          # an empty flush
        with tempfile.NamedTemporaryFile("wb", suffix=".bin", delete=False) as f:
            f.write(data)
        self.addCleanup(os.unlink, f.name)
        r = run(T2I, "--size", "1M", "--timing", "keep", f.name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(ios(r.stdout), [("read", 4096, 4096, 1), ("write", 32768, 8192, 5)])
        with open(f.name, "ab") as g:
            g.write(b"\x07\x74")
        r = run(T2I, "--size", "1M", f.name)
        self.assertEqual(r.returncode, 1)
        self.assertIn("truncated", r.stderr)

    def test_blktrace_real_capture(self):
        # a capture by the real blktrace in the VM: every queued I/O, in order,
        # must be what fio logged it submitted (tests/user/data/README)
        data = os.path.join(os.path.dirname(__file__), "data")
        with gzip.open(os.path.join(data, "blktrace-nullb0.bin.gz")) as g:
            cap = g.read()
        with tempfile.NamedTemporaryFile("wb", suffix=".bin", delete=False) as f:
            f.write(cap)
        self.addCleanup(os.unlink, f.name)
        r = run(T2I, "-f", "blktrace", "--size", "64M", "--map", "none", f.name)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = [i[:3] for i in ios(r.stdout)]
        want = []
        for log in ("fio-randrw.iolog.gz", "fio-seqwrite.iolog.gz"):
            with gzip.open(os.path.join(data, log), "rt") as g:
                for line in g:
                    w = line.split()
                    if len(w) == 5 and w[2] in ("read", "write"):
                        want.append((w[2], int(w[3]), int(w[4])))
        self.assertEqual(got, want)
        # and blkparse's own summary of the capture
        self.assertEqual(sum(1 for o in got if o[0] == "read"), 204)
        self.assertEqual(sum(n for o, _, n in got if o == "read"), 816 << 10)
        self.assertEqual(sum(1 for o in got if o[0] == "write"), 324)
        self.assertEqual(sum(n for o, _, n in got if o == "write"), 2256 << 10)
        self.assertIn("204 reads (835584 B), 324 writes (2310144 B), 0 dropped", r.stderr)

    def test_mapping(self):
        far = "1,x,0,Read,10485760,4096,1\n2,x,0,Read,1000,100,1\n"
        fold = ios(self.convert(far, "--size", "4M", "--map", "fold").stdout)
        self.assertEqual([i[1:3] for i in fold], [(10485760 % (4 << 20), 4096), (0, 4096)])
        none = self.convert(far, "--size", "4M", "--map", "none")
        self.assertEqual([i[1:3] for i in ios(none.stdout)], [(0, 4096)])
        self.assertIn("1 dropped", none.stderr)
        scale = ios(self.convert(far, "--size", "4M", "--map", "scale").stdout)
        # the extent (10 MiB + 4 KiB) maps onto 4 MiB; offsets stay inside
        self.assertTrue(all(o + n <= 4 << 20 for _, o, n, _ in scale))
        self.assertEqual(scale[1][1:3], (0, 4096))
        # an unaligned request covers every 4 KiB block it touches
        r = ios(self.convert("1,x,0,Write,4000,200,1\n", "--size", "1M").stdout)
        self.assertEqual(r[0][1:3], (0, 8192))

    def test_limit(self):
        r = self.convert(self.MSR, "--size", "16M", "--limit", "2")
        self.assertEqual(len(ios(r.stdout)), 2)

    def test_bad_input(self):
        cases = [
            ("128166372000000000,hm,0,Erase,0,4096,1\n", "-fmsr", "want Read or Write"),
            ("abc,hm,0,Read,0,4096,1\n", "-fmsr", "not a number"),
            ("1 2 p 3 4 X 0 0 m\n", "-ffiu", "want R or W"),
            ("1,2\n", "-fcsv", "columns"),
            ("hello\n", None, "cannot tell the format"),
            ("# only a comment\n", "-fmsr", "no read or write requests"),
        ]
        for text, fmt, msg in cases:
            args = ["--size", "1M"] + ([fmt] if fmt else [])
            r = self.convert(text, *args)
            self.assertEqual(r.returncode, 1, (text, r.stderr))
            self.assertIn(msg, r.stderr, text)
            self.assertEqual(r.stdout, "", text)

    def test_usage_errors(self):
        self.assertEqual(self.convert(self.MSR).returncode, 1)    # no size
        self.assertEqual(self.convert(self.MSR, "--size", "1M", "--timing", "0").returncode, 2)
        self.assertEqual(self.convert(self.MSR, "--size", "1M", "--align", "3000").returncode, 2)
        self.assertEqual(self.convert(self.MSR, "--size", "zero").returncode, 2)
        r = self.convert("1,2,3,R\n", "--size", "1M", "--csv", "time-unit=fortnight", fmt="csv")
        self.assertEqual(r.returncode, 1)
        self.assertIn("time-unit", r.stderr)


LAYOUTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "layouts")


class CsvLayouts(unittest.TestCase):
    """Layout detection of CSV-like traces without --csv (tests/user/data/layouts/)."""

    def conv(self, name, *args, timing="keep"):
        path = name if os.path.isabs(name) else os.path.join(LAYOUTS, name)
        return run(T2I, "--size", "1T", "--align", "512", "--timing", timing, *args, path)

    def layout(self, r):
        """The spec of the printed layout line."""
        for line in r.stderr.splitlines():
            if line.startswith("trace2iolog: csv layout: "):
                return line.split()[3]
        self.fail(r.stderr)

    def check(self, name, spec, want, timing="keep"):
        r = self.conv(name, timing=timing)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.layout(r), spec)
        self.assertEqual(ios(r.stdout), want)
        # the printed spec pins the layout: the same iolog, and no layout line
        p = self.conv(name, "--csv", spec, timing=timing)
        self.assertEqual((p.returncode, p.stdout), (0, r.stdout), p.stderr)
        self.assertNotIn("csv layout", p.stderr)

    def refused(self, r, line, *msgs):
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertNotIn("Traceback", r.stderr)
        self.assertIn(f"trace2iolog: line {line}: ", r.stderr)
        for m in msgs:
            self.assertIn(m, r.stderr)
        return [w.split("'")[1] for w in r.stderr.splitlines() if "--csv '" in w]

    def test_header_rw_bytes_epoch_seconds(self):
        # named columns among others (Response is no time), R/W, byte offsets, seconds
        self.check("header-rw-bytes.csv",
                   "header=1,delimiter=comma,time-col=1,time-unit=s,lba-col=5,lba-unit=1,"
                   "size-col=6,size-unit=1,op-col=3,op-values=words",
                   [("read", 1048576, 4096, 1), ("write", 2097152, 8192, 251),
                    ("read", 53248, 4096, 1251), ("write", 7340032, 16384, 1301),
                    ("read", 1048576, 4096, 1901), ("read", 12288, 512, 1911),
                    ("write", 409600, 4096, 3401), ("write", 8192000, 65536, 3901),
                    ("read", 2097152, 8192, 4151), ("read", 655360, 4096, 4901),
                    ("write", 3145728, 4096, 5026), ("read", 999424, 12288, 5901)])

    def test_header_scsi_hex(self):
        # the issue's case: a header, SCSI opcodes in hex without 0x, lba and ns by name
        self.check("header-scsi-hex.csv",
                   "header=1,delimiter=comma,time-col=1,time-unit=ns,lba-col=3,lba-unit=512,"
                   "size-col=4,size-unit=512,op-col=2,op-values=scsi-hex",
                   [("read", 2048 * 512, 4096, 1), ("write", 4096 * 512, 8192, 16),
                    ("read", 2056 * 512, 4096, 16), ("read", 100008 * 512, 32768, 41),
                    ("write", 77 * 512, 512, 42), ("write", 4112 * 512, 8192, 91),
                    ("read", 2048 * 512, 4096, 121), ("read", 9000 * 512, 16384, 122),
                    ("write", 555560 * 512, 4096, 201), ("read", 16 * 512, 4096, 251),
                    ("write", 4128 * 512, 8192, 261), ("read", 31337 * 512, 1024, 301)])

    def test_no_header_read_write_epoch_ms(self):
        # the default column order, Read/Write, sectors (2057 is no multiple of 512), ms
        self.check("noheader-readwrite-ms.csv",
                   "header=0,delimiter=comma,time-col=1,time-unit=ms,lba-col=2,lba-unit=512,"
                   "size-col=3,size-unit=1,op-col=4,op-values=words",
                   [("read", 2056 * 512, 4096, 1), ("write", 9999 * 512, 512, 1001),
                    ("read", 123456 * 512, 8192, 5001), ("read", 88 * 512, 4096, 5001),
                    ("write", 2056 * 512, 4096, 10001), ("write", 700001 * 512, 65536, 50001),
                    ("read", 64 * 512, 16384, 51001), ("read", 5000 * 512, 4096, 100001),
                    ("write", 123 * 512, 1024, 101001), ("read", 77777 * 512, 8192, 200001),
                    ("read", 2056 * 512, 4096, 210001), ("write", 31 * 512, 4096, 300001)])

    def test_no_header_tabs_time_last(self):
        # device, op, offset, length, time: columns found by content; runs of
        # sequential writes say the offsets are bytes; epoch microseconds
        self.check("noheader-words.tsv",
                   "header=0,delimiter=tab,time-col=5,time-unit=us,lba-col=3,lba-unit=1,"
                   "size-col=4,size-unit=1,op-col=2,op-values=words",
                   [("write", 1052672, 4096, 1), ("write", 1056768, 4096, 81),
                    ("write", 1060864, 8192, 151), ("read", 65536, 4096, 901),
                    ("read", 69632, 4096, 911), ("read", 73728, 16384, 1401),
                    ("write", 40960, 4096, 1901), ("read", 9437184, 65536, 2501),
                    ("write", 45056, 4096, 2901), ("read", 131072, 4096, 3801),
                    ("write", 4096, 4096, 3901), ("read", 8192, 8192, 4901)])

    def test_header_semicolons_4k_blocks(self):
        # time(ms) by name; sequential runs say the addresses count 4 KiB blocks
        self.check("header-semicolon-ms.csv",
                   "header=1,delimiter=semicolon,time-col=1,time-unit=ms,lba-col=2,"
                   "lba-unit=4096,size-col=3,size-unit=1,op-col=4,op-values=words",
                   [("write", 100 << 12, 8192, 1), ("write", 102 << 12, 8192, 3001),
                    ("write", 104 << 12, 4096, 5001), ("read", 10 << 12, 4096, 5001),
                    ("read", 11 << 12, 4096, 9001), ("read", 12 << 12, 16384, 12001),
                    ("write", 5000 << 12, 4096, 20001), ("read", 300 << 12, 65536, 21001),
                    ("write", 77 << 12, 4096, 40001), ("write", 78 << 12, 4096, 41001),
                    ("read", 1000 << 12, 8192, 55001), ("read", 3 << 12, 4096, 60001)])

    def test_relative_times(self):
        # 0x opcodes, spaces; times with no unit: us assumed when only the order counts
        want = [("read", 800 * 512, 4096), ("read", 808 * 512, 4096),
                ("write", 816 * 512, 8192), ("write", 4000 * 512, 512),
                ("read", 17 * 512, 4096), ("write", 12345 * 512, 16384),
                ("read", 800 * 512, 4096), ("write", 90000 * 512, 4096),
                ("write", 90008 * 512, 4096), ("read", 3 * 512, 1024),
                ("read", 64 * 512, 65536), ("write", 5 * 512, 4096)]
        spec = ("header=0,delimiter=space,time-col=1,time-unit=us,lba-col=2,lba-unit=512,"
                "size-col=3,size-unit=1,op-col=4,op-values=scsi-hex")
        r = self.conv("noheader-space-0x.txt", timing="fast")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.layout(r), spec)
        self.assertIn("us assumed", r.stderr)
        self.assertEqual([i[:3] for i in ios(r.stdout)], want)
        # --timing keep needs the unit: refused, with a spec per unit
        specs = self.refused(self.conv("noheader-space-0x.txt"), 1, "cannot tell the time unit",
                             "the line: 100 800 4096 0x28")
        self.assertEqual(specs, [spec.replace("time-unit=us", f"time-unit={u}")
                                 for u in ("ns", "us", "ms", "s")])
        r = self.conv("noheader-space-0x.txt", "--csv", specs[2])
        self.assertEqual([i[3] for i in ios(r.stdout)][:3], [1, 50001, 160001])

    def test_ambiguous_offsets(self):
        specs = self.refused(self.conv("ambiguous-offsets.csv"), 2,
                             "cannot tell the offsets' unit", "the line: 10,R,1024,512")
        self.assertEqual(len(specs), 2)
        self.assertIn("lba-unit=1,", specs[0])
        self.assertIn("lba-unit=512,", specs[1])
        for spec, unit in zip(specs, (1, 512)):
            r = self.conv("ambiguous-offsets.csv", "--csv", spec)
            self.assertEqual([i[1] for i in ios(r.stdout)], [1024 * unit, 8192 * unit,
                                                             1024 * unit, 65536 * unit])

    def test_unknown_op(self):
        self.refused(self.conv("unknown-ops.csv"), 8, "op 'F' in column 4 (rw)",
                     "the line: 70,0,0,F")

    def test_garbled_line(self):
        # in the sample that decides the layout
        self.refused(self.conv("garbled.csv"), 9, "2 columns", "the line: 900,1234")
        # deep in the file, after the sample: the layout is printed, then the line named
        text = "".join(f"{100 * i},{8 * i},4096,{'RW'[i % 2]}\n" for i in range(1, 1501))
        text = text.replace("\n140000,11200,", "\n140000,1l200,")
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write(text)
        self.addCleanup(os.unlink, f.name)
        r = self.conv(f.name, timing="fast")
        self.assertIn("csv layout: header=0,", r.stderr)
        self.refused(r, 1400, "not a number", "140000,1l200,4096,R")

    def test_decimal_opcodes(self):
        # 40/42 are SCSI opcodes in decimal only under an op name
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("ts_us,lba,size,cmd\n1,8,4096,40\n2,16,4096,42\n3,24,4096,136\n")
        self.addCleanup(os.unlink, f.name)
        r = self.conv(f.name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(",op-col=4,op-values=scsi-dec ", r.stderr)
        self.assertEqual([i[0] for i in ios(r.stdout)], ["read", "write", "read"])
        with open(f.name, "w", encoding="utf-8") as g:
            g.write("1,8,4096,40\n2,16,4096,42\n")
        self.refused(self.conv(f.name), 1, "no column holds only reads and writes")

    def test_msr_fiu_under_a_header(self):
        r = run(T2I, "--size", "16M", "-", stdin="Timestamp,Hostname,DiskNumber,Type,Offset,"
                "Size,ResponseTime\n" + Trace2Iolog.MSR)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("msr: 1 reads (4096 B), 2 writes (12288 B)", r.stderr)
        r = run(T2I, "--size", "1T", "-", stdin="ts pid process lba size rw major minor md5\n"
                "89966527760000 4892 syslogd 904265560 8 W 6 0 531dcd2aa1a2cd8b\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("fiu: 0 reads (0 B), 1 writes (4096 B)", r.stderr)


class GenTrace(unittest.TestCase):
    def gen(self, kind, *args):
        r = run(GEN, kind, "--blocks", "4096", "--requests", "20000", *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [line.split(",") for line in r.stdout.splitlines()]
        self.assertEqual(len(rows), 20000)
        return r.stdout, rows

    def test_reproducible(self):
        for kind in ("zipf-read", "write-heavy", "scan"):
            a, _ = self.gen(kind)
            b, _ = self.gen(kind)
            c, _ = self.gen(kind, "--seed", "2")
            self.assertEqual(a, b, kind)
            self.assertNotEqual(a, c, kind)

    def test_mixes(self):
        for kind, lo, hi in (("zipf-read", 0.05, 0.15), ("write-heavy", 0.85, 0.95),
                             ("scan", 0.0, 0.15)):
            _, rows = self.gen(kind)
            w = sum(r[3] == "Write" for r in rows) / len(rows)
            self.assertTrue(lo <= w <= hi, f"{kind}: write share {w:.3f}")
            self.assertTrue(all(int(r[4]) + int(r[5]) <= 4096 * 4096 for r in rows), kind)

    def test_zipf_hot_set(self):
        _, rows = self.gen("zipf-read")
        c = collections.Counter(r[4] for r in rows)
        top = sum(n for _, n in c.most_common(len(c) // 10))
        self.assertGreater(top / len(rows), 0.5)

    def test_scan_is_sequential(self):
        _, rows = self.gen("scan")
        scan = [int(r[4]) for r in rows[1500:2000]]
        self.assertTrue(all(int(r[5]) == 65536 for r in rows[1500:2000]))
        steps = collections.Counter(b - a for a, b in zip(scan, scan[1:]))
        self.assertEqual(steps.most_common(1)[0][0], 65536)
        # the next scan goes on where this one stopped, wrapping at the end
        self.assertEqual(int(rows[3500][4]), (scan[-1] + 65536) % (4096 * 4096))
        # between scans, reads stay in the hot quarter
        self.assertTrue(all(int(r[4]) < 4096 * 1024 for r in rows[:1500]))

    def test_pipeline(self):
        text, _ = self.gen("write-heavy")
        r = run(T2I, "-fmsr", "--size", "16M", "-", stdin=text)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = ios(r.stdout)
        self.assertEqual(len(got), 20000)
        self.assertTrue(all(o % 4096 == 0 and n % 4096 == 0 and o + n <= 16 << 20
                            for _, o, n, _ in got))

    def test_bad_args(self):
        self.assertEqual(run(GEN, "zipf-read", "--blocks", "1000").returncode, 2)
        self.assertEqual(run(GEN, "nope").returncode, 2)


if __name__ == "__main__":
    unittest.main()
