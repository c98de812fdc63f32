// SPDX-License-Identifier: GPL-2.0
/*
 * flashvm: FlashVM's swap policies for flash devices (Saxena, ch. 3), on
 * the swap policy hooks of kernel/flashvm/patches.
 *
 * - Stride prefetch: swap-in readahead reads on past free slots until it
 *   has a full window of used ones, then adds up to two slots predicted
 *   by a constant stride between the last faults.
 * - Page sampling: reclaim keeps a dirty anonymous folio (one that would
 *   cost a swap write) with probability p, so that cleaner folios go
 *   first. p adapts to the rate at which reclaim asks for writes.
 * - Merged discard: freed swap clusters are held back and discarded as
 *   one batch of at most discard_batch_mb, or after discard_delay_ms.
 * - Dummy discard: with little free swap left, a freed cluster is about
 *   to be written again, and the write invalidates the old flash pages
 *   as a discard would: its discard is skipped.
 * - Clustering: swap slots are handed out in aligned erase-block units,
 *   a unit only once it is wholly free, so that write-back fills whole
 *   erase blocks and the flash never has to move the rest of one.
 * - Pre-cleaning: a reclaim pass takes more inactive anonymous folios at
 *   once (preclean_pages), so that more dirty ones are written back in
 *   one longer run of slots.
 *
 * FlashVM's write throttling, reclaim waiting one jiffy, not a disk's 20
 * to 100 ms, needs no policy on 6.12: its wait for writeback ends as pages
 * complete, and the rest are a jiffy (Documentation/flashvm.rst).
 *
 * The policies act on the swap devices "devices" selects: by default those
 * the kernel takes for solid state and that are not RAM-backed (zram, brd,
 * pmem); other devices (a disk) keep the stock behaviour.
 *
 * Tunables and counters are in /sys/kernel/flashvm/. Zero pages need no
 * policy: since 6.12 the swap path skips their I/O (si->zeromap); the
 * counters swpout_zero and swpin_zero are shown next to ours.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/blkdev.h>
#include <linux/kdev_t.h>
#include <linux/kobject.h>
#include <linux/ktime.h>
#include <linux/minmax.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/swap.h>
#include <linux/swap_policy.h>
#include <linux/sysfs.h>
#include <linux/vmstat.h>
#include <linux/workqueue.h>

/* p is kept in 1/65536ths */
#define FVM_P_ONE		65536U
/* the adaptive p stays within [base / 4, 4 * base], and never above one half */
#define FVM_P_SPREAD		4
#define FVM_P_MAX		(FVM_P_ONE / 2)
/* a sample window over this many times the average held an idle spell: not counted */
#define FVM_IDLE_SPREAD		8
#define FVM_DISCARD_MAX_MB	100U
/* an erase block when the device gives no hint: the thesis's 128 KiB */
#define FVM_ERASE_BLOCK_KB	128U

/* --- tunables (/sys/kernel/flashvm/<name>) --- */
static unsigned int fvm_prefetch = 1;		/* full window past free slots */
static unsigned int fvm_prefetch_scan = 64;	/* most slots looked at past the window */
static unsigned int fvm_stride_pages = 2;	/* 0..2 */
static unsigned int fvm_sampling = 1;
static unsigned int fvm_sample_inv = 20;	/* base p = 1 / sample_inv */
static unsigned int fvm_sample_adaptive = 1;
static unsigned int fvm_sample_batch = 32;	/* n: decisions per rate sample */
static unsigned int fvm_merged_discard = 1;
static unsigned int fvm_discard_batch_mb = FVM_DISCARD_MAX_MB;
static unsigned int fvm_discard_delay_ms = 1000;
static unsigned int fvm_dummy_discard = 1;
static unsigned int fvm_dummy_free_pct = 10;	/* skip discards below this much free swap */
static unsigned int fvm_clustering = 1;
static unsigned int fvm_erase_block_kb;		/* 0: the device's discard granularity */
static unsigned int fvm_preclean_pages = 128;	/* 0: the kernel's batch */

/* --- counters --- */
enum fvm_counter {
	FVM_RA_FAULTS,		/* swap-in misses the policy chose readahead for */
	FVM_RA_WINDOW,		/* used slots inside the stock window */
	FVM_RA_EXTENDED,	/* used slots past it, read in place of free ones */
	FVM_RA_STRIDE,		/* slots predicted by a stride */
	FVM_DIRTY_CLASSIC,	/* dirty anon folios reclaim asked about */
	FVM_KEPT_CLASSIC,	/* ... and kept */
	FVM_DIRTY_LRU_GEN,
	FVM_KEPT_LRU_GEN,
	FVM_CLUSTERS_FREED,	/* freed clusters of discard=pages devices */
	FVM_DISCARD_NOW,	/* left to the stock per-cluster discard */
	FVM_DISCARD_QUEUED,	/* held back for a batch */
	FVM_DISCARD_SKIPPED,	/* dummy: no discard */
	FVM_DISCARD_BATCHES,	/* batches flushed */
	FVM_OTHER_DEVICE,	/* hook calls about a device "devices" leaves alone */
	FVM_UNIT_ALLOCS,	/* slot allocations asked to go by erase-block units */
	FVM_PRECLEAN_PASSES,	/* reclaim passes given a larger batch */
	FVM_NR_COUNTERS
};

static const char * const fvm_counter_names[FVM_NR_COUNTERS] = {
	[FVM_RA_FAULTS]		= "ra_faults",
	[FVM_RA_WINDOW]		= "ra_window_pages",
	[FVM_RA_EXTENDED]	= "ra_extended_pages",
	[FVM_RA_STRIDE]		= "ra_stride_pages",
	[FVM_DIRTY_CLASSIC]	= "dirty_seen_classic",
	[FVM_KEPT_CLASSIC]	= "dirty_kept_classic",
	[FVM_DIRTY_LRU_GEN]	= "dirty_seen_lru_gen",
	[FVM_KEPT_LRU_GEN]	= "dirty_kept_lru_gen",
	[FVM_CLUSTERS_FREED]	= "clusters_freed",
	[FVM_DISCARD_NOW]	= "discard_clusters_now",
	[FVM_DISCARD_QUEUED]	= "discard_clusters_queued",
	[FVM_DISCARD_SKIPPED]	= "discard_clusters_skipped",
	[FVM_DISCARD_BATCHES]	= "discard_batches",
	[FVM_OTHER_DEVICE]	= "other_device_calls",
	[FVM_UNIT_ALLOCS]	= "cluster_unit_allocs",
	[FVM_PRECLEAN_PASSES]	= "preclean_passes",
};

static atomic_long_t fvm_counters[FVM_NR_COUNTERS];

static void fvm_count(enum fvm_counter c, long n)
{
	atomic_long_add(n, &fvm_counters[c]);
}

/* --- which swap devices the policies act on --- */

#define FVM_MAX_DEVS	16

/* "devices": auto, all, or a list of block devices (swap files: their filesystem's) */
struct fvm_devset {
	struct rcu_head rcu;
	bool all;
	unsigned int n;		/* 0 with !all: auto */
	dev_t dev[FVM_MAX_DEVS];
};

static struct fvm_devset __rcu *fvm_devs;
static DEFINE_MUTEX(fvm_devs_mutex);

/*
 * Does the policy act on @si? Hooks run under rcu_read_lock(). Auto: the
 * kernel found the device solid state (SWP_SOLIDSTATE) and it does not
 * complete I/O synchronously in the caller, as RAM-backed devices do
 * (SWP_SYNCHRONOUS_IO: zram, brd, pmem), where there is no flash to spare.
 */
static bool fvm_on(struct swap_info_struct *si)
{
	const struct fvm_devset *set = rcu_dereference(fvm_devs);
	unsigned int i;
	bool on;

	if (!set || (!set->all && !set->n)) {
		on = (si->flags & SWP_SOLIDSTATE) && !(si->flags & SWP_SYNCHRONOUS_IO);
	} else if (set->all) {
		on = true;
	} else {
		on = false;
		for (i = 0; i < set->n && !on; i++)
			on = si->bdev && si->bdev->bd_dev == set->dev[i];
	}
	if (!on)
		fvm_count(FVM_OTHER_DEVICE, 1);
	return on;
}

/* --- stride prefetch --- */

/* The last two faulting slots of each swap device */
static struct {
	pgoff_t last, prev;
} fvm_faults[MAX_SWAPFILES];
static DEFINE_SPINLOCK(fvm_fault_lock);

/* Is @off a slot in use that is worth reading? */
static bool fvm_slot_used(struct swap_info_struct *si, pgoff_t off)
{
	unsigned char c;

	if (!off || off >= si->max)
		return false;
	c = READ_ONCE(si->swap_map[off]);
	return c != SWAP_MAP_BAD && (c & ~SWAP_HAS_CACHE);
}

static bool fvm_listed(const pgoff_t *offs, unsigned int n, pgoff_t off)
{
	while (n--)
		if (offs[n] == off)
			return true;
	return false;
}

static unsigned int fvm_swapin_readahead(struct swap_info_struct *si,
					 pgoff_t offset, unsigned long mask,
					 pgoff_t *offs, unsigned int max)
{
	unsigned int want = min_t(unsigned long, mask + 1, max);
	unsigned int stride = min(READ_ONCE(fvm_stride_pages), 2U);
	unsigned int scan = READ_ONCE(fvm_prefetch_scan);
	unsigned int type = si->type, n = 0, i;
	pgoff_t off, start, end, last, prev;
	long d;

	if ((!READ_ONCE(fvm_prefetch) && !stride) || !fvm_on(si))
		return 0;
	if (want + stride > max)
		want = max - stride;

	spin_lock(&fvm_fault_lock);
	last = fvm_faults[type].last;
	prev = fvm_faults[type].prev;
	fvm_faults[type].prev = last;
	fvm_faults[type].last = offset;
	spin_unlock(&fvm_fault_lock);

	/*
	 * The list is in device order with the faulting slot in its place, so
	 * that the kernel's plugged reads of neighbours merge into one request.
	 * First the stock window's used slots, as the kernel would read them.
	 */
	/*
	 * vm.page-cluster may be as large as 31: the window is clamped to the
	 * device, or a scan of free slots could run for 2^31 of them.
	 */
	start = offset & ~mask;
	end = min_t(pgoff_t, offset | mask, si->max - 1);
	/*
	 * A window larger than the list (a large page-cluster) is cut to
	 * @want slots around the fault, so that the fault is always listed.
	 */
	if (end - start >= want) {
		start = offset - min_t(pgoff_t, offset - start, want / 2);
		end = min_t(pgoff_t, end, start + want - 1);
	}
	for (off = start; off <= end && n < want; off++)
		if (off == offset || fvm_slot_used(si, off))
			offs[n++] = off;
	fvm_count(FVM_RA_WINDOW, n - 1);

	/* FlashVM: seek over free and bad slots for a full window */
	if (READ_ONCE(fvm_prefetch)) {
		i = n;
		for (off = end + 1; n < want && off < si->max && scan--; off++)
			if (fvm_slot_used(si, off))
				offs[n++] = off;
		fvm_count(FVM_RA_EXTENDED, n - i);
	} else {
		/* stride only: keep the stock window as it is */
		n = 0;
		for (off = start; off <= end && n < want; off++)
			if (off && off < si->max)
				offs[n++] = off;
	}

	/* a stride seen twice in a row predicts the next one or two faults */
	d = (long)(offset - last);
	if (stride && last && prev && d == (long)(last - prev) &&
	    (unsigned long)abs(d) > mask) {
		for (i = 1; i <= stride; i++) {
			off = offset + i * d;
			if (fvm_slot_used(si, off) && !fvm_listed(offs, n, off)) {
				offs[n++] = off;
				fvm_count(FVM_RA_STRIDE, 1);
			}
		}
	}
	fvm_count(FVM_RA_FAULTS, 1);
	return n;
}

/* --- page sampling --- */

static struct {
	spinlock_t lock;	/* protects the fields below; p is also read without it */
	unsigned int p;		/* current p, in 1/65536ths */
	unsigned int seen;	/* decisions in this sample */
	u64 start_ns;		/* when this sample began */
	u64 avg_ns;		/* moving average of the time for n decisions */
} fvm_sample = {
	.lock = __SPIN_LOCK_UNLOCKED(fvm_sample.lock),
};

/* base p = 1 / sample_inv, at most FVM_P_MAX */
static unsigned int fvm_base_p(void)
{
	return min(FVM_P_ONE / max(READ_ONCE(fvm_sample_inv), 1U), FVM_P_MAX);
}

/* a window of n decisions took @t ns: the average, and p, move (below) */
static void fvm_sample_window(u64 t, unsigned int base)
{
	u64 p;

	lockdep_assert_held(&fvm_sample.lock);
	if (!fvm_sample.avg_ns) {
		fvm_sample.avg_ns = t;
		return;
	}
	if (t > fvm_sample.avg_ns * FVM_IDLE_SPREAD) {
		fvm_sample.avg_ns = fvm_sample.avg_ns * (7 + FVM_IDLE_SPREAD) / 8;
		return;
	}
	fvm_sample.avg_ns = (fvm_sample.avg_ns * 7 + t) / 8;
	p = div64_u64((u64)base * t, max(fvm_sample.avg_ns, 1ULL));
	p = clamp_t(u64, p, base / FVM_P_SPREAD, base * FVM_P_SPREAD);
	WRITE_ONCE(fvm_sample.p, min_t(u64, p, FVM_P_MAX));
}

/*
 * Reclaim asked about a dirty folio: one decision more. After every n of
 * them, compare the time they took (t_n) with its moving average: reclaim
 * asking slower than usual (its writes are the bottleneck) raises p, faster
 * lowers it, within [base / 4, 4 * base] and never over one half, so that
 * reclaim always gets at least every other folio it asks for. The clock is
 * reclaim's questions, kept folios included: counting only the writes let
 * through made every kept folio slow the clock, which raised p, which kept
 * more (at p = 1 no write was let through, and p never came down). A window
 * over FVM_IDLE_SPREAD times the average is taken for a spell without
 * reclaim: p stays, and the average moves towards it as if it were
 * FVM_IDLE_SPREAD times (so that a lasting fall of the rate is followed
 * within a few windows, not frozen out).
 */
static void fvm_sample_tick(void)
{
	unsigned int base = fvm_base_p(), n = max(READ_ONCE(fvm_sample_batch), 1U);
	u64 now;

	spin_lock(&fvm_sample.lock);
	if (++fvm_sample.seen >= n) {
		now = ktime_get_ns();
		/* (the first window only starts the clock) */
		if (fvm_sample.start_ns)
			fvm_sample_window(now - fvm_sample.start_ns, base);
		fvm_sample.start_ns = now;
		fvm_sample.seen = 0;
	}
	spin_unlock(&fvm_sample.lock);
}

static bool fvm_reclaim_keep_dirty(struct folio *folio,
				   struct swap_info_struct *si,
				   enum swap_policy_lru lru)
{
	bool gen = lru == SWAP_POLICY_LRU_GEN;
	unsigned int p;

	if (!fvm_on(si))
		return false;
	fvm_count(gen ? FVM_DIRTY_LRU_GEN : FVM_DIRTY_CLASSIC, 1);
	if (!READ_ONCE(fvm_sampling))
		return false;
	p = READ_ONCE(fvm_sample_adaptive) ? READ_ONCE(fvm_sample.p) : 0;
	if (!p)
		p = fvm_base_p();
	fvm_sample_tick();
	/* (both are at most FVM_P_MAX) */
	if (get_random_u32_below(FVM_P_ONE) < p) {
		fvm_count(gen ? FVM_KEPT_LRU_GEN : FVM_KEPT_CLASSIC, 1);
		return true;
	}
	return false;
}

/* --- merged and dummy discard --- */

static atomic_long_t fvm_queued_bytes;
static void fvm_flush_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(fvm_flush_dwork, fvm_flush_fn);

static void fvm_flush_fn(struct work_struct *work)
{
	if (atomic_long_xchg(&fvm_queued_bytes, 0)) {
		fvm_count(FVM_DISCARD_BATCHES, 1);
		swap_policy_flush_discards();
	}
}

/* Called with the swap device's locks held: no sleeping here. */
static enum swap_discard_verdict fvm_cluster_freed(struct swap_info_struct *si,
						   pgoff_t start, unsigned long nr)
{
	unsigned long batch = (unsigned long)min(READ_ONCE(fvm_discard_batch_mb),
						 FVM_DISCARD_MAX_MB) << 20;
	unsigned long free = si->pages - min(si->inuse_pages, si->pages);

	if (!fvm_on(si))
		return SWAP_DISCARD_NOW;
	fvm_count(FVM_CLUSTERS_FREED, 1);
	if (READ_ONCE(fvm_dummy_discard) &&
	    free * 100 < (unsigned long)si->pages * READ_ONCE(fvm_dummy_free_pct)) {
		fvm_count(FVM_DISCARD_SKIPPED, 1);
		return SWAP_DISCARD_SKIP;
	}
	if (!READ_ONCE(fvm_merged_discard) || !batch) {
		fvm_count(FVM_DISCARD_NOW, 1);
		return SWAP_DISCARD_NOW;
	}
	fvm_count(FVM_DISCARD_QUEUED, 1);
	if (atomic_long_add_return(nr << PAGE_SHIFT, &fvm_queued_bytes) >= batch)
		mod_delayed_work(system_wq, &fvm_flush_dwork, 0);
	else if (!delayed_work_pending(&fvm_flush_dwork))
		queue_delayed_work(system_wq, &fvm_flush_dwork,
				   msecs_to_jiffies(READ_ONCE(fvm_discard_delay_ms)));
	return SWAP_DISCARD_QUEUE;
}

/* --- clustering and pre-cleaning: the write path --- */

/*
 * Slots in erase-block units of erase_block_kb; 0 there: the device's
 * discard granularity when it is more than a page (the unit it frees flash
 * in), else the thesis's 128 KiB. Called with si->lock held.
 */
static unsigned int fvm_alloc_unit(struct swap_info_struct *si)
{
	unsigned int kb = READ_ONCE(fvm_erase_block_kb);
	unsigned int gran, unit;

	if (!READ_ONCE(fvm_clustering) || !fvm_on(si))
		return 0;
	if (!kb) {
		gran = si->bdev ? bdev_discard_granularity(si->bdev) : 0;
		kb = gran > PAGE_SIZE ? gran >> 10 : FVM_ERASE_BLOCK_KB;
	}
	unit = (kb << 10) >> PAGE_SHIFT;
	if (unit > 1)
		fvm_count(FVM_UNIT_ALLOCS, 1);
	return unit;
}

static unsigned int fvm_reclaim_batch(struct swap_info_struct *si,
				      enum swap_policy_lru lru, unsigned int stock)
{
	unsigned int batch = READ_ONCE(fvm_preclean_pages);

	if (!batch || !fvm_on(si))
		return stock;
	if (batch > stock)
		fvm_count(FVM_PRECLEAN_PASSES, 1);
	return batch;
}

static const struct swap_policy_ops fvm_ops = {
	.owner			= THIS_MODULE,
	.swapin_readahead	= fvm_swapin_readahead,
	.reclaim_keep_dirty	= fvm_reclaim_keep_dirty,
	.cluster_freed		= fvm_cluster_freed,
	.alloc_unit		= fvm_alloc_unit,
	.reclaim_batch		= fvm_reclaim_batch,
};

/* --- sysfs --- */

struct fvm_tunable {
	struct kobj_attribute attr;
	unsigned int *val;
	unsigned int min, max;
};

static ssize_t fvm_tunable_show(struct kobject *kobj, struct kobj_attribute *attr,
				char *buf)
{
	struct fvm_tunable *t = container_of(attr, struct fvm_tunable, attr);

	return sysfs_emit(buf, "%u\n", READ_ONCE(*t->val));
}

static ssize_t fvm_tunable_store(struct kobject *kobj, struct kobj_attribute *attr,
				 const char *buf, size_t count)
{
	struct fvm_tunable *t = container_of(attr, struct fvm_tunable, attr);
	unsigned int v;
	int ret;

	ret = kstrtouint(buf, 0, &v);
	if (ret)
		return ret;
	if (v < t->min || v > t->max)
		return -EINVAL;
	WRITE_ONCE(*t->val, v);
	return count;
}

#define FVM_TUNABLE(_name, _var, _min, _max)				\
	static struct fvm_tunable fvm_t_##_name = {			\
		.attr = __ATTR(_name, 0644, fvm_tunable_show,		\
			       fvm_tunable_store),			\
		.val = &(_var), .min = (_min), .max = (_max),		\
	}

FVM_TUNABLE(prefetch, fvm_prefetch, 0, 1);
FVM_TUNABLE(prefetch_scan, fvm_prefetch_scan, 0, 4096);
FVM_TUNABLE(stride_pages, fvm_stride_pages, 0, 2);
FVM_TUNABLE(sampling, fvm_sampling, 0, 1);
FVM_TUNABLE(sample_inv, fvm_sample_inv, 2, 65536);
FVM_TUNABLE(sample_adaptive, fvm_sample_adaptive, 0, 1);
FVM_TUNABLE(sample_batch, fvm_sample_batch, 1, 4096);
FVM_TUNABLE(merged_discard, fvm_merged_discard, 0, 1);
FVM_TUNABLE(discard_batch_mb, fvm_discard_batch_mb, 1, FVM_DISCARD_MAX_MB);
FVM_TUNABLE(discard_delay_ms, fvm_discard_delay_ms, 1, 60000);
FVM_TUNABLE(dummy_discard, fvm_dummy_discard, 0, 1);
FVM_TUNABLE(dummy_free_pct, fvm_dummy_free_pct, 0, 100);
FVM_TUNABLE(clustering, fvm_clustering, 0, 1);
FVM_TUNABLE(erase_block_kb, fvm_erase_block_kb, 0, 2048);
FVM_TUNABLE(preclean_pages, fvm_preclean_pages, 0, SWAP_POLICY_BATCH_MAX);

/* One "name value" line per counter, then the sampler's p and zero-page events */
static ssize_t stats_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	unsigned long *ev;
	int i, len = 0;

	for (i = 0; i < FVM_NR_COUNTERS; i++)
		len += sysfs_emit_at(buf, len, "%s %ld\n", fvm_counter_names[i],
				     atomic_long_read(&fvm_counters[i]));
	len += sysfs_emit_at(buf, len, "sample_p_per_65536 %u\n",
			     READ_ONCE(fvm_sample.p) ?: fvm_base_p());
	len += sysfs_emit_at(buf, len, "discard_queued_bytes %ld\n",
			     atomic_long_read(&fvm_queued_bytes));
	ev = kcalloc(NR_VM_EVENT_ITEMS, sizeof(*ev), GFP_KERNEL);
	if (ev) {
		all_vm_events(ev);
		len += sysfs_emit_at(buf, len, "swpout_zero %lu\nswpin_zero %lu\n",
				     ev[SWPOUT_ZERO], ev[SWPIN_ZERO]);
		kfree(ev);
	}
	return len;
}

/* Writing 0 zeroes the counters; nothing else is accepted */
static ssize_t stats_store(struct kobject *kobj, struct kobj_attribute *attr,
			   const char *buf, size_t count)
{
	unsigned int v;
	int i;

	if (kstrtouint(buf, 0, &v) || v)
		return -EINVAL;
	for (i = 0; i < FVM_NR_COUNTERS; i++)
		atomic_long_set(&fvm_counters[i], 0);
	return count;
}

static struct kobj_attribute fvm_stats_attr = __ATTR_RW_MODE(stats, 0644);

/* Writing 1 sends the held-back discards now, as a batch would be sent */
static ssize_t flush_discards_store(struct kobject *kobj,
				    struct kobj_attribute *attr,
				    const char *buf, size_t count)
{
	unsigned int v;

	if (kstrtouint(buf, 0, &v) || v != 1)
		return -EINVAL;
	mod_delayed_work(system_wq, &fvm_flush_dwork, 0);
	return count;
}

static struct kobj_attribute fvm_flush_attr = __ATTR_WO(flush_discards);

static ssize_t devices_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	const struct fvm_devset *set;
	unsigned int i;
	int len = 0;

	rcu_read_lock();
	set = rcu_dereference(fvm_devs);
	if (!set || (!set->all && !set->n))
		len = sysfs_emit(buf, "auto\n");
	else if (set->all)
		len = sysfs_emit(buf, "all\n");
	else
		for (i = 0; i < set->n; i++)
			len += sysfs_emit_at(buf, len, "%u:%u%c", MAJOR(set->dev[i]),
					     MINOR(set->dev[i]),
					     i + 1 < set->n ? ' ' : '\n');
	rcu_read_unlock();
	return len;
}

/*
 * "auto", "all", or up to FVM_MAX_DEVS "MAJOR:MINOR" separated by spaces or
 * commas; anything else is refused and changes nothing
 */
static ssize_t devices_store(struct kobject *kobj, struct kobj_attribute *attr,
			     const char *buf, size_t count)
{
	struct fvm_devset *set, *old;
	char *copy, *p, *tok;
	unsigned int major, minor;
	int ret = -EINVAL, used;

	set = kzalloc(sizeof(*set), GFP_KERNEL);
	copy = kstrndup(buf, count, GFP_KERNEL);
	if (!set || !copy) {
		ret = -ENOMEM;
		goto out;
	}
	p = strim(copy);
	if (!strcmp(p, "all")) {
		set->all = true;
	} else if (strcmp(p, "auto")) {
		while ((tok = strsep(&p, " ,\t")) != NULL) {
			if (!*tok)
				continue;
			if (set->n == FVM_MAX_DEVS ||
			    sscanf(tok, "%u:%u%n", &major, &minor, &used) != 2 ||
			    tok[used] || MAJOR(MKDEV(major, minor)) != major ||
			    MINOR(MKDEV(major, minor)) != minor || (!major && !minor))
				goto out;
			set->dev[set->n++] = MKDEV(major, minor);
		}
		if (!set->n)
			goto out;
	}
	mutex_lock(&fvm_devs_mutex);
	old = rcu_replace_pointer(fvm_devs, set, lockdep_is_held(&fvm_devs_mutex));
	mutex_unlock(&fvm_devs_mutex);
	set = NULL;
	if (old)
		kfree_rcu(old, rcu);
	ret = count;
out:
	kfree(copy);
	kfree(set);
	return ret;
}

static struct kobj_attribute fvm_devices_attr = __ATTR_RW(devices);

static struct attribute *fvm_attrs[] = {
	&fvm_t_prefetch.attr.attr,
	&fvm_t_prefetch_scan.attr.attr,
	&fvm_t_stride_pages.attr.attr,
	&fvm_t_sampling.attr.attr,
	&fvm_t_sample_inv.attr.attr,
	&fvm_t_sample_adaptive.attr.attr,
	&fvm_t_sample_batch.attr.attr,
	&fvm_t_merged_discard.attr.attr,
	&fvm_t_discard_batch_mb.attr.attr,
	&fvm_t_discard_delay_ms.attr.attr,
	&fvm_t_dummy_discard.attr.attr,
	&fvm_t_dummy_free_pct.attr.attr,
	&fvm_t_clustering.attr.attr,
	&fvm_t_erase_block_kb.attr.attr,
	&fvm_t_preclean_pages.attr.attr,
	&fvm_stats_attr.attr,
	&fvm_flush_attr.attr,
	&fvm_devices_attr.attr,
	NULL,
};

static const struct attribute_group fvm_group = {
	.attrs = fvm_attrs,
};

static struct kobject *fvm_kobj;

static int __init flashvm_init(void)
{
	int ret;

	fvm_kobj = kobject_create_and_add("flashvm", kernel_kobj);
	if (!fvm_kobj)
		return -ENOMEM;
	ret = sysfs_create_group(fvm_kobj, &fvm_group);
	if (ret)
		goto put;
	ret = swap_policy_register(&fvm_ops);
	if (ret) {
		pr_err("another swap policy is registered\n");
		goto put;
	}
	return 0;
put:
	/* the sysfs files first: a store may have armed the flush or set devices */
	kobject_del(fvm_kobj);
	cancel_delayed_work_sync(&fvm_flush_dwork);
	kobject_put(fvm_kobj);
	kfree(rcu_dereference_protected(fvm_devs, true));
	return ret;
}

/*
 * Teardown order: the sysfs files (kobject_del() removes them at once,
 * waiting for a store in progress: flush_discards can arm the flush; a
 * kobject_put() alone may defer that, with CONFIG_DEBUG_KOBJECT_RELEASE),
 * then the hooks (after this no hook runs, cluster_freed() can no longer
 * arm the flush, and held-back discards are sent), then the flush work,
 * then the device set.
 */
static void __exit flashvm_exit(void)
{
	kobject_del(fvm_kobj);
	swap_policy_unregister(&fvm_ops);
	cancel_delayed_work_sync(&fvm_flush_dwork);
	kobject_put(fvm_kobj);
	kfree(rcu_dereference_protected(fvm_devs, true));
}

module_init(flashvm_init);
module_exit(flashvm_exit);

MODULE_DESCRIPTION("FlashVM swap policies: prefetch, sampling, discards, clustering, pre-cleaning");
MODULE_LICENSE("GPL");
