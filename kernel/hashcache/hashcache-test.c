// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of HashCache's RAM part: the packed per-slot fields, the LRU
 * ranks of a set, and which Log fields still point at their records as the
 * log's end moves and wraps, and SetMemLRU's table of resident sets.
 *
 * Its own unit of the module: what it calls that is otherwise static to a
 * file is HC_TESTABLE (hc-int.h). The tests work on an index with no device.
 */

#include <kunit/test.h>
#include <linux/prandom.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "hc-int.h"

static void hc_test_free(void *p)
{
	hc_free(p);
}

/* an index with the RAM part only: @sets sets of @ways, @tag_bits, policy @pol */
static struct hc_index *hc_test_index(struct kunit *test, u32 pol, u64 sets, u32 ways,
				      u32 tag_bits)
{
	struct hc_index *ix = kzalloc(sizeof(*ix), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, ix);
	ix->policy = pol;
	ix->sets = sets;
	ix->ways = ways;
	ix->tag_bits = tag_bits;
	ix->rank_bits = ways > 1 ? order_base_2(ways) : 0;
	ix->lbits = HC_LOG_FIELD_BITS;
	ix->width = tag_bits + ix->rank_bits + 1 + (pol == HC_POLICY_LOG ? HC_LOG_FIELD_BITS : 0);
	ix->bits_bytes = BITS_TO_LONGS(sets * ways * ix->width) * sizeof(long);
	ix->bits = kvzalloc(ix->bits_bytes, GFP_KERNEL);
	if (!ix->bits)
		kfree(ix);
	KUNIT_ASSERT_NOT_NULL(test, ix->bits);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, hc_test_free, ix));
	return ix;
}

/* fields of any width, across word boundaries, do not disturb their neighbours */
static void hc_test_fields(struct kunit *test)
{
	static const u32 tag_bits[] = { 1, 7, 8, 13, 16 };
	struct rnd_state rs;
	unsigned int t;

	prandom_seed_state(&rs, 0x4a5c0de);
	for (t = 0; t < ARRAY_SIZE(tag_bits); t++) {
		struct hc_index *ix = hc_test_index(test, HC_POLICY_LOG, 37, 8, tag_bits[t]);
		u64 n = ix->sets * ix->ways, i, *want;

		want = kunit_kcalloc(test, n, sizeof(u64), GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, want);
		for (i = 0; i < n; i++) {
			u32 tag = prandom_u32_state(&rs) & ((1U << tag_bits[t]) - 1);
			u32 gen = prandom_u32_state(&rs) & 15;

			want[i] = hc_mkfield_log(ix, tag, gen, prandom_u32_state(&rs));
			want[i] = hc_with_rank(ix, want[i], i % 8);
			hc_set_field(ix, i, want[i]);
		}
		for (i = 0; i < n; i++)
			KUNIT_EXPECT_EQ_MSG(test, want[i], hc_field(ix, i), "tag bits %u slot %llu",
					    tag_bits[t], i);
		/* the accessors take the field apart again */
		KUNIT_EXPECT_TRUE(test, hc_valid(ix, want[5]));
		KUNIT_EXPECT_EQ(test, 5ULL, hc_rank(ix, want[5]));
		KUNIT_EXPECT_EQ(test, want[5],
				hc_mkfield_log(ix, hc_tag(ix, want[5]), hc_gen(ix, want[5]),
					       hc_off(ix, want[5])) | 5 << 1);
	}
}

/* the ranks of a set stay a permutation of 0..used-1, most recent 0 */
static void hc_test_lru(struct kunit *test)
{
	struct hc_index *ix = hc_test_index(test, HC_POLICY_SETMEM, 4, 8, 8);
	u32 order[] = { 3, 0, 7, 3, 5, 1, 2, 4, 6, 0, 7 }, i, w;
	u64 set = 2;

	for (i = 0; i < ARRAY_SIZE(order); i++) {
		hc_touch(ix, set * 8, order[i]);
		hc_set_field(ix, set * 8 + order[i],
			     hc_with_rank(ix, hc_mkfield(ix, order[i], 0), 0));
	}
	/* newest first: 7 0 6 4 2 1 5 3 */
	{
		static const u32 want_rank[8] = { 1, 5, 4, 7, 3, 6, 2, 0 };

		for (w = 0; w < 8; w++) {
			u64 f = hc_field(ix, set * 8 + w);

			KUNIT_EXPECT_TRUE(test, hc_valid(ix, f));
			KUNIT_EXPECT_EQ_MSG(test, (u64)want_rank[w], hc_rank(ix, f), "way %u", w);
			KUNIT_EXPECT_EQ(test, (u64)w, hc_tag(ix, f));
		}
	}
	/* removing way 4 (rank 3) closes the gap */
	hc_clear(ix, set * 8, 4);
	KUNIT_EXPECT_FALSE(test, hc_valid(ix, hc_field(ix, set * 8 + 4)));
	KUNIT_EXPECT_EQ(test, 3ULL, hc_rank(ix, hc_field(ix, set * 8 + 2)));
	KUNIT_EXPECT_EQ(test, 6ULL, hc_rank(ix, hc_field(ix, set * 8 + 3)));
	KUNIT_EXPECT_EQ(test, 0ULL, hc_rank(ix, hc_field(ix, set * 8 + 7)));
	/* other sets untouched */
	for (w = 0; w < 8; w++) {
		KUNIT_EXPECT_EQ(test, 0ULL, hc_field(ix, 1 * 8 + w));
		KUNIT_EXPECT_EQ(test, 0ULL, hc_field(ix, 3 * 8 + w));
	}
}

/* a Log field points at its record until the log's end passes over it */
static void hc_test_log_live(struct kunit *test)
{
	struct hc_index *ix = hc_test_index(test, HC_POLICY_LOG, 1, 8, 8);

	ix->log_blocks = 100;
	ix->gen = 3;
	ix->wbase = 40;
	ix->wcount = 5;		/* end 45 */
	KUNIT_EXPECT_TRUE(test, hc_log_live(ix, hc_mkfield_log(ix, 1, 3, 0)));
	KUNIT_EXPECT_TRUE(test, hc_log_live(ix, hc_mkfield_log(ix, 1, 3, 44)));	/* buffered */
	KUNIT_EXPECT_FALSE(test, hc_log_live(ix, hc_mkfield_log(ix, 1, 3, 45)));
	/* overwritten */
	KUNIT_EXPECT_FALSE(test, hc_log_live(ix, hc_mkfield_log(ix, 1, 2, 44)));
	KUNIT_EXPECT_TRUE(test, hc_log_live(ix, hc_mkfield_log(ix, 1, 2, 45)));
	KUNIT_EXPECT_TRUE(test, hc_log_live(ix, hc_mkfield_log(ix, 1, 2, 99)));
	/* two passes ago */
	KUNIT_EXPECT_FALSE(test, hc_log_live(ix, hc_mkfield_log(ix, 1, 1, 99)));
	KUNIT_EXPECT_FALSE(test, hc_log_live(ix, 0));
	/* pass 0 follows pass 15 */
	ix->gen = 0;
	KUNIT_EXPECT_TRUE(test, hc_log_live(ix, hc_mkfield_log(ix, 1, 15, 60)));
	KUNIT_EXPECT_FALSE(test, hc_log_live(ix, hc_mkfield_log(ix, 1, 15, 10)));
	KUNIT_EXPECT_FALSE(test, hc_log_live(ix, hc_mkfield_log(ix, 1, 14, 60)));
}

/* a key's set and tag: the same for the same key, spread over the sets */
static void hc_test_hash(struct kunit *test)
{
	struct hc_index *ix = hc_test_index(test, HC_POLICY_SETMEM, 64, 8, 8);
	u64 set, tag, set2, tag2, count[64] = {}, i;
	char key[16];

	ix->hkey.key[0] = 1;
	ix->hkey.key[1] = 2;
	hc_hash(ix, "http://a/", 9, &set, &tag);
	hc_hash(ix, "http://a/", 9, &set2, &tag2);
	KUNIT_EXPECT_EQ(test, set, set2);
	KUNIT_EXPECT_EQ(test, tag, tag2);
	for (i = 0; i < 6400; i++) {
		int n = snprintf(key, sizeof(key), "k%llu", i);

		hc_hash(ix, key, n, &set, &tag);
		KUNIT_ASSERT_LT(test, set, 64ULL);
		KUNIT_ASSERT_LT(test, tag, 256ULL);
		count[set]++;
	}
	/* 100 a set on average: none empty, none more than twice that */
	for (i = 0; i < 64; i++) {
		KUNIT_EXPECT_GT_MSG(test, count[i], 0ULL, "set %llu", i);
		KUNIT_EXPECT_LT_MSG(test, count[i], 200ULL, "set %llu", i);
	}
}

/*
 * SetMemLRU's frames: after any mix of sets coming in and frames being
 * reused, every resident set is found by probing and no other set is; a
 * frame used since the clock hand last passed is not taken.
 */
static void hc_test_frames(struct kunit *test)
{
	struct hc_index *ix = hc_test_index(test, HC_POLICY_SETMEMLRU, 1, 8, 8);
	s32 *frame_of;
	struct rnd_state rs;
	u32 i, fr, set, nsets = 1000;

	ix->sets = nsets;
	ix->resident_sets = 37;
	kvfree(ix->bits);
	ix->bits = NULL;
	KUNIT_ASSERT_EQ(test, 0, hc_frames_alloc(ix));
	frame_of = kunit_kcalloc(test, nsets, sizeof(*frame_of), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, frame_of);
	memset(frame_of, 0xff, nsets * sizeof(*frame_of));
	prandom_seed_state(&rs, 0xf4a3e5);
	for (i = 0; i < 20000; i++) {
		u32 p;

		/* a few hot sets, many cold ones: runs in the table grow and shrink */
		set = prandom_u32_state(&rs) % (i % 3 ? 50 : nsets);
		p = hc_probe(ix, set);
		if (frame_of[set] >= 0) {
			KUNIT_ASSERT_EQ(test, (u32)frame_of[set] + 1, ix->htab[p]);
			__set_bit(frame_of[set], ix->referenced);
			continue;
		}
		KUNIT_ASSERT_EQ(test, 0U, ix->htab[p]);
		fr = hc_frame_victim(ix);
		if (ix->frame_set[fr] != U32_MAX) {
			frame_of[ix->frame_set[fr]] = -1;
			hc_unhash(ix, ix->frame_set[fr]);
		}
		ix->frame_set[fr] = set;
		ix->htab[hc_probe(ix, set)] = fr + 1;
		frame_of[set] = fr;
		if (i % 97)
			continue;
		for (set = 0; set < nsets; set++) {
			p = hc_probe(ix, set);
			KUNIT_ASSERT_EQ_MSG(test, frame_of[set] >= 0 ? frame_of[set] + 1 : 0,
					    (s32)ix->htab[p], "set %u", set);
		}
	}
	/* a referenced frame is passed over once; an unreferenced one is taken */
	bitmap_zero(ix->referenced, ix->resident_sets);
	fr = ix->hand;
	__set_bit(fr, ix->referenced);
	KUNIT_EXPECT_EQ(test, (fr + 1) % ix->resident_sets, hc_frame_victim(ix));
	KUNIT_EXPECT_FALSE(test, test_bit(fr, ix->referenced));
}

/*
 * LogLRU: of the ways of a set, the ram_ways most recently used keep their
 * pass and block in RAM; the others' go to the spill queue, from which they
 * read back; a way read back and used again returns to RAM, pushing out
 * the least recently used.
 */
static void hc_test_loglru(struct kunit *test)
{
	struct hc_index *ix = hc_test_index(test, HC_POLICY_LOGLRU, 4, 8, 8);
	u64 set = 1, base = set * 8, loc, f;
	u32 w, in_ram = 0;
	bool ok;

	ix->ram_ways = 4;
	ix->way_bits = order_base_2(9);
	ix->owidth = ix->way_bits + HC_LOG_FIELD_BITS;
	ix->obits = kvcalloc(BITS_TO_LONGS(4 * 4 * ix->owidth), sizeof(long), GFP_KERNEL);
	ix->pend = kvmalloc_array(HC_PEND_MAX, sizeof(*ix->pend), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ix->obits);
	KUNIT_ASSERT_NOT_NULL(test, ix->pend);
	ix->log_blocks = 1000;
	ix->gen = 2;
	ix->wbase = 900;
	for (w = 0; w < 8; w++) {
		hc_touch(ix, base, w);
		hc_set_field(ix, base + w, hc_mkfield_log(ix, w, 2, 100 + w));
	}
	/* ways 4-7 in RAM, 0-3 spilled with their blocks */
	KUNIT_EXPECT_EQ(test, 4U, ix->npend);
	for (w = 0; w < 8; w++) {
		f = hc_field(ix, base + w);
		KUNIT_EXPECT_TRUE(test, hc_valid(ix, f));
		KUNIT_EXPECT_EQ(test, (u64)w, hc_tag(ix, f));
		KUNIT_EXPECT_EQ(test, (u64)(7 - w), hc_rank(ix, f));
		if (w < 4) {
			KUNIT_EXPECT_TRUE_MSG(test, f & HC_F_SPILLED, "way %u", w);
			KUNIT_EXPECT_TRUE(test, hc_log_live(ix, f));
			KUNIT_ASSERT_EQ(test, 0, hc_fetch(ix, base + w, &loc, &ok));
			KUNIT_EXPECT_TRUE(test, ok);
			f = (f & ~HC_F_SPILLED) | loc;
		} else {
			KUNIT_EXPECT_FALSE_MSG(test, f & HC_F_SPILLED, "way %u", w);
			in_ram++;
		}
		KUNIT_EXPECT_EQ(test, 2ULL, hc_gen(ix, f));
		KUNIT_EXPECT_EQ(test, 100ULL + w, hc_off(ix, f));
	}
	KUNIT_EXPECT_EQ(test, 4U, in_ram);
	/* way 1 read back and used: in RAM again; way 4 (now least recent) out */
	KUNIT_ASSERT_EQ(test, 0, hc_fetch(ix, base + 1, &loc, &ok));
	ix->fetch_slot = base + 1;
	ix->fetch_val = loc;
	ix->fetch_ok = true;
	f = hc_field(ix, base + 1);
	KUNIT_EXPECT_FALSE(test, f & HC_F_SPILLED);
	hc_touch(ix, base, 1);
	hc_set_field(ix, base + 1, hc_with_rank(ix, f, 0));
	ix->fetch_ok = false;
	KUNIT_EXPECT_FALSE(test, hc_field(ix, base + 1) & HC_F_SPILLED);
	KUNIT_EXPECT_EQ(test, 101ULL, hc_off(ix, hc_field(ix, base + 1)));
	KUNIT_EXPECT_TRUE(test, hc_field(ix, base + 4) & HC_F_SPILLED);
	KUNIT_EXPECT_EQ(test, 5U, ix->npend);
	KUNIT_ASSERT_EQ(test, 0, hc_fetch(ix, base + 4, &loc, &ok));
	KUNIT_EXPECT_EQ(test, 104ULL, hc_off(ix, loc));
	/* a cleared way leaves RAM; its set keeps the others */
	hc_clear(ix, base, 5);
	KUNIT_EXPECT_FALSE(test, hc_valid(ix, hc_field(ix, base + 5)));
	KUNIT_EXPECT_LT(test, hc_oent_find(ix, set, 5), 0);
	KUNIT_EXPECT_EQ(test, 106ULL, hc_off(ix, hc_field(ix, base + 6)));
	/* other sets untouched */
	for (w = 0; w < 8; w++)
		KUNIT_EXPECT_EQ(test, 0ULL, hc_field(ix, 2 * 8 + w));
}

/*
 * Prefetch: before a write, each buffered record gets the number of records
 * after it in the buffer that share its group; group 0 and tombstones get 0.
 */
static void hc_test_group_runs(struct kunit *test)
{
	static const u32 group[] = { 5, 5, 5, 0, 7, 7, 7, 9, 3, 3 };
	static const u16 tomb[] = { 0, 0, 0, 0, 0, 0, 1, 0, 0, 0 };
	static const u64 want[] = { 2, 1, 0, 0, 1, 0, 0, 0, 1, 0 };
	struct hc_index *ix;
	unsigned int i, w;
	char key[8];

	ix = hc_test_index(test, HC_POLICY_LOG, 64, 8, 8);
	/* widen the fields by the 8-bit group run */
	kvfree(ix->bits);
	ix->flags = HC_FORMAT_PREFETCH;
	ix->lbits = HC_LOG_FIELD_BITS + HC_GLEN_BITS;
	ix->width = 1 + ix->rank_bits + ix->tag_bits + ix->lbits;
	ix->bits = kvcalloc(BITS_TO_LONGS(64 * 8 * ix->width), sizeof(long), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ix->bits);
	ix->block_size = 4096;
	ix->wbuf_blocks = 64;
	/* hc_free frees it, with the index */
	ix->wbuf = kvcalloc(ARRAY_SIZE(group), ix->block_size, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ix->wbuf);
	ix->log_blocks = 1000;
	ix->wbase = 40;
	ix->gen = 1;
	ix->hkey.key[0] = 3;
	for (i = 0; i < ARRAY_SIZE(group); i++) {
		struct hc_slot_disk *sd = ix->wbuf + i * ix->block_size;
		int n = snprintf(key, sizeof(key), "g%u", i);
		u64 set, tag;

		hc_fill_slot(ix, sd, key, n, NULL, 0, group[i],
			     (tomb[i] ? HC_REC_TOMB : 0) | 1 << 8);
		ix->wcount++;
		if (tomb[i])
			continue;
		hc_hash(ix, key, n, &set, &tag);
		for (w = 0; w < 8 && hc_valid(ix, hc_field(ix, set * 8 + w)); w++)
			;
		KUNIT_ASSERT_LT(test, w, 8U);
		hc_touch(ix, set * 8, w);
		hc_set_field(ix, set * 8 + w, hc_mkfield_log(ix, tag, 1, 40 + i));
	}
	hc_group_runs(ix);
	for (i = 0; i < ARRAY_SIZE(group); i++) {
		int n = snprintf(key, sizeof(key), "g%u", i);
		u64 set, tag, f = 0;

		if (tomb[i])
			continue;
		hc_hash(ix, key, n, &set, &tag);
		for (w = 0; w < 8; w++) {
			f = hc_field(ix, set * 8 + w);
			if (hc_valid(ix, f) && hc_off(ix, f) == 40 + i)
				break;
		}
		KUNIT_ASSERT_LT(test, w, 8U);
		KUNIT_EXPECT_EQ_MSG(test, want[i], hc_glen(ix, f), "record %u", i);
		KUNIT_EXPECT_EQ(test, 1ULL, hc_gen(ix, f));
		KUNIT_EXPECT_EQ(test, tag, hc_tag(ix, f));
	}
}

/* spill entries: only what the index could have written passes (issue 22's review) */
static void hc_test_spill_entry(struct kunit *test)
{
	struct hc_index *ix = hc_test_index(test, HC_POLICY_LOG, 4, 8, 8);
	u64 v63 = BIT_ULL(63);

	ix->lbits = HC_LOG_FIELD_BITS + HC_GLEN_BITS;	/* with prefetch */
	ix->log_blocks = 1000;
	ix->wbuf_blocks = 32;				/* 256 KiB of 8 KiB records */
	KUNIT_EXPECT_EQ(test, 31ULL, hc_glen_max(ix));
	KUNIT_EXPECT_TRUE(test, hc_spill_entry_ok(ix, v63 | 5ULL << 4 | 3));
	KUNIT_EXPECT_TRUE(test, hc_spill_entry_ok(ix, v63 | 31ULL << 36 | 968ULL << 4));
	/* a run past the prefetch buffer, or past the log's end */
	KUNIT_EXPECT_FALSE(test, hc_spill_entry_ok(ix, v63 | 32ULL << 36 | 5ULL << 4));
	KUNIT_EXPECT_FALSE(test, hc_spill_entry_ok(ix, v63 | 255ULL << 36));
	KUNIT_EXPECT_FALSE(test, hc_spill_entry_ok(ix, v63 | 31ULL << 36 | 969ULL << 4));
	/* a block past the log */
	KUNIT_EXPECT_FALSE(test, hc_spill_entry_ok(ix, v63 | 1000ULL << 4));
	KUNIT_EXPECT_FALSE(test, hc_spill_entry_ok(ix, v63 | 0xffffffffULL << 4));
	/* bits above the entry's */
	KUNIT_EXPECT_FALSE(test, hc_spill_entry_ok(ix, v63 | BIT_ULL(50) | 5ULL << 4));
	/* without prefetch there is no run: its bits are above the entry */
	ix->lbits = HC_LOG_FIELD_BITS;
	KUNIT_EXPECT_FALSE(test, hc_spill_entry_ok(ix, v63 | 1ULL << 36 | 5ULL << 4));
	KUNIT_EXPECT_TRUE(test, hc_spill_entry_ok(ix, v63 | 999ULL << 4 | 15));
}

/*
 * HC_LL_SB_CHECK: an entry sealed for its slot is taken there, and only
 * there; one bit changed anywhere, or the check bits of an index without
 * the flag, and it is refused
 */
static void hc_test_spill_check(struct kunit *test)
{
	struct hc_index *ix = hc_test_index(test, HC_POLICY_LOGLRU, 4, 8, 8);
	u64 e = 999ULL << 4 | 15, v;
	unsigned int b;

	ix->log_blocks = 1000;
	ix->format_id = 0x1234567;
	/* without the flag: no check bits, read as before */
	v = hc_spill_seal(ix, 5, e);
	KUNIT_EXPECT_EQ(test, BIT_ULL(63) | e, v);
	KUNIT_EXPECT_TRUE(test, hc_spill_entry_valid(ix, 5, v));
	ix->flags = HC_LL_SB_CHECK;
	v = hc_spill_seal(ix, 5, e);
	KUNIT_EXPECT_TRUE(test, hc_spill_entry_valid(ix, 5, v));
	/* in another slot, of another index */
	KUNIT_EXPECT_FALSE(test, hc_spill_entry_valid(ix, 6, v));
	KUNIT_EXPECT_FALSE(test, hc_spill_entry_valid(ix, 5 + BIT_ULL(32), v));
	ix->format_id++;
	KUNIT_EXPECT_FALSE(test, hc_spill_entry_valid(ix, 5, v));
	ix->format_id--;
	/* one bit flipped (bit 63 aside, which says "no entry") */
	for (b = 0; b < 63; b++)
		KUNIT_EXPECT_FALSE_MSG(test, hc_spill_entry_valid(ix, 5, v ^ BIT_ULL(b)),
				       "bit %u", b);
	/* an entry of before (no check bits) in an index that has them */
	KUNIT_EXPECT_FALSE(test, hc_spill_entry_valid(ix, 5, BIT_ULL(63) | e));
	/* a sealed entry past the log is still refused */
	e = 1000ULL << 4;
	KUNIT_EXPECT_FALSE(test, hc_spill_entry_valid(ix, 5, hc_spill_seal(ix, 5, e)));
}

/*
 * HC_LL_SB_COPY (periodic checkpoints with a copy of LogLRU's spill
 * region) is LogLRU's alone, and only with a copy of at most HC_LL_COPY_MAX
 */
static void hc_test_loglru_copy_flag(struct kunit *test)
{
	struct hc_index *ix = hc_test_index(test, HC_POLICY_LOGLRU, 4, 8, 8);

	ix->block_size = 4096;
	ix->log_off = HC_TABLE_OFFSET;
	ix->log_blocks = 2 * HC_LOG_WBUF_BYTES / 4096;
	ix->ram_ways = 4;
	/* the log, its spill region (32 slots: one spill block) */
	ix->dev_bytes = HC_TABLE_OFFSET + ix->log_blocks * 4096 + HC_SPILL_BLOCK;
	KUNIT_EXPECT_TRUE(test, hc_log_ops.geometry_ok(ix));
	ix->flags = HC_LL_SB_COPY;
	KUNIT_EXPECT_TRUE(test, hc_log_ops.geometry_ok(ix));
	/* a copy of over 128 MiB */
	ix->sets = (HC_LL_COPY_MAX / sizeof(u64) / 8) + 1;
	ix->dev_bytes = HC_TABLE_OFFSET + ix->log_blocks * 4096 + ix->sets * 8 * sizeof(u64) +
			HC_SPILL_BLOCK;
	KUNIT_EXPECT_FALSE(test, hc_log_ops.geometry_ok(ix));
	ix->flags = 0;
	KUNIT_EXPECT_TRUE(test, hc_log_ops.geometry_ok(ix));
	/* Log has no spill region */
	ix->policy = HC_POLICY_LOG;
	ix->ram_ways = 0;
	ix->sets = 4;
	KUNIT_EXPECT_TRUE(test, hc_log_ops.geometry_ok(ix));
	ix->flags = HC_LL_SB_COPY;
	KUNIT_EXPECT_FALSE(test, hc_log_ops.geometry_ok(ix));
}

/*
 * What a checkpoint's fields must be (hc_ranks_ok): touches and clears keep a
 * set's ranks 0 .. n-1; a repeated rank, a gap or a rank past the ways is
 * refused, in any set, and one set's fields do not vouch for another's
 */
static void hc_test_ranks(struct kunit *test)
{
	struct hc_index *ix = hc_test_index(test, HC_POLICY_SETMEM, 3, 8, 8);
	struct rnd_state rs;
	u32 i, w;

	prandom_seed_state(&rs, 0x7a2c);
	for (i = 0; i < 200; i++) {
		w = prandom_u32_state(&rs) % 8;
		if (prandom_u32_state(&rs) % 3) {
			hc_touch(ix, 8, w);
			hc_set_field(ix, 8 + w, hc_mkfield(ix, w, 0));
		} else if (hc_valid(ix, hc_field(ix, 8 + w))) {
			hc_clear(ix, 8, w);
		}
		KUNIT_ASSERT_TRUE_MSG(test, hc_ranks_ok(ix, 1), "step %u", i);
	}
	/* an empty set, and a full one */
	KUNIT_EXPECT_TRUE(test, hc_ranks_ok(ix, 0));
	for (w = 0; w < 8; w++)
		hc_set_field(ix, 16 + w, hc_mkfield(ix, 1, 7 - w));
	KUNIT_EXPECT_TRUE(test, hc_ranks_ok(ix, 2));
	/* a rank twice */
	hc_set_field(ix, 16 + 3, hc_mkfield(ix, 1, 0));
	KUNIT_EXPECT_FALSE(test, hc_ranks_ok(ix, 2));
	/* a gap: ranks 0 and 2 of two ways */
	memset(ix->bits, 0, ix->bits_bytes);
	hc_set_field(ix, 16, hc_mkfield(ix, 1, 0));
	hc_set_field(ix, 17, hc_mkfield(ix, 1, 2));
	KUNIT_EXPECT_FALSE(test, hc_ranks_ok(ix, 2));
	KUNIT_EXPECT_TRUE(test, hc_ranks_ok(ix, 1));
	/* a field that is not valid has no rank to check */
	hc_set_field(ix, 17, hc_mkfield(ix, 1, 1) & ~1ULL);
	KUNIT_EXPECT_TRUE(test, hc_ranks_ok(ix, 2));
	/* every bit set: 8 valid fields of rank 7 */
	memset(ix->bits, 0xff, ix->bits_bytes);
	KUNIT_EXPECT_FALSE(test, hc_ranks_ok(ix, 0));
	KUNIT_EXPECT_FALSE(test, hc_ranks_ok(ix, 2));
	/* 6 ways: 3 rank bits, and ranks 6 and 7 are past the ways */
	ix = hc_test_index(test, HC_POLICY_SETMEM, 1, 6, 8);
	hc_set_field(ix, 0, hc_mkfield(ix, 1, 5));
	KUNIT_EXPECT_FALSE(test, hc_ranks_ok(ix, 0));
	for (w = 0; w < 5; w++)
		hc_set_field(ix, 1 + w, hc_mkfield(ix, 1, w));
	KUNIT_EXPECT_TRUE(test, hc_ranks_ok(ix, 0));
	hc_set_field(ix, 0, hc_mkfield(ix, 1, 6));
	KUNIT_EXPECT_FALSE(test, hc_ranks_ok(ix, 0));
}

/* an older copy of a key in its set is empty; the newest one counts */
static void hc_test_shadowed(struct kunit *test)
{
	struct hc_index *ix = hc_test_index(test, HC_POLICY_SET, 1, 4, 8);
	static const u8 k1[] = "key one", k2[] = "key two";
	void *set;

	ix->block_size = 4096;
	ix->format_id = 0x1234567;
	set = kunit_kzalloc(test, 4 * 4096, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, set);
	/* way 0: k1 (seq 1), way 2: k2 (seq 2), way 3: k1 again (seq 3) */
	hc_fill_slot(ix, set, k1, sizeof(k1), "a", 1, 0, 0);
	hc_fill_slot(ix, set + 2 * 4096, k2, sizeof(k2), "b", 1, 0, 0);
	hc_fill_slot(ix, set + 3 * 4096, k1, sizeof(k1), "c", 1, 0, 0);
	KUNIT_EXPECT_TRUE(test, hc_shadowed(ix, set, 0));
	KUNIT_EXPECT_FALSE(test, hc_shadowed(ix, set, 2));
	KUNIT_EXPECT_FALSE(test, hc_shadowed(ix, set, 3));
	/* the newer copy torn (its CRC fails): the older one is the object again */
	((u8 *)set)[3 * 4096 + HC_SLOT_HDR_BYTES] ^= 0xff;
	KUNIT_EXPECT_FALSE(test, hc_shadowed(ix, set, 0));
	((u8 *)set)[3 * 4096 + HC_SLOT_HDR_BYTES] ^= 0xff;
	KUNIT_EXPECT_TRUE(test, hc_shadowed(ix, set, 0));
	/* a newer copy of another format (an earlier index on the device) does not count */
	ix->format_id++;
	hc_fill_slot(ix, set + 1 * 4096, k1, sizeof(k1), "d", 1, 0, 0);
	ix->format_id--;
	KUNIT_EXPECT_FALSE(test, hc_slot_valid(ix, set + 1 * 4096));
	KUNIT_EXPECT_FALSE(test, hc_shadowed(ix, set, 3));
	/* an equal sequence number is no newer: neither copy hides the other */
	hc_fill_slot(ix, set + 1 * 4096, k2, sizeof(k2), "e", 1, 0, 0);
	((struct hc_slot_disk *)(set + 1 * 4096))->seq = cpu_to_le64(2);
	((struct hc_slot_disk *)(set + 1 * 4096))->crc =
		cpu_to_le32(hc_crc(set + 4096, HC_SLOT_HDR_BYTES + 1,
				   offsetof(struct hc_slot_disk, crc)));
	KUNIT_EXPECT_TRUE(test, hc_slot_valid(ix, set + 1 * 4096));
	KUNIT_EXPECT_FALSE(test, hc_shadowed(ix, set, 1));
	KUNIT_EXPECT_FALSE(test, hc_shadowed(ix, set, 2));
}

/*
 * The records a crash recovery replays after a periodic checkpoint (log end
 * 98 of 100, pass 15, write counter 500): the one d blocks on has sequence
 * 501 + d and the pass of its place (0 once round the end); nothing else
 */
static void hc_test_log_tail(struct kunit *test)
{
	struct hc_index *ix = hc_test_index(test, HC_POLICY_LOG, 1, 8, 8);
	static const u8 k[] = "key";
	struct hc_slot_disk *s;

	ix->block_size = 4096;
	ix->format_id = 0x77;
	ix->log_blocks = 100;
	s = kunit_kzalloc(test, 4096, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, s);
	ix->wseq = 500;
	hc_fill_slot(ix, s, k, sizeof(k), "v", 1, 0, 15 << 8);
	KUNIT_EXPECT_TRUE(test, hc_log_tail_rec(ix, s, 98, 15, 500, 0));
	KUNIT_EXPECT_FALSE(test, hc_log_tail_rec(ix, s, 98, 15, 500, 1));	/* seq 502 there */
	KUNIT_EXPECT_FALSE(test, hc_log_tail_rec(ix, s, 98, 15, 499, 0));	/* older */
	KUNIT_EXPECT_FALSE(test, hc_log_tail_rec(ix, s, 98, 14, 500, 0));	/* another pass */
	/* round the end: pass 0 */
	ix->wseq = 503;
	hc_fill_slot(ix, s, k, sizeof(k), "v", 1, 0, 0 << 8);
	KUNIT_EXPECT_TRUE(test, hc_log_tail_rec(ix, s, 98, 15, 500, 3));
	hc_fill_slot(ix, s, k, sizeof(k), "v", 1, 0, 15 << 8);
	s->seq = cpu_to_le64(504);
	s->crc = cpu_to_le32(hc_crc(s, HC_SLOT_HDR_BYTES + 1, offsetof(struct hc_slot_disk, crc)));
	KUNIT_EXPECT_FALSE(test, hc_log_tail_rec(ix, s, 98, 15, 500, 3));
	/* torn: its CRC fails */
	hc_fill_slot(ix, s, k, sizeof(k), "v", 1, 0, 0 << 8);
	s->seq = cpu_to_le64(504);
	KUNIT_EXPECT_FALSE(test, hc_log_tail_rec(ix, s, 98, 15, 500, 3));
}

/* every policy has its ops, whole; nothing else is a policy */
static void hc_test_policies(struct kunit *test)
{
	u32 p;

	KUNIT_EXPECT_NULL(test, hc_policy(0));
	KUNIT_EXPECT_NULL(test, hc_policy(HC_POLICY_CASCADE + 1));
	KUNIT_EXPECT_NULL(test, hc_policy(U32_MAX));
	for (p = HC_POLICY_BASIC; p <= HC_POLICY_CASCADE; p++) {
		const struct hc_policy_ops *o = hc_policy(p);

		KUNIT_ASSERT_NOT_NULL_MSG(test, o, "policy %u", p);
		KUNIT_EXPECT_TRUE_MSG(test, o->name && o->format && o->geometry_ok &&
				      o->alloc_ram && o->recover && o->insert && o->lookup &&
				      o->remove, "policy %u (%s)", p, o->name);
		/* a policy that replays after a periodic checkpoint has checkpoints */
		KUNIT_EXPECT_TRUE_MSG(test, !o->ckpt_tail || (o->ckpt_save && o->ckpt_load),
				      "policy %u", p);
		/* a policy that buffers says how many objects it holds */
		KUNIT_EXPECT_EQ_MSG(test, !o->flush, !o->objects, "policy %u", p);
	}
}

/* an empty BufferHash index with no device: 2 super tables, 4 incarnations of 4 blocks */
static struct hc_index *hc_test_bh(struct kunit *test)
{
	struct hc_index *ix = hc_test_index(test, HC_POLICY_BUFFERHASH, 2, 4, 8);

	ix->ops = &hc_bh_ops;
	ix->block_size = 4096;
	ix->buffer_bytes = 4 * 4096;
	ix->format_id = 0xbf;
	ix->seed = 5;
	ix->hkey.key[0] = 5;
	KUNIT_ASSERT_EQ(test, 0, ix->ops->alloc_ram(ix));
	return ix;
}

static int hc_test_bh_put(struct hc_index *ix, const char *key, const void *v, u64 vlen)
{
	return ix->ops->insert(ix, key, strlen(key), v, vlen, 0);
}

/* GET @key into @v (up to @cap bytes): 1 found, 0 not, < 0 an error */
static int hc_test_bh_get(struct hc_index *ix, const char *key, void *v, u64 cap)
{
	struct hc_object o = { .value_len = cap };
	int r = ix->ops->lookup(ix, key, strlen(key), v, &o);

	return r ?: (int)o.found;
}

/*
 * BufferHash in RAM (its buffers; no incarnation is written here): the
 * newest record of a key wins, in its home block or in the second one a
 * full home block sends it to; a delete hides it; a filter names the
 * incarnation a key went to until that is dropped.
 */
static void hc_test_bufferhash(struct kunit *test)
{
	struct hc_index *ix = hc_test_bh(test);
	static char big[1900], got[2000];
	struct hc_bh_key l, m;
	char keys[3][16];
	unsigned int i, n = 0;

	KUNIT_ASSERT_EQ(test, 0, hc_test_bh_put(ix, "k0", "zero", 4));
	KUNIT_ASSERT_EQ(test, 0, hc_test_bh_put(ix, "k1", "one", 3));
	KUNIT_EXPECT_EQ(test, 1, hc_test_bh_get(ix, "k0", got, sizeof(got)));
	KUNIT_EXPECT_MEMEQ(test, got, "zero", 4);
	KUNIT_ASSERT_EQ(test, 0, hc_test_bh_put(ix, "k0", "ZERO", 4));
	KUNIT_EXPECT_EQ(test, 1, hc_test_bh_get(ix, "k0", got, sizeof(got)));
	KUNIT_EXPECT_MEMEQ(test, got, "ZERO", 4);
	{
		struct hc_object o = {};

		KUNIT_EXPECT_EQ(test, 0, ix->ops->remove(ix, "k1", 2, &o));
		KUNIT_EXPECT_EQ(test, 1U, o.found);
		KUNIT_EXPECT_EQ(test, 0, hc_test_bh_get(ix, "k1", got, sizeof(got)));
		KUNIT_EXPECT_EQ(test, 0, ix->ops->remove(ix, "k1", 2, &o));
		KUNIT_EXPECT_EQ(test, 0U, o.found);
	}
	/* the head incarnation's filter names k0 */
	hc_bh_locate(ix, "k0", 2, &l);
	KUNIT_EXPECT_TRUE(test, hc_bh_candidates(ix, &l) & BIT_ULL(0));
	/* three keys with one home block: 1900-byte values, two a block */
	for (i = 0; n < 3 && i < 100000; i++) {
		snprintf(keys[n], sizeof(keys[n]), "h%u", i);
		hc_bh_locate(ix, keys[n], strlen(keys[n]), &m);
		if (m.t == l.t && m.b1 == l.b1)
			n++;
	}
	KUNIT_ASSERT_EQ(test, 3U, n);
	for (i = 0; i < 3; i++) {
		memset(big, 'a' + i, sizeof(big));
		KUNIT_ASSERT_EQ(test, 0, hc_test_bh_put(ix, keys[i], big, sizeof(big)));
	}
	for (i = 0; i < 3; i++) {
		memset(big, 'a' + i, sizeof(big));
		KUNIT_EXPECT_EQ_MSG(test, 1, hc_test_bh_get(ix, keys[i], got, sizeof(got)), "%s",
				    keys[i]);
		KUNIT_EXPECT_MEMEQ(test, got, big, sizeof(big));
	}
	/* an overwrite lands in the home block, the old copy in the other: the new one wins */
	KUNIT_ASSERT_EQ(test, 0, hc_test_bh_put(ix, keys[2], "new", 3));
	KUNIT_EXPECT_EQ(test, 1, hc_test_bh_get(ix, keys[2], got, sizeof(got)));
	KUNIT_EXPECT_MEMEQ(test, got, "new", 3);
	KUNIT_EXPECT_EQ(test, 1, hc_test_bh_get(ix, "k0", got, sizeof(got)));
	/* dropped, the incarnation is no longer a candidate */
	hc_bh_drop_slot(ix, l.t, 0);
	KUNIT_EXPECT_FALSE(test, hc_bh_candidates(ix, &l) & BIT_ULL(0));
	/* a value that does not fit a block */
	KUNIT_EXPECT_EQ(test, -EFBIG, hc_test_bh_put(ix, "huge", big, 4096));
}

/* give @b the CRC the index would */
static void hc_test_seal(struct hc_bh_block *b)
{
	b->crc = 0;
	b->crc = cpu_to_le32(hc_crc(b, sizeof(*b), offsetof(struct hc_bh_block, crc)));
}

/* a block header from the device counts only as this index wrote it, CRC or not */
static void hc_test_bh_block(struct kunit *test)
{
	struct hc_index *ix = hc_test_bh(test);
	struct hc_bh_block b;
	u64 gen;

	memset(&b, 0, sizeof(b));
	b.magic = cpu_to_le32(HC_BH_BLOCK_MAGIC);
	b.format_id = cpu_to_le64(ix->format_id);
	b.gen = cpu_to_le64(7);
	b.table = cpu_to_le32(1);
	b.slot = cpu_to_le16(2);
	b.used = cpu_to_le32(4096 - sizeof(b));
	hc_test_seal(&b);
	KUNIT_EXPECT_TRUE(test, hc_bh_block_ok(ix, &b, 1, 2, &gen));
	KUNIT_EXPECT_EQ(test, 7ULL, gen);
	/* another place */
	KUNIT_EXPECT_FALSE(test, hc_bh_block_ok(ix, &b, 0, 2, &gen));
	KUNIT_EXPECT_FALSE(test, hc_bh_block_ok(ix, &b, 1, 3, &gen));
	/* unsealed */
	b.gen = cpu_to_le64(8);
	KUNIT_EXPECT_FALSE(test, hc_bh_block_ok(ix, &b, 1, 2, &gen));
	/* sealed, but more used than the block holds, an unknown flag, no generation */
	b.used = cpu_to_le32(4096 - sizeof(b) + 1);
	hc_test_seal(&b);
	KUNIT_EXPECT_FALSE(test, hc_bh_block_ok(ix, &b, 1, 2, &gen));
	b.used = 0;
	b.flags = cpu_to_le16(2);
	hc_test_seal(&b);
	KUNIT_EXPECT_FALSE(test, hc_bh_block_ok(ix, &b, 1, 2, &gen));
	b.flags = cpu_to_le16(HC_BH_OVERFLOW);
	b.gen = 0;
	hc_test_seal(&b);
	KUNIT_EXPECT_FALSE(test, hc_bh_block_ok(ix, &b, 1, 2, &gen));
	/* another format's */
	b.gen = cpu_to_le64(9);
	b.format_id = cpu_to_le64(ix->format_id + 1);
	hc_test_seal(&b);
	KUNIT_EXPECT_FALSE(test, hc_bh_block_ok(ix, &b, 1, 2, &gen));
	b.format_id = cpu_to_le64(ix->format_id);
	hc_test_seal(&b);
	KUNIT_EXPECT_TRUE(test, hc_bh_block_ok(ix, &b, 1, 2, &gen));
}

/* append a record of @klen key bytes 'k' and @vlen value bytes at *@off, sealed for @gen */
static void hc_test_bh_rec(struct hc_index *ix, u8 *blk, u32 *off, u64 gen, u32 klen, u32 vlen)
{
	struct hc_bh_rec *r = (void *)(blk + *off);

	memset(r, 0, sizeof(*r));
	r->key_len = cpu_to_le16(klen);
	r->value_len = cpu_to_le32(vlen);
	r->seq = cpu_to_le64(1);
	memset(r + 1, 'k', klen);
	memset((u8 *)(r + 1) + klen, 'v', vlen);
	r->crc = cpu_to_le32(hc_bh_rec_crc(ix, gen, r, klen, vlen));
	*off += ALIGN(sizeof(*r) + klen + vlen, 8);
}

/*
 * Records are read up to the first that does not check, CRC or not: a value
 * longer than a PUT takes (GET copies into a buffer of that: issue 22's
 * review of BufferHash), or a record of an earlier generation of the block
 * (an incarnation's first write torn over the one before it).
 */
static void hc_test_bh_records(struct kunit *test)
{
	struct hc_index *ix = hc_test_bh(test);
	struct hc_bh_block *b;
	u32 off, n;
	bool torn;
	u8 *blk;

	blk = kunit_kzalloc(test, 4096, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, blk);
	b = (void *)blk;
	b->gen = cpu_to_le64(5);
	/* a value one byte longer than a PUT takes, between two good records */
	off = sizeof(*b);
	hc_test_bh_rec(ix, blk, &off, 5, 2, 3);
	hc_test_bh_rec(ix, blk, &off, 5, 1, hc_max_value(ix) + 1);
	hc_test_bh_rec(ix, blk, &off, 5, 2, 3);
	KUNIT_ASSERT_LE(test, off, 4096U);
	b->used = cpu_to_le32(off - sizeof(*b));
	off = sizeof(*b);
	torn = false;
	KUNIT_EXPECT_NOT_NULL(test, hc_bh_next(ix, blk, &off, &torn));
	KUNIT_EXPECT_NULL(test, hc_bh_next(ix, blk, &off, &torn));
	KUNIT_EXPECT_TRUE(test, torn);
	/* the longest value a PUT takes is read */
	off = sizeof(*b);
	hc_test_bh_rec(ix, blk, &off, 5, 1, hc_max_value(ix));
	b->used = cpu_to_le32(off - sizeof(*b));
	off = sizeof(*b);
	torn = false;
	KUNIT_EXPECT_NOT_NULL(test, hc_bh_next(ix, blk, &off, &torn));
	KUNIT_EXPECT_FALSE(test, torn);
	/* records of generation 4 behind a header of generation 5: none read */
	memset(blk + sizeof(*b), 0, 4096 - sizeof(*b));
	off = sizeof(*b);
	for (n = 0; n < 3; n++)
		hc_test_bh_rec(ix, blk, &off, 4, 2, 3);
	b->used = cpu_to_le32(off - sizeof(*b));
	off = sizeof(*b);
	torn = false;
	KUNIT_EXPECT_NULL(test, hc_bh_next(ix, blk, &off, &torn));
	KUNIT_EXPECT_TRUE(test, torn);
	b->gen = cpu_to_le64(4);
	off = sizeof(*b);
	for (n = 0; hc_bh_next(ix, blk, &off, &torn); n++)
		;
	KUNIT_EXPECT_EQ(test, 3U, n);
}

/*
 * An empty Cascade index with no device: 2 partitions of 8 T1 entries, T2
 * rings of 2 blocks, 2 T3 buckets (their active lists) and a wide log of 16
 * blocks, 4 slabs of 4 blocks of 4 KiB
 */
static struct hc_index *hc_test_ca(struct kunit *test)
{
	struct hc_index *ix = hc_test_index(test, HC_POLICY_CASCADE, 2, 2, 8);

	ix->ops = &hc_ca_ops;
	ix->block_size = 4096;
	ix->ram_ways = 2;
	ix->resident_sets = 16;
	ix->buffer_bytes = 4 * 4096;
	ix->log_off = HC_TABLE_OFFSET + (2 * 2 + 2 * HC_CA_LIST + 2 * HC_CA_WIDE) * 4096;
	ix->log_blocks = 4 * 4;
	ix->dev_bytes = ix->log_off + 4 * 4 * 4096;
	ix->format_id = 0xca;
	ix->sb_seq = 3;
	ix->hkey.key[0] = 9;
	/*
	 * the layout before the wide table does not attach; nor does a wide
	 * log of fewer blocks than wide buckets
	 */
	KUNIT_EXPECT_FALSE(test, hc_ca_ops.geometry_ok(ix));
	ix->flags = HC_CA_SB_WIDE;
	ix->log_off -= 4096;
	ix->dev_bytes -= 4096;
	KUNIT_EXPECT_FALSE(test, hc_ca_ops.geometry_ok(ix));
	ix->log_off += 4096;
	ix->dev_bytes += 4096;
	KUNIT_ASSERT_TRUE(test, hc_ca_ops.geometry_ok(ix));
	KUNIT_ASSERT_EQ(test, 0, ix->ops->alloc_ram(ix));
	return ix;
}

/*
 * Cascade in RAM (T1 and the open slab; nothing is written here): the
 * newest record of a key wins, a delete hides it; every lookup of a stored
 * key is settled in T1.
 */
static void hc_test_cascade(struct kunit *test)
{
	struct hc_index *ix = hc_test_ca(test);
	struct hc_object o = {};
	char got[16];

	KUNIT_ASSERT_EQ(test, 0, hc_test_bh_put(ix, "a", "one", 3));
	KUNIT_ASSERT_EQ(test, 0, hc_test_bh_put(ix, "b", "two", 3));
	KUNIT_EXPECT_EQ(test, 1, hc_test_bh_get(ix, "a", got, sizeof(got)));
	KUNIT_EXPECT_MEMEQ(test, got, "one", 3);
	KUNIT_ASSERT_EQ(test, 0, hc_test_bh_put(ix, "a", "ONE!", 4));
	KUNIT_EXPECT_EQ(test, 1, hc_test_bh_get(ix, "a", got, sizeof(got)));
	KUNIT_EXPECT_MEMEQ(test, got, "ONE!", 4);
	KUNIT_EXPECT_EQ(test, 0, hc_test_bh_get(ix, "c", got, sizeof(got)));
	KUNIT_EXPECT_EQ(test, 0, ix->ops->remove(ix, "b", 1, &o));
	KUNIT_EXPECT_EQ(test, 1U, o.found);
	KUNIT_EXPECT_EQ(test, 0, hc_test_bh_get(ix, "b", got, sizeof(got)));
	KUNIT_EXPECT_EQ(test, 0, ix->ops->remove(ix, "b", 1, &o));
	KUNIT_EXPECT_EQ(test, 0U, o.found);
	/* puts, gets and deletes settled in RAM: no device I/O at all */
	KUNIT_EXPECT_EQ(test, 0ULL, ix->st.read_ios + ix->st.write_ios);
	/* 4 gets: a twice and b's tombstone settled in T1, c in no tier */
	KUNIT_EXPECT_EQ(test, 4ULL, ix->st.lookups);
	KUNIT_EXPECT_EQ(test, 3ULL, ix->st.tier_hits[0]);
	KUNIT_EXPECT_EQ(test, 0ULL, ix->st.tier_hits[1] + ix->st.tier_hits[2]);
	/* a, b, a again and b's two tombstones (a delete always appends one) */
	KUNIT_EXPECT_EQ(test, 5ULL, ix->ops->objects(ix));
}

/* which slabs a mapping may point into: the open one and the nslabs - 1 before it */
static void hc_test_ca_live(struct kunit *test)
{
	KUNIT_EXPECT_TRUE(test, hc_ca_live(5, 4, 5));
	KUNIT_EXPECT_TRUE(test, hc_ca_live(5, 4, 2));
	KUNIT_EXPECT_FALSE(test, hc_ca_live(5, 4, 1));
	KUNIT_EXPECT_FALSE(test, hc_ca_live(5, 4, 6));
	/* no slab 0 */
	KUNIT_EXPECT_FALSE(test, hc_ca_live(2, 4, 0));
	KUNIT_EXPECT_TRUE(test, hc_ca_live(2, 4, 1));
	/* the 32 bits an entry keeps, across their wrap */
	KUNIT_EXPECT_TRUE(test, hc_ca_live(BIT_ULL(32) + 1, 4, 0xffffffff));
	KUNIT_EXPECT_FALSE(test, hc_ca_live(BIT_ULL(32) + 1, 4, 0xfffffffd));
	KUNIT_EXPECT_TRUE(test, hc_ca_live(BIT_ULL(32) + 1, 4, 1));
	/* a hash's wide bucket is in its active bucket's range */
	KUNIT_EXPECT_EQ(test, 3U * HC_CA_WIDE, hc_ca_wide(3, 0));
	KUNIT_EXPECT_EQ(test, 3U * HC_CA_WIDE + HC_CA_WIDE - 1, hc_ca_wide(3, ~0ULL));
	KUNIT_EXPECT_EQ(test, 5U * HC_CA_WIDE + 1, hc_ca_wide(5, 1ULL << 48));
}

static void hc_test_ca_seal(struct hc_ca_iblk *b)
{
	b->crc = 0;
	b->crc = cpu_to_le32(hc_crc(b, 4096, offsetof(struct hc_ca_iblk, crc)));
}

/*
 * An index block from the device counts only as this index, in this epoch,
 * wrote it for that place; one of the epoch's for another place is the log
 * come round, anything else the device changed under the index
 */
static void hc_test_ca_iblk(struct kunit *test)
{
	struct hc_index *ix = hc_test_ca(test);
	struct hc_ca_iblk *b = kunit_kzalloc(test, 4096, GFP_KERNEL);
	u32 epb = (4096 - sizeof(*b)) / sizeof(struct hc_ca_ent);

	KUNIT_ASSERT_NOT_NULL(test, b);
	b->magic = cpu_to_le32(HC_CA_IBLK_MAGIC);
	b->format_id = cpu_to_le64(ix->format_id);
	b->epoch = cpu_to_le64(3);
	b->seq = cpu_to_le64(7);
	b->owner = cpu_to_le32(1);
	b->count = cpu_to_le32(epb);
	hc_test_ca_seal(b);
	KUNIT_EXPECT_EQ(test, HC_CA_OK, hc_ca_iblk_check(ix, b, 1, 3, 7));
	KUNIT_EXPECT_EQ(test, HC_CA_OTHER, hc_ca_iblk_check(ix, b, 0, 3, 7));
	KUNIT_EXPECT_EQ(test, HC_CA_BAD, hc_ca_iblk_check(ix, b, 1, 2, 7));
	KUNIT_EXPECT_EQ(test, HC_CA_OTHER, hc_ca_iblk_check(ix, b, 1, 3, 8));
	/* an entry changed: the CRC covers the whole block */
	((u8 *)b)[4095] ^= 1;
	KUNIT_EXPECT_EQ(test, HC_CA_BAD, hc_ca_iblk_check(ix, b, 1, 3, 7));
	/* sealed, but more entries than fit */
	b->count = cpu_to_le32(epb + 1);
	hc_test_ca_seal(b);
	KUNIT_EXPECT_EQ(test, HC_CA_BAD, hc_ca_iblk_check(ix, b, 1, 3, 7));
	b->count = cpu_to_le32(epb);
	b->format_id = cpu_to_le64(ix->format_id + 1);
	hc_test_ca_seal(b);
	KUNIT_EXPECT_EQ(test, HC_CA_BAD, hc_ca_iblk_check(ix, b, 1, 3, 7));
	b->format_id = cpu_to_le64(ix->format_id);
	hc_test_ca_seal(b);
	KUNIT_EXPECT_EQ(test, HC_CA_OK, hc_ca_iblk_check(ix, b, 1, 3, 7));
	/* a compaction's flags are on wide blocks only, and no others */
	b->flags = cpu_to_le32(HC_CA_END);
	hc_test_ca_seal(b);
	KUNIT_EXPECT_EQ(test, HC_CA_BAD, hc_ca_iblk_check(ix, b, 1, 3, 7));
	b->owner = cpu_to_le32(HC_CA_T3_OWNER | HC_CA_WIDE_OWNER | 1);
	hc_test_ca_seal(b);
	KUNIT_EXPECT_EQ(test, HC_CA_OK, hc_ca_iblk_check(ix, b, le32_to_cpu(b->owner), 3, 7));
	b->flags = cpu_to_le32(HC_CA_END | HC_CA_BEGIN | HC_CA_DROP);
	hc_test_ca_seal(b);
	KUNIT_EXPECT_EQ(test, HC_CA_OK, hc_ca_iblk_check(ix, b, le32_to_cpu(b->owner), 3, 7));
	b->flags = cpu_to_le32(HC_CA_END | 8);
	hc_test_ca_seal(b);
	KUNIT_EXPECT_EQ(test, HC_CA_BAD, hc_ca_iblk_check(ix, b, le32_to_cpu(b->owner), 3, 7));
}

static struct kunit_case hc_test_cases[] = {
	KUNIT_CASE(hc_test_fields),
	KUNIT_CASE(hc_test_lru),
	KUNIT_CASE(hc_test_log_live),
	KUNIT_CASE(hc_test_log_tail),
	KUNIT_CASE(hc_test_hash),
	KUNIT_CASE(hc_test_frames),
	KUNIT_CASE(hc_test_loglru),
	KUNIT_CASE(hc_test_group_runs),
	KUNIT_CASE(hc_test_spill_entry),
	KUNIT_CASE(hc_test_loglru_copy_flag),
	KUNIT_CASE(hc_test_spill_check),
	KUNIT_CASE(hc_test_ranks),
	KUNIT_CASE(hc_test_shadowed),
	KUNIT_CASE(hc_test_policies),
	KUNIT_CASE(hc_test_bufferhash),
	KUNIT_CASE(hc_test_bh_block),
	KUNIT_CASE(hc_test_bh_records),
	KUNIT_CASE(hc_test_cascade),
	KUNIT_CASE(hc_test_ca_live),
	KUNIT_CASE(hc_test_ca_iblk),
	{}
};

static struct kunit_suite hc_test_suite = {
	.name = "hashcache",
	.test_cases = hc_test_cases,
};

kunit_test_suite(hc_test_suite);
