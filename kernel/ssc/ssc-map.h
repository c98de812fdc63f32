/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The engine's block map: origin block -> packed value, split into shards,
 * each a sparse map (ssc-smap.h) under its own reader-writer spinlock.
 *
 * Locking: changes (insert, remove) and walks are serialized by the caller
 * (the engine's e->lock). A change takes its shard's lock for writing only while
 * it becomes visible. Lookups from the I/O path take no other lock: they
 * hold the shard's lock for reading (ssc_map_lock()), so they never wait for
 * each other, across the lookup and whatever
 * must happen before the entry can change (pinning its slot).
 */
#ifndef SSC_MAP_H
#define SSC_MAP_H

#include <linux/types.h>
#include <linux/gfp.h>
#include <linux/spinlock.h>

struct ssc_smap;

struct ssc_map_shard {
	rwlock_t lock;		/* read: lookups; write: changes while visible */
	struct ssc_smap *m;
} ____cacheline_aligned_in_smp;

struct ssc_map {
	unsigned int key_bits;		/* keys are < 2^key_bits */
	unsigned int shard_bits;	/* 2^shard_bits shards */
	u64 mask;			/* 2^key_bits - 1 */
	unsigned int shift;		/* of the mix's xor-shifts: (key_bits + 1) / 2 */
	u64 mult[3], inv[3];		/* the mix's random odd multipliers, inverses */
	struct ssc_smap_reserve *reserve;	/* group arrays for inserts */
	void *tabs;			/* the shards' presized tables */
	size_t tabs_bytes;		/* its real size */
	struct ssc_map_shard shards[];
};

struct ssc_map *ssc_map_create(unsigned int key_bits, unsigned int val_bits,
			       u64 entries, unsigned int shards, gfp_t gfp);
void ssc_map_destroy(struct ssc_map *map);

/* Writer side: the caller serializes these (and may sleep in them) */
bool ssc_map_lookup(const struct ssc_map *map, u64 key, u64 *val);
int ssc_map_insert(struct ssc_map *map, u64 key, u64 val, gfp_t gfp);
bool ssc_map_remove(struct ssc_map *map, u64 key, u64 *old_val, gfp_t gfp);
int ssc_map_visit_range(const struct ssc_map *map, u64 lo, u64 hi,
			int (*fn)(void *ctx, u64 key, u64 val), void *ctx);
int ssc_map_visit_shard(const struct ssc_map *map, unsigned int i, u64 lo, u64 hi,
			int (*fn)(void *ctx, u64 key, u64 val), void *ctx);
unsigned int ssc_map_shard_of(const struct ssc_map *map, u64 key);
u64 ssc_map_count(const struct ssc_map *map);
size_t ssc_map_bytes(const struct ssc_map *map);
u64 ssc_map_rehashes(const struct ssc_map *map);

static inline unsigned int ssc_map_nr_shards(const struct ssc_map *map)
{
	return 1U << map->shard_bits;
}

/* Reader side: process context (writers take the shard locks without irqsave) */
struct ssc_map_shard *ssc_map_lock(struct ssc_map *map, u64 key, u64 *skey)
	__acquires(&map->shards[0].lock);
bool ssc_map_lookup_locked(struct ssc_map_shard *sh, u64 skey, u64 *val);

static inline void ssc_map_unlock(struct ssc_map_shard *sh)
	__releases(&sh->lock)
{
	read_unlock(&sh->lock);
}

#endif /* SSC_MAP_H */
