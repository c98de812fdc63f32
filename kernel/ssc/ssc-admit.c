// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssc admission on evidence of reuse (see ssc-admit.h).
 */

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/mm.h>

#include "ssc-admit.h"

struct ssc_admit {
	u32 nr;		/* entries */
	u64 salt;	/* per table: which blocks share an entry differs */
	u8 tags[];	/* 0: empty, else 1 + the block's hash mod 255 */
};

/* murmur3's 64-bit finalizer: every bit of the block moves every bit */
static u64 ssc_admit_hash(const struct ssc_admit *a, u64 oblock)
{
	u64 h = oblock + a->salt;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

struct ssc_admit *ssc_admit_create(u64 nr_slots, u64 salt, gfp_t gfp)
{
	u64 nr = max_t(u64, SSC_ADMIT_MIN_ENTRIES,
		       div_u64(nr_slots, SSC_ADMIT_SLOTS_PER_ENTRY));
	struct ssc_admit *a;

	/* past 2^31 slots (16 TiB of 4 KiB blocks) it only forgets sooner */
	nr = min_t(u64, nr, SSC_ADMIT_MAX_ENTRIES);
	a = kvzalloc(struct_size(a, tags, nr), gfp);
	if (!a)
		return NULL;
	a->nr = nr;
	a->salt = salt;
	return a;
}

void ssc_admit_destroy(struct ssc_admit *a)
{
	kvfree(a);
}

/*
 * A block missed. True if it missed before and its tag is still there: it
 * is admitted, and its entry is free again. Otherwise its tag replaces
 * the entry's, and it is kept out this time.
 */
static u8 *ssc_admit_entry(struct ssc_admit *a, u64 oblock, u8 *tag)
{
	u64 h = ssc_admit_hash(a, oblock);

	*tag = 1 + (u32)h % 255;
	return &a->tags[reciprocal_scale(h >> 32, a->nr)];
}

bool ssc_admit_touch(struct ssc_admit *a, u64 oblock)
{
	u8 tag, *p = ssc_admit_entry(a, oblock, &tag);

	if (READ_ONCE(*p) == tag) {
		WRITE_ONCE(*p, 0);
		return true;
	}
	WRITE_ONCE(*p, tag);
	return false;
}

/* Remember a block as missed once, e.g. one let in that found no slot. */
void ssc_admit_remember(struct ssc_admit *a, u64 oblock)
{
	u8 tag, *p = ssc_admit_entry(a, oblock, &tag);

	WRITE_ONCE(*p, tag);
}

size_t ssc_admit_bytes(const struct ssc_admit *a)
{
	return a ? struct_size(a, tags, a->nr) : 0;
}

#if IS_ENABLED(CONFIG_DM_SSC_KUNIT_TEST)
#include "ssc-admit-test.c"
#endif
