// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * SSDAlloc runtime: pages (seed 000, sections 3.2.1-3.2.3).
 *
 * Memory handed out by the heap lives in ranges reserved here. Only a small
 * Page Buffer (a FIFO of page_buffer_bytes / 4096 pages) is materialized at a
 * time; the rest of the RAM budget is the RAM object cache, which holds each
 * store object compactly (exactly obj_size bytes) in LRU order. Dirty objects
 * leaving the cache go to the SSD writer's queue (still found by faults there),
 * written by one ssd_obj_write() once WRITER_BATCH_BYTES (128 KiB; a quarter of
 * the cache if that is smaller) or WRITER_BATCH_COUNT objects are queued. The
 * cache, the queue and their bookkeeping (entries, page views, malloc's
 * overhead, the hash tables) are counted against ram_bytes - page_buffer_bytes;
 * objects of materialized pages are pinned in the cache and can exceed it.
 *
 * Page faults arrive through userfaultfd (missing + write-protect) and are
 * handled by one thread; where userfaultfd is refused, through mprotect and a
 * SIGSEGV handler, as the thesis's implementation did. Either way the same
 * rt_fault() does the work:
 *   - a missing page is looked up (view hash: page -> object slice; else the
 *     ATM, ssd_atm_lookup(), then the object cache by <otid,oto>, else the store)
 *     and installed: OPP pages get the object's slice at the page's start and
 *     zeros after it, MP pages the whole page. A read installs it write-
 *     protected so that the first write is seen; a write installs it writable
 *     and marks it dirty;
 *   - a write to a write-protected materialized page marks it dirty and lifts
 *     the protection.
 *
 * What is kept of a page is exactly its slice: bytes an OPP object's page holds
 * beyond the object (obj[off + len ...] or past the object's end) are zero when
 * it is materialized and are NOT kept when it is dematerialized; writing there
 * is writing past the end of the object.
 *
 * Dematerialization (Page Buffer full, flush) and its races with application
 * threads writing the same page. Only the fault path and the API functions
 * change a page's state, all under rt_lock. For a dirty page:
 *   1. write-protect it (UFFDIO_WRITEPROTECT / mprotect(PROT_READ)). When the
 *      call returns the kernel has changed the PTE and flushed every TLB, so a
 *      store that was not complete before is now a fault: it blocks (uffd: in
 *      the kernel until woken; fallback: in our handler, on rt_lock). Stores
 *      that completed are in the page.
 *   2. copy the slice out into the object and mark the object dirty. Nobody can
 *      change the page now: writers are blocked, and a writer's fault is
 *      handled only once we release rt_lock.
 *   3. MADV_DONTNEED (fallback: PROT_NONE, then punch the hole).
 * A writer blocked in step 1 is then handled: its page is no longer
 * materialized, so its write is treated as a write fault on a missing page and
 * the page is materialized again from the object, which has every byte written
 * before step 1; its own write then happens on the new page. A clean page was
 * never writable since it was installed (installed write-protected, and every
 * lift of the protection marks it dirty first), so it has the object's bytes
 * and needs no copy. Pending fault messages can be stale (the page was
 * dematerialized or materialized again meanwhile): every message is handled
 * from the current state (materialized: wake or lift WP; not: materialize),
 * which is right whatever happened in between. Reads racing with step 3 fault
 * and wait, and see the object's bytes.
 *
 * Accesses SSDAlloc cannot complete:
 *   - a page the ATM does not know (never allocated in a reserved range, or
 *     freed): the program touched memory it does not own. We do what the kernel
 *     would for an unmapped address: report the address on stderr and kill the
 *     process with SIGSEGV (default action restored first). With userfaultfd the
 *     signal is raised by the fault thread; a program's SIGSEGV handler is not
 *     run for it (it could not usefully return: the access would block again).
 *   - the store fails to read the object (EIO, or EBADMSG: what the device
 *     holds does not check): the access cannot get right bytes, and wrong bytes
 *     are never handed out. Reported on stderr, then SIGBUS (default action) to
 *     the process, as for a memory error.
 *
 * The mprotect + SIGSEGV fallback and its limits. Reserved memory is a memfd
 * mapped twice: the program's view (PROT_NONE until materialized) and a
 * private alias the runtime fills and reads, so a page becomes visible only
 * when complete (mprotect after the copy) and dematerialization reads it via
 * the alias. The handler runs on the faulting thread and calls malloc, the
 * store (liburing, pthread locks) and the heap's ATM: none of that is
 * async-signal-safe. It works because SSDAlloc's own code never touches managed
 * memory while holding a lock, and programs fault on managed memory from
 * ordinary code; a program that touches SSDAlloc memory from its own signal
 * handler, or while inside malloc, can deadlock. Write faults are told from
 * reads by the x86 page-fault error code (REG_ERR bit 1); elsewhere every fault
 * is treated as a write (correct, more write-back). Each materialized page is
 * its own VMA while it differs in protection from its neighbours: init clamps
 * the Page Buffer to (vm.max_map_count - 1000) / 2 pages in this mode (32,265
 * with the default 65,530), saying so on stderr unless quiet. Should mprotect
 * still fail to write-protect a page, the page stays dirty (its bytes are
 * copied again at the next write-back) rather than being taken for clean.
 *
 * fork(): reserved ranges are MADV_DONTFORK, so a child does not have them (it
 * has no fault thread and no cache for them; an access there is a plain
 * SIGSEGV: the child gets the program's SIGSEGV disposition back, and the
 * handler, should it run in a child, never takes the fault for ours). The
 * child shares the memfds, the uffd and the eventfd with the parent, so in a
 * child every runtime entry point fails with EPERM or does nothing
 * (ssd_rt_forked()); rt_lock is held across fork() (pthread_atfork).
 *
 * A full device (ssd_obj_write fails with ENOSPC). The objects stay in RAM (in
 * the writer's queue, still found by faults) and the runtime is "full"
 * (ssd_rt_full()): evictions stop asking the store, because every refused write
 * costs the store's cleaner a pass over the log. The store is tried again once
 * 128 KiB (a log block) of objects was dropped or forgotten since, or by
 * ssd_rt_flush() (which reports the error; a successful flush or write ends
 * "full"). Meanwhile the cache and the queue exceed the RAM budget by the
 * dirty objects that cannot be written: bounded by what is already allocated,
 * since api.c refuses new allocations (ENOSPC) while ssd_rt_full().
 *
 * Freed objects (ssd_rt_drop): the page and the object slice are forgotten
 * with nothing written. A store object holding only this page's slice is
 * removed from RAM. A batch of small objects (obj_size > len) has other live
 * members: only this slice is zeroed in the cached copy; the store object
 * itself is heap.c's (it discards it). heap.c must call ssd_rt_drop while the
 * pages are still allocated (the runtime does not call the ATM from it), and
 * should call ssd_rt_forget() before discarding a store object.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include "ssd-int.h"

#define WRITER_BATCH_BYTES	(128u << 10)
#define WRITER_BATCH_COUNT	1024u
#define OBJ_MAX			(SSD_LOG_BLOCK / 2)
#define PAGE_MASK		((uintptr_t)SSD_PAGE - 1)
#define MALLOC_OVERHEAD		16	/* glibc: chunk header, 16-byte alignment */

/* newer than Debian 12's headers */
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY	1
#endif
#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW	_IO(0xAA, 0x00)
#endif

struct rt_obj;

/* a page whose object is in RAM: which slice of it the page shows */
struct rt_view {
	uintptr_t page;
	struct rt_obj *obj;
	uint32_t off, len;
	bool mat;			/* materialized: in the Page Buffer */
	bool dirty;			/* materialized and writable: may differ from obj */
	struct rt_view *hnext;		/* view hash chain */
	struct rt_view *onext;		/* the object's views */
	struct rt_view *fprev, *fnext;	/* Page Buffer FIFO */
};

enum { L_LRU, L_PINNED, L_QUEUE };

/* a store object in RAM, compact: exactly size bytes */
struct rt_obj {
	uint32_t otid, oto, size;
	uint32_t pins;			/* materialized views */
	bool dirty;
	uint8_t list;			/* L_*: LRU (unpinned), pinned, writer queue */
	struct rt_obj *hnext;
	struct rt_obj *prev, *next;
	struct rt_view *views;
	uint8_t data[];
};

struct rt_list {
	struct rt_obj *head, *tail;	/* head: oldest */
	uint64_t n, bytes;
};

struct rt_range {
	uintptr_t base;
	size_t len;
	int memfd;			/* fallback only */
	uint8_t *alias;			/* fallback: the runtime's view of the memfd */
};

static pthread_mutex_t rt_lock = PTHREAD_MUTEX_INITIALIZER;

/* set in a child forked while the runtime was initialized: the runtime is the parent's */
static volatile bool rt_child;
static pthread_once_t rt_atfork_once = PTHREAD_ONCE_INIT;

static struct {
	bool inited, uffd_mode, quiet, warned;
	bool full;			/* the store refused a write with ENOSPC */
	uint64_t freed;			/* bytes dropped or forgotten since it did */
	pid_t owner;			/* the process that initialized the runtime */
	struct ssd_store *store;
	int uffd, evfd;
	pthread_t thr;
	uint64_t budget, used;		/* RAM object cache + writer queue, with overhead */
	uint64_t batch_bytes;		/* the writer writes this much at once */
	uint32_t pb_cap, pb_n;
	struct rt_view *fifo_head, *fifo_tail;
	size_t hmask;
	struct rt_obj **ohash;
	struct rt_view **vhash;
	struct rt_list lru, pinned, queue;
	struct rt_range *ranges;
	unsigned int nranges, cranges;
	uint64_t gen;			/* bumped by drop: invalidates ATM answers in flight */
	uint8_t *bounce;		/* a page being built */
	uint8_t *scratch;		/* store reads (cap bytes) */
	struct ssd_obj *wbatch;
	struct ssd_stats st;
	struct sigaction old_segv;
	uintptr_t va_next;		/* where the next range is placed (rt_map) */
} rt;

enum { F_DONE, F_WILD, F_ERR };

/* -------------------------------------------------------------- messages */

/* stderr without stdio: the faulting thread may hold stdio's lock */
static void rt_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void rt_say(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	if (write(STDERR_FILENO, buf, n) < 0)
		return;
}

/* the access cannot complete: default action of sig, on this thread */
static void __attribute__((noreturn)) rt_die(int sig)
{
	struct sigaction sa;
	sigset_t set;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigaction(sig, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	abort();
}

/* ----------------------------------------------------------------- lists */

static void list_del(struct rt_list *l, struct rt_obj *o)
{
	if (o->prev)
		o->prev->next = o->next;
	else
		l->head = o->next;
	if (o->next)
		o->next->prev = o->prev;
	else
		l->tail = o->prev;
	o->prev = o->next = NULL;
	l->n--;
	l->bytes -= o->size;
}

static void list_add_tail(struct rt_list *l, struct rt_obj *o)
{
	o->next = NULL;
	o->prev = l->tail;
	if (l->tail)
		l->tail->next = o;
	else
		l->head = o;
	l->tail = o;
	l->n++;
	l->bytes += o->size;
}

static struct rt_list *obj_list(struct rt_obj *o)
{
	return o->list == L_LRU ? &rt.lru : o->list == L_PINNED ? &rt.pinned : &rt.queue;
}

static void obj_move(struct rt_obj *o, uint8_t to)
{
	list_del(obj_list(o), o);
	o->list = to;
	list_add_tail(obj_list(o), o);
}

/* ---------------------------------------------------------------- hashes */

static size_t hash_obj(uint32_t otid, uint32_t oto)
{
	uint64_t k = ((uint64_t)otid << 32 | oto) * 0x9e3779b97f4a7c15ull;

	return (size_t)(k >> 20) & rt.hmask;
}

static size_t hash_page(uintptr_t page)
{
	uint64_t k = (uint64_t)(page >> 12) * 0x9e3779b97f4a7c15ull;

	return (size_t)(k >> 20) & rt.hmask;
}

static struct rt_obj *obj_find(uint32_t otid, uint32_t oto)
{
	struct rt_obj *o;

	for (o = rt.ohash[hash_obj(otid, oto)]; o; o = o->hnext)
		if (o->otid == otid && o->oto == oto)
			return o;
	return NULL;
}

static struct rt_view *view_find(uintptr_t page)
{
	struct rt_view *v;

	for (v = rt.vhash[hash_page(page)]; v; v = v->hnext)
		if (v->page == page)
			return v;
	return NULL;
}

static uint64_t obj_cost(uint32_t size)
{
	return sizeof(struct rt_obj) + size + MALLOC_OVERHEAD;
}

static struct rt_view *view_new(uintptr_t page, struct rt_obj *o, uint32_t off, uint32_t len)
{
	struct rt_view *v = calloc(1, sizeof(*v));
	size_t h = hash_page(page);

	if (!v)
		return NULL;
	v->page = page;
	v->obj = o;
	v->off = off;
	v->len = len;
	v->hnext = rt.vhash[h];
	rt.vhash[h] = v;
	v->onext = o->views;
	o->views = v;
	rt.used += sizeof(*v) + MALLOC_OVERHEAD;
	return v;
}

/* unhashed and unlinked from its object; not materialized */
static void view_free(struct rt_view *v)
{
	struct rt_view **pp;

	for (pp = &rt.vhash[hash_page(v->page)]; *pp != v; pp = &(*pp)->hnext)
		;
	*pp = v->hnext;
	for (pp = &v->obj->views; *pp != v; pp = &(*pp)->onext)
		;
	*pp = v->onext;
	rt.used -= sizeof(*v) + MALLOC_OVERHEAD;
	free(v);
}

/* leaves RAM, nothing written; unpinned */
static void obj_free(struct rt_obj *o)
{
	struct rt_obj **pp;

	while (o->views)
		view_free(o->views);
	for (pp = &rt.ohash[hash_obj(o->otid, o->oto)]; *pp != o; pp = &(*pp)->hnext)
		;
	*pp = o->hnext;
	list_del(obj_list(o), o);
	rt.used -= obj_cost(o->size);
	free(o);
}

/* ------------------------------------------------------------- mechanism */

static struct rt_range *range_find(uintptr_t a)
{
	unsigned int i;

	for (i = 0; i < rt.nranges; i++)
		if (a >= rt.ranges[i].base && a - rt.ranges[i].base < rt.ranges[i].len)
			return &rt.ranges[i];
	return NULL;
}

/* the runtime's own view of a page: itself (uffd) or its alias (fallback) */
static uint8_t *page_bytes(uintptr_t page)
{
	struct rt_range *r;

	if (rt.uffd_mode)
		return (uint8_t *)page;
	r = range_find(page);
	return r->alias + (page - r->base);
}

static void uffd_wake(uintptr_t page)
{
	struct uffdio_range r = { .start = page, .len = SSD_PAGE };

	if (ioctl(rt.uffd, UFFDIO_WAKE, &r) < 0 && errno != ENOENT)
		rt_say("ssdalloc: UFFDIO_WAKE %#lx: %s\n", (unsigned long)page, strerror(errno));
}

static int uffd_wp(uintptr_t page, bool wp)
{
	struct uffdio_writeprotect w = {
		.range = { .start = page, .len = SSD_PAGE },
		.mode = wp ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	while (ioctl(rt.uffd, UFFDIO_WRITEPROTECT, &w) < 0) {
		if (errno == EAGAIN)
			continue;
		rt_say("ssdalloc: UFFDIO_WRITEPROTECT %#lx: %s\n", (unsigned long)page,
		       strerror(errno));
		return -1;
	}
	return 0;
}

/* the page becomes visible with the bounce buffer's bytes */
static int mech_install(uintptr_t page, bool writable)
{
	if (rt.uffd_mode) {
		struct uffdio_copy c = {
			.dst = page, .src = (uintptr_t)rt.bounce, .len = SSD_PAGE,
			.mode = writable ? 0 : UFFDIO_COPY_MODE_WP,
		};
		bool zapped = false;

		while (ioctl(rt.uffd, UFFDIO_COPY, &c) < 0) {
			if (errno == EAGAIN) {	/* the mm changed under us: again */
				c.copy = 0;
				continue;
			}
			if (errno == EEXIST && !zapped) {
				/*
				 * A page is there that we did not install: our
				 * state is the truth, so replace it.
				 */
				madvise((void *)page, SSD_PAGE, MADV_DONTNEED);
				zapped = true;
				c.copy = 0;
				continue;
			}
			if (errno == EEXIST || errno == ENOENT) {
				/* already there / range gone: let the thread retry */
				uffd_wake(page);
				return 0;
			}
			rt_say("ssdalloc: UFFDIO_COPY %#lx: %s\n", (unsigned long)page,
			       strerror(errno));
			return -1;
		}
		return 0;
	}
	memcpy(page_bytes(page), rt.bounce, SSD_PAGE);
	return mprotect((void *)page, SSD_PAGE, writable ? PROT_READ | PROT_WRITE : PROT_READ);
}

static int mech_protect(uintptr_t page, bool wp)
{
	if (rt.uffd_mode)
		return uffd_wp(page, wp);
	return mprotect((void *)page, SSD_PAGE, wp ? PROT_READ : PROT_READ | PROT_WRITE);
}

static void mech_remove(uintptr_t page)
{
	struct rt_range *r;

	if (rt.uffd_mode) {
		madvise((void *)page, SSD_PAGE, MADV_DONTNEED);
		return;
	}
	/* inaccessible first, so nobody reads the hole as zeros */
	mprotect((void *)page, SSD_PAGE, PROT_NONE);
	r = range_find(page);
	fallocate(r->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)(page - r->base), SSD_PAGE);
}

/* ---------------------------------------------------------- Page Buffer */

static void obj_pin(struct rt_obj *o)
{
	if (o->pins++ == 0)
		obj_move(o, L_PINNED);
}

static void obj_unpin(struct rt_obj *o)
{
	if (--o->pins == 0)
		obj_move(o, L_LRU);	/* most recently used */
}

static void fifo_del(struct rt_view *v)
{
	if (v->fprev)
		v->fprev->fnext = v->fnext;
	else
		rt.fifo_head = v->fnext;
	if (v->fnext)
		v->fnext->fprev = v->fprev;
	else
		rt.fifo_tail = v->fprev;
	v->fprev = v->fnext = NULL;
	rt.pb_n--;
}

/* copy a dirty page's slice into its object; the page stays, write-protected */
static void view_writeback(struct rt_view *v)
{
	bool wp;

	if (!v->dirty)
		return;
	/*
	 * Step 1 of the argument at the top. If the protection cannot be set (the
	 * fallback's mprotect out of mappings) the page may still be writable: its
	 * bytes are copied anyway, but it stays dirty so that later writes are
	 * copied again, not lost.
	 */
	wp = mech_protect(v->page, true) == 0;
	memcpy(v->obj->data + v->off, page_bytes(v->page), v->len);
	v->obj->dirty = true;
	v->dirty = !wp;
}

static void demat(struct rt_view *v, bool keep)
{
	if (keep)
		view_writeback(v);
	mech_remove(v->page);
	fifo_del(v);
	v->mat = false;
	v->dirty = false;
	obj_unpin(v->obj);
	rt.st.dematerializations++;
}

/* --------------------------------------------------------- the SSD writer */

/*
 * The store refused a write (errno says why). ENOSPC: the runtime is full until
 * something of meaningful size is freed or a flush succeeds; meanwhile evictions
 * do not ask the store again (each refusal costs the store a cleaner pass over
 * the log). errno is kept.
 */
static void write_refused(void)
{
	if (errno == ENOSPC && !rt.full) {
		rt.full = true;
		rt.freed = 0;
	}
}

/* objects were freed (bytes of them): enough of it and the store may take writes again */
static void rt_freed(uint64_t bytes)
{
	if (!rt.full)
		return;
	rt.freed += bytes;
	if (rt.freed >= SSD_LOG_BLOCK)
		rt.full = false;	/* the next eviction tries the store again */
}

bool ssd_rt_full(void)
{
	bool full;

	if (rt_child)
		return false;
	pthread_mutex_lock(&rt_lock);
	full = rt.inited && rt.full;
	pthread_mutex_unlock(&rt_lock);
	return full;
}

/* writes queued objects (all, or one batch) and frees them */
static int writer_flush(bool all)
{
	do {
		struct rt_obj *o = rt.queue.head;
		uint64_t bytes = 0;
		unsigned int n = 0, i;

		if (!o)
			return 0;
		for (; o && n < WRITER_BATCH_COUNT && bytes < rt.batch_bytes; o = o->next) {
			rt.wbatch[n++] = (struct ssd_obj){ o->otid, o->oto, o->size, o->data };
			bytes += o->size;
		}
		if (ssd_obj_write(rt.store, rt.wbatch, n) < 0) {
			write_refused();
			return -1;
		}
		rt.full = false;
		for (i = 0; i < n; i++)
			obj_free(rt.queue.head);
	} while (all);
	return 0;
}

static void writer_failed(void)
{
	if (!rt.warned) {
		rt.warned = true;
		rt_say("ssdalloc: writing evicted objects failed (%s): keeping them in RAM\n",
		       strerror(errno));
	}
}

/* evict until the cache and the queue fit the budget (pinned objects stay) */
static void cache_make_room(void)
{
	while (rt.used > rt.budget) {
		struct rt_obj *o = rt.lru.head;

		if (o && !o->dirty) {
			obj_free(o);
			rt.st.ram_evictions_clean++;
			continue;
		}
		if (o) {
			obj_move(o, L_QUEUE);
			rt.st.ram_evictions_dirty++;
			/* full: queue every dirty object, free every clean one */
			if ((rt.queue.bytes < rt.batch_bytes && rt.queue.n < WRITER_BATCH_COUNT) ||
			    rt.full)
				continue;
		}
		if (!rt.queue.head)
			break;		/* only pinned objects left */
		if (rt.full)
			break;		/* over budget until a free or a flush: see the top */
		if (writer_flush(false) < 0) {
			writer_failed();
			break;
		}
	}
}

/* ------------------------------------------------------------ the faults */

static bool where_ok(const struct ssd_where *w)
{
	uint32_t cap = w->cap > w->obj_size ? w->cap : w->obj_size;

	return w->obj_size && cap <= OBJ_MAX && w->len <= SSD_PAGE &&
	       w->off <= w->obj_size && w->len <= w->obj_size - w->off;
}

/* the object in RAM: cached, queued (back to the cache) or read from the store */
static struct rt_obj *obj_get(const struct ssd_where *w)
{
	struct rt_obj *o = obj_find(w->otid, w->oto);
	uint32_t cap, got;
	size_t h;

	if (o && o->size != w->obj_size) {
		/* heap.c reused the slot with another size: the old copy is stale */
		if (o->pins) {
			ssd_err(EINVAL, "object <%u,%u> cached with size %u, now %u", w->otid,
				w->oto, o->size, w->obj_size);
			return NULL;
		}
		obj_free(o);
		o = NULL;
	}
	if (o) {
		if (o->list != L_PINNED)	/* queued: back in the cache, still dirty */
			obj_move(o, L_LRU);
		rt.st.ram_hits++;
		return o;
	}
	cap = w->cap > w->obj_size ? w->cap : w->obj_size;
	if (ssd_obj_read(rt.store, w->otid, w->oto, rt.scratch, cap, &got) < 0)
		return NULL;
	if (got > w->obj_size) {
		ssd_err(EBADMSG, "object <%u,%u>: store holds %u bytes, expected %u", w->otid,
			w->oto, got, w->obj_size);
		return NULL;
	}
	o = malloc(sizeof(*o) + w->obj_size);
	if (!o) {
		ssd_err(ENOMEM, "no memory for a cached object");
		return NULL;
	}
	memset(o, 0, sizeof(*o));
	o->otid = w->otid;
	o->oto = w->oto;
	o->size = w->obj_size;
	memcpy(o->data, rt.scratch, got);
	memset(o->data + got, 0, w->obj_size - got);
	h = hash_obj(o->otid, o->oto);
	o->hnext = rt.ohash[h];
	rt.ohash[h] = o;
	o->list = L_LRU;
	list_add_tail(&rt.lru, o);
	rt.used += obj_cost(o->size);
	rt.st.ram_misses++;
	return o;
}

static int materialize(struct rt_view *v, bool write)
{
	struct rt_obj *o = v->obj;

	obj_pin(o);		/* before making room: it must not be evicted */
	while (rt.pb_n >= rt.pb_cap)
		demat(rt.fifo_head, true);
	memcpy(rt.bounce, o->data + v->off, v->len);
	memset(rt.bounce + v->len, 0, SSD_PAGE - v->len);
	if (mech_install(v->page, write) < 0) {
		obj_unpin(o);
		return ssd_err(EFAULT, "cannot install page %#lx", (unsigned long)v->page);
	}
	v->mat = true;
	v->dirty = write;
	v->fnext = NULL;
	v->fprev = rt.fifo_tail;
	if (rt.fifo_tail)
		rt.fifo_tail->fnext = v;
	else
		rt.fifo_head = v;
	rt.fifo_tail = v;
	rt.pb_n++;
	rt.st.materializations++;
	cache_make_room();
	return 0;
}

/*
 * One fault on page, from the uffd thread or the SIGSEGV handler; called and
 * returns without rt_lock. The ATM is asked with rt_lock released (lock order:
 * heap_lock before rt_lock); a drop meanwhile bumps rt.gen and the answer is
 * asked again.
 */
static int rt_fault(uintptr_t page, bool write)
{
	struct ssd_where w;
	bool have_w = false;
	uint64_t gen = 0;
	int ret = F_DONE;

	pthread_mutex_lock(&rt_lock);
	if (write)
		rt.st.faults_write++;
	else
		rt.st.faults_read++;
	for (;;) {
		struct rt_view *v = view_find(page);

		if (v && v->mat) {
			/* a write-protect fault, or a stale/duplicate message */
			if (write && !v->dirty) {
				v->dirty = true;	/* before the page can change */
				if (mech_protect(page, false) < 0)
					ret = F_ERR;	/* uffd: also wakes */
			} else if (rt.uffd_mode) {
				uffd_wake(page);
			}
			break;
		}
		if (v) {
			rt.st.ram_hits++;	/* its object is in RAM */
		} else {
			struct rt_obj *o;

			if (!have_w || gen != rt.gen) {
				int r;

				gen = rt.gen;
				pthread_mutex_unlock(&rt_lock);
				r = ssd_atm_lookup(page, &w);
				pthread_mutex_lock(&rt_lock);
				if (r < 0) {
					if (gen != rt.gen)
						continue;
					ret = F_WILD;
					break;
				}
				if (!where_ok(&w)) {
					ssd_err(EINVAL, "bad ATM answer for %#lx", (unsigned long)page);
					ret = F_ERR;
					break;
				}
				have_w = true;
				continue;	/* the state may have changed meanwhile */
			}
			o = obj_get(&w);
			if (!o) {
				ret = F_ERR;
				break;
			}
			v = view_new(page, o, w.off, w.len);
			if (!v) {
				ssd_err(ENOMEM, "no memory for a page view");
				cache_make_room();
				ret = F_ERR;
				break;
			}
		}
		if (materialize(v, write) < 0)
			ret = F_ERR;
		break;
	}
	if (ret == F_ERR)
		rt_say("ssdalloc: %s access to %#lx cannot complete: %s: SIGBUS\n",
		       write ? "write" : "read", (unsigned long)page, ssd_strerror());
	else if (ret == F_WILD)
		rt_say("ssdalloc: %s access to %#lx: not allocated (freed or never handed out): "
		       "SIGSEGV\n", write ? "write" : "read", (unsigned long)page);
	pthread_mutex_unlock(&rt_lock);
	return ret;
}

static void *rt_thread(void *arg)
{
	struct pollfd pfd[2] = {
		{ .fd = rt.uffd, .events = POLLIN },
		{ .fd = rt.evfd, .events = POLLIN },
	};
	struct uffd_msg msgs[16];

	(void)arg;
	for (;;) {
		ssize_t n;
		int i;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			rt_say("ssdalloc: fault thread: poll: %s\n", strerror(errno));
			abort();
		}
		if (pfd[1].revents)
			break;
		n = read(rt.uffd, msgs, sizeof(msgs));
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			rt_say("ssdalloc: fault thread: read: %s\n", strerror(errno));
			abort();
		}
		for (i = 0; i < n / (ssize_t)sizeof(msgs[0]); i++) {
			uint64_t fl = msgs[i].arg.pagefault.flags;
			uintptr_t page;
			int r;

			if (msgs[i].event != UFFD_EVENT_PAGEFAULT)
				continue;
			page = (uintptr_t)msgs[i].arg.pagefault.address & ~PAGE_MASK;
			r = rt_fault(page, fl & (UFFD_PAGEFAULT_FLAG_WRITE | UFFD_PAGEFAULT_FLAG_WP));
			if (r == F_WILD)
				rt_die(SIGSEGV);
			if (r == F_ERR)
				rt_die(SIGBUS);
		}
	}
	return NULL;
}

static void rt_segv(int sig, siginfo_t *si, void *uctx)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	int saved = errno, r;
	bool ours = false, write = true;

	/*
	 * A child (fork, or a clone that ran no atfork handler): the ranges and the
	 * state are the parent's, the child's copy of rt_lock may be held. Never ours:
	 * treating the fault as ours would find the parent's materialized page and
	 * return to the same fault forever.
	 */
	if (!rt_child && getpid() == rt.owner) {
		pthread_mutex_lock(&rt_lock);
		ours = rt.inited && !rt.uffd_mode && range_find(a);
		pthread_mutex_unlock(&rt_lock);
	}
	if (!ours) {
		/* not ours: as if we were not there */
		if (rt.old_segv.sa_flags & SA_SIGINFO) {
			rt.old_segv.sa_sigaction(sig, si, uctx);
		} else if (rt.old_segv.sa_handler != SIG_DFL &&
			   rt.old_segv.sa_handler != SIG_IGN) {
			rt.old_segv.sa_handler(sig);
		} else {
			/* default: returning re-faults and the kernel kills us */
			struct sigaction sa;

			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = SIG_DFL;
			sigaction(SIGSEGV, &sa, NULL);
		}
		errno = saved;
		return;
	}
#if defined(__x86_64__)
	write = (((ucontext_t *)uctx)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#elif defined(__i386__)
	write = (((ucontext_t *)uctx)->uc_mcontext.gregs[REG_ERR] & 2) != 0;
#endif
	r = rt_fault(a & ~PAGE_MASK, write);
	if (r == F_WILD)
		rt_die(SIGSEGV);
	if (r == F_ERR)
		rt_die(SIGBUS);
	errno = saved;
}

/* ------------------------------------------------------------------- API */

/*
 * fork(): the child gets no reserved range (MADV_DONTFORK), no fault thread, and
 * shares the memfds, the uffd and the eventfd with the parent, so nothing of the
 * runtime is usable there, and some of it would harm the parent (a hole punched
 * in a shared memfd, the fault thread told to stop). In a child every entry
 * point fails (EPERM) or does nothing. rt_lock is held across fork() so that
 * the child's copy of the state is consistent and its copy of the lock free
 * (the child never takes it today; the SIGSEGV handler checks the pid first).
 */
static void rt_fork_prepare(void)
{
	pthread_mutex_lock(&rt_lock);
}

static void rt_fork_parent(void)
{
	pthread_mutex_unlock(&rt_lock);
}

static void rt_fork_child(void)
{
	if (rt.inited) {
		rt_child = true;
		/* the program's own SIGSEGV disposition: accesses there are plain faults */
		if (!rt.uffd_mode)
			sigaction(SIGSEGV, &rt.old_segv, NULL);
	}
	pthread_mutex_unlock(&rt_lock);
}

static void rt_atfork(void)
{
	pthread_atfork(rt_fork_prepare, rt_fork_parent, rt_fork_child);
}

bool ssd_rt_forked(void)
{
	return rt_child;
}

static int child_err(void)
{
	return ssd_err(EPERM, "SSDAlloc memory belongs to the parent process (fork)");
}

/* is userfaultfd with write-protect there? the uffd, or -1 with a reason */
static int uffd_open(const char **why)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP };
	struct uffdio_register reg;
	void *probe;
	int fd;

	fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == EPERM) {
		/*
		 * vm.unprivileged_userfaultfd = 0: /dev/userfaultfd if its mode lets
		 * us, else faults from user mode only (a system call reading or
		 * writing SSDAlloc memory then fails with EFAULT instead of waiting).
		 */
		int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);

		if (dev >= 0) {
			fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
			close(dev);
		}
		if (fd < 0)
			fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
		if (fd < 0)
			errno = EPERM;
	}
	if (fd < 0) {
		*why = strerror(errno);
		return -1;
	}
	if (ioctl(fd, UFFDIO_API, &api) < 0 ||
	    !(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP)) {
		*why = "no write-protect support";
		close(fd);
		return -1;
	}
	/* anonymous write-protect exists since 5.7: try it */
	probe = mmap(NULL, SSD_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (probe == MAP_FAILED) {
		*why = strerror(errno);
		close(fd);
		return -1;
	}
	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)probe;
	reg.range.len = SSD_PAGE;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP;
	if (ioctl(fd, UFFDIO_REGISTER, &reg) < 0 ||
	    !(reg.ioctls & (1ull << _UFFDIO_WRITEPROTECT)) ||
	    !(reg.ioctls & (1ull << _UFFDIO_COPY))) {
		*why = "write-protect of anonymous memory refused";
		munmap(probe, SSD_PAGE);
		close(fd);
		return -1;
	}
	munmap(probe, SSD_PAGE);
	return fd;
}

/*
 * The mprotect fallback: each materialized page can be a mapping (VMA) of its own
 * (it differs in protection from its neighbours), and the kernel refuses more than
 * vm.max_map_count of them (mprotect fails with ENOMEM: the page cannot be
 * installed or protected). The Page Buffer gets at most (max - 1000) / 2 pages:
 * n pages apart are 2n + 1 mappings, and the program keeps 1000 for its own.
 * 0: no limit known.
 */
static uint64_t fallback_pb_max(void)
{
	char buf[32];
	ssize_t n;
	long long max;
	int fd = open("/proc/sys/vm/max_map_count", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	max = atoll(buf);
	if (max <= 0)
		return 0;
	return max > 1000 + 2 * 16 ? (uint64_t)(max - 1000) / 2 : 16;
}

static void rt_free_all(void)
{
	free(rt.ohash);
	free(rt.vhash);
	free(rt.bounce);
	free(rt.scratch);
	free(rt.wbatch);
	free(rt.ranges);
	if (rt.evfd >= 0)
		close(rt.evfd);
	if (rt.uffd >= 0)
		close(rt.uffd);
	memset(&rt, 0, sizeof(rt));
	rt.uffd = rt.evfd = -1;
}

int ssd_rt_init(struct ssd_store *s, uint64_t ram_bytes, uint64_t page_buffer_bytes,
		bool no_uffd, bool quiet)
{
	const char *why = "disabled (no_uffd)";
	uint64_t cache, nb = 256, tables;
	int err;

	if (rt_child)
		return child_err();
	pthread_once(&rt_atfork_once, rt_atfork);
	pthread_mutex_lock(&rt_lock);
	if (rt.inited) {
		pthread_mutex_unlock(&rt_lock);
		return ssd_err(EBUSY, "the runtime is already initialized");
	}
	if (page_buffer_bytes < SSD_PAGE || ram_bytes <= page_buffer_bytes) {
		pthread_mutex_unlock(&rt_lock);
		return ssd_err(EINVAL, "RAM budget %llu must exceed the Page Buffer %llu (>= 4 KiB)",
			       (unsigned long long)ram_bytes,
			       (unsigned long long)page_buffer_bytes);
	}
	memset(&rt, 0, sizeof(rt));
	rt.uffd = rt.evfd = -1;
	rt.store = s;
	rt.quiet = quiet;
	rt.pb_cap = page_buffer_bytes / SSD_PAGE;
	if (page_buffer_bytes / SSD_PAGE > UINT32_MAX)
		rt.pb_cap = UINT32_MAX;
	if (!no_uffd)
		rt.uffd = uffd_open(&why);
	if (rt.uffd < 0) {
		uint64_t max = fallback_pb_max();

		if (max && rt.pb_cap > max) {
			if (!quiet)
				rt_say("ssdalloc: mprotect fallback: Page Buffer clamped from %u "
				       "to %llu pages (vm.max_map_count: each materialized page "
				       "may be a mapping of its own)\n", rt.pb_cap,
				       (unsigned long long)max);
			rt.pb_cap = max;
		}
	}
	/* a clamped Page Buffer leaves its RAM to the cache */
	cache = ram_bytes - (uint64_t)rt.pb_cap * SSD_PAGE;
	while (nb < cache / 512 && nb < (1ull << 30))
		nb <<= 1;
	/* the tables are RAM too: they come out of the cache's share */
	tables = nb * (sizeof(void *) * 2) + OBJ_MAX + SSD_PAGE +
		 WRITER_BATCH_COUNT * sizeof(struct ssd_obj);
	if (cache < tables + 2 * obj_cost(SSD_PAGE)) {
		rt_free_all();
		pthread_mutex_unlock(&rt_lock);
		return ssd_err(EINVAL, "RAM budget %llu too small for a Page Buffer of %llu",
			       (unsigned long long)ram_bytes,
			       (unsigned long long)page_buffer_bytes);
	}
	rt.budget = cache - tables;
	/* a small cache would empty itself into one batch: at most a quarter of it */
	rt.batch_bytes = rt.budget / 4 < WRITER_BATCH_BYTES ? rt.budget / 4 : WRITER_BATCH_BYTES;
	rt.hmask = nb - 1;
	rt.ohash = calloc(nb, sizeof(*rt.ohash));
	rt.vhash = calloc(nb, sizeof(*rt.vhash));
	rt.bounce = aligned_alloc(SSD_PAGE, SSD_PAGE);
	rt.scratch = aligned_alloc(SSD_PAGE, OBJ_MAX);
	rt.wbatch = calloc(WRITER_BATCH_COUNT, sizeof(*rt.wbatch));
	if (!rt.ohash || !rt.vhash || !rt.bounce || !rt.scratch || !rt.wbatch) {
		rt_free_all();
		pthread_mutex_unlock(&rt_lock);
		return ssd_err(ENOMEM, "no memory for the runtime's tables");
	}
	if (rt.uffd >= 0) {
		sigset_t all, old;

		rt.uffd_mode = true;
		rt.evfd = eventfd(0, EFD_CLOEXEC);
		if (rt.evfd < 0) {
			err = errno;
			rt_free_all();
			pthread_mutex_unlock(&rt_lock);
			return ssd_err(err, "eventfd: %s", strerror(err));
		}
		/* the fault thread takes no signals: they are the program's */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		err = pthread_create(&rt.thr, NULL, rt_thread, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (err) {
			rt_free_all();
			pthread_mutex_unlock(&rt_lock);
			return ssd_err(err, "cannot start the fault thread: %s", strerror(err));
		}
		if (!quiet)
			rt_say("ssdalloc: page faults through userfaultfd\n");
	} else {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = rt_segv;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGSEGV, &sa, &rt.old_segv) < 0) {
			err = errno;
			rt_free_all();
			pthread_mutex_unlock(&rt_lock);
			return ssd_err(err, "sigaction: %s", strerror(err));
		}
		if (!quiet)
			rt_say("ssdalloc: userfaultfd refused (%s): falling back to mprotect + "
			       "SIGSEGV\n", why);
	}
	rt.st.uffd = rt.uffd_mode;
	rt.owner = getpid();
	rt.inited = true;
	pthread_mutex_unlock(&rt_lock);
	return 0;
}

/*
 * Where ranges go. A checkpoint names the addresses of its Object Tables' ranges
 * and ssd_restore() maps them again in a new process, where anything may already
 * sit at an address the kernel picked for us last time (a thread stack, a
 * library, a sanitizer's allocator: restores failed with "in use" under ASan).
 * So ranges are placed by us, upward from RT_VA_BASE (48 TiB: above ASan's
 * shadow, far below the kernel's top-down mmap area and ASan's allocator at 96
 * TiB), with MAP_FIXED_NOREPLACE: a fresh process has nothing there, and a
 * restored range moves the cursor past itself. Taken places are skipped; if the
 * region is crowded the kernel picks.
 */
#define RT_VA_BASE	((uintptr_t)0x300000000000ull)
#define RT_VA_TOP	((uintptr_t)0x580000000000ull)
#define RT_VA_ALIGN	((uintptr_t)2 << 20)

static uintptr_t va_up(uintptr_t a)
{
	return (a + RT_VA_ALIGN - 1) & ~(RT_VA_ALIGN - 1);
}

/* mmap at addr exactly (restore), or at our next free place; rt_lock held */
static void *rt_map(void *addr, size_t len, int prot, int flags, int fd)
{
	uintptr_t hint = va_up(rt.va_next ? rt.va_next : RT_VA_BASE);
	void *p;

	if (addr) {
		p = mmap(addr, len, prot, flags | MAP_FIXED_NOREPLACE, fd, 0);
		if (p != MAP_FAILED && p != addr) {	/* a kernel without NOREPLACE */
			munmap(p, len);
			errno = EEXIST;
			return MAP_FAILED;
		}
		if (p != MAP_FAILED && (uintptr_t)p + len > rt.va_next)
			rt.va_next = (uintptr_t)p + len;
		return p;
	}
	for (int tries = 0; tries < 64 && hint + len <= RT_VA_TOP; tries++) {
		p = mmap((void *)hint, len, prot, flags | MAP_FIXED_NOREPLACE, fd, 0);
		if (p == (void *)hint) {
			rt.va_next = hint + len;
			return p;
		}
		if (p != MAP_FAILED) {
			munmap(p, len);
			break;
		}
		if (errno != EEXIST)
			break;
		/* taken: try past it, a step that grows so a crowded region is left fast */
		hint = va_up(hint + len + ((uintptr_t)1 << (30 + tries / 8)));
	}
	return mmap(NULL, len, prot, flags, fd, 0);
}

void *ssd_rt_reserve(void *addr, size_t len)
{
	int err, fd = -1;
	struct rt_range *nr;
	uint8_t *p, *alias = NULL;

	len = (len + PAGE_MASK) & ~PAGE_MASK;
	if (!len || ((uintptr_t)addr & PAGE_MASK)) {
		ssd_err(EINVAL, "reserve: bad range %p + %zu", addr, len);
		return NULL;
	}
	if (rt_child) {
		child_err();
		return NULL;
	}
	pthread_mutex_lock(&rt_lock);
	if (!rt.inited) {
		pthread_mutex_unlock(&rt_lock);
		ssd_err(EINVAL, "the runtime is not initialized");
		return NULL;
	}
	if (rt.nranges == rt.cranges) {
		unsigned int c = rt.cranges ? rt.cranges * 2 : 16;

		nr = realloc(rt.ranges, c * sizeof(*nr));
		if (!nr) {
			pthread_mutex_unlock(&rt_lock);
			ssd_err(ENOMEM, "reserve: no memory");
			return NULL;
		}
		rt.ranges = nr;
		rt.cranges = c;
	}
	if (rt.uffd_mode) {
		struct uffdio_register reg;

		p = rt_map(addr, len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1);
		if (p == MAP_FAILED)
			goto fail_map;
		/* every page is ours to fill one at a time */
		madvise(p, len, MADV_NOHUGEPAGE);
		/* a child has no fault thread for it: it does not get the range */
		madvise(p, len, MADV_DONTFORK);
		memset(&reg, 0, sizeof(reg));
		reg.range.start = (uintptr_t)p;
		reg.range.len = len;
		reg.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP;
		if (ioctl(rt.uffd, UFFDIO_REGISTER, &reg) < 0) {
			err = errno;
			munmap(p, len);
			pthread_mutex_unlock(&rt_lock);
			ssd_err(err, "UFFDIO_REGISTER %p + %zu: %s", p, len, strerror(err));
			return NULL;
		}
	} else {
		fd = memfd_create("ssdalloc", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, len) < 0)
			goto fail_map;
		p = rt_map(addr, len, PROT_NONE, MAP_SHARED | MAP_NORESERVE, fd);
		if (p == MAP_FAILED)
			goto fail_map;
		alias = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
		if (alias == MAP_FAILED) {
			err = errno;
			munmap(p, len);
			errno = err;
			goto fail_map;
		}
		/* shared memory: a child would share it with us, not copy it */
		madvise(p, len, MADV_DONTFORK);
		madvise(alias, len, MADV_DONTFORK);
	}
	if (addr && p != addr) {	/* a kernel older than MAP_FIXED_NOREPLACE */
		munmap(p, len);
		if (alias)
			munmap(alias, len);
		if (fd >= 0)
			close(fd);
		pthread_mutex_unlock(&rt_lock);
		ssd_err(EEXIST, "reserve: %p + %zu is taken", addr, len);
		return NULL;
	}
	rt.ranges[rt.nranges++] = (struct rt_range){ (uintptr_t)p, len, fd, alias };
	pthread_mutex_unlock(&rt_lock);
	return p;

fail_map:
	err = errno;
	if (fd >= 0)
		close(fd);
	pthread_mutex_unlock(&rt_lock);
	ssd_err(err, "reserve %p + %zu: %s", addr, len, strerror(err));
	return NULL;
}

static void drop_view(struct rt_view *v)
{
	struct rt_obj *o = v->obj;
	bool whole = v->off == 0 && v->len == o->size;

	if (v->mat)
		demat(v, false);
	if (whole && !o->pins) {
		obj_free(o);	/* other views (none expected) go with it */
		return;
	}
	/* a member of a batch: the others are live; this slice reads as zeros */
	memset(o->data + v->off, 0, v->len);
	view_free(v);
}

static void drop_locked(uintptr_t start, size_t len)
{
	uintptr_t end = start + len, a;

	rt.gen++;
	if (len / SSD_PAGE > rt.hmask) {
		/* a big range: walk the table instead of the pages */
		size_t b;

		for (b = 0; b <= rt.hmask; b++) {
			struct rt_view *v = rt.vhash[b], *next;

			for (; v; v = next) {
				next = v->hnext;
				if (v->page >= start && v->page < end) {
					/* drop_view may free next (same object) */
					drop_view(v);
					next = rt.vhash[b];
				}
			}
		}
		return;
	}
	for (a = start; a < end; a += SSD_PAGE) {
		struct rt_view *v = view_find(a);

		if (v)
			drop_view(v);
	}
}

void ssd_rt_drop(void *addr, size_t len)
{
	uintptr_t start = (uintptr_t)addr & ~PAGE_MASK;

	len = ((uintptr_t)addr + len + PAGE_MASK - start) & ~PAGE_MASK;
	if (rt_child)
		return;
	pthread_mutex_lock(&rt_lock);
	if (rt.inited) {
		drop_locked(start, len);
		rt_freed(len);	/* heap.c discards their store objects */
	}
	pthread_mutex_unlock(&rt_lock);
}

void ssd_rt_forget(uint32_t otid, uint32_t oto)
{
	struct rt_obj *o;

	if (rt_child)
		return;
	pthread_mutex_lock(&rt_lock);
	if (!rt.inited) {
		pthread_mutex_unlock(&rt_lock);
		return;
	}
	o = obj_find(otid, oto);
	/* its size if cached; else at least a sector of the log */
	rt_freed(o ? o->size : SSD_SECTOR);
	if (o) {
		struct rt_view *v;

		rt.gen++;
		for (v = o->views; v; v = v->onext)
			if (v->mat)
				demat(v, false);
		obj_free(o);
	}
	pthread_mutex_unlock(&rt_lock);
}

void ssd_rt_unreserve(void *addr, size_t len)
{
	struct rt_range *r;

	len = (len + PAGE_MASK) & ~PAGE_MASK;
	if (rt_child)
		return;		/* the parent's (and not mapped here) */
	pthread_mutex_lock(&rt_lock);
	r = rt.inited ? range_find((uintptr_t)addr) : NULL;
	if (!r || r->base != (uintptr_t)addr || r->len != len) {
		pthread_mutex_unlock(&rt_lock);
		rt_say("ssdalloc: unreserve %p + %zu: not a reserved range\n", addr, len);
		return;
	}
	drop_locked(r->base, r->len);
	if (rt.uffd_mode) {
		struct uffdio_range ur = { .start = r->base, .len = r->len };

		ioctl(rt.uffd, UFFDIO_UNREGISTER, &ur);
	}
	munmap((void *)r->base, r->len);
	if (r->alias)
		munmap(r->alias, r->len);
	if (r->memfd >= 0)
		close(r->memfd);
	*r = rt.ranges[--rt.nranges];
	pthread_mutex_unlock(&rt_lock);
}

/* write the objects in batches; they become clean */
static int write_dirty(struct rt_list *l)
{
	struct rt_obj *o = l->head;

	while (o) {
		struct rt_obj *first = o;
		uint64_t bytes = 0;
		unsigned int n = 0;

		for (; o && n < WRITER_BATCH_COUNT && bytes < WRITER_BATCH_BYTES; o = o->next) {
			if (!o->dirty)
				continue;
			rt.wbatch[n++] = (struct ssd_obj){ o->otid, o->oto, o->size, o->data };
			bytes += o->size;
		}
		if (n && ssd_obj_write(rt.store, rt.wbatch, n) < 0) {
			write_refused();
			return -1;
		}
		for (; first != o; first = first->next)
			first->dirty = false;
	}
	return 0;
}

int ssd_rt_flush(void)
{
	struct rt_view *v;
	int ret = 0;

	if (rt_child)
		return child_err();
	pthread_mutex_lock(&rt_lock);
	if (!rt.inited)
		goto out;
	/* pages stay materialized, write-protected again: later writes are seen */
	for (v = rt.fifo_head; v; v = v->fnext)
		view_writeback(v);
	if (write_dirty(&rt.pinned) < 0 || write_dirty(&rt.lru) < 0 || writer_flush(true) < 0)
		ret = -1;	/* ssd_err set by the store; ENOSPC: full (write_refused) */
	else
		rt.full = false;
out:
	pthread_mutex_unlock(&rt_lock);
	return ret;
}

void ssd_rt_fini(void)
{
	struct rt_view *v;

	/* a child: the eventfd would stop the parent's fault thread, the memfds are shared */
	if (rt_child)
		return;
	pthread_mutex_lock(&rt_lock);
	if (!rt.inited) {
		pthread_mutex_unlock(&rt_lock);
		return;
	}
	pthread_mutex_unlock(&rt_lock);
	if (rt.uffd_mode) {
		uint64_t one = 1;

		if (write(rt.evfd, &one, sizeof(one)) != sizeof(one))
			abort();
		pthread_join(rt.thr, NULL);
	}
	pthread_mutex_lock(&rt_lock);
	while (rt.nranges) {
		struct rt_range *r = &rt.ranges[rt.nranges - 1];

		munmap((void *)r->base, r->len);
		if (r->alias)
			munmap(r->alias, r->len);
		if (r->memfd >= 0)
			close(r->memfd);
		rt.nranges--;
	}
	/* nothing is written: what is not flushed is gone */
	while ((v = rt.fifo_head)) {
		fifo_del(v);
		v->mat = false;
		obj_unpin(v->obj);
	}
	while (rt.lru.head)
		obj_free(rt.lru.head);
	while (rt.queue.head)
		obj_free(rt.queue.head);
	if (!rt.uffd_mode)
		sigaction(SIGSEGV, &rt.old_segv, NULL);
	rt_free_all();
	pthread_mutex_unlock(&rt_lock);
}

void ssd_rt_stats(struct ssd_stats *st)
{
	if (rt_child)
		return;
	pthread_mutex_lock(&rt_lock);
	st->faults_read += rt.st.faults_read;
	st->faults_write += rt.st.faults_write;
	st->materializations += rt.st.materializations;
	st->dematerializations += rt.st.dematerializations;
	st->ram_hits += rt.st.ram_hits;
	st->ram_misses += rt.st.ram_misses;
	st->ram_evictions_clean += rt.st.ram_evictions_clean;
	st->ram_evictions_dirty += rt.st.ram_evictions_dirty;
	st->ram_bytes += rt.used;
	st->uffd += rt.st.uffd;
	pthread_mutex_unlock(&rt_lock);
}
