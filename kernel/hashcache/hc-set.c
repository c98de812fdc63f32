// SPDX-License-Identifier: GPL-2.0
/*
 * A key's set: its hash, the slots of the set on the device (what makes one
 * valid, an older copy, or torn) and finding the key in the set, for every
 * policy (hc_find).
 */

#include <linux/siphash.h>

#include "hc-int.h"

/* ---------------------------------------------------------------------
 * Slots
 */

/* Is the slot at @p in use (by this format, and whole)? */
bool hc_slot_valid(struct hc_index *ix, const struct hc_slot_disk *s)
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
bool hc_slot_torn(struct hc_index *ix, const struct hc_slot_disk *s)
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
bool hc_shadowed(struct hc_index *ix, const void *set_buf, u32 w)
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
void hc_fill_slot(struct hc_index *ix, struct hc_slot_disk *s, const u8 *key,
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
void hc_split(struct hc_index *ix, u64 h, u64 *set, u64 *tag)
{
	*set = h % ix->sets;
	/* the tag comes from bits the set number did not use */
	*tag = (h >> 40) & ((1ULL << ix->tag_bits) - 1);
}

void hc_hash(struct hc_index *ix, const u8 *key, u32 klen, u64 *set, u64 *tag)
{
	hc_split(ix, siphash(key, klen, &ix->hkey), set, tag);
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

/*
 * Find @key in its set. On return *way is the way holding it (found), or
 * the way a new object should take: an empty one, else the least recently
 * used (SetMem, Log) or the oldest written (Basic, Set). The object's bytes
 * are in ix->buf + way * block_size when @found, or when the set was read.
 */
int hc_find(struct hc_index *ix, const u8 *key, u32 klen, u64 set, u64 tag,
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
