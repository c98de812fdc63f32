/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SSDAlloc: flash as object-granular memory (seed 000 ch.3, seed 003).
 *
 * Memory returned by ssd_oalloc() and ssd_malloc() is ordinary memory to the
 * program: pointers into it stay valid, and it can be read and written with
 * plain loads and stores. Behind it, only a small Page Buffer of pages is
 * materialized at a time; the rest of the RAM budget is a compact cache of
 * objects, and the objects themselves live in a log-structured object store on
 * a flash device or file. See ssdalloc(3) and Documentation/ssdalloc.rst.
 *
 * Every function is thread safe. Functions that return int return 0 on success
 * and -1 with errno set on failure; ssd_strerror() has the last error's text.
 */
#ifndef SSDALLOC_H
#define SSDALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SSDALLOC_VERSION "0.21.0"

/* ssd_init(): where the objects live and how much RAM they may use */
struct ssd_config {
	const char *device;	/* block device or file; NULL: $SSDALLOC_DEVICE */
	uint64_t device_bytes;	/* a file's size (created or grown); 0: the device's */
	uint64_t ram_bytes;	/* RAM budget: Page Buffer + RAM object cache; 0: 256 MiB */
	uint64_t page_buffer_bytes; /* Page Buffer (FIFO of materialized pages); 0: 25 MiB */
	unsigned int flags;	/* SSD_* below */
};

#define SSD_FORMAT	0x1	/* format the device even if it holds a store */
#define SSD_NO_UFFD	0x2	/* use mprotect + SIGSEGV even if userfaultfd works */
#define SSD_QUIET	0x4	/* nothing on stderr at init */

/*
 * Optional: without it, the first call initializes from the environment:
 * SSDALLOC_DEVICE, SSDALLOC_SIZE, SSDALLOC_RAM, SSDALLOC_PAGE_BUFFER (sizes
 * take K/M/G suffixes), SSDALLOC_NO_UFFD=1, SSDALLOC_FORMAT=1 (as SSD_FORMAT). SSDALLOC_STATS=1 prints the
 * counters on stderr at exit.
 */
int ssd_init(const struct ssd_config *cfg);
/* flushes nothing: what is not checkpointed is gone; unmaps everything */
void ssd_shutdown(void);

/* OPP: each object at the start of its own page; n == 1 from the pool allocator */
void *ssd_oalloc(int n, int size);
/* MP: page-granular, contiguous like malloc's */
void *ssd_malloc(size_t size);
void *ssd_calloc(size_t n, size_t size);
void *ssd_realloc(void *p, size_t size);
/* frees either kind; a pointer SSDAlloc did not hand out, or freed twice, is
 * refused (errno EINVAL), reported on stderr and otherwise ignored */
void ssd_free(void *p);
/* the same, with the refusal as a return value */
int ssd_free_checked(void *p);

/*
 * Durability of pool-allocated OPP objects (ssd_oalloc(1, size)), as the thesis
 * provides it. ssd_checkpoint() writes every dirty object, then the Object
 * Tables and free lists to the reserved region of the device, and names that
 * checkpoint in the small file at path. ssd_restore() (before any allocation)
 * maps the same addresses again, so pointers between objects stay valid.
 * Objects written after the last checkpoint are lost in a crash; a torn
 * checkpoint is detected and the previous one used.
 */
int ssd_checkpoint(const char *path);
int ssd_restore(const char *path);

/* the netbook paper's explicit chunk API: a Chunk Table with its own LRU cache */
struct ssd_unit;
struct ssd_unit *ssdalloc(uint32_t nchunks, uint32_t chunk_size, uint64_t cache_bytes);
struct ssd_unit *ssdcalloc(uint32_t nchunks, uint32_t chunk_size, uint64_t cache_bytes);
int ssdrealloc(struct ssd_unit *u, uint32_t nchunks);
int readChunk(struct ssd_unit *u, uint32_t i, void *buf);
int writeChunk(struct ssd_unit *u, uint32_t i, const void *buf);
int flushUnit(struct ssd_unit *u);
void ssdfree(struct ssd_unit *u);

/* the runtime's counters (ssd_stats(3)); SSDALLOC_STATS=1 prints them at exit */
struct ssd_stats {
	uint64_t faults_read;		/* missing-page faults on a read */
	uint64_t faults_write;		/* missing-page or write-protect faults on a write */
	uint64_t materializations;	/* pages filled in the Page Buffer */
	uint64_t dematerializations;	/* pages taken out of the Page Buffer */
	uint64_t ram_hits;		/* materializations served by the RAM object cache */
	uint64_t ram_misses;		/* ... that had to read the store */
	uint64_t ram_evictions_clean;	/* clean objects dropped from the RAM cache */
	uint64_t ram_evictions_dirty;	/* dirty objects handed to the SSD writer */
	uint64_t ram_bytes;		/* bytes of objects in the RAM cache now */
	uint64_t ssd_reads;		/* read I/Os to the device */
	uint64_t ssd_read_bytes;
	uint64_t ssd_writes;		/* write I/Os to the device */
	uint64_t ssd_write_bytes;
	uint64_t objects_written;	/* objects appended to the log */
	uint64_t object_bytes_written;	/* their payload bytes */
	uint64_t gc_runs;		/* log blocks cleaned */
	uint64_t gc_moves;		/* live objects copied by the cleaner */
	uint64_t gc_move_bytes;
	uint64_t ot_bytes;		/* DRAM held by Object Tables */
	uint64_t objects;		/* objects allocated now */
	uint64_t checkpoints;
	uint64_t uffd;			/* 1: userfaultfd, 0: mprotect + SIGSEGV */
};
int ssd_stats(struct ssd_stats *st);
/* the text of the last error of the calling thread */
const char *ssd_strerror(void);

#ifdef SSDALLOC_THESIS_NAMES
/* the thesis's names (Section 3.3) */
#define checkpoint(path) ssd_checkpoint(path)
#define restore(path) ssd_restore(path)
#endif

#ifdef __cplusplus
}
#endif
#endif
