// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * SSDAlloc heap manager (thesis 3.2.3-3.2.4, 3.2.6): the OPP object pool
 * allocator, the coalescing allocator for MP memory and OPP arrays, and the
 * ATM that tells the runtime which store object a faulting page belongs to.
 *
 * Pool allocator (ssd_oalloc(1, size)).
 *   A pool serves one size class, keyed by its slot size:
 *     - size < 128 B: the slot is size rounded up to 16 B (16 .. 112) and
 *       k = ceil(128 / slot) slots are batched into one store object (3.2.3),
 *       so page i of the table holds slot i, which lives in store object
 *       1 + (i - 1) / k at offset ((i - 1) % k) * slot;
 *     - otherwise the 512 B class (thesis: one pool per 0.5 KiB range), one
 *       store object per page: an object of up to 4 KiB is one page; a bigger
 *       one (up to SSD_POOL_MAX) takes ceil(class / 4 KiB) contiguous pages,
 *       page j being its own store object of min(4096, size - 4096 j) bytes.
 *       Objects bigger than SSD_POOL_MAX are OPP arrays of one element.
 *   A pool grows by one Object Table and one contiguous VA range at a time;
 *   the pool's total doubles from 128 objects up to 10,000, then grows by
 *   10,000 (tables of 128, 128, 256, ..., 4096, 1808, 10000, 10000, ...).
 *   Slot 0 of every table is reserved: its first store object (OTO 0) holds
 *   the table's header (VA base, size, class), written once at creation, so
 *   that restore can map the same addresses again (3.2.6).
 *   One table per pool (the current one) keeps a free list; the others keep
 *   a bitmap of free slots and a free count. When the current table is full it
 *   turns into a bitmap and the table with the most free slots becomes current
 *   (its bitmap becomes a free list), or the pool grows.
 *   The size the application asked for is kept per slot; it is the length the
 *   runtime caches and writes (3.2.4: "actual object size").
 *
 * Coalescing allocator (ssd_malloc, ssd_oalloc(n > 1, size)).
 *   Best fit with coalescing over reserved ranges of SSD_COALESCE_STEP pages
 *   (one Object Table each; a bigger request gets a range of its own size).
 *   MP ranges are byte granular (16 B alignment) and each page is a 4 KiB
 *   store object; OPP-array ranges are page granular, element i at the start
 *   of its own page(s).
 *   DEVIATION from the thesis: the thesis keeps the allocator's header in the
 *   page. Here every block's metadata lives out of band (malloc'd nodes, an
 *   address-ordered list per range, size bins, a hash of live blocks). Reading
 *   or writing managed memory may fault and wait for the fault thread, which
 *   may in turn need the heap; doing that under heap_lock could deadlock, and
 *   it would also dirty (and write back) a page for every malloc/free.
 *
 * ATM. The ranges are few (one per Object Table, each thousands of objects)
 *   and are added rarely, while lookups happen on every materialization from
 *   the store; a sorted array with binary search gives the O(log n) of the
 *   thesis's balanced tree with better locality and no rebalancing. It has its
 *   own rwlock, atm_lock, a leaf lock: nothing else is taken while holding it,
 *   so the runtime may call ssd_atm_lookup() holding rt_lock. Everything a
 *   lookup reads (the range array, per-slot sizes, per-page counts) is only
 *   changed under atm_lock held for writing.
 *
 * Durability: only pool-allocated OPP objects survive a checkpoint (as in the
 * thesis); ssd_heap_save() lists the tables of MP and OPP-array ranges so
 * that ssd_heap_load() can discard their store tables.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include "ssd-int.h"

/*
 * (A2) Weak: the store marks pool tables durable (the others are volatile and
 * are neither checkpointed nor pin the log); test-heap stubs the store without it.
 */
#pragma weak ssd_ot_set_durable

#define SSD_POOL_MAX	(1u << 20)	/* bigger ssd_oalloc(1, size): an OPP array */
#define BATCH_ALIGN	16u
#define MP_ALIGN	16u
#define NBINS		64
#define HDR_MAGIC	0x4844544f44535353ull	/* "SSSDOTDH": an Object Table's header */
#define BLOB_MAGIC	0x3150414548445353ull	/* "SSDHEAP1" */
#define BLOB_VERSION	1u
#define VA_LIMIT	(1ull << 47)		/* user space on x86-64 and arm64 (4 levels) */

enum rkind { R_POOL, R_MP, R_OPP };

struct pool;
struct blk;

/* one Object Table and its VA range */
struct range {
	uintptr_t base;
	size_t len;
	enum rkind kind;
	uint32_t otid;
	uint32_t npages;
	/* R_POOL */
	struct pool *pool;
	uint32_t nslots, ppo, k;	/* slots, pages per slot, batch factor */
	uint32_t *sizes;		/* requested size per slot; 0: free (read by the ATM) */
	uint8_t *stale;			/* batched: freed while its batch lived on (see pool_alloc) */
	uint64_t *bits;			/* not current: 1 = free slot; NULL while current */
	uint32_t *fl, nfl, flcap;	/* current: the free list (a stack) */
	uint32_t nfree;
	/* R_MP: live blocks touching each page; R_OPP: bytes of the element at
	 * the page's start, 0 if the page is free (both read by the ATM) */
	uint32_t *pcount;
	uint16_t *plen;
	struct blk *first;		/* address-ordered blocks */
	size_t nlive;
};

struct pool {
	uint32_t key;			/* slot size: 16..112 batched, else a multiple of 512 */
	uint32_t ppo, k;
	struct range **tables;
	uint32_t ntables, cap;
	struct range *cur;
	uint64_t total;			/* slots in all tables */
};

/* a block of a coalescing range; metadata out of band */
struct blk {
	uintptr_t addr;
	size_t len;			/* MP: multiple of 16; OPP: of 4096 */
	size_t req;			/* bytes asked for; 0: free */
	uint32_t esize;			/* OPP arrays: element size */
	struct range *r;
	struct blk *prev, *next;	/* address order in r */
	struct blk *fprev, *fnext;	/* free bin */
	struct blk *hnext;		/* live-block hash chain */
};

/* on the store, OTO 0 of every pool table (host byte order: x86-64, arm64) */
struct ot_hdr {
	uint64_t magic;
	uint32_t version, otid;
	uint64_t va;
	uint32_t nslots, key, ppo, k;
};

static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t atm_lock = PTHREAD_RWLOCK_INITIALIZER;

static struct range **atm;		/* sorted by base */
static size_t natm, atmcap;
static struct pool **pools;
static size_t npools, poolcap;
static struct blk *bins[2][NBINS];	/* [0] MP, [1] OPP arrays */
static struct blk **htab;
static size_t hsize, hcount;
static uint64_t nobjects;		/* live allocations */

/* ---------------------------------------------------------------- helpers */

static size_t div_up(size_t a, size_t b)
{
	return a / b + (a % b != 0);
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static uint32_t key_for(uint32_t size)
{
	uint32_t s16 = (size + BATCH_ALIGN - 1) / BATCH_ALIGN * BATCH_ALIGN;

	if (size < SSD_BATCH_MIN && s16 < SSD_BATCH_MIN)
		return s16;
	return (size + SSD_CLASS_STEP - 1) / SSD_CLASS_STEP * SSD_CLASS_STEP;
}

static bool key_valid(uint32_t key)
{
	if (key < SSD_BATCH_MIN)
		return key >= BATCH_ALIGN && key % BATCH_ALIGN == 0;
	return key % SSD_CLASS_STEP == 0 && key <= SSD_POOL_MAX;
}

static void key_shape(uint32_t key, uint32_t *ppo, uint32_t *k)
{
	if (key < SSD_BATCH_MIN) {
		*ppo = 1;
		*k = (SSD_BATCH_MIN + key - 1) / key;
	} else {
		*ppo = (key + SSD_PAGE - 1) / SSD_PAGE;
		*k = 1;
	}
}

/* store objects of a pool table: header + batches, or one per page */
static uint32_t pool_nstore(uint32_t nslots, uint32_t ppo, uint32_t k)
{
	if (k > 1)
		return 1 + (nslots - 1 + k - 1) / k;
	return nslots * ppo;
}

/* the size of a pool's next table: its total doubles to 10,000, then +10,000 */
static uint32_t pool_next_table(uint64_t total)
{
	if (total == 0)
		return SSD_POOL_FIRST;
	if (total < SSD_POOL_DOUBLE_MAX)
		return (uint32_t)((total * 2 < SSD_POOL_DOUBLE_MAX ? total * 2 :
				   SSD_POOL_DOUBLE_MAX) - total);
	return SSD_POOL_DOUBLE_MAX;
}

static int bin_of(size_t len)
{
	return 63 - __builtin_clzll((unsigned long long)len);
}

/* ---------------------------------------------------------------- ATM */

/* index of the range holding addr, or -1; atm_lock held */
static ssize_t atm_find(uintptr_t addr)
{
	size_t lo = 0, hi = natm;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct range *r = atm[mid];

		if (addr < r->base)
			hi = mid;
		else if (addr - r->base >= r->len)
			lo = mid + 1;
		else
			return (ssize_t)mid;
	}
	return -1;
}

static int atm_insert(struct range *r)
{
	size_t i;

	pthread_rwlock_wrlock(&atm_lock);
	if (natm == atmcap) {
		size_t ncap = atmcap ? atmcap * 2 : 16;
		struct range **n = realloc(atm, ncap * sizeof(*n));

		if (!n) {
			pthread_rwlock_unlock(&atm_lock);
			return ssd_err(ENOMEM, "heap: out of memory for the ATM");
		}
		atm = n;
		atmcap = ncap;
	}
	for (i = natm; i > 0 && atm[i - 1]->base > r->base; i--)
		atm[i] = atm[i - 1];
	atm[i] = r;
	natm++;
	pthread_rwlock_unlock(&atm_lock);
	return 0;
}

static void atm_remove(struct range *r)
{
	ssize_t i;

	pthread_rwlock_wrlock(&atm_lock);
	i = atm_find(r->base);
	if (i >= 0 && atm[i] == r) {
		memmove(&atm[i], &atm[i + 1], (natm - (size_t)i - 1) * sizeof(*atm));
		natm--;
	}
	pthread_rwlock_unlock(&atm_lock);
}

int ssd_atm_lookup(uintptr_t page, struct ssd_where *w)
{
	ssize_t i;
	struct range *r;
	uint32_t pi;

	page &= ~(uintptr_t)(SSD_PAGE - 1);
	pthread_rwlock_rdlock(&atm_lock);
	i = atm_find(page);
	if (i < 0)
		goto miss;
	r = atm[i];
	pi = (uint32_t)((page - r->base) / SSD_PAGE);
	memset(w, 0, sizeof(*w));
	w->otid = r->otid;
	switch (r->kind) {
	case R_POOL: {
		uint32_t s = pi / r->ppo, j = pi % r->ppo, sz;

		if (s == 0 || r->sizes[s] == 0)
			goto miss;
		sz = r->sizes[s];
		w->opp = true;
		if (r->k > 1) {
			w->oto = 1 + (s - 1) / r->k;
			w->obj_size = r->k * r->pool->key;
			w->cap = w->obj_size;
			w->off = (s - 1) % r->k * r->pool->key;
			w->len = sz;
		} else {
			w->oto = s * r->ppo + j;
			w->obj_size = min_u32(SSD_PAGE, sz - j * SSD_PAGE);
			w->cap = min_u32(SSD_PAGE, r->pool->key - j * SSD_PAGE);
			w->off = 0;
			w->len = w->obj_size;
		}
		break;
	}
	case R_MP:
		if (r->pcount[pi] == 0)
			goto miss;
		w->oto = pi;
		w->obj_size = w->cap = w->len = SSD_PAGE;
		w->opp = false;
		break;
	case R_OPP:
		if (r->plen[pi] == 0)
			goto miss;
		w->oto = pi;
		w->obj_size = w->len = r->plen[pi];
		w->cap = (r->plen[pi] + SSD_SECTOR - 1) / SSD_SECTOR * SSD_SECTOR;
		w->opp = true;
		break;
	}
	pthread_rwlock_unlock(&atm_lock);
	return 0;
miss:
	pthread_rwlock_unlock(&atm_lock);
	return -1;
}

/* ---------------------------------------------------------------- pools */

static void range_free(struct range *r)
{
	free(r->sizes);
	free(r->stale);
	free(r->bits);
	free(r->fl);
	free(r->pcount);
	free(r->plen);
	free(r);
}

static struct pool *pool_get(uint32_t key, bool create)
{
	struct pool *p;
	size_t i;

	for (i = 0; i < npools; i++)
		if (pools[i]->key == key)
			return pools[i];
	if (!create)
		return NULL;
	if (npools == poolcap) {
		size_t ncap = poolcap ? poolcap * 2 : 16;
		struct pool **n = realloc(pools, ncap * sizeof(*n));

		if (!n)
			return NULL;
		pools = n;
		poolcap = ncap;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->key = key;
	key_shape(key, &p->ppo, &p->k);
	pools[npools++] = p;
	return p;
}

static int fl_push(struct range *r, uint32_t s)
{
	if (r->nfl == r->flcap) {
		uint32_t ncap = r->flcap ? r->flcap * 2 : 64;
		uint32_t *n = realloc(r->fl, ncap * sizeof(*n));

		if (!n)
			return -1;
		r->fl = n;
		r->flcap = ncap;
	}
	r->fl[r->nfl++] = s;
	return 0;
}

static size_t bitmap_words(uint32_t nslots)
{
	return (nslots + 63) / 64;
}

/* the current table stops being current: its free list becomes a bitmap */
static int to_bitmap(struct range *r)
{
	uint64_t *b = calloc(bitmap_words(r->nslots), sizeof(*b));
	uint32_t i;

	if (!b)
		return -1;
	for (i = 0; i < r->nfl; i++)
		b[r->fl[i] / 64] |= 1ull << (r->fl[i] % 64);
	free(r->fl);
	r->fl = NULL;
	r->nfl = r->flcap = 0;
	r->bits = b;
	return 0;
}

/* a table becomes current: its bitmap becomes a free list, lowest slot on top */
static int to_list(struct range *r)
{
	uint32_t s;

	r->fl = malloc((r->nfree ? r->nfree : 1) * sizeof(*r->fl));
	if (!r->fl)
		return -1;
	r->flcap = r->nfree ? r->nfree : 1;
	r->nfl = 0;
	for (s = r->nslots; s-- > 1;)
		if (r->bits[s / 64] >> (s % 64) & 1)
			r->fl[r->nfl++] = s;
	free(r->bits);
	r->bits = NULL;
	return 0;
}

static void hdr_fill(struct ot_hdr *h, const struct range *r)
{
	memset(h, 0, sizeof(*h));
	h->magic = HDR_MAGIC;
	h->version = BLOB_VERSION;
	h->otid = r->otid;
	h->va = r->base;
	h->nslots = r->nslots;
	h->key = r->pool->key;
	h->ppo = r->ppo;
	h->k = r->k;
}

static int pool_add_table(struct pool *p, struct range *r)
{
	if (p->ntables == p->cap) {
		uint32_t ncap = p->cap ? p->cap * 2 : 8;
		struct range **n = realloc(p->tables, ncap * sizeof(*n));

		if (!n)
			return -1;
		p->tables = n;
		p->cap = ncap;
	}
	p->tables[p->ntables++] = r;
	p->total += r->nslots;
	return 0;
}

/* a new table of the pool's next size, current, with a free list */
static struct range *pool_grow(struct pool *p)
{
	struct range *r = calloc(1, sizeof(*r));
	struct ot_hdr h;
	struct ssd_obj o;
	uint32_t s;

	if (!r) {
		ssd_err(ENOMEM, "heap: out of memory");
		return NULL;
	}
	r->kind = R_POOL;
	r->pool = p;
	r->nslots = pool_next_table(p->total);
	r->ppo = p->ppo;
	r->k = p->k;
	r->npages = r->nslots * r->ppo;
	r->len = (size_t)r->npages * SSD_PAGE;
	r->nfree = r->nslots - 1;
	r->sizes = calloc(r->nslots, sizeof(*r->sizes));
	r->fl = malloc(r->nfree * sizeof(*r->fl));
	if (r->k > 1)
		r->stale = calloc(r->nslots, 1);
	if (!r->sizes || !r->fl || (r->k > 1 && !r->stale)) {
		ssd_err(ENOMEM, "heap: out of memory");
		goto fail;
	}
	r->flcap = r->nfree;
	for (s = r->nslots; s-- > 1;)
		r->fl[r->nfl++] = s;
	if (ssd_ot_create(ssd_store, pool_nstore(r->nslots, r->ppo, r->k), &r->otid))
		goto fail;
	/* (A2) a pool's table is the one kind that a checkpoint keeps (see the top) */
	if (ssd_ot_set_durable && ssd_ot_set_durable(ssd_store, r->otid, true))
		goto fail_ot;
	r->base = (uintptr_t)ssd_rt_reserve(NULL, r->len);
	if (!r->base)
		goto fail_ot;
	hdr_fill(&h, r);
	o = (struct ssd_obj){ .otid = r->otid, .oto = 0, .size = sizeof(h), .data = &h };
	if (ssd_obj_write(ssd_store, &o, 1))
		goto fail_va;
	if (pool_add_table(p, r)) {
		ssd_err(ENOMEM, "heap: out of memory");
		goto fail_va;
	}
	if (atm_insert(r)) {
		p->ntables--;
		p->total -= r->nslots;
		goto fail_va;
	}
	return r;
fail_va:
	ssd_rt_unreserve((void *)r->base, r->len);
fail_ot:
	ssd_ot_destroy(ssd_store, r->otid);
fail:
	range_free(r);
	return NULL;
}

/*
 * *zero: the slot must be zeroed by the caller once heap_lock is released. A
 * freed object's pages are dropped and its store objects discarded, so it
 * reads as zeros when handed out again, except a member of a batch whose
 * other members still live: the batch's store object keeps the old bytes.
 */
static void *pool_alloc(uint32_t size, bool *zero)
{
	struct pool *p = pool_get(key_for(size), true);
	struct range *r;
	uint32_t s;

	if (!p) {
		ssd_err(ENOMEM, "heap: out of memory");
		return NULL;
	}
	r = p->cur;
	if (!r || r->nfree == 0) {
		struct range *best = NULL;
		uint32_t i;

		if (r) {
			if (to_bitmap(r)) {
				ssd_err(ENOMEM, "heap: out of memory");
				return NULL;
			}
			p->cur = NULL;
		}
		for (i = 0; i < p->ntables; i++)
			if (p->tables[i]->nfree && (!best || p->tables[i]->nfree > best->nfree))
				best = p->tables[i];
		if (best) {
			if (to_list(best)) {
				ssd_err(ENOMEM, "heap: out of memory");
				return NULL;
			}
			r = best;
		} else {
			r = pool_grow(p);
			if (!r)
				return NULL;
		}
		p->cur = r;
	}
	s = r->fl[--r->nfl];
	r->nfree--;
	*zero = r->stale && r->stale[s];
	if (*zero)
		r->stale[s] = 0;
	pthread_rwlock_wrlock(&atm_lock);
	r->sizes[s] = size;
	pthread_rwlock_unlock(&atm_lock);
	nobjects++;
	return (void *)(r->base + (uintptr_t)s * r->ppo * SSD_PAGE);
}

/*
 * A store object died. The runtime forgets any cached or queued copy first, so
 * that no dirty copy is written back after the discard.
 */
static void obj_dead(struct range *r, uint32_t oto)
{
	ssd_rt_forget(r->otid, oto);
	ssd_obj_discard(ssd_store, r->otid, oto);
}

/*
 * Order of a free: the ATM forgets the pages first (a fault on them from now
 * on is a use after free, reported by the runtime), then the runtime drops the
 * pages (nothing written), then the store objects are discarded. Dropping
 * before the ATM forgot them would let a racing fault materialize the page
 * again from an object about to die.
 */
static int pool_free(struct range *r, uintptr_t a)
{
	uintptr_t off = a - r->base;
	size_t slot_bytes = (size_t)r->ppo * SSD_PAGE;
	uint32_t s = (uint32_t)(off / slot_bytes), j;

	if (off % slot_bytes || s == 0 || r->sizes[s] == 0)
		return ssd_err(EINVAL, "ssd_free: %p is not an allocated object%s", (void *)a,
			       off % slot_bytes ? " (interior pointer)" : " (never allocated or already freed)");
	/* from now on a fault on the page is a use after free */
	pthread_rwlock_wrlock(&atm_lock);
	r->sizes[s] = 0;
	pthread_rwlock_unlock(&atm_lock);
	if (r == r->pool->cur) {
		if (fl_push(r, s)) {
			/* cannot track it in the list: hand the table to the bitmap form */
			if (to_bitmap(r) == 0) {
				r->bits[s / 64] |= 1ull << (s % 64);
				r->pool->cur = NULL;
				r->nfree++;
			}
			/* else the slot leaks, not counted free: nfree stays the list's length */
		} else {
			r->nfree++;
		}
	} else {
		r->bits[s / 64] |= 1ull << (s % 64);
		r->nfree++;
	}
	nobjects--;
	ssd_rt_drop((void *)a, slot_bytes);
	if (r->k > 1) {
		uint32_t g = (s - 1) / r->k, first = 1 + g * r->k;
		uint32_t last = min_u32(first + r->k, r->nslots);

		for (j = first; j < last; j++)
			if (r->sizes[j]) {
				/* the batch lives on with this member's old bytes */
				r->stale[s] = 1;
				return 0;
			}
		for (j = first; j < last; j++)
			r->stale[j] = 0;
		obj_dead(r, 1 + g);
	} else {
		for (j = 0; j < r->ppo; j++)
			obj_dead(r, s * r->ppo + j);
	}
	return 0;
}

/* ---------------------------------------------------------------- coalescing */

static size_t hash_addr(uintptr_t a)
{
	uint64_t x = (uint64_t)a * 0x9e3779b97f4a7c15ull;

	return (size_t)(x >> 20) & (hsize - 1);
}

static int hash_insert(struct blk *b)
{
	if (hcount >= hsize) {
		size_t nsize = hsize ? hsize * 2 : 1024, i, old = hsize;
		struct blk **n = calloc(nsize, sizeof(*n)), **o = htab;

		if (!n)
			return -1;
		htab = n;
		hsize = nsize;
		for (i = 0; i < old; i++) {
			struct blk *e = o[i], *next;

			for (; e; e = next) {
				size_t h = hash_addr(e->addr);

				next = e->hnext;
				e->hnext = htab[h];
				htab[h] = e;
			}
		}
		free(o);
	}
	b->hnext = htab[hash_addr(b->addr)];
	htab[hash_addr(b->addr)] = b;
	hcount++;
	return 0;
}

static struct blk *hash_find(uintptr_t a)
{
	struct blk *b;

	if (!hsize)
		return NULL;
	for (b = htab[hash_addr(a)]; b; b = b->hnext)
		if (b->addr == a)
			return b;
	return NULL;
}

static void hash_remove(struct blk *b)
{
	struct blk **pp = &htab[hash_addr(b->addr)];

	for (; *pp; pp = &(*pp)->hnext)
		if (*pp == b) {
			*pp = b->hnext;
			hcount--;
			return;
		}
}

static void bin_insert(struct blk *b)
{
	struct blk **head = &bins[b->r->kind == R_OPP][bin_of(b->len)];

	b->fprev = NULL;
	b->fnext = *head;
	if (*head)
		(*head)->fprev = b;
	*head = b;
}

static void bin_remove(struct blk *b)
{
	struct blk **head = &bins[b->r->kind == R_OPP][bin_of(b->len)];

	if (b->fprev)
		b->fprev->fnext = b->fnext;
	else
		*head = b->fnext;
	if (b->fnext)
		b->fnext->fprev = b->fprev;
	b->fprev = b->fnext = NULL;
}

/* best fit: the smallest free block >= len; every block in a higher bin is
 * bigger than any block in a lower one, so the first bin with a fit holds it */
static struct blk *best_fit(int opp, size_t len)
{
	int i;

	for (i = bin_of(len); i < NBINS; i++) {
		struct blk *b, *best = NULL;

		for (b = bins[opp][i]; b; b = b->fnext)
			if (b->len >= len && (!best || b->len < best->len))
				best = b;
		if (best)
			return best;
	}
	return NULL;
}

static struct range *arena_new(enum rkind kind, size_t need_pages)
{
	struct range *r = calloc(1, sizeof(*r));
	struct blk *b = calloc(1, sizeof(*b));
	size_t np = need_pages > SSD_COALESCE_STEP ? need_pages : SSD_COALESCE_STEP;

	if (!r || !b) {
		ssd_err(ENOMEM, "heap: out of memory");
		goto fail;
	}
	if (np > UINT32_MAX / 2) {
		ssd_err(ENOMEM, "heap: request too big");
		goto fail;
	}
	r->kind = kind;
	r->npages = (uint32_t)np;
	r->len = np * SSD_PAGE;
	if (kind == R_MP)
		r->pcount = calloc(np, sizeof(*r->pcount));
	else
		r->plen = calloc(np, sizeof(*r->plen));
	if (!r->pcount && !r->plen) {
		ssd_err(ENOMEM, "heap: out of memory");
		goto fail;
	}
	if (ssd_ot_create(ssd_store, r->npages, &r->otid))
		goto fail;
	r->base = (uintptr_t)ssd_rt_reserve(NULL, r->len);
	if (!r->base)
		goto fail_ot;
	if (atm_insert(r))
		goto fail_va;
	b->addr = r->base;
	b->len = r->len;
	b->r = r;
	r->first = b;
	bin_insert(b);
	return r;
fail_va:
	ssd_rt_unreserve((void *)r->base, r->len);
fail_ot:
	ssd_ot_destroy(ssd_store, r->otid);
fail:
	if (r)
		range_free(r);
	free(b);
	return NULL;
}

static void arena_release(struct range *r)
{
	atm_remove(r);
	bin_remove(r->first);
	free(r->first);
	ssd_rt_unreserve((void *)r->base, r->len);
	ssd_ot_destroy(ssd_store, r->otid);
	range_free(r);
}

/* take len bytes at the start of free block b (splitting it); NULL (b stays free)
 * without memory for the split: the page counts assume the block is len bytes */
static struct blk *blk_take(struct blk *b, size_t len, size_t minsplit)
{
	struct blk *rest = NULL;

	if (b->len - len >= minsplit) {
		rest = calloc(1, sizeof(*rest));
		if (!rest)
			return NULL;
	}
	bin_remove(b);
	if (rest) {
		rest->addr = b->addr + len;
		rest->len = b->len - len;
		rest->r = b->r;
		rest->prev = b;
		rest->next = b->next;
		if (b->next)
			b->next->prev = rest;
		b->next = rest;
		b->len = len;
		bin_insert(rest);
	}
	return b;
}

/* a absorbs its next block n (free, out of the bins) */
static void blk_absorb(struct blk *a, struct blk *n)
{
	a->len += n->len;
	a->next = n->next;
	if (n->next)
		n->next->prev = a;
	free(n);
}

/* back to the free bins, merged with free neighbours */
static void blk_release(struct blk *b)
{
	struct blk *n = b->next, *p = b->prev;

	b->req = 0;
	b->esize = 0;
	if (n && !n->req) {
		bin_remove(n);
		blk_absorb(b, n);
	}
	if (p && !p->req) {
		bin_remove(p);
		blk_absorb(p, b);
		b = p;
	}
	bin_insert(b);
	if (b == b->r->first && !b->next && b->r->npages > SSD_COALESCE_STEP)
		arena_release(b->r);	/* an oversized range, all free: give it back */
}

static void *coal_alloc(enum rkind kind, size_t len, size_t req, uint32_t esize)
{
	int opp = kind == R_OPP;
	struct blk *b = best_fit(opp, len);
	struct range *r;
	uint32_t first, last, i;

	if (!b) {
		if (!arena_new(kind, div_up(len, SSD_PAGE)))
			return NULL;
		b = best_fit(opp, len);
		if (!b)
			return NULL;	/* cannot happen: the new range fits */
	}
	b = blk_take(b, len, opp ? SSD_PAGE : MP_ALIGN);
	if (!b) {
		ssd_err(ENOMEM, "heap: out of memory");
		return NULL;
	}
	b->req = req;
	b->esize = esize;
	if (hash_insert(b)) {
		blk_release(b);
		ssd_err(ENOMEM, "heap: out of memory");
		return NULL;
	}
	r = b->r;
	first = (uint32_t)((b->addr - r->base) / SSD_PAGE);
	last = (uint32_t)((b->addr + len - 1 - r->base) / SSD_PAGE);
	pthread_rwlock_wrlock(&atm_lock);
	for (i = first; i <= last; i++) {
		if (opp) {
			uint32_t ppe = (esize + SSD_PAGE - 1) / SSD_PAGE, j = (i - first) % ppe;

			r->plen[i] = (uint16_t)min_u32(SSD_PAGE, esize - j * SSD_PAGE);
		} else {
			r->pcount[i]++;
		}
	}
	pthread_rwlock_unlock(&atm_lock);
	r->nlive++;
	nobjects++;
	return (void *)b->addr;
}

/* drop and discard the pages first..last whose objects died */
static void pages_dead(struct range *r, uint32_t first, uint32_t last, const bool *dead)
{
	uint32_t i = first;

	while (i <= last) {
		uint32_t j;

		if (!dead[i - first]) {
			i++;
			continue;
		}
		for (j = i; j <= last && dead[j - first]; j++)
			;
		ssd_rt_drop((void *)(r->base + (uintptr_t)i * SSD_PAGE),
			    (size_t)(j - i) * SSD_PAGE);
		for (j = i; j <= last && dead[j - first]; j++)
			obj_dead(r, j);
		i = j;
	}
}

static int coal_free(struct blk *b)
{
	struct range *r = b->r;
	uint32_t first = (uint32_t)((b->addr - r->base) / SSD_PAGE);
	uint32_t last = (uint32_t)((b->addr + b->len - 1 - r->base) / SSD_PAGE), i;
	bool few[8], *dead = few;

	if (last - first + 1 > 8) {
		dead = calloc(last - first + 1, sizeof(*dead));
		if (!dead)
			return ssd_err(ENOMEM, "ssd_free: out of memory");
	}
	hash_remove(b);
	pthread_rwlock_wrlock(&atm_lock);
	for (i = first; i <= last; i++) {
		if (r->kind == R_OPP) {
			r->plen[i] = 0;
			dead[i - first] = true;
		} else {
			dead[i - first] = --r->pcount[i] == 0;
		}
	}
	pthread_rwlock_unlock(&atm_lock);
	pages_dead(r, first, last, dead);
	if (dead != few)
		free(dead);
	r->nlive--;
	nobjects--;
	blk_release(b);
	return 0;
}

/* ---------------------------------------------------------------- API */

int ssd_heap_init(void)
{
	return 0;
}

void ssd_heap_fini(void)
{
	size_t i;
	int k;

	pthread_mutex_lock(&heap_lock);
	pthread_rwlock_wrlock(&atm_lock);
	for (i = 0; i < natm; i++) {
		struct range *r = atm[i];
		struct blk *b, *n;

		for (b = r->first; b; b = n) {
			n = b->next;
			free(b);
		}
		/* runtime calls are not made under atm_lock: collect first */
	}
	pthread_rwlock_unlock(&atm_lock);
	for (i = 0; i < natm; i++) {
		ssd_rt_unreserve((void *)atm[i]->base, atm[i]->len);
		range_free(atm[i]);
	}
	pthread_rwlock_wrlock(&atm_lock);
	free(atm);
	atm = NULL;
	natm = atmcap = 0;
	pthread_rwlock_unlock(&atm_lock);
	for (i = 0; i < npools; i++) {
		free(pools[i]->tables);
		free(pools[i]);
	}
	free(pools);
	pools = NULL;
	npools = poolcap = 0;
	for (k = 0; k < NBINS; k++)
		bins[0][k] = bins[1][k] = NULL;
	free(htab);
	htab = NULL;
	hsize = hcount = 0;
	nobjects = 0;
	pthread_mutex_unlock(&heap_lock);
}

void *ssd_heap_oalloc(uint32_t n, uint32_t size)
{
	bool zero = false;
	void *p;

	if (n == 0 || size == 0 || size > INT32_MAX) {
		ssd_err(EINVAL, "ssd_oalloc: bad count %u or size %u", n, size);
		return NULL;
	}
	pthread_mutex_lock(&heap_lock);
	if (n == 1 && size <= SSD_POOL_MAX) {
		p = pool_alloc(size, &zero);
	} else {
		uint64_t ppe = div_up(size, SSD_PAGE), pages = ppe * n;

		if (pages > UINT32_MAX / 2) {
			pthread_mutex_unlock(&heap_lock);
			ssd_err(ENOMEM, "ssd_oalloc: %u objects of %u bytes: too big", n, size);
			return NULL;
		}
		p = coal_alloc(R_OPP, pages * SSD_PAGE, (pages - ppe) * SSD_PAGE + size, size);
	}
	pthread_mutex_unlock(&heap_lock);
	/* with no lock held: this may fault */
	if (p && zero)
		memset(p, 0, size);
	return p;
}

void *ssd_heap_malloc(size_t size)
{
	size_t len;
	void *p;

	if (size > ((size_t)UINT32_MAX / 2) * SSD_PAGE) {
		ssd_err(ENOMEM, "ssd_malloc: %zu bytes: too big", size);
		return NULL;
	}
	if (!size)
		size = 1;	/* a unique pointer, as malloc(0) may give */
	len = (size + MP_ALIGN - 1) / MP_ALIGN * MP_ALIGN;
	pthread_mutex_lock(&heap_lock);
	p = coal_alloc(R_MP, len, size, 0);
	pthread_mutex_unlock(&heap_lock);
	return p;
}

/* the range holding a, or NULL; heap_lock held (ranges change only under it) */
static struct range *range_of(uintptr_t a)
{
	ssize_t i;

	pthread_rwlock_rdlock(&atm_lock);
	i = atm_find(a);
	pthread_rwlock_unlock(&atm_lock);
	return i < 0 ? NULL : atm[i];
}

size_t ssd_heap_size(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	struct range *r;
	size_t sz = 0;

	pthread_mutex_lock(&heap_lock);
	r = range_of(a);
	if (r && r->kind == R_POOL) {
		size_t slot_bytes = (size_t)r->ppo * SSD_PAGE, off = a - r->base;

		if (off % slot_bytes == 0)
			sz = r->sizes[off / slot_bytes];
	} else if (r) {
		struct blk *b = hash_find(a);

		if (b)
			sz = b->req;
	}
	pthread_mutex_unlock(&heap_lock);
	return sz;
}

int ssd_heap_free(void *p)
{
	uintptr_t a = (uintptr_t)p;
	struct range *r;
	struct blk *b;
	int ret;

	pthread_mutex_lock(&heap_lock);
	r = range_of(a);
	if (!r) {
		ret = ssd_err(EINVAL, "ssd_free: %p was not allocated by SSDAlloc", p);
	} else if (r->kind == R_POOL) {
		ret = pool_free(r, a);
	} else {
		b = hash_find(a);
		if (!b)
			ret = ssd_err(EINVAL, "ssd_free: %p is not the start of a live allocation "
				      "(interior pointer, or already freed)", p);
		else
			ret = coal_free(b);
	}
	pthread_mutex_unlock(&heap_lock);
	return ret;
}

void ssd_heap_stats(struct ssd_stats *st)
{
	pthread_mutex_lock(&heap_lock);
	st->objects += nobjects;
	pthread_mutex_unlock(&heap_lock);
}

/* ---------------------------------------------------------------- save / load */

/*
 * The blob (host byte order; the store checks its CRC):
 *   u64 magic, u32 version, u32 ntables, u32 ndrop, u32 0
 *   per pool table: u32 key, otid, nslots, nfree; u64 va;
 *                   u32 sizes[nslots]; u64 free bitmap[(nslots + 63) / 64]
 *   u32 otid[ndrop]: the tables of MP and OPP-array ranges (not durable)
 */
struct blob_hdr {
	uint64_t magic;
	uint32_t version, ntables, ndrop, zero;
};

struct blob_tab {
	uint32_t key, otid, nslots, nfree;
	uint64_t va;
};

/* heap_lock held */
static int heap_save_locked(void **blob, size_t *len)
{
	struct blob_hdr h = { .magic = BLOB_MAGIC, .version = BLOB_VERSION };
	size_t i, sz = sizeof(h);
	uint8_t *buf, *q;

	for (i = 0; i < natm; i++) {
		struct range *r = atm[i];

		if (r->kind == R_POOL) {
			h.ntables++;
			sz += sizeof(struct blob_tab) + r->nslots * sizeof(uint32_t) +
			      bitmap_words(r->nslots) * sizeof(uint64_t);
		} else {
			h.ndrop++;
			sz += sizeof(uint32_t);
		}
	}
	buf = malloc(sz);
	if (!buf)
		return ssd_err(ENOMEM, "checkpoint: out of memory for the heap state");
	memcpy(buf, &h, sizeof(h));
	q = buf + sizeof(h);
	for (i = 0; i < natm; i++) {
		struct range *r = atm[i];
		struct blob_tab t;
		uint64_t *bits;
		uint32_t s;

		if (r->kind != R_POOL)
			continue;
		t = (struct blob_tab){ r->pool->key, r->otid, r->nslots, r->nfree, r->base };
		memcpy(q, &t, sizeof(t));
		q += sizeof(t);
		memcpy(q, r->sizes, r->nslots * sizeof(uint32_t));
		q += r->nslots * sizeof(uint32_t);
		/* the free state as a bitmap whatever the table's form now */
		bits = (uint64_t *)q;
		memset(q, 0, bitmap_words(r->nslots) * sizeof(uint64_t));
		for (s = 1; s < r->nslots; s++)
			if (!r->sizes[s]) {
				uint64_t w;

				memcpy(&w, &bits[s / 64], sizeof(w));
				w |= 1ull << (s % 64);
				memcpy(&bits[s / 64], &w, sizeof(w));
			}
		q += bitmap_words(r->nslots) * sizeof(uint64_t);
	}
	for (i = 0; i < natm; i++)
		if (atm[i]->kind != R_POOL) {
			memcpy(q, &atm[i]->otid, sizeof(uint32_t));
			q += sizeof(uint32_t);
		}
	*blob = buf;
	*len = sz;
	return 0;
}

int ssd_heap_save(void **blob, size_t *len)
{
	int ret;

	pthread_mutex_lock(&heap_lock);
	ret = heap_save_locked(blob, len);
	pthread_mutex_unlock(&heap_lock);
	return ret;
}

/*
 * A consistent checkpoint: no allocation or free may run between the flush,
 * the heap's snapshot and the store's snapshot of its tables (a free in
 * between would leave the blob naming a live object whose store entry was
 * discarded; a slot freed and reused after the flush would restore as zeros
 * while a flushed page points at it), nor may a pool grow. So all three run
 * under heap_lock (order heap -> rt -> store; the fault thread takes only
 * atm_lock). commit gets the blob and does the store's part.
 */
int ssd_heap_checkpoint(int (*commit)(const void *blob, size_t len, void *arg), void *arg)
{
	void *blob = NULL;
	size_t len = 0;
	int ret;

	pthread_mutex_lock(&heap_lock);
	ret = ssd_rt_flush();
	if (!ret)
		ret = heap_save_locked(&blob, &len);
	if (!ret)
		ret = commit(blob, len, arg);
	pthread_mutex_unlock(&heap_lock);
	free(blob);
	return ret;
}

static int va_cmp(const void *a, const void *b)
{
	const struct range *x = *(struct range *const *)a, *y = *(struct range *const *)b;

	return x->base < y->base ? -1 : x->base > y->base;
}

#define BAD(...) do { ssd_err(EBADMSG, "restore: heap state: " __VA_ARGS__); goto fail; } while (0)

/*
 * A load that failed leaves the tables the store restored orphaned (nothing
 * names them): destroy every table the blob names, as far as it can be walked
 * within bounds, so that their objects become garbage. (ssd_restore calls it;
 * ssd_heap_load itself leaves them, so that a load may be retried.)
 */
void ssd_heap_drop_tables(const void *blob, size_t len)
{
	const uint8_t *q = blob, *end = q + len;
	struct blob_hdr h;
	uint32_t i, d;

	if ((size_t)(end - q) < sizeof(h))
		return;
	memcpy(&h, q, sizeof(h));
	q += sizeof(h);
	if (h.magic != BLOB_MAGIC || h.version != BLOB_VERSION)
		return;		/* not ours: nothing it says can be trusted */
	for (i = 0; i < h.ntables; i++) {
		struct blob_tab t;
		size_t skip;

		if ((size_t)(end - q) < sizeof(t))
			return;
		memcpy(&t, q, sizeof(t));
		q += sizeof(t);
		ssd_ot_destroy(ssd_store, t.otid);
		skip = (size_t)t.nslots * sizeof(uint32_t) + bitmap_words(t.nslots) * sizeof(uint64_t);
		if ((size_t)(end - q) < skip)
			return;
		q += skip;
	}
	for (i = 0; i < h.ndrop && (size_t)(end - q) >= sizeof(d); i++, q += sizeof(d)) {
		memcpy(&d, q, sizeof(d));
		ssd_ot_destroy(ssd_store, d);
	}
}

int ssd_heap_load(const void *blob, size_t len)
{
	const uint8_t *q = blob, *end = q + len;
	struct blob_hdr h;
	struct range **rs = NULL;
	uint32_t i, ndone = 0;
	size_t nres = 0;

	pthread_mutex_lock(&heap_lock);
	if (natm || npools) {
		pthread_mutex_unlock(&heap_lock);
		return ssd_err(EBUSY, "restore: the heap is not empty");
	}
	if (len < sizeof(h))
		BAD("too short (%zu bytes)", len);
	memcpy(&h, q, sizeof(h));
	q += sizeof(h);
	if (h.magic != BLOB_MAGIC || h.version != BLOB_VERSION || h.zero)
		BAD("bad magic or version");
	if (h.ntables > (len - sizeof(h)) / sizeof(struct blob_tab))
		BAD("%u tables cannot fit in %zu bytes", h.ntables, len);
	rs = calloc(h.ntables ? h.ntables : 1, sizeof(*rs));
	if (!rs) {
		ssd_err(ENOMEM, "restore: out of memory");
		goto fail;
	}
	/* parse and check everything before touching the address space */
	for (i = 0; i < h.ntables; i++) {
		struct blob_tab t;
		struct range *r;
		size_t need;
		uint32_t s, nfree = 0;
		const uint8_t *bits;

		if ((size_t)(end - q) < sizeof(t))
			BAD("table %u truncated", i);
		memcpy(&t, q, sizeof(t));
		q += sizeof(t);
		if (!key_valid(t.key))
			BAD("table %u: bad class %u", i, t.key);
		if (t.nslots < 2 || t.nslots > SSD_POOL_DOUBLE_MAX)
			BAD("table %u: bad size %u", i, t.nslots);
		need = t.nslots * sizeof(uint32_t) + bitmap_words(t.nslots) * sizeof(uint64_t);
		if ((size_t)(end - q) < need)
			BAD("table %u truncated", i);
		r = calloc(1, sizeof(*r));
		if (!r) {
			ssd_err(ENOMEM, "restore: out of memory");
			goto fail;
		}
		rs[nres++] = r;
		r->kind = R_POOL;
		r->otid = t.otid;
		r->nslots = t.nslots;
		key_shape(t.key, &r->ppo, &r->k);
		r->npages = t.nslots * r->ppo;
		r->len = (size_t)r->npages * SSD_PAGE;
		r->base = (uintptr_t)t.va;
		r->nfree = t.nfree;
		/* remember the key until the pool exists */
		r->flcap = t.key;
		if (!t.va || t.va % SSD_PAGE || t.va >= VA_LIMIT || VA_LIMIT - t.va < r->len)
			BAD("table %u: bad address 0x%llx", i, (unsigned long long)t.va);
		r->sizes = malloc(t.nslots * sizeof(uint32_t));
		r->bits = malloc(bitmap_words(t.nslots) * sizeof(uint64_t));
		if (!r->sizes || !r->bits) {
			ssd_err(ENOMEM, "restore: out of memory");
			goto fail;
		}
		memcpy(r->sizes, q, t.nslots * sizeof(uint32_t));
		q += t.nslots * sizeof(uint32_t);
		bits = q;
		memcpy(r->bits, q, bitmap_words(t.nslots) * sizeof(uint64_t));
		q += bitmap_words(t.nslots) * sizeof(uint64_t);
		(void)bits;
		if (r->sizes[0] || (r->bits[0] & 1))
			BAD("table %u: the header slot is in use", i);
		for (s = 1; s < t.nslots; s++) {
			bool fr = r->bits[s / 64] >> (s % 64) & 1;

			if (fr != (r->sizes[s] == 0))
				BAD("table %u: slot %u: bitmap and size disagree", i, s);
			if (fr)
				nfree++;
			else if (r->sizes[s] > SSD_POOL_MAX || key_for(r->sizes[s]) != t.key)
				BAD("table %u: slot %u: size %u not of class %u", i, s,
				    r->sizes[s], t.key);
		}
		for (s = t.nslots; s < bitmap_words(t.nslots) * 64; s++)
			if (r->bits[s / 64] >> (s % 64) & 1)
				BAD("table %u: bits beyond its end", i);
		if (nfree != t.nfree)
			BAD("table %u: free count %u, bitmap says %u", i, t.nfree, nfree);
	}
	if ((size_t)(end - q) != (size_t)h.ndrop * sizeof(uint32_t))
		BAD("%zu bytes left for %u discarded tables", (size_t)(end - q), h.ndrop);
	qsort(rs, nres, sizeof(*rs), va_cmp);
	for (i = 0; i < nres; i++) {
		uint32_t j;

		if (i && rs[i - 1]->base + rs[i - 1]->len > rs[i]->base)
			BAD("tables overlap at 0x%lx", (unsigned long)rs[i]->base);
		for (j = 0; j < i; j++)
			if (rs[j]->otid == rs[i]->otid)
				BAD("two tables with otid %u", rs[i]->otid);
	}
	for (i = 0; i < h.ndrop; i++) {
		uint32_t d, j;

		memcpy(&d, q + i * sizeof(uint32_t), sizeof(d));
		for (j = 0; j < nres; j++)
			if (rs[j]->otid == d)
				BAD("otid %u both kept and dropped", d);
	}
	/* each table's first object must say the same (3.2.6) */
	for (i = 0; i < nres; i++) {
		struct range *r = rs[i];
		struct ot_hdr want, got;
		uint8_t buf[SSD_SECTOR];
		uint32_t got_size = 0;
		struct pool fake = { .key = r->flcap };

		r->pool = &fake;
		hdr_fill(&want, r);
		r->pool = NULL;
		memset(buf, 0, sizeof(buf));
		if (ssd_obj_read(ssd_store, r->otid, 0, buf, sizeof(buf), &got_size))
			goto fail;
		memcpy(&got, buf, sizeof(got));
		if (got_size != sizeof(got) || memcmp(&got, &want, sizeof(got)))
			BAD("table %u: its first object does not match the checkpoint", r->otid);
	}
	for (ndone = 0; ndone < nres; ndone++) {
		struct range *r = rs[ndone];

		if (ssd_rt_reserve((void *)r->base, r->len) != (void *)r->base) {
			ssd_err(EEXIST, "restore: cannot map 0x%lx..0x%lx again (in use?)",
				(unsigned long)r->base, (unsigned long)(r->base + r->len));
			goto fail;
		}
	}
	/* commit: nothing below can fail except memory */
	for (i = 0; i < nres; i++) {
		struct range *r = rs[i];
		struct pool *p = pool_get(r->flcap, true);

		r->flcap = 0;
		if (!p || pool_add_table(p, r) || atm_insert(r)) {
			ssd_err(ENOMEM, "restore: out of memory");
			goto fail_commit;
		}
		r->pool = p;
		nobjects += r->nslots - 1 - r->nfree;
		if (r->k > 1) {
			uint32_t s, j;

			r->stale = calloc(r->nslots, 1);
			if (!r->stale) {
				ssd_err(ENOMEM, "restore: out of memory");
				goto fail_commit;
			}
			/* a free member of a batch with live members holds old bytes */
			for (s = 1; s < r->nslots; s++) {
				uint32_t first = 1 + (s - 1) / r->k * r->k;
				uint32_t last = min_u32(first + r->k, r->nslots);

				if (r->sizes[s])
					continue;
				for (j = first; j < last; j++)
					if (r->sizes[j])
						r->stale[s] = 1;
			}
		}
	}
	for (i = 0; i < h.ndrop; i++) {
		uint32_t d;

		memcpy(&d, q + i * sizeof(uint32_t), sizeof(d));
		ssd_ot_destroy(ssd_store, d);
	}
	free(rs);
	pthread_mutex_unlock(&heap_lock);
	return 0;

fail_commit:
	/* undo the partial commit: leave an empty heap */
	pthread_rwlock_wrlock(&atm_lock);
	natm = 0;
	pthread_rwlock_unlock(&atm_lock);
	for (i = 0; i < npools; i++) {
		free(pools[i]->tables);
		free(pools[i]);
	}
	npools = 0;
	nobjects = 0;
fail:
	for (i = 0; i < ndone; i++)
		ssd_rt_unreserve((void *)rs[i]->base, rs[i]->len);
	for (i = 0; i < nres; i++)
		range_free(rs[i]);
	free(rs);
	pthread_mutex_unlock(&heap_lock);
	return -1;
}

/* ---------------------------------------------------------------- tests */

/* for tests/user/ssdalloc/test-heap.c only (not exported): a pool's shape */
struct ssd_heap_pinfo {
	uint32_t key, ppo, k, ntables, cur;	/* cur: index of the current table, or ~0 */
	uint32_t nslots[64], nfree[64];
	bool bitmap[64];			/* the table keeps a bitmap (not current) */
};
int ssd_heap_pool_info(uint32_t size, struct ssd_heap_pinfo *pi);

int ssd_heap_pool_info(uint32_t size, struct ssd_heap_pinfo *pi)
{
	struct pool *p;
	uint32_t i;

	pthread_mutex_lock(&heap_lock);
	p = pool_get(key_for(size), false);
	if (!p) {
		pthread_mutex_unlock(&heap_lock);
		return -1;
	}
	memset(pi, 0, sizeof(*pi));
	pi->key = p->key;
	pi->ppo = p->ppo;
	pi->k = p->k;
	pi->ntables = p->ntables;
	pi->cur = ~0u;
	for (i = 0; i < p->ntables && i < 64; i++) {
		pi->nslots[i] = p->tables[i]->nslots;
		pi->nfree[i] = p->tables[i]->nfree;
		pi->bitmap[i] = p->tables[i]->bits != NULL;
		if (p->tables[i] == p->cur)
			pi->cur = i;
	}
	pthread_mutex_unlock(&heap_lock);
	return 0;
}

bool ssd_heap_empty(void)
{
	bool empty;

	pthread_mutex_lock(&heap_lock);
	empty = natm == 0 && npools == 0;
	pthread_mutex_unlock(&heap_lock);
	return empty;
}
