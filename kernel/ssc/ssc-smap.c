// SPDX-License-Identifier: GPL-2.0
/*
 * Sparse hash map for dm-ssc (FlashTier, section 4.3.1).
 *
 * Layout
 * ------
 * The table has nbuckets buckets, a multiple of 32, split into groups of
 * 32. Each group has a 32-bit occupancy bitmap and a pointer to a packed
 * array holding only its occupied buckets, in bucket order: the entry of
 * bucket b of a group is at slot popcount(bitmap & (BIT(b) - 1)). Bitmaps,
 * pointers and the size class of each packed array live in three separate
 * arrays (one allocation), 13 bytes per group.
 *
 * Keys are hashed by a bijective mix over hb = key_bits + 1 bits. The home
 * bucket of hash h is (h * nbuckets) >> hb, so the bucket count need not be
 * a power of two. Bucket i owns the hashes [lo(i), lo(i + 1)) with
 * lo(i) = ceil(i * 2^hb / nbuckets), so an entry only stores the remainder
 * h - lo(home): home is implied by the bucket and the displacement.
 *
 * An entry is ebits = 5 + rem_bits + val_bits wide (at most 64):
 *	bits [0, 5)			displacement d from the home bucket
 *	bits [5, 5 + rem_bits)		remainder
 *	bits [5 + rem_bits, ebits)	value
 * and entries are packed back to back in the group's array.
 *
 * Collisions are resolved by Robin Hood linear probing (wrapping at the end
 * of the table) with d <= 31, so a key is always within 32 buckets of its
 * home, and removal is by backward shift, without tombstones. The table
 * grows by 1.5x when the load would exceed 0.8 or a displacement would
 * overflow, and shrinks when the load drops below 0.2. A map presized for
 * its largest count (ssc_smap_presize()) never shrinks below that size, so
 * it rehashes only if a displacement overflows, which keys spread by the
 * hash make vanishingly rare at a load of 0.8; @rehashes counts them.
 *
 * Memory
 * ------
 * Packed arrays come from module-wide slab caches in 8-byte steps (8..256
 * bytes), so an array wastes less than 8 bytes. Tables of the minimum size
 * keep their per-group arrays inside struct ssc_smap, so an empty map is a
 * single allocation; a presized table may live in memory its owner lends
 * (ssc_smap_presize_in()), so that many maps round up to pages once. Every
 * byte the map allocates itself is counted in @bytes.
 *
 * Concurrency
 * -----------
 * Writers are serialized by the caller. With a reader-writer lock set by
 * ssc_smap_set_lock(), lookups may run concurrently, holding it for
 * reading: each change is prepared (memory allocated, the new table built)
 * without it, made visible with it held for writing, and what it replaced
 * is freed after, so the lock is written only for a few memory moves and
 * never across an allocation.
 */

#include <linux/bitops.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/mempool.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <asm/byteorder.h>

#include "ssc-smap.h"

#define SSC_GROUP		32U
#define SSC_DBITS		5U
#define SSC_MAX_DISP		((1U << SSC_DBITS) - 1)
#define SSC_MIN_GROUPS		2U
#define SSC_MIN_BUCKETS		(SSC_MIN_GROUPS * SSC_GROUP)
#define SSC_MAX_BUCKETS		BIT(31)
#define SSC_MAX_KEY_BITS	48U
#define SSC_CLASS_STEP		8U
/* largest packed array: 32 entries of 64 bits */
#define SSC_NCLASSES		(SSC_GROUP * 64 / 8 / SSC_CLASS_STEP)

/* odd multipliers of the key mix */
#define SSC_MIX1		0x9e3779b97f4a7c15ULL
#define SSC_MIX2		0xbf58476d1ce4e5b9ULL

/* one table generation: everything that depends on the bucket count */
struct ssc_tab {
	u32 *bitmap;		/* [ngroups] occupied buckets */
	void **grp;		/* [ngroups] packed entry arrays */
	u8 *cls;		/* [ngroups] size class of grp[g] */
	u32 nbuckets;
	u32 ngroups;
	u64 q0;			/* 2^hb = q0 * nbuckets + r0 */
	u32 r0;
	u8 rem_bits;
	u8 ebits;
};

struct ssc_smap {
	struct ssc_tab t;
	u64 count;
	size_t bytes;
	u32 min_buckets;	/* never shrink below (presized) */
	u64 rehashes;		/* table generations after the first */
	rwlock_t *lock;		/* written around changes; see ssc_smap_set_lock() */
	struct ssc_smap_reserve *reserve;	/* arrays for inserts, or NULL */
	void *ext;		/* the caller's memory for the per-group arrays */
	size_t ext_size;	/* (ssc_smap_presize_in()), or NULL and 0 */
	u64 hmask;		/* 2^hb - 1 */
	u64 inv1;		/* inverses of SSC_MIX1/2 mod 2^64 */
	u64 inv2;
	u8 key_bits;
	u8 val_bits;
	u8 hb;
	u8 hshift;		/* ceil(hb / 2) */
	/* per-group arrays of a minimum-size table */
	u32 inl_bitmap[SSC_MIN_GROUPS];
	void *inl_grp[SSC_MIN_GROUPS];
	u8 inl_cls[SSC_MIN_GROUPS];
};

struct ssc_smap_reserve {
	unsigned int min_nr;
	unsigned int nr_pools;		/* the classes entries this wide can use */
	mempool_t pools[SSC_NCLASSES];	/* one per array size class */
};

static DEFINE_MUTEX(ssc_smap_global_lock);
static unsigned int ssc_smap_users;
static struct kmem_cache *ssc_smap_caches[SSC_NCLASSES];
static char ssc_smap_cache_names[SSC_NCLASSES][16];

int ssc_smap_global_init(void)
{
	unsigned int i;
	int ret = 0;

	mutex_lock(&ssc_smap_global_lock);
	if (ssc_smap_users++)
		goto out;
	for (i = 0; i < SSC_NCLASSES; i++) {
		unsigned int size = (i + 1) * SSC_CLASS_STEP;

		snprintf(ssc_smap_cache_names[i], sizeof(ssc_smap_cache_names[i]),
			 "ssc_smap_%u", size);
		ssc_smap_caches[i] = kmem_cache_create(ssc_smap_cache_names[i],
						       size, SSC_CLASS_STEP, 0, NULL);
		if (!ssc_smap_caches[i]) {
			while (i--) {
				kmem_cache_destroy(ssc_smap_caches[i]);
				ssc_smap_caches[i] = NULL;
			}
			ssc_smap_users--;
			ret = -ENOMEM;
			break;
		}
	}
out:
	mutex_unlock(&ssc_smap_global_lock);
	return ret;
}

void ssc_smap_global_exit(void)
{
	unsigned int i;

	mutex_lock(&ssc_smap_global_lock);
	if (!WARN_ON(!ssc_smap_users) && !--ssc_smap_users) {
		for (i = 0; i < SSC_NCLASSES; i++) {
			kmem_cache_destroy(ssc_smap_caches[i]);
			ssc_smap_caches[i] = NULL;
		}
	}
	mutex_unlock(&ssc_smap_global_lock);
}

#if IS_ENABLED(CONFIG_DM_SSC_KUNIT_TEST)
/* test hook: when >= 0, the allocation that brings it below 0 fails */
static int ssc_smap_fail_countdown = -1;

static bool ssc_fail_alloc(void)
{
	return ssc_smap_fail_countdown >= 0 && ssc_smap_fail_countdown-- == 0;
}
#else
static inline bool ssc_fail_alloc(void)
{
	return false;
}
#endif

static inline u64 ssc_mask(unsigned int bits)
{
	return bits >= 64 ? ~0ULL : (1ULL << bits) - 1;
}

/*
 * A change that a lookup could see is made under m->lock, if there is one;
 * the memory it needs is allocated before and freed after.
 */
static inline void ssc_wlock(struct ssc_smap *m)
	__acquires(m->lock)
{
	if (m->lock)
		write_lock(m->lock);
	else
		__acquire(m->lock);	/* for sparse: one context either way */
}

static inline void ssc_wunlock(struct ssc_smap *m)
	__releases(m->lock)
{
	if (m->lock)
		write_unlock(m->lock);
	else
		__release(m->lock);
}

/* inverse of an odd number mod 2^64, by Newton's iteration */
static u64 ssc_inverse(u64 a)
{
	u64 x = a;	/* correct to 3 bits: a * a == 1 mod 8 */
	int i;

	for (i = 0; i < 5; i++)
		x *= 2 - a * x;
	return x;
}

static u64 ssc_mix(const struct ssc_smap *m, u64 key)
{
	u64 h = (key * SSC_MIX1) & m->hmask;

	h ^= h >> m->hshift;
	return (h * SSC_MIX2) & m->hmask;
}

static u64 ssc_unmix(const struct ssc_smap *m, u64 h)
{
	h = (h * m->inv2) & m->hmask;
	/* 2 * hshift >= hb, so the xorshift is its own inverse */
	h ^= h >> m->hshift;
	return (h * m->inv1) & m->hmask;
}

/* first hash owned by bucket @i: ceil(i * 2^hb / nbuckets) */
static u64 ssc_lo(const struct ssc_tab *t, u32 i)
{
	return i * t->q0 + div_u64((u64)i * t->r0 + t->nbuckets - 1, t->nbuckets);
}

static u32 ssc_home(const struct ssc_smap *m, const struct ssc_tab *t, u64 h)
{
	return mul_u64_u64_shr(h, t->nbuckets, m->hb);
}

/* set the parameters of a table of @nbuckets buckets (no allocation) */
static void ssc_tab_params(const struct ssc_smap *m, struct ssc_tab *t, u32 nbuckets)
{
	u64 span = 1ULL << m->hb;

	t->nbuckets = nbuckets;
	t->ngroups = nbuckets / SSC_GROUP;
	t->q0 = div_u64_rem(span, nbuckets, &t->r0);
	/* a bucket owns at most ceil(2^hb / nbuckets) hashes */
	t->rem_bits = fls64(DIV_ROUND_UP_ULL(span, nbuckets) - 1);
	t->ebits = SSC_DBITS + t->rem_bits + m->val_bits;
}

static inline unsigned int ssc_class(const struct ssc_tab *t, unsigned int n)
{
	return DIV_ROUND_UP(n * t->ebits, SSC_CLASS_STEP * 8) - 1;
}

static inline unsigned int ssc_class_size(unsigned int cls)
{
	return (cls + 1) * SSC_CLASS_STEP;
}

static inline unsigned int ssc_slot(u32 bm, unsigned int b)
{
	return hweight32(bm & (BIT(b) - 1));
}

static inline u32 ssc_next(const struct ssc_tab *t, u32 pos)
{
	return ++pos == t->nbuckets ? 0 : pos;
}

/*
 * Read @n <= 64 bits at bit offset @bit of the little-endian bit string @a.
 * @avail is the size of the object @a points into: a 64-bit load is used
 * where it stays inside it.
 */
static u64 ssc_get_bits(const u8 *a, unsigned int avail, unsigned int bit,
			unsigned int n)
{
	unsigned int off = bit / 8, sh = bit % 8, got = 0;
	u64 v = 0;

	if (off + 8 <= avail) {
		__le64 w;

		memcpy(&w, a + off, sizeof(w));
		v = le64_to_cpu(w) >> sh;
		if (sh + n > 64)
			v |= (u64)a[off + 8] << (64 - sh);
		return v & ssc_mask(n);
	}
	while (got < n) {
		unsigned int take = min(8 - sh, n - got);

		v |= (u64)((a[off] >> sh) & ((1U << take) - 1)) << got;
		got += take;
		sh = 0;
		off++;
	}
	return v;
}

static void ssc_put_bits(u8 *a, unsigned int bit, unsigned int n, u64 v)
{
	unsigned int off = bit / 8, sh = bit % 8;

	while (n) {
		unsigned int take = min(8 - sh, n);
		u8 mask = ((1U << take) - 1) << sh;

		a[off] = (a[off] & ~mask) | ((u8)(v << sh) & mask);
		v >>= take;
		n -= take;
		sh = 0;
		off++;
	}
}

static inline u64 ssc_ent_get(const struct ssc_tab *t, u32 g, unsigned int slot)
{
	return ssc_get_bits(t->grp[g], ssc_class_size(t->cls[g]),
			    slot * t->ebits, t->ebits);
}

static inline void ssc_ent_put(const struct ssc_tab *t, u32 g, unsigned int slot, u64 e)
{
	ssc_put_bits(t->grp[g], slot * t->ebits, t->ebits, e);
}

/* entry of occupied bucket @pos */
static inline u64 ssc_ent_get_pos(const struct ssc_tab *t, u32 pos)
{
	u32 g = pos / SSC_GROUP;

	return ssc_ent_get(t, g, ssc_slot(t->bitmap[g], pos % SSC_GROUP));
}

static inline void ssc_ent_put_pos(const struct ssc_tab *t, u32 pos, u64 e)
{
	u32 g = pos / SSC_GROUP;

	ssc_ent_put(t, g, ssc_slot(t->bitmap[g], pos % SSC_GROUP), e);
}

static inline bool ssc_occupied(const struct ssc_tab *t, u32 pos)
{
	return t->bitmap[pos / SSC_GROUP] & BIT(pos % SSC_GROUP);
}

static inline unsigned int ssc_e_d(u64 e)
{
	return e & SSC_MAX_DISP;
}

static inline u64 ssc_e_rem(const struct ssc_tab *t, u64 e)
{
	return (e >> SSC_DBITS) & ssc_mask(t->rem_bits);
}

static inline u64 ssc_e_val(const struct ssc_smap *m, const struct ssc_tab *t, u64 e)
{
	return (e >> (SSC_DBITS + t->rem_bits)) & ssc_mask(m->val_bits);
}

static inline u64 ssc_e_pack(const struct ssc_tab *t, unsigned int d, u64 rem, u64 val)
{
	return d | rem << SSC_DBITS | val << (SSC_DBITS + t->rem_bits);
}

/* key stored in the entry @e of bucket @pos */
static u64 ssc_e_key(const struct ssc_smap *m, const struct ssc_tab *t, u32 pos, u64 e)
{
	unsigned int d = ssc_e_d(e);
	u32 home = pos >= d ? pos - d : pos + t->nbuckets - d;

	return ssc_unmix(m, ssc_lo(t, home) + ssc_e_rem(t, e));
}

/* a walk over every entry of a table, in bucket order */
struct ssc_cursor {
	u32 g;
	u32 bm;			/* buckets of group g not visited yet */
	unsigned int slot;
};

static void ssc_cursor_init(const struct ssc_tab *t, struct ssc_cursor *c)
{
	c->g = 0;
	c->bm = t->bitmap[0];
	c->slot = 0;
}

/* the next entry of the walk: its bucket, its key and the entry itself */
static bool ssc_next_entry(const struct ssc_smap *m, const struct ssc_tab *t,
			   struct ssc_cursor *c, u32 *pos, u64 *key, u64 *e)
{
	while (!c->bm) {
		if (++c->g == t->ngroups)
			return false;
		c->bm = t->bitmap[c->g];
		c->slot = 0;
	}
	*pos = c->g * SSC_GROUP + __ffs(c->bm);
	*e = ssc_ent_get(t, c->g, c->slot++);
	*key = ssc_e_key(m, t, *pos, *e);
	c->bm &= c->bm - 1;
	return true;
}

/*
 * A group array of size class @cls, zeroed. From the map's reserve when the
 * caller may wait for memory: then it does not fail.
 */
static void *ssc_arr_alloc(struct ssc_smap *m, unsigned int cls, gfp_t gfp)
{
	void *a;

	if (m->reserve && cls < m->reserve->nr_pools && gfpflags_allow_blocking(gfp)) {
		a = mempool_alloc(&m->reserve->pools[cls], gfp);
		memset(a, 0, (cls + 1) * SSC_CLASS_STEP);
		return a;
	}
	if (ssc_fail_alloc())
		return NULL;
	return kmem_cache_zalloc(ssc_smap_caches[cls], gfp);
}

static inline void ssc_arr_free(struct ssc_smap *m, void *a, unsigned int cls)
{
	if (m->reserve && cls < m->reserve->nr_pools)
		mempool_free(a, &m->reserve->pools[cls]);
	else
		kmem_cache_free(ssc_smap_caches[cls], a);
}

/* real size of a kmalloc()ed or vmalloc()ed block of @size bytes at @p */
static size_t ssc_kv_bytes(const void *p, size_t size)
{
	return is_vmalloc_addr(p) ? PAGE_ALIGN(size) : kmalloc_size_roundup(size);
}

static void ssc_hash(const struct ssc_smap *m, u64 key, u32 *home, u64 *rem)
{
	u64 h = ssc_mix(m, key);

	*home = ssc_home(m, &m->t, h);
	*rem = h - ssc_lo(&m->t, *home);
}

static bool ssc_find(const struct ssc_smap *m, u32 home, u64 rem, u32 *posp, u64 *ep)
{
	const struct ssc_tab *t = &m->t;
	unsigned int dist;
	u32 pos = home;

	for (dist = 0; dist <= SSC_MAX_DISP; dist++) {
		u64 e;

		if (!ssc_occupied(t, pos))
			return false;
		e = ssc_ent_get_pos(t, pos);
		if (ssc_e_d(e) < dist)
			return false;
		if (ssc_e_d(e) == dist && ssc_e_rem(t, e) == rem) {
			*posp = pos;
			*ep = e;
			return true;
		}
		pos = ssc_next(t, pos);
	}
	return false;
}

/* --- table generations ------------------------------------------------ */

/* bytes of the per-group arrays of a table of @ngroups groups */
static size_t ssc_tab_size(u32 ngroups)
{
	return (size_t)ngroups * (sizeof(void *) + sizeof(u32) + sizeof(u8));
}

static bool ssc_tab_inline(const struct ssc_smap *m, const struct ssc_tab *t)
{
	return t->bitmap == m->inl_bitmap;
}

/* the per-group arrays are in the caller's memory (ssc_smap_presize_in()) */
static bool ssc_tab_ext(const struct ssc_smap *m, const struct ssc_tab *t)
{
	return m->ext && (void *)t->grp == m->ext;
}

static size_t ssc_tab_bytes(const struct ssc_smap *m, const struct ssc_tab *t)
{
	if (ssc_tab_inline(m, t) || ssc_tab_ext(m, t))
		return 0;
	return ssc_kv_bytes(t->grp, ssc_tab_size(t->ngroups));
}

/*
 * Allocate the per-group arrays of @t, whose parameters are set, as one
 * block: pointers, then bitmaps, then size classes. Big blocks come from
 * vmalloc rather than kvmalloc, whose kmalloc attempt would round them up
 * to a power of two. The caller's memory is used if it is big enough and
 * the current table does not already live in it.
 */
static int ssc_tab_alloc(struct ssc_smap *m, struct ssc_tab *t, gfp_t gfp)
{
	size_t size = ssc_tab_size(t->ngroups);
	void *mem;

	if (t->ngroups == SSC_MIN_GROUPS) {
		memset(m->inl_bitmap, 0, sizeof(m->inl_bitmap));
		memset(m->inl_grp, 0, sizeof(m->inl_grp));
		memset(m->inl_cls, 0, sizeof(m->inl_cls));
		t->bitmap = m->inl_bitmap;
		t->grp = m->inl_grp;
		t->cls = m->inl_cls;
		return 0;
	}
	if (ssc_fail_alloc())
		return -ENOMEM;
	if (m->ext && size <= m->ext_size && !ssc_tab_ext(m, &m->t)) {
		mem = m->ext;
		memset(mem, 0, size);
	} else if (size <= PAGE_SIZE) {
		mem = kzalloc(size, gfp);
	} else {
		mem = __vmalloc(size, gfp | __GFP_ZERO);
	}
	if (!mem)
		return -ENOMEM;
	t->grp = mem;
	t->bitmap = (u32 *)(t->grp + t->ngroups);
	t->cls = (u8 *)(t->bitmap + t->ngroups);
	return 0;
}

/* free @t's packed arrays and per-group arrays; returns the bytes freed */
static size_t ssc_tab_free(struct ssc_smap *m, struct ssc_tab *t)
{
	size_t bytes = ssc_tab_bytes(m, t);
	u32 g;

	for (g = 0; g < t->ngroups; g++) {
		if (t->grp[g]) {
			bytes += ssc_class_size(t->cls[g]);
			ssc_arr_free(m, t->grp[g], t->cls[g]);
		}
	}
	if (!ssc_tab_inline(m, t) && !ssc_tab_ext(m, t))
		kvfree(t->grp);
	return bytes;
}

/*
 * Lay out, in a table of @nt->nbuckets buckets, the @cnt[b] keys whose home
 * is b: Robin Hood order is home order, so each home's keys are placed
 * together at the first free bucket at or after the home. Sets @nt's
 * bitmaps and @off[b], the displacement of the first key of home b.
 */
static int ssc_layout(struct ssc_tab *nt, const u8 *cnt, u8 *off)
{
	u32 nb = nt->nbuckets, b, carry = 0, next;
	u64 nf;

	/* keys wrapping past the end take buckets [0, carry): find carry */
	for (;;) {
		nf = carry;
		for (b = 0; b < nb; b++)
			if (cnt[b])
				nf = max_t(u64, nf, b) + cnt[b];
		next = nf > nb ? nf - nb : 0;
		if (next == carry)
			break;
		if (next >= nb)
			return -ENOSPC;
		carry = next;
	}
	nf = carry;
	for (b = 0; b < nb; b++) {
		u64 start, p;

		if (!cnt[b])
			continue;
		start = max_t(u64, nf, b);
		if (start - b + cnt[b] > SSC_MAX_DISP + 1)
			return -ENOSPC;
		off[b] = start - b;
		nf = start + cnt[b];
		for (p = start; p < nf; p++) {
			u32 pos = p >= nb ? p - nb : p;

			nt->bitmap[pos / SSC_GROUP] |= BIT(pos % SSC_GROUP);
		}
	}
	return 0;
}

/*
 * Move every entry into a new table of @nbuckets buckets. All memory is
 * allocated first: on failure (-ENOMEM, or -ENOSPC if some displacement
 * would not fit) the map is unchanged.
 */
static int ssc_rehash(struct ssc_smap *m, u32 nbuckets, gfp_t gfp)
{
	struct ssc_tab *ot = &m->t, nt, old;
	struct ssc_cursor c;
	size_t new_bytes;
	u8 *cnt, *off;
	u32 pos, ng;
	u64 key, e;
	int ret;

	ssc_tab_params(m, &nt, nbuckets);
	if (ssc_tab_inline(m, ot) && nt.ngroups == SSC_MIN_GROUPS)
		return 0;
	cnt = ssc_fail_alloc() ? NULL : kvzalloc(2 * (size_t)nbuckets, gfp);
	if (!cnt)
		return -ENOMEM;
	off = cnt + nbuckets;
	ret = ssc_tab_alloc(m, &nt, gfp);
	if (ret)
		goto out;

	/* count the keys of each new home */
	ssc_cursor_init(ot, &c);
	while (ssc_next_entry(m, ot, &c, &pos, &key, &e)) {
		u32 home = ssc_home(m, &nt, ssc_mix(m, key));

		if (cnt[home] > SSC_MAX_DISP) {
			ret = -ENOSPC;
			goto out_tab;
		}
		cnt[home]++;
	}
	ret = ssc_layout(&nt, cnt, off);
	if (ret)
		goto out_tab;

	/* allocate the packed arrays */
	new_bytes = ssc_tab_bytes(m, &nt);
	for (ng = 0; ng < nt.ngroups; ng++) {
		unsigned int n = hweight32(nt.bitmap[ng]);

		if (!n)
			continue;
		nt.cls[ng] = ssc_class(&nt, n);
		nt.grp[ng] = ssc_arr_alloc(m, nt.cls[ng], gfp);
		if (!nt.grp[ng]) {
			ret = -ENOMEM;
			goto out_tab;
		}
		new_bytes += ssc_class_size(nt.cls[ng]);
	}

	/* fill them: a home's keys go to its buckets in any order */
	ssc_cursor_init(ot, &c);
	while (ssc_next_entry(m, ot, &c, &pos, &key, &e)) {
		u64 h = ssc_mix(m, key);
		u32 home = ssc_home(m, &nt, h);
		unsigned int d = off[home] + --cnt[home];
		u64 np = (u64)home + d;

		if (np >= nbuckets)
			np -= nbuckets;
		ssc_ent_put_pos(&nt, np, ssc_e_pack(&nt, d, h - ssc_lo(&nt, home),
						    ssc_e_val(m, ot, e)));
	}

	old = *ot;
	ssc_wlock(m);
	m->t = nt;
	ssc_wunlock(m);
	m->bytes -= ssc_tab_free(m, &old);
	m->bytes += new_bytes;
	m->rehashes++;
	kvfree(cnt);
	return 0;

out_tab:
	ssc_tab_free(m, &nt);
out:
	kvfree(cnt);
	return ret;
}

static u32 ssc_grow_size(u32 nb)
{
	u64 n = round_up((u64)nb + nb / 2, SSC_GROUP);

	return min_t(u64, n, SSC_MAX_BUCKETS);
}

static int ssc_grow(struct ssc_smap *m, gfp_t gfp)
{
	u32 nb = m->t.nbuckets;
	int ret;

	do {
		if (nb >= SSC_MAX_BUCKETS)
			return -ENOMEM;
		nb = ssc_grow_size(nb);
		ret = ssc_rehash(m, nb, gfp);
	} while (ret == -ENOSPC);
	return ret;
}

static void ssc_maybe_shrink(struct ssc_smap *m, gfp_t gfp)
{
	u32 nb = m->t.nbuckets;
	u64 target;

	if (nb <= max(SSC_MIN_BUCKETS, m->min_buckets) || m->count * 5 >= nb)
		return;
	/* to a load of about 0.5; keep the bigger table on any failure */
	target = max_t(u64, round_up(m->count * 2, SSC_GROUP),
		       max(SSC_MIN_BUCKETS, m->min_buckets));
	if (target < nb)
		ssc_rehash(m, target, gfp | __GFP_NOWARN);
}

struct ssc_smap *ssc_smap_create(unsigned int key_bits, unsigned int val_bits, gfp_t gfp)
{
	struct ssc_smap *m;

	if (WARN_ON_ONCE(!READ_ONCE(ssc_smap_users)))
		return NULL;
	if (!key_bits || key_bits > SSC_MAX_KEY_BITS || !val_bits || val_bits >= 64)
		return NULL;
	m = kzalloc(sizeof(*m), gfp);
	if (!m)
		return NULL;
	m->key_bits = key_bits;
	m->val_bits = val_bits;
	m->hb = key_bits + 1;
	m->hshift = DIV_ROUND_UP(m->hb, 2);
	m->hmask = ssc_mask(m->hb);
	m->inv1 = ssc_inverse(SSC_MIX1);
	m->inv2 = ssc_inverse(SSC_MIX2);
	/* the smallest table has the widest entries */
	ssc_tab_params(m, &m->t, SSC_MIN_BUCKETS);
	if (m->t.ebits > 64) {
		kfree(m);
		return NULL;
	}
	/* a minimum-size table lives inside *m: this allocates nothing */
	WARN_ON_ONCE(ssc_tab_alloc(m, &m->t, gfp));
	m->bytes = kmalloc_size_roundup(sizeof(*m));
	return m;
}

/* buckets for @entries at a load of at most 0.8 */
static u32 ssc_presize_buckets(u64 entries)
{
	u64 nb = round_up(DIV_ROUND_UP_ULL(entries * 5, 4) + 1, SSC_GROUP);

	return min_t(u64, nb, SSC_MAX_BUCKETS);
}

size_t ssc_smap_presize_bytes(u64 entries)
{
	u32 nb = ssc_presize_buckets(entries);

	if (nb <= SSC_MIN_BUCKETS)
		return 0;	/* inside struct ssc_smap */
	return round_up(ssc_tab_size(nb / SSC_GROUP), sizeof(void *));
}

int ssc_smap_presize_in(struct ssc_smap *m, u64 entries, void *mem, gfp_t gfp)
{
	int ret;

	if (m->ext || !ssc_tab_inline(m, &m->t))
		return -EBUSY;	/* lent once, to a map not presized before */
	if (mem && ssc_smap_presize_bytes(entries)) {
		m->ext = mem;
		m->ext_size = ssc_smap_presize_bytes(entries);
	}
	ret = ssc_smap_presize(m, entries, gfp);
	if (ret && !ssc_tab_ext(m, &m->t)) {
		m->ext = NULL;	/* the caller may free it */
		m->ext_size = 0;
	}
	return ret;
}

int ssc_smap_presize(struct ssc_smap *m, u64 entries, gfp_t gfp)
{
	u32 nb = ssc_presize_buckets(entries);
	int ret = 0;

	if (nb > m->t.nbuckets) {
		ret = ssc_rehash(m, nb, gfp);
		if (ret == -ENOSPC)
			ret = ssc_grow(m, gfp);
		if (ret)
			return ret;
	}
	m->min_buckets = m->t.nbuckets;
	m->rehashes = 0;
	return 0;
}

void ssc_smap_set_lock(struct ssc_smap *m, rwlock_t *lock)
{
	m->lock = lock;
}

struct ssc_smap_reserve *ssc_smap_reserve_create(unsigned int min_nr,
						 unsigned int key_bits, unsigned int val_bits)
{
	struct ssc_smap_reserve *r = kzalloc(sizeof(*r), GFP_KERNEL);
	/* an entry: displacement, at most hb = key_bits + 1 bits of hash, value */
	unsigned int ebits = min(SSC_DBITS + key_bits + 1 + val_bits, 64U);
	unsigned int i;

	if (!r)
		return NULL;
	r->min_nr = min_nr;
	r->nr_pools = DIV_ROUND_UP(SSC_GROUP * ebits, SSC_CLASS_STEP * 8);
	for (i = 0; i < r->nr_pools; i++) {
		if (mempool_init_slab_pool(&r->pools[i], min_nr, ssc_smap_caches[i])) {
			while (i--)
				mempool_exit(&r->pools[i]);
			kfree(r);
			return NULL;
		}
	}
	return r;
}

void ssc_smap_reserve_destroy(struct ssc_smap_reserve *r)
{
	unsigned int i;

	if (!r)
		return;
	for (i = 0; i < r->nr_pools; i++)
		mempool_exit(&r->pools[i]);
	kfree(r);
}

size_t ssc_smap_reserve_bytes(const struct ssc_smap_reserve *r)
{
	size_t n = kmalloc_size_roundup(sizeof(*r));
	unsigned int i;

	for (i = 0; i < r->nr_pools; i++)
		n += (size_t)r->min_nr * (i + 1) * SSC_CLASS_STEP +
			kmalloc_size_roundup(r->min_nr * sizeof(void *));
	return n;
}

void ssc_smap_set_reserve(struct ssc_smap *m, struct ssc_smap_reserve *r)
{
	m->reserve = r;
}

u64 ssc_smap_rehashes(const struct ssc_smap *m)
{
	return m->rehashes;
}

void ssc_smap_destroy(struct ssc_smap *m)
{
	if (!m)
		return;
	/* the running count must match what is actually freed */
	WARN_ON_ONCE(ssc_tab_free(m, &m->t) + kmalloc_size_roundup(sizeof(*m)) != m->bytes);
	kfree(m);
}

/*
 * Insert a key known to be absent. -ENOSPC: no room within the maximum
 * displacement, the table must grow. -ENOMEM: nothing was changed.
 */
static int ssc_try_insert(struct ssc_smap *m, u32 home, u64 rem, u64 val, gfp_t gfp)
{
	struct ssc_tab *t = &m->t;
	unsigned int dist = 0, b, slot, n, cls, old_cls = 0;
	u32 pos = home, p, g;
	void *arr = NULL, *old_arr = NULL;
	u64 carry;

	/* find where the key goes: the first bucket holding a richer entry */
	while (ssc_occupied(t, pos) && ssc_e_d(ssc_ent_get_pos(t, pos)) >= dist) {
		if (++dist > SSC_MAX_DISP)
			return -ENOSPC;
		pos = ssc_next(t, pos);
	}
	p = pos;
	/* then the empty bucket ending the run; each entry moves up by one */
	while (ssc_occupied(t, pos)) {
		if (ssc_e_d(ssc_ent_get_pos(t, pos)) == SSC_MAX_DISP)
			return -ENOSPC;
		pos = ssc_next(t, pos);
		if (pos == p)
			return -ENOSPC;
	}
	g = pos / SSC_GROUP;
	b = pos % SSC_GROUP;
	n = hweight32(t->bitmap[g]);
	cls = ssc_class(t, n + 1);
	if (!n || cls > t->cls[g]) {
		arr = ssc_arr_alloc(m, cls, gfp);
		if (!arr)
			return -ENOMEM;
	}

	/* no failure from here on */
	ssc_wlock(m);
	carry = ssc_e_pack(t, dist, rem, val);
	for (; p != pos; p = ssc_next(t, p)) {
		u64 e = ssc_ent_get_pos(t, p);

		ssc_ent_put_pos(t, p, carry);
		carry = e + 1;		/* one more bucket from home */
	}
	slot = ssc_slot(t->bitmap[g], b);
	if (arr) {
		unsigned int i;
		u8 *a = arr;

		for (i = 0; i < n; i++)
			ssc_put_bits(a, (i + (i >= slot)) * t->ebits, t->ebits,
				     ssc_ent_get(t, g, i));
		old_arr = t->grp[g];
		old_cls = t->cls[g];
		t->grp[g] = arr;
		t->cls[g] = cls;
	} else {
		unsigned int i;

		for (i = n; i > slot; i--)
			ssc_ent_put(t, g, i, ssc_ent_get(t, g, i - 1));
	}
	ssc_ent_put(t, g, slot, carry);
	t->bitmap[g] |= BIT(b);
	ssc_wunlock(m);
	if (arr) {
		if (old_arr) {
			ssc_arr_free(m, old_arr, old_cls);
			m->bytes -= ssc_class_size(old_cls);
		}
		m->bytes += ssc_class_size(cls);
	}
	m->count++;
	return 0;
}

int ssc_smap_insert(struct ssc_smap *m, u64 key, u64 val, gfp_t gfp)
{
	u32 home, pos;
	u64 rem, e;
	int ret;

	if (key >> m->key_bits || val & ~ssc_mask(m->val_bits))
		return -EINVAL;
	ssc_hash(m, key, &home, &rem);
	if (ssc_find(m, home, rem, &pos, &e)) {
		ssc_wlock(m);
		ssc_ent_put_pos(&m->t, pos, ssc_e_pack(&m->t, ssc_e_d(e), rem, val));
		ssc_wunlock(m);
		return 0;
	}
	for (;;) {
		/* keep the load at most 0.8 */
		if ((m->count + 1) * 5 <= (u64)m->t.nbuckets * 4 ||
		    m->t.nbuckets >= SSC_MAX_BUCKETS) {
			ret = ssc_try_insert(m, home, rem, val, gfp);
			if (ret != -ENOSPC)
				return ret;
		}
		ret = ssc_grow(m, gfp);
		if (ret)
			return ret;
		ssc_hash(m, key, &home, &rem);
	}
}

/* find @key: its bucket in @pos and its entry in @e */
static bool ssc_locate(const struct ssc_smap *m, u64 key, u32 *pos, u64 *e)
{
	u32 home;
	u64 rem;

	if (key >> m->key_bits)
		return false;
	ssc_hash(m, key, &home, &rem);
	return ssc_find(m, home, rem, pos, e);
}

bool ssc_smap_lookup(const struct ssc_smap *m, u64 key, u64 *val)
{
	u32 pos;
	u64 e;

	if (!ssc_locate(m, key, &pos, &e))
		return false;
	if (val)
		*val = ssc_e_val(m, &m->t, e);
	return true;
}

/*
 * Drop bucket @pos from its group, into @arr if given (a smaller array for
 * the entries left) or compacting in place. Called under the lock; returns
 * the array to free after it, whose class is in @old_cls.
 */
static void *ssc_clear_bucket(struct ssc_smap *m, u32 pos, u8 *arr,
			      unsigned int cls, unsigned int *old_cls)
{
	struct ssc_tab *t = &m->t;
	u32 g = pos / SSC_GROUP;
	unsigned int b = pos % SSC_GROUP, slot = ssc_slot(t->bitmap[g], b);
	unsigned int n = hweight32(t->bitmap[g]), i;
	void *old = t->grp[g];

	*old_cls = t->cls[g];
	t->bitmap[g] &= ~BIT(b);
	if (n == 1) {
		t->grp[g] = NULL;
		t->cls[g] = 0;
		return old;
	}
	if (!arr) {
		for (i = slot; i < n - 1; i++)
			ssc_ent_put(t, g, i, ssc_ent_get(t, g, i + 1));
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (i != slot)
			ssc_put_bits(arr, (i - (i > slot)) * t->ebits, t->ebits,
				     ssc_ent_get(t, g, i));
	t->grp[g] = arr;
	t->cls[g] = cls;
	return old;
}

bool ssc_smap_remove(struct ssc_smap *m, u64 key, u64 *old_val, gfp_t gfp)
{
	struct ssc_tab *t = &m->t;
	unsigned int n, cls = 0, old_cls;
	u32 pos, next, last, g;
	u8 *arr = NULL;
	void *old;
	u64 e;

	if (!ssc_locate(m, key, &pos, &e))
		return false;
	if (old_val)
		*old_val = ssc_e_val(m, t, e);
	/* the bucket that ends up empty: the last of the displaced run */
	for (last = pos; ; last = next) {
		next = ssc_next(t, last);
		if (!ssc_occupied(t, next) || !ssc_e_d(ssc_ent_get_pos(t, next)))
			break;
	}
	/* give memory back if a smaller array can be had; else compact */
	g = last / SSC_GROUP;
	n = hweight32(t->bitmap[g]);
	if (n > 1) {
		cls = ssc_class(t, n - 1);
		if (cls < t->cls[g])
			/* optional: never from the reserve, never waiting */
			arr = ssc_arr_alloc(m, cls, (gfp & ~__GFP_DIRECT_RECLAIM) |
					    __GFP_NOWARN);
	}

	ssc_wlock(m);
	/* backward shift: pull the following displaced entries one closer */
	for (; pos != last; pos = next) {
		next = ssc_next(t, pos);
		ssc_ent_put_pos(t, pos, ssc_ent_get_pos(t, next) - 1);
	}
	old = ssc_clear_bucket(m, pos, arr, cls, &old_cls);
	ssc_wunlock(m);
	if (old) {
		ssc_arr_free(m, old, old_cls);
		m->bytes -= ssc_class_size(old_cls);
	}
	if (arr)
		m->bytes += ssc_class_size(cls);
	m->count--;
	ssc_maybe_shrink(m, gfp);
	return true;
}

u64 ssc_smap_count(const struct ssc_smap *m)
{
	return m->count;
}

size_t ssc_smap_bytes(const struct ssc_smap *m)
{
	return m->bytes;
}

/* walk a range by looking each key up when that is cheaper than a scan */
static bool ssc_range_by_lookup(const struct ssc_smap *m, u64 lo, u64 hi)
{
	return hi - lo <= m->t.nbuckets / 4;
}

int ssc_smap_visit_range(const struct ssc_smap *m, u64 lo, u64 hi,
			 int (*fn)(void *ctx, u64 key, u64 val), void *ctx)
{
	const struct ssc_tab *t = &m->t;
	struct ssc_cursor c;
	u64 key, val, e;
	u32 pos;
	int ret;

	hi = min(hi, 1ULL << m->key_bits);
	if (lo >= hi)
		return 0;
	if (ssc_range_by_lookup(m, lo, hi)) {
		for (key = lo; key < hi; key++) {
			if (ssc_smap_lookup(m, key, &val)) {
				ret = fn(ctx, key, val);
				if (ret)
					return ret;
			}
		}
		return 0;
	}
	ssc_cursor_init(t, &c);
	while (ssc_next_entry(m, t, &c, &pos, &key, &e)) {
		if (key < lo || key >= hi)
			continue;
		ret = fn(ctx, key, ssc_e_val(m, t, e));
		if (ret)
			return ret;
	}
	return 0;
}

#if IS_ENABLED(CONFIG_DM_SSC_KUNIT_TEST)
#include "ssc-smap-test.c"
#endif
