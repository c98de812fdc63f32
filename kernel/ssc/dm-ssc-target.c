// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssc: a device-mapper target that uses a flash device as a solid-state
 * cache (FlashTier) for a slower origin device.
 *
 * This file is the cache manager (the "host" half): the table line, status,
 * messages and the bio path in the writethrough, writeback, writearound and
 * passthrough modes. The SSC engine (ssc-engine.c) owns the flash device.
 *
 * Bios are split at block boundaries. Read hits, and in writeback writes to
 * dirty blocks, are remapped straight to the cache device from .map; all
 * else runs in a work item per bio that may sleep on I/O. A per-block cell
 * keeps a fill, a write and a write-back of the same block from racing.
 *
 * Orderings that keep a crash from exposing stale data:
 *  - writethrough write to a cached block: evict it durably, write the
 *    origin, then cache the new data with write_clean;
 *  - any origin write of an uncached block first commits every earlier
 *    eviction record (ssc_remove_barrier());
 *  - a dirty block overwritten on the origin (write-around, write-back)
 *    is evicted only after the origin write is durable (FUA).
 *
 * Documentation/ssc.rst in the project tree describes the interface.
 */

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

#include "ssc-smap.h"
#include "ssc-engine.h"

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
#define SSC_ERR_DIRTY \
	"Invalid dirty_high/dirty_low: want 0 <= dirty_low < dirty_high <= 75"

enum ssc_mode {
	SSC_MODE_WRITETHROUGH,
	SSC_MODE_WRITEBACK,
	SSC_MODE_WRITEAROUND,
	SSC_MODE_PASSTHROUGH,
};

static const char * const ssc_mode_names[] = {
	[SSC_MODE_WRITETHROUGH]	= "writethrough",
	[SSC_MODE_WRITEBACK]	= "writeback",
	[SSC_MODE_WRITEAROUND]	= "writearound",
	[SSC_MODE_PASSTHROUGH]	= "passthrough",
};

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

	spinlock_t seq_lock;		/* protects streams[] */
	struct ssc_stream streams[SSC_SEQ_STREAMS];

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

static struct kmem_cache *ssc_cell_cache;

#if IS_ENABLED(CONFIG_DM_SSC_DEBUG)
/*
 * Injection points for tests (debug builds only), for block inject_map_block:
 * .map sleeps inject_map_delay_ms after it looked a write up for an in-place
 * write, so that write-back can be made to run in between; a worker whose
 * bio was queued on the block's held cell sleeps inject_wait_delay_ms
 * before it returns, so that the bio can be requeued and run meanwhile.
 */
static unsigned int inject_map_delay_ms;
module_param(inject_map_delay_ms, uint, 0644);
MODULE_PARM_DESC(inject_map_delay_ms, "debug: delay after the in-place lookup in map");
static unsigned int inject_wait_delay_ms;
module_param(inject_wait_delay_ms, uint, 0644);
MODULE_PARM_DESC(inject_wait_delay_ms, "debug: delay after a bio was queued on a cell");
static unsigned long long inject_map_block;
module_param(inject_map_block, ullong, 0644);
MODULE_PARM_DESC(inject_map_block, "debug: the block the injected delays apply to");

static void ssc_inject_delay(unsigned int *param, u64 oblock)
{
	unsigned int ms = READ_ONCE(*param);

	if (ms && oblock == READ_ONCE(inject_map_block))
		msleep(ms);
}

#define ssc_inject_map_delay(oblock)	ssc_inject_delay(&inject_map_delay_ms, oblock)
#define ssc_inject_wait_delay(oblock)	ssc_inject_delay(&inject_wait_delay_ms, oblock)
#else
static inline void ssc_inject_map_delay(u64 oblock) { }
static inline void ssc_inject_wait_delay(u64 oblock) { }
#endif

/* Every constructed ssc target, for netlink queries and mode changes */
static LIST_HEAD(ssc_volumes);
static DEFINE_MUTEX(ssc_volumes_lock);

static void ssc_event(struct ssc_c *sc, unsigned int ev);
static void ssc_stop_background(struct ssc_c *sc);
static void ssc_engine_event(void *priv, enum ssc_engine_event ev, u64 a, u64 b);

static void ssc_stats_sum(struct ssc_c *sc, struct ssc_stats *sum)
{
	int cpu;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu) {
		struct ssc_stats *s = per_cpu_ptr(sc->stats, cpu);

		sum->read_hits += s->read_hits;
		sum->read_misses += s->read_misses;
		sum->write_hits += s->write_hits;
		sum->write_misses += s->write_misses;
		sum->data_sectors += s->data_sectors;
		sum->writebacks += s->writebacks;
		sum->cache_errors += s->cache_errors;
		sum->origin_errors += s->origin_errors;
		sum->bypassed += s->bypassed;
	}
}

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

static struct ssc_bio *ssc_pb(struct bio *bio)
{
	return dm_per_bio_data(bio, sizeof(struct ssc_bio));
}

/* ---------------------------------------------------------------------
 * Cells: one holder per origin block
 */

static struct hlist_head *ssc_cell_bucket(struct ssc_c *sc, u64 oblock)
{
	return &sc->cells[hash_64(oblock, SSC_CELL_HASH_BITS)];
}

static spinlock_t *ssc_cell_lock_of(struct ssc_c *sc, u64 oblock)
{
	return &sc->cell_locks[hash_64(oblock, SSC_CELL_HASH_BITS) % SSC_CELL_LOCKS].lock;
}

static struct ssc_cell *ssc_cell_find(struct ssc_c *sc, u64 oblock)
{
	struct ssc_cell *cell;

	hlist_for_each_entry(cell, ssc_cell_bucket(sc, oblock), node)
		if (cell->oblock == oblock)
			return cell;
	return NULL;
}

/*
 * Insert @new as the cell of @oblock unless the block has one; then, if
 * @bio is given, the bio waits on the existing cell. Never sleeps.
 */
static bool ssc_cell_insert(struct ssc_c *sc, u64 oblock, struct ssc_cell *new,
			    struct bio *bio)
{
	spinlock_t *lock = ssc_cell_lock_of(sc, oblock);
	struct ssc_cell *cell;
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	cell = ssc_cell_find(sc, oblock);
	if (cell) {
		if (bio)
			bio_list_add(&cell->waiters, bio);
		spin_unlock_irqrestore(lock, flags);
		return false;
	}
	new->oblock = oblock;
	bio_list_init(&new->waiters);
	hlist_add_head(&new->node, ssc_cell_bucket(sc, oblock));
	spin_unlock_irqrestore(lock, flags);
	return true;
}

/*
 * Take the cell of a block for a bio, using the cell inside its per-bio
 * data. If the cell is held and @wait, the bio waits on it and is queued
 * again when it is released. Returns NULL if the cell is held.
 */
static struct ssc_cell *ssc_cell_get_bio(struct ssc_c *sc, u64 oblock,
					 struct bio *bio, bool wait)
{
	struct ssc_cell *new = &ssc_pb(bio)->cell_mem;

	new->pooled = false;
	if (ssc_cell_insert(sc, oblock, new, wait ? bio : NULL))
		return new;
	if (wait)
		ssc_inject_wait_delay(oblock);	/* the bio may be running elsewhere */
	return NULL;
}

/* A cell for work that is not a bio, from the pool. */
static struct ssc_cell *ssc_cell_alloc(struct ssc_c *sc, gfp_t gfp)
{
	struct ssc_cell *cell = mempool_alloc(&sc->cell_pool, gfp);

	if (cell)
		cell->pooled = true;
	return cell;
}

/*
 * Take the cell of a block if it is free and a cell is at hand. Never
 * sleeps: the caller holds other cells, and waiting for the pool while
 * holding them could wait on itself.
 */
static struct ssc_cell *ssc_cell_try(struct ssc_c *sc, u64 oblock)
{
	struct ssc_cell *new = ssc_cell_alloc(sc, GFP_NOWAIT);

	if (!new)
		return NULL;
	if (ssc_cell_insert(sc, oblock, new, NULL))
		return new;
	mempool_free(new, &sc->cell_pool);
	return NULL;
}

static void ssc_defer(struct ssc_c *sc, struct bio *bio);

static void ssc_cell_put(struct ssc_c *sc, struct ssc_cell *cell)
{
	spinlock_t *lock = ssc_cell_lock_of(sc, cell->oblock);
	struct bio_list waiters;
	struct bio *bio;
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	hlist_del(&cell->node);
	waiters = cell->waiters;
	spin_unlock_irqrestore(lock, flags);
	if (cell->pooled)
		mempool_free(cell, &sc->cell_pool);

	while ((bio = bio_list_pop(&waiters)))
		ssc_defer(sc, bio);
	if (wq_has_sleeper(&sc->cell_wq))
		wake_up_all(&sc->cell_wq);
}

/* Take the cell of a block, sleeping until it is free (not for bios). */
static struct ssc_cell *ssc_cell_lock(struct ssc_c *sc, u64 oblock)
{
	struct ssc_cell *cell = ssc_cell_alloc(sc, GFP_NOIO);

	/* the wait condition must not sleep: allocate before waiting */
	wait_event(sc->cell_wq, ssc_cell_insert(sc, oblock, cell, NULL));
	return cell;
}

/* Is the cell of a block held? (A hint: it may be released at once.) */
static bool ssc_cell_held(struct ssc_c *sc, u64 oblock)
{
	spinlock_t *lock = ssc_cell_lock_of(sc, oblock);
	unsigned long flags;
	bool held;

	spin_lock_irqsave(lock, flags);
	held = !!ssc_cell_find(sc, oblock);
	spin_unlock_irqrestore(lock, flags);
	return held;
}

/* Hand a held cell, with the bios waiting on it, over to @new. */
static void ssc_cell_move(struct ssc_c *sc, struct ssc_cell *old, struct ssc_cell *new)
{
	spinlock_t *lock = ssc_cell_lock_of(sc, old->oblock);
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	new->oblock = old->oblock;
	new->waiters = old->waiters;
	hlist_add_before(&new->node, &old->node);
	hlist_del(&old->node);
	spin_unlock_irqrestore(lock, flags);
}

/* ---------------------------------------------------------------------
 * I/O helpers
 */

/* Synchronous I/O on the cache device for the engine. len == 0: flush. */
static int ssc_bdev_rw(void *priv, blk_opf_t opf, sector_t sector, void *buf,
		       size_t len)
{
	struct ssc_c *sc = priv;
	struct block_device *bdev = sc->cache_dev->bdev;
	int r = 0;

	if (!len)
		return blkdev_issue_flush(bdev);

	while (len && !r) {
		unsigned int nr = min_t(unsigned int, BIO_MAX_VECS,
					DIV_ROUND_UP(offset_in_page(buf) + len, PAGE_SIZE));
		size_t done = 0;
		struct bio *bio;

		bio = bio_alloc_bioset(bdev, nr, opf, GFP_NOIO, &sc->meta_bs);
		bio->bi_iter.bi_sector = sector;
		while (len - done && bio->bi_vcnt < nr) {
			void *p = buf + done;
			unsigned int off = offset_in_page(p);
			unsigned int n = min_t(size_t, len - done, PAGE_SIZE - off);
			struct page *page = is_vmalloc_addr(p) ? vmalloc_to_page(p) :
				virt_to_page(p);

			__bio_add_page(bio, page, n, off);
			done += n;
		}
		if (is_vmalloc_addr(buf) && op_is_write(opf))
			flush_kernel_vmap_range(buf, done);
		r = submit_bio_wait(bio);
		if (is_vmalloc_addr(buf) && !op_is_write(opf))
			invalidate_kernel_vmap_range(buf, done);
		bio_put(bio);
		buf += done;
		len -= done;
		sector += done >> SECTOR_SHIFT;
		/* only the first bio of a split write carries the flush */
		opf &= ~REQ_PREFLUSH;
	}
	if (r)
		this_cpu_inc(sc->stats->cache_errors);
	return r;
}

static int ssc_bdev_discard(void *priv, sector_t sector, sector_t nr_sects)
{
	struct ssc_c *sc = priv;
	struct block_device *bdev = sc->cache_dev->bdev;

	if (!bdev_max_discard_sectors(bdev))
		return 0;
	return blkdev_issue_discard(bdev, sector, nr_sects, GFP_NOIO);
}

/* The engine wants GC; never once suspend has begun (see ssc_stop_background()). */
static void ssc_kick_gc(void *priv)
{
	struct ssc_c *sc = priv;

	if (!READ_ONCE(sc->suspended))
		queue_work(sc->gc_wq, &sc->gc_work);
}

/*
 * A clean mapping is about to become durable: the origin writes that
 * completed so far are made durable first, or a crash could leave a clean
 * block whose data the origin lost (served until GC drops it, then the
 * older data: a block that changes with no write). Serialized by the
 * engine's commit lock.
 */
static int ssc_before_clean_commit(void *priv)
{
	struct ssc_c *sc = priv;
	s64 gen = atomic64_read(&sc->origin_writes);
	int r;

	if (gen == sc->origin_flushed)
		return 0;
	r = blkdev_issue_flush(sc->origin_dev->bdev);
	if (r) {
		this_cpu_inc(sc->stats->origin_errors);
		return r;
	}
	sc->origin_flushed = gen;
	return 0;
}

static const struct ssc_io_ops ssc_bdev_ops = {
	.rw = ssc_bdev_rw,
	.discard = ssc_bdev_discard,
	.kick_gc = ssc_kick_gc,
	.before_clean_commit = ssc_before_clean_commit,
	.event = ssc_engine_event,
};

/*
 * Run a clone of @bio against @bdev at @sector with @opf and wait for it.
 * The clone shares @bio's pages.
 */
static int ssc_clone_io(struct ssc_c *sc, struct bio *bio,
			struct block_device *bdev, sector_t sector, blk_opf_t opf)
{
	struct bio *clone;
	int r;

	clone = bio_alloc_clone(bdev, bio, GFP_NOIO, &sc->bs);
	clone->bi_opf = opf;
	clone->bi_iter.bi_sector = sector;
	r = submit_bio_wait(clone);
	bio_put(clone);
	return r;
}

struct ssc_pair {
	atomic_t pending;
	struct completion done;
	blk_status_t status[2];
};

static void ssc_pair_end(struct ssc_pair *p, int half, struct bio *bio)
{
	p->status[half] = bio->bi_status;
	bio_put(bio);
	if (atomic_dec_and_test(&p->pending))
		complete(&p->done);
}

static void ssc_pair_endio_origin(struct bio *bio)
{
	ssc_pair_end(bio->bi_private, 0, bio);
}

static void ssc_pair_endio_cache(struct bio *bio)
{
	ssc_pair_end(bio->bi_private, 1, bio);
}

/* A bio over the whole of a bounce buffer, from @bs. */
static struct bio *ssc_bounce_bio(struct ssc_c *sc, struct page *page,
				  struct block_device *bdev, sector_t sector,
				  blk_opf_t opf, struct bio_set *bs)
{
	struct bio *bio = bio_alloc_bioset(bdev, 1, opf, GFP_NOIO, bs);

	bio->bi_iter.bi_sector = sector;
	__bio_add_page(bio, page, sc->block_sectors << SECTOR_SHIFT, 0);
	return bio;
}

/* Synchronous I/O of a whole bounce buffer. */
static int ssc_bounce_io(struct ssc_c *sc, struct page *page,
			 struct block_device *bdev, sector_t sector, blk_opf_t opf)
{
	struct bio *bio = ssc_bounce_bio(sc, page, bdev, sector, opf, &sc->bs);
	int r = submit_bio_wait(bio);

	bio_put(bio);
	return r;
}

/* Copy between a block-sized bio and a bounce buffer. */
static void ssc_bounce_copy(struct bio *bio, struct page *page, bool to_bio)
{
	u8 *buf = page_address(page);
	struct bvec_iter iter;
	struct bio_vec bv;

	bio_for_each_segment(bv, bio, iter) {
		if (to_bio)
			memcpy_to_bvec(&bv, buf);
		else
			memcpy_from_bvec(buf, &bv);
		buf += bv.bv_len;
	}
}

/*
 * Write @bio's data to the origin and, if @cache_sector is not ~0, to the
 * cache device at the same time. Returns the two results. When both are
 * written, the data is copied first and both writes come from the copy:
 * with O_DIRECT the caller's pages may change while the writes run, and
 * then the cache would hold something else than the origin.
 */
static void ssc_write_both(struct ssc_c *sc, struct bio *bio, blk_opf_t origin_opf,
			   sector_t cache_sector, int *origin_r, int *cache_r)
{
	sector_t origin_sector = dm_target_offset(sc->ti, bio->bi_iter.bi_sector);
	struct page *page = NULL;
	struct ssc_pair p;
	struct bio *c[2];
	int i, n = cache_sector == (sector_t)-1 ? 1 : 2;

	atomic_set(&p.pending, n);
	init_completion(&p.done);
	p.status[0] = BLK_STS_OK;
	p.status[1] = BLK_STS_OK;
	if (n == 2) {
		page = mempool_alloc(&sc->bounce_pool, GFP_NOIO);
		ssc_bounce_copy(bio, page, false);
		c[0] = ssc_bounce_bio(sc, page, sc->origin_dev->bdev, origin_sector,
				      origin_opf, &sc->bs);
		c[1] = ssc_bounce_bio(sc, page, sc->cache_dev->bdev, cache_sector,
				      REQ_OP_WRITE, &sc->cache_bs);
		c[1]->bi_private = &p;
		c[1]->bi_end_io = ssc_pair_endio_cache;
	} else {
		c[0] = bio_alloc_clone(sc->origin_dev->bdev, bio, GFP_NOIO, &sc->bs);
		c[0]->bi_opf = origin_opf;
		c[0]->bi_iter.bi_sector = origin_sector;
	}
	c[0]->bi_private = &p;
	c[0]->bi_end_io = ssc_pair_endio_origin;
	for (i = 0; i < n; i++)
		submit_bio_noacct(c[i]);
	wait_for_completion_io(&p.done);
	if (page)
		mempool_free(page, &sc->bounce_pool);
	*origin_r = blk_status_to_errno(p.status[0]);
	*cache_r = n == 2 ? blk_status_to_errno(p.status[1]) : -EIO;
	if (!*origin_r)
		atomic64_inc(&sc->origin_writes);
}

static void ssc_remap_origin(struct ssc_c *sc, struct bio *bio)
{
	bio_set_dev(bio, sc->origin_dev->bdev);
	if (bio_sectors(bio))
		bio->bi_iter.bi_sector = dm_target_offset(sc->ti, bio->bi_iter.bi_sector);
}

static void ssc_remap_cache(struct ssc_c *sc, struct bio *bio, const struct ssc_loc *loc)
{
	sector_t off = ssc_block_offset(sc, dm_target_offset(sc->ti, bio->bi_iter.bi_sector));

	bio_set_dev(bio, sc->cache_dev->bdev);
	bio->bi_iter.bi_sector = loc->sector + off;
}

static void ssc_endio(struct bio *bio, int r)
{
	bio->bi_status = errno_to_blk_status(r);
	bio_endio(bio);
}

/* ---------------------------------------------------------------------
 * The bio path
 */

static bool ssc_wb_failed(struct ssc_c *sc)
{
	return ssc_engine_error(sc->eng) != 0;
}

/* Called on every write-back write: lockless reads only. */
static void ssc_maybe_kick_writeback(struct ssc_c *sc)
{
	u64 dirty = ssc_dirty_count(sc->eng);

	if (READ_ONCE(sc->suspended))
		return;
	/* a writeback_all asked for while suspended ends in the worker */
	if (READ_ONCE(sc->writeback_all) ||
	    (dirty && (sc->mode != SSC_MODE_WRITEBACK ||
		       dirty * 100 > sc->nr_slots * sc->dirty_high)))
		queue_work(sc->wb_wq, &sc->wb_work);
}

/* Write a filled block to the cache and publish it clean. */
static void ssc_fill_block(struct ssc_c *sc, struct page *page, const struct ssc_loc *loc,
			   u64 oblock)
{
	u64 lsn;

	if (ssc_bounce_io(sc, page, sc->cache_dev->bdev, loc->sector, REQ_OP_WRITE)) {
		this_cpu_inc(sc->stats->cache_errors);
		ssc_unreserve(sc->eng, loc);
		return;
	}
	this_cpu_add(sc->stats->data_sectors, sc->block_sectors);
	/* a new clean block: its record may stay buffered */
	ssc_publish(sc->eng, oblock, loc, false, &lsn);
}

/*
 * Read miss: read the origin into a buffer the target owns, complete the
 * bio, then cache the block clean behind it, in the same worker. The
 * block's cell stays held until the fill is published, so a write or
 * discard of the block waits for it; the reader does not. The fill runs on
 * in this work item rather than being queued: a discard that waits for its
 * cell must never wait for work queued behind it (the rescuer runs one item
 * at a time), and postsuspend's flush of sc->wq waits for a running item.
 * A fill is dropped (the read goes straight to the origin) when no bounce
 * buffer can be had without waiting; when no pooled cell can, it runs
 * before the bio completes, as it always did.
 */
static void ssc_read_miss(struct ssc_c *sc, struct bio *bio, u64 oblock)
{
	struct ssc_bio *pb = ssc_pb(bio);
	struct ssc_cell *cell, *tail;
	struct page *page = NULL;
	struct ssc_loc loc;
	bool fill;
	int r;

	/*
	 * Once the bio waits on the cell it belongs to the cell's holder, who
	 * may requeue it at once: another worker may run it, take the cell
	 * and complete it before this one returns. Touch nothing of it then.
	 */
	cell = ssc_cell_get_bio(sc, oblock, bio, true);
	if (!cell)
		return;		/* requeued when the cell is free */
	pb->cell = cell;

	if (ssc_get(sc->eng, oblock, false, &loc) != SSC_NOT_PRESENT) {
		/* filled while we waited */
		ssc_cell_put(sc, pb->cell);
		pb->cell = NULL;
		this_cpu_inc(sc->stats->read_hits);
		pb->loc = loc;
		pb->flags |= PB_PINNED | PB_CACHE_READ;
		pb->saved_iter = bio->bi_iter;
		ssc_remap_cache(sc, bio, &loc);
		submit_bio_noacct(bio);
		return;
	}
	this_cpu_inc(sc->stats->read_misses);
	fill = ssc_full_block(sc, bio) && sc->mode != SSC_MODE_PASSTHROUGH &&
		!ssc_engine_error(sc->eng);
	if (fill) {
		page = mempool_alloc(&sc->bounce_pool, GFP_NOWAIT | __GFP_NOWARN);
		fill = page && !ssc_reserve(sc->eng, oblock, false, &loc);
	}
	if (!fill) {
		r = ssc_clone_io(sc, bio, sc->origin_dev->bdev,
				 dm_target_offset(sc->ti, bio->bi_iter.bi_sector),
				 REQ_OP_READ);
		if (r)
			this_cpu_inc(sc->stats->origin_errors);
		goto out;
	}
	/*
	 * Fill from a buffer the target owns: with O_DIRECT, the reader's
	 * pages may change between the origin read and the cache write, and
	 * what is cached must be what the origin holds.
	 */
	r = ssc_bounce_io(sc, page, sc->origin_dev->bdev,
			  dm_target_offset(sc->ti, bio->bi_iter.bi_sector), REQ_OP_READ);
	if (r) {
		this_cpu_inc(sc->stats->origin_errors);
		ssc_unreserve(sc->eng, &loc);
		goto out;
	}
	ssc_bounce_copy(bio, page, true);
	tail = ssc_cell_alloc(sc, GFP_NOWAIT | __GFP_NOWARN);
	if (tail) {
		/*
		 * The reader has its data: complete it now. The cell moves
		 * out of the per-bio data first: that goes with the bio.
		 */
		ssc_cell_move(sc, cell, tail);
		pb->cell = NULL;
		ssc_endio(bio, 0);
		ssc_fill_block(sc, page, &loc, oblock);
		mempool_free(page, &sc->bounce_pool);
		ssc_cell_put(sc, tail);
		return;
	}
	ssc_fill_block(sc, page, &loc, oblock);
out:
	if (page)
		mempool_free(page, &sc->bounce_pool);
	ssc_cell_put(sc, pb->cell);
	pb->cell = NULL;
	ssc_endio(bio, r);
}

/*
 * Write the bio to the origin only, dropping any cached copy in the order
 * that never leaves a mapping to older data than the origin holds.
 */
static int ssc_write_around(struct ssc_c *sc, struct bio *bio, u64 oblock,
			    enum ssc_state st)
{
	blk_opf_t opf = bio->bi_opf;
	int r, cr;
	u64 lsn;

	if (st == SSC_CLEAN) {
		r = ssc_evict(sc->eng, oblock, false, &lsn);
		if (!r)
			r = ssc_commit(sc->eng, lsn);
		if (r)
			return r;
	} else if (st == SSC_NOT_PRESENT) {
		/*
		 * An eviction that could not be recorded leaves a durable
		 * mapping to the old data: writing the origin now would make
		 * it stale for the next load. A failed cache refuses instead.
		 */
		r = ssc_commit(sc->eng, ssc_remove_barrier(sc->eng));
		if (r)
			return r;
	} else {
		/*
		 * dirty: the origin copy must be durable before the eviction,
		 * and so must the record that made the block dirty before the
		 * origin gets newer data (a crash could otherwise bring back
		 * an older clean mapping of it)
		 */
		r = ssc_commit_pending(sc->eng);
		if (r)
			return r;
		opf |= REQ_FUA;
	}
	ssc_write_both(sc, bio, opf, (sector_t)-1, &r, &cr);
	if (r) {
		this_cpu_inc(sc->stats->origin_errors);
		return r;
	}
	if (st == SSC_DIRTY) {
		r = ssc_evict(sc->eng, oblock, true, &lsn);
		if (!r)
			r = ssc_commit(sc->eng, lsn);
	}
	return r;
}

/*
 * Overwrite a dirty block in place: its mapping and state do not change, so
 * no metadata is written. While garbage collection is moving the block, a
 * partial write (@wait) waits for the move; a full one gives up. Returns 1
 * if the bio was sent, 0 if the block cannot be written in place (no longer
 * dirty, or a full write while GC moves it), or an error: a partial write
 * must never go around a dirty block, which would lose the rest of it.
 */
static int ssc_write_in_place(struct ssc_c *sc, struct bio *bio, u64 oblock,
			      bool wait)
{
	struct ssc_bio *pb = ssc_pb(bio);
	struct ssc_loc loc;
	enum ssc_state st;
	int r;

	/*
	 * The block's record may still be pending (commit at FLUSH): a FUA
	 * write is durable when it completes, so its mapping must be too.
	 */
	if (bio->bi_opf & REQ_FUA) {
		r = ssc_commit_pending(sc->eng);
		if (r)
			return r;
	}
	for (;;) {
		st = ssc_get(sc->eng, oblock, true, &loc);
		if (st != SSC_DIRTY)
			return 0;
		if (loc.slot != U32_MAX)
			break;
		if (!wait)
			return 0;
		/*
		 * garbage collection is moving it, or has moved it and not yet
		 * committed the move: commit, or wait for the move
		 */
		r = ssc_commit_pending(sc->eng);
		if (r)
			return r;
		usleep_range(500, 1000);
	}
	pb->loc = loc;
	pb->flags |= PB_PINNED;
	ssc_remap_cache(sc, bio, &loc);
	submit_bio_noacct(bio);	/* the cell is released at end_io */
	return 1;
}

static void ssc_write(struct ssc_c *sc, struct bio *bio, u64 oblock)
{
	struct ssc_bio *pb = ssc_pb(bio);
	bool full = ssc_full_block(sc, bio), around;
	struct ssc_cell *cell;
	enum ssc_state state;
	struct ssc_loc loc;
	int r, cr;
	u64 lsn;

	cell = ssc_cell_get_bio(sc, oblock, bio, true);
	if (!cell)
		return;		/* the bio is the holder's now: see ssc_read_miss() */
	pb->cell = cell;

	state = ssc_peek(sc->eng, oblock);
	if (state == SSC_NOT_PRESENT)
		this_cpu_inc(sc->stats->write_misses);
	else
		this_cpu_inc(sc->stats->write_hits);

	if (sc->mode == SSC_MODE_WRITEBACK && ssc_wb_failed(sc)) {
		/* read-only: the cache may hold the only copy of dirty data */
		r = -EIO;
		goto out;
	}

	if (state == SSC_DIRTY && (!full || sc->mode == SSC_MODE_WRITEBACK)) {
		r = ssc_write_in_place(sc, bio, oblock, !full);
		if (r > 0)
			return;
		if (r < 0)
			goto out;
		state = ssc_peek(sc->eng, oblock);
	}

	around = !full || ssc_engine_error(sc->eng) ||
		 sc->mode == SSC_MODE_WRITEAROUND || sc->mode == SSC_MODE_PASSTHROUGH;
	if (!around && (pb->flags & PB_BYPASS) && state != SSC_DIRTY) {
		/* counted only when it is the bypass that keeps it out */
		this_cpu_inc(sc->stats->bypassed);
		around = true;
	}
	if (around) {
		r = ssc_write_around(sc, bio, oblock, state);
		goto out;
	}

	if (sc->mode == SSC_MODE_WRITEBACK) {
		u64 dirty = ssc_dirty_count(sc->eng);

		/*
		 * Never wait for space while holding a cell: write-back may
		 * need this very cell to make the space. Go around instead.
		 */
		if (dirty * 100 >= sc->nr_slots * SSC_DIRTY_HARD_PCT ||
		    ssc_reserve(sc->eng, oblock, false, &loc)) {
			ssc_maybe_kick_writeback(sc);
			r = ssc_write_around(sc, bio, oblock, state);
			goto out;
		}
		r = ssc_clone_io(sc, bio, sc->cache_dev->bdev, loc.sector, REQ_OP_WRITE);
		if (r) {
			this_cpu_inc(sc->stats->cache_errors);
			ssc_unreserve(sc->eng, &loc);
			r = ssc_write_around(sc, bio, oblock, state);
			goto out;
		}
		this_cpu_add(sc->stats->data_sectors, sc->block_sectors);
		r = ssc_publish(sc->eng, oblock, &loc, true, &lsn);
		if (r == -ENOMEM) {
			r = ssc_write_around(sc, bio, oblock, state);
			goto out;
		}
		/*
		 * Commit at FLUSH: the record becomes durable with the next
		 * FLUSH, FUA write or periodic commit, as the block layer
		 * promises; a FUA write waits for it.
		 */
		if (!r && (bio->bi_opf & REQ_FUA))
			r = ssc_commit(sc->eng, lsn);
		ssc_maybe_kick_writeback(sc);
		goto out;
	}

	/* writethrough */
	if (state == SSC_CLEAN) {
		r = ssc_evict(sc->eng, oblock, false, &lsn);
		if (!r)
			r = ssc_commit(sc->eng, lsn);
		if (r) {
			r = ssc_write_around(sc, bio, oblock, state);
			goto out;
		}
	} else if (state == SSC_NOT_PRESENT) {
		r = ssc_commit(sc->eng, ssc_remove_barrier(sc->eng));
		if (r)
			goto out;	/* see ssc_write_around() */
	}
	if (ssc_reserve(sc->eng, oblock, false, &loc))
		loc.sector = (sector_t)-1;
	ssc_write_both(sc, bio, bio->bi_opf | (state == SSC_DIRTY ? REQ_FUA : 0),
		       loc.sector, &r, &cr);
	if (loc.sector != (sector_t)-1) {
		if (r || cr) {
			if (cr)
				this_cpu_inc(sc->stats->cache_errors);
			ssc_unreserve(sc->eng, &loc);
			loc.sector = (sector_t)-1;
		} else {
			this_cpu_add(sc->stats->data_sectors, sc->block_sectors);
		}
	}
	if (r) {
		this_cpu_inc(sc->stats->origin_errors);
		goto out;
	}
	/*
	 * write_clean. Replacing a dirty mapping is committed before the write
	 * is acknowledged: a crash would bring the old dirty block back, and
	 * write-back would copy it over this write.
	 */
	if (loc.sector != (sector_t)-1 &&
	    !ssc_publish(sc->eng, oblock, &loc, false, &lsn) && lsn) {
		r = ssc_commit(sc->eng, lsn);
		if (r)
			goto out;
	}
	if (state == SSC_DIRTY && ssc_peek(sc->eng, oblock) == SSC_DIRTY) {
		/* not re-cached: drop the old dirty copy (origin is durable) */
		r = ssc_evict(sc->eng, oblock, true, &lsn);
		if (!r)
			r = ssc_commit(sc->eng, lsn);
	}
out:
	ssc_cell_put(sc, pb->cell);
	pb->cell = NULL;
	ssc_endio(bio, r);
}

static void ssc_discard(struct ssc_c *sc, struct bio *bio)
{
	sector_t start = dm_target_offset(sc->ti, bio->bi_iter.bi_sector);
	sector_t end = start + bio_sectors(bio);
	u64 ob, first = ssc_oblock(sc, start), last = ssc_oblock(sc, end - 1);
	sector_t keep_lo = start, keep_hi = end;
	u64 lsn, max_lsn = 0;
	int r = 0;

	for (ob = first; ob <= last && !r; ob++) {
		sector_t bs = ob << sc->block_shift;
		bool full = bs >= start && bs + sc->block_sectors <= end;
		struct ssc_cell *cell;
		enum ssc_state st;

		st = ssc_peek(sc->eng, ob);
		/* a fill in flight holds the cell of a block not yet cached */
		if (st == SSC_NOT_PRESENT && !ssc_cell_held(sc, ob))
			continue;
		cell = ssc_cell_lock(sc, ob);
		st = ssc_peek(sc->eng, ob);
		if (st == SSC_DIRTY && !full) {
			/* keep the part of a dirty block outside the discard */
			if (ob == first)
				keep_lo = min(bs + sc->block_sectors, end);
			else
				keep_hi = max(bs, keep_lo);
		} else if (st != SSC_NOT_PRESENT) {
			r = ssc_evict(sc->eng, ob, true, &lsn);
			max_lsn = max(max_lsn, lsn);
		}
		ssc_cell_put(sc, cell);
		cond_resched();
	}
	if (!r)
		r = ssc_commit(sc->eng, max(max_lsn, ssc_remove_barrier(sc->eng)));
	if (r || keep_hi <= keep_lo) {
		ssc_endio(bio, r);
		return;
	}
	bio_set_dev(bio, sc->origin_dev->bdev);
	bio->bi_iter.bi_sector = keep_lo;
	bio->bi_iter.bi_size = (keep_hi - keep_lo) << SECTOR_SHIFT;
	submit_bio_noacct(bio);
}

static void ssc_flush_bio(struct ssc_c *sc, struct bio *bio)
{
	int r = ssc_flush(sc->eng);

	/*
	 * With dirty blocks, in any mode (partial writes to a dirty block go
	 * in place), a FLUSH needs the cache flush: without it, it fails.
	 */
	if (r && (sc->mode == SSC_MODE_WRITEBACK || ssc_dirty_count(sc->eng))) {
		ssc_endio(bio, r);
		return;
	}
	ssc_remap_origin(sc, bio);
	submit_bio_noacct(bio);
}

/* A cache read failed: clean data is read again from the origin. */
static void ssc_read_retry(struct ssc_c *sc, struct bio *bio)
{
	struct ssc_bio *pb = ssc_pb(bio);
	u64 oblock = ssc_oblock(sc, dm_target_offset(sc->ti, pb->saved_iter.bi_sector));
	u64 lsn;

	if (ssc_peek(sc->eng, oblock) == SSC_DIRTY) {
		ssc_endio(bio, -EIO);
		return;
	}
	/* the copy on flash is bad: drop it */
	if (!ssc_evict(sc->eng, oblock, false, &lsn))
		ssc_commit(sc->eng, lsn);
	bio->bi_iter = pb->saved_iter;
	bio->bi_status = BLK_STS_OK;
	pb->flags |= PB_RETRIED;
	ssc_remap_origin(sc, bio);
	submit_bio_noacct(bio);
}

static void ssc_work(struct work_struct *work)
{
	struct ssc_bio *pb = container_of(work, struct ssc_bio, work);
	struct ssc_c *sc = pb->sc;
	struct bio *bio = dm_bio_from_per_bio_data(pb, sizeof(struct ssc_bio));
	u64 oblock;

	if (pb->flags & PB_CACHE_READ) {
		ssc_read_retry(sc, bio);
		return;
	}
	if (bio_op(bio) == REQ_OP_DISCARD) {
		ssc_discard(sc, bio);
		return;
	}
	if (!bio_sectors(bio)) {
		ssc_flush_bio(sc, bio);
		return;
	}
	oblock = ssc_oblock(sc, dm_target_offset(sc->ti, bio->bi_iter.bi_sector));
	if (bio_data_dir(bio) == READ)
		ssc_read_miss(sc, bio, oblock);
	else
		ssc_write(sc, bio, oblock);
}

/*
 * Run @bio in a worker. Its work item was set up by .map: re-initialised
 * here, a requeue from a cell's release could run at once on another
 * worker, beside the one that queued the bio on the cell and is still
 * returning from the item.
 */
static void ssc_defer(struct ssc_c *sc, struct bio *bio)
{
	struct ssc_bio *pb = ssc_pb(bio);

	/*
	 * Our own I/O for it is waited for, never polled; a cache read retried
	 * on the origin must not be polled with the cache's queue number.
	 */
	bio_clear_polled(bio);
	WRITE_ONCE(bio->bi_cookie, BLK_QC_T_NONE);
	queue_work(sc->wq, &pb->work);
}

/*
 * Does this bio continue a stream that has already run past the sequential
 * threshold? Streams are matched on their next sector; a bio that matches
 * none replaces the least recently used stream.
 */
static bool ssc_sequential(struct ssc_c *sc, struct bio *bio)
{
	sector_t sector = bio->bi_iter.bi_sector;
	struct ssc_stream *s, *lru = &sc->streams[0];
	unsigned int i;
	bool seq;

	spin_lock(&sc->seq_lock);
	for (i = 0; i < SSC_SEQ_STREAMS; i++) {
		s = &sc->streams[i];
		if (s->next == sector && s->run)
			break;
		if (time_before(s->last, lru->last))
			lru = s;
	}
	if (i == SSC_SEQ_STREAMS) {
		s = lru;
		s->run = 0;
	}
	s->next = sector + bio_sectors(bio);
	s->run += bio_sectors(bio);
	s->last = jiffies;
	seq = s->run > sc->seq_threshold;
	spin_unlock(&sc->seq_lock);
	return seq;
}

static int ssc_map(struct dm_target *ti, struct bio *bio)
{
	struct ssc_c *sc = ti->private;
	struct ssc_bio *pb = ssc_pb(bio);
	struct ssc_loc loc;
	enum ssc_state st;
	bool around;
	u64 oblock;

	pb->sc = sc;
	pb->cell = NULL;
	pb->flags = 0;
	INIT_WORK(&pb->work, ssc_work);

	if (unlikely(!bio_sectors(bio) || bio_op(bio) == REQ_OP_DISCARD)) {
		if (bio_op(bio) == REQ_OP_DISCARD || (bio->bi_opf & REQ_PREFLUSH)) {
			ssc_defer(sc, bio);
			return DM_MAPIO_SUBMITTED;
		}
		ssc_remap_origin(sc, bio);
		return DM_MAPIO_REMAPPED;
	}

	oblock = ssc_oblock(sc, dm_target_offset(ti, bio->bi_iter.bi_sector));
	if (sc->seq_threshold && ssc_sequential(sc, bio))
		pb->flags |= PB_BYPASS;

	if (bio_data_dir(bio) == READ) {
		st = ssc_get(sc->eng, oblock, false, &loc);
		if (st != SSC_NOT_PRESENT) {
			if (st == SSC_CLEAN && (ssc_engine_error(sc->eng) ||
						sc->mode == SSC_MODE_PASSTHROUGH)) {
				/* a failed or retiring cache serves clean data from the origin */
				ssc_put(sc->eng, &loc);
				ssc_remap_origin(sc, bio);
				return DM_MAPIO_REMAPPED;
			}
			this_cpu_inc(sc->stats->read_hits);
			pb->loc = loc;
			pb->flags = PB_PINNED | PB_CACHE_READ;
			pb->saved_iter = bio->bi_iter;
			ssc_remap_cache(sc, bio, &loc);
			return DM_MAPIO_REMAPPED;
		}
		around = !ssc_full_block(sc, bio) || sc->mode == SSC_MODE_PASSTHROUGH ||
			 ssc_engine_error(sc->eng);
		if (!around && (pb->flags & PB_BYPASS)) {
			this_cpu_inc(sc->stats->bypassed);
			around = true;
		}
		if (around) {
			this_cpu_inc(sc->stats->read_misses);
			ssc_remap_origin(sc, bio);
			return DM_MAPIO_REMAPPED;
		}
		ssc_defer(sc, bio);
		return DM_MAPIO_SUBMITTED;
	}

	/*
	 * write-back: a write to a dirty block goes in place, no metadata. The
	 * cell comes first: looked up before it, the block could be written
	 * back and cleaned before the write lands, which then nobody writes
	 * back and GC drops. A FUA write may need a commit first: the worker's.
	 */
	if (sc->mode == SSC_MODE_WRITEBACK && !ssc_wb_failed(sc) && !(bio->bi_opf & REQ_FUA)) {
		pb->cell = ssc_cell_get_bio(sc, oblock, bio, false);
		if (pb->cell) {
			st = ssc_get(sc->eng, oblock, true, &loc);
			ssc_inject_map_delay(oblock);
			if (st == SSC_DIRTY && loc.slot != U32_MAX) {
				this_cpu_inc(sc->stats->write_hits);
				pb->loc = loc;
				pb->flags = PB_PINNED;
				ssc_remap_cache(sc, bio, &loc);
				return DM_MAPIO_REMAPPED;
			}
			ssc_cell_put(sc, pb->cell);
			pb->cell = NULL;
		}
	}
	ssc_defer(sc, bio);
	return DM_MAPIO_SUBMITTED;
}

static int ssc_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error)
{
	struct ssc_c *sc = ti->private;
	struct ssc_bio *pb = ssc_pb(bio);

	if (pb->flags & PB_PINNED) {
		pb->flags &= ~PB_PINNED;
		ssc_put(sc->eng, &pb->loc);
		if (*error)
			this_cpu_inc(sc->stats->cache_errors);
		else if (bio_data_dir(bio) == WRITE)
			this_cpu_add(sc->stats->data_sectors, bio_sectors(bio));
		if (*error && (pb->flags & PB_CACHE_READ) && !(pb->flags & PB_RETRIED)) {
			/* retry a failed cache read from the origin, from a worker */
			ssc_defer(sc, bio);
			return DM_ENDIO_INCOMPLETE;
		}
	}
	if (pb->cell) {
		ssc_cell_put(sc, pb->cell);
		pb->cell = NULL;
	}
	return DM_ENDIO_DONE;
}

/* ---------------------------------------------------------------------
 * Background work: garbage collection, write-back, group commit
 */

static void ssc_gc_worker(struct work_struct *work)
{
	struct ssc_c *sc = container_of(work, struct ssc_c, gc_work);
	int r;

	r = ssc_gc(sc->eng);
	if (r == -ENOSPC && !READ_ONCE(sc->suspended)) {
		/* everything left is dirty: write-back makes room */
		queue_work(sc->wb_wq, &sc->wb_work);
	}
}

/*
 * Write back a run of at most @max contiguous dirty blocks starting at
 * @first, holding their cells, through @lane's buffer; returns the number of
 * blocks written back, or an error. Runs of different lanes proceed in
 * parallel: the cells keep them off each other's blocks.
 */
static int ssc_writeback_run(struct ssc_c *sc, struct ssc_wb_lane *lane,
			     u64 first, u64 max)
{
	size_t bbytes = sc->block_sectors << SECTOR_SHIFT;
	unsigned int ppb = DIV_ROUND_UP(bbytes, PAGE_SIZE);
	struct ssc_cell *cells[SSC_WB_MAX_BYTES / (SSC_MIN_BLOCK_SECTORS << SECTOR_SHIFT)];
	unsigned int n = 0, i, j;
	struct bio *bio;
	int r = 0;

	if (first >= (sc->ti->len >> sc->block_shift)) {
		/* the engine refuses to load such a block: never write past the end */
		DMERR_LIMIT("write-back of block %llu past the end of the origin refused",
			    (unsigned long long)first);
		return -EINVAL;
	}
	mutex_lock(&lane->lock);
	cells[0] = ssc_cell_lock(sc, first);
	if (ssc_peek(sc->eng, first) != SSC_DIRTY) {
		ssc_cell_put(sc, cells[0]);
		mutex_unlock(&lane->lock);
		return 0;
	}
	n = 1;
	/* extend the run with neighbours that are dirty and not busy */
	while (n < sc->wb_max_blocks && n < max &&
	       first + n < (sc->ti->len >> sc->block_shift)) {
		struct ssc_cell *c;

		if (ssc_peek(sc->eng, first + n) != SSC_DIRTY)
			break;
		c = ssc_cell_try(sc, first + n);
		if (!c)
			break;
		if (ssc_peek(sc->eng, first + n) != SSC_DIRTY) {
			ssc_cell_put(sc, c);
			break;
		}
		cells[n++] = c;
	}

	/* read the blocks from the cache */
	for (i = 0; i < n && !r; i++) {
		struct ssc_loc loc;
		enum ssc_state st;

		st = ssc_get(sc->eng, first + i, false, &loc);
		if (st != SSC_DIRTY) {
			if (st != SSC_NOT_PRESENT)
				ssc_put(sc->eng, &loc);
			r = -ESTALE;
			break;
		}
		bio = bio_alloc_bioset(sc->cache_dev->bdev, ppb, REQ_OP_READ, GFP_NOIO,
				       &sc->wb_bs);
		bio->bi_iter.bi_sector = loc.sector;
		for (j = 0; j < ppb; j++)
			__bio_add_page(bio, lane->pages[i * ppb + j],
				       min_t(size_t, PAGE_SIZE, bbytes - j * PAGE_SIZE), 0);
		r = submit_bio_wait(bio);
		bio_put(bio);
		ssc_put(sc->eng, &loc);
		if (r)
			this_cpu_inc(sc->stats->cache_errors);
	}

	/*
	 * The records that made these blocks dirty are durable before the
	 * origin has their data: a crash must not bring back an older clean
	 * mapping of a block whose origin copy is already newer.
	 */
	if (!r)
		r = ssc_commit_pending(sc->eng);
	/* one origin write for the whole run, durable before clean */
	if (!r) {
		bio = bio_alloc_bioset(sc->origin_dev->bdev, n * ppb,
				       REQ_OP_WRITE | REQ_FUA | REQ_SYNC, GFP_NOIO, &sc->wb_bs);
		bio->bi_iter.bi_sector = first << sc->block_shift;
		for (i = 0; i < n; i++)
			for (j = 0; j < ppb; j++)
				__bio_add_page(bio, lane->pages[i * ppb + j],
					       min_t(size_t, PAGE_SIZE, bbytes - j * PAGE_SIZE), 0);
		r = submit_bio_wait(bio);
		bio_put(bio);
		if (r)
			this_cpu_inc(sc->stats->origin_errors);
	}
	for (i = 0; i < n; i++) {
		if (!r && !ssc_clean(sc->eng, first + i))
			this_cpu_inc(sc->stats->writebacks);
		ssc_cell_put(sc, cells[i]);
	}
	mutex_unlock(&lane->lock);
	return r ? r : n;
}

/* One lane: write back the oldest dirty blocks until there are few enough. */
static void ssc_wb_lane_worker(struct work_struct *work)
{
	struct ssc_wb_lane *lane = container_of(work, struct ssc_wb_lane, work);
	struct ssc_c *sc = lane->sc;
	struct ssc_engine_stats st;
	u64 target, ob;
	int r;

	for (;;) {
		if (READ_ONCE(sc->suspended))
			return;
		ssc_engine_get_stats(sc->eng, &st);
		if (st.error)
			return;
		/* in write-back, stop at dirty_low; in other modes drain */
		target = 0;
		if (sc->mode == SSC_MODE_WRITEBACK && !READ_ONCE(sc->writeback_all))
			target = div_u64(st.nr_slots * sc->dirty_low, 100);
		if (st.dirty <= target)
			break;
		if (ssc_next_dirty(sc->eng, &ob))
			break;
		r = ssc_writeback_run(sc, lane, ob, U64_MAX);
		if (r < 0 && r != -ESTALE) {
			DMERR_LIMIT("write-back of block %llu failed: %d",
				    (unsigned long long)ob, r);
			msleep(100);
		}
		cond_resched();
	}
}

static void ssc_wb_worker(struct work_struct *work)
{
	struct ssc_c *sc = container_of(work, struct ssc_c, wb_work);
	struct ssc_engine_stats st;
	unsigned int i;

	for (i = 0; i < SSC_WB_LANES; i++)
		queue_work(sc->wb_lane_wq, &sc->wb_lanes[i].work);
	for (i = 0; i < SSC_WB_LANES; i++)
		flush_work(&sc->wb_lanes[i].work);
	ssc_engine_get_stats(sc->eng, &st);
	if (!st.dirty && READ_ONCE(sc->writeback_all)) {
		struct ssc_stats sum;

		/* retire: make the clean state durable */
		ssc_flush(sc->eng);
		WRITE_ONCE(sc->writeback_all, false);
		ssc_stats_sum(sc, &sum);
		spin_lock_irq(&sc->ev.lock);
		sc->ev.d.wb_blocks = sum.writebacks >= sc->wb_all_base ?
			sum.writebacks - sc->wb_all_base : sum.writebacks;
		sc->ev.d.wb_us = ktime_us_delta(ktime_get(), sc->wb_all_start);
		spin_unlock_irq(&sc->ev.lock);
		ssc_event(sc, DM_SSC_EVENT_WRITEBACK_DONE);
	}
	/* space may be reclaimable now */
	if (ssc_gc_needed(sc->eng))
		ssc_kick_gc(sc);
}

static void ssc_commit_worker(struct work_struct *work)
{
	struct ssc_c *sc = container_of(to_delayed_work(work), struct ssc_c,
					commit_work);

	ssc_commit_pending(sc->eng);
	ssc_maybe_kick_writeback(sc);
	if (ssc_gc_needed(sc->eng))
		ssc_kick_gc(sc);
	if (!READ_ONCE(sc->suspended))
		queue_delayed_work(sc->gc_wq, &sc->commit_work, SSC_COMMIT_INTERVAL);
}

/* ---------------------------------------------------------------------
 * Netlink: the dm_ssc generic netlink family (include/uapi/linux/dm-ssc.h)
 */

static_assert((int)SSC_MODE_WRITETHROUGH == DM_SSC_MODE_WRITETHROUGH);
static_assert((int)SSC_MODE_WRITEBACK == DM_SSC_MODE_WRITEBACK);
static_assert((int)SSC_MODE_WRITEAROUND == DM_SSC_MODE_WRITEAROUND);
static_assert((int)SSC_MODE_PASSTHROUGH == DM_SSC_MODE_PASSTHROUGH);

enum { SSC_MCGRP_EVENTS };

static const struct genl_multicast_group ssc_mcgrps[] = {
	[SSC_MCGRP_EVENTS] = { .name = DM_SSC_GENL_MCGRP_EVENTS,
			       .flags = GENL_MCAST_CAP_NET_ADMIN },
};

static const struct nla_policy ssc_nl_policy[DM_SSC_A_MAX + 1] = {
	[DM_SSC_A_VOLUME] = { .type = NLA_NUL_STRING, .len = DM_SSC_VOLUME_LEN - 1 },
};

static int ssc_nl_get_doit(struct sk_buff *skb, struct genl_info *info);
static int ssc_nl_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb);

static const struct genl_small_ops ssc_nl_ops[] = {
	{
		.cmd = DM_SSC_CMD_GET,
		.flags = GENL_ADMIN_PERM,
		.doit = ssc_nl_get_doit,
		.dumpit = ssc_nl_get_dumpit,
	},
};

static struct genl_family ssc_genl_family __ro_after_init = {
	.name = DM_SSC_GENL_NAME,
	.version = DM_SSC_GENL_VERSION,
	.maxattr = DM_SSC_A_MAX,
	.policy = ssc_nl_policy,
	.module = THIS_MODULE,
	.small_ops = ssc_nl_ops,
	.n_small_ops = ARRAY_SIZE(ssc_nl_ops),
	.mcgrps = ssc_mcgrps,
	.n_mcgrps = ARRAY_SIZE(ssc_mcgrps),
};

static u32 ssc_state(struct ssc_c *sc)
{
	if (ssc_engine_error(sc->eng))
		return sc->mode == SSC_MODE_WRITEBACK ? DM_SSC_STATE_READ_ONLY :
			DM_SSC_STATE_FAILED;
	return READ_ONCE(sc->writeback_all) ? DM_SSC_STATE_WRITEBACK_ALL :
		DM_SSC_STATE_OK;
}

/* The attributes every message about a volume starts with */
static int ssc_nl_put_volume(struct sk_buff *skb, struct ssc_c *sc)
{
	char name[DM_NAME_LEN];

	if (dm_copy_name_and_uuid(sc->md, name, NULL))
		return -ENODEV;
	if (nla_put_string(skb, DM_SSC_A_VOLUME, name) ||
	    nla_put_u32(skb, DM_SSC_A_DEV, disk_devt(dm_disk(sc->md))))
		return -EMSGSIZE;
	return 0;
}

static int ssc_nl_put_u64(struct sk_buff *skb, int attr, u64 v)
{
	return nla_put_u64_64bit(skb, attr, v, DM_SSC_A_PAD);
}

/* One volume's answer to DM_SSC_CMD_GET */
static int ssc_nl_fill(struct sk_buff *skb, struct ssc_c *sc, u32 portid,
		       u32 seq, int flags)
{
	struct ssc_engine_stats st;
	void *hdr;
	int r;

	hdr = genlmsg_put(skb, portid, seq, &ssc_genl_family, flags,
			  DM_SSC_CMD_GET);
	if (!hdr)
		return -EMSGSIZE;
	ssc_engine_get_stats(sc->eng, &st);
	r = ssc_nl_put_volume(skb, sc);
	if (!r && (nla_put_u32(skb, DM_SSC_A_MODE, sc->mode) ||
		   nla_put_u32(skb, DM_SSC_A_STATE, ssc_state(sc)) ||
		   nla_put_u32(skb, DM_SSC_A_ERROR, -st.error) ||
		   ssc_nl_put_u64(skb, DM_SSC_A_CACHED, st.cached) ||
		   ssc_nl_put_u64(skb, DM_SSC_A_DIRTY, st.dirty) ||
		   ssc_nl_put_u64(skb, DM_SSC_A_NR_SLOTS, st.nr_slots)))
		r = -EMSGSIZE;
	if (r) {
		genlmsg_cancel(skb, hdr);
		return r;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

static int ssc_nl_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	char name[DM_NAME_LEN];
	struct sk_buff *msg;
	struct ssc_c *sc;
	int r = -ENODEV;

	if (GENL_REQ_ATTR_CHECK(info, DM_SSC_A_VOLUME))
		return -EINVAL;
	msg = nlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!msg)
		return -ENOMEM;
	mutex_lock(&ssc_volumes_lock);
	list_for_each_entry(sc, &ssc_volumes, vol_node) {
		if (!sc->live || dm_copy_name_and_uuid(sc->md, name, NULL) ||
		    nla_strcmp(info->attrs[DM_SSC_A_VOLUME], name))
			continue;
		r = ssc_nl_fill(msg, sc, info->snd_portid, info->snd_seq, 0);
		break;
	}
	mutex_unlock(&ssc_volumes_lock);
	if (r) {
		nlmsg_free(msg);
		if (r == -ENODEV)
			NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[DM_SSC_A_VOLUME],
					    "no live ssc volume of that name");
		return r;
	}
	return genlmsg_reply(msg, info);
}

/* cb->args[0]: how many live volumes were sent already */
static int ssc_nl_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	long idx = 0, skip = cb->args[0];
	struct ssc_c *sc;
	int r = 0;

	mutex_lock(&ssc_volumes_lock);
	list_for_each_entry(sc, &ssc_volumes, vol_node) {
		if (!sc->live)
			continue;
		if (idx++ < skip)
			continue;
		r = ssc_nl_fill(skb, sc, NETLINK_CB(cb->skb).portid,
				cb->nlh->nlmsg_seq, NLM_F_MULTI);
		if (r == -ENODEV) {	/* being removed: leave it out */
			r = 0;
			continue;
		}
		if (r)
			break;
	}
	mutex_unlock(&ssc_volumes_lock);
	if (r) {
		idx--;
		/* an empty skb means one volume does not fit at all */
		if (!skb->len)
			return r;
	}
	cb->args[0] = idx;
	return skb->len;
}

/* Send one event; the payload is a copy taken under ev.lock. */
static void ssc_nl_send_event(struct ssc_c *sc, unsigned int ev,
			      const struct ssc_ev_data *p)
{
	struct sk_buff *skb;
	void *hdr;
	int r;

	skb = genlmsg_new(NLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!skb)
		return;
	hdr = genlmsg_put(skb, 0, 0, &ssc_genl_family, 0, DM_SSC_CMD_EVENT);
	if (!hdr)
		goto bad;
	r = ssc_nl_put_volume(skb, sc);
	if (r)
		goto bad;
	if (nla_put_u32(skb, DM_SSC_A_EVENT, ev))
		goto bad;
	switch (ev) {
	case DM_SSC_EVENT_MODE:
		r = nla_put_u32(skb, DM_SSC_A_MODE, sc->mode) ||
			nla_put_u32(skb, DM_SSC_A_OLD_MODE, p->old_mode);
		break;
	case DM_SSC_EVENT_STATE:
		/* a failed engine never recovers: the state now is the one to report */
		r = nla_put_u32(skb, DM_SSC_A_STATE, ssc_state(sc)) ||
			nla_put_u32(skb, DM_SSC_A_ERROR, -ssc_engine_error(sc->eng));
		break;
	case DM_SSC_EVENT_GC_STALL:
		r = ssc_nl_put_u64(skb, DM_SSC_A_COUNT, p->stalls) ||
			ssc_nl_put_u64(skb, DM_SSC_A_MAX_WAIT_US,
				       div_u64(p->stall_max_ns, NSEC_PER_USEC)) ||
			ssc_nl_put_u64(skb, DM_SSC_A_DURATION_US,
				       div_u64(p->stall_total_ns, NSEC_PER_USEC)) ||
			ssc_nl_put_u64(skb, DM_SSC_A_BYPASSED, p->stall_bypassed);
		break;
	case DM_SSC_EVENT_WRITEBACK_DONE:
		r = ssc_nl_put_u64(skb, DM_SSC_A_BLOCKS, p->wb_blocks) ||
			ssc_nl_put_u64(skb, DM_SSC_A_DURATION_US, p->wb_us);
		break;
	case DM_SSC_EVENT_RECOVERY:
		r = ssc_nl_put_u64(skb, DM_SSC_A_DURATION_US, p->rec_us) ||
			ssc_nl_put_u64(skb, DM_SSC_A_REPLAYED, p->rec_replayed) ||
			ssc_nl_put_u64(skb, DM_SSC_A_CACHED, p->rec_cached) ||
			ssc_nl_put_u64(skb, DM_SSC_A_DIRTY, p->rec_dirty);
		break;
	}
	if (r)
		goto bad;
	genlmsg_end(skb, hdr);
	/* -ESRCH: nobody listens, which is fine */
	genlmsg_multicast(&ssc_genl_family, skb, 0, SSC_MCGRP_EVENTS, GFP_KERNEL);
	return;
bad:
	nlmsg_free(skb);
}

static void ssc_event_worker(struct work_struct *work)
{
	struct ssc_c *sc = container_of(to_delayed_work(work), struct ssc_c,
					ev.work);
	struct ssc_ev_data p;
	unsigned long delay = 0;
	unsigned int ev;

	spin_lock_irq(&sc->ev.lock);
	p = sc->ev.d;
	sc->ev.d.pending = 0;
	if (p.pending & BIT(DM_SSC_EVENT_GC_STALL)) {
		/* stalls are coalesced: one event per interval at most */
		if (sc->ev.last_stall &&
		    time_before(jiffies, sc->ev.last_stall + SSC_STALL_EVENT_INTERVAL)) {
			delay = sc->ev.last_stall + SSC_STALL_EVENT_INTERVAL - jiffies;
			sc->ev.d.pending = BIT(DM_SSC_EVENT_GC_STALL);
			p.pending &= ~BIT(DM_SSC_EVENT_GC_STALL);
		} else {
			sc->ev.last_stall = jiffies;
			sc->ev.d.stalls = 0;
			sc->ev.d.stall_max_ns = 0;
			sc->ev.d.stall_total_ns = 0;
			sc->ev.d.stall_bypassed = 0;
		}
	}
	spin_unlock_irq(&sc->ev.lock);

	for (ev = 1; ev <= DM_SSC_EVENT_MAX; ev++)
		if (p.pending & BIT(ev))
			ssc_nl_send_event(sc, ev, &p);
	if (delay)
		queue_delayed_work(system_wq, &sc->ev.work, delay);
}

/* Queue an event whose payload is in sc->ev already. Any context. */
static void ssc_event(struct ssc_c *sc, unsigned int ev)
{
	unsigned long flags;

	spin_lock_irqsave(&sc->ev.lock, flags);
	sc->ev.d.pending |= BIT(ev);
	spin_unlock_irqrestore(&sc->ev.lock, flags);
	mod_delayed_work(system_wq, &sc->ev.work, 0);
}

/* The engine's reports: failure and stalls. Any context, must not sleep. */
static void ssc_engine_event(void *priv, enum ssc_engine_event ev, u64 a, u64 b)
{
	struct ssc_c *sc = priv;
	unsigned long flags;

	spin_lock_irqsave(&sc->ev.lock, flags);
	switch (ev) {
	case SSC_ENG_FAILED:
		sc->ev.d.pending |= BIT(DM_SSC_EVENT_STATE);
		break;
	case SSC_ENG_STALL:
		sc->ev.d.stalls++;
		sc->ev.d.stall_total_ns += a;
		sc->ev.d.stall_max_ns = max(sc->ev.d.stall_max_ns, a);
		sc->ev.d.stall_bypassed += b;
		sc->ev.d.pending |= BIT(DM_SSC_EVENT_GC_STALL);
		break;
	}
	spin_unlock_irqrestore(&sc->ev.lock, flags);
	/* a pending (delayed) GC_STALL send is not pulled forward */
	queue_delayed_work(system_wq, &sc->ev.work, 0);
}

/*
 * First resume of a table that replaced another on the same device: say
 * when the mode changed, or when a failed cache is back.
 */
static void ssc_note_reload(struct ssc_c *sc)
{
	struct ssc_c *old;
	bool mode = false, ok = false;

	if (sc->live)
		return;
	mutex_lock(&ssc_volumes_lock);
	list_for_each_entry(old, &ssc_volumes, vol_node) {
		if (old == sc || old->md != sc->md || !old->live)
			continue;
		spin_lock_irq(&sc->ev.lock);
		if (old->mode != sc->mode) {
			sc->ev.d.old_mode = old->mode;
			mode = true;
		}
		spin_unlock_irq(&sc->ev.lock);
		ok = ssc_engine_error(old->eng) && !ssc_engine_error(sc->eng);
	}
	sc->live = true;
	mutex_unlock(&ssc_volumes_lock);
	if (mode)
		ssc_event(sc, DM_SSC_EVENT_MODE);
	if (ok)
		ssc_event(sc, DM_SSC_EVENT_STATE);
}

/* ---------------------------------------------------------------------
 * Construction
 */

static int ssc_parse_mode(const char *name, enum ssc_mode *mode)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(ssc_mode_names); i++) {
		if (!strcasecmp(name, ssc_mode_names[i])) {
			*mode = i;
			return 0;
		}
	}
	return -EINVAL;
}

static int ssc_parse_sectors(const char *arg, unsigned int min, unsigned int max,
			     sector_t *result)
{
	unsigned int val;
	char dummy;

	if (sscanf(arg, "%u%c", &val, &dummy) != 1)
		return -EINVAL;
	if (val < min || val > max || !is_power_of_2(val))
		return -EINVAL;
	*result = val;
	return 0;
}

static int ssc_parse_pct(const char *arg, unsigned int *result)
{
	unsigned int val;
	char dummy;

	if (sscanf(arg, "%u%c", &val, &dummy) != 1 || val > 100)
		return -EINVAL;
	*result = val;
	return 0;
}

/*
 * Feature arguments:
 *   writethrough | writeback | writearound | passthrough
 *   format		(the cache device, at the first resume)
 *   segment_size <sectors>
 *   dirty_high <percent>
 *   dirty_low <percent>
 *   sequential_threshold <sectors>
 */
static int ssc_parse_features(struct ssc_c *sc, struct dm_arg_set *as)
{
	static const struct dm_arg _args[] = {
		{0, 10, "Invalid number of feature arguments"},
	};
	struct dm_target *ti = sc->ti;
	bool have_mode = false, have_segment = false;
	bool have_high = false, have_low = false, have_seq = false;
	unsigned int argc;
	const char *arg;
	int r;

	r = dm_read_arg_group(_args, as, &argc, &ti->error);
	if (r)
		return r;

	while (argc--) {
		arg = dm_shift_arg(as);

		if (!ssc_parse_mode(arg, &sc->mode)) {
			if (have_mode) {
				ti->error = "Conflicting mode feature arguments";
				return -EINVAL;
			}
			have_mode = true;
			continue;
		}
		if (!strcasecmp(arg, "format")) {
			if (sc->format) {
				ti->error = "Duplicate format feature argument";
				return -EINVAL;
			}
			sc->format = true;
			continue;
		}
		if (strcasecmp(arg, "segment_size") && strcasecmp(arg, "dirty_high") &&
		    strcasecmp(arg, "dirty_low") &&
		    strcasecmp(arg, "sequential_threshold")) {
			DMERR("unrecognised feature argument '%s'", arg);
			ti->error = "Unrecognised feature argument";
			return -EINVAL;
		}
		if (!argc) {
			ti->error = "Feature argument needs a value";
			return -EINVAL;
		}
		argc--;
		if (!strcasecmp(arg, "segment_size")) {
			if (have_segment) {
				ti->error = "Duplicate segment_size feature argument";
				return -EINVAL;
			}
			if (ssc_parse_sectors(dm_shift_arg(as),
					      SSC_MIN_SEGMENT_SECTORS,
					      SSC_MAX_SEGMENT_SECTORS,
					      &sc->segment_sectors)) {
				ti->error = SSC_ERR_SEGMENT;
				return -EINVAL;
			}
			have_segment = true;
		} else if (!strcasecmp(arg, "sequential_threshold")) {
			if (have_seq || kstrtouint(dm_shift_arg(as), 10, &sc->seq_threshold) ||
			    sc->seq_threshold > SSC_MAX_SEQ_THRESHOLD) {
				ti->error = SSC_ERR_SEQ;
				return -EINVAL;
			}
			have_seq = true;
		} else if (!strcasecmp(arg, "dirty_high")) {
			if (have_high || ssc_parse_pct(dm_shift_arg(as), &sc->dirty_high)) {
				ti->error = SSC_ERR_DIRTY;
				return -EINVAL;
			}
			have_high = true;
		} else {
			if (have_low || ssc_parse_pct(dm_shift_arg(as), &sc->dirty_low)) {
				ti->error = SSC_ERR_DIRTY;
				return -EINVAL;
			}
			have_low = true;
		}
	}
	if (sc->dirty_high > SSC_MAX_DIRTY_HIGH || sc->dirty_low >= sc->dirty_high) {
		ti->error = SSC_ERR_DIRTY;
		return -EINVAL;
	}
	return 0;
}

static int ssc_check_geometry(struct ssc_c *sc)
{
	struct dm_target *ti = sc->ti;
	struct block_device *cache_bdev = sc->cache_dev->bdev;
	struct block_device *origin_bdev = sc->origin_dev->bdev;
	unsigned int lbs;

	lbs = max(bdev_logical_block_size(cache_bdev),
		  bdev_logical_block_size(origin_bdev));
	if ((sc->block_sectors << SECTOR_SHIFT) < lbs) {
		ti->error = "Block size is smaller than a device's logical block size";
		return -EINVAL;
	}
	if (sc->segment_sectors < sc->block_sectors * 2) {
		ti->error = "segment_size must hold at least two blocks";
		return -EINVAL;
	}
	if (ti->len > bdev_nr_sectors(origin_bdev)) {
		ti->error = "Origin device is smaller than the target";
		return -EINVAL;
	}
	if (ti->len & (sc->block_sectors - 1)) {
		ti->error = "Target length is not a multiple of the block size";
		return -EINVAL;
	}
	sc->cache_sectors = bdev_nr_sectors(cache_bdev);
	if (div64_u64(sc->cache_sectors, sc->segment_sectors) < 8) {
		ti->error = "Cache device is too small: it must hold at least 8 segments";
		return -EINVAL;
	}
	return 0;
}

static void ssc_dtr(struct dm_target *ti)
{
	struct ssc_c *sc = ti->private;
	unsigned int i, l;

	mutex_lock(&ssc_volumes_lock);
	list_del_init(&sc->vol_node);
	mutex_unlock(&ssc_volumes_lock);
	/* suspended (postsuspend ran, or it never resumed): nothing queues more */
	ssc_stop_background(sc);
	if (sc->wq)
		destroy_workqueue(sc->wq);
	if (sc->wb_wq)
		destroy_workqueue(sc->wb_wq);
	/* write-back's lanes are only started and waited for by wb_work */
	if (sc->wb_lane_wq)
		destroy_workqueue(sc->wb_lane_wq);
	if (sc->gc_wq)
		destroy_workqueue(sc->gc_wq);
	/* nothing raises an event now; the event work reads the engine */
	cancel_delayed_work_sync(&sc->ev.work);
	ssc_engine_destroy(sc->eng);
	for (l = 0; l < SSC_WB_LANES; l++) {
		struct page **pages = sc->wb_lanes[l].pages;

		if (!pages)
			continue;
		for (i = 0; i < sc->wb_npages; i++)
			if (pages[i])
				__free_page(pages[i]);
		kfree(pages);
	}
	mempool_exit(&sc->cell_pool);
	mempool_exit(&sc->bounce_pool);
	bioset_exit(&sc->bs);
	bioset_exit(&sc->cache_bs);
	bioset_exit(&sc->meta_bs);
	bioset_exit(&sc->wb_bs);
	free_percpu(sc->stats);
	if (sc->cache_dev)
		dm_put_device(ti, sc->cache_dev);
	if (sc->origin_dev)
		dm_put_device(ti, sc->origin_dev);
	kfree(sc);
}

/*
 * Bounce buffers are compound pages: a block is one bvec over them, and
 * whoever takes page references below (a network block device, splice)
 * takes them on the head page.
 */
static void *ssc_bounce_alloc(gfp_t gfp, void *order)
{
	return alloc_pages(gfp | __GFP_COMP, (unsigned long)order);
}

static void ssc_bounce_free(void *page, void *order)
{
	__free_pages(page, (unsigned long)order);
}

static int ssc_alloc(struct ssc_c *sc)
{
	unsigned long order = get_order(sc->block_sectors << SECTOR_SHIFT);
	struct dm_target *ti = sc->ti;
	unsigned int i, l, npages;

	sc->stats = alloc_percpu(struct ssc_stats);
	if (!sc->stats)
		return -ENOMEM;
	if (bioset_init(&sc->bs, BIO_POOL_SIZE, 0, BIOSET_NEED_BVECS) ||
	    bioset_init(&sc->cache_bs, BIO_POOL_SIZE, 0, BIOSET_NEED_BVECS) ||
	    bioset_init(&sc->meta_bs, BIO_POOL_SIZE, 0, BIOSET_NEED_BVECS) ||
	    bioset_init(&sc->wb_bs, SSC_WB_LANES, 0, BIOSET_NEED_BVECS))
		return -ENOMEM;
	if (mempool_init(&sc->bounce_pool, SSC_BOUNCE_POOL, ssc_bounce_alloc,
			 ssc_bounce_free, (void *)order))
		return -ENOMEM;
	if (mempool_init_slab_pool(&sc->cell_pool, SSC_CELL_POOL, ssc_cell_cache))
		return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(sc->cell_locks); i++)
		spin_lock_init(&sc->cell_locks[i].lock);
	init_waitqueue_head(&sc->cell_wq);
	for (i = 0; i < ARRAY_SIZE(sc->cells); i++)
		INIT_HLIST_HEAD(&sc->cells[i]);

	sc->wb_max_blocks = max_t(unsigned int, 1,
				  SSC_WB_MAX_BYTES / (sc->block_sectors << SECTOR_SHIFT));
	npages = sc->wb_max_blocks *
		DIV_ROUND_UP(sc->block_sectors << SECTOR_SHIFT, PAGE_SIZE);
	sc->wb_npages = npages;
	for (l = 0; l < SSC_WB_LANES; l++) {
		struct ssc_wb_lane *lane = &sc->wb_lanes[l];

		lane->sc = sc;
		INIT_WORK(&lane->work, ssc_wb_lane_worker);
		mutex_init(&lane->lock);
		lane->pages = kcalloc(npages, sizeof(struct page *), GFP_KERNEL);
		if (!lane->pages)
			return -ENOMEM;
		for (i = 0; i < npages; i++) {
			lane->pages[i] = alloc_page(GFP_KERNEL);
			if (!lane->pages[i])
				return -ENOMEM;
		}
	}

	sc->wq = alloc_workqueue("dm-ssc-io/%s", WQ_MEM_RECLAIM, 0,
				 dm_table_device_name(ti->table));
	sc->gc_wq = alloc_ordered_workqueue("dm-ssc-gc/%s", WQ_MEM_RECLAIM,
					    dm_table_device_name(ti->table));
	sc->wb_wq = alloc_ordered_workqueue("dm-ssc-wb/%s", WQ_MEM_RECLAIM,
					    dm_table_device_name(ti->table));
	sc->wb_lane_wq = alloc_workqueue("dm-ssc-wbl/%s", WQ_MEM_RECLAIM | WQ_UNBOUND,
					 SSC_WB_LANES, dm_table_device_name(ti->table));
	if (!sc->wq || !sc->gc_wq || !sc->wb_wq || !sc->wb_lane_wq)
		return -ENOMEM;
	return 0;
}

/*
 * ssc <cache_dev> <origin_dev> <block_size> <#feature_args> [<feature_arg>]*
 */
static int ssc_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct ssc_geometry geo;
	struct dm_arg_set as;
	struct ssc_c *sc;
	const char *err;
	int r;

	if (argc < 4) {
		ti->error = SSC_ERR_ARGS;
		return -EINVAL;
	}

	sc = kzalloc(sizeof(*sc), GFP_KERNEL);
	if (!sc) {
		ti->error = "Cannot allocate ssc context";
		return -ENOMEM;
	}
	sc->ti = ti;
	sc->mode = SSC_MODE_WRITETHROUGH;
	sc->segment_sectors = SSC_DEF_SEGMENT_SECTORS;
	sc->dirty_high = SSC_DEF_DIRTY_HIGH;
	sc->dirty_low = SSC_DEF_DIRTY_LOW;
	spin_lock_init(&sc->seq_lock);
	mutex_init(&sc->msg_lock);
	/* origin writes of an earlier table may not be durable: flush once */
	sc->origin_flushed = -1;
	sc->suspended = true;
	sc->md = dm_table_get_md(ti->table);
	INIT_LIST_HEAD(&sc->vol_node);
	spin_lock_init(&sc->ev.lock);
	INIT_DELAYED_WORK(&sc->ev.work, ssc_event_worker);
	/* here, not in ssc_alloc(): dtr cancels them whatever failed */
	INIT_WORK(&sc->gc_work, ssc_gc_worker);
	INIT_WORK(&sc->wb_work, ssc_wb_worker);
	INIT_DELAYED_WORK(&sc->commit_work, ssc_commit_worker);
	ti->private = sc;

	as.argc = argc;
	as.argv = argv;

	r = dm_get_device(ti, dm_shift_arg(&as), dm_table_get_mode(ti->table),
			  &sc->cache_dev);
	if (r) {
		ti->error = "Error opening cache device";
		goto bad;
	}
	r = dm_get_device(ti, dm_shift_arg(&as), dm_table_get_mode(ti->table),
			  &sc->origin_dev);
	if (r) {
		ti->error = "Error opening origin device";
		goto bad;
	}
	if (sc->cache_dev->bdev == sc->origin_dev->bdev) {
		ti->error = "Cache and origin must be different devices";
		r = -EINVAL;
		goto bad;
	}

	r = ssc_parse_sectors(dm_shift_arg(&as), SSC_MIN_BLOCK_SECTORS,
			      SSC_MAX_BLOCK_SECTORS, &sc->block_sectors);
	if (r) {
		ti->error = "Invalid block size: want a power of two from 8 to 2048 sectors";
		goto bad;
	}
	sc->block_shift = ilog2(sc->block_sectors);

	r = ssc_parse_features(sc, &as);
	if (r)
		goto bad;
	if (as.argc) {
		ti->error = "Too many arguments";
		r = -EINVAL;
		goto bad;
	}

	r = ssc_check_geometry(sc);
	if (r)
		goto bad;

	r = ssc_alloc(sc);
	if (r) {
		ti->error = "Cannot allocate ssc context";
		goto bad;
	}

	geo.block_sectors = sc->block_sectors;
	geo.segment_sectors = sc->segment_sectors;
	geo.log_block_bytes = max_t(unsigned int, SECTOR_SIZE,
				    bdev_logical_block_size(sc->cache_dev->bdev));
	geo.cache_sectors = sc->cache_sectors;
	geo.origin_blocks = ti->len >> sc->block_shift;
	sc->eng = ssc_engine_create(&geo, &ssc_bdev_ops, sc, sc->format, &err);
	if (IS_ERR(sc->eng)) {
		r = PTR_ERR(sc->eng);
		sc->eng = NULL;
		ti->error = (char *)err;
		goto bad;
	}
	sc->nr_slots = ssc_engine_nr_slots(sc->eng);

	r = dm_set_target_max_io_len(ti, sc->block_sectors);
	if (r) {
		ti->error = "Cannot set the maximum I/O size";
		goto bad;
	}
	ti->per_io_data_size = sizeof(struct ssc_bio);
	ti->num_flush_bios = 1;
	ti->num_discard_bios = 1;

	mutex_lock(&ssc_volumes_lock);
	list_add_tail(&sc->vol_node, &ssc_volumes);
	mutex_unlock(&ssc_volumes_lock);
	return 0;

bad:
	ssc_dtr(ti);
	return r;
}

/* ---------------------------------------------------------------------
 * Suspend and resume
 */

static int ssc_preresume(struct dm_target *ti)
{
	struct ssc_c *sc = ti->private;
	struct ssc_engine_stats st;
	const char *err = "";
	ktime_t start = ktime_get();
	bool first = !sc->loaded;
	int r;

	r = ssc_engine_load(sc->eng, sc->mode == SSC_MODE_WRITEBACK, &err);
	if (r) {
		DMERR("%s: cannot load the cache: %s (%d)",
		      dm_table_device_name(ti->table), err, r);
		return r;
	}
	sc->loaded = true;
	ssc_engine_get_stats(sc->eng, &st);
	if (sc->mode == SSC_MODE_PASSTHROUGH && st.dirty) {
		DMERR("%s: passthrough needs a clean cache, %llu blocks are dirty; %s",
		      dm_table_device_name(ti->table), (unsigned long long)st.dirty,
		      "write them back first (message writeback_all)");
		return -EBUSY;
	}
	if (first && st.recovered) {
		u64 us = ktime_us_delta(ktime_get(), start);

		DMINFO("%s: crash recovery took %llu us: %llu cached, %llu dirty, %llu replayed",
		       dm_table_device_name(ti->table), (unsigned long long)us,
		       (unsigned long long)st.cached, (unsigned long long)st.dirty,
		       (unsigned long long)st.replayed);
		spin_lock_irq(&sc->ev.lock);
		sc->ev.d.rec_us = us;
		sc->ev.d.rec_replayed = st.replayed;
		sc->ev.d.rec_cached = st.cached;
		sc->ev.d.rec_dirty = st.dirty;
		spin_unlock_irq(&sc->ev.lock);
		ssc_event(sc, DM_SSC_EVENT_RECOVERY);
	}
	return 0;
}

/* Start the group commit, and write-back and GC if they have work. */
static void ssc_start_background(struct ssc_c *sc)
{
	WRITE_ONCE(sc->suspended, false);
	queue_delayed_work(sc->gc_wq, &sc->commit_work, SSC_COMMIT_INTERVAL);
	ssc_maybe_kick_writeback(sc);
	if (ssc_gc_needed(sc->eng))
		ssc_kick_gc(sc);
}

/*
 * Stop the group commit, GC and write-back, with sc->suspended set. GC
 * queues write-back when only dirty blocks are left and write-back queues
 * GC when it is done; neither does once it sees suspended, but one that
 * looked before may queue the other after it was cancelled: cancel both
 * until neither is pending.
 */
static void ssc_stop_background(struct ssc_c *sc)
{
	cancel_delayed_work_sync(&sc->commit_work);
	do {
		cancel_work_sync(&sc->wb_work);
		cancel_work_sync(&sc->gc_work);
	} while (work_pending(&sc->wb_work) || work_pending(&sc->gc_work));
}

static void ssc_resume(struct dm_target *ti)
{
	struct ssc_c *sc = ti->private;

	ssc_note_reload(sc);
	ssc_start_background(sc);
}

static void ssc_presuspend(struct dm_target *ti)
{
	struct ssc_c *sc = ti->private;

	WRITE_ONCE(sc->suspended, true);
}

/* The suspend failed or was interrupted before postsuspend: carry on. */
static void ssc_presuspend_undo(struct dm_target *ti)
{
	struct ssc_c *sc = ti->private;

	ssc_start_background(sc);
}

static void ssc_postsuspend(struct dm_target *ti)
{
	struct ssc_c *sc = ti->private;
	int r;

	/* no bio is in flight now; stop the background work */
	flush_workqueue(sc->wq);
	ssc_stop_background(sc);
	/* a message that writes the device finishes first; later ones see suspended */
	mutex_lock(&sc->msg_lock);
	r = ssc_engine_shutdown(sc->eng);
	mutex_unlock(&sc->msg_lock);
	if (r)
		DMERR("%s: cannot write the shutdown checkpoint: %d",
		      dm_table_device_name(ti->table), r);
}

/* ---------------------------------------------------------------------
 * Status and messages
 */

static const char * const ssc_state_names[] = {
	[DM_SSC_STATE_OK]		= "ok",
	[DM_SSC_STATE_WRITEBACK_ALL]	= "writeback_all",
	[DM_SSC_STATE_READ_ONLY]	= "read_only",
	[DM_SSC_STATE_FAILED]		= "failed",
};

static void ssc_status(struct dm_target *ti, status_type_t type,
		       unsigned int status_flags, char *result, unsigned int maxlen)
{
	struct ssc_c *sc = ti->private;
	struct ssc_engine_stats st;
	struct ssc_stats s;
	unsigned int sz = 0;
	bool fmt;

	switch (type) {
	case STATUSTYPE_INFO:
		ssc_engine_get_stats(sc->eng, &st);
		ssc_stats_sum(sc, &s);
		DMEMIT("%s %llu %llu/%llu %llu %llu/%llu ",
		       ssc_mode_names[sc->mode],
		       (unsigned long long)sc->block_sectors,
		       st.cached, st.nr_slots, st.dirty, st.free_segs, st.nr_segs);
		DMEMIT("%llu %llu %llu %llu ",
		       s.read_hits, s.read_misses, s.write_hits, s.write_misses);
		DMEMIT("%llu %llu %llu %llu ",
		       st.gc_runs, st.gc_evicted, st.gc_copied, s.writebacks);
		DMEMIT("%llu %llu %llu %llu/%llu ",
		       s.data_sectors, st.meta_sectors, st.checkpoints,
		       st.log_used, st.log_blocks);
		DMEMIT("%llu %llu %llu %llu %llu %llu %s",
		       (unsigned long long)st.ram_bytes, st.recovered, st.replayed,
		       s.cache_errors, s.origin_errors, s.bypassed,
		       ssc_state_names[ssc_state(sc)]);
		break;
	case STATUSTYPE_TABLE:
		/* format only until it is done: a reload of this line must not repeat it */
		fmt = sc->format && !sc->loaded;
		DMEMIT("%s %s %llu %u %s%s segment_size %llu dirty_high %u dirty_low %u",
		       sc->cache_dev->name, sc->origin_dev->name,
		       (unsigned long long)sc->block_sectors, 9 + fmt,
		       fmt ? "format " : "", ssc_mode_names[sc->mode],
		       (unsigned long long)sc->segment_sectors,
		       sc->dirty_high, sc->dirty_low);
		DMEMIT(" sequential_threshold %u", sc->seq_threshold);
		break;
	default:
		break;
	}
}

static int ssc_parse_range(struct ssc_c *sc, unsigned int argc, char **argv,
			   u64 *start, u64 *count, u64 max_count)
{
	u64 nr_blocks = sc->ti->len >> sc->block_shift;
	char dummy;

	*count = 1;
	if (argc < 2 || argc > 3 || sscanf(argv[1], "%llu%c", start, &dummy) != 1)
		return -EINVAL;
	if (argc == 3 && sscanf(argv[2], "%llu%c", count, &dummy) != 1)
		return -EINVAL;
	if (!*count || *count > max_count || *start >= nr_blocks ||
	    *count > nr_blocks - *start)
		return -EINVAL;
	return 0;
}

static int ssc_msg_evict(struct ssc_c *sc, u64 start, u64 count)
{
	u64 ob, lsn, max_lsn = 0;
	int r = 0;

	for (ob = start; ob < start + count && !r; ob++) {
		struct ssc_cell *cell = ssc_cell_lock(sc, ob);

		r = ssc_evict(sc->eng, ob, false, &lsn);
		max_lsn = max(max_lsn, lsn);
		ssc_cell_put(sc, cell);
		cond_resched();
	}
	if (r == -EBUSY)
		DMWARN("%s: evict: block %llu is dirty; write it back first (clean)",
		       dm_table_device_name(sc->ti->table), (unsigned long long)ob - 1);
	return r ? r : ssc_commit(sc->eng, max_lsn);
}

static int ssc_msg_clean(struct ssc_c *sc, u64 start, u64 count)
{
	u64 ob;
	int r = 0;

	for (ob = start; ob < start + count && r >= 0; ob++) {
		if (ssc_peek(sc->eng, ob) == SSC_DIRTY)
			r = ssc_writeback_run(sc, &sc->wb_lanes[0], ob,
					      start + count - ob);
		cond_resched();
	}
	if (r < 0)
		return r;
	return ssc_commit_pending(sc->eng);
}

static int ssc_msg_exists(struct ssc_c *sc, u64 start, u64 count, char *result,
			  unsigned int maxlen)
{
	unsigned long *bitmap;
	int r;

	bitmap = bitmap_zalloc(count, GFP_KERNEL);
	if (!bitmap)
		return -ENOMEM;
	r = ssc_exists(sc->eng, start, count, bitmap);
	if (!r) {
		/*
		 * 1 tells dm that @result holds the answer; if it did not fit,
		 * dm flags the buffer full and dmsetup asks again with more room.
		 */
		snprintf(result, maxlen, "%*pbl", (int)count, bitmap);
		r = 1;
	}
	bitmap_free(bitmap);
	return r;
}

static int ssc_message(struct dm_target *ti, unsigned int argc, char **argv,
		       char *result, unsigned int maxlen)
{
	struct ssc_c *sc = ti->private;
	u64 start, count;
	int r;

	if (!argc)
		goto bad;
	if (argc == 1 && !strcasecmp(argv[0], "clear_stats")) {
		int cpu;

		for_each_possible_cpu(cpu)
			memset(per_cpu_ptr(sc->stats, cpu), 0, sizeof(struct ssc_stats));
		ssc_engine_clear_stats(sc->eng);
		return 0;
	}
	if (argc == 1 && !strcasecmp(argv[0], "checkpoint")) {
		mutex_lock(&sc->msg_lock);
		r = READ_ONCE(sc->suspended) ? -EAGAIN : ssc_checkpoint(sc->eng);
		mutex_unlock(&sc->msg_lock);
		return r;
	}
	if (argc == 1 && !strcasecmp(argv[0], "writeback_all")) {
		spin_lock_irq(&sc->ev.lock);
		if (!READ_ONCE(sc->writeback_all)) {
			struct ssc_stats sum;

			ssc_stats_sum(sc, &sum);
			sc->wb_all_base = sum.writebacks;
			sc->wb_all_start = ktime_get();
		}
		spin_unlock_irq(&sc->ev.lock);
		WRITE_ONCE(sc->writeback_all, true);
		/* queued at resume if suspended: never behind postsuspend's back */
		mutex_lock(&sc->msg_lock);
		if (!READ_ONCE(sc->suspended))
			queue_work(sc->wb_wq, &sc->wb_work);
		mutex_unlock(&sc->msg_lock);
		return 0;
	}
	if (!strcasecmp(argv[0], "evict") || !strcasecmp(argv[0], "clean") ||
	    !strcasecmp(argv[0], "exists")) {
		bool ex = !strcasecmp(argv[0], "exists");

		if (ssc_parse_range(sc, argc, argv, &start, &count,
				    ex ? SSC_MAX_EXISTS : U64_MAX)) {
			DMWARN("%s: %s: want <block> [<count>] inside the origin%s",
			       dm_table_device_name(ti->table), argv[0],
			       ex ? ", at most 1048576 blocks" : "");
			return -EINVAL;
		}
		if (ex)
			return ssc_msg_exists(sc, start, count, result, maxlen);
		mutex_lock(&sc->msg_lock);
		if (READ_ONCE(sc->suspended))
			r = -EAGAIN;
		else if (!strcasecmp(argv[0], "evict"))
			r = ssc_msg_evict(sc, start, count);
		else
			r = ssc_msg_clean(sc, start, count);
		mutex_unlock(&sc->msg_lock);
		return r;
	}
bad:
	DMWARN("%s: unrecognised message \"%s\" (%u arguments)",
	       dm_table_device_name(ti->table), argc ? argv[0] : "", argc);
	return -EINVAL;
}

static int ssc_iterate_devices(struct dm_target *ti,
			       iterate_devices_callout_fn fn, void *data)
{
	struct ssc_c *sc = ti->private;
	int r;

	r = fn(ti, sc->cache_dev, 0, sc->cache_sectors, data);
	if (!r)
		r = fn(ti, sc->origin_dev, 0, ti->len, data);
	return r;
}

static struct target_type ssc_target = {
	.name		= "ssc",
	.version	= {0, 2, 0},
	.module		= THIS_MODULE,
	.ctr		= ssc_ctr,
	.dtr		= ssc_dtr,
	.map		= ssc_map,
	.end_io		= ssc_end_io,
	.presuspend	= ssc_presuspend,
	.presuspend_undo = ssc_presuspend_undo,
	.postsuspend	= ssc_postsuspend,
	.preresume	= ssc_preresume,
	.resume		= ssc_resume,
	.status		= ssc_status,
	.message	= ssc_message,
	.iterate_devices = ssc_iterate_devices,
};

static int __init dm_ssc_init(void)
{
	int r;

	ssc_cell_cache = KMEM_CACHE(ssc_cell, 0);
	if (!ssc_cell_cache)
		return -ENOMEM;
	r = ssc_smap_global_init();
	if (r)
		goto bad_smap;
	r = genl_register_family(&ssc_genl_family);
	if (r)
		goto bad_genl;
	r = dm_register_target(&ssc_target);
	if (r)
		goto bad_register;
	return 0;

bad_register:
	genl_unregister_family(&ssc_genl_family);
bad_genl:
	ssc_smap_global_exit();
bad_smap:
	kmem_cache_destroy(ssc_cell_cache);
	return r;
}

static void __exit dm_ssc_exit(void)
{
	dm_unregister_target(&ssc_target);
	genl_unregister_family(&ssc_genl_family);
	ssc_smap_global_exit();
	kmem_cache_destroy(ssc_cell_cache);
}

module_init(dm_ssc_init);
module_exit(dm_ssc_exit);

MODULE_DESCRIPTION(DM_NAME " solid-state cache (FlashTier SSC) target");
MODULE_LICENSE("GPL");
