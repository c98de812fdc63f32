// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the SSC engine, on a RAM-backed fake cache device.
 *
 * Included at the end of ssc-engine.c. A "crash" is destroying the engine
 * without ssc_engine_shutdown() and loading a new one on the same RAM.
 */

#include <kunit/test.h>
#include <linux/vmalloc.h>
#include <linux/kthread.h>
#include <linux/delay.h>
#include <linux/random.h>
#include <linux/prandom.h>
#include <linux/moduleparam.h>
#include <linux/unaligned.h>

#include "ssc-smap.h"

#define T_BLOCK_SECTORS		8
#define T_SEGMENT_SECTORS	256	/* 32 blocks: 31 slots + summary */
#define T_CACHE_SECTORS		(16 * 2048)

/*
 * The fake device. With a volatile write cache (ssc_ram_volatile()), a
 * write lands in @mem, which reads see, and reaches @stable, what survives
 * a power cut, only at the next flush, or at once with FUA. A gate stops
 * the first I/O of a kind after @gate_skip others, between its issue and
 * its completion, until the test opens it.
 */
enum { GATE_NONE, GATE_PREFLUSH, GATE_READ };

struct ssc_ram {
	u8 *mem;
	u8 *stable;			/* NULL: no volatile cache */
	unsigned long *unflushed;	/* a bit per sector of mem not in stable */
	size_t size;
	unsigned long writes;
	unsigned long flushes;
	/*
	 * A model of the origin for clean records: the generation of the
	 * origin write behind each block, and the generation the last origin
	 * flush covered. Every clean INSERT the engine logs must be covered.
	 */
	struct ssc_engine *e;
	u64 origin_gen, origin_flushed;
	u64 gen_of[64];
	unsigned long uncovered;
	bool race_in_flush;	/* the next origin flush lets a writer in */
	/* the next origin flush publishes a dirty block, then starts a FLUSH */
	bool dirty_in_flush;
	struct ssc_test_thread *flusher;
	struct kunit *test;
	spinlock_t lock;		/* the gate */
	int gate;
	unsigned int gate_skip;
	struct completion gate_in, gate_out;
};

static void ssc_ram_do_flush(struct ssc_ram *d)
{
	unsigned long s, n = d->size >> SECTOR_SHIFT;

	d->flushes++;
	if (!d->stable)
		return;
	for_each_set_bit(s, d->unflushed, n)
		memcpy(d->stable + (s << SECTOR_SHIFT), d->mem + (s << SECTOR_SHIFT),
		       SECTOR_SIZE);
	bitmap_zero(d->unflushed, n);
}

static bool ssc_ram_gated(struct ssc_ram *d, blk_opf_t opf, size_t len)
{
	bool stop = false;

	spin_lock(&d->lock);
	if ((d->gate == GATE_PREFLUSH && (opf & REQ_PREFLUSH) && len) ||
	    (d->gate == GATE_READ && !op_is_write(opf))) {
		if (d->gate_skip) {
			d->gate_skip--;
		} else {
			d->gate = GATE_NONE;
			stop = true;
		}
	}
	spin_unlock(&d->lock);
	return stop;
}

static int ssc_ram_rw(void *priv, blk_opf_t opf, sector_t sector, void *buf, size_t len)
{
	struct ssc_ram *d = priv;
	size_t off = (size_t)sector << SECTOR_SHIFT;

	if (off + len > d->size)
		return -EIO;
	/* a flush is done when issued, before the write it comes with */
	if (op_is_write(opf) && (opf & REQ_PREFLUSH || !len))
		ssc_ram_do_flush(d);
	if (ssc_ram_gated(d, opf, len)) {
		complete(&d->gate_in);
		wait_for_completion(&d->gate_out);
	}
	if (!len)
		return 0;
	if (op_is_write(opf)) {
		memcpy(d->mem + off, buf, len);
		d->writes++;
		if (d->stable && (opf & REQ_FUA))
			memcpy(d->stable + off, buf, len);
		else if (d->stable)
			bitmap_set(d->unflushed, sector, len >> SECTOR_SHIFT);
	} else {
		memcpy(buf, d->mem + off, len);
	}
	return 0;
}

/* A discard loses what the sectors held: they read as a pattern after it. */
static int ssc_ram_discard(void *priv, sector_t sector, sector_t nr_sects)
{
	struct ssc_ram *d = priv;
	size_t off = (size_t)sector << SECTOR_SHIFT, len = (size_t)nr_sects << SECTOR_SHIFT;

	if (off + len > d->size)
		return -EIO;
	memset(d->mem + off, 0xd1, len);
	if (d->stable)
		memset(d->stable + off, 0xd1, len);
	return 0;
}

static const struct ssc_io_ops ssc_ram_ops = {
	.rw = ssc_ram_rw,
	.discard = ssc_ram_discard,
};

/* Check every clean INSERT in a log write against the origin model. */
static void ssc_ram_check_log(struct ssc_ram *d, sector_t sector, const void *buf,
			      size_t len)
{
	struct ssc_engine *e = d->e;
	size_t off;
	u32 i;

	if (!e || sector < e->log_start ||
	    sector >= e->log_start + e->log_blocks * e->lbs_sectors)
		return;
	for (off = 0; off < len; off += e->lbs) {
		const struct ssc_log_blk *b = buf + off;

		for (i = 0; i < le32_to_cpu(b->nr) && i < e->log_per_block; i++) {
			const struct ssc_log_rec *rec = &b->rec[i];
			u64 ob = le64_to_cpu(rec->oblock);

			if (rec->type == SSC_REC_INSERT && !(rec->flags & SSC_ENT_DIRTY) &&
			    ob < ARRAY_SIZE(d->gen_of) && d->gen_of[ob] > d->origin_flushed)
				d->uncovered++;
		}
	}
}

static int ssc_ram_rw_origin(void *priv, blk_opf_t opf, sector_t sector, void *buf,
			     size_t len)
{
	struct ssc_ram *d = priv;

	if (op_is_write(opf) && len)
		ssc_ram_check_log(d, sector, buf, len);
	return ssc_ram_rw(priv, opf, sector, buf, len);
}

/* A write whose origin copy completed: the next origin generation. */
static void ssc_ram_origin_write(struct ssc_ram *d, u64 oblock)
{
	d->gen_of[oblock] = ++d->origin_gen;
}

static void ssc_test_write(struct kunit *test, struct ssc_engine *e,
			   struct ssc_ram *d, u64 oblock, u32 gen, bool dirty);
static void __ssc_test_write(struct kunit *test, struct ssc_engine *e,
			     struct ssc_ram *d, u64 oblock, u32 gen, bool dirty,
			     bool commit);
struct ssc_test_thread;
static void ssc_test_start(struct kunit *test, struct ssc_test_thread *t,
			   struct ssc_engine *e, int (*fn)(struct ssc_engine *e));
static void ssc_test_wait_blocked(struct kunit *test, struct ssc_test_thread *t);

static int ssc_ram_origin_flush(void *priv)
{
	struct ssc_ram *d = priv;
	u64 gen = d->origin_gen;	/* what this flush makes durable */

	if (d->race_in_flush) {
		/* while the flush runs, a writethrough write completes on the
		 * origin and publishes its clean copy
		 */
		d->race_in_flush = false;
		ssc_ram_origin_write(d, 40);
		ssc_test_write(d->test, d->e, d, 40, 1, false);
	}
	if (d->dirty_in_flush) {
		/*
		 * while the commit that runs this flush waits for it (its
		 * records taken), a write_dirty completes, uncommitted, and a
		 * FLUSH arrives and waits for the commit lock
		 */
		d->dirty_in_flush = false;
		__ssc_test_write(d->test, d->e, d, 41, 1, true, false);
		ssc_test_start(d->test, d->flusher, d->e, ssc_flush);
		ssc_test_wait_blocked(d->test, d->flusher);
	}
	d->origin_flushed = gen;
	return 0;
}

static const struct ssc_io_ops ssc_ram_origin_ops = {
	.rw = ssc_ram_rw_origin,
	.discard = ssc_ram_discard,
	.before_clean_commit = ssc_ram_origin_flush,
};

static void ssc_ram_free(void *p)
{
	struct ssc_ram *d = p;

	vfree(d->mem);
	vfree(d->stable);
	bitmap_free(d->unflushed);
	kfree(d);
}

static struct ssc_ram *ssc_test_ram(struct kunit *test)
{
	struct ssc_ram *d = kzalloc(sizeof(*d), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, d);
	d->size = (size_t)T_CACHE_SECTORS << SECTOR_SHIFT;
	d->mem = vzalloc(d->size);
	spin_lock_init(&d->lock);
	init_completion(&d->gate_in);
	init_completion(&d->gate_out);
	KUNIT_ASSERT_EQ(test, 0, kunit_add_action_or_reset(test, ssc_ram_free, d));
	KUNIT_ASSERT_NOT_NULL(test, d->mem);
	return d;
}

/* Give @d a volatile write cache, empty: everything so far is stable. */
static void ssc_ram_volatile(struct kunit *test, struct ssc_ram *d)
{
	d->stable = vmalloc(d->size);
	d->unflushed = bitmap_zalloc(d->size >> SECTOR_SHIFT, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, d->stable);
	KUNIT_ASSERT_NOT_NULL(test, d->unflushed);
	memcpy(d->stable, d->mem, d->size);
}

/* A power cut now: a new device holding only what @d has made durable. */
static struct ssc_ram *ssc_ram_power_cut(struct kunit *test, struct ssc_ram *d)
{
	struct ssc_ram *c = ssc_test_ram(test);

	memcpy(c->mem, d->stable ? d->stable : d->mem, d->size);
	return c;
}

/* Stop the next I/O of @kind after @skip others; returns when one is stopped. */
static void ssc_ram_gate(struct ssc_ram *d, int kind, unsigned int skip)
{
	spin_lock(&d->lock);
	reinit_completion(&d->gate_in);
	reinit_completion(&d->gate_out);
	d->gate_skip = skip;
	d->gate = kind;
	spin_unlock(&d->lock);
}

/* A thread running one engine call, for races against the test's own calls. */
struct ssc_test_thread {
	struct ssc_engine *e;
	int (*fn)(struct ssc_engine *e);
	int r;
	struct completion done;
	struct task_struct *task;
};

static int ssc_test_thread_fn(void *p)
{
	struct ssc_test_thread *t = p;

	t->r = t->fn(t->e);
	complete(&t->done);
	return 0;
}

static void ssc_test_put_task(void *k)
{
	put_task_struct(k);
}

static void ssc_test_start(struct kunit *test, struct ssc_test_thread *t,
			   struct ssc_engine *e, int (*fn)(struct ssc_engine *e))
{
	struct task_struct *k;

	t->e = e;
	t->fn = fn;
	init_completion(&t->done);
	k = kthread_create(ssc_test_thread_fn, t, "ssc-kunit");
	KUNIT_ASSERT_FALSE(test, IS_ERR(k));
	/* held for ssc_test_wait_blocked(), which may look after the thread ends */
	get_task_struct(k);
	if (kunit_add_action(test, ssc_test_put_task, k)) {
		kthread_stop(k);	/* never ran */
		put_task_struct(k);
		KUNIT_FAIL_AND_ABORT(test, "cannot register the thread's cleanup");
	}
	t->task = k;
	wake_up_process(k);
}

/* Wait until @t sleeps uninterruptibly (in a mutex or I/O), at most 10 s. */
static void ssc_test_wait_blocked(struct kunit *test, struct ssc_test_thread *t)
{
	int i;

	for (i = 0; i < 10000; i++) {
		if (completion_done(&t->done))
			break;
		if (READ_ONCE(t->task->__state) == TASK_UNINTERRUPTIBLE)
			return;
		usleep_range(1000, 2000);
	}
	KUNIT_FAIL(test, "the thread never blocked");
}

/* The fake device's geometry: 16 MiB in 128 KiB segments of 4 KiB blocks. */
static struct ssc_geometry ssc_test_geo(void)
{
	return (struct ssc_geometry) {
		.block_sectors = T_BLOCK_SECTORS,
		.segment_sectors = T_SEGMENT_SECTORS,
		.log_block_bytes = 512,
		.cache_sectors = T_CACHE_SECTORS,
		.origin_blocks = 1 << 20,
	};
}

static struct ssc_engine *ssc_test_open(struct kunit *test, struct ssc_ram *d)
{
	struct ssc_geometry geo = ssc_test_geo();
	const char *err = NULL;
	struct ssc_engine *e;

	/* a device never written is formatted, as the table's format argument asks */
	e = ssc_engine_create(&geo, &ssc_ram_ops, d, !memchr_inv(d->mem, 0, SSC_MBLOCK_SIZE),
			      &err);
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

/*
 * write_clean or write_dirty of a block whose content is (oblock, gen); a
 * write_dirty is committed if @commit
 */
static void __ssc_test_write(struct kunit *test, struct ssc_engine *e,
			     struct ssc_ram *d, u64 oblock, u32 gen, bool dirty,
			     bool commit)
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
	if (dirty && commit)
		KUNIT_ASSERT_EQ(test, 0, ssc_commit(e, lsn));
	kunit_kfree(test, buf);
}

static void ssc_test_write(struct kunit *test, struct ssc_engine *e,
			   struct ssc_ram *d, u64 oblock, u32 gen, bool dirty)
{
	__ssc_test_write(test, e, d, oblock, gen, dirty, true);
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
	unsigned long bitmap[BITS_TO_LONGS(64)], *big;
	u64 ob, n = 600;

	for (ob = 0; ob < n; ob++)
		ssc_test_write(test, e, d, ob * 7, 3, ob % 3 == 0);
	KUNIT_ASSERT_EQ(test, 0, ssc_engine_shutdown(e));
	ssc_engine_destroy(e);

	e = ssc_test_open(test, d);
	KUNIT_EXPECT_EQ(test, 0, (int)e->st.recovered);
	KUNIT_EXPECT_EQ(test, 0ULL, e->st.replayed);
	KUNIT_EXPECT_EQ(test, n, ssc_map_count(e->map));
	for (ob = 0; ob < n; ob++)
		KUNIT_EXPECT_EQ(test, ob % 3 == 0 ? SSC_DIRTY : SSC_CLEAN,
				ssc_test_read(test, e, d, ob * 7, 3));
	/* exists: blocks 0, 21, 42, 63 of 0..63 are dirty */
	ssc_exists(e, 0, 64, bitmap);
	KUNIT_EXPECT_EQ(test, 4U, bitmap_weight(bitmap, 64));
	KUNIT_EXPECT_TRUE(test, test_bit(21, bitmap) && test_bit(63, bitmap));
	KUNIT_EXPECT_FALSE(test, test_bit(7, bitmap));
	/* a range far bigger than the cache is walked shard by shard */
	big = kunit_kzalloc(test, BITS_TO_LONGS(n * 7 + 64 * e->nr_slots) * sizeof(long),
			    GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, big);
	KUNIT_ASSERT_GT(test, 5 * e->nr_slots, n * 7);
	ssc_exists(e, 0, 5 * e->nr_slots, big);
	KUNIT_EXPECT_EQ(test, (unsigned int)DIV_ROUND_UP(n, 3),
			bitmap_weight(big, 5 * e->nr_slots));
	for (ob = 0; ob < n; ob++)
		KUNIT_EXPECT_EQ(test, ob % 3 == 0, test_bit(ob * 7, big));
	ssc_engine_destroy(e);
}

/* The generation of a cached block's data (0: not cached, -1: neither given). */
static int ssc_test_gen(struct kunit *test, struct ssc_engine *e, struct ssc_ram *d,
			u64 oblock, u32 gen_a, u32 gen_b)
{
	const size_t len = T_BLOCK_SECTORS << SECTOR_SHIFT;
	u8 *buf = kunit_kmalloc(test, 2 * len, GFP_KERNEL);
	struct ssc_loc loc;
	int gen = -1;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	if (ssc_get(e, oblock, false, &loc) == SSC_NOT_PRESENT) {
		gen = 0;
	} else {
		ssc_ram_rw(d, REQ_OP_READ, loc.sector, buf, len);
		ssc_put(e, &loc);
		ssc_test_fill(buf + len, oblock, gen_a);
		if (!memcmp(buf, buf + len, len))
			gen = gen_a;
		ssc_test_fill(buf + len, oblock, gen_b);
		if (!memcmp(buf, buf + len, len))
			gen = gen_b;
	}
	kunit_kfree(test, buf);
	return gen;
}

/* blocks of shard 0, which the checkpoint writes before the hook runs */
static u64 ssc_test_fuzzy_ob[3];

/* after the checkpoint wrote shard 0: evict, overwrite and add a block of it */
static void ssc_test_ckpt_midwalk(struct ssc_engine *e, unsigned int shard)
{
	struct ssc_ram *d = e->priv;
	u64 lsn;

	if (shard)
		return;
	KUNIT_EXPECT_EQ(d->test, 0, ssc_evict(e, ssc_test_fuzzy_ob[0], true, &lsn));
	__ssc_test_write(d->test, e, d, ssc_test_fuzzy_ob[1], 2, true, false);
	__ssc_test_write(d->test, e, d, ssc_test_fuzzy_ob[2], 1, true, false);
}

/*
 * A checkpoint does not stop I/O: changes made while it walks the map stay
 * pending and go to the log after it. A crash before they are committed
 * loads the checkpoint alone, consistent; after, the changes too. The
 * changed blocks are in shard 0, written before they change: a checkpoint
 * that took the records of the walk's time as covered would lose them.
 */
static void ssc_engine_test_fuzzy_checkpoint(struct kunit *test)
{
	/* generation of the evicted, overwritten and new block: 0 is none */
	static const int want[2][3] = { { 1, 1, 0 }, { 0, 2, 1 } };
	const u64 n = 300;
	int pass, k;

	for (pass = 0; pass < 2; pass++) {
		struct ssc_ram *d = ssc_test_ram(test);
		struct ssc_engine *e = ssc_test_open(test, d);
		u64 ob, ckpts;

		d->test = test;
		d->e = e;
		KUNIT_ASSERT_GT(test, ssc_map_nr_shards(e->map), 1U);
		/*
		 * two cached blocks of shard 0 and one it does not hold yet. The
		 * random mix may leave shard 0 only block 0 below n (a small n
		 * holds few blocks of each shard): the second is the next block
		 * of shard 0, whatever its number, written with the others.
		 * Shard 0 holds 1/8 of the blocks below 2^key_bits, and every
		 * block past it, so both searches end.
		 */
		for (ob = 0, k = 0; k < 2; ob++)
			if (ssc_map_shard_of(e->map, ob) == 0)
				ssc_test_fuzzy_ob[k++] = ob;
		for (ob = max(n, ssc_test_fuzzy_ob[1] + 1); ssc_map_shard_of(e->map, ob); ob++)
			;
		ssc_test_fuzzy_ob[2] = ob;
		for (ob = 0; ob < n; ob++)
			ssc_test_write(test, e, d, ob, 1, true);
		if (ssc_test_fuzzy_ob[1] >= n)
			ssc_test_write(test, e, d, ssc_test_fuzzy_ob[1], 1, true);
		ckpts = e->st.checkpoints;
		e->ckpt_shard_hook = ssc_test_ckpt_midwalk;
		KUNIT_EXPECT_EQ(test, 0, ssc_checkpoint(e));
		e->ckpt_shard_hook = NULL;
		KUNIT_EXPECT_EQ(test, ckpts + 1, e->st.checkpoints);
		KUNIT_EXPECT_EQ(test, 0ULL, e->log_head);
		/* the walk's changes: not covered, still pending (evict + 2 inserts) */
		KUNIT_EXPECT_EQ(test, e->committed_lsn + 3, e->appended_lsn);
		if (pass)
			KUNIT_EXPECT_EQ(test, 0, ssc_commit_pending(e));
		ssc_engine_destroy(e);				/* crash */

		e = ssc_test_open(test, d);
		d->e = e;
		for (ob = 0; ob < n; ob++) {
			if (ob == ssc_test_fuzzy_ob[0] || ob == ssc_test_fuzzy_ob[1])
				continue;
			KUNIT_EXPECT_EQ_MSG(test, SSC_DIRTY, ssc_test_read(test, e, d, ob, 1),
					    "block %llu", ob);
		}
		/* before the commit, the checkpoint's state of shard 0; after it, the new one */
		for (k = 0; k < 3; k++)
			KUNIT_EXPECT_EQ_MSG(test, want[pass][k],
					    ssc_test_gen(test, e, d, ssc_test_fuzzy_ob[k], 1, 2),
					    "changed block %d, pass %d", k, pass);
		ssc_engine_destroy(e);
	}
}

/* a block of the last shard, which the checkpoint writes after the hook */
static u64 ssc_test_ahead_ob;

/* cleaned, then rewritten dirty elsewhere, before its shard is written */
static void ssc_test_ckpt_clean_rewrite(struct ssc_engine *e, unsigned int shard)
{
	struct ssc_ram *d = e->priv;

	if (shard)
		return;
	KUNIT_EXPECT_EQ(d->test, 0, ssc_clean(e, ssc_test_ahead_ob));
	__ssc_test_write(d->test, e, d, ssc_test_ahead_ob, 2, true, false);
}

/*
 * A checkpoint may hold a block ahead of records still pending: cleaned and
 * then rewritten dirty in a new slot while the walk ran, it is written in
 * its new state. A commit torn after the clean record (the rewrite's
 * record lost) must not make that new, dirty copy clean: the origin does
 * not hold it. The replay cleans only the slot the record names.
 */
static void ssc_engine_test_fuzzy_clean_ahead(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_engine *e = ssc_test_open(test, d);
	unsigned int last = ssc_map_nr_shards(e->map) - 1;
	u64 ob;

	d->test = test;
	d->e = e;
	for (ob = 0; ssc_map_shard_of(e->map, ob) != last; ob++)
		;
	ssc_test_ahead_ob = ob;
	for (ob = 0; ob < 64; ob++)
		ssc_test_write(test, e, d, ob, 1, true);
	ssc_test_write(test, e, d, ssc_test_ahead_ob, 1, true);
	e->ckpt_shard_hook = ssc_test_ckpt_clean_rewrite;
	KUNIT_ASSERT_EQ(test, 0, ssc_checkpoint(e));
	e->ckpt_shard_hook = NULL;
	/* pending: the clean record, then the rewrite's; a torn commit keeps the first */
	KUNIT_ASSERT_EQ(test, 2U, e->nr_pending);
	KUNIT_ASSERT_EQ(test, SSC_REC_CLEAN, e->pending[0].type);
	e->nr_pending = 1;
	e->appended_lsn--;
	KUNIT_ASSERT_EQ(test, 0, ssc_commit_pending(e));
	ssc_engine_destroy(e);				/* crash */

	e = ssc_test_open(test, d);
	d->e = e;
	KUNIT_EXPECT_EQ(test, SSC_DIRTY, ssc_test_read(test, e, d, ssc_test_ahead_ob, 2));
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
	/* the map was sized for every slot: filling the cache never grew it */
	KUNIT_EXPECT_EQ(test, 0ULL, ssc_map_rehashes(e->map));
	while (ob--) {
		enum ssc_state st = ssc_test_read(test, e, d, ob, 1);

		if (ob % 8 == 0)
			KUNIT_EXPECT_EQ(test, SSC_DIRTY, st);
	}
	/* and after a crash */
	ssc_engine_destroy(e);
	e = ssc_test_open(test, d);
	KUNIT_EXPECT_EQ(test, dirty_blocks, e->nr_dirty);
	KUNIT_EXPECT_EQ(test, 0ULL, ssc_map_rehashes(e->map));
	ssc_engine_destroy(e);
}

/*
 * GC's reserve is GC's: once a run opened a segment out of it, user data is
 * refused until more than the reserve is free again, and a churn of user
 * writes with a GC run whenever they are refused never takes the last free
 * segment. gc_runs counts the segments cleaned.
 */
static void ssc_engine_test_gc_reserve(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_engine *e = ssc_test_open(test, d);
	const size_t len = T_BLOCK_SECTORS << SECTOR_SHIFT;
	u8 *buf = kunit_kmalloc(test, len, GFP_KERNEL);
	struct rnd_state rs;
	struct ssc_loc loc;
	u64 ob = 0, cleaned = 0, starved = 0;
	u32 i;
	int r;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	prandom_seed_state(&rs, 19);
	/* fill until user data is refused: only GC's reserve is free */
	for (;;) {
		if (ssc_reserve(e, ob, false, &loc))
			break;
		ssc_unreserve(e, &loc);
		ssc_test_write(test, e, d, ob, 1, ob % 8 == 0);
		ob++;
	}
	KUNIT_ASSERT_EQ(test, e->gc_reserve, e->free_segs);
	KUNIT_ASSERT_EQ(test, U32_MAX, e->open_seg);
	/* a run moves the victim's dirty blocks to a segment out of the reserve */
	KUNIT_ASSERT_EQ(test, 0, ssc_gc_one(e));
	cleaned++;
	KUNIT_EXPECT_EQ(test, cleaned, e->st.gc_runs);
	KUNIT_ASSERT_NE(test, U32_MAX, e->open_seg);
	KUNIT_EXPECT_GT(test, e->st.gc_copied, 0ULL);
	KUNIT_EXPECT_EQ(test, e->gc_reserve, e->free_segs);
	/* which user data may not take while no more than the reserve is free */
	r = ssc_reserve(e, ob, false, &loc);
	KUNIT_EXPECT_EQ(test, -ENOSPC, r);
	if (!r)
		ssc_unreserve(e, &loc);

	for (i = 0; i < 8 * e->nr_slots; i++) {
		u64 b = prandom_u32_state(&rs) % (4 * e->nr_slots), lsn;
		bool dirty = prandom_u32_state(&rs) % 3 == 0;

		if (!ssc_reserve(e, b, false, &loc)) {
			ssc_test_fill(buf, b, i);
			KUNIT_ASSERT_EQ(test, 0, ssc_ram_rw(d, REQ_OP_WRITE, loc.sector, buf, len));
			KUNIT_ASSERT_EQ(test, 0, ssc_publish(e, b, &loc, dirty, &lsn));
		} else {
			r = ssc_gc_one(e);
			if (r == -ENOSPC) {
				/* nothing fits: write-back would clean a block */
				starved++;
				KUNIT_ASSERT_EQ(test, 0, ssc_next_dirty(e, &b));
				KUNIT_ASSERT_EQ(test, 0, ssc_clean(e, b));
			} else {
				KUNIT_ASSERT_EQ(test, 0, r);
				cleaned++;
			}
		}
		KUNIT_ASSERT_GE_MSG(test, e->free_segs, 1U, "step %u", i);
	}
	KUNIT_EXPECT_EQ(test, cleaned, e->st.gc_runs);
	kunit_info(test, "%llu segments cleaned, %llu dirty blocks moved, %llu times starved\n",
		   cleaned, e->st.gc_copied, starved);
	ssc_engine_destroy(e);
}

/*
 * Recovery rebuilds the summaries of the segments opened since the
 * checkpoint from the map, several per walk of the map: with two per walk,
 * six segments take three walks; by default, one. Each summary it writes
 * names exactly the blocks the map puts in its segment.
 */
static void ssc_engine_test_recover_summaries(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_engine *e = ssc_test_open(test, d);
	struct ssc_geometry geo = e->geo;
	u32 sum_bytes = e->summary_sectors << SECTOR_SHIFT;
	u32 sps = e->slots_per_seg, nsegs = e->nr_segs, seg, used = 0, i;
	static const u32 batches[] = { 2, 0 };
	const char *err = NULL;
	struct ssc_sum *sum;
	unsigned int b;
	u8 *image;
	u64 ob, val, nblocks = 5 * sps + 3;

	for (ob = 0; ob < nblocks; ob++)
		ssc_test_write(test, e, d, ob * 7, 1, ob % 2);
	KUNIT_ASSERT_EQ(test, 0, ssc_commit_pending(e));
	for (seg = 0; seg < nsegs; seg++) {
		if (!e->segs[seg].valid)
			continue;
		used++;
		/* what the device says about them must not matter */
		memset(d->mem + (seg_summary_sector(e, seg) << SECTOR_SHIFT), 0, sum_bytes);
	}
	KUNIT_ASSERT_EQ(test, 6U, used);
	ssc_engine_destroy(e);				/* crash */
	image = vmalloc(d->size);
	KUNIT_ASSERT_NOT_NULL(test, image);
	memcpy(image, d->mem, d->size);
	sum = kunit_kmalloc(test, sum_bytes, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, sum);

	for (b = 0; b < ARRAY_SIZE(batches); b++) {
		memcpy(d->mem, image, d->size);
		e = ssc_engine_create(&geo, &ssc_ram_ops, d, false, &err);
		KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(e), "create: %s", err);
		e->recover_batch = batches[b];
		KUNIT_ASSERT_EQ_MSG(test, 0, ssc_engine_load(e, true, &err), "load: %s", err);
		KUNIT_EXPECT_EQ(test, e->recover_walks,
				batches[b] ? DIV_ROUND_UP(used, batches[b]) : 1U);
		for (seg = 0; seg < nsegs; seg++) {
			u32 named = 0;

			if (!e->segs[seg].valid)
				continue;
			memcpy(sum, d->mem + (seg_summary_sector(e, seg) << SECTOR_SHIFT),
			       sum_bytes);
			KUNIT_EXPECT_TRUE_MSG(test, ssc_check_crc(sum, sum_bytes, SSC_SUM_MAGIC),
					      "segment %u", seg);
			for (i = 0; i < sps; i++) {
				ob = le64_to_cpu(sum->oblock[i]);
				if (!ob)
					continue;
				named++;
				KUNIT_EXPECT_TRUE(test, ssc_map_lookup(e->map, ob - 1, &val) &&
						  val_slot(val) == seg * sps + i);
			}
			KUNIT_EXPECT_EQ_MSG(test, named, e->segs[seg].valid, "segment %u", seg);
		}
		for (ob = 0; ob < nblocks; ob += 11)
			ssc_test_read(test, e, d, ob * 7, 1);
		ssc_engine_destroy(e);
	}
	vfree(image);
}

/*
 * A segment summary only names candidates. One with a valid checksum that
 * leaves live blocks out (stale, or crafted) must not get their segment
 * discarded under them: GC works from the map once it sees the segment is
 * not empty, and every dirty block keeps its data.
 */
static void ssc_engine_test_gc_partial_summary(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_engine *e = ssc_test_open(test, d);
	u32 sum_bytes = e->summary_sectors << SECTOR_SHIFT;
	struct ssc_sum *sum = kunit_kzalloc(test, sum_bytes, GFP_KERNEL);
	int seg = -1;
	u32 i;
	u64 ob;

	KUNIT_ASSERT_NOT_NULL(test, sum);
	/* one sealed segment, a third of it dirty, and a little of the next */
	for (ob = 0; ob < e->slots_per_seg + 4; ob++)
		ssc_test_write(test, e, d, ob, 1, ob % 3 == 0);
	for (i = 0; i < e->nr_segs; i++)
		if (e->segs[i].state == SEG_SEALED)
			seg = i;
	KUNIT_ASSERT_GE(test, seg, 0);

	/* its summary names only its first slot, with a valid checksum */
	KUNIT_ASSERT_EQ(test, 0, ssc_ram_rw(d, REQ_OP_READ, seg_summary_sector(e, seg), sum,
					    sum_bytes));
	KUNIT_ASSERT_TRUE(test, ssc_check_crc(sum, sum_bytes, SSC_SUM_MAGIC));
	for (i = 1; i < e->slots_per_seg; i++)
		sum->oblock[i] = 0;
	ssc_seal_crc(sum, sum_bytes);
	KUNIT_ASSERT_EQ(test, 0, ssc_ram_rw(d, REQ_OP_WRITE, seg_summary_sector(e, seg), sum,
					    sum_bytes));

	KUNIT_EXPECT_EQ(test, 0, ssc_gc_one(e));
	KUNIT_EXPECT_EQ(test, SEG_FREE, e->segs[seg].state);
	for (ob = 0; ob < e->slots_per_seg + 4; ob++) {
		enum ssc_state st = ssc_test_read(test, e, d, ob, 1);

		if (ob % 3 == 0)
			KUNIT_EXPECT_EQ_MSG(test, SSC_DIRTY, st, "block %llu", ob);
	}
	/* and after a crash */
	ssc_engine_destroy(e);
	e = ssc_test_open(test, d);
	for (ob = 0; ob < e->slots_per_seg + 4; ob += 3)
		KUNIT_EXPECT_EQ_MSG(test, SSC_DIRTY, ssc_test_read(test, e, d, ob, 1),
				    "block %llu", ob);
	ssc_engine_destroy(e);
}

/* the blocks of the victim its summary left out: rewritten dirty, or evicted */
static void ssc_test_gc_rewrite_missed(struct ssc_engine *e, unsigned int pass)
{
	struct ssc_ram *d = e->priv;
	u64 ob, lsn;

	if (pass)
		return;
	for (ob = 1; ob < e->slots_per_seg; ob++) {
		if (ob % 3 == 0)
			__ssc_test_write(d->test, e, d, ob, 2, true, false);
		else
			KUNIT_EXPECT_EQ(d->test, 0, ssc_evict(e, ob, false, &lsn));
	}
}

/*
 * The blocks a partial summary left out are rewritten or evicted by users
 * while GC works, emptying the victim without GC's help: the records that
 * emptied it are durable before the segment is reused, or a crash maps the
 * rewritten blocks back into the discarded segment.
 */
static void ssc_engine_test_gc_emptied_by_users(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_engine *e = ssc_test_open(test, d);
	u32 sum_bytes = e->summary_sectors << SECTOR_SHIFT;
	struct ssc_sum *sum = kunit_kzalloc(test, sum_bytes, GFP_KERNEL);
	u32 i;
	u64 ob;

	KUNIT_ASSERT_NOT_NULL(test, sum);
	d->test = test;
	d->e = e;
	/* segment 0 sealed with blocks 0.., a third of them dirty */
	for (ob = 0; ob < e->slots_per_seg + 4; ob++)
		ssc_test_write(test, e, d, ob, 1, ob % 3 == 0);
	KUNIT_ASSERT_EQ(test, SEG_SEALED, e->segs[0].state);
	KUNIT_ASSERT_EQ(test, 0, ssc_ram_rw(d, REQ_OP_READ, seg_summary_sector(e, 0), sum,
					    sum_bytes));
	for (i = 1; i < e->slots_per_seg; i++)
		sum->oblock[i] = 0;
	ssc_seal_crc(sum, sum_bytes);
	KUNIT_ASSERT_EQ(test, 0, ssc_ram_rw(d, REQ_OP_WRITE, seg_summary_sector(e, 0), sum,
					    sum_bytes));
	/* GC picks segment 0: the only full one */
	e->gc_pass_hook = ssc_test_gc_rewrite_missed;
	KUNIT_EXPECT_EQ(test, 0, ssc_gc_one(e));
	e->gc_pass_hook = NULL;
	KUNIT_EXPECT_EQ(test, SEG_FREE, e->segs[0].state);
	ssc_engine_destroy(e);				/* crash */

	e = ssc_test_open(test, d);
	for (ob = 3; ob < e->slots_per_seg; ob += 3)
		KUNIT_EXPECT_EQ_MSG(test, SSC_DIRTY, ssc_test_read(test, e, d, ob, 2),
				    "block %llu", ob);
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
	e = ssc_engine_create(&geo, &ssc_ram_ops, d, false, &err);
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

/*
 * Write-back walks segments oldest first through their summaries, which it
 * does not trust: one crafted to leave dirty blocks out or to name blocks
 * out of range or in the wrong slot, or one unreadable, is rebuilt from the
 * map and written again.
 */
static void ssc_engine_test_wb_segments(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_engine *e = ssc_test_open(test, d);
	u32 sum_bytes = e->summary_sectors << SECTOR_SHIFT;
	struct ssc_sum *sum = kunit_kzalloc(test, sum_bytes, GFP_KERNEL);
	struct ssc_engine_stats st;
	u64 ob, got, want_dirty = 0;
	static const u64 bad[] = { U64_MAX, BIT_ULL(48) + 1, 1 };
	u32 i, sps = e->slots_per_seg;
	int seg_a = -1;

	KUNIT_ASSERT_NOT_NULL(test, sum);
	/* segment A: blocks 0.., a third dirty; then 4 dirty blocks in B */
	for (ob = 0; ob < sps; ob++) {
		ssc_test_write(test, e, d, ob, 1, ob % 3 == 0);
		want_dirty += ob % 3 == 0;
	}
	for (ob = 1000; ob < 1004; ob++)
		ssc_test_write(test, e, d, ob, 1, true);
	for (i = 0; i < e->nr_segs; i++)
		if (e->segs[i].state == SEG_SEALED)
			seg_a = i;
	KUNIT_ASSERT_GE(test, seg_a, 0);
	KUNIT_ASSERT_EQ(test, want_dirty, (u64)e->segs[seg_a].dirty);

	/*
	 * A's summary, with a valid checksum, names its first slot right and
	 * then nothing, blocks out of range, or block 0 again
	 */
	KUNIT_ASSERT_EQ(test, 0, ssc_ram_rw(d, REQ_OP_READ, seg_summary_sector(e, seg_a), sum,
					    sum_bytes));
	for (i = 1; i < sps; i++)
		sum->oblock[i] = i % 4 ? cpu_to_le64(bad[i % 4 - 1]) : 0;
	ssc_seal_crc(sum, sum_bytes);
	KUNIT_ASSERT_EQ(test, 0, ssc_ram_rw(d, REQ_OP_WRITE, seg_summary_sector(e, seg_a), sum,
					    sum_bytes));
	/* A's dirty blocks first, in slot order, all of them; then B's */
	for (ob = 0; ob < sps; ob += 3) {
		KUNIT_ASSERT_EQ(test, 0, ssc_next_dirty(e, &got));
		KUNIT_EXPECT_EQ_MSG(test, got, ob, "candidate from segment A");
		KUNIT_ASSERT_EQ(test, 0, ssc_clean(e, got));
	}
	for (ob = 1000; ob < 1004; ob++) {
		KUNIT_ASSERT_EQ(test, 0, ssc_next_dirty(e, &got));
		KUNIT_EXPECT_EQ(test, got, ob);
		KUNIT_ASSERT_EQ(test, 0, ssc_clean(e, got));
	}
	KUNIT_EXPECT_EQ(test, -ENOENT, ssc_next_dirty(e, &got));
	/* the rebuilt summary was written: it names block 3 in slot 3 again */
	KUNIT_ASSERT_EQ(test, 0, ssc_ram_rw(d, REQ_OP_READ, seg_summary_sector(e, seg_a), sum,
					    sum_bytes));
	KUNIT_EXPECT_TRUE(test, ssc_check_crc(sum, sum_bytes, SSC_SUM_MAGIC));
	KUNIT_EXPECT_EQ(test, 4ULL, le64_to_cpu(sum->oblock[3]));

	/* a segment whose summary is unreadable, after a crash */
	for (ob = 2000; ob < 2000 + 2 * sps; ob++)
		ssc_test_write(test, e, d, ob, 1, ob % 2 == 0);
	KUNIT_ASSERT_EQ(test, 0, ssc_commit_pending(e));
	ssc_engine_destroy(e);
	e = ssc_test_open(test, d);
	for (i = 0; i < e->nr_segs; i++)
		if (e->segs[i].state == SEG_SEALED && e->segs[i].dirty)
			d->mem[(seg_summary_sector(e, i) << SECTOR_SHIFT) + 100] ^= 0x5a;
	for (ob = 0; ob < sps; ob++) {
		KUNIT_ASSERT_EQ(test, 0, ssc_next_dirty(e, &got));
		KUNIT_EXPECT_TRUE_MSG(test, got >= 2000 && got % 2 == 0, "candidate %llu", got);
		KUNIT_ASSERT_EQ(test, 0, ssc_clean(e, got));
	}
	KUNIT_EXPECT_EQ(test, -ENOENT, ssc_next_dirty(e, &got));
	ssc_engine_get_stats(e, &st);
	KUNIT_EXPECT_EQ(test, 0ULL, st.dirty);
	ssc_engine_destroy(e);
}

/*
 * The hand goes round: while writes keep coming into the open segment, the
 * dirty blocks of an older segment, passed over once for their reference
 * bits, are taken on the next round, not starved by the newest ones.
 */
static void ssc_engine_test_wb_round(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_engine *e = ssc_test_open(test, d);
	u32 i, sps = e->slots_per_seg;
	u64 ob, got;

	/* segment A, all dirty, every block read since */
	for (ob = 0; ob < sps; ob++)
		ssc_test_write(test, e, d, ob, 1, true);
	for (ob = 0; ob < sps; ob++)
		KUNIT_EXPECT_EQ(test, SSC_DIRTY, ssc_test_read(test, e, d, ob, 1));
	ssc_test_write(test, e, d, 5000, 1, true);
	KUNIT_ASSERT_EQ(test, 0, ssc_next_dirty(e, &got));
	KUNIT_EXPECT_EQ_MSG(test, got, 5000ULL, "A passed over once");
	KUNIT_ASSERT_EQ(test, 0, ssc_clean(e, got));
	for (i = 0; i < 4; i++) {
		ssc_test_write(test, e, d, 5001 + i, 1, true);
		KUNIT_ASSERT_EQ(test, 0, ssc_next_dirty(e, &got));
		KUNIT_EXPECT_EQ_MSG(test, got, (u64)i, "the older segment's turn");
		KUNIT_ASSERT_EQ(test, 0, ssc_clean(e, got));
	}
	ssc_engine_destroy(e);
}

/* Formatting is asked for, and happens at the first load, never at create. */
static void ssc_engine_test_format(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_geometry geo = ssc_test_geo();
	const char *err = NULL;
	struct ssc_engine *e;

	e = ssc_engine_create(&geo, &ssc_ram_ops, d, false, &err);
	KUNIT_EXPECT_TRUE(test, IS_ERR(e));
	KUNIT_EXPECT_STREQ(test, err, SSC_ERR_UNFORMATTED);
	e = ssc_engine_create(&geo, &ssc_ram_ops, d, true, &err);
	KUNIT_ASSERT_FALSE(test, IS_ERR(e));
	ssc_engine_destroy(e);	/* a table loaded, never resumed */
	KUNIT_EXPECT_EQ(test, 0UL, d->writes);
	KUNIT_EXPECT_NULL(test, memchr_inv(d->mem, 0, d->size));

	e = ssc_engine_create(&geo, &ssc_ram_ops, d, true, &err);
	KUNIT_ASSERT_FALSE(test, IS_ERR(e));
	KUNIT_ASSERT_EQ(test, 0, ssc_engine_load(e, false, &err));
	ssc_test_write(test, e, d, 1, 1, true);
	ssc_engine_destroy(e);
	e = ssc_engine_create(&geo, &ssc_ram_ops, d, false, &err);
	KUNIT_ASSERT_FALSE(test, IS_ERR(e));
	KUNIT_ASSERT_EQ(test, 0, ssc_engine_load(e, false, &err));
	KUNIT_EXPECT_EQ(test, SSC_DIRTY, ssc_test_read(test, e, d, 1, 1));
	ssc_engine_destroy(e);
}

/*
 * A clean record is committed only after an origin flush that covers its
 * origin write, also when the write completes and publishes while the flush
 * runs (the commit must leave that record for the next one).
 */
static void ssc_engine_test_clean_after_origin_flush(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_geometry geo = ssc_test_geo();
	const char *err = NULL;
	struct ssc_engine *e;
	u64 ob, lsn;

	e = ssc_engine_create(&geo, &ssc_ram_origin_ops, d, true, &err);
	KUNIT_ASSERT_FALSE(test, IS_ERR(e));
	d->e = e;
	d->test = test;
	KUNIT_ASSERT_EQ(test, 0, ssc_engine_load(e, false, &err));
	for (ob = 0; ob < 8; ob++) {
		ssc_ram_origin_write(d, ob);
		ssc_test_write(test, e, d, ob, 1, false);
	}
	d->race_in_flush = true;
	KUNIT_EXPECT_EQ(test, 0, ssc_commit_pending(e));
	KUNIT_EXPECT_FALSE(test, d->race_in_flush);	/* the race ran */
	/* and what the racing write left pending goes with the next commit */
	KUNIT_EXPECT_EQ(test, 0, ssc_evict(e, 3, false, &lsn));
	KUNIT_EXPECT_EQ(test, 0, ssc_commit(e, lsn));
	KUNIT_EXPECT_EQ(test, 0, ssc_checkpoint(e));
	KUNIT_EXPECT_EQ_MSG(test, 0UL, d->uncovered,
			    "clean records logged before the origin flush that covers them");
	d->e = NULL;
	ssc_engine_destroy(e);
}

/* Fill the cache until only GC's reserve is left; every @dirty_every-th block is dirty. */
static u64 ssc_test_fill_cache(struct kunit *test, struct ssc_engine *e,
			       struct ssc_ram *d, unsigned int dirty_every)
{
	struct ssc_loc loc;
	u64 ob;

	for (ob = 0; ; ob++) {
		if (ssc_reserve(e, ob, false, &loc))
			break;
		ssc_unreserve(e, &loc);
		ssc_test_write(test, e, d, ob, 1, ob % dirty_every == 0);
	}
	KUNIT_ASSERT_EQ(test, 0, ssc_commit_pending(e));
	return ob;
}

/*
 * Finding 2: a writethrough write saw its block clean, then garbage
 * collection dropped it with the REMOVE record still in RAM. The writer's
 * evict must still make that drop durable before the origin is written,
 * or a crash brings back the mapping to the old data.
 */
static void ssc_engine_test_evict_after_gc(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test), *cut;
	struct ssc_engine *e = ssc_test_open(test, d);
	struct ssc_test_thread gc;
	u64 ob, n, lsn, victim = U64_MAX;

	n = ssc_test_fill_cache(test, e, d, 8);
	ssc_ram_volatile(test, d);
	/* GC stops at its first copy (after the summary read): drops done, not committed */
	ssc_ram_gate(d, GATE_READ, 1);
	ssc_test_start(test, &gc, e, ssc_gc);
	wait_for_completion(&d->gate_in);
	for (ob = 0; ob < n && victim == U64_MAX; ob++)
		if (ob % 8 && ssc_peek(e, ob) == SSC_NOT_PRESENT)
			victim = ob;
	KUNIT_ASSERT_NE_MSG(test, victim, U64_MAX, "GC dropped no clean block");
	/* the writer: evict what it saw clean, commit, then write the origin */
	KUNIT_EXPECT_EQ(test, 0, ssc_evict(e, victim, false, &lsn));
	KUNIT_EXPECT_EQ(test, 0, ssc_commit(e, lsn));
	cut = ssc_ram_power_cut(test, d);	/* the origin write is acknowledged */
	complete(&d->gate_out);
	wait_for_completion(&gc.done);
	ssc_engine_destroy(e);

	e = ssc_test_open(test, cut);
	KUNIT_EXPECT_EQ_MSG(test, SSC_NOT_PRESENT, ssc_peek(e, victim),
			    "block %llu maps to data older than the origin after a crash",
			    victim);
	ssc_engine_destroy(e);
}

/*
 * Finding 4: garbage collection moved a dirty block and has not committed
 * the move. A FUA write in place must not land in the new slot while a
 * crash would map the block to the old one.
 */
static void ssc_engine_test_fua_after_move(struct kunit *test)
{
	const size_t len = T_BLOCK_SECTORS << SECTOR_SHIFT;
	struct ssc_ram *d = ssc_test_ram(test), *cut;
	struct ssc_engine *e = ssc_test_open(test, d);
	u8 *buf = kunit_kmalloc(test, len, GFP_KERNEL);
	struct ssc_test_thread gc;
	u64 ob, n, val, moved = U64_MAX;
	struct ssc_loc loc;
	u32 *slots;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	n = ssc_test_fill_cache(test, e, d, 2);
	slots = kunit_kcalloc(test, n, sizeof(*slots), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, slots);
	for (ob = 0; ob < n; ob++)
		slots[ob] = ssc_map_lookup(e->map, ob, &val) ? val_slot(val) : U32_MAX;
	ssc_ram_volatile(test, d);
	/* GC stops at its second copy: the first is moved, not committed */
	ssc_ram_gate(d, GATE_READ, 2);
	ssc_test_start(test, &gc, e, ssc_gc);
	wait_for_completion(&d->gate_in);
	mutex_lock(&e->lock);
	for (ob = 0; ob < n && moved == U64_MAX; ob += 2)
		if (ssc_map_lookup(e->map, ob, &val) && val_slot(val) != slots[ob])
			moved = ob;
	mutex_unlock(&e->lock);
	KUNIT_ASSERT_NE_MSG(test, moved, U64_MAX, "GC moved no dirty block");

	KUNIT_EXPECT_EQ(test, SSC_DIRTY, ssc_get(e, moved, true, &loc));
	if (loc.slot == U32_MAX) {
		/* refused in place: the move is committed first */
		KUNIT_EXPECT_EQ(test, 0, ssc_commit_pending(e));
		KUNIT_ASSERT_EQ(test, SSC_DIRTY, ssc_get(e, moved, true, &loc));
		KUNIT_ASSERT_NE(test, loc.slot, U32_MAX);
	}
	ssc_test_fill(buf, moved, 2);
	ssc_ram_rw(d, REQ_OP_WRITE | REQ_FUA, loc.sector, buf, len);
	ssc_put(e, &loc);
	cut = ssc_ram_power_cut(test, d);	/* the FUA write is acknowledged */
	complete(&d->gate_out);
	wait_for_completion(&gc.done);
	ssc_engine_destroy(e);

	e = ssc_test_open(test, cut);
	KUNIT_EXPECT_EQ(test, SSC_DIRTY, ssc_test_read(test, e, cut, moved, 2));
	ssc_engine_destroy(e);
}

/*
 * Finding 3: a FLUSH that arrives while a commit is in flight must not be
 * answered by that commit's cache flush, which was issued before an
 * in-place write the FLUSH covers had completed.
 */
static void ssc_engine_test_flush_in_flight(struct kunit *test)
{
	const size_t len = T_BLOCK_SECTORS << SECTOR_SHIFT;
	struct ssc_ram *d = ssc_test_ram(test), *cut;
	struct ssc_engine *e = ssc_test_open(test, d);
	u8 *buf = kunit_kmalloc(test, len, GFP_KERNEL);
	struct ssc_test_thread c, f;
	struct ssc_loc loc;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	ssc_ram_volatile(test, d);
	ssc_test_write(test, e, d, 5, 1, true);
	ssc_test_write(test, e, d, 6, 1, false);	/* a record in RAM */
	ssc_ram_gate(d, GATE_PREFLUSH, 0);
	ssc_test_start(test, &c, e, ssc_commit_pending);
	wait_for_completion(&d->gate_in);	/* its flush is done, its log write not */

	/* an in-place write completes, then a FLUSH arrives */
	KUNIT_ASSERT_EQ(test, SSC_DIRTY, ssc_get(e, 5, true, &loc));
	KUNIT_ASSERT_NE(test, loc.slot, U32_MAX);
	ssc_test_fill(buf, 5, 2);
	ssc_ram_rw(d, REQ_OP_WRITE, loc.sector, buf, len);
	ssc_put(e, &loc);
	ssc_test_start(test, &f, e, ssc_flush);
	/* the FLUSH waits behind the commit (for commit_lock), not before it */
	ssc_test_wait_blocked(test, &f);
	KUNIT_EXPECT_FALSE(test, completion_done(&f.done));
	complete(&d->gate_out);
	wait_for_completion(&c.done);
	wait_for_completion(&f.done);
	KUNIT_EXPECT_EQ(test, 0, f.r);
	cut = ssc_ram_power_cut(test, d);	/* the FLUSH is acknowledged */
	ssc_engine_destroy(e);

	e = ssc_test_open(test, cut);
	KUNIT_EXPECT_EQ(test, SSC_DIRTY, ssc_test_read(test, e, cut, 5, 2));
	ssc_engine_destroy(e);
}

/*
 * Commit at FLUSH (dm-ssc commits write_dirty records at the next FLUSH): a
 * commit takes its records, then flushes the origin without the engine
 * lock; a write_dirty completes meanwhile and a FLUSH arrives. The commit's
 * cache flush is numbered after the FLUSH arrived, but its records were
 * taken before the write: the FLUSH must still commit the write's record.
 */
static void ssc_engine_test_flush_after_built_commit(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test), *cut;
	struct ssc_geometry geo = ssc_test_geo();
	struct ssc_test_thread f;
	const char *err = NULL;
	struct ssc_engine *e;

	e = ssc_engine_create(&geo, &ssc_ram_origin_ops, d, true, &err);
	KUNIT_ASSERT_FALSE(test, IS_ERR(e));
	d->e = e;
	d->test = test;
	KUNIT_ASSERT_EQ(test, 0, ssc_engine_load(e, false, &err));
	ssc_ram_volatile(test, d);
	/* a clean record pending: the next commit flushes the origin */
	ssc_ram_origin_write(d, 1);
	ssc_test_write(test, e, d, 1, 1, false);
	d->flusher = &f;
	d->dirty_in_flush = true;
	KUNIT_EXPECT_EQ(test, 0, ssc_commit_pending(e));
	KUNIT_EXPECT_FALSE(test, d->dirty_in_flush);	/* the race ran */
	wait_for_completion(&f.done);
	KUNIT_EXPECT_EQ(test, 0, f.r);
	cut = ssc_ram_power_cut(test, d);		/* the FLUSH is acknowledged */
	d->e = NULL;
	ssc_engine_destroy(e);

	e = ssc_test_open(test, cut);
	KUNIT_EXPECT_EQ_MSG(test, SSC_DIRTY, ssc_test_read(test, e, cut, 41, 1),
			    "a write completed before an acknowledged FLUSH is lost");
	ssc_engine_destroy(e);
}

/*
 * The metadata fuzzer. A device with a checkpoint, a log and sealed
 * segments gets one field of one metadata object changed to a boundary,
 * neighbouring or random value and its checksum recomputed, as a crafted
 * device would. Create + load must refuse it with a message, or load a
 * consistent cache that then works and loads again. KASAN (the debug
 * kernel) catches what a wrong bound would do to the heap. Each run takes
 * a new seed; dm_ssc.kunit_seed=N replays one.
 */
static ulong kunit_seed;
module_param(kunit_seed, ulong, 0444);
MODULE_PARM_DESC(kunit_seed, "KUnit: seed of the metadata fuzzer (0: random)");

#define SSC_FUZZ_ROUNDS	160

struct ssc_fuzz_field {
	u16 off;
	u8 width;
};

static const struct ssc_fuzz_field ssc_fuzz_sb[] = {
	{ offsetof(struct ssc_sb, version), sizeof_field(struct ssc_sb, version) },
	{ offsetof(struct ssc_sb, flags), sizeof_field(struct ssc_sb, flags) },
	{ offsetof(struct ssc_sb, block_sectors), sizeof_field(struct ssc_sb, block_sectors) },
	{ offsetof(struct ssc_sb, segment_sectors), sizeof_field(struct ssc_sb, segment_sectors) },
	{ offsetof(struct ssc_sb, slots_per_seg), sizeof_field(struct ssc_sb, slots_per_seg) },
	{ offsetof(struct ssc_sb, summary_sectors), sizeof_field(struct ssc_sb, summary_sectors) },
	{ offsetof(struct ssc_sb, nr_segments), sizeof_field(struct ssc_sb, nr_segments) },
	{ offsetof(struct ssc_sb, ckpt_start[0]), sizeof_field(struct ssc_sb, ckpt_start[0]) },
	{ offsetof(struct ssc_sb, ckpt_start[1]), sizeof_field(struct ssc_sb, ckpt_start[1]) },
	{ offsetof(struct ssc_sb, ckpt_sectors), sizeof_field(struct ssc_sb, ckpt_sectors) },
	{ offsetof(struct ssc_sb, log_start), sizeof_field(struct ssc_sb, log_start) },
	{ offsetof(struct ssc_sb, log_blocks), sizeof_field(struct ssc_sb, log_blocks) },
	{ offsetof(struct ssc_sb, data_start), sizeof_field(struct ssc_sb, data_start) },
	{ offsetof(struct ssc_sb, origin_blocks), sizeof_field(struct ssc_sb, origin_blocks) },
	{ offsetof(struct ssc_sb, log_block_bytes), sizeof_field(struct ssc_sb, log_block_bytes) },
};

static const struct ssc_fuzz_field ssc_fuzz_ckpt[] = {
	{ offsetof(struct ssc_ckpt_hdr, seq), sizeof_field(struct ssc_ckpt_hdr, seq) },
	{ offsetof(struct ssc_ckpt_hdr, nr_entries),
	  sizeof_field(struct ssc_ckpt_hdr, nr_entries) },
	{ offsetof(struct ssc_ckpt_hdr, log_seq), sizeof_field(struct ssc_ckpt_hdr, log_seq) },
	{ offsetof(struct ssc_ckpt_hdr, open_seg), sizeof_field(struct ssc_ckpt_hdr, open_seg) },
	{ offsetof(struct ssc_ckpt_hdr, nr_blocks), sizeof_field(struct ssc_ckpt_hdr, nr_blocks) },
	{ offsetof(struct ssc_ckpt_hdr, user_seq), sizeof_field(struct ssc_ckpt_hdr, user_seq) },
};

static const struct ssc_fuzz_field ssc_fuzz_blk[] = {
	{ offsetof(struct ssc_ckpt_blk, ckpt_seq), sizeof_field(struct ssc_ckpt_blk, ckpt_seq) },
	{ offsetof(struct ssc_ckpt_blk, index), sizeof_field(struct ssc_ckpt_blk, index) },
	{ offsetof(struct ssc_ckpt_blk, nr), sizeof_field(struct ssc_ckpt_blk, nr) },
};

static const struct ssc_fuzz_field ssc_fuzz_ent[] = {
	{ offsetof(struct ssc_map_ent, oblock), sizeof_field(struct ssc_map_ent, oblock) },
	{ offsetof(struct ssc_map_ent, slot), sizeof_field(struct ssc_map_ent, slot) },
	{ offsetof(struct ssc_map_ent, flags), sizeof_field(struct ssc_map_ent, flags) },
};

static const struct ssc_fuzz_field ssc_fuzz_log[] = {
	{ offsetof(struct ssc_log_blk, seq), sizeof_field(struct ssc_log_blk, seq) },
	{ offsetof(struct ssc_log_blk, ckpt_seq), sizeof_field(struct ssc_log_blk, ckpt_seq) },
	{ offsetof(struct ssc_log_blk, nr), sizeof_field(struct ssc_log_blk, nr) },
};

static const struct ssc_fuzz_field ssc_fuzz_rec[] = {
	{ offsetof(struct ssc_log_rec, oblock), sizeof_field(struct ssc_log_rec, oblock) },
	{ offsetof(struct ssc_log_rec, slot), sizeof_field(struct ssc_log_rec, slot) },
	{ offsetof(struct ssc_log_rec, type), sizeof_field(struct ssc_log_rec, type) },
	{ offsetof(struct ssc_log_rec, flags), sizeof_field(struct ssc_log_rec, flags) },
};

static u64 ssc_fuzz_get(const u8 *p, unsigned int width)
{
	switch (width) {
	case 1:
		return *p;
	case 2:
		return get_unaligned_le16(p);
	case 4:
		return get_unaligned_le32(p);
	default:
		return get_unaligned_le64(p);
	}
}

static void ssc_fuzz_put(u8 *p, unsigned int width, u64 v)
{
	switch (width) {
	case 1:
		*p = v;
		break;
	case 2:
		put_unaligned_le16(v, p);
		break;
	case 4:
		put_unaligned_le32(v, p);
		break;
	default:
		put_unaligned_le64(v, p);
		break;
	}
}

/* A value a crafted device would try for a field holding @old. */
static u64 ssc_fuzz_value(struct rnd_state *rs, const struct ssc_engine *e,
			  u64 old, unsigned int width)
{
	u64 max = width == 8 ? U64_MAX : (1ULL << (width * 8)) - 1;
	u64 cand[] = {
		0, 1, max, max - 1, max >> 1, old + 1, old - 1, old * 2, old / 2,
		e->nr_slots, e->nr_slots - 1, e->nr_slots + 1, e->nr_segs,
		e->nr_segs - 1, e->geo.origin_blocks, e->geo.origin_blocks - 1,
		1ULL << e->key_bits, e->slots_per_seg, e->geo.cache_sectors,
		prandom_u32_state(rs),
		old ^ (1ULL << (prandom_u32_state(rs) % (width * 8))),
	};

	return cand[prandom_u32_state(rs) % ARRAY_SIZE(cand)] & max;
}

struct ssc_fuzz_inv {
	const struct ssc_engine *e;
	unsigned long *seen;
	u64 bad, dirty;
};

static int ssc_fuzz_inv_visit(void *ctx, u64 key, u64 val)
{
	struct ssc_fuzz_inv *c = ctx;

	if (val_slot(val) >= c->e->nr_slots || key >= c->e->geo.origin_blocks ||
	    __test_and_set_bit(val_slot(val), c->seen))
		c->bad++;
	c->dirty += val_dirty(val);
	return 0;
}

/* A loaded engine is consistent: slots in range and unshared, counts right. */
static void ssc_fuzz_check(struct kunit *test, struct ssc_engine *e, const char *what)
{
	struct ssc_fuzz_inv c = { .e = e };
	u64 valid = 0, free = 0;
	u32 i;

	c.seen = bitmap_zalloc(e->nr_slots, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, c.seen);
	mutex_lock(&e->lock);
	ssc_map_visit_range(e->map, 0, 1ULL << e->key_bits, ssc_fuzz_inv_visit, &c);
	for (i = 0; i < e->nr_segs; i++) {
		KUNIT_EXPECT_LE_MSG(test, e->segs[i].valid, e->slots_per_seg, "%s", what);
		valid += e->segs[i].valid;
		free += e->segs[i].state == SEG_FREE;
	}
	KUNIT_EXPECT_EQ_MSG(test, 0ULL, c.bad, "%s: bad map entries", what);
	KUNIT_EXPECT_EQ_MSG(test, valid, ssc_map_count(e->map), "%s", what);
	KUNIT_EXPECT_EQ_MSG(test, c.dirty, e->nr_dirty, "%s", what);
	KUNIT_EXPECT_EQ_MSG(test, free, (u64)e->free_segs, "%s", what);
	mutex_unlock(&e->lock);
	bitmap_free(c.seen);
}

/* Use a loaded engine: writes, GC, a checkpoint, a clean shutdown. */
static void ssc_fuzz_use(struct kunit *test, struct ssc_engine *e, struct ssc_ram *d,
			 struct rnd_state *rs)
{
	const size_t len = T_BLOCK_SECTORS << SECTOR_SHIFT;
	u8 *buf = kunit_kmalloc(test, len, GFP_KERNEL);
	struct ssc_loc loc;
	u64 lsn;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	for (i = 0; i < 48; i++) {
		u64 ob = prandom_u32_state(rs) % 4096;
		bool dirty = i & 1;

		if (ssc_reserve(e, ob, false, &loc))
			break;
		ssc_test_fill(buf, ob, 7);
		ssc_ram_rw(d, REQ_OP_WRITE, loc.sector, buf, len);
		if (!ssc_publish(e, ob, &loc, dirty, &lsn) && dirty)
			ssc_commit(e, lsn);
	}
	if (ssc_gc_needed(e))
		ssc_gc(e);
	ssc_gc_one(e);		/* reads a summary, whatever the free space */
	ssc_checkpoint(e);
	ssc_engine_shutdown(e);
	kunit_kfree(test, buf);
}

/*
 * Create and load a crafted device: it is refused with a message, or it
 * loads a consistent cache that then works and loads again. True if refused.
 */
static bool ssc_fuzz_load(struct kunit *test, struct ssc_ram *d,
			  const struct ssc_geometry *geo, struct rnd_state *rs,
			  const char *what)
{
	const char *err = NULL;
	struct ssc_engine *e;
	int r;

	e = ssc_engine_create(geo, &ssc_ram_ops, d, false, &err);
	if (IS_ERR(e)) {
		KUNIT_EXPECT_NOT_NULL_MSG(test, err, "%s: refused without a message", what);
		return true;
	}
	r = ssc_engine_load(e, true, &err);
	if (r) {
		KUNIT_EXPECT_NOT_NULL_MSG(test, err, "%s: refused without a message", what);
		ssc_engine_destroy(e);
		return true;
	}
	KUNIT_EXPECT_LE_MSG(test, e->nr_slots,
			    (u64)(geo->cache_sectors / geo->block_sectors), "%s", what);
	ssc_fuzz_check(test, e, what);
	ssc_fuzz_use(test, e, d, rs);
	ssc_engine_destroy(e);
	/* what loaded once keeps loading */
	e = ssc_engine_create(geo, &ssc_ram_ops, d, false, &err);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(e), "%s: second create: %s", what, err);
	r = ssc_engine_load(e, true, &err);
	KUNIT_EXPECT_EQ_MSG(test, 0, r, "%s: second load: %s", what, err);
	if (!r)
		ssc_fuzz_check(test, e, what);
	ssc_engine_destroy(e);
	return false;
}

/*
 * The image both metadata tests start from: a checkpoint with entries,
 * sealed segments, and a committed log after it, left by a crash. Returns
 * a vmalloc()ed copy of the device.
 */
static u8 *ssc_fuzz_image(struct kunit *test, struct ssc_ram *d)
{
	struct ssc_engine *e = ssc_test_open(test, d);
	u8 *image;
	u64 ob;

	for (ob = 0; ob < 200; ob++)
		ssc_test_write(test, e, d, ob * 3, 1, ob % 3 == 0);
	KUNIT_EXPECT_EQ(test, 0, ssc_checkpoint(e));
	for (ob = 0; ob < 40; ob++)
		ssc_test_write(test, e, d, 1000 + ob, 1, ob % 2 == 0);
	ssc_test_write(test, e, d, 3, 2, false);	/* a replacing INSERT */
	KUNIT_EXPECT_EQ(test, 0, ssc_commit_pending(e));
	ssc_engine_destroy(e);				/* crash: the log counts */

	image = vmalloc(d->size);
	KUNIT_ASSERT_NOT_NULL(test, image);
	memcpy(image, d->mem, d->size);
	return image;
}

static void ssc_engine_test_fuzz_meta(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_engine *e = ssc_test_open(test, d);
	u64 seed = kunit_seed ? kunit_seed : get_random_u64() >> 1;
	struct ssc_geometry geo = e->geo;
	unsigned int round, refused = 0, loaded = 0;
	sector_t ckpt[2], log = e->log_start;
	u32 lbs = e->lbs, sum_bytes = e->summary_sectors << SECTOR_SHIFT;
	struct rnd_state rs;
	u8 *image;

	kunit_info(test, "fuzz seed %llu (replay: dm_ssc.kunit_seed=%llu)\n", seed, seed);
	prandom_seed_state(&rs, seed);
	ckpt[0] = e->ckpt_start[0];
	ckpt[1] = e->ckpt_start[1];
	ssc_engine_destroy(e);
	image = ssc_fuzz_image(test, d);

	for (round = 0; round < SSC_FUZZ_ROUNDS; round++) {
		unsigned int kind = prandom_u32_state(&rs) % 6;
		const struct ssc_fuzz_field *f;
		u32 obj_len = SSC_MBLOCK_SIZE, nr;
		const char *err = NULL;
		char what[96];
		u8 *obj;
		u64 old, v;
		int r;

		memcpy(d->mem, image, d->size);
		e = NULL;
		switch (kind) {
		case 0:		/* superblock */
			obj = d->mem;
			f = &ssc_fuzz_sb[prandom_u32_state(&rs) % ARRAY_SIZE(ssc_fuzz_sb)];
			break;
		case 1:		/* either checkpoint header */
			obj = d->mem + (ckpt[prandom_u32_state(&rs) & 1] << SECTOR_SHIFT);
			f = &ssc_fuzz_ckpt[prandom_u32_state(&rs) % ARRAY_SIZE(ssc_fuzz_ckpt)];
			break;
		case 2:		/* a checkpoint entry block's header */
			obj = d->mem + ((ckpt[prandom_u32_state(&rs) & 1] +
					 SSC_MBLOCK_SECTORS) << SECTOR_SHIFT);
			f = &ssc_fuzz_blk[prandom_u32_state(&rs) % ARRAY_SIZE(ssc_fuzz_blk)];
			break;
		case 3: {	/* a checkpoint entry, or a duplicate slot */
			struct ssc_ckpt_blk *b;
			static struct ssc_fuzz_field ent;

			obj = d->mem + ((ckpt[prandom_u32_state(&rs) & 1] +
					 SSC_MBLOCK_SECTORS) << SECTOR_SHIFT);
			b = (struct ssc_ckpt_blk *)obj;
			nr = max_t(u32, 1, min_t(u32, le32_to_cpu(b->nr), SSC_CKPT_PER_BLOCK));
			ent = ssc_fuzz_ent[prandom_u32_state(&rs) % ARRAY_SIZE(ssc_fuzz_ent)];
			ent.off += offsetof(struct ssc_ckpt_blk, ent) +
				(prandom_u32_state(&rs) % nr) * sizeof(struct ssc_map_ent);
			f = &ent;
			if (nr > 1 && prandom_u32_state(&rs) % 3 == 0) {
				b->ent[nr - 1].slot = b->ent[0].slot;
				ssc_seal_crc(obj, obj_len);
				snprintf(what, sizeof(what), "round %u: duplicate slot", round);
				goto load;
			}
			break;
		}
		case 4: {	/* a log block: header or a record */
			struct ssc_log_blk *b;
			static struct ssc_fuzz_field rec;

			obj_len = lbs;
			obj = d->mem + ((log + (prandom_u32_state(&rs) % 3) *
					 (lbs >> SECTOR_SHIFT)) << SECTOR_SHIFT);
			b = (struct ssc_log_blk *)obj;
			if (prandom_u32_state(&rs) & 1) {
				nr = prandom_u32_state(&rs) % ARRAY_SIZE(ssc_fuzz_log);
				f = &ssc_fuzz_log[nr];
				break;
			}
			nr = max_t(u32, 1, min_t(u32, le32_to_cpu(b->nr), SSC_LOG_PER_BLOCK(lbs)));
			rec = ssc_fuzz_rec[prandom_u32_state(&rs) % ARRAY_SIZE(ssc_fuzz_rec)];
			rec.off += offsetof(struct ssc_log_blk, rec) +
				(prandom_u32_state(&rs) % nr) * sizeof(struct ssc_log_rec);
			f = &rec;
			break;
		}
		default: {	/* the summary GC reads next, after a good load */
			int victim;

			e = ssc_engine_create(&geo, &ssc_ram_ops, d, false, &err);
			KUNIT_ASSERT_FALSE(test, IS_ERR(e));
			KUNIT_ASSERT_EQ(test, 0, ssc_engine_load(e, true, &err));
			mutex_lock(&e->lock);
			victim = ssc_pick(e);
			mutex_unlock(&e->lock);
			if (victim < 0) {
				ssc_engine_destroy(e);
				continue;
			}
			obj_len = sum_bytes;
			obj = d->mem + (seg_summary_sector(e, victim) << SECTOR_SHIFT);
			{
				static struct ssc_fuzz_field slot;

				slot.off = offsetof(struct ssc_sum, oblock) +
					(prandom_u32_state(&rs) % e->slots_per_seg) * 8;
				slot.width = 8;
				if (prandom_u32_state(&rs) & 1) {
					slot.off = offsetof(struct ssc_sum, seg);
					slot.width = 4;
				}
				f = &slot;
			}
			break;
		}
		}
		old = ssc_fuzz_get(obj + f->off, f->width);
		if (!e) {
			/* an engine only to draw values that depend on the layout */
			struct ssc_engine *ref;

			ref = ssc_engine_create(&geo, &ssc_ram_ops, d, false, &err);

			KUNIT_ASSERT_FALSE(test, IS_ERR(ref));
			v = ssc_fuzz_value(&rs, ref, old, f->width);
			ssc_engine_destroy(ref);
		} else {
			v = ssc_fuzz_value(&rs, e, old, f->width);
		}
		ssc_fuzz_put(obj + f->off, f->width, v);
		ssc_seal_crc(obj, obj_len);
		snprintf(what, sizeof(what), "round %u: object %u field at %u: %llu -> %llu",
			 round, kind, f->off, old, v);
		if (e) {
			/* GC reads the summary; the map decides what it may drop */
			ssc_fuzz_use(test, e, d, &rs);
			ssc_fuzz_check(test, e, what);
			ssc_engine_destroy(e);
			e = ssc_engine_create(&geo, &ssc_ram_ops, d, false, &err);
			KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(e), "%s: %s", what, err);
			r = ssc_engine_load(e, true, &err);
			KUNIT_EXPECT_EQ_MSG(test, 0, r, "%s: reload: %s", what, err);
			ssc_engine_destroy(e);
			loaded++;
			continue;
		}
load:
		if (ssc_fuzz_load(test, d, &geo, &rs, what))
			refused++;
		else
			loaded++;
	}
	vfree(image);
	kunit_info(test, "fuzz: %u rounds, %u refused, %u loaded\n", round, refused, loaded);
	KUNIT_EXPECT_GT(test, refused, 0U);
	KUNIT_EXPECT_GT(test, loaded, 0U);
}

/*
 * Finding 6, value by value: the fields a crafted device would try first,
 * each with its checksum recomputed. A superblock that describes an
 * impossible layout (a summary too small for its slots, regions that
 * overlap or leave the device, counts that overflow) must be refused with
 * a message; checkpoint and log contents that claim slots or blocks the
 * device does not have, more entries than it holds, or one slot twice are
 * refused or load a consistent cache. The fuzzer above draws from the same
 * space at random; these are checked on every run.
 */
enum {
	CV_ZERO, CV_ONE, CV_MAX, CV_INC, CV_DEC, CV_CKPT0, CV_CKPT1,
	CV_LOG, CV_SLOTS, CV_SLOTS_INC, CV_ORIGIN, CV_DUP, CV_SEGS_INC, CV_LOG_PER_BLOCK_INC,
};

enum { CO_SB, CO_CKPT, CO_ENT, CO_REC, CO_LOGBLK };

struct ssc_crafted {
	const char *name;
	u8 obj;
	u8 val;
	bool refuse;		/* must be refused; otherwise refused or consistent */
	u16 off;		/* in the object */
	u8 width;
};

static const struct ssc_crafted ssc_crafted[] = {
	{ "summary_sectors 0", CO_SB, CV_ZERO, true,
	  offsetof(struct ssc_sb, summary_sectors), sizeof_field(struct ssc_sb, summary_sectors) },
	{ "summary_sectors 1 (512 bytes for a 4 KiB summary)", CO_SB, CV_ONE, true,
	  offsetof(struct ssc_sb, summary_sectors), sizeof_field(struct ssc_sb, summary_sectors) },
	{ "summary_sectors not whole blocks", CO_SB, CV_DEC, true,
	  offsetof(struct ssc_sb, summary_sectors), sizeof_field(struct ssc_sb, summary_sectors) },
	{ "summary_sectors 2^32-1", CO_SB, CV_MAX, true,
	  offsetof(struct ssc_sb, summary_sectors), sizeof_field(struct ssc_sb, summary_sectors) },
	{ "slots_per_seg 0", CO_SB, CV_ZERO, true,
	  offsetof(struct ssc_sb, slots_per_seg), sizeof_field(struct ssc_sb, slots_per_seg) },
	{ "slots_per_seg + 1 (no room for the summary)", CO_SB, CV_INC, true,
	  offsetof(struct ssc_sb, slots_per_seg), sizeof_field(struct ssc_sb, slots_per_seg) },
	{ "slots_per_seg 2^32-1", CO_SB, CV_MAX, true,
	  offsetof(struct ssc_sb, slots_per_seg), sizeof_field(struct ssc_sb, slots_per_seg) },
	{ "nr_segments 0", CO_SB, CV_ZERO, true,
	  offsetof(struct ssc_sb, nr_segments), sizeof_field(struct ssc_sb, nr_segments) },
	{ "nr_segments past the device", CO_SB, CV_SEGS_INC, true,
	  offsetof(struct ssc_sb, nr_segments), sizeof_field(struct ssc_sb, nr_segments) },
	{ "nr_segments 2^64-1", CO_SB, CV_MAX, true,
	  offsetof(struct ssc_sb, nr_segments), sizeof_field(struct ssc_sb, nr_segments) },
	{ "checkpoint 0 over the superblock", CO_SB, CV_ZERO, true,
	  offsetof(struct ssc_sb, ckpt_start[0]), sizeof_field(struct ssc_sb, ckpt_start[0]) },
	{ "checkpoint 1 over checkpoint 0", CO_SB, CV_CKPT0, true,
	  offsetof(struct ssc_sb, ckpt_start[1]), sizeof_field(struct ssc_sb, ckpt_start[1]) },
	{ "checkpoint 0 over checkpoint 1", CO_SB, CV_CKPT1, true,
	  offsetof(struct ssc_sb, ckpt_start[0]), sizeof_field(struct ssc_sb, ckpt_start[0]) },
	{ "checkpoint 1 at 2^64-1", CO_SB, CV_MAX, true,
	  offsetof(struct ssc_sb, ckpt_start[1]), sizeof_field(struct ssc_sb, ckpt_start[1]) },
	{ "ckpt_sectors 0", CO_SB, CV_ZERO, true,
	  offsetof(struct ssc_sb, ckpt_sectors), sizeof_field(struct ssc_sb, ckpt_sectors) },
	{ "ckpt_sectors not a whole block", CO_SB, CV_DEC, true,
	  offsetof(struct ssc_sb, ckpt_sectors), sizeof_field(struct ssc_sb, ckpt_sectors) },
	{ "ckpt_sectors 2^64-1 (overflows)", CO_SB, CV_MAX, true,
	  offsetof(struct ssc_sb, ckpt_sectors), sizeof_field(struct ssc_sb, ckpt_sectors) },
	{ "log over checkpoint 1", CO_SB, CV_CKPT1, true,
	  offsetof(struct ssc_sb, log_start), sizeof_field(struct ssc_sb, log_start) },
	{ "log_start 2^64-1", CO_SB, CV_MAX, true,
	  offsetof(struct ssc_sb, log_start), sizeof_field(struct ssc_sb, log_start) },
	{ "log_blocks 0", CO_SB, CV_ZERO, true,
	  offsetof(struct ssc_sb, log_blocks), sizeof_field(struct ssc_sb, log_blocks) },
	{ "log_blocks 2^64-1 (overflows)", CO_SB, CV_MAX, true,
	  offsetof(struct ssc_sb, log_blocks), sizeof_field(struct ssc_sb, log_blocks) },
	{ "data over the superblock", CO_SB, CV_ZERO, true,
	  offsetof(struct ssc_sb, data_start), sizeof_field(struct ssc_sb, data_start) },
	{ "data over the log", CO_SB, CV_LOG, true,
	  offsetof(struct ssc_sb, data_start), sizeof_field(struct ssc_sb, data_start) },
	{ "data_start 2^64-1", CO_SB, CV_MAX, true,
	  offsetof(struct ssc_sb, data_start), sizeof_field(struct ssc_sb, data_start) },
	{ "log_block_bytes 0", CO_SB, CV_ZERO, true,
	  offsetof(struct ssc_sb, log_block_bytes), sizeof_field(struct ssc_sb, log_block_bytes) },
	{ "log_block_bytes not a power of 2", CO_SB, CV_INC, true,
	  offsetof(struct ssc_sb, log_block_bytes), sizeof_field(struct ssc_sb, log_block_bytes) },
	{ "log_block_bytes 2^32-1", CO_SB, CV_MAX, true,
	  offsetof(struct ssc_sb, log_block_bytes), sizeof_field(struct ssc_sb, log_block_bytes) },
	{ "block_sectors not the table's", CO_SB, CV_INC, true,
	  offsetof(struct ssc_sb, block_sectors), sizeof_field(struct ssc_sb, block_sectors) },
	{ "an unknown version", CO_SB, CV_INC, true,
	  offsetof(struct ssc_sb, version), sizeof_field(struct ssc_sb, version) },
	{ "unknown flags", CO_SB, CV_MAX, true,
	  offsetof(struct ssc_sb, flags), sizeof_field(struct ssc_sb, flags) },
	{ "checkpoint with more entries than slots", CO_CKPT, CV_SLOTS_INC, false,
	  offsetof(struct ssc_ckpt_hdr, nr_entries),
	  sizeof_field(struct ssc_ckpt_hdr, nr_entries) },
	{ "checkpoint with 2^64-1 entries", CO_CKPT, CV_MAX, false,
	  offsetof(struct ssc_ckpt_hdr, nr_entries),
	  sizeof_field(struct ssc_ckpt_hdr, nr_entries) },
	{ "checkpoint with 2^32-1 entry blocks", CO_CKPT, CV_MAX, false,
	  offsetof(struct ssc_ckpt_hdr, nr_blocks), sizeof_field(struct ssc_ckpt_hdr, nr_blocks) },
	{ "checkpoint's open segment past the last", CO_CKPT, CV_SEGS_INC, false,
	  offsetof(struct ssc_ckpt_hdr, open_seg), sizeof_field(struct ssc_ckpt_hdr, open_seg) },
	{ "checkpoint sequence 2^64-1", CO_CKPT, CV_MAX, false,
	  offsetof(struct ssc_ckpt_hdr, seq), sizeof_field(struct ssc_ckpt_hdr, seq) },
	{ "checkpoint's log sequence 2^64-1", CO_CKPT, CV_MAX, false,
	  offsetof(struct ssc_ckpt_hdr, log_seq), sizeof_field(struct ssc_ckpt_hdr, log_seq) },
	{ "checkpoint entry in slot nr_slots", CO_ENT, CV_SLOTS, false,
	  offsetof(struct ssc_map_ent, slot), sizeof_field(struct ssc_map_ent, slot) },
	{ "checkpoint entry in slot 2^32-1", CO_ENT, CV_MAX, false,
	  offsetof(struct ssc_map_ent, slot), sizeof_field(struct ssc_map_ent, slot) },
	{ "two checkpoint entries in one slot", CO_ENT, CV_DUP, false,
	  offsetof(struct ssc_map_ent, slot), sizeof_field(struct ssc_map_ent, slot) },
	{ "checkpoint entry past the origin", CO_ENT, CV_ORIGIN, false,
	  offsetof(struct ssc_map_ent, oblock), sizeof_field(struct ssc_map_ent, oblock) },
	{ "checkpoint entry for block 2^64-1", CO_ENT, CV_MAX, false,
	  offsetof(struct ssc_map_ent, oblock), sizeof_field(struct ssc_map_ent, oblock) },
	{ "log block with more records than fit", CO_LOGBLK, CV_LOG_PER_BLOCK_INC, false,
	  offsetof(struct ssc_log_blk, nr), sizeof_field(struct ssc_log_blk, nr) },
	{ "log block with 2^32-1 records", CO_LOGBLK, CV_MAX, false,
	  offsetof(struct ssc_log_blk, nr), sizeof_field(struct ssc_log_blk, nr) },
	{ "log block sequence 2^64-1", CO_LOGBLK, CV_MAX, false,
	  offsetof(struct ssc_log_blk, seq), sizeof_field(struct ssc_log_blk, seq) },
	{ "log record for slot nr_slots", CO_REC, CV_SLOTS, false,
	  offsetof(struct ssc_log_rec, slot), sizeof_field(struct ssc_log_rec, slot) },
	{ "log record for slot 2^32-1", CO_REC, CV_MAX, false,
	  offsetof(struct ssc_log_rec, slot), sizeof_field(struct ssc_log_rec, slot) },
	{ "log record past the origin", CO_REC, CV_ORIGIN, false,
	  offsetof(struct ssc_log_rec, oblock), sizeof_field(struct ssc_log_rec, oblock) },
	{ "log record for block 2^64-1", CO_REC, CV_MAX, false,
	  offsetof(struct ssc_log_rec, oblock), sizeof_field(struct ssc_log_rec, oblock) },
	{ "log record of an unknown type", CO_REC, CV_MAX, false,
	  offsetof(struct ssc_log_rec, type), sizeof_field(struct ssc_log_rec, type) },
};

static u64 ssc_crafted_value(const struct ssc_crafted *c, const struct ssc_engine *e,
			     u64 old)
{
	u64 max = c->width == 8 ? U64_MAX : (1ULL << (c->width * 8)) - 1;

	switch (c->val) {
	case CV_ZERO:
		return 0;
	case CV_ONE:
		return 1;
	case CV_INC:
		return old + 1;
	case CV_DEC:
		return old - 1;
	case CV_CKPT0:
		return e->ckpt_start[0];
	case CV_CKPT1:
		return e->ckpt_start[1];
	case CV_LOG:
		return e->log_start;
	case CV_SLOTS:
		return e->nr_slots;
	case CV_SLOTS_INC:
		return e->nr_slots + 1;
	case CV_ORIGIN:
		return e->geo.origin_blocks;
	case CV_SEGS_INC:
		return div_u64(e->geo.cache_sectors, e->geo.segment_sectors) + 1;
	case CV_LOG_PER_BLOCK_INC:
		return e->log_per_block + 1;
	default:
		return max;
	}
}

static void ssc_engine_test_crafted(struct kunit *test)
{
	struct ssc_ram *d = ssc_test_ram(test);
	struct ssc_engine *ref = ssc_test_open(test, d);
	struct ssc_geometry geo = ref->geo;
	unsigned int i, refused = 0, changed;
	const char *err = NULL;
	struct rnd_state rs;
	u8 *image;

	prandom_seed_state(&rs, 1);
	ssc_engine_destroy(ref);
	image = ssc_fuzz_image(test, d);
	/* an engine for the layout's numbers, on the untouched image */
	ref = ssc_engine_create(&geo, &ssc_ram_ops, d, false, &err);
	KUNIT_ASSERT_FALSE_MSG(test, IS_ERR(ref), "%s", err);

	for (i = 0; i < ARRAY_SIZE(ssc_crafted); i++) {
		const struct ssc_crafted *c = &ssc_crafted[i];
		u32 obj_len = SSC_MBLOCK_SIZE;
		unsigned int k, n = 1;
		u8 *obj[2];
		u64 old = 0, v = 0;
		bool r;

		memcpy(d->mem, image, d->size);
		changed = 0;
		switch (c->obj) {
		case CO_SB:
			obj[0] = d->mem;
			break;
		case CO_CKPT:		/* both checkpoints: no good one to fall back to */
		case CO_ENT:
			n = 2;
			for (k = 0; k < 2; k++)
				obj[k] = d->mem + ((ref->ckpt_start[k] +
						    (c->obj == CO_ENT ? SSC_MBLOCK_SECTORS : 0))
						   << SECTOR_SHIFT);
			break;
		default:		/* the first log block and its first record */
			obj[0] = d->mem + (ref->log_start << SECTOR_SHIFT);
			obj_len = ref->lbs;
			break;
		}
		for (k = 0; k < n; k++) {
			u8 *f = obj[k] + c->off;

			if (c->obj == CO_ENT) {
				struct ssc_ckpt_blk *b = (struct ssc_ckpt_blk *)obj[k];

				/* the format's empty checkpoint has no entry block */
				if (le32_to_cpu(b->magic) != SSC_CKPT_ENT_MAGIC ||
				    le32_to_cpu(b->nr) < 2)
					continue;
				f += offsetof(struct ssc_ckpt_blk, ent);
				if (c->val == CV_DUP) {
					old = le32_to_cpu(b->ent[1].slot);
					v = le32_to_cpu(b->ent[0].slot);
					b->ent[1].slot = b->ent[0].slot;
					ssc_seal_crc(obj[k], obj_len);
					changed++;
					continue;
				}
			} else if (c->obj == CO_REC) {
				struct ssc_log_blk *b = (struct ssc_log_blk *)obj[k];

				/* the record changed is the first after the checkpoint */
				KUNIT_EXPECT_EQ(test, SSC_REC_INSERT, b->rec[0].type);
				KUNIT_EXPECT_EQ(test, 1000ULL, le64_to_cpu(b->rec[0].oblock));
				f += offsetof(struct ssc_log_blk, rec);
			}
			old = ssc_fuzz_get(f, c->width);
			v = ssc_crafted_value(c, ref, old);
			ssc_fuzz_put(f, c->width, v);
			ssc_seal_crc(obj[k], obj_len);
			changed += v != old;
		}
		KUNIT_EXPECT_GT_MSG(test, changed, 0U, "%s: nothing to change", c->name);
		r = ssc_fuzz_load(test, d, &geo, &rs, c->name);
		kunit_info(test, "%s (%llu -> %llu): %s\n", c->name, old, v,
			   r ? "refused" : "loaded, consistent");
		if (c->refuse)
			KUNIT_EXPECT_TRUE_MSG(test, r, "%s: loaded", c->name);
		refused += r;
	}
	ssc_engine_destroy(ref);
	vfree(image);
	KUNIT_EXPECT_GT(test, refused, 0U);
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
	KUNIT_CASE(ssc_engine_test_fuzzy_checkpoint),
	KUNIT_CASE(ssc_engine_test_fuzzy_clean_ahead),
	KUNIT_CASE(ssc_engine_test_gc),
	KUNIT_CASE(ssc_engine_test_gc_partial_summary),
	KUNIT_CASE(ssc_engine_test_gc_emptied_by_users),
	KUNIT_CASE(ssc_engine_test_gc_reserve),
	KUNIT_CASE(ssc_engine_test_recover_summaries),
	KUNIT_CASE(ssc_engine_test_log_corruption),
	KUNIT_CASE(ssc_engine_test_lru),
	KUNIT_CASE(ssc_engine_test_wb_segments),
	KUNIT_CASE(ssc_engine_test_wb_round),
	KUNIT_CASE(ssc_engine_test_format),
	KUNIT_CASE(ssc_engine_test_clean_after_origin_flush),
	KUNIT_CASE(ssc_engine_test_evict_after_gc),
	KUNIT_CASE(ssc_engine_test_fua_after_move),
	KUNIT_CASE(ssc_engine_test_flush_in_flight),
	KUNIT_CASE(ssc_engine_test_flush_after_built_commit),
	KUNIT_CASE(ssc_engine_test_fuzz_meta),
	KUNIT_CASE(ssc_engine_test_crafted),
	{}
};

static struct kunit_suite ssc_engine_test_suite = {
	.name = "ssc_engine",
	.suite_init = ssc_engine_test_init,
	.suite_exit = ssc_engine_test_exit,
	.test_cases = ssc_engine_test_cases,
};

kunit_test_suite(ssc_engine_test_suite);
