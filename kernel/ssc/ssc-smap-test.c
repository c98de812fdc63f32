// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the dm-ssc sparse hash map.
 *
 * Included at the end of ssc-smap.c (like fs/ext4/mballoc-test.c), so the
 * tests can look at the table layout and use the allocation failure hook.
 */

#include <kunit/test.h>
#include <linux/prandom.h>

#define SSC_TEST_SEED	0x55c5eedULL

static void ssc_test_map_free(struct kunit_resource *res)
{
	ssc_smap_destroy(res->data);
}

/* a map destroyed when the test ends, even if it fails early */
static struct ssc_smap *ssc_test_map(struct kunit *test, unsigned int key_bits,
				     unsigned int val_bits)
{
	struct ssc_smap *m = ssc_smap_create(key_bits, val_bits, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, m);
	kunit_alloc_resource(test, NULL, ssc_test_map_free, GFP_KERNEL, m);
	return m;
}

/* a value derived from the key, so it need not be stored */
static u64 ssc_test_val(const struct ssc_smap *m, u64 key)
{
	return (key * 0x2545f4914f6cdd1dULL + 7) & ssc_mask(m->val_bits);
}

/*
 * Check every invariant of the table: the bitmaps, packed arrays and size
 * classes agree; every entry hashes back to its home; Robin Hood order
 * (a displaced entry follows an occupied bucket whose displacement is at
 * least its own minus one); the entry count and the byte count are exact.
 */
static void ssc_test_check(struct kunit *test, const struct ssc_smap *m)
{
	const struct ssc_tab *t = &m->t;
	size_t bytes = kmalloc_size_roundup(sizeof(*m)) + ssc_tab_bytes(m, t);
	u64 n = 0;
	u32 g, pos;

	KUNIT_ASSERT_EQ(test, t->nbuckets % SSC_GROUP, 0);
	KUNIT_ASSERT_GE(test, t->nbuckets, SSC_MIN_BUCKETS);
	KUNIT_ASSERT_LE(test, t->ebits, 64);
	for (g = 0; g < t->ngroups; g++) {
		unsigned int k = hweight32(t->bitmap[g]);

		KUNIT_ASSERT_EQ(test, !k, !t->grp[g]);
		if (!k)
			continue;
		KUNIT_ASSERT_EQ(test, t->cls[g], ssc_class(t, k));
		bytes += ssc_class_size(t->cls[g]);
		n += k;
	}
	KUNIT_ASSERT_EQ(test, n, m->count);
	KUNIT_ASSERT_EQ(test, bytes, m->bytes);

	for (pos = 0; pos < t->nbuckets; pos++) {
		u32 prev = pos ? pos - 1 : t->nbuckets - 1, home;
		u64 e, key, rem, val;
		unsigned int d;

		if (!ssc_occupied(t, pos))
			continue;
		e = ssc_ent_get_pos(t, pos);
		d = ssc_e_d(e);
		key = ssc_e_key(m, t, pos, e);
		KUNIT_ASSERT_EQ(test, key >> m->key_bits, 0);
		ssc_hash(m, key, &home, &rem);
		KUNIT_ASSERT_EQ(test, (home + d) % t->nbuckets, pos);
		KUNIT_ASSERT_EQ(test, rem, ssc_e_rem(t, e));
		if (d) {
			KUNIT_ASSERT_TRUE(test, ssc_occupied(t, prev));
			KUNIT_ASSERT_GE(test, ssc_e_d(ssc_ent_get_pos(t, prev)) + 1, d);
		}
		KUNIT_ASSERT_TRUE(test, ssc_smap_lookup(m, key, &val));
		KUNIT_ASSERT_EQ(test, val, ssc_e_val(m, t, e));
	}
}

static void ssc_smap_test_basic(struct kunit *test)
{
	struct ssc_smap *m = ssc_test_map(test, 32, 24);
	size_t bytes;
	u64 v;

	KUNIT_EXPECT_EQ(test, ssc_smap_count(m), 0);
	KUNIT_EXPECT_FALSE(test, ssc_smap_lookup(m, 5, &v));
	KUNIT_EXPECT_FALSE(test, ssc_smap_remove(m, 5, &v, GFP_KERNEL));

	KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, 5, 50, GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, 0, 0, GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, U32_MAX, (1 << 24) - 1, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, ssc_smap_count(m), 3);
	KUNIT_EXPECT_TRUE(test, ssc_smap_lookup(m, 5, &v));
	KUNIT_EXPECT_EQ(test, v, 50);
	KUNIT_EXPECT_TRUE(test, ssc_smap_lookup(m, 0, &v));
	KUNIT_EXPECT_EQ(test, v, 0);
	KUNIT_EXPECT_TRUE(test, ssc_smap_lookup(m, U32_MAX, &v));
	KUNIT_EXPECT_EQ(test, v, (1 << 24) - 1);
	KUNIT_EXPECT_TRUE(test, ssc_smap_lookup(m, 5, NULL));
	KUNIT_EXPECT_FALSE(test, ssc_smap_lookup(m, 6, &v));

	/* overwrite: same count, no allocation */
	bytes = ssc_smap_bytes(m);
	KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, 5, 51, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, ssc_smap_count(m), 3);
	KUNIT_EXPECT_EQ(test, ssc_smap_bytes(m), bytes);
	KUNIT_EXPECT_TRUE(test, ssc_smap_lookup(m, 5, &v));
	KUNIT_EXPECT_EQ(test, v, 51);
	ssc_test_check(test, m);

	v = 0;
	KUNIT_EXPECT_TRUE(test, ssc_smap_remove(m, 5, &v, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, v, 51);
	KUNIT_EXPECT_FALSE(test, ssc_smap_lookup(m, 5, &v));
	KUNIT_EXPECT_FALSE(test, ssc_smap_remove(m, 5, &v, GFP_KERNEL));
	KUNIT_EXPECT_TRUE(test, ssc_smap_remove(m, 0, NULL, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, ssc_smap_count(m), 1);
	KUNIT_EXPECT_TRUE(test, ssc_smap_lookup(m, U32_MAX, &v));
	ssc_test_check(test, m);
}

static void ssc_smap_test_bad_args(struct kunit *test)
{
	static const unsigned int bad[][2] = {
		{ 0, 8 }, { 49, 8 }, { 64, 1 }, { 32, 0 }, { 32, 64 },
		{ 48, 17 }, { 32, 33 }, { 1, 60 }, { 4, 60 }, { 5, 60 },
	};
	struct ssc_smap *m;
	unsigned int i;
	u64 v;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		m = ssc_smap_create(bad[i][0], bad[i][1], GFP_KERNEL);
		KUNIT_EXPECT_NULL_MSG(test, m, "key_bits %u val_bits %u", bad[i][0], bad[i][1]);
		ssc_smap_destroy(m);
	}
	/* the widest entries still fit */
	m = ssc_test_map(test, 48, 16);
	KUNIT_EXPECT_EQ(test, m->t.ebits, 64);
	m = ssc_test_map(test, 4, 59);
	KUNIT_EXPECT_EQ(test, m->t.ebits, 64);
	m = ssc_test_map(test, 20, 12);

	KUNIT_EXPECT_EQ(test, ssc_smap_insert(m, 1 << 20, 1, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, ssc_smap_insert(m, U64_MAX, 1, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, ssc_smap_insert(m, 1, 1 << 12, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, ssc_smap_insert(m, 1, U64_MAX, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, ssc_smap_count(m), 0);
	KUNIT_EXPECT_EQ(test, ssc_smap_insert(m, (1 << 20) - 1, (1 << 12) - 1, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, ssc_smap_insert(m, (1 << 20) - 1, 1 << 12, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_TRUE(test, ssc_smap_lookup(m, (1 << 20) - 1, &v));
	KUNIT_EXPECT_EQ(test, v, (1 << 12) - 1);
	/* an out-of-range key must not alias an in-range one */
	KUNIT_EXPECT_FALSE(test, ssc_smap_lookup(m, (1 << 21) - 1, &v));
	KUNIT_EXPECT_FALSE(test, ssc_smap_remove(m, (1 << 21) - 1, &v, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, ssc_smap_count(m), 1);
}

/* every key of a few widths, including the widest (64-bit) entries */
static void ssc_smap_test_widths(struct kunit *test)
{
	static const unsigned int w[][3] = {
		/* key_bits, val_bits, keys */
		{ 1, 59, 2 }, { 4, 59, 16 }, { 10, 1, 1024 }, { 48, 16, 3000 },
		{ 33, 31, 3000 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(w); i++) {
		struct ssc_smap *m = ssc_test_map(test, w[i][0], w[i][1]);
		u64 step = w[i][2] > 1 ? ssc_mask(w[i][0]) / (w[i][2] - 1) : 1;
		u64 k, v, vmask = ssc_mask(w[i][1]);
		/* values using the top bits of the field */
#define SSC_TEST_WVAL(j)	((vmask - (j)) & vmask)
		unsigned int j;

		for (j = 0; j < w[i][2]; j++) {
			k = j * step;
			KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, k, SSC_TEST_WVAL(j),
							      GFP_KERNEL), 0);
		}
		KUNIT_ASSERT_EQ(test, ssc_smap_count(m), w[i][2]);
		for (j = 0; j < w[i][2]; j++) {
			k = j * step;
			KUNIT_ASSERT_TRUE(test, ssc_smap_lookup(m, k, &v));
			KUNIT_ASSERT_EQ(test, v, SSC_TEST_WVAL(j));
		}
		ssc_test_check(test, m);
		for (j = 0; j < w[i][2]; j += 2)
			KUNIT_ASSERT_TRUE(test, ssc_smap_remove(m, j * step, NULL, GFP_KERNEL));
		ssc_test_check(test, m);
		KUNIT_EXPECT_EQ(test, ssc_smap_count(m), w[i][2] / 2);
#undef SSC_TEST_WVAL
	}
}

static void ssc_smap_test_grow_shrink(struct kunit *test)
{
	struct ssc_smap *m = ssc_test_map(test, 32, 24);
	u32 nb_small = m->t.nbuckets, nb_big;
	const unsigned int n = 20000, keep = 100;
	unsigned int i;
	u64 v;

	KUNIT_EXPECT_EQ(test, nb_small, SSC_MIN_BUCKETS);
	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, i * 7919ULL, ssc_test_val(m, i),
						      GFP_KERNEL), 0);
	nb_big = m->t.nbuckets;
	KUNIT_EXPECT_GE(test, (u64)nb_big * 4, (u64)n * 5);
	KUNIT_EXPECT_LT(test, (u64)nb_big * 2, (u64)n * 5);
	ssc_test_check(test, m);

	for (i = keep; i < n; i++)
		KUNIT_ASSERT_TRUE(test, ssc_smap_remove(m, i * 7919ULL, NULL, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, ssc_smap_count(m), keep);
	KUNIT_EXPECT_LT(test, m->t.nbuckets, nb_big / 16);
	KUNIT_EXPECT_LE(test, (u64)m->t.nbuckets, (u64)keep * 5);
	ssc_test_check(test, m);
	for (i = 0; i < n; i++) {
		bool found = ssc_smap_lookup(m, i * 7919ULL, &v);

		KUNIT_ASSERT_EQ(test, found, i < keep);
		if (found)
			KUNIT_ASSERT_EQ(test, v, ssc_test_val(m, i));
	}

	/* all the way down, then up again */
	for (i = 0; i < keep; i++)
		KUNIT_ASSERT_TRUE(test, ssc_smap_remove(m, i * 7919ULL, NULL, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, m->t.nbuckets, SSC_MIN_BUCKETS);
	KUNIT_EXPECT_EQ(test, ssc_smap_bytes(m), kmalloc_size_roundup(sizeof(*m)));
	for (i = 0; i < 1000; i++)
		KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, i, i, GFP_KERNEL), 0);
	ssc_test_check(test, m);
}

/*
 * A map presized for n entries holds n random keys (the engine's block
 * numbers are spread by the hash the same way) without a rehash, does not
 * shrink when emptied, and takes them all again, still without a rehash.
 */
static void ssc_smap_test_presize(struct kunit *test)
{
	struct ssc_smap *m = ssc_test_map(test, 40, 24);
	const unsigned int n = 20000;
	struct rnd_state rs;
	unsigned int i, round;
	u32 nb;
	u64 *keys;

	keys = kunit_kmalloc_array(test, n, sizeof(*keys), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, keys);
	prandom_seed_state(&rs, SSC_TEST_SEED);
	KUNIT_ASSERT_EQ(test, ssc_smap_presize(m, n, GFP_KERNEL), 0);
	nb = m->t.nbuckets;
	KUNIT_EXPECT_GE(test, (u64)nb * 4, (u64)n * 5);
	KUNIT_EXPECT_LT(test, (u64)nb, (u64)n * 5 / 4 + 2 * SSC_GROUP);
	KUNIT_EXPECT_EQ(test, ssc_smap_rehashes(m), 0ULL);
	for (round = 0; round < 2; round++) {
		for (i = 0; i < n; i++) {
			keys[i] = ((u64)prandom_u32_state(&rs) << 8 ^ i) & ssc_mask(40);
			if (ssc_smap_lookup(m, keys[i], NULL))
				keys[i] = U64_MAX;	/* a repeat: not inserted */
			else
				KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, keys[i],
								      ssc_test_val(m, keys[i]),
								      GFP_KERNEL), 0);
		}
		ssc_test_check(test, m);
		KUNIT_EXPECT_EQ(test, m->t.nbuckets, nb);
		for (i = 0; i < n; i++)
			if (keys[i] != U64_MAX)
				KUNIT_ASSERT_TRUE(test, ssc_smap_remove(m, keys[i], NULL,
									GFP_KERNEL));
		KUNIT_EXPECT_EQ(test, ssc_smap_count(m), 0ULL);
		KUNIT_EXPECT_EQ(test, m->t.nbuckets, nb);
	}
	KUNIT_EXPECT_EQ(test, ssc_smap_rehashes(m), 0ULL);
	ssc_test_check(test, m);
}

/*
 * A map presized in its owner's memory builds its table there (zeroing it
 * first) and leaves it out of its byte count, moves to a table of its own
 * when it must grow, comes back when it shrinks to the presized size, and
 * never frees the memory (KASAN would see a double free at the end).
 */
static void ssc_smap_test_presize_in(struct kunit *test)
{
	const unsigned int n = 5000;
	size_t sz = ssc_smap_presize_bytes(n);
	void *mem = kunit_kmalloc(test, sz, GFP_KERNEL);	/* outlives the maps */
	struct ssc_smap *m = ssc_test_map(test, 40, 24);
	struct ssc_smap *twin = ssc_test_map(test, 40, 24);
	unsigned int i;
	u32 nb;

	KUNIT_EXPECT_EQ(test, ssc_smap_presize_bytes(50), (size_t)0);
	KUNIT_EXPECT_GT(test, ssc_smap_presize_bytes(51), (size_t)0);
	KUNIT_ASSERT_GT(test, sz, (size_t)0);
	KUNIT_EXPECT_EQ(test, sz % 8, (size_t)0);
	KUNIT_ASSERT_NOT_NULL(test, mem);
	memset(mem, 0xa5, sz);
	KUNIT_ASSERT_EQ(test, 0, ssc_smap_presize_in(m, n, mem, GFP_KERNEL));
	KUNIT_ASSERT_EQ(test, 0, ssc_smap_presize(twin, n, GFP_KERNEL));
	KUNIT_EXPECT_PTR_EQ(test, (void *)m->t.grp, mem);
	KUNIT_EXPECT_EQ(test, -EBUSY, ssc_smap_presize_in(m, n, mem, GFP_KERNEL));
	nb = m->t.nbuckets;
	KUNIT_EXPECT_EQ(test, twin->t.nbuckets, nb);
	for (i = 0; i < n; i++) {
		KUNIT_ASSERT_EQ(test, 0, ssc_smap_insert(m, i, ssc_test_val(m, i), GFP_KERNEL));
		KUNIT_ASSERT_EQ(test, 0, ssc_smap_insert(twin, i, ssc_test_val(m, i), GFP_KERNEL));
	}
	ssc_test_check(test, m);
	/* the same keys, the same arrays: only the table is left out */
	KUNIT_EXPECT_EQ(test, ssc_smap_bytes(twin) - ssc_smap_bytes(m),
			ssc_tab_bytes(twin, &twin->t));
	for (i = n; i < 3 * n; i++)
		KUNIT_ASSERT_EQ(test, 0, ssc_smap_insert(m, i, ssc_test_val(m, i), GFP_KERNEL));
	KUNIT_EXPECT_GT(test, m->t.nbuckets, nb);
	KUNIT_EXPECT_PTR_NE(test, (void *)m->t.grp, mem);
	ssc_test_check(test, m);
	for (i = 0; i < 3 * n - n / 10; i++)
		KUNIT_ASSERT_TRUE(test, ssc_smap_remove(m, i, NULL, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, m->t.nbuckets, nb);
	KUNIT_EXPECT_PTR_EQ(test, (void *)m->t.grp, mem);
	ssc_test_check(test, m);
	for (i = 3 * n - n / 10; i < 3 * n; i++) {
		u64 val;

		KUNIT_EXPECT_TRUE(test, ssc_smap_lookup(m, i, &val));
		KUNIT_EXPECT_EQ(test, val, ssc_test_val(m, i));
	}
}

struct ssc_test_range {
	unsigned long *seen;	/* bitmap over key - base */
	u64 base;
	const struct ssc_smap *m;
	unsigned int visits;
	unsigned int stop_after;
	bool bad;
};

static int ssc_test_range_fn(void *ctx, u64 key, u64 val)
{
	struct ssc_test_range *r = ctx;

	/* a key outside the range, a wrong value, or a key seen twice */
	if (key < r->base || val != ssc_test_val(r->m, key) ||
	    __test_and_set_bit(key - r->base, r->seen))
		r->bad = true;
	r->visits++;
	return r->stop_after && r->visits == r->stop_after ? 42 : 0;
}

/* walk [lo, hi) and compare with the keys base + 3 * i, i < n */
static void ssc_test_range_one(struct kunit *test, struct ssc_smap *m, u64 base,
			       unsigned int n, u64 lo, u64 hi, bool by_lookup)
{
	struct ssc_test_range r = { .base = base, .m = m };
	unsigned int i, expect = 0;

	KUNIT_ASSERT_EQ(test, ssc_range_by_lookup(m, lo, hi), by_lookup);
	r.seen = kunit_kcalloc(test, BITS_TO_LONGS(3 * n), sizeof(long), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r.seen);
	KUNIT_ASSERT_EQ(test, ssc_smap_visit_range(m, lo, hi, ssc_test_range_fn, &r), 0);
	KUNIT_EXPECT_FALSE(test, r.bad);
	for (i = 0; i < 3 * n; i++) {
		u64 key = base + i;
		bool want = i % 3 == 0 && key >= lo && key < hi;

		expect += want;
		if (test_bit(i, r.seen) != want) {
			KUNIT_FAIL(test, "key %llu: visited %d, expected %d", key,
				   test_bit(i, r.seen), want);
			break;
		}
	}
	KUNIT_EXPECT_EQ(test, r.visits, expect);
}

static void ssc_smap_test_range(struct kunit *test)
{
	struct ssc_smap *m = ssc_test_map(test, 40, 20);
	const unsigned int n = 5000;
	const u64 base = 1ULL << 36;
	struct ssc_test_range r = { .base = base, .m = m, .stop_after = 3 };
	unsigned int i;

	for (i = 0; i < n; i++) {
		u64 key = base + 3 * i;

		KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, key, ssc_test_val(m, key), GFP_KERNEL), 0);
	}
	/* noise outside [base, base + 3n) */
	for (i = 1; i <= 100; i++) {
		KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, base - i, 0, GFP_KERNEL), 0);
		KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, base + 3 * n + i, 0, GFP_KERNEL), 0);
	}

	/* small ranges by lookups, including the ends */
	ssc_test_range_one(test, m, base, n, base + 10, base + 40, true);
	ssc_test_range_one(test, m, base, n, base, base + 1, true);
	ssc_test_range_one(test, m, base, n, base + 3 * n - 1, base + 3 * n, true);
	ssc_test_range_one(test, m, base, n, base + 1, base + 3, true);
	/* large ranges by a scan */
	ssc_test_range_one(test, m, base, n, base, base + 3 * n, false);
	ssc_test_range_one(test, m, base, n, base + 1000, base + 3 * n - 1000, false);
	ssc_test_range_one(test, m, base, n, base + 2, base + 3 * n - 2, false);
	/* empty and clamped ranges */
	KUNIT_EXPECT_EQ(test, ssc_smap_visit_range(m, 9, 9, ssc_test_range_fn, &r), 0);
	KUNIT_EXPECT_EQ(test, ssc_smap_visit_range(m, 1ULL << 40, U64_MAX,
						   ssc_test_range_fn, &r), 0);
	KUNIT_EXPECT_EQ(test, r.visits, 0);

	/* early stop, both ways */
	r.seen = kunit_kcalloc(test, BITS_TO_LONGS(3 * n), sizeof(long), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r.seen);
	KUNIT_EXPECT_EQ(test, ssc_smap_visit_range(m, base, base + 30,
						   ssc_test_range_fn, &r), 42);
	KUNIT_EXPECT_EQ(test, r.visits, 3);
	/* in key order when by lookups */
	KUNIT_EXPECT_TRUE(test, test_bit(0, r.seen) && test_bit(3, r.seen) && test_bit(6, r.seen));
	r.visits = 0;
	bitmap_zero(r.seen, 3 * n);
	KUNIT_EXPECT_EQ(test, ssc_smap_visit_range(m, base, base + 3 * n,
						   ssc_test_range_fn, &r), 42);
	KUNIT_EXPECT_EQ(test, r.visits, 3);
	KUNIT_EXPECT_FALSE(test, r.bad);
}

/* clustered keys: the layout stays valid and lookups stay within 32 buckets */
static void ssc_smap_test_robin_hood(struct kunit *test)
{
	struct ssc_smap *m;
	unsigned int i;
	u64 v;

	/* sequential keys */
	m = ssc_test_map(test, 32, 24);
	for (i = 0; i < 50000; i++)
		KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, i, ssc_test_val(m, i), GFP_KERNEL), 0);
	ssc_test_check(test, m);
	for (i = 0; i < 50000; i += 3)
		KUNIT_ASSERT_TRUE(test, ssc_smap_remove(m, i, NULL, GFP_KERNEL));
	ssc_test_check(test, m);

	/* keys differing only in their high bits */
	m = ssc_test_map(test, 48, 16);
	for (i = 0; i < 4096; i++)
		KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, (u64)i << 36, i, GFP_KERNEL), 0);
	ssc_test_check(test, m);
	for (i = 0; i < 4096; i++) {
		KUNIT_ASSERT_TRUE(test, ssc_smap_lookup(m, (u64)i << 36, &v));
		KUNIT_ASSERT_EQ(test, v, i);
		KUNIT_ASSERT_FALSE(test, ssc_smap_lookup(m, ((u64)i << 36) | 1, &v));
	}

	/* a dense key space: every key present, then every other one */
	m = ssc_test_map(test, 12, 8);
	for (i = 0; i < 4096; i++)
		KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, i, i & 0xff, GFP_KERNEL), 0);
	ssc_test_check(test, m);
	for (i = 0; i < 4096; i += 2)
		KUNIT_ASSERT_TRUE(test, ssc_smap_remove(m, i, NULL, GFP_KERNEL));
	ssc_test_check(test, m);
	KUNIT_EXPECT_EQ(test, ssc_smap_count(m), 2048);
}

#define SSC_TEST_SPACE	8192U

struct ssc_test_ref {
	u64 keys[SSC_TEST_SPACE];	/* key i is (i << 7) | random 7 bits */
	u64 vals[SSC_TEST_SPACE];	/* value + 1, or 0 if absent */
	unsigned long seen[BITS_TO_LONGS(SSC_TEST_SPACE)];
	unsigned int visits;
	bool bad;
};

static int ssc_test_ref_fn(void *ctx, u64 key, u64 val)
{
	struct ssc_test_ref *ref = ctx;
	unsigned int i = key >> 7;

	if (i >= SSC_TEST_SPACE || ref->keys[i] != key || ref->vals[i] != val + 1 ||
	    __test_and_set_bit(i, ref->seen))
		ref->bad = true;
	ref->visits++;
	return 0;
}

/* runs that wrap from the last bucket to the first, in every operation */
static void ssc_smap_test_wrap(struct kunit *test)
{
	struct ssc_smap *m = ssc_test_map(test, 32, 24);
	const u32 nb = SSC_MIN_BUCKETS + SSC_GROUP;
	const struct ssc_tab t = { .nbuckets = nb };
	u64 keys[8], k, v;
	unsigned int i, n = 0;

	/* keys whose home is the last bucket of a table of nb buckets */
	for (k = 0; n < ARRAY_SIZE(keys) && k < 1000000; k++)
		if (ssc_home(m, &t, ssc_mix(m, k)) == nb - 1)
			keys[n++] = k;
	KUNIT_ASSERT_EQ(test, n, ARRAY_SIZE(keys));
	for (i = 0; i < n; i++)
		KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, keys[i], i, GFP_KERNEL), 0);

	/* a rehash lays them out at nb - 1, 0, 1, ..., n - 2 */
	KUNIT_ASSERT_EQ(test, ssc_rehash(m, nb, GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, m->t.nbuckets, nb);
	ssc_test_check(test, m);
	KUNIT_EXPECT_TRUE(test, ssc_occupied(&m->t, nb - 1));
	for (i = 0; i < n - 1; i++)
		KUNIT_EXPECT_EQ(test, ssc_e_d(ssc_ent_get_pos(&m->t, i)), i + 1);

	/* one more key, wherever it lands */
	KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, 1ULL << 31, 99, GFP_KERNEL), 0);
	ssc_test_check(test, m);

	/* backward shift across the end, then a shrink */
	for (i = 0; i < n; i++) {
		KUNIT_ASSERT_TRUE(test, ssc_smap_remove(m, keys[i], &v, GFP_KERNEL));
		KUNIT_EXPECT_EQ(test, v, i);
		ssc_test_check(test, m);
	}
	KUNIT_EXPECT_EQ(test, m->t.nbuckets, SSC_MIN_BUCKETS);
	KUNIT_EXPECT_TRUE(test, ssc_smap_lookup(m, 1ULL << 31, &v));
	KUNIT_EXPECT_EQ(test, v, 99);
}

/* random operations checked against a plain array */
static void ssc_smap_test_random(struct kunit *test)
{
	const unsigned int space = SSC_TEST_SPACE, ops = 200000;
	struct ssc_smap *m = ssc_test_map(test, 20, 30);
	unsigned int i, present = 0, grows = 0, shrinks = 0;
	u32 nb = m->t.nbuckets;
	struct ssc_test_ref *r;
	struct rnd_state rs;
	bool filling = true;
	u64 *ref, *keys;

	r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r);
	ref = r->vals;
	keys = r->keys;
	prandom_seed_state(&rs, SSC_TEST_SEED);
	/* distinct keys spread over the key space */
	for (i = 0; i < space; i++)
		keys[i] = ((u64)i << 7 | (prandom_u32_state(&rs) & 0x7f)) & ssc_mask(20);

	for (i = 0; i < ops; i++) {
		unsigned int idx = prandom_u32_state(&rs) % space;
		unsigned int op = prandom_u32_state(&rs) % 8;
		u64 val = prandom_u32_state(&rs) & ssc_mask(30), got = 0;
		bool found;

		/* alternate between filling up to 3/4 and emptying to 1/16 */
		if (filling && present >= space / 4 * 3)
			filling = false;
		else if (!filling && present <= space / 16)
			filling = true;
		if (filling && op < 6) {
			KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, keys[idx], val, GFP_KERNEL), 0);
			present += !ref[idx];
			ref[idx] = val + 1;
		} else if (filling ? op == 6 : op < 7) {
			found = ssc_smap_remove(m, keys[idx], &got, GFP_KERNEL);
			KUNIT_ASSERT_EQ(test, found, !!ref[idx]);
			if (found)
				KUNIT_ASSERT_EQ(test, got, ref[idx] - 1);
			present -= found;
			ref[idx] = 0;
		} else {
			found = ssc_smap_lookup(m, keys[idx], &got);
			KUNIT_ASSERT_EQ(test, found, !!ref[idx]);
			if (found)
				KUNIT_ASSERT_EQ(test, got, ref[idx] - 1);
		}
		KUNIT_ASSERT_EQ(test, ssc_smap_count(m), present);
		grows += m->t.nbuckets > nb;
		shrinks += m->t.nbuckets < nb;
		nb = m->t.nbuckets;
		if (i % 20000 == 0)
			ssc_test_check(test, m);
	}
	ssc_test_check(test, m);
	kunit_info(test, "%u grows, %u shrinks\n", grows, shrinks);
	KUNIT_EXPECT_GT(test, grows, 15);
	KUNIT_EXPECT_GT(test, shrinks, 6);

	/* a full walk visits exactly the reference entries */
	KUNIT_ASSERT_FALSE(test, ssc_range_by_lookup(m, 0, U64_MAX));
	KUNIT_ASSERT_EQ(test, ssc_smap_visit_range(m, 0, U64_MAX, ssc_test_ref_fn, r), 0);
	KUNIT_EXPECT_FALSE(test, r->bad);
	KUNIT_EXPECT_EQ(test, r->visits, present);
	for (i = 0; i < space; i++)
		KUNIT_ASSERT_EQ(test, test_bit(i, r->seen), !!ref[i]);
}

/* an allocation failing anywhere in an insert leaves the map unchanged */
static void ssc_smap_test_alloc_failure(struct kunit *test)
{
	struct ssc_smap *m = ssc_test_map(test, 32, 24);
	unsigned int i, n, failures = 0;
	size_t bytes;
	u32 nb;
	int ret;

	/* fill up to the load limit, so the next new key grows the table */
	for (n = 0; (n + 2) * 5 <= m->t.nbuckets * 4 || m->t.nbuckets < 1024; n++)
		KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, n, n, GFP_KERNEL), 0);
	nb = m->t.nbuckets;
	KUNIT_ASSERT_EQ(test, ssc_smap_insert(m, n++, 0, GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, m->t.nbuckets, nb);
	bytes = ssc_smap_bytes(m);

	for (i = 0; ; i++) {
		ssc_smap_fail_countdown = i;
		ret = ssc_smap_insert(m, n, 1, GFP_KERNEL);
		ssc_smap_fail_countdown = -1;
		if (!ret)
			break;
		KUNIT_ASSERT_EQ(test, ret, -ENOMEM);
		failures++;
		/* unchanged, except that a completed growth may be kept */
		if (m->t.nbuckets == nb)
			KUNIT_ASSERT_EQ(test, ssc_smap_bytes(m), bytes);
		KUNIT_ASSERT_EQ(test, ssc_smap_count(m), n);
		KUNIT_ASSERT_FALSE(test, ssc_smap_lookup(m, n, NULL));
		ssc_test_check(test, m);
	}
	/* the count array, three group arrays, then one per packed array */
	KUNIT_EXPECT_GT(test, failures, 4 + nb / SSC_GROUP / 2);
	KUNIT_EXPECT_GT(test, m->t.nbuckets, nb);
	KUNIT_EXPECT_TRUE(test, ssc_smap_lookup(m, n, NULL));
	ssc_test_check(test, m);

	/* without growth: only the packed array of one group */
	ssc_smap_fail_countdown = 0;
	for (i = n + 1; ssc_smap_insert(m, i, 2, GFP_KERNEL) == 0; i++)
		ssc_smap_fail_countdown = 0;
	ssc_smap_fail_countdown = -1;
	KUNIT_EXPECT_FALSE(test, ssc_smap_lookup(m, i, NULL));
	ssc_test_check(test, m);
}

/*
 * With a reserve, an insert that may wait for memory takes its group array
 * from the reserve's pools, not from a slab allocation that can fail (the
 * injected failures hit that path only); optional shrinking arrays on
 * removal never come from the reserve. Contents and accounting stay right.
 */
static void ssc_smap_test_reserve(struct kunit *test)
{
	struct ssc_smap_reserve *r = ssc_smap_reserve_create(2, 32, 24);
	struct ssc_smap *m;
	unsigned int i;
	u64 v;

	KUNIT_ASSERT_NOT_NULL(test, r);
	m = ssc_smap_create(32, 24, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, m);
	KUNIT_ASSERT_EQ(test, 0, ssc_smap_presize(m, 4096, GFP_KERNEL));
	ssc_smap_set_reserve(m, r);
	for (i = 0; i < 4096; i++) {
		ssc_smap_fail_countdown = 0;
		KUNIT_ASSERT_EQ_MSG(test, 0, ssc_smap_insert(m, i * 7919ULL, i, GFP_NOIO),
				    "insert %u", i);
	}
	ssc_smap_fail_countdown = -1;
	ssc_test_check(test, m);
	/* without a blocking allocation, the slab path (and its failure) */
	ssc_smap_fail_countdown = 0;
	for (i = 0; i < 4096; i += 2)
		KUNIT_ASSERT_TRUE(test, ssc_smap_remove(m, i * 7919ULL, NULL, GFP_NOWAIT));
	ssc_smap_fail_countdown = -1;
	ssc_test_check(test, m);
	for (i = 0; i < 4096; i++) {
		bool found = ssc_smap_lookup(m, i * 7919ULL, &v);

		KUNIT_EXPECT_EQ_MSG(test, found, i % 2 == 1, "key %u", i);
		if (found)
			KUNIT_EXPECT_EQ(test, v, (u64)i);
	}
	KUNIT_EXPECT_GT(test, ssc_smap_reserve_bytes(r), (size_t)2 * 8 * 32);
	ssc_smap_destroy(m);
	ssc_smap_reserve_destroy(r);
}

static void ssc_smap_test_memory(struct kunit *test)
{
	struct ssc_smap *m = ssc_smap_create(32, 24, GFP_KERNEL);
	const size_t empty = kmalloc_size_roundup(sizeof(*m));
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, m);
	KUNIT_EXPECT_EQ(test, ssc_smap_bytes(m), empty);
	for (i = 0; i < 30000; i++)
		KUNIT_EXPECT_EQ(test, ssc_smap_insert(m, i * 31337ULL, i, GFP_KERNEL), 0);
	/* entries of 5 + rem_bits + 24 bits, and at most 8 bytes more per group */
	KUNIT_EXPECT_GT(test, ssc_smap_bytes(m), empty + 30000 * 29 / 8);
	KUNIT_EXPECT_LT(test, ssc_smap_bytes(m), empty + 30000 * 9);
	ssc_test_check(test, m);
	for (i = 0; i < 30000; i++)
		KUNIT_EXPECT_TRUE(test, ssc_smap_remove(m, i * 31337ULL, NULL, GFP_KERNEL));
	KUNIT_EXPECT_EQ(test, ssc_smap_count(m), 0);
	KUNIT_EXPECT_EQ(test, ssc_smap_bytes(m), empty);
	ssc_test_check(test, m);
	for (i = 0; i < 1000; i++)
		KUNIT_EXPECT_EQ(test, ssc_smap_insert(m, i, i, GFP_KERNEL), 0);
	/* destroy frees everything: checked by KASAN/kmemleak and the WARN in destroy */
	ssc_smap_destroy(m);
}

static void ssc_smap_test_million(struct kunit *test)
{
	const unsigned int n = 1000000;
	struct ssc_smap *m = ssc_test_map(test, 32, 24);
	const struct ssc_tab *t = &m->t;
	size_t bytes, group_bytes = 0, used_bits = 0;
	struct rnd_state rs;
	unsigned int i;
	u32 *keys, g;
	u64 v, bpe;

	keys = vmalloc(array_size(n, sizeof(*keys)));
	KUNIT_ASSERT_NOT_NULL(test, keys);
	prandom_seed_state(&rs, SSC_TEST_SEED + 1);
	for (i = 0; i < n; ) {
		u32 key = prandom_u32_state(&rs);

		if (ssc_smap_lookup(m, key, NULL))
			continue;
		if (ssc_smap_insert(m, key, ssc_test_val(m, key), GFP_KERNEL)) {
			KUNIT_FAIL(test, "insert %u failed", i);
			goto out;
		}
		keys[i++] = key;
	}
	KUNIT_EXPECT_EQ(test, ssc_smap_count(m), n);
	for (i = 0; i < n; i++) {
		if (!ssc_smap_lookup(m, keys[i], &v) || v != ssc_test_val(m, keys[i])) {
			KUNIT_FAIL(test, "key %u missing or wrong", keys[i]);
			goto out;
		}
	}
	ssc_test_check(test, m);

	bytes = ssc_smap_bytes(m);
	bpe = div_u64((u64)bytes * 100, n);
	kunit_info(test, "ssc_smap: bytes_per_entry=%llu.%02llu entries=%u bytes=%zu\n",
		   bpe / 100, bpe % 100, n, bytes);
	for (g = 0; g < t->ngroups; g++) {
		if (t->grp[g])
			group_bytes += ssc_class_size(t->cls[g]);
		used_bits += hweight32(t->bitmap[g]) * t->ebits;
	}
	kunit_info(test,
		   "ssc_smap: E=%u bits nbuckets=%u load=%llu%% entries=%zu B slack=%zu B per-group arrays=%zu B struct=%zu B\n",
		   t->ebits, t->nbuckets, div_u64((u64)n * 100, t->nbuckets),
		   used_bits / 8, group_bytes - used_bits / 8, ssc_tab_bytes(m, t),
		   kmalloc_size_roundup(sizeof(*m)));
	/* FlashTier's 8.4 bytes per entry */
	KUNIT_EXPECT_LT(test, bpe, 840);
out:
	vfree(keys);
}

static int ssc_smap_test_init(struct kunit_suite *suite)
{
	return ssc_smap_global_init();
}

static void ssc_smap_test_exit(struct kunit_suite *suite)
{
	ssc_smap_global_exit();
}

static struct kunit_case ssc_smap_test_cases[] = {
	KUNIT_CASE(ssc_smap_test_basic),
	KUNIT_CASE(ssc_smap_test_bad_args),
	KUNIT_CASE(ssc_smap_test_widths),
	KUNIT_CASE(ssc_smap_test_grow_shrink),
	KUNIT_CASE(ssc_smap_test_presize),
	KUNIT_CASE(ssc_smap_test_presize_in),
	KUNIT_CASE(ssc_smap_test_range),
	KUNIT_CASE(ssc_smap_test_robin_hood),
	KUNIT_CASE(ssc_smap_test_wrap),
	KUNIT_CASE(ssc_smap_test_random),
	KUNIT_CASE(ssc_smap_test_alloc_failure),
	KUNIT_CASE(ssc_smap_test_reserve),
	KUNIT_CASE(ssc_smap_test_memory),
	KUNIT_CASE_SLOW(ssc_smap_test_million),
	{}
};

static struct kunit_suite ssc_smap_test_suite = {
	.name = "ssc_smap",
	.suite_init = ssc_smap_test_init,
	.suite_exit = ssc_smap_test_exit,
	.test_cases = ssc_smap_test_cases,
};

kunit_test_suite(ssc_smap_test_suite);
