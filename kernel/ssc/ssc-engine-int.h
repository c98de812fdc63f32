/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The SSC engine's own header: its state and what its files share.
 *
 *   ssc-engine.c   layout and superblock, create/destroy, the dirty table,
 *                  lookups, slot allocation, publish/evict/clean, stats
 *   ssc-log.c      the operation log, commits, FLUSH, checkpoints
 *   ssc-gc.c       garbage collection with silent eviction
 *   ssc-dirty.c    which dirty block write-back takes next: CLOCK over
 *                  the segments, through their summaries
 *   ssc-recover.c  loading: checkpoint, log replay, verification, the
 *                  summaries of open segments; clean shutdown
 *
 * ssc-engine.h is the interface the cache manager uses; ssc-format.h the
 * on-disk layout; ssc-map.h the block map. ssc-engine.c describes the
 * state in RAM and the locking.
 */
#ifndef SSC_ENGINE_INT_H
#define SSC_ENGINE_INT_H

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/crc32c.h>
#include <linux/random.h>
#include <linux/ktime.h>
#include <linux/timekeeping.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/blk_types.h>
#include <linux/bitmap.h>
#include <linux/overflow.h>

#include "ssc-engine.h"
#include "ssc-format.h"
#include "ssc-map.h"

enum {
	SEG_FREE = 0,
	SEG_OPEN,
	SEG_SEALED,
	SEG_GC,
};

struct ssc_seg {
	u32 valid;
	u32 dirty;
	u64 age;		/* e->user_seq when last written */
	u64 seq;		/* e->seg_seq when opened; 0 if before the load */
	/*
	 * The record of the last block garbage collection moved into this
	 * segment: until it is committed, a crash maps the block to its old
	 * slot, so nothing may be written in place here.
	 */
	u64 move_lsn;
	atomic_t inflight;	/* reads, in-place writes, reservations */
	u8 state;
};

#define SSC_ERR_CKPT_NOMEM	"Out of memory loading the checkpoint"
#define SSC_ERR_CKPT_RANGE	"Checkpoint maps a block outside the cache or origin"
#define SSC_ERR_UNFORMATTED \
	"Cache device is not formatted: add the format feature argument to format it"
#define SSC_ERR_DIRTY_BEYOND \
	"Cache holds dirty blocks past the end of the origin: load a table as long as before"

/*
 * Sequence numbers start below 2^48 at format and count up by one per
 * checkpoint or log block: one at or past this limit was never written by
 * the engine, and refusing it keeps every later one from wrapping.
 */
#define SSC_SEQ_LIMIT		BIT_ULL(60)

/* GC needs a reserve and a watermark above it */
#define SSC_MIN_DATA_SEGS	6

/* Weight of a dirty block in the GC cost: it must be read and written. */
#define SSC_GC_COPY_WEIGHT	4
/* Pending log records kept in RAM before a commit is forced. */
#define SSC_PENDING_RECORDS	1024
/* Checkpoint I/O staging buffer */
#define SSC_CKPT_BUF_BLOCKS	16
/* Segments write-back's hand finds in one pass over the segment table */
#define SSC_WB_BATCH		64
/* Summaries rebuilt at load in one walk of the map, at most */
#define SSC_RECOVER_SUM_BYTES	(4U << 20)
/* Shards of the block map: enough that hits on different CPUs rarely meet */
#define SSC_MAP_SHARDS		clamp_t(unsigned int, 4 * num_possible_cpus(), 8, 256)
/* Take a checkpoint when the log is this full (FlashTier: 2/3). */
#define SSC_LOG_LIMIT(e)	((e)->log_blocks * 2 / 3)

struct ssc_engine {
	struct ssc_geometry geo;
	const struct ssc_io_ops *ops;
	void *priv;

	/* layout, from the superblock */
	struct ssc_sb sb;
	u32 slots_per_seg;
	u32 summary_sectors;
	u32 nr_segs;
	u64 nr_slots;
	sector_t ckpt_start[2];
	sector_t ckpt_sectors;
	sector_t log_start;
	u64 log_blocks;
	u32 lbs;		/* log block bytes */
	u32 lbs_sectors;
	u32 log_per_block;
	sector_t data_start;
	unsigned int key_bits;

	struct mutex commit_lock;	/* log writes and checkpoints */
	struct mutex lock;		/* everything else; nests inside */

	struct ssc_map *map;
	struct ssc_seg *segs;
	u32 free_segs;
	u32 gc_reserve;		/* segments only GC may open */
	/*
	 * GC found no segment it could clean in the room it has: write-back
	 * must clean dirty blocks, whatever dirty_low says
	 */
	bool gc_starved;
	ktime_t stall_start;	/* when reservations began to fail, or 0 */
	u64 stall_refused;	/* reservations refused since then */
	u32 gc_low, gc_high;	/* start GC below low, stop at high */
	u32 alloc_cursor;
	wait_queue_head_t space_wq;
	wait_queue_head_t inflight_wq;

	/* open segment */
	u32 open_seg;
	u32 open_next;
	/*
	 * GC opened it out of its reserve: user data may not use it while the
	 * free segments are no more than the reserve
	 */
	bool open_gc;
	u64 seg_seq;
	u64 user_seq;
	struct ssc_sum *sum;
	/* a sealed segment whose summary its sealer writes after e->lock */
	u32 seal_seg;
	struct ssc_sum *seal_sum;

	/* operation log */
	struct ssc_log_rec *pending;
	u32 nr_pending;
	u32 max_pending;	/* a commit is forced at this many... */
	/*
	 * ...plus, while a checkpoint walks the map, the records pending when
	 * it began (it covers them): room for twice max_pending is allocated
	 */
	u32 ckpt_covers;
	u64 appended_lsn;
	u64 committed_lsn;
	u64 remove_lsn;
	/*
	 * Cache flushes issued under commit_lock, and the number of the last
	 * one that completed: a flush numbered above what a FLUSH saw when it
	 * arrived was issued after it.
	 */
	u64 flushes_issued;
	u64 flushes_done;
	/* a write_clean was published since ops->before_clean_commit() last ran */
	bool clean_published;
	u64 log_head;		/* blocks used since the checkpoint */
	u64 next_log_seq;
	void *log_buf;

	/* checkpoints */
	u64 ckpt_seq;
	int ckpt_cur;
	void *ckpt_buf;

	/*
	 * write-back's choice (ssc-dirty.c), under wb_lock: a CLOCK hand over
	 * the segments by (open order, number), the next ones after it, the
	 * summary of the segment at hand and the next entry of it; a bit per
	 * slot, set when a dirty block is used again (NULL if nothing can be
	 * dirty)
	 */
	struct mutex wb_lock;		/* nests outside e->lock */
	struct ssc_sum *wb_sum;
	u32 wb_seg;			/* segment at hand, or U32_MAX */
	u64 wb_seq;			/* its seq when its summary was loaded */
	u32 wb_pos;
	u32 wb_seen;			/* dirty blocks its summary named */
	bool wb_rebuilt;		/* its summary needs no rebuilding */
	u32 wb_hand_seg;		/* U32_MAX: start at the oldest */
	u64 wb_hand_seq;
	struct ssc_wb_next {
		u64 seq;
		u32 seg;
	} wb_next[SSC_WB_BATCH];	/* segments after the hand, in order */
	u32 wb_next_n, wb_next_i;
	unsigned long *dref;
	u64 nr_dirty;

	/* garbage collection */
	struct ssc_sum *gc_sum;
	void *gc_data;
	u64 *gc_copy;

	/* recovery: summaries rebuilt per map walk (0: by size), walks done */
	u32 recover_batch;
	u32 recover_walks;

	bool need_format;	/* format at the first load */
	bool loaded;
	int error;
	atomic64_t meta_sectors;	/* metadata I/O runs under either lock */
	struct ssc_engine_stats st;
#if IS_ENABLED(CONFIG_DM_SSC_KUNIT_TEST)
	/* test hook: called by a checkpoint after each shard it wrote */
	void (*ckpt_shard_hook)(struct ssc_engine *e, unsigned int shard);
	/* test hook: called by GC after each pass, before it looks at valid */
	void (*gc_pass_hook)(struct ssc_engine *e, unsigned int pass);
#endif
};

/* ssc-engine.c */
void ssc_seal_crc(void *buf, size_t len);
bool ssc_check_crc(const void *buf, size_t len, u32 magic);
void ssc_set_error(struct ssc_engine *e, int r);
int ssc_meta_rw(struct ssc_engine *e, blk_opf_t opf, sector_t sector,
		void *buf, size_t len);
int ssc_put_summary(struct ssc_engine *e, u32 seg, const struct ssc_sum *sum);
int ssc_write_sb(struct ssc_engine *e, bool clean);
int ssc_check_sb(struct ssc_engine *e, const void *buf, const char **err);
bool ssc_sb_same_layout(const struct ssc_sb *a, const struct ssc_sb *b);
int ssc_format(struct ssc_engine *e, const char **err);
int ssc_write_summary(struct ssc_engine *e, u32 seg, struct ssc_sum *sum);
void ssc_seal_finish(struct ssc_engine *e);
int __ssc_reserve(struct ssc_engine *e, u64 oblock, bool gc,
		  struct ssc_loc *loc, bool *seal);
void ssc_unaccount(struct ssc_engine *e, u64 val);
void ssc_account(struct ssc_engine *e, u64 val);

/* ssc-log.c */
int ssc_log_room(struct ssc_engine *e, unsigned int n);
u64 ssc_log_append(struct ssc_engine *e, u8 type, u64 oblock, u32 slot,
		   u8 flags);
int __ssc_checkpoint(struct ssc_engine *e);
int ssc_checkpoint_fuzzy(struct ssc_engine *e);

/* ssc-gc.c */
int ssc_pick(struct ssc_engine *e);
int ssc_gc_one(struct ssc_engine *e);
void ssc_summary_from_map(struct ssc_engine *e, u32 seg, struct ssc_sum *sum);

static inline u32 slot_seg(const struct ssc_engine *e, u32 slot)
{
	return slot / e->slots_per_seg;
}

static inline sector_t slot_sector(const struct ssc_engine *e, u32 slot)
{
	u32 seg = slot / e->slots_per_seg;
	u32 idx = slot % e->slots_per_seg;

	return e->data_start + (sector_t)seg * e->geo.segment_sectors +
		(sector_t)idx * e->geo.block_sectors;
}

static inline sector_t seg_summary_sector(const struct ssc_engine *e, u32 seg)
{
	return e->data_start + (sector_t)seg * e->geo.segment_sectors +
		(sector_t)e->slots_per_seg * e->geo.block_sectors;
}

static inline u64 mkval(u32 slot, bool dirty)
{
	return ((u64)slot << 1) | dirty;
}

static inline u32 val_slot(u64 val)
{
	return val >> 1;
}

static inline bool val_dirty(u64 val)
{
	return val & 1;
}

#endif /* SSC_ENGINE_INT_H */
