// SPDX-License-Identifier: GPL-2.0
/*
 * The table policies (Basic, Set, SetMem, SetMemLRU): every object in a slot
 * of its set in the Disk Table, written in place.
 */

#include <linux/hash.h>

#include "hc-int.h"

/* ---------------------------------------------------------------------
 * SetMemLRU: SetMem's fields for a bounded number of sets. A set that is
 * not resident is read from the device whole (one I/O, as a Set lookup)
 * and its fields rebuilt from the slots, ranked by when they were written;
 * it takes the frame of a set not used lately (CLOCK).
 */

HC_TESTABLE int hc_frames_alloc(struct hc_index *ix)
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
HC_TESTABLE u32 hc_probe(struct hc_index *ix, u64 set)
{
	u32 i = hc_home(ix, set);

	while (ix->htab[i] && ix->frame_set[ix->htab[i] - 1] != set)
		i = (i + 1) & ix->hmask;
	return i;
}

/* take @set out of htab, moving later entries of its run back */
HC_TESTABLE void hc_unhash(struct hc_index *ix, u64 set)
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
HC_TESTABLE u32 hc_frame_victim(struct hc_index *ix)
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
int hc_set_base(struct hc_index *ix, u64 set)
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

/* ---------------------------------------------------------------------
 * PUT, GET and LOOKUP, DELETE
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
	if (r) {
		ix->st.lookup_ios += ios;
		return r;
	}
	o->found = found;
	hc_count_lookup(ix, found, ios);
	if (!found)
		return 0;
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
 * Attach: rebuild the RAM part from the Disk Table
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

/* ---------------------------------------------------------------------
 * Format and attach: the Disk Table's geometry
 */

static int hc_table_format(struct hc_index *ix, const struct hc_format *f)
{
	u64 fit;

	/* parameters of another policy */
	if ((f->resident_sets && ix->policy != HC_POLICY_SETMEMLRU) || f->ram_ways ||
	    f->log_bytes || f->buffer_bytes)
		return -EINVAL;
	if (ix->policy == HC_POLICY_BASIC) {
		/* one object per bin */
		if (f->ways > 1)
			return -EINVAL;
		ix->ways = 1;
	}
	/* (a count, not sets * set_bytes: that product can wrap) */
	fit = div64_u64(ix->dev_bytes - HC_TABLE_OFFSET, (u64)ix->ways * ix->block_size);
	ix->sets = f->sets ?: fit;
	if (!ix->sets || ix->sets > fit)
		return -ENOSPC;
	if (ix->policy == HC_POLICY_SETMEMLRU) {
		/* frames name their set in 32 bits */
		if (ix->sets >= U32_MAX || f->resident_sets > ix->sets)
			return -EINVAL;
		ix->resident_sets = f->resident_sets ?: max_t(u32, 1, ix->sets / 4);
	}
	return 0;
}

static bool hc_table_geometry_ok(struct hc_index *ix)
{
	bool lru = ix->policy == HC_POLICY_SETMEMLRU;

	if (lru != (ix->resident_sets && ix->resident_sets <= ix->sets && ix->sets < U32_MAX))
		return false;
	if (ix->ram_ways || ix->buffer_bytes || (ix->policy == HC_POLICY_BASIC && ix->ways != 1))
		return false;
	return ix->sets <= div64_u64(ix->dev_bytes - HC_TABLE_OFFSET,
				     (u64)ix->ways * ix->block_size);
}

/* ---------------------------------------------------------------------
 * The checkpoint: the object count and write counter, and SetMem's fields
 */

static unsigned int hc_table_ckpt_parts(struct hc_index *ix, struct hc_ckpt_part *p)
{
	if (ix->policy != HC_POLICY_SETMEM)
		return 0;
	p[0].p = ix->bits;
	p[0].bytes = ix->bits_bytes;
	return 1;
}

/* an old copy an overwrite could not empty is for the scan to empty */
static int hc_table_ckpt_save(struct hc_index *ix, u64 *state)
{
	return ix->stale_copy ? -EIO : 0;
}

/*
 * A field is valid | rank | tag: any tag is one, but a set's ranks are
 * 0 .. n-1. (A field that names the wrong way costs a read that the slot's
 * own checks refuse, as a tag that matched another key does.)
 */
static int hc_table_ckpt_load(struct hc_index *ix, const u64 *state)
{
	u64 set;
	int i;

	for (i = 0; i < HC_CKPT_STATE; i++)
		if (state[i])
			return -EINVAL;
	if (ix->st.objects > ix->sets * ix->ways)
		return -EINVAL;
	for (set = 0; ix->policy == HC_POLICY_SETMEM && set < ix->sets; set++) {
		if (!hc_ranks_ok(ix, set))
			return -EINVAL;
		if (!(set & 0xfff))
			cond_resched();
	}
	return 0;
}

/* ---------------------------------------------------------------------
 * The ops, one table for the four
 */

const struct hc_policy_ops hc_table_ops = {
	.name		= "table",
	.format		= hc_table_format,
	.geometry_ok	= hc_table_geometry_ok,
	.alloc_ram	= hc_table_alloc_ram,
	.recover	= hc_rebuild,
	.insert		= hc_table_insert,
	.lookup		= hc_table_lookup,
	.remove		= hc_table_remove,
	.ckpt_parts	= hc_table_ckpt_parts,
	.ckpt_save	= hc_table_ckpt_save,
	.ckpt_load	= hc_table_ckpt_load,
};
