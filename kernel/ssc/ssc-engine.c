// SPDX-License-Identifier: GPL-2.0
/*
 * The SSC engine of dm-ssc: a FlashTier solid-state cache kept by the host
 * on a plain flash device. See ssc-engine.h for the interface,
 * ssc-format.h for the on-disk layout and ssc-engine-int.h for the files
 * of the engine. This one has the layout, create/destroy,
 * lookups, slot allocation, publish/evict/clean and the statistics.
 *
 * State in RAM:
 *  - the sparse map, origin block -> (slot << 1 | dirty); the only per-block
 *    state (unified address space: there is no second table);
 *  - one struct ssc_seg per segment (valid/dirty counts, age, open order,
 *    state and an in-flight count that garbage collection waits on);
 *  - the open segment's summary, the pending log records, and in write-back
 *    one reference bit per slot: write-back walks the segments holding
 *    dirty blocks through their summaries, by CLOCK (ssc-dirty.c).
 *
 * Locking: e->commit_lock serializes log writes and checkpoints; e->lock
 * protects everything else and nests inside commit_lock. Data I/O is never
 * done under either lock; metadata I/O is done under commit_lock, and under
 * e->lock only for a checkpoint's entries (one shard of the map at a time)
 * and a segment summary whose spare buffer is busy. Every change of the
 * map is made under e->lock; lookups (ssc_get(), ssc_peek()) take only the
 * lock of the map's shard (ssc-map.h), for reading; each change takes it
 * for writing while it becomes visible. Lookups pin the slot under it. Those lookups read a
 * segment's state and move_lsn and set dirty reference bits without
 * e->lock: see ssc_get() for the ordering.
 */

#include "ssc-engine-int.h"

u32 ssc_crc(const void *buf, size_t len)
{
	/* The first four bytes of every object are its crc, taken as 0. */
	static const u8 zero[4];
	u32 crc;

	crc = crc32c(~0U, zero, sizeof(zero));
	return crc32c(crc, (const u8 *)buf + 4, len - 4);
}

void ssc_seal_crc(void *buf, size_t len)
{
	*(__le32 *)buf = cpu_to_le32(ssc_crc(buf, len));
}

bool ssc_check_crc(const void *buf, size_t len, u32 magic)
{
	const __le32 *w = buf;

	return le32_to_cpu(w[1]) == magic && le32_to_cpu(w[0]) == ssc_crc(buf, len);
}

void ssc_set_error(struct ssc_engine *e, int r)
{
	if (!e->error) {
		pr_err("dm-ssc: cache device metadata I/O failed (%d); cache is now failed\n",
		       r);
		WRITE_ONCE(e->error, r);
		wake_up_all(&e->space_wq);
		if (e->ops->event)
			e->ops->event(e->priv, SSC_ENG_FAILED, -r, 0);
	}
}

int ssc_meta_rw(struct ssc_engine *e, blk_opf_t opf, sector_t sector,
		void *buf, size_t len)
{
	int r = e->ops->rw(e->priv, opf, sector, buf, len);

	if (!r && op_is_write(opf))
		atomic64_add(len >> SECTOR_SHIFT, &e->meta_sectors);
	return r;
}

static void ssc_fill_loc(const struct ssc_engine *e, u32 slot, struct ssc_loc *loc)
{
	loc->slot = slot;
	loc->seg = slot_seg(e, slot);
	loc->sector = slot_sector(e, slot);
}

/* ---------------------------------------------------------------------
 * Layout
 */

static void ssc_prep_summary(struct ssc_engine *e, u32 seg, struct ssc_sum *sum)
{
	sum->magic = cpu_to_le32(SSC_SUM_MAGIC);
	sum->seg = cpu_to_le32(seg);
	sum->nr = cpu_to_le32(e->slots_per_seg);
	ssc_seal_crc(sum, e->summary_sectors << SECTOR_SHIFT);
}

/* Write a summary made ready by ssc_prep_summary(); it is not changed. */
int ssc_put_summary(struct ssc_engine *e, u32 seg, const struct ssc_sum *sum)
{
	return ssc_meta_rw(e, REQ_OP_WRITE | REQ_SYNC, seg_summary_sector(e, seg),
			   (void *)sum, e->summary_sectors << SECTOR_SHIFT);
}

static u32 ssc_summary_sectors(u32 slots)
{
	size_t bytes = sizeof(struct ssc_sum) + (size_t)slots * sizeof(__le64);

	return DIV_ROUND_UP(bytes, SSC_MBLOCK_SIZE) * SSC_MBLOCK_SECTORS;
}

/*
 * The shortest log, in blocks of @lbs bytes: below its 2/3 limit, two
 * commits of the fullest pending buffer (twice SSC_PENDING_RECORDS while a
 * checkpoint runs). A shorter one would take a checkpoint at every commit.
 */
static u64 ssc_log_min_blocks(u32 lbs)
{
	return 3 * DIV_ROUND_UP(2 * SSC_PENDING_RECORDS, SSC_LOG_PER_BLOCK(lbs));
}

static int ssc_compute_layout(const struct ssc_geometry *geo, struct ssc_sb *sb)
{
	u32 bps = geo->segment_sectors / geo->block_sectors;
	u64 max_slots, ckpt_blocks, log_blocks, nr_segs;
	sector_t meta, data_start;
	u32 slots;

	/* the most data slots that fit next to their summary */
	for (slots = bps; slots > 0; slots--)
		if ((sector_t)slots * geo->block_sectors +
		    ssc_summary_sectors(slots) <= geo->segment_sectors)
			break;
	if (!slots)
		return -EINVAL;

	/* size the checkpoints for a device full of slots (an upper bound) */
	max_slots = div_u64(geo->cache_sectors, geo->segment_sectors) * slots;
	ckpt_blocks = 1 + DIV_ROUND_UP(max_slots, SSC_CKPT_PER_BLOCK);
	/*
	 * The log holds 4 checkpoints' worth of bytes, sized to the device:
	 * a checkpoint is taken when it is 2/3 full, so it is never shorter
	 * than what two of the largest commits need (ssc_log_min_blocks()).
	 */
	log_blocks = max_t(u64, 4 * ckpt_blocks * SSC_MBLOCK_SIZE / geo->log_block_bytes,
			   ssc_log_min_blocks(geo->log_block_bytes));

	meta = SSC_MBLOCK_SECTORS + 2 * ckpt_blocks * SSC_MBLOCK_SECTORS +
		log_blocks * (geo->log_block_bytes >> SECTOR_SHIFT);
	data_start = roundup(meta, (sector_t)geo->segment_sectors);
	if (data_start >= geo->cache_sectors)
		return -ENOSPC;
	nr_segs = div_u64(geo->cache_sectors - data_start, geo->segment_sectors);
	if (nr_segs < SSC_MIN_DATA_SEGS)
		return -ENOSPC;
	/* slots < bps: this keeps nr_slots below U32_MAX, which is no slot */
	if (nr_segs > U32_MAX / bps)
		return -EFBIG;

	memset(sb, 0, sizeof(*sb));
	sb->magic = cpu_to_le32(SSC_SB_MAGIC);
	sb->version = cpu_to_le32(SSC_FORMAT_VERSION);
	sb->block_sectors = cpu_to_le32(geo->block_sectors);
	sb->segment_sectors = cpu_to_le32(geo->segment_sectors);
	sb->slots_per_seg = cpu_to_le32(slots);
	sb->summary_sectors = cpu_to_le32(ssc_summary_sectors(slots));
	sb->nr_segments = cpu_to_le64(nr_segs);
	sb->ckpt_start[0] = cpu_to_le64(SSC_MBLOCK_SECTORS);
	sb->ckpt_start[1] = cpu_to_le64(SSC_MBLOCK_SECTORS +
					ckpt_blocks * SSC_MBLOCK_SECTORS);
	sb->ckpt_sectors = cpu_to_le64(ckpt_blocks * SSC_MBLOCK_SECTORS);
	sb->log_start = cpu_to_le64(SSC_MBLOCK_SECTORS +
				    2 * ckpt_blocks * SSC_MBLOCK_SECTORS);
	sb->log_blocks = cpu_to_le64(log_blocks);
	sb->log_block_bytes = cpu_to_le32(geo->log_block_bytes);
	sb->data_start = cpu_to_le64(data_start);
	sb->origin_blocks = cpu_to_le64(geo->origin_blocks);
	sb->format_time = cpu_to_le64(ktime_get_real_seconds());
	return 0;
}

int ssc_write_sb(struct ssc_engine *e, bool clean)
{
	void *buf;
	int r;

	buf = kzalloc(SSC_MBLOCK_SIZE, GFP_NOIO);
	if (!buf)
		return -ENOMEM;
	if (clean) {
		e->sb.flags = cpu_to_le32(le32_to_cpu(e->sb.flags) | SSC_SB_CLEAN);
		le64_add_cpu(&e->sb.shutdowns, 1);
	} else {
		e->sb.flags = cpu_to_le32(le32_to_cpu(e->sb.flags) & ~SSC_SB_CLEAN);
	}
	memcpy(buf, &e->sb, sizeof(e->sb));
	ssc_seal_crc(buf, SSC_MBLOCK_SIZE);
	r = ssc_meta_rw(e, REQ_OP_WRITE | REQ_SYNC | REQ_PREFLUSH | REQ_FUA, 0,
			buf, SSC_MBLOCK_SIZE);
	kfree(buf);
	return r;
}

/*
 * Check a superblock read from disk against the table's geometry. Nothing
 * in it is trusted: a checksum only tells a torn write from an intact one,
 * and anyone can compute it. Every field the engine sizes memory or I/O by
 * must describe the layout ssc_compute_layout() makes: regions in order,
 * aligned, inside the device and not overlapping, and a checkpoint region
 * that holds a map of every slot.
 */
int ssc_check_sb(struct ssc_engine *e, const void *buf, const char **err)
{
	const struct ssc_sb *sb = buf;
	const struct ssc_geometry *geo = &e->geo;
	u64 nr_segs, slots, ckpt_blocks, c0_end, c1_end, log_end, log_bytes, data_end;
	u64 c0 = le64_to_cpu(sb->ckpt_start[0]), c1 = le64_to_cpu(sb->ckpt_start[1]);
	u64 cs = le64_to_cpu(sb->ckpt_sectors), ls = le64_to_cpu(sb->log_start);
	u64 lb = le64_to_cpu(sb->log_blocks), ds = le64_to_cpu(sb->data_start);
	u32 spb = le32_to_cpu(sb->slots_per_seg), lbs = le32_to_cpu(sb->log_block_bytes);

	if (le32_to_cpu(sb->magic) != SSC_SB_MAGIC) {
		*err = "Cache device holds something else: the format feature argument formats it";
		return -EINVAL;
	}
	if (le32_to_cpu(sb->crc) != ssc_crc(buf, SSC_MBLOCK_SIZE)) {
		*err = "Cache superblock checksum mismatch";
		return -EUCLEAN;
	}
	if (le32_to_cpu(sb->version) != SSC_FORMAT_VERSION ||
	    le32_to_cpu(sb->flags) & ~SSC_SB_CLEAN) {
		*err = "Unsupported cache format version";
		return -EINVAL;
	}
	if (le32_to_cpu(sb->block_sectors) != geo->block_sectors) {
		*err = "block_size does not match the cache device's superblock";
		return -EINVAL;
	}
	if (le32_to_cpu(sb->segment_sectors) != geo->segment_sectors) {
		*err = "segment_size does not match the cache device's superblock";
		return -EINVAL;
	}
	if (lbs < geo->log_block_bytes || lbs > SSC_MBLOCK_SIZE || lbs < SECTOR_SIZE ||
	    !is_power_of_2(lbs)) {
		*err = "Cache device's logical block size grew since it was formatted";
		return -EINVAL;
	}

	*err = "Cache superblock describes an impossible layout";
	/* segments: slots and their summary fit, as many as the device holds */
	nr_segs = le64_to_cpu(sb->nr_segments);
	if (!spb || le32_to_cpu(sb->summary_sectors) != ssc_summary_sectors(spb) ||
	    (u64)spb * geo->block_sectors + ssc_summary_sectors(spb) >
	    geo->segment_sectors)
		return -EINVAL;
	if (nr_segs < SSC_MIN_DATA_SEGS ||
	    nr_segs > div_u64(geo->cache_sectors, geo->segment_sectors))
		return -EINVAL;
	slots = nr_segs * spb;		/* both bounded above: no overflow */
	if (slots >= U32_MAX)
		return -EINVAL;

	/* regions: superblock, ckpt[0], ckpt[1], log, data, in this order */
	ckpt_blocks = div_u64(cs, SSC_MBLOCK_SECTORS);
	log_bytes = (u64)lbs * lb;
	if (cs % SSC_MBLOCK_SECTORS || ckpt_blocks < 1 + DIV_ROUND_UP(slots, SSC_CKPT_PER_BLOCK) ||
	    ckpt_blocks > 1 + DIV_ROUND_UP(div_u64(geo->cache_sectors, geo->segment_sectors) * spb,
					   SSC_CKPT_PER_BLOCK) ||
	    c0 < SSC_MBLOCK_SECTORS || c0 % SSC_MBLOCK_SECTORS || c1 % SSC_MBLOCK_SECTORS ||
	    ls % SSC_MBLOCK_SECTORS || ds % geo->segment_sectors ||
	    lb > div_u64(geo->cache_sectors, lbs >> SECTOR_SHIFT) ||
	    lb < ssc_log_min_blocks(lbs) ||
	    check_add_overflow(c0, cs, &c0_end) || c1 < c0_end ||
	    check_add_overflow(c1, cs, &c1_end) || ls < c1_end ||
	    check_add_overflow(ls, log_bytes >> SECTOR_SHIFT, &log_end) || ds < log_end ||
	    check_add_overflow(ds, nr_segs * geo->segment_sectors, &data_end) ||
	    data_end > geo->cache_sectors) {
		*err = "Cache superblock describes a device larger than the cache device";
		return -EINVAL;
	}
	*err = NULL;
	return 0;
}

/* Do two superblocks describe the same layout (all but the changing fields)? */
bool ssc_sb_same_layout(const struct ssc_sb *a, const struct ssc_sb *b)
{
	struct ssc_sb x = *a, y = *b;

	x.crc = 0;
	y.crc = 0;
	x.flags = 0;
	y.flags = 0;
	x.shutdowns = 0;
	y.shutdowns = 0;
	return !memcmp(&x, &y, sizeof(x));
}

static void ssc_apply_sb(struct ssc_engine *e)
{
	const struct ssc_sb *sb = &e->sb;

	e->slots_per_seg = le32_to_cpu(sb->slots_per_seg);
	e->summary_sectors = le32_to_cpu(sb->summary_sectors);
	e->nr_segs = le64_to_cpu(sb->nr_segments);
	e->nr_slots = (u64)e->nr_segs * e->slots_per_seg;
	e->ckpt_start[0] = le64_to_cpu(sb->ckpt_start[0]);
	e->ckpt_start[1] = le64_to_cpu(sb->ckpt_start[1]);
	e->ckpt_sectors = le64_to_cpu(sb->ckpt_sectors);
	e->log_start = le64_to_cpu(sb->log_start);
	e->log_blocks = le64_to_cpu(sb->log_blocks);
	e->lbs = le32_to_cpu(sb->log_block_bytes);
	e->lbs_sectors = e->lbs >> SECTOR_SHIFT;
	e->log_per_block = SSC_LOG_PER_BLOCK(e->lbs);
	e->data_start = le64_to_cpu(sb->data_start);
}

/*
 * Write a fresh superblock and an empty checkpoint. Sequence numbers start
 * at a random point so that a log left by an earlier format of the same
 * device can never be mistaken for ours.
 */
int ssc_format(struct ssc_engine *e, const char **err)
{
	struct ssc_ckpt_hdr *h;
	void *buf;
	int r;

	r = ssc_compute_layout(&e->geo, &e->sb);
	if (r) {
		*err = "Cache device is too small for its metadata and 6 segments";
		return r;
	}
	ssc_apply_sb(e);

	buf = kzalloc(SSC_MBLOCK_SIZE, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	/* invalidate the second checkpoint, write an empty first one */
	r = ssc_meta_rw(e, REQ_OP_WRITE, e->ckpt_start[1], buf, SSC_MBLOCK_SIZE);
	if (r)
		goto io_err;
	h = buf;
	h->magic = cpu_to_le32(SSC_CKPT_MAGIC);
	h->seq = cpu_to_le64((get_random_u64() >> 16) | 1);
	h->log_seq = cpu_to_le64(get_random_u64() >> 16);
	h->open_seg = cpu_to_le32(U32_MAX);
	ssc_seal_crc(buf, SSC_MBLOCK_SIZE);
	r = ssc_meta_rw(e, REQ_OP_WRITE, e->ckpt_start[0], buf, SSC_MBLOCK_SIZE);
	if (r)
		goto io_err;
	kfree(buf);
	/* the superblock goes last: without it the device is not formatted */
	r = ssc_write_sb(e, true);
	if (r) {
		*err = "Cannot write the cache superblock";
		return r;
	}
	pr_info("dm-ssc: formatted cache: %u segments of %u slots, data at sector %llu\n",
		e->nr_segs, e->slots_per_seg, (unsigned long long)e->data_start);
	return 0;
io_err:
	kfree(buf);
	*err = "Cannot write the cache device while formatting it";
	return r;
}

/* ---------------------------------------------------------------------
 * Create / destroy
 */

/**
 * ssc_engine_create() - set up an engine for a cache device
 * @geo: the table's geometry
 * @ops: I/O on the cache device
 * @priv: passed to @ops
 * @format: format the device at the first ssc_engine_load(), whatever it
 *	holds; otherwise it must hold a valid superblock
 * @err: receives a message on failure
 *
 * Nothing is written here: a table that is loaded but never resumed leaves
 * the device as it was.
 *
 * Return: the engine or an ERR_PTR().
 */
struct ssc_engine *ssc_engine_create(const struct ssc_geometry *geo,
				     const struct ssc_io_ops *ops, void *priv,
				     bool format, const char **err)
{
	struct ssc_engine *e;
	unsigned int val_bits;
	void *buf;
	int r;

	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e) {
		*err = "Cannot allocate the cache engine";
		return ERR_PTR(-ENOMEM);
	}
	e->geo = *geo;
	e->ops = ops;
	e->priv = priv;
	mutex_init(&e->commit_lock);
	mutex_init(&e->lock);
	mutex_init(&e->wb_lock);
	init_waitqueue_head(&e->space_wq);
	init_waitqueue_head(&e->inflight_wq);
	e->open_seg = U32_MAX;
	e->seal_seg = U32_MAX;
	e->wb_seg = U32_MAX;
	e->wb_hand_seg = U32_MAX;

	if (format) {
		r = ssc_compute_layout(&e->geo, &e->sb);
		if (r) {
			*err = r == -EFBIG ?
				"Cache device has 2^32-1 slots or more: use a larger block size" :
				"Cache device is too small for its metadata and 6 segments";
			goto bad;
		}
		ssc_apply_sb(e);
		e->need_format = true;
		goto layout_known;
	}
	buf = kmalloc(SSC_MBLOCK_SIZE, GFP_KERNEL);
	if (!buf) {
		r = -ENOMEM;
		*err = "Cannot allocate the cache engine";
		goto bad;
	}
	r = ops->rw(priv, REQ_OP_READ, 0, buf, SSC_MBLOCK_SIZE);
	if (r) {
		kfree(buf);
		*err = "Cannot read the cache superblock";
		goto bad;
	}
	if (!memchr_inv(buf, 0, SSC_MBLOCK_SIZE)) {
		kfree(buf);
		*err = SSC_ERR_UNFORMATTED;
		r = -EINVAL;
		goto bad;
	} else {
		r = ssc_check_sb(e, buf, err);
		if (!r)
			memcpy(&e->sb, buf, sizeof(e->sb));
		kfree(buf);
		if (r)
			goto bad;
		ssc_apply_sb(e);
	}

layout_known:
	/*
	 * Keys cover the origin as formatted too: a table made shorter since
	 * must still load the blocks past its end, to drop or refuse them.
	 */
	e->key_bits = clamp_t(unsigned int,
			      fls64(max3(geo->origin_blocks, le64_to_cpu(e->sb.origin_blocks),
					 2ULL) - 1), 1, 48);
	val_bits = fls64(e->nr_slots) + 1;
	r = -ENOMEM;
	*err = "Cannot allocate the cache engine";
	/* a block per slot at most: the I/O path never grows the table */
	e->map = ssc_map_create(e->key_bits, val_bits, e->nr_slots,
				SSC_MAP_SHARDS, GFP_KERNEL);
	if (!e->map) {
		*err = "Cannot allocate the cache map";
		goto bad;
	}
	e->segs = kvcalloc(e->nr_segs, sizeof(*e->segs), GFP_KERNEL);
	e->sum = kvzalloc(e->summary_sectors << SECTOR_SHIFT, GFP_KERNEL);
	e->seal_sum = kvzalloc(e->summary_sectors << SECTOR_SHIFT, GFP_KERNEL);
	e->gc_sum = kvzalloc(e->summary_sectors << SECTOR_SHIFT, GFP_KERNEL);
	e->wb_sum = kvzalloc(e->summary_sectors << SECTOR_SHIFT, GFP_KERNEL);
	e->gc_copy = kvcalloc(e->slots_per_seg, sizeof(u64), GFP_KERNEL);
	e->gc_data = kvmalloc(geo->block_sectors << SECTOR_SHIFT, GFP_KERNEL);
	e->max_pending = SSC_PENDING_RECORDS;
	e->pending = kvcalloc(2 * e->max_pending, sizeof(*e->pending), GFP_KERNEL);
	/* a checkpoint that fails leaves up to twice max_pending for a commit */
	e->log_buf = kvmalloc(DIV_ROUND_UP(2 * e->max_pending, e->log_per_block) * e->lbs,
			      GFP_KERNEL);
	e->ckpt_buf = kvmalloc(SSC_CKPT_BUF_BLOCKS * SSC_MBLOCK_SIZE, GFP_KERNEL);
	if (!e->segs || !e->sum || !e->seal_sum || !e->gc_sum || !e->wb_sum || !e->gc_copy ||
	    !e->gc_data || !e->pending || !e->log_buf || !e->ckpt_buf)
		goto bad;

	/* GC keeps 2 segments for itself and tries to keep ~3% free */
	e->gc_reserve = 2;
	e->gc_low = max_t(u32, 3, e->nr_segs / 32);
	e->gc_high = e->gc_low + max_t(u32, 1, e->nr_segs / 64);
	if (e->gc_high >= e->nr_segs) {
		e->gc_low = 2;
		e->gc_high = 3;
	}
	return e;
bad:
	ssc_engine_destroy(e);
	return ERR_PTR(r);
}

void ssc_engine_destroy(struct ssc_engine *e)
{
	if (IS_ERR_OR_NULL(e))
		return;
	ssc_map_destroy(e->map);
	kvfree(e->segs);
	kvfree(e->sum);
	kvfree(e->seal_sum);
	kvfree(e->gc_sum);
	kvfree(e->gc_copy);
	kvfree(e->gc_data);
	kvfree(e->pending);
	kvfree(e->log_buf);
	kvfree(e->ckpt_buf);
	kvfree(e->wb_sum);
	bitmap_free(e->dref);
	kfree(e);
}

sector_t ssc_engine_data_start(const struct ssc_engine *e)
{
	return e->data_start;
}

u64 ssc_engine_nr_slots(const struct ssc_engine *e)
{
	return e->nr_slots;
}

/*
 * A dirty block in @slot was used: write-back passes it over once. The bit
 * of a slot holding a clean block is never read: a block becomes dirty in a
 * fresh slot, which ssc_publish() gives a clear bit.
 */
static inline void ssc_dref_mark(struct ssc_engine *e, u32 slot)
{
	if (e->dref)
		set_bit(slot, e->dref);
}

/* ---------------------------------------------------------------------
 * Lookups
 */

/**
 * ssc_get() - look a block up and pin its location
 * @e: the engine
 * @oblock: origin block
 * @for_write: the caller wants to overwrite the block in place; then only
 *	a dirty block outside garbage collection, whose mapping is durable
 *	(not moved by garbage collection since the last commit), is returned
 * @loc: receives the location
 *
 * A returned location stays valid (its segment is not reused) until
 * ssc_put(). Nothing is pinned for SSC_NOT_PRESENT, nor with @for_write
 * unless the block can be overwritten in place; then @loc->slot is U32_MAX.
 *
 * Return: the state of the block.
 */
enum ssc_state ssc_get(struct ssc_engine *e, u64 oblock, bool for_write,
		       struct ssc_loc *loc)
{
	enum ssc_state st = SSC_NOT_PRESENT;
	struct ssc_map_shard *sh;
	struct ssc_seg *s;
	u64 val, sk;

	/*
	 * Under the shard's lock the entry cannot change: the slot is pinned
	 * before GC can drop or move the block, and GC waits for the pin.
	 */
	sh = ssc_map_lock(e->map, oblock, &sk);
	if (ssc_map_lookup_locked(sh, sk, &val)) {
		st = val_dirty(val) ? SSC_DIRTY : SSC_CLEAN;
		ssc_fill_loc(e, val_slot(val), loc);
		s = &e->segs[loc->seg];
		if (for_write && st != SSC_DIRTY) {
			loc->slot = U32_MAX;
		} else {
			atomic_inc(&s->inflight);
			/*
			 * Pairs with the barrier in ssc_gc_one(): either GC
			 * sees the pin and waits, or this sees SEG_GC. A move
			 * into the segment set move_lsn before it remapped.
			 */
			smp_mb__after_atomic();
			if (for_write && (READ_ONCE(s->state) == SEG_GC ||
					  READ_ONCE(s->move_lsn) > READ_ONCE(e->committed_lsn))) {
				/* not writable in place: report the state, pin nothing */
				ssc_put(e, loc);
				loc->slot = U32_MAX;
			} else if (st == SSC_DIRTY) {
				ssc_dref_mark(e, loc->slot);
			}
		}
	}
	ssc_map_unlock(sh);
	return st;
}

void ssc_put(struct ssc_engine *e, const struct ssc_loc *loc)
{
	if (atomic_dec_and_test(&e->segs[loc->seg].inflight) &&
	    wq_has_sleeper(&e->inflight_wq))
		wake_up_all(&e->inflight_wq);
}

/* The state of a block, without pinning anything. */
enum ssc_state ssc_peek(struct ssc_engine *e, u64 oblock)
{
	enum ssc_state st = SSC_NOT_PRESENT;
	struct ssc_map_shard *sh;
	u64 val, sk;

	sh = ssc_map_lock(e->map, oblock, &sk);
	if (ssc_map_lookup_locked(sh, sk, &val))
		st = val_dirty(val) ? SSC_DIRTY : SSC_CLEAN;
	ssc_map_unlock(sh);
	return st;
}

struct ssc_exists_ctx {
	u64 lo;
	unsigned long *bitmap;
};

static int ssc_exists_visit(void *ctx, u64 key, u64 val)
{
	struct ssc_exists_ctx *c = ctx;

	if (val_dirty(val))
		__set_bit(key - c->lo, c->bitmap);
	return 0;
}

/**
 * ssc_exists() - FlashTier's exists: which blocks of a range are dirty
 * @e: the engine
 * @lo: first origin block
 * @count: number of blocks
 * @bitmap: @count bits, set for each block that is cached and dirty
 *
 * Answered from RAM, without reading the device, and without holding a
 * lock the I/O path needs for long: a range no bigger than a few times the
 * cache is looked up block by block under the shards' locks; a bigger one
 * is walked shard by shard, under e->lock for one shard at a time.
 *
 * Return: 0.
 */
int ssc_exists(struct ssc_engine *e, u64 lo, u64 count, unsigned long *bitmap)
{
	struct ssc_exists_ctx c = { .lo = lo, .bitmap = bitmap };
	unsigned int i;
	u64 n;

	bitmap_zero(bitmap, count);
	if (count <= 4 * e->nr_slots) {
		for (n = 0; n < count; n++) {
			if (ssc_peek(e, lo + n) == SSC_DIRTY)
				__set_bit(n, bitmap);
			if (!(n % 4096))
				cond_resched();
		}
		return 0;
	}
	for (i = 0; i < ssc_map_nr_shards(e->map); i++) {
		mutex_lock(&e->lock);
		ssc_map_visit_shard(e->map, i, lo, lo + count, ssc_exists_visit, &c);
		mutex_unlock(&e->lock);
		cond_resched();
	}
	return 0;
}

/* ---------------------------------------------------------------------
 * Segments and slot allocation
 */

int ssc_write_summary(struct ssc_engine *e, u32 seg, struct ssc_sum *sum)
{
	ssc_prep_summary(e, seg, sum);
	return ssc_put_summary(e, seg, sum);
}

/*
 * The open segment is full: seal it. Called under e->lock. Its summary is
 * written by the caller after it drops the lock (ssc_seal_finish(); return
 * true) unless another summary is still being written, then here. Until
 * then the segment stays SEG_OPEN: GC does not pick it.
 */
static int ssc_seal_open(struct ssc_engine *e, bool *later)
{
	u32 seg = e->open_seg;
	int r;

	e->open_seg = U32_MAX;
	ssc_prep_summary(e, seg, e->sum);
	if (e->seal_seg == U32_MAX) {
		swap(e->sum, e->seal_sum);
		e->seal_seg = seg;
		*later = true;
		return 0;
	}
	r = ssc_put_summary(e, seg, e->sum);
	if (r) {
		ssc_set_error(e, r);
		return r;
	}
	e->segs[seg].state = SEG_SEALED;
	return 0;
}

/* Write the summary ssc_seal_open() left for after the lock. */
void ssc_seal_finish(struct ssc_engine *e)
{
	u32 seg = READ_ONCE(e->seal_seg);	/* only this thread clears it */
	int r;

	r = ssc_put_summary(e, seg, e->seal_sum);
	mutex_lock(&e->lock);
	if (r)
		ssc_set_error(e, r);
	else
		e->segs[seg].state = SEG_SEALED;
	e->seal_seg = U32_MAX;
	mutex_unlock(&e->lock);
}

/* Open a free segment. Called under e->lock with log room for 1 record. */
static int ssc_open_seg(struct ssc_engine *e, bool gc)
{
	u32 i, seg;

	if (e->free_segs <= (gc ? 0 : e->gc_reserve))
		return -ENOSPC;
	for (i = 0; i < e->nr_segs; i++) {
		seg = (e->alloc_cursor + i) % e->nr_segs;
		if (e->segs[seg].state == SEG_FREE)
			break;
	}
	if (WARN_ON_ONCE(i == e->nr_segs))
		return -ENOSPC;
	e->alloc_cursor = seg + 1;
	e->open_gc = e->free_segs <= e->gc_reserve;
	e->segs[seg].state = SEG_OPEN;
	e->segs[seg].age = e->user_seq;
	WRITE_ONCE(e->free_segs, e->free_segs - 1);
	e->open_seg = seg;
	e->open_next = 0;
	e->seg_seq++;
	e->segs[seg].seq = e->seg_seq;
	memset(e->sum, 0, e->summary_sectors << SECTOR_SHIFT);
	e->sum->seg_seq = cpu_to_le64(e->seg_seq);
	ssc_log_append(e, SSC_REC_OPEN, 0, seg, 0);
	if (e->free_segs < e->gc_low && e->ops->kick_gc)
		e->ops->kick_gc(e->priv);
	return 0;
}

/* Called under e->lock; if *@seal is set, call ssc_seal_finish() after it. */
int __ssc_reserve(struct ssc_engine *e, u64 oblock, bool gc,
		  struct ssc_loc *loc, bool *seal)
{
	u32 slot;
	int r;

	lockdep_assert_held(&e->lock);
	r = ssc_log_room(e, 1);
	if (r)
		return r;
	/*
	 * A segment GC opened out of its reserve is GC's until the reserve is
	 * back: otherwise user data takes the reserve slot by slot, and GC is
	 * left with no segment to move dirty blocks to.
	 */
	if (!gc && e->open_seg != U32_MAX && e->open_gc &&
	    e->free_segs <= e->gc_reserve)
		return -ENOSPC;
	if (e->open_seg == U32_MAX) {
		r = ssc_open_seg(e, gc);
		if (r)
			return r;
	}
	slot = e->open_seg * e->slots_per_seg + e->open_next;
	e->sum->oblock[e->open_next] = cpu_to_le64(oblock + 1);
	e->open_next++;
	ssc_fill_loc(e, slot, loc);
	atomic_inc(&e->segs[loc->seg].inflight);
	if (e->open_next == e->slots_per_seg) {
		r = ssc_seal_open(e, seal);
		if (r) {
			ssc_put(e, loc);
			return r;
		}
	}
	return 0;
}

/**
 * ssc_reserve() - hand out the next slot of the log for a block
 * @e: the engine
 * @oblock: the origin block whose data will be written there
 * @wait: wait for garbage collection when space is short; otherwise fail
 *	with -ENOSPC
 * @loc: receives the slot
 *
 * The caller writes the data to @loc->sector and then calls ssc_publish(),
 * or ssc_unreserve() if it gives up.
 *
 * Return: 0, -ENOSPC, or the error that made the cache fail.
 */
int ssc_reserve(struct ssc_engine *e, u64 oblock, bool wait, struct ssc_loc *loc)
{
	u64 ns = 0, refused = 0;
	bool seal = false;
	int r;

	for (;;) {
		mutex_lock(&e->lock);
		r = __ssc_reserve(e, oblock, false, loc, &seal);
		/* a space shortage lasts from the first refusal to the next success */
		if (r == -ENOSPC) {
			if (!e->stall_start)
				e->stall_start = ktime_get();
			e->stall_refused++;
		} else if (!r && e->stall_start) {
			ns = ktime_to_ns(ktime_sub(ktime_get(), e->stall_start));
			refused = e->stall_refused;
			e->stall_start = 0;
			e->stall_refused = 0;
		}
		mutex_unlock(&e->lock);
		if (seal)
			ssc_seal_finish(e);
		if (r != -ENOSPC || !wait)
			break;
		if (e->ops->kick_gc)
			e->ops->kick_gc(e->priv);
		wait_event(e->space_wq, READ_ONCE(e->free_segs) > e->gc_reserve ||
			   READ_ONCE(e->error));
	}
	if (refused && e->ops->event)
		e->ops->event(e->priv, SSC_ENG_STALL, ns, refused);
	return r;
}

void ssc_unreserve(struct ssc_engine *e, const struct ssc_loc *loc)
{
	ssc_put(e, loc);
}

/* Drop one block's accounting from its old slot. Called under e->lock. */
void ssc_unaccount(struct ssc_engine *e, u64 val)
{
	struct ssc_seg *s = &e->segs[slot_seg(e, val_slot(val))];

	s->valid--;
	if (val_dirty(val)) {
		s->dirty--;
		WRITE_ONCE(e->nr_dirty, e->nr_dirty - 1);
	}
}

void ssc_account(struct ssc_engine *e, u64 val)
{
	struct ssc_seg *s = &e->segs[slot_seg(e, val_slot(val))];

	s->valid++;
	if (val_dirty(val)) {
		s->dirty++;
		WRITE_ONCE(e->nr_dirty, e->nr_dirty + 1);
	}
}

/**
 * ssc_publish() - map a block to the slot its data was written to
 * @e: the engine
 * @oblock: the origin block
 * @loc: the slot from ssc_reserve(), whose data write has completed
 * @dirty: write_dirty (true) or write_clean (false)
 * @lsn: receives the record's LSN; for write_dirty, and for write_clean
 *	that replaces a mapping, pass it to ssc_commit() before completing
 *
 * The reservation is released in every case.
 *
 * Return: 0, -ENOMEM (nothing changed), or the error that made the cache
 * fail.
 */
int ssc_publish(struct ssc_engine *e, u64 oblock, const struct ssc_loc *loc,
		bool dirty, u64 *lsn)
{
	u64 old, val = mkval(loc->slot, dirty);
	bool had;
	int r;

	*lsn = 0;
	mutex_lock(&e->lock);
	r = ssc_log_room(e, 1);
	if (r)
		goto out;
	had = ssc_map_lookup(e->map, oblock, &old);
	/*
	 * A block becoming dirty starts with its reference bit clear; cleared
	 * before the insert makes the slot visible to read hits, which set it
	 */
	if (dirty && !(had && val_dirty(old)) && e->dref)
		clear_bit(loc->slot, e->dref);
	r = ssc_map_insert(e->map, oblock, val, GFP_NOIO);
	if (r)
		goto out;
	if (had)
		ssc_unaccount(e, old);
	ssc_account(e, val);
	if (dirty && had && val_dirty(old))
		ssc_dref_mark(e, loc->slot);	/* rewritten to a new slot */
	e->segs[loc->seg].age = ++e->user_seq;
	*lsn = ssc_log_append(e, SSC_REC_INSERT, oblock, loc->slot,
			      dirty ? SSC_ENT_DIRTY : 0);
	if (!dirty)
		WRITE_ONCE(e->clean_published, true);
	if (!dirty && !had)
		*lsn = 0;	/* a plain write_clean may stay buffered */
out:
	mutex_unlock(&e->lock);
	ssc_put(e, loc);
	return r;
}

/**
 * ssc_evict() - drop a block from the cache
 * @e: the engine
 * @oblock: the origin block
 * @allow_dirty: also drop a dirty block (its data is lost)
 * @lsn: receives the record to commit before the eviction may be relied
 *	on; if the block was not cached, the last record that dropped a block
 *
 * Return: 0, -EBUSY for a dirty block without @allow_dirty, or the error
 * that made the cache fail.
 */
int ssc_evict(struct ssc_engine *e, u64 oblock, bool allow_dirty, u64 *lsn)
{
	u64 val;
	int r;

	*lsn = 0;
	mutex_lock(&e->lock);
	r = ssc_log_room(e, 1);
	if (r)
		goto out;
	if (!ssc_map_lookup(e->map, oblock, &val)) {
		/*
		 * Not cached, but garbage collection may have dropped it with
		 * a record still in RAM: the caller relies on the drop too.
		 */
		*lsn = e->remove_lsn;
		goto out;
	}
	if (val_dirty(val) && !allow_dirty) {
		r = -EBUSY;
		goto out;
	}
	/* under the lock every bio takes: a shrink that needs memory waits */
	ssc_map_remove(e->map, oblock, NULL, GFP_NOWAIT);
	ssc_unaccount(e, val);
	*lsn = ssc_log_append(e, SSC_REC_REMOVE, oblock, 0, 0);
out:
	mutex_unlock(&e->lock);
	return r;
}

/**
 * ssc_clean() - mark a dirty block clean once the origin holds its data
 * @e: the engine
 * @oblock: the origin block
 *
 * Asynchronous: the record is committed with the next commit, and until
 * then a crash may leave the block dirty.
 *
 * Return: 0, -ENOENT if the block is not cached, or the error that made
 * the cache fail.
 */
int ssc_clean(struct ssc_engine *e, u64 oblock)
{
	u64 val;
	int r;

	mutex_lock(&e->lock);
	r = ssc_log_room(e, 1);
	if (r)
		goto out;
	if (!ssc_map_lookup(e->map, oblock, &val)) {
		r = -ENOENT;
		goto out;
	}
	if (!val_dirty(val))
		goto out;
	/* overwriting an existing key never allocates */
	ssc_map_insert(e->map, oblock, mkval(val_slot(val), false), GFP_NOIO);
	e->segs[slot_seg(e, val_slot(val))].dirty--;
	WRITE_ONCE(e->nr_dirty, e->nr_dirty - 1);
	ssc_log_append(e, SSC_REC_CLEAN, oblock, val_slot(val), 0);
out:
	mutex_unlock(&e->lock);
	return r;
}

void ssc_engine_get_stats(struct ssc_engine *e, struct ssc_engine_stats *st)
{
	mutex_lock(&e->lock);
	*st = e->st;
	st->cached = ssc_map_count(e->map);
	st->dirty = e->nr_dirty;
	st->nr_slots = e->nr_slots;
	st->free_segs = e->free_segs;
	st->nr_segs = e->nr_segs;
	st->meta_sectors = atomic64_read(&e->meta_sectors);
	st->log_used = e->log_head;
	st->log_blocks = e->log_blocks;
	st->ram_bytes = ssc_map_bytes(e->map) + (size_t)e->nr_segs * sizeof(*e->segs) +
		(e->dref ? BITS_TO_LONGS(e->nr_slots) * sizeof(long) : 0);
	st->error = e->error;
	mutex_unlock(&e->lock);
}

void ssc_engine_clear_stats(struct ssc_engine *e)
{
	mutex_lock(&e->lock);
	e->st.gc_runs = 0;
	e->st.gc_evicted = 0;
	e->st.gc_copied = 0;
	atomic64_set(&e->meta_sectors, 0);
	e->st.checkpoints = 0;
	e->st.commits = 0;
	mutex_unlock(&e->lock);
}

/* Dirty blocks right now, without the lock (a hint for the I/O path). */
u64 ssc_dirty_count(struct ssc_engine *e)
{
	return READ_ONCE(e->nr_dirty);
}

int ssc_engine_error(struct ssc_engine *e)
{
	return READ_ONCE(e->error);
}

#if IS_ENABLED(CONFIG_DM_SSC_KUNIT_TEST)
#include "ssc-engine-test.c"
#endif
