// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the SSC engine, on a RAM-backed fake cache device.
 *
 * Included at the end of ssc-engine.c. A "crash" is destroying the engine
 * without ssc_engine_shutdown() and loading a new one on the same RAM.
 */

#include <kunit/test.h>
#include <linux/vmalloc.h>

#define T_BLOCK_SECTORS		8
#define T_SEGMENT_SECTORS	256	/* 32 blocks: 31 slots + summary */
#define T_CACHE_SECTORS		(16 * 2048)

struct ssc_ram {
	u8 *mem;
	size_t size;
	unsigned long writes;
};

static int ssc_ram_rw(void *priv, blk_opf_t opf, sector_t sector, void *buf, size_t len)
{
	struct ssc_ram *d = priv;
	size_t off = (size_t)sector << SECTOR_SHIFT;

	if (!len)
		return 0;
	if (off + len > d->size)
		return -EIO;
	if (op_is_write(opf)) {
		memcpy(d->mem + off, buf, len);
		d->writes++;
	} else {
		memcpy(buf, d->mem + off, len);
	}
	return 0;
}

static const struct ssc_io_ops ssc_ram_ops = {
	.rw = ssc_ram_rw,
};

static void ssc_ram_free(void *p)
{
	struct ssc_ram *d = p;

	vfree(d->mem);
	kfree(d);
}

static struct ssc_ram *ssc_test_ram(struct kunit *test)
{
	struct ssc_ram *d = kzalloc(sizeof(*d), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, d);
	d->size = (size_t)T_CACHE_SECTORS << SECTOR_SHIFT;
	d->mem = vzalloc(d->size);
	KUNIT_ASSERT_NOT_NULL(test, d->mem);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, ssc_ram_free, d));
	return d;
}

static struct ssc_engine *ssc_test_open(struct kunit *test, struct ssc_ram *d)
{
	struct ssc_geometry geo = {
		.block_sectors = T_BLOCK_SECTORS,
		.segment_sectors = T_SEGMENT_SECTORS,
		.log_block_bytes = 512,
		.cache_sectors = T_CACHE_SECTORS,
		.origin_blocks = 1 << 20,
	};
	const char *err = NULL;
	struct ssc_engine *e;

	e = ssc_engine_create(&geo, &ssc_ram_ops, d, &err);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(e), "create: %s", err);
	KUNIT_ASSERT_EQ_MSG(test, 0, ssc_engine_load(e, true, &err), "load: %s", err);
	return e;
}

static void ssc_test_fill(void *buf, u64 oblock, u32 gen)
{
	u32 *w = buf;
	int i;

	for (i = 0; i < (T_BLOCK_SECTORS << SECTOR_SHIFT) / 4; i++)
		w[i] = (u32)oblock * 2654435761U + gen * 40503U + i;
}

/* write_clean or write_dirty of a block whose content is (oblock, gen) */
static void ssc_test_write(struct kunit *test, struct ssc_engine *e,
			   struct ssc_ram *d, u64 oblock, u32 gen, bool dirty)
{
	/* a block is too big for the stack: KASAN's redzones double it */
	const size_t len = T_BLOCK_SECTORS << SECTOR_SHIFT;
	u8 *buf = kunit_kmalloc(test, len, GFP_KERNEL);
	struct ssc_loc loc;
	u64 lsn;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_ASSERT_EQ(test, 0, ssc_reserve(e, oblock, false, &loc));
	ssc_test_fill(buf, oblock, gen);
	KUNIT_ASSERT_EQ(test, 0, ssc_ram_rw(d, REQ_OP_WRITE, loc.sector, buf, len));
	KUNIT_ASSERT_EQ(test, 0, ssc_publish(e, oblock, &loc, dirty, &lsn));
	if (dirty)
		KUNIT_ASSERT_EQ(test, 0, ssc_commit(e, lsn));
	kunit_kfree(test, buf);
}

/* read: not present, or exactly generation @gen of the block */
static enum ssc_state ssc_test_read(struct kunit *test, struct ssc_engine *e,
				    struct ssc_ram *d, u64 oblock, u32 gen)
{
	const size_t len = T_BLOCK_SECTORS << SECTOR_SHIFT;
	u8 *buf = kunit_kmalloc(test, 2 * len, GFP_KERNEL), *want;
	struct ssc_loc loc;
	enum ssc_state st;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	want = buf + len;
	st = ssc_get(e, oblock, false, &loc);
	if (st != SSC_NOT_PRESENT) {
		ssc_ram_rw(d, REQ_OP_READ, loc.sector, buf, len);
		ssc_put(e, &loc);
		ssc_test_fill(want, oblock, gen);
		KUNIT_EXPECT_MEMEQ_MSG(test, buf, want, len, "block %llu", oblock);
	}
	kunit_kfree(test, buf);
	return st;
}

static void ssc_engine_test_crc(struct kunit *test)
{
	u8 buf[64] = { 1, 2, 3, 4, 5 };
	u32 c = ssc_crc(buf, sizeof(buf));

	/* the crc field itself does not count */
	memset(buf, 0xff, 4);
	KUNIT_EXPECT_EQ(test, c, ssc_crc(buf, sizeof(buf)));
	buf[40] ^= 1;
	KUNIT_EXPECT_NE(test, c, ssc_crc(buf, sizeof(buf)));
	ssc_seal_crc(buf, sizeof(buf));
	*(__le32 *)(buf + 4) = cpu_to_le32(0x1234);
	ssc_seal_crc(buf, sizeof(buf));
	KUNIT_EXPECT_TRUE(test, ssc_check_crc(buf, sizeof(buf), 0x1234));
	KUNIT_EXPECT_FALSE(test, ssc_check_crc(buf, sizeof(buf), 0x1235));
	buf[63] ^= 0x80;
	KUNIT_EXPECT_FALSE(test, ssc_check_crc(buf, sizeof(buf), 0x1234));
}

static void ssc_engine_test_victim(struct kunit *test)
{
	u32 valid[4] = { 10, 10, 30, 30 }, dirty[4] = { 0, 5, 0, 30 };
	u64 age[4] = { 100, 100, 100, 1000 };
	bool all[4] = { true, true, true, true }, none[4] = {};

	/* same age: fewest clean blocks to drop, dirty weighs more */
	KUNIT_EXPECT_EQ(test, 0, ssc_gc_pick_victim(valid, dirty, age, all, 4, 32));
	/* older segments are cheaper: 30 clean at age 1000 beats 10 at 100 */
	age[2] = 1000;
	KUNIT_EXPECT_EQ(test, 2, ssc_gc_pick_victim(valid, dirty, age, all, 4, 32));
	/* a segment full of dirty blocks frees nothing and is never chosen */
	valid[3] = 32;
	dirty[3] = 32;
	age[3] = 1ULL << 40;
	KUNIT_EXPECT_NE(test, 3, ssc_gc_pick_victim(valid, dirty, age, all, 4, 32));
	/* nothing eligible */
	KUNIT_EXPECT_EQ(test, -1, ssc_gc_pick_victim(valid, dirty, age, none, 4, 32));
	/* only dirty segments left: copying GC takes the emptiest */
	dirty[0] = 10;
	dirty[1] = 10;
	dirty[2] = 30;
	age[0] = 5;
	age[1] = 5;
	age[2] = 5;
	valid[1] = 20;
	dirty[1] = 20;
	KUNIT_EXPECT_EQ(test, 0, ssc_gc_pick_victim(valid, dirty, age, all, 3, 32));
}

/* The three guarantees across a crash, and the log replay that gives them. */
static void ssc_engine_test_guarantees(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_engine *e = ssc_test_open(test, d);
	u64 lsn;

	ssc_test_write(test, e, d, 10, 1, true);	/* write_dirty */
	ssc_test_write(test, e, d, 11, 1, true);
	ssc_test_write(test, e, d, 20, 1, false);	/* write_clean, buffered */
	ssc_test_write(test, e, d, 11, 2, true);	/* overwrite */
	/* evict without leave to drop dirty data is refused */
	KUNIT_ASSERT_EQ(test, -EBUSY, ssc_evict(e, 10, false, &lsn));
	KUNIT_EXPECT_EQ(test, SSC_DIRTY, ssc_peek(e, 10));
	ssc_test_write(test, e, d, 30, 1, true);
	KUNIT_ASSERT_EQ(test, -EBUSY, ssc_evict(e, 30, false, &lsn));
	KUNIT_ASSERT_EQ(test, 0, ssc_evict(e, 30, true, &lsn));
	KUNIT_ASSERT_EQ(test, 0, ssc_commit(e, lsn));
	ssc_engine_destroy(e);				/* crash */

	e = ssc_test_open(test, d);
	KUNIT_EXPECT_EQ(test, 1, (int)e->st.recovered);
	KUNIT_EXPECT_GT(test, e->st.replayed, 0ULL);
	KUNIT_EXPECT_EQ(test, SSC_DIRTY, ssc_test_read(test, e, d, 10, 1));
	KUNIT_EXPECT_EQ(test, SSC_DIRTY, ssc_test_read(test, e, d, 11, 2));
	/* write_clean: the data or not present, never anything else */
	ssc_test_read(test, e, d, 20, 1);
	KUNIT_EXPECT_EQ(test, SSC_NOT_PRESENT, ssc_test_read(test, e, d, 30, 1));

	/* clean is asynchronous; after a commit it sticks */
	KUNIT_EXPECT_EQ(test, 0, ssc_clean(e, 10));
	KUNIT_EXPECT_EQ(test, 0, ssc_commit_pending(e));
	ssc_engine_destroy(e);
	e = ssc_test_open(test, d);
	KUNIT_EXPECT_EQ(test, SSC_CLEAN, ssc_test_read(test, e, d, 10, 1));
	ssc_engine_destroy(e);
}

/* Checkpoint round trip: many blocks, a clean shutdown, same map after. */
static void ssc_engine_test_checkpoint(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_engine *e = ssc_test_open(test, d);
	unsigned long bitmap[BITS_TO_LONGS(64)];
	u64 ob, n = 600;

	for (ob = 0; ob < n; ob++)
		ssc_test_write(test, e, d, ob * 7, 3, ob % 3 == 0);
	KUNIT_ASSERT_EQ(test, 0, ssc_engine_shutdown(e));
	ssc_engine_destroy(e);

	e = ssc_test_open(test, d);
	KUNIT_EXPECT_EQ(test, 0, (int)e->st.recovered);
	KUNIT_EXPECT_EQ(test, 0ULL, e->st.replayed);
	KUNIT_EXPECT_EQ(test, n, ssc_smap_count(e->map));
	for (ob = 0; ob < n; ob++)
		KUNIT_EXPECT_EQ(test, ob % 3 == 0 ? SSC_DIRTY : SSC_CLEAN,
				ssc_test_read(test, e, d, ob * 7, 3));
	/* exists: blocks 0, 21, 42, 63 of 0..63 are dirty */
	ssc_exists(e, 0, 64, bitmap);
	KUNIT_EXPECT_EQ(test, 4U, bitmap_weight(bitmap, 64));
	KUNIT_EXPECT_TRUE(test, test_bit(21, bitmap) && test_bit(63, bitmap));
	KUNIT_EXPECT_FALSE(test, test_bit(7, bitmap));
	ssc_engine_destroy(e);
}

/* GC: clean blocks are dropped silently, dirty ones keep their data. */
static void ssc_engine_test_gc(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_engine *e = ssc_test_open(test, d);
	u64 ob = 0, dirty_blocks = 0;
	struct ssc_loc loc;

	/* fill the cache until only GC's reserve is left */
	for (;;) {
		bool dirty = ob % 8 == 0;

		if (ssc_reserve(e, ob, false, &loc))
			break;
		ssc_unreserve(e, &loc);
		ssc_test_write(test, e, d, ob, 1, dirty);
		dirty_blocks += dirty;
		ob++;
	}
	KUNIT_EXPECT_TRUE(test, ssc_gc_needed(e));
	KUNIT_ASSERT_EQ(test, 0, ssc_gc(e));
	KUNIT_EXPECT_FALSE(test, ssc_gc_needed(e));
	KUNIT_EXPECT_GT(test, e->st.gc_evicted, 0ULL);
	KUNIT_EXPECT_EQ(test, dirty_blocks, e->nr_dirty);
	while (ob--) {
		enum ssc_state st = ssc_test_read(test, e, d, ob, 1);

		if (ob % 8 == 0)
			KUNIT_EXPECT_EQ(test, SSC_DIRTY, st);
	}
	/* and after a crash */
	ssc_engine_destroy(e);
	e = ssc_test_open(test, d);
	KUNIT_EXPECT_EQ(test, dirty_blocks, e->nr_dirty);
	ssc_engine_destroy(e);
}

/* A bad log block followed by a good one is corruption, not a torn tail. */
static void ssc_engine_test_log_corruption(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_engine *e = ssc_test_open(test, d);
	sector_t log = e->log_start;
	const char *err = NULL;
	struct ssc_geometry geo = e->geo;
	int i;

	for (i = 0; i < 4; i++)
		ssc_test_write(test, e, d, 100 + i, 1, true);
	ssc_engine_destroy(e);

	/* torn last block: the log ends before it, the rest is recovered */
	d->mem[((log + 3) << SECTOR_SHIFT) + 100] ^= 1;
	e = ssc_test_open(test, d);
	KUNIT_EXPECT_EQ(test, SSC_DIRTY, ssc_peek(e, 100));
	ssc_engine_destroy(e);

	/* the load above wrote a checkpoint; make a new log and break its middle */
	e = ssc_test_open(test, d);
	log = e->log_start;
	for (i = 0; i < 4; i++)
		ssc_test_write(test, e, d, 200 + i, 1, true);
	ssc_engine_destroy(e);
	d->mem[((log + 1) << SECTOR_SHIFT) + 100] ^= 1;
	e = ssc_engine_create(&geo, &ssc_ram_ops, d, &err);
	KUNIT_ASSERT_FALSE(test, IS_ERR(e));
	KUNIT_EXPECT_EQ(test, -EUCLEAN, ssc_engine_load(e, true, &err));
	KUNIT_EXPECT_STREQ(test, "Log block is corrupt in the middle of the log", err);
	ssc_engine_destroy(e);
}

/*
 * Write-back order is least recently used first (CLOCK): a block read or
 * overwritten since it got dirty is passed over once.
 */
static void ssc_engine_test_lru(struct kunit *test)
{
	static const u64 want[] = { 0, 1, 3, 4, 7, 2, 5, 6 };
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_engine *e = ssc_test_open(test, d);
	struct ssc_loc loc;
	unsigned int i;
	u64 ob;

	for (i = 0; i < 8; i++)
		ssc_test_write(test, e, d, i, 1, true);
	/* a read hit */
	KUNIT_EXPECT_EQ(test, SSC_DIRTY, ssc_test_read(test, e, d, 2, 1));
	/* an overwrite in place */
	KUNIT_ASSERT_EQ(test, SSC_DIRTY, ssc_get(e, 5, true, &loc));
	KUNIT_ASSERT_NE(test, loc.slot, U32_MAX);
	ssc_put(e, &loc);
	/* an overwrite to a new slot */
	ssc_test_write(test, e, d, 6, 2, true);

	for (i = 0; i < ARRAY_SIZE(want); i++) {
		KUNIT_ASSERT_EQ(test, 0, ssc_next_dirty(e, &ob));
		KUNIT_EXPECT_EQ_MSG(test, ob, want[i], "write-back candidate %u", i);
		KUNIT_ASSERT_EQ(test, 0, ssc_clean(e, ob));
	}
	KUNIT_EXPECT_EQ(test, -ENOENT, ssc_next_dirty(e, &ob));

	/* dirty again: the newest end, with no reference carried over */
	ssc_test_write(test, e, d, 3, 2, true);
	ssc_test_write(test, e, d, 1, 2, true);
	KUNIT_EXPECT_EQ(test, SSC_DIRTY, ssc_test_read(test, e, d, 3, 2));
	KUNIT_ASSERT_EQ(test, 0, ssc_next_dirty(e, &ob));
	KUNIT_EXPECT_EQ(test, ob, 1ULL);
	ssc_engine_destroy(e);
}

static int ssc_engine_test_init(struct kunit_suite *suite)
{
	return ssc_smap_global_init();
}

static void ssc_engine_test_exit(struct kunit_suite *suite)
{
	ssc_smap_global_exit();
}

static struct kunit_case ssc_engine_test_cases[] = {
	KUNIT_CASE(ssc_engine_test_crc),
	KUNIT_CASE(ssc_engine_test_victim),
	KUNIT_CASE(ssc_engine_test_guarantees),
	KUNIT_CASE(ssc_engine_test_checkpoint),
	KUNIT_CASE(ssc_engine_test_gc),
	KUNIT_CASE(ssc_engine_test_log_corruption),
	KUNIT_CASE(ssc_engine_test_lru),
	{}
};

static struct kunit_suite ssc_engine_test_suite = {
	.name = "ssc_engine",
	.suite_init = ssc_engine_test_init,
	.suite_exit = ssc_engine_test_exit,
	.test_cases = ssc_engine_test_cases,
};

kunit_test_suite(ssc_engine_test_suite);
