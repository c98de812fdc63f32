// SPDX-License-Identifier: LGPL-2.1-or-later
/* link: heap.c err.c */
/*
 * SSDAlloc's heap manager alone (user/ssdalloc/heap.c), with the runtime and
 * the store stubbed here: ranges are plain anonymous mappings (dropping a page
 * does not zero it: the test sees what the heap itself writes), the
 * store keeps only the objects the heap writes itself (the tables' headers) and
 * counts the rest. TAP output, one "ok - heap: ..." per check.
 *
 *   cc -std=gnu11 -Iuser/ssdalloc -o test-heap tests/user/ssdalloc/test-heap.c \
 *      user/ssdalloc/heap.c user/ssdalloc/err.c -pthread
 * (and again with -fsanitize=address,undefined)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "ssd-int.h"

/* heap.c's test hook (not exported from the library) */
struct ssd_heap_pinfo {
	uint32_t key, ppo, k, ntables, cur;
	uint32_t nslots[64], nfree[64];
	bool bitmap[64];
};
int ssd_heap_pool_info(uint32_t size, struct ssd_heap_pinfo *pi);

/* ---------------------------------------------------------------- stubs */

struct ssd_store *ssd_store;

#define MAXOT 4096
static struct {
	bool live;
	uint32_t nobj;
	uint8_t hdr[512];	/* object 0 */
	uint32_t hdr_size;
} ots[MAXOT];
static uint32_t next_otid = 1;
static uint32_t last_discard_otid, last_discard_oto, ndiscards, ndrops, ndestroys;
static int fail_reserve;

int ssd_ot_create(struct ssd_store *s, uint32_t nobj, uint32_t *otid)
{
	(void)s;
	if (next_otid >= MAXOT)
		return ssd_err(ENOSPC, "stub: out of otids");
	ots[next_otid].live = true;
	ots[next_otid].nobj = nobj;
	*otid = next_otid++;
	return 0;
}

void ssd_ot_destroy(struct ssd_store *s, uint32_t otid)
{
	(void)s;
	if (otid < MAXOT)
		ots[otid].live = false;
	ndestroys++;
}

int ssd_obj_write(struct ssd_store *s, const struct ssd_obj *objs, unsigned int n)
{
	unsigned int i;

	(void)s;
	for (i = 0; i < n; i++) {
		if (objs[i].otid >= MAXOT || !ots[objs[i].otid].live ||
		    objs[i].oto >= ots[objs[i].otid].nobj)
			return ssd_err(EINVAL, "stub: write to a bad object");
		if (objs[i].oto == 0 && objs[i].size <= sizeof(ots[0].hdr)) {
			memcpy(ots[objs[i].otid].hdr, objs[i].data, objs[i].size);
			ots[objs[i].otid].hdr_size = objs[i].size;
		}
	}
	return 0;
}

int ssd_obj_read(struct ssd_store *s, uint32_t otid, uint32_t oto, void *buf, uint32_t cap,
		 uint32_t *size)
{
	(void)s;
	if (otid >= MAXOT || !ots[otid].live || oto != 0)
		return ssd_err(EBADMSG, "stub: no such object");
	*size = ots[otid].hdr_size;
	memcpy(buf, ots[otid].hdr, cap < ots[otid].hdr_size ? cap : ots[otid].hdr_size);
	return 0;
}

void ssd_obj_discard(struct ssd_store *s, uint32_t otid, uint32_t oto)
{
	(void)s;
	last_discard_otid = otid;
	last_discard_oto = oto;
	ndiscards++;
}

void *ssd_rt_reserve(void *addr, size_t len)
{
	void *p;

	if (fail_reserve)
		return NULL;
	/* readable and writable: the heap zeroes a reused batch member itself */
	p = mmap(addr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
		 (addr ? MAP_FIXED_NOREPLACE : 0), -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (addr && p != addr) {
		munmap(p, len);
		return NULL;
	}
	return p;
}

void ssd_rt_unreserve(void *addr, size_t len)
{
	munmap(addr, len);
}

static uint32_t nforgets;

void ssd_rt_forget(uint32_t otid, uint32_t oto)
{
	(void)otid;
	(void)oto;
	nforgets++;
}

void ssd_rt_drop(void *addr, size_t len)
{
	(void)addr;
	(void)len;
	ndrops++;
}

/* ssd_heap_checkpoint flushes first; nothing to flush here */
int ssd_rt_flush(void)
{
	return 0;
}

/* ---------------------------------------------------------------- TAP */

static int nfail, ntest;

static void check(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	ntest++;
	printf("%s - heap: ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		nfail++;
}

static struct ssd_where where(const void *p, int *rc)
{
	struct ssd_where w;

	memset(&w, 0xa5, sizeof(w));
	*rc = ssd_atm_lookup((uintptr_t)p, &w);
	return w;
}

/* ---------------------------------------------------------------- tests */

static void test_growth(void)
{
	static const uint32_t totals[] = { 128, 256, 512, 1024, 2048, 4096, 8192, 10000, 20000 };
	struct ssd_heap_pinfo pi;
	uint64_t total = 0;
	unsigned int t, bad = 0;
	size_t n = 0;

	/* fill tables one after the other: a new one appears when all are full */
	for (t = 0; t < sizeof(totals) / sizeof(totals[0]); t++) {
		uint32_t want = totals[t] - (t ? totals[t - 1] : 0), i;

		for (i = 0; i < want - 1; i++, n++)
			if (!ssd_heap_oalloc(1, 1000))
				bad++;
		ssd_heap_pool_info(1000, &pi);
		total = 0;
		for (i = 0; i < pi.ntables; i++)
			total += pi.nslots[i];
		check(pi.ntables == t + 1 && total == totals[t] && pi.nfree[t] == 0 && !bad,
		      "pool grows to %u objects (table %u of %u objects), got %u tables, %llu",
		      totals[t], t, want, pi.ntables, (unsigned long long)total);
	}
	check(ssd_heap_oalloc(1, 1000) != NULL && (ssd_heap_pool_info(1000, &pi), pi.ntables == 10) &&
	      pi.nslots[9] == 10000, "then by 10,000 (30,000 objects in 10 tables)");
	check(n == 20000 - 9, "%zu objects allocated, 1 header slot per table", n);
	check(ots[next_otid - 1].nobj == 10000, "a 1000 B pool table has one store object a page");
}

static void test_classes(void)
{
	static const struct { uint32_t size, key, ppo, k; } c[] = {
		{ 1, 16, 1, 8 }, { 16, 16, 1, 8 }, { 17, 32, 1, 4 }, { 40, 48, 1, 3 },
		{ 100, 112, 1, 2 }, { 112, 112, 1, 2 }, { 113, 512, 1, 1 }, { 127, 512, 1, 1 },
		{ 128, 512, 1, 1 }, { 512, 512, 1, 1 }, { 513, 1024, 1, 1 }, { 4096, 4096, 1, 1 },
		{ 4097, 4608, 2, 1 }, { 6000, 6144, 2, 1 }, { 9000, 9216, 3, 1 },
	};
	struct ssd_heap_pinfo pi;
	unsigned int i;
	int rc;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		void *p = ssd_heap_oalloc(1, c[i].size);

		ssd_heap_pool_info(c[i].size, &pi);
		check(p && pi.key == c[i].key && pi.ppo == c[i].ppo && pi.k == c[i].k,
		      "size %u: class %u, %u page(s), batch %u (got %u, %u, %u)", c[i].size,
		      c[i].key, c[i].ppo, c[i].k, pi.key, pi.ppo, pi.k);
		check(ssd_heap_size(p) == c[i].size, "size %u remembered", c[i].size);
		ssd_heap_free(p);
	}
	/* an object of 6000 B: page 0 holds 4096, page 1 1904 (class rest 2048) */
	{
		char *p = ssd_heap_oalloc(1, 6000);
		struct ssd_where w0 = where(p, &rc), w1;
		int rc1;

		w1 = where(p + 4096 + 100, &rc1);
		check(!rc && !rc1 && w0.otid == w1.otid && w1.oto == w0.oto + 1 &&
		      w0.obj_size == 4096 && w0.len == 4096 && w1.obj_size == 1904 &&
		      w1.len == 1904 && w1.cap == 2048 && w0.off == 0 && w1.off == 0 && w1.opp,
		      "a 6000 B object: two page objects (4096, 1904 B; read cap 2048)");
		where(p + 8192, &rc);
		check(((uintptr_t)p & 4095) == 0 && rc == -1,
		      "the next slot starts 2 pages further and is free");
		ssd_heap_free(p);
	}
	/* a 3000 B object: class 3072 */
	{
		void *p = ssd_heap_oalloc(1, 3000);
		struct ssd_where w = where(p, &rc);

		check(!rc && w.len == 3000 && w.obj_size == 3000 && w.cap == 3072 && w.off == 0 &&
		      w.opp, "3000 B object: len 3000, read rounded to its class 3072");
		ssd_heap_free(p);
	}
	check(ssd_heap_oalloc(1, 0) == NULL && errno == EINVAL, "size 0 refused (EINVAL)");
	check(ssd_heap_oalloc(0, 10) == NULL && errno == EINVAL, "count 0 refused (EINVAL)");
}

static void test_batching(void)
{
	char *p[24];
	struct ssd_where w[24];
	int rc, i, ok = 1, okoff = 1;
	uint32_t d0;

	for (i = 0; i < 24; i++) {
		p[i] = ssd_heap_oalloc(1, 10);
		w[i] = where(p[i], &rc);
		if (rc || !p[i])
			ok = 0;
	}
	/* slots 1..8 -> store object 1, 9..16 -> 2: consecutive pages, offsets 16 apart */
	for (i = 0; i < 24; i++)
		if (w[i].otid != w[0].otid || w[i].oto != w[0].oto + (uint32_t)i / 8 ||
		    w[i].off != (uint32_t)(i % 8) * 16 || w[i].len != 10 || w[i].obj_size != 128 ||
		    w[i].cap != 128 || !w[i].opp)
			okoff = 0;
	check(ok && w[0].oto == 1, "small objects allocated, the first batch is store object 1");
	check(okoff, "10 B objects: 8 per 128 B store object, where.off = (i %% 8) * 16, len 10");
	for (i = 1; i < 24; i++)
		if (p[i] != p[0] + i * 4096)
			ok = 0;
	check(ok, "each small object on its own page");
	d0 = ndiscards;
	for (i = 0; i < 7; i++)
		ssd_heap_free(p[i]);
	check(ndiscards == d0, "batch not discarded while one member lives");
	ssd_heap_free(p[7]);
	check(ndiscards == d0 + 1 && last_discard_otid == w[0].otid && last_discard_oto == w[0].oto,
	      "batch discarded once all 8 members are free");
	check(nforgets == ndiscards, "the runtime told to forget every discarded object (%u, %u)",
	      nforgets, ndiscards);
	{
		char *q = ssd_heap_oalloc(1, 40);	/* slot 48: 3 per object of 144 */
		char *q2 = ssd_heap_oalloc(1, 33);
		char *q3 = ssd_heap_oalloc(1, 48);
		char *q4 = ssd_heap_oalloc(1, 41);
		struct ssd_where a = where(q, &rc), b = where(q2, &rc), c = where(q3, &rc),
				 d = where(q4, &rc);

		check(a.obj_size == 144 && a.off == 0 && b.off == 48 && c.off == 96 && d.off == 0 &&
		      d.oto == a.oto + 1 && a.len == 40 && b.len == 33 && c.len == 48 &&
		      d.len == 41, "48 B slots: 3 per 144 B store object, each with its own length");
		ssd_heap_free(q);
		ssd_heap_free(q2);
		ssd_heap_free(q3);
		ssd_heap_free(q4);
	}
	/* a member freed while its batch lives on: zeroed when handed out again */
	memset(p[9], 0xee, 10);
	ssd_heap_free(p[9]);
	{
		char *q = ssd_heap_oalloc(1, 12);
		int z = 1;

		for (i = 0; i < 12; i++)
			if (q[i])
				z = 0;
		check(q == p[9] && z, "a reused member of a live batch reads zeros");
	}
	/* a whole-page object is not touched by the heap (the runtime's drop zeroes it) */
	{
		char *a = ssd_heap_oalloc(1, 300), *b;

		memset(a, 0xee, 300);
		ssd_heap_free(a);
		b = ssd_heap_oalloc(1, 300);
		check(b == a && (unsigned char)b[0] == 0xee,
		      "an unbatched object is not zeroed by the heap (no needless fault)");
		ssd_heap_free(b);
	}
	for (i = 8; i < 24; i++)
		ssd_heap_free(p[i]);
}

static void test_switching(void)
{
	void *a[127], *b[127], *x, *y;
	struct ssd_heap_pinfo pi;
	int i, ok = 1;

	for (i = 0; i < 127; i++)
		if (!(a[i] = ssd_heap_oalloc(1, 2000)))
			ok = 0;
	ssd_heap_pool_info(2000, &pi);
	check(ok && pi.ntables == 1 && pi.cur == 0 && !pi.bitmap[0] && pi.nfree[0] == 0,
	      "first table full, still current with a (empty) free list");
	for (i = 0; i < 127; i++)
		if (!(b[i] = ssd_heap_oalloc(1, 2000)))
			ok = 0;
	ssd_heap_pool_info(2000, &pi);
	check(ok && pi.ntables == 2 && pi.cur == 1 && pi.bitmap[0] && !pi.bitmap[1],
	      "exhausted table turns into a bitmap; the new one is current");
	ssd_heap_free(a[5]);
	ssd_heap_free(a[9]);
	ssd_heap_free(a[7]);
	ssd_heap_pool_info(2000, &pi);
	check(pi.nfree[0] == 3 && pi.bitmap[0], "frees in a bitmap table counted (3)");
	x = ssd_heap_oalloc(1, 2000);	/* the second table has 127 - 127 = 0 free */
	ssd_heap_pool_info(2000, &pi);
	check(x == a[5] && pi.ntables == 2 && pi.cur == 0 && pi.bitmap[1] && !pi.bitmap[0],
	      "current exhausted: moves to the table with the most free objects (lowest slot first)");
	y = ssd_heap_oalloc(1, 2000);
	check(y == a[7], "then the next free slot of that table");
	ssd_heap_free(b[3]);
	ssd_heap_pool_info(2000, &pi);
	check(pi.nfree[1] == 1 && pi.nfree[0] == 1, "free counts per table: %u, %u", pi.nfree[0],
	      pi.nfree[1]);
	for (i = 0; i < 127; i++) {
		if (i != 5 && i != 7)
			ssd_heap_free(a[i]);
		if (i != 3)
			ssd_heap_free(b[i]);
	}
	ssd_heap_free(x);
	ssd_heap_free(y);
	ssd_heap_pool_info(2000, &pi);
	check(pi.nfree[0] == 127 && pi.nfree[1] == 127, "all freed: 127 + 127 free");
}

static void test_refusals(void)
{
	char *p = ssd_heap_oalloc(1, 700), *m = ssd_heap_malloc(100), *arr = ssd_heap_oalloc(4, 100);
	int stackvar, rc;

	errno = 0;
	check(ssd_heap_free(p + 8) == -1 && errno == EINVAL, "pool interior pointer refused: %s",
	      ssd_strerror());
	check(ssd_heap_free(p + 4096) == -1 && errno == EINVAL,
	      "pool pointer to a never-allocated slot refused");
	check(ssd_heap_free(m + 16) == -1 && errno == EINVAL, "MP interior pointer refused");
	check(ssd_heap_free(arr + 4096) == -1 && errno == EINVAL,
	      "OPP array interior (element 1) pointer refused");
	check(ssd_heap_free(&stackvar) == -1 && errno == EINVAL, "foreign pointer refused: %s",
	      ssd_strerror());
	check(ssd_heap_free(NULL) == -1 && errno == EINVAL, "NULL refused by the heap");
	check(ssd_heap_free(p) == 0 && ssd_heap_free(p) == -1 && errno == EINVAL,
	      "pool double free refused: %s", ssd_strerror());
	check(ssd_heap_free(m) == 0 && ssd_heap_free(m) == -1 && errno == EINVAL,
	      "MP double free refused");
	check(ssd_heap_free(arr) == 0 && ssd_heap_free(arr) == -1 && errno == EINVAL,
	      "OPP array double free refused");
	check(ssd_heap_size(p) == 0 && ssd_heap_size(&stackvar) == 0, "size of freed/foreign: 0");
	where(p, &rc);
	check(rc == -1, "ATM: freed pool object's page is not allocated");
}

static void test_coalescing(void)
{
	char *a = ssd_heap_malloc(3000), *b = ssd_heap_malloc(16), *c = ssd_heap_malloc(1500);
	char *d = ssd_heap_malloc(16), *e, *f, *g, *h;
	struct ssd_where w;
	int rc;

	check(b == a + 3008 && c == b + 16 && d == c + 1504, "MP blocks contiguous, 16 B aligned");
	ssd_heap_free(a);
	ssd_heap_free(c);
	/* holes of 3008 and 1504 (and the big tail): 1400 goes to the 1504 one */
	e = ssd_heap_malloc(1400);
	check(e == c, "best fit: 1400 B into the 1504 B hole, not the 3008 B one");
	f = ssd_heap_malloc(3000);
	check(f == a, "3000 B into the 3008 B hole");
	ssd_heap_free(e);
	ssd_heap_free(b);
	ssd_heap_free(f);
	/* a (3008) + b (16) + c (1504) merged: 4528 B from a */
	g = ssd_heap_malloc(4500);
	check(g == a, "freed neighbours merge: 4500 B fits where 3000 + 16 + 1500 were");
	h = ssd_heap_malloc(20);
	check(h == d + 16, "and nothing else was there");
	w = where(g + 4096, &rc);
	check(!rc && !w.opp && w.len == 4096 && w.obj_size == 4096 && w.off == 0,
	      "MP page: a whole 4 KiB page object");
	ssd_heap_free(g);
	ssd_heap_free(h);
	/* d still lives on page 1 (offset 4528 + 16...) */
	where(a, &rc);
	check(rc == -1, "ATM: MP page 0 without live blocks is free");
	where(d, &rc);
	check(rc == 0, "ATM: MP page with a live block is allocated");
	ssd_heap_free(d);
	where(d, &rc);
	check(rc == -1, "ATM: ... and free once it is freed");

	/* OPP arrays: page granularity, element i at a page start */
	{
		char *x = ssd_heap_oalloc(3, 5000), *y = ssd_heap_oalloc(2, 100), *z;
		struct ssd_where w0, w1, w2;
		int r0, r1, r2;

		w0 = where(x, &r0);
		w1 = where(x + 4096, &r1);
		w2 = where(x + 8192, &r2);
		check(!r0 && !r1 && !r2 && w0.len == 4096 && w1.len == 904 && w2.len == 4096 &&
		      w1.oto == w0.oto + 1 && w0.opp, "OPP array of 3 x 5000 B: pages of 4096, 904, 4096");
		check(y == x + 6 * 4096, "OPP arrays packed page after page");
		check(ssd_heap_size(x) == 2 * 8192 + 5000, "OPP array size: up to its last byte");
		ssd_heap_free(x);
		z = ssd_heap_oalloc(2, 4096);
		check(z == x, "freed OPP array space reused (best fit)");
		where(x + 5 * 4096, &r0);
		check(r0 == -1, "ATM: page of the freed array beyond the new one: free");
		ssd_heap_free(y);
		ssd_heap_free(z);
	}
	/* a request bigger than a range gets a range of its own, given back when freed */
	{
		uint32_t before = ndestroys;
		char *big = ssd_heap_malloc((size_t)(SSD_COALESCE_STEP + 10) * 4096);

		check(big && ssd_heap_size(big) == (size_t)(SSD_COALESCE_STEP + 10) * 4096,
		      "big malloc (10,010 pages) served");
		ssd_heap_free(big);
		check(ndestroys == before + 1, "its own range released when freed");
		where(big, &rc);
		check(rc == -1, "ATM forgets the released range");
	}
}

/* field by field: a struct returned by value need not keep its padding */
static bool same_where(const struct ssd_where *a, const struct ssd_where *b)
{
	return a->otid == b->otid && a->oto == b->oto && a->obj_size == b->obj_size &&
	       a->cap == b->cap && a->off == b->off && a->len == b->len && a->opp == b->opp;
}

static void *crafted_blob(const void *blob, size_t len, size_t off, uint32_t val)
{
	void *c = malloc(len);

	memcpy(c, blob, len);
	memcpy((char *)c + off, &val, sizeof(val));
	return c;
}

static void test_save_load(void)
{
	char *p[300], *m;
	struct ssd_where w[300];
	void *blob;
	size_t len;
	int i, rc, ok = 1;
	uint32_t mp_otid;

	for (i = 0; i < 300; i++) {
		p[i] = ssd_heap_oalloc(1, 1 + (i * 37) % 5000);
		w[i] = where(p[i], &rc);
	}
	for (i = 0; i < 300; i += 3)
		ssd_heap_free(p[i]);
	m = ssd_heap_malloc(100);
	mp_otid = where(m, &rc).otid;
	check(ssd_heap_save(&blob, &len) == 0, "save: %zu bytes", len);
	ssd_heap_fini();
	where(p[1], &rc);
	check(rc == -1, "after fini nothing is mapped");

	/* crafted blobs: each refused, and the heap left empty */
	{
		uint32_t key, nslots, nfree, sz, s, sa = 0, sf = 0;
		struct { size_t off; uint32_t val; const char *what; } bad[16];
		unsigned int nb = 0;

		/* the first table's fields: key 24, otid 28, nslots 32, nfree 36, va 40, sizes 48 */
		memcpy(&key, (char *)blob + 24, 4);
		memcpy(&nslots, (char *)blob + 32, 4);
		memcpy(&nfree, (char *)blob + 36, 4);
		for (s = 1; s < nslots && (!sa || !sf); s++) {
			memcpy(&sz, (char *)blob + 48 + 4 * s, 4);
			if (sz && !sa)
				sa = s;
			if (!sz && !sf)
				sf = s;
		}
		check(sa && sf, "first table of the blob has live (%u) and free (%u) slots", sa, sf);
#define BAD_(o, v, w) bad[nb++] = (typeof(bad[0])){ (o), (v), (w) }
		BAD_(0, 0x12345678, "bad magic");
		BAD_(12, 100000, "ntables beyond the blob");
		BAD_(16, 1000, "more dropped tables than bytes");
		BAD_(24, 0, "class 0");
		BAD_(24, 100, "class 100 (not a class)");
		BAD_(32, 1, "table of 1 object");
		BAD_(32, 1000000, "table of 1,000,000 objects");
		BAD_(36, nfree + 1, "free count that disagrees with the bitmap");
		BAD_(40, 12345, "address not page aligned");
		BAD_(44, 0xffffffff, "address beyond user space");
		BAD_(48, 7, "the header slot in use");
		BAD_(48 + 4 * sa, 0, "a live slot of size 0 (bitmap says in use)");
		BAD_(48 + 4 * sf, key, "a free slot with a size (bitmap says free)");
		BAD_(48 + 4 * sa, 100000, "a live slot bigger than its class");
		BAD_(48 + 4 * sa, key >= 512 ? key + 512 : key + 16, "a live slot of another class");
#undef BAD_
		/* the second table at the first one's address; the first one's otid twice */
		{
			size_t t1 = 48 + 4 * (size_t)nslots + 8 * (((size_t)nslots + 63) / 64);
			uint32_t va_lo, va_hi, otid0;

			memcpy(&va_lo, (char *)blob + 40, 4);
			memcpy(&va_hi, (char *)blob + 44, 4);
			memcpy(&otid0, (char *)blob + 28, 4);
			{
				void *c = crafted_blob(blob, len, t1 + 16, va_lo);
				void *c2;

				memcpy((char *)c + t1 + 20, &va_hi, 4);
				check(ssd_heap_load(c, len) == -1 && errno == EBADMSG,
				      "crafted blob (two tables at one address) refused: %s",
				      ssd_strerror());
				c2 = crafted_blob(blob, len, t1 + 4, otid0);
				check(ssd_heap_load(c2, len) == -1 && errno == EBADMSG,
				      "crafted blob (two tables with one otid) refused: %s",
				      ssd_strerror());
				free(c);
				free(c2);
			}
		}
		unsigned int k;

		for (k = 0; k < nb; k++) {
			void *c = crafted_blob(blob, len, bad[k].off, bad[k].val);

			errno = 0;
			rc = ssd_heap_load(c, len);
			check(rc == -1 && (errno == EBADMSG || errno == EEXIST),
			      "crafted blob (%s) refused: %s", bad[k].what, ssd_strerror());
			free(c);
		}
		check(ssd_heap_load(blob, len - 1) == -1 && errno == EBADMSG, "truncated blob refused");
		check(ssd_heap_load(blob, 10) == -1 && errno == EBADMSG, "tiny blob refused");
	}
	/* the table's first object must agree (3.2.6) */
	{
		uint32_t otid = w[1].otid;
		uint8_t save[512];

		memcpy(save, ots[otid].hdr, sizeof(save));
		ots[otid].hdr[16] ^= 1;	/* the VA in the header */
		check(ssd_heap_load(blob, len) == -1 && errno == EBADMSG,
		      "table header object disagreeing with the blob refused: %s", ssd_strerror());
		memcpy(ots[otid].hdr, save, sizeof(save));
	}
	/* address in use: the restore cannot map it again */
	{
		void *block = mmap(p[1], 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
				   MAP_FIXED_NOREPLACE, -1, 0);

		check(block == p[1] && ssd_heap_load(blob, len) == -1 && errno == EEXIST,
		      "occupied address range refused: %s", ssd_strerror());
		munmap(block, 4096);
	}
	check(ssd_heap_load(blob, len) == 0, "good blob loads after the refusals");
	for (i = 0; i < 300; i++) {
		struct ssd_where x = where(p[i], &rc);

		if (i % 3 == 0 ? rc != -1 :
		    rc || !same_where(&x, &w[i]) ||
		    ssd_heap_size(p[i]) != (size_t)(1 + (i * 37) % 5000))
			ok = 0;
	}
	check(ok, "restored: same addresses, same store objects, same sizes, freed ones free");
	check(!ots[mp_otid].live, "MP range's table discarded at load (not durable)");
	where(m, &rc);
	check(rc == -1 && ssd_heap_free(m) == -1, "MP memory not restored");
	check(ssd_heap_free(p[0]) == -1 && ssd_heap_free(p[1]) == 0,
	      "restored heap: freed object refused, live one freed");
	{
		char *q = ssd_heap_oalloc(1, 1 + (1 * 37) % 5000);

		check(q == p[1] || q == p[0] || (q && ssd_heap_size(q)),
		      "restored heap allocates again (%p)", (void *)q);
	}
	check(ssd_heap_load(blob, len) == -1 && errno == EBUSY, "load into a non-empty heap refused");
	free(blob);
	ssd_heap_fini();
}

int main(void)
{
	ssd_heap_init();
	test_growth();
	ssd_heap_fini();
	ssd_heap_init();
	test_classes();
	test_batching();
	test_switching();
	test_refusals();
	test_coalescing();
	ssd_heap_fini();
	ssd_heap_init();
	test_save_load();
	printf("1..%d\n", ntest);
	return nfail != 0;
}
