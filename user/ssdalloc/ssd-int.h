/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SSDAlloc internals: the interfaces between the library's parts.
 *
 *   api.c      public entry points, configuration, init/shutdown, stats, the
 *              checkpoint file, errors (ssd_strerror)
 *   heap.c     the virtual memory side: the OPP pool allocator (size classes of
 *              512 B, pools of 128 objects doubling to 10,000 then +10,000, a
 *              free list for one Object Table per pool and bitmaps + free counts
 *              for the others), the coalescing allocator (best fit, coalescing,
 *              over reserved ranges of 10,000 pages) for MP and OPP arrays, and
 *              the ATM (VA range -> Object Table)
 *   runtime.c  pages: userfaultfd (missing + write-protect) or the mprotect +
 *              SIGSEGV fallback, the Page Buffer (FIFO), the RAM object cache
 *              (LRU, compact), the SSD writer (batches dirty evictions)
 *   store.c    flash: the log-structured object store (Object Tables, 512 B
 *              sector addressing, GC, the checkpoint region), I/O via liburing
 *   chunk.c    the netbook paper's chunk API over the store
 *
 * Lock order: api_lock (api.c: init, checkpoint, restore) -> heap_lock (heap.c)
 * -> rt_lock (runtime.c) -> store_lock (store.c). No lock is held while touching
 * memory that SSDAlloc manages (a fault there would wait for the fault thread,
 * which may need the lock): heap metadata lives outside managed memory, and
 * ssd_realloc copies with no lock held.
 */
#ifndef SSD_INT_H
#define SSD_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ssdalloc.h"

#define SSD_PAGE		4096u
#define SSD_SECTOR		512u
#define SSD_LOG_BLOCK		(128u << 10)	/* GC unit; free bytes counted per block */
#define SSD_BATCH_MIN		128u		/* small OPP objects batched to at least this */
#define SSD_POOL_FIRST		128u		/* a pool's first Object Table */
#define SSD_POOL_DOUBLE_MAX	10000u		/* doubles up to this, then grows by it */
#define SSD_COALESCE_STEP	10000u		/* pages reserved at a time */
#define SSD_CLASS_STEP		512u		/* pool size classes */

/* the library exports only what ssdalloc.h declares, each definition marked so */
#define SSD_API __attribute__((visibility("default")))

/* errors: set the calling thread's message, and errno; returns -1 */
int ssd_err(int errnum, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------- store.c */

/*
 * On the device, little-endian, every checksum CRC32C:
 *   block 0 (4 KiB): superblock (magic, version, uuid, sizes, region offsets)
 *   checkpoint region: two slots used in turn, each log_bytes / 32 + 1 MiB: a
 *     header (magic, generation, lengths, CRC over the slot) then the Object
 *     Tables and the heap's blob; restore takes the valid slot with the higher
 *     generation
 *   log: log_blocks blocks of 128 KiB, circular; each 512 B sector begins with 2
 *     bytes: the offset in that sector of the first object header starting there
 *     (0xffff: none); object header {otid, oto, size, crc} (16 B) then the bytes,
 *     the stream skipping each sector's first 2 bytes
 * An Object Table entry is the log sector number of the object's header + 1 (0:
 * never written, reads as zeros). A block that objects of the last checkpoint
 * live in is not rewritten until a checkpoint slot not naming them is durable
 * (the next checkpoint, or a relocation checkpoint after the cleaner moved them:
 * same state, new locations, generation + 1), so a crash loses only what was
 * written after the last checkpoint. Only durable tables (ssd_ot_set_durable)
 * are checkpointed.
 */
struct ssd_store;

struct ssd_obj {
	uint32_t otid, oto;
	uint32_t size;		/* payload bytes, <= SSD_LOG_BLOCK / 2 */
	const void *data;
};

int ssd_store_open(struct ssd_store **out, const char *path, uint64_t file_bytes,
		   bool format);	/* errors through ssd_err */
void ssd_store_close(struct ssd_store *s);
uint64_t ssd_store_log_bytes(const struct ssd_store *s);
/* the store's identity, for the checkpoint file: uuid and the last checkpoint's generation */
void ssd_store_id(const struct ssd_store *s, uint8_t uuid[16], uint64_t *ckpt_gen);
/* false when the device refused O_DIRECT (a file on tmpfs, say): buffered I/O + fdatasync */
bool ssd_store_direct_io(const struct ssd_store *s);

/* an Object Table of nobj entries, all "never written" */
int ssd_ot_create(struct ssd_store *s, uint32_t nobj, uint32_t *otid);
/* every object of the table becomes garbage; the otid may be reused */
void ssd_ot_destroy(struct ssd_store *s, uint32_t otid);
/* added (store.c): a table is volatile when created: it is not written to checkpoints
 * and does not pin log blocks; durable ones (heap.c's pools) are checkpointed and
 * restored. EINVAL: no such table, ENOMEM. Making a table of the last checkpoint
 * volatile (or destroying it) takes effect at the next checkpoint. */
int ssd_ot_set_durable(struct ssd_store *s, uint32_t otid, bool durable);

/*
 * Reads object <otid, oto> into buf (cap bytes, the caller's size class: the
 * read is rounded to it). *size: its size, 0 if never written (buf untouched).
 * Fails with EBADMSG if what the device holds there does not check (CRC,
 * back-pointer, bounds), EIO if the device fails.
 */
int ssd_obj_read(struct ssd_store *s, uint32_t otid, uint32_t oto, void *buf,
		 uint32_t cap, uint32_t *size);
/* appends the objects to the log (batched into 128 KiB writes); readable at once,
 * durable after ssd_store_sync; ENOSPC when live data would not fit */
int ssd_obj_write(struct ssd_store *s, const struct ssd_obj *objs, unsigned int n);
/* the object is freed: its bytes are garbage, the entry "never written" */
void ssd_obj_discard(struct ssd_store *s, uint32_t otid, uint32_t oto);
/* everything appended is on the device (written, device cache flushed) */
int ssd_store_sync(struct ssd_store *s);
/* sync, then write every durable Object Table and blob (the heap's state) to the
 * other slot; restore later returns the blob. (A2: the writer may also write
 * "relocation checkpoints" on its own: the same tables and blob, objects at new
 * locations, generation + 1; ssd_store_id then reports that generation.) */
int ssd_store_checkpoint(struct ssd_store *s, const void *blob, size_t len);
/* load the latest valid checkpoint: its Object Tables (same otids) and blob
 * (malloc'd, the caller frees); ENOENT if none */
int ssd_store_restore(struct ssd_store *s, void **blob, size_t *len);
/* adds ssd_*, objects_written, object_bytes_written, gc_*, ot_bytes, checkpoints */
void ssd_store_stats(struct ssd_store *s, struct ssd_stats *st);

/* ---------------------------------------------------------------- heap.c */

/* where a page's bytes live: a slice of one store object */
struct ssd_where {
	uint32_t otid, oto;	/* the store object */
	uint32_t obj_size;	/* the store object's size (a batch of small objects, a page) */
	uint32_t cap;		/* read rounding: the pool's size class */
	uint32_t off, len;	/* this page's bytes: obj[off, off + len) at the page's start */
	bool opp;		/* OPP (object at the page's start) or MP (a whole page) */
};

int ssd_heap_init(void);
void ssd_heap_fini(void);
/* ATM: the allocated object a page belongs to; -1 if the page is not allocated */
int ssd_atm_lookup(uintptr_t page, struct ssd_where *w);
void *ssd_heap_oalloc(uint32_t n, uint32_t size);
void *ssd_heap_malloc(size_t size);
/* usable size of an allocation, 0 if p was not handed out */
size_t ssd_heap_size(const void *p);
int ssd_heap_free(void *p);		/* EINVAL: not ours or already free */
/* the pool allocator's state, for a checkpoint (malloc'd) and back */
int ssd_heap_save(void **blob, size_t *len);
int ssd_heap_load(const void *blob, size_t len);
void ssd_heap_stats(struct ssd_stats *st);
/* added (heap.c): no range is reserved (nothing ever allocated, or all released):
 * ssd_restore may replace the store's Object Tables */
bool ssd_heap_empty(void);
/* added (heap.c, C2): under heap_lock (no allocation or free in between): ssd_rt_flush,
 * the heap's blob, then commit(blob) (the store's checkpoint); returns the first failure */
int ssd_heap_checkpoint(int (*commit)(const void *blob, size_t len, void *arg), void *arg);
/* added (heap.c, C2): destroys every Object Table a (restored) blob names: for ssd_restore
 * after ssd_heap_load failed, so that the store's restored tables are not orphaned */
void ssd_heap_drop_tables(const void *blob, size_t len);

/* ---------------------------------------------------------------- runtime.c */

int ssd_rt_init(struct ssd_store *s, uint64_t ram_bytes, uint64_t page_buffer_bytes,
		bool no_uffd, bool quiet);
void ssd_rt_fini(void);
/* anonymous memory the runtime watches: len bytes at addr (MAP_FIXED_NOREPLACE
 * when addr is not NULL, for restore); NULL on failure */
void *ssd_rt_reserve(void *addr, size_t len);
void ssd_rt_unreserve(void *addr, size_t len);
/* the pages' objects were freed: forget them everywhere, nothing written; the
 * pages read as zeros if handed out again */
void ssd_rt_drop(void *addr, size_t len);
/* every dirty byte of every page and cached object is in the store (not synced) */
int ssd_rt_flush(void);
/* added (runtime.c): the store object <otid, oto> is about to be discarded: its cached
 * copy, queued write and pages showing it are forgotten, nothing written. heap.c should
 * call it before ssd_obj_discard() so that a dirty cached copy is not written back later */
void ssd_rt_forget(uint32_t otid, uint32_t oto);
void ssd_rt_stats(struct ssd_stats *st);
/* added (runtime.c): the store refused a write with ENOSPC and nothing of meaningful size
 * (128 KiB) was dropped or forgotten since, nor did a flush succeed: dirty objects wait
 * in RAM and evictions do not retry the store; allocations should fail with ENOSPC */
bool ssd_rt_full(void);
/* added (runtime.c): this is a child forked after ssd_rt_init: every runtime entry point
 * fails with EPERM ("SSDAlloc memory belongs to the parent process (fork)") or does nothing */
bool ssd_rt_forked(void);

extern struct ssd_store *ssd_store;	/* api.c: the one store, set by init */

/* ---------------------------------------------------------------- api.c, chunk.c (added) */

/* the library is initialized (from the environment if nothing did it yet); 0 or -1 */
int ssd_api_ready(void);
/* chunk units alive (ssd_restore refuses while there are any) */
unsigned long ssd_chunk_units(void);
/* added (api.c, C2): which initialization this is (1, 2, ... after each ssd_init), 0 while
 * the library is down; a chunk unit made under another one is stale */
uint64_t ssd_api_epoch(void);

#endif
