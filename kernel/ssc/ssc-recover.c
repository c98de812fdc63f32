// SPDX-License-Identifier: GPL-2.0
/*
 * The SSC engine's recovery: load the newer checkpoint, replay the log
 * after it, verify the map against the layout, rebuild what RAM holds
 * (segment counts, the summaries of segments opened since, the dirty
 * table); and the clean shutdown that makes the next load a checkpoint read.
 */

#include "ssc-engine-int.h"

/* ---------------------------------------------------------------------
 * Recovery
 */

static int ssc_read_ckpt_hdr(struct ssc_engine *e, int i, struct ssc_ckpt_hdr *h)
{
	int r = e->ops->rw(e->priv, REQ_OP_READ, e->ckpt_start[i], h, SSC_MBLOCK_SIZE);

	if (r)
		return r;
	if (!ssc_check_crc(h, SSC_MBLOCK_SIZE, SSC_CKPT_MAGIC) || !le64_to_cpu(h->seq) ||
	    le64_to_cpu(h->seq) >= SSC_SEQ_LIMIT || le64_to_cpu(h->log_seq) >= SSC_SEQ_LIMIT)
		return -EUCLEAN;
	if (le32_to_cpu(h->nr_blocks) * (u64)SSC_MBLOCK_SECTORS + SSC_MBLOCK_SECTORS >
	    e->ckpt_sectors || le64_to_cpu(h->nr_entries) >
	    (u64)le32_to_cpu(h->nr_blocks) * SSC_CKPT_PER_BLOCK ||
	    le64_to_cpu(h->nr_entries) > e->nr_slots)
		return -EUCLEAN;
	return 0;
}

static int ssc_load_entry(struct ssc_engine *e, u64 ob, u32 slot, bool dirty)
{
	if (slot >= e->nr_slots || ob >= (1ULL << e->key_bits))
		return -EUCLEAN;
	return ssc_map_insert(e->map, ob, mkval(slot, dirty), GFP_KERNEL);
}

static int ssc_load_ckpt(struct ssc_engine *e, int which,
			 const struct ssc_ckpt_hdr *h, const char **err)
{
	u32 nblocks = le32_to_cpu(h->nr_blocks), done = 0, i, j;
	u64 seq = le64_to_cpu(h->seq), entries = 0;
	int r;

	while (done < nblocks) {
		u32 n = min_t(u32, nblocks - done, SSC_CKPT_BUF_BLOCKS);

		r = e->ops->rw(e->priv, REQ_OP_READ, e->ckpt_start[which] +
			       (sector_t)(1 + done) * SSC_MBLOCK_SECTORS,
			       e->ckpt_buf, (size_t)n * SSC_MBLOCK_SIZE);
		if (r) {
			*err = "Cannot read the checkpoint";
			return r;
		}
		for (i = 0; i < n; i++) {
			struct ssc_ckpt_blk *b = e->ckpt_buf + i * SSC_MBLOCK_SIZE;
			u32 nr = le32_to_cpu(b->nr);

			if (!ssc_check_crc(b, SSC_MBLOCK_SIZE, SSC_CKPT_ENT_MAGIC) ||
			    le64_to_cpu(b->ckpt_seq) != seq ||
			    le32_to_cpu(b->index) != done + i ||
			    nr > SSC_CKPT_PER_BLOCK) {
				*err = "Checkpoint block is corrupt (checksum, sequence or index)";
				return -EUCLEAN;
			}
			for (j = 0; j < nr; j++) {
				r = ssc_load_entry(e, le64_to_cpu(b->ent[j].oblock),
						   le32_to_cpu(b->ent[j].slot),
						   le32_to_cpu(b->ent[j].flags) & SSC_ENT_DIRTY);
				if (r) {
					*err = r == -ENOMEM ? SSC_ERR_CKPT_NOMEM :
						SSC_ERR_CKPT_RANGE;
					return r;
				}
			}
			entries += nr;
		}
		done += n;
	}
	if (entries != le64_to_cpu(h->nr_entries)) {
		*err = "Checkpoint entry count does not match its header";
		return -EUCLEAN;
	}
	return 0;
}

static bool ssc_log_blk_ok(struct ssc_engine *e, const struct ssc_log_blk *b,
			   u64 seq, u64 ckpt_seq)
{
	return ssc_check_crc(b, e->lbs, SSC_LOG_MAGIC) &&
		le64_to_cpu(b->seq) == seq && le64_to_cpu(b->ckpt_seq) == ckpt_seq &&
		le32_to_cpu(b->nr) <= e->log_per_block;
}

static int ssc_replay_rec(struct ssc_engine *e, const struct ssc_log_rec *rec,
			  unsigned long *suspect)
{
	u64 ob = le64_to_cpu(rec->oblock), val;
	u32 slot = le32_to_cpu(rec->slot);

	switch (rec->type) {
	case SSC_REC_INSERT:
		return ssc_load_entry(e, ob, slot, rec->flags & SSC_ENT_DIRTY);
	case SSC_REC_REMOVE:
		ssc_map_remove(e->map, ob, NULL, GFP_KERNEL);
		return 0;
	case SSC_REC_CLEAN:
		/*
		 * Only the copy that was cleaned: a fuzzy checkpoint may hold
		 * the block already rewritten elsewhere, dirty, and a torn
		 * commit may bring this record back without the rewrite's.
		 */
		if (ssc_map_lookup(e->map, ob, &val) && val_slot(val) == slot)
			return ssc_map_insert(e->map, ob, mkval(slot, false), GFP_KERNEL);
		return 0;
	case SSC_REC_OPEN:
		if (slot >= e->nr_segs)
			return -EUCLEAN;
		__set_bit(slot, suspect);
		return 0;
	default:
		return -EUCLEAN;
	}
}

/*
 * Roll the log forward from the checkpoint. The log ends at the first block
 * that is not the expected next one. A block with the right magic and
 * sequence but a bad checksum is a torn final write if nothing valid
 * follows it, and corruption (refused) if the log continues after it.
 */
static int ssc_replay(struct ssc_engine *e, const struct ssc_ckpt_hdr *h,
		      unsigned long *suspect, const char **err)
{
	u64 seq = le64_to_cpu(h->log_seq), ckpt_seq = le64_to_cpu(h->seq);
	u64 pos = 0, limit = SSC_LOG_LIMIT(e) + e->max_pending;
	struct ssc_log_blk *b = e->ckpt_buf;
	struct ssc_log_blk *next = e->ckpt_buf + SSC_MBLOCK_SIZE;
	u32 i;
	int r;

	limit = min(limit, e->log_blocks);
	for (; pos < limit; pos++, seq++) {
		r = e->ops->rw(e->priv, REQ_OP_READ,
			       e->log_start + pos * e->lbs_sectors, b, e->lbs);
		if (r) {
			*err = "Cannot read the log";
			return r;
		}
		if (!ssc_log_blk_ok(e, b, seq, ckpt_seq)) {
			if (le32_to_cpu(b->magic) != SSC_LOG_MAGIC ||
			    le64_to_cpu(b->seq) != seq || pos + 1 >= limit)
				break;
			r = e->ops->rw(e->priv, REQ_OP_READ,
				       e->log_start + (pos + 1) * e->lbs_sectors,
				       next, e->lbs);
			if (!r && ssc_log_blk_ok(e, next, seq + 1, ckpt_seq)) {
				*err = "Log block is corrupt in the middle of the log";
				return -EUCLEAN;
			}
			break;
		}
		for (i = 0; i < le32_to_cpu(b->nr); i++) {
			r = ssc_replay_rec(e, &b->rec[i], suspect);
			if (r) {
				*err = r == -ENOMEM ? "Out of memory replaying the log" :
					"Log record is invalid";
				return r;
			}
			e->st.replayed++;
		}
	}
	/* never reuse a sequence number that may be on disk */
	e->next_log_seq = seq + 1;
	return 0;
}

struct ssc_verify_ctx {
	struct ssc_engine *e;
	unsigned long *seen;	/* a bit per slot */
	u64 *beyond;		/* the clean blocks past the origin's end */
	u64 nr_beyond;
	u64 dirty_beyond;
	bool dup;
};

static int ssc_verify_visit(void *ctx, u64 key, u64 val)
{
	struct ssc_verify_ctx *c = ctx;

	if (key >= c->e->geo.origin_blocks) {
		if (val_dirty(val))
			c->dirty_beyond++;
		else
			c->nr_beyond++;
	} else if (__test_and_set_bit(val_slot(val), c->seen)) {
		c->dup = true;
		return 1;
	}
	return 0;
}

static int ssc_beyond_visit(void *ctx, u64 key, u64 val)
{
	struct ssc_verify_ctx *c = ctx;

	c->beyond[c->nr_beyond++] = key;	/* only clean ones are left */
	return 0;
}

/*
 * The map as loaded from the device must be one the engine could have
 * written: no slot holds two blocks (each would read the other's data), and
 * no block lies past the end of the origin (write-back would write there).
 * A table may have been made shorter since: clean blocks past its end are
 * dropped, dirty ones refuse the load so that their data is not lost.
 */
static int ssc_verify_map(struct ssc_engine *e, const char **err)
{
	struct ssc_verify_ctx c = { .e = e };
	u64 i;

	c.seen = kvcalloc(BITS_TO_LONGS(e->nr_slots), sizeof(long), GFP_KERNEL);
	if (!c.seen) {
		*err = "Out of memory loading the cache";
		return -ENOMEM;
	}
	ssc_map_visit_range(e->map, 0, 1ULL << e->key_bits, ssc_verify_visit, &c);
	kvfree(c.seen);
	if (c.dup) {
		*err = "Cache metadata maps two blocks to one slot";
		return -EUCLEAN;
	}
	if (c.dirty_beyond) {
		pr_err("dm-ssc: %llu dirty blocks lie past the end of the origin (%llu blocks)\n",
		       c.dirty_beyond, e->geo.origin_blocks);
		*err = SSC_ERR_DIRTY_BEYOND;
		return -EINVAL;
	}
	if (!c.nr_beyond)
		return 0;
	c.beyond = kvmalloc_array(c.nr_beyond, sizeof(u64), GFP_KERNEL);
	if (!c.beyond) {
		*err = "Out of memory loading the cache";
		return -ENOMEM;
	}
	c.nr_beyond = 0;
	ssc_map_visit_range(e->map, e->geo.origin_blocks, 1ULL << e->key_bits,
			    ssc_beyond_visit, &c);
	for (i = 0; i < c.nr_beyond; i++)
		ssc_map_remove(e->map, c.beyond[i], NULL, GFP_KERNEL);
	pr_info("dm-ssc: dropped %llu clean blocks past the end of the origin\n",
		c.nr_beyond);
	kvfree(c.beyond);
	return 0;
}

static int ssc_count_visit(void *ctx, u64 key, u64 val)
{
	struct ssc_engine *e = ctx;

	ssc_account(e, val);
	return 0;
}

struct ssc_resum_ctx {
	struct ssc_engine *e;
	const u32 *idx;		/* per segment: its summary in @buf, or U32_MAX */
	u8 *buf;
	size_t sum_bytes;
};

static int ssc_resum_visit(void *ctx, u64 key, u64 val)
{
	struct ssc_resum_ctx *c = ctx;
	u32 slot = val_slot(val);
	u32 i = c->idx[slot_seg(c->e, slot)];
	struct ssc_sum *sum;

	if (i != U32_MAX) {
		sum = (struct ssc_sum *)(c->buf + (size_t)i * c->sum_bytes);
		sum->oblock[slot % c->e->slots_per_seg] = cpu_to_le64(key + 1);
	}
	return 0;
}

/*
 * Rebuild from the map, and write, the summaries of the segments in
 * @suspect that hold blocks: those opened since the checkpoint, whose
 * summaries may be missing or stale. A walk of the map fills up to
 * SSC_RECOVER_SUM_BYTES of summaries at once, so recovery walks the map once
 * for any usual number of such segments, not once per segment (which made
 * it segments x cached blocks). Called at load, under both locks.
 */
static int ssc_rebuild_summaries(struct ssc_engine *e, const unsigned long *suspect,
				 const char **err)
{
	size_t sum_bytes = e->summary_sectors << SECTOR_SHIFT;
	struct ssc_resum_ctx c = { .e = e, .sum_bytes = sum_bytes };
	u32 batch = e->recover_batch, seg = 0, first, n, i;
	u32 *idx, *segs;
	int r = 0;

	if (!batch)
		batch = max_t(size_t, 1, SSC_RECOVER_SUM_BYTES / sum_bytes);
	idx = kvmalloc_array(e->nr_segs, sizeof(*idx), GFP_KERNEL);
	segs = kvmalloc_array(batch, sizeof(*segs), GFP_KERNEL);
	c.buf = kvmalloc_array(batch, sum_bytes, GFP_KERNEL);
	if (!idx || !segs || !c.buf) {
		*err = "Out of memory rebuilding segment summaries";
		r = -ENOMEM;
		goto out;
	}
	memset(idx, 0xff, e->nr_segs * sizeof(*idx));
	c.idx = idx;
	e->recover_walks = 0;
	for (first = 0; !r; first = seg) {
		n = 0;
		for (seg = first; seg < e->nr_segs && n < batch; seg++) {
			if (!test_bit(seg, suspect) || !e->segs[seg].valid)
				continue;
			idx[seg] = n;
			segs[n++] = seg;
		}
		if (!n)
			break;
		memset(c.buf, 0, n * sum_bytes);
		ssc_map_visit_range(e->map, 0, 1ULL << e->key_bits, ssc_resum_visit, &c);
		e->recover_walks++;
		for (i = 0; i < n; i++) {
			idx[segs[i]] = U32_MAX;
			if (r)
				continue;
			r = ssc_write_summary(e, segs[i],
					      (struct ssc_sum *)(c.buf + (size_t)i * sum_bytes));
			if (r)
				*err = "Cannot write a segment summary";
		}
	}
out:
	kvfree(c.buf);
	kvfree(segs);
	kvfree(idx);
	return r;
}

/**
 * ssc_engine_load() - recover the cache state, or resume after a shutdown
 * @e: the engine
 * @want_dirty_table: keep a table of dirty blocks for write-back
 * @err: receives a message on failure
 *
 * The first call loads the newest valid checkpoint, rolls the log forward,
 * rebuilds the per-segment counts and the summaries of segments that were
 * being filled at the crash, and writes a new checkpoint. Its cost grows
 * with the number of cached blocks and the length of the log, not with the
 * size of the cache device. Later calls (resume after suspend) only mark
 * the superblock as in use.
 *
 * Return: 0 or an error, with @err set.
 */
int ssc_engine_load(struct ssc_engine *e, bool want_dirty_table, const char **err)
{
	struct ssc_ckpt_hdr *h[2] = {};
	unsigned long *suspect = NULL;
	int which, r[2], ret;
	u32 seg, open;

	if (e->loaded) {
		ret = ssc_write_sb(e, false);
		if (ret)
			*err = "Cannot write the cache superblock";
		return ret;
	}
	if (e->need_format) {
		ret = ssc_format(e, err);
		if (ret)
			return ret;
		e->need_format = false;
	}

	/* a failed load may be retried by the next resume: start empty */
	if (ssc_map_count(e->map)) {
		unsigned int val_bits = fls64(e->nr_slots) + 1;
		struct ssc_map *m = ssc_map_create(e->key_bits, val_bits, e->nr_slots,
						   SSC_MAP_SHARDS, GFP_KERNEL);

		if (!m) {
			*err = "Out of memory loading the cache";
			return -ENOMEM;
		}
		ssc_map_destroy(e->map);
		e->map = m;
	}
	memset(e->segs, 0, e->nr_segs * sizeof(*e->segs));
	e->st.replayed = 0;

	h[0] = kmalloc(SSC_MBLOCK_SIZE, GFP_KERNEL);
	h[1] = kmalloc(SSC_MBLOCK_SIZE, GFP_KERNEL);
	suspect = bitmap_zalloc(e->nr_segs, GFP_KERNEL);
	ret = -ENOMEM;
	*err = "Out of memory loading the cache";
	if (!h[0] || !h[1] || !suspect)
		goto out;

	/*
	 * Read the superblock again: the copy taken by ssc_engine_create() may
	 * predate the clean shutdown of the table this one replaces, and its
	 * clean flag is what tells a crash from a reload.
	 */
	ret = e->ops->rw(e->priv, REQ_OP_READ, 0, h[0], SSC_MBLOCK_SIZE);
	if (ret) {
		*err = "Cannot read the cache superblock";
		goto out;
	}
	ret = ssc_check_sb(e, h[0], err);
	if (ret)
		goto out;
	if (!ssc_sb_same_layout(&e->sb, (const struct ssc_sb *)h[0])) {
		/* this engine's memory was sized by the copy it was created with */
		*err = "Cache superblock changed since the table was loaded";
		ret = -EINVAL;
		goto out;
	}
	memcpy(&e->sb, h[0], sizeof(e->sb));

	r[0] = ssc_read_ckpt_hdr(e, 0, h[0]);
	r[1] = ssc_read_ckpt_hdr(e, 1, h[1]);
	if (r[0] && r[1]) {
		*err = "No valid checkpoint on the cache device";
		ret = -EUCLEAN;
		goto out;
	}
	if (r[0])
		which = 1;
	else if (r[1])
		which = 0;
	else
		which = le64_to_cpu(h[1]->seq) > le64_to_cpu(h[0]->seq);

	ret = ssc_load_ckpt(e, which, h[which], err);
	if (ret)
		goto out;
	ret = ssc_replay(e, h[which], suspect, err);
	if (ret)
		goto out;
	ret = ssc_verify_map(e, err);
	if (ret)
		goto out;
	open = le32_to_cpu(h[which]->open_seg);
	if (open < e->nr_segs)
		__set_bit(open, suspect);
	e->ckpt_cur = which;
	e->ckpt_seq = le64_to_cpu(h[which]->seq);
	e->user_seq = le64_to_cpu(h[which]->user_seq);
	e->st.recovered = !(le32_to_cpu(e->sb.flags) & SSC_SB_CLEAN);

	/* derived state: per-segment counts, free segments */
	mutex_lock(&e->commit_lock);
	mutex_lock(&e->lock);
	e->nr_dirty = 0;
	ssc_map_visit_range(e->map, 0, 1ULL << e->key_bits, ssc_count_visit, e);
	e->free_segs = 0;
	for (seg = 0; seg < e->nr_segs; seg++) {
		struct ssc_seg *s = &e->segs[seg];

		s->age = e->user_seq;
		s->seq = 0;		/* opened before: in number order */
		if (!s->valid) {
			s->state = SEG_FREE;
			e->free_segs++;
			continue;
		}
		s->state = SEG_SEALED;
	}
	/* segments being filled since the checkpoint: summaries may be stale */
	ret = ssc_rebuild_summaries(e, suspect, err);
	if (e->dref) {
		bitmap_zero(e->dref, e->nr_slots);	/* a load tried again */
	} else if (!ret && (want_dirty_table || e->nr_dirty)) {
		/* a bit per slot: the only per-block state write-back keeps */
		e->dref = bitmap_zalloc(e->nr_slots, GFP_KERNEL);
		if (!e->dref) {
			ret = -ENOMEM;
			*err = "Cannot allocate the write-back reference bits";
		}
	}
	/* write-back starts again at the oldest segment */
	e->wb_seg = U32_MAX;
	e->wb_hand_seg = U32_MAX;
	e->wb_next_n = 0;
	e->wb_next_i = 0;
	if (!ret) {
		ret = __ssc_checkpoint(e);
		if (ret)
			*err = "Cannot write a checkpoint";
	}
	mutex_unlock(&e->lock);
	mutex_unlock(&e->commit_lock);
	if (!ret) {
		ret = ssc_write_sb(e, false);
		if (ret)
			*err = "Cannot write the cache superblock";
	}
	if (!ret) {
		e->loaded = true;
		if (e->free_segs < e->gc_low && e->ops->kick_gc)
			e->ops->kick_gc(e->priv);
	}
out:
	kfree(h[0]);
	kfree(h[1]);
	bitmap_free(suspect);
	return ret;
}

/**
 * ssc_engine_shutdown() - checkpoint and mark the cache cleanly shut down
 * @e: the engine
 *
 * Return: 0 or an error.
 */
int ssc_engine_shutdown(struct ssc_engine *e)
{
	int r;

	if (!e->loaded)
		return 0;
	r = ssc_checkpoint(e);
	if (!r)
		r = ssc_write_sb(e, true);
	return r;
}
