// SPDX-License-Identifier: GPL-2.0
/*
 * The SSC engine of dm-ssc: a FlashTier solid-state cache kept by the host
 * on a plain flash device. See ssc-engine.h for the interface and
 * ssc-format.h for the on-disk layout.
 *
 * State in RAM:
 *  - the sparse map, origin block -> (slot << 1 | dirty); the only per-block
 *    state (unified address space: there is no second table);
 *  - one struct ssc_seg per segment (valid/dirty counts, age, state and an
 *    in-flight count that garbage collection waits on);
 *  - the open segment's summary, the pending log records, and in write-back
 *    a ring of dirty origin blocks in the order they became dirty plus one
 *    reference bit per slot: write-back takes the least recently used dirty
 *    block by CLOCK (second chance) over that ring.
 *
 * Locking: e->commit_lock serializes log writes and checkpoints; e->lock
 * protects everything else and nests inside commit_lock. Data I/O is never
 * done under either lock; metadata I/O is done under commit_lock, and under
 * e->lock only for segment summaries and checkpoints. Every change of the
 * map is made under e->lock; lookups (ssc_get(), ssc_peek()) take only the
 * spinlock of the map's shard (ssc-map.h), which each change takes while
 * it becomes visible, and pin the slot under it. Those lookups read a
 * segment's state and move_lsn and set dirty reference bits without
 * e->lock: see ssc_get() for the ordering.
 */

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/crc32c.h>
#include <linux/random.h>
#include <linux/ktime.h>
#include <linux/timekeeping.h>
#include <linux/log2.h>
#include <linux/math64.h>
#include <linux/blk_types.h>
#include <linux/bitmap.h>
#include <linux/overflow.h>

#include "ssc-engine.h"
#include "ssc-format.h"
#include "ssc-map.h"

enum {
	SEG_FREE = 0,
	SEG_OPEN,
	SEG_SEALED,
	SEG_GC,
};

struct ssc_seg {
	u32 valid;
	u32 dirty;
	u64 age;		/* e->user_seq when last written */
	/*
	 * The record of the last block garbage collection moved into this
	 * segment: until it is committed, a crash maps the block to its old
	 * slot, so nothing may be written in place here.
	 */
	u64 move_lsn;
	atomic_t inflight;	/* reads, in-place writes, reservations */
	u8 state;
};

#define SSC_ERR_CKPT_NOMEM	"Out of memory loading the checkpoint"
#define SSC_ERR_CKPT_RANGE	"Checkpoint maps a block outside the cache or origin"
#define SSC_ERR_UNFORMATTED \
	"Cache device is not formatted: add the format feature argument to format it"
#define SSC_ERR_DIRTY_BEYOND \
	"Cache holds dirty blocks past the end of the origin: load a table as long as before"

/*
 * Sequence numbers start below 2^48 at format and count up by one per
 * checkpoint or log block: one at or past this limit was never written by
 * the engine, and refusing it keeps every later one from wrapping.
 */
#define SSC_SEQ_LIMIT		BIT_ULL(60)

/* GC needs a reserve and a watermark above it */
#define SSC_MIN_DATA_SEGS	6

/* Weight of a dirty block in the GC cost: it must be read and written. */
#define SSC_GC_COPY_WEIGHT	4
/* Pending log records kept in RAM before a commit is forced. */
#define SSC_PENDING_RECORDS	1024
/* Checkpoint I/O staging buffer */
#define SSC_CKPT_BUF_BLOCKS	16
/* Summaries rebuilt at load in one walk of the map, at most */
#define SSC_RECOVER_SUM_BYTES	(4U << 20)
/* Shards of the block map: enough that hits on different CPUs rarely meet */
#define SSC_MAP_SHARDS		clamp_t(unsigned int, 4 * num_possible_cpus(), 8, 256)
/* Take a checkpoint when the log is this full (FlashTier: 2/3). */
#define SSC_LOG_LIMIT(e)	((e)->log_blocks * 2 / 3)

struct ssc_engine {
	struct ssc_geometry geo;
	const struct ssc_io_ops *ops;
	void *priv;

	/* layout, from the superblock */
	struct ssc_sb sb;
	u32 slots_per_seg;
	u32 summary_sectors;
	u32 nr_segs;
	u64 nr_slots;
	sector_t ckpt_start[2];
	sector_t ckpt_sectors;
	sector_t log_start;
	u64 log_blocks;
	u32 lbs;		/* log block bytes */
	u32 lbs_sectors;
	u32 log_per_block;
	sector_t data_start;
	unsigned int key_bits;

	struct mutex commit_lock;	/* log writes and checkpoints */
	struct mutex lock;		/* everything else; nests inside */

	struct ssc_map *map;
	struct ssc_seg *segs;
	u32 free_segs;
	u32 gc_reserve;		/* segments only GC may open */
	ktime_t stall_start;	/* when reservations began to fail, or 0 */
	u64 stall_refused;	/* reservations refused since then */
	u32 gc_low, gc_high;	/* start GC below low, stop at high */
	u32 alloc_cursor;
	wait_queue_head_t space_wq;
	wait_queue_head_t inflight_wq;

	/* open segment */
	u32 open_seg;
	u32 open_next;
	u64 seg_seq;
	u64 user_seq;
	struct ssc_sum *sum;
	/* a sealed segment whose summary its sealer writes after e->lock */
	u32 seal_seg;
	struct ssc_sum *seal_sum;

	/* operation log */
	struct ssc_log_rec *pending;
	u32 nr_pending;
	u32 max_pending;
	u64 appended_lsn;
	u64 committed_lsn;
	u64 remove_lsn;
	/*
	 * Cache flushes issued under commit_lock, and the number of the last
	 * one that completed: a flush numbered above what a FLUSH saw when it
	 * arrived was issued after it.
	 */
	u64 flushes_issued;
	u64 flushes_done;
	/* a write_clean was published since ops->before_clean_commit() last ran */
	bool clean_published;
	u64 log_head;		/* blocks used since the checkpoint */
	u64 next_log_seq;
	void *log_buf;

	/* checkpoints */
	u64 ckpt_seq;
	int ckpt_cur;
	void *ckpt_buf;

	/*
	 * dirty table: ring of origin blocks in the order they got dirty, and
	 * a bit per slot set when a dirty block is used again (CLOCK)
	 */
	u64 *dring;
	u64 dring_size;
	u64 dhead, dtail;
	unsigned long *dref;
	u64 nr_dirty;

	/* garbage collection */
	struct ssc_sum *gc_sum;
	void *gc_data;
	u64 *gc_copy;

	/* recovery: summaries rebuilt per map walk (0: by size), walks done */
	u32 recover_batch;
	u32 recover_walks;

	bool need_format;	/* format at the first load */
	bool loaded;
	int error;
	atomic64_t meta_sectors;	/* metadata I/O runs under either lock */
	struct ssc_engine_stats st;
};

u32 ssc_crc(const void *buf, size_t len)
{
	/* The first four bytes of every object are its crc, taken as 0. */
	static const u8 zero[4];
	u32 crc;

	crc = crc32c(~0U, zero, sizeof(zero));
	return crc32c(crc, (const u8 *)buf + 4, len - 4);
}

static void ssc_seal_crc(void *buf, size_t len)
{
	*(__le32 *)buf = cpu_to_le32(ssc_crc(buf, len));
}

static bool ssc_check_crc(const void *buf, size_t len, u32 magic)
{
	const __le32 *w = buf;

	return le32_to_cpu(w[1]) == magic && le32_to_cpu(w[0]) == ssc_crc(buf, len);
}

static void ssc_set_error(struct ssc_engine *e, int r)
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

static int ssc_meta_rw(struct ssc_engine *e, blk_opf_t opf, sector_t sector,
		       void *buf, size_t len)
{
	int r = e->ops->rw(e->priv, opf, sector, buf, len);

	if (!r && op_is_write(opf))
		atomic64_add(len >> SECTOR_SHIFT, &e->meta_sectors);
	return r;
}

static inline u32 slot_seg(const struct ssc_engine *e, u32 slot)
{
	return slot / e->slots_per_seg;
}

static inline sector_t slot_sector(const struct ssc_engine *e, u32 slot)
{
	u32 seg = slot / e->slots_per_seg;
	u32 idx = slot % e->slots_per_seg;

	return e->data_start + (sector_t)seg * e->geo.segment_sectors +
		(sector_t)idx * e->geo.block_sectors;
}

static inline sector_t seg_summary_sector(const struct ssc_engine *e, u32 seg)
{
	return e->data_start + (sector_t)seg * e->geo.segment_sectors +
		(sector_t)e->slots_per_seg * e->geo.block_sectors;
}

static inline u64 mkval(u32 slot, bool dirty)
{
	return ((u64)slot << 1) | dirty;
}

static inline u32 val_slot(u64 val)
{
	return val >> 1;
}

static inline bool val_dirty(u64 val)
{
	return val & 1;
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
static int ssc_put_summary(struct ssc_engine *e, u32 seg, const struct ssc_sum *sum)
{
	return ssc_meta_rw(e, REQ_OP_WRITE | REQ_SYNC, seg_summary_sector(e, seg),
			   (void *)sum, e->summary_sectors << SECTOR_SHIFT);
}

static u32 ssc_summary_sectors(u32 slots)
{
	size_t bytes = sizeof(struct ssc_sum) + (size_t)slots * sizeof(__le64);

	return DIV_ROUND_UP(bytes, SSC_MBLOCK_SIZE) * SSC_MBLOCK_SECTORS;
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
	/* the log holds 4 checkpoints' worth of bytes, at least 4 MiB */
	log_blocks = max_t(u64, 1024, 4 * ckpt_blocks) * SSC_MBLOCK_SIZE /
		geo->log_block_bytes;

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

static int ssc_write_sb(struct ssc_engine *e, bool clean)
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
static int ssc_check_sb(struct ssc_engine *e, const void *buf, const char **err)
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
	    log_bytes < 1024 * SSC_MBLOCK_SIZE ||
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
static bool ssc_sb_same_layout(const struct ssc_sb *a, const struct ssc_sb *b)
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
static int ssc_format(struct ssc_engine *e, const char **err)
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
	init_waitqueue_head(&e->space_wq);
	init_waitqueue_head(&e->inflight_wq);
	e->open_seg = U32_MAX;
	e->seal_seg = U32_MAX;

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
	e->gc_copy = kvcalloc(e->slots_per_seg, sizeof(u64), GFP_KERNEL);
	e->gc_data = kvmalloc(geo->block_sectors << SECTOR_SHIFT, GFP_KERNEL);
	e->max_pending = SSC_PENDING_RECORDS;
	e->pending = kvcalloc(e->max_pending, sizeof(*e->pending), GFP_KERNEL);
	e->log_buf = kvmalloc(DIV_ROUND_UP(e->max_pending, e->log_per_block) * e->lbs,
			      GFP_KERNEL);
	e->ckpt_buf = kvmalloc(SSC_CKPT_BUF_BLOCKS * SSC_MBLOCK_SIZE, GFP_KERNEL);
	if (!e->segs || !e->sum || !e->seal_sum || !e->gc_sum || !e->gc_copy || !e->gc_data ||
	    !e->pending || !e->log_buf || !e->ckpt_buf)
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
	kvfree(e->dring);
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

/* ---------------------------------------------------------------------
 * Dirty table
 */

static int ssc_dring_fill(void *ctx, u64 key, u64 val)
{
	struct ssc_engine *e = ctx;

	if (val_dirty(val) && e->dtail - e->dhead < e->dring_size)
		e->dring[e->dtail++ % e->dring_size] = key;
	return 0;
}

static void ssc_dring_rebuild(struct ssc_engine *e)
{
	if (!e->dring)
		return;
	e->dhead = 0;
	e->dtail = 0;
	ssc_map_visit_range(e->map, 0, 1ULL << e->key_bits, ssc_dring_fill, e);
}

/*
 * A dirty block in @slot was used: write-back passes it over once. The bit
 * of a slot holding a clean block is never read: a block only becomes dirty
 * in a fresh slot, through ssc_dring_push().
 */
static inline void ssc_dref_mark(struct ssc_engine *e, u32 slot)
{
	if (e->dref)
		set_bit(slot, e->dref);
}

/* @oblock just became dirty in @slot: the ring's tail, its newest end */
static void ssc_dring_push(struct ssc_engine *e, u64 oblock, u32 slot)
{
	if (!e->dring)
		return;
	if (e->dtail - e->dhead >= e->dring_size) {
		/* only stale entries can fill it: compact from the map */
		ssc_dring_rebuild(e);
		return;
	}
	e->dring[e->dtail++ % e->dring_size] = oblock;
}

static int ssc_first_dirty(void *ctx, u64 key, u64 val)
{
	u64 *found = ctx;

	if (!val_dirty(val))
		return 0;
	*found = key;
	return 1;
}

/*
 * Second chances ssc_next_dirty() gives in one call before it takes the
 * block at hand anyway: bounds the time it holds e->lock.
 */
#define SSC_DREF_BUDGET	4096

/**
 * ssc_next_dirty() - the next write-back candidate
 * @e: the engine
 * @oblock: receives a dirty origin block
 *
 * The least recently used dirty block, by CLOCK: the ring holds dirty
 * blocks in the order they became dirty, and a block used since (a read
 * hit or an overwrite) has its reference bit cleared and goes back to the
 * newest end instead of being taken. A block that is skipped by the
 * caller is found again when the table runs dry and is rebuilt.
 *
 * Return: 0, or -ENOENT when no block is dirty.
 */
int ssc_next_dirty(struct ssc_engine *e, u64 *oblock)
{
	unsigned int budget = SSC_DREF_BUDGET;
	bool rebuilt = false;
	u64 val, ob;
	int r = -ENOENT;

	mutex_lock(&e->lock);
	for (;;) {
		if (e->dhead == e->dtail) {
			if (rebuilt || !e->nr_dirty)
				break;
			if (!e->dring) {
				/* no table: take the first dirty block found */
				u64 found = U64_MAX;

				ssc_map_visit_range(e->map, 0, 1ULL << e->key_bits,
						    ssc_first_dirty, &found);
				if (found != U64_MAX) {
					*oblock = found;
					r = 0;
				}
				break;
			}
			ssc_dring_rebuild(e);
			rebuilt = true;
			continue;
		}
		ob = e->dring[e->dhead++ % e->dring_size];
		if (!ssc_map_lookup(e->map, ob, &val) || !val_dirty(val))
			continue;	/* stale: cleaned or evicted since */
		if (budget && test_and_clear_bit(val_slot(val), e->dref)) {
			/* used since it got dirty: a second chance */
			e->dring[e->dtail++ % e->dring_size] = ob;
			budget--;
			continue;
		}
		*oblock = ob;
		r = 0;
		break;
	}
	mutex_unlock(&e->lock);
	return r;
}

/* ---------------------------------------------------------------------
 * Operation log
 */

/*
 * Make room for @n records in the pending buffer. Called with e->lock held;
 * may drop it to commit, so callers look at the map only after this.
 */
static int ssc_log_room(struct ssc_engine *e, unsigned int n)
{
	int r;

	while (e->nr_pending + n > e->max_pending) {
		u64 lsn = e->appended_lsn;

		mutex_unlock(&e->lock);
		r = ssc_commit(e, lsn);
		mutex_lock(&e->lock);
		if (r)
			return r;
	}
	return READ_ONCE(e->error);
}

static u64 ssc_log_append(struct ssc_engine *e, u8 type, u64 oblock, u32 slot,
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

static int __ssc_checkpoint(struct ssc_engine *e);

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
		/* the checkpoint covers every pending record */
		r = __ssc_checkpoint(e);
		goto out;
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
 * Write the whole forward map to the other checkpoint region, then its
 * header with a flush and FUA. Called with commit_lock and lock held; the
 * checkpoint makes every pending record durable, so the log starts over.
 */
static int __ssc_checkpoint(struct ssc_engine *e)
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
	/*
	 * A sealed segment whose summary is still on its way is not suspect
	 * to the recovery of this checkpoint: write the summary too (the same
	 * bytes as its sealer's write, made before it dropped the lock).
	 */
	if (e->seal_seg != U32_MAX) {
		r = ssc_put_summary(e, e->seal_seg, e->seal_sum);
		if (r)
			goto fail;
	}

	ssc_map_visit_range(e->map, 0, 1ULL << e->key_bits, ssc_ckpt_visit, &c);
	r = c.r;
	if (!r && c.nr)
		r = ssc_ckpt_end_blk(&c);
	if (!r)
		r = ssc_ckpt_flush_buf(&c);
	if (r)
		goto fail;

	h = e->ckpt_buf;
	memset(h, 0, SSC_MBLOCK_SIZE);
	h->magic = cpu_to_le32(SSC_CKPT_MAGIC);
	h->seq = cpu_to_le64(e->ckpt_seq + 1);
	h->nr_entries = cpu_to_le64(c.entries);
	h->nr_blocks = cpu_to_le32(c.blk);
	h->log_seq = cpu_to_le64(e->next_log_seq);
	h->open_seg = cpu_to_le32(e->open_seg);
	h->user_seq = cpu_to_le64(e->user_seq);
	ssc_seal_crc(h, SSC_MBLOCK_SIZE);
	flush = ++e->flushes_issued;
	r = ssc_meta_rw(e, REQ_OP_WRITE | REQ_SYNC | REQ_PREFLUSH | REQ_FUA,
			e->ckpt_start[tgt], h, SSC_MBLOCK_SIZE);
	if (r)
		goto fail;
	e->flushes_done = flush;

	e->ckpt_cur = tgt;
	e->ckpt_seq++;
	e->log_head = 0;
	e->nr_pending = 0;
	WRITE_ONCE(e->committed_lsn, e->appended_lsn);
	e->st.checkpoints++;
	return 0;
fail:
	ssc_set_error(e, r);
	return r;
}

/**
 * ssc_checkpoint() - write a checkpoint now
 * @e: the engine
 *
 * Return: 0 or the I/O error.
 */
int ssc_checkpoint(struct ssc_engine *e)
{
	int r;

	mutex_lock(&e->commit_lock);
	mutex_lock(&e->lock);
	r = __ssc_checkpoint(e);
	mutex_unlock(&e->lock);
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

static int ssc_write_summary(struct ssc_engine *e, u32 seg, struct ssc_sum *sum)
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
static void ssc_seal_finish(struct ssc_engine *e)
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
	e->segs[seg].state = SEG_OPEN;
	e->segs[seg].age = e->user_seq;
	e->free_segs--;
	e->open_seg = seg;
	e->open_next = 0;
	e->seg_seq++;
	memset(e->sum, 0, e->summary_sectors << SECTOR_SHIFT);
	e->sum->seg_seq = cpu_to_le64(e->seg_seq);
	ssc_log_append(e, SSC_REC_OPEN, 0, seg, 0);
	if (e->free_segs < e->gc_low && e->ops->kick_gc)
		e->ops->kick_gc(e->priv);
	return 0;
}

/* Called under e->lock; if *@seal is set, call ssc_seal_finish() after it. */
static int __ssc_reserve(struct ssc_engine *e, u64 oblock, bool gc,
			 struct ssc_loc *loc, bool *seal)
{
	u32 slot;
	int r;

	lockdep_assert_held(&e->lock);
	r = ssc_log_room(e, 1);
	if (r)
		return r;
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
static void ssc_unaccount(struct ssc_engine *e, u64 val)
{
	struct ssc_seg *s = &e->segs[slot_seg(e, val_slot(val))];

	s->valid--;
	if (val_dirty(val)) {
		s->dirty--;
		WRITE_ONCE(e->nr_dirty, e->nr_dirty - 1);
	}
}

static void ssc_account(struct ssc_engine *e, u64 val)
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
	if (dirty && !(had && val_dirty(old)))
		ssc_dring_push(e, oblock, loc->slot);
	else if (dirty)
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

static int ssc_pick(struct ssc_engine *e)
{
	struct ssc_gc_best b = { .idx = -1 };
	u32 i;

	for (i = 0; i < e->nr_segs; i++) {
		const struct ssc_seg *s = &e->segs[i];

		if (s->state == SEG_SEALED)
			ssc_gc_consider(&b, i, s->valid, s->dirty,
					e->user_seq - s->age, e->slots_per_seg);
	}
	return b.idx;
}

bool ssc_gc_needed(struct ssc_engine *e)
{
	return READ_ONCE(e->free_segs) < e->gc_low && !READ_ONCE(e->error);
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
static void ssc_summary_from_map(struct ssc_engine *e, u32 seg,
				 struct ssc_sum *sum)
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

static int ssc_gc_one(struct ssc_engine *e)
{
	struct ssc_sum *sum = e->gc_sum;
	u32 i, seg, base, ncopy, pass;
	int victim, r, commit_failed = 0;
	struct ssc_seg *s;
	bool empty;
	u64 val;

	mutex_lock(&e->lock);
	victim = ssc_pick(e);
	if (victim < 0) {
		mutex_unlock(&e->lock);
		return -ENOSPC;
	}
	seg = victim;
	s = &e->segs[seg];
	WRITE_ONCE(s->state, SEG_GC);
	e->st.gc_runs++;
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
		 * the removals and moves are durable before the segment is
		 * reused; a failed commit has failed the cache itself if the
		 * log write failed (an origin flush that failed does not)
		 */
		if (!r) {
			r = ssc_commit_pending(e);
			commit_failed = r;
		}
		/* nothing enters a segment under GC: valid only goes down */
		mutex_lock(&e->lock);
		empty = !s->valid;
		mutex_unlock(&e->lock);
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
		e->free_segs++;
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
 * cleaned (all dirty), or an I/O error.
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
	wake_up_all(&e->space_wq);
	return r == -EAGAIN ? 0 : r;
}

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
		if (ssc_map_lookup(e->map, ob, &val))
			return ssc_map_insert(e->map, ob, mkval(val_slot(val), false),
					       GFP_KERNEL);
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
		if (!s->valid) {
			s->state = SEG_FREE;
			e->free_segs++;
			continue;
		}
		s->state = SEG_SEALED;
	}
	/* segments being filled since the checkpoint: summaries may be stale */
	ret = ssc_rebuild_summaries(e, suspect, err);
	if (!ret && (want_dirty_table || e->nr_dirty)) {
		/* a load that failed after this point may be tried again */
		kvfree(e->dring);
		bitmap_free(e->dref);
		e->dring_size = e->nr_slots + 1;
		e->dring = kvmalloc_array(e->dring_size, sizeof(u64), GFP_KERNEL);
		e->dref = bitmap_zalloc(e->nr_slots, GFP_KERNEL);
		if (!e->dring || !e->dref) {
			ret = -ENOMEM;
			*err = "Cannot allocate the dirty table";
		} else {
			ssc_dring_rebuild(e);
		}
	}
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
		(e->dring ? e->dring_size * sizeof(u64) +
		 BITS_TO_LONGS(e->nr_slots) * sizeof(long) : 0);
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
