// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The netbook paper's explicit chunk API (seed 003, section 3): no page
 * faults, the application asks for chunks by number.
 *
 * A unit (ssdunit) is one Object Table of nchunks entries, every chunk
 * chunk_size bytes (fixed per unit, at most half a log block), and its own
 * RAM cache of cache_bytes (at least one chunk), an LRU list:
 *   readChunk   from the cache, else from the store (a chunk never written
 *               reads as zeros), and the chunk enters the cache;
 *   writeChunk  into the cache, marked dirty. When a chunk must be evicted to
 *               make room and the oldest entry is dirty, every dirty entry of
 *               the unit, and the chunk being written, go to the store in one
 *               batched write; only the oldest entry is evicted (the paper's
 *               rule: a dirty eviction is worth a whole batch);
 *   flushUnit   all dirty entries in one batch, then the store is synced;
 *   ssdrealloc  grows the unit: a new Object Table, the chunks copied into it
 *               (read from the old table and written to the new one: the store
 *               has no "move table" call, so growing costs a copy of the
 *               written chunks not dirty in the cache), the old one destroyed;
 *   ssdfree     the table is destroyed (its chunks become garbage), the cache
 *               freed, dirty chunks dropped.
 * Units are not part of ssd_checkpoint(): their Object Tables are, but nothing
 * names a unit after a restart.
 * Each unit has its own lock; the lock order is unit lock -> store_lock. Units
 * must be freed before ssd_shutdown().
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "ssd-int.h"

#define NONE UINT32_MAX

struct centry {
	uint32_t chunk;
	bool dirty;
	uint32_t prev, next;	/* LRU: head is the most recent */
	uint8_t *data;
};

struct ssd_unit {
	pthread_mutex_t lock;
	uint32_t otid, nchunks, chunk_size;
	uint64_t epoch;		/* ssd_api_epoch() when made: a unit outlives no ssd_shutdown */
	uint32_t cap, n;	/* cache entries: allowed, in use */
	uint32_t head, tail;	/* indices into ent */
	uint32_t ndirty;
	uint32_t *where;	/* chunk -> cache entry, NONE if not cached */
	struct centry *ent;
};

static atomic_ulong nunits;
static _Atomic uint64_t nunits_epoch;	/* the initialization nunits counts units of */

unsigned long ssd_chunk_units(void)
{
	/* units of an earlier initialization are dead (see unit_stale) */
	if (atomic_load(&nunits_epoch) != ssd_api_epoch())
		return 0;
	return atomic_load(&nunits);
}

/* u was made before ssd_shutdown (or the library is down): its otid may name
 * another table now, so nothing may touch the store for it */
static bool unit_stale(const struct ssd_unit *u)
{
	return u->epoch != ssd_api_epoch();
}

/* live data that could never fit the device is refused before anything is allocated */
static int check_fits(uint32_t nchunks, uint32_t chunk_size, const char *call)
{
	uint64_t want = (uint64_t)nchunks * chunk_size, have = ssd_store_log_bytes(ssd_store);

	if (want > have)
		return ssd_err(ENOSPC, "%s: %u chunks of %u B (%" PRIu64 " B) exceed the device's "
			       "log (%" PRIu64 " B)", call, nchunks, chunk_size, want, have);
	return 0;
}

static void lru_unlink(struct ssd_unit *u, uint32_t e)
{
	struct centry *c = &u->ent[e];

	if (c->prev != NONE)
		u->ent[c->prev].next = c->next;
	else
		u->head = c->next;
	if (c->next != NONE)
		u->ent[c->next].prev = c->prev;
	else
		u->tail = c->prev;
	c->prev = c->next = NONE;
}

static void lru_front(struct ssd_unit *u, uint32_t e)
{
	struct centry *c = &u->ent[e];

	c->prev = NONE;
	c->next = u->head;
	if (u->head != NONE)
		u->ent[u->head].prev = e;
	u->head = e;
	if (u->tail == NONE)
		u->tail = e;
}

static void touch(struct ssd_unit *u, uint32_t e)
{
	if (u->head != e) {
		lru_unlink(u, e);
		lru_front(u, e);
	}
}

/* all dirty entries (and extra, if not NULL) in one write; unit locked */
static int flush_dirty(struct ssd_unit *u, const struct ssd_obj *extra)
{
	struct ssd_obj *objs;
	unsigned int n = 0;
	uint32_t e;
	int ret;

	if (!u->ndirty && !extra)
		return 0;
	objs = malloc(((size_t)u->ndirty + 1) * sizeof(*objs));
	if (!objs)
		return ssd_err(ENOMEM, "chunk: out of memory");
	for (e = u->head; e != NONE; e = u->ent[e].next)
		if (u->ent[e].dirty)
			objs[n++] = (struct ssd_obj){ u->otid, u->ent[e].chunk, u->chunk_size,
						      u->ent[e].data };
	if (extra)
		objs[n++] = *extra;
	ret = ssd_obj_write(ssd_store, objs, n);
	free(objs);
	if (ret)
		return -1;
	for (e = u->head; e != NONE; e = u->ent[e].next)
		u->ent[e].dirty = false;
	u->ndirty = 0;
	return 0;
}

/*
 * A free cache entry for chunk i, or NONE with the error set. If the oldest
 * entry must go and is dirty, everything dirty goes to the store first, with
 * *extra (the chunk being written) in the same batch; *written then says so.
 */
static uint32_t entry_get(struct ssd_unit *u, uint32_t i, const struct ssd_obj *extra,
			  bool *written)
{
	uint32_t e;

	if (written)
		*written = false;
	if (u->n < u->cap) {
		e = u->n;
		u->ent[e].data = malloc(u->chunk_size);
		if (!u->ent[e].data) {
			ssd_err(ENOMEM, "chunk: out of memory for the cache");
			return NONE;
		}
		u->n++;
	} else {
		e = u->tail;
		if (u->ent[e].dirty) {
			if (flush_dirty(u, extra))
				return NONE;
			if (written)
				*written = extra != NULL;
		}
		lru_unlink(u, e);
		if (u->ent[e].chunk != NONE)
			u->where[u->ent[e].chunk] = NONE;
	}
	u->ent[e].chunk = i;
	u->ent[e].dirty = false;
	u->where[i] = e;
	lru_front(u, e);
	return e;
}

static int check_chunk_size(uint32_t chunk_size)
{
	if (chunk_size == 0 || chunk_size > SSD_LOG_BLOCK / 2)
		return ssd_err(EINVAL, "ssdalloc: chunk size %u (1 .. %u)", chunk_size,
			       SSD_LOG_BLOCK / 2);
	return 0;
}

SSD_API struct ssd_unit *ssdalloc(uint32_t nchunks, uint32_t chunk_size, uint64_t cache_bytes)
{
	struct ssd_unit *u;
	uint64_t cap;
	uint32_t i;

	if (nchunks == 0 || check_chunk_size(chunk_size)) {
		if (!nchunks)
			ssd_err(EINVAL, "ssdalloc: no chunks");
		return NULL;
	}
	if (ssd_api_ready() || check_fits(nchunks, chunk_size, "ssdalloc"))
		return NULL;
	cap = cache_bytes / chunk_size;
	if (cap < 1)
		cap = 1;
	if (cap > nchunks)
		cap = nchunks;
	u = calloc(1, sizeof(*u));
	if (!u)
		goto nomem;
	u->nchunks = nchunks;
	u->chunk_size = chunk_size;
	u->cap = (uint32_t)cap;
	u->head = u->tail = NONE;
	u->where = malloc((size_t)nchunks * sizeof(*u->where));
	u->ent = calloc(u->cap, sizeof(*u->ent));
	if (!u->where || !u->ent)
		goto nomem_u;
	for (i = 0; i < nchunks; i++)
		u->where[i] = NONE;
	if (ssd_ot_create(ssd_store, nchunks, &u->otid))
		goto fail;
	pthread_mutex_init(&u->lock, NULL);
	u->epoch = ssd_api_epoch();
	if (atomic_exchange(&nunits_epoch, u->epoch) != u->epoch)
		atomic_store(&nunits, 0);	/* the count of an earlier initialization */
	atomic_fetch_add(&nunits, 1);
	return u;
nomem_u:
	ssd_err(ENOMEM, "ssdalloc: out of memory");
fail:
	free(u->where);
	free(u->ent);
	free(u);
	return NULL;
nomem:
	ssd_err(ENOMEM, "ssdalloc: out of memory");
	return NULL;
}

/* a new Object Table's entries read as zeros: nothing to write */
SSD_API struct ssd_unit *ssdcalloc(uint32_t nchunks, uint32_t chunk_size, uint64_t cache_bytes)
{
	return ssdalloc(nchunks, chunk_size, cache_bytes);
}

static int check_args(struct ssd_unit *u, uint32_t i, const void *buf, const char *call)
{
	if (!u || !buf)
		return ssd_err(EINVAL, "%s: NULL unit or buffer", call);
	if (unit_stale(u))
		return ssd_err(EINVAL, "%s: the unit was made before ssd_shutdown()", call);
	if (i >= u->nchunks)
		return ssd_err(EINVAL, "%s: chunk %u of a unit of %u", call, i, u->nchunks);
	return 0;
}

/*
 * The caller's buffer may be SSDAlloc memory: touching it may fault, and the
 * fault thread may need the store's lock. So the chunk goes through a bounce
 * buffer of ours, and the caller's buffer is only touched with no lock held
 * (writeChunk likewise copies it in first, and never hands it to the store).
 */
SSD_API int readChunk(struct ssd_unit *u, uint32_t i, void *buf)
{
	uint32_t e, size = 0;
	uint8_t *bounce;
	int ret = 0;

	if (!u || !buf)
		return ssd_err(EINVAL, "readChunk: NULL unit or buffer");
	if (unit_stale(u))
		return ssd_err(EINVAL, "readChunk: the unit was made before ssd_shutdown()");
	bounce = malloc(u->chunk_size);
	if (!bounce)
		return ssd_err(ENOMEM, "readChunk: out of memory");
	pthread_mutex_lock(&u->lock);
	if (check_args(u, i, buf, "readChunk")) {
		ret = -1;
		goto out;
	}
	e = u->where[i];
	if (e != NONE) {
		memcpy(bounce, u->ent[e].data, u->chunk_size);
		touch(u, e);
		goto out;
	}
	e = entry_get(u, i, NULL, NULL);
	if (e == NONE) {
		ret = -1;
		goto out;
	}
	if (ssd_obj_read(ssd_store, u->otid, i, u->ent[e].data, u->chunk_size, &size)) {
		/* the entry holds nothing valid: empty, at the tail, reused first */
		lru_unlink(u, e);
		u->where[i] = NONE;
		u->ent[e].chunk = NONE;
		u->ent[e].prev = u->tail;
		u->ent[e].next = NONE;
		if (u->tail != NONE)
			u->ent[u->tail].next = e;
		else
			u->head = e;
		u->tail = e;
		ret = -1;
		goto out;
	}
	if (size < u->chunk_size)
		memset(u->ent[e].data + size, 0, u->chunk_size - size);
	memcpy(bounce, u->ent[e].data, u->chunk_size);
out:
	pthread_mutex_unlock(&u->lock);
	if (!ret)
		memcpy(buf, bounce, u->chunk_size);
	free(bounce);
	return ret;
}

SSD_API int writeChunk(struct ssd_unit *u, uint32_t i, const void *buf)
{
	struct ssd_obj o;
	uint32_t e;
	uint8_t *bounce;
	bool written;
	int ret = 0;

	if (!u || !buf)
		return ssd_err(EINVAL, "writeChunk: NULL unit or buffer");
	if (unit_stale(u))
		return ssd_err(EINVAL, "writeChunk: the unit was made before ssd_shutdown()");
	/* the caller's bytes, read with no lock held (see readChunk) */
	bounce = malloc(u->chunk_size);
	if (!bounce)
		return ssd_err(ENOMEM, "writeChunk: out of memory");
	memcpy(bounce, buf, u->chunk_size);
	pthread_mutex_lock(&u->lock);
	if (check_args(u, i, buf, "writeChunk")) {
		ret = -1;
		goto out;
	}
	e = u->where[i];
	if (e != NONE) {
		memcpy(u->ent[e].data, bounce, u->chunk_size);
		if (!u->ent[e].dirty)
			u->ndirty++;
		u->ent[e].dirty = true;
		touch(u, e);
		goto out;
	}
	o = (struct ssd_obj){ u->otid, i, u->chunk_size, bounce };
	e = entry_get(u, i, &o, &written);
	if (e == NONE) {
		ret = -1;
		goto out;
	}
	memcpy(u->ent[e].data, bounce, u->chunk_size);
	if (!written) {
		u->ent[e].dirty = true;
		u->ndirty++;
	}
out:
	pthread_mutex_unlock(&u->lock);
	free(bounce);
	return ret;
}

SSD_API int flushUnit(struct ssd_unit *u)
{
	int ret;

	if (!u)
		return ssd_err(EINVAL, "flushUnit: NULL unit");
	if (unit_stale(u))
		return ssd_err(EINVAL, "flushUnit: the unit was made before ssd_shutdown()");
	pthread_mutex_lock(&u->lock);
	ret = flush_dirty(u, NULL);
	if (!ret)
		ret = ssd_store_sync(ssd_store);
	pthread_mutex_unlock(&u->lock);
	return ret;
}

SSD_API int ssdrealloc(struct ssd_unit *u, uint32_t nchunks)
{
	uint32_t otid, i, *where, size;
	uint8_t *buf;
	int ret = -1;

	if (!u)
		return ssd_err(EINVAL, "ssdrealloc: NULL unit");
	if (unit_stale(u))
		return ssd_err(EINVAL, "ssdrealloc: the unit was made before ssd_shutdown()");
	pthread_mutex_lock(&u->lock);
	if (nchunks < u->nchunks) {
		ssd_err(EINVAL, "ssdrealloc: %u chunks: a unit only grows (it has %u)", nchunks,
			u->nchunks);
		goto out;
	}
	if (nchunks == u->nchunks) {
		ret = 0;
		goto out;
	}
	if (check_fits(nchunks, u->chunk_size, "ssdrealloc"))
		goto out;
	where = realloc(u->where, (size_t)nchunks * sizeof(*where));
	if (!where) {
		ssd_err(ENOMEM, "ssdrealloc: out of memory");
		goto out;
	}
	u->where = where;
	for (i = u->nchunks; i < nchunks; i++)
		where[i] = NONE;
	buf = malloc(u->chunk_size);
	if (!buf) {
		ssd_err(ENOMEM, "ssdrealloc: out of memory");
		goto out;
	}
	if (ssd_ot_create(ssd_store, nchunks, &otid))
		goto out_buf;
	/* every written chunk the cache does not hold dirty moves to the new table */
	for (i = 0; i < u->nchunks; i++) {
		struct ssd_obj o;

		if (where[i] != NONE && u->ent[where[i]].dirty)
			continue;	/* written to the new table by the next flush */
		if (ssd_obj_read(ssd_store, u->otid, i, buf, u->chunk_size, &size))
			goto out_ot;
		if (!size)
			continue;	/* never written: reads as zeros in the new one too */
		o = (struct ssd_obj){ otid, i, size, buf };
		if (ssd_obj_write(ssd_store, &o, 1))
			goto out_ot;
	}
	ssd_ot_destroy(ssd_store, u->otid);
	u->otid = otid;
	u->nchunks = nchunks;
	ret = 0;
	goto out_buf;
out_ot:
	ssd_ot_destroy(ssd_store, otid);
out_buf:
	free(buf);
out:
	pthread_mutex_unlock(&u->lock);
	return ret;
}

SSD_API void ssdfree(struct ssd_unit *u)
{
	uint32_t i;

	bool stale;

	if (!u)
		return;
	/* the otid of a unit from before ssd_shutdown may be another table's now:
	 * its host memory is freed, the store left alone */
	stale = unit_stale(u);
	if (!stale)
		ssd_ot_destroy(ssd_store, u->otid);
	for (i = 0; i < u->n; i++)
		free(u->ent[i].data);
	free(u->ent);
	free(u->where);
	pthread_mutex_destroy(&u->lock);
	free(u);
	if (stale) {
		ssd_err(EINVAL, "ssdfree: the unit was made before ssd_shutdown(); its memory is "
			"freed, the store untouched");
		return;
	}
	atomic_fetch_sub(&nunits, 1);
}
