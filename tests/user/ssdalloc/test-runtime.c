// SPDX-License-Identifier: LGPL-2.1-or-later
/* link: runtime.c err.c */
/*
 * The SSDAlloc runtime alone: the ATM (heap.c) and the object store (store.c)
 * are stubs here. ATM ranges: "MP" maps page i to store object <otid, i> of
 * 4096 bytes; "OPP2" maps page i to a 100-byte OPP object, two per store
 * object: <otid, i / 2> of 200 bytes, slice (i % 2) * 100. The fake store keeps
 * objects in memory and counts reads and writes. Every test runs with
 * userfaultfd and again with the mprotect + SIGSEGV fallback.
 *
 *   cc -I user/ssdalloc tests/user/ssdalloc/test-runtime.c user/ssdalloc/runtime.c \
 *      user/ssdalloc/err.c -luring -pthread
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ssd-int.h"

static int failures;

#define CHECK(cond, ...)							\
	do {									\
		if (!(cond)) {							\
			printf("# %s:%d: %s: ", __FILE__, __LINE__, #cond);	\
			printf(__VA_ARGS__);					\
			printf("\n");						\
			failures++;						\
		}								\
	} while (0)

static double now(void);

static void result(const char *mode, const char *name, int before)
{
	static double last;
	double t = now();

	/* how long each case took (for the time budget of make check; not asserted) */
	printf("%s - runtime (%s): %s\n# %.1f s\n", failures == before ? "ok" : "not ok", mode,
	       name, last ? t - last : 0);
	last = t;
	fflush(stdout);
}

/* ------------------------------------------------------------ fake store */

#define MAX_OTID	8
#define MAX_OTO		(1u << 17)

static pthread_mutex_t store_mu = PTHREAD_MUTEX_INITIALIZER;
static struct fobj {
	uint32_t size;
	uint8_t *data;
} *fstore[MAX_OTID];
static uint64_t store_reads, store_write_calls, store_objs_written;
/* while set, every write is refused with ENOSPC (and counted in store_refusals) */
static volatile bool store_enospc;
static volatile uint64_t store_refusals;
/* reads of this object fail with EIO (otid 0: none); volatile: the fault thread reads
 * them, and the compiler must not move the test's stores past its faulting access */
static volatile uint32_t fail_otid, fail_oto;

int ssd_obj_read(struct ssd_store *s, uint32_t otid, uint32_t oto, void *buf, uint32_t cap,
		 uint32_t *size)
{
	struct fobj *f;

	(void)s;
	if (otid >= MAX_OTID || oto >= MAX_OTO)
		return ssd_err(EINVAL, "fake store: <%u,%u> out of range", otid, oto);
	if (otid == fail_otid && oto == fail_oto)
		return ssd_err(EIO, "fake store: injected read error");
	pthread_mutex_lock(&store_mu);
	store_reads++;
	f = fstore[otid] ? &fstore[otid][oto] : NULL;
	if (!f || !f->data) {
		*size = 0;
	} else {
		if (f->size > cap)
			abort();
		memcpy(buf, f->data, f->size);
		/* the read is rounded to cap: garbage after size */
		memset((uint8_t *)buf + f->size, 0xa5, cap - f->size);
		*size = f->size;
	}
	pthread_mutex_unlock(&store_mu);
	return 0;
}

int ssd_obj_write(struct ssd_store *s, const struct ssd_obj *objs, unsigned int n)
{
	unsigned int i;

	(void)s;
	pthread_mutex_lock(&store_mu);
	if (store_enospc) {
		store_refusals++;
		pthread_mutex_unlock(&store_mu);
		return ssd_err(ENOSPC, "fake store: full");
	}
	store_write_calls++;
	for (i = 0; i < n; i++) {
		struct fobj *f;

		if (objs[i].otid >= MAX_OTID || objs[i].oto >= MAX_OTO)
			abort();
		if (!fstore[objs[i].otid])
			fstore[objs[i].otid] = calloc(MAX_OTO, sizeof(struct fobj));
		f = &fstore[objs[i].otid][objs[i].oto];
		/* same size: in place (test_wp_fails writes with no mapping left for malloc) */
		if (!f->data || f->size != objs[i].size) {
			free(f->data);
			f->data = malloc(objs[i].size);
		}
		memcpy(f->data, objs[i].data, objs[i].size);
		f->size = objs[i].size;
		store_objs_written++;
	}
	pthread_mutex_unlock(&store_mu);
	return 0;
}

void ssd_obj_discard(struct ssd_store *s, uint32_t otid, uint32_t oto)
{
	(void)s;
	pthread_mutex_lock(&store_mu);
	if (fstore[otid]) {
		free(fstore[otid][oto].data);
		fstore[otid][oto].data = NULL;
		fstore[otid][oto].size = 0;
	}
	pthread_mutex_unlock(&store_mu);
}

int ssd_store_sync(struct ssd_store *s)
{
	(void)s;
	return 0;
}

/* the fake store's copy of an object's byte (0 if never written) */
static uint8_t store_byte(uint32_t otid, uint32_t oto, uint32_t off)
{
	struct fobj *f = fstore[otid] ? &fstore[otid][oto] : NULL;

	return f && f->data && off < f->size ? f->data[off] : 0;
}

static void store_reset(void)
{
	int i;
	uint32_t j;

	for (i = 0; i < MAX_OTID; i++) {
		if (!fstore[i])
			continue;
		for (j = 0; j < MAX_OTO; j++)
			free(fstore[i][j].data);
		free(fstore[i]);
		fstore[i] = NULL;
	}
	store_reads = store_write_calls = store_objs_written = store_refusals = 0;
	fail_otid = fail_oto = 0;
	store_enospc = false;
}

/* -------------------------------------------------------------- fake ATM */

enum { MP, OPP2 };

static struct arange {
	uintptr_t base;
	size_t nalloc;		/* pages [0, nalloc) allocated; the rest of the range not */
	int kind;
	uint32_t otid;
} aranges[4];
static int naranges;

int ssd_atm_lookup(uintptr_t page, struct ssd_where *w)
{
	int i;

	for (i = 0; i < naranges; i++) {
		struct arange *r = &aranges[i];
		size_t p;

		if (page < r->base || (page - r->base) / SSD_PAGE >= r->nalloc)
			continue;
		p = (page - r->base) / SSD_PAGE;
		memset(w, 0, sizeof(*w));
		w->otid = r->otid;
		if (r->kind == MP) {
			w->oto = p;
			w->obj_size = w->cap = w->len = SSD_PAGE;
		} else {
			w->oto = p / 2;
			w->obj_size = 200;
			w->cap = 512;
			w->off = (p % 2) * 100;
			w->len = 100;
			w->opp = true;
		}
		return 0;
	}
	return -1;
}

static uint8_t *add_range(size_t reserve_pages, size_t nalloc, int kind, uint32_t otid)
{
	uint8_t *p = ssd_rt_reserve(NULL, reserve_pages * SSD_PAGE);

	if (!p) {
		printf("# reserve: %s\n", ssd_strerror());
		exit(2);
	}
	aranges[naranges++] = (struct arange){ (uintptr_t)p, nalloc, kind, otid };
	/* the fault thread reads the ranges: in memory before the first access */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return p;
}

static void unreserve_all(size_t *pages)
{
	int i;

	for (i = 0; i < naranges; i++)
		ssd_rt_unreserve((void *)aranges[i].base, pages[i] * SSD_PAGE);
	naranges = 0;
}

static void rt_up(bool no_uffd, uint64_t ram, uint64_t pb)
{
	if (ssd_rt_init(NULL, ram, pb, no_uffd, true) < 0) {
		printf("# ssd_rt_init: %s\n", ssd_strerror());
		exit(2);
	}
}

static struct ssd_stats stats(void)
{
	struct ssd_stats st;

	memset(&st, 0, sizeof(st));
	ssd_rt_stats(&st);
	return st;
}

static uint64_t rnd_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* RAM for pb_pages of Page Buffer and about nobj 4 KiB objects in the cache */
static uint64_t ram_for(uint64_t pb_pages, uint64_t nobj)
{
	/* the runtime's tables (hash, scratch, batch) come out of the budget too */
	return pb_pages * SSD_PAGE + (160u << 10) + nobj * (SSD_PAGE + 160);
}

/* ------------------------------------------------------------------ tests */

static void test_read_zeros_then_data(const char *mode, bool no_uffd)
{
	int before = failures, i;
	size_t pages[] = { 64 };
	uint8_t *p, pat[SSD_PAGE];
	struct ssd_stats st;

	store_reset();
	for (i = 0; i < (int)SSD_PAGE; i++)
		pat[i] = (uint8_t)(i * 7 + 3);
	ssd_obj_write(NULL, &(struct ssd_obj){ 1, 5, SSD_PAGE, pat }, 1);
	store_write_calls = store_objs_written = 0;
	rt_up(no_uffd, ram_for(16, 64), 16 * SSD_PAGE);
	p = add_range(64, 64, MP, 1);
	for (i = 0; i < (int)SSD_PAGE; i++)
		CHECK(p[i] == 0, "page 0 byte %d = %u", i, p[i]);
	CHECK(memcmp(p + 5 * SSD_PAGE, pat, SSD_PAGE) == 0, "page 5 != the store's object");
	st = stats();
	CHECK(st.faults_read == 2 && st.faults_write == 0, "faults %lu/%lu",
	      (unsigned long)st.faults_read, (unsigned long)st.faults_write);
	CHECK(st.ram_misses == 2 && st.materializations == 2, "misses %lu mats %lu",
	      (unsigned long)st.ram_misses, (unsigned long)st.materializations);
	CHECK(st.uffd == !no_uffd, "uffd %lu", (unsigned long)st.uffd);
	/* first write to a read page: one write fault, then none */
	p[0] = 42;
	p[1] = 43;
	p[5 * SSD_PAGE + 10] = 44;
	st = stats();
	CHECK(st.faults_write == 2, "write faults %lu", (unsigned long)st.faults_write);
	CHECK(ssd_rt_flush() == 0, "flush: %s", ssd_strerror());
	CHECK(store_byte(1, 0, 0) == 42 && store_byte(1, 0, 1) == 43, "page 0 not written");
	CHECK(store_byte(1, 5, 10) == 44 && store_byte(1, 5, 11) == pat[11], "page 5 not written");
	CHECK(store_objs_written == 2, "%lu objects written", (unsigned long)store_objs_written);
	/* flush leaves them write-protected: a new write is seen and flushed */
	p[2] = 45;
	CHECK(stats().faults_write == 3, "write after flush not seen");
	CHECK(ssd_rt_flush() == 0, "flush 2");
	CHECK(store_byte(1, 0, 2) == 45, "write after flush lost");
	CHECK(store_objs_written == 3, "%lu objects written", (unsigned long)store_objs_written);
	unreserve_all(pages);
	ssd_rt_fini();
	result(mode, "read faults read zeros, then the store's data; writes seen after flush",
	       before);
}

/*
 * Sizes: make check runs this under ASan in a tight time budget, so by default the
 * two long cases are a quarter of their full size (SSC_FULL=1: 10000 pages and
 * 50000 operations; 30000 operations per thread), still far beyond the Page Buffer
 * and the RAM cache (16 pages, 64 objects) so that every path is taken many times.
 */
static unsigned int oracle_pages = 2500, oracle_ops = 12000, thread_ops = 7000;
#define ORACLE_PAGES oracle_pages

static void oracle_run(uint8_t *p, uint8_t *oracle, unsigned int ops)
{
	unsigned int i;

	for (i = 0; i < ORACLE_PAGES; i++) {	/* every page: write some */
		uint64_t v = rnd(), off = (rnd() % (SSD_PAGE / 8)) * 8;

		memcpy(p + (size_t)i * SSD_PAGE + off, &v, 8);
		memcpy(oracle + (size_t)i * SSD_PAGE + off, &v, 8);
	}
	for (i = 0; i < ops; i++) {
		size_t pg = rnd() % ORACLE_PAGES, off = (rnd() % (SSD_PAGE / 8)) * 8;
		size_t a = pg * SSD_PAGE + off;

		if (rnd() % 2) {
			uint64_t v = rnd();

			memcpy(p + a, &v, 8);
			memcpy(oracle + a, &v, 8);
		} else if (memcmp(p + a, oracle + a, 8)) {
			CHECK(0, "page %zu offset %zu differs from the oracle", pg, off);
			return;
		}
	}
}

static void test_oracle(const char *mode, bool no_uffd)
{
	int before = failures;
	size_t pages[] = { ORACLE_PAGES }, i, bad = 0;
	char name[160];
	uint8_t *p, *oracle = calloc(ORACLE_PAGES, SSD_PAGE);
	uint64_t ram = ram_for(16, 64);
	struct ssd_stats st;

	store_reset();
	rt_up(no_uffd, ram, 16 * SSD_PAGE);
	p = add_range(ORACLE_PAGES, ORACLE_PAGES, MP, 1);
	oracle_run(p, oracle, oracle_ops);
	st = stats();
	CHECK(st.dematerializations > (uint64_t)ORACLE_PAGES &&
	      st.ram_evictions_dirty > (uint64_t)ORACLE_PAGES / 2,
	      "demat %lu dirty evictions %lu", (unsigned long)st.dematerializations,
	      (unsigned long)st.ram_evictions_dirty);
	CHECK(st.ram_bytes <= ram - 16 * SSD_PAGE, "RAM cache %lu over the budget %lu",
	      (unsigned long)st.ram_bytes, (unsigned long)(ram - 16 * SSD_PAGE));
	CHECK(st.ram_hits > 0, "no RAM cache hits");
	/* everything read back (through the store for most pages) */
	for (i = 0; i < ORACLE_PAGES && bad < 5; i++)
		if (memcmp(p + i * SSD_PAGE, oracle + i * SSD_PAGE, SSD_PAGE)) {
			CHECK(0, "page %zu differs after eviction", i);
			bad++;
		}
	snprintf(name, sizeof(name), "%d pages, random writes and reads, survive Page Buffer and "
		 "RAM cache eviction (oracle)", ORACLE_PAGES);
	result(mode, name, before);

	before = failures;
	CHECK(ssd_rt_flush() == 0, "flush: %s", ssd_strerror());
	for (i = 0, bad = 0; i < ORACLE_PAGES && bad < 5; i++) {
		size_t b;

		for (b = 0; b < SSD_PAGE; b++)
			if (store_byte(1, i, b) != oracle[i * SSD_PAGE + b]) {
				CHECK(0, "store page %zu byte %zu: %u, oracle %u", i, b,
				      store_byte(1, i, b), oracle[i * SSD_PAGE + b]);
				bad++;
				break;
			}
	}
	/* a second flush has nothing to write */
	st.objects_written = store_objs_written;
	CHECK(ssd_rt_flush() == 0 && store_objs_written == st.objects_written,
	      "second flush wrote %lu objects",
	      (unsigned long)(store_objs_written - st.objects_written));
	result(mode, "flush writes every dirty byte (fake store == oracle)", before);
	unreserve_all(pages);
	ssd_rt_fini();
	free(oracle);
}

static void test_clean_evictions(const char *mode, bool no_uffd)
{
	int before = failures, i;
	size_t pages[] = { 2000 };
	volatile uint8_t *p;
	uint8_t sum = 0;
	struct ssd_stats st;

	store_reset();
	rt_up(no_uffd, ram_for(16, 64), 16 * SSD_PAGE);
	p = add_range(2000, 2000, MP, 1);
	for (i = 0; i < 2000 * 3; i++)
		sum += p[(size_t)(i % 2000) * SSD_PAGE + i % 4096];
	st = stats();
	CHECK(sum == 0, "zeros expected");
	CHECK(store_write_calls == 0, "%lu store writes for reads only",
	      (unsigned long)store_write_calls);
	CHECK(st.ram_evictions_dirty == 0 && st.ram_evictions_clean > 1000,
	      "dirty %lu clean %lu", (unsigned long)st.ram_evictions_dirty,
	      (unsigned long)st.ram_evictions_clean);
	CHECK(st.faults_write == 0, "write faults %lu", (unsigned long)st.faults_write);
	/* now writes: dirty evictions, store writes batched (>= 2 objects a call) */
	for (i = 0; i < 2000; i++)
		p[(size_t)i * SSD_PAGE] = 1;
	st = stats();
	CHECK(st.ram_evictions_dirty > 1000, "dirty evictions %lu",
	      (unsigned long)st.ram_evictions_dirty);
	CHECK(store_write_calls > 0 && store_objs_written >= 16 * store_write_calls,
	      "%lu objects in %lu writes: not batched", (unsigned long)store_objs_written,
	      (unsigned long)store_write_calls);
	unreserve_all(pages);
	ssd_rt_fini();
	result(mode, "reads only evict clean (no store writes); writes evict dirty, batched",
	       before);
}

static void test_opp(const char *mode, bool no_uffd)
{
	int before = failures, i, j;
	size_t pages[] = { 4000 };
	uint8_t *p;
	const int n = 4000;

	store_reset();
	rt_up(no_uffd, ram_for(16, 8), 16 * SSD_PAGE);
	p = add_range(n, n, OPP2, 2);
	for (i = 0; i < n; i++) {
		uint8_t *pg = p + (size_t)i * SSD_PAGE;

		for (j = 0; j < 100; j++)
			pg[j] = (uint8_t)(i + j);
		pg[100] = 0xee;		/* past the object: not kept */
		pg[4095] = 0xee;
	}
	for (i = 0; i < n; i++) {
		uint8_t *pg = p + (size_t)i * SSD_PAGE;

		for (j = 0; j < 100; j++)
			if (pg[j] != (uint8_t)(i + j))
				break;
		CHECK(j == 100, "OPP page %d byte %d: %u", i, j, pg[j]);
		if (i < n - 16)		/* evicted and back: past the object is zero */
			CHECK(pg[100] == 0 && pg[4095] == 0, "OPP page %d kept bytes past the object",
			      i);
		if (j != 100)
			break;
	}
	/*
	 * Only even pages written: their objects are found again through the
	 * odd pages (the ATM, then the cache by <otid,oto>), also while they wait
	 * in the writer's queue.
	 */
	for (j = 0; j < 3; j++) {
		int lag = 50 + 100 * j;	/* objects evicted lag batches ago: some queued */

		for (i = 0; i < n; i += 2) {
			int k = i - 2 * lag;

			p[(size_t)i * SSD_PAGE] = (uint8_t)(i + j + 1);
			if (k >= 0 && failures == before)
				CHECK(p[(size_t)(k + 1) * SSD_PAGE] == (uint8_t)(k + 1) &&
				      p[(size_t)k * SSD_PAGE] == (uint8_t)(k + j + 1),
				      "OPP pages %d-%d", k, k + 1);
		}
	}
	for (i = 0; i < n; i += 2)
		p[(size_t)i * SSD_PAGE] = (uint8_t)i;
	CHECK(ssd_rt_flush() == 0, "flush");
	for (i = 0; i < n; i += 2) {
		/* store object <2, i/2>: [page i's 100 bytes | page i+1's 100 bytes] */
		CHECK(store_byte(2, i / 2, 0) == (uint8_t)i &&
		      store_byte(2, i / 2, 99) == (uint8_t)(i + 99) &&
		      store_byte(2, i / 2, 100) == (uint8_t)(i + 1) &&
		      store_byte(2, i / 2, 199) == (uint8_t)(i + 1 + 99), "store object %d", i / 2);
		CHECK(fstore[2] && fstore[2][i / 2].size == 200, "size of store object %d", i / 2);
		if (failures != before)
			break;
	}
	unreserve_all(pages);
	ssd_rt_fini();
	result(mode, "OPP slices: 2 objects of 100 B per store object; bytes past the object "
	       "are not kept", before);
}

static void test_drop(const char *mode, bool no_uffd)
{
	int before = failures, i;
	size_t pages[] = { 512, 64 };
	uint8_t *mp, *opp;
	uint64_t w;

	store_reset();
	rt_up(no_uffd, ram_for(16, 64), 16 * SSD_PAGE);
	mp = add_range(512, 512, MP, 1);
	opp = add_range(64, 64, OPP2, 2);
	/* page 0: materialized and dirty; page 1: dirty in the RAM cache only;
	 * page 2: written to the store (flushed, then evicted) */
	memset(mp, 1, SSD_PAGE);
	memset(mp + 2 * SSD_PAGE, 3, SSD_PAGE);
	CHECK(ssd_rt_flush() == 0, "flush");
	memset(mp + SSD_PAGE, 2, SSD_PAGE);
	for (i = 3; i < 3 + 16; i++)	/* push pages 1 and 2 out of the Page Buffer */
		mp[(size_t)i * SSD_PAGE] = 0;
	memset(mp, 1, SSD_PAGE);	/* page 0 back in, dirty */
	w = store_objs_written;
	ssd_rt_drop(mp, 3 * SSD_PAGE);
	ssd_obj_discard(NULL, 1, 0);	/* what heap.c does for the freed objects */
	ssd_obj_discard(NULL, 1, 1);
	ssd_obj_discard(NULL, 1, 2);
	for (i = 0; i < 3 * (int)SSD_PAGE; i++)
		if (mp[i]) {
			CHECK(0, "dropped MP page %d byte %d = %u", i / 4096, i % 4096, mp[i]);
			break;
		}
	for (i = 20; i < 300; i++)	/* churn: nothing of the dropped pages is written */
		mp[(size_t)i * SSD_PAGE] = 9;
	CHECK(ssd_rt_flush() == 0, "flush");
	CHECK(!store_byte(1, 0, 5) && !store_byte(1, 1, 5) && !store_byte(1, 2, 5),
	      "a dropped object was written back");
	CHECK(store_objs_written > w, "nothing written at all");

	/* OPP batch: pages 0 and 1 share store object <2,0>; drop page 0 only */
	memset(opp, 0x11, 100);
	memset(opp + SSD_PAGE, 0x22, 100);
	CHECK(ssd_rt_flush() == 0, "flush");	/* the slices are in the cached object now */
	ssd_rt_drop(opp, 100);
	for (i = 0; i < 100; i++)
		CHECK(opp[i] == 0 && opp[SSD_PAGE + i] == 0x22, "OPP drop byte %d: %u %u", i,
		      opp[i], opp[SSD_PAGE + i]);
	opp[0] = 0x33;		/* handed out again */
	for (i = 20; i < 300; i++)
		mp[(size_t)i * SSD_PAGE] = 10;
	CHECK(opp[0] == 0x33 && opp[1] == 0 && opp[SSD_PAGE] == 0x22, "OPP after churn");
	unreserve_all(pages);
	ssd_rt_fini();
	result(mode, "drop: freed pages read zeros when handed out again, never written back; "
	       "a batch keeps its other member", before);
}

#define NTHREADS 4
#define TPAGES 96

static uint8_t *tbase;
static uint8_t toracle[NTHREADS][TPAGES][SSD_PAGE / NTHREADS];

static void *hammer(void *arg)
{
	int t = (int)(intptr_t)arg;
	unsigned int i;
	uint64_t s = 0x1234567ull * (t + 1);

	for (i = 0; i < thread_ops; i++) {
		size_t pg, k;

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		pg = s % TPAGES;
		k = (s >> 20) % (SSD_PAGE / NTHREADS);
		/* thread t owns bytes k * NTHREADS + t of every page */
		if ((s >> 40) & 1) {
			uint8_t v = (uint8_t)(s >> 48);

			tbase[pg * SSD_PAGE + k * NTHREADS + t] = v;
			toracle[t][pg][k] = v;
		} else if (tbase[pg * SSD_PAGE + k * NTHREADS + t] != toracle[t][pg][k]) {
			return (void *)1;
		}
	}
	return NULL;
}

static void test_threads(const char *mode, bool no_uffd)
{
	int before = failures, t;
	size_t pages[] = { TPAGES }, pg, k;
	pthread_t th[NTHREADS];

	store_reset();
	memset(toracle, 0, sizeof(toracle));
	rt_up(no_uffd, ram_for(8, 24), 8 * SSD_PAGE);
	tbase = add_range(TPAGES, TPAGES, MP, 1);
	for (t = 0; t < NTHREADS; t++)
		pthread_create(&th[t], NULL, hammer, (void *)(intptr_t)t);
	for (t = 0; t < NTHREADS; t++) {
		void *r;

		pthread_join(th[t], &r);
		CHECK(r == NULL, "thread %d read a byte that differs from its oracle", t);
	}
	for (t = 0; t < NTHREADS; t++)
		for (pg = 0; pg < TPAGES; pg++)
			for (k = 0; k < SSD_PAGE / NTHREADS; k++)
				if (tbase[pg * SSD_PAGE + k * NTHREADS + t] != toracle[t][pg][k]) {
					CHECK(0, "thread %d page %zu byte %zu", t, pg, k);
					goto out;
				}
out:
	CHECK(stats().dematerializations > 1000, "too little eviction to test anything");
	unreserve_all(pages);
	ssd_rt_fini();
	result(mode, "4 threads, overlapping pages, disjoint bytes, verified", before);
}

/* a child process: init, then the access; returns its wait status */
static int in_child(bool no_uffd, int what)
{
	pid_t pid;
	int status;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		volatile uint8_t *p;

		alarm(60);	/* a fault that is never resolved fails the test */
		/* the child's stderr has the runtime's report; keep it out of the log */
		if (!getenv("SSD_TEST_VERBOSE"))
			(void)!freopen("/dev/null", "w", stderr);
		rt_up(no_uffd, ram_for(16, 64), 16 * SSD_PAGE);
		p = add_range(64, 32, MP, 1);
		if (what == 0) {
			p[0] = 1;		/* allocated: fine */
			(void)p[40 * SSD_PAGE];	/* reserved, not allocated */
		} else {
			fail_otid = 1;
			fail_oto = 3;
			(void)p[3 * SSD_PAGE];	/* the store cannot read it */
		}
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

static void test_wild(const char *mode, bool no_uffd)
{
	int before = failures, st;

	st = in_child(no_uffd, 0);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "wild access: status %#x", st);
	result(mode, "a wild access to a reserved, unallocated page kills with SIGSEGV", before);
	before = failures;
	st = in_child(no_uffd, 1);
	CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS, "store error: status %#x", st);
	result(mode, "a store read error on a fault kills with SIGBUS", before);
}

/*
 * A full device: once the store refused a write with ENOSPC the runtime stops
 * asking it on every eviction (each refusal is a pass of the store's cleaner over
 * the whole log); nothing is lost meanwhile; a flush asks (and reports the error),
 * freeing 128 KiB lets evictions ask again, a successful flush ends it.
 */
static void test_enospc(const char *mode, bool no_uffd)
{
	int before = failures, i, e;
	const int n = 1200;
	size_t pages[] = { 1300 };
	uint8_t *p;
	uint64_t r;

	store_reset();
	rt_up(no_uffd, ram_for(16, 64), 16 * SSD_PAGE);
	p = add_range(1300, 1300, MP, 1);
	for (i = 0; i < 200; i++)
		p[(size_t)i * SSD_PAGE] = (uint8_t)(i + 1);
	CHECK(store_objs_written > 0 && !ssd_rt_full(), "no store writes before the device fills");
	store_enospc = true;
	for (i = 200; i < n; i++)	/* 1000 more dirty pages through a cache of 64 */
		p[(size_t)i * SSD_PAGE] = (uint8_t)(i + 1);
	CHECK(ssd_rt_full(), "not full after ENOSPC");
	CHECK(store_refusals == 1, "the store was asked %lu times while full (1 expected)",
	      (unsigned long)store_refusals);
	for (i = 0; i < n; i++)		/* nothing lost: the objects wait in RAM */
		if (p[(size_t)i * SSD_PAGE] != (uint8_t)(i + 1)) {
			CHECK(0, "page %d: %u while full", i, p[(size_t)i * SSD_PAGE]);
			break;
		}
	CHECK(store_refusals == 1, "reading back asked the store %lu times",
	      (unsigned long)store_refusals);
	/* a flush asks, and reports the error */
	errno = 0;
	CHECK(ssd_rt_flush() == -1 && errno == ENOSPC, "flush while full: errno %d", errno);
	CHECK(store_refusals == 2 && ssd_rt_full(), "flush: %lu refusals",
	      (unsigned long)store_refusals);
	/* less than 128 KiB freed: still full; then 128 KiB: the next eviction asks again */
	ssd_rt_drop(p + (size_t)1100 * SSD_PAGE, 16 * SSD_PAGE);
	CHECK(ssd_rt_full(), "64 KiB freed ended full");
	ssd_rt_drop(p + (size_t)1116 * SSD_PAGE, 16 * SSD_PAGE);
	CHECK(!ssd_rt_full(), "128 KiB freed: still full");
	r = store_refusals;
	for (i = 0; i < 40 && store_refusals == r; i++)
		p[(size_t)(1200 + i) * SSD_PAGE] = 7;
	CHECK(store_refusals == r + 1 && ssd_rt_full(), "after the free: %lu refusals, full %d",
	      (unsigned long)(store_refusals - r), ssd_rt_full());
	/* room again: the flush writes everything and ends full */
	store_enospc = false;
	e = ssd_rt_flush();
	CHECK(e == 0 && !ssd_rt_full(), "flush with room: %d (%s), full %d", e, ssd_strerror(),
	      ssd_rt_full());
	for (i = 0; i < n; i++) {
		uint8_t want = i >= 1100 && i < 1132 ? 0 : (uint8_t)(i + 1);

		if (store_byte(1, i, 0) != want) {
			CHECK(0, "store object %d: %u, expected %u", i, store_byte(1, i, 0), want);
			break;
		}
	}
	unreserve_all(pages);
	ssd_rt_fini();
	result(mode, "ENOSPC: the store is asked once, not on every eviction, nothing lost; "
	       "asked again by flush, after 128 KiB freed; a good flush ends it", before);
}

static void segv_exit(int sig)
{
	(void)sig;
	_exit(42);
}

/*
 * fork(): in the child the runtime is the parent's. Every entry point refuses or
 * does nothing, none harms the parent (a hole punched in the shared memfd, the
 * parent's fault thread stopped through the shared eventfd), and an access to
 * SSDAlloc memory is a plain SIGSEGV for the program's own disposition (here a
 * handler that exits 42), also for a page the parent had materialized.
 */
static void test_fork(const char *mode, bool no_uffd)
{
	int before = failures, st;
	size_t pages[] = { 64 };
	struct sigaction sa, old;
	uint8_t *p;
	pid_t pid;

	store_reset();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = segv_exit;
	sigaction(SIGSEGV, &sa, &old);	/* before init: the program's disposition */
	rt_up(no_uffd, ram_for(16, 64), 16 * SSD_PAGE);
	p = add_range(64, 64, MP, 1);
	p[0] = 0x5a;				/* materialized, dirty */
	p[SSD_PAGE] = 0x5b;
	(void)ssd_rt_flush();			/* materialized, clean */
	/* child 1: the runtime's calls */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		alarm(5);	/* a call that never returns */
		ssd_rt_drop(p, SSD_PAGE);	/* must not punch the parent's page */
		ssd_rt_forget(1, 1);
		ssd_rt_fini();			/* must not stop the parent's fault thread */
		if (!ssd_rt_forked())
			_exit(10);
		errno = 0;
		if (ssd_rt_reserve(NULL, SSD_PAGE) || errno != EPERM)
			_exit(11);
		if (ssd_rt_flush() != -1 || errno != EPERM)
			_exit(12);
		_exit(0);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, "fork/wait");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child 1: %s %d (10: not told it is a "
	      "child; 11, 12: reserve, flush did not refuse with EPERM)",
	      WIFSIGNALED(st) ? "signal" : "exit",
	      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	/* child 2: an access to the parent's materialized page */
	pid = fork();
	if (pid == 0) {
		alarm(5);	/* a fault that never completes */
		(void)*(volatile uint8_t *)p;
		_exit(13);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, "fork/wait");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 42, "child 2: %s %d (42: the access was a "
	      "plain SIGSEGV; SIGALRM: it spun)", WIFSIGNALED(st) ? "signal" : "exit",
	      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	CHECK(!ssd_rt_forked(), "the parent thinks it is a child");
	/* the parent: its pages intact, its faults served */
	alarm(20);
	CHECK(p[0] == 0x5a && p[SSD_PAGE] == 0x5b, "parent's pages after the child: %#x %#x",
	      p[0], p[SSD_PAGE]);
	p[5 * SSD_PAGE] = 0x5c;
	p[SSD_PAGE] = 0x5d;
	CHECK(ssd_rt_flush() == 0 && store_byte(1, 5, 0) == 0x5c && store_byte(1, 1, 0) == 0x5d,
	      "parent's writes after the child not flushed");
	alarm(0);
	unreserve_all(pages);
	ssd_rt_fini();
	sigaction(SIGSEGV, &old, NULL);
	result(mode, "fork: the child's runtime calls refuse (EPERM) or do nothing, its access "
	       "is a plain SIGSEGV, the parent is unharmed", before);
}

/*
 * The fallback's Page Buffer is clamped to what vm.max_map_count allows: every
 * other page of a range read (each materialized page a mapping of its own), more
 * pages than the kernel has mappings for; without the clamp, mprotect fails and
 * the access gets SIGBUS.
 */
static void test_map_count(void)
{
	int before = failures, st;
	long long max = 0;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	pid_t pid;

	if (!f || fscanf(f, "%lld", &max) != 1 || max > 300000 || max < 2000) {
		if (f)
			fclose(f);
		printf("ok - runtime (fallback): Page Buffer clamped to vm.max_map_count "
		       "# SKIP max_map_count %lld\n", max);
		return;
	}
	fclose(f);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		uint64_t cap = (uint64_t)(max - 1000) / 2, n = (uint64_t)max / 2 + 1000, i;
		uint64_t pb = cap + 20000;	/* asked for: more than the kernel allows */
		volatile uint8_t *p;
		struct ssd_stats s;
		uint8_t sum = 0;

		alarm(60);
		if (!getenv("SSD_TEST_VERBOSE"))
			(void)!freopen("/dev/null", "w", stderr);
		store_reset();
		rt_up(true, pb * SSD_PAGE + (64u << 20), pb * SSD_PAGE);
		p = add_range(2 * n, 2 * n, OPP2, 2);
		for (i = 0; i < n; i++)
			sum += p[2 * i * SSD_PAGE];
		s = stats();
		if (s.materializations - s.dematerializations > cap)
			_exit(3);
		_exit(sum);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, "fork/wait");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %s %d (SIGBUS, or ASan's exit 1: "
	      "out of mappings; exit 3: more pages materialized than the clamp)",
	      WIFSIGNALED(st) ? "signal" : "exit",
	      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	result("fallback", "a Page Buffer larger than vm.max_map_count allows is clamped", before);
}

/*
 * The fallback's write-protect can fail (mprotect splits a mapping, and the
 * process is at vm.max_map_count): the page may still be writable, so it must
 * stay dirty and later writes must reach the store. The child fills its mappings
 * up with pages of its own, flushes (the write-protect fails), writes without a
 * fault, frees its mappings and flushes again.
 */
static void test_wp_fails(void)
{
	int before = failures, st;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		size_t pages[] = { 64 }, nfill = 0, cfill = 1 << 17, i;
		void **fill = calloc(cfill, sizeof(*fill));
		uint8_t *p;

		alarm(60);
		if (!getenv("SSD_TEST_VERBOSE"))
			(void)!freopen("/dev/null", "w", stderr);
		store_reset();
		rt_up(true, ram_for(16, 64), 16 * SSD_PAGE);
		p = add_range(64, 64, MP, 1);
		p[10 * SSD_PAGE] = 1;		/* pages 10 and 11: one writable mapping */
		p[11 * SSD_PAGE] = 1;
		if (ssd_rt_flush() < 0 || store_byte(1, 10, 0) != 1)
			_exit(10);
		p[10 * SSD_PAGE] = 2;
		p[11 * SSD_PAGE] = 2;
		/* no mapping left: write-protecting page 10 alone would need one */
		while (fill && nfill < cfill) {
			void *m = mmap(NULL, SSD_PAGE, nfill % 2 ? PROT_READ : PROT_NONE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (m == MAP_FAILED)
				break;
			fill[nfill++] = m;
		}
		if (!fill || nfill == cfill)
			_exit(11);
		(void)ssd_rt_flush();		/* the write-protect fails */
		p[10 * SSD_PAGE + 1] = 3;	/* may not fault: the page stayed writable */
		for (i = 0; i < nfill; i++)
			munmap(fill[i], SSD_PAGE);
		free(fill);
		if (ssd_rt_flush() < 0)
			_exit(12);
		if (store_byte(1, 10, 0) != 2 || store_byte(1, 10, 1) != 3)
			_exit(13);
		unreserve_all(pages);
		ssd_rt_fini();
		_exit(0);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid, "fork/wait");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: %s %d (13: a write after the failed "
	      "write-protect was lost)", WIFSIGNALED(st) ? "signal" : "exit",
	      WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	result("fallback", "a write-protect that fails (no mapping left) keeps the page dirty",
	       before);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* informational: the cost of a fault (no assertion on time) */
static void bench(const char *mode, bool no_uffd)
{
	const int n = 10000;
	size_t pages[] = { 10000 };
	volatile uint8_t *p;
	double t0, t1, t2;
	uint8_t sum = 0;
	int i;

	store_reset();
	rt_up(no_uffd, ram_for(4096, 12000), 4096 * SSD_PAGE);
	p = add_range(n, n, MP, 1);
	t0 = now();
	for (i = 0; i < n; i++)		/* missing read faults (zeros) + FIFO eviction */
		sum += p[(size_t)i * SSD_PAGE];
	t1 = now();
	for (i = 0; i < n; i++)		/* missing write faults on pages in the RAM cache */
		p[(size_t)i * SSD_PAGE] = 1;
	t2 = now();
	printf("# bench (%s): %.0f read faults/s, %.0f write faults/s (from the RAM cache) %u\n",
	       mode, n / (t1 - t0), n / (t2 - t1), sum);
	/* the last 4096 pages stay materialized; flush write-protects them */
	ssd_rt_flush();
	t1 = now();
	for (i = n - 4096; i < n; i++)
		p[(size_t)i * SSD_PAGE] = 2;
	t2 = now();
	printf("# bench (%s): %.0f write-protect faults/s\n", mode, 4096 / (t2 - t1));
	unreserve_all(pages);
	ssd_rt_fini();
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		bool no_uffd;
	} modes[] = { { "userfaultfd", false }, { "fallback", true } };
	unsigned int m;

	(void)argv;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (getenv("SSC_FULL") && !strcmp(getenv("SSC_FULL"), "1")) {
		oracle_pages = 10000;
		oracle_ops = 50000;
		thread_ops = 30000;
	}
	printf("# %u pages, %u operations (oracle); %u operations per thread%s\n", oracle_pages,
	       oracle_ops, thread_ops, oracle_pages < 10000 ? " (SSC_FULL=1: full size)" : "");
	for (m = 0; m < 2; m++) {
		const char *mode = modes[m].name;
		bool nu = modes[m].no_uffd;

		test_wild(mode, nu);
		test_read_zeros_then_data(mode, nu);
		test_oracle(mode, nu);
		test_clean_evictions(mode, nu);
		test_opp(mode, nu);
		test_drop(mode, nu);
		test_threads(mode, nu);
		test_enospc(mode, nu);
		test_fork(mode, nu);
		if (nu) {
			test_map_count();
			test_wp_fails();
		}
		if (argc > 1)
			bench(mode, nu);
	}
	store_reset();
	printf("%s\n", failures ? "# FAILED" : "# all passed");
	return failures ? 1 : 0;
}
