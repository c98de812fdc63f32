# SPDX-License-Identifier: GPL-2.0
"""replay-log's sampled sweep (tests/tools/replay-log.c), on a log made here.

The VM's crash sweep checks a seeded sample of the FLUSH/FUA points of a
dm-log-writes log (replay-log sweep -n COUNT -s SEED). These tests build the
tool on the host, write a small log in dm-log-writes' format, and check that a
seed always draws the same points, that other seeds draw others, that COUNT
points are drawn (every one when there are fewer), that the final state is
always checked, and that a failing point names its seed.
"""
import os
import struct
import subprocess
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SSZ = 512
F_FLUSH, F_FUA, F_MARK = 1, 2, 8


def write_log(path, nflush):
    """A log of nflush data writes, each with FLUSH, plus a mark after each."""
    entries = []
    for i in range(nflush):
        data = bytes([i % 251]) * SSZ
        entries.append((struct.pack("<QQQQ", i % 8, 1, F_FLUSH if i % 2 else F_FUA, 0), data))
        name = b"ack%d" % i
        entries.append((struct.pack("<QQQQ", 0, 0, F_MARK, len(name)) + name, b""))
    with open(path, "wb") as f:
        sb = struct.pack("<QQQI", 0x6a736677736872, 1, len(entries), SSZ)
        f.write(sb.ljust(4096, b"\0"))
        f.seek(SSZ)
        for hdr, data in entries:
            f.write(hdr.ljust(SSZ, b"\0"))
            f.write(data)
        # O_DIRECT reads of whole 4 KiB blocks
        f.truncate((f.tell() + 4095) // 4096 * 4096 + 4096)


M64 = (1 << 64) - 1


def reference_draw(seed, count, total):
    """What replay-log must draw: splitmix64 from the seed, and Knuth's
    Algorithm S over the durable points 1..total in order (point k taken with
    probability still-wanted / still-to-come)."""
    state, want, drawn = seed, min(count, total), []
    for k in range(1, total + 1):
        state = (state + 0x9e3779b97f4a7c15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
        z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
        z ^= z >> 31
        if want and z % (total - k + 1) < want:
            want -= 1
            drawn.append(k)
    return drawn


class ReplayLogSample(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(dir=os.environ.get("SSC_OUT"))
        cls.tool = os.path.join(cls.tmp.name, "replay-log")
        subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", cls.tool,
                        os.path.join(TOP, "tests/tools/replay-log.c")], check=True)
        cls.log = os.path.join(cls.tmp.name, "log")
        write_log(cls.log, 40)
        for d in ("dev", "copy"):
            with open(os.path.join(cls.tmp.name, d), "wb") as f:
                f.truncate(64 * 1024)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def sweep(self, *args, cmd='echo "$REPLAY_POINT $REPLAY_ENTRY $REPLAY_MARK" >> "$OUT"'):
        out = os.path.join(self.tmp.name, "points")
        if os.path.exists(out):
            os.unlink(out)
        env = dict(os.environ, OUT=out)
        r = subprocess.run([self.tool, "sweep", *args, "-p", "ack", self.log,
                            os.path.join(self.tmp.name, "dev"), os.path.join(self.tmp.name, "copy"),
                            cmd], env=env, capture_output=True, text=True)
        lines = []
        if os.path.exists(out):
            with open(out) as f:
                lines = f.read().split("\n")[:-1]
        return r, [tuple(l.split(" ")[1:]) for l in lines]

    def test_same_seed_same_points(self):
        r1, p1 = self.sweep("-n", "7", "-s", "12345")
        r2, p2 = self.sweep("-n", "7", "-s", "12345")
        self.assertEqual(r1.returncode, 0, r1.stderr)
        self.assertEqual(p1, p2)
        self.assertIn("# seed 12345: 7 of 40 FLUSH/FUA points drawn", r1.stdout)

    def test_count_and_final_state(self):
        r, pts = self.sweep("-n", "7", "-s", "99")
        entries = [int(e) for e, _ in pts]
        self.assertEqual(entries, sorted(set(entries)))
        # 7 drawn data entries (even), then the final state (the last mark, 79)
        self.assertEqual(len(pts), 8)
        self.assertTrue(all(e % 2 == 0 for e in entries[:7]))
        self.assertEqual(entries[-1], 79)
        self.assertEqual(r.stdout.splitlines()[-1],
                         "points 8 failed 0 entries 80 durable 40 seed 99 drawn 7")

    def test_draw_is_the_reference_algorithm(self):
        # point k is the k-th durable entry, log entry 2(k-1) in this log
        for seed in (0, 1, 99, 4242, 18446744073709551615, 3575500220):
            for count in (1, 7, 39):
                _, pts = self.sweep("-n", str(count), "-s", str(seed))
                got = [int(e) // 2 + 1 for e, _ in pts[:-1]]
                self.assertEqual(got, reference_draw(seed, count, 40), (seed, count))

    def test_reference_draw_is_uniform(self):
        # every point about equally likely: 4,000 seeds drawing 5 of 40
        hits = [0] * 41
        for seed in range(4000):
            for k in reference_draw(seed, 5, 40):
                hits[k] += 1
        expect = 4000 * 5 / 40
        for k in range(1, 41):
            self.assertLess(abs(hits[k] - expect), 0.2 * expect, (k, hits[k]))

    def test_bad_numbers_are_refused(self):
        for args in (("-n", "0", "-s", "1"), ("-n", "x", "-s", "1"), ("-n", "5", "-s", "12a"),
                     ("-n", "5", "-s", "-3")):
            r, pts = self.sweep(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertEqual(pts, [], args)
        # a point's mark is the last acknowledgement before it: write i is
        # entry 2i, its mark ack<i> entry 2i + 1
        for e, m in pts:
            e = int(e)
            self.assertEqual(m, str(e // 2) if e % 2 else (str(e // 2 - 1) if e else ""))

    def test_seeds_differ(self):
        draws = {tuple(self.sweep("-n", "5", "-s", str(s))[1]) for s in range(1, 9)}
        self.assertGreater(len(draws), 4)

    def test_fewer_points_than_asked_takes_all(self):
        r, pts = self.sweep("-n", "100", "-s", "3")
        self.assertEqual(len(pts), 41)  # and the final state, after the last mark
        self.assertIn("40 of 40", r.stdout)

    def test_every_point_without_sampling(self):
        r, pts = self.sweep("-e", "1")
        self.assertEqual(len(pts), 41)

    def test_failure_names_seed_and_point(self):
        r, _ = self.sweep("-n", "5", "-s", "4242", cmd="false")
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stdout, r"# crash point 1 \(a FLUSH/FUA entry, log entry \d+, "
                         r"last mark '[0-9]*', seed 4242\) failed")

    def test_sampling_with_every_is_refused(self):
        r, _ = self.sweep("-n", "5", "-s", "1", "-e", "2")
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage", r.stderr)


if __name__ == "__main__":
    unittest.main()
