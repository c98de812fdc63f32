// SPDX-License-Identifier: GPL-2.0
/*
 * HashCache's RAM part: one packed field a slot (hc-int.h says what is in
 * it), LogLRU's fields split between RAM and the spill region, and the LRU
 * ranks of a set.
 */

#include "hc-int.h"

/* ---------------------------------------------------------------------
 * The RAM part: one bit field per slot, width = tag_bits + rank_bits + 1
 */

u64 hc_bf_get(const unsigned long *map, u64 idx, unsigned int width)
{
	u64 bit = idx * width, v = 0;
	unsigned int i;

	for (i = 0; i < width; i++)
		if (test_bit(bit + i, map))
			v |= 1ULL << i;
	return v;
}

void hc_bf_set(unsigned long *map, u64 idx, unsigned int width, u64 v)
{
	u64 bit = idx * width;
	unsigned int i;

	for (i = 0; i < width; i++)
		assign_bit(bit + i, map, v & (1ULL << i));
}

/* the @obits entry of @set holding @way, or -1 */
int hc_oent_find(struct hc_index *ix, u64 set, u32 way)
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
	u64 val = hc_spill_seal(ix, slot, loc >> hc_gen_shift(ix));
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

u64 hc_field(struct hc_index *ix, u64 slot)
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

void hc_set_field(struct hc_index *ix, u64 slot, u64 v)
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
void hc_touch(struct hc_index *ix, u64 base, u32 way)
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
void hc_clear(struct hc_index *ix, u64 base, u32 way)
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

/*
 * Are the ranks of @set's valid fields in @bits 0 .. n-1, each once, as
 * hc_touch and hc_clear keep them? (A checkpoint's fields are checked so.)
 */
bool hc_ranks_ok(struct hc_index *ix, u64 set)
{
	u64 seen = 0, f, r;
	u32 w, n = 0;

	for (w = 0; w < ix->ways; w++) {
		f = hc_bf_get(ix->bits, set * ix->ways + w, ix->width);
		if (!hc_valid(ix, f))
			continue;
		r = hc_rank(ix, f);
		if (r >= ix->ways || (seen & BIT_ULL(r)))
			return false;
		seen |= BIT_ULL(r);
		n++;
	}
	return seen == (n == 64 ? ~0ULL : BIT_ULL(n) - 1);
}
