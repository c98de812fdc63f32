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
