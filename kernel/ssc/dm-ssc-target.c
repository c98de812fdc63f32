// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssc: a device-mapper target that uses a flash device as a solid-state
 * cache (FlashTier) for a slower origin device.
 *
 * The cache manager (the "host" half) implements the writethrough,
 * writeback, writearound and passthrough modes; this file has its table
 * line, construction, suspend/resume, status, messages and module init
 * (ssc-target.h lists the others). The SSC engine (ssc-engine.c) owns the
 * flash device.
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

#include <linux/random.h>

#include "ssc-smap.h"
#include "ssc-target.h"

const char * const ssc_mode_names[] = {
	[SSC_MODE_WRITETHROUGH]	= "writethrough",
	[SSC_MODE_WRITEBACK]	= "writeback",
	[SSC_MODE_WRITEAROUND]	= "writearound",
	[SSC_MODE_PASSTHROUGH]	= "passthrough",
};

const char * const ssc_admit_names[] = {
	[SSC_ADMIT_ALL]		= "all",
	[SSC_ADMIT_REUSE]	= "reuse",
};

/* Every constructed ssc target, for netlink queries and mode changes */
LIST_HEAD(ssc_volumes);
DEFINE_MUTEX(ssc_volumes_lock);	/* protects ssc_volumes */
struct kmem_cache *ssc_cell_cache;

void ssc_stats_sum(struct ssc_c *sc, struct ssc_stats *sum)
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
		sum->admitted += s->admitted;
		sum->rejected += s->rejected;
	}
}

/* ---------------------------------------------------------------------
 * Construction
 */

/* The index of @name in @names (case-insensitive), or -EINVAL */
static int ssc_parse_name(const char *name, const char * const *names, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcasecmp(name, names[i]))
			return i;
	return -EINVAL;
}

static int ssc_parse_mode(const char *name, enum ssc_mode *mode)
{
	int i = ssc_parse_name(name, ssc_mode_names, ARRAY_SIZE(ssc_mode_names));

	if (i < 0)
		return i;
	*mode = i;
	return 0;
}

static int ssc_parse_admit(const char *name, enum ssc_admit_policy *policy)
{
	int i = ssc_parse_name(name, ssc_admit_names, ARRAY_SIZE(ssc_admit_names));

	if (i < 0)
		return i;
	*policy = i;
	return 0;
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
 *   admit all | reuse
 */
static int ssc_parse_features(struct ssc_c *sc, struct dm_arg_set *as)
{
	static const struct dm_arg _args[] = {
		{0, 12, "Invalid number of feature arguments"},
	};
	struct dm_target *ti = sc->ti;
	bool have_mode = false, have_segment = false;
	bool have_high = false, have_low = false, have_seq = false;
	bool have_admit = false;
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
		    strcasecmp(arg, "sequential_threshold") && strcasecmp(arg, "admit")) {
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
		} else if (!strcasecmp(arg, "admit")) {
			if (have_admit || ssc_parse_admit(dm_shift_arg(as), &sc->admit_policy)) {
				ti->error = SSC_ERR_ADMIT;
				return -EINVAL;
			}
			have_admit = true;
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
	ssc_admit_destroy(sc->admit);
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
	free_percpu(sc->hit_run);
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
	sc->hit_run = alloc_percpu(struct ssc_stream);
	if (!sc->stats || !sc->hit_run)
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
	if (sc->admit_policy == SSC_ADMIT_REUSE) {
		sc->admit = ssc_admit_create(sc->nr_slots, get_random_u64(), GFP_KERNEL);
		if (!sc->admit) {
			ti->error = "Cannot allocate the admission table";
			r = -ENOMEM;
			goto bad;
		}
	}

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
void ssc_stop_background(struct ssc_c *sc)
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
		DMEMIT("%llu %llu %llu %llu %llu %llu %s %llu %llu",
		       (unsigned long long)(st.ram_bytes + ssc_admit_bytes(sc->admit)),
		       st.recovered, st.replayed,
		       s.cache_errors, s.origin_errors, s.bypassed,
		       ssc_state_names[ssc_state(sc)], s.admitted, s.rejected);
		break;
	case STATUSTYPE_TABLE:
		/* format only until it is done: a reload of this line must not repeat it */
		fmt = sc->format && !sc->loaded;
		DMEMIT("%s %s %llu %u %s%s segment_size %llu dirty_high %u dirty_low %u",
		       sc->cache_dev->name, sc->origin_dev->name,
		       (unsigned long long)sc->block_sectors, 11 + fmt,
		       fmt ? "format " : "", ssc_mode_names[sc->mode],
		       (unsigned long long)sc->segment_sectors,
		       sc->dirty_high, sc->dirty_low);
		DMEMIT(" sequential_threshold %u admit %s", sc->seq_threshold,
		       ssc_admit_names[sc->admit_policy]);
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
