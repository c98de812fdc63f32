// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of dm-ssc's admission table. Included at the end of
 * ssc-admit.c.
 */

#include <kunit/test.h>

static void ssc_admit_test_free(void *a)
{
	ssc_admit_destroy(a);
}

static struct ssc_admit *ssc_admit_test_create(struct kunit *test, u64 nr_slots)
{
	struct ssc_admit *a = ssc_admit_create(nr_slots, 0x5eed, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, ssc_admit_test_free, a));
	return a;
}

/* The first touch keeps a block out, the second admits it, and it starts over. */
static void ssc_admit_test_second_touch(struct kunit *test)
{
	struct ssc_admit *a = ssc_admit_test_create(test, 1 << 16);
	unsigned int i, second = 0, third = 0;

	for (i = 0; i < 256; i++)
		KUNIT_EXPECT_FALSE(test, ssc_admit_touch(a, 1000 + 7 * i));
	for (i = 0; i < 256; i++)
		second += ssc_admit_touch(a, 1000 + 7 * i);
	for (i = 0; i < 256; i++)
		third += ssc_admit_touch(a, 1000 + 7 * i);
	/* 256 blocks in 32,768 entries: a few may share one and forget each other */
	KUNIT_EXPECT_GE(test, second, 250U);
	KUNIT_EXPECT_LE(test, third, 256U - second);

	/* let in, no slot found: remembered, the next miss lets it in again */
	KUNIT_EXPECT_FALSE(test, ssc_admit_touch(a, 99));
	KUNIT_EXPECT_TRUE(test, ssc_admit_touch(a, 99));
	ssc_admit_remember(a, 99);
	KUNIT_EXPECT_TRUE(test, ssc_admit_touch(a, 99));
}

/*
 * Blocks touched once are almost never admitted: a block whose entry holds
 * another's tag is admitted only if the tags agree, 1 in 255.
 */
static void ssc_admit_test_one_touch(struct kunit *test)
{
	struct ssc_admit *a = ssc_admit_test_create(test, 8192);
	unsigned int i, admitted = 0;

	for (i = 0; i < 200000; i++)
		admitted += ssc_admit_touch(a, (u64)i * 4099 + 17);
	KUNIT_EXPECT_LT(test, admitted, 200000U / 100);
}

/*
 * A block touched again after n other blocks missed is still remembered
 * with probability about (1 - 1/entries)^n: most after a quarter of the
 * table, few after four times it.
 */
static void ssc_admit_test_window(struct kunit *test)
{
	const u64 slots = 16384, entries = slots / SSC_ADMIT_SLOTS_PER_ENTRY;
	struct ssc_admit *a = ssc_admit_test_create(test, slots);
	unsigned int i, j, near = 0, far = 0;
	u64 other = 1ULL << 40;

	for (i = 0; i < 200; i++) {
		ssc_admit_touch(a, i);
		for (j = 0; j < entries / 4; j++)
			ssc_admit_touch(a, other++);
		near += ssc_admit_touch(a, i);
	}
	for (i = 0; i < 200; i++) {
		ssc_admit_touch(a, 1000 + i);
		for (j = 0; j < entries * 4; j++)
			ssc_admit_touch(a, other++);
		far += ssc_admit_touch(a, 1000 + i);
	}
	/* e^-0.25 = 0.78 and e^-4 = 0.02 of 200 */
	KUNIT_EXPECT_GE(test, near, 130U);
	KUNIT_EXPECT_LE(test, far, 20U);
}

/* Half a byte per slot, and a floor for tiny caches */
static void ssc_admit_test_bytes(struct kunit *test)
{
	struct ssc_admit *big = ssc_admit_test_create(test, 1 << 20);
	struct ssc_admit *tiny = ssc_admit_test_create(test, 100);

	KUNIT_EXPECT_LE(test, ssc_admit_bytes(big), (size_t)(1 << 19) + 64);
	KUNIT_EXPECT_GE(test, ssc_admit_bytes(big), (size_t)(1 << 19));
	KUNIT_EXPECT_GE(test, ssc_admit_bytes(tiny), (size_t)SSC_ADMIT_MIN_ENTRIES);
	KUNIT_EXPECT_EQ(test, (size_t)0, ssc_admit_bytes(NULL));
}

static struct kunit_case ssc_admit_test_cases[] = {
	KUNIT_CASE(ssc_admit_test_second_touch),
	KUNIT_CASE(ssc_admit_test_one_touch),
	KUNIT_CASE(ssc_admit_test_window),
	KUNIT_CASE(ssc_admit_test_bytes),
	{}
};

static struct kunit_suite ssc_admit_test_suite = {
	.name = "ssc_admit",
	.test_cases = ssc_admit_test_cases,
};

kunit_test_suite(ssc_admit_test_suite);
