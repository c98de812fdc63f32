// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * SSDAlloc against an oracle, through the public API only (linked with
 * libssdalloc.a). Every object has a shadow copy in plain malloc'd memory;
 * random allocations (pool OPP objects of 8..4096 B, OPP arrays, ssd_malloc,
 * ssd_calloc, ssd_realloc), writes, frees and reads are checked against it
 * byte for byte. The RAM budget is small against the live data, so the Page
 * Buffer and the RAM object cache evict all the time and the log wraps (GC).
 *
 *   test-oracle [options] [run]   the workload in a child process, a checkpoint,
 *                                 then restore in new processes (twice: once
 *                                 to verify, change and checkpoint again, once
 *                                 to verify that)
 *   test-oracle [options] child   test-crash's workload: --ckpts N checkpoints,
 *                                 each announced on --report-fd, then writes
 *                                 until killed (--during: killed inside
 *                                 checkpoint N + 1 by a thread of its own)
 *   test-oracle [options] verify  restore and compare with --snap files
 *
 * Durable across processes are the pool's OPP objects (ssd_oalloc(1, size)):
 * at each checkpoint their contents go to a snapshot file (DIR/snap-K), which
 * the restoring process compares with what it finds. Object 0 of every
 * snapshot is a marker holding the checkpoint's number, so that a restore which
 * may legitimately land on one of two checkpoints says which one it claims, and
 * is then held to all of that one.
 *
 * Seeded by --seed (default: $SSC_SEED, else the time); the seed is printed,
 * and the same seed draws the same operations (with threads, each thread's own
 * operations; the interleaving, and so the shared objects' bytes, differ).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ssdalloc.h"

#define PAGE 4096u
#define SNAP_MAGIC 0x314c43524f445353ull	/* "SSDORCL1" */

/* ------------------------------------------------------------ options */

static struct {
	uint64_t seed;
	const char *dir;
	const char *device;	/* a block device: used as it is */
	uint64_t dev_bytes, ram, pb, live;
	long ops;
	int threads;
	int ckpts;
	int report_fd;
	bool during;
	bool no_uffd;
	int expect_uffd;	/* -1: either */
	bool expect_gc, expect_evict;
	bool recheckpoint;
	bool no_zero_check;
	const char *snaps[2];
	int nsnaps;
} opt = {
	.dir = NULL, .dev_bytes = 48ull << 20, .ram = 4ull << 20, .pb = 1ull << 20,
	.live = 16ull << 20, .ops = 100000, .threads = 1, .ckpts = 1, .report_fd = -1,
	.expect_uffd = -1, .expect_gc = true, .expect_evict = true,
};

static const char *mode = "run";
static char path_dev[4096], path_ckpt[4096];

static void __attribute__((format(printf, 1, 2), noreturn)) fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "test-oracle: FAIL (%s, seed %" PRIu64 "): ", mode, opt.seed);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(NULL);
	_exit(1);
}

/* ------------------------------------------------------------ random */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* uniform in [lo, hi] */
static uint64_t rnd(uint64_t *s, uint64_t lo, uint64_t hi)
{
	return lo + splitmix(s) % (hi - lo + 1);
}

static void rnd_fill(uint64_t *s, uint8_t *a, uint8_t *b, size_t len)
{
	while (len) {
		uint64_t v = splitmix(s);
		size_t k = len < 8 ? len : 8;

		memcpy(a, &v, k);
		if (b)
			memcpy(b, &v, k);
		a += k;
		if (b)
			b += k;
		len -= k;
	}
}

/* ------------------------------------------------------------ the oracle */

enum kind { K_POOL, K_OARR, K_MALLOC, K_CALLOC, K_MARKER };
static const char *const kind_name[] = { "pool", "oarray", "malloc", "calloc", "marker" };

struct obj {
	uint8_t *p;		/* in SSDAlloc's memory */
	uint8_t *shadow;	/* the oracle: n * size bytes of plain memory */
	size_t size;		/* one element (OPP), or the allocation (MP) */
	uint32_t n;		/* elements of an OPP array, else 1 */
	enum kind kind;
};

struct set {
	struct obj *o;
	size_t nobj, cap;
	size_t live;		/* bytes of the objects */
	size_t target;		/* live bytes to hover around */
	uint64_t rng;
	int id;
	unsigned long n_alloc[5], n_free, n_realloc, n_write, n_read;
};

/* OPP: each object at the start of its own page(s) */
static size_t stride(const struct obj *o)
{
	return o->kind == K_OARR ? (o->size + PAGE - 1) / PAGE * PAGE : o->size;
}

static uint8_t *elem(const struct obj *o, uint32_t i)
{
	return o->p + (size_t)i * stride(o);
}

static size_t obj_bytes(const struct obj *o)
{
	return o->size * o->n;
}

/* [off, off + len) of element i against the oracle: the first differing offset, or -1 */
static long differs(const struct obj *o, uint32_t i, size_t off, size_t len)
{
	const uint8_t *a = elem(o, i) + off, *b = o->shadow + (size_t)i * o->size + off;
	size_t k;

	if (!memcmp(a, b, len))
		return -1;
	for (k = 0; k < len && a[k] == b[k]; k++)
		;
	return (long)(off + k);
}

static void check_range(const struct set *s, size_t idx, uint32_t i, size_t off, size_t len,
			const char *when)
{
	const struct obj *o = &s->o[idx];
	long d = differs(o, i, off, len);

	if (d >= 0)
		fail("set %d object %zu (%s, %zu B x %u at %p), element %u, byte %ld: 0x%02x, "
		     "expected 0x%02x (%s)", s->id, idx, kind_name[o->kind], o->size, o->n,
		     (void *)o->p, i, d, elem(o, i)[d], o->shadow[(size_t)i * o->size + d], when);
}

static void check_obj(const struct set *s, size_t idx, const char *when)
{
	const struct obj *o = &s->o[idx];
	uint32_t i;

	for (i = 0; i < o->n; i++)
		check_range(s, idx, i, 0, o->size, when);
}

static struct obj *push(struct set *s)
{
	if (s->nobj == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		s->o = realloc(s->o, s->cap * sizeof(*s->o));
		if (!s->o)
			fail("out of memory");
	}
	memset(&s->o[s->nobj], 0, sizeof(*s->o));
	return &s->o[s->nobj++];
}

/* the last frees, for a failure's diagnostic: was the address handed out before? */
#define NFREED 65536
static uintptr_t freed_at[NFREED];
static unsigned long nfreed;

static long freed_ago(const void *p)
{
	unsigned long k;

	for (k = nfreed; k > 0 && k + NFREED > nfreed; k--)
		if (freed_at[(k - 1) % NFREED] == (uintptr_t)p)
			return (long)(nfreed - k);
	return -1;
}

static void must_be_zero(const struct set *s, const struct obj *o, const char *what)
{
	uint32_t i;
	size_t k;

	for (i = 0; i < o->n; i++)
		for (k = 0; k < o->size; k++)
			if (elem(o, i)[k])
				fail("set %d: a new %s object (%zu B at %p) reads 0x%02x at element %u "
				     "byte %zu, not zero (%s; op %lu; %s %ld frees ago)", s->id,
				     kind_name[o->kind], o->size, (void *)o->p, elem(o, i)[k], i, k,
				     what, s->n_write + s->n_read + s->n_free + s->n_realloc,
				     freed_ago(o->p) < 0 ? "not freed in the last 65536, or" :
				     "the address was freed", freed_ago(o->p));
}

/* a new object of a random kind, filled with random bytes (calloc's stay zero) */
static void op_alloc(struct set *s, enum kind kind)
{
	struct obj *o = push(s);
	uint32_t i;

	o->kind = kind;
	o->n = 1;
	switch (kind) {
	case K_MARKER:
		o->size = 64;
		o->p = ssd_oalloc(1, (int)o->size);
		break;
	case K_POOL:
		o->size = rnd(&s->rng, 8, 4096);
		o->p = ssd_oalloc(1, (int)o->size);
		break;
	case K_OARR:
		o->n = rnd(&s->rng, 2, 8);
		o->size = rnd(&s->rng, 8, 4096);
		o->p = ssd_oalloc((int)o->n, (int)o->size);
		break;
	case K_MALLOC:
		/* mostly small, some of several pages */
		o->size = rnd(&s->rng, 0, 3) ? rnd(&s->rng, 1, 4096) : rnd(&s->rng, 4097, 65536);
		o->p = ssd_malloc(o->size);
		break;
	case K_CALLOC: {
		size_t n = rnd(&s->rng, 1, 64), sz = rnd(&s->rng, 1, 1024);

		o->size = n * sz;
		o->p = ssd_calloc(n, sz);
		break;
	}
	}
	if (!o->p)
		fail("set %d: %s of %u x %zu B: NULL (%s)", s->id, kind_name[kind], o->n, o->size,
		     ssd_strerror());
	if ((kind == K_POOL || kind == K_OARR || kind == K_MARKER) && ((uintptr_t)o->p % PAGE))
		fail("set %d: OPP object %p not at the start of a page", s->id, (void *)o->p);
	o->shadow = calloc(1, obj_bytes(o));
	if (!o->shadow)
		fail("out of memory");
	if (kind == K_CALLOC)
		must_be_zero(s, o, "ssd_calloc");
	else if (kind != K_MALLOC && !opt.no_zero_check)
		/* the runtime forgets a freed object everywhere: a reused one reads as zeros */
		must_be_zero(s, o, "ssd_oalloc");
	if (kind != K_CALLOC)
		for (i = 0; i < o->n; i++)
			rnd_fill(&s->rng, elem(o, i), o->shadow + (size_t)i * o->size, o->size);
	s->live += obj_bytes(o);
	s->n_alloc[kind]++;
}

static enum kind random_kind(struct set *s)
{
	unsigned int r = rnd(&s->rng, 0, 99);

	return r < 55 ? K_POOL : r < 65 ? K_OARR : r < 90 ? K_MALLOC : K_CALLOC;
}

static size_t pick(struct set *s)
{
	return rnd(&s->rng, 0, s->nobj - 1);
}

static void op_free(struct set *s, size_t idx)
{
	struct obj *o = &s->o[idx];

	if (o->kind == K_MARKER)
		return;
	/* it is what the oracle says up to its last byte */
	check_obj(s, idx, "before ssd_free");
	if (ssd_free_checked(o->p))
		fail("set %d: ssd_free_checked of a live %s object %p: %s", s->id,
		     kind_name[o->kind], (void *)o->p, ssd_strerror());
	s->live -= obj_bytes(o);
	if (s->id == 0)	/* set 0 is one thread's */
		freed_at[nfreed++ % NFREED] = (uintptr_t)o->p;
	free(o->shadow);
	s->o[idx] = s->o[--s->nobj];
	s->n_free++;
}

static void op_realloc(struct set *s, size_t idx)
{
	struct obj *o = &s->o[idx];
	size_t ns = rnd(&s->rng, 0, 3) ? rnd(&s->rng, 1, 8192) : rnd(&s->rng, 8193, 65536);
	size_t keep = ns < o->size ? ns : o->size;
	uint8_t *q, *sh;

	q = ssd_realloc(o->p, ns);
	if (!q)
		fail("set %d: ssd_realloc(%p, %zu): NULL (%s)", s->id, (void *)o->p, ns,
		     ssd_strerror());
	o->p = q;
	{
		const uint8_t *a = q, *b = o->shadow;
		size_t k;

		if (memcmp(a, b, keep)) {
			for (k = 0; a[k] == b[k]; k++)
				;
			fail("set %d: ssd_realloc %zu -> %zu B moved the bytes wrong: byte %zu is "
			     "0x%02x, expected 0x%02x", s->id, o->size, ns, k, a[k], b[k]);
		}
	}
	sh = realloc(o->shadow, ns);
	if (!sh)
		fail("out of memory");
	o->shadow = sh;
	if (ns > keep)
		rnd_fill(&s->rng, q + keep, sh + keep, ns - keep);
	s->live = s->live - o->size + ns;
	o->size = ns;
	o->kind = K_MALLOC;
	s->n_realloc++;
}

static void op_write(struct set *s, size_t idx)
{
	struct obj *o = &s->o[idx];
	uint32_t i = rnd(&s->rng, 0, o->n - 1);
	size_t off = rnd(&s->rng, 0, o->size - 1);
	size_t len = rnd(&s->rng, 1, o->size - off < 512 ? o->size - off : 512);

	if (o->kind == K_MARKER)
		return;
	rnd_fill(&s->rng, elem(o, i) + off, o->shadow + (size_t)i * o->size + off, len);
	s->n_write++;
}

static void op_read(struct set *s, size_t idx)
{
	struct obj *o = &s->o[idx];
	uint32_t i = rnd(&s->rng, 0, o->n - 1);
	size_t off, len;

	s->n_read++;
	if (!rnd(&s->rng, 0, 3)) {
		check_obj(s, idx, "read of the whole object");
		return;
	}
	off = rnd(&s->rng, 0, o->size - 1);
	len = rnd(&s->rng, 1, o->size - off);
	check_range(s, idx, i, off, len, "read of a range");
}

/* one random operation; the live data hovers around s->target */
static void op(struct set *s)
{
	unsigned int r = rnd(&s->rng, 0, 99);
	bool under = s->live < s->target;
	size_t idx;

	if (!s->nobj || (under && r < 20)) {
		op_alloc(s, random_kind(s));
		return;
	}
	idx = pick(s);
	if (r < 20 || (!under && r < 28)) {
		op_free(s, idx);
	} else if (r < 31) {
		if (s->o[idx].kind == K_MALLOC || s->o[idx].kind == K_CALLOC)
			op_realloc(s, idx);
		else
			op_write(s, idx);
	} else if (r < 65) {
		op_write(s, idx);
	} else {
		op_read(s, idx);
	}
}

static void fill(struct set *s)
{
	while (s->live < s->target)
		op_alloc(s, random_kind(s));
}

static void check_all(const struct set *s, const char *when)
{
	size_t i;

	for (i = 0; i < s->nobj; i++)
		check_obj(s, i, when);
}

static void set_init(struct set *s, int id, size_t target)
{
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->target = target;
	s->rng = opt.seed * 1000003u + (uint64_t)id;
}

/* ------------------------------------------------------------ snapshots */

/*
 * DIR/snap-K: magic, checkpoint number, count, then for each pool object
 * (the marker first) its address, size and bytes.
 */
static void snap_write(const char *path, uint64_t gen, struct set *sets, int nsets)
{
	char tmp[4200];
	uint64_t n = 0, hdr[3];
	FILE *f;
	int t;
	size_t i;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		fail("%s: %s", tmp, strerror(errno));
	for (t = 0; t < nsets; t++)
		for (i = 0; i < sets[t].nobj; i++)
			n += sets[t].o[i].kind == K_POOL || sets[t].o[i].kind == K_MARKER;
	hdr[0] = SNAP_MAGIC;
	hdr[1] = gen;
	hdr[2] = n;
	fwrite(hdr, sizeof(hdr), 1, f);
	for (t = 0; t < nsets; t++)
		for (i = 0; i < sets[t].nobj; i++) {
			const struct obj *o = &sets[t].o[i];
			uint64_t rec[2] = { (uintptr_t)o->p, o->size };

			if (o->kind != K_POOL && o->kind != K_MARKER)
				continue;
			fwrite(rec, sizeof(rec), 1, f);
			fwrite(o->shadow, o->size, 1, f);
		}
	if (fflush(f) || ferror(f) || fclose(f))
		fail("%s: cannot write", tmp);
	if (rename(tmp, path))
		fail("rename %s: %s", tmp, strerror(errno));
}

/* loads a snapshot as a set of pool objects (p = their addresses, not touched here) */
static uint64_t snap_read(const char *path, struct set *s)
{
	uint64_t hdr[3], rec[2], k;
	FILE *f = fopen(path, "r");

	if (!f)
		fail("%s: %s", path, strerror(errno));
	if (fread(hdr, sizeof(hdr), 1, f) != 1 || hdr[0] != SNAP_MAGIC)
		fail("%s: not a snapshot", path);
	for (k = 0; k < hdr[2]; k++) {
		struct obj *o = push(s);

		if (fread(rec, sizeof(rec), 1, f) != 1 || !rec[1] || rec[1] > PAGE)
			fail("%s: truncated", path);
		o->p = (uint8_t *)(uintptr_t)rec[0];
		o->size = rec[1];
		o->n = 1;
		o->kind = k ? K_POOL : K_MARKER;
		o->shadow = malloc(o->size);
		if (!o->shadow || fread(o->shadow, o->size, 1, f) != 1)
			fail("%s: truncated", path);
		s->live += o->size;
	}
	fclose(f);
	return hdr[1];
}

/* the marker (object 0 of set 0) says which checkpoint the state is */
static void mark(struct set *s, uint64_t gen)
{
	struct obj *o = &s->o[0];

	memset(o->shadow, 0, o->size);
	snprintf((char *)o->shadow, o->size, "checkpoint %" PRIu64, gen);
	memcpy(o->p, o->shadow, o->size);
}

/* ------------------------------------------------------------ the library */

static void lib_init(bool format)
{
	struct ssd_config cfg = {
		.device = opt.device ? opt.device : path_dev,
		.device_bytes = opt.device ? 0 : opt.dev_bytes,
		.ram_bytes = opt.ram,
		.page_buffer_bytes = opt.pb,
		.flags = (format ? SSD_FORMAT : 0) | (opt.no_uffd ? SSD_NO_UFFD : 0),
	};
	struct ssd_stats st;

	if (ssd_init(&cfg))
		fail("ssd_init(%s, %" PRIu64 " B, RAM %" PRIu64 ", page buffer %" PRIu64 "): %s",
		     cfg.device, cfg.device_bytes, cfg.ram_bytes, cfg.page_buffer_bytes,
		     ssd_strerror());
	if (ssd_stats(&st))
		fail("ssd_stats: %s", ssd_strerror());
	if (opt.expect_uffd >= 0 && st.uffd != (uint64_t)opt.expect_uffd)
		fail("the runtime uses %s, expected %s", st.uffd ? "userfaultfd" : "mprotect + SIGSEGV",
		     opt.expect_uffd ? "userfaultfd" : "mprotect + SIGSEGV");
	if (opt.no_uffd && st.uffd)
		fail("SSD_NO_UFFD asked for, but the runtime uses userfaultfd");
}

static void print_stats(const char *what)
{
	struct ssd_stats st;

	if (ssd_stats(&st))
		fail("ssd_stats: %s", ssd_strerror());
	printf("%s: stats: uffd=%" PRIu64 " faults r/w=%" PRIu64 "/%" PRIu64 " mat/demat=%" PRIu64
	       "/%" PRIu64 " ram hits/misses=%" PRIu64 "/%" PRIu64 " evict clean/dirty=%" PRIu64
	       "/%" PRIu64 " ssd reads=%" PRIu64 " (%" PRIu64 " B) writes=%" PRIu64 " (%" PRIu64
	       " B) objects_written=%" PRIu64 " gc runs/moves=%" PRIu64 "/%" PRIu64
	       " checkpoints=%" PRIu64 " objects=%" PRIu64 " ot_bytes=%" PRIu64 "\n", what,
	       st.uffd, st.faults_read, st.faults_write, st.materializations,
	       st.dematerializations, st.ram_hits, st.ram_misses, st.ram_evictions_clean,
	       st.ram_evictions_dirty, st.ssd_reads, st.ssd_read_bytes, st.ssd_writes,
	       st.ssd_write_bytes, st.objects_written, st.gc_runs, st.gc_moves, st.checkpoints,
	       st.objects, st.ot_bytes);
	fflush(stdout);
}

/* what the workload must have exercised: a test that evicts nothing tests nothing */
static void expect_exercised(void)
{
	struct ssd_stats st;

	if (ssd_stats(&st))
		fail("ssd_stats: %s", ssd_strerror());
	if (opt.expect_evict) {
		if (!st.dematerializations)
			fail("the Page Buffer never evicted (dematerializations 0)");
		if (!st.ram_evictions_dirty)
			fail("the RAM object cache never evicted a dirty object");
		if (!st.ram_misses || !st.ssd_reads)
			fail("nothing was read back from the store (ram_misses %" PRIu64
			     ", ssd_reads %" PRIu64 ")", st.ram_misses, st.ssd_reads);
	}
	if (opt.expect_gc && !st.gc_runs)
		fail("GC never ran (%" PRIu64 " B written to the store)", st.ssd_write_bytes);
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void checkpoint(uint64_t gen, struct set *sets, int nsets, uint64_t *dur)
{
	char snap[4200];
	uint64_t t0;

	snprintf(snap, sizeof(snap), "%s/snap-%" PRIu64, opt.dir, gen);
	mark(&sets[0], gen);
	/* the snapshot first: a kill inside ssd_checkpoint may land on this state */
	snap_write(snap, gen, sets, nsets);
	t0 = now_us();
	if (ssd_checkpoint(path_ckpt))
		fail("ssd_checkpoint %" PRIu64 ": %s", gen, ssd_strerror());
	if (dur)
		*dur = now_us() - t0;
}

/* ------------------------------------------------------------ threads */

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct set shared;
static struct set *tsets;

static void *worker(void *arg)
{
	struct set *s = arg;
	long k, ops = opt.ops / opt.threads;

	fill(s);
	for (k = 0; k < ops; k++) {
		/* one op in ten on the shared objects: whole-object check, then a write */
		if (!rnd(&s->rng, 0, 9)) {
			size_t idx;

			pthread_mutex_lock(&shared_lock);
			idx = rnd(&s->rng, 1, shared.nobj - 1);
			check_obj(&shared, idx, "shared object, under the lock");
			op_write(&shared, idx);
			pthread_mutex_unlock(&shared_lock);
			continue;
		}
		op(s);
	}
	check_all(s, "end of the thread");
	return NULL;
}

/* ------------------------------------------------------------ modes */

/* the workload, a checkpoint and its snapshot (DIR/snap-1); in the child of run */
static int do_workload(void)
{
	int nsets = opt.threads + 1, t;
	struct set *sets = calloc(nsets, sizeof(*sets));
	pthread_t *tid = calloc(opt.threads, sizeof(*tid));
	long k;

	if (!sets || !tid)
		fail("out of memory");
	lib_init(true);
	/* set 0 holds the marker (and, with threads, the shared objects) */
	set_init(&sets[0], 0, opt.threads > 1 ? 256 << 10 : opt.live);
	op_alloc(&sets[0], K_MARKER);
	if (opt.threads > 1) {
		size_t i;

		for (i = 0; i < 64; i++)
			op_alloc(&sets[0], i % 8 ? K_POOL : K_MALLOC);
		shared = sets[0];
		tsets = sets + 1;
		for (t = 0; t < opt.threads; t++) {
			set_init(&tsets[t], t + 1, opt.live / opt.threads);
			if (pthread_create(&tid[t], NULL, worker, &tsets[t]))
				fail("pthread_create");
		}
		for (t = 0; t < opt.threads; t++)
			pthread_join(tid[t], NULL);
		sets[0] = shared;
		check_all(&sets[0], "shared objects, after the threads");
	} else {
		nsets = 1;
		fill(&sets[0]);
		for (k = 0; k < opt.ops; k++)
			op(&sets[0]);
	}
	for (t = 0; t < nsets; t++)
		check_all(&sets[t], "end of the workload");
	print_stats("workload");
	expect_exercised();
	checkpoint(1, sets, nsets, NULL);
	for (t = 0; t < nsets; t++)
		check_all(&sets[t], "after ssd_checkpoint");
	{
		unsigned long na = 0, nf = 0, nr = 0, nw = 0, nrd = 0, i;

		for (t = 0; t < nsets; t++) {
			for (i = 0; i < 5; i++)
				na += sets[t].n_alloc[i];
			nf += sets[t].n_free;
			nr += sets[t].n_realloc;
			nw += sets[t].n_write;
			nrd += sets[t].n_read;
		}
		printf("workload: %d thread(s): %lu allocations, %lu frees, %lu reallocs, %lu writes, "
		       "%lu reads verified; checkpoint 1 taken\n", opt.threads, na, nf, nr, nw, nrd);
	}
	ssd_shutdown();
	return 0;
}

/* restore and compare with the snapshot the marker names; exit 0 (first --snap), 4 (second) */
static int do_verify(void)
{
	static struct set cand[2];	/* static: reachable at exit (LeakSanitizer) */
	struct set *s;
	uint64_t gen[2], got;
	int i, which = -1;
	size_t k, nfree;
	char buf[64];

	if (!opt.nsnaps)
		fail("verify: no --snap");
	for (i = 0; i < opt.nsnaps; i++) {
		set_init(&cand[i], 0, 0);
		gen[i] = snap_read(opt.snaps[i], &cand[i]);
	}
	lib_init(false);
	if (ssd_restore(path_ckpt)) {
		fprintf(stderr, "test-oracle: ssd_restore(%s): %s\n", path_ckpt, ssd_strerror());
		_exit(2);
	}
	/* the marker is at the same address in every snapshot */
	memcpy(buf, cand[0].o[0].p, sizeof(buf));
	buf[sizeof(buf) - 1] = 0;
	if (sscanf(buf, "checkpoint %" SCNu64, &got) != 1)
		fail("the marker object at %p holds no checkpoint number", (void *)cand[0].o[0].p);
	for (i = 0; i < opt.nsnaps; i++)
		if (gen[i] == got)
			which = i;
	if (which < 0)
		fail("restored checkpoint %" PRIu64 ", expected %" PRIu64 "%s", got, gen[0],
		     opt.nsnaps > 1 ? " or the next" : "");
	s = &cand[which];
	s->rng = opt.seed * 7 + got;
	check_all(s, "after ssd_restore");
	printf("verify: restored checkpoint %" PRIu64 " (%s): %zu pool objects, %zu B, all equal\n",
	       got, opt.snaps[which], s->nobj, s->live);
	if (!opt.recheckpoint) {
		ssd_shutdown();
		return which ? 4 : 0;
	}
	/*
	 * The restored heap goes on working: free a quarter of the objects (a second
	 * free of one is refused), allocate as many, which must not overlap the others,
	 * write, and checkpoint again (DIR/snap-<gen + 1>) for the next process.
	 */
	nfree = s->nobj / 4;
	for (k = 0; k < nfree && s->nobj > 1; k++) {
		size_t idx = rnd(&s->rng, 1, s->nobj - 1);
		void *p = s->o[idx].p;

		op_free(s, idx);
		if (!k && (ssd_free_checked(p) == 0 || errno != EINVAL))
			fail("a second ssd_free of restored object %p was not refused with EINVAL", p);
	}
	for (k = 0; k < nfree; k++) {
		size_t j, n = s->nobj;
		struct obj *o;

		op_alloc(s, K_POOL);
		o = &s->o[n];
		for (j = 0; j < n; j++)
			if (o->p < s->o[j].p + PAGE && s->o[j].p < o->p + PAGE)
				fail("new object %p overlaps restored object %p", (void *)o->p,
				     (void *)s->o[j].p);
	}
	for (k = 0; s->nobj > 1 && k < 4 * s->nobj; k++)
		op_write(s, rnd(&s->rng, 1, s->nobj - 1));
	check_all(s, "restored heap, after frees, allocations and writes");
	checkpoint(got + 1, s, 1, NULL);
	printf("verify: freed %zu, allocated %zu, wrote; checkpoint %" PRIu64 " taken\n", nfree,
	       nfree, got + 1);
	ssd_shutdown();
	return 0;
}

static int report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int report(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (opt.report_fd >= 0 && write(opt.report_fd, line, n) != n)
		fail("report: %s", strerror(errno));
	return 0;
}

static uint64_t kill_after_ns;

static void *killer(void *arg)
{
	struct timespec ts = { (time_t)(kill_after_ns / 1000000000),
			       (long)(kill_after_ns % 1000000000) };

	(void)arg;
	nanosleep(&ts, NULL);
	kill(getpid(), SIGKILL);
	return NULL;
}

/* test-crash's child: checkpoints 1..N announced, then writes until killed */
static int do_child(void)
{
	struct set s;
	uint64_t dur = 0;
	int k;

	lib_init(true);
	set_init(&s, 0, opt.live);
	op_alloc(&s, K_MARKER);
	fill(&s);
	for (k = 1; k <= opt.ckpts; k++) {
		long j;

		for (j = 0; j < opt.ops; j++)
			op(&s);
		checkpoint(k, &s, 1, &dur);
		report("C %d %" PRIu64 "\n", k, dur);
	}
	if (opt.during) {
		pthread_t t;
		long j;

		for (j = 0; j < opt.ops; j++)
			op(&s);
		/* somewhere in the next checkpoint, or just after it */
		kill_after_ns = rnd(&s.rng, 0, dur * 1500 + 1000);
		report("B %d %" PRIu64 "\n", k, kill_after_ns / 1000);
		mark(&s, k);
		{
			char snap[4200];

			snprintf(snap, sizeof(snap), "%s/snap-%d", opt.dir, k);
			snap_write(snap, k, &s, 1);
		}
		if (pthread_create(&t, NULL, killer, NULL))
			fail("pthread_create");
		if (ssd_checkpoint(path_ckpt))
			fail("ssd_checkpoint %d: %s", k, ssd_strerror());
		report("C %d\n", k);
	}
	for (;;)
		op(&s);
}

static uint64_t size_arg(const char *a)
{
	char *end;
	uint64_t v = strtoull(a, &end, 0);

	switch (*end) {
	case 'G': v <<= 10; /* fall through */
	case 'M': v <<= 10; /* fall through */
	case 'K': v <<= 10; end++; break;
	}
	if (*end || end == a)
		fail("bad size '%s'", a);
	return v;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: test-oracle [--seed N] [--dir DIR] [--device BLKDEV] [--dev-size B]\n"
		"         [--ram B] [--page-buffer B] [--live B] [--ops N] [--threads N] [--no-uffd]\n"
		"         [--expect-uffd 0|1] [--no-expect-gc] [--no-expect-evict] [--no-zero-check]\n"
		"         [run | child --ckpts N [--during] --report-fd FD |\n"
		"          verify --snap FILE [--snap FILE] [--recheckpoint]]\n");
	exit(2);
}

static int run_verify(const char *self, const char *snap, bool re)
{
	char seed[32], ram[32], pb[32], ds[32];
	const char *argv[32];
	int n = 0, st;
	pid_t pid;

	snprintf(seed, sizeof(seed), "%" PRIu64, opt.seed);
	snprintf(ram, sizeof(ram), "%" PRIu64, opt.ram);
	snprintf(pb, sizeof(pb), "%" PRIu64, opt.pb);
	snprintf(ds, sizeof(ds), "%" PRIu64, opt.dev_bytes);
	argv[n++] = self;
	argv[n++] = "--seed"; argv[n++] = seed;
	argv[n++] = "--dir"; argv[n++] = opt.dir;
	argv[n++] = "--ram"; argv[n++] = ram;
	argv[n++] = "--page-buffer"; argv[n++] = pb;
	argv[n++] = "--dev-size"; argv[n++] = ds;
	if (opt.device) {
		argv[n++] = "--device";
		argv[n++] = opt.device;
	}
	if (opt.no_uffd)
		argv[n++] = "--no-uffd";
	if (opt.no_zero_check)
		argv[n++] = "--no-zero-check";
	argv[n++] = "--snap"; argv[n++] = snap;
	if (re)
		argv[n++] = "--recheckpoint";
	argv[n++] = "verify";
	argv[n] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (!pid) {
		execv(self, (char *const *)argv);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0)
		fail("waitpid: %s", strerror(errno));
	if (WIFSIGNALED(st))
		fail("the restoring process died of signal %d (%s)", WTERMSIG(st),
		     strsignal(WTERMSIG(st)));
	return WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", 1, NULL, 's' }, { "dir", 1, NULL, 'd' }, { "device", 1, NULL, 'D' },
		{ "dev-size", 1, NULL, 'S' }, { "ram", 1, NULL, 'r' },
		{ "page-buffer", 1, NULL, 'b' }, { "live", 1, NULL, 'l' }, { "ops", 1, NULL, 'o' },
		{ "threads", 1, NULL, 't' }, { "no-uffd", 0, NULL, 'N' },
		{ "expect-uffd", 1, NULL, 'U' }, { "no-expect-gc", 0, NULL, 'G' },
		{ "no-expect-evict", 0, NULL, 'E' }, { "ckpts", 1, NULL, 'c' },
		{ "during", 0, NULL, 'I' }, { "report-fd", 1, NULL, 'R' },
		{ "snap", 1, NULL, 'P' }, { "recheckpoint", 0, NULL, 'C' },
		{ "no-zero-check", 0, NULL, 'Z' }, { NULL, 0, NULL, 0 }
	};
	const char *env = getenv("SSC_SEED");
	char self[4096], tmpl[] = "/tmp/test-oracle.XXXXXX";
	bool own_dir = false;
	int c, st;
	ssize_t n;

	opt.seed = env && *env ? strtoull(env, NULL, 10) :
				 (uint64_t)time(NULL) ^ (uint64_t)getpid();
	env = getenv("SSDALLOC_NO_UFFD");
	opt.no_uffd = env && !strcmp(env, "1");
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': opt.seed = strtoull(optarg, NULL, 10); break;
		case 'd': opt.dir = optarg; break;
		case 'D': opt.device = optarg; break;
		case 'S': opt.dev_bytes = size_arg(optarg); break;
		case 'r': opt.ram = size_arg(optarg); break;
		case 'b': opt.pb = size_arg(optarg); break;
		case 'l': opt.live = size_arg(optarg); break;
		case 'o': opt.ops = atol(optarg); break;
		case 't': opt.threads = atoi(optarg); break;
		case 'N': opt.no_uffd = true; break;
		case 'U': opt.expect_uffd = atoi(optarg); break;
		case 'G': opt.expect_gc = false; break;
		case 'E': opt.expect_evict = false; break;
		case 'c': opt.ckpts = atoi(optarg); break;
		case 'I': opt.during = true; break;
		case 'R': opt.report_fd = atoi(optarg); break;
		case 'P':
			if (opt.nsnaps == 2)
				usage();
			opt.snaps[opt.nsnaps++] = optarg;
			break;
		case 'C': opt.recheckpoint = true; break;
		case 'Z': opt.no_zero_check = true; break;
		default: usage();
		}
	}
	if (optind < argc)
		mode = argv[optind++];
	if (optind < argc || opt.threads < 1 || opt.threads > 64 || opt.ops < 0)
		usage();
	if (!opt.dir) {
		if (strcmp(mode, "run"))
			fail("%s needs --dir", mode);
		opt.dir = mkdtemp(tmpl);
		if (!opt.dir)
			fail("mkdtemp: %s", strerror(errno));
		own_dir = true;
	}
	snprintf(path_dev, sizeof(path_dev), "%s/dev", opt.dir);
	snprintf(path_ckpt, sizeof(path_ckpt), "%s/ckpt", opt.dir);
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (!strcmp(mode, "verify"))
		return do_verify();
	if (!strcmp(mode, "child"))
		return do_child();
	if (strcmp(mode, "run"))
		usage();

	printf("test-oracle: seed %" PRIu64 " (--seed %" PRIu64 " replays it), %d thread(s), "
	       "%s, RAM %" PRIu64 " KiB, page buffer %" PRIu64 " KiB, live %" PRIu64 " KiB, %ld ops%s\n",
	       opt.seed, opt.seed, opt.threads, opt.device ? opt.device : "a file",
	       opt.ram >> 10, opt.pb >> 10, opt.live >> 10, opt.ops,
	       opt.no_uffd ? ", mprotect + SIGSEGV" : "");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		fail("readlink /proc/self/exe: %s", strerror(errno));
	self[n] = 0;
	/* the workload in a child, so that the restores below are new processes */
	fflush(NULL);
	{
		pid_t pid = fork();

		if (pid < 0)
			fail("fork: %s", strerror(errno));
		if (!pid)
			_exit(do_workload());
		if (waitpid(pid, &st, 0) < 0)
			fail("waitpid");
		if (WIFSIGNALED(st))
			fail("the workload died of signal %d (%s)", WTERMSIG(st),
			     strsignal(WTERMSIG(st)));
		if (WEXITSTATUS(st))
			return 1;
	}
	{
		char snap[4200];

		snprintf(snap, sizeof(snap), "%s/snap-1", opt.dir);
		if ((st = run_verify(self, snap, true)))
			fail("restore 1 (verify, change, checkpoint 2) exited %d", st);
		snprintf(snap, sizeof(snap), "%s/snap-2", opt.dir);
		if ((st = run_verify(self, snap, false)))
			fail("restore 2 exited %d", st);
	}
	if (own_dir) {
		char cmd[4200];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", opt.dir);
		if (system(cmd))
			fprintf(stderr, "test-oracle: cannot remove %s\n", opt.dir);
	}
	printf("test-oracle: ok, seed %" PRIu64 "\n", opt.seed);
	return 0;
}
