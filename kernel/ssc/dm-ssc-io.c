// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssc: the bio path. Cells (one holder per origin block), the I/O
 * helpers the engine and the workers use, .map and .end_io, and the
 * worker that runs every bio .map cannot remap at once: read misses and
 * their fills, writes in each mode, discards and flushes.
 */

#include "ssc-target.h"

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
struct ssc_cell *ssc_cell_try(struct ssc_c *sc, u64 oblock)
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

void ssc_cell_put(struct ssc_c *sc, struct ssc_cell *cell)
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
struct ssc_cell *ssc_cell_lock(struct ssc_c *sc, u64 oblock)
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
void ssc_kick_gc(void *priv)
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

const struct ssc_io_ops ssc_bdev_ops = {
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
	ssc_pb(bio)->flags |= PB_ORIGIN;
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
void ssc_maybe_kick_writeback(struct ssc_c *sc)
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
 * May a miss of @oblock (a read, or a full write of an uncached block) take
 * a slot? With admit reuse, while the cache has room anything may; once it
 * is full, only a block that missed before (ssc-admit.h). Lock-free.
 * A block let in that then finds no slot is remembered again by
 * ssc_admit_missed(), so that its next miss still counts as its second.
 */
bool ssc_admit_miss(struct ssc_c *sc, u64 oblock)
{
	if (!sc->admit || !ssc_space_low(sc->eng))
		return true;
	if (ssc_admit_touch(sc->admit, oblock)) {
		this_cpu_inc(sc->stats->admitted);
		return true;
	}
	this_cpu_inc(sc->stats->rejected);
	return false;
}

static void ssc_admit_missed(struct ssc_c *sc, u64 oblock)
{
	if (sc->admit)
		ssc_admit_remember(sc->admit, oblock);
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
		if (!fill)
			ssc_admit_missed(sc, oblock);
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
	/* a cached block stays cached; a new one needs admission */
	if (!around && state == SSC_NOT_PRESENT && !ssc_admit_miss(sc, oblock))
		around = true;
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
			if (state == SSC_NOT_PRESENT)
				ssc_admit_missed(sc, oblock);
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
	if (ssc_reserve(sc->eng, oblock, false, &loc)) {
		loc.sector = (sector_t)-1;
		if (state == SSC_NOT_PRESENT)
			ssc_admit_missed(sc, oblock);
	}
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
	ssc_pb(bio)->flags |= PB_ORIGIN;
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
 * Sequential streams: a bio continues a stream if it starts where the
 * stream ended; a bio that continues none replaces the least recently used
 * stream, and a stream longer than the threshold goes around the cache.
 * Misses and writes look the streams up under seq_lock. A hit needs no
 * answer, only to keep a stream going, and takes the lock only if a stream
 * ends where it starts (looked for without the lock first): random hits
 * take no lock and write nothing shared. A hit that continues no stream is
 * kept as its CPU's hit run instead (one per CPU, with preemption off), and
 * the next bio of that CPU that continues it, hit or miss, makes it a
 * stream. So a sequential run is seen from its first block, cached or not,
 * as long as its first two bios are submitted on one CPU.
 */

/* this CPU's hit run, if @sector continues it: its length, and it is taken */
static sector_t ssc_hit_run_take(struct ssc_c *sc, sector_t sector)
{
	struct ssc_stream *hr = get_cpu_ptr(sc->hit_run);
	sector_t run = 0;

	if (hr->run && hr->next == sector) {
		run = hr->run;
		hr->run = 0;
	}
	put_cpu_ptr(sc->hit_run);
	return run;
}

/* continue the stream ending at @sector, or start one @prev sectors long */
static bool ssc_stream_add(struct ssc_c *sc, sector_t sector, unsigned int sectors,
			   sector_t prev)
{
	struct ssc_stream *s, *lru = &sc->streams[0];
	sector_t run;
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
	if (i < SSC_SEQ_STREAMS) {
		run = s->run;
	} else {
		s = lru;
		run = prev;
	}
	run += sectors;
	WRITE_ONCE(s->next, sector + sectors);
	WRITE_ONCE(s->run, run);
	s->last = jiffies;
	seq = run > sc->seq_threshold;
	spin_unlock(&sc->seq_lock);
	return seq;
}

/* a miss or a write: does it continue a stream past the threshold? */
static bool ssc_sequential(struct ssc_c *sc, struct bio *bio)
{
	sector_t sector = bio->bi_iter.bi_sector;

	return ssc_stream_add(sc, sector, bio_sectors(bio), ssc_hit_run_take(sc, sector));
}

static void ssc_stream_hit(struct ssc_c *sc, struct bio *bio)
{
	sector_t sector = bio->bi_iter.bi_sector, prev = 0;
	struct ssc_stream *hr;
	unsigned int i;

	for (i = 0; i < SSC_SEQ_STREAMS; i++) {
		if (READ_ONCE(sc->streams[i].next) == sector && READ_ONCE(sc->streams[i].run))
			break;
	}
	if (i == SSC_SEQ_STREAMS) {
		hr = get_cpu_ptr(sc->hit_run);
		if (hr->run && hr->next == sector) {
			prev = hr->run;
			hr->run = 0;
		} else {
			/* a run of its own, until the next bio of this CPU continues it */
			hr->next = sector + bio_sectors(bio);
			hr->run = bio_sectors(bio);
		}
		put_cpu_ptr(sc->hit_run);
		if (!prev)
			return;
	}
	ssc_stream_add(sc, sector, bio_sectors(bio), prev);
}

int ssc_map(struct dm_target *ti, struct bio *bio)
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

	if (bio_data_dir(bio) == READ) {
		st = ssc_get(sc->eng, oblock, false, &loc);
		if (st != SSC_NOT_PRESENT) {
			if (sc->seq_threshold)
				ssc_stream_hit(sc, bio);
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
		if (sc->seq_threshold && ssc_sequential(sc, bio))
			pb->flags |= PB_BYPASS;
		around = !ssc_full_block(sc, bio) || sc->mode == SSC_MODE_PASSTHROUGH ||
			 ssc_engine_error(sc->eng);
		if (!around && (pb->flags & PB_BYPASS)) {
			this_cpu_inc(sc->stats->bypassed);
			around = true;
		}
		if (!around && !ssc_admit_miss(sc, oblock))
			around = true;
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
				if (sc->seq_threshold)
					ssc_stream_hit(sc, bio);
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
	if (sc->seq_threshold && ssc_sequential(sc, bio))
		pb->flags |= PB_BYPASS;
	ssc_defer(sc, bio);
	return DM_MAPIO_SUBMITTED;
}

int ssc_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error)
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
	/*
	 * I/O sent straight to the origin (misses around the cache, bypassed
	 * streams, passthrough, flushes, discards passed down): the workers
	 * count the origin I/O they issue themselves
	 */
	if (*error && (pb->flags & PB_ORIGIN) && *error != BLK_STS_NOTSUPP)
		this_cpu_inc(sc->stats->origin_errors);
	if (pb->cell) {
		ssc_cell_put(sc, pb->cell);
		pb->cell = NULL;
	}
	return DM_ENDIO_DONE;
}
