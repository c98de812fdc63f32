// SPDX-License-Identifier: GPL-2.0
/*
 * crash-io: deterministic workloads (one writer, or several at once) and their
 * crash oracles.
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
 *   crash-io prun DEV NBLK NOPS SEED THREADS MARKCMD [CKPTCMD]
 *	THREADS writers at once, each NOPS ops of the same kinds from its own
 *	draw; thread t writes only the blocks b with b % THREADS == t (reads go
 *	anywhere), its op i writing version i * THREADS + t. After a write is
 *	acknowledged the thread records it and runs MARKCMD with every thread's
 *	last acknowledged op appended, joined by dots ("ack12.7.30.2"); marks are
 *	run one at a time, so each one's counts are at least the previous one's.
 *	Thread 0 runs CKPTCMD every 64 / THREADS of its ops (every 64 in all).
 *   crash-io pcheck DEV NBLK NOPS SEED THREADS ACKED [SAVE|-] [EXPECT]
 *	ACKED: the dotted counts of the last mark ("" or 0: none). A block must
 *	hold the version of its owner's last write to it with i <= that owner's
 *	count, or of a later write of the owner to it (in flight, or durable
 *	before its mark): never an older one, never anything else.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
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

static uint64_t next_rand_r(uint64_t *r)
{
	/* xorshift64* */
	*r ^= *r >> 12;
	*r ^= *r << 25;
	*r ^= *r >> 27;
	return *r * 0x2545F4914F6CDD1DULL;
}

static uint64_t next_rand(void)
{
	return next_rand_r(&rng);
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

/*
 * Thread t of nthr: the same mix of ops as make_ops(), its writes on its own
 * blocks (b % nthr == t) and its reads anywhere.
 */
static struct op *make_ops_t(uint64_t nblk, uint64_t nops, uint64_t seed,
			     unsigned int t, unsigned int nthr)
{
	struct op *ops = calloc(nops + 2, sizeof(*ops));
	uint64_t i, own = nblk / nthr, hot = own / 4 ? own / 4 : 1;
	uint64_t r0 = (seed * nthr + t) * 2654435761ULL + 1;

	if (!ops || !own)
		die("out of memory, or fewer blocks than threads");
	for (i = 1; i <= nops; i++) {
		uint64_t r = next_rand_r(&r0);

		ops[i].write = (r % 100) < 60;
		if (ops[i].write) {
			ops[i].blk = ((r >> 8) % 4 < 3 ? (r >> 16) % hot : (r >> 16) % own) *
				nthr + t;
		} else {
			ops[i].blk = (r >> 16) % nblk;
			if (ops[i].blk + READ_RUN > nblk)
				ops[i].blk = nblk - READ_RUN;
		}
	}
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

/*
 * EXPECT: versions an earlier check saw, which must be seen again (the data
 * does not change without writes); SAVE: where to write the versions seen.
 * Returns the number of blocks that differ.
 */
static uint64_t compare_save(const uint64_t *seen, uint64_t nblk, const char *save,
			     const char *expect)
{
	uint64_t b, bad = 0;
	FILE *f;

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
	return bad;
}

/*
 * Read every block and name the write it came from: seen[b] is its version,
 * or NO_VERSION (reported) if it is not a whole block of this workload.
 * Returns the number of such blocks, or -1 on a read error.
 */
#define NO_VERSION	UINT64_MAX

static int64_t read_versions(const char *dev, uint64_t nblk, uint64_t *seen)
{
	uint64_t *p = xalign(BS * 256), *q = xalign(BS), b;
	int fd = open_dev(dev, O_RDONLY);
	int64_t bad = 0;

	for (b = 0; b < nblk; b++) {
		uint64_t *blk = p + (b % 256) * (BS / 8);

		if (b % 256 == 0) {
			size_t n = (nblk - b < 256 ? nblk - b : 256) * BS;

			if (pread(fd, p, n, b * BS) != (ssize_t)n) {
				printf("read error at block %" PRIu64 ": %s\n", b, strerror(errno));
				bad = -1;
				break;
			}
		}
		pattern(q, b, blk[2]);
		seen[b] = blk[2];
		if (blk[0] != MAGIC || blk[1] != b || memcmp(blk, q, BS)) {
			if (bad < 20)
				printf("block %" PRIu64 ": not a whole block written by this workload "
				       "(header %016" PRIx64 " %" PRIu64 " %" PRIu64 ")\n",
				       b, blk[0], blk[1], blk[2]);
			seen[b] = NO_VERSION;
			bad++;
		}
	}
	close(fd);
	free(p);
	free(q);
	return bad;
}

static int cmd_check(const char *dev, uint64_t nblk, uint64_t nops, uint64_t seed,
		     uint64_t acked, const char *save, const char *expect)
{
	struct op *ops = make_ops(nblk, nops, seed);
	uint64_t *want = calloc(nblk, sizeof(*want)), *seen = calloc(nblk, sizeof(*seen));
	uint64_t i, b, inflight = 0, bad = 0;
	int64_t garbage;

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
	garbage = read_versions(dev, nblk, seen);
	if (garbage < 0)
		return 1;
	for (b = 0; b < nblk && bad < 20; b++) {
		uint64_t v = seen[b];

		if (v != NO_VERSION && v != want[b] &&
		    !(inflight && v == inflight && ops[inflight].blk == b)) {
			printf("block %" PRIu64 ": version %" PRIu64 ", want %" PRIu64
			       "%s (acknowledged up to op %" PRIu64 ")\n", b, v, want[b],
			       v < want[b] ? " (stale: an acknowledged write is lost)" :
			       " (a write that was never issued or not yet issued)", acked);
			bad++;
		}
	}
	bad += garbage + compare_save(seen, nblk, save, expect);
	return bad ? 1 : 0;
}

#define MAX_THREADS	16

struct prun {
	const char *dev, *mark, *ckpt;
	uint64_t nblk, nops, seed;
	unsigned int nthr;
	atomic_uint_fast64_t acked[MAX_THREADS];
	pthread_mutex_t mark_lock;	/* one mark at a time: counts only grow */
};

struct prun_thread {
	struct prun *pr;
	unsigned int t;
	pthread_t tid;
};

static void *prun_thread(void *arg)
{
	struct prun_thread *th = arg;
	struct prun *pr = th->pr;
	struct op *ops = make_ops_t(pr->nblk, pr->nops, pr->seed, th->t, pr->nthr);
	int fd = open_dev(pr->dev, O_RDWR), fua = open_dev(pr->dev, O_WRONLY | O_DSYNC);
	uint64_t *p = xalign(BS * READ_RUN), i;
	char line[1024];
	unsigned int u;

	for (i = 1; i <= pr->nops; i++) {
		if (ops[i].write) {
			pattern(p, ops[i].blk, i * pr->nthr + th->t);
			if (pwrite(i & 1 ? fua : fd, p, BS, ops[i].blk * BS) != BS)
				die("write");
			if (!(i & 1) && fdatasync(fd))
				die("fdatasync");
			pthread_mutex_lock(&pr->mark_lock);
			atomic_store(&pr->acked[th->t], i);
			snprintf(line, sizeof(line), "%s", pr->mark);
			for (u = 0; u < pr->nthr; u++)
				snprintf(line + strlen(line), sizeof(line) - strlen(line),
					 "%s%" PRIu64, u ? "." : "",
					 (uint64_t)atomic_load(&pr->acked[u]));
			if (system(line))
				die("mark command failed");
			pthread_mutex_unlock(&pr->mark_lock);
		} else if (pread(fd, p, BS * READ_RUN, ops[i].blk * BS) != BS * READ_RUN) {
			die("read");
		}
		/* about every 64 ops of all the threads */
		if (th->t == 0 && pr->ckpt && i % (64 / pr->nthr ? 64 / pr->nthr : 1) == 0 &&
		    system(pr->ckpt))
			die("checkpoint command failed");
	}
	close(fd);
	close(fua);
	free(ops);
	free(p);
	return NULL;
}

static int cmd_prun(struct prun *pr)
{
	struct prun_thread th[MAX_THREADS];
	unsigned int t;

	pthread_mutex_init(&pr->mark_lock, NULL);
	for (t = 0; t < pr->nthr; t++) {
		atomic_init(&pr->acked[t], 0);
		th[t].pr = pr;
		th[t].t = t;
	}
	for (t = 0; t < pr->nthr; t++)
		if (pthread_create(&th[t].tid, NULL, prun_thread, &th[t]))
			die("pthread_create");
	for (t = 0; t < pr->nthr; t++)
		pthread_join(th[t].tid, NULL);
	return 0;
}

/* The dotted counts of a mark: "12.7.30.2"; "" or "0": nothing acknowledged. */
static void parse_acked(const char *s, uint64_t *acked, unsigned int nthr)
{
	unsigned int t;
	char *end;

	for (t = 0; t < nthr; t++) {
		acked[t] = 0;
		if (!*s)
			continue;
		acked[t] = strtoull(s, &end, 10);
		s = *end == '.' ? end + 1 : end;
	}
}

static int cmd_pcheck(const char *dev, uint64_t nblk, uint64_t nops, uint64_t seed,
		      unsigned int nthr, const char *acked_s, const char *save,
		      const char *expect)
{
	uint64_t *want = calloc(nblk, sizeof(*want)), *seen = calloc(nblk, sizeof(*seen));
	uint64_t acked[MAX_THREADS], i, b, bad = 0;
	struct op *ops[MAX_THREADS];
	int64_t garbage;
	unsigned int t;

	if (!want || !seen)
		die("out of memory");
	parse_acked(acked_s, acked, nthr);
	for (t = 0; t < nthr; t++) {
		ops[t] = make_ops_t(nblk, nops, seed, t, nthr);
		if (acked[t] > nops)
			acked[t] = nops;
		for (i = 1; i <= acked[t]; i++)
			if (ops[t][i].write)
				want[ops[t][i].blk] = i * nthr + t;
	}
	garbage = read_versions(dev, nblk, seen);
	if (garbage < 0)
		return 1;
	for (b = 0; b < nblk && bad < 20; b++) {
		uint64_t v = seen[b], vi;
		unsigned int o = b % nthr;
		int newer = 0;

		if (v == NO_VERSION)
			continue;
		/* a later write of the block's owner than the last acknowledged one */
		if (v && v % nthr == o) {
			vi = v / nthr;
			newer = vi > acked[o] && vi <= nops && ops[o][vi].write &&
				ops[o][vi].blk == b;
		}
		if (v != want[b] && !newer) {
			printf("block %" PRIu64 " (thread %u, acknowledged up to its op %" PRIu64
			       "): version %" PRIu64 ", want %" PRIu64 " or a later write of it%s\n",
			       b, o, acked[o], v, want[b],
			       v < want[b] ? " (stale: an acknowledged write is lost)" : "");
			bad++;
		}
	}
	bad += garbage + compare_save(seen, nblk, save, expect);
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
	if ((argc == 8 || argc == 9) && !strcmp(argv[1], "prun")) {
		static struct prun pr;

		pr.dev = argv[2];
		pr.nblk = strtoull(argv[3], NULL, 0);
		pr.nops = strtoull(argv[4], NULL, 0);
		pr.seed = strtoull(argv[5], NULL, 0);
		pr.nthr = strtoul(argv[6], NULL, 0);
		pr.mark = argv[7];
		pr.ckpt = argc == 9 ? argv[8] : NULL;
		if (!pr.nthr || pr.nthr > MAX_THREADS)
			die("THREADS must be 1 to 16");
		return cmd_prun(&pr);
	}
	if (argc >= 8 && argc <= 10 && !strcmp(argv[1], "pcheck")) {
		unsigned int nthr = strtoul(argv[6], NULL, 0);

		if (!nthr || nthr > MAX_THREADS)
			die("THREADS must be 1 to 16");
		return cmd_pcheck(argv[2], strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0),
				  strtoull(argv[5], NULL, 0), nthr, argv[7],
				  argc > 8 ? argv[8] : NULL, argc > 9 ? argv[9] : NULL);
	}
	fprintf(stderr, "usage: crash-io fill DEV NBLK\n"
		"       crash-io run DEV NBLK NOPS SEED MARKCMD [CKPTCMD]\n"
		"       crash-io check DEV NBLK NOPS SEED ACKED [SAVE|-] [EXPECT]\n"
		"       crash-io prun DEV NBLK NOPS SEED THREADS MARKCMD [CKPTCMD]\n"
		"       crash-io pcheck DEV NBLK NOPS SEED THREADS ACKED [SAVE|-] [EXPECT]\n");
	return 2;
}
