#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Generate a synthetic block trace, reproducibly, in MSR Cambridge CSV.

    gentrace.py KIND [--blocks N] [--requests N] [--seed S] [-o OUT]

KIND:
  zipf-read    read-mostly (90 % reads), 4 KiB requests, block popularity
               Zipf(0.9) over the working set: a small hot set takes most hits
  write-heavy  about 90 % writes (as FIU's homes and mail traces), Zipf(0.8)
               popularity, 4-16 KiB requests
  scan         the zipf-read mix on the first quarter of the space, polluted
               by sequential scans: every 2,000 requests, 500 reads of 64 KiB
               that go on sweeping the whole space where the last scan stopped
               (32 MiB a scan; with the default 64 MiB space, more than a
               small cache holds)

The same arguments always give the same bytes (our own splitmix64 generator,
no library RNG whose algorithm might change). Timestamps are 100 us apart.
Feed the output to trace2iolog.py -f msr.
"""

import argparse
import bisect
import sys

MASK = (1 << 64) - 1
FILETIME_EPOCH = 128166372000000000   # some day in 2007, as in the MSR traces


class SplitMix64:
    def __init__(self, seed):
        self.s = seed & MASK

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & MASK
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def uniform(self):
        return (self.next() >> 11) / float(1 << 53)

    def below(self, n):
        return self.next() % n


class Zipf:
    """Rank r (0-based) drawn with weight 1/(r+1)^a; ranks scattered over blocks."""

    def __init__(self, n, a):
        self.n = n
        acc, self.cdf = 0.0, []
        for r in range(n):
            acc += 1.0 / (r + 1) ** a
            self.cdf.append(acc)
        self.total = acc
        # an odd multiplier is a bijection modulo a power of two
        self.mult = 0x9E3779B1 | 1

    def block(self, rng):
        r = bisect.bisect_left(self.cdf, rng.uniform() * self.total)
        return (min(r, self.n - 1) * self.mult) % self.n


def generate(kind, blocks, requests, seed):
    if blocks & (blocks - 1) or blocks < 64:
        raise ValueError("--blocks must be a power of two >= 64")
    rng = SplitMix64(seed * 1000003 + {"zipf-read": 1, "write-heavy": 2, "scan": 3}[kind])
    hot = blocks // 4 if kind == "scan" else blocks
    zipf = Zipf(hot, 0.8 if kind == "write-heavy" else 0.9)
    scan_pos = 0
    for i in range(requests):
        ts = FILETIME_EPOCH + i * 1000          # 100 us in 100 ns ticks
        if kind == "write-heavy":
            write = rng.uniform() < 0.9
            nblk = 1 << rng.below(3)            # 1, 2 or 4 blocks
            blk = min(zipf.block(rng), blocks - nblk)
        elif kind == "scan" and i % 2000 >= 1500:
            write, nblk = False, 16
            blk = scan_pos % blocks
            scan_pos += nblk
        else:
            write = rng.uniform() < 0.1
            nblk = 1
            blk = zipf.block(rng)
        yield (f"{ts},synth,0,{'Write' if write else 'Read'},{blk * 4096},"
               f"{nblk * 4096},100")


def main(argv):
    ap = argparse.ArgumentParser(prog="gentrace.py", description=__doc__.split("\n")[0])
    ap.add_argument("kind", choices=("zipf-read", "write-heavy", "scan"))
    ap.add_argument("--blocks", type=int, default=16384)
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-o", "--output", default="-")
    args = ap.parse_args(argv)
    if args.requests < 1:
        ap.error("--requests must be >= 1")
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    try:
        for line in generate(args.kind, args.blocks, args.requests, args.seed):
            out.write(line + "\n")
    except ValueError as e:
        ap.error(str(e))
    if out is not sys.stdout:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
