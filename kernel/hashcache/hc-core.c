// SPDX-License-Identifier: GPL-2.0
/*
 * HashCache: an object index kept on a block device (HashCache, Badam et
 * al., NSDI 2009), driven by ioctls on /dev/hashcache.
 *
 * An object is a key (a byte string) and a value. The policies differ in
 * what they keep in RAM and so in the device I/Os an operation costs:
 *
 *   Basic      one object per bin, bin = hash mod bins; nothing in RAM; every
 *              lookup reads the bin, a miss too.
 *   Set        N-way sets, set = hash mod sets, read in one I/O; nothing in RAM.
 *   SetMem     Set plus, per slot in RAM, tag_bits of the hash, the LRU rank in
 *              the set and a valid bit (12 bits for 8 ways and 8 tag bits): a
 *              miss with no matching tag costs no I/O, a hit one read.
 *   SetMemLRU  SetMem's RAM for a bounded number of sets (frames, CLOCK).
 *   Log        a circular log of records written through a buffer; RAM holds a
 *              Log field (tag, rank, pass, log block) per slot.
 *   LogLRU     Log with the pass and block of only some ways of each set in
 *              RAM, the others in a spill region on the device.
 *
 * This file is the mechanism: device I/O, the superblock, format and attach
 * (the geometry every policy shares), detach, the ids, the ioctls and the
 * stats. Each policy is a struct hc_policy_ops in hc_policies[] (the table
 * policies share one, in hc-table.c; Log and LogLRU another, in hc-log.c),
 * and the mechanism calls nothing else of it. hc-int.h says which file
 * holds what else.
 *
 * The on-device format is in hc-format.h. After attach, the RAM part is
 * rebuilt by reading the Disk Table or the log once; a slot whose CRC does
 * not check (a write torn by a crash) is empty, and a key is always compared
 * in full before an object is returned, so no wrong object is ever returned.
 *
 * One mutex per index serializes its operations (every policy op runs under
 * it); hc_idr_lock guards the ids, and is never taken under an index's mutex.
 *
 * Documentation/hashcache.rst in the project tree describes the interface.
 */

#include <linux/module.h>
#include <linux/miscdevice.h>
#include <linux/blkdev.h>
#include <linux/bio.h>
#include <linux/fs.h>
#include <linux/file.h>
#include <linux/idr.h>
#include <linux/pagemap.h>
#include <linux/crc32c.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/uaccess.h>

#include "hc-int.h"

static DEFINE_IDR(hc_idr);
static DEFINE_MUTEX(hc_idr_lock);

/* ---------------------------------------------------------------------
 * Device I/O
 */

/*
 * After a write: drop the block device's page cache over it. The bios above
 * go under that cache, and LOOKUP hands out offsets that a caller may read
 * through it (a buffered read of the device): it must not find the bytes of
 * before the write, as after an O_DIRECT write. A page that cannot be dropped
 * (dirty: someone writes the device through its cache, which will overwrite
 * the index anyway) is said in the kernel log (rate-limited). After a failed
 * write too: part of it may have landed.
 */
static void hc_drop_cached(struct hc_index *ix, u64 off, size_t len)
{
#ifdef HC_HAVE_BDEV_FILE
	struct address_space *m = ix->bdev_file->f_mapping;
#else
	struct address_space *m = ix->bdev->bd_inode->i_mapping;
#endif

	if (invalidate_inode_pages2_range(m, off >> PAGE_SHIFT, (off + len - 1) >> PAGE_SHIFT))
		pr_warn_ratelimited("hashcache: %pg: page cache over bytes %llu-%llu not dropped: is the device written through its cache?\n",
				    ix->bdev, off, off + len - 1);
}

/* an I/O of @len bytes at @off, in the stats (a read also in attach's cost) */
static void hc_io_count(struct hc_index *ix, enum req_op op, u64 off, size_t len)
{
	if (off != ix->next_off)
		ix->st.seeks++;
	ix->next_off = off + len;
	if (op == REQ_OP_READ) {
		ix->st.read_ios++;
		ix->st.bytes_read += len;
		ix->dev_read += len;
	} else {
		ix->st.write_ios++;
		ix->st.bytes_written += len;
	}
}

/*
 * Add the pages of @buf (kmalloc'd or vmalloc'd) from byte @done on to
 * @bio, up to @len or until the bio is full; the bytes added up to then.
 */
static size_t hc_bio_fill(struct bio *bio, void *buf, size_t done, size_t len)
{
	while (done < len) {
		void *p = buf + done;
		struct page *pg = is_vmalloc_addr(p) ? vmalloc_to_page(p) : virt_to_page(p);
		unsigned int n = min_t(size_t, len - done, PAGE_SIZE - offset_in_page(p));

		if (bio_add_page(bio, pg, n, offset_in_page(p)) != n)
			break;
		done += n;
	}
	return done;
}

int hc_io(struct hc_index *ix, enum req_op op, u64 off, void *buf, size_t len)
{
	size_t done = 0;
	int r = 0;

	if (off + len > ix->dev_bytes)
		return -ENOSPC;
	hc_io_count(ix, op, off, len);
	if (op == REQ_OP_WRITE && is_vmalloc_addr(buf))
		flush_kernel_vmap_range(buf, len);
	while (done < len && !r) {
		unsigned int nr = min_t(size_t, BIO_MAX_VECS,
					DIV_ROUND_UP(len - done, PAGE_SIZE));
		struct bio *bio = bio_alloc(ix->bdev, nr, op | (op == REQ_OP_WRITE ?
					    REQ_SYNC | REQ_FUA : 0), GFP_KERNEL);

		bio->bi_iter.bi_sector = (off + done) >> SECTOR_SHIFT;
		done = hc_bio_fill(bio, buf, done, len);
		r = submit_bio_wait(bio);
		bio_put(bio);
	}
	if (op == REQ_OP_READ && is_vmalloc_addr(buf))
		invalidate_kernel_vmap_range(buf, len);
	if (op == REQ_OP_WRITE) {
		hc_drop_cached(ix, off, len);
		/* what the device holds may not be what RAM says: no checkpoint */
		if (r)
			ix->write_failed = true;
	}
	return r;
}

/* the reads of a batch still out, and the first error of one */
struct hc_batch {
	atomic_t left;
	int status;			/* a blk_status_t (int: cmpxchg on any arch) */
	struct completion done;
};

static void hc_batch_end_io(struct bio *bio)
{
	struct hc_batch *b = bio->bi_private;

	if (bio->bi_status)
		cmpxchg(&b->status, 0, (__force int)bio->bi_status);
	bio_put(bio);
	if (atomic_dec_and_test(&b->left))
		complete(&b->done);
}

/*
 * Read @n pieces of @len bytes (one bio each, at most 64 KiB) from the
 * device offsets @offs into @buf one after another: all issued under one
 * plug, then waited for together (Cascade's T2 batches).
 */
int hc_io_batch(struct hc_index *ix, const u64 *offs, u32 n, void *buf, size_t len)
{
	struct hc_batch b = { .status = 0 };
	struct blk_plug plug;
	u32 i;

	if (len > SZ_64K || !IS_ALIGNED(len, SECTOR_SIZE))
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (offs[i] + len > ix->dev_bytes)
			return -ENOSPC;
	atomic_set(&b.left, 1);
	init_completion(&b.done);
	blk_start_plug(&plug);
	for (i = 0; i < n; i++) {
		void *p = buf + (size_t)i * len;
		struct bio *bio = bio_alloc(ix->bdev, DIV_ROUND_UP(len, PAGE_SIZE) + 1,
					    REQ_OP_READ, GFP_KERNEL);

		hc_io_count(ix, REQ_OP_READ, offs[i], len);
		bio->bi_iter.bi_sector = offs[i] >> SECTOR_SHIFT;
		/* (a short one cannot happen: the bio has room for every page) */
		if (WARN_ON_ONCE(hc_bio_fill(bio, p, 0, len) < len))
			cmpxchg(&b.status, 0, (__force int)BLK_STS_RESOURCE);
		bio->bi_private = &b;
		bio->bi_end_io = hc_batch_end_io;
		atomic_inc(&b.left);
		submit_bio(bio);
	}
	blk_finish_plug(&plug);
	if (!atomic_dec_and_test(&b.left))
		wait_for_completion_io(&b.done);
	if (is_vmalloc_addr(buf))
		invalidate_kernel_vmap_range(buf, (size_t)n * len);
	return blk_status_to_errno((__force blk_status_t)READ_ONCE(b.status));
}

/* ---------------------------------------------------------------------
 * Superblock
 */

/* CRC32C of @len bytes at @p after @seed, the 32-bit field at @crc_off taken as zero */
u32 hc_crc_from(u32 seed, const void *p, size_t len, size_t crc_off)
{
	static const u32 zero;
	u32 c = crc32c(seed, p, crc_off);

	c = crc32c(c, &zero, sizeof(zero));
	return crc32c(c, p + crc_off + sizeof(u32), len - crc_off - sizeof(u32));
}

u32 hc_crc(const void *p, size_t len, size_t crc_off)
{
	return hc_crc_from(~0U, p, len, crc_off);
}

static int hc_sb_write(struct hc_index *ix, bool clean)
{
	struct hc_sb_disk *sb;
	int r;

	sb = kzalloc(HC_SB_BYTES, GFP_KERNEL);
	if (!sb)
		return -ENOMEM;
	ix->sb_seq++;
	sb->magic = cpu_to_le32(HC_SB_MAGIC);
	/* version 1 without a region: the layout is the same, older modules take it */
	sb->version = cpu_to_le32(ix->ckpt_bytes ? HC_FORMAT_VERSION : HC_FORMAT_VERSION_MIN);
	sb->policy = cpu_to_le32(ix->policy);
	sb->flags = cpu_to_le32(ix->flags);
	sb->block_size = cpu_to_le32(ix->block_size);
	sb->ways = cpu_to_le32(ix->ways);
	sb->tag_bits = cpu_to_le32(ix->tag_bits);
	sb->resident_sets = cpu_to_le32(ix->resident_sets);
	sb->ram_ways = cpu_to_le32(ix->ram_ways);
	sb->clean = cpu_to_le32(clean);
	sb->sets = cpu_to_le64(ix->sets);
	sb->seed = cpu_to_le64(ix->seed);
	sb->format_id = cpu_to_le64(ix->format_id);
	sb->seq = cpu_to_le64(ix->sb_seq);
	sb->table_offset = cpu_to_le64(HC_TABLE_OFFSET);
	sb->log_offset = cpu_to_le64(ix->log_off);
	sb->log_bytes = cpu_to_le64(ix->log_blocks * ix->block_size);
	sb->dev_bytes = cpu_to_le64(ix->dev_bytes);
	sb->buffer_bytes = cpu_to_le64(ix->buffer_bytes);
	sb->ckpt_offset = cpu_to_le64(ix->ckpt_off);
	sb->ckpt_bytes = cpu_to_le64(ix->ckpt_bytes);
	sb->crc = cpu_to_le32(hc_crc(sb, HC_SB_BYTES, offsetof(struct hc_sb_disk, crc)));
	r = hc_io(ix, REQ_OP_WRITE, (ix->sb_seq & 1) * HC_SB_BYTES, sb, HC_SB_BYTES);
	kfree(sb);
	/*
	 * A write that failed may have left its copy torn: the next one goes to
	 * the same copy, never over the other, the last good one
	 */
	if (r)
		ix->sb_seq--;
	return r;
}

static bool hc_sb_valid(const struct hc_sb_disk *sb)
{
	return le32_to_cpu(sb->magic) == HC_SB_MAGIC &&
	       le32_to_cpu(sb->crc) == hc_crc(sb, HC_SB_BYTES,
					      offsetof(struct hc_sb_disk, crc));
}

/*
 * One RAM part of the index, zeroed. Its size follows from the geometry, which
 * a superblock (CRC or not) or a format request chooses: a size kvmalloc does
 * not take (over INT_MAX) is refused here, said by the caller, and a failure
 * is an error returned, not a warning in the kernel log.
 */
void *hc_ram_alloc(struct hc_index *ix, u64 bytes)
{
	if (bytes > INT_MAX) {
		ix->ram_refused = max(ix->ram_refused, bytes);
		return NULL;
	}
	return kvzalloc(bytes, GFP_KERNEL | __GFP_NOWARN);
}

/* free every RAM part @ix has (hc_alloc_ram's, whichever exist), and forget them */
static void hc_free_ram(struct hc_index *ix)
{
	if (ix->ops && ix->ops->free)
		ix->ops->free(ix);
	ix->priv = NULL;
	kvfree(ix->ckpt_buf);
	ix->ckpt_buf = NULL;
	ix->ckpt_img = NULL;
	kvfree(ix->bits);
	ix->bits = NULL;
	kvfree(ix->frame_set);
	ix->frame_set = NULL;
	kvfree(ix->htab);
	ix->htab = NULL;
	kvfree(ix->referenced);
	ix->referenced = NULL;
	kvfree(ix->obits);
	ix->obits = NULL;
	kvfree(ix->pfbuf);
	ix->pfbuf = NULL;
	kvfree(ix->pend);
	ix->pend = NULL;
	kfree(ix->sbuf);
	ix->sbuf = NULL;
	kvfree(ix->buf);
	ix->buf = NULL;
	kvfree(ix->wbuf);
	ix->wbuf = NULL;
	ix->bits_bytes = 0;
}

/* free @ix and every RAM part it has */
HC_TESTABLE void hc_free(struct hc_index *ix)
{
	hc_free_ram(ix);
	kfree(ix);
}

static void hc_release(struct kref *ref)
{
	struct hc_index *ix = container_of(ref, struct hc_index, ref);

#ifdef HC_HAVE_BDEV_FILE
	if (ix->bdev_file)
		bdev_fput(ix->bdev_file);
#else
	if (ix->bdev)
		blkdev_put(ix->bdev, FMODE_READ | FMODE_WRITE | FMODE_EXCL);
#endif
	hc_free(ix);
}

/* Open the block device behind @fd exclusively, for @ix. */
static int hc_open_bdev(struct hc_index *ix, int fd)
{
	struct file *f = fget(fd);
	dev_t dev;

	if (!f)
		return -EBADF;
	if (!S_ISBLK(file_inode(f)->i_mode) || !(f->f_mode & FMODE_WRITE)) {
		fput(f);
		return -ENOTBLK;
	}
	dev = file_inode(f)->i_rdev;
	fput(f);
#ifdef HC_HAVE_BDEV_FILE
	ix->bdev_file = bdev_file_open_by_dev(dev, BLK_OPEN_READ | BLK_OPEN_WRITE,
					      ix, NULL);
	if (IS_ERR(ix->bdev_file)) {
		int r = PTR_ERR(ix->bdev_file);

		ix->bdev_file = NULL;
		return r;
	}
	ix->bdev = file_bdev(ix->bdev_file);
#else
	ix->bdev = blkdev_get_by_dev(dev, FMODE_READ | FMODE_WRITE | FMODE_EXCL, ix);
	if (IS_ERR(ix->bdev)) {
		int r = PTR_ERR(ix->bdev);

		ix->bdev = NULL;
		return r;
	}
#endif
	ix->dev_bytes = bdev_nr_bytes(ix->bdev);
	return 0;
}

static struct hc_index *hc_alloc(void)
{
	struct hc_index *ix = kzalloc(sizeof(*ix), GFP_KERNEL);

	if (!ix)
		return NULL;
	kref_init(&ix->ref);
	mutex_init(&ix->lock);
	return ix;
}

/* by HC_POLICY_*: a new policy is its ops and a line here */
static const struct hc_policy_ops *const hc_policies[] = {
	[HC_POLICY_BASIC]	= &hc_table_ops,
	[HC_POLICY_SET]		= &hc_table_ops,
	[HC_POLICY_SETMEM]	= &hc_table_ops,
	[HC_POLICY_SETMEMLRU]	= &hc_table_ops,
	[HC_POLICY_LOG]		= &hc_log_ops,
	[HC_POLICY_LOGLRU]	= &hc_log_ops,
	[HC_POLICY_BUFFERHASH]	= &hc_bh_ops,
	[HC_POLICY_CASCADE]	= &hc_ca_ops,
};

/* the ops of policy @p, or NULL if there is no such policy */
HC_TESTABLE const struct hc_policy_ops *hc_policy(u32 p)
{
	return p < ARRAY_SIZE(hc_policies) ? hc_policies[p] : NULL;
}

/*
 * The set buffer and the hash key every policy has, the field widths, then
 * the policy's own RAM (ops->alloc_ram), once the geometry is known.
 */
static int hc_alloc_ram(struct hc_index *ix)
{
	ix->buf = kvmalloc((size_t)ix->ways * ix->block_size, GFP_KERNEL);
	if (!ix->buf)
		return -ENOMEM;
	ix->hkey.key[0] = ix->seed;
	ix->hkey.key[1] = ix->seed ^ 0x9e3779b97f4a7c15ULL;
	ix->rank_bits = ix->ways > 1 ? order_base_2(ix->ways) : 0;
	ix->width = ix->tag_bits + ix->rank_bits + 1;
	return ix->ops->alloc_ram(ix);
}

/*
 * Will the rebuild of an attach get its scratch RAM (as hc_ram_alloc would take
 * it)? Format asks, so that it never writes an index that cannot be attached.
 */
static bool hc_rebuild_fits(struct hc_index *ix)
{
	u64 need = ix->ops->recover_bytes ? ix->ops->recover_bytes(ix) : 0;

	if (need <= INT_MAX)
		return true;
	ix->ram_refused = max(ix->ram_refused, need);
	return false;
}

/* @r of hc_alloc_ram or a rebuild, and what to say if the geometry asked too much RAM */
static int hc_ram_verdict(struct hc_index *ix, int r)
{
	if (r && ix->ram_refused) {
		pr_warn("hashcache: %pg: the index would need %llu bytes of RAM in one piece; at most %d\n",
			ix->bdev, ix->ram_refused, INT_MAX);
		r = -EINVAL;
	}
	return r;
}

/* ---------------------------------------------------------------------
 * The checkpoint (hc-format.h): the RAM part a clean detach leaves for the
 * next attach, so that it reads O(RAM part) instead of the table or log
 */

static bool hc_geometry_ok(struct hc_index *ix);

/* the arrays of @ix's checkpoint in @p (*@n of them); its bytes, in 4 KiB */
static u64 hc_ckpt_len(struct hc_index *ix, struct hc_ckpt_part *p, unsigned int *n)
{
	u64 len = sizeof(struct hc_ckpt_disk);
	unsigned int i;

	*n = ix->ops->ckpt_parts ? ix->ops->ckpt_parts(ix, p) : 0;
	for (i = 0; i < *n; i++)
		len += p[i].bytes;
	return round_up(len, HC_SB_BYTES);
}

/* Does the policy's layout end at or before byte @end (as attach checks it)? */
static bool hc_fits_below(struct hc_index *ix, u64 end)
{
	u64 dev = ix->dev_bytes;
	bool ok;

	ix->dev_bytes = end;
	ok = hc_geometry_ok(ix);
	ix->dev_bytes = dev;
	return ok;
}

/* format again as if the device ended at byte @avail, RAM part and all */
static int hc_reformat(struct hc_index *ix, const struct hc_format *f, u64 avail)
{
	u64 dev = ix->dev_bytes;
	int r;

	hc_free_ram(ix);
	ix->ram_refused = 0;
	ix->dev_bytes = avail;
	r = ix->ops->format(ix, f);
	ix->dev_bytes = dev;
	return r ?: hc_alloc_ram(ix);
}

/*
 * FORMAT: room for the checkpoint at the end of the device. Sizes format
 * chose (no --sets, no --log-size) shrink until it fits; sizes given by hand
 * keep what they leave, and with no room for it there is no checkpoint
 * (every attach scans, as before version 2).
 */
static int hc_ckpt_place(struct hc_index *ix, const struct hc_format *f)
{
	struct hc_ckpt_part p[HC_CKPT_PARTS];
	u64 dev = ix->dev_bytes, len, off, shrink = 0;
	unsigned int n, i;
	int r;

	ix->ckpt_off = 0;
	ix->ckpt_bytes = 0;
	if (!ix->ops->ckpt_save)
		return 0;
	for (i = 0; ; i++) {
		len = hc_ckpt_len(ix, p, &n);
		/* (one copy of it in RAM at detach and attach: no bigger than kvmalloc takes) */
		if (len > INT_MAX)
			break;
		off = len < dev ? round_down(dev - len, HC_SB_BYTES) : 0;
		if (off && hc_fits_below(ix, off)) {
			ix->ckpt_off = off;
			ix->ckpt_bytes = round_down(dev - off, HC_SB_BYTES);
			return 0;
		}
		if (i == 3 || f->sets || f->log_bytes)
			break;
		shrink += round_up(len + HC_SB_BYTES, ix->block_size);
		if (shrink >= dev)
			break;
		r = hc_reformat(ix, f, dev - shrink);
		if (r)
			break;
	}
	return shrink ? hc_reformat(ix, f, dev) : 0;
}

/*
 * ATTACH: is the region where the superblock says one can be (4 KiB aligned,
 * after the policy's layout, inside the device)?
 */
static bool hc_ckpt_region_ok(struct hc_index *ix, u32 version)
{
	if (!ix->ckpt_bytes)
		return !ix->ckpt_off;
	return version >= 2 && IS_ALIGNED(ix->ckpt_off, HC_SB_BYTES) &&
	       IS_ALIGNED(ix->ckpt_bytes, HC_SB_BYTES) && ix->ckpt_off < ix->dev_bytes &&
	       ix->ckpt_bytes <= ix->dev_bytes - ix->ckpt_off && hc_fits_below(ix, ix->ckpt_off);
}

/*
 * Write the checkpoint: at DETACH, after a flush that worked, the one the
 * clean superblock written next names (its seq is ours + 1); @periodic,
 * while attached, one that names the superblock of this attach, for the
 * recovery after a crash (hc_ckpt_periodic). Anything in the way (no region,
 * no RAM for the copy, the policy not ready, a failed write) leaves none that
 * counts at DETACH, and an error.
 */
static int hc_ckpt_write(struct hc_index *ix, bool periodic)
{
	struct hc_ckpt_part p[HC_CKPT_PARTS];
	u64 state[HC_CKPT_STATE] = {}, len, at;
	struct hc_ckpt_disk *h;
	unsigned int n, i;
	void *buf;
	int r;

	if (!ix->ckpt_bytes || !ix->ops->ckpt_save || ix->write_failed)
		return -EIO;
	len = hc_ckpt_len(ix, p, &n);
	if (len > ix->ckpt_bytes || len > INT_MAX)
		return -ENOSPC;
	r = ix->ops->ckpt_save(ix, state);
	if (r)
		return r;
	buf = kvzalloc(len, GFP_KERNEL | __GFP_NOWARN);
	if (!buf)
		return -ENOMEM;
	h = buf;
	h->magic = cpu_to_le32(HC_CKPT_MAGIC);
	h->format_id = cpu_to_le64(ix->format_id);
	h->sb_seq = cpu_to_le64(ix->sb_seq + !periodic);
	h->policy = cpu_to_le32(ix->policy);
	h->parts = cpu_to_le32(n);
	h->objects = cpu_to_le64(ix->st.objects);
	h->wseq = cpu_to_le64(ix->wseq);
	h->layout = cpu_to_le64(HC_CKPT_LAYOUT | (periodic ? HC_CKPT_PERIODIC : 0));
	for (i = 0; i < HC_CKPT_STATE; i++)
		h->state[i] = cpu_to_le64(state[i]);
	for (at = sizeof(*h), i = 0; i < n; at += p[i].bytes, i++) {
		if (p[i].p) {
			memcpy(buf + at, p[i].p, p[i].bytes);
			continue;
		}
		r = ix->ops->ckpt_fill(ix, buf + at, p[i].bytes, periodic);
		if (r)
			goto out;
	}
	h->len = cpu_to_le64(at - sizeof(*h));
	h->crc = cpu_to_le32(hc_crc(buf, at, offsetof(struct hc_ckpt_disk, crc)));
	r = hc_io(ix, REQ_OP_WRITE, ix->ckpt_off, buf, len);
out:
	if (r && !periodic)
		pr_warn("hashcache: %pg: the checkpoint was not written: the next attach scans\n",
			ix->bdev);
	kvfree(buf);
	return r;
}

/*
 * Once a period (the policy's ckpt_every: Log's records, BufferHash's
 * rotations, Cascade's slabs; the policy calls it when what it wrote is on
 * the device, FUA, and nothing is buffered): a checkpoint of this attach,
 * so that the attach after a crash reads it and replays only what was
 * written since (ops->ckpt_tail), not the whole device. The policy must not write
 * more than its replay looks at after the last one that counts: when a new
 * one cannot be written, a superblock of a higher seq voids the last; when
 * that cannot be written either, the index takes no more writes
 * (ckpt_broken: -EIO).
 */
int hc_ckpt_periodic(struct hc_index *ix)
{
	int r;

	if (ix->ckpt_broken)
		return -EIO;
	/* a detach writes its own */
	if (!ix->ckpt_every || ix->dead)
		return 0;
	ix->ckpt_wseq = ix->wseq;
	r = hc_ckpt_write(ix, true);
	if (!r) {
		ix->ckpt_live = true;
		ix->st.checkpoints++;
		return 0;
	}
	/* nothing of it written (no I/O failed), and none of before counts */
	if (!ix->ckpt_live && !ix->write_failed)
		return 0;
	pr_warn("hashcache: %pg: no periodic checkpoint (%d): the last is voided, a crash scans\n",
		ix->bdev, r);
	if (!hc_sb_write(ix, false)) {
		ix->ckpt_live = false;
		/* no checkpoint after a failed write: stop trying */
		if (ix->write_failed)
			ix->ckpt_every = 0;
		return 0;
	}
	ix->ckpt_broken = true;
	pr_err("hashcache: %pg: the last checkpoint could neither be replaced nor voided: no more writes\n",
	       ix->bdev);
	return -EIO;
}

/*
 * The stats as an attach leaves them: its I/O is not an operation's; what is
 * stored, and what it refused to trust, stay counted
 */
static void hc_stats_restart(struct hc_index *ix)
{
	u64 objects = ix->st.objects, bad = ix->st.bad_entries;

	memset(&ix->st, 0, sizeof(ix->st));
	ix->st.objects = objects;
	ix->st.bad_entries = bad;
}

/* the checkpoint's part not in RAM, done with */
static void hc_ckpt_img_free(struct hc_index *ix)
{
	kvfree(ix->ckpt_buf);
	ix->ckpt_buf = NULL;
	ix->ckpt_img = NULL;
}

/* the RAM part as hc_alloc_ram left it (a checkpoint not used after all) */
static void hc_ckpt_clear(struct hc_index *ix)
{
	struct hc_ckpt_part p[HC_CKPT_PARTS];
	unsigned int n, i;

	hc_ckpt_len(ix, p, &n);
	for (i = 0; i < n; i++)
		if (p[i].p)
			memset(p[i].p, 0, p[i].bytes);
	hc_ckpt_img_free(ix);
	ix->st.objects = 0;
	ix->wseq = 0;
	ix->torn = 0;
	ix->pf_count = 0;
}

/*
 * ATTACH: read the checkpoint into the RAM part, true if it was there (CRC,
 * format, the superblock's seq) and the policy found every word of it in
 * range. Of a clean index, the one its detach wrote; @crashed (not clean),
 * the last periodic one of the attach the crash ended, if the policy writes
 * them. False: the RAM part is as hc_alloc_ram left it, for the scan.
 */
static bool hc_ckpt_read(struct hc_index *ix, bool crashed)
{
	struct hc_ckpt_part p[HC_CKPT_PARTS];
	u64 state[HC_CKPT_STATE], len, at;
	struct hc_ckpt_disk *h;
	unsigned int n, i;
	bool ok = false;
	void *buf;
	int r;

	if (!ix->ckpt_bytes || !ix->ops->ckpt_load ||
	    (crashed && (!ix->ops->ckpt_tail || !ix->ckpt_every)))
		return false;
	len = hc_ckpt_len(ix, p, &n);
	if (len > ix->ckpt_bytes || len > INT_MAX)
		return false;
	buf = kvmalloc(len, GFP_KERNEL | __GFP_NOWARN);
	if (!buf)
		return false;
	if (hc_io(ix, REQ_OP_READ, ix->ckpt_off, buf, len))
		goto out;
	h = buf;
	for (at = sizeof(*h), i = 0; i < n; i++)
		at += p[i].bytes;
	if (le32_to_cpu(h->magic) != HC_CKPT_MAGIC ||
	    le64_to_cpu(h->format_id) != ix->format_id ||
	    le64_to_cpu(h->sb_seq) != ix->sb_seq || le32_to_cpu(h->policy) != ix->policy ||
	    le32_to_cpu(h->parts) != n || le64_to_cpu(h->len) != at - sizeof(*h) ||
	    le64_to_cpu(h->layout) != (HC_CKPT_LAYOUT | (crashed ? HC_CKPT_PERIODIC : 0)) ||
	    le32_to_cpu(h->crc) != hc_crc(buf, at, offsetof(struct hc_ckpt_disk, crc)))
		goto out;
	for (at = sizeof(*h), i = 0; i < n; at += p[i].bytes, i++) {
		if (p[i].p)
			memcpy(p[i].p, buf + at, p[i].bytes);
		else if (crashed)
			ix->ckpt_img = buf + at;
	}
	/* (the part not in RAM stays in the buffer until the replay is done) */
	if (ix->ckpt_img) {
		ix->ckpt_buf = buf;
		buf = NULL;
	}
	for (i = 0; i < HC_CKPT_STATE; i++)
		state[i] = le64_to_cpu(h->state[i]);
	ix->st.objects = le64_to_cpu(h->objects);
	ix->wseq = le64_to_cpu(h->wseq);
	ix->ckpt_replay = crashed;
	r = ix->ops->ckpt_load(ix, state);
	ok = !r;
	if (r == -EINVAL)
		pr_warn("hashcache: %pg: the checkpoint holds what no index could: scanning instead\n",
			ix->bdev);
	else if (r)
		pr_warn("hashcache: %pg: the checkpoint could not be checked (%d): scanning instead\n",
			ix->bdev, r);
	if (!ok)
		hc_ckpt_clear(ix);
	else
		hc_stats_restart(ix);
out:
	kvfree(buf);
	return ok;
}

static int hc_do_format(struct hc_format *f)
{
	const struct hc_policy_ops *ops = hc_policy(f->policy);
	struct hc_index *ix;
	u64 set_bytes;
	int r;

	if (!ops || (f->flags & ~ops->format_flags))
		return -EINVAL;
	ix = hc_alloc();
	if (!ix)
		return -ENOMEM;
	ix->policy = f->policy;
	ix->ops = ops;
	ix->flags = f->flags;
	ix->block_size = f->block_size ?: HC_DEF_BLOCK;
	ix->ways = f->ways ?: HC_DEF_WAYS;
	ix->tag_bits = f->tag_bits ?: HC_DEF_TAG_BITS;
	r = -EINVAL;
	if (ix->block_size < 4096 || ix->block_size > 65536 ||
	    !is_power_of_2(ix->block_size) || ix->ways > HC_MAX_WAYS || ix->tag_bits > 16)
		goto out;
	set_bytes = (u64)ix->ways * ix->block_size;
	if (set_bytes > HC_MAX_SET_BYTES)
		goto out;
	r = hc_open_bdev(ix, f->fd);
	if (r)
		goto out;
	r = -ENOSPC;
	if (ix->dev_bytes < HC_TABLE_OFFSET + ix->block_size)
		goto out;
	/* the policy's parameters, and where its table or log goes */
	r = ops->format(ix, f);
	if (r)
		goto out;
	ix->seed = f->seed ?: get_random_u64();
	ix->format_id = get_random_u64() | 1;
	r = hc_alloc_ram(ix);
	if (!r)
		r = hc_ckpt_place(ix, f);
	/* (no region: no flag says the checkpoints have what they cannot) */
	if (!r && !ix->ckpt_bytes)
		ix->flags &= ~ix->ops->ckpt_flags;
	if (!r && !hc_rebuild_fits(ix))
		r = -ENOMEM;
	r = hc_ram_verdict(ix, r);
	if (r)
		goto out;
	/* both copies: no superblock of an earlier format can win */
	r = hc_sb_write(ix, true);
	if (!r)
		r = hc_sb_write(ix, true);
out:
	kref_put(&ix->ref, hc_release);
	return r;
}

/* Does the geometry read from a superblock make sense (as format checks it)? */
static bool hc_geometry_ok(struct hc_index *ix)
{
	u64 set_bytes = (u64)ix->ways * ix->block_size;

	ix->ops = hc_policy(ix->policy);
	if (!ix->ops || (ix->flags & ~(ix->ops->format_flags | ix->ops->layout_flags)))
		return false;
	if (ix->block_size < 4096 || ix->block_size > 65536 ||
	    !is_power_of_2(ix->block_size) || !ix->ways || ix->ways > HC_MAX_WAYS ||
	    !ix->tag_bits || ix->tag_bits > 16 || !ix->sets || set_bytes > HC_MAX_SET_BYTES ||
	    ix->dev_bytes < HC_TABLE_OFFSET + set_bytes)
		return false;
	return ix->ops->geometry_ok(ix);
}

static int hc_do_attach(struct hc_attach *a, struct hc_index **out_ix)
{
	struct hc_sb_disk *sb[HC_SB_COPIES] = {};
	struct hc_sb_disk *best = NULL;
	struct hc_index *ix;
	u32 version;
	int r, i;

	ix = hc_alloc();
	if (!ix)
		return -ENOMEM;
	r = hc_open_bdev(ix, a->fd);
	if (r)
		goto out;
	for (i = 0; i < HC_SB_COPIES; i++) {
		r = -ENOMEM;
		sb[i] = kmalloc(HC_SB_BYTES, GFP_KERNEL);
		if (!sb[i])
			goto out;
		r = hc_io(ix, REQ_OP_READ, i * HC_SB_BYTES, sb[i], HC_SB_BYTES);
		if (r)
			goto out;
		if (hc_sb_valid(sb[i]) &&
		    (!best || le64_to_cpu(sb[i]->seq) > le64_to_cpu(best->seq)))
			best = sb[i];
	}
	r = -EINVAL;
	if (!best) {
		pr_warn("hashcache: %pg: no valid superblock\n", ix->bdev);
		goto out;
	}
	ix->policy = le32_to_cpu(best->policy);
	ix->flags = le32_to_cpu(best->flags);
	ix->block_size = le32_to_cpu(best->block_size);
	ix->ways = le32_to_cpu(best->ways);
	ix->tag_bits = le32_to_cpu(best->tag_bits);
	ix->resident_sets = le32_to_cpu(best->resident_sets);
	ix->ram_ways = le32_to_cpu(best->ram_ways);
	ix->sets = le64_to_cpu(best->sets);
	ix->seed = le64_to_cpu(best->seed);
	ix->format_id = le64_to_cpu(best->format_id);
	ix->sb_seq = le64_to_cpu(best->seq);
	ix->log_off = le64_to_cpu(best->log_offset);
	ix->buffer_bytes = le64_to_cpu(best->buffer_bytes);
	ix->ckpt_off = le64_to_cpu(best->ckpt_offset);
	ix->ckpt_bytes = le64_to_cpu(best->ckpt_bytes);
	ix->log_blocks = ix->block_size ?
		div_u64(le64_to_cpu(best->log_bytes), ix->block_size) : 0;
	version = le32_to_cpu(best->version);
	/* a CRC does not vouch for sense: check the geometry as format does */
	if (version < HC_FORMAT_VERSION_MIN || version > HC_FORMAT_VERSION ||
	    !hc_geometry_ok(ix)) {
		pr_warn("hashcache: %pg: superblock geometry is not usable\n", ix->bdev);
		goto out;
	}
	/* a region that is not where one can be (a device shrunk under it): none */
	if (!hc_ckpt_region_ok(ix, version)) {
		pr_warn("hashcache: %pg: the checkpoint region does not fit: every attach scans\n",
			ix->bdev);
		ix->ckpt_off = 0;
		ix->ckpt_bytes = 0;
	}
	if (!le32_to_cpu(best->clean))
		a->flags |= HC_ATTACH_RECOVERED;
	r = hc_ram_verdict(ix, hc_alloc_ram(ix));
	if (r)
		goto out;
	/*
	 * The checkpoint if there is a good one, else the scan: of a clean
	 * index, its detach's; after a crash, the last periodic one, and then
	 * what was written after it (below)
	 */
	if (hc_ckpt_read(ix, a->flags & HC_ATTACH_RECOVERED))
		a->flags |= HC_ATTACH_CHECKPOINT;
	/*
	 * Not clean from here on, before anything is written (the scan may
	 * write: LogLRU's spill region, old copies emptied): no checkpoint of
	 * before counts again, whatever becomes of this attach.
	 */
	r = hc_sb_write(ix, false);
	if (r)
		goto out;
	if ((a->flags & HC_ATTACH_CHECKPOINT) && (a->flags & HC_ATTACH_RECOVERED)) {
		r = ix->ops->ckpt_tail(ix);
		if (r == -EINVAL || r == -ENOMEM) {
			pr_warn("hashcache: %pg: the log after the checkpoint could not be replayed (%d): scanning instead\n",
				ix->bdev, r);
			hc_ckpt_clear(ix);
			a->flags &= ~HC_ATTACH_CHECKPOINT;
		} else if (r) {
			goto out;
		}
		hc_ckpt_img_free(ix);
		hc_stats_restart(ix);
	}
	if (!(a->flags & HC_ATTACH_CHECKPOINT)) {
		r = hc_ram_verdict(ix, ix->ops->recover(ix));
		if (r)
			goto out;
	}
	a->read_bytes = ix->dev_read;
	ix->ckpt_wseq = ix->wseq;
	/*
	 * An id never given before (ids go round only after 2^31 attaches), kept
	 * for @ix but not yet published: nobody can reach the index by it until
	 * the caller has it (hc_publish), and nothing else can have it meanwhile.
	 */
	mutex_lock(&hc_idr_lock);
	r = idr_alloc_cyclic(&hc_idr, NULL, 1, 0, GFP_KERNEL);
	mutex_unlock(&hc_idr_lock);
	if (r < 0)
		goto out;
	ix->id = r;
	a->id = r;
	*out_ix = ix;
	ix = NULL;
	r = 0;
out:
	for (i = 0; i < HC_SB_COPIES; i++)
		kfree(sb[i]);
	if (ix)
		kref_put(&ix->ref, hc_release);
	return r;
}

/* the attached @ix reachable by its id from now on */
static void hc_publish(struct hc_index *ix)
{
	mutex_lock(&hc_idr_lock);
	idr_replace(&hc_idr, ix, ix->id);
	mutex_unlock(&hc_idr_lock);
}

/* The index @id with a reference, its lock held; NULL if there is none. */
static struct hc_index *hc_get_index(u32 id)
{
	struct hc_index *ix;

	mutex_lock(&hc_idr_lock);
	ix = idr_find(&hc_idr, id);
	if (ix)
		kref_get(&ix->ref);
	mutex_unlock(&hc_idr_lock);
	if (!ix)
		return NULL;
	mutex_lock(&ix->lock);
	if (ix->dead) {
		mutex_unlock(&ix->lock);
		kref_put(&ix->ref, hc_release);
		return NULL;
	}
	return ix;
}

static void hc_put_index(struct hc_index *ix)
{
	mutex_unlock(&ix->lock);
	kref_put(&ix->ref, hc_release);
}

/* detach @ix, whose id is gone from the idr: write what is buffered, mark it clean */
static int hc_detach_index(struct hc_index *ix)
{
	int r;

	mutex_lock(&ix->lock);
	ix->dead = true;
	r = ix->ops->flush ? ix->ops->flush(ix) : 0;
	if (!r)
		hc_ckpt_write(ix, false);
	/* records the log could not take are lost: not clean then */
	r = hc_sb_write(ix, !r) ?: r;
	mutex_unlock(&ix->lock);
	kref_put(&ix->ref, hc_release);
	return r;
}

static int hc_do_detach(u32 id)
{
	struct hc_index *ix;

	mutex_lock(&hc_idr_lock);
	/* an id reserved by an attach not yet done is nobody's to detach */
	ix = idr_find(&hc_idr, id);
	if (ix)
		idr_remove(&hc_idr, id);
	mutex_unlock(&hc_idr_lock);
	if (!ix)
		return -ENOENT;
	return hc_detach_index(ix);
}

/* ---------------------------------------------------------------------
 * ioctl
 */

static bool hc_zero(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

/* copy in a struct of @size and check its header */
static int hc_copy_in(void *k, const void __user *u, size_t size)
{
	const struct hc_hdr *h = k;

	if (copy_from_user(k, u, size))
		return -EFAULT;
	if (h->size != size || h->version != HC_ABI_VERSION)
		return -EINVAL;
	return 0;
}

/*
 * PUT, GET, LOOKUP, DELETE. The caller's memory is read before the index's
 * lock is taken and written after it is dropped, through a bounce buffer: a
 * value in memory that faults slowly (userfaultfd, a file on a slow disk)
 * stalls its own caller, never the index's other users.
 */
static long hc_object_ioctl(unsigned int cmd, void __user *arg)
{
	struct hc_object o;
	struct hc_index *ix;
	u8 key[HC_KEY_MAX];
	void *val = NULL;
	u64 cap = 0;
	int r;

	r = hc_copy_in(&o, arg, sizeof(o));
	if (r)
		return r;
	if (o.reserved || !o.key_len || o.key_len > HC_KEY_MAX ||
	    (cmd != HC_IOC_PUT && o.group))
		return -EINVAL;
	if (copy_from_user(key, u64_to_user_ptr(o.key), o.key_len))
		return -EFAULT;
	if (cmd == HC_IOC_PUT && o.value_len) {
		/* no slot holds more (the index's own limit is checked under its lock) */
		if (o.value_len > HC_VALUE_MAX_ANY)
			return -EFBIG;
		val = kvmalloc(o.value_len, GFP_KERNEL_ACCOUNT);
		if (!val)
			return -ENOMEM;
		if (copy_from_user(val, u64_to_user_ptr(o.value), o.value_len)) {
			r = -EFAULT;
			goto out;
		}
	} else if (cmd == HC_IOC_GET) {
		/*
		 * what the caller's buffer takes, at most what any slot holds (hc_get
		 * copies at most the smaller of value_len and the value's length)
		 */
		cap = min_t(u64, o.value_len, HC_VALUE_MAX_ANY);
		val = kvmalloc(max_t(u64, cap, 1), GFP_KERNEL_ACCOUNT);
		if (!val)
			return -ENOMEM;
	}
	r = -ENOENT;
	ix = hc_get_index(o.id);
	if (!ix)
		goto out;
	o.found = 0;
	o.dev_offset = 0;
	o.ios = ix->st.read_ios + ix->st.write_ios;
	switch (cmd) {
	case HC_IOC_PUT:
		r = ix->ops->insert(ix, key, o.key_len, val, o.value_len, o.group);
		break;
	case HC_IOC_GET:
		/* no policy copies more than the buffer holds, whatever it finds */
		o.value_len = cap;
		r = ix->ops->lookup(ix, key, o.key_len, val, &o);
		break;
	case HC_IOC_LOOKUP:
		r = ix->ops->lookup(ix, key, o.key_len, NULL, &o);
		break;
	default:
		r = ix->ops->remove(ix, key, o.key_len, &o);
		break;
	}
	o.ios = ix->st.read_ios + ix->st.write_ios - o.ios;
	hc_put_index(ix);
	if (!r && cmd == HC_IOC_GET && o.found &&
	    copy_to_user(u64_to_user_ptr(o.value), val, min(o.value_len, cap)))
		r = -EFAULT;
	if (!r && copy_to_user(arg, &o, sizeof(o)))
		r = -EFAULT;
out:
	kvfree(val);
	return r;
}

static long hc_ioctl(struct file *file, unsigned int cmd, unsigned long uarg)
{
	void __user *arg = (void __user *)uarg;
	struct hc_index *ix;
	int r;

	switch (cmd) {
	case HC_IOC_FORMAT: {
		struct hc_format f;

		if (!capable(CAP_SYS_ADMIN))
			return -EPERM;
		r = hc_copy_in(&f, arg, sizeof(f));
		if (r)
			return r;
		if (!hc_zero(f.reserved, sizeof(f.reserved)))
			return -EINVAL;
		return hc_do_format(&f);
	}
	case HC_IOC_ATTACH: {
		struct hc_attach a;

		if (!capable(CAP_SYS_ADMIN))
			return -EPERM;
		r = hc_copy_in(&a, arg, sizeof(a));
		if (r)
			return r;
		if (a.id || a.flags || a.reserved0 || a.read_bytes ||
		    !hc_zero(a.reserved, sizeof(a.reserved)))
			return -EINVAL;
		r = hc_do_attach(&a, &ix);
		if (r)
			return r;
		if (copy_to_user(arg, &a, sizeof(a))) {
			/* the caller never learnt the id: give it back, detach */
			mutex_lock(&hc_idr_lock);
			idr_remove(&hc_idr, ix->id);
			mutex_unlock(&hc_idr_lock);
			hc_detach_index(ix);
			return -EFAULT;
		}
		hc_publish(ix);
		return 0;
	}
	case HC_IOC_DETACH:
	case HC_IOC_FLUSH: {
		struct hc_id d;

		if (!capable(CAP_SYS_ADMIN))
			return -EPERM;
		r = hc_copy_in(&d, arg, sizeof(d));
		if (r)
			return r;
		if (d.reserved0 || !hc_zero(d.reserved, sizeof(d.reserved)))
			return -EINVAL;
		if (cmd == HC_IOC_DETACH)
			return hc_do_detach(d.id);
		ix = hc_get_index(d.id);
		if (!ix)
			return -ENOENT;
		/* slot writes are FUA; what a policy buffers is written now */
		r = ix->ops->flush ? ix->ops->flush(ix) : 0;
		if (!r)
			r = blkdev_issue_flush(ix->bdev);
		hc_put_index(ix);
		return r;
	}
	case HC_IOC_PUT:
	case HC_IOC_GET:
	case HC_IOC_LOOKUP:
	case HC_IOC_DELETE:
		return hc_object_ioctl(cmd, arg);
	case HC_IOC_GET_INFO: {
		struct hc_info in;

		r = hc_copy_in(&in, arg, sizeof(in));
		if (r)
			return r;
		if (!hc_zero(&in.policy, sizeof(in) - offsetof(struct hc_info, policy)))
			return -EINVAL;
		ix = hc_get_index(in.id);
		if (!ix)
			return -ENOENT;
		in.policy = ix->policy;
		in.flags = ix->flags & ix->ops->format_flags;
		in.block_size = ix->block_size;
		in.ways = ix->ways;
		in.resident_sets = ix->resident_sets;
		in.ram_ways = ix->ram_ways;
		in.tag_bits = ix->tag_bits;
		in.sets = ix->sets;
		in.log_bytes = ix->log_blocks * ix->block_size;
		in.buffer_bytes = ix->buffer_bytes;
		in.ckpt_bytes = ix->ckpt_bytes;
		in.max_value = hc_max_value(ix);
		in.dev_bytes = ix->dev_bytes;
		in.dev_major = MAJOR(ix->bdev->bd_dev);
		in.dev_minor = MINOR(ix->bdev->bd_dev);
		hc_put_index(ix);
		return copy_to_user(arg, &in, sizeof(in)) ? -EFAULT : 0;
	}
	case HC_IOC_FIND: {
		struct hc_find fd;
		dev_t dev;
		int id;

		r = hc_copy_in(&fd, arg, sizeof(fd));
		if (r)
			return r;
		if (fd.id || fd.reserved0 || !hc_zero(fd.reserved, sizeof(fd.reserved)))
			return -EINVAL;
		dev = MKDEV(fd.dev_major, fd.dev_minor);
		if (MAJOR(dev) != fd.dev_major || MINOR(dev) != fd.dev_minor)
			return -EINVAL;
		r = -ENOENT;
		mutex_lock(&hc_idr_lock);
		idr_for_each_entry(&hc_idr, ix, id) {
			if (ix->bdev->bd_dev == dev) {
				fd.id = id;
				r = 0;
				break;
			}
		}
		mutex_unlock(&hc_idr_lock);
		if (!r && copy_to_user(arg, &fd, sizeof(fd)))
			r = -EFAULT;
		return r;
	}
	case HC_IOC_STATS_V0:
	case HC_IOC_STATS_V1:
	case HC_IOC_STATS: {
		struct hc_stats s = {};
		/* a caller built before tier_hits or compactions gets what it knows of */
		u32 size = cmd == HC_IOC_STATS_V0 ? HC_STATS_SIZE_V0 :
			   cmd == HC_IOC_STATS_V1 ? HC_STATS_SIZE_V1 : sizeof(s);

		static_assert(offsetof(struct hc_stats, tier_hits) == HC_STATS_SIZE_V0);
		static_assert(offsetof(struct hc_stats, compactions) == HC_STATS_SIZE_V1);
		r = hc_copy_in(&s, arg, size);
		if (r)
			return r;
		if (!hc_zero(&s.reserved0, sizeof(s) - offsetof(struct hc_stats, reserved0)))
			return -EINVAL;
		ix = hc_get_index(s.id);
		if (!ix)
			return -ENOENT;
		s = ix->st;
		s.hdr.size = size;
		s.hdr.version = HC_ABI_VERSION;
		s.id = ix->id;
		if (ix->ops->objects)
			s.objects = ix->ops->objects(ix);
		s.torn_records = ix->torn;
		s.ram_bytes = ix->bits_bytes;
		s.slots = ix->slots ?: ix->sets * ix->ways;
		s.ram_bits_per_object = s.objects ?
			div64_u64(s.ram_bytes * 8000, s.objects) : 0;
		hc_put_index(ix);
		return copy_to_user(arg, &s, size) ? -EFAULT : 0;
	}
	}
	return -ENOTTY;
}

static const struct file_operations hc_fops = {
	.owner		= THIS_MODULE,
	.unlocked_ioctl	= hc_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

static struct miscdevice hc_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= HC_MISC_NAME,
	.fops	= &hc_fops,
	.mode	= 0600,
};

static int __init hc_init(void)
{
	return misc_register(&hc_misc);
}

static void __exit hc_exit(void)
{
	struct hc_index *ix;
	int id;

	misc_deregister(&hc_misc);
	/* no file is open now: detach what is left, cleanly */
	idr_for_each_entry(&hc_idr, ix, id)
		hc_do_detach(id);
	idr_destroy(&hc_idr);
}

module_init(hc_init);
module_exit(hc_exit);

MODULE_DESCRIPTION("HashCache object index on a block device");
MODULE_LICENSE("GPL");
