// SPDX-License-Identifier: GPL-2.0
/*
 * The BufferHash policy (CLAM, Anand et al., NSDI 2010), for HashCache's
 * objects.
 *
 * The keys are split over @tables super tables by their hash. Each super
 * table has a buffer in RAM (one incarnation's image, @nblk blocks) and @k
 * incarnations on the device in a ring of its own (the raw-flash layout of
 * the paper: a static region per super table). An insert goes into the
 * buffer; a buffer half full is written whole, in one sequential write, as
 * the newest incarnation, over the oldest (FIFO eviction). Every
 * incarnation has a Bloom filter in RAM; the k filters of a super table are
 * bit-sliced: m words of k bits, so a lookup ANDs h words to get the
 * incarnations that may hold the key, and reads them newest first.
 *
 * Objects are small records packed in the blocks of an incarnation. A
 * record goes to its key's home block, or when that is full to a second
 * block, and the home block is then marked: a lookup reads one block of a
 * candidate incarnation, two only where a home block overflowed. Overwrite
 * and delete append a newer record (a tombstone for a delete); the newest
 * record of a key wins (incarnations newest first, then the sequence
 * number).
 *
 * Durability is the Log policy's: what is in a buffer reaches the device at
 * HC_IOC_FLUSH, at detach, at a LOOKUP of it, or when the buffer is written
 * as an incarnation. A flush writes the buffer's changed blocks into the
 * newest incarnation's place; a block is only ever appended to, so records a
 * flush made durable keep their bytes when the block is written again. An
 * attach makes each super table's newest incarnation its buffer again.
 *
 * Nothing read from the device is used before it is checked: a block's
 * header (its own CRC, the format id, its super table, incarnation and
 * generation, its fill) and every record (its CRC, lengths inside the block).
 */

#include <linux/crc32c.h>
#include <linux/log2.h>
#include <linux/siphash.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "hc-int.h"

#define HC_BH_DEF_K		16		/* incarnations a super table */
#define HC_BH_DEF_INC		SZ_128K		/* the paper's buffer: 128 KB */
#define HC_BH_MAX_INC		SZ_1M		/* one write, one buffer in RAM */
#define HC_BH_COUNT_MAX		BIT_ULL(62)	/* generations, sequence numbers */

struct hc_bh {
	u32 tables, k, nblk, hashes, m;	/* m: filter bits an incarnation */
	u32 inc_bytes;
	siphash_key_t fkey;		/* the filters' hash */
	u64 next_gen;
	u8 *bufs;			/* tables x inc_bytes: each table's newest incarnation */
	u64 *slices;			/* tables x m: bit s of word i = bit i of slot s's filter */
	u64 *gen;			/* tables x k: each slot's generation, 0: none */
	u32 *recs;			/* tables x k: records in each slot */
	u32 *fill;			/* tables: bytes of records in the buffer */
	u32 *head;			/* tables: the slot the buffer is written to */
	unsigned long *dirty;		/* tables x nblk: buffer blocks not yet written */
	u8 *pd;				/* partial discard: the incarnation evicted, */
	unsigned long *keep;		/* and its records kept (by offset / 8) */
	void *scan;			/* attach: one incarnation */
	u64 rot_since;			/* rotations since the last periodic checkpoint */
	u32 *rot_t;			/* tables: the same, each super table's */
	bool periodic;			/* that checkpoint is being written */
};

static struct hc_bh *hc_bh(struct hc_index *ix)
{
	return ix->priv;
}

static u64 hc_bh_slot_off(struct hc_index *ix, u32 t, u32 s)
{
	struct hc_bh *bh = hc_bh(ix);

	return HC_TABLE_OFFSET + ((u64)t * bh->k + s) * bh->inc_bytes;
}

static u8 *hc_bh_buf(struct hc_index *ix, u32 t)
{
	return hc_bh(ix)->bufs + (size_t)t * hc_bh(ix)->inc_bytes;
}

HC_TESTABLE void hc_bh_locate(struct hc_index *ix, const u8 *key, u32 klen,
			      struct hc_bh_key *l)
{
	struct hc_bh *bh = hc_bh(ix);
	u64 h = siphash(key, klen, &ix->hkey), g = siphash(key, klen, &bh->fkey);

	l->t = (u32)h % bh->tables;
	l->b1 = (u32)(h >> 32) % bh->nblk;
	/* another block, spread over the rest (nblk >= 2) */
	l->b2 = (l->b1 + 1 + (u32)((h >> 32) / bh->nblk) % (bh->nblk - 1)) % bh->nblk;
	l->fx = g & 0xffffffff;
	l->fy = (g >> 32) | 1;
}

/* ---------------------------------------------------------------------
 * Bloom filters, bit-sliced
 */

/* the incarnations (bit s: slot s) whose filter says they may hold the key */
HC_TESTABLE u64 hc_bh_candidates(struct hc_index *ix, const struct hc_bh_key *l)
{
	struct hc_bh *bh = hc_bh(ix);
	const u64 *sl = bh->slices + (size_t)l->t * bh->m;
	u64 mask = U64_MAX;
	u32 i;

	for (i = 0; i < bh->hashes && mask; i++)
		mask &= sl[(l->fx + i * l->fy) % bh->m];
	return mask;
}

HC_TESTABLE void hc_bh_filter_add(struct hc_index *ix, const struct hc_bh_key *l, u32 s)
{
	struct hc_bh *bh = hc_bh(ix);
	u64 *sl = bh->slices + (size_t)l->t * bh->m;
	u32 i;

	for (i = 0; i < bh->hashes; i++)
		sl[(l->fx + i * l->fy) % bh->m] |= BIT_ULL(s);
}

/* forget slot @s of super table @t: its filter, generation and records */
HC_TESTABLE void hc_bh_drop_slot(struct hc_index *ix, u32 t, u32 s)
{
	struct hc_bh *bh = hc_bh(ix);
	u64 *sl = bh->slices + (size_t)t * bh->m;
	u32 i;

	for (i = 0; i < bh->m; i++)
		sl[i] &= ~BIT_ULL(s);
	bh->gen[(size_t)t * bh->k + s] = 0;
	bh->recs[(size_t)t * bh->k + s] = 0;
}

/* ---------------------------------------------------------------------
 * Blocks and records
 */

static u32 hc_bh_hdr_crc(const struct hc_bh_block *b)
{
	return hc_crc(b, HC_BH_HDR, offsetof(struct hc_bh_block, crc));
}

/* a block's header, its CRC made */
void hc_bh_seal(struct hc_bh_block *h)
{
	h->crc = 0;
	h->crc = cpu_to_le32(hc_bh_hdr_crc(h));
}

/*
 * A record's CRC is seeded with the format id and its block's generation: a
 * record left in a block by an earlier incarnation there (a write of the new
 * one that a crash tore) does not check in the new one.
 */
u32 hc_bh_rec_crc(struct hc_index *ix, u64 gen, const struct hc_bh_rec *r, u32 klen, u32 vlen)
{
	__le64 seed[2] = { cpu_to_le64(ix->format_id), cpu_to_le64(gen) };

	return hc_crc_from(crc32c(~0U, seed, sizeof(seed)), r, HC_BH_REC + klen + vlen,
			   offsetof(struct hc_bh_rec, crc));
}

/*
 * Is @b the header of a block of super table @t's slot @s, as this index
 * writes one? Its generation in *@gen. (Counters past 2^62 no index reaches.)
 */
bool hc_bh_block_ok(struct hc_index *ix, const struct hc_bh_block *b, u32 t, u32 s, u64 *gen)
{
	if (le32_to_cpu(b->magic) != HC_BH_BLOCK_MAGIC || le32_to_cpu(b->crc) != hc_bh_hdr_crc(b) ||
	    le64_to_cpu(b->format_id) != ix->format_id || le32_to_cpu(b->table) != t ||
	    le16_to_cpu(b->slot) != s || !le64_to_cpu(b->gen) ||
	    le64_to_cpu(b->gen) >= HC_BH_COUNT_MAX || b->pad ||
	    le32_to_cpu(b->used) > ix->block_size - HC_BH_HDR ||
	    (le16_to_cpu(b->flags) & ~HC_BH_OVERFLOW))
		return false;
	*gen = le64_to_cpu(b->gen);
	return true;
}

/*
 * The next whole record of the block at @blk from offset *@off (of the
 * block), or NULL at the end of its records or at one that does not check
 * (a flush a crash cut short: *@torn set). The header has been checked. A
 * value is at most what a PUT takes (callers copy it into buffers of that).
 */
const struct hc_bh_rec *hc_bh_next(struct hc_index *ix, const u8 *blk, u32 *off, bool *torn)
{
	const struct hc_bh_block *b = (const void *)blk;
	u32 end = HC_BH_HDR + le32_to_cpu(b->used), klen, vlen;
	const struct hc_bh_rec *r;

	if (*off + HC_BH_REC > end)
		return NULL;
	r = (const void *)(blk + *off);
	klen = le16_to_cpu(r->key_len);
	vlen = le32_to_cpu(r->value_len);
	if (!klen || klen > HC_KEY_MAX || vlen > hc_max_value(ix) || r->pad ||
	    le64_to_cpu(r->seq) >= HC_BH_COUNT_MAX || *off + hc_bh_rec_len(klen, vlen) > end ||
	    le32_to_cpu(r->crc) != hc_bh_rec_crc(ix, le64_to_cpu(b->gen), r, klen, vlen) ||
	    (le16_to_cpu(r->flags) & ~HC_BH_TOMB)) {
		*torn = true;
		return NULL;
	}
	*off += hc_bh_rec_len(klen, vlen);
	return r;
}

/* the newest record of @key in the checked block @blk, or NULL */
static const struct hc_bh_rec *hc_bh_find_in(struct hc_index *ix, const u8 *blk,
					     const u8 *key, u32 klen)
{
	const struct hc_bh_rec *r, *best = NULL;
	u32 off = HC_BH_HDR;
	bool torn = false;

	while ((r = hc_bh_next(ix, blk, &off, &torn)))
		if (le16_to_cpu(r->key_len) == klen && !memcmp(r + 1, key, klen) &&
		    (!best || le64_to_cpu(r->seq) > le64_to_cpu(best->seq)))
			best = r;
	return best;
}

/* a fresh buffer for super table @t, for its slot head, generation @gen */
static void hc_bh_buf_init(struct hc_index *ix, u32 t, u64 gen)
{
	struct hc_bh *bh = hc_bh(ix);
	u8 *buf = hc_bh_buf(ix, t);
	u32 b;

	memset(buf, 0, bh->inc_bytes);
	for (b = 0; b < bh->nblk; b++) {
		struct hc_bh_block *h = (void *)(buf + (size_t)b * ix->block_size);

		h->magic = cpu_to_le32(HC_BH_BLOCK_MAGIC);
		h->format_id = cpu_to_le64(ix->format_id);
		h->gen = cpu_to_le64(gen);
		h->table = cpu_to_le32(t);
		h->slot = cpu_to_le16(bh->head[t]);
	}
	bh->gen[(size_t)t * bh->k + bh->head[t]] = gen;
	bh->recs[(size_t)t * bh->k + bh->head[t]] = 0;
	bh->fill[t] = 0;
	bitmap_clear(bh->dirty, (size_t)t * bh->nblk, bh->nblk);
}

/* write blocks @b .. @b + @n - 1 of super table @t's buffer, headers sealed */
static int hc_bh_write(struct hc_index *ix, u32 t, u32 b, u32 n)
{
	struct hc_bh *bh = hc_bh(ix);
	u8 *buf = hc_bh_buf(ix, t);
	u32 i;
	int r;

	if (ix->ckpt_broken)
		return -EIO;
	for (i = b; i < b + n; i++)
		hc_bh_seal((void *)(buf + (size_t)i * ix->block_size));
	r = hc_io(ix, REQ_OP_WRITE, hc_bh_slot_off(ix, t, bh->head[t]) + (u64)b * ix->block_size,
		  buf + (size_t)b * ix->block_size, (size_t)n * ix->block_size);
	if (!r)
		bitmap_clear(bh->dirty, (size_t)t * bh->nblk + b, n);
	return r;
}

/* write super table @t's changed buffer blocks, each run of them in one write */
static int hc_bh_flush_table(struct hc_index *ix, u32 t)
{
	struct hc_bh *bh = hc_bh(ix);
	size_t base = (size_t)t * bh->nblk;
	unsigned long b = base, e;
	int r;

	for (;;) {
		b = find_next_bit(bh->dirty, base + bh->nblk, b);
		if (b >= base + bh->nblk)
			return 0;
		e = find_next_zero_bit(bh->dirty, base + bh->nblk, b);
		r = hc_bh_write(ix, t, b - base, e - b);
		if (r)
			return r;
		b = e;
	}
}

static int hc_bh_find(struct hc_index *ix, const u8 *key, u32 klen, const struct hc_bh_key *l,
		      const struct hc_bh_rec **out, u64 *dev_off, u32 depth);
static int hc_bh_append(struct hc_index *ix, const struct hc_bh_key *l, const u8 *key,
			u32 klen, const void *val, u64 vlen, bool tomb, bool kept);

/* the newest record of @key in the incarnation at @inc (slot @s, generation @gen), or NULL */
static const struct hc_bh_rec *hc_bh_newest_in(struct hc_index *ix, const u8 *inc, u32 s,
					       u64 gen, const struct hc_bh_key *l,
					       const u8 *key, u32 klen)
{
	const struct hc_bh_rec *r, *best = NULL;
	u32 i, blks[2] = { l->b1, l->b2 };
	u64 g;

	for (i = 0; i < 2; i++) {
		const u8 *blk = inc + (size_t)blks[i] * ix->block_size;

		if (!hc_bh_block_ok(ix, (const void *)blk, l->t, s, &g) || g != gen)
			break;
		r = hc_bh_find_in(ix, blk, key, klen);
		if (r && (!best || le64_to_cpu(r->seq) > le64_to_cpu(best->seq)))
			best = r;
		if (!(le16_to_cpu(((const struct hc_bh_block *)blk)->flags) & HC_BH_OVERFLOW))
			break;
	}
	return best;
}

/*
 * Partial discard, update-based (the paper's): of slot @s's incarnation,
 * about to be evicted, read into bh->pd, the records still their key's
 * newest (none newer in the buffer, in a newer incarnation or later in this
 * one) and not deletes are marked in bh->keep (by offset / 8). Returns how
 * many; none on a failed read (FIFO's eviction, then).
 */
static u32 hc_bh_mark_live(struct hc_index *ix, u32 t, u32 s)
{
	struct hc_bh *bh = hc_bh(ix);
	u64 gen = bh->gen[(size_t)t * bh->k + s], g, off;
	const struct hc_bh_rec *r, *nr;
	u32 b, n = 0, o;
	bool torn;
	u64 fp;
	int err;

	bitmap_zero(bh->keep, bh->inc_bytes / 8);
	if (hc_io(ix, REQ_OP_READ, hc_bh_slot_off(ix, t, s), bh->pd, bh->inc_bytes))
		return 0;
	for (b = 0; b < bh->nblk; b++) {
		const u8 *blk = bh->pd + (size_t)b * ix->block_size;

		if (!hc_bh_block_ok(ix, (const void *)blk, t, s, &g) || g != gen)
			continue;
		o = HC_BH_HDR;
		torn = false;
		while ((r = hc_bh_next(ix, blk, &o, &torn))) {
			const u8 *key = (const u8 *)(r + 1);
			u32 klen = le16_to_cpu(r->key_len);
			struct hc_bh_key l;

			if (le16_to_cpu(r->flags) & HC_BH_TOMB)
				continue;
			cond_resched();
			hc_bh_locate(ix, key, klen, &l);
			if (l.t != t || hc_bh_newest_in(ix, bh->pd, s, gen, &l, key, klen) != r)
				continue;
			/* the buffer and every incarnation but this one, the oldest */
			fp = ix->st.false_positives;
			err = hc_bh_find(ix, key, klen, &l, &nr, &off, bh->k - 2);
			ix->st.false_positives = fp;	/* a lookup's, not this */
			if (err || nr)
				continue;
			__set_bit(((const u8 *)r - bh->pd) / 8, bh->keep);
			n++;
		}
	}
	return n;
}

/*
 * Append the records hc_bh_mark_live() kept to the fresh buffer of @t, as
 * long as they fill no more than a quarter of it (the rest of the room is
 * the inserts'; the others are evicted). Returns how many went in.
 */
static u32 hc_bh_keep_live(struct hc_index *ix, u32 t)
{
	struct hc_bh *bh = hc_bh(ix);
	unsigned long i;
	u32 n = 0;
	int r2;

	for_each_set_bit(i, bh->keep, bh->inc_bytes / 8) {
		const struct hc_bh_rec *r = (const void *)(bh->pd + i * 8);
		const u8 *key = (const u8 *)(r + 1);
		u32 klen = le16_to_cpu(r->key_len);
		struct hc_bh_key l;

		hc_bh_locate(ix, key, klen, &l);
		r2 = hc_bh_append(ix, &l, key, klen, key + klen, le32_to_cpu(r->value_len),
				  false, true);
		if (r2 == -ENOSPC)
			break;		/* the quarter is full */
		if (!r2)
			n++;		/* else its blocks are: the next may fit */
	}
	return n;
}

/*
 * The buffer of super table @t is written whole, as its newest incarnation,
 * in one write; the oldest incarnation gives its slot to the next buffer
 * (counted in log_wraps). With @partial, what is live in it is appended to
 * that buffer again (hc_bh_mark_live), the rest evicted.
 */
static int hc_bh_rotate(struct hc_index *ix, u32 t, bool partial)
{
	struct hc_bh *bh = hc_bh(ix);
	u32 s, live = 0, kept = 0, recs;
	int r;

	r = hc_bh_write(ix, t, 0, bh->nblk);
	if (r)
		return r;
	ix->st.log_wraps++;
	s = (bh->head[t] + 1) % bh->k;
	recs = bh->recs[(size_t)t * bh->k + s];
	if (bh->gen[(size_t)t * bh->k + s]) {
		if (partial && recs)
			live = hc_bh_mark_live(ix, t, s);
		hc_bh_drop_slot(ix, t, s);
	}
	bh->head[t] = s;
	hc_bh_buf_init(ix, t, bh->next_gen++);
	if (live)
		kept = hc_bh_keep_live(ix, t);
	ix->st.evictions += recs - min(recs, kept);
	ix->st.overwrites += kept;
	/*
	 * The eviction made durable: the new generation's first block over the
	 * old incarnation, which an attach after a crash would otherwise find
	 * there whole and take back (and a key whose DELETE found nothing, gone
	 * with it, would come back). Left dirty if it fails: a flush retries.
	 * (What was kept is as durable as any insert: at the next flush.)
	 */
	__set_bit((size_t)t * bh->nblk, bh->dirty);
	r = hc_bh_write(ix, t, 0, 1);
	if (r || !ix->ckpt_every)
		return r;
	/*
	 * A periodic checkpoint, the buffers as they are (hc_bh_ckpt_save): due
	 * every ckpt_every rotations, and before a super table goes round its
	 * whole ring since the last (its replay would find its head gone)
	 */
	++bh->rot_t[t];
	if (++bh->rot_since < ix->ckpt_every && bh->rot_t[t] < bh->k - 1)
		return 0;
	bh->rot_since = 0;
	memset(bh->rot_t, 0, (size_t)bh->tables * sizeof(*bh->rot_t));
	bh->periodic = true;
	hc_ckpt_periodic(ix);
	bh->periodic = false;
	return 0;
}

/* ---------------------------------------------------------------------
 * Operations
 */

/*
 * Append a record of @key to its super table's buffer, rotating it when it
 * is full; @kept: a record partial discard keeps, which takes no more than a
 * quarter of the buffer and never rotates (-ENOSPC instead)
 */
static int hc_bh_append(struct hc_index *ix, const struct hc_bh_key *l, const u8 *key,
			u32 klen, const void *val, u64 vlen, bool tomb, bool kept)
{
	struct hc_bh *bh = hc_bh(ix);
	u32 len = hc_bh_rec_len(klen, vlen), b, room = ix->block_size - HC_BH_HDR;
	u32 cap = kept ? bh->inc_bytes / 4 : bh->inc_bytes / 2;
	bool rotated = false;
	struct hc_bh_block *h1, *h;
	struct hc_bh_rec *rec;
	u8 *buf;
	int r;

	/* at most half full (the paper's cuckoo bound), and room in one of two blocks */
	for (;;) {
		buf = hc_bh_buf(ix, l->t);
		h1 = (void *)(buf + (size_t)l->b1 * ix->block_size);
		h = (void *)(buf + (size_t)l->b2 * ix->block_size);
		if (bh->fill[l->t] + len <= cap) {
			if (le32_to_cpu(h1->used) + len <= room) {
				b = l->b1;
				break;
			}
			if (le32_to_cpu(h->used) + len <= room) {
				b = l->b2;
				h1->flags |= cpu_to_le16(HC_BH_OVERFLOW);
				__set_bit((size_t)l->t * bh->nblk + l->b1, bh->dirty);
				break;
			}
		}
		if (kept)	/* -ENOSPC: the quarter is full; -EAGAIN: its blocks are */
			return bh->fill[l->t] + len > cap ? -ENOSPC : -EAGAIN;
		/* an empty buffer takes any record that fits a block */
		if (WARN_ON_ONCE(!bh->fill[l->t]))
			return -EFBIG;
		/*
		 * Partial discard at the first rotation only: what it keeps may
		 * leave this record's blocks full, and the next one is then
		 * FIFO's, after which the buffer is empty.
		 */
		r = hc_bh_rotate(ix, l->t, !rotated && (ix->flags & HC_FORMAT_PARTIAL));
		if (r)
			return r;
		rotated = true;
	}
	h = (void *)(buf + (size_t)b * ix->block_size);
	rec = (void *)((u8 *)h + HC_BH_HDR + le32_to_cpu(h->used));
	memset(rec, 0, len);
	rec->key_len = cpu_to_le16(klen);
	rec->flags = cpu_to_le16(tomb ? HC_BH_TOMB : 0);
	rec->value_len = cpu_to_le32(vlen);
	rec->seq = cpu_to_le64(++ix->wseq);
	memcpy(rec + 1, key, klen);
	if (vlen)
		memcpy((u8 *)(rec + 1) + klen, val, vlen);
	rec->crc = cpu_to_le32(hc_bh_rec_crc(ix, le64_to_cpu(h->gen), rec, klen, vlen));
	h->used = cpu_to_le32(le32_to_cpu(h->used) + len);
	__set_bit((size_t)l->t * bh->nblk + b, bh->dirty);
	bh->fill[l->t] += len;
	bh->recs[(size_t)l->t * bh->k + bh->head[l->t]]++;
	hc_bh_filter_add(ix, l, bh->head[l->t]);
	return 0;
}

/*
 * Find @key: in its buffer, then in the incarnations its filters name,
 * newest first. A found record is copied to @out (one block, from ix->buf);
 * its place on the device in *@dev_off.
 */
static int hc_bh_find(struct hc_index *ix, const u8 *key, u32 klen, const struct hc_bh_key *l,
		      const struct hc_bh_rec **out, u64 *dev_off, u32 depth)
{
	struct hc_bh *bh = hc_bh(ix);
	u32 t = l->t, j, s, i, blks[2] = { l->b1, l->b2 };
	const struct hc_bh_block *h1;
	const struct hc_bh_rec *r, *best;
	u64 mask, gen, boff = 0;
	u8 *buf = hc_bh_buf(ix, t);
	int err;

	*out = NULL;
	/* the buffer: the home block, and the second one if the home overflowed */
	h1 = (const struct hc_bh_block *)(buf + (size_t)l->b1 * ix->block_size);
	best = NULL;
	for (i = 0; i < 2; i++) {
		const u8 *blk = buf + (size_t)blks[i] * ix->block_size;

		r = hc_bh_find_in(ix, blk, key, klen);
		if (r && (!best || le64_to_cpu(r->seq) > le64_to_cpu(best->seq))) {
			best = r;
			boff = (u64)blks[i] * ix->block_size + ((const u8 *)r - blk);
		}
		if (!(le16_to_cpu(h1->flags) & HC_BH_OVERFLOW))
			break;
	}
	if (best) {
		*out = best;
		*dev_off = hc_bh_slot_off(ix, t, bh->head[t]) + boff;
		return 0;
	}
	mask = hc_bh_candidates(ix, l);
	for (j = 1; j <= depth && mask; j++) {
		s = (bh->head[t] + bh->k - j) % bh->k;
		if (!(mask & BIT_ULL(s)) || !bh->gen[(size_t)t * bh->k + s])
			continue;
		mask &= ~BIT_ULL(s);
		best = NULL;
		for (i = 0; i < 2; i++) {
			u8 *blk = ix->buf + (size_t)i * ix->block_size;
			u64 off = hc_bh_slot_off(ix, t, s) + (u64)blks[i] * ix->block_size;

			err = hc_io(ix, REQ_OP_READ, off, blk, ix->block_size);
			if (err)
				return err;
			/* a block of another generation holds nothing of this incarnation */
			if (!hc_bh_block_ok(ix, (void *)blk, t, s, &gen) ||
			    gen != bh->gen[(size_t)t * bh->k + s])
				break;
			r = hc_bh_find_in(ix, blk, key, klen);
			if (r && (!best || le64_to_cpu(r->seq) > le64_to_cpu(best->seq))) {
				best = r;
				*dev_off = off + ((const u8 *)r - blk);
			}
			if (!(le16_to_cpu(((struct hc_bh_block *)blk)->flags) & HC_BH_OVERFLOW))
				break;
		}
		if (best) {
			*out = best;
			return 0;
		}
		ix->st.false_positives++;
	}
	return 0;
}

/* whether a record found at @dev_off of super table @t is in its buffer */
static bool hc_bh_buffered(struct hc_index *ix, u32 t, u64 dev_off)
{
	u64 head = hc_bh_slot_off(ix, t, hc_bh(ix)->head[t]);

	return dev_off >= head && dev_off < head + hc_bh(ix)->inc_bytes;
}

static int hc_bh_lookup(struct hc_index *ix, const u8 *key, u32 klen, void *kval,
			struct hc_object *o)
{
	const struct hc_bh_rec *r;
	u64 r0 = ix->st.read_ios, w0 = ix->st.write_ios, ios, dev_off = 0;
	struct hc_bh_key l;
	int err;

	ix->st.lookups++;
	hc_bh_locate(ix, key, klen, &l);
	err = hc_bh_find(ix, key, klen, &l, &r, &dev_off, hc_bh(ix)->k - 1);
	/* LOOKUP hands out a device offset: a buffered record must be there */
	if (!err && r && !kval && !(le16_to_cpu(r->flags) & HC_BH_TOMB) &&
	    hc_bh_buffered(ix, l.t, dev_off))
		err = hc_bh_flush_table(ix, l.t);
	ios = ix->st.read_ios - r0 + ix->st.write_ios - w0;
	if (err) {
		ix->st.lookup_ios += ios;
		return err;
	}
	o->found = r && !(le16_to_cpu(r->flags) & HC_BH_TOMB);
	hc_count_lookup(ix, o->found, ios);
	if (!o->found)
		return 0;
	o->dev_offset = dev_off + HC_BH_REC + le16_to_cpu(r->key_len);
	if (kval)
		memcpy(kval, (const u8 *)(r + 1) + le16_to_cpu(r->key_len),
		       min_t(u64, le32_to_cpu(r->value_len), o->value_len));
	o->value_len = le32_to_cpu(r->value_len);
	/*
	 * LRU (the paper's: FIFO plus a re-insert of what is used): a GET that
	 * found the record in an incarnation puts it in the buffer again, so it
	 * outlives the incarnation. r is in ix->buf, which the append and a
	 * rotate it may cause do not use (partial discard's would: it is not
	 * formatted with LRU). Best effort: the value is the
	 * caller's already, and a failed append leaves the index as a PUT's
	 * failure would (the rotate's eviction is FIFO's own). Not for LOOKUP:
	 * the offset it hands out is the incarnation's copy.
	 */
	if (kval && (ix->flags & HC_FORMAT_LRU) && !hc_bh_buffered(ix, l.t, dev_off)) {
		w0 = ix->st.write_ios;
		if (!hc_bh_append(ix, &l, key, klen, (const u8 *)(r + 1) + le16_to_cpu(r->key_len),
				  le32_to_cpu(r->value_len), false, false))
			ix->st.overwrites++;
		ix->st.lookup_ios += ix->st.write_ios - w0;
		o->dev_offset = 0;	/* the copy read may be gone */
	}
	return 0;
}

static int hc_bh_insert(struct hc_index *ix, const u8 *key, u32 klen, const void *val,
			u64 vlen, u32 group)
{
	u64 w0 = ix->st.write_ios + ix->st.read_ios;
	struct hc_bh_key l;
	int r;

	if (vlen > hc_max_value(ix) || hc_bh_rec_len(klen, vlen) > ix->block_size - HC_BH_HDR)
		return -EFBIG;
	hc_bh_locate(ix, key, klen, &l);
	/* an update is an insert of a newer record: no lookup (the paper's) */
	r = hc_bh_append(ix, &l, key, klen, val, vlen, false, false);
	if (!r)
		ix->st.inserts++;
	/* (reads: partial discard's, at a rotation) */
	ix->st.insert_ios += ix->st.write_ios + ix->st.read_ios - w0;
	return r;
}

static int hc_bh_remove(struct hc_index *ix, const u8 *key, u32 klen, struct hc_object *o)
{
	const struct hc_bh_rec *r;
	struct hc_bh_key l;
	u64 dev_off;
	int err;

	hc_bh_locate(ix, key, klen, &l);
	err = hc_bh_find(ix, key, klen, &l, &r, &dev_off, hc_bh(ix)->k - 1);
	if (err)
		return err;
	o->found = r && !(le16_to_cpu(r->flags) & HC_BH_TOMB);
	if (!o->found)
		return 0;
	err = hc_bh_append(ix, &l, key, klen, NULL, 0, true, false);
	if (!err)
		ix->st.deletes++;
	return err;
}

static int hc_bh_flush(struct hc_index *ix)
{
	u32 t;
	int r;

	for (t = 0; t < hc_bh(ix)->tables; t++) {
		r = hc_bh_flush_table(ix, t);
		if (r)
			return r;
	}
	return 0;
}

/* records held: in the buffers and the incarnations (a key's older copies count) */
static u64 hc_bh_objects(struct hc_index *ix)
{
	struct hc_bh *bh = hc_bh(ix);
	u64 n = 0, i;

	for (i = 0; i < (u64)bh->tables * bh->k; i++)
		n += bh->recs[i];
	return n;
}

/* ---------------------------------------------------------------------
 * Attach
 */

/*
 * Read super table @t's slot @s into bh->scan: its generation, in *@best, is
 * the newest of its valid blocks' (0: no incarnation)
 */
static int hc_bh_read_slot(struct hc_index *ix, u32 t, u32 s, u64 *best)
{
	struct hc_bh *bh = hc_bh(ix);
	u64 gen;
	u32 b;
	int r;

	*best = 0;
	r = hc_io(ix, REQ_OP_READ, hc_bh_slot_off(ix, t, s), bh->scan, bh->inc_bytes);
	if (r)
		return r;
	for (b = 0; b < bh->nblk; b++)
		if (hc_bh_block_ok(ix, bh->scan + (size_t)b * ix->block_size, t, s, &gen))
			*best = max(*best, gen);
	return 0;
}

/*
 * The slot read in bh->scan is incarnation @best of super table @t: the
 * records of its blocks of that generation go into its filter (added to
 * what it has), its generation and record count are set
 */
static void hc_bh_take_slot(struct hc_index *ix, u32 t, u32 s, u64 best)
{
	struct hc_bh *bh = hc_bh(ix);
	u32 b, n = 0;
	u64 gen;

	for (b = 0; b < bh->nblk; b++) {
		const u8 *blk = bh->scan + (size_t)b * ix->block_size;
		const struct hc_bh_rec *rec;
		u32 off = HC_BH_HDR;
		bool torn = false;

		if (!hc_bh_block_ok(ix, (const void *)blk, t, s, &gen) || gen != best)
			continue;
		while ((rec = hc_bh_next(ix, blk, &off, &torn))) {
			struct hc_bh_key l;

			hc_bh_locate(ix, (const u8 *)(rec + 1), le16_to_cpu(rec->key_len), &l);
			if (l.t != t)
				continue;	/* not where its hash puts it: ignore */
			hc_bh_filter_add(ix, &l, s);
			ix->wseq = max(ix->wseq, le64_to_cpu(rec->seq));
			n++;
		}
		ix->torn += torn;
	}
	bh->gen[(size_t)t * bh->k + s] = best;
	bh->recs[(size_t)t * bh->k + s] = n;
}

/*
 * Read super table @t's slot @s: its generation is the newest of its valid
 * blocks', and the records of the blocks of that generation go into its
 * filter. Its generation in *@slot_gen (0: no incarnation).
 */
static int hc_bh_scan_slot(struct hc_index *ix, u32 t, u32 s, u64 *slot_gen)
{
	struct hc_bh *bh = hc_bh(ix);
	int r;

	bh->gen[(size_t)t * bh->k + s] = 0;
	bh->recs[(size_t)t * bh->k + s] = 0;
	r = hc_bh_read_slot(ix, t, s, slot_gen);
	if (!r && *slot_gen)
		hc_bh_take_slot(ix, t, s, *slot_gen);
	return r;
}

/*
 * Make the newest incarnation @s (generation @gen) of super table @t its
 * buffer again, so that inserts go on filling it: its blocks of that
 * generation as they are up to their last whole record, the others empty.
 * @ckpt (an attach from the checkpoint, which names @gen): -EINVAL if a
 * block there has a newer generation or a record a newer write sequence
 * than the checkpoint says (it would be lost, or shadow what comes next).
 */
static int hc_bh_resume(struct hc_index *ix, u32 t, u32 s, u64 gen, bool ckpt)
{
	struct hc_bh *bh = hc_bh(ix);
	u8 *buf = hc_bh_buf(ix, t);
	u32 b, fill = 0;
	int r;

	r = hc_io(ix, REQ_OP_READ, hc_bh_slot_off(ix, t, s), buf, bh->inc_bytes);
	if (r)
		return r;
	for (b = 0; b < bh->nblk; b++) {
		u8 *blk = buf + (size_t)b * ix->block_size;
		struct hc_bh_block *hd = (void *)blk;
		const struct hc_bh_rec *rec;
		u32 off = HC_BH_HDR;
		bool torn = false;
		u16 flags = 0;
		bool ok;
		u64 g;

		ok = hc_bh_block_ok(ix, hd, t, s, &g);
		if (ok && ckpt && g > gen)
			return -EINVAL;
		if (ok && g == gen) {
			while ((rec = hc_bh_next(ix, blk, &off, &torn)))
				if (ckpt && le64_to_cpu(rec->seq) > ix->wseq)
					return -EINVAL;
			flags = le16_to_cpu(hd->flags);
		}
		/* a torn tail (or another generation's block) is appended over */
		memset(blk + off, 0, ix->block_size - off);
		memset(hd, 0, HC_BH_HDR);
		hd->magic = cpu_to_le32(HC_BH_BLOCK_MAGIC);
		hd->format_id = cpu_to_le64(ix->format_id);
		hd->gen = cpu_to_le64(gen);
		hd->table = cpu_to_le32(t);
		hd->slot = cpu_to_le16(s);
		hd->flags = cpu_to_le16(flags);
		hd->used = cpu_to_le32(off - HC_BH_HDR);
		fill += off - HC_BH_HDR;
	}
	bh->fill[t] = fill;
	bitmap_clear(bh->dirty, (size_t)t * bh->nblk, bh->nblk);
	return 0;
}

/*
 * Attach: read every incarnation (the whole region) and rebuild the filters;
 * each super table's newest incarnation becomes its buffer again (nothing is
 * evicted by an attach). The ring must go newest to oldest backwards from
 * there: a slot out of that order (a device changed under the index) is
 * dropped, and counted in bad_entries.
 */
static int hc_bh_recover(struct hc_index *ix)
{
	struct hc_bh *bh = hc_bh(ix);
	u64 gen, newest, maxgen = 0, bad;
	u32 t, s, j, h;
	int r = 0;

	bh->scan = kvmalloc(bh->inc_bytes, GFP_KERNEL);
	if (!bh->scan)
		return -ENOMEM;
	for (t = 0; t < bh->tables && !r; t++) {
		newest = 0;
		h = 0;
		for (s = 0; s < bh->k && !r; s++) {
			r = hc_bh_scan_slot(ix, t, s, &gen);
			if (gen > newest) {
				newest = gen;
				h = s;
			}
			cond_resched();
		}
		if (r)
			break;
		maxgen = max(maxgen, newest);
		/* backwards from the newest, generations must fall */
		gen = newest;
		for (j = 1; j < bh->k && newest; j++) {
			u64 g;

			s = (h + bh->k - j) % bh->k;
			g = bh->gen[(size_t)t * bh->k + s];
			if (g && g < gen) {
				gen = g;
				continue;
			}
			if (g)
				ix->st.bad_entries++;
			hc_bh_drop_slot(ix, t, s);
			gen = 0;	/* and every older one */
		}
		bh->head[t] = h;
	}
	kvfree(bh->scan);
	bh->scan = NULL;
	if (r)
		return r;
	bh->next_gen = maxgen + 1;
	for (t = 0; t < bh->tables && !r; t++) {
		gen = bh->gen[(size_t)t * bh->k + bh->head[t]];
		if (gen)
			r = hc_bh_resume(ix, t, bh->head[t], gen, false);
		else
			hc_bh_buf_init(ix, t, bh->next_gen++);
	}
	/* the scan's I/O is not an operation's; slots dropped stay counted */
	bad = ix->st.bad_entries;
	memset(&ix->st, 0, sizeof(ix->st));
	ix->st.bad_entries = bad;
	return r;
}

/* ---------------------------------------------------------------------
 * The checkpoint: the filters, each slot's generation and records, each
 * super table's head, the next generation; the buffers are read back from
 * the head incarnations (their RAM's size), as after a scan
 */

static unsigned int hc_bh_ckpt_parts(struct hc_index *ix, struct hc_ckpt_part *p)
{
	struct hc_bh *bh = hc_bh(ix);
	u64 tk = (u64)bh->tables * bh->k;

	p[0].p = bh->slices;
	p[0].bytes = (u64)bh->tables * bh->m * sizeof(u64);
	p[1].p = bh->gen;
	p[1].bytes = tk * sizeof(u64);
	p[2].p = bh->recs;
	p[2].bytes = tk * sizeof(u32);
	p[3].p = bh->head;
	p[3].bytes = (u64)bh->tables * sizeof(u32);
	return 4;
}

/*
 * A detach's: the buffers are on the device (its flush), nothing left
 * dirty. A periodic one (@bh->periodic) need not wait for them: the replay
 * after a crash reads each head again and counts what landed (the filters
 * may then hold bits of records that did not: a lookup reads the blocks)
 */
static int hc_bh_ckpt_save(struct hc_index *ix, u64 *state)
{
	struct hc_bh *bh = hc_bh(ix);
	size_t blocks = (size_t)bh->tables * bh->nblk;

	if (!bh->periodic && find_first_bit(bh->dirty, blocks) < blocks)
		return -EBUSY;
	state[0] = bh->next_gen;
	return 0;
}

/*
 * As the scan leaves them: a head inside the ring and in use; going
 * backwards round the ring from it, generations that fall, then none;
 * every one below the next; records no more than an incarnation holds, and
 * none in a slot not in use. The filters may hold any bits: a lookup reads
 * only slots in use, and checks the blocks and records it reads. Then each
 * head incarnation becomes its buffer again (hc_bh_resume).
 */
static int hc_bh_ckpt_load(struct hc_index *ix, const u64 *state)
{
	struct hc_bh *bh = hc_bh(ix);
	u32 t, j, s, most = bh->inc_bytes / HC_BH_REC;
	u64 next = state[0], g, prev, newest = 0;
	int r = 0;

	if (!next || next >= HC_BH_COUNT_MAX || ix->wseq >= HC_BH_COUNT_MAX)
		return -EINVAL;
	for (j = 1; j < HC_CKPT_STATE; j++)
		if (state[j])
			return -EINVAL;
	for (t = 0; t < bh->tables; t++) {
		if (bh->head[t] >= bh->k)
			return -EINVAL;
		prev = next;
		for (j = 0; j < bh->k; j++) {
			s = (bh->head[t] + bh->k - j) % bh->k;
			g = bh->gen[(size_t)t * bh->k + s];
			if ((!g && !j) || (g && g >= prev) ||
			    bh->recs[(size_t)t * bh->k + s] > (g ? most : 0))
				return -EINVAL;
			prev = g ?: 1;	/* none: every older one none too */
		}
		newest = max(newest, bh->gen[(size_t)t * bh->k + bh->head[t]]);
		if (!(t & 0xff))
			cond_resched();
	}
	/* every generation given is a head's, the newest the last given */
	if (next != newest + 1)
		return -EINVAL;
	bh->next_gen = next;
	/* after a crash, the buffers come after what was written since (hc_bh_ckpt_tail) */
	if (ix->ckpt_replay)
		return 0;
	for (t = 0; t < bh->tables && !r; t++)
		r = hc_bh_resume(ix, t, bh->head[t], bh->gen[(size_t)t * bh->k + bh->head[t]],
				 true);
	return r;
}

/*
 * After a crash, from the last periodic checkpoint (its filters, each
 * slot's generation, each head, the next generation): what was written
 * since is, in each super table, records appended to its head incarnation
 * and the incarnations its rotations wrote after it round the ring, each of
 * a generation the checkpoint did not give yet (its next one or later),
 * rising. Read the head again (its filter takes the new records: bits are
 * only added), then the slots after it while they hold such a generation,
 * each dropped and taken as the scan takes it, and stop at the first that
 * does not; the last is the head, whose incarnation becomes the buffer
 * again, as after a scan. A head whose place holds another generation now
 * (the ring went round since, or the device changed): -EINVAL, the attach
 * scans; one whose place holds none (its buffer never written) is empty.
 * That reads each super table's head twice, its new incarnations and one
 * more: O(buffers + written since).
 */
static int hc_bh_ckpt_tail(struct hc_index *ix)
{
	struct hc_bh *bh = hc_bh(ix);
	u64 first = bh->next_gen, g, prev;
	u32 t, j, s, h;
	int r = 0;

	bh->scan = kvmalloc(bh->inc_bytes, GFP_KERNEL);
	if (!bh->scan)
		return -ENOMEM;
	for (t = 0; t < bh->tables && !r; t++) {
		h = bh->head[t];
		prev = bh->gen[(size_t)t * bh->k + h];
		r = hc_bh_read_slot(ix, t, h, &g);
		if (!r && g && g != prev)
			r = -EINVAL;
		if (r)
			break;
		/* nothing of it ever written (no rotation, no flush since it began): empty */
		if (g)
			hc_bh_take_slot(ix, t, h, g);
		else
			bh->recs[(size_t)t * bh->k + h] = 0;
		for (j = 1; j < bh->k; j++) {
			s = (h + j) % bh->k;
			r = hc_bh_read_slot(ix, t, s, &g);
			if (r || g < first || g <= prev)
				break;
			hc_bh_drop_slot(ix, t, s);
			hc_bh_take_slot(ix, t, s, g);
			bh->head[t] = s;
			bh->next_gen = max(bh->next_gen, g + 1);
			prev = g;
		}
		cond_resched();
	}
	kvfree(bh->scan);
	bh->scan = NULL;
	for (t = 0; t < bh->tables && !r; t++)
		r = hc_bh_resume(ix, t, bh->head[t], bh->gen[(size_t)t * bh->k + bh->head[t]],
				 false);
	return r;
}

/* ---------------------------------------------------------------------
 * Format, geometry, RAM
 */

/*
 * Filter bits an incarnation: tag_bits per 256 bytes of it. Half full of
 * 256-byte records (the paper's model needs the entry size; ours are as
 * long as their keys and values), that is 2 x tag_bits bits a record: 16 at
 * the default 8, the paper's configuration.
 */
static u32 hc_bh_filter_bits(struct hc_index *ix, u64 inc_bytes)
{
	return max_t(u32, 64, ix->tag_bits * (u32)(inc_bytes / 256));
}

static int hc_bh_format(struct hc_index *ix, const struct hc_format *f)
{
	u64 avail = ix->dev_bytes - HC_TABLE_OFFSET, fl, inc, tables;

	/* LRU and partial discard: one way or the other to keep what is evicted */
	if (f->resident_sets || f->ram_ways ||
	    (f->flags & (HC_FORMAT_LRU | HC_FORMAT_PARTIAL)) == (HC_FORMAT_LRU | HC_FORMAT_PARTIAL))
		return -EINVAL;
	ix->ways = f->ways ?: HC_BH_DEF_K;
	if (ix->ways < 2 || ix->ways > 64 || (u64)ix->ways * ix->block_size > HC_MAX_SET_BYTES)
		return -EINVAL;
	fl = f->log_bytes ?: avail;
	/* (before sets * ways, which could wrap to 0) */
	if (fl > avail || f->sets > U32_MAX)
		return -ENOSPC;
	inc = f->buffer_bytes;
	if (!inc && f->sets)
		inc = min_t(u64, HC_BH_MAX_INC,
			    rounddown(div64_u64(fl, f->sets * ix->ways), ix->block_size));
	else if (!inc)
		inc = max_t(u64, 2 * ix->block_size, HC_BH_DEF_INC);
	/* a small device: smaller buffers, not fewer incarnations */
	if (!f->buffer_bytes && !f->sets && inc * ix->ways > fl)
		inc = rounddown(div_u64(fl, ix->ways), ix->block_size);
	if (inc % ix->block_size || inc > HC_BH_MAX_INC)
		return -EINVAL;
	if (inc < 2 * ix->block_size)
		return -ENOSPC;
	tables = f->sets ?: div64_u64(fl, inc * ix->ways);
	if (!tables || tables > U32_MAX || tables * ix->ways * inc > fl)
		return -ENOSPC;
	ix->sets = tables;
	ix->log_off = HC_TABLE_OFFSET;
	ix->log_blocks = div_u64(tables * ix->ways * inc, ix->block_size);
	ix->buffer_bytes = inc;
	return 0;
}

static bool hc_bh_geometry_ok(struct hc_index *ix)
{
	u64 inc = ix->buffer_bytes;

	return !ix->resident_sets && !ix->ram_ways && ix->ways >= 2 && ix->ways <= 64 &&
	       (ix->flags & (HC_FORMAT_LRU | HC_FORMAT_PARTIAL)) !=
	       (HC_FORMAT_LRU | HC_FORMAT_PARTIAL) &&
	       inc && !(inc % ix->block_size) && inc >= 2 * ix->block_size &&
	       inc <= HC_BH_MAX_INC && ix->sets <= U32_MAX && ix->log_off == HC_TABLE_OFFSET &&
	       ix->log_blocks * ix->block_size == ix->sets * ix->ways * inc &&
	       ix->sets * ix->ways * inc <= ix->dev_bytes - HC_TABLE_OFFSET;
}

static void hc_bh_free(struct hc_index *ix)
{
	struct hc_bh *bh = hc_bh(ix);

	if (!bh)
		return;
	kvfree(bh->bufs);
	kvfree(bh->slices);
	kvfree(bh->gen);
	kvfree(bh->recs);
	kvfree(bh->fill);
	kvfree(bh->head);
	kvfree(bh->dirty);
	kvfree(bh->rot_t);
	kvfree(bh->pd);
	bitmap_free(bh->keep);
	kvfree(bh->scan);
	kfree(bh);
	ix->priv = NULL;
}

static int hc_bh_alloc_ram(struct hc_index *ix)
{
	struct hc_bh *bh = kzalloc(sizeof(*bh), GFP_KERNEL);
	u64 p = ix->sets, bytes[8];
	u32 i;

	if (!bh)
		return -ENOMEM;
	ix->priv = bh;
	bh->tables = p;
	bh->k = ix->ways;
	bh->inc_bytes = ix->buffer_bytes;
	bh->nblk = bh->inc_bytes / ix->block_size;
	bh->m = hc_bh_filter_bits(ix, bh->inc_bytes);
	/* ln 2 x the filter bits a record has, at 256-byte records half filling it */
	bh->hashes = clamp_t(u32, DIV_ROUND_CLOSEST(2 * ix->tag_bits * 693, 1000), 1, 16);
	bh->fkey.key[0] = ix->seed ^ 0x6a09e667f3bcc908ULL;
	bh->fkey.key[1] = ix->seed ^ 0xbb67ae8584caa73bULL;
	ix->max_value = ix->block_size - HC_BH_HDR - HC_BH_REC - HC_KEY_MAX;
	/* records of 256 bytes, incarnations half full */
	ix->slots = p * bh->k * bh->inc_bytes / 512;
	bytes[0] = p * bh->inc_bytes;
	bytes[1] = p * bh->m * sizeof(u64);
	bytes[2] = p * bh->k * sizeof(u64);
	bytes[3] = p * bh->k * sizeof(u32);
	bytes[4] = p * sizeof(u32);
	bytes[5] = p * sizeof(u32);
	bytes[6] = BITS_TO_LONGS(p * bh->nblk) * sizeof(long);
	bytes[7] = p * sizeof(u32);
	bh->bufs = hc_ram_alloc(ix, bytes[0]);
	bh->slices = hc_ram_alloc(ix, bytes[1]);
	bh->gen = hc_ram_alloc(ix, bytes[2]);
	bh->recs = hc_ram_alloc(ix, bytes[3]);
	bh->fill = hc_ram_alloc(ix, bytes[4]);
	bh->head = hc_ram_alloc(ix, bytes[5]);
	bh->dirty = hc_ram_alloc(ix, bytes[6]);
	bh->rot_t = hc_ram_alloc(ix, bytes[7]);
	if (!bh->bufs || !bh->slices || !bh->gen || !bh->recs || !bh->fill || !bh->head ||
	    !bh->dirty || !bh->rot_t)
		return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(bytes); i++)
		ix->bits_bytes += bytes[i];
	if (ix->flags & HC_FORMAT_PARTIAL) {
		bh->pd = kvmalloc(bh->inc_bytes, GFP_KERNEL);
		bh->keep = bitmap_zalloc(bh->inc_bytes / 8, GFP_KERNEL);
		if (!bh->pd || !bh->keep)
			return -ENOMEM;
		ix->bits_bytes += bh->inc_bytes + BITS_TO_LONGS(bh->inc_bytes / 8) * sizeof(long);
	}
	/*
	 * A periodic checkpoint every quarter of the ring's rotations (its
	 * filters are a fifth of what the incarnations hold: every sixteenth
	 * would add a quarter to the bytes written), and in a small ring
	 * every 4 (or k - 1: never a whole ring round)
	 */
	if (ix->ckpt_bytes)
		ix->ckpt_every = max_t(u64, p * bh->k / 4, min_t(u32, 4, bh->k - 1));
	/* a new index: every super table's buffer in its slot 0 */
	bh->next_gen = 1;
	for (i = 0; i < p; i++)
		hc_bh_buf_init(ix, i, bh->next_gen++);
	return 0;
}

/* attach reads one incarnation at a time */
static u64 hc_bh_recover_bytes(struct hc_index *ix)
{
	return ix->buffer_bytes;
}

const struct hc_policy_ops hc_bh_ops = {
	.name		= "bufferhash",
	.format_flags	= HC_FORMAT_LRU | HC_FORMAT_PARTIAL,
	.format		= hc_bh_format,
	.geometry_ok	= hc_bh_geometry_ok,
	.alloc_ram	= hc_bh_alloc_ram,
	.free		= hc_bh_free,
	.recover	= hc_bh_recover,
	.recover_bytes	= hc_bh_recover_bytes,
	.insert		= hc_bh_insert,
	.lookup		= hc_bh_lookup,
	.remove		= hc_bh_remove,
	.flush		= hc_bh_flush,
	.objects	= hc_bh_objects,
	.ckpt_parts	= hc_bh_ckpt_parts,
	.ckpt_save	= hc_bh_ckpt_save,
	.ckpt_load	= hc_bh_ckpt_load,
	.ckpt_tail	= hc_bh_ckpt_tail,
};
