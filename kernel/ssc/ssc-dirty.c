// SPDX-License-Identifier: GPL-2.0
/*
 * SSC engine: which dirty block write-back takes next.
 *
 * No table of dirty blocks is kept: its RAM would grow with the cache, not
 * with what is dirty. The map's dirty bit says whether a block is dirty, a
 * segment's count how many of its blocks are, and its summary (on flash,
 * or in RAM while it is filled) which blocks it holds. Write-back walks the
 * segments that hold dirty blocks in the order they were opened, one
 * summary at a time, and comes back to the oldest after the youngest: blocks
 * are written back in about the order they were written, and a dirty block
 * used since it got dirty (its reference bit set by a read hit or an
 * overwrite) is passed over once, as CLOCK does.
 *
 * The summary only names candidates. Read from flash it may be stale or
 * crafted; a block is taken only if the map maps it to that very slot, and
 * dirty. A sealed segment left with more dirty blocks than its summary
 * named has its summary rebuilt from the map and written again.
 *
 * Everything here runs under e->wb_lock, which nests outside e->lock.
 */

#include "ssc-engine-int.h"

/*
 * Second chances ssc_next_dirty() gives in one call before it takes the
 * block at hand anyway: a block used all the time is written back too.
 */
#define SSC_DREF_BUDGET	4096

/* (seq, seg) after (hseq, hseg) */
static bool ssc_wb_after(u64 seq, u32 seg, u64 hseq, u32 hseg)
{
	return seq > hseq || (seq == hseq && seg > hseg);
}

/*
 * Refill e->wb_next with the SSC_WB_BATCH segments holding dirty blocks
 * that come first after the hand, by (open order, number); if none does,
 * the first ones from the start: the hand goes round. Reads the segment
 * table without e->lock: the counts, states and orders are hints, which
 * the scan checks against the map. One pass over the table per batch.
 */
static void ssc_wb_refill(struct ssc_engine *e)
{
	u64 hseq = e->wb_hand_seq;
	u32 hseg = e->wb_hand_seg;
	int round;

	e->wb_next_n = 0;
	e->wb_next_i = 0;
	for (round = 0; round < 2 && !e->wb_next_n; round++) {
		struct ssc_wb_next *b = e->wb_next;
		u32 seg, n = 0, j;

		for (seg = 0; seg < e->nr_segs; seg++) {
			struct ssc_seg *s = &e->segs[seg];
			u8 state = READ_ONCE(s->state);
			u64 seq = READ_ONCE(s->seq);

			if (!(seg & 1023))
				cond_resched();
			if (!READ_ONCE(s->dirty) || (state != SEG_OPEN && state != SEG_SEALED))
				continue;
			if (!round && hseg != U32_MAX && !ssc_wb_after(seq, seg, hseq, hseg))
				continue;
			/* insert in order; drop the last if full */
			if (n == SSC_WB_BATCH &&
			    !ssc_wb_after(b[n - 1].seq, b[n - 1].seg, seq, seg))
				continue;
			j = n < SSC_WB_BATCH ? n++ : n - 1;
			while (j && ssc_wb_after(b[j - 1].seq, b[j - 1].seg, seq, seg)) {
				b[j] = b[j - 1];
				j--;
			}
			b[j].seq = seq;
			b[j].seg = seg;
		}
		e->wb_next_n = n;
		if (hseg == U32_MAX)
			break;		/* round 0 already started from the start */
	}
}

/* The segment after the hand that holds dirty blocks, or U32_MAX. */
static u32 ssc_wb_pick(struct ssc_engine *e)
{
	struct ssc_wb_next *b;

	if (e->wb_next_i == e->wb_next_n)
		ssc_wb_refill(e);
	if (e->wb_next_i == e->wb_next_n)
		return U32_MAX;
	b = &e->wb_next[e->wb_next_i++];
	e->wb_hand_seg = b->seg;
	e->wb_hand_seq = b->seq;
	return b->seg;
}

/*
 * Rebuild the summary of sealed segment @seg from the map into e->wb_sum
 * and write it, so that it is done once. The segment is pinned while it is
 * written: GC does not take it meanwhile. Return: 0, or -EAGAIN if the
 * segment is no longer the sealed one whose summary was at hand.
 */
static int ssc_wb_rebuild(struct ssc_engine *e, u32 seg)
{
	const struct ssc_loc pin = { .seg = seg };
	struct ssc_seg *s = &e->segs[seg];
	int r;

	e->wb_rebuilt = true;
	e->wb_pos = 0;
	e->wb_seen = 0;
	mutex_lock(&e->lock);
	if (s->state != SEG_SEALED || s->seq != e->wb_seq) {
		mutex_unlock(&e->lock);
		return -EAGAIN;		/* reused since */
	}
	ssc_summary_from_map(e, seg, e->wb_sum);
	atomic_inc(&s->inflight);
	mutex_unlock(&e->lock);
	r = ssc_write_summary(e, seg, e->wb_sum);
	if (r)
		pr_warn_ratelimited("dm-ssc: rebuilt summary of segment %u not written: %d\n",
				    seg, r);
	ssc_put(e, &pin);
	return 0;
}

/*
 * Bring @seg's summary into e->wb_sum: a copy of the one in RAM while the
 * segment is filled or its summary is being written, else read from flash;
 * rebuilt from the map if unreadable. Return: 0, or -EAGAIN if the segment
 * is not one to scan (any more).
 */
static int ssc_wb_load(struct ssc_engine *e, u32 seg)
{
	size_t len = e->summary_sectors << SECTOR_SHIFT;
	const struct ssc_sum *in_ram = NULL;
	struct ssc_seg *s = &e->segs[seg];
	bool sealed;
	int r;

	e->wb_seen = 0;
	e->wb_pos = 0;
	mutex_lock(&e->lock);
	e->wb_seq = s->seq;
	sealed = s->state == SEG_SEALED && s->dirty;
	if (s->dirty && seg == e->open_seg)
		in_ram = e->sum;
	else if (s->dirty && seg == e->seal_seg)
		in_ram = e->seal_sum;
	if (in_ram)
		memcpy(e->wb_sum, in_ram, len);
	mutex_unlock(&e->lock);
	/*
	 * A copy of a summary in RAM misses only what was written after it,
	 * which the next round finds: never rebuilt
	 */
	e->wb_rebuilt = !!in_ram;
	if (in_ram)
		return 0;
	if (!sealed)
		return -EAGAIN;

	r = e->ops->rw(e->priv, REQ_OP_READ, seg_summary_sector(e, seg), e->wb_sum, len);
	if (!r && ssc_check_crc(e->wb_sum, len, SSC_SUM_MAGIC) &&
	    le32_to_cpu(e->wb_sum->seg) == seg)
		return 0;
	pr_warn_ratelimited("dm-ssc: summary of segment %u unreadable, write-back rebuilds it from the map\n",
			    seg);
	return ssc_wb_rebuild(e, seg) ? -EAGAIN : 0;
}

/*
 * Scan the rest of e->wb_sum for a dirty block still in its slot. Return:
 * 0 with *@oblock set, or -ENOENT when the segment is done.
 */
static int ssc_wb_scan(struct ssc_engine *e, unsigned int *budget, u64 *oblock)
{
	u32 seg = e->wb_seg, base = seg * e->slots_per_seg, slot;
	bool missing;
	u64 ob, val;

	for (;;) {
		mutex_lock(&e->lock);
		while (e->wb_pos < e->slots_per_seg) {
			ob = le64_to_cpu(e->wb_sum->oblock[e->wb_pos]);
			slot = base + e->wb_pos++;
			if (!ob || ob - 1 >= (1ULL << e->key_bits))
				continue;
			ob--;
			if (!ssc_map_lookup(e->map, ob, &val) || val_slot(val) != slot ||
			    !val_dirty(val))
				continue;	/* stale: not this slot's, or clean */
			e->wb_seen++;
			if (*budget && e->dref && test_and_clear_bit(slot, e->dref)) {
				(*budget)--;
				continue;	/* used since: a second chance */
			}
			*oblock = ob;
			mutex_unlock(&e->lock);
			return 0;
		}
		/*
		 * A sealed segment's dirty blocks only leave it: if more are
		 * left than the summary named, it leaves some out.
		 */
		missing = !e->wb_rebuilt && e->segs[seg].state == SEG_SEALED &&
			e->segs[seg].seq == e->wb_seq && e->segs[seg].dirty > e->wb_seen;
		if (missing)
			pr_warn_ratelimited("dm-ssc: summary of segment %u misses %u dirty blocks, write-back rebuilds it from the map\n",
					    seg, e->segs[seg].dirty - e->wb_seen);
		mutex_unlock(&e->lock);
		if (!missing || ssc_wb_rebuild(e, seg))
			return -ENOENT;
	}
}

/**
 * ssc_next_dirty() - the next write-back candidate
 * @e: the engine
 * @oblock: receives a dirty origin block
 *
 * The oldest dirty block not used since it got dirty, by CLOCK over the
 * segments in the order they were opened (see the top of this file).
 * Concurrent callers get different blocks, unless a block they did not
 * write back is found again on the hand's next round.
 *
 * Return: 0, or -ENOENT when no block is dirty outside garbage collection.
 */
int ssc_next_dirty(struct ssc_engine *e, u64 *oblock)
{
	unsigned int budget = SSC_DREF_BUDGET, turns = 0;
	/*
	 * Two turns of the hand at most: the first clears the reference bits,
	 * the second gives no second chance. The first segment of the call
	 * marks a turn; should it leave, a bound on the visits does.
	 */
	u32 visits = 2 * e->nr_segs + 2, first = U32_MAX;
	u64 first_seq = 0;
	int r = -ENOENT;

	mutex_lock(&e->wb_lock);
	while (visits) {
		if (e->wb_seg == U32_MAX) {
			u32 seg = ssc_wb_pick(e);

			if (seg == U32_MAX)
				break;
			if (first == U32_MAX) {
				first = seg;
				first_seq = e->wb_hand_seq;
			} else if (seg == first && e->wb_hand_seq == first_seq && ++turns == 2) {
				break;
			}
			if (--visits <= e->nr_segs || turns)
				budget = 0;
			if (ssc_wb_load(e, seg))
				continue;
			e->wb_seg = seg;
		}
		r = ssc_wb_scan(e, &budget, oblock);
		if (!r)
			break;
		e->wb_seg = U32_MAX;
		cond_resched();
	}
	mutex_unlock(&e->wb_lock);
	return r;
}
