/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The SSC engine: the "device" half of dm-ssc. It manages a flash device
 * as a solid-state cache with FlashTier's interface:
 *
 *   write_clean  ssc_reserve() + data write + ssc_publish(dirty=false)
 *   write_dirty  ssc_reserve() + data write + ssc_publish(dirty=true)
 *                + ssc_commit()
 *   read         ssc_get(): a flash location, or not present
 *   evict        ssc_evict() + ssc_commit()
 *   clean        ssc_clean() (asynchronous)
 *   exists       ssc_exists()
 *   flush        ssc_flush()
 *
 * Data blocks are moved by the caller (the cache manager does it with
 * bios); the engine owns the mapping, the log-structured segments, the
 * operation log, the checkpoints, garbage collection and recovery.
 *
 * Guarantees: after ssc_publish(dirty) + ssc_commit() the block survives a
 * crash (dm-ssc commits at the next FLUSH or FUA write, as the block layer
 * promises, so a crash before then may keep the block's older copy); after
 * ssc_publish(clean) a crash either keeps the block or drops it; after
 * ssc_evict() + ssc_commit() the block is gone, also after a crash. A block
 * that is dropped by garbage collection (silent eviction) was clean.
 */
#ifndef SSC_ENGINE_H
#define SSC_ENGINE_H

#include <linux/types.h>
#include <linux/blk_types.h>

struct ssc_engine;

enum ssc_engine_event {
	SSC_ENG_FAILED,		/* a: the errno that failed the cache (> 0) */
	/*
	 * A space shortage ended: for a ns no segment was free (garbage
	 * collection fell behind) and b reservations were refused or waited.
	 */
	SSC_ENG_STALL,
};

/* I/O on the cache device, done synchronously. len == 0: a cache flush. */
struct ssc_io_ops {
	int (*rw)(void *priv, blk_opf_t opf, sector_t sector, void *buf,
		  size_t len);
	int (*discard)(void *priv, sector_t sector, sector_t nr_sects);
	/* called when garbage collection should run; may be NULL */
	void (*kick_gc)(void *priv);
	/*
	 * A clean record says the origin holds the block's data. Called
	 * under the commit lock before a commit or checkpoint makes one
	 * durable that was published since the last call, so that the cache
	 * manager can make its origin writes durable first. May be NULL.
	 */
	int (*before_clean_commit)(void *priv);
	/*
	 * Something the cache manager may report; may be NULL. Called in any
	 * context, possibly under the engine's locks: it must not sleep.
	 */
	void (*event)(void *priv, enum ssc_engine_event ev, u64 a, u64 b);
};

struct ssc_geometry {
	unsigned int block_sectors;
	unsigned int segment_sectors;
	unsigned int log_block_bytes;	/* the cache's logical block size */
	sector_t cache_sectors;
	u64 origin_blocks;
};

/* What a lookup found */
enum ssc_state {
	SSC_NOT_PRESENT = 0,
	SSC_CLEAN,
	SSC_DIRTY,
};

struct ssc_loc {
	u32 slot;
	u32 seg;
	sector_t sector;	/* on the cache device */
};

struct ssc_engine_stats {
	u64 cached;
	u64 dirty;
	u64 nr_slots;
	u64 free_segs;
	u64 nr_segs;
	u64 gc_runs;
	u64 gc_evicted;		/* clean blocks dropped by GC */
	u64 gc_copied;		/* dirty blocks moved by GC */
	u64 meta_sectors;	/* metadata sectors written */
	u64 checkpoints;
	u64 log_used;		/* log blocks written since the checkpoint */
	u64 log_blocks;
	u64 commits;
	u64 replayed;		/* log records replayed at the last load */
	u64 recovered;		/* 1 if the last load found an unclean shutdown */
	u64 ram_bytes;		/* map + per-segment table + dirty table */
	int error;		/* first metadata I/O error, or 0 */
};

struct ssc_engine *ssc_engine_create(const struct ssc_geometry *geo,
				     const struct ssc_io_ops *ops, void *priv,
				     bool format, const char **err);
int ssc_engine_load(struct ssc_engine *e, bool want_dirty_table,
		    const char **err);
int ssc_engine_shutdown(struct ssc_engine *e);
void ssc_engine_destroy(struct ssc_engine *e);

/* Layout, for the cache manager */
sector_t ssc_engine_data_start(const struct ssc_engine *e);
u64 ssc_engine_nr_slots(const struct ssc_engine *e);

enum ssc_state ssc_get(struct ssc_engine *e, u64 oblock, bool for_write,
		       struct ssc_loc *loc);
void ssc_put(struct ssc_engine *e, const struct ssc_loc *loc);
enum ssc_state ssc_peek(struct ssc_engine *e, u64 oblock);

int ssc_reserve(struct ssc_engine *e, u64 oblock, bool wait,
		struct ssc_loc *loc);
int ssc_publish(struct ssc_engine *e, u64 oblock, const struct ssc_loc *loc,
		bool dirty, u64 *lsn);
void ssc_unreserve(struct ssc_engine *e, const struct ssc_loc *loc);

int ssc_evict(struct ssc_engine *e, u64 oblock, bool allow_dirty, u64 *lsn);
int ssc_clean(struct ssc_engine *e, u64 oblock);
int ssc_commit(struct ssc_engine *e, u64 lsn);
int ssc_commit_pending(struct ssc_engine *e);
u64 ssc_remove_barrier(struct ssc_engine *e);
int ssc_flush(struct ssc_engine *e);
int ssc_checkpoint(struct ssc_engine *e);

int ssc_exists(struct ssc_engine *e, u64 lo, u64 count, unsigned long *bitmap);
int ssc_next_dirty(struct ssc_engine *e, u64 *oblock);

bool ssc_gc_needed(struct ssc_engine *e);
bool ssc_space_low(struct ssc_engine *e);
bool ssc_gc_starved(struct ssc_engine *e);
int ssc_gc(struct ssc_engine *e);

void ssc_engine_get_stats(struct ssc_engine *e, struct ssc_engine_stats *st);
void ssc_engine_clear_stats(struct ssc_engine *e);
int ssc_engine_error(struct ssc_engine *e);
u64 ssc_dirty_count(struct ssc_engine *e);

/* Pure helpers, exposed for the KUnit tests */
u32 ssc_crc(const void *buf, size_t len);
int ssc_gc_pick_victim(const u32 *valid, const u32 *dirty, const u64 *age,
		       const bool *eligible, unsigned int n, u32 slots);

#endif /* SSC_ENGINE_H */
