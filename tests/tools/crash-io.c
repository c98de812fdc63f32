// SPDX-License-Identifier: GPL-2.0
/*
 * crash-io: a deterministic single-writer workload and its crash oracle.
 *
 * Every 4 KiB block holds a self-describing pattern: a header (magic, block
 * number, version) and a body generated from (block, version), so a block read
 * back names the write it came from and a torn or misplaced block is caught.
 * Version 0 is the initial content ("fill"); op i of "run" writes version i.
 *
 *   crash-io fill DEV NBLK
 *	write version 0 to every block (no cache involved; sets up the origin)
 *   crash-io run DEV NBLK NOPS SEED MARKCMD [CKPTCMD]
 *	op i = 1..NOPS, drawn from SEED: a write of one block (made durable:
 *	fdatasync for even i, O_DSYNC/FUA for odd i) or a read of 32 blocks.
 *	After each write is acknowledged, runs MARKCMD with i appended to its
 *	last word (e.g. "dmsetup message lw 0 mark ack" logs the mark "ack17"),
 *	so a replayed log says which writes were acknowledged. Every 64 ops runs
 *	CKPTCMD if given.
 *   crash-io check DEV NBLK NOPS SEED ACKED [SAVE|-] [EXPECT]
 *	ACKED: the last acknowledged op (0: none). Every block must hold the
 *	version of the last write to it with i <= ACKED, or (only for the block of
 *	the first write after ACKED, which may have been in flight) that write's
 *	version. Anything else is a lost or stale write. SAVE: write the version
 *	seen per block; EXPECT: a file from an earlier check that must match
 *	exactly (the data does not change without writes). Exit 1 on a violation.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BS		4096
#define MAGIC		0x5353435843524153ULL	/* "SARCXCSS" */
#define READ_RUN	32

static void die(const char *msg)
{
	fprintf(stderr, "crash-io: %s (%s)\n", msg, strerror(errno));
	exit(2);
}

static uint64_t rng;

static uint64_t next_rand(void)
{
	/* xorshift64* */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1DULL;
}

struct op {
	int write;
	uint64_t blk;
};

/* 75 % of ops go to the first quarter of the blocks; 60 % of ops are writes */
static struct op *make_ops(uint64_t nblk, uint64_t nops, uint64_t seed)
{
	struct op *ops = calloc(nops + 2, sizeof(*ops));
	uint64_t i, hot = nblk / 4 ? nblk / 4 : 1;

	if (!ops)
		die("out of memory");
	rng = seed * 2654435761ULL + 1;
	for (i = 1; i <= nops + 1; i++) {
		uint64_t r = next_rand();

		ops[i].write = (r % 100) < 60;
		ops[i].blk = (r >> 8) % 4 < 3 ? (r >> 16) % hot : (r >> 16) % nblk;
		if (!ops[i].write && ops[i].blk + READ_RUN > nblk)
			ops[i].blk = nblk - READ_RUN;
	}
	ops[nops + 1].write = 0;	/* sentinel */
	return ops;
}

static void pattern(uint64_t *p, uint64_t blk, uint64_t ver)
{
	uint64_t x = (blk << 24) ^ ver ^ 0x9E3779B97F4A7C15ULL;
	size_t i;

	p[0] = MAGIC;
	p[1] = blk;
	p[2] = ver;
	for (i = 3; i < BS / 8; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[i] = x;
	}
}

static void *xalign(size_t n)
{
	void *p;

	if (posix_memalign(&p, BS, n))
		die("out of memory");
	return p;
}

static int open_dev(const char *path, int flags)
{
	int fd = open(path, flags | O_DIRECT);

	if (fd < 0)
		die(path);
	return fd;
}

/* run "CMD<i>": the op number is glued to the command's last word */
static int run_cmd(const char *cmd, uint64_t i)
{
	char line[512];

	snprintf(line, sizeof(line), "%s%" PRIu64, cmd, i);
	return system(line);
}

static int cmd_fill(const char *dev, uint64_t nblk)
{
	int fd = open_dev(dev, O_WRONLY);
	uint64_t *p = xalign(BS), b;

	for (b = 0; b < nblk; b++) {
		pattern(p, b, 0);
		if (pwrite(fd, p, BS, b * BS) != BS)
			die("fill write");
	}
	if (fdatasync(fd))
		die("fill sync");
	return 0;
}

static int cmd_run(const char *dev, uint64_t nblk, uint64_t nops, uint64_t seed,
		   const char *mark, const char *ckpt)
{
	int fd = open_dev(dev, O_RDWR), fua = open_dev(dev, O_WRONLY | O_DSYNC);
	struct op *ops = make_ops(nblk, nops, seed);
	uint64_t *p = xalign(BS * READ_RUN), i;

	for (i = 1; i <= nops; i++) {
		if (ops[i].write) {
			pattern(p, ops[i].blk, i);
			if (pwrite(i & 1 ? fua : fd, p, BS, ops[i].blk * BS) != BS)
				die("write");
			if (!(i & 1) && fdatasync(fd))
				die("fdatasync");
			if (run_cmd(mark, i))
				die("mark command failed");
		} else if (pread(fd, p, BS * READ_RUN, ops[i].blk * BS) != BS * READ_RUN) {
			die("read");
		}
		if (ckpt && i % 64 == 0 && system(ckpt))
			die("checkpoint command failed");
	}
	return 0;
}

static int cmd_check(const char *dev, uint64_t nblk, uint64_t nops, uint64_t seed,
		     uint64_t acked, const char *save, const char *expect)
{
	struct op *ops = make_ops(nblk, nops, seed);
	uint64_t *want = calloc(nblk, sizeof(*want)), *seen = calloc(nblk, sizeof(*seen));
	uint64_t *p = xalign(BS * 256), *q = xalign(BS), i, b, inflight = 0, bad = 0;
	int fd = open_dev(dev, O_RDONLY);
	FILE *f;

	if (!want || !seen)
		die("out of memory");
	if (acked > nops)
		acked = nops;
	for (i = 1; i <= acked; i++)
		if (ops[i].write)
			want[ops[i].blk] = i;
	for (i = acked + 1; i <= nops; i++)
		if (ops[i].write) {
			inflight = i;
			break;
		}
	for (b = 0; b < nblk; b++) {
		uint64_t *blk = p + (b % 256) * (BS / 8), v;

		if (b % 256 == 0) {
			size_t n = (nblk - b < 256 ? nblk - b : 256) * BS;

			if (pread(fd, p, n, b * BS) != (ssize_t)n) {
				printf("read error at block %" PRIu64 ": %s\n", b, strerror(errno));
				return 1;
			}
		}
		v = blk[2];
		pattern(q, b, v);
		if (blk[0] != MAGIC || blk[1] != b || memcmp(blk, q, BS)) {
			printf("block %" PRIu64 ": not a whole block written by this workload "
			       "(header %016" PRIx64 " %" PRIu64 " %" PRIu64 ")\n",
			       b, blk[0], blk[1], blk[2]);
			bad++;
		} else if (v != want[b] && !(inflight && v == inflight && ops[inflight].blk == b)) {
			printf("block %" PRIu64 ": version %" PRIu64 ", want %" PRIu64
			       "%s (acknowledged up to op %" PRIu64 ")\n", b, v, want[b],
			       v < want[b] ? " (stale: an acknowledged write is lost)" :
			       " (a write that was never issued or not yet issued)", acked);
			bad++;
		}
		seen[b] = v;
		if (bad > 20)
			break;
	}
	if (expect && (f = fopen(expect, "r"))) {
		for (b = 0; b < nblk; b++) {
			uint64_t v;

			if (fscanf(f, "%" SCNu64, &v) != 1)
				break;
			if (v != seen[b]) {
				printf("block %" PRIu64 ": version %" PRIu64 " now, %" PRIu64
				       " on the first read\n", b, seen[b], v);
				bad++;
			}
		}
		fclose(f);
	}
	if (save && strcmp(save, "-") && (f = fopen(save, "w"))) {
		for (b = 0; b < nblk; b++)
			fprintf(f, "%" PRIu64 "\n", seen[b]);
		fclose(f);
	}
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "fill"))
		return cmd_fill(argv[2], strtoull(argv[3], NULL, 0));
	if ((argc == 7 || argc == 8) && !strcmp(argv[1], "run"))
		return cmd_run(argv[2], strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0),
			       strtoull(argv[5], NULL, 0), argv[6], argc == 8 ? argv[7] : NULL);
	if (argc >= 7 && argc <= 9 && !strcmp(argv[1], "check"))
		return cmd_check(argv[2], strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0),
				 strtoull(argv[5], NULL, 0), strtoull(argv[6], NULL, 0),
				 argc > 7 ? argv[7] : NULL, argc > 8 ? argv[8] : NULL);
	fprintf(stderr, "usage: crash-io fill DEV NBLK\n"
		"       crash-io run DEV NBLK NOPS SEED MARKCMD [CKPTCMD]\n"
		"       crash-io check DEV NBLK NOPS SEED ACKED [SAVE|-] [EXPECT]\n");
	return 2;
}
