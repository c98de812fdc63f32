// SPDX-License-Identifier: GPL-2.0
/*
 * The engine's block map, sharded: see ssc-map.h for the locking rules.
 *
 * A key is mixed by a bijection of [0, 2^key_bits): multiply by a random odd
 * number and xor the high half into the low, twice, then multiply once
 * more, all modulo 2^key_bits; the inverses undo it step by step. The top
 * shard_bits bits of the mix pick the shard and the rest is the key within
 * the shard, so a shard's entries are no wider than those of one map
 * holding every key. One multiplication alone is linear: the keys of a
 * lattice (every 2^k-th block) keep their trailing zeros and fill few
 * shards whenever the multiplier is close to a fraction of small
 * denominator, about one map in a hundred for such a pattern. The
 * xor-shifts break the lattice: sequential, strided and lattice sets
 * spread as random keys would (ssc_map_test_balance draws 16 sets of
 * multipliers and tries a first multiplier of 1). The multipliers are
 * drawn per map, so no access pattern can pile the blocks it caches into
 * one shard; each shard is presized for its share of the entries plus six
 * standard deviations and does not grow while serving I/O.
 */

#include <linux/kernel.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "ssc-map.h"
#include "ssc-smap.h"

static u64 ssc_map_inverse(u64 a)
{
	u64 x = a;	/* correct to 3 bits: a * a == 1 mod 8 */
	int i;

	for (i = 0; i < 5; i++)
		x *= 2 - a * x;
	return x;
}

static inline unsigned int ssc_map_skey_bits(const struct ssc_map *map)
{
	return map->key_bits - map->shard_bits;
}

static inline u64 ssc_map_mix(const struct ssc_map *map, u64 key)
{
	u64 x = (key * map->mult[0]) & map->mask;

	x ^= x >> map->shift;
	x = (x * map->mult[1]) & map->mask;
	x ^= x >> map->shift;
	return (x * map->mult[2]) & map->mask;
}

/* 2 * shift >= key_bits: each xor-shift is its own inverse */
static inline u64 ssc_map_unmix(const struct ssc_map *map, u64 x)
{
	x = (x * map->inv[2]) & map->mask;
	x ^= x >> map->shift;
	x = (x * map->inv[1]) & map->mask;
	x ^= x >> map->shift;
	return (x * map->inv[0]) & map->mask;
}

static inline struct ssc_map_shard *ssc_map_shard(const struct ssc_map *map,
						  u64 key, u64 *skey)
{
	unsigned int kb = ssc_map_skey_bits(map);
	u64 x;

	if (unlikely(key & ~map->mask)) {
		*skey = 1ULL << kb;	/* out of range: found nowhere */
		return (struct ssc_map_shard *)&map->shards[0];
	}
	x = ssc_map_mix(map, key);
	*skey = x & ((1ULL << kb) - 1);
	return (struct ssc_map_shard *)&map->shards[x >> kb];
}

/**
 * ssc_map_create() - an empty map, presized for its largest count
 * @key_bits: width of the keys, 1..48
 * @val_bits: width of the values (see ssc_smap_create())
 * @entries: the most entries the map will hold
 * @shards: how many shards are wanted; rounded up to a power of two and
 *	kept below 2^@key_bits
 * @gfp: allocation flags
 *
 * Return: the map, or NULL.
 */
struct ssc_map *ssc_map_create(unsigned int key_bits, unsigned int val_bits,
			       u64 entries, unsigned int shards, gfp_t gfp)
{
	unsigned int sb = 0, i, n;
	struct ssc_map *map;
	u64 per, mean;
	size_t tab;

	if (!key_bits || key_bits > 48)
		return NULL;
	if (shards > 1)
		sb = min_t(unsigned int, order_base_2(shards), key_bits - 1);
	n = 1U << sb;
	map = kzalloc(struct_size(map, shards, n), gfp);
	if (!map)
		return NULL;
	map->key_bits = key_bits;
	map->shard_bits = sb;
	map->mask = (1ULL << key_bits) - 1;
	map->shift = (key_bits + 1) / 2;
	for (i = 0; i < ARRAY_SIZE(map->mult); i++) {
		map->mult[i] = get_random_u64() | 1;
		map->inv[i] = ssc_map_inverse(map->mult[i]);
	}
	/*
	 * Changes are serialized by the caller, one array at a time: a
	 * reserve of two per size for all the shards lets every insert made
	 * with GFP_NOIO succeed, waiting for memory if it must
	 */
	map->reserve = ssc_smap_reserve_create(2, key_bits - sb, val_bits);
	if (!map->reserve) {
		kfree(map);
		return NULL;
	}

	mean = entries >> sb;
	per = min(entries, mean + 6 * int_sqrt64(mean) + 64);
	/*
	 * The shards' tables in one block: each of its own would be rounded
	 * up to whole pages, half a byte per entry of a 256 MiB cache
	 */
	tab = ssc_smap_presize_bytes(per);
	if (tab) {
		size_t size = tab * n;

		/* each shard zeroes its part */
		if (size <= PAGE_SIZE) {
			map->tabs = kmalloc(size, gfp);
			map->tabs_bytes = kmalloc_size_roundup(size);
		} else {
			map->tabs = __vmalloc(size, gfp);
			map->tabs_bytes = PAGE_ALIGN(size);
		}
		if (!map->tabs) {
			ssc_map_destroy(map);
			return NULL;
		}
	}
	for (i = 0; i < n; i++) {
		struct ssc_map_shard *sh = &map->shards[i];

		rwlock_init(&sh->lock);
		sh->m = ssc_smap_create(key_bits - sb, val_bits, gfp);
		if (!sh->m || ssc_smap_presize_in(sh->m, per,
						  map->tabs ? map->tabs + i * tab : NULL, gfp)) {
			ssc_map_destroy(map);
			return NULL;
		}
		ssc_smap_set_lock(sh->m, &sh->lock);
		ssc_smap_set_reserve(sh->m, map->reserve);
	}
	return map;
}

void ssc_map_destroy(struct ssc_map *map)
{
	unsigned int i;

	if (!map)
		return;
	for (i = 0; i < (1U << map->shard_bits); i++)
		ssc_smap_destroy(map->shards[i].m);
	kvfree(map->tabs);	/* after the shards that use it */
	ssc_smap_reserve_destroy(map->reserve);
	kfree(map);
}

/* The shard of @key, below ssc_map_nr_shards() */
unsigned int ssc_map_shard_of(const struct ssc_map *map, u64 key)
{
	u64 sk;

	return ssc_map_shard(map, key, &sk) - map->shards;
}

bool ssc_map_lookup(const struct ssc_map *map, u64 key, u64 *val)
{
	struct ssc_map_shard *sh;
	u64 sk;

	sh = ssc_map_shard(map, key, &sk);
	return ssc_smap_lookup(sh->m, sk, val);
}

int ssc_map_insert(struct ssc_map *map, u64 key, u64 val, gfp_t gfp)
{
	struct ssc_map_shard *sh;
	u64 sk;

	if (key & ~map->mask)
		return -EINVAL;
	sh = ssc_map_shard(map, key, &sk);
	return ssc_smap_insert(sh->m, sk, val, gfp);
}

bool ssc_map_remove(struct ssc_map *map, u64 key, u64 *old_val, gfp_t gfp)
{
	struct ssc_map_shard *sh;
	u64 sk;

	sh = ssc_map_shard(map, key, &sk);
	return ssc_smap_remove(sh->m, sk, old_val, gfp);
}

/**
 * ssc_map_lock() - lock the shard of a key for a lookup from the I/O path
 * @map: the map
 * @key: the key
 * @skey: receives the key within the shard, for ssc_map_lookup_locked()
 *
 * Return: the shard, locked; release it with ssc_map_unlock().
 */
struct ssc_map_shard *ssc_map_lock(struct ssc_map *map, u64 key, u64 *skey)
	__acquires(&map->shards[0].lock)
{
	struct ssc_map_shard *sh = ssc_map_shard(map, key, skey);

	read_lock(&sh->lock);
	return sh;
}

bool ssc_map_lookup_locked(struct ssc_map_shard *sh, u64 skey, u64 *val)
{
	lockdep_assert_held(&sh->lock);
	return ssc_smap_lookup(sh->m, skey, val);
}

struct ssc_map_visit {
	const struct ssc_map *map;
	u64 top;		/* shard number << key bits within a shard */
	u64 lo, hi;
	int (*fn)(void *ctx, u64 key, u64 val);
	void *ctx;
};

static int ssc_map_visit_one(void *ctx, u64 skey, u64 val)
{
	struct ssc_map_visit *v = ctx;
	u64 key = ssc_map_unmix(v->map, v->top | skey);

	if (key < v->lo || key >= v->hi)
		return 0;
	return v->fn(v->ctx, key, val);
}

/**
 * ssc_map_visit_range() - visit the entries whose keys are in [@lo, @hi)
 * @map: the map
 * @lo: first key
 * @hi: end of the range (exclusive)
 * @fn: called for each entry; must not change the map. Non-zero stops.
 * @ctx: passed to @fn
 *
 * A small range is walked key by key in increasing order; a big one shard
 * by shard, in no particular order. Serialized with changes by the caller.
 *
 * Return: 0, or the first non-zero value returned by @fn.
 */
int ssc_map_visit_range(const struct ssc_map *map, u64 lo, u64 hi,
			int (*fn)(void *ctx, u64 key, u64 val), void *ctx)
{
	unsigned int i;
	u64 key, val;
	int r;

	hi = min(hi, map->mask + 1);
	if (lo >= hi)
		return 0;
	/* a lookup costs about what scanning a few buckets does */
	if (hi - lo <= ssc_map_count(map) / 4 + 64) {
		for (key = lo; key < hi; key++) {
			if (!ssc_map_lookup(map, key, &val))
				continue;
			r = fn(ctx, key, val);
			if (r)
				return r;
		}
		return 0;
	}
	for (i = 0; i < ssc_map_nr_shards(map); i++) {
		r = ssc_map_visit_shard(map, i, lo, hi, fn, ctx);
		if (r)
			return r;
	}
	return 0;
}

/**
 * ssc_map_visit_shard() - visit the entries of one shard whose keys are in
 *	[@lo, @hi), in no particular order
 * @map: the map
 * @i: the shard, below ssc_map_nr_shards()
 * @lo: first key
 * @hi: end of the range (exclusive)
 * @fn: as for ssc_map_visit_range()
 * @ctx: passed to @fn
 *
 * Serialized with changes by the caller: a walk of the whole map may drop
 * its lock between shards.
 *
 * Return: 0, or the first non-zero value returned by @fn.
 */
int ssc_map_visit_shard(const struct ssc_map *map, unsigned int i, u64 lo, u64 hi,
			int (*fn)(void *ctx, u64 key, u64 val), void *ctx)
{
	struct ssc_map_visit v = { .map = map, .fn = fn, .ctx = ctx, .lo = lo, .hi = hi };
	unsigned int kb = ssc_map_skey_bits(map);

	v.top = (u64)i << kb;
	return ssc_smap_visit_range(map->shards[i].m, 0, 1ULL << kb,
				    ssc_map_visit_one, &v);
}

u64 ssc_map_count(const struct ssc_map *map)
{
	u64 n = 0;
	unsigned int i;

	for (i = 0; i < (1U << map->shard_bits); i++)
		n += ssc_smap_count(map->shards[i].m);
	return n;
}

size_t ssc_map_bytes(const struct ssc_map *map)
{
	size_t n = kmalloc_size_roundup(struct_size(map, shards, 1U << map->shard_bits)) +
		ssc_smap_reserve_bytes(map->reserve) + map->tabs_bytes;
	unsigned int i;

	for (i = 0; i < (1U << map->shard_bits); i++)
		n += ssc_smap_bytes(map->shards[i].m);
	return n;
}

u64 ssc_map_rehashes(const struct ssc_map *map)
{
	u64 n = 0;
	unsigned int i;

	for (i = 0; i < (1U << map->shard_bits); i++)
		n += ssc_smap_rehashes(map->shards[i].m);
	return n;
}

#if IS_ENABLED(CONFIG_DM_SSC_KUNIT_TEST)
#include "ssc-map-test.c"
#endif
