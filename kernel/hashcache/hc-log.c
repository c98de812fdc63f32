// SPDX-License-Identifier: GPL-2.0
/*
 * The log policies (Log, LogLRU). Log: objects are records appended to a
 * circular log through a write buffer (one device write for many inserts);
 * RAM holds, per slot of the N-way sets, the tag, the LRU rank, the pass over
 * the log (4 bits) and the record's log block (32 bits). A record overwritten
 * by a later pass is recognised from the pass and the write position, with no
 * I/O. A delete appends a tombstone record, so that a rebuild does not bring
 * the object back. LogLRU: Log with only some ways' pass and block in RAM,
 * the others' in a spill region on the device (hc-fields.c splits the fields).
 */

#include <linux/crc32c.h>
#include <linux/lcm.h>
#include <linux/siphash.h>
#include <linux/sort.h>

#include "hc-int.h"

/* does field @f still point at its record? */
bool hc_log_live(struct hc_index *ix, u64 f)
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
HC_TESTABLE u64 hc_glen_max(struct hc_index *ix)
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
HC_TESTABLE void hc_group_runs(struct hc_index *ix)
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

	if (ix->ckpt_broken)
		return -EIO;
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
	/* these records landed: a checkpoint that cannot be voided fails the next write */
	if (ix->ckpt_every && ix->wseq - ix->ckpt_wseq >= ix->ckpt_every)
		hc_ckpt_periodic(ix);
	return 0;
}

/*
 * Read the record at log block @off into @dst: from the write buffer or the
 * last group read if it is there, else from the device, with the @glen
 * records after it that belong to its group (prefetch) in the same read.
 */
int hc_log_read(struct hc_index *ix, u64 off, u64 glen, void *dst)
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
HC_TESTABLE bool hc_spill_entry_ok(struct hc_index *ix, u64 v)
{
	u64 e = v & (BIT_ULL(ix->lbits) - 1);
	u64 off = (e >> 4) & 0xffffffffULL, glen = e >> HC_LOG_FIELD_BITS;

	if (v & ~(BIT_ULL(63) | (BIT_ULL(ix->lbits) - 1)))
		return false;
	return off < ix->log_blocks && glen <= hc_glen_max(ix) &&
	       off + glen < ix->log_blocks;
}

/* the check bits of @slot's spill entry @e (pass, block, group run) */
static u64 hc_spill_check(struct hc_index *ix, u64 slot, u64 e)
{
	__le64 w[2] = { cpu_to_le64(slot), cpu_to_le64(e) };

	return crc32c((u32)ix->format_id, w, sizeof(w)) & (BIT(HC_SPILL_CHECK_BITS) - 1);
}

/* @slot's spill entry for @e (pass, block, group run): valid, and checked */
u64 hc_spill_seal(struct hc_index *ix, u64 slot, u64 e)
{
	u64 v = BIT_ULL(63) | e;

	if (ix->flags & HC_LL_SB_CHECK)
		v |= hc_spill_check(ix, slot, e) << HC_SPILL_CHECK_SHIFT;
	return v;
}

/*
 * Is @v, read as @slot's entry, one this index wrote there? Its check bits
 * (HC_LL_SB_CHECK), then hc_spill_entry_ok()
 */
HC_TESTABLE bool hc_spill_entry_valid(struct hc_index *ix, u64 slot, u64 v)
{
	u64 mask = (BIT_ULL(HC_SPILL_CHECK_BITS) - 1) << HC_SPILL_CHECK_SHIFT;

	if (ix->flags & HC_LL_SB_CHECK) {
		if ((v & mask) >> HC_SPILL_CHECK_SHIFT !=
		    hc_spill_check(ix, slot, v & (BIT_ULL(ix->lbits) - 1)))
			return false;
		v &= ~mask;
	}
	return hc_spill_entry_ok(ix, v);
}

/*
 * Read back @slot's pass and block (as Log field bits) from the queue or
 * the spill region; *@ok is false if the region does not have them, or has
 * something that is not an entry (counted in bad_entries: the way is free).
 */
int hc_fetch(struct hc_index *ix, u64 slot, u64 *loc, bool *ok)
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
		if ((v & BIT_ULL(63)) && !hc_spill_entry_valid(ix, slot, v)) {
			ix->st.bad_entries++;
			pr_warn_ratelimited("hashcache: %pg: spill entry of slot %llu fails its checks (%#llx): ignored\n",
					    ix->bdev, slot, v);
			v = 0;
		}
	}
	*ok = v & BIT_ULL(63);
	*loc = (v & (BIT_ULL(ix->lbits) - 1)) << hc_gen_shift(ix);
	return 0;
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
	if (r) {
		ix->st.lookup_ios += ios;
		return r;
	}
	hc_count_lookup(ix, found, ios);
	if (!found)
		return 0;
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
	if (r)
		return r;
	/*
	 * A tombstone even for a key not found: its set may have evicted it
	 * (its way given to another key by LRU ranks that GETs moved) while
	 * its record is still in the log, and a scan or a replay, which ranks
	 * by write order, could keep that record and bring the key back
	 */
	r = hc_log_append(ix, key, klen, NULL, 0, 0, true, &off);
	if (r)
		return r;
	if (found) {
		hc_clear(ix, set * ix->ways, way);
		ix->st.deletes++;
	}
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
			spill[w] = cpu_to_le64(hc_spill_seal(ix, slot, loc));
	}
}

/*
 * Keep the short part of every full Log field in @full, the pass and block
 * of each set's ram_ways most recently used ways, and write the others' to
 * the spill region, which is rewritten whole.
 */
static int hc_loglru_split(struct hc_index *ix, const unsigned long *full)
{
	/* a chunk of the spill region: whole sets, whole spill blocks */
	u64 per = rounddown(HC_SCAN_BYTES / sizeof(u64),
			    lcm(HC_SPILL_BLOCK / sizeof(u64), ix->ways));
	u64 slots = ix->sets * ix->ways, i, n, set;
	__le64 *chunk = kvmalloc(HC_SCAN_BYTES, GFP_KERNEL);
	int r = chunk ? 0 : -ENOMEM;

	memset(ix->obits, 0, BITS_TO_LONGS((u64)ix->sets * ix->ram_ways * ix->owidth) *
	       sizeof(long));
	for (i = 0; i < slots && !r; i += n) {
		n = min(per, slots - i);
		memset(chunk, 0, HC_SCAN_BYTES);
		for (set = div_u64(i, ix->ways); set * ix->ways < i + n; set++)
			hc_loglru_keep(ix, full, set, chunk + (set * ix->ways - i));
		r = hc_io(ix, REQ_OP_WRITE, ix->spill_off + i * sizeof(u64), chunk,
			  round_up(n * sizeof(u64), HC_SPILL_BLOCK));
		cond_resched();
	}
	kvfree(chunk);
	return r;
}

/*
 * Run Log's @fn (a rebuild, a replay) on LogLRU's full fields in @full:
 * Log's RAM, for the length of the attach
 */
static int hc_loglru_as_log(struct hc_index *ix, unsigned long *full,
			    int (*fn)(struct hc_index *ix))
{
	unsigned long *keep = ix->bits;
	unsigned int sw = ix->width;
	int r;

	ix->bits = full;
	ix->width = sw + ix->lbits;
	ix->policy = HC_POLICY_LOG;
	r = fn(ix);
	ix->policy = HC_POLICY_LOGLRU;
	ix->bits = keep;
	ix->width = sw;
	return r;
}

/* LogLRU's full fields: as many bits a slot as Log's */
static unsigned long *hc_loglru_full(struct hc_index *ix)
{
	return hc_ram_alloc(ix, BITS_TO_LONGS(ix->sets * ix->ways * (ix->width + ix->lbits)) *
			    sizeof(long));
}

/*
 * LogLRU attach: rebuild full Log fields in a scratch array, then keep
 * part and spill the rest (hc_loglru_split)
 */
static int hc_loglru_rebuild(struct hc_index *ix)
{
	unsigned long *full = hc_loglru_full(ix);
	int r;

	if (!full)
		return -ENOMEM;
	r = hc_loglru_as_log(ix, full, hc_log_rebuild);
	if (!r)
		r = hc_loglru_split(ix, full);
	memset(&ix->st, 0, sizeof(ix->st));
	kvfree(full);
	return r;
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
	/*
	 * Log, LogLRU with HC_LL_SB_COPY: a checkpoint every sixteenth of the
	 * log, so that a crash replays at most that and a buffer
	 * (hc_log_ckpt_tail); a log of fewer than 4 buffers is scanned
	 */
	if ((ix->policy == HC_POLICY_LOG || (ix->flags & HC_LL_SB_COPY)) && ix->ckpt_bytes &&
	    ix->log_blocks >= 4 * ix->wbuf_blocks)
		ix->ckpt_every = div_u64(ix->log_blocks, 16);
	ob = BITS_TO_LONGS(ix->sets * ix->ways * ix->width) * sizeof(long);
	ix->bits = hc_ram_alloc(ix, ob);
	ix->bits_bytes += ob;
	return ix->bits ? 0 : -ENOMEM;
}

/* Does a Log field (of the widest kind this index has) fit in 63 bits (bit 63: spilled)? */
static bool hc_log_fields_fit(struct hc_index *ix)
{
	return 1 + order_base_2(ix->ways) + ix->tag_bits + HC_LOG_FIELD_BITS +
	       (ix->flags & HC_FORMAT_PREFETCH ? HC_GLEN_BITS : 0) <= 63;
}

/*
 * LogLRU: room for periodic checkpoints with a copy of the spill region
 * (HC_LL_SB_COPY)? Sizes format chooses shrink until the checkpoint fits
 * (hc_ckpt_place); sizes given by hand must leave room for it after the
 * spill region: at most 4 bytes a short field (1 + 6 + 16 bits), 8 a RAM
 * way's entry (7 + 44 bits), the copy, and a header rounded up
 */
static bool hc_loglru_copy_fits(struct hc_index *ix, const struct hc_format *f)
{
	u64 copy = hc_spill_bytes(ix), end = ix->spill_off + copy;
	u64 need = 3 * HC_SB_BYTES + ix->sets * ix->ways * 4 + ix->sets * ix->ram_ways * 8 + copy;

	if (copy > HC_LL_COPY_MAX)
		return false;
	return (!f->log_bytes && !f->sets) || (end <= ix->dev_bytes && need <= ix->dev_bytes - end);
}

static int hc_log_format(struct hc_index *ix, const struct hc_format *f)
{
	u64 avail = ix->dev_bytes - HC_TABLE_OFFSET, lb;

	/* parameters of another policy, fields that do not fit */
	if (f->resident_sets || f->buffer_bytes ||
	    (f->ram_ways && ix->policy != HC_POLICY_LOGLRU) ||
	    !hc_log_fields_fit(ix))
		return -EINVAL;
	if (avail < (u64)ix->ways * ix->block_size)
		return -ENOSPC;
	/* LogLRU: room for the spill region, 8 bytes a record */
	lb = f->log_bytes ?: ix->policy == HC_POLICY_LOG ? round_down(avail, ix->block_size) :
	     div_u64(avail - min_t(u64, avail, HC_SPILL_BLOCK), ix->block_size + 8) *
	     ix->block_size;
	ix->log_off = HC_TABLE_OFFSET;
	ix->log_blocks = div_u64(lb, ix->block_size);
	if (lb > avail || lb % ix->block_size ||
	    ix->log_blocks < 2 * (HC_LOG_WBUF_BYTES / ix->block_size) ||
	    ix->log_blocks > U32_MAX)
		return -ENOSPC;
	/* as many slots as the log holds records */
	ix->sets = f->sets ?: max_t(u64, 1, div_u64(ix->log_blocks, ix->ways));
	if (ix->sets > U32_MAX / ix->ways)
		return -ENOSPC;
	ix->spill_off = ix->log_off + lb;
	if (ix->policy != HC_POLICY_LOGLRU)
		return 0;
	if (ix->spill_off + hc_spill_bytes(ix) > ix->dev_bytes)
		return -ENOSPC;
	/* some ways' offsets in RAM, not all */
	if (ix->ways < 2 || f->ram_ways >= ix->ways)
		return -EINVAL;
	ix->ram_ways = f->ram_ways ?: ix->ways / 2;
	/* checked spill entries; checkpoints with a copy of the region if there is room */
	ix->flags |= HC_LL_SB_CHECK;
	ix->flags &= ~HC_LL_SB_COPY;
	if (hc_loglru_copy_fits(ix, f))
		ix->flags |= HC_LL_SB_COPY;
	return 0;
}

static bool hc_log_geometry_ok(struct hc_index *ix)
{
	bool lru_log = ix->policy == HC_POLICY_LOGLRU;

	if (ix->resident_sets || ix->buffer_bytes ||
	    lru_log != (ix->ram_ways && ix->ram_ways < ix->ways) ||
	    !hc_log_fields_fit(ix))
		return false;
	if ((ix->flags & HC_LL_SB_COPY) && (!lru_log || hc_spill_bytes(ix) > HC_LL_COPY_MAX))
		return false;
	if ((ix->flags & HC_LL_SB_CHECK) && !lru_log)
		return false;
	ix->spill_off = ix->log_off + ix->log_blocks * ix->block_size;
	return ix->log_off == HC_TABLE_OFFSET && ix->log_blocks <= U32_MAX &&
	       ix->log_blocks >= 2 * (HC_LOG_WBUF_BYTES / ix->block_size) &&
	       ix->spill_off <= ix->dev_bytes && ix->sets <= U32_MAX / ix->ways &&
	       (!lru_log || ix->spill_off + hc_spill_bytes(ix) <= ix->dev_bytes);
}

/* the scratch RAM of an attach: the records and slot hashes, LogLRU's full fields */
static u64 hc_log_recover_bytes(struct hc_index *ix)
{
	u64 slots = ix->sets * ix->ways;
	u64 need = max(ix->log_blocks * sizeof(struct hc_rec), slots * sizeof(u64));

	if (ix->policy == HC_POLICY_LOGLRU)
		need = max(need, BITS_TO_LONGS(slots * (ix->width + ix->lbits)) * sizeof(long));
	return need;
}

/* attach: LogLRU rebuilds Log's fields first, then keeps part and spills the rest */
static int hc_log_recover(struct hc_index *ix)
{
	return ix->policy == HC_POLICY_LOGLRU ? hc_loglru_rebuild(ix) : hc_log_rebuild(ix);
}

/* ---------------------------------------------------------------------
 * The checkpoint: the fields (LogLRU: and its RAM ways' entries), where the
 * log ends and its pass; LogLRU's spill region is on the device already,
 * once the queue is written, and a periodic checkpoint of an index with
 * HC_LL_SB_COPY has a copy of it: the region is written in place after
 * the checkpoint (ways move in and out of RAM), so after a crash it is no
 * longer the one the checkpoint's fields go with
 */

static unsigned int hc_log_ckpt_parts(struct hc_index *ix, struct hc_ckpt_part *p)
{
	p[0].p = ix->bits;
	p[0].bytes = BITS_TO_LONGS(ix->sets * ix->ways * ix->width) * sizeof(long);
	if (ix->policy != HC_POLICY_LOGLRU)
		return 1;
	p[1].p = ix->obits;
	p[1].bytes = BITS_TO_LONGS((u64)ix->sets * ix->ram_ways * ix->owidth) * sizeof(long);
	if (!(ix->flags & HC_LL_SB_COPY))
		return 2;
	p[2].p = NULL;
	p[2].bytes = hc_spill_bytes(ix);
	return 3;
}

/*
 * LogLRU: the spill region as ckpt_save left it (the queue written), into a
 * periodic checkpoint; a detach's leaves it zero (a clean attach reads the
 * region itself)
 */
static int hc_log_ckpt_fill(struct hc_index *ix, void *dst, size_t bytes, bool periodic)
{
	size_t at, n;
	void *chunk;
	int r = 0;

	if (!periodic)
		return 0;
	chunk = kvmalloc(HC_SCAN_BYTES, GFP_KERNEL);
	if (!chunk)
		return -ENOMEM;
	for (at = 0; at < bytes && !r; at += n) {
		n = min_t(size_t, HC_SCAN_BYTES, bytes - at);
		r = hc_io(ix, REQ_OP_READ, ix->spill_off + at, chunk, n);
		if (!r)
			memcpy(dst + at, chunk, n);
		cond_resched();
	}
	kvfree(chunk);
	return r;
}

/*
 * An index that refused a spill entry since attach freed that way while the
 * log still has its record: it leaves no checkpoint, so the next attach
 * scans and takes the record back.
 */
static int hc_log_ckpt_save(struct hc_index *ix, u64 *state)
{
	int r = ix->npend ? hc_spill_flush(ix) : 0;

	if (r || ix->wcount || ix->st.bad_entries)
		return r ?: -EBUSY;
	state[0] = ix->wbase;
	state[1] = ix->gen;
	return 0;
}

/*
 * LogLRU: the RAM ways' entries of @set name distinct ways in use, each at a
 * block a spill entry could name
 */
static bool hc_oents_ok(struct hc_index *ix, u64 set)
{
	u64 seen = 0, e, mask = BIT_ULL(ix->way_bits) - 1;
	u32 k, w;

	for (k = 0; k < ix->ram_ways; k++) {
		e = hc_bf_get(ix->obits, set * ix->ram_ways + k, ix->owidth);
		w = e & mask;
		if (!w) {
			if (e)
				return false;
			continue;
		}
		if (w > ix->ways || (seen & BIT_ULL(w - 1)) ||
		    !hc_valid(ix, hc_bf_get(ix->bits, set * ix->ways + w - 1, ix->width)) ||
		    !hc_spill_entry_ok(ix, BIT_ULL(63) | e >> ix->way_bits))
			return false;
		seen |= BIT_ULL(w - 1);
	}
	return true;
}

/*
 * An entry of the spill region as read, or of a checkpoint's copy of it
 * (a 32-bit host's parts are whole longs: it may be only 4-byte aligned)
 */
static u64 hc_le64_at(const __le64 *p)
{
	__le64 v;

	memcpy(&v, p, sizeof(v));
	return le64_to_cpu(v);
}

/*
 * LogLRU: has every way in use of slots @i .. @i + @n - 1 whose pass and
 * block are not in RAM a spill entry (in @e) that hc_spill_entry_ok() takes?
 */
static bool hc_spill_entries_ok(struct hc_index *ix, u64 i, u64 n, const __le64 *e)
{
	u64 j, set, v;
	u32 way;

	for (j = 0; j < n; j++) {
		set = div_u64_rem(i + j, ix->ways, &way);
		if (!hc_valid(ix, hc_bf_get(ix->bits, i + j, ix->width)) ||
		    hc_oent_find(ix, set, way) >= 0)
			continue;
		v = hc_le64_at(&e[j]);
		if (!(v & BIT_ULL(63)) || !hc_spill_entry_valid(ix, i + j, v))
			return false;
	}
	return true;
}

/*
 * LogLRU: the spill entries the checkpoint's fields go with, checked: the
 * region, read once as the checkpoint was (8 bytes a slot), or after a crash
 * the checkpoint's copy of it. One that fails and the attach scans, which
 * takes that way's record back from the log.
 */
static int hc_spill_region_check(struct hc_index *ix)
{
	u64 slots = ix->sets * ix->ways, per = HC_SCAN_BYTES / sizeof(u64), i, n;
	__le64 *chunk;
	int r = 0;

	if (ix->ckpt_replay) {
		for (i = 0; i < slots && !r; i += n) {
			n = min(per, slots - i);
			if (!ix->ckpt_img ||
			    !hc_spill_entries_ok(ix, i, n, (const __le64 *)ix->ckpt_img + i))
				r = -EINVAL;
			cond_resched();
		}
		return r;
	}
	chunk = kvmalloc(HC_SCAN_BYTES, GFP_KERNEL);
	if (!chunk)
		return -ENOMEM;
	for (i = 0; i < slots && !r; i += n) {
		n = min(per, slots - i);
		r = hc_io(ix, REQ_OP_READ, ix->spill_off + i * sizeof(u64), chunk,
			  round_up(n * sizeof(u64), HC_SPILL_BLOCK));
		if (!r && !hc_spill_entries_ok(ix, i, n, chunk))
			r = -EINVAL;
		cond_resched();
	}
	kvfree(chunk);
	return r;
}

/*
 * Log, LogLRU: the write counter and the log's end and pass are those of
 * the newest record (the one before the end), as the scan would find them;
 * an empty log has none of them. One block read.
 */
static int hc_log_end_check(struct hc_index *ix, u64 wbase, u64 gen)
{
	struct hc_slot_disk *s = ix->wbuf;
	u64 last = wbase ? wbase - 1 : ix->log_blocks - 1;
	int r;

	if (!ix->wseq)
		return wbase || gen ? -EINVAL : 0;
	r = hc_io(ix, REQ_OP_READ, ix->log_off + last * ix->block_size, s, ix->block_size);
	if (r)
		return r;
	if (!hc_slot_valid(ix, s) || le64_to_cpu(s->seq) != ix->wseq ||
	    HC_REC_GEN(le16_to_cpu(s->flags)) != (wbase ? gen : (gen - 1) & 15))
		return -EINVAL;
	return 0;
}

/*
 * Every field as a scan could have made it: a set's ranks 0 .. n-1, and (Log)
 * a block and group run that a spill entry could name (hc_spill_entry_ok:
 * inside the log, a run that fits the prefetch buffer); the log's end, its
 * pass and the write counter those of the newest record (hc_log_end_check),
 * and with no record written no field in use either; LogLRU's spill entries
 * (hc_spill_region_check). Only then is any of it used.
 */
static int hc_log_ckpt_load(struct hc_index *ix, const u64 *state)
{
	u64 slots = ix->sets * ix->ways, i, f, set, used = 0;
	u32 way;
	int r;

	if (state[0] >= ix->log_blocks || state[1] > 15)
		return -EINVAL;
	for (i = 2; i < HC_CKPT_STATE; i++)
		if (state[i])
			return -EINVAL;
	for (i = 0; i < slots; i++) {
		f = hc_bf_get(ix->bits, i, ix->width);
		if (!(i & 0xffff))
			cond_resched();
		set = div_u64_rem(i, ix->ways, &way);
		if (!way && (!hc_ranks_ok(ix, set) ||
			     (ix->policy == HC_POLICY_LOGLRU && !hc_oents_ok(ix, set))))
			return -EINVAL;
		if (!hc_valid(ix, f))
			continue;
		used++;
		if (ix->policy == HC_POLICY_LOG &&
		    !hc_spill_entry_ok(ix, BIT_ULL(63) | f >> hc_gen_shift(ix)))
			return -EINVAL;
	}
	if (!ix->wseq && used)
		return -EINVAL;
	r = hc_log_end_check(ix, state[0], state[1]);
	if (!r && ix->policy == HC_POLICY_LOGLRU)
		r = hc_spill_region_check(ix);
	if (r)
		return r;
	ix->wbase = state[0];
	ix->gen = state[1];
	return 0;
}

static int hc_loglru_ckpt_tail(struct hc_index *ix);

/*
 * Log, after a crash, from the last periodic checkpoint: the fields, the
 * log's end @e0, its pass @g0 and the write counter @c as they were then.
 * The records written after it are at e0, e0 + 1, ... round the log, with
 * write sequence c + 1, c + 2, ... and the pass of their place: is @s the
 * one @d blocks on?
 */
HC_TESTABLE bool hc_log_tail_rec(struct hc_index *ix, const struct hc_slot_disk *s,
				 u64 e0, u64 g0, u64 c, u64 d)
{
	u64 gen = (g0 + (e0 + d >= ix->log_blocks)) & 15;

	return hc_slot_valid(ix, s) && le64_to_cpu(s->seq) == c + d + 1 &&
	       HC_REC_GEN(le16_to_cpu(s->flags)) == gen;
}

/*
 * Read blocks @d .. @d + *@n - 1 after @e0 (not past the log's end, *@n at
 * most @per_read and @left) into @buf.
 */
static int hc_log_tail_read(struct hc_index *ix, u64 e0, u64 d, u64 per_read, u64 left,
			    void *buf, u64 *n)
{
	u64 pos = e0 + d;

	if (pos >= ix->log_blocks)
		pos -= ix->log_blocks;
	*n = min3(per_read, ix->log_blocks - pos, left);
	return hc_io(ix, REQ_OP_READ, ix->log_off + pos * ix->block_size, buf,
		     *n * ix->block_size);
}

/*
 * Each write of the buffer is one FUA write issued after the one before it
 * completed, so after a crash the records since the checkpoint are all
 * there up to the last write, which may have landed in part. Read on from
 * e0 until a buffer's length of blocks holds none of them (at most half the
 * log: hc_ckpt_periodic wrote a checkpoint every log_blocks / 16 records),
 * take the last one found as the log's end (as a scan would: a later write
 * must not leave an older one as the newest), then replay them in order as
 * their puts and deletes did, against the fields: hc_find compares keys
 * with what the live fields point at, which with the log's final end is
 * only what the checkpoint had or what was replayed before. The second
 * read must find what the first did (the same blocks, by a CRC of their
 * distances), or the device changed: -EINVAL, and the attach scans.
 */
static int hc_log_ckpt_tail(struct hc_index *ix)
{
	u64 per_read = max_t(u64, 1, HC_SCAN_BYTES / ix->block_size), limit = ix->log_blocks / 2;
	u64 e0 = ix->wbase, g0 = ix->gen, c = ix->wseq, d, n, i, last = 0, stop;
	u32 seen = 0, again = 0;
	bool any = false;
	void *buf;
	int r = 0;

	if (ix->policy == HC_POLICY_LOGLRU)
		return hc_loglru_ckpt_tail(ix);
	buf = kvmalloc(per_read * ix->block_size, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	for (d = 0; !r; d += n) {
		/* no further than a buffer past the last found so far */
		stop = min(limit, (any ? last + 1 : 0) + ix->wbuf_blocks);
		if (d >= stop)
			break;
		r = hc_log_tail_read(ix, e0, d, per_read, stop - d, buf, &n);
		for (i = 0; i < n && !r; i++) {
			struct hc_slot_disk *s = buf + i * ix->block_size;
			__le64 at = cpu_to_le64(d + i);

			if (!hc_log_tail_rec(ix, s, e0, g0, c, d + i)) {
				ix->torn += hc_slot_torn(ix, s);
				continue;
			}
			any = true;
			last = d + i;
			seen = crc32c(seen, &at, sizeof(at));
		}
		cond_resched();
	}
	if (r || !any)
		goto out;
	/* the log's end after the last record found, as the flush that wrote it left it */
	ix->wseq = c + last + 1;
	ix->wbase = e0 + last + 1;
	if (ix->wbase >= ix->log_blocks) {
		ix->wbase -= ix->log_blocks;
		ix->gen = (g0 + 1) & 15;
	}
	for (d = 0; d <= last && !r; d += n) {
		r = hc_log_tail_read(ix, e0, d, per_read, last + 1 - d, buf, &n);
		for (i = 0; i < n && !r; i++) {
			struct hc_slot_disk *s = buf + i * ix->block_size;
			u64 set, tag, ios = 0, pos = e0 + d + i;
			__le64 at = cpu_to_le64(d + i);
			u16 klen, flags;
			bool found;
			u32 way;

			if (!hc_log_tail_rec(ix, s, e0, g0, c, d + i))
				continue;
			again = crc32c(again, &at, sizeof(at));
			if (pos >= ix->log_blocks)
				pos -= ix->log_blocks;
			klen = le16_to_cpu(s->key_len);
			flags = le16_to_cpu(s->flags);
			hc_hash(ix, s->key, klen, &set, &tag);
			r = hc_find(ix, s->key, klen, set, tag, &way, &found, &ios);
			if (r)
				break;
			if (flags & HC_REC_TOMB) {
				if (found)
					hc_clear(ix, set * ix->ways, way);
				continue;
			}
			hc_touch(ix, set * ix->ways, way);
			hc_set_field(ix, set * ix->ways + way,
				     hc_mkfield_log(ix, tag, HC_REC_GEN(flags), pos));
		}
		cond_resched();
	}
	if (!r && again != seen)
		r = -EINVAL;
out:
	kvfree(buf);
	return r;
}

/*
 * LogLRU, after a crash, from the last periodic checkpoint: its fields with
 * the pass and block of each way from RAM or from the checkpoint's copy of
 * the spill region (checked at ckpt_load) make Log's full fields as they
 * were then; Log's replay takes what was written after, and the result is
 * split again (the spill region written whole). The region as the crash
 * left it is not read: ways written out after the checkpoint name records
 * its fields do not know, and may name records the crash lost.
 */
static int hc_loglru_ckpt_tail(struct hc_index *ix)
{
	u64 slots = ix->sets * ix->ways, i, f, v;
	const __le64 *img = ix->ckpt_img;
	unsigned long *full;
	int r;

	if (!img)
		return -EINVAL;
	full = hc_loglru_full(ix);
	if (!full)
		return -ENOMEM;
	for (i = 0; i < slots; i++) {
		f = hc_field(ix, i);
		if (f & HC_F_SPILLED) {
			v = hc_le64_at(&img[i]) & (BIT_ULL(ix->lbits) - 1);
			f = (f & hc_short_mask(ix)) | v << hc_gen_shift(ix);
		}
		hc_bf_set(full, i, ix->width + ix->lbits, f);
		if (!(i & 0xffff))
			cond_resched();
	}
	r = hc_loglru_as_log(ix, full, hc_log_ckpt_tail);
	if (!r)
		r = hc_loglru_split(ix, full);
	kvfree(full);
	return r;
}

const struct hc_policy_ops hc_log_ops = {
	.name		= "log",
	.format_flags	= HC_FORMAT_PREFETCH,
	.format		= hc_log_format,
	.geometry_ok	= hc_log_geometry_ok,
	.alloc_ram	= hc_log_alloc_ram,
	.recover	= hc_log_recover,
	.recover_bytes	= hc_log_recover_bytes,
	.insert		= hc_log_put,
	.lookup		= hc_log_get,
	.remove		= hc_log_delete,
	.flush		= hc_log_flush,
	.objects	= hc_log_objects,
	.ckpt_parts	= hc_log_ckpt_parts,
	.ckpt_save	= hc_log_ckpt_save,
	.ckpt_fill	= hc_log_ckpt_fill,
	.ckpt_load	= hc_log_ckpt_load,
	.ckpt_tail	= hc_log_ckpt_tail,
	.layout_flags	= HC_LL_SB_COPY | HC_LL_SB_CHECK,
	.ckpt_flags	= HC_LL_SB_COPY,
};
