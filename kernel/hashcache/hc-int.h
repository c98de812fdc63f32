/* SPDX-License-Identifier: GPL-2.0 */
/*
 * HashCache inside the module: the index, the policy ops, and what one file
 * of it uses of another. Which file holds what:
 *
 *   hc-core.c    the mechanism: device I/O, the superblock, format, attach,
 *                detach, the ids, the ioctls, the stats, hc_policies[]
 *   hc-fields.c  the RAM part: packed per-slot fields, LogLRU's split
 *                fields, the LRU ranks of a set
 *   hc-set.c     a key's set: hashing, slots on the device, hc_find
 *   hc-table.c   the table policies (Basic, Set, SetMem, SetMemLRU)
 *   hc-log.c     the log policies (Log, LogLRU) and LogLRU's spill region
 *   hc-bufferhash.c  BufferHash (CLAM): buffers, incarnations, Bloom filters,
 *                the blocks of records Cascade's slabs are made of too
 *   hc-cascade.c Cascade Mapping (SlickCache): T1 in RAM, T2 and T3 on flash
 *
 * The on-device format is in hc-format.h.
 */
#ifndef HC_INT_H
#define HC_INT_H

#include <linux/types.h>
#include <linux/blkdev.h>
#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/siphash.h>
#include <linux/sizes.h>
#include <linux/bitops.h>
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
struct hc_ckpt_part;

/*
 * What a policy does, behind one table (hc_policies[]): the mechanism (the
 * device format, the superblock, device I/O, the ioctls, the stats, ids)
 * calls these and nothing else of a policy. Every op runs with the index's
 * lock held.
 */
struct hc_policy_ops {
	const char *name;
	u32 format_flags;		/* the HC_FORMAT_* flags it takes */
	u32 layout_flags;		/* flags its format sets in the superblock itself */
	u32 ckpt_flags;			/* of those, what a checkpoint region is needed for */
	/*
	 * FORMAT: check the policy's parameters in @f (-EINVAL for one it does
	 * not take) and lay out its table or log on the device (-ENOSPC), from
	 * the common geometry the mechanism has checked and the device's size
	 */
	int (*format)(struct hc_index *ix, const struct hc_format *f);
	/* ATTACH: is the policy's geometry read from a superblock one format makes? */
	bool (*geometry_ok)(struct hc_index *ix);
	/* the RAM part and buffers, once the geometry is known (format, attach) */
	int (*alloc_ram)(struct hc_index *ix);
	/* free what alloc_ram made in ix->priv (NULL: it made nothing there) */
	void (*free)(struct hc_index *ix);
	/* attach: rebuild the RAM part from the device */
	int (*recover)(struct hc_index *ix);
	/* the largest piece of scratch RAM recover takes (NULL: none) */
	u64 (*recover_bytes)(struct hc_index *ix);
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
	/*
	 * The checkpoint (hc-format.h). ckpt_parts: the RAM arrays a clean
	 * detach saves and a clean attach reads back, up to HC_CKPT_PARTS
	 * (NULL: none). ckpt_save: anything left to write first, and the
	 * policy's state words; an error: no checkpoint this time (the next
	 * attach scans). ckpt_load: the arrays are in place and @state read
	 * back, CRC checked: check every word as a scan would check what it
	 * reads (-EINVAL: scan instead). A part whose @p is NULL is not in
	 * RAM: ckpt_fill writes its bytes into the checkpoint (@periodic: of
	 * a periodic one; a detach's may leave it zero), and an attach after a
	 * crash finds them in ix->ckpt_img from ckpt_load to the end of
	 * ckpt_tail (at most one such part, the last).
	 */
	unsigned int (*ckpt_parts)(struct hc_index *ix, struct hc_ckpt_part *p);
	int (*ckpt_save)(struct hc_index *ix, u64 *state);
	int (*ckpt_fill)(struct hc_index *ix, void *dst, size_t bytes, bool periodic);
	int (*ckpt_load)(struct hc_index *ix, const u64 *state);
	/*
	 * Recovery from a periodic checkpoint (hc_ckpt_periodic; NULL: the
	 * policy writes none): the checkpoint is loaded, replay what was
	 * written after it. -EINVAL: what is there is not what the checkpoint
	 * leads to (the RAM part is cleared and the attach scans).
	 */
	int (*ckpt_tail)(struct hc_index *ix);
};

#define HC_CKPT_PARTS	4

struct hc_ckpt_part {
	void *p;
	size_t bytes;
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
	u64 buffer_bytes;		/* BufferHash: an incarnation's */
	u64 ckpt_off, ckpt_bytes;	/* the checkpoint region; 0 bytes: none */
	u64 max_value;			/* the largest value a PUT takes; 0: a slot's */
	u64 slots;			/* objects it is sized for; 0: sets x ways */
	siphash_key_t hkey;
	void *priv;			/* the policy's own (ops->free frees it) */

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
	u64 dev_read;			/* bytes read from the device, ever (attach's cost) */
	bool write_failed;		/* a write failed since attach: no checkpoint */
	/*
	 * Periodic checkpoints (a policy with ckpt_tail): one every
	 * @ckpt_every of the policy's (Log: records, BufferHash: rotations,
	 * Cascade: slabs; 0: none); @ckpt_wseq is the write counter at the last; @ckpt_live: one
	 * of this attach's superblock is on the device, so that a crash
	 * recovers from it; @ckpt_broken: it could not be replaced or voided,
	 * so the index takes no more writes; @ckpt_replay: the checkpoint
	 * ckpt_load is given is a periodic one, ckpt_tail follows.
	 */
	u64 ckpt_every, ckpt_wseq;
	bool ckpt_live, ckpt_broken, ckpt_replay;
	/* a part not in RAM (ckpt_fill), as read; @ckpt_buf holds it */
	const void *ckpt_img;
	void *ckpt_buf;
	bool stale_copy;		/* an overwrite's old copy could not be emptied */
};

struct hc_spill {
	u64 slot, val;
};

/*
 * A field: valid (1 bit) | LRU rank (rank_bits) | tag (tag_bits), and for
 * Log also | pass (4 bits) | log block (32 bits), and with prefetch
 * | group run (8 bits: how many records after this one belong to its group).
 */
#define HC_LOG_FIELD_BITS	36	/* pass + log block */
#define HC_GLEN_BITS		8

static inline bool hc_valid(const struct hc_index *ix, u64 f)
{
	return f & 1;
}

static inline u64 hc_rank(const struct hc_index *ix, u64 f)
{
	return (f >> 1) & ((1ULL << ix->rank_bits) - 1);
}

static inline u64 hc_tag(const struct hc_index *ix, u64 f)
{
	return (f >> (1 + ix->rank_bits)) & ((1ULL << ix->tag_bits) - 1);
}

static inline unsigned int hc_gen_shift(const struct hc_index *ix)
{
	return 1 + ix->rank_bits + ix->tag_bits;
}

static inline u64 hc_gen(const struct hc_index *ix, u64 f)
{
	return (f >> hc_gen_shift(ix)) & 15;
}

static inline u64 hc_off(const struct hc_index *ix, u64 f)
{
	return (f >> (hc_gen_shift(ix) + 4)) & 0xffffffffULL;
}

static inline u64 hc_glen(const struct hc_index *ix, u64 f)
{
	return (f >> (hc_gen_shift(ix) + HC_LOG_FIELD_BITS)) & (BIT_ULL(HC_GLEN_BITS) - 1);
}

static inline u64 hc_mkfield(struct hc_index *ix, u64 tag, u64 rank)
{
	return 1 | rank << 1 | tag << (1 + ix->rank_bits);
}

static inline u64 hc_mkfield_log(struct hc_index *ix, u64 tag, u64 gen, u64 off)
{
	return hc_mkfield(ix, tag, 0) | gen << hc_gen_shift(ix) |
	       off << (hc_gen_shift(ix) + 4);
}

static inline u64 hc_with_rank(struct hc_index *ix, u64 f, u64 rank)
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

static inline u64 hc_short_mask(const struct hc_index *ix)
{
	return (1ULL << hc_gen_shift(ix)) - 1;
}

/* Does the policy keep table slots' fields in RAM? */
static inline bool hc_table_in_ram(const struct hc_index *ix)
{
	return ix->policy == HC_POLICY_SETMEM || ix->policy == HC_POLICY_SETMEMLRU;
}

#define HC_LOG_WBUF_BYTES	SZ_256K
#define HC_REC_TOMB		1	/* slot flags: a tombstone */
#define HC_REC_GEN(fl)		(((fl) >> 8) & 15)

static inline bool hc_is_log(const struct hc_index *ix)
{
	return ix->policy == HC_POLICY_LOG || ix->policy == HC_POLICY_LOGLRU;
}

/* the log block the next appended record takes */
static inline u64 hc_log_end(struct hc_index *ix)
{
	return ix->wbase + ix->wcount;
}

/* a GET or LOOKUP done with @ios device I/Os, @found or not, in the stats */
static inline void hc_count_lookup(struct hc_index *ix, bool found, u64 ios)
{
	ix->st.lookup_ios += ios;
	if (found) {
		ix->st.hits++;
		return;
	}
	ix->st.misses++;
	ix->st.miss_ios += ios;
	if (!ios)
		ix->st.misses_in_ram++;
}

/* where way @way of @set is in the Disk Table */
static inline u64 hc_slot_off(struct hc_index *ix, u64 set, u32 way)
{
	return HC_TABLE_OFFSET + (set * ix->ways + way) * (u64)ix->block_size;
}

static inline u64 hc_max_value(struct hc_index *ix)
{
	return ix->max_value ?: ix->block_size - HC_SLOT_HDR_BYTES;
}

/* Cascade: what an index block read is (hc_ca_iblk_check) */
enum { HC_CA_OK, HC_CA_OTHER, HC_CA_BAD };

/* where a key goes: its super table, home and second block, filter hash */
struct hc_bh_key {
	u32 t, b1, b2;
	u64 fx, fy;
};

/* the policies (hc-table.c, hc-log.c, hc-bufferhash.c, hc-cascade.c), in hc_policies[] */
extern const struct hc_policy_ops hc_table_ops;
extern const struct hc_policy_ops hc_log_ops;
extern const struct hc_policy_ops hc_bh_ops;
extern const struct hc_policy_ops hc_ca_ops;

/* hc-core.c */
int hc_io(struct hc_index *ix, enum req_op op, u64 off, void *buf, size_t len);
int hc_io_batch(struct hc_index *ix, const u64 *offs, u32 n, void *buf, size_t len);
u32 hc_crc_from(u32 seed, const void *p, size_t len, size_t crc_off);
u32 hc_crc(const void *p, size_t len, size_t crc_off);
void *hc_ram_alloc(struct hc_index *ix, u64 bytes);
int hc_ckpt_periodic(struct hc_index *ix);

/* hc-fields.c */
u64 hc_bf_get(const unsigned long *map, u64 idx, unsigned int width);
void hc_bf_set(unsigned long *map, u64 idx, unsigned int width, u64 v);
int hc_oent_find(struct hc_index *ix, u64 set, u32 way);
u64 hc_field(struct hc_index *ix, u64 slot);
void hc_set_field(struct hc_index *ix, u64 slot, u64 v);
void hc_touch(struct hc_index *ix, u64 base, u32 way);
void hc_clear(struct hc_index *ix, u64 base, u32 way);
bool hc_ranks_ok(struct hc_index *ix, u64 set);

/* hc-set.c */
bool hc_slot_valid(struct hc_index *ix, const struct hc_slot_disk *s);
bool hc_slot_torn(struct hc_index *ix, const struct hc_slot_disk *s);
bool hc_shadowed(struct hc_index *ix, const void *set_buf, u32 w);
void hc_fill_slot(struct hc_index *ix, struct hc_slot_disk *s, const u8 *key,
		  u32 klen, const void *val, u64 vlen, u32 group, u16 flags);
void hc_split(struct hc_index *ix, u64 h, u64 *set, u64 *tag);
void hc_hash(struct hc_index *ix, const u8 *key, u32 klen, u64 *set, u64 *tag);
int hc_find(struct hc_index *ix, const u8 *key, u32 klen, u64 set, u64 tag,
	    u32 *way, bool *found, u64 *ios);

/* hc-table.c */
int hc_set_base(struct hc_index *ix, u64 set);

/* hc-bufferhash.c: blocks of records (BufferHash's incarnations, Cascade's slabs) */
#define HC_BH_HDR	sizeof(struct hc_bh_block)
#define HC_BH_REC	sizeof(struct hc_bh_rec)

static inline u32 hc_bh_rec_len(u32 klen, u64 vlen)
{
	return ALIGN(HC_BH_REC + klen + (u32)vlen, 8);
}

void hc_bh_seal(struct hc_bh_block *h);
u32 hc_bh_rec_crc(struct hc_index *ix, u64 gen, const struct hc_bh_rec *r, u32 klen, u32 vlen);
bool hc_bh_block_ok(struct hc_index *ix, const struct hc_bh_block *b, u32 t, u32 s, u64 *gen);
const struct hc_bh_rec *hc_bh_next(struct hc_index *ix, const u8 *blk, u32 *off, bool *torn);

/* hc-log.c */
bool hc_log_live(struct hc_index *ix, u64 f);
int hc_log_read(struct hc_index *ix, u64 off, u64 glen, void *dst);
int hc_fetch(struct hc_index *ix, u64 slot, u64 *loc, bool *ok);
u64 hc_spill_seal(struct hc_index *ix, u64 slot, u64 e);

/*
 * What the KUnit tests (hashcache-test.c) call that is otherwise static to
 * its file, as VISIBLE_IF_KUNIT does (which 6.1 does not have).
 */
#if IS_ENABLED(CONFIG_HASHCACHE_KUNIT_TEST)
#define HC_TESTABLE
void hc_free(struct hc_index *ix);
const struct hc_policy_ops *hc_policy(u32 p);
int hc_frames_alloc(struct hc_index *ix);
u32 hc_probe(struct hc_index *ix, u64 set);
void hc_unhash(struct hc_index *ix, u64 set);
u32 hc_frame_victim(struct hc_index *ix);
u64 hc_glen_max(struct hc_index *ix);
bool hc_spill_entry_ok(struct hc_index *ix, u64 v);
bool hc_spill_entry_valid(struct hc_index *ix, u64 slot, u64 v);
void hc_group_runs(struct hc_index *ix);
void hc_bh_locate(struct hc_index *ix, const u8 *key, u32 klen, struct hc_bh_key *l);
u64 hc_bh_candidates(struct hc_index *ix, const struct hc_bh_key *l);
void hc_bh_filter_add(struct hc_index *ix, const struct hc_bh_key *l, u32 s);
void hc_bh_drop_slot(struct hc_index *ix, u32 t, u32 s);
bool hc_ca_live(u64 cur, u32 nslabs, u32 slab);
bool hc_log_tail_rec(struct hc_index *ix, const struct hc_slot_disk *s, u64 e0, u64 g0,
		     u64 c, u64 d);
int hc_ca_iblk_check(struct hc_index *ix, const void *blk, u32 owner, u64 epoch, u64 seq);
u32 hc_ca_wide(u32 bk, u64 h);
#else
#define HC_TESTABLE static
#endif

#endif /* HC_INT_H */
