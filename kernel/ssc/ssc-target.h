/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-ssc, the cache manager (the "host" half): what its files share. The
 * target's state (struct ssc_c), the per-bio state, the cells, and the
 * functions one file calls in another:
 *
 *   dm-ssc-target.c     table line, construction, suspend/resume, status,
 *                       messages, module init
 *   dm-ssc-io.c         the bio path: cells, I/O helpers, map/end_io, the
 *                       per-bio worker (fills, writes, discards, flushes)
 *   dm-ssc-writeback.c  background work: GC, write-back, group commit
 *   dm-ssc-netlink.c    the dm_ssc generic netlink family and its events
 *
 * The SSC engine (ssc-engine.h) owns the flash device.
 */
#ifndef DM_SSC_TARGET_H
#define DM_SSC_TARGET_H

#include <linux/device-mapper.h>
#include <linux/module.h>
#include <linux/blkdev.h>
#include <linux/bio.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/workqueue.h>
#include <linux/mempool.h>
#include <linux/vmalloc.h>
#include <linux/bitmap.h>
#include <linux/percpu.h>
#include <linux/delay.h>
#include <linux/ktime.h>
#include <net/genetlink.h>
#include <linux/dm-ssc.h>

#include "ssc-engine.h"
#include "ssc-admit.h"

#define DM_MSG_PREFIX "ssc"

/* Block size in 512-byte sectors: 4 KiB to 1 MiB, a power of two. */
#define SSC_MIN_BLOCK_SECTORS	8
#define SSC_MAX_BLOCK_SECTORS	2048

/* Erase-block-sized log segments: 128 KiB to 64 MiB, a power of two. */
#define SSC_MIN_SEGMENT_SECTORS	256
#define SSC_MAX_SEGMENT_SECTORS	(64 * 2048)
#define SSC_DEF_SEGMENT_SECTORS	(2 * 2048)

/* Write-back starts above dirty_high % of the cache and stops at dirty_low %. */
#define SSC_DEF_DIRTY_HIGH	20
#define SSC_DEF_DIRTY_LOW	10
#define SSC_MAX_DIRTY_HIGH	75
/* Above this share of dirty blocks, writes go around the cache. */
#define SSC_DIRTY_HARD_PCT	80

/*
 * Sequential bypass: the last few streams are tracked; once a stream has run
 * for sequential_threshold sectors, its further misses go to the origin
 * without filling the cache. 0 (the default) turns this off.
 */
#define SSC_SEQ_STREAMS		8
#define SSC_MAX_SEQ_THRESHOLD	BIT(31)

/* Largest origin write made by write-back from contiguous dirty blocks */
#define SSC_WB_MAX_BYTES	(256 * 1024)
/*
 * Write-back runs in flight at once. Dirty blocks are mostly scattered, so
 * a run is often one block and its FUA write one origin round trip: one lane
 * alone writes back fewer blocks a second than a random-write workload dirties.
 */
#define SSC_WB_LANES		4

/* Group commit interval for write_clean and clean records */
#define SSC_COMMIT_INTERVAL	HZ

#define SSC_CELL_HASH_BITS	8
/* Locks of the cell table: bucket b is under lock b % SSC_CELL_LOCKS */
#define SSC_CELL_LOCKS		32
#define SSC_CELL_POOL		64
/* Bounce buffers kept for fills and writethrough writes under memory pressure */
#define SSC_BOUNCE_POOL		4
#define SSC_MAX_EXISTS		BIT(20)

/* At most one GC_STALL event per volume per this interval */
#define SSC_STALL_EVENT_INTERVAL	HZ

/* ti->error strings too long to sit on their line */
#define SSC_ERR_ARGS \
	"Not enough arguments: want <cache_dev> <origin_dev> <block_size> <#feature_args> [<feature_arg>]*"
#define SSC_ERR_SEGMENT \
	"Invalid segment_size: want a power of two from 256 to 131072 sectors"
#define SSC_ERR_SEQ \
	"Invalid sequential_threshold: want 0 (off) to 2147483648 sectors"
#define SSC_ERR_ADMIT \
	"Invalid admit policy: want all or reuse"
#define SSC_ERR_DIRTY \
	"Invalid dirty_high/dirty_low: want 0 <= dirty_low < dirty_high <= 75"

enum ssc_mode {
	SSC_MODE_WRITETHROUGH,
	SSC_MODE_WRITEBACK,
	SSC_MODE_WRITEAROUND,
	SSC_MODE_PASSTHROUGH,
};

extern const char * const ssc_mode_names[];

/* Which misses may take a slot (table feature admit) */
enum ssc_admit_policy {
	SSC_ADMIT_ALL,		/* every miss: FlashTier's behaviour */
	SSC_ADMIT_REUSE,	/* once full, a block that missed before */
};

extern const char * const ssc_admit_names[];

/*
 * Events waiting to be sent on the netlink "events" group, and what they
 * carry. The engine reports from any context; a work item sends.
 */
struct ssc_ev_data {
	unsigned long pending;		/* BIT(DM_SSC_EVENT_*) */
	u32 old_mode;			/* MODE; STATE is read when sent */
	u64 stalls;			/* GC_STALL, since the last event */
	u64 stall_max_ns;
	u64 stall_total_ns;
	u64 stall_bypassed;
	u64 wb_blocks;			/* WRITEBACK_DONE */
	u64 wb_us;
	u64 rec_us;			/* RECOVERY */
	u64 rec_replayed;
	u64 rec_cached;
	u64 rec_dirty;
};

struct ssc_events {
	spinlock_t lock;		/* protects d and last_stall */
	struct ssc_ev_data d;
	unsigned long last_stall;	/* jiffies of the last GC_STALL event */
	struct delayed_work work;
};

struct ssc_stats {
	u64 read_hits;
	u64 read_misses;
	u64 write_hits;
	u64 write_misses;
	u64 data_sectors;	/* data written to the cache device */
	u64 writebacks;		/* blocks written back to the origin */
	u64 cache_errors;
	u64 origin_errors;
	u64 bypassed;		/* sequential misses sent around the cache */
	u64 admitted;		/* misses admission let in, on a second touch */
	u64 rejected;		/* misses it kept out */
};

struct ssc_stream {
	sector_t next;		/* where the stream goes on */
	sector_t run;		/* sectors it has run so far */
	unsigned long last;	/* jiffies of its last bio */
};

struct ssc_cell {
	struct hlist_node node;
	u64 oblock;
	struct bio_list waiters;
	bool pooled;		/* from cell_pool, else inside a bio's ssc_bio */
};

struct ssc_c {
	struct dm_target *ti;
	struct dm_dev *cache_dev;
	struct dm_dev *origin_dev;

	sector_t block_sectors;
	unsigned int block_shift;
	sector_t segment_sectors;
	sector_t cache_sectors;
	enum ssc_mode mode;
	unsigned int dirty_high;
	unsigned int dirty_low;
	unsigned int seq_threshold;	/* sectors; 0: no sequential bypass */
	bool format;			/* format the cache device at first resume */
	enum ssc_admit_policy admit_policy;
	struct ssc_admit *admit;	/* SSC_ADMIT_REUSE: blocks that missed */

	spinlock_t seq_lock;		/* protects streams[] */
	struct ssc_stream streams[SSC_SEQ_STREAMS];
	struct ssc_stream __percpu *hit_run;	/* a CPU's last hit, not yet a stream */

	struct ssc_engine *eng;
	u64 nr_slots;

	struct workqueue_struct *wq;	/* one work item per deferred bio */
	struct workqueue_struct *gc_wq;
	struct workqueue_struct *wb_wq;
	struct work_struct gc_work;
	struct work_struct wb_work;
	struct delayed_work commit_work;
	bool suspended;
	bool writeback_all;
	/*
	 * Messages that write the cache device run under it, and suspend
	 * takes it after setting suspended: none runs past a suspend.
	 */
	struct mutex msg_lock;

	/*
	 * Each path that holds bios at once has its own set, so that one
	 * that waits for a bio only waits for its own kind to complete:
	 * bs for clones and the origin half of a writethrough write, cache_bs
	 * for its cache half, meta_bs for the engine's metadata I/O, wb_bs
	 * for write-back (one bio per lane at a time).
	 */
	struct bio_set bs;
	struct bio_set cache_bs;
	struct bio_set meta_bs;
	struct bio_set wb_bs;
	/* origin writes completed, and how many of them were flushed */
	atomic64_t origin_writes;
	s64 origin_flushed;
	/* block-sized buffers the target owns, for data it copies to the cache */
	mempool_t bounce_pool;
	mempool_t cell_pool;
	struct {
		spinlock_t lock;	/* the buckets of cells[] i mod SSC_CELL_LOCKS */
	} ____cacheline_aligned_in_smp cell_locks[SSC_CELL_LOCKS];
	struct hlist_head cells[1 << SSC_CELL_HASH_BITS];
	wait_queue_head_t cell_wq;

	/* write-back: wb_work starts the lanes and waits for them */
	struct workqueue_struct *wb_lane_wq;
	struct ssc_wb_lane {
		struct ssc_c *sc;
		struct work_struct work;
		struct mutex lock;	/* one run at a time in this buffer */
		struct page **pages;
	} wb_lanes[SSC_WB_LANES];
	unsigned int wb_npages;		/* pages of each lane's buffer */
	unsigned int wb_max_blocks;

	struct ssc_stats __percpu *stats;

	struct mapped_device *md;
	struct list_head vol_node;	/* on ssc_volumes */
	bool live;			/* resumed at least once */
	bool loaded;			/* the engine has loaded the cache */
	ktime_t wb_all_start;		/* when writeback_all began */
	u64 wb_all_base;		/* writebacks counted by then */
	struct ssc_events ev;
};

/* Per-bio state, in the dm per-io data area */
struct ssc_bio {
	struct ssc_c *sc;
	struct ssc_cell *cell;
	struct ssc_cell cell_mem;	/* the bio's own cell: no allocation */
	struct ssc_loc loc;
	struct bvec_iter saved_iter;
	unsigned int flags;
	struct work_struct work;
};

#define PB_PINNED	BIT(0)	/* loc is pinned in the engine */
#define PB_CACHE_READ	BIT(1)	/* a read remapped to the cache */
#define PB_RETRIED	BIT(2)	/* already retried on the origin */
#define PB_BYPASS	BIT(3)	/* part of a long sequential stream */
#define PB_ORIGIN	BIT(4)	/* remapped to the origin: its error is the origin's */

extern struct kmem_cache *ssc_cell_cache;
/* the engine's I/O on the cache device (dm-ssc-io.c) */
extern const struct ssc_io_ops ssc_bdev_ops;
extern struct genl_family ssc_genl_family;
/* Every constructed ssc target, for netlink queries and mode changes */
extern struct list_head ssc_volumes;
extern struct mutex ssc_volumes_lock;

void ssc_stats_sum(struct ssc_c *sc, struct ssc_stats *sum);
bool ssc_admit_miss(struct ssc_c *sc, u64 oblock);
struct ssc_cell *ssc_cell_try(struct ssc_c *sc, u64 oblock);
void ssc_cell_put(struct ssc_c *sc, struct ssc_cell *cell);
struct ssc_cell *ssc_cell_lock(struct ssc_c *sc, u64 oblock);
void ssc_kick_gc(void *priv);
void ssc_maybe_kick_writeback(struct ssc_c *sc);
int ssc_map(struct dm_target *ti, struct bio *bio);
int ssc_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error);
void ssc_gc_worker(struct work_struct *work);
int ssc_writeback_run(struct ssc_c *sc, struct ssc_wb_lane *lane,
		      u64 first, u64 max);
void ssc_wb_lane_worker(struct work_struct *work);
void ssc_wb_worker(struct work_struct *work);
void ssc_commit_worker(struct work_struct *work);
u32 ssc_state(struct ssc_c *sc);
void ssc_event_worker(struct work_struct *work);
void ssc_event(struct ssc_c *sc, unsigned int ev);
void ssc_engine_event(void *priv, enum ssc_engine_event ev, u64 a, u64 b);
void ssc_note_reload(struct ssc_c *sc);
void ssc_stop_background(struct ssc_c *sc);

static inline u64 ssc_oblock(struct ssc_c *sc, sector_t target_sector)
{
	return target_sector >> sc->block_shift;
}

static inline sector_t ssc_block_offset(struct ssc_c *sc, sector_t target_sector)
{
	return target_sector & (sc->block_sectors - 1);
}

static inline bool ssc_full_block(struct ssc_c *sc, struct bio *bio)
{
	return bio_sectors(bio) == sc->block_sectors;
}

static inline struct ssc_bio *ssc_pb(struct bio *bio)
{
	return dm_per_bio_data(bio, sizeof(struct ssc_bio));
}

#endif /* DM_SSC_TARGET_H */
