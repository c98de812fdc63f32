// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssc: background work. Garbage collection, write-back of dirty blocks
 * in runs (lanes of one buffer each), and the group commit of write_clean
 * and clean records.
 */

#include "ssc-target.h"

/* ---------------------------------------------------------------------
 * Background work: garbage collection, write-back, group commit
 */

void ssc_gc_worker(struct work_struct *work)
{
	struct ssc_c *sc = container_of(work, struct ssc_c, gc_work);
	int r;

	r = ssc_gc(sc->eng);
	if (r == -ENOSPC && !READ_ONCE(sc->suspended) && ssc_dirty_count(sc->eng)) {
		/* too much is dirty: write-back makes room, past dirty_low */
		queue_work(sc->wb_wq, &sc->wb_work);
	}
}

/*
 * Write back a run of at most @max contiguous dirty blocks starting at
 * @first, holding their cells, through @lane's buffer; returns the number of
 * blocks written back, or an error. Runs of different lanes proceed in
 * parallel: the cells keep them off each other's blocks.
 */
int ssc_writeback_run(struct ssc_c *sc, struct ssc_wb_lane *lane,
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
void ssc_wb_lane_worker(struct work_struct *work)
{
	struct ssc_wb_lane *lane = container_of(work, struct ssc_wb_lane, work);
	struct ssc_c *sc = lane->sc;
	struct ssc_engine_stats st;
	u64 target, ob;
	bool starved;
	int r;

	for (;;) {
		if (READ_ONCE(sc->suspended))
			return;
		ssc_engine_get_stats(sc->eng, &st);
		if (st.error)
			return;
		/*
		 * in write-back, stop at dirty_low, unless GC cannot free a
		 * segment for dirty blocks; in other modes drain
		 */
		starved = ssc_gc_starved(sc->eng);
		target = 0;
		if (sc->mode == SSC_MODE_WRITEBACK && !READ_ONCE(sc->writeback_all) && !starved)
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
		/* GC tries again after each run: a victim may fit now */
		if (starved && r > 0)
			ssc_kick_gc(sc);
		cond_resched();
	}
}

void ssc_wb_worker(struct work_struct *work)
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

void ssc_commit_worker(struct work_struct *work)
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
