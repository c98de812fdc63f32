// SPDX-License-Identifier: GPL-2.0
/*
 * The Cascade Mapping policy (SlickCache, Wang et al., SoCC 2018), for
 * HashCache's objects.
 *
 * Objects are records in slabs (BufferHash's blocks of records), written in
 * a ring: a PUT appends to the open slab in RAM, a full slab is written in
 * one sequential write, and the next slab reuses the oldest's place. Where
 * each key's newest record is - a mapping: its 64-bit hash, the slab's
 * sequence number and the record's byte - lives in one of three tiers:
 *
 *   T1  RAM: a hash table in partitions, each with CLOCK over its entries
 *       (a reference and a dirty bit). A partition full, CLOCK evicts: a
 *       dirty entry goes down to T2, a clean one (its copy is on flash) is
 *       dropped.
 *   T2  flash: per partition, a FIFO ring of index blocks, unindexed. A block
 *       is filled in RAM and written whole. A lookup reads the ring newest
 *       first, in batches of HC_CA_BATCH blocks issued under one plug, and
 *       scans them in RAM. When the ring is full, the oldest block is read
 *       and its entries that are not stale go down to T3.
 *   T3  flash: the paper's dual-mode hash. A narrow active table of
 *       buckets: each fills a block in RAM, written as the newest of the
 *       bucket's list of HC_CA_LIST blocks in place; a lookup walks the
 *       list newest first. A full list is compacted (hc_ca_compact) into the wide
 *       table, HC_CA_WIDE buckets for each active one, whose blocks are the
 *       newest of their bucket's chain (each names the one before it) in one
 *       circular log; a lookup walks the chain of its wide bucket newest
 *       first. When that log comes round, the oldest blocks go, and with
 *       them what the slab ring has mostly made stale.
 *
 * A lookup asks T1, then T2 (RAM block, then ring), then T3 (RAM block,
 * active list, wide chain): a newer mapping of a key is always in a tier
 * asked earlier or earlier in its tier, so the first entry of the key's hash
 * settles it.
 * A hit in T2 or T3 is promoted to T1, clean. The record is read and its
 * key compared in full before anything is returned; a hash that matches
 * another key's record is passed over.
 *
 * Zero-I/O demapping: a mapping whose slab has been reused (sequence number
 * at or below the open slab's minus the slabs) is stale, and neither read
 * nor moved; nothing on flash is ever rewritten to invalidate it. Delete
 * appends a tombstone record, whose mapping shadows older ones the same
 * way.
 *
 * Durability is the Log policy's: the open slab reaches the device at
 * HC_IOC_FLUSH, at detach, at a LOOKUP of a record in it, or when it is
 * full; a block of it is only ever appended to. The index need not be
 * durable. A clean detach checkpoints it (T1, the RAM blocks, the places
 * and seqs of the T2 rings and T3 chains), and a clean attach reads that and
 * the open slab back. So does a periodic checkpoint, every sixteenth of the
 * slab ring (the paper's every N slabs), with a copy of T2's rings: after a
 * crash the attach goes back to it and replays the slabs written since
 * (hc_ca_ckpt_tail). Without one, the attach replays every slab, oldest
 * first, into T1, in a new epoch: T2 and T3 are written afresh, and no
 * index block of an earlier epoch counts; that is O(device), as the other
 * policies' scans. The paper's jump list of Bloom filters is not built: an
 * active list is 8 blocks, and a wide chain some 2.
 *
 * GC: the slab that takes the oldest's place evicts its records, but first
 * copies forward those T1 maps (the paper's hit mode, hc_ca_gc), into at
 * most half of itself; the rest go (space mode). HC_FORMAT_SPACE_GC: all go.
 *
 * Nothing read from the device is used before it is checked: an index
 * block's CRC, format, epoch, owner, place, sequence number and entry
 * count; an entry's slab and byte; the record's block header, CRC and key;
 * every word of a checkpoint (hc_ca_ckpt_load). A check that fails never
 * lets a lookup go on to a tier below, where an older value of the key may
 * be: a record that does not check is a miss, and an index block RAM names
 * that is not there stops the index (EIO) until an attach rebuilds it.
 */

#include <linux/crc32c.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "hc-int.h"

#define HC_CA_DEF_SLAB		SZ_1M		/* Fatcache's slab */
#define HC_CA_MAX_SLAB		SZ_1M		/* one write, one buffer in RAM */
#define HC_CA_MAX_PARTS		32		/* the paper's partitions */
#define HC_CA_MAX_BUCKETS	1024		/* the paper's active table, by default */
#define HC_CA_MAX_SETS		BIT(20)		/* active buckets at most */
#define HC_CA_BATCH		8		/* T2 blocks read at once */
#define HC_CA_OBJ		512		/* bytes an object, for sizes */
#define HC_CA_IHDR		sizeof(struct hc_ca_iblk)
#define HC_CA_ENT		sizeof(struct hc_ca_ent)

/* a T1 entry's flags */
#define HC_CA_USED	1
#define HC_CA_REF	2
#define HC_CA_DIRTY	4

struct hc_ca_t1 {
	u64 hash;
	u32 slab, loc;		/* as struct hc_ca_ent */
	u32 next;		/* the next entry in its hash chain, + 1; 0: none */
	u32 flags;
};

struct hc_ca {
	u32 parts, depth, epb;		/* partitions, T2 blocks each, entries a block */
	u32 t1_per;			/* T1 entries (and hash chains) a partition */
	u32 nslabs, slab_bytes, nblk;
	u32 buckets, w_blocks, w_head;	/* T3: active buckets; the wide log's blocks, head */
	u64 t3_off, w_off;		/* the active table, the wide log (T2: HC_TABLE_OFFSET) */
	u64 cur;			/* the open slab's sequence number */
	u32 wblk, fblk;			/* open slab: first block not written whole; last */
	bool dirty;			/* open slab: records not yet written */
	u64 epoch;			/* index blocks count if of this epoch, */
	u64 iseq;			/* and their seq is at most this */
	bool broken;			/* an index block RAM names did not check: EIO */
	u32 since;			/* slabs opened since the last periodic checkpoint */
	struct hc_ca_t1 *t1;		/* parts x t1_per */
	u32 *t1_head;			/* parts x t1_per: first entry + 1 */
	u32 *t1_free, *t1_hand;		/* parts: free list (entry + 1), CLOCK hand */
	u8 *slab;			/* the open slab */
	/* RAM blocks: each partition's next T2 block, then each bucket's next T3 block */
	u8 *pend, *t2_pend, *t3_pend;
	/* one array (the checkpoint's third part), in these pieces: */
	u64 *meta;
	u64 *t2_seq;			/* parts x depth: each place's block, 0: none */
	u64 *a_seq;			/* buckets x HC_CA_LIST: hc_ca_alist */
	/*
	 * parts: the place the next block goes to; a checkpoint's also has the
	 * partition's CLOCK hand in the upper 32 bits (hc_ca_ckpt_save)
	 */
	u64 *t2_head;
	u64 *w_place;			/* wide buckets: the newest block's place */
	u64 *w_seq;			/* its seq, 0: none */
	u64 *recs;			/* nslabs: records in each slab place */
	size_t meta_len, pend_len, t1_len;	/* bytes */
	u8 *batch;			/* HC_CA_BATCH blocks read */
	u8 *cbuf;			/* compaction: an active list read whole, */
	u8 *obuf;			/* and a wide block being filled */
	unsigned long *dropped;		/* buckets: dropped since their last compaction */
};

/* what a lookup found: the tier (0: nothing), the record, its place */
struct hc_ca_res {
	u32 tier;
	bool dead;			/* a tombstone or a stale mapping: a miss */
	u32 slab, loc;
	const struct hc_bh_rec *r;
	u64 dev_off;			/* of the record */
};

static struct hc_ca *hc_ca(struct hc_index *ix)
{
	return ix->priv;
}

static u32 hc_ca_part(struct hc_ca *ca, u64 h)
{
	return (u32)(h >> 40) % ca->parts;
}

static u32 hc_ca_bucket(struct hc_ca *ca, u64 h)
{
	return (u32)(h >> 8) % ca->buckets;
}

/* Is a mapping into the slab of sequence number low 32 bits @slab live? */
HC_TESTABLE bool hc_ca_live(u64 cur, u32 nslabs, u32 slab)
{
	u32 d = (u32)cur - slab;

	return d < nslabs && d < cur;
}

/* the whole sequence number of a live mapping's slab */
static u64 hc_ca_seq(struct hc_ca *ca, u32 slab)
{
	return ca->cur - (u32)((u32)ca->cur - slab);
}

/* the place in the ring of the slab of sequence number @seq */
static u32 hc_ca_place(struct hc_ca *ca, u64 seq)
{
	u32 place;

	div_u64_rem(seq, ca->nslabs, &place);
	return place;
}

static u64 hc_ca_slab_off(struct hc_index *ix, u64 seq)
{
	struct hc_ca *ca = hc_ca(ix);

	return ix->log_off + (u64)hc_ca_place(ca, seq) * ca->slab_bytes;
}

/* ---------------------------------------------------------------------
 * Index blocks
 */

static u32 hc_ca_iblk_crc(struct hc_index *ix, const void *blk)
{
	return hc_crc(blk, ix->block_size, offsetof(struct hc_ca_iblk, crc));
}

static void hc_ca_iblk_init(struct hc_index *ix, void *blk, u32 owner)
{
	struct hc_ca_iblk *b = blk;

	memset(blk, 0, ix->block_size);
	b->magic = cpu_to_le32(HC_CA_IBLK_MAGIC);
	b->format_id = cpu_to_le64(ix->format_id);
	b->epoch = cpu_to_le64(hc_ca(ix)->epoch);
	b->owner = cpu_to_le32(owner);
}

/*
 * Is @blk the block of @owner written in epoch @epoch at sequence number
 * @seq (HC_CA_OK)? If not: another block this index wrote in that epoch
 * (HC_CA_OTHER: the place was written again since), or a block no index
 * wrote in it (HC_CA_BAD: the device changed under the index). The
 * entries are checked one by one where they are used.
 */

HC_TESTABLE int hc_ca_iblk_check(struct hc_index *ix, const void *blk, u32 owner, u64 epoch,
				 u64 seq)
{
	const struct hc_ca_iblk *b = blk;
	u32 epb = (ix->block_size - HC_CA_IHDR) / HC_CA_ENT;

	/* (flags only on a wide block) */
	if (le32_to_cpu(b->magic) != HC_CA_IBLK_MAGIC ||
	    le64_to_cpu(b->format_id) != ix->format_id || le64_to_cpu(b->epoch) != epoch ||
	    le32_to_cpu(b->count) > epb ||
	    (b->flags && ((le32_to_cpu(b->flags) & ~HC_CA_FLAGS) ||
			  !(le32_to_cpu(b->owner) & HC_CA_WIDE_OWNER))) ||
	    le32_to_cpu(b->crc) != hc_ca_iblk_crc(ix, blk))
		return HC_CA_BAD;
	return le64_to_cpu(b->seq) == seq && le32_to_cpu(b->owner) == owner ? HC_CA_OK :
	       HC_CA_OTHER;
}

/*
 * An index block RAM names is not there: mappings newer than what the
 * tiers below hold may be lost, so no lookup can be answered (an older value
 * could come up) until an attach rebuilds the index from the slabs. The
 * slabs are sound: FLUSH and detach still write them, and detach writes no
 * checkpoint.
 */
static int hc_ca_broken(struct hc_index *ix, const char *what)
{
	if (!hc_ca(ix)->broken)
		pr_warn("hashcache: %pg: a %s index block is not what the index wrote there: lookups fail (EIO) until the next attach rebuilds the index\n",
			ix->bdev, what);
	hc_ca(ix)->broken = true;
	ix->write_failed = true;
	ix->st.bad_entries++;
	return -EIO;
}

static struct hc_ca_ent *hc_ca_ents(void *blk)
{
	return blk + HC_CA_IHDR;
}

/* write the RAM block @blk at @off, numbered and sealed; its seq */
static int hc_ca_iblk_write(struct hc_index *ix, void *blk, u64 off, u64 *seq)
{
	struct hc_ca_iblk *b = blk;
	int r;

	b->seq = cpu_to_le64(hc_ca(ix)->iseq + 1);
	b->crc = 0;
	b->crc = cpu_to_le32(hc_ca_iblk_crc(ix, blk));
	r = hc_io(ix, REQ_OP_WRITE, off, blk, ix->block_size);
	if (r)
		return r;
	*seq = ++hc_ca(ix)->iseq;
	return 0;
}

/*
 * An attach's index blocks are numbered from its superblock's seq up (in the
 * upper 32 bits): none has the seq of a block an earlier attach wrote and a
 * crash lost, so that hc_ca_wide_forward never takes one of those for its own
 * (a superblock seq past 2^29, which no index reaches, only keeps counting)
 */
static void hc_ca_session(struct hc_index *ix)
{
	struct hc_ca *ca = hc_ca(ix);

	if (ix->sb_seq < BIT_ULL(29))
		ca->iseq = max(ca->iseq, ix->sb_seq << 32);
}

static int hc_ca_slab_write(struct hc_index *ix);

/* ---------------------------------------------------------------------
 * T3: an active table of short lists, compacted into a wide table of chains
 */

static u8 *hc_ca_t3_buf(struct hc_index *ix, u32 b)
{
	return hc_ca(ix)->t3_pend + (size_t)b * ix->block_size;
}

/* bucket @bk's active list: each block's seq, oldest first, 0 past the last */
static u64 *hc_ca_alist(struct hc_ca *ca, u32 bk)
{
	return &ca->a_seq[(size_t)bk * HC_CA_LIST];
}

static u32 hc_ca_alist_len(struct hc_ca *ca, u32 bk)
{
	const u64 *as = hc_ca_alist(ca, bk);
	u32 n = 0;

	while (n < HC_CA_LIST && as[n])
		n++;
	return n;
}

static u64 hc_ca_alist_off(struct hc_index *ix, u32 bk, u32 i)
{
	return hc_ca(ix)->t3_off + ((u64)bk * HC_CA_LIST + i) * ix->block_size;
}

/* the wide bucket of hash @h (in its active bucket @bk's range) */
HC_TESTABLE u32 hc_ca_wide(u32 bk, u64 h)
{
	return bk * HC_CA_WIDE + (u32)(h >> 48) % HC_CA_WIDE;
}

/*
 * Bucket @bk's list names a block that is not there, though one the index
 * wrote is (a crash rolled RAM back to a checkpoint, and the list has been
 * compacted and written again since). Its mappings may be newer than what
 * the wide buckets of its range hold: those go too, so that no lookup finds
 * an older mapping below a lost one. Misses, never an older value.
 */
static void hc_ca_drop(struct hc_index *ix, u32 bk)
{
	struct hc_ca *ca = hc_ca(ix);

	memset(hc_ca_alist(ca, bk), 0, HC_CA_LIST * sizeof(u64));
	memset(&ca->w_seq[(size_t)bk * HC_CA_WIDE], 0, HC_CA_WIDE * sizeof(u64));
	/* (the next compaction says so: hc_ca_wide_forward drops them too) */
	__set_bit(bk, ca->dropped);
	ix->st.t3_drops++;
}

/*
 * write the wide block in ca->obuf as the newest of wide bucket @wb's chain
 * (@flags: HC_CA_END on the compaction's last; *@flags is 0 after the first)
 */
static int hc_ca_wide_write(struct hc_index *ix, u32 wb, u32 *flags, bool end)
{
	struct hc_ca *ca = hc_ca(ix);
	struct hc_ca_iblk *b = (void *)ca->obuf;
	u64 seq;
	int r;

	b->prev = cpu_to_le32(ca->w_place[wb]);
	b->prev_seq = cpu_to_le64(ca->w_seq[wb]);
	b->flags = cpu_to_le32(*flags | (end ? HC_CA_END : 0));
	*flags = 0;
	r = hc_ca_iblk_write(ix, b, ca->w_off + (u64)ca->w_head * ix->block_size, &seq);
	if (r)
		return r;
	ca->w_place[wb] = ca->w_head;
	ca->w_seq[wb] = seq;
	ca->w_head = (ca->w_head + 1) % ca->w_blocks;
	return 0;
}

/* the live entries of the list in ca->cbuf (@n blocks) of wide bucket @wb, into its chain */
static int hc_ca_compact_one(struct hc_index *ix, u32 n, u32 wb, u32 *flags, bool end)
{
	struct hc_ca *ca = hc_ca(ix);
	struct hc_ca_iblk *ob = (void *)ca->obuf;
	u32 owner = HC_CA_T3_OWNER | HC_CA_WIDE_OWNER | wb, i, k, c = 0;
	int r;

	hc_ca_iblk_init(ix, ob, owner);
	for (i = 0; i < n; i++) {
		const void *blk = ca->cbuf + (size_t)i * ix->block_size;
		const struct hc_ca_ent *e = hc_ca_ents((void *)blk);
		u32 cnt = le32_to_cpu(((const struct hc_ca_iblk *)blk)->count);

		for (k = 0; k < cnt; k++) {
			if (hc_ca_wide(wb / HC_CA_WIDE, le64_to_cpu(e[k].hash)) != wb ||
			    !hc_ca_live(ca->cur, ca->nslabs, le32_to_cpu(e[k].slab)))
				continue;
			if (c == ca->epb) {
				ob->count = cpu_to_le32(c);
				r = hc_ca_wide_write(ix, wb, flags, false);
				if (r)
					return r;
				hc_ca_iblk_init(ix, ob, owner);
				c = 0;
			}
			hc_ca_ents(ob)[c++] = e[k];
		}
	}
	ob->count = cpu_to_le32(c);
	return hc_ca_wide_write(ix, wb, flags, end);
}

/*
 * Compaction (the paper's dual-mode mapping): bucket @bk's active list, full,
 * is read whole and its live entries go into the wide table, wide bucket by
 * wide bucket, in the order they were made (a block's newest entry last),
 * each run as the newest blocks of that bucket's chain: older than nothing
 * left in the active table, newer than everything the chain had. Then the
 * list is empty. Stale entries go (zero-I/O demapping does T3's GC here).
 * The first block written is marked HC_CA_BEGIN (and HC_CA_DROP after a
 * drop), the last HC_CA_END (one empty block if nothing was live), so that a
 * recovery after a crash can tell a whole compaction (hc_ca_wide_forward);
 * and the open slab is written first, so that every mapping the wide table
 * takes names a record on the device. An error leaves the list as it was:
 * what went into the wide table twice is the same mapping, and the list,
 * asked first, still has it.
 */
static int hc_ca_compact(struct hc_index *ix, u32 bk)
{
	struct hc_ca *ca = hc_ca(ix);
	u64 *as = hc_ca_alist(ca, bk), offs[HC_CA_LIST];
	u32 n = hc_ca_alist_len(ca, bk), i, k, w, last = 0, live[HC_CA_WIDE] = {}, flags;
	int r;

	r = hc_ca_slab_write(ix);
	if (r)
		return r;
	for (i = 0; i < n; i++)
		offs[i] = hc_ca_alist_off(ix, bk, i);
	r = hc_io_batch(ix, offs, n, ca->cbuf, ix->block_size);
	if (r)
		return r;
	for (i = 0; i < n; i++) {
		const void *blk = ca->cbuf + (size_t)i * ix->block_size;
		const struct hc_ca_ent *e = hc_ca_ents((void *)blk);
		u32 cnt;

		switch (hc_ca_iblk_check(ix, blk, HC_CA_T3_OWNER | bk, ca->epoch, as[i])) {
		case HC_CA_OTHER:
			hc_ca_drop(ix, bk);
			return 0;
		case HC_CA_BAD:
			return hc_ca_broken(ix, "T3");
		}
		cnt = le32_to_cpu(((const struct hc_ca_iblk *)blk)->count);
		for (k = 0; k < cnt; k++) {
			u64 h = le64_to_cpu(e[k].hash);

			if (hc_ca_bucket(ca, h) != bk)
				return hc_ca_broken(ix, "T3");
			if (hc_ca_live(ca->cur, ca->nslabs, le32_to_cpu(e[k].slab)))
				live[hc_ca_wide(bk, h) % HC_CA_WIDE]++;
		}
	}
	for (w = 0; w < HC_CA_WIDE; w++)
		if (live[w])
			last = w;
	flags = HC_CA_BEGIN | (test_bit(bk, ca->dropped) ? HC_CA_DROP : 0);
	for (w = 0; w <= last; w++) {
		if (!live[w] && w != last)
			continue;
		r = hc_ca_compact_one(ix, n, bk * HC_CA_WIDE + w, &flags, w == last);
		if (r)
			return r;
	}
	memset(as, 0, HC_CA_LIST * sizeof(u64));
	__clear_bit(bk, ca->dropped);
	ix->st.compactions++;
	return 0;
}

/* write bucket @bk's RAM block as the newest of its active list (full: compacted first) */
static int hc_ca_t3_write(struct hc_index *ix, u32 bk)
{
	struct hc_ca *ca = hc_ca(ix);
	struct hc_ca_iblk *b = (void *)hc_ca_t3_buf(ix, bk);
	u32 n = hc_ca_alist_len(ca, bk);
	u64 seq;
	int r;

	if (n == HC_CA_LIST) {
		r = hc_ca_compact(ix, bk);
		if (r)
			return r;
		n = hc_ca_alist_len(ca, bk);
	}
	r = hc_ca_iblk_write(ix, b, hc_ca_alist_off(ix, bk, n), &seq);
	if (r)
		return r;
	hc_ca_alist(ca, bk)[n] = seq;
	hc_ca_iblk_init(ix, b, HC_CA_T3_OWNER | bk);
	return 0;
}

static int hc_ca_t3_add(struct hc_index *ix, const struct hc_ca_ent *e)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 bk = hc_ca_bucket(ca, le64_to_cpu(e->hash));
	struct hc_ca_iblk *b = (void *)hc_ca_t3_buf(ix, bk);
	u32 n = le32_to_cpu(b->count);
	int r;

	if (n == ca->epb) {
		r = hc_ca_t3_write(ix, bk);
		if (r)
			return r;
		n = 0;
	}
	hc_ca_ents(b)[n] = *e;
	b->count = cpu_to_le32(n + 1);
	return 0;
}

/* ---------------------------------------------------------------------
 * T2: a FIFO of blocks a partition
 */

static u8 *hc_ca_t2_buf(struct hc_index *ix, u32 p)
{
	return hc_ca(ix)->t2_pend + (size_t)p * ix->block_size;
}

static u64 hc_ca_t2_off(struct hc_index *ix, u32 p, u32 place)
{
	struct hc_ca *ca = hc_ca(ix);

	return HC_TABLE_OFFSET + ((u64)p * ca->depth + place) * ix->block_size;
}

/*
 * Write partition @p's RAM block into its ring. The ring full, its oldest
 * block is read first and what of it is not stale goes down to T3.
 */
static int hc_ca_t2_write(struct hc_index *ix, u32 p)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 place = (u32)ca->t2_head[p], i, n;
	u64 *sq = &ca->t2_seq[(size_t)p * ca->depth + place], seq;
	int r;

	if (*sq) {
		void *old = ca->batch;

		r = hc_io(ix, REQ_OP_READ, hc_ca_t2_off(ix, p, place), old, ix->block_size);
		if (r)
			return r;
		if (hc_ca_iblk_check(ix, old, p, ca->epoch, *sq) != HC_CA_OK)
			return hc_ca_broken(ix, "T2");
		n = le32_to_cpu(((struct hc_ca_iblk *)old)->count);
		for (i = 0; i < n; i++) {
			const struct hc_ca_ent *e = &hc_ca_ents(old)[i];

			if (!hc_ca_live(ca->cur, ca->nslabs, le32_to_cpu(e->slab)))
				continue;
			if (hc_ca_part(ca, le64_to_cpu(e->hash)) != p)
				return hc_ca_broken(ix, "T2");
			r = hc_ca_t3_add(ix, e);
			if (r)
				return r;
		}
		*sq = 0;
	}
	r = hc_ca_iblk_write(ix, hc_ca_t2_buf(ix, p), hc_ca_t2_off(ix, p, place), &seq);
	if (r)
		return r;
	*sq = seq;
	ca->t2_head[p] = (place + 1) % ca->depth;
	hc_ca_iblk_init(ix, hc_ca_t2_buf(ix, p), p);
	return 0;
}

/* an entry demoted from T1 into partition @p's RAM block */
static int hc_ca_t2_add(struct hc_index *ix, u32 p, const struct hc_ca_t1 *t)
{
	struct hc_ca *ca = hc_ca(ix);
	struct hc_ca_iblk *b = (void *)hc_ca_t2_buf(ix, p);
	struct hc_ca_ent *e;
	u32 n = le32_to_cpu(b->count);
	int r;

	if (n == ca->epb) {
		r = hc_ca_t2_write(ix, p);
		if (r)
			return r;
		n = 0;
	}
	e = &hc_ca_ents(b)[n];
	e->hash = cpu_to_le64(t->hash);
	e->slab = cpu_to_le32(t->slab);
	e->loc = cpu_to_le32(t->loc);
	b->count = cpu_to_le32(n + 1);
	return 0;
}

/* ---------------------------------------------------------------------
 * T1: CLOCK in RAM
 */

static u32 *hc_ca_t1_chain(struct hc_ca *ca, u32 p, u64 h)
{
	return &ca->t1_head[(size_t)p * ca->t1_per + (u32)h % ca->t1_per];
}

static struct hc_ca_t1 *hc_ca_t1_find(struct hc_ca *ca, u32 p, u64 h)
{
	u32 i = *hc_ca_t1_chain(ca, p, h);

	while (i) {
		struct hc_ca_t1 *t = &ca->t1[i - 1];

		if (t->hash == h)
			return t;
		i = t->next;
	}
	return NULL;
}

static void hc_ca_t1_unlink(struct hc_ca *ca, u32 p, struct hc_ca_t1 *t)
{
	u32 *link = hc_ca_t1_chain(ca, p, t->hash), me = t - ca->t1 + 1;

	while (*link && *link != me)
		link = &ca->t1[*link - 1].next;
	if (*link)
		*link = t->next;
	t->flags = 0;
	t->next = ca->t1_free[p];
	ca->t1_free[p] = me;
}

/*
 * A free entry in partition @p: off the free list, or the one CLOCK evicts
 * (a dirty one goes down to T2 first: an error there evicts nothing).
 */
static int hc_ca_t1_room(struct hc_index *ix, u32 p)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 base = p * ca->t1_per, n;
	int r;

	if (ca->t1_free[p])
		return 0;
	for (n = 0; n <= 2 * ca->t1_per; n++) {
		struct hc_ca_t1 *t = &ca->t1[base + ca->t1_hand[p]];

		ca->t1_hand[p] = (ca->t1_hand[p] + 1) % ca->t1_per;
		if (!hc_ca_live(ca->cur, ca->nslabs, t->slab)) {
			hc_ca_t1_unlink(ca, p, t);
			return 0;
		}
		if (t->flags & HC_CA_REF) {
			t->flags &= ~HC_CA_REF;
			continue;
		}
		if (t->flags & HC_CA_DIRTY) {
			r = hc_ca_t2_add(ix, p, t);
			if (r)
				return r;
		}
		hc_ca_t1_unlink(ca, p, t);
		return 0;
	}
	WARN_ON_ONCE(1);	/* (every entry is in use: CLOCK's second round finds one) */
	return -EIO;
}

/* @h maps to @slab, @loc now (hc_ca_t1_room made room) */
static void hc_ca_t1_set(struct hc_index *ix, u64 h, u32 slab, u32 loc, bool dirty)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 p = hc_ca_part(ca, h), *chain;
	struct hc_ca_t1 *t = hc_ca_t1_find(ca, p, h);

	if (!t) {
		if (WARN_ON_ONCE(!ca->t1_free[p]))
			return;
		t = &ca->t1[ca->t1_free[p] - 1];
		ca->t1_free[p] = t->next;
		chain = hc_ca_t1_chain(ca, p, h);
		t->hash = h;
		t->next = *chain;
		*chain = t - ca->t1 + 1;
		t->flags = HC_CA_USED;
	}
	t->slab = slab;
	t->loc = loc;
	t->flags |= HC_CA_REF | (dirty ? HC_CA_DIRTY : 0);
}

/* ---------------------------------------------------------------------
 * Slabs
 */

static struct hc_bh_block *hc_ca_sblk(struct hc_index *ix, u32 b)
{
	return (void *)(hc_ca(ix)->slab + (size_t)b * ix->block_size);
}

/* block @b of the open slab, empty, for the slab of sequence number @seq */
static void hc_ca_sblk_init(struct hc_index *ix, u32 b, u64 seq)
{
	struct hc_bh_block *h = hc_ca_sblk(ix, b);

	memset(h, 0, ix->block_size);
	h->magic = cpu_to_le32(HC_BH_BLOCK_MAGIC);
	h->format_id = cpu_to_le64(ix->format_id);
	h->gen = cpu_to_le64(seq);
	h->table = cpu_to_le32(hc_ca_place(hc_ca(ix), seq));
	h->slot = cpu_to_le16(b);
}

/* the open slab, a new one of sequence number @seq, at its place in the ring */
static void hc_ca_slab_open(struct hc_index *ix, u64 seq)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 place = hc_ca_place(ca, seq), b;

	for (b = 0; b < ca->nblk; b++)
		hc_ca_sblk_init(ix, b, seq);
	ca->cur = seq;
	ca->wblk = 0;
	ca->fblk = 0;
	ca->dirty = false;
	/* (what the place held is gone: its mappings are stale from now on) */
	ix->st.evictions += ca->recs[place];
	ca->recs[place] = 0;
}

/* write the open slab's blocks not yet written whole, in one write */
static int hc_ca_slab_write(struct hc_index *ix)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 b;
	int r;

	if (!ca->dirty)
		return 0;
	/* (the replay after the last checkpoint reads at most half the ring past it) */
	if (ix->ckpt_broken)
		return -EIO;
	for (b = ca->wblk; b <= ca->fblk; b++)
		hc_bh_seal(hc_ca_sblk(ix, b));
	r = hc_io(ix, REQ_OP_WRITE, hc_ca_slab_off(ix, ca->cur) + (u64)ca->wblk * ix->block_size,
		  hc_ca_sblk(ix, ca->wblk), (size_t)(ca->fblk - ca->wblk + 1) * ix->block_size);
	if (r)
		return r;
	ca->wblk = ca->fblk;
	ca->dirty = false;
	return 0;
}

static void hc_ca_gc(struct hc_index *ix);

/* the block of the open slab a record of @len bytes goes to: fblk or the one after */
static u32 hc_ca_rec_blk(struct hc_index *ix, u32 len)
{
	struct hc_ca *ca = hc_ca(ix);

	return le32_to_cpu(hc_ca_sblk(ix, ca->fblk)->used) + len > ix->block_size - HC_BH_HDR ?
	       ca->fblk + 1 : ca->fblk;
}

/* append a record to the open slab (a full one written, the next opened); its place */
static int hc_ca_append(struct hc_index *ix, const u8 *key, u32 klen, const void *val,
			u64 vlen, bool tomb, u32 *slab, u32 *loc)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 len = hc_bh_rec_len(klen, vlen), used;
	struct hc_bh_block *h;
	struct hc_bh_rec *rec;
	int r;

	if (hc_ca_rec_blk(ix, len) == ca->nblk) {
		r = hc_ca_slab_write(ix);
		if (r)
			return r;
		hc_ca_slab_open(ix, ca->cur + 1);
		ix->st.log_wraps += !(hc_ca_place(ca, ca->cur));
		/*
		 * every ckpt_every slabs, one to recover from (hc_ca_ckpt_tail),
		 * while the new slab is empty; one that can neither be written
		 * nor voided fails the next slab write
		 */
		if (ix->ckpt_every && ++ca->since >= ix->ckpt_every) {
			ca->since = 0;
			hc_ckpt_periodic(ix);
		}
		hc_ca_gc(ix);
	}
	ca->fblk = hc_ca_rec_blk(ix, len);
	h = hc_ca_sblk(ix, ca->fblk);
	used = le32_to_cpu(h->used);
	rec = (void *)((u8 *)h + HC_BH_HDR + used);
	memset(rec, 0, len);
	rec->key_len = cpu_to_le16(klen);
	rec->flags = cpu_to_le16(tomb ? HC_BH_TOMB : 0);
	rec->value_len = cpu_to_le32(vlen);
	rec->seq = cpu_to_le64(++ix->wseq);
	memcpy(rec + 1, key, klen);
	if (vlen)
		memcpy((u8 *)(rec + 1) + klen, val, vlen);
	rec->crc = cpu_to_le32(hc_bh_rec_crc(ix, ca->cur, rec, klen, vlen));
	h->used = cpu_to_le32(used + len);
	ca->dirty = true;
	ca->recs[hc_ca_place(ca, ca->cur)]++;
	*slab = (u32)ca->cur;
	*loc = ca->fblk * ix->block_size + HC_BH_HDR + used;
	return 0;
}

/* copy @rec, at @loc of slab @victim, forward if T1 maps it; false: no room left */
static bool hc_ca_gc_rec(struct hc_index *ix, u64 victim, const struct hc_bh_rec *rec, u32 loc,
			 u32 *copied)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 klen = le16_to_cpu(rec->key_len), vlen = le32_to_cpu(rec->value_len), slab, nloc;
	const u8 *key = (const u8 *)(rec + 1);
	u64 h = siphash(key, klen, &ix->hkey);
	struct hc_ca_t1 *t = hc_ca_t1_find(ca, hc_ca_part(ca, h), h);

	if (!t || t->slab != (u32)victim || t->loc != loc)
		return true;
	if (hc_ca_rec_blk(ix, hc_bh_rec_len(klen, vlen)) >= max(ca->nblk / 2, 1U) ||
	    hc_ca_append(ix, key, klen, key + klen, vlen, false, &slab, &nloc))
		return false;
	t->slab = slab;
	t->loc = nloc;
	t->flags |= HC_CA_DIRTY;
	(*copied)++;
	return true;
}

/*
 * GC's hit mode (the paper's hit-ratio-oriented eviction), as the slab just
 * opened takes the oldest's place: the records there that T1 maps are hot (a
 * put or a lookup put them in T1, and T1 maps only a key's newest record), so
 * they are copied forward into the new slab and T1 maps the copies (dirty:
 * no tier below has them). Deleted and overwritten records are not T1's, and
 * go; so do tombstones (every older record of their key is gone already).
 * The copies fill at most half the new slab, which keeps the other half for
 * new records, the role of the paper's low watermark; what does not fit goes
 * as in space mode. The old slab is read from its place, which the new one
 * reaches only when written: a crash before that finds it there, one after
 * finds the copies (a write the crash tore may keep neither: evicted, as in
 * space mode). A read that fails copies no more (the rest go, as in space
 * mode; the next write there will tell).
 */
static void hc_ca_gc(struct hc_index *ix)
{
	struct hc_ca *ca = hc_ca(ix);
	u64 victim = ca->cur - ca->nslabs, gen;
	u32 place = hc_ca_place(ca, ca->cur), b, k, n, off, loc, copied = 0;
	const struct hc_bh_rec *rec;

	if ((ix->flags & HC_FORMAT_SPACE_GC) || ca->cur <= ca->nslabs)
		return;
	for (b = 0; b < ca->nblk; b += n) {
		n = min_t(u32, HC_CA_BATCH, ca->nblk - b);
		if (hc_io(ix, REQ_OP_READ, hc_ca_slab_off(ix, victim) + (u64)b * ix->block_size,
			  ca->batch, (size_t)n * ix->block_size))
			goto out;
		for (k = 0; k < n; k++) {
			const u8 *blk = ca->batch + (size_t)k * ix->block_size;
			bool torn = false;

			if (!hc_bh_block_ok(ix, (const void *)blk, place, b + k, &gen) ||
			    gen != victim)
				continue;
			off = HC_BH_HDR;
			for (;;) {
				loc = (b + k) * ix->block_size + off;
				rec = hc_bh_next(ix, blk, &off, &torn);
				if (!rec)
					break;
				if (!hc_ca_gc_rec(ix, victim, rec, loc, &copied))
					goto out;
			}
		}
	}
out:
	/* (hc_ca_slab_open counted every record of the place as evicted) */
	ix->st.evictions -= copied;
	ix->st.overwrites += copied;
}

/*
 * The record a live mapping names, checked (NULL: none there - a crash tore
 * it, or the device was written under the index). From the open slab, or
 * one block read into ix->buf.
 */
static int hc_ca_record(struct hc_index *ix, u32 slab, u32 loc, const struct hc_bh_rec **out,
			u64 *dev_off)
{
	struct hc_ca *ca = hc_ca(ix);
	u64 seq = hc_ca_seq(ca, slab), gen;
	u32 b = loc / ix->block_size, off = loc % ix->block_size;
	const u8 *blk;
	bool torn = false;
	int r;

	*out = NULL;
	if (b >= ca->nblk || off < HC_BH_HDR || !IS_ALIGNED(off, 8))
		return 0;
	*dev_off = hc_ca_slab_off(ix, seq) + loc;
	if (seq == ca->cur) {
		blk = (u8 *)hc_ca_sblk(ix, b);
	} else {
		r = hc_io(ix, REQ_OP_READ, hc_ca_slab_off(ix, seq) + (u64)b * ix->block_size,
			  ix->buf, ix->block_size);
		if (r)
			return r;
		blk = ix->buf;
		if (!hc_bh_block_ok(ix, ix->buf, hc_ca_place(ca, seq), b, &gen) || gen != seq)
			return 0;
	}
	*out = hc_bh_next(ix, blk, &off, &torn);
	return 0;
}

/*
 * Does the mapping @slab, @loc settle @key's lookup (1), or is it another
 * key's (0)? Stale and tombstone mappings settle it as a miss.
 */
static int hc_ca_try(struct hc_index *ix, const u8 *key, u32 klen, u32 slab, u32 loc,
		     u32 tier, struct hc_ca_res *res)
{
	struct hc_ca *ca = hc_ca(ix);
	const struct hc_bh_rec *r;
	int err;

	res->tier = tier;
	res->slab = slab;
	res->loc = loc;
	res->r = NULL;
	res->dead = true;
	if (!hc_ca_live(ca->cur, ca->nslabs, slab) || (loc & HC_CA_TOMB))
		return 1;
	err = hc_ca_record(ix, slab, loc, &r, &res->dev_off);
	if (err)
		return err;
	/*
	 * The key's newest mapping names no record that checks (the device
	 * changed under the index): a miss, never an older value below it
	 */
	if (!r) {
		ix->st.bad_entries++;
		return 1;
	}
	if (le16_to_cpu(r->key_len) != klen || memcmp(r + 1, key, klen)) {
		ix->st.false_positives++;
		res->tier = 0;
		return 0;
	}
	res->dead = le16_to_cpu(r->flags) & HC_BH_TOMB;
	res->r = r;
	return 1;
}

/* the newest entry of hash @h in the checked index block @blk, from its end */
static int hc_ca_scan(struct hc_index *ix, const void *blk, u64 h, const u8 *key, u32 klen,
		      u32 tier, struct hc_ca_res *res)
{
	const struct hc_ca_ent *e = hc_ca_ents((void *)blk);
	u32 n = le32_to_cpu(((const struct hc_ca_iblk *)blk)->count);
	int r;

	while (n--) {
		if (le64_to_cpu(e[n].hash) != h)
			continue;
		r = hc_ca_try(ix, key, klen, le32_to_cpu(e[n].slab), le32_to_cpu(e[n].loc), tier,
			      res);
		if (r)
			return r;
	}
	return 0;
}

/* partition @p's ring, newest first, HC_CA_BATCH blocks a read */
static int hc_ca_find_t2(struct hc_index *ix, u32 p, u64 h, const u8 *key, u32 klen,
			 struct hc_ca_res *res)
{
	struct hc_ca *ca = hc_ca(ix);
	u64 offs[HC_CA_BATCH], want[HC_CA_BATCH];
	u32 i = 0, n, k;
	int r;

	while (i < ca->depth) {
		for (n = 0; n < HC_CA_BATCH && i < ca->depth; i++) {
			u32 place = ((u32)ca->t2_head[p] + ca->depth - 1 - i) % ca->depth;
			u64 sq = ca->t2_seq[(size_t)p * ca->depth + place];

			if (!sq) {
				i = ca->depth;	/* the ring has no older block */
				break;
			}
			offs[n] = hc_ca_t2_off(ix, p, place);
			want[n++] = sq;
		}
		if (!n)
			return 0;
		r = hc_io_batch(ix, offs, n, ca->batch, ix->block_size);
		ix->st.tier_reads[1] += n;
		if (r)
			return r;
		for (k = 0; k < n; k++) {
			const void *blk = ca->batch + (size_t)k * ix->block_size;

			if (hc_ca_iblk_check(ix, blk, p, ca->epoch, want[k]) != HC_CA_OK)
				return hc_ca_broken(ix, "T2");
			r = hc_ca_scan(ix, blk, h, key, klen, 2, res);
			if (r)
				return r;
		}
	}
	return 0;
}

/*
 * Bucket @bk's active list, then the chain of the wide bucket of @h in its
 * range, each newest first, a block at a time (a hit stops the walk: the
 * paper's T3 walk, where T2 reads its batch)
 */
static int hc_ca_find_t3(struct hc_index *ix, u32 bk, u64 h, const u8 *key, u32 klen,
			 struct hc_ca_res *res)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 n = hc_ca_alist_len(ca, bk), wb = hc_ca_wide(bk, h), place, steps;
	void *blk = ca->batch;
	u64 sq;
	int r;

	while (n--) {
		r = hc_io(ix, REQ_OP_READ, hc_ca_alist_off(ix, bk, n), blk, ix->block_size);
		ix->st.tier_reads[2]++;
		if (r)
			return r;
		switch (hc_ca_iblk_check(ix, blk, HC_CA_T3_OWNER | bk, ca->epoch,
					 hc_ca_alist(ca, bk)[n])) {
		case HC_CA_OTHER:
			/* (what it held may be newer than the wide table's: a miss) */
			hc_ca_drop(ix, bk);
			return 0;
		case HC_CA_BAD:
			return hc_ca_broken(ix, "T3");
		}
		r = hc_ca_scan(ix, blk, h, key, klen, 3, res);
		if (r)
			return r;
	}
	place = ca->w_place[wb];
	sq = ca->w_seq[wb];
	for (steps = 0; sq && steps < ca->w_blocks; steps++) {
		const struct hc_ca_iblk *b = blk;

		r = hc_io(ix, REQ_OP_READ, ca->w_off + (u64)place * ix->block_size, blk,
			  ix->block_size);
		ix->st.tier_reads[2]++;
		if (r)
			return r;
		/* the log came round over it: the chain ends here */
		switch (hc_ca_iblk_check(ix, blk, HC_CA_T3_OWNER | HC_CA_WIDE_OWNER | wb, ca->epoch,
					 sq)) {
		case HC_CA_OTHER:
			return 0;
		case HC_CA_BAD:
			return hc_ca_broken(ix, "T3");
		}
		r = hc_ca_scan(ix, blk, h, key, klen, 3, res);
		if (r)
			return r;
		place = le32_to_cpu(b->prev);
		sq = le64_to_cpu(b->prev_seq);
		if (place >= ca->w_blocks || sq >= le64_to_cpu(b->seq))
			return 0;
	}
	return 0;
}

/* @key's newest mapping, tier by tier; res->tier 0: none */
static int hc_ca_find(struct hc_index *ix, const u8 *key, u32 klen, u64 h,
		      struct hc_ca_res *res)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 p = hc_ca_part(ca, h), bk = hc_ca_bucket(ca, h);
	struct hc_ca_t1 *t = hc_ca_t1_find(ca, p, h);
	int r;

	res->tier = 0;
	if (t) {
		r = hc_ca_try(ix, key, klen, t->slab, t->loc, 1, res);
		if (r) {
			t->flags |= HC_CA_REF;
			return r < 0 ? r : 0;
		}
	}
	r = hc_ca_scan(ix, hc_ca_t2_buf(ix, p), h, key, klen, 2, res) ?:
	    hc_ca_find_t2(ix, p, h, key, klen, res) ?:
	    hc_ca_scan(ix, hc_ca_t3_buf(ix, bk), h, key, klen, 3, res) ?:
	    hc_ca_find_t3(ix, bk, h, key, klen, res);
	if (r < 0)
		return r;
	if (!r)
		res->tier = 0;
	return 0;
}

/* ---------------------------------------------------------------------
 * The ops
 */

static int hc_ca_lookup(struct hc_index *ix, const u8 *key, u32 klen, void *kval,
			struct hc_object *o)
{
	struct hc_ca *ca = hc_ca(ix);
	u64 io0 = ix->st.read_ios + ix->st.write_ios, h = siphash(key, klen, &ix->hkey);
	struct hc_ca_res res;
	int err;

	if (ca->broken)
		return -EIO;
	ix->st.lookups++;
	err = hc_ca_find(ix, key, klen, h, &res);
	if (!err && res.tier)
		ix->st.tier_hits[res.tier - 1]++;
	o->found = !err && res.tier && !res.dead;
	/* LOOKUP hands out a device offset: a record in the open slab must be there */
	if (o->found && !kval && hc_ca_seq(ca, res.slab) == ca->cur)
		err = hc_ca_slab_write(ix);
	if (o->found && !err) {
		o->dev_offset = res.dev_off + HC_BH_REC + klen;
		if (kval)
			memcpy(kval, (const u8 *)(res.r + 1) + klen,
			       min_t(u64, le32_to_cpu(res.r->value_len), o->value_len));
		o->value_len = le32_to_cpu(res.r->value_len);
		/* a hit on flash comes up to T1, clean (best effort: a miss later if not) */
		if (res.tier > 1 && !hc_ca_t1_room(ix, hc_ca_part(ca, h)))
			hc_ca_t1_set(ix, h, res.slab, res.loc, false);
	}
	if (err) {
		ix->st.lookup_ios += ix->st.read_ios + ix->st.write_ios - io0;
		return err;
	}
	hc_count_lookup(ix, o->found, ix->st.read_ios + ix->st.write_ios - io0);
	return 0;
}

/* append @key's record (hash @h), and map it in T1 */
static int hc_ca_put(struct hc_index *ix, const u8 *key, u32 klen, u64 h, const void *val,
		     u64 vlen, bool tomb)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 slab, loc;
	int r;

	/* room in T1 first: a failure there leaves nothing appended */
	r = hc_ca_t1_room(ix, hc_ca_part(ca, h));
	if (r)
		return r;
	r = hc_ca_append(ix, key, klen, val, vlen, tomb, &slab, &loc);
	if (r)
		return r;
	hc_ca_t1_set(ix, h, slab, loc | (tomb ? HC_CA_TOMB : 0), true);
	return 0;
}

static int hc_ca_insert(struct hc_index *ix, const u8 *key, u32 klen, const void *val,
			u64 vlen, u32 group)
{
	u64 io0 = ix->st.write_ios + ix->st.read_ios;
	int r;

	if (hc_ca(ix)->broken)
		return -EIO;
	if (vlen > hc_max_value(ix) || hc_bh_rec_len(klen, vlen) > ix->block_size - HC_BH_HDR)
		return -EFBIG;
	/* an update is an insert of a newer record: no lookup (the paper's SET) */
	r = hc_ca_put(ix, key, klen, siphash(key, klen, &ix->hkey), val, vlen, false);
	if (!r)
		ix->st.inserts++;
	ix->st.insert_ios += ix->st.write_ios + ix->st.read_ios - io0;
	return r;
}

/*
 * A tombstone goes in whether the lookup found the key or not: a mapping
 * the tiers lost (T3's log came round) still has its record in a slab,
 * and the replay after a crash would bring it back without one.
 */
static int hc_ca_remove(struct hc_index *ix, const u8 *key, u32 klen, struct hc_object *o)
{
	u64 h = siphash(key, klen, &ix->hkey);
	struct hc_ca_res res;
	int err;

	if (hc_ca(ix)->broken)
		return -EIO;
	err = hc_ca_find(ix, key, klen, h, &res);
	if (err)
		return err;
	o->found = res.tier && !res.dead;
	err = hc_ca_put(ix, key, klen, h, NULL, 0, true);
	if (!err && o->found)
		ix->st.deletes++;
	return err;
}

static int hc_ca_flush(struct hc_index *ix)
{
	return hc_ca_slab_write(ix);
}

/* records in the live slabs (a key's older copies and tombstones count) */
static u64 hc_ca_objects(struct hc_index *ix)
{
	struct hc_ca *ca = hc_ca(ix);
	u64 n = 0;
	u32 i;

	for (i = 0; i < ca->nslabs; i++)
		n += ca->recs[i];
	return n;
}

/* ---------------------------------------------------------------------
 * Attach: replay the slabs, oldest first
 */

/*
 * The records of slab @seq, read whole into the open slab's buffer, into
 * T1. The last block of it that checks in *@last (-1: none).
 */
static int hc_ca_replay(struct hc_index *ix, u64 seq, int *last)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 place = hc_ca_place(ca, seq), b, off, loc, klen;
	const struct hc_bh_rec *rec;
	u64 gen, h;
	int r;

	*last = -1;
	r = hc_io(ix, REQ_OP_READ, hc_ca_slab_off(ix, seq), ca->slab, ca->slab_bytes);
	if (r)
		return r;
	ca->cur = seq;		/* (the slabs before it stay live: T1 drops none of theirs) */
	for (b = 0; b < ca->nblk; b++) {
		const u8 *blk = (u8 *)hc_ca_sblk(ix, b);
		bool torn = false;

		/* a block not written in this slab's time holds none of its records */
		if (!hc_bh_block_ok(ix, (const void *)blk, place, b, &gen) || gen != seq)
			continue;
		*last = b;
		off = HC_BH_HDR;
		for (;;) {
			loc = b * ix->block_size + off;
			rec = hc_bh_next(ix, blk, &off, &torn);
			if (!rec)
				break;
			klen = le16_to_cpu(rec->key_len);
			h = siphash(rec + 1, klen, &ix->hkey);
			if (le16_to_cpu(rec->flags) & HC_BH_TOMB)
				loc |= HC_CA_TOMB;
			r = hc_ca_t1_room(ix, hc_ca_part(ca, h));
			if (r)
				return r;
			hc_ca_t1_set(ix, h, (u32)seq, loc, true);
			ca->recs[place]++;
			ix->wseq = max(ix->wseq, le64_to_cpu(rec->seq));
		}
		ix->torn += torn;
	}
	return 0;
}

/*
 * The newest slab, just replayed (its image in the buffer), open again:
 * records go on in a fresh block after the last that checks, so that no
 * block written before the attach is written again. Blocks that did not
 * check are empty in RAM (and never written: they are before the first).
 */
static bool hc_ca_resume(struct hc_index *ix, u64 seq, int last)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 place = hc_ca_place(ca, seq), b;
	u64 gen;

	if (last < 0 || last + 1 >= ca->nblk)
		return false;
	for (b = 0; b < ca->nblk; b++)
		if (b > last || !hc_bh_block_ok(ix, (void *)hc_ca_sblk(ix, b), place, b, &gen) ||
		    gen != seq)
			hc_ca_sblk_init(ix, b, seq);
	ca->cur = seq;
	ca->wblk = last + 1;
	ca->fblk = last + 1;
	ca->dirty = false;
	return true;
}

/*
 * A sequence number for a new slab, *@seq or after it: one whose place
 * holds no block of that number or a later one. A write a crash cut short
 * can leave blocks of a slab whose first block never landed (the attach
 * then takes the slab before for the newest): its number is never used
 * again, or those blocks would count for the new slab. Reads the place
 * whole, into the open slab's buffer.
 */
static int hc_ca_fresh_seq(struct hc_index *ix, u64 *seq)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 n, b, place;
	u64 gen, top;
	int r;

	for (n = 0; n <= ca->nslabs; n++) {
		place = hc_ca_place(ca, *seq);
		r = hc_io(ix, REQ_OP_READ, hc_ca_slab_off(ix, *seq), ca->slab, ca->slab_bytes);
		if (r)
			return r;
		top = 0;
		for (b = 0; b < ca->nblk; b++)
			if (hc_bh_block_ok(ix, (void *)hc_ca_sblk(ix, b), place, b, &gen))
				top = max(top, gen);
		if (top < *seq)
			return 0;
		*seq = top + 1;
	}
	return -EIO;	/* (only a device written under the index gets here) */
}

static void hc_ca_reset(struct hc_index *ix);

static int hc_ca_recover(struct hc_index *ix)
{
	struct hc_ca *ca = hc_ca(ix);
	u64 *gens, newest = 0, seq, gen;
	int r = 0, last = -1;
	u32 s;

	gens = kvcalloc(ca->nslabs, sizeof(*gens), GFP_KERNEL);
	if (!gens)
		return -ENOMEM;
	/* a new epoch (the RAM blocks' headers name it): no index block of before counts */
	ca->epoch = ix->sb_seq;
	hc_ca_reset(ix);
	hc_ca_session(ix);
	/* each place's slab: its first block's generation */
	for (s = 0; s < ca->nslabs && !r; s++) {
		r = hc_io(ix, REQ_OP_READ, ix->log_off + (u64)s * ca->slab_bytes, ix->buf,
			  ix->block_size);
		if (!r && hc_bh_block_ok(ix, ix->buf, s, 0, &gen) && hc_ca_place(ca, gen) == s) {
			gens[s] = gen;
			newest = max(newest, gen);
		}
		cond_resched();
	}
	/* oldest first, each only if its place still holds it */
	seq = newest >= ca->nslabs ? newest - ca->nslabs + 1 : 1;
	for (; newest && seq <= newest && !r; seq++) {
		if (gens[hc_ca_place(ca, seq)] == seq)
			r = hc_ca_replay(ix, seq, &last);
		cond_resched();
	}
	kvfree(gens);
	if (r)
		return r;
	/* the newest slab goes on where it ended; full (or none), a new one */
	if (!newest || !hc_ca_resume(ix, newest, last)) {
		seq = newest + 1;
		r = hc_ca_fresh_seq(ix, &seq);
		if (r)
			return r;
		hc_ca_slab_open(ix, seq);
	}
	/* the scan's I/O is not an operation's */
	memset(&ix->st, 0, sizeof(ix->st));
	return 0;
}

/* ---------------------------------------------------------------------
 * The checkpoint: T1's entries, the RAM blocks, the rings' and chains'
 * places and seqs, each slab's records; the open slab is read back
 */

static size_t hc_ca_t2_bytes(struct hc_index *ix)
{
	return (size_t)hc_ca(ix)->parts * hc_ca(ix)->depth * ix->block_size;
}

/*
 * Is there room for T2's copy in the checkpoint region? Always in one
 * formatted since periodic checkpoints (FORMAT sizes the region with it);
 * one formatted before has room for the rest only: no periodic checkpoint.
 */
static bool hc_ca_t2_part(struct hc_index *ix)
{
	struct hc_ca *ca = hc_ca(ix);

	return !ix->ckpt_bytes ||
	       ix->ckpt_bytes >= round_up(sizeof(struct hc_ckpt_disk) + ca->t1_len +
					  ca->pend_len + ca->meta_len + hc_ca_t2_bytes(ix),
					  HC_SB_BYTES);
}

static unsigned int hc_ca_ckpt_parts(struct hc_index *ix, struct hc_ckpt_part *p)
{
	struct hc_ca *ca = hc_ca(ix);

	p[0] = (struct hc_ckpt_part){ ca->t1, ca->t1_len };
	p[1] = (struct hc_ckpt_part){ ca->pend, ca->pend_len };
	p[2] = (struct hc_ckpt_part){ ca->meta, ca->meta_len };
	if (!hc_ca_t2_part(ix))
		return 3;
	/* T2's rings as they are on flash (a periodic checkpoint's; not in RAM) */
	p[3] = (struct hc_ckpt_part){ NULL, hc_ca_t2_bytes(ix) };
	return 4;
}

/*
 * A periodic checkpoint holds T2's rings: a block of them written over
 * after it had its entries moved down into a T3 RAM block, which a crash
 * loses. Read (and after a crash written back) HC_CA_BATCH blocks at a
 * time through the batch buffer (the checkpoint's copy is not aligned).
 */
static int hc_ca_t2_copy(struct hc_index *ix, enum req_op op, void *img)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 n = ca->parts * ca->depth, i, k;
	size_t bs = ix->block_size;
	int r;

	for (i = 0; i < n; i += k) {
		k = min_t(u32, HC_CA_BATCH, n - i);
		if (op == REQ_OP_WRITE)
			memcpy(ca->batch, img + i * bs, k * bs);
		r = hc_io(ix, op, HC_TABLE_OFFSET + (u64)i * bs, ca->batch, k * bs);
		if (r)
			return r;
		if (op == REQ_OP_READ)
			memcpy(img + i * bs, ca->batch, k * bs);
	}
	return 0;
}

/* a detach's leaves it zero: a clean attach finds T2 as it was */
static int hc_ca_ckpt_fill(struct hc_index *ix, void *dst, size_t bytes, bool periodic)
{
	return periodic ? hc_ca_t2_copy(ix, REQ_OP_READ, dst) : 0;
}

static int hc_ca_ckpt_save(struct hc_index *ix, u64 *state)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 p;

	if (ca->dirty)		/* (the flush before it failed) */
		return -EAGAIN;
	/*
	 * CLOCK's hands too: an attach that started them over would sweep the
	 * same first entries between detaches, never the rest (and GC would
	 * take what stays there unswept for hot)
	 */
	for (p = 0; p < ca->parts; p++)
		ca->t2_head[p] = (u32)ca->t2_head[p] | (u64)ca->t1_hand[p] << 32;
	state[0] = ca->cur;
	state[1] = ca->epoch;
	state[2] = ca->iseq;
	state[3] = ca->w_head;
	return 0;
}

/* Is the RAM block @blk of @owner (@t3: a bucket's) as this index leaves one? */
static bool hc_ca_pend_ok(struct hc_index *ix, const void *blk, u32 owner, bool t3)
{
	struct hc_ca *ca = hc_ca(ix);
	const struct hc_ca_iblk *b = blk;
	const struct hc_ca_ent *e = hc_ca_ents((void *)blk);
	u32 n = le32_to_cpu(b->count), i;

	if (le32_to_cpu(b->magic) != HC_CA_IBLK_MAGIC ||
	    le64_to_cpu(b->format_id) != ix->format_id || le64_to_cpu(b->epoch) != ca->epoch ||
	    b->crc || b->seq || le32_to_cpu(b->owner) != owner || n > ca->epb || b->prev ||
	    b->flags || b->prev_seq ||
	    memchr_inv(&e[n], 0, ix->block_size - HC_CA_IHDR - n * HC_CA_ENT))
		return false;
	for (i = 0; i < n; i++) {
		u64 h = le64_to_cpu(e[i].hash);

		if ((t3 ? HC_CA_T3_OWNER | hc_ca_bucket(ca, h) : hc_ca_part(ca, h)) != owner ||
		    (le32_to_cpu(e[i].loc) & ~HC_CA_TOMB) >= ca->slab_bytes)
			return false;
	}
	return true;
}

/*
 * A periodic checkpoint's copy of T2: each block a ring holds is the one
 * written there at its seq, in this epoch, its entries of its partition
 */
static bool hc_ca_t2_img_ok(struct hc_index *ix)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 p, place, i, n;

	if (!ix->ckpt_img)
		return false;
	for (p = 0; p < ca->parts; p++) {
		for (place = 0; place < ca->depth; place++) {
			size_t at = (size_t)p * ca->depth + place;
			const void *blk = ix->ckpt_img + at * ix->block_size;
			const struct hc_ca_ent *e = hc_ca_ents((void *)blk);

			if (!ca->t2_seq[at])
				continue;
			if (hc_ca_iblk_check(ix, blk, p, ca->epoch, ca->t2_seq[at]) != HC_CA_OK)
				return false;
			n = le32_to_cpu(((const struct hc_ca_iblk *)blk)->count);
			for (i = 0; i < n; i++)
				if (hc_ca_part(ca, le64_to_cpu(e[i].hash)) != p ||
				    (le32_to_cpu(e[i].loc) & ~HC_CA_TOMB) >= ca->slab_bytes)
					return false;
		}
	}
	return true;
}

/* T1 from the saved entries: every used one in range, no hash twice; the chains anew */
static int hc_ca_t1_load(struct hc_index *ix)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 p, i, *chain;

	memset(ca->t1_head, 0, (size_t)ca->parts * ca->t1_per * sizeof(u32));
	for (p = 0; p < ca->parts; p++) {
		ca->t1_free[p] = 0;
		/* (hc_ca_ckpt_load checked it) */
		ca->t1_hand[p] = ca->t2_head[p] >> 32;
		ca->t2_head[p] = (u32)ca->t2_head[p];
		for (i = ca->t1_per; i--; ) {
			struct hc_ca_t1 *t = &ca->t1[(size_t)p * ca->t1_per + i];
			u32 me = p * ca->t1_per + i + 1;

			if (t->flags & ~(HC_CA_USED | HC_CA_REF | HC_CA_DIRTY) ||
			    (t->flags && !(t->flags & HC_CA_USED)))
				return -EINVAL;
			/* (one gone stale before the detach is free now) */
			if (t->flags && hc_ca_live(ca->cur, ca->nslabs, t->slab)) {
				if (hc_ca_part(ca, t->hash) != p ||
				    (t->loc & ~HC_CA_TOMB) >= ca->slab_bytes ||
				    hc_ca_t1_find(ca, p, t->hash))
					return -EINVAL;
				chain = hc_ca_t1_chain(ca, p, t->hash);
				t->next = *chain;
				*chain = me;
				continue;
			}
			t->flags = 0;
			t->next = ca->t1_free[p];
			ca->t1_free[p] = me;
		}
		cond_resched();
	}
	return 0;
}

static int hc_ca_ckpt_load(struct hc_index *ix, const u64 *state)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 i, place;
	u64 gen;
	int r, last = -1;

	/* (records are ordered by their place: the write counter only must fit one) */
	if (!state[0] || state[0] >= BIT_ULL(62) || state[1] > ix->sb_seq ||
	    ix->wseq >= BIT_ULL(62) || state[2] >= BIT_ULL(62) || state[3] >= ca->w_blocks ||
	    memchr_inv(&state[4], 0, (HC_CKPT_STATE - 4) * sizeof(u64)))
		return -EINVAL;
	ca->cur = state[0];
	ca->epoch = state[1];
	ca->iseq = state[2];
	ca->w_head = state[3];
	for (i = 0; i < ca->parts * ca->depth; i++)
		if (ca->t2_seq[i] > ca->iseq)
			return -EINVAL;
	for (i = 0; i < ca->parts; i++)
		if ((u32)ca->t2_head[i] >= ca->depth || ca->t2_head[i] >> 32 >= ca->t1_per ||
		    !hc_ca_pend_ok(ix, hc_ca_t2_buf(ix, i), i, false))
			return -EINVAL;
	/* an active list: seqs rising, then none */
	for (i = 0; i < ca->buckets; i++) {
		const u64 *as = hc_ca_alist(ca, i);
		u32 n = hc_ca_alist_len(ca, i), k;

		if (!hc_ca_pend_ok(ix, hc_ca_t3_buf(ix, i), HC_CA_T3_OWNER | i, true) ||
		    memchr_inv(&as[n], 0, (HC_CA_LIST - n) * sizeof(u64)))
			return -EINVAL;
		for (k = 0; k < n; k++)
			if (as[k] > ca->iseq || (k && as[k] <= as[k - 1]))
				return -EINVAL;
	}
	for (i = 0; i < ca->buckets * HC_CA_WIDE; i++)
		if (ca->w_seq[i] > ca->iseq || ca->w_place[i] >= ca->w_blocks)
			return -EINVAL;
	for (i = 0; i < ca->nslabs; i++)
		if (ca->recs[i] > ca->slab_bytes / HC_BH_REC)
			return -EINVAL;
	r = hc_ca_t1_load(ix);
	if (r)
		return r;
	/* after a crash: T2's copy checked, the rest is hc_ca_ckpt_tail's */
	if (ix->ckpt_replay)
		return hc_ca_t2_img_ok(ix) ? 0 : -EINVAL;
	hc_ca_session(ix);
	/* the open slab, read back: records go on in a fresh block after the last */
	r = hc_io(ix, REQ_OP_READ, hc_ca_slab_off(ix, ca->cur), ca->slab, ca->slab_bytes);
	if (r)
		return r;
	place = hc_ca_place(ca, ca->cur);
	for (i = 0; i < ca->nblk; i++)
		if (hc_bh_block_ok(ix, (void *)hc_ca_sblk(ix, i), place, i, &gen) &&
		    gen == ca->cur)
			last = i;
	if (last + 1 >= ca->nblk) {
		hc_ca_slab_open(ix, ca->cur + 1);
		hc_ca_gc(ix);
	} else if (!hc_ca_resume(ix, ca->cur, last)) {
		hc_ca_slab_open(ix, ca->cur);
	}
	return 0;
}

/*
 * After a crash, the compactions made since the checkpoint: only they write
 * the wide log, from the checkpoint's head on, each block of a higher seq
 * than the one before. A compaction counts whole (from its HC_CA_BEGIN
 * block to its HC_CA_END one) or not at all: its blocks join their chains,
 * its list is empty (the checkpoint's list would name blocks written again
 * since), and after a drop (HC_CA_DROP) the chains of its range are dropped
 * first, as they were when it was made. Each block must name, as the one
 * before it, what its chain is by then: the first that does not ends it. A
 * compaction not found here is met as a list that is not there
 * (hc_ca_drop). Reads the wide blocks written since the checkpoint.
 */
static int hc_ca_wide_forward(struct hc_index *ix)
{
	struct hc_ca *ca = hc_ca(ix);
	const struct hc_ca_iblk *b = (void *)ca->obuf;
	struct { u32 wb, place; u64 seq; } run[HC_CA_LIST + HC_CA_WIDE];
	u32 place = ca->w_head, n = 0, steps, i, owner, wb, pp, fl, first = 0;
	u64 last = ca->iseq, seq, ps;
	bool drop = false;
	int r;

	for (steps = 0; steps < ca->w_blocks; steps++, place = (place + 1) % ca->w_blocks) {
		r = hc_io(ix, REQ_OP_READ, ca->w_off + (u64)place * ix->block_size, ca->obuf,
			  ix->block_size);
		if (r)
			return r;
		owner = le32_to_cpu(b->owner);
		wb = owner & ~(HC_CA_T3_OWNER | HC_CA_WIDE_OWNER);
		seq = le64_to_cpu(b->seq);
		fl = le32_to_cpu(b->flags);
		if ((owner & (HC_CA_T3_OWNER | HC_CA_WIDE_OWNER)) !=
		    (HC_CA_T3_OWNER | HC_CA_WIDE_OWNER) || wb >= ca->buckets * HC_CA_WIDE ||
		    seq <= last || seq >= BIT_ULL(62) ||
		    hc_ca_iblk_check(ix, b, owner, ca->epoch, seq) != HC_CA_OK ||
		    /* (HC_CA_BEGIN, HC_CA_DROP on a compaction's first block only) */
		    !(fl & HC_CA_BEGIN) != !!n || ((fl & HC_CA_DROP) && !(fl & HC_CA_BEGIN)) ||
		    (n && wb / HC_CA_WIDE != first) || n == ARRAY_SIZE(run))
			break;
		if (!n) {
			first = wb / HC_CA_WIDE;
			drop = fl & HC_CA_DROP;
		}
		/* the chain as it is, this compaction's blocks before this one */
		pp = ca->w_place[wb];
		ps = drop ? 0 : ca->w_seq[wb];
		for (i = 0; i < n; i++) {
			if (run[i].wb == wb) {
				pp = run[i].place;
				ps = run[i].seq;
			}
		}
		if (le64_to_cpu(b->prev_seq) != ps || (ps && le32_to_cpu(b->prev) != pp))
			break;
		run[n].wb = wb;
		run[n].place = place;
		run[n++].seq = seq;
		last = seq;
		if (!(fl & HC_CA_END))
			continue;
		if (drop)
			memset(&ca->w_seq[(size_t)first * HC_CA_WIDE], 0,
			       HC_CA_WIDE * sizeof(u64));
		for (i = 0; i < n; i++) {
			ca->w_place[run[i].wb] = run[i].place;
			ca->w_seq[run[i].wb] = run[i].seq;
		}
		memset(hc_ca_alist(ca, first), 0, HC_CA_LIST * sizeof(u64));
		ca->iseq = seq;
		ca->w_head = (place + 1) % ca->w_blocks;
		n = 0;
		cond_resched();
	}
	return 0;
}

/*
 * After a crash, from the last periodic checkpoint (one every ckpt_every
 * slabs, written when a slab is opened: nothing in it yet). The tiers go
 * back to what it holds, and the slabs written since are replayed into
 * T1, as the scan replays them all:
 *
 *  - T2's rings are written back from its copy: blocks written since went
 *    over the oldest, whose entries had gone down into T3's RAM blocks;
 *  - T3 keeps its lists and chains as they were, and then takes the
 *    compactions made since, read from the wide log past its head
 *    (hc_ca_wide_forward): those lists are empty, their entries in the
 *    chains. The wide blocks written since went over the oldest of the log
 *    (the chains end where they did), which is what the log coming round
 *    does anyway. A list that names blocks written again since all the same
 *    is dropped with the wide buckets of its range when met (hc_ca_drop);
 *  - the index block counter goes back too: a chain or ring names a block
 *    by its place and seq, and no block written since is named by one;
 *  - the slabs from the checkpoint's open one on, while each place's first
 *    block is of that slab (never past half the ring), oldest first; the
 *    newest goes on where it ended, as after a scan.
 *
 * That reads the checkpoint, the slabs since, T2 (written once) and the
 * wide blocks since, not the slab ring: O(RAM part + T2 + what was written
 * since). -EINVAL: more slabs follow
 * than a checkpoint that counts lets be written (the attach scans).
 */
static int hc_ca_ckpt_tail(struct hc_index *ix)
{
	struct hc_ca *ca = hc_ca(ix);
	bool failed = ix->write_failed;
	u64 seq, gen, newest = 0;
	int r, last = -1, l;
	u32 place, n;

	r = hc_ca_t2_copy(ix, REQ_OP_WRITE, (void *)ix->ckpt_img) ?: hc_ca_wide_forward(ix);
	hc_ca_session(ix);
	for (seq = ca->cur, n = 0; !r; seq++, n++) {
		place = hc_ca_place(ca, seq);
		r = hc_io(ix, REQ_OP_READ, hc_ca_slab_off(ix, seq), ix->buf, ix->block_size);
		if (r || !hc_bh_block_ok(ix, ix->buf, place, 0, &gen) || gen != seq)
			break;
		if (n >= ca->nslabs / 2)
			return -EINVAL;
		ca->recs[place] = 0;
		r = hc_ca_replay(ix, seq, &l);
		if (r)
			break;
		newest = seq;
		last = l;
		cond_resched();
	}
	/*
	 * An index block the replay's evictions read is not what the
	 * checkpoint leads to (the device changed under it): not a failed
	 * write, and the scan rebuilds the index in a new epoch
	 */
	if (r == -EIO && ca->broken) {
		ca->broken = false;
		ix->write_failed = failed;
		return -EINVAL;
	}
	if (r)
		return r;
	/*
	 * the newest slab goes on where it ended; full (or none since), a new
	 * one, whose GC finds T1 as the checkpoint and the replay left it
	 */
	if (!newest || !hc_ca_resume(ix, newest, last)) {
		seq = newest ? newest + 1 : ca->cur;
		r = hc_ca_fresh_seq(ix, &seq);
		if (r)
			return r;
		hc_ca_slab_open(ix, seq);
		hc_ca_gc(ix);
	}
	return 0;
}

/* ---------------------------------------------------------------------
 * Format, geometry, RAM
 */

static u32 hc_ca_epb(struct hc_index *ix)
{
	return (ix->block_size - HC_CA_IHDR) / HC_CA_ENT;
}

/* where T3 starts: after every partition's T2 ring */
static u64 hc_ca_t3_start(struct hc_index *ix)
{
	return HC_TABLE_OFFSET + (u64)ix->ram_ways * ix->ways * ix->block_size;
}

static int hc_ca_format(struct hc_index *ix, const struct hc_format *f)
{
	u64 avail = ix->dev_bytes - HC_TABLE_OFFSET, bs = ix->block_size, slab, data, objs;
	u64 t2, t3, wide, parts, depth, buckets, t1;
	u32 epb = hc_ca_epb(ix);

	if (f->tag_bits)
		return -EINVAL;
	slab = f->buffer_bytes;
	/* (at least 16 slabs) */
	if (!slab)
		slab = clamp_t(u64, rounddown_pow_of_two(avail / 16), 2 * bs, HC_CA_DEF_SLAB);
	if (slab % bs || slab < 2 * bs || slab > HC_CA_MAX_SLAB)
		return -EINVAL;
	if (f->log_bytes > avail)
		return -ENOSPC;
	/* what the data would be with nothing else, for the sizes of the rest */
	data = f->log_bytes ?: avail - avail / 8;
	objs = div_u64(data, HC_CA_OBJ);
	parts = f->ram_ways ?: clamp_t(u64, div_u64(objs, 40 * epb), 1, HC_CA_MAX_PARTS);
	if (parts > HC_CA_MAX_PARTS)
		return -EINVAL;
	depth = f->ways ?: clamp_t(u64, div64_u64(objs, 20 * parts * epb), 2, 64);
	if (depth < 2 || depth > 64 || depth * bs > HC_MAX_SET_BYTES)
		return -EINVAL;
	t2 = parts * depth * bs;
	/* T3's wide log: room for every object's mapping twice over */
	wide = max_t(u64, 2 * HC_CA_WIDE, DIV_ROUND_UP(2 * objs, epb));
	/* active buckets: a wide bucket's chain some 2 blocks once the log is full */
	buckets = f->sets ?: clamp_t(u64, wide / (2 * HC_CA_WIDE), 1, HC_CA_MAX_BUCKETS);
	if (buckets > HC_CA_MAX_SETS)
		return -ENOSPC;
	/* (a block at least a wide bucket) */
	wide = max(wide, buckets * HC_CA_WIDE);
	t3 = (buckets * HC_CA_LIST + wide) * bs;
	/* (at most what one allocation takes: kvmalloc's limit) */
	t1 = f->resident_sets ?: clamp_t(u64, div_u64(objs, 10), 4 * parts,
					 INT_MAX / sizeof(struct hc_ca_t1));
	if (t1 < 2 * parts)
		return -EINVAL;
	if (t2 + t3 > avail)
		return -ENOSPC;
	if (!f->log_bytes)
		data = rounddown(avail - t2 - t3, slab);
	else if (data % slab)
		return -EINVAL;
	if (data < 2 * slab || t2 + t3 + data > avail || div64_u64(data, slab) > U32_MAX)
		return -ENOSPC;
	ix->flags |= HC_CA_SB_WIDE;
	ix->ram_ways = parts;
	ix->ways = depth;
	ix->sets = buckets;
	ix->resident_sets = t1;
	ix->buffer_bytes = slab;
	ix->log_off = HC_TABLE_OFFSET + t2 + t3;
	ix->log_blocks = div_u64(data, bs);
	return 0;
}

static bool hc_ca_geometry_ok(struct hc_index *ix)
{
	u64 bs = ix->block_size, slab = ix->buffer_bytes, t3s = hc_ca_t3_start(ix);
	u64 data = ix->log_blocks * bs, t3;

	if (!(ix->flags & HC_CA_SB_WIDE) || !ix->sets || ix->sets > HC_CA_MAX_SETS ||
	    ix->log_off < t3s || (ix->log_off - t3s) % bs)
		return false;
	/* the active lists, then the wide log, a block at least a wide bucket */
	t3 = (ix->log_off - t3s) / bs;
	return ix->ram_ways >= 1 && ix->ram_ways <= HC_CA_MAX_PARTS && ix->ways >= 2 &&
	       ix->ways <= 64 && slab && !(slab % bs) && slab >= 2 * bs &&
	       slab <= HC_CA_MAX_SLAB && ix->resident_sets >= 2 * ix->ram_ways &&
	       t3 >= ix->sets * (HC_CA_LIST + HC_CA_WIDE) &&
	       t3 - ix->sets * HC_CA_LIST <= U32_MAX &&
	       !(data % slab) && data >= 2 * slab &&
	       div64_u64(data, slab) <= U32_MAX && ix->log_off <= ix->dev_bytes &&
	       data <= ix->dev_bytes - ix->log_off;
}

static void hc_ca_free(struct hc_index *ix)
{
	struct hc_ca *ca = hc_ca(ix);

	if (!ca)
		return;
	kvfree(ca->t1);
	kvfree(ca->t1_head);
	kvfree(ca->t1_free);
	kvfree(ca->t1_hand);
	kvfree(ca->slab);
	kvfree(ca->pend);
	kvfree(ca->meta);
	kvfree(ca->batch);
	kvfree(ca->cbuf);
	kvfree(ca->obuf);
	kvfree(ca->dropped);
	kfree(ca);
	ix->priv = NULL;
}

/* RAM as a new index has it: every T1 entry free, every RAM block empty, nothing on flash */
static void hc_ca_reset(struct hc_index *ix)
{
	struct hc_ca *ca = hc_ca(ix);
	u32 p, i;

	memset(ca->t1, 0, ca->t1_len);
	memset(ca->t1_head, 0, (size_t)ca->parts * ca->t1_per * sizeof(u32));
	memset(ca->meta, 0, ca->meta_len);
	for (p = 0; p < ca->parts; p++) {
		for (i = 0; i < ca->t1_per; i++)
			ca->t1[(size_t)p * ca->t1_per + i].next =
				i + 1 < ca->t1_per ? p * ca->t1_per + i + 2 : 0;
		ca->t1_free[p] = p * ca->t1_per + 1;
		ca->t1_hand[p] = 0;
		hc_ca_iblk_init(ix, hc_ca_t2_buf(ix, p), p);
	}
	for (i = 0; i < ca->buckets; i++)
		hc_ca_iblk_init(ix, hc_ca_t3_buf(ix, i), HC_CA_T3_OWNER | i);
	ca->iseq = 0;
	ca->w_head = 0;
	bitmap_zero(ca->dropped, ca->buckets);
}

static int hc_ca_alloc_ram(struct hc_index *ix)
{
	struct hc_ca *ca = kzalloc(sizeof(*ca), GFP_KERNEL);
	u64 bytes[11], bs = ix->block_size, n;
	u32 i;

	if (!ca)
		return -ENOMEM;
	ix->priv = ca;
	ca->parts = ix->ram_ways;
	ca->depth = ix->ways;
	ca->epb = hc_ca_epb(ix);
	ca->t1_per = ix->resident_sets / ca->parts;
	ca->slab_bytes = ix->buffer_bytes;
	ca->nblk = ca->slab_bytes / bs;
	ca->nslabs = div_u64(ix->log_blocks * bs, ca->slab_bytes);
	ca->buckets = ix->sets;
	ca->t3_off = hc_ca_t3_start(ix);
	ca->w_off = ca->t3_off + (u64)ca->buckets * HC_CA_LIST * bs;
	ca->w_blocks = div_u64(ix->log_off - ca->w_off, bs);
	ix->max_value = bs - HC_BH_HDR - HC_BH_REC - HC_KEY_MAX;
	ix->slots = div_u64((u64)ca->nslabs * ca->slab_bytes, HC_CA_OBJ);
	n = (u64)ca->parts * ca->depth + (u64)ca->buckets * (HC_CA_LIST + 2 * HC_CA_WIDE) +
	    ca->parts + ca->nslabs;
	bytes[0] = (u64)ca->parts * ca->t1_per * sizeof(*ca->t1);
	bytes[1] = (u64)ca->parts * ca->t1_per * sizeof(u32);
	bytes[2] = ca->parts * sizeof(u32);
	bytes[3] = ca->parts * sizeof(u32);
	bytes[4] = ca->slab_bytes;
	bytes[5] = ((u64)ca->parts + ca->buckets) * bs;
	bytes[6] = n * sizeof(u64);
	bytes[7] = HC_CA_BATCH * bs;
	bytes[8] = HC_CA_LIST * bs;
	bytes[9] = bs;
	bytes[10] = BITS_TO_LONGS(ca->buckets) * sizeof(long);
	ca->t1 = hc_ram_alloc(ix, bytes[0]);
	ca->t1_head = hc_ram_alloc(ix, bytes[1]);
	ca->t1_free = hc_ram_alloc(ix, bytes[2]);
	ca->t1_hand = hc_ram_alloc(ix, bytes[3]);
	ca->slab = hc_ram_alloc(ix, bytes[4]);
	ca->pend = hc_ram_alloc(ix, bytes[5]);
	ca->meta = hc_ram_alloc(ix, bytes[6]);
	ca->batch = hc_ram_alloc(ix, bytes[7]);
	ca->cbuf = hc_ram_alloc(ix, bytes[8]);
	ca->obuf = hc_ram_alloc(ix, bytes[9]);
	ca->dropped = hc_ram_alloc(ix, bytes[10]);
	if (!ca->t1 || !ca->t1_head || !ca->t1_free || !ca->t1_hand || !ca->slab || !ca->pend ||
	    !ca->meta || !ca->batch || !ca->cbuf || !ca->obuf || !ca->dropped)
		return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(bytes); i++)
		ix->bits_bytes += bytes[i];
	ca->t1_len = bytes[0];
	ca->pend_len = bytes[5];
	ca->meta_len = bytes[6];
	ca->t2_pend = ca->pend;
	ca->t3_pend = ca->pend + (size_t)ca->parts * bs;
	ca->t2_seq = ca->meta;
	ca->a_seq = ca->t2_seq + (size_t)ca->parts * ca->depth;
	ca->t2_head = ca->a_seq + (size_t)ca->buckets * HC_CA_LIST;
	ca->w_place = ca->t2_head + ca->parts;
	ca->w_seq = ca->w_place + (size_t)ca->buckets * HC_CA_WIDE;
	ca->recs = ca->w_seq + (size_t)ca->buckets * HC_CA_WIDE;
	/*
	 * A periodic checkpoint every sixteenth of the slab ring, every 4
	 * slabs at least (the paper's every N slabs; its recovery reads at
	 * most half the ring past it)
	 */
	if (ix->ckpt_bytes && ca->nslabs >= 16 && hc_ca_t2_part(ix))
		ix->ckpt_every = max_t(u32, 4, ca->nslabs / 16);
	hc_ca_reset(ix);
	hc_ca_slab_open(ix, 1);
	return 0;
}

/* attach reads a slab at a time, into the open slab's buffer; a list of them */
static u64 hc_ca_recover_bytes(struct hc_index *ix)
{
	return div_u64(ix->log_blocks * ix->block_size, ix->buffer_bytes) * sizeof(u64);
}

const struct hc_policy_ops hc_ca_ops = {
	.name		= "cascade",
	.format		= hc_ca_format,
	.geometry_ok	= hc_ca_geometry_ok,
	.alloc_ram	= hc_ca_alloc_ram,
	.free		= hc_ca_free,
	.recover	= hc_ca_recover,
	.recover_bytes	= hc_ca_recover_bytes,
	.insert		= hc_ca_insert,
	.lookup		= hc_ca_lookup,
	.remove		= hc_ca_remove,
	.flush		= hc_ca_flush,
	.objects	= hc_ca_objects,
	.ckpt_parts	= hc_ca_ckpt_parts,
	.ckpt_save	= hc_ca_ckpt_save,
	.ckpt_fill	= hc_ca_ckpt_fill,
	.ckpt_load	= hc_ca_ckpt_load,
	.ckpt_tail	= hc_ca_ckpt_tail,
	.format_flags	= HC_FORMAT_SPACE_GC,
	.layout_flags	= HC_CA_SB_WIDE,
};
