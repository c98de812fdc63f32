/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dm-ssc admission: evidence that a block is reused before it may take a
 * slot of the cache. A table of 8-bit tags remembers blocks that missed
 * and were kept out; a block whose tag is found there again has been
 * touched twice and is admitted. The table is direct-mapped: a new block
 * replaces whatever shared its entry, so it forgets at random, as a ghost
 * list of about its own size would, and it never needs maintenance. It
 * takes no lock: a lost race loses one touch.
 */
#ifndef SSC_ADMIT_H
#define SSC_ADMIT_H

#include <linux/bits.h>
#include <linux/types.h>

struct ssc_admit;

/* About one entry per two slots: 0.5 bytes per cache block */
#define SSC_ADMIT_SLOTS_PER_ENTRY	2
#define SSC_ADMIT_MIN_ENTRIES		1024
#define SSC_ADMIT_MAX_ENTRIES		BIT(30)

struct ssc_admit *ssc_admit_create(u64 nr_slots, u64 salt, gfp_t gfp);
void ssc_admit_destroy(struct ssc_admit *a);
bool ssc_admit_touch(struct ssc_admit *a, u64 oblock);
void ssc_admit_remember(struct ssc_admit *a, u64 oblock);
size_t ssc_admit_bytes(const struct ssc_admit *a);

#endif /* SSC_ADMIT_H */
