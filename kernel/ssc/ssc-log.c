// SPDX-License-Identifier: GPL-2.0
/*
 * The SSC engine's operation log: records appended in RAM, written in log
 * blocks by a commit (grouped: at a FLUSH, a FUA write or when the buffer
 * fills), the FLUSH that waits for a cache flush issued after it, and the
 * checkpoints that write the whole map and start the log over.
 */

#include "ssc-engine-int.h"

/* ---------------------------------------------------------------------
 * Operation log
 */

/*
 * Make room for @n records in the pending buffer. Called with e->lock held;
 * may drop it to commit, so callers look at the map only after this.
 */
int ssc_log_room(struct ssc_engine *e, unsigned int n)
{
	int r;

	while (e->nr_pending + n > e->max_pending + e->ckpt_covers) {
		u64 lsn = e->appended_lsn;

		mutex_unlock(&e->lock);
		r = ssc_commit(e, lsn);
		mutex_lock(&e->lock);
		if (r)
			return r;
	}
	return READ_ONCE(e->error);
}

u64 ssc_log_append(struct ssc_engine *e, u8 type, u64 oblock, u32 slot,
		   u8 flags)
{
	struct ssc_log_rec *rec = &e->pending[e->nr_pending++];

	rec->oblock = cpu_to_le64(oblock);
	rec->slot = cpu_to_le32(slot);
	rec->type = type;
	rec->flags = flags;
	rec->reserved = 0;
	e->appended_lsn++;
	if (type == SSC_REC_REMOVE)
		e->remove_lsn = e->appended_lsn;
	return e->appended_lsn;
}

/* Build the first @n pending records into log blocks; returns the number of blocks. */
static unsigned int ssc_log_build(struct ssc_engine *e, unsigned int n)
{
	unsigned int i, nblocks = DIV_ROUND_UP(n, e->log_per_block);
	unsigned int done = 0;

	for (i = 0; i < nblocks; i++) {
		struct ssc_log_blk *b = e->log_buf + i * e->lbs;
		unsigned int nr = min_t(unsigned int, e->log_per_block, n - done);

		memset(b, 0, e->lbs);
		b->magic = cpu_to_le32(SSC_LOG_MAGIC);
		b->seq = cpu_to_le64(e->next_log_seq + i);
		b->ckpt_seq = cpu_to_le64(e->ckpt_seq);
		b->nr = cpu_to_le32(nr);
		memcpy(b->rec, &e->pending[done], nr * sizeof(struct ssc_log_rec));
		ssc_seal_crc(b, e->lbs);
		done += nr;
	}
	return nblocks;
}

/*
 * Before a clean record becomes durable, the origin data it vouches for must
 * be: the cache manager flushes the origin. Called with commit_lock and
 * e->lock held; the flag is cleared under e->lock before the flush starts,
 * so a clean record appended after that sets it again. Its failure fails
 * the commit, not the cache; the records stay pending.
 */
static int ssc_origin_flush(struct ssc_engine *e, bool drop_lock)
{
	int r;

	lockdep_assert_held(&e->commit_lock);
	lockdep_assert_held(&e->lock);
	if (!e->ops->before_clean_commit || !e->clean_published)
		return 0;
	e->clean_published = false;
	if (drop_lock)
		mutex_unlock(&e->lock);
	r = e->ops->before_clean_commit(e->priv);
	if (drop_lock)
		mutex_lock(&e->lock);
	if (r)
		e->clean_published = true;
	return r;
}

/*
 * Write pending records, in as few log blocks as fit, with a cache flush
 * before them (so the data they point at is durable first) and FUA. Called
 * with commit_lock held. If clean records are pending, the origin is flushed
 * first, without e->lock (it is slow, and every change needs the lock); records
 * appended meanwhile may vouch for origin writes that flush missed, so only
 * the records there were when it was asked for are written. Callers that
 * need a record loop until it is committed.
 */
static int __ssc_commit(struct ssc_engine *e)
{
	unsigned int nblocks, n;
	sector_t sector;
	u64 last, flush;
	int r;

	lockdep_assert_held(&e->commit_lock);
	mutex_lock(&e->lock);
	r = e->error;
	if (r)
		goto out;
	n = e->nr_pending;
	r = ssc_origin_flush(e, true);
	if (r)
		goto out;
	nblocks = ssc_log_build(e, n);
	if (e->log_head + nblocks > SSC_LOG_LIMIT(e)) {
		/* the checkpoint covers every record pending when it starts */
		mutex_unlock(&e->lock);
		return ssc_checkpoint_fuzzy(e);
	}
	sector = e->log_start + e->log_head * e->lbs_sectors;
	e->log_head += nblocks;
	e->next_log_seq += nblocks;
	last = e->appended_lsn - (e->nr_pending - n);
	e->nr_pending -= n;
	memmove(e->pending, e->pending + n, e->nr_pending * sizeof(*e->pending));
	flush = ++e->flushes_issued;
	mutex_unlock(&e->lock);

	r = ssc_meta_rw(e, REQ_OP_WRITE | REQ_SYNC | REQ_PREFLUSH | REQ_FUA,
			sector, e->log_buf, (size_t)nblocks * e->lbs);
	mutex_lock(&e->lock);
	if (r) {
		ssc_set_error(e, r);
	} else {
		WRITE_ONCE(e->committed_lsn, last);
		e->flushes_done = flush;
	}
	e->st.commits++;
out:
	mutex_unlock(&e->lock);
	return r;
}

/**
 * ssc_commit() - make the log durable up to a record
 * @e: the engine
 * @lsn: the record, as returned by ssc_publish() or ssc_evict(); 0 is a no-op
 *
 * Every record appended so far is written (see __ssc_commit()). Concurrent
 * callers share a commit: a record is durable once any commit that was
 * built after it was appended has completed.
 *
 * Return: 0, or the error that made the cache fail.
 */
int ssc_commit(struct ssc_engine *e, u64 lsn)
{
	int r = 0;

	if (lsn <= READ_ONCE(e->committed_lsn))
		return READ_ONCE(e->error);

	mutex_lock(&e->commit_lock);
	r = READ_ONCE(e->error);
	while (!r && lsn > e->committed_lsn)
		r = __ssc_commit(e);
	mutex_unlock(&e->commit_lock);
	return r;
}

/**
 * ssc_remove_barrier() - the record a write to the origin must wait for
 * @e: the engine
 *
 * Before the origin is written behind the cache's back, every earlier
 * record that drops a mapping (evict, silent eviction) must be durable:
 * otherwise a crash could bring back a mapping to older data than the
 * origin holds.
 *
 * Return: the LSN to pass to ssc_commit().
 */
u64 ssc_remove_barrier(struct ssc_engine *e)
{
	u64 lsn;

	mutex_lock(&e->lock);
	lsn = e->remove_lsn;
	mutex_unlock(&e->lock);
	return lsn;
}

/* ---------------------------------------------------------------------
 * Checkpoints
 */

struct ssc_ckpt_ctx {
	struct ssc_engine *e;
	sector_t start;		/* first entry block of the region */
	u32 blk;		/* entry blocks finished */
	u32 in_buf;		/* blocks in the staging buffer */
	u32 nr;			/* entries in the current block */
	u64 entries;
	int r;
};

static struct ssc_ckpt_blk *ckpt_cur_blk(struct ssc_ckpt_ctx *c)
{
	return c->e->ckpt_buf + c->in_buf * SSC_MBLOCK_SIZE;
}

static int ssc_ckpt_flush_buf(struct ssc_ckpt_ctx *c)
{
	struct ssc_engine *e = c->e;
	u32 first = c->blk - c->in_buf;
	int r;

	if (!c->in_buf)
		return 0;
	r = ssc_meta_rw(e, REQ_OP_WRITE, c->start + (sector_t)first * SSC_MBLOCK_SECTORS,
			e->ckpt_buf, (size_t)c->in_buf * SSC_MBLOCK_SIZE);
	c->in_buf = 0;
	return r;
}

static int ssc_ckpt_end_blk(struct ssc_ckpt_ctx *c)
{
	struct ssc_ckpt_blk *b = ckpt_cur_blk(c);

	b->magic = cpu_to_le32(SSC_CKPT_ENT_MAGIC);
	b->ckpt_seq = cpu_to_le64(c->e->ckpt_seq + 1);
	b->index = cpu_to_le32(c->blk);
	b->nr = cpu_to_le32(c->nr);
	ssc_seal_crc(b, SSC_MBLOCK_SIZE);
	c->blk++;
	c->in_buf++;
	c->nr = 0;
	if (c->in_buf == SSC_CKPT_BUF_BLOCKS)
		return ssc_ckpt_flush_buf(c);
	return 0;
}

static int ssc_ckpt_visit(void *ctx, u64 key, u64 val)
{
	struct ssc_ckpt_ctx *c = ctx;
	struct ssc_ckpt_blk *b = ckpt_cur_blk(c);
	struct ssc_map_ent *ent;

	if (!c->nr)
		memset(b, 0, SSC_MBLOCK_SIZE);
	ent = &b->ent[c->nr++];
	ent->oblock = cpu_to_le64(key);
	ent->slot = cpu_to_le32(val_slot(val));
	ent->flags = cpu_to_le32(val_dirty(val) ? SSC_ENT_DIRTY : 0);
	c->entries++;
	if (c->nr == SSC_CKPT_PER_BLOCK) {
		c->r = ssc_ckpt_end_blk(c);
		if (c->r)
			return 1;
	}
	return 0;
}

/*
 * A sealed segment whose summary is still on its way is not suspect to the
 * recovery of a checkpoint: the checkpoint writes the summary too (the same
 * bytes as its sealer's write, made before it dropped the lock). Under
 * e->lock.
 */
static int ssc_ckpt_sealing_summary(struct ssc_engine *e)
{
	if (e->seal_seg == U32_MAX)
		return 0;
	return ssc_put_summary(e, e->seal_seg, e->seal_sum);
}

/* The header of the checkpoint @c wrote, in e->ckpt_buf. Under e->lock. */
static struct ssc_ckpt_hdr *ssc_ckpt_hdr(struct ssc_engine *e,
					 const struct ssc_ckpt_ctx *c)
{
	struct ssc_ckpt_hdr *h = e->ckpt_buf;

	memset(h, 0, SSC_MBLOCK_SIZE);
	h->magic = cpu_to_le32(SSC_CKPT_MAGIC);
	h->seq = cpu_to_le64(e->ckpt_seq + 1);
	h->nr_entries = cpu_to_le64(c->entries);
	h->nr_blocks = cpu_to_le32(c->blk);
	h->log_seq = cpu_to_le64(e->next_log_seq);
	h->open_seg = cpu_to_le32(e->open_seg);
	h->user_seq = cpu_to_le64(e->user_seq);
	ssc_seal_crc(h, SSC_MBLOCK_SIZE);
	return h;
}

/*
 * The header in region @tgt is durable: it covers the first @covered
 * pending records, up to @lsn; the log starts over with the rest. Under
 * e->lock.
 */
static void ssc_ckpt_done(struct ssc_engine *e, int tgt, u32 covered, u64 lsn)
{
	e->ckpt_cur = tgt;
	e->ckpt_seq++;
	e->log_head = 0;
	e->nr_pending -= covered;
	memmove(e->pending, e->pending + covered, e->nr_pending * sizeof(*e->pending));
	WRITE_ONCE(e->committed_lsn, lsn);
	e->st.checkpoints++;
}

/*
 * Write the whole forward map to the other checkpoint region, then its
 * header with a flush and FUA. Called with commit_lock and lock held; the
 * checkpoint makes every pending record durable, so the log starts over.
 * For the load, which runs before any I/O; otherwise ssc_checkpoint_fuzzy().
 */
int __ssc_checkpoint(struct ssc_engine *e)
{
	int tgt = !e->ckpt_cur;
	struct ssc_ckpt_ctx c = {
		.e = e,
		.start = e->ckpt_start[tgt] + SSC_MBLOCK_SECTORS,
	};
	struct ssc_ckpt_hdr *h;
	u64 flush;
	int r;

	lockdep_assert_held(&e->commit_lock);
	lockdep_assert_held(&e->lock);
	if (e->error)
		return e->error;
	/*
	 * The map holds every clean block published so far: flush the origin
	 * under the lock, so that none is published between the flush and the
	 * map walk. (Checkpoints are rare; commits flush without the lock.)
	 */
	r = ssc_origin_flush(e, false);
	if (r)
		return r;
	r = ssc_ckpt_sealing_summary(e);
	if (r)
		goto fail;

	ssc_map_visit_range(e->map, 0, 1ULL << e->key_bits, ssc_ckpt_visit, &c);
	r = c.r;
	if (!r && c.nr)
		r = ssc_ckpt_end_blk(&c);
	if (!r)
		r = ssc_ckpt_flush_buf(&c);
	if (r)
		goto fail;

	h = ssc_ckpt_hdr(e, &c);
	flush = ++e->flushes_issued;
	r = ssc_meta_rw(e, REQ_OP_WRITE | REQ_SYNC | REQ_PREFLUSH | REQ_FUA,
			e->ckpt_start[tgt], h, SSC_MBLOCK_SIZE);
	if (r)
		goto fail;
	e->flushes_done = flush;

	ssc_ckpt_done(e, tgt, e->nr_pending, e->appended_lsn);
	return 0;
fail:
	ssc_set_error(e, r);
	return r;
}

/*
 * A checkpoint that does not stop I/O. Called with commit_lock held (no
 * commit runs meanwhile, so the log stays as it is and the pending records
 * stay in RAM) and without e->lock, which it takes one shard at a time:
 * writers wait for at most a shard's walk, read hits not at all.
 *
 * The records pending when it starts describe changes the map already
 * holds, so the checkpoint covers them. Changes made during the walk may be
 * in it or not, shard by shard; their records stay pending and go to the
 * new log after the header, and replaying them over the checkpoint gives
 * the map they made, each record setting or dropping one block's mapping.
 * Until they are committed a crash brings back the checkpoint alone: an
 * older state of those blocks, or their newer one, never a slot given to
 * two blocks, as no segment is reused without a commit (GC commits its
 * drops and moves first). A clean block the walk saw is made durable on
 * the origin before the header is written.
 */
int ssc_checkpoint_fuzzy(struct ssc_engine *e)
{
	struct ssc_ckpt_ctx c = { .e = e };
	struct ssc_ckpt_hdr *h;
	u64 start_lsn, flush;
	u32 start_n, i;
	int tgt, r;

	lockdep_assert_held(&e->commit_lock);
	mutex_lock(&e->lock);
	r = e->error;
	if (r)
		goto out;
	tgt = !e->ckpt_cur;
	c.start = e->ckpt_start[tgt] + SSC_MBLOCK_SECTORS;
	start_n = e->nr_pending;
	start_lsn = e->appended_lsn;
	/* appends go on into the second half of the pending buffer */
	e->ckpt_covers = start_n;
	mutex_unlock(&e->lock);

	for (i = 0; !r && i < ssc_map_nr_shards(e->map); i++) {
		mutex_lock(&e->lock);
		ssc_map_visit_shard(e->map, i, 0, 1ULL << e->key_bits, ssc_ckpt_visit, &c);
		mutex_unlock(&e->lock);
		r = c.r;
#if IS_ENABLED(CONFIG_DM_SSC_KUNIT_TEST)
		if (e->ckpt_shard_hook)
			e->ckpt_shard_hook(e, i);
#endif
		cond_resched();
	}
	if (!r && c.nr)
		r = ssc_ckpt_end_blk(&c);
	if (!r)
		r = ssc_ckpt_flush_buf(&c);
	mutex_lock(&e->lock);
	if (r)
		goto fail;
	r = e->error;		/* the cache failed meanwhile */
	if (r)
		goto out;
	/* a failed origin flush fails this checkpoint, not the cache */
	r = ssc_origin_flush(e, true);
	if (r)
		goto out;
	r = ssc_ckpt_sealing_summary(e);
	if (r)
		goto fail;

	h = ssc_ckpt_hdr(e, &c);
	flush = ++e->flushes_issued;
	/*
	 * Not under e->lock: a segment opened from here on has its OPEN
	 * record in the new log, like the records of the walk's time
	 */
	mutex_unlock(&e->lock);
	r = ssc_meta_rw(e, REQ_OP_WRITE | REQ_SYNC | REQ_PREFLUSH | REQ_FUA,
			e->ckpt_start[tgt], h, SSC_MBLOCK_SIZE);
	mutex_lock(&e->lock);
	if (r)
		goto fail;
	e->flushes_done = flush;

	/* the records appended during the walk start the new log */
	ssc_ckpt_done(e, tgt, start_n, start_lsn);
	goto out;
fail:
	ssc_set_error(e, r);
out:
	e->ckpt_covers = 0;
	mutex_unlock(&e->lock);
	return r;
}

/**
 * ssc_checkpoint() - write a checkpoint now, without stopping I/O
 * @e: the engine
 *
 * Return: 0 or the I/O error.
 */
int ssc_checkpoint(struct ssc_engine *e)
{
	int r;

	mutex_lock(&e->commit_lock);
	r = ssc_checkpoint_fuzzy(e);
	mutex_unlock(&e->commit_lock);
	return r;
}

static u64 ssc_appended(struct ssc_engine *e)
{
	u64 lsn;

	mutex_lock(&e->lock);
	lsn = e->appended_lsn;
	mutex_unlock(&e->lock);
	return lsn;
}

/**
 * ssc_commit_pending() - commit every record appended so far
 * @e: the engine
 *
 * The group commit of write_clean and clean records, run periodically.
 *
 * Return: 0 or an error.
 */
int ssc_commit_pending(struct ssc_engine *e)
{
	return ssc_commit(e, ssc_appended(e));
}

/**
 * ssc_flush() - make everything acknowledged so far durable
 * @e: the engine
 *
 * Commits the records appended before it began; if there are none left,
 * flushes the cache device, which makes in-place writes of dirty blocks
 * durable. Either way it waits for a cache flush issued after it began:
 * one issued earlier may have overtaken a write acknowledged before the
 * call, so it is never reused. Concurrent calls share one flush.
 *
 * Return: 0 or an error.
 */
int ssc_flush(struct ssc_engine *e)
{
	u64 seen, want, flush;
	int r;

	mutex_lock(&e->lock);
	seen = e->flushes_issued;
	want = e->appended_lsn;
	mutex_unlock(&e->lock);

	mutex_lock(&e->commit_lock);
	r = READ_ONCE(e->error);
	/*
	 * Every record appended before the FLUSH arrived is in a commit. A
	 * commit numbered after the FLUSH arrived may have been built before
	 * (its records are taken before the origin flush, without the lock,
	 * and its number after), so the number alone does not say so.
	 */
	while (!r && e->committed_lsn < want)
		r = __ssc_commit(e);
	if (r || e->flushes_done > seen)
		goto out;
	mutex_lock(&e->lock);
	if (e->appended_lsn > e->committed_lsn) {
		mutex_unlock(&e->lock);
		r = __ssc_commit(e);
		goto out;
	}
	flush = ++e->flushes_issued;
	mutex_unlock(&e->lock);

	r = e->ops->rw(e->priv, REQ_OP_WRITE | REQ_PREFLUSH, 0, NULL, 0);
	mutex_lock(&e->lock);
	if (r)
		ssc_set_error(e, r);
	else
		e->flushes_done = flush;
	mutex_unlock(&e->lock);
out:
	mutex_unlock(&e->commit_lock);
	return r;
}
