// SPDX-License-Identifier: GPL-2.0
/*
 * The SSC engine's garbage collection: pick the segment that costs least to
 * clean, drop its clean blocks (silent eviction), move its dirty ones, make
 * that durable and free the segment.
 */

#include "ssc-engine-int.h"

/* ---------------------------------------------------------------------
 * Garbage collection with silent eviction
 */

struct ssc_gc_best {
	int idx;
	u64 cost, ben;
	u32 valid;
};

/* Offer segment @i to the running choice; see ssc_gc_pick_victim(). */
static void ssc_gc_consider(struct ssc_gc_best *b, int i, u32 valid, u32 dirty,
			    u64 age, u32 slots)
{
	u64 cost, ben;

	if (dirty >= slots)
		return;		/* frees nothing */
	cost = (u64)(valid - dirty) + SSC_GC_COPY_WEIGHT * (u64)dirty;
	ben = min_t(u64, age, 1ULL << 32) + 1;
	/* cost / ben < best cost / best ben; ties: fewer valid blocks */
	if (b->idx < 0 || cost * b->ben < b->cost * ben ||
	    (cost * b->ben == b->cost * ben && valid < b->valid)) {
		b->idx = i;
		b->cost = cost;
		b->ben = ben;
		b->valid = valid;
	}
}

/**
 * ssc_gc_pick_victim() - cost/benefit choice of the segment to clean
 * @valid: valid blocks per segment
 * @dirty: dirty blocks per segment (a subset of @valid)
 * @age: time since each segment was last written
 * @eligible: which segments may be chosen (sealed ones)
 * @n: number of segments
 * @slots: data slots per segment
 *
 * Cleaning a segment drops its clean blocks (silent eviction: they cost
 * future misses, not I/O) and copies its dirty ones (a read and a write
 * each). The victim minimises cost / benefit, where cost = clean valid +
 * SSC_GC_COPY_WEIGHT * dirty and benefit = age + 1, as FlashTier's LFS-style
 * rule. A segment whose every slot holds dirty data frees nothing and is
 * never chosen. When no segment has clean blocks this falls back to
 * ordinary copying GC: the least-utilised old segment wins.
 *
 * Return: the victim's index, or -1 if none is eligible.
 */
int ssc_gc_pick_victim(const u32 *valid, const u32 *dirty, const u64 *age,
		       const bool *eligible, unsigned int n, u32 slots)
{
	struct ssc_gc_best b = { .idx = -1 };
	unsigned int i;

	for (i = 0; i < n; i++)
		if (eligible[i])
			ssc_gc_consider(&b, i, valid[i], dirty[i], age[i], slots);
	return b.idx;
}

/*
 * The victim, among the segments whose dirty blocks fit in the room GC has
 * without opening the last free segment: the free segments but one, and
 * what is left of the open segment if GC opened it (user data may fill a
 * segment it opened while GC copies). A victim that does not fit would
 * stop half-moved with no segment free; when none fits, write-back must
 * clean dirty blocks first (ssc_gc_starved()). Under e->lock.
 */
int ssc_pick(struct ssc_engine *e)
{
	struct ssc_gc_best b = { .idx = -1 };
	u64 room = 0;
	u32 i;

	if (e->open_seg != U32_MAX && e->open_gc)
		room = e->slots_per_seg - e->open_next;
	if (e->free_segs)
		room += (u64)(e->free_segs - 1) * e->slots_per_seg;
	for (i = 0; i < e->nr_segs; i++) {
		const struct ssc_seg *s = &e->segs[i];

		if (s->state == SEG_SEALED && s->dirty <= room)
			ssc_gc_consider(&b, i, s->valid, s->dirty,
					e->user_seq - s->age, e->slots_per_seg);
	}
	return b.idx;
}

bool ssc_gc_needed(struct ssc_engine *e)
{
	return READ_ONCE(e->free_segs) < e->gc_low && !READ_ONCE(e->error);
}

/*
 * The cache is full: no more free segments than GC keeps. A new block takes
 * the place of one GC will have to drop or move.
 */
bool ssc_space_low(struct ssc_engine *e)
{
	return READ_ONCE(e->free_segs) <= e->gc_high;
}

/* GC needs dirty blocks cleaned before it can free a segment. */
bool ssc_gc_starved(struct ssc_engine *e)
{
	return READ_ONCE(e->gc_starved) && ssc_gc_needed(e);
}

struct ssc_scan_ctx {
	struct ssc_engine *e;
	u32 seg;
	struct ssc_sum *sum;
};

static int ssc_scan_seg(void *ctx, u64 key, u64 val)
{
	struct ssc_scan_ctx *c = ctx;
	u32 slot = val_slot(val);

	if (slot_seg(c->e, slot) == c->seg)
		c->sum->oblock[slot % c->e->slots_per_seg] = cpu_to_le64(key + 1);
	return 0;
}

/* Rebuild a segment's reverse map from the forward map. Under e->lock. */
void ssc_summary_from_map(struct ssc_engine *e, u32 seg, struct ssc_sum *sum)
{
	struct ssc_scan_ctx c = { .e = e, .seg = seg, .sum = sum };

	memset(sum, 0, e->summary_sectors << SECTOR_SHIFT);
	ssc_map_visit_range(e->map, 0, 1ULL << e->key_bits, ssc_scan_seg, &c);
}

/* Move one dirty block out of the victim. */
static int ssc_gc_copy(struct ssc_engine *e, u64 oblock, u32 old_slot)
{
	size_t len = e->geo.block_sectors << SECTOR_SHIFT;
	struct ssc_loc nloc;
	bool seal = false;
	u64 val;
	int r;

	r = e->ops->rw(e->priv, REQ_OP_READ, slot_sector(e, old_slot), e->gc_data, len);
	if (r)
		return r;
	mutex_lock(&e->lock);
	r = __ssc_reserve(e, oblock, true, &nloc, &seal);
	mutex_unlock(&e->lock);
	if (seal)
		ssc_seal_finish(e);
	if (r)
		return r;
	r = e->ops->rw(e->priv, REQ_OP_WRITE, nloc.sector, e->gc_data, len);
	if (r) {
		ssc_put(e, &nloc);
		return r;
	}
	mutex_lock(&e->lock);
	r = ssc_log_room(e, 1);
	/* only if nobody remapped or evicted it meanwhile */
	if (!r && ssc_map_lookup(e->map, oblock, &val) && val_slot(val) == old_slot) {
		u64 nval = mkval(nloc.slot, val_dirty(val));

		/*
		 * move_lsn first: an in-place writer that finds the new slot
		 * (under the shard lock the remap takes) sees it too
		 */
		WRITE_ONCE(e->segs[nloc.seg].move_lsn,
			   ssc_log_append(e, SSC_REC_INSERT, oblock, nloc.slot,
					  val_dirty(val) ? SSC_ENT_DIRTY : 0));
		/* the block keeps its recency: set before and after the remap */
		if (e->dref)
			assign_bit(nloc.slot, e->dref,
				   test_bit(old_slot, e->dref));
		/* overwriting an existing key allocates nothing */
		ssc_map_insert(e->map, oblock, nval, GFP_NOIO);
		if (e->dref && test_bit(old_slot, e->dref))
			set_bit(nloc.slot, e->dref);
		ssc_unaccount(e, val);
		ssc_account(e, nval);
		e->segs[nloc.seg].age = e->user_seq;
		e->st.gc_copied++;
	}
	mutex_unlock(&e->lock);
	ssc_put(e, &nloc);
	return r;
}

int ssc_gc_one(struct ssc_engine *e)
{
	struct ssc_sum *sum = e->gc_sum;
	u32 i, seg, base, ncopy, pass;
	int victim, r, commit_failed = 0;
	struct ssc_seg *s;
	bool empty;
	u64 val, lsn;

	mutex_lock(&e->lock);
	victim = ssc_pick(e);
	if (victim < 0) {
		mutex_unlock(&e->lock);
		return -ENOSPC;
	}
	seg = victim;
	s = &e->segs[seg];
	WRITE_ONCE(s->state, SEG_GC);
	mutex_unlock(&e->lock);
	/* pairs with ssc_get(): a pin taken before this is seen below */
	smp_mb();

	/* in-place writes and reservations into the victim finish first */
	wait_event(e->inflight_wq, !atomic_read(&s->inflight));

	/*
	 * The summary only names candidates, which the map confirms. One that
	 * leaves live blocks out (stale, or crafted with a valid checksum)
	 * would leave them in a segment about to be discarded: if the segment
	 * is not empty after a pass, a second pass works from the map.
	 */
	for (pass = 0; ; pass++) {
		r = 0;
		if (!pass)
			r = e->ops->rw(e->priv, REQ_OP_READ, seg_summary_sector(e, seg), sum,
				       e->summary_sectors << SECTOR_SHIFT);
		mutex_lock(&e->lock);
		if (pass || r ||
		    !ssc_check_crc(sum, e->summary_sectors << SECTOR_SHIFT, SSC_SUM_MAGIC) ||
		    le32_to_cpu(sum->seg) != seg) {
			if (pass)
				pr_warn_ratelimited("dm-ssc: summary of segment %u misses %u live blocks, rebuilding it from the map\n",
						    seg, s->valid);
			else
				pr_warn_ratelimited("dm-ssc: summary of segment %u unreadable, rebuilding it from the map\n",
						    seg);
			ssc_summary_from_map(e, seg, sum);
			r = 0;
		}
		base = seg * e->slots_per_seg;
		ncopy = 0;
		for (i = 0; i < e->slots_per_seg; i++) {
			u64 ob = le64_to_cpu(sum->oblock[i]);

			if (!ob)
				continue;
			ob--;
			r = ssc_log_room(e, 1);
			if (r)
				break;
			if (!ssc_map_lookup(e->map, ob, &val) || val_slot(val) != base + i)
				continue;
			if (!val_dirty(val)) {
				/* silent eviction */
				ssc_map_remove(e->map, ob, NULL, GFP_NOWAIT);
				ssc_unaccount(e, val);
				ssc_log_append(e, SSC_REC_REMOVE, ob, 0, 0);
				e->st.gc_evicted++;
			} else {
				e->gc_copy[ncopy++] = ob;
			}
		}
		mutex_unlock(&e->lock);

		for (i = 0; !r && i < ncopy; i++) {
			u64 ob = e->gc_copy[i];
			u32 slot;

			mutex_lock(&e->lock);
			if (!ssc_map_lookup(e->map, ob, &val) ||
			    slot_seg(e, val_slot(val)) != seg) {
				mutex_unlock(&e->lock);
				continue;
			}
			slot = val_slot(val);
			mutex_unlock(&e->lock);
			r = ssc_gc_copy(e, ob, slot);
		}

		/*
		 * Nothing enters a segment under GC: valid only goes down.
		 * Whatever emptied it, GC's drops and moves or a user's
		 * rewrite or eviction of a block this pass missed, appended
		 * its record by now: commit up to here, so that all of them
		 * are durable before the segment is reused. A failed commit
		 * has failed the cache itself if the log write failed (an
		 * origin flush that failed does not).
		 */
#if IS_ENABLED(CONFIG_DM_SSC_KUNIT_TEST)
		if (e->gc_pass_hook)
			e->gc_pass_hook(e, pass);
#endif
		mutex_lock(&e->lock);
		empty = !s->valid;
		lsn = e->appended_lsn;
		mutex_unlock(&e->lock);
		if (!r) {
			r = ssc_commit(e, lsn);
			commit_failed = r;
		}
		if (r || empty || pass)
			break;
	}
	/* readers that looked the old slots up are done */
	wait_event(e->inflight_wq, !atomic_read(&s->inflight));
	if (!r && empty && e->ops->discard)
		e->ops->discard(e->priv, e->data_start + (sector_t)seg * e->geo.segment_sectors,
				e->geo.segment_sectors);

	mutex_lock(&e->lock);
	if (!r && empty) {
		s->state = SEG_FREE;
		s->dirty = 0;
		WRITE_ONCE(e->free_segs, e->free_segs + 1);
		/* gc_runs counts segments cleaned, not attempts */
		e->st.gc_runs++;
		WRITE_ONCE(e->gc_starved, false);
		wake_up_all(&e->space_wq);
	} else {
		/* a failed copy: leave the segment as it is */
		s->state = SEG_SEALED;
		if (!r) {
			/*
			 * A pass from the map left blocks the map does not
			 * name: the segment's count and the map disagree.
			 * Picked again and again, it would stall GC: fail.
			 */
			pr_err("dm-ssc: segment %u holds %u blocks the map does not name\n",
			       seg, s->valid);
			r = -EUCLEAN;
		}
	}
	/* only I/O errors are fatal; no space or memory just stops this pass */
	if (r && !commit_failed && r != -EAGAIN && r != -ENOSPC && r != -ENOMEM)
		ssc_set_error(e, r);
	mutex_unlock(&e->lock);
	return r;
}

/**
 * ssc_gc() - collect segments until the free-space target is met
 * @e: the engine
 *
 * Runs in process context; nothing else may run GC at the same time.
 *
 * Return: 0 when enough segments are free, -ENOSPC when no segment can be
 * cleaned in the room GC has (too many dirty blocks: ssc_gc_starved() then
 * says so until a segment is cleaned), or an I/O error.
 */
int ssc_gc(struct ssc_engine *e)
{
	int r = 0, again = 0;

	while (READ_ONCE(e->free_segs) < e->gc_high && !READ_ONCE(e->error)) {
		r = ssc_gc_one(e);
		if (r == -EAGAIN && ++again < 8)
			continue;
		if (r)
			break;
	}
	if (r == -ENOSPC)
		WRITE_ONCE(e->gc_starved, true);
	wake_up_all(&e->space_wq);
	return r == -EAGAIN ? 0 : r;
}
