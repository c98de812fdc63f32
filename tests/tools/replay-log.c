// SPDX-License-Identifier: GPL-2.0
/*
 * replay-log: read a dm-log-writes log and replay it onto a device.
 *
 * The log format is the one drivers/md/dm-log-writes.c writes (and
 * Documentation/admin-guide/device-mapper/log-writes.rst describes): a super
 * block at offset 0 (magic, version, number of entries, sector size), then one
 * entry per logged bio, each a header sector (sector, nr_sectors, flags,
 * data_len; a mark's name follows the header) followed by nr_sectors of data
 * (none for a discard or a flush). Sectors are in units of the sector size.
 *
 *   replay-log list LOG
 *	one line per entry: index, flags, sector, nr_sectors, mark name
 *   replay-log sweep [-e N [-o K] | -n COUNT -s SEED] [-m MAX_FAIL] [-p PREFIX]
 *		     LOG DEV COPY CMD
 *	replay the entries onto DEV in order; after every entry that carries
 *	FLUSH or FUA (with -e N, those whose count from 1 is K modulo N: -o 0,
 *	the default, takes the N-th, 2N-th ...; the union over K = 0..N-1 is
 *	every such entry; with -n COUNT, COUNT of them drawn at random by
 *	SEED, every one if there are fewer: the same seed and log draw the same
 *	points), copy DEV to COPY and run
 *	the shell command CMD with REPLAY_ENTRY (index), REPLAY_MARK (last mark
 *	seen, "" if none; with -p only marks starting with PREFIX count, and
 *	PREFIX is stripped) and REPLAY_POINT (crash point number) in the
 *	environment. Discards are replayed as zeroes. The final state (every
 *	entry) is always checked. Prints "points N failed N"; exit 1 if any
 *	check failed.
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
#include <sys/wait.h>
#include <endian.h>

#define LOG_MAGIC	0x6a736677736872ULL
#define LOG_VERSION	1ULL
#define F_FLUSH		(1 << 0)
#define F_FUA		(1 << 1)
#define F_DISCARD	(1 << 2)
#define F_MARK		(1 << 3)
#define F_META		(1 << 4)
#define CHUNK		(1 << 20)

struct lw_super {
	uint64_t magic, version, nr_entries;
	uint32_t sectorsize;
} __attribute__((packed));

struct lw_entry {
	uint64_t sector, nr_sectors, flags, data_len;
} __attribute__((packed));

static int logfd;
static uint32_t ssz;
static uint64_t nr_entries, pos;
static char *buf;

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "replay-log: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(2);
}

/* a decimal number, all of the argument (a seed is printed as it was read) */
static uint64_t number(const char *arg, const char *what)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (errno || end == arg || *end || *arg == '-')
		die("%s takes a decimal number", what);
	return v;
}

static void xpread(int fd, void *p, size_t len, uint64_t off, const char *what)
{
	ssize_t r = pread(fd, p, len, off);

	if (r != (ssize_t)len)
		die("short read from %s", what);
}

static void xpwrite(int fd, const void *p, size_t len, uint64_t off)
{
	ssize_t r = pwrite(fd, p, len, off);

	if (r != (ssize_t)len)
		die("write to the replay device failed: %s", strerror(errno));
}

static void open_log(const char *path)
{
	struct lw_super s;

	logfd = open(path, O_RDONLY | O_DIRECT);
	if (logfd < 0)
		die("cannot open log %s", path);
	if (posix_memalign((void **)&buf, 4096, CHUNK))
		die("%s", "out of memory");
	xpread(logfd, buf, 4096, 0, "the log super block");
	memcpy(&s, buf, sizeof(s));
	if (le64toh(s.magic) != LOG_MAGIC || le64toh(s.version) != LOG_VERSION)
		die("%s is not a dm-log-writes log (bad magic or version)", path);
	ssz = le32toh(s.sectorsize);
	if (ssz < 512 || ssz > 4096 || (ssz & (ssz - 1)))
		die("%s: bad sector size in the super block", path);
	nr_entries = le64toh(s.nr_entries);
	pos = ssz;
}

/* the next entry header; the mark name (if any) into name */
static void next_entry(struct lw_entry *e, char *name, size_t nlen)
{
	xpread(logfd, buf, ssz, pos, "an entry header");
	memcpy(e, buf, sizeof(*e));
	e->sector = le64toh(e->sector);
	e->nr_sectors = le64toh(e->nr_sectors);
	e->flags = le64toh(e->flags);
	e->data_len = le64toh(e->data_len);
	name[0] = 0;
	if (e->flags & F_MARK) {
		size_t n = e->data_len;

		if (n > ssz - sizeof(*e) || n >= nlen)
			die("%s", "bad mark length in the log");
		memcpy(name, buf + sizeof(*e), n);
		name[n] = 0;
	}
	pos += ssz;
}

static void apply(int dev, const struct lw_entry *e)
{
	uint64_t left = e->nr_sectors * ssz, off = e->sector * ssz;

	if (e->flags & F_MARK)
		return;
	if (e->flags & F_DISCARD) {
		memset(buf, 0, CHUNK);
		while (left) {
			size_t n = left < CHUNK ? left : CHUNK;

			xpwrite(dev, buf, n, off);
			off += n;
			left -= n;
		}
		return;
	}
	while (left) {
		size_t n = left < CHUNK ? left : CHUNK;

		xpread(logfd, buf, n, pos, "entry data");
		xpwrite(dev, buf, n, off);
		pos += n;
		off += n;
		left -= n;
	}
}

static int cmd_list(void)
{
	struct lw_entry e;
	char name[4096];
	uint64_t i;

	printf("# sector size %u, %" PRIu64 " entries\n", ssz, nr_entries);
	for (i = 0; i < nr_entries; i++) {
		next_entry(&e, name, sizeof(name));
		printf("%" PRIu64 " %s%s%s%s%s %" PRIu64 " %" PRIu64 " %s\n", i,
		       e.flags & F_FLUSH ? "F" : "-", e.flags & F_FUA ? "U" : "-",
		       e.flags & F_DISCARD ? "D" : "-", e.flags & F_MARK ? "M" : "-",
		       e.flags & F_META ? "m" : "-", e.sector, e.nr_sectors, name);
		if (!(e.flags & (F_DISCARD | F_MARK)))
			pos += e.nr_sectors * ssz;
	}
	return 0;
}

/* the number of entries that carry FLUSH or FUA; leaves the log at its first entry */
static unsigned long count_durable(void)
{
	unsigned long n = 0;
	struct lw_entry e;
	char name[4096];
	uint64_t i;

	for (i = 0; i < nr_entries; i++) {
		next_entry(&e, name, sizeof(name));
		if (e.flags & (F_FLUSH | F_FUA))
			n++;
		if (!(e.flags & (F_DISCARD | F_MARK)))
			pos += e.nr_sectors * ssz;
	}
	pos = ssz;
	return n;
}

/* splitmix64: a small generator whose sequence depends on the seed alone */
static uint64_t rnd_state;

static uint64_t rnd(void)
{
	uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void copy_dev(int from, int to)
{
	off_t size = lseek(from, 0, SEEK_END), off;

	if (size < 0 || lseek(to, 0, SEEK_END) < size)
		die("%s", "the copy device is smaller than the replay device");
	for (off = 0; off < size; off += CHUNK) {
		size_t n = size - off < CHUNK ? size - off : CHUNK;

		xpread(from, buf, n, off, "the replay device");
		xpwrite(to, buf, n, off);
	}
}

static int run_check(const char *cmd, uint64_t entry, const char *mark,
		     unsigned long point)
{
	char v[32];
	int st;

	snprintf(v, sizeof(v), "%" PRIu64, entry);
	setenv("REPLAY_ENTRY", v, 1);
	snprintf(v, sizeof(v), "%lu", point);
	setenv("REPLAY_POINT", v, 1);
	setenv("REPLAY_MARK", mark, 1);
	fflush(stdout);
	st = system(cmd);
	return !(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int cmd_sweep(int argc, char **argv)
{
	unsigned long every = 1, offset = 0, max_fail = 1, points = 0, failed = 0, durable = 0;
	unsigned long sample = 0, total = 0, want = 0, drawn = 0;
	uint64_t seed = 0;
	struct lw_entry e;
	char name[4096], mark[4096] = "";
	const char *prefix = "";
	uint64_t i;
	int opt, dev, copy;

	while ((opt = getopt(argc, argv, "e:o:m:p:n:s:")) != -1) {
		switch (opt) {
		case 'e':
			every = strtoul(optarg, NULL, 0);
			break;
		case 'o':
			offset = strtoul(optarg, NULL, 0);
			break;
		case 'm':
			max_fail = strtoul(optarg, NULL, 0);
			break;
		case 'p':
			prefix = optarg;
			break;
		case 'n':
			sample = number(optarg, "-n COUNT");
			if (!sample)
				die("%s", "-n COUNT must be at least 1");
			break;
		case 's':
			seed = number(optarg, "-s SEED");
			break;
		default:
			return 2;
		}
	}
	if (argc - optind != 4 || !every || offset >= every || (sample && every != 1))
		die("%s", "usage: replay-log sweep [-e N [-o K] | -n COUNT -s SEED] [-m MAX_FAIL] [-p PREFIX] LOG DEV COPY CMD (K < N)");
	open_log(argv[optind]);
	if (sample) {
		/* selection sampling (Knuth's Algorithm S): each durable entry is taken
		 * with probability (still wanted) / (still to come), in log order
		 */
		total = count_durable();
		want = sample < total ? sample : total;
		rnd_state = seed;
		printf("# seed %" PRIu64 ": %lu of %lu FLUSH/FUA points drawn\n", seed, want, total);
	}
	dev = open(argv[optind + 1], O_RDWR | O_DIRECT);
	copy = open(argv[optind + 2], O_RDWR | O_DIRECT);
	if (dev < 0 || copy < 0)
		die("cannot open %s", dev < 0 ? argv[optind + 1] : argv[optind + 2]);
	for (i = 0; i < nr_entries; i++) {
		int last = i + 1 == nr_entries;

		next_entry(&e, name, sizeof(name));
		apply(dev, &e);
		if ((e.flags & F_MARK) && !strncmp(name, prefix, strlen(prefix)))
			strcpy(mark, name + strlen(prefix));
		if (e.flags & (F_FLUSH | F_FUA)) {
			durable++;
			if (sample) {
				int take = want && rnd() % (total - durable + 1) < want;

				if (take) {
					want--;
					drawn++;
				}
				if (!take && !last)
					continue;
			} else if (!last && durable % every != offset) {
				continue;
			}
		} else if (!last) {
			continue;
		}
		if (fdatasync(dev))
			die("%s", "sync of the replay device failed");
		copy_dev(dev, copy);
		if (fdatasync(copy))
			die("%s", "sync of the copy device failed");
		points++;
		if (run_check(argv[optind + 3], i, mark, points)) {
			failed++;
			printf("# crash point %lu (%s, log entry %" PRIu64
			       ", last mark '%s', seed %" PRIu64 ") failed\n", points,
			       last ? "the final state" : "a FLUSH/FUA entry",
			       i, mark, seed);
			if (failed >= max_fail)
				break;
		}
	}
	/* drawn: sampled FLUSH/FUA points checked (with -n; the final state is extra) */
	printf("points %lu failed %lu entries %" PRIu64 " durable %lu seed %" PRIu64
	       " drawn %lu\n", points, failed, nr_entries, durable, seed, drawn);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "list")) {
		open_log(argv[2]);
		return cmd_list();
	}
	if (argc > 1 && !strcmp(argv[1], "sweep"))
		return cmd_sweep(argc - 1, argv + 1);
	fprintf(stderr, "usage: replay-log list LOG\n"
		"       replay-log sweep [-e N [-o K] | -n COUNT -s SEED] [-m MAX_FAIL] [-p PREFIX]\n"
		"                        LOG DEV COPY CMD\n");
	return 2;
}
