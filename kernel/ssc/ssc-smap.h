/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sparse hash map for dm-ssc: origin block number -> packed flash location.
 *
 * The map is a Robin Hood, linear probing hash table whose buckets are
 * grouped 32 at a time; each group stores only its occupied entries, packed
 * bit by bit. See ssc-smap.c for the layout.
 *
 * The caller serializes all calls that change a map. Lookups may run
 * concurrently with them under a reader-writer lock given by
 * ssc_smap_set_lock(), held for reading.
 */
#ifndef SSC_SMAP_H
#define SSC_SMAP_H

#include <linux/types.h>
#include <linux/gfp.h>
#include <linux/spinlock_types.h>

struct ssc_smap;
struct ssc_smap_reserve;

/**
 * ssc_smap_global_init() - create the module-wide slab caches of the map
 *
 * Must be called (once per user; calls are counted) before any map is
 * created, normally from module_init.
 *
 * Return: 0 or -ENOMEM.
 */
int ssc_smap_global_init(void);

/**
 * ssc_smap_global_exit() - drop a reference taken by ssc_smap_global_init()
 *
 * The slab caches are destroyed when the last user goes away. Every map must
 * have been destroyed by then.
 */
void ssc_smap_global_exit(void);

/**
 * ssc_smap_create() - allocate an empty map
 * @key_bits: width of the keys, 1..48; keys are < 2^@key_bits
 * @val_bits: width of the values, at least 1; values are < 2^@val_bits.
 *	max(@key_bits, 5) + @val_bits must not exceed 64.
 * @gfp: allocation flags
 *
 * Return: the new map, or NULL if the widths are out of range or memory
 * could not be allocated.
 */
struct ssc_smap *ssc_smap_create(unsigned int key_bits, unsigned int val_bits,
				 gfp_t gfp);

/**
 * ssc_smap_presize() - size the table for the largest count the map will hold
 * @m: the map
 * @entries: the most entries the map will ever hold at once
 * @gfp: allocation flags
 *
 * Grows the table at once to hold @entries at a load of at most 0.8 and
 * keeps it at least that big: inserts then never grow the table, except in
 * the rare case of a displacement overflow, and removals never shrink it.
 * Meant for construction time, before the map is used on an I/O path.
 *
 * Return: 0, or -ENOMEM with the map unchanged.
 */
int ssc_smap_presize(struct ssc_smap *m, u64 entries, gfp_t gfp);

/**
 * ssc_smap_presize_bytes() - memory ssc_smap_presize_in() needs
 * @entries: as for ssc_smap_presize()
 *
 * Return: bytes, a multiple of 8; 0 if such a table fits inside the map.
 */
size_t ssc_smap_presize_bytes(u64 entries);

/**
 * ssc_smap_presize_in() - ssc_smap_presize(), with the table in given memory
 * @m: the map, never presized in memory of its own before
 * @entries: the most entries the map will ever hold at once
 * @mem: NULL, or 8-byte aligned memory of ssc_smap_presize_bytes(@entries)
 *	bytes for the table's per-group arrays
 * @gfp: allocation flags
 *
 * Lets the maps of one owner share one allocation for their tables instead
 * of each rounding its own up to whole pages. The memory stays the
 * caller's: the map never frees it, ssc_smap_bytes() does not count it,
 * and it must outlive the map. The map may still move to a table of its
 * own (a displacement overflow) and back.
 *
 * Return: 0; -ENOMEM with the map unchanged and @mem not kept; -EBUSY if
 * the map was lent memory before.
 */
int ssc_smap_presize_in(struct ssc_smap *m, u64 entries, void *mem, gfp_t gfp);

/**
 * ssc_smap_set_lock() - let lookups run concurrently with changes
 * @m: the map
 * @lock: a reader-writer spinlock, or NULL
 *
 * Every call that changes @m then takes @lock for writing only around the
 * moment its change becomes visible; allocations and frees happen outside
 * it, with the gfp flags the call was given. ssc_smap_lookup() from other
 * threads must hold @lock for reading. Calls that change the map must still be serialized by
 * the caller, and may look the map up without @lock; so may
 * ssc_smap_visit_range(), ssc_smap_count() and ssc_smap_bytes().
 */
void ssc_smap_set_lock(struct ssc_smap *m, rwlock_t *lock);

/**
 * ssc_smap_reserve_create() - a reserve of group arrays for maps to grow from
 * @min_nr: arrays of each size kept in reserve
 * @key_bits: the widest keys of the maps that will use it
 * @val_bits: the widest values of those maps
 *
 * A mempool per array size, made at construction: a map given it with
 * ssc_smap_set_reserve() takes the arrays an insert or a rehash needs from
 * it whenever the gfp flags allow direct reclaim (GFP_NOIO, GFP_KERNEL), so
 * such a call never fails for memory; it may wait for it. Freed arrays
 * refill it. Changes of all the maps sharing one reserve must be
 * serialized, as each takes at most one array at a time from it. Arrays
 * only for entries of those widths are kept.
 * Return: the reserve, or NULL if memory could not be allocated.
 */
struct ssc_smap_reserve *ssc_smap_reserve_create(unsigned int min_nr,
						 unsigned int key_bits, unsigned int val_bits);

/**
 * ssc_smap_reserve_destroy() - free a reserve
 * @r: the reserve, or NULL; no map may use it any more
 */
void ssc_smap_reserve_destroy(struct ssc_smap_reserve *r);

/**
 * ssc_smap_reserve_bytes() - memory a reserve holds
 * @r: the reserve
 * Return: its size in bytes, the arrays it keeps included.
 */
size_t ssc_smap_reserve_bytes(const struct ssc_smap_reserve *r);

/**
 * ssc_smap_set_reserve() - take group arrays from a reserve
 * @m: the map, still empty or holding only arrays of the slab caches
 * @r: the reserve, which must outlive @m; or NULL
 */
void ssc_smap_set_reserve(struct ssc_smap *m, struct ssc_smap_reserve *r);

/**
 * ssc_smap_rehashes() - table rebuilds since the map was created or presized
 * @m: the map
 *
 * Return: how many times the table was grown or shrunk.
 */
u64 ssc_smap_rehashes(const struct ssc_smap *m);

/**
 * ssc_smap_destroy() - free a map and all of its entries
 * @m: the map, or NULL
 */
void ssc_smap_destroy(struct ssc_smap *m);

/**
 * ssc_smap_insert() - insert a key, or overwrite its value if present
 * @m: the map
 * @key: the key, < 2^key_bits
 * @val: the value, < 2^val_bits; the map does not interpret it
 * @gfp: allocation flags; must allow blocking (the I/O path passes GFP_NOIO),
 *	as growing the table may vmalloc
 *
 * Overwriting an existing key never allocates. Inserting a new key may grow
 * the table; all memory is allocated before anything is changed.
 *
 * Return: 0; -EINVAL if @key or @val is out of range; -ENOMEM if memory could
 * not be allocated, in which case the contents of the map are unchanged
 * (a table growth that completed before the failure is kept).
 */
int ssc_smap_insert(struct ssc_smap *m, u64 key, u64 val, gfp_t gfp);

/**
 * ssc_smap_lookup() - find the value of a key
 * @m: the map
 * @key: the key; an out-of-range key is simply not found
 * @val: if not NULL, receives the value when the key is found
 *
 * Return: true if @key is in the map.
 */
bool ssc_smap_lookup(const struct ssc_smap *m, u64 key, u64 *val);

/**
 * ssc_smap_remove() - remove a key
 * @m: the map
 * @key: the key
 * @old_val: if not NULL, receives the removed value
 * @gfp: allocation flags, used only to give memory back (smaller packed
 *	arrays, a smaller table); if those allocations fail the map simply
 *	keeps the bigger ones, so removal itself never fails
 *
 * Return: true if @key was in the map and has been removed.
 */
bool ssc_smap_remove(struct ssc_smap *m, u64 key, u64 *old_val, gfp_t gfp);

/**
 * ssc_smap_count() - number of entries in the map
 * @m: the map
 *
 * Return: the number of keys stored.
 */
u64 ssc_smap_count(const struct ssc_smap *m);

/**
 * ssc_smap_bytes() - memory used by the map
 * @m: the map
 *
 * Return: every byte the map has allocated: the map structure, the per-group
 * arrays and the packed entry arrays, each at its real allocated size.
 */
size_t ssc_smap_bytes(const struct ssc_smap *m);

/**
 * ssc_smap_visit_range() - visit the entries whose keys are in a range
 * @m: the map
 * @lo: first key of the range
 * @hi: end of the range (exclusive)
 * @fn: called as fn(@ctx, key, value) for each entry with @lo <= key < @hi;
 *	it must not modify the map. A non-zero return stops the walk.
 * @ctx: passed to @fn
 *
 * A range that is small compared to the table is walked by looking up each
 * key in turn, in increasing key order. Otherwise the whole table is scanned
 * and the entries are visited in table order, which is not key order.
 *
 * Return: 0 after visiting every entry, or the first non-zero value
 * returned by @fn.
 */
int ssc_smap_visit_range(const struct ssc_smap *m, u64 lo, u64 hi,
			 int (*fn)(void *ctx, u64 key, u64 val), void *ctx);

#endif /* SSC_SMAP_H */
