// SPDX-License-Identifier: LGPL-2.1-or-later
/* link: store.c err.c */
/*
 * The log-structured object store (user/ssdalloc/store.c) on its own: format,
 * open, random objects against an oracle through enough volume for many GC
 * runs, ENOSPC and recovery, checkpoint/restore across close, a crash (SIGKILL)
 * after a checkpoint, a torn newest checkpoint, and crafted or garbage devices;
 * durable and volatile tables, a fragmenting workload with a checkpoint per round
 * (relocation checkpoints), crashes inside relocation checkpoints.
 *
 * Usage: test-store [dir]   (default /dev/shm if a tmpfs, else /tmp; then also a
 * shorter run on a file in /tmp, on a loop device when root and losetup works,
 * and on /dev/shm for the buffered fallback if it refuses O_DIRECT). SSC_FULL=1: the
 * big volumes (about 4x the time).
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ssd-int.h"

/* store.c's test hook: called at the steps of a relocation checkpoint */
extern void (*ssd_store_test_hook)(int step);

static int failures, checks;
/* SSC_FULL=1: the big volumes (make check-full); the default run stays short under ASan */
static bool full;
static char dir[256] = "/tmp";

static void ok(int cond, const char *fmt, ...)
{
	va_list ap;

	checks++;
	printf("%s - store: ", cond ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (!cond) {
		printf("  [errno %d, last error: %s]", errno, ssd_strerror());
		failures++;
	}
	printf("\n");
	fflush(stdout);
}

/* ---------------------------------------------------------------- helpers */

static uint32_t crc_tab[256];

static uint32_t crc32c(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t c = ~0u;

	if (!crc_tab[1])
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t v = i;

			for (int k = 0; k < 8; k++)
				v = v & 1 ? (v >> 1) ^ 0x82F63B78u : v >> 1;
			crc_tab[i] = v;
		}
	while (n--)
		c = crc_tab[(c ^ *b++) & 0xff] ^ (c >> 8);
	return ~c;
}

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* the bytes of version ver of object <otid, oto> */
static void gen(uint8_t *buf, uint32_t size, uint32_t otid, uint32_t oto, uint32_t ver)
{
	uint64_t x = (uint64_t)otid * 0x9E3779B97F4A7C15ull ^ (uint64_t)oto << 20 ^ ver ^ 1;

	for (uint32_t i = 0; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
}

static void make_file(const char *path, uint64_t bytes)
{
	int fd;

	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)bytes) < 0) {
		perror(path);
		exit(2);
	}
	close(fd);
}

static void pread_f(const char *path, void *buf, size_t n, uint64_t off)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0 || pread(fd, buf, n, (off_t)off) != (ssize_t)n) {
		perror(path);
		exit(2);
	}
	close(fd);
}

static void pwrite_f(const char *path, const void *buf, size_t n, uint64_t off)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0 || pwrite(fd, buf, n, (off_t)off) != (ssize_t)n || fsync(fd) < 0) {
		perror(path);
		exit(2);
	}
	close(fd);
}

/* the superblock's fields (layout in store.c) */
struct geo {
	uint64_t ckpt_off, slot_bytes, log_off, log_blocks;
};

static struct geo geo_of(const char *path)
{
	uint8_t sb[88];
	struct geo g;

	pread_f(path, sb, sizeof(sb), 0);
	memcpy(&g.ckpt_off, sb + 48, 8);
	memcpy(&g.slot_bytes, sb + 56, 8);
	memcpy(&g.log_off, sb + 64, 8);
	memcpy(&g.log_blocks, sb + 72, 8);
	g.ckpt_off = le64toh(g.ckpt_off);
	g.slot_bytes = le64toh(g.slot_bytes);
	g.log_off = le64toh(g.log_off);
	g.log_blocks = le64toh(g.log_blocks);
	return g;
}

/* ----------------------------------------------------------------- oracle */

#define MAXOBJ		65536u
#define STREAM_MAX	(256 * 510)
#define NT		4
#define NOBJ		64

struct oracle {
	uint32_t otid[NT];
	bool exists[NT];
	uint32_t size[NT][NOBJ], ver[NT][NOBJ];
};

static uint8_t wbuf[8][MAXOBJ], rbuf[MAXOBJ], ebuf[MAXOBJ];

/* every object of the oracle reads back exactly; returns the number of mismatches */
static int verify(struct ssd_store *s, const struct oracle *o, const char *what)
{
	int bad = 0;

	for (int t = 0; t < NT; t++) {
		if (!o->exists[t])
			continue;
		for (uint32_t i = 0; i < NOBJ; i++) {
			uint32_t sz = 12345;

			memset(rbuf, 0xa5, 16);
			if (ssd_obj_read(s, o->otid[t], i, rbuf, MAXOBJ, &sz) < 0) {
				if (bad++ < 3)
					printf("# %s: read <%u,%u>: %s\n", what, o->otid[t], i,
					       ssd_strerror());
				continue;
			}
			if (sz != o->size[t][i]) {
				if (bad++ < 3)
					printf("# %s: <%u,%u> size %u, want %u\n", what, o->otid[t], i,
					       sz, o->size[t][i]);
				continue;
			}
			gen(ebuf, sz, o->otid[t], i, o->ver[t][i]);
			if (memcmp(rbuf, ebuf, sz) && bad++ < 3)
				printf("# %s: <%u,%u> bytes differ\n", what, o->otid[t], i);
		}
	}
	return bad;
}

static uint32_t gver;

static uint32_t rnd_size(void)
{
	/* mostly small, some large: 1 B .. 64 KiB */
	switch (rnd() % 4) {
	case 0:
		return 1 + rnd() % 128;
	case 1:
		return 1 + rnd() % 4096;
	default:
		return 1 + rnd() % MAXOBJ;
	}
}

/*
 * ops random operations (writes of batches, discards, reads) on the tables of o
 * that exist; returns the number of read mismatches; *enospc counts refusals.
 */
static int workload(struct ssd_store *s, struct oracle *o, uint64_t bytes, int *enospc,
		    int tables, bool syncs)
{
	uint64_t done = 0;
	int bad = 0, fails = 0;

	while (done < bytes) {
		if (fails > 1000) {	/* every write refused: stop, it is counted */
			bad++;
			break;
		}
		unsigned int r = rnd() % 100, t = rnd() % tables;

		if (!o->exists[t])
			continue;
		if (r < 70) {
			struct ssd_obj b[8];
			unsigned int n = 1 + rnd() % 8, oto[8];
			uint32_t sz[8], ver[8];

			for (unsigned int k = 0; k < n; k++) {
				oto[k] = rnd() % NOBJ;
				sz[k] = rnd_size();
				ver[k] = ++gver;	/* a batch may write one object twice: last wins */
				gen(wbuf[k], sz[k], o->otid[t], oto[k], ver[k]);
				b[k] = (struct ssd_obj){ o->otid[t], oto[k], sz[k], wbuf[k] };
			}
			if (ssd_obj_write(s, b, n) < 0) {
				if (errno != ENOSPC)
					bad++;
				(*enospc)++;
				fails++;
				continue;
			}
			fails = 0;
			for (unsigned int k = 0; k < n; k++) {
				o->ver[t][oto[k]] = ver[k];
				o->size[t][oto[k]] = sz[k];
				done += sz[k];
			}
		} else if (r < 85) {
			unsigned int i = rnd() % NOBJ;

			ssd_obj_discard(s, o->otid[t], i);
			o->size[t][i] = 0;
		} else if (r < 99 || !syncs) {
			unsigned int i = rnd() % NOBJ;
			uint32_t sz = 1;

			if (ssd_obj_read(s, o->otid[t], i, rbuf, MAXOBJ, &sz) < 0 ||
			    sz != o->size[t][i]) {
				bad++;
				continue;
			}
			gen(ebuf, sz, o->otid[t], i, o->ver[t][i]);
			bad += memcmp(rbuf, ebuf, sz) != 0;
		} else if (ssd_store_sync(s) < 0) {
			bad++;
		}
	}
	return bad;
}

static void oracle_init(struct ssd_store *s, struct oracle *o, int tables)
{
	memset(o, 0, sizeof(*o));
	for (int t = 0; t < tables; t++) {
		/* durable: the heap's pool tables; only those are checkpointed */
		if (ssd_ot_create(s, NOBJ, &o->otid[t]) < 0 ||
		    ssd_ot_set_durable(s, o->otid[t], true) < 0) {
			printf("# ssd_ot_create: %s\n", ssd_strerror());
			exit(2);
		}
		o->exists[t] = true;
	}
}

static struct ssd_stats stats(struct ssd_store *s)
{
	struct ssd_stats st;

	memset(&st, 0, sizeof(st));
	ssd_store_stats(s, &st);
	return st;
}

/* ------------------------------------------------------------------ tests */

static void test_open(const char *path)
{
	struct ssd_store *s;
	uint8_t u1[16], u2[16];
	uint64_t g;
	int r;

	unlink(path);
	r = ssd_store_open(&s, path, 0, true);
	ok(r < 0 && errno == ENOENT, "a missing file with no size is refused (%s)", ssd_strerror());

	make_file(path, 1 << 20);
	r = ssd_store_open(&s, path, 0, true);
	ok(r < 0 && errno == EINVAL && strstr(ssd_strerror(), "device too small: 1048576 bytes"),
	   "a 1 MiB device is refused: %s", ssd_strerror());

	make_file(path, 16 << 20);
	r = ssd_store_open(&s, path, 0, false);
	ok(r < 0 && errno == ENOENT, "no superblock and no format: ENOENT (%s)", ssd_strerror());

	unlink(path);
	r = ssd_store_open(&s, path, 16 << 20, true);
	ok(r == 0, "format creates a 16 MiB file");
	if (r)
		return;
	ok(ssd_store_log_bytes(s) >= (12u << 20) && ssd_store_log_bytes(s) % SSD_LOG_BLOCK == 0,
	   "log of %llu bytes", (unsigned long long)ssd_store_log_bytes(s));
	ssd_store_id(s, u1, &g);
	ok(g == 0, "no checkpoint yet (generation %llu)", (unsigned long long)g);
	printf("# direct I/O on %s: %s\n", dir, ssd_store_direct_io(s) ? "yes" : "no (buffered)");
	ssd_store_close(s);

	r = ssd_store_open(&s, path, 0, false);
	ok(r == 0, "reopen without format");
	if (r)
		return;
	ssd_store_id(s, u2, &g);
	ok(!memcmp(u1, u2, 16), "same uuid after reopen");
	{
		struct ssd_store *s2;

		r = ssd_store_open(&s2, path, 0, false);
		ok(r < 0 && errno == EBUSY, "a second open of the same file is refused (%s)",
		   ssd_strerror());
	}
	ssd_store_close(s);
	r = ssd_store_open(&s, path, 0, true);
	ssd_store_id(s, u2, &g);
	ok(r == 0 && memcmp(u1, u2, 16), "format again: a new uuid");
	ssd_store_close(s);
}

static void test_tables(const char *path)
{
	struct ssd_store *s;
	uint32_t a, b, c, sz = 7;
	struct ssd_obj o = { 0, 0, 100, wbuf[0] };
	struct ssd_stats st;
	int r;

	if (ssd_store_open(&s, path, 16 << 20, true) < 0) {
		ok(0, "open for tables");
		return;
	}
	ok(ssd_ot_create(s, 0, &a) < 0 && errno == EINVAL, "a table of 0 objects is refused");
	ok(!ssd_ot_create(s, 10, &a) && !ssd_ot_create(s, 20, &b) && a != b, "two tables");
	st = stats(s);
	ok(st.ot_bytes == 30 * 6, "ot_bytes %llu: 6 bytes per object",
	   (unsigned long long)st.ot_bytes);
	ok(!ssd_obj_read(s, a, 3, rbuf, 100, &sz) && sz == 0, "never written reads size 0");
	ok(ssd_obj_read(s, a, 10, rbuf, 100, &sz) < 0 && errno == EINVAL, "oto out of range");
	ok(ssd_obj_read(s, 999, 0, rbuf, 100, &sz) < 0 && errno == EINVAL, "unknown otid");
	o.otid = b;
	o.oto = 20;
	ok(ssd_obj_write(s, &o, 1) < 0 && errno == EINVAL, "write out of range refused");
	o.oto = 1;
	o.size = MAXOBJ + 1;
	ok(ssd_obj_write(s, &o, 1) < 0 && errno == EINVAL, "write of 64 KiB + 1 refused");
	o.size = 100;
	gen(wbuf[0], 100, b, 1, 1);
	ok(!ssd_obj_write(s, &o, 1), "write 100 B");
	ok(ssd_obj_read(s, b, 1, rbuf, 50, &sz) < 0 && errno == EMSGSIZE && sz == 100,
	   "read into a too small buffer: EMSGSIZE, size told");
	ok(!ssd_obj_read(s, b, 1, rbuf, 100, &sz) && sz == 100 && !memcmp(rbuf, wbuf[0], 100),
	   "read it back from the write buffer");
	ok(!ssd_store_sync(s) && !ssd_obj_read(s, b, 1, rbuf, 100, &sz) && sz == 100 &&
	   !memcmp(rbuf, wbuf[0], 100), "read it back after sync");
	ssd_ot_destroy(s, a);
	ssd_ot_destroy(s, a);	/* twice: ignored */
	r = ssd_ot_create(s, 5, &c);
	ok(!r && c == a, "a destroyed otid is reused (%u)", c);
	ssd_ot_destroy(s, b);
	ok(!ssd_ot_create(s, 20, &c) && c == b && !ssd_obj_read(s, c, 1, rbuf, 100, &sz) && sz == 0,
	   "a recreated table reads as never written");
	ssd_store_close(s);
}

/*
 * A discarded version is garbage to both views but still in the write buffer's
 * sector: a rewrite of the same <otid,oto> must not start in that sector, or a
 * reader (and restore, and the cleaner) takes the first header there: the
 * discarded bytes (review of store.c; failed before sector_holds()).
 */
static void test_rewrite_same_sector(const char *path)
{
	struct ssd_store *s;
	uint32_t ot, ot2, sz = 0;
	uint8_t a[64], b[64], r[100], r2[100];
	struct ssd_obj o;
	void *bl = NULL;
	size_t len;

	memset(a, 'A', sizeof(a));
	memset(b, 'B', sizeof(b));
	if (ssd_store_open(&s, path, 16 << 20, true) < 0) {
		ok(0, "open for the same-sector rewrite");
		return;
	}
	ok(!ssd_ot_create(s, 16, &ot) && !ssd_ot_set_durable(s, ot, true), "a durable table");
	o = (struct ssd_obj){ ot, 3, 64, a };
	ssd_obj_write(s, &o, 1);
	ssd_obj_discard(s, ot, 3);
	o.data = b;
	ssd_obj_write(s, &o, 1);
	r[0] = 0;
	ok(!ssd_obj_read(s, ot, 3, r, sizeof(r), &sz) && sz == 64 && r[0] == 'B',
	   "discard, rewrite: the new bytes read back");
	/* a destroyed table's otid comes back with its garbage in the same sector */
	ok(!ssd_ot_create(s, 4, &ot2) && !ssd_ot_set_durable(s, ot2, true), "a second table");
	o = (struct ssd_obj){ ot2, 1, 64, a };
	ssd_obj_write(s, &o, 1);
	ssd_ot_destroy(s, ot2);
	ok(!ssd_ot_create(s, 4, &ot2), "its otid again (%u)", ot2);
	ssd_ot_set_durable(s, ot2, true);
	o = (struct ssd_obj){ ot2, 1, 64, b };
	ssd_obj_write(s, &o, 1);
	r[0] = 0;
	ok(!ssd_obj_read(s, ot2, 1, r, sizeof(r), &sz) && sz == 64 && r[0] == 'B',
	   "destroy, recreate, rewrite: the new bytes read back");
	ok(!ssd_store_checkpoint(s, "blob", 4), "checkpoint");
	ssd_store_close(s);
	if (ssd_store_open(&s, path, 0, false) < 0 || ssd_store_restore(s, &bl, &len) < 0) {
		ok(0, "reopen and restore: %s", ssd_strerror());
		return;
	}
	r[0] = r2[0] = 0;
	ok(!ssd_obj_read(s, ot, 3, r, sizeof(r), &sz) && sz == 64 && r[0] == 'B' &&
	   !ssd_obj_read(s, ot2, 1, r2, sizeof(r2), &sz) && sz == 64 && r2[0] == 'B',
	   "after restore: both new versions, not the discarded ones");
	free(bl);
	ssd_store_close(s);
}

static void test_random(const char *path, uint64_t file_bytes, const char *what)
{
	struct ssd_store *s;
	struct oracle *o = calloc(1, sizeof(*o));
	struct ssd_stats st;
	int enospc = 0, bad;
	uint64_t vol;

	if (ssd_store_open(&s, path, file_bytes, true) < 0) {
		ok(0, "%s: open", what);
		free(o);
		return;
	}
	oracle_init(s, o, NT);
	/* 256 objects of 24 KiB on average, a third discarded: < 40 % of the log live */
	vol = (full ? 20 : 2) * ssd_store_log_bytes(s);
	bad = workload(s, o, vol, &enospc, NT, true);
	st = stats(s);
	ok(bad == 0, "%s: %llu MiB of random writes/discards/reads match the oracle (%d bad)",
	   what, (unsigned long long)(vol >> 20), bad);
	ok(enospc == 0, "%s: no ENOSPC at < 40 %% use (%d)", what, enospc);
	ok(st.gc_runs > 0 && st.gc_moves > 0, "%s: the cleaner ran: %llu runs, %llu moves, %llu bytes",
	   what, (unsigned long long)st.gc_runs, (unsigned long long)st.gc_moves,
	   (unsigned long long)st.gc_move_bytes);
	ok(st.object_bytes_written >= vol && st.ssd_write_bytes >= vol,
	   "%s: counters: %llu objects, %llu payload bytes, %llu device bytes written, %llu reads",
	   what, (unsigned long long)st.objects_written,
	   (unsigned long long)st.object_bytes_written, (unsigned long long)st.ssd_write_bytes,
	   (unsigned long long)st.ssd_reads);
	ok(verify(s, o, what) == 0, "%s: every object reads back", what);
	ok(!ssd_store_sync(s) && verify(s, o, what) == 0, "%s: and after sync", what);
	ssd_store_close(s);
	free(o);
}

static void test_enospc(const char *path)
{
	struct ssd_store *s;
	uint32_t t, n = 0, sz;
	struct ssd_obj ob;
	int r = 0, bad = 0;

	if (ssd_store_open(&s, path, 8 << 20, true) < 0 || ssd_ot_create(s, 4096, &t) < 0) {
		ok(0, "enospc: open");
		return;
	}
	/* fill with 40 KiB objects until refused */
	while (n < 4096) {
		gen(wbuf[0], 40000, t, n, 1);
		ob = (struct ssd_obj){ t, n, 40000, wbuf[0] };
		r = ssd_obj_write(s, &ob, 1);
		if (r < 0)
			break;
		n++;
	}
	ok(r < 0 && errno == ENOSPC && strstr(ssd_strerror(), "log full"),
	   "ENOSPC after %u objects of 40000 B in a %llu B log: %s", n,
	   (unsigned long long)ssd_store_log_bytes(s), ssd_strerror());
	ok((uint64_t)n * 40000 > ssd_store_log_bytes(s) / 2,
	   "more than half of the log was usable (%llu of %llu)",
	   (unsigned long long)n * 40000, (unsigned long long)ssd_store_log_bytes(s));
	/* overwriting a live object also needs room: refused, old contents kept */
	gen(wbuf[0], 40000, t, 0, 2);
	ob = (struct ssd_obj){ t, 0, 40000, wbuf[0] };
	r = ssd_obj_write(s, &ob, 1);
	ok(r < 0 && errno == ENOSPC, "an overwrite when full is refused too");
	for (uint32_t i = 0; i < n; i++) {
		gen(ebuf, 40000, t, i, 1);
		if (ssd_obj_read(s, t, i, rbuf, MAXOBJ, &sz) < 0 || sz != 40000 ||
		    memcmp(rbuf, ebuf, sz))
			bad++;
	}
	ok(bad == 0, "every object written before ENOSPC reads back (%d bad)", bad);
	for (uint32_t i = 0; i < n; i += 2)
		ssd_obj_discard(s, t, i);
	r = 0;
	for (uint32_t i = 0; i < n && !r; i += 2) {
		gen(wbuf[0], 40000, t, i, 3);
		ob = (struct ssd_obj){ t, i, 40000, wbuf[0] };
		r = ssd_obj_write(s, &ob, 1);
	}
	ok(r == 0, "after discarding half, the half can be written again (%s)",
	   r ? ssd_strerror() : "");
	bad = 0;
	for (uint32_t i = 0; i < n; i++) {
		gen(ebuf, 40000, t, i, i % 2 ? 1 : 3);
		if (ssd_obj_read(s, t, i, rbuf, MAXOBJ, &sz) < 0 || sz != 40000 ||
		    memcmp(rbuf, ebuf, sz))
			bad++;
	}
	ok(bad == 0, "all objects correct after the recovery (%d bad)", bad);
	ok(stats(s).gc_runs > 0, "the cleaner made the room (%llu runs)",
	   (unsigned long long)stats(s).gc_runs);
	ssd_store_close(s);
}

static void fill(struct ssd_store *s, struct oracle *o, int tables)
{
	for (int t = 0; t < tables; t++)
		for (uint32_t i = 0; i < NOBJ; i++) {
			struct ssd_obj ob;

			o->size[t][i] = rnd_size() / 4 + 1;
			o->ver[t][i] = ++gver;
			gen(wbuf[0], o->size[t][i], o->otid[t], i, o->ver[t][i]);
			ob = (struct ssd_obj){ o->otid[t], i, o->size[t][i], wbuf[0] };
			if (ssd_obj_write(s, &ob, 1) < 0) {
				printf("# fill: %s\n", ssd_strerror());
				exit(2);
			}
		}
}

static void test_checkpoint(const char *path)
{
	struct ssd_store *s;
	struct oracle *o = calloc(1, sizeof(*o)), *o1 = calloc(1, sizeof(*o));
	static const char blob1[] = "the heap's state, first", blob2[] = "second";
	void *blob;
	size_t len;
	uint64_t g;
	uint8_t u[16];
	int enospc = 0;

	if (ssd_store_open(&s, path, 16 << 20, true) < 0) {
		ok(0, "checkpoint: open");
		return;
	}
	ok(ssd_store_restore(s, &blob, &len) < 0 && errno == ENOENT,
	   "restore with no checkpoint: ENOENT (%s)", ssd_strerror());
	oracle_init(s, o, 3);
	fill(s, o, 3);
	ssd_ot_destroy(s, o->otid[1]);	/* a gap in the otids */
	o->exists[1] = false;
	workload(s, o, 4 << 20, &enospc, 3, false);
	ok(!ssd_store_checkpoint(s, blob1, sizeof(blob1)), "checkpoint 1");
	ssd_store_id(s, u, &g);
	ok(g == 1 && stats(s).checkpoints == 1, "generation 1");
	*o1 = *o;
	/* more writes after it, GC included, then checkpoint 2 */
	workload(s, o, 3 * ssd_store_log_bytes(s) / 2, &enospc, 3, false);
	ok(enospc == 0 && verify(s, o, "after ckpt 1") == 0,
	   "writes after checkpoint 1 (its blocks pinned) work (%d ENOSPC)", enospc);
	ok(!ssd_store_checkpoint(s, blob2, sizeof(blob2)), "checkpoint 2");
	ssd_store_close(s);

	ok(!ssd_store_open(&s, path, 0, false), "reopen");
	ssd_store_id(s, u, &g);
	ok(g == 2, "the open store knows generation 2 (%llu)", (unsigned long long)g);
	ok(!ssd_store_restore(s, &blob, &len) && len == sizeof(blob2) && !memcmp(blob, blob2, len),
	   "restore returns blob 2");
	free(blob);
	{
		uint32_t t;

		ok(!ssd_ot_create(s, 5, &t) && t == o->otid[1], "the gap otid %u is free again", t);
		ssd_ot_destroy(s, t);
	}
	ok(verify(s, o, "restore 2") == 0, "every object of checkpoint 2 is back");
	ssd_store_close(s);

	/* tear the newest slot (generation 2 lives in slot 0): checkpoint 1 is used */
	{
		struct geo gm = geo_of(path);
		uint8_t b;

		pread_f(path, &b, 1, gm.ckpt_off + 200);
		b ^= 0x40;
		pwrite_f(path, &b, 1, gm.ckpt_off + 200);
	}
	ok(!ssd_store_open(&s, path, 0, false), "reopen after tearing slot 0");
	ok(!ssd_store_restore(s, &blob, &len) && len == sizeof(blob1) && !memcmp(blob, blob1, len),
	   "restore falls back to checkpoint 1");
	free(blob);
	ssd_store_id(s, u, &g);
	ok(g == 1, "generation 1 (%llu)", (unsigned long long)g);
	ok(verify(s, o1, "restore 1") == 0, "every object of checkpoint 1 is back");
	/* the store goes on from there */
	*o = *o1;
	workload(s, o, 2 << 20, &enospc, 3, false);
	ok(!ssd_store_checkpoint(s, "x", 1), "checkpoint after the fallback");
	ssd_store_id(s, u, &g);
	ok(g == 2, "it is generation 2 again, in the torn slot");
	ssd_store_close(s);
	ok(!ssd_store_open(&s, path, 0, false) && !ssd_store_restore(s, &blob, &len) && len == 1 &&
	   verify(s, o, "restore 2b") == 0, "and restores");
	free(blob);
	ssd_store_close(s);

	/* a checkpoint that does not fit its slot */
	ok(!ssd_store_open(&s, path, 0, true), "format for the slot limit");
	{
		uint32_t t;

		ok(!ssd_ot_create(s, 1 << 20, &t) && !ssd_ot_set_durable(s, t, true),
		   "a durable table of 1 Mi objects (4 MiB of entries)");
		ok(ssd_store_checkpoint(s, NULL, 0) < 0 && errno == ENOSPC &&
		   strstr(ssd_strerror(), "does not fit"), "checkpoint bigger than the slot: %s",
		   ssd_strerror());
	}
	ssd_store_close(s);
	free(o);
	free(o1);
}

/*
 * After a process dies, its io_uring's in-flight requests still hold the file
 * (and its flock) until the kernel's ring teardown finishes: wait for that.
 */
static int open_after_death(struct ssd_store **s, const char *path)
{
	int r;

	for (int i = 0; i < 1000; i++) {
		r = ssd_store_open(s, path, 0, false);
		if (r == 0 || errno != EBUSY)
			return r;
		usleep(10000);
	}
	return r;
}

/* a child restores, writes and cleans a lot, and is SIGKILLed; the parent restores */
static void test_crash(const char *path)
{
	struct ssd_store *s;
	struct oracle *o = calloc(1, sizeof(*o));
	int enospc = 0, p[2], status;
	void *blob;
	size_t len;
	pid_t pid;
	uint64_t child_gc = 0;

	if (ssd_store_open(&s, path, 16 << 20, true) < 0) {
		ok(0, "crash: open");
		return;
	}
	oracle_init(s, o, NT);
	fill(s, o, NT);
	workload(s, o, 4 << 20, &enospc, NT, false);
	ok(!ssd_store_checkpoint(s, "A", 1), "crash: checkpoint A");
	ssd_store_close(s);

	for (int round = 0; round < 2; round++) {
		if (pipe(p) < 0)
			exit(2);
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			struct oracle *c = calloc(1, sizeof(*c));
			struct ssd_stats st;
			int e = 0;
			uint32_t t;

			close(p[0]);
			rng_state ^= 0x1234567ull * (round + 1);
			if (ssd_store_open(&s, path, 0, false) < 0 || ssd_store_restore(s, &blob, &len))
				_exit(3);
			*c = *o;
			ssd_ot_create(s, 100, &t);
			/* one (full: three) log's worth of overwrites (GC), with syncs, then tell the parent */
			workload(s, c, (full ? 3 : 1) * ssd_store_log_bytes(s), &e, NT, true);
			ssd_store_sync(s);
			st = stats(s);
			if (write(p[1], &st.gc_runs, 8) != 8)
				_exit(4);
			if (round == 1)
				_exit(0);	/* exit without close or checkpoint */
			for (;;)		/* keep writing until killed */
				workload(s, c, 1 << 20, &e, NT, true);
		}
		close(p[1]);
		if (read(p[0], &child_gc, 8) != 8)
			child_gc = 0;
		if (round == 0)
			kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		close(p[0]);
		ok(child_gc > 0, "crash %d: the child cleaned %llu blocks after the checkpoint, then %s",
		   round, (unsigned long long)child_gc, round ? "_exit()ed" : "was SIGKILLed");
		if (open_after_death(&s, path) < 0) {
			ok(0, "crash %d: reopen", round);
			continue;
		}
		ok(!ssd_store_restore(s, &blob, &len) && len == 1 && !memcmp(blob, "A", 1),
		   "crash %d: restore finds checkpoint A", round);
		free(blob);
		ok(verify(s, o, "crash") == 0, "crash %d: exactly the checkpointed objects", round);
		{
			uint32_t t;

			ok(!ssd_ot_create(s, 7, &t) && t == NT, "crash %d: the child's table is gone",
			   round);
		}
		ssd_store_close(s);
	}
	free(o);
}

static void sb_rewrite(const char *path, uint8_t *sb)
{
	uint32_t c = htole32(crc32c(sb, 84));

	memcpy(sb + 84, &c, 4);
	pwrite_f(path, sb, 88, 0);
}

static void test_crafted_sb(const char *path)
{
	struct ssd_store *s;
	uint8_t orig[88], sb[88];
	uint64_t v;
	int r;

	if (ssd_store_open(&s, path, 16 << 20, true) < 0) {
		ok(0, "crafted sb: open");
		return;
	}
	ssd_store_close(s);
	pread_f(path, orig, 88, 0);

	memcpy(sb, orig, 88);
	sb[40] ^= 1;
	pwrite_f(path, sb, 88, 0);
	r = ssd_store_open(&s, path, 0, false);
	ok(r < 0 && errno == ENOENT, "superblock with a bad CRC: %s", ssd_strerror());

	static const struct { int off; uint64_t val; const char *what; } bad[] = {
		{ 72, 1ull << 40, "log_blocks 2^40" },
		{ 72, 3, "log_blocks 3" },
		{ 72, 0, "log_blocks 0" },
		{ 32, 1ull << 62, "dev_bytes 2^62" },
		{ 32, 4096, "dev_bytes 4096" },
		{ 64, 1ull << 50, "log_off 2^50" },
		{ 56, 0, "slot_bytes 0" },
		{ 48, 15, "ckpt_off 15" },
	};
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(sb, orig, 88);
		v = htole64(bad[i].val);
		memcpy(sb + bad[i].off, &v, 8);
		sb_rewrite(path, sb);
		r = ssd_store_open(&s, path, 0, false);
		ok(r < 0 && errno == EBADMSG, "superblock with a valid CRC and %s refused: %s",
		   bad[i].what, ssd_strerror());
		if (!r)
			ssd_store_close(s);
	}
	memcpy(sb, orig, 88);
	sb[40] = 0;	/* log block size 131072 -> 131072 & ~0xff */
	sb[41] ^= 0x10;
	sb_rewrite(path, sb);
	r = ssd_store_open(&s, path, 0, false);
	ok(r < 0 && errno == EBADMSG, "other log block size refused: %s", ssd_strerror());
	sb_rewrite(path, orig);
	r = ssd_store_open(&s, path, 0, false);
	ok(r == 0, "the original superblock opens again");
	if (!r)
		ssd_store_close(s);
	/* the file shrunk under the store */
	if (truncate(path, 12 << 20) < 0)
		exit(2);
	r = ssd_store_open(&s, path, 0, false);
	ok(r < 0 && errno == EBADMSG, "a device smaller than its superblock says: %s",
	   ssd_strerror());
}

/* a checkpoint slot with a valid CRC but crafted contents */
static void slot_recrc(const char *path, uint64_t off, uint8_t *img)
{
	uint64_t tb, bb;
	uint32_t c = 0;

	memcpy(&tb, img + 48, 8);
	memcpy(&bb, img + 56, 8);
	tb = le64toh(tb);
	bb = le64toh(bb);
	memcpy(img + 76, &c, 4);
	if (80 + tb + bb <= (1 << 20))
		c = htole32(crc32c(img, 80 + tb + bb));
	else	/* lengths too big for our copy: a CRC over the header only */
		c = htole32(crc32c(img, 80));
	memcpy(img + 76, &c, 4);
	pwrite_f(path, img, 1 << 20, off);
}

static void test_crafted_ckpt(const char *path)
{
	struct ssd_store *s;
	struct oracle *o = calloc(1, sizeof(*o));
	uint8_t *orig = malloc(1 << 20), *img = malloc(1 << 20);
	struct geo g;
	void *blob;
	size_t len;
	uint32_t v;
	uint64_t w;
	int r;

	if (ssd_store_open(&s, path, 16 << 20, true) < 0) {
		ok(0, "crafted ckpt: open");
		return;
	}
	oracle_init(s, o, 2);
	fill(s, o, 2);
	ok(!ssd_store_checkpoint(s, "B", 1), "crafted ckpt: checkpoint (generation 1, slot 1)");
	ssd_store_close(s);
	g = geo_of(path);
	pread_f(path, orig, 1 << 20, g.ckpt_off + g.slot_bytes);

	struct { int off; uint64_t val; int bytes; const char *what, *want; } bad[] = {
		/* first table at 80: otid, nobj, entries */
		{ 88, 0xfffffff0u, 4, "an entry far outside the log", "outside the log" },
		{ 88, 0, 4, "", "" },	/* placeholder: entry just past the log, set below */
		{ 84, 0x0fffffffu, 4, "a huge object count", "otid" },
		{ 80, 0xfffffff0u, 4, "a huge otid", "otid" },
		{ 44, 0x7fffffffu, 4, "a huge table count", "tables do not fit" },
		{ 48, 1ull << 40, 8, "huge table bytes", "bad header" },
		{ 56, 1ull << 40, 8, "a huge blob", "bad header" },
		{ 40, 7, 4, "another log size", "log blocks" },
		{ 64, 1u << 30, 4, "a head outside the log", "head" },
		{ 16, 2, 8, "a generation for the other slot", "generation" },
	};
	bad[1].val = g.log_blocks * 256 + 1;
	bad[1].what = "an entry one past the log";
	bad[1].want = "outside the log";
	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(img, orig, 1 << 20);
		if (bad[i].bytes == 4) {
			v = htole32((uint32_t)bad[i].val);
			memcpy(img + bad[i].off, &v, 4);
		} else {
			w = htole64(bad[i].val);
			memcpy(img + bad[i].off, &w, 8);
		}
		slot_recrc(path, g.ckpt_off + g.slot_bytes, img);
		r = ssd_store_open(&s, path, 0, false);
		if (r) {
			ok(0, "crafted checkpoint (%s): open failed: %s", bad[i].what, ssd_strerror());
			continue;
		}
		r = ssd_store_restore(s, &blob, &len);
		ok(r < 0 && errno == EBADMSG && strstr(ssd_strerror(), bad[i].want),
		   "checkpoint with a valid CRC and %s refused: %s", bad[i].what, ssd_strerror());
		if (!r)
			free(blob);
		ssd_store_close(s);
	}
	/* another store's checkpoint (uuid) */
	memcpy(img, orig, 1 << 20);
	img[24] ^= 1;
	slot_recrc(path, g.ckpt_off + g.slot_bytes, img);
	r = ssd_store_open(&s, path, 0, false);
	ok(!r && ssd_store_restore(s, &blob, &len) < 0 && errno == EBADMSG &&
	   strstr(ssd_strerror(), "another store"), "a checkpoint of another store: %s",
	   ssd_strerror());
	if (!r)
		ssd_store_close(s);
	/* the original still restores */
	pwrite_f(path, orig, 1 << 20, g.ckpt_off + g.slot_bytes);
	r = ssd_store_open(&s, path, 0, false);
	ok(!r && !ssd_store_restore(s, &blob, &len) && verify(s, o, "uncrafted") == 0,
	   "the untouched checkpoint restores");
	if (!r) {
		free(blob);
		ssd_store_close(s);
	}
	free(orig);
	free(img);
	free(o);
}

/* where the header of <otid, oto> with this size is in the file: -1 if not found */
static int64_t find_header(const char *path, const struct geo *g, uint32_t otid, uint32_t oto,
			   uint32_t size, uint32_t *stream_pos)
{
	uint8_t *blk = malloc(SSD_LOG_BLOCK), st[STREAM_MAX];
	uint32_t want[3] = { htole32(otid), htole32(oto), htole32(size) };

	for (uint64_t b = 0; b < g->log_blocks; b++) {
		pread_f(path, blk, SSD_LOG_BLOCK, g->log_off + b * SSD_LOG_BLOCK);
		for (uint32_t sec = 0; sec < 256; sec++)
			memcpy(st + sec * 510, blk + sec * 512 + 2, 510);
		for (uint32_t p = 0; p + 16 <= STREAM_MAX; p++)
			if (!memcmp(st + p, want, 12)) {
				free(blk);
				*stream_pos = p;
				return (int64_t)b;
			}
	}
	free(blk);
	return -1;
}

/* writes the stream bytes [pos, pos + n) of block b */
static void stream_write(const char *path, const struct geo *g, uint64_t b, uint32_t pos,
			 const void *src, uint32_t n)
{
	const uint8_t *p = src;

	for (uint32_t i = 0; i < n; i++, pos++)
		pwrite_f(path, p + i, 1,
			 g->log_off + b * SSD_LOG_BLOCK + (pos / 510) * 512 + 2 + pos % 510);
}

static void test_crafted_log(const char *path)
{
	struct ssd_store *s;
	struct oracle *o = calloc(1, sizeof(*o));
	struct geo g;
	void *blob;
	size_t len;
	uint32_t pos, sz, h[4];
	int64_t b;
	int r, bad = 0, enospc = 0;
	uint8_t *payload = malloc(300);

	/* object <t0, 5> of 300 bytes, known contents; checkpointed */
	if (ssd_store_open(&s, path, 16 << 20, true) < 0) {
		ok(0, "crafted log: open");
		return;
	}
	oracle_init(s, o, 2);
	fill(s, o, 2);
	{
		struct ssd_obj ob = { o->otid[0], 5, 300, payload };

		o->ver[0][5] = ++gver;
		o->size[0][5] = 300;
		gen(payload, 300, o->otid[0], 5, o->ver[0][5]);
		ssd_obj_write(s, &ob, 1);
	}
	ok(!ssd_store_checkpoint(s, "C", 1), "crafted log: checkpoint");
	ssd_store_close(s);
	g = geo_of(path);
	b = find_header(path, &g, o->otid[0], 5, 300, &pos);
	ok(b >= 0, "found the object's header in block %lld", (long long)b);
	if (b < 0)
		return;

	/* a valid header (CRC right) naming another object: wrong back-pointer */
	h[0] = htole32(o->otid[0]);
	h[1] = htole32(6);
	h[2] = htole32(300);
	{
		uint8_t tmp[12 + 300];

		memcpy(tmp, h, 12);
		memcpy(tmp + 12, payload, 300);
		h[3] = htole32(crc32c(tmp, sizeof(tmp)));
	}
	stream_write(path, &g, (uint64_t)b, pos, h, 16);
	r = ssd_store_open(&s, path, 0, false);
	ok(!r && ssd_store_restore(s, &blob, &len) < 0 && errno == EBADMSG &&
	   strstr(ssd_strerror(), "back-pointer"),
	   "restore refuses a checkpoint whose object has the wrong back-pointer: %s",
	   ssd_strerror());
	if (!r)
		ssd_store_close(s);
	/* put it right; restore; then break it under the open store: the read says so */
	h[1] = htole32(5);
	{
		uint8_t tmp[12 + 300];

		memcpy(tmp, h, 12);
		memcpy(tmp + 12, payload, 300);
		h[3] = htole32(crc32c(tmp, sizeof(tmp)));
	}
	stream_write(path, &g, (uint64_t)b, pos, h, 16);
	r = ssd_store_open(&s, path, 0, false);
	ok(!r && !ssd_store_restore(s, &blob, &len) && verify(s, o, "fixed") == 0,
	   "with the right back-pointer it restores");
	if (r)
		return;
	free(blob);
	h[1] = htole32(6);
	{
		uint8_t tmp[12 + 300];

		memcpy(tmp, h, 12);
		memcpy(tmp + 12, payload, 300);
		h[3] = htole32(crc32c(tmp, sizeof(tmp)));
	}
	stream_write(path, &g, (uint64_t)b, pos, h, 16);
	r = ssd_obj_read(s, o->otid[0], 5, rbuf, MAXOBJ, &sz);
	{
		char want[64];

		snprintf(want, sizeof(want), "<%u,5>", o->otid[0]);
		ok(r < 0 && errno == EBADMSG && strstr(ssd_strerror(), want) &&
		   strstr(ssd_strerror(), "sector"), "the read names it: %s", ssd_strerror());
	}
	/* a flipped payload byte: checksum */
	h[1] = htole32(5);
	stream_write(path, &g, (uint64_t)b, pos, h, 16);	/* old CRC, id right */
	{
		uint8_t x = payload[100] ^ 0xff;

		stream_write(path, &g, (uint64_t)b, pos + 16 + 100, &x, 1);
	}
	r = ssd_obj_read(s, o->otid[0], 5, rbuf, MAXOBJ, &sz);
	ok(r < 0 && errno == EBADMSG && strstr(ssd_strerror(), "checksum"), "a damaged payload: %s",
	   ssd_strerror());
	o->size[0][5] = 0;
	ssd_obj_discard(s, o->otid[0], 5);

	/* random garbage over whole blocks of live objects: errors, no crash; GC goes on */
	{
		uint8_t *junk = malloc(SSD_LOG_BLOCK);

		for (uint64_t k = 0; k < 3 && k < g.log_blocks; k++) {
			for (uint32_t i = 0; i < SSD_LOG_BLOCK; i++)
				junk[i] = (uint8_t)rnd();
			/* a few sectors with plausible first-header offsets */
			for (uint32_t sec = 0; sec < 256; sec += 3)
				junk[sec * 512] = 2, junk[sec * 512 + 1] = 0;
			pwrite_f(path, junk, SSD_LOG_BLOCK, g.log_off + k * SSD_LOG_BLOCK);
		}
		free(junk);
	}
	bad = 0;
	for (int t = 0; t < 2; t++)
		for (uint32_t i = 0; i < NOBJ; i++) {
			r = ssd_obj_read(s, o->otid[t], i, rbuf, MAXOBJ, &sz);
			if (r < 0 && errno != EBADMSG)
				bad++;
			if (r < 0 || sz != o->size[t][i]) {
				/* lost to the garbage: forget it */
				ssd_obj_discard(s, o->otid[t], i);
				o->size[t][i] = 0;
			}
		}
	ok(bad == 0, "reads over garbage fail with EBADMSG only");
	/* the checkpoint pins those blocks; a new checkpoint lets the cleaner at them */
	ok(!ssd_store_checkpoint(s, "D", 1), "checkpoint after the damage");
	bad = workload(s, o, 3 * ssd_store_log_bytes(s), &enospc, 2, true);
	ok(bad == 0 && enospc == 0 && stats(s).gc_runs > 0,
	   "the store goes on over the garbage (%d bad, %d ENOSPC, %llu GC runs)", bad, enospc,
	   (unsigned long long)stats(s).gc_runs);
	ssd_store_close(s);

	/* the whole log garbage under a checkpoint: restore refuses, nothing crashes */
	{
		uint8_t *junk = malloc(SSD_LOG_BLOCK);

		r = ssd_store_open(&s, path, 0, false);
		if (!r) {
			ok(!ssd_store_checkpoint(s, "E", 1), "checkpoint of nothing");
			ssd_store_close(s);
		}
		for (uint64_t k = 0; k < g.log_blocks; k++) {
			for (uint32_t i = 0; i < SSD_LOG_BLOCK; i++)
				junk[i] = (uint8_t)rnd();
			pwrite_f(path, junk, SSD_LOG_BLOCK, g.log_off + k * SSD_LOG_BLOCK);
		}
		free(junk);
		r = ssd_store_open(&s, path, 0, false);
		ok(!r, "a store whose log is all garbage opens");
		if (!r) {
			int rr = ssd_store_restore(s, &blob, &len);

			/* "E" had no objects, so it restores; D's objects are gone */
			ok(!rr && len == 1 && !memcmp(blob, "E", 1),
			   "the empty checkpoint restores (%s)", rr ? ssd_strerror() : "");
			if (!rr)
				free(blob);
			oracle_init(s, o, 2);
			bad = workload(s, o, 2 * ssd_store_log_bytes(s), &enospc, 2, true);
			ok(bad == 0, "and the garbage log is written over without trouble");
			ssd_store_close(s);
		}
	}
	free(payload);
	free(o);
}

/*
 * Garbage over a block of live objects written after the last checkpoint: the
 * cleaner reads it, cannot verify them, and leaves the block alone (reads of
 * them keep failing with EBADMSG) while the rest of the store goes on.
 */
static void test_bad_block(const char *path)
{
	struct ssd_store *s;
	struct oracle *o = calloc(1, sizeof(*o));
	struct geo g;
	uint32_t pos, sz;
	int64_t bb;
	int r, enospc = 0, lost = 0, bad = 0, kept = 0;
	bool was_ok[NOBJ];
	uint8_t *junk = malloc(SSD_LOG_BLOCK);

	if (ssd_store_open(&s, path, 16 << 20, true) < 0) {
		ok(0, "bad block: open");
		return;
	}
	oracle_init(s, o, 2);
	for (uint32_t i = 0; i < NOBJ; i++) {	/* table 1: 64 x 1000 B, about half a block */
		struct ssd_obj ob = { o->otid[1], i, 1000, wbuf[0] };

		o->size[1][i] = 1000;
		o->ver[1][i] = ++gver;
		gen(wbuf[0], 1000, o->otid[1], i, o->ver[1][i]);
		ssd_obj_write(s, &ob, 1);
	}
	fill(s, o, 1);	/* table 0 after it: the block with table 1 gets written out */
	ok(!ssd_store_sync(s), "bad block: sync");
	g = geo_of(path);
	bb = find_header(path, &g, o->otid[1], 0, 1000, &pos);
	ok(bb >= 0, "bad block: table 1 starts in block %lld", (long long)bb);
	if (bb < 0)
		goto out;
	for (uint32_t i = 0; i < SSD_LOG_BLOCK; i++)
		junk[i] = (uint8_t)rnd();
	for (uint32_t sec = 0; sec < 256; sec += 2)
		junk[sec * 512] = 2, junk[sec * 512 + 1] = 0;
	pwrite_f(path, junk, SSD_LOG_BLOCK, g.log_off + (uint64_t)bb * SSD_LOG_BLOCK);
	for (uint32_t i = 0; i < NOBJ; i++) {
		r = ssd_obj_read(s, o->otid[1], i, rbuf, MAXOBJ, &sz);
		was_ok[i] = !r;
		lost += r < 0 && errno == EBADMSG;
		bad += r < 0 && errno != EBADMSG;
	}
	ok(lost > 0 && bad == 0, "bad block: %d objects of table 1 now fail with EBADMSG", lost);
	/* table 0's objects in that block: written again, so only table 1 keeps it live */
	for (uint32_t i = 0; i < NOBJ; i++)
		if (ssd_obj_read(s, o->otid[0], i, rbuf, MAXOBJ, &sz) < 0) {
			struct ssd_obj ob = { o->otid[0], i, 500, wbuf[0] };

			o->size[0][i] = 500;
			o->ver[0][i] = ++gver;
			gen(wbuf[0], 500, o->otid[0], i, o->ver[0][i]);
			bad += errno != EBADMSG || ssd_obj_write(s, &ob, 1) < 0;
		}
	/* table 0 only: the cleaner comes round to the garbage block several times */
	bad = workload(s, o, 3 * ssd_store_log_bytes(s), &enospc, 1, true);
	ok(bad == 0 && enospc == 0 && stats(s).gc_runs > 0,
	   "bad block: writes go on around it (%d bad, %d ENOSPC, %llu GC runs)", bad, enospc,
	   (unsigned long long)stats(s).gc_runs);
	bad = 0;
	for (uint32_t i = 0; i < NOBJ; i++) {
		r = ssd_obj_read(s, o->otid[1], i, rbuf, MAXOBJ, &sz);
		if (was_ok[i]) {
			gen(ebuf, 1000, o->otid[1], i, o->ver[1][i]);
			kept += !r && sz == 1000 && !memcmp(rbuf, ebuf, 1000);
		} else {
			bad += !(r < 0 && errno == EBADMSG);
		}
	}
	ok(kept == NOBJ - lost && bad == 0,
	   "bad block: the %d good objects of table 1 were kept, the %d lost ones still say EBADMSG",
	   kept, lost);
	o->exists[1] = false;
	ok(verify(s, o, "bad block") == 0, "bad block: table 0 is intact");
out:
	ssd_store_close(s);
	free(junk);
	free(o);
}

/* threads on their own tables of one store, plus one that syncs and checkpoints */
struct thr {
	struct ssd_store *s;
	uint32_t otid;
	uint64_t rng;
	int bad;
};

static void *thr_run(void *arg)
{
	struct thr *t = arg;
	uint8_t *w = malloc(MAXOBJ), *r = malloc(MAXOBJ), *e = malloc(MAXOBJ);
	uint32_t size[NOBJ] = { 0 }, ver[NOBJ] = { 0 }, v = 0;

	for (int op = 0; op < 3000; op++) {
		uint32_t i, sz, x;

		t->rng ^= t->rng << 13;
		t->rng ^= t->rng >> 7;
		t->rng ^= t->rng << 17;
		x = (uint32_t)(t->rng >> 16);
		i = x % NOBJ;
		if (x % 3 == 0) {
			struct ssd_obj ob = { t->otid, i, 1 + (x >> 8) % 16384, w };

			gen(w, ob.size, t->otid, i, ++v);
			if (ssd_obj_write(t->s, &ob, 1) < 0) {
				t->bad++;
				continue;
			}
			size[i] = ob.size;
			ver[i] = v;
		} else if (x % 11 == 1) {
			ssd_obj_discard(t->s, t->otid, i);
			size[i] = 0;
		} else {
			if (ssd_obj_read(t->s, t->otid, i, r, MAXOBJ, &sz) < 0 || sz != size[i]) {
				t->bad++;
				continue;
			}
			gen(e, sz, t->otid, i, ver[i]);
			t->bad += memcmp(r, e, sz) != 0;
		}
	}
	free(w);
	free(r);
	free(e);
	return NULL;
}

static void test_threads(const char *path)
{
	struct ssd_store *s;
	struct thr t[3];
	pthread_t id[3];
	int bad = 0, ck = 0;

	if (ssd_store_open(&s, path, 16 << 20, true) < 0) {
		ok(0, "threads: open");
		return;
	}
	for (int i = 0; i < 3; i++) {
		t[i] = (struct thr){ s, 0, 0x9E3779B97F4A7C15ull * (i + 1), 0 };
		ssd_ot_create(s, NOBJ, &t[i].otid);
		ssd_ot_set_durable(s, t[i].otid, true);	/* checkpointed while written */
		pthread_create(&id[i], NULL, thr_run, &t[i]);
	}
	for (int k = 0; k < 20; k++) {
		ck += ssd_store_checkpoint(s, &k, sizeof(k)) == 0;
		stats(s);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(id[i], NULL);
		bad += t[i].bad;
	}
	ok(bad == 0 && ck == 20, "threads: 3 x 3000 operations and 20 checkpoints at once (%d bad)",
	   bad);
	ssd_store_close(s);
}

/* ------------------------------------ durable tables, fragmentation, relocations */

/*
 * A fragmenting workload: FT durable tables of FN objects of random sizes (about
 * 45 % of a 16 MiB store's log live), then rounds of rewriting about half of them
 * with new sizes, discarding a tenth and sometimes replacing a table, each round
 * ending with a checkpoint. After a checkpoint nearly every block holds an object
 * it names, so the writer lives on relocation checkpoints.
 */
#define FT	8
#define FN	256

struct fo {
	uint32_t otid[FT];
	uint32_t size[FT][FN], ver[FT][FN];
};

static uint32_t frag_size(void)
{
	switch (rnd() % 3) {
	case 0:
		return 1 + rnd() % 512;
	case 1:
		return 1 + rnd() % 4096;
	default:
		return 1 + rnd() % 12000;
	}
}

/* writes objects <t, list[]> with new sizes and bytes, in batches of up to 8 */
static int fo_write(struct ssd_store *s, struct fo *o, int t, const uint32_t *list, unsigned int n)
{
	for (unsigned int j = 0; j < n; j += 8) {
		struct ssd_obj b[8];
		uint32_t sz[8], ver[8];
		unsigned int m = n - j < 8 ? n - j : 8;

		for (unsigned int k = 0; k < m; k++) {
			sz[k] = frag_size();
			ver[k] = ++gver;
			gen(wbuf[k], sz[k], o->otid[t], list[j + k], ver[k]);
			b[k] = (struct ssd_obj){ o->otid[t], list[j + k], sz[k], wbuf[k] };
		}
		if (ssd_obj_write(s, b, m) < 0) {
			printf("# frag: write: %s\n", ssd_strerror());
			return -1;
		}
		for (unsigned int k = 0; k < m; k++) {
			o->size[t][list[j + k]] = sz[k];
			o->ver[t][list[j + k]] = ver[k];
		}
	}
	return 0;
}

/* table t becomes a new durable table with every object written */
static int fo_table(struct ssd_store *s, struct fo *o, int t)
{
	uint32_t list[FN];

	if (ssd_ot_create(s, FN, &o->otid[t]) < 0 || ssd_ot_set_durable(s, o->otid[t], true) < 0) {
		printf("# frag: table: %s\n", ssd_strerror());
		return -1;
	}
	for (uint32_t i = 0; i < FN; i++) {
		list[i] = i;
		o->size[t][i] = 0;
	}
	return fo_write(s, o, t, list, FN);
}

/* one round of rewrites and discards; *gone: the otid of a table replaced, or -1 */
static int fo_round(struct ssd_store *s, struct fo *o, uint32_t *gone)
{
	uint32_t list[FN];

	*gone = UINT32_MAX;
	if (rnd() % 3 == 0) {
		int t = (int)(rnd() % FT);

		*gone = o->otid[t];
		ssd_ot_destroy(s, o->otid[t]);
		if (fo_table(s, o, t) < 0)
			return -1;
	}
	for (int t = 0; t < FT; t++) {
		unsigned int n = 0;

		for (uint32_t i = 0; i < FN; i++) {
			unsigned int r = rnd() % 100;

			if (r < 50) {
				list[n++] = i;
			} else if (r < 60) {
				ssd_obj_discard(s, o->otid[t], i);
				o->size[t][i] = 0;
			}
		}
		if (fo_write(s, o, t, list, n) < 0)
			return -1;
	}
	return 0;
}

static int fo_verify(struct ssd_store *s, const struct fo *o, const char *what)
{
	int bad = 0;

	for (int t = 0; t < FT; t++)
		for (uint32_t i = 0; i < FN; i++) {
			uint32_t sz = 12345;

			if (ssd_obj_read(s, o->otid[t], i, rbuf, MAXOBJ, &sz) < 0) {
				if (bad++ < 3)
					printf("# %s: read <%u,%u>: %s\n", what, o->otid[t], i,
					       ssd_strerror());
				continue;
			}
			if (sz != o->size[t][i]) {
				if (bad++ < 3)
					printf("# %s: <%u,%u> size %u, want %u\n", what, o->otid[t], i,
					       sz, o->size[t][i]);
				continue;
			}
			gen(ebuf, sz, o->otid[t], i, o->ver[t][i]);
			if (memcmp(rbuf, ebuf, sz) && bad++ < 3)
				printf("# %s: <%u,%u> bytes differ\n", what, o->otid[t], i);
		}
	return bad;
}

static uint64_t fo_bytes(const struct fo *o)
{
	uint64_t n = 0;

	for (int t = 0; t < FT; t++)
		for (uint32_t i = 0; i < FN; i++)
			n += o->size[t][i] ? 16 + o->size[t][i] : 0;
	return n;
}

/* the number of tables in the checkpoint slot of generation g */
static uint32_t slot_ntables(const char *path, uint64_t g)
{
	struct geo gm = geo_of(path);
	uint32_t n;

	pread_f(path, &n, 4, gm.ckpt_off + (g & 1) * gm.slot_bytes + 44);
	return le32toh(n);
}

static void test_fragment(const char *path)
{
	struct ssd_store *s;
	struct fo *o = calloc(1, sizeof(*o)), *snap = calloc(1, sizeof(*o));
	int rounds = full ? 40 : 6, r, fails = 0, reused = 0;
	uint32_t v, gone, last = 0, sz;
	uint64_t g, most = 0;
	uint8_t u[16];
	void *blob;
	size_t len;

	if (ssd_store_open(&s, path, 16 << 20, true) < 0) {
		ok(0, "frag: open");
		goto out;
	}
	for (int t = 0; t < FT; t++)
		if (fo_table(s, o, t) < 0)
			exit(2);
	/* a volatile table (an MP range, say) written alongside: never checkpointed */
	if (ssd_ot_create(s, 64, &v) < 0)
		exit(2);
	for (uint32_t i = 0; i < 64; i++) {
		struct ssd_obj ob = { v, i, 1000, wbuf[0] };

		gen(wbuf[0], 1000, v, i, 1);
		fails += ssd_obj_write(s, &ob, 1) < 0;
	}
	ok(!fails && !ssd_store_checkpoint(s, &last, sizeof(last)),
	   "frag: %u objects, %llu KiB live of a %llu KiB log, checkpoint 0", FT * FN,
	   (unsigned long long)fo_bytes(o) >> 10, (unsigned long long)ssd_store_log_bytes(s) >> 10);
	*snap = *o;
	for (r = 1; r <= rounds && !fails; r++) {
		if (fo_round(s, o, &gone) < 0) {
			fails++;
			break;
		}
		for (int t = 0; t < FT; t++)
			reused += gone != UINT32_MAX && o->otid[t] == gone;
		for (uint32_t i = 0; i < 64; i++) {
			struct ssd_obj ob = { v, i, 1000, wbuf[0] };

			gen(wbuf[0], 1000, v, i, (uint32_t)r + 1);
			fails += ssd_obj_write(s, &ob, 1) < 0;
		}
		most = fo_bytes(o) > most ? fo_bytes(o) : most;
		last = (uint32_t)r;
		if (ssd_store_checkpoint(s, &last, sizeof(last)) < 0) {
			printf("# frag: checkpoint %d: %s\n", r, ssd_strerror());
			fails++;
			break;
		}
		*snap = *o;
		if (r % 4 == 0 && fo_verify(s, o, "frag") != 0)
			fails++;
	}
	ssd_store_id(s, u, &g);
	ok(!fails, "frag: %d rounds of rewriting half of the objects and checkpointing, up to %llu KiB live: no ENOSPC, all reads right",
	   rounds, (unsigned long long)most >> 10);
	ok(g > (uint64_t)rounds + 1,
	   "frag: relocation checkpoints kept the writer going: generation %llu after %d checkpoints",
	   (unsigned long long)g, rounds + 1);
	sz = slot_ntables(path, g);
	ok(sz == FT, "frag: the slot holds the %u durable tables, not the volatile one (%u)", FT, sz);
	ok(!reused, "frag: a destroyed table's otid is not reused while the last checkpoint names it");
	/* more rewrites after the last checkpoint (relocations too), then "crash": close */
	fails += fo_round(s, o, &gone) < 0;
	ok(!fails && fo_verify(s, o, "frag after") == 0, "frag: one more round without a checkpoint");
	ssd_store_close(s);
	ok(!ssd_store_open(&s, path, 0, false) && !ssd_store_restore(s, &blob, &len) &&
	   len == sizeof(last) && !memcmp(blob, &last, len),
	   "frag: restore returns the last checkpoint's blob (%u)", last);
	free(blob);
	ok(fo_verify(s, snap, "frag restore") == 0,
	   "frag: exactly the last checkpoint's objects are back");
	ok(ssd_obj_read(s, v, 0, rbuf, MAXOBJ, &sz) < 0 && errno == EINVAL,
	   "frag: the volatile table is not restored");
	ssd_store_close(s);
out:
	free(o);
	free(snap);
}

/*
 * Volatile tables do not pin: a checkpoint, then every object of a table
 * holding 56 % of the log rewritten works; a durable table the same way cannot
 * (both versions would not fit): ENOSPC saying so, and the next checkpoint,
 * which needs no log space, frees the old versions.
 */
static void test_volatile(const char *path)
{
	struct ssd_store *s;
	uint32_t d, t, sz, n, nt, done = 0;
	int bad = 0, r = 0;

	for (int durable = 0; durable < 2; durable++) {
		const char *what = durable ? "durable" : "volatile";

		r = 0;
		if (ssd_store_open(&s, path, 16 << 20, true) < 0 || ssd_ot_create(s, 4, &d) < 0 ||
		    ssd_ot_set_durable(s, d, true) < 0 || ssd_ot_create(s, 1024, &t) < 0) {
			ok(0, "volatile: open");
			return;
		}
		if (!durable)
			ok(ssd_ot_set_durable(s, 9999, true) < 0 && errno == EINVAL,
			   "set_durable of no table: EINVAL");
		if (durable && ssd_ot_set_durable(s, t, true) < 0)
			exit(2);
		n = (uint32_t)(ssd_store_log_bytes(s) * 56 / 100 / 28000);
		for (uint32_t i = 0; i < n && !r; i++) {
			struct ssd_obj ob = { t, i, 28000, wbuf[0] };

			gen(wbuf[0], 28000, t, i, 1);
			r = ssd_obj_write(s, &ob, 1);
		}
		if (!r)
			r = ssd_store_checkpoint(s, "v", 1);
		nt = slot_ntables(path, 1);
		ok(!r && nt == 1u + durable, "%s: %u objects of 28000 B and a checkpoint of %u table(s)",
		   what, n, nt);
		for (done = 0; done < n; done++) {
			struct ssd_obj ob = { t, done, 28000, wbuf[0] };

			gen(wbuf[0], 28000, t, done, 2);
			if ((r = ssd_obj_write(s, &ob, 1)) < 0)
				break;
		}
		if (!durable) {
			ok(!r, "volatile: all rewritten after the checkpoint: its old versions do not pin (%s)",
			   r ? ssd_strerror() : "");
		} else {
			ok(r < 0 && errno == ENOSPC && strstr(ssd_strerror(), "last checkpoint"),
			   "durable: rewriting all after the checkpoint does not fit twice: ENOSPC after %u: %s",
			   done, ssd_strerror());
			ok(!ssd_store_checkpoint(s, "w", 1), "durable: a checkpoint still works then");
			for (; done < n; done++) {
				struct ssd_obj ob = { t, done, 28000, wbuf[0] };

				gen(wbuf[0], 28000, t, done, 2);
				if ((r = ssd_obj_write(s, &ob, 1)) < 0)
					break;
			}
			ok(!r, "durable: and frees the old versions: the rest is rewritten (%s)",
			   r ? ssd_strerror() : "");
		}
		bad = 0;
		for (uint32_t i = 0; i < n; i++) {
			gen(ebuf, 28000, t, i, 2);
			if (ssd_obj_read(s, t, i, rbuf, MAXOBJ, &sz) < 0 || sz != 28000 ||
			    memcmp(rbuf, ebuf, sz))
				bad++;
		}
		ok(!bad, "%s: every object reads its new version (%d bad)", what, bad);
		ssd_store_close(s);
	}
}

/*
 * Crashes in the fragmenting workload: a child restores the last checkpoint and
 * goes on with rounds and checkpoints, and is SIGKILLed at a random time or, by
 * the store's test hook, at a step of a relocation checkpoint; the restore gives
 * exactly the last checkpoint the child completed (or the one it was writing).
 */
struct crash_sh {
	uint32_t started, committed, relocs;
	struct fo snap[2];
};

static int hook_step, hook_nth, hook_seen;
static struct crash_sh *hook_sh;

/* counts relocations; in a hooked child, kills it at step hook_step of the hook_nth one */
static void kill_hook(int step)
{
	if (step == 0) {
		hook_seen++;
		hook_sh->relocs++;
	}
	if (step == hook_step && hook_seen == hook_nth)
		raise(SIGKILL);
}

static void test_crash_reloc(const char *path)
{
	struct crash_sh *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int kills = full ? 12 : 4, status, inreloc = 0;
	struct ssd_store *s;
	struct fo *o = calloc(1, sizeof(*o));
	void *blob;
	size_t len;

	if (sh == MAP_FAILED || ssd_store_open(&s, path, 16 << 20, true) < 0) {
		ok(0, "crash reloc: setup");
		return;
	}
	for (int t = 0; t < FT; t++)
		if (fo_table(s, o, t) < 0)
			exit(2);
	memset(sh, 0, sizeof(*sh));
	sh->snap[0] = *o;
	ok(!ssd_store_checkpoint(s, &sh->started, 4), "crash reloc: checkpoint 0");
	ssd_store_close(s);
	for (int k = 0; k < kills; k++) {
		/*
		 * Killed by the hook at step 0, 1, 2 of relocation 1 or 2 (k = 0, 1, 2, then
		 * every other k), else after a random time
		 */
		bool hooked = k < 3 || k % 2 == 0;
		int step = k < 3 ? k : k / 2 % 3;
		uint32_t n;
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			struct fo *c = malloc(sizeof(*c));
			uint32_t gone;

			rng_state ^= 0x9E3779B97F4A7C15ull * (uint64_t)(k + 1);
			if (open_after_death(&s, path) < 0 || ssd_store_restore(s, &blob, &len) < 0)
				_exit(3);
			memcpy(&n, blob, 4);
			*c = sh->snap[n % 2];
			hook_sh = sh;
			hook_step = hooked ? step : -1;
			hook_nth = 1 + (int)(rnd() % 2);
			ssd_store_test_hook = kill_hook;
			for (int r = 0; r < 200; r++) {
				if (fo_round(s, c, &gone) < 0)
					_exit(4);
				n++;
				sh->snap[n % 2] = *c;
				sh->started = n;
				if (ssd_store_checkpoint(s, &n, 4) < 0)
					_exit(5);
				sh->committed = n;
			}
			_exit(6);	/* no relocation in 200 rounds */
		}
		if (!hooked) {
			struct timespec ts = { 0, (long)(20 + rnd() % 600) * 1000000L };

			nanosleep(&ts, NULL);
			kill(pid, SIGKILL);
		}
		waitpid(pid, &status, 0);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
			ok(0, "crash reloc %d: the child failed (status %#x)", k, status);
			break;
		}
		if (open_after_death(&s, path) < 0 || ssd_store_restore(s, &blob, &len) < 0) {
			ok(0, "crash reloc %d: restore: %s", k, ssd_strerror());
			break;
		}
		memcpy(&n, blob, 4);
		free(blob);
		ok(len == 4 && n >= sh->committed && n <= sh->started &&
		   (!hooked || n == sh->committed) &&
		   fo_verify(s, &sh->snap[n % 2], "crash reloc") == 0,
		   "crash reloc %d: killed %s after checkpoint %u (%u relocations so far): restored checkpoint %u exactly",
		   k, hooked ? (step == 0 ? "before a relocation's slot write" :
				step == 1 ? "between a relocation's slot write and fdatasync" :
				"right after a relocation committed") : "at a random time",
		   sh->committed, sh->relocs, n);
		inreloc += hooked;
		sh->committed = sh->started = n;
		ssd_store_close(s);
	}
	ok(sh->relocs > 0 && inreloc >= 3, "crash reloc: %u relocation checkpoints in the children, %d kills inside one",
	   sh->relocs, inreloc);
	munmap(sh, sizeof(*sh));
	free(o);
}

/* the same object store on a loop device (a real block device, O_DIRECT) */
static void test_loop(void)
{
	char file[300], cmd[400], dev[64] = "";
	FILE *f;

	if (geteuid()) {
		printf("# not root: no loop device test\n");
		return;
	}
	snprintf(file, sizeof(file), "%s/test-store-loop.%d", dir, getpid());
	make_file(file, 16 << 20);
	snprintf(cmd, sizeof(cmd), "losetup -f --show %s 2>/dev/null", file);
	f = popen(cmd, "r");
	if (!f || !fgets(dev, sizeof(dev), f) || strncmp(dev, "/dev/loop", 9)) {
		printf("# losetup does not work here: no loop device test\n");
		if (f)
			pclose(f);
		unlink(file);
		return;
	}
	pclose(f);
	dev[strcspn(dev, "\n")] = 0;
	printf("# loop device %s\n", dev);
	{
		struct ssd_store *s;
		int r = ssd_store_open(&s, dev, 0, true);

		ok(!r && ssd_store_direct_io(s), "loop: format %s with O_DIRECT", dev);
		if (!r)
			ssd_store_close(s);
	}
	test_random(dev, 0, "loop");
	if (full)	/* the same code as on a file; the block device's part is above */
		test_crash(dev);
	snprintf(cmd, sizeof(cmd), "losetup -d %s", dev);
	ok(system(cmd) == 0, "loop: detached %s", dev);
	unlink(file);
}

int main(int argc, char **argv)
{
	char path[300];

	if (argc > 1) {
		snprintf(dir, sizeof(dir), "%s", argv[1]);
	} else {
		/*
		 * The devices are files in a tmpfs when there is one (as in
		 * scripts/ssdalloc-tests.sh: O_DIRECT works there since Linux 6.6, a
		 * disk only adds waiting); a file on /tmp's filesystem gets its own,
		 * shorter run below.
		 */
		struct statfs sf;

		if (!statfs("/dev/shm", &sf) && sf.f_type == TMPFS_MAGIC &&
		    !access("/dev/shm", W_OK))
			snprintf(dir, sizeof(dir), "/dev/shm");
	}
	snprintf(path, sizeof(path), "%s/test-store.%d", dir, getpid());
	setvbuf(stdout, NULL, _IOLBF, 0);
	full = getenv("SSC_FULL") && !strcmp(getenv("SSC_FULL"), "1");
	if (getenv("SSC_SEED")) {	/* other samples; the same seed draws the same ones */
		rng_state ^= strtoull(getenv("SSC_SEED"), NULL, 10) * 0x9E3779B97F4A7C15ull;
		if (!rng_state)
			rng_state = 1;
		printf("# seed %s\n", getenv("SSC_SEED"));
	}

	test_open(path);
	test_tables(path);
	test_rewrite_same_sector(path);
	test_random(path, 16 << 20, "file");
	test_enospc(path);
	test_checkpoint(path);
	test_crash(path);
	test_crafted_sb(path);
	test_crafted_ckpt(path);
	test_crafted_log(path);
	test_bad_block(path);
	test_threads(path);
	test_volatile(path);
	test_fragment(path);
	test_crash_reloc(path);
	unlink(path);
	if (argc <= 1) {
		struct stat st;

		if (strcmp(dir, "/tmp")) {
			snprintf(path, sizeof(path), "/tmp/test-store.%d", getpid());
			test_random(path, 16 << 20, "/tmp file");
			unlink(path);
		}
		test_loop();
		if (!stat("/dev/shm", &st)) {
			struct ssd_store *s;

			snprintf(path, sizeof(path), "/dev/shm/test-store.%d", getpid());
			bool direct = true;

			if (!ssd_store_open(&s, path, 16 << 20, true)) {
				direct = ssd_store_direct_io(s);
				printf("# /dev/shm: direct I/O %s\n",
				       direct ? "accepted" : "refused: buffered");
				ssd_store_close(s);
			}
			/* the buffered fallback's test; with O_DIRECT, the file's again */
			if (!direct || full)
				test_random(path, 16 << 20, "shm");
			unlink(path);
		}
	}
	printf("# %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
