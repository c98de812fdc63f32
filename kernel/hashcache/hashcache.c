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
 * Mechanism and policy: the device format, the superblock, device I/O, the
 * ioctls, the stats and the ids are the mechanism; each policy is a struct
 * hc_policy_ops (the table policies share one, Log and LogLRU another) in
 * hc_policies[], and the mechanism calls nothing else of it.
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
#include <linux/kref.h>
#include <linux/pagemap.h>
#include <linux/lcm.h>
#include <linux/log2.h>
#include <linux/crc32c.h>
#include <linux/siphash.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/sizes.h>
#include <linux/sort.h>
#include <linux/vmalloc.h>
#include <linux/uaccess.h>
#include <linux/hashcache.h>

#include "hc-format.h"

#define HC_DEF_BLOCK	8192
#define HC_DEF_WAYS	8
#define HC_DEF_TAG_BITS	8
#define HC_MAX_WAYS	64
#define HC_MAX_SET_BYTES	SZ_1M	/* one read per set: keep it bounded */
#define HC_VALUE_MAX_ANY	(65536 - HC_SLOT_HDR_BYTES)	/* the largest slot's value */
#define HC_SCAN_BYTES	SZ_1M	/* rebuild reads the table this much at a time */

struct hc_index;
struct hc_object;

/*
 * What a policy does, behind one table (hc_policies[]): the mechanism (the
 * device format, the superblock, device I/O, the ioctls, the stats, ids)
 * calls these and nothing else of a policy. Every op runs with the index's
 * lock held.
 */
struct hc_policy_ops {
	const char *name;
	/* the RAM part and buffers, once the geometry is known (format, attach) */
	int (*alloc_ram)(struct hc_index *ix);
	/* attach: rebuild the RAM part from the device */
	int (*recover)(struct hc_index *ix);
	int (*insert)(struct hc_index *ix, const u8 *key, u32 klen, const void *val,
		      u64 vlen, u32 group);
	/* GET (@kval: up to o->value_len bytes of the value) or LOOKUP (@kval NULL) */
	int (*lookup)(struct hc_index *ix, const u8 *key, u32 klen, void *kval,
		      struct hc_object *o);
	int (*remove)(struct hc_index *ix, const u8 *key, u32 klen, struct hc_object *o);
	/* what is buffered, to the device (NULL: nothing is) */
	int (*flush)(struct hc_index *ix);
	/* objects stored now (NULL: the stats' count) */
	u64 (*objects)(struct hc_index *ix);
};

struct hc_index {
	struct kref ref;
	struct mutex lock;		/* everything below */
	bool dead;			/* detached: refuse new work */
	u32 id;

#ifdef HC_HAVE_BDEV_FILE
	struct file *bdev_file;
#endif
	struct block_device *bdev;

	/* from the superblock */
	u32 policy, flags, block_size, ways, tag_bits, resident_sets, ram_ways;
	const struct hc_policy_ops *ops;	/* the policy's (hc_policies[policy]) */
	u64 sets, seed, format_id, sb_seq, dev_bytes;
	siphash_key_t hkey;

	/* RAM part (SetMem, Log): per slot tag | rank | valid, width bits each */
	unsigned long *bits;
	unsigned int width, rank_bits;
	size_t bits_bytes;
	u64 base;			/* first field of the set hc_find looked at */

	/*
	 * SetMemLRU: the fields of resident_sets sets only, in frames. A set
	 * is found by linear probing in @htab (frame + 1; 0 is empty); a frame
	 * to reuse is chosen by CLOCK over @referenced.
	 */
	u32 *frame_set;			/* the set each frame holds; U32_MAX: none */
	u32 *htab;
	u32 hmask, hand;
	unsigned long *referenced;
	bool set_loaded;		/* hc_find read the whole set into buf */

	u64 wseq;			/* write counter for slots */
	u64 torn;			/* slots or records found torn at attach */
	u64 next_off;			/* where the last I/O ended (for seeks) */
	void *buf;			/* one set */
	struct hc_stats st;

	/* Log: a circular log of records, appended through a write buffer */
	u64 log_off, log_blocks;	/* bytes, blocks */
	u64 wbase;			/* log block of wbuf's first record */
	u32 wcount, wbuf_blocks;	/* records in wbuf, and room */
	u32 gen;			/* pass over the log, mod 16 */
	void *wbuf;
	unsigned int lbits;		/* pass + block (+ group run) bits of a field */

	/* prefetch: the last group read, block pf_base on, pf_count blocks */
	void *pfbuf;
	u64 pf_base;
	u32 pf_count;

	/*
	 * LogLRU: @bits holds valid | rank | tag of every slot; @obits, per
	 * set, ram_ways entries of way + 1 | pass | log block for the most
	 * recently used ways. The other ways' pass and block are in the spill
	 * region on the device, or still in @pend on their way there.
	 */
	unsigned long *obits;
	unsigned int owidth, way_bits;
	u64 spill_off;			/* bytes */
	struct hc_spill *pend;
	u32 npend;
	u64 fetch_slot, fetch_val;	/* the last entry read back (hc_find) */
	bool fetch_ok;
	void *sbuf;			/* one spill block */
	u64 ram_refused;		/* bytes of a RAM part hc_ram_alloc refused */
	bool stale_copy;		/* an overwrite's old copy could not be emptied */
};

struct hc_spill {
	u64 slot, val;
};

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

static int hc_io(struct hc_index *ix, enum req_op op, u64 off, void *buf, size_t len)
{
	size_t done = 0;
	int r = 0;

	if (off + len > ix->dev_bytes)
		return -ENOSPC;
	if (off != ix->next_off)
		ix->st.seeks++;
	ix->next_off = off + len;
	if (op == REQ_OP_READ) {
		ix->st.read_ios++;
		ix->st.bytes_read += len;
	} else {
		ix->st.write_ios++;
		ix->st.bytes_written += len;
	}
	if (op == REQ_OP_WRITE && is_vmalloc_addr(buf))
		flush_kernel_vmap_range(buf, len);
	while (done < len && !r) {
		unsigned int nr = min_t(size_t, BIO_MAX_VECS,
					DIV_ROUND_UP(len - done, PAGE_SIZE));
		struct bio *bio = bio_alloc(ix->bdev, nr, op | (op == REQ_OP_WRITE ?
					    REQ_SYNC | REQ_FUA : 0), GFP_KERNEL);

		bio->bi_iter.bi_sector = (off + done) >> SECTOR_SHIFT;
		while (done < len) {
			void *p = buf + done;
			struct page *pg = is_vmalloc_addr(p) ? vmalloc_to_page(p) :
							       virt_to_page(p);
			unsigned int n = min_t(size_t, len - done,
					       PAGE_SIZE - offset_in_page(p));

			if (bio_add_page(bio, pg, n, offset_in_page(p)) != n)
				break;
			done += n;
		}
		r = submit_bio_wait(bio);
		bio_put(bio);
	}
	if (op == REQ_OP_READ && is_vmalloc_addr(buf))
		invalidate_kernel_vmap_range(buf, len);
	if (op == REQ_OP_WRITE)
		hc_drop_cached(ix, off, len);
	return r;
}

/* ---------------------------------------------------------------------
 * Superblock
 */

static u32 hc_crc(const void *p, size_t len, size_t crc_off)
{
	static const u32 zero;
	u32 c = crc32c(~0U, p, crc_off);

	c = crc32c(c, &zero, sizeof(zero));
	return crc32c(c, p + crc_off + sizeof(u32), len - crc_off - sizeof(u32));
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
	sb->version = cpu_to_le32(HC_FORMAT_VERSION);
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
	sb->crc = cpu_to_le32(hc_crc(sb, HC_SB_BYTES, offsetof(struct hc_sb_disk, crc)));
	r = hc_io(ix, REQ_OP_WRITE, (ix->sb_seq & 1) * HC_SB_BYTES, sb, HC_SB_BYTES);
	kfree(sb);
	return r;
}

static bool hc_sb_valid(const struct hc_sb_disk *sb)
{
	return le32_to_cpu(sb->magic) == HC_SB_MAGIC &&
	       le32_to_cpu(sb->crc) == hc_crc(sb, HC_SB_BYTES,
					      offsetof(struct hc_sb_disk, crc));
}

/* ---------------------------------------------------------------------
 * The RAM part: one bit field per slot, width = tag_bits + rank_bits + 1
 */

static u64 hc_bf_get(const unsigned long *map, u64 idx, unsigned int width)
{
	u64 bit = idx * width, v = 0;
	unsigned int i;

	for (i = 0; i < width; i++)
		if (test_bit(bit + i, map))
			v |= 1ULL << i;
	return v;
}

static void hc_bf_set(unsigned long *map, u64 idx, unsigned int width, u64 v)
{
	u64 bit = idx * width;
	unsigned int i;

	for (i = 0; i < width; i++)
		assign_bit(bit + i, map, v & (1ULL << i));
}

/*
 * A field: valid (1 bit) | LRU rank (rank_bits) | tag (tag_bits), and for
 * Log also | pass (4 bits) | log block (32 bits), and with prefetch
 * | group run (8 bits: how many records after this one belong to its group).
 */
#define HC_LOG_FIELD_BITS	36	/* pass + log block */
#define HC_GLEN_BITS		8

static bool hc_valid(const struct hc_index *ix, u64 f)
{
	return f & 1;
}

static u64 hc_rank(const struct hc_index *ix, u64 f)
{
	return (f >> 1) & ((1ULL << ix->rank_bits) - 1);
}

static u64 hc_tag(const struct hc_index *ix, u64 f)
{
	return (f >> (1 + ix->rank_bits)) & ((1ULL << ix->tag_bits) - 1);
}

static unsigned int hc_gen_shift(const struct hc_index *ix)
{
	return 1 + ix->rank_bits + ix->tag_bits;
}

static u64 hc_gen(const struct hc_index *ix, u64 f)
{
	return (f >> hc_gen_shift(ix)) & 15;
}

static u64 hc_off(const struct hc_index *ix, u64 f)
{
	return (f >> (hc_gen_shift(ix) + 4)) & 0xffffffffULL;
}

static u64 hc_glen(const struct hc_index *ix, u64 f)
{
	return (f >> (hc_gen_shift(ix) + HC_LOG_FIELD_BITS)) & (BIT_ULL(HC_GLEN_BITS) - 1);
}

static u64 hc_mkfield(struct hc_index *ix, u64 tag, u64 rank)
{
	return 1 | rank << 1 | tag << (1 + ix->rank_bits);
}

static u64 hc_mkfield_log(struct hc_index *ix, u64 tag, u64 gen, u64 off)
{
	return hc_mkfield(ix, tag, 0) | gen << hc_gen_shift(ix) |
	       off << (hc_gen_shift(ix) + 4);
}

static u64 hc_with_rank(struct hc_index *ix, u64 f, u64 rank)
{
	u64 mask = ((1ULL << ix->rank_bits) - 1) << 1;

	return (f & ~mask) | (rank << 1 & mask);
}

/*
 * LogLRU's fields: what hc_field returns is a Log field, put together from
 * @bits and the way's @obits entry; a way whose pass and block are not in
 * RAM has HC_F_SPILLED set instead (and counts as live until they are read
 * back). hc_set_field keeps the ram_ways most recently used ways' pass and
 * block in RAM and spills the least recently used one's.
 */
#define HC_F_SPILLED	BIT_ULL(63)
#define HC_PEND_MAX	512	/* spilled entries waiting for their write */
#define HC_SPILL_BLOCK	4096

static u64 hc_short_mask(const struct hc_index *ix)
{
	return (1ULL << hc_gen_shift(ix)) - 1;
}

/* the @obits entry of @set holding @way, or -1 */
static int hc_oent_find(struct hc_index *ix, u64 set, u32 way)
{
	u32 k;

	for (k = 0; k < ix->ram_ways; k++)
		if ((hc_bf_get(ix->obits, set * ix->ram_ways + k, ix->owidth) &
		     ((1ULL << ix->way_bits) - 1)) == way + 1)
			return k;
	return -1;
}

/* an entry's pass and block as a Log field's bits above the short part */
static u64 hc_oent_loc(struct hc_index *ix, u64 e)
{
	return (e >> ix->way_bits) << hc_gen_shift(ix);
}

/* queue @slot's pass and block (Log field bits @loc) for the spill region */
static void hc_pend_add(struct hc_index *ix, u64 slot, u64 loc)
{
	u64 val = BIT_ULL(63) | loc >> hc_gen_shift(ix);
	u32 i;

	for (i = 0; i < ix->npend; i++)
		if (ix->pend[i].slot == slot)
			break;
	/* callers make room first (hc_spill_room) */
	if (WARN_ON_ONCE(i == HC_PEND_MAX))
		return;
	ix->pend[i].slot = slot;
	ix->pend[i].val = val;
	if (i == ix->npend)
		ix->npend++;
}

static u64 hc_field(struct hc_index *ix, u64 slot)
{
	u64 f = hc_bf_get(ix->bits, slot, ix->width);
	int k;

	if (ix->policy != HC_POLICY_LOGLRU || !hc_valid(ix, f))
		return f;
	k = hc_oent_find(ix, div_u64(slot, ix->ways), slot % ix->ways);
	if (k >= 0)
		return f | hc_oent_loc(ix, hc_bf_get(ix->obits, div_u64(slot, ix->ways) *
						     ix->ram_ways + k, ix->owidth));
	if (ix->fetch_ok && ix->fetch_slot == slot)
		return f | ix->fetch_val;
	return f | HC_F_SPILLED;
}

static void hc_set_field(struct hc_index *ix, u64 slot, u64 v)
{
	u64 set, e, worst = 0, loc;
	u32 way, k, victim = 0;
	int have;

	if (ix->policy != HC_POLICY_LOGLRU) {
		hc_bf_set(ix->bits, slot, ix->width, v);
		return;
	}
	hc_bf_set(ix->bits, slot, ix->width, v & hc_short_mask(ix));
	set = div_u64(slot, ix->ways);
	way = slot % ix->ways;
	have = hc_oent_find(ix, set, way);
	if (!hc_valid(ix, v) || (v & HC_F_SPILLED)) {
		if (have >= 0 && !hc_valid(ix, v))
			hc_bf_set(ix->obits, set * ix->ram_ways + have, ix->owidth, 0);
		return;
	}
	loc = v & ~hc_short_mask(ix);
	e = (way + 1) | (loc >> hc_gen_shift(ix)) << ix->way_bits;
	if (have < 0) {
		/* a free entry, else the least recently used way's, spilled */
		for (k = 0; k < ix->ram_ways; k++) {
			u64 o = hc_bf_get(ix->obits, set * ix->ram_ways + k, ix->owidth);
			u32 ow = (o & ((1ULL << ix->way_bits) - 1));
			u64 r;

			if (!ow) {
				victim = k;
				worst = U64_MAX;
				break;
			}
			r = hc_rank(ix, hc_bf_get(ix->bits, set * ix->ways + ow - 1, ix->width));
			if (r >= worst) {
				worst = r;
				victim = k;
			}
		}
		if (worst != U64_MAX) {
			u64 o = hc_bf_get(ix->obits, set * ix->ram_ways + victim, ix->owidth);
			u32 ow = (o & ((1ULL << ix->way_bits) - 1)) - 1;

			hc_pend_add(ix, set * ix->ways + ow, hc_oent_loc(ix, o));
		}
		have = victim;
	}
	hc_bf_set(ix->obits, set * ix->ram_ways + have, ix->owidth, e);
}

/* Make @way the most recently used of the set whose first field is @base. */
static void hc_touch(struct hc_index *ix, u64 base, u32 way)
{
	u64 f = hc_field(ix, base + way);
	u64 r = hc_valid(ix, f) ? hc_rank(ix, f) : ix->ways;
	u32 w;

	for (w = 0; w < ix->ways; w++) {
		u64 g = hc_field(ix, base + w);

		if (w != way && hc_valid(ix, g) && hc_rank(ix, g) < r)
			hc_set_field(ix, base + w, hc_with_rank(ix, g, hc_rank(ix, g) + 1));
	}
}

/* Clear @way's field and close the gap it leaves in the ranks. */
static void hc_clear(struct hc_index *ix, u64 base, u32 way)
{
	u64 rank = hc_rank(ix, hc_field(ix, base + way));
	u32 w;

	hc_set_field(ix, base + way, 0);
	for (w = 0; w < ix->ways; w++) {
		u64 g = hc_field(ix, base + w);

		if (hc_valid(ix, g) && hc_rank(ix, g) > rank)
			hc_set_field(ix, base + w, hc_with_rank(ix, g, hc_rank(ix, g) - 1));
	}
}

/* ---------------------------------------------------------------------
 * Slots
 */

static u64 hc_slot_off(struct hc_index *ix, u64 set, u32 way)
{
	return HC_TABLE_OFFSET + (set * ix->ways + way) * (u64)ix->block_size;
}

static u64 hc_max_value(struct hc_index *ix)
{
	return ix->block_size - HC_SLOT_HDR_BYTES;
}

/* Is the slot at @p in use (by this format, and whole)? */
static bool hc_slot_valid(struct hc_index *ix, const struct hc_slot_disk *s)
{
	u64 vlen = le64_to_cpu(s->value_len);
	u16 klen = le16_to_cpu(s->key_len);

	if (le32_to_cpu(s->magic) != HC_SLOT_MAGIC ||
	    le64_to_cpu(s->format_id) != ix->format_id ||
	    !klen || klen > HC_KEY_MAX || vlen > hc_max_value(ix))
		return false;
	return le32_to_cpu(s->crc) ==
		hc_crc(s, HC_SLOT_HDR_BYTES + vlen, offsetof(struct hc_slot_disk, crc));
}

/* A slot of this format whose write a crash cut short: its CRC fails. */
static bool hc_slot_torn(struct hc_index *ix, const struct hc_slot_disk *s)
{
	return le32_to_cpu(s->magic) == HC_SLOT_MAGIC &&
	       le64_to_cpu(s->format_id) == ix->format_id && !hc_slot_valid(ix, s);
}

static bool hc_slot_is(struct hc_index *ix, const struct hc_slot_disk *s,
		       const u8 *key, u32 klen)
{
	return hc_slot_valid(ix, s) && le16_to_cpu(s->key_len) == klen &&
	       !memcmp(s->key, key, klen);
}

/*
 * Is way @w of the set at @set_buf (all its ways, as read from the device) an
 * older copy of a key another way holds? An overwrite writes the new copy to
 * another way before it empties the old one, so that a write torn by a crash
 * cannot take the acknowledged value with it; a crash between the two leaves
 * both, and the older one counts as empty. @w must be valid. (The cheap
 * fields first: the CRC of the other way only when its key is the same.)
 */
static bool hc_shadowed(struct hc_index *ix, const void *set_buf, u32 w)
{
	const struct hc_slot_disk *s = set_buf + (size_t)w * ix->block_size;
	u16 klen = le16_to_cpu(s->key_len);
	u32 v;

	for (v = 0; v < ix->ways; v++) {
		const struct hc_slot_disk *o = set_buf + (size_t)v * ix->block_size;

		if (v != w && le32_to_cpu(o->magic) == HC_SLOT_MAGIC &&
		    le64_to_cpu(o->seq) > le64_to_cpu(s->seq) &&
		    le16_to_cpu(o->key_len) == klen && !memcmp(o->key, s->key, klen) &&
		    hc_slot_valid(ix, o))
			return true;
	}
	return false;
}

/* build a slot (or log record) of @key and the user's value at @s */
static void hc_fill_slot(struct hc_index *ix, struct hc_slot_disk *s, const u8 *key,
			 u32 klen, const void *val, u64 vlen, u32 group, u16 flags)
{
	memset(s, 0, ix->block_size);
	if (vlen)
		memcpy((void *)s + HC_SLOT_HDR_BYTES, val, vlen);
	s->magic = cpu_to_le32(HC_SLOT_MAGIC);
	s->format_id = cpu_to_le64(ix->format_id);
	s->seq = cpu_to_le64(++ix->wseq);
	s->value_len = cpu_to_le64(vlen);
	s->group = cpu_to_le32(group);
	s->key_len = cpu_to_le16(klen);
	s->flags = cpu_to_le16(flags);
	memcpy(s->key, key, klen);
	s->crc = cpu_to_le32(hc_crc(s, HC_SLOT_HDR_BYTES + vlen,
				    offsetof(struct hc_slot_disk, crc)));
}

/* a key's 64-bit hash to its set and tag */
static void hc_split(struct hc_index *ix, u64 h, u64 *set, u64 *tag)
{
	*set = h % ix->sets;
	/* the tag comes from bits the set number did not use */
	*tag = (h >> 40) & ((1ULL << ix->tag_bits) - 1);
}

static void hc_hash(struct hc_index *ix, const u8 *key, u32 klen, u64 *set, u64 *tag)
{
	hc_split(ix, siphash(key, klen, &ix->hkey), set, tag);
}

/* ---------------------------------------------------------------------
 * SetMemLRU: SetMem's fields for a bounded number of sets. A set that is
 * not resident is read from the device whole (one I/O, as a Set lookup)
 * and its fields rebuilt from the slots, ranked by when they were written;
 * it takes the frame of a set not used lately (CLOCK).
 */

/* Does the policy keep table slots' fields in RAM? */
static bool hc_table_in_ram(const struct hc_index *ix)
{
	return ix->policy == HC_POLICY_SETMEM || ix->policy == HC_POLICY_SETMEMLRU;
}

/*
 * One RAM part of the index, zeroed. Its size follows from the geometry, which
 * a superblock (CRC or not) or a format request chooses: a size kvmalloc does
 * not take (over INT_MAX) is refused here, said by the caller, and a failure
 * is an error returned, not a warning in the kernel log.
 */
static void *hc_ram_alloc(struct hc_index *ix, u64 bytes)
{
	if (bytes > INT_MAX) {
		ix->ram_refused = max(ix->ram_refused, bytes);
		return NULL;
	}
	return kvzalloc(bytes, GFP_KERNEL | __GFP_NOWARN);
}

static int hc_frames_alloc(struct hc_index *ix)
{
	u64 n = ix->resident_sets, hsize = roundup_pow_of_two(2 * n);

	ix->bits_bytes = BITS_TO_LONGS(n * ix->ways * ix->width) * sizeof(long);
	ix->bits = hc_ram_alloc(ix, ix->bits_bytes);
	ix->frame_set = hc_ram_alloc(ix, n * sizeof(u32));
	ix->htab = hc_ram_alloc(ix, hsize * sizeof(u32));
	ix->referenced = hc_ram_alloc(ix, BITS_TO_LONGS(n) * sizeof(long));
	if (!ix->bits || !ix->frame_set || !ix->htab || !ix->referenced)
		return -ENOMEM;
	memset(ix->frame_set, 0xff, n * sizeof(u32));
	ix->hmask = hsize - 1;
	ix->bits_bytes += (size_t)n * sizeof(u32) + (size_t)hsize * sizeof(u32) +
			  BITS_TO_LONGS(n) * sizeof(long);
	return 0;
}

static u32 hc_home(struct hc_index *ix, u64 set)
{
	return hash_32((u32)set, ilog2(ix->hmask + 1));
}

/* the htab position of @set, or of the empty entry where it would go */
static u32 hc_probe(struct hc_index *ix, u64 set)
{
	u32 i = hc_home(ix, set);

	while (ix->htab[i] && ix->frame_set[ix->htab[i] - 1] != set)
		i = (i + 1) & ix->hmask;
	return i;
}

/* take @set out of htab, moving later entries of its run back */
static void hc_unhash(struct hc_index *ix, u64 set)
{
	u32 i = hc_probe(ix, set), j = i, k;

	ix->htab[i] = 0;
	for (;;) {
		j = (j + 1) & ix->hmask;
		if (!ix->htab[j])
			return;
		k = hc_home(ix, ix->frame_set[ix->htab[j] - 1]);
		/* the entry at j may fill the hole at i unless its home is in (i, j] */
		if (((j - k) & ix->hmask) >= ((j - i) & ix->hmask)) {
			ix->htab[i] = ix->htab[j];
			ix->htab[j] = 0;
			i = j;
		}
	}
}

/* the frame a set is to take: an empty one, else CLOCK's choice */
static u32 hc_frame_victim(struct hc_index *ix)
{
	for (;;) {
		u32 fr = ix->hand;

		ix->hand = (ix->hand + 1) % ix->resident_sets;
		if (ix->frame_set[fr] == U32_MAX || !__test_and_clear_bit(fr, ix->referenced))
			return fr;
	}
}

/* read @set from the device into buf, and its fields into frame @fr */
static int hc_frame_load(struct hc_index *ix, u64 set, u32 fr)
{
	u64 base = (u64)fr * ix->ways, tags[HC_MAX_WAYS], tset, tag;
	u32 w, v;
	int r;

	r = hc_io(ix, REQ_OP_READ, hc_slot_off(ix, set, 0), ix->buf,
		  (size_t)ix->ways * ix->block_size);
	if (r)
		return r;
	ix->st.set_loads++;
	/* the ways that hold an object: valid, not an older copy, in their set */
	for (w = 0; w < ix->ways; w++) {
		struct hc_slot_disk *s = ix->buf + (size_t)w * ix->block_size;

		tags[w] = U64_MAX;
		hc_set_field(ix, base + w, 0);
		if (!hc_slot_valid(ix, s) || hc_shadowed(ix, ix->buf, w))
			continue;
		hc_hash(ix, s->key, le16_to_cpu(s->key_len), &tset, &tag);
		if (tset == set)
			tags[w] = tag;	/* else not where its hash puts it: ignore */
	}
	/* ranks among those, newest written first: 0..n-1 with no gap */
	for (w = 0; w < ix->ways; w++) {
		u64 rank = 0, seq = le64_to_cpu(((struct hc_slot_disk *)(ix->buf +
					(size_t)w * ix->block_size))->seq);

		if (tags[w] == U64_MAX)
			continue;
		for (v = 0; v < ix->ways; v++)
			if (v != w && tags[v] != U64_MAX &&
			    le64_to_cpu(((struct hc_slot_disk *)(ix->buf +
					(size_t)v * ix->block_size))->seq) > seq)
				rank++;
		hc_set_field(ix, base + w, hc_mkfield(ix, tags[w], rank));
	}
	return 0;
}

/*
 * Point ix->base at @set's fields. SetMemLRU reads the set in when it is
 * not resident, and says so in ix->set_loaded; after a failed read the
 * frame is left empty.
 */
static int hc_set_base(struct hc_index *ix, u64 set)
{
	u32 i, fr;
	int r;

	ix->set_loaded = false;
	if (ix->policy != HC_POLICY_SETMEMLRU) {
		ix->base = set * ix->ways;
		return 0;
	}
	i = hc_probe(ix, set);
	if (ix->htab[i]) {
		fr = ix->htab[i] - 1;
		__set_bit(fr, ix->referenced);
		ix->base = (u64)fr * ix->ways;
		return 0;
	}
	fr = hc_frame_victim(ix);
	if (ix->frame_set[fr] != U32_MAX) {
		hc_unhash(ix, ix->frame_set[fr]);
		ix->frame_set[fr] = U32_MAX;
	}
	r = hc_frame_load(ix, set, fr);
	if (r)
		return r;
	ix->frame_set[fr] = set;
	ix->htab[hc_probe(ix, set)] = fr + 1;
	ix->base = (u64)fr * ix->ways;
	ix->set_loaded = true;
	return 0;
}

/* ---------------------------------------------------------------------
 * Log: objects are records appended to a circular log through a write
 * buffer (one device write for many inserts); RAM holds, per slot of the
 * N-way sets, the tag, the LRU rank, the pass over the log (4 bits) and the
 * record's log block (32 bits). A record overwritten by a later pass is
 * recognised from the pass and the write position, with no I/O. A delete
 * appends a tombstone record, so that a rebuild does not bring the object
 * back.
 */

#define HC_LOG_WBUF_BYTES	SZ_256K
#define HC_REC_TOMB		1	/* slot flags: a tombstone */
#define HC_REC_GEN(fl)		(((fl) >> 8) & 15)

/* the log block the next appended record takes */
static bool hc_is_log(const struct hc_index *ix)
{
	return ix->policy == HC_POLICY_LOG || ix->policy == HC_POLICY_LOGLRU;
}

static u64 hc_log_end(struct hc_index *ix)
{
	return ix->wbase + ix->wcount;
}

/* does field @f still point at its record? */
static bool hc_log_live(struct hc_index *ix, u64 f)
{
	u64 g = hc_gen(ix, f), off = hc_off(ix, f);

	if (!hc_valid(ix, f))
		return false;
	if (f & HC_F_SPILLED)
		return true;	/* not known until read back */
	if (g == ix->gen)
		return off < hc_log_end(ix);
	if (g == ((ix->gen - 1) & 15))
		return off >= hc_log_end(ix);
	return false;
}

/* the longest group run a field may give: one read of the prefetch buffer */
static u64 hc_glen_max(struct hc_index *ix)
{
	return min_t(u64, BIT_ULL(HC_GLEN_BITS) - 1, ix->wbuf_blocks - 1);
}

/* set the group run of the field of the record at log block @off, if it has one */
static void hc_set_glen(struct hc_index *ix, const struct hc_slot_disk *s, u64 off, u64 glen)
{
	u64 set, tag, f, slot, loc = ix->gen | off << 4;
	u32 w, i;
	int k;

	hc_hash(ix, s->key, le16_to_cpu(s->key_len), &set, &tag);
	for (w = 0; w < ix->ways; w++) {
		slot = set * ix->ways + w;
		f = hc_bf_get(ix->bits, slot, ix->width);
		if (!hc_valid(ix, f) || hc_tag(ix, f) != tag)
			continue;
		if (ix->policy == HC_POLICY_LOG) {
			if (hc_off(ix, f) == off && hc_gen(ix, f) == ix->gen)
				hc_bf_set(ix->bits, slot, ix->width, f | glen <<
					  (hc_gen_shift(ix) + HC_LOG_FIELD_BITS));
			continue;
		}
		/* LogLRU: in RAM, or pushed out and still queued (else: no prefetch) */
		k = hc_oent_find(ix, set, w);
		if (k >= 0) {
			u64 e = hc_bf_get(ix->obits, set * ix->ram_ways + k, ix->owidth);

			if (((e >> ix->way_bits) & (BIT_ULL(HC_LOG_FIELD_BITS) - 1)) == loc)
				hc_bf_set(ix->obits, set * ix->ram_ways + k, ix->owidth,
					  e | glen << (ix->way_bits + HC_LOG_FIELD_BITS));
			continue;
		}
		for (i = 0; i < ix->npend; i++) {
			u64 v = ix->pend[i].val;

			if (ix->pend[i].slot == slot &&
			    (v & (BIT_ULL(HC_LOG_FIELD_BITS) - 1)) == loc)
				ix->pend[i].val = v | glen << HC_LOG_FIELD_BITS;
		}
	}
}

/*
 * Prefetch: before the buffer is written, give each record the number of
 * records after it, in the buffer, of the same group (its run): a read of
 * the record then reads them too.
 */
static void hc_group_runs(struct hc_index *ix)
{
	u64 run = 0;
	u32 i;

	for (i = ix->wcount; i-- > 0; ) {
		struct hc_slot_disk *s = ix->wbuf + (size_t)i * ix->block_size;
		struct hc_slot_disk *n = ix->wbuf + (size_t)(i + 1) * ix->block_size;
		u32 g = le32_to_cpu(s->group);

		if (i + 1 < ix->wcount && g && !(le16_to_cpu(s->flags) & HC_REC_TOMB) &&
		    !(le16_to_cpu(n->flags) & HC_REC_TOMB) && le32_to_cpu(n->group) == g)
			run = min(run + 1, hc_glen_max(ix));
		else
			run = 0;
		if (run && !(le16_to_cpu(s->flags) & HC_REC_TOMB))
			hc_set_glen(ix, s, ix->wbase + i, run);
	}
}

static int hc_log_flush(struct hc_index *ix)
{
	int r;

	if (!ix->wcount)
		return 0;
	if (ix->pfbuf) {
		hc_group_runs(ix);
		/* the blocks written over are no longer the group read */
		if (ix->pf_base < hc_log_end(ix) && ix->wbase < ix->pf_base + ix->pf_count)
			ix->pf_count = 0;
	}
	r = hc_io(ix, REQ_OP_WRITE, ix->log_off + ix->wbase * ix->block_size, ix->wbuf,
		  (size_t)ix->wcount * ix->block_size);
	if (r)
		return r;
	ix->wbase += ix->wcount;
	ix->wcount = 0;
	if (ix->wbase == ix->log_blocks) {
		ix->wbase = 0;
		ix->gen = (ix->gen + 1) & 15;
		ix->st.log_wraps++;
	}
	return 0;
}

/*
 * Read the record at log block @off into @dst: from the write buffer or the
 * last group read if it is there, else from the device, with the @glen
 * records after it that belong to its group (prefetch) in the same read.
 */
static int hc_log_read(struct hc_index *ix, u64 off, u64 glen, void *dst)
{
	int r;

	if (off >= ix->wbase && off < hc_log_end(ix)) {
		memcpy(dst, ix->wbuf + (off - ix->wbase) * ix->block_size, ix->block_size);
		return 0;
	}
	if (off >= ix->pf_base && off < ix->pf_base + ix->pf_count) {
		memcpy(dst, ix->pfbuf + (off - ix->pf_base) * ix->block_size, ix->block_size);
		ix->st.prefetch_hits++;
		return 0;
	}
	if (!glen || !ix->pfbuf)
		return hc_io(ix, REQ_OP_READ, ix->log_off + off * ix->block_size, dst,
			     ix->block_size);
	/* runs come from RAM or from hc_spill_entry_ok(): never past pfbuf or the log */
	if (WARN_ON_ONCE(glen > hc_glen_max(ix) || off + glen >= ix->log_blocks))
		return -EIO;
	ix->pf_count = 0;
	r = hc_io(ix, REQ_OP_READ, ix->log_off + off * ix->block_size, ix->pfbuf,
		  (size_t)(glen + 1) * ix->block_size);
	if (r)
		return r;
	ix->st.prefetch_reads++;
	ix->pf_base = off;
	ix->pf_count = glen + 1;
	memcpy(dst, ix->pfbuf, ix->block_size);
	return 0;
}

/* is the object of field @f still there? */
static bool hc_live(struct hc_index *ix, u64 f)
{
	return hc_is_log(ix) ? hc_log_live(ix, f) : hc_valid(ix, f);
}

/* read the object of @set's way @w, field @f, into @dst */
static int hc_read_way(struct hc_index *ix, u64 set, u32 w, u64 f, void *dst)
{
	if (hc_is_log(ix))
		return hc_log_read(ix, hc_off(ix, f), hc_glen(ix, f), dst);
	return hc_io(ix, REQ_OP_READ, hc_slot_off(ix, set, w), dst, ix->block_size);
}

/* LogLRU's spill region: one little-endian u64 a slot, bit 63 = valid */
static u64 hc_spill_bytes(struct hc_index *ix)
{
	return round_up(ix->sets * ix->ways * sizeof(u64), HC_SPILL_BLOCK);
}

static u64 hc_spill_block(struct hc_index *ix, u64 slot)
{
	return ix->spill_off + round_down(slot * sizeof(u64), HC_SPILL_BLOCK);
}

static int hc_pend_cmp(const void *a, const void *b)
{
	const struct hc_spill *x = a, *y = b;

	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* write the queued entries: one read and one write per spill block touched */
static int hc_spill_flush(struct hc_index *ix)
{
	u32 j;
	int r;

	sort(ix->pend, ix->npend, sizeof(*ix->pend), hc_pend_cmp, NULL);
	while (ix->npend) {
		u64 blk = hc_spill_block(ix, ix->pend[0].slot);
		__le64 *e = ix->sbuf;

		r = hc_io(ix, REQ_OP_READ, blk, ix->sbuf, HC_SPILL_BLOCK);
		if (r)
			return r;
		for (j = 0; j < ix->npend && hc_spill_block(ix, ix->pend[j].slot) == blk; j++)
			e[ix->pend[j].slot % (HC_SPILL_BLOCK / sizeof(u64))] =
				cpu_to_le64(ix->pend[j].val);
		r = hc_io(ix, REQ_OP_WRITE, blk, ix->sbuf, HC_SPILL_BLOCK);
		if (r)
			return r;
		ix->st.spill_writes++;
		/* written: drop them from the queue */
		memmove(ix->pend, ix->pend + j, (ix->npend - j) * sizeof(*ix->pend));
		ix->npend -= j;
	}
	return 0;
}

/* room in the queue for what one operation spills (one entry) */
static int hc_spill_room(struct hc_index *ix)
{
	if (ix->policy != HC_POLICY_LOGLRU || ix->npend < HC_PEND_MAX)
		return 0;
	return hc_spill_flush(ix);
}

/*
 * Is the spill entry @v one this index could have written? Bit 63, then pass,
 * log block and group run, nothing above; a block inside the log, and a group
 * run that fits the prefetch buffer and ends inside the log. The spill region
 * is re-read at every fetch and anyone who can write the device can change it:
 * nothing of it is used before this says yes.
 */
static bool hc_spill_entry_ok(struct hc_index *ix, u64 v)
{
	u64 e = v & (BIT_ULL(ix->lbits) - 1);
	u64 off = (e >> 4) & 0xffffffffULL, glen = e >> HC_LOG_FIELD_BITS;

	if (v & ~(BIT_ULL(63) | (BIT_ULL(ix->lbits) - 1)))
		return false;
	return off < ix->log_blocks && glen <= hc_glen_max(ix) &&
	       off + glen < ix->log_blocks;
}

/*
 * Read back @slot's pass and block (as Log field bits) from the queue or
 * the spill region; *@ok is false if the region does not have them, or has
 * something that is not an entry (counted in bad_entries: the way is free).
 */
static int hc_fetch(struct hc_index *ix, u64 slot, u64 *loc, bool *ok)
{
	u64 v = 0;
	u32 i;
	int r;

	for (i = 0; i < ix->npend; i++)
		if (ix->pend[i].slot == slot)
			break;
	if (i < ix->npend) {
		v = ix->pend[i].val;
	} else {
		r = hc_io(ix, REQ_OP_READ, hc_spill_block(ix, slot), ix->sbuf, HC_SPILL_BLOCK);
		if (r)
			return r;
		ix->st.offset_fetches++;
		v = le64_to_cpu(((__le64 *)ix->sbuf)[slot % (HC_SPILL_BLOCK / sizeof(u64))]);
		if ((v & BIT_ULL(63)) && !hc_spill_entry_ok(ix, v)) {
			ix->st.bad_entries++;
			pr_warn_ratelimited("hashcache: %pg: spill entry of slot %llu is out of range (%#llx): ignored\n",
					    ix->bdev, slot, v);
			v = 0;
		}
	}
	*ok = v & BIT_ULL(63);
	*loc = (v & (BIT_ULL(ix->lbits) - 1)) << hc_gen_shift(ix);
	return 0;
}

/*
 * Find @key in its set. On return *way is the way holding it (found), or
 * the way a new object should take: an empty one, else the least recently
 * used (SetMem, Log) or the oldest written (Basic, Set). The object's bytes
 * are in ix->buf + way * block_size when @found, or when the set was read.
 */
static int hc_find(struct hc_index *ix, const u8 *key, u32 klen, u64 set, u64 tag,
		   u32 *way, bool *found, u64 *ios)
{
	u64 before = ix->st.read_ios;
	u32 w, victim = 0;
	int r;

	*found = false;
	ix->fetch_ok = false;
	if (hc_table_in_ram(ix) || hc_is_log(ix)) {
		u64 worst = 0;
		bool empty = false;

		r = hc_set_base(ix, set);
		if (r)
			goto out;
		for (w = 0; w < ix->ways; w++) {
			u64 f = hc_field(ix, ix->base + w);
			void *slot = ix->buf + (size_t)w * ix->block_size;

			if (!hc_live(ix, f)) {
				if (!empty)
					victim = w;
				empty = true;
				continue;
			}
			if (!empty && hc_rank(ix, f) >= worst) {
				worst = hc_rank(ix, f);
				victim = w;
			}
			if (hc_tag(ix, f) != tag)
				continue;
			if (f & HC_F_SPILLED) {
				u64 loc;
				bool ok;

				r = hc_fetch(ix, ix->base + w, &loc, &ok);
				if (r)
					goto out;
				f = (f & ~HC_F_SPILLED) | loc;
				if (!ok || !hc_log_live(ix, f)) {
					/* its record is gone: the way is free */
					hc_clear(ix, ix->base, w);
					if (!empty)
						victim = w;
					empty = true;
					continue;
				}
				ix->fetch_slot = ix->base + w;
				ix->fetch_val = loc;
				ix->fetch_ok = true;
			}
			/* a set just read from the device is in buf already */
			r = ix->set_loaded ? 0 : hc_read_way(ix, set, w, f, slot);
			if (r)
				goto out;
			if (hc_slot_is(ix, slot, key, klen)) {
				*found = true;
				*way = w;
				r = 0;
				goto out;
			}
			ix->st.false_positives++;
			ix->fetch_ok = false;
		}
		*way = victim;
		r = 0;
		goto out;
	}

	/* Basic, Set: the whole set in one read */
	r = hc_io(ix, REQ_OP_READ, hc_slot_off(ix, set, 0), ix->buf,
		  (size_t)ix->ways * ix->block_size);
	if (r)
		goto out;
	{
		u64 oldest = U64_MAX;
		bool empty = false;

		for (w = 0; w < ix->ways; w++) {
			struct hc_slot_disk *s = ix->buf + (size_t)w * ix->block_size;

			if (hc_slot_is(ix, s, key, klen) && !hc_shadowed(ix, ix->buf, w)) {
				*found = true;
				*way = w;
				goto out;
			}
			if (empty)
				continue;
			if (!hc_slot_valid(ix, s) || hc_shadowed(ix, ix->buf, w)) {
				empty = true;
				victim = w;
			} else if (le64_to_cpu(s->seq) < oldest) {
				oldest = le64_to_cpu(s->seq);
				victim = w;
			}
		}
		*way = victim;
	}
out:
	*ios += ix->st.read_ios - before;
	return r;
}

/* Is the slot at @way (in ix->buf after hc_find read it) occupied? */
static bool hc_way_used(struct hc_index *ix, u64 set, u32 way)
{
	if (hc_table_in_ram(ix))
		return hc_valid(ix, hc_field(ix, ix->base + way));
	return hc_slot_valid(ix, ix->buf + (size_t)way * ix->block_size) &&
	       !hc_shadowed(ix, ix->buf, way);
}

/*
 * The way an overwrite of the object at @old writes its new copy to: not @old
 * (see hc_shadowed), an empty way if there is one, else the least recently used
 * (SetMem) or oldest written (Set) other object's, which is evicted. After
 * hc_find: the fields of the set (SetMem, SetMemLRU) or the whole set in buf.
 */
static u32 hc_other_way(struct hc_index *ix, u32 old)
{
	u64 worst = 0, oldest = U64_MAX;
	u32 w, victim = old == 0 ? 1 : 0;

	for (w = 0; w < ix->ways; w++) {
		if (w == old)
			continue;
		if (hc_table_in_ram(ix)) {
			u64 f = hc_field(ix, ix->base + w);

			if (!hc_valid(ix, f))
				return w;
			if (hc_rank(ix, f) >= worst) {
				worst = hc_rank(ix, f);
				victim = w;
			}
		} else {
			struct hc_slot_disk *s = ix->buf + (size_t)w * ix->block_size;

			if (!hc_slot_valid(ix, s) || hc_shadowed(ix, ix->buf, w))
				return w;
			if (le64_to_cpu(s->seq) < oldest) {
				oldest = le64_to_cpu(s->seq);
				victim = w;
			}
		}
	}
	return victim;
}

/* append a record (a tombstone if @tomb) at the log's end; its block in *@off */
static int hc_log_append(struct hc_index *ix, const u8 *key, u32 klen,
			 const void *val, u64 vlen, u32 group, bool tomb, u64 *off)
{
	struct hc_slot_disk *s;
	int r;

	/* a buffer left full by a failed write is written first */
	if (ix->wcount == ix->wbuf_blocks || hc_log_end(ix) == ix->log_blocks) {
		r = hc_log_flush(ix);
		if (r)
			return r;
	}
	*off = hc_log_end(ix);
	s = ix->wbuf + (size_t)ix->wcount * ix->block_size;
	hc_fill_slot(ix, s, key, klen, val, vlen, group, (tomb ? HC_REC_TOMB : 0) | ix->gen << 8);
	ix->wcount++;
	return 0;
}

/* flush when the buffer is full or reaches the end of the log */
static int hc_log_maybe_flush(struct hc_index *ix)
{
	if (ix->wcount == ix->wbuf_blocks || hc_log_end(ix) == ix->log_blocks)
		return hc_log_flush(ix);
	return 0;
}

static int hc_log_put(struct hc_index *ix, const u8 *key, u32 klen,
		      const void *val, u64 vlen, u32 group)
{
	u64 set, tag, ios = 0, w0 = ix->st.write_ios, off;
	bool found, evict;
	u32 way;
	int r;

	if (vlen > hc_max_value(ix))
		return -EFBIG;
	r = hc_spill_room(ix);
	if (r)
		return r;
	hc_hash(ix, key, klen, &set, &tag);
	r = hc_find(ix, key, klen, set, tag, &way, &found, &ios);
	if (r)
		return r;
	r = hc_log_append(ix, key, klen, val, vlen, group, false, &off);
	if (r)
		return r;
	/* after the append: a flush in it may have ended a pass */
	evict = !found && hc_log_live(ix, hc_field(ix, set * ix->ways + way));
	hc_touch(ix, set * ix->ways, way);
	hc_set_field(ix, set * ix->ways + way, hc_mkfield_log(ix, tag, ix->gen, off));
	if (found) {
		ix->st.overwrites++;
	} else {
		ix->st.inserts++;
		if (evict)
			ix->st.evictions++;
	}
	r = hc_log_maybe_flush(ix);
	ix->st.insert_ios += ios + ix->st.write_ios - w0;
	return r;
}

static int hc_log_get(struct hc_index *ix, const u8 *key, u32 klen, void *kval,
		      struct hc_object *o)
{
	struct hc_slot_disk *s;
	u64 set, tag, ios = 0, vlen, f;
	bool found;
	u32 way;
	int r;

	ix->st.lookups++;
	r = hc_spill_room(ix);
	if (r)
		return r;
	hc_hash(ix, key, klen, &set, &tag);
	r = hc_find(ix, key, klen, set, tag, &way, &found, &ios);
	o->found = found;
	/* its log block, read back by hc_find if LogLRU had spilled it */
	f = found ? hc_field(ix, set * ix->ways + way) : 0;
	if (!r && found && !kval &&
	    hc_off(ix, f) >= ix->wbase && hc_off(ix, f) < hc_log_end(ix)) {
		/* LOOKUP hands out a device offset: the record must be there */
		u64 w0 = ix->st.write_ios, g;

		r = hc_log_flush(ix);
		ios += ix->st.write_ios - w0;
		/* the flush may have given it a group run */
		g = hc_field(ix, set * ix->ways + way);
		if (!(g & HC_F_SPILLED))
			f = g;
	}
	ix->st.lookup_ios += ios;
	if (r)
		return r;
	if (!found) {
		ix->st.misses++;
		ix->st.miss_ios += ios;
		if (!ios)
			ix->st.misses_in_ram++;
		return 0;
	}
	ix->st.hits++;
	s = ix->buf + (size_t)way * ix->block_size;
	vlen = le64_to_cpu(s->value_len);
	o->dev_offset = ix->log_off + hc_off(ix, f) * ix->block_size + HC_SLOT_HDR_BYTES;
	if (kval)
		memcpy(kval, (void *)s + HC_SLOT_HDR_BYTES, min(vlen, o->value_len));
	o->value_len = vlen;
	hc_touch(ix, set * ix->ways, way);
	hc_set_field(ix, set * ix->ways + way, hc_with_rank(ix, f, 0));
	return 0;
}

static int hc_log_delete(struct hc_index *ix, const u8 *key, u32 klen, struct hc_object *o)
{
	u64 set, tag, ios = 0, off;
	bool found;
	u32 way;
	int r;

	hc_hash(ix, key, klen, &set, &tag);
	r = hc_find(ix, key, klen, set, tag, &way, &found, &ios);
	o->found = found;
	if (r || !found)
		return r;
	r = hc_log_append(ix, key, klen, NULL, 0, 0, true, &off);
	if (r)
		return r;
	hc_clear(ix, set * ix->ways, way);
	ix->st.deletes++;
	return hc_log_maybe_flush(ix);
}

/* objects: the live fields (a wrap drops objects without an operation) */
static u64 hc_log_objects(struct hc_index *ix)
{
	u64 i, n = 0;

	for (i = 0; i < ix->sets * ix->ways; i++)
		if (hc_log_live(ix, hc_field(ix, i)))
			n++;
	return n;
}

struct hc_rec {
	u64 seq, hash;
	u32 off, group;
	u16 flags, run;
};

static int hc_rec_cmp(const void *a, const void *b)
{
	const struct hc_rec *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Attach: read the whole log, find its end (the newest record), and replay
 * the records that are still live in write order into the RAM fields. Two
 * records of one key are told apart by their 64-bit hash (kept here only);
 * a lookup still compares the keys.
 */
static int hc_log_rebuild(struct hc_index *ix)
{
	u64 per_read = max_t(u64, 1, HC_SCAN_BYTES / ix->block_size), b, n, i, nr = 0;
	struct hc_rec *recs = NULL;
	u64 *slot_hash = NULL;
	void *buf;
	int r = -ENOMEM;

	buf = kvmalloc(per_read * ix->block_size, GFP_KERNEL);
	recs = hc_ram_alloc(ix, ix->log_blocks * sizeof(*recs));
	slot_hash = hc_ram_alloc(ix, ix->sets * ix->ways * sizeof(u64));
	if (!buf || !recs || !slot_hash)
		goto out;
	r = 0;
	for (b = 0; b < ix->log_blocks && !r; b += n) {
		n = min(per_read, ix->log_blocks - b);
		r = hc_io(ix, REQ_OP_READ, ix->log_off + b * ix->block_size, buf,
			  n * ix->block_size);
		for (i = 0; i < n && !r; i++) {
			struct hc_slot_disk *s = buf + i * ix->block_size;

			if (!hc_slot_valid(ix, s)) {
				ix->torn += hc_slot_torn(ix, s);
				continue;
			}
			recs[nr].seq = le64_to_cpu(s->seq);
			recs[nr].hash = siphash(s->key, le16_to_cpu(s->key_len), &ix->hkey);
			recs[nr].off = b + i;
			recs[nr].flags = le16_to_cpu(s->flags);
			recs[nr].group = le32_to_cpu(s->group);
			nr++;
		}
		cond_resched();
	}
	if (r)
		goto out;
	sort(recs, nr, sizeof(*recs), hc_rec_cmp, NULL);
	/* prefetch: group runs of records written one after another */
	for (i = nr; ix->pfbuf && i-- > 0; ) {
		struct hc_rec *a = &recs[i], *b = &recs[i + 1];

		a->run = 0;
		if (i + 1 < nr && a->group && b->group == a->group && b->off == a->off + 1 &&
		    HC_REC_GEN(a->flags) == HC_REC_GEN(b->flags) &&
		    !((a->flags | b->flags) & HC_REC_TOMB))
			a->run = min_t(u64, b->run + 1, hc_glen_max(ix));
	}
	ix->wbase = 0;
	ix->gen = 0;
	if (nr) {
		ix->wseq = recs[nr - 1].seq;
		ix->wbase = recs[nr - 1].off + 1;
		ix->gen = HC_REC_GEN(recs[nr - 1].flags);
		if (ix->wbase == ix->log_blocks) {
			ix->wbase = 0;
			ix->gen = (ix->gen + 1) & 15;
		}
	}
	for (i = 0; i < nr; i++) {
		struct hc_rec *rc = &recs[i];
		u64 set, tag, f, worst = 0;
		u32 w, way = ix->ways, victim = 0;
		bool empty = false;

		hc_split(ix, rc->hash, &set, &tag);
		f = hc_mkfield_log(ix, tag, HC_REC_GEN(rc->flags), rc->off) |
		    (u64)rc->run << (hc_gen_shift(ix) + HC_LOG_FIELD_BITS);

		if (!hc_log_live(ix, f))
			continue;	/* overwritten by a later pass */
		for (w = 0; w < ix->ways; w++) {
			u64 g = hc_field(ix, set * ix->ways + w);

			if (hc_log_live(ix, g) && slot_hash[set * ix->ways + w] == rc->hash) {
				way = w;
				break;
			}
			if (!hc_log_live(ix, g)) {
				if (!empty)
					victim = w;
				empty = true;
			} else if (!empty && hc_rank(ix, g) >= worst) {
				worst = hc_rank(ix, g);
				victim = w;
			}
		}
		if (rc->flags & HC_REC_TOMB) {
			if (way < ix->ways)
				hc_clear(ix, set * ix->ways, way);
			continue;
		}
		if (way == ix->ways)
			way = victim;
		hc_touch(ix, set * ix->ways, way);
		hc_set_field(ix, set * ix->ways + way, f);
		slot_hash[set * ix->ways + way] = rc->hash;
	}
	memset(&ix->st, 0, sizeof(ix->st));
out:
	kvfree(slot_hash);
	kvfree(recs);
	kvfree(buf);
	return r;
}

/*
 * Split the full Log fields of @set (in @full) into the short fields, the
 * RAM entries of its most recently used ways and the spill entries of the
 * others (at @spill).
 */
static void hc_loglru_keep(struct hc_index *ix, const unsigned long *full, u64 set,
			   __le64 *spill)
{
	unsigned int lw = ix->width + ix->lbits;
	u32 w, k = 0;

	for (w = 0; w < ix->ways; w++) {
		u64 slot = set * ix->ways + w, f = hc_bf_get(full, slot, lw);
		u64 loc = f >> hc_gen_shift(ix);

		hc_bf_set(ix->bits, slot, ix->width, f & hc_short_mask(ix));
		if (!hc_valid(ix, f))
			continue;
		if (hc_rank(ix, f) < ix->ram_ways && k < ix->ram_ways)
			hc_bf_set(ix->obits, set * ix->ram_ways + k++, ix->owidth,
				  (w + 1) | loc << ix->way_bits);
		else
			spill[w] = cpu_to_le64(BIT_ULL(63) | loc);
	}
}

/*
 * LogLRU attach: rebuild full Log fields in a scratch array (Log's RAM, for
 * the length of the attach), then keep the short part of every field, the
 * pass and block of each set's ram_ways most recently used ways, and write
 * the others' to the spill region, which is rewritten whole.
 */
static int hc_loglru_rebuild(struct hc_index *ix)
{
	unsigned int sw = ix->width, lw = sw + ix->lbits;
	/* a chunk of the spill region: whole sets, whole spill blocks */
	u64 per = rounddown(HC_SCAN_BYTES / sizeof(u64),
			    lcm(HC_SPILL_BLOCK / sizeof(u64), ix->ways));
	u64 slots = ix->sets * ix->ways, i, n, set;
	unsigned long *keep = ix->bits, *tmp;
	__le64 *chunk;
	int r;

	tmp = hc_ram_alloc(ix, BITS_TO_LONGS(slots * lw) * sizeof(long));
	chunk = kvmalloc(HC_SCAN_BYTES, GFP_KERNEL);
	if (!tmp || !chunk) {
		r = -ENOMEM;
		goto out;
	}
	ix->bits = tmp;
	ix->width = lw;
	ix->policy = HC_POLICY_LOG;
	r = hc_log_rebuild(ix);
	ix->policy = HC_POLICY_LOGLRU;
	ix->bits = keep;
	ix->width = sw;
	if (r)
		goto out;
	for (i = 0; i < slots && !r; i += n) {
		n = min(per, slots - i);
		memset(chunk, 0, HC_SCAN_BYTES);
		for (set = div_u64(i, ix->ways); set * ix->ways < i + n; set++)
			hc_loglru_keep(ix, tmp, set, chunk + (set * ix->ways - i));
		r = hc_io(ix, REQ_OP_WRITE, ix->spill_off + i * sizeof(u64), chunk,
			  round_up(n * sizeof(u64), HC_SPILL_BLOCK));
		cond_resched();
	}
	memset(&ix->st, 0, sizeof(ix->st));
out:
	kvfree(chunk);
	kvfree(tmp);
	return r;
}

/* ---------------------------------------------------------------------
 * Operations
 */

static int hc_table_insert(struct hc_index *ix, const u8 *key, u32 klen,
			   const void *val, u64 vlen, u32 group)
{
	struct hc_slot_disk *s;
	u64 set, tag, ios = 0, w0 = ix->st.write_ios;
	bool found, evict, moved;
	u32 way, old;
	int r;

	if (vlen > hc_max_value(ix))
		return -EFBIG;
	if (ix->stale_copy)
		return -EIO;
	hc_hash(ix, key, klen, &set, &tag);
	r = hc_find(ix, key, klen, set, tag, &way, &found, &ios);
	if (r)
		return r;
	/*
	 * An overwrite goes to another way, then the old copy is emptied: a crash
	 * that tears the new write leaves the acknowledged old value. Basic (and
	 * any index of one way) overwrites in place (Documentation/hashcache.rst).
	 */
	old = way;
	moved = found && ix->ways > 1;
	if (moved)
		way = hc_other_way(ix, old);
	evict = (!found || moved) && hc_way_used(ix, set, way);
	s = ix->buf + (size_t)way * ix->block_size;
	hc_fill_slot(ix, s, key, klen, val, vlen, group, 0);
	r = hc_io(ix, REQ_OP_WRITE, hc_slot_off(ix, set, way), s, ix->block_size);
	if (r) {
		ix->st.insert_ios += ios + ix->st.write_ios - w0;
		return r;
	}
	if (moved) {
		s = ix->buf + (size_t)old * ix->block_size;
		memset(s, 0, HC_SLOT_HDR_BYTES);
		r = hc_io(ix, REQ_OP_WRITE, hc_slot_off(ix, set, old), s, ix->block_size);
		/*
		 * Failed: the new copy is the object (the newer of two, hc_shadowed),
		 * but a DELETE would empty it and leave the old one to be found.
		 * PUT and DELETE are refused until an attach empties it (hc_rebuild).
		 */
		if (r) {
			ix->stale_copy = true;
			pr_warn("hashcache: %pg: an overwrite could not empty the old copy (%d): PUT and DELETE refused until the index is attached again\n",
				ix->bdev, r);
		}
	}
	ix->st.insert_ios += ios + ix->st.write_ios - w0;
	if (found) {
		ix->st.overwrites++;
	} else {
		ix->st.inserts++;
		if (!evict)
			ix->st.objects++;
	}
	if (evict) {
		ix->st.evictions++;
		if (found)
			ix->st.objects--;
	}
	if (hc_table_in_ram(ix)) {
		if (moved)
			hc_clear(ix, ix->base, old);
		hc_touch(ix, ix->base, way);
		hc_set_field(ix, ix->base + way, hc_mkfield(ix, tag, 0));
	}
	return r;
}

/*
 * GET (@kval set: up to o->value_len bytes of the value go there) or LOOKUP:
 * the object's place and length
 */
static int hc_table_lookup(struct hc_index *ix, const u8 *key, u32 klen, void *kval,
			   struct hc_object *o)
{
	struct hc_slot_disk *s;
	u64 set, tag, ios = 0, vlen;
	bool found;
	u32 way;
	int r;

	ix->st.lookups++;
	hc_hash(ix, key, klen, &set, &tag);
	r = hc_find(ix, key, klen, set, tag, &way, &found, &ios);
	ix->st.lookup_ios += ios;
	if (r)
		return r;
	o->found = found;
	if (!found) {
		ix->st.misses++;
		ix->st.miss_ios += ios;
		if (!ios)
			ix->st.misses_in_ram++;
		return 0;
	}
	ix->st.hits++;
	s = ix->buf + (size_t)way * ix->block_size;
	vlen = le64_to_cpu(s->value_len);
	o->dev_offset = hc_slot_off(ix, set, way) + HC_SLOT_HDR_BYTES;
	if (kval)
		memcpy(kval, (void *)s + HC_SLOT_HDR_BYTES, min(vlen, o->value_len));
	o->value_len = vlen;
	if (hc_table_in_ram(ix)) {
		hc_touch(ix, ix->base, way);
		hc_set_field(ix, ix->base + way, hc_mkfield(ix, tag, 0));
	}
	return 0;
}

static int hc_table_remove(struct hc_index *ix, const u8 *key, u32 klen, struct hc_object *o)
{
	struct hc_slot_disk *s;
	u64 set, tag, ios = 0;
	bool found;
	u32 way;
	int r;

	if (ix->stale_copy)
		return -EIO;
	hc_hash(ix, key, klen, &set, &tag);
	r = hc_find(ix, key, klen, set, tag, &way, &found, &ios);
	o->found = found;
	if (r || !found)
		return r;
	s = ix->buf + (size_t)way * ix->block_size;
	memset(s, 0, HC_SLOT_HDR_BYTES);
	/* a zeroed header is an empty slot: one block write */
	r = hc_io(ix, REQ_OP_WRITE, hc_slot_off(ix, set, way), s, ix->block_size);
	if (r)
		return r;
	ix->st.deletes++;
	ix->st.objects--;
	if (hc_table_in_ram(ix))
		hc_clear(ix, ix->base, way);
	return 0;
}

/* ---------------------------------------------------------------------
 * Attach: read the superblock, rebuild the RAM part from the Disk Table
 */

static int hc_rebuild(struct hc_index *ix)
{
	size_t set_bytes = (size_t)ix->ways * ix->block_size;
	u64 sets_per_read = max_t(u64, 1, HC_SCAN_BYTES / set_bytes), set, n;
	void *buf;
	int r = 0;

	buf = kvmalloc(sets_per_read * set_bytes, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (set = 0; set < ix->sets && !r; set += n) {
		u64 i;

		n = min(sets_per_read, ix->sets - set);
		r = hc_io(ix, REQ_OP_READ, hc_slot_off(ix, set, 0), buf, n * set_bytes);
		for (i = 0; i < n * ix->ways && !r; i++) {
			struct hc_slot_disk *s = buf + i * ix->block_size;
			u64 tset, tag;
			u32 way = i % ix->ways;

			if (!hc_slot_valid(ix, s)) {
				ix->torn += hc_slot_torn(ix, s);
				continue;
			}
			/*
			 * the old copy of an overwrite a crash cut short: emptied now, so that
			 * a later DELETE of the key (which empties the copy it finds, the new
			 * one) cannot bring it back
			 */
			if (hc_shadowed(ix, buf + (i / ix->ways) * set_bytes, way)) {
				u64 at = hc_slot_off(ix, set + i / ix->ways, way);

				memset(s, 0, HC_SLOT_HDR_BYTES);
				r = hc_io(ix, REQ_OP_WRITE, at, s, ix->block_size);
				continue;
			}
			ix->st.objects++;
			ix->wseq = max(ix->wseq, le64_to_cpu(s->seq));
			if (ix->policy != HC_POLICY_SETMEM)
				continue;
			hc_hash(ix, s->key, le16_to_cpu(s->key_len), &tset, &tag);
			if (tset != set + i / ix->ways)
				continue;	/* not where its hash puts it: ignore */
			/* ranks: the order found, oldest last is not known; newest first */
			hc_touch(ix, tset * ix->ways, way);
			hc_set_field(ix, tset * ix->ways + way, hc_mkfield(ix, tag, 0));
		}
		cond_resched();
	}
	kvfree(buf);
	/* the rebuild's I/O is not an operation's */
	n = ix->st.objects;
	memset(&ix->st, 0, sizeof(ix->st));
	ix->st.objects = n;
	return r;
}

/* free @ix and every RAM part it has (hc_alloc_ram's, whichever exist) */
static void hc_free(struct hc_index *ix)
{
	kvfree(ix->bits);
	kvfree(ix->frame_set);
	kvfree(ix->htab);
	kvfree(ix->referenced);
	kvfree(ix->obits);
	kvfree(ix->pfbuf);
	kvfree(ix->pend);
	kfree(ix->sbuf);
	kvfree(ix->buf);
	kvfree(ix->wbuf);
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

/* Table policies' RAM: SetMem's fields, SetMemLRU's frames; Basic and Set have none. */
static int hc_table_alloc_ram(struct hc_index *ix)
{
	size_t ob;

	if (ix->policy == HC_POLICY_SETMEMLRU)
		return hc_frames_alloc(ix);
	if (ix->policy != HC_POLICY_SETMEM)
		return 0;
	ob = BITS_TO_LONGS(ix->sets * ix->ways * ix->width) * sizeof(long);
	ix->bits = hc_ram_alloc(ix, ob);
	ix->bits_bytes += ob;
	return ix->bits ? 0 : -ENOMEM;
}

/*
 * Log policies' RAM: the write buffer, the prefetch buffer, Log's full fields
 * or LogLRU's short fields with the RAM ways' entries, the spill queue and a
 * spill block.
 */
static int hc_log_alloc_ram(struct hc_index *ix)
{
	size_t ob;

	ix->lbits = HC_LOG_FIELD_BITS + (ix->flags & HC_FORMAT_PREFETCH ? HC_GLEN_BITS : 0);
	if (ix->policy == HC_POLICY_LOG)
		ix->width += ix->lbits;
	ix->wbuf_blocks = HC_LOG_WBUF_BYTES / ix->block_size;
	ix->wbuf = kvmalloc(HC_LOG_WBUF_BYTES, GFP_KERNEL);
	if (!ix->wbuf)
		return -ENOMEM;
	if (ix->flags & HC_FORMAT_PREFETCH) {
		ix->pfbuf = kvmalloc(HC_LOG_WBUF_BYTES, GFP_KERNEL);
		if (!ix->pfbuf)
			return -ENOMEM;
	}
	if (ix->policy == HC_POLICY_LOGLRU) {
		ix->way_bits = order_base_2(ix->ways + 1);
		ix->owidth = ix->way_bits + ix->lbits;
		ob = BITS_TO_LONGS((u64)ix->sets * ix->ram_ways * ix->owidth) * sizeof(long);
		ix->obits = hc_ram_alloc(ix, ob);
		ix->pend = kvmalloc_array(HC_PEND_MAX, sizeof(*ix->pend), GFP_KERNEL);
		ix->sbuf = kmalloc(HC_SPILL_BLOCK, GFP_KERNEL);
		if (!ix->obits || !ix->pend || !ix->sbuf)
			return -ENOMEM;
		ix->bits_bytes = ob;
	}
	ob = BITS_TO_LONGS(ix->sets * ix->ways * ix->width) * sizeof(long);
	ix->bits = hc_ram_alloc(ix, ob);
	ix->bits_bytes += ob;
	return ix->bits ? 0 : -ENOMEM;
}

/* ---------------------------------------------------------------------
 * The policies
 */

static const struct hc_policy_ops hc_table_ops = {
	.name		= "table",
	.alloc_ram	= hc_table_alloc_ram,
	.recover	= hc_rebuild,
	.insert		= hc_table_insert,
	.lookup		= hc_table_lookup,
	.remove		= hc_table_remove,
};

/* attach: LogLRU rebuilds Log's fields first, then keeps part and spills the rest */
static int hc_log_recover(struct hc_index *ix)
{
	return ix->policy == HC_POLICY_LOGLRU ? hc_loglru_rebuild(ix) : hc_log_rebuild(ix);
}

static const struct hc_policy_ops hc_log_ops = {
	.name		= "log",
	.alloc_ram	= hc_log_alloc_ram,
	.recover	= hc_log_recover,
	.insert		= hc_log_put,
	.lookup		= hc_log_get,
	.remove		= hc_log_delete,
	.flush		= hc_log_flush,
	.objects	= hc_log_objects,
};

/* by HC_POLICY_*: a new policy is its ops and a line here */
static const struct hc_policy_ops *const hc_policies[] = {
	[HC_POLICY_BASIC]	= &hc_table_ops,
	[HC_POLICY_SET]		= &hc_table_ops,
	[HC_POLICY_SETMEM]	= &hc_table_ops,
	[HC_POLICY_SETMEMLRU]	= &hc_table_ops,
	[HC_POLICY_LOG]		= &hc_log_ops,
	[HC_POLICY_LOGLRU]	= &hc_log_ops,
};

/* the ops of policy @p, or NULL if there is no such policy */
static const struct hc_policy_ops *hc_policy(u32 p)
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
	u64 slots = ix->sets * ix->ways, need = 0;

	if (hc_is_log(ix))
		need = max(ix->log_blocks * sizeof(struct hc_rec), slots * sizeof(u64));
	if (ix->policy == HC_POLICY_LOGLRU)
		need = max(need, BITS_TO_LONGS(slots * (ix->width + ix->lbits)) * sizeof(long));
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

/* Prefetch only for a log, and a Log field within 63 bits (bit 63: spilled) */
static bool hc_flags_ok(struct hc_index *ix)
{
	bool pf = ix->flags & HC_FORMAT_PREFETCH;

	if ((ix->flags & ~HC_FORMAT_PREFETCH) || (pf && !hc_is_log(ix)))
		return false;
	return !hc_is_log(ix) || 1 + order_base_2(ix->ways) + ix->tag_bits +
		HC_LOG_FIELD_BITS + (pf ? HC_GLEN_BITS : 0) <= 63;
}

static int hc_do_format(struct hc_format *f)
{
	struct hc_index *ix;
	u64 set_bytes;
	int r;

	if (f->flags & ~HC_FORMAT_PREFETCH)
		return -EINVAL;
	if (!hc_policy(f->policy))
		return -EINVAL;
	/* groups are read together only from a log */
	if ((f->flags & HC_FORMAT_PREFETCH) &&
	    f->policy != HC_POLICY_LOG && f->policy != HC_POLICY_LOGLRU)
		return -EINVAL;
	/* parameters of another policy */
	if ((f->resident_sets && f->policy != HC_POLICY_SETMEMLRU) ||
	    (f->ram_ways && f->policy != HC_POLICY_LOGLRU) ||
	    (f->log_bytes && f->policy != HC_POLICY_LOG && f->policy != HC_POLICY_LOGLRU))
		return -EINVAL;

	ix = hc_alloc();
	if (!ix)
		return -ENOMEM;
	ix->policy = f->policy;
	ix->ops = hc_policy(f->policy);
	ix->flags = f->flags;
	ix->block_size = f->block_size ?: HC_DEF_BLOCK;
	ix->ways = f->policy == HC_POLICY_BASIC ? 1 : (f->ways ?: HC_DEF_WAYS);
	ix->tag_bits = f->tag_bits ?: HC_DEF_TAG_BITS;
	r = -EINVAL;
	if (ix->block_size < 4096 || ix->block_size > 65536 ||
	    !is_power_of_2(ix->block_size) ||
	    (f->policy == HC_POLICY_BASIC && f->ways > 1) ||
	    ix->ways > HC_MAX_WAYS || ix->tag_bits > 16)
		goto out;
	set_bytes = (u64)ix->ways * ix->block_size;
	if (set_bytes > HC_MAX_SET_BYTES || !hc_flags_ok(ix))
		goto out;
	r = hc_open_bdev(ix, f->fd);
	if (r)
		goto out;
	r = -ENOSPC;
	if (ix->dev_bytes < HC_TABLE_OFFSET + set_bytes)
		goto out;
	if (hc_is_log(ix)) {
		u64 avail = ix->dev_bytes - HC_TABLE_OFFSET;
		/* LogLRU: room for the spill region, 8 bytes a record */
		u64 lb = f->log_bytes ?: ix->policy == HC_POLICY_LOG ? avail :
			 div_u64(avail - min_t(u64, avail, HC_SPILL_BLOCK),
				 ix->block_size + 8) * ix->block_size;

		ix->log_off = HC_TABLE_OFFSET;
		ix->log_blocks = div_u64(lb, ix->block_size);
		if (lb > ix->dev_bytes - ix->log_off || lb % ix->block_size ||
		    ix->log_blocks < 2 * (HC_LOG_WBUF_BYTES / ix->block_size) ||
		    ix->log_blocks > U32_MAX)
			goto out;
		/* as many slots as the log holds records */
		ix->sets = f->sets ?: max_t(u64, 1, div_u64(ix->log_blocks, ix->ways));
		if (ix->sets > U32_MAX / ix->ways)
			goto out;
		ix->spill_off = ix->log_off + lb;
		if (ix->policy == HC_POLICY_LOGLRU &&
		    ix->spill_off + hc_spill_bytes(ix) > ix->dev_bytes)
			goto out;
	} else {
		/* (a count, not sets * set_bytes: that product can wrap) */
		u64 fit = div64_u64(ix->dev_bytes - HC_TABLE_OFFSET, set_bytes);

		ix->sets = f->sets ?: fit;
		if (ix->sets > fit)
			goto out;
	}
	if (f->policy == HC_POLICY_SETMEMLRU) {
		/* frames name their set in 32 bits */
		r = -EINVAL;
		if (ix->sets >= U32_MAX || f->resident_sets > ix->sets)
			goto out;
		ix->resident_sets = f->resident_sets ?: max_t(u32, 1, ix->sets / 4);
	}
	if (f->policy == HC_POLICY_LOGLRU) {
		/* some ways' offsets in RAM, not all */
		r = -EINVAL;
		if (ix->ways < 2 || f->ram_ways >= ix->ways)
			goto out;
		ix->ram_ways = f->ram_ways ?: ix->ways / 2;
	}
	ix->seed = f->seed ?: get_random_u64();
	ix->format_id = get_random_u64() | 1;
	r = hc_alloc_ram(ix);
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
	bool lru = ix->policy == HC_POLICY_SETMEMLRU;
	bool lru_log = ix->policy == HC_POLICY_LOGLRU;

	ix->ops = hc_policy(ix->policy);
	if (!ix->ops)
		return false;
	if (ix->block_size < 4096 || ix->block_size > 65536 ||
	    !is_power_of_2(ix->block_size) || !ix->ways || ix->ways > HC_MAX_WAYS ||
	    !ix->tag_bits || ix->tag_bits > 16 || !ix->sets || set_bytes > HC_MAX_SET_BYTES ||
	    ix->dev_bytes < HC_TABLE_OFFSET + set_bytes)
		return false;
	if (lru != (ix->resident_sets && ix->resident_sets <= ix->sets && ix->sets < U32_MAX))
		return false;
	if (lru_log != (ix->ram_ways && ix->ram_ways < ix->ways))
		return false;
	if (!hc_flags_ok(ix))
		return false;
	if (!hc_is_log(ix))
		return ix->sets <= div64_u64(ix->dev_bytes - HC_TABLE_OFFSET, set_bytes);
	ix->spill_off = ix->log_off + ix->log_blocks * ix->block_size;
	return ix->log_off == HC_TABLE_OFFSET && ix->log_blocks <= U32_MAX &&
	       ix->log_blocks >= 2 * (HC_LOG_WBUF_BYTES / ix->block_size) &&
	       ix->spill_off <= ix->dev_bytes && ix->sets <= U32_MAX / ix->ways &&
	       (ix->policy == HC_POLICY_LOG ||
		ix->spill_off + hc_spill_bytes(ix) <= ix->dev_bytes);
}

static int hc_do_attach(struct hc_attach *a, struct hc_index **out_ix)
{
	struct hc_sb_disk *sb[HC_SB_COPIES] = {};
	struct hc_sb_disk *best = NULL;
	struct hc_index *ix;
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
	ix->log_blocks = ix->block_size ?
		div_u64(le64_to_cpu(best->log_bytes), ix->block_size) : 0;
	/* a CRC does not vouch for sense: check the geometry as format does */
	if (le32_to_cpu(best->version) != HC_FORMAT_VERSION || !hc_geometry_ok(ix)) {
		pr_warn("hashcache: %pg: superblock geometry is not usable\n", ix->bdev);
		goto out;
	}
	if (!le32_to_cpu(best->clean))
		a->flags |= HC_ATTACH_RECOVERED;
	r = hc_ram_verdict(ix, hc_alloc_ram(ix));
	if (r)
		goto out;
	r = hc_ram_verdict(ix, ix->ops->recover(ix));
	if (r)
		goto out;
	r = hc_sb_write(ix, false);
	if (r)
		goto out;
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
	if (!hc_zero(o.reserved, sizeof(o.reserved)) || !o.key_len || o.key_len > HC_KEY_MAX ||
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
	switch (cmd) {
	case HC_IOC_PUT:
		r = ix->ops->insert(ix, key, o.key_len, val, o.value_len, o.group);
		break;
	case HC_IOC_GET:
		r = ix->ops->lookup(ix, key, o.key_len, val, &o);
		break;
	case HC_IOC_LOOKUP:
		r = ix->ops->lookup(ix, key, o.key_len, NULL, &o);
		break;
	default:
		r = ix->ops->remove(ix, key, o.key_len, &o);
		break;
	}
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
		if (a.id || a.flags || a.reserved0 || !hc_zero(a.reserved, sizeof(a.reserved)))
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
		in.flags = ix->flags;
		in.block_size = ix->block_size;
		in.ways = ix->ways;
		in.resident_sets = ix->resident_sets;
		in.ram_ways = ix->ram_ways;
		in.tag_bits = ix->tag_bits;
		in.sets = ix->sets;
		in.log_bytes = ix->log_blocks * ix->block_size;
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
	case HC_IOC_STATS: {
		struct hc_stats s;

		r = hc_copy_in(&s, arg, sizeof(s));
		if (r)
			return r;
		if (!hc_zero(&s.reserved0, sizeof(s) - offsetof(struct hc_stats, reserved0)))
			return -EINVAL;
		ix = hc_get_index(s.id);
		if (!ix)
			return -ENOENT;
		s = ix->st;
		s.hdr.size = sizeof(s);
		s.hdr.version = HC_ABI_VERSION;
		s.id = ix->id;
		if (ix->ops->objects)
			s.objects = ix->ops->objects(ix);
		s.torn_records = ix->torn;
		s.ram_bytes = ix->bits_bytes;
		s.slots = ix->sets * ix->ways;
		s.ram_bits_per_object = s.objects ?
			div64_u64(s.ram_bytes * 8000, s.objects) : 0;
		hc_put_index(ix);
		return copy_to_user(arg, &s, sizeof(s)) ? -EFAULT : 0;
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

#if IS_ENABLED(CONFIG_HASHCACHE_KUNIT_TEST)
#include "hashcache-test.c"
#endif
