// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * SSDAlloc's flash side: the log-structured object store (seed 000, 3.2.3,
 * 3.2.5, 3.3).
 *
 * Layout (little-endian; see ssd-int.h):
 *   [0, 4 KiB)           superblock
 *   [128 KiB, +2 slots)  checkpoint slots, each round_up(log_bytes / 32 + 1 MiB, 128 KiB)
 *   [log_off, +L*128K)   the log: L blocks of 128 KiB, 256 sectors of 512 B each,
 *                        every sector = 2-byte "first header here" offset + 510
 *                        stream bytes; objects = 16 B header + payload, never
 *                        across a block boundary (the tail of a block is padding)
 *
 * RAM state: the Object Tables (per object the 4 B sector entry of the thesis and
 * a 2 B size, and for durable tables the same again for the checkpoint view, so
 * the per-block free counters can be kept exact when an object is
 * overwritten or discarded without reading its old header), per block the live
 * bytes (= 130560 - free bytes), a state (free / being written / in the log /
 * held / bad) and a "pinned by the last checkpoint" flag.
 *
 * Writing: objects are packed into a 128 KiB block buffer; a full buffer is
 * submitted to io_uring and the next buffer is filled while up to SSD_WB_BUFS - 1
 * block writes are in flight. Objects in a buffer that is being filled or in
 * flight are read from memory. ssd_store_sync writes the filled part of the
 * current buffer (the block is later rewritten with the same prefix and more
 * objects), waits for everything and fdatasyncs.
 *
 * Cleaning (3.2.5): a read-modify-write at the head of the log. Before a batch is
 * appended, if fewer than need + SSD_GC_LOW free blocks are left, a cursor walks
 * the log from its oldest block: a block whose counter says nothing is live is
 * freed without reading it; otherwise the block is read, the objects whose
 * Object Table entry (current or checkpoint view, below) still points at their
 * own header (back-pointer) are
 * re-appended with the new writes, and the block is freed. The space a batch
 * and each cleaning step need is computed exactly (by packing the sizes as the
 * writer will) before anything is changed, so a batch is either appended whole
 * or refused with ENOSPC, and the cleaner never loops: it visits each block at
 * most twice per round, and a batch takes at most SSD_GC_ROUNDS rounds (each
 * after the first follows a relocation checkpoint, below).
 *
 * Durability (3.3): only tables marked durable (ssd_ot_set_durable: heap.c's
 * pool tables; MP pages, OPP arrays and chunks are not restored) are written to
 * a checkpoint slot; the others neither go into a slot nor pin anything.
 *
 * Crash safety: for every table of the last committed checkpoint we keep in RAM
 * its checkpoint view ("ce": the sector the durable slot names for each object,
 * and the size), next to the current entry. An object version is live if the
 * current entry OR the checkpoint view names it (the cleaner's back-pointer
 * check takes both); the per-block counters count each such version once (an
 * overwrite or discard frees the old bytes only if the checkpoint view does not
 * name them; a checkpoint commit frees the versions only the old view named).
 * A block holding checkpoint-live objects is pinned: it must not be rewritten
 * while the durable slot names it. The cleaner may still move those objects
 * out (updating whichever view names them); the emptied block is then held
 * (B_HELD), not free, until a slot naming the new locations is durable. When
 * the writer runs out of free blocks and held ones exist, it writes a
 * relocation checkpoint: the checkpoint view (new locations) and the last
 * checkpoint's blob (kept in RAM), generation + 1, in the other slot, then
 * fdatasync; then the held blocks are free. Its content is exactly the last
 * checkpoint's state, so restore semantics do not change; a crash before it is
 * durable restores the previous slot, whose blocks were held intact.
 *
 * Worst case: the log must hold the live data of both views at once. After a
 * checkpoint, every durable object rewritten (not discarded) before the next
 * one is live twice, so an application that rewrites everything between
 * checkpoints needs about twice its live bytes (plus a few free blocks for the
 * writer and the cleaner). Only when that does not fit does a write fail, with
 * ENOSPC and a message giving both.
 *
 * The block being filled may be pinned; it is only ever rewritten with the same
 * bytes at the front. Opening a store that has a checkpoint without restoring
 * it pins the checkpoint's blocks as a whole (their objects are unknown: no
 * table is loaded), so that a crash before the next checkpoint can still
 * restore it; those blocks cannot be cleaned until the next checkpoint commits.
 * Restore verifies every checkpointed object in the log (header, back-pointer,
 * CRC) by reading each block that holds one, once: that gives the exact sizes
 * and free counters without storing sizes in the slot (which must hold 4 B per
 * object to fit log_bytes / 32), and if the newest valid slot's objects are not
 * all there it falls back to the other slot.
 *
 * Locking: store_lock (s->lock) protects everything in struct ssd_store that
 * changes after open: the Object Tables, the per-block arrays, the free-block
 * queue and cursor, the write buffers and the io_uring ring (only one thread
 * submits or reaps), the statistics and the checkpoint generation. It is the
 * innermost lock (ssd-int.h) and is held across device I/O (a relocation
 * checkpoint included: a writer waits for it); no function here calls out of
 * store.c with it held except ssd_err() and test-store.c's ssd_store_test_hook.
 *
 * CRC32C: our own table-driven implementation (Castagnoli, reflected
 * polynomial 0x82F63B78), below.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ssd-int.h"

#define SB_BYTES	4096u
#define SB_MAGIC	"SSDALLOC"
#define SB_VERSION	1u
#define CK_MAGIC	"SSDCKPT1"
#define CK_VERSION	1u
#define SPB		(SSD_LOG_BLOCK / SSD_SECTOR)	/* sectors per block: 256 */
#define SDATA		(SSD_SECTOR - 2)		/* stream bytes per sector: 510 */
#define STREAM		(SPB * SDATA)			/* stream bytes per block: 130560 */
#define OHDR		16u				/* object header */
#define OBJ_MAX		(SSD_LOG_BLOCK / 2)
#define NO_HDR		0xffffu
#define MIN_BLOCKS	8u
#define MAX_BLOCKS	((0xfffffffeu) / SPB)		/* entries are sector + 1 in a u32 */
#define MAX_OTID	(1u << 20)
#define MAX_NOBJ	(1u << 28)
#define SSD_WB_BUFS	4				/* 3 block writes in flight + 1 filling */
#define SSD_GC_LOW	4u				/* free blocks the cleaner aims for */
#define SSD_GC_RESERVE	1u				/* free blocks only the cleaner uses */
#define RING_DEPTH	16u
#define IO_CHUNK	(1u << 20)
#define GC_KEYS		(2 * (STREAM / OHDR) + 2 * SPB)	/* gc_clean's key set: never full */

/* B_HELD: cleaned while pinned; free once a slot not naming it is durable */
enum { B_FREE, B_ACTIVE, B_USED, B_BAD, B_HELD };
enum { WB_FREE, WB_FILLING, WB_INFLIGHT };

/* ------------------------------------------------------------- CRC32C */

static uint32_t crc_tab[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_tab[i] = c;
	}
}

/* running form: start with ~0, finish with ~ */
static uint32_t crc_upd(uint32_t c, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		c = crc_tab[(c ^ *b++) & 0xff] ^ (c >> 8);
	return c;
}

static uint32_t crc32c(const void *p, size_t n)
{
	return ~crc_upd(~0u, p, n);
}

/* -------------------------------------------------------- on-device structs */

struct sb_disk {
	char magic[8];
	uint32_t version, sb_bytes;
	uint8_t uuid[16];
	uint64_t dev_bytes;
	uint32_t log_block, sector;
	uint64_t ckpt_off, slot_bytes, log_off, log_blocks;
	uint32_t flags, crc;		/* crc over the bytes before it */
} __attribute__((packed));

struct ck_disk {
	char magic[8];
	uint32_t version, hdr_bytes;
	uint64_t gen;
	uint8_t uuid[16];
	uint32_t log_blocks, ntables;
	uint64_t tables_bytes, blob_bytes;
	uint32_t head, tail;
	uint32_t reserved, crc;		/* crc over header (crc = 0), tables, blob */
} __attribute__((packed));

_Static_assert(sizeof(struct sb_disk) == 88, "superblock layout");
_Static_assert(sizeof(struct ck_disk) == 80, "checkpoint header layout");

/* ------------------------------------------------------------- the store */

struct io {
	uint8_t *buf;
	size_t len, done;
	uint64_t off;
	bool write, complete;
	int err;
	int wb;			/* write buffer index, -1 for synchronous I/O */
};

struct wbuf {
	uint8_t *buf;
	uint32_t blk;
	int state;
	struct io io;
};

struct live_obj {
	uint32_t pos, size;
	uint32_t otid, oto, gsec;
};

/*
 * A table slot: used (a live table), and/or with a checkpoint view (ce != NULL:
 * the table is in the last committed checkpoint, or durable since). A slot with
 * a view but not used is a destroyed table the last checkpoint still names: its
 * otid is not reused until the next checkpoint commits.
 */
struct ot {
	uint32_t *e;		/* sector + 1, 0: never written */
	uint16_t *sz;		/* size - 1 where e != 0 */
	uint32_t *ce;		/* the checkpoint view: what the durable slot names */
	uint16_t *csz;
	uint32_t nobj;
	bool used;
	bool durable;		/* goes into the next checkpoint */
	bool in_ck;		/* is in the last committed checkpoint */
};

struct ssd_store {
	pthread_mutex_t lock;
	int fd;
	bool direct, bdev;
	uint32_t align;
	struct io_uring ring;
	char path[128];

	uint64_t dev_bytes, ckpt_off, slot_bytes, log_off;
	uint32_t nblocks;
	uint8_t uuid[16];
	uint64_t ckpt_gen;

	struct ot *ots;
	uint32_t nots;		/* slots in ots[] */
	uint32_t *free_otids, nfree_otids;
	uint64_t ot_bytes;

	uint32_t *live;		/* live bytes per block (headers included) */
	uint8_t *state, *pinned;
	uint32_t *fq, fq_head, nfree;	/* free blocks, oldest freed first */
	uint32_t cursor;		/* the cleaner's position: the log head */
	uint64_t live_unpinned;		/* sum of live[] over unpinned blocks */
	uint64_t live_total;		/* sum of live[] */
	uint32_t npinned, nbad, nheld;
	bool ck_known;			/* pins come from the ce views (not opaque) */
	uint8_t *ck_blob;		/* the last checkpoint's blob, for relocations */
	size_t ck_blob_len;

	struct wbuf wb[SSD_WB_BUFS];
	int cur;			/* the buffer being filled, -1: none */
	uint32_t wpos, wsynced;		/* stream position in it; durable up to */
	uint8_t *gcbuf, *rbuf;
	struct live_obj *gc_lo;		/* the cleaner's scratch: one block's live objects */
	uint64_t *gc_order;		/* pinned blocks by live bytes */
	uint32_t *gc_sizes;
	uint64_t *gc_keys;		/* gc_clean: keys with a header in the block being filled */
	uint8_t *gc_tmp;
	int io_err;			/* a failed block write: sticky */
	uint32_t io_err_blk;

	uint64_t reads, read_bytes, writes, write_bytes, objs, obj_bytes;
	uint64_t gc_runs, gc_moves, gc_move_bytes, checkpoints, relocations;
	bool registered;		/* in open_devs */
	dev_t reg_dev;
	ino_t reg_ino;
};

static inline uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline void put16(uint8_t *p, uint16_t v)
{
	p[0] = v & 0xff;
	p[1] = v >> 8;
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* --------------------------------------------------------------- layout */

static uint64_t slot_bytes_for(uint64_t nblocks)
{
	return round_up(nblocks * SSD_LOG_BLOCK / 32 + (1u << 20), SSD_LOG_BLOCK);
}

static uint64_t log_off_for(uint64_t nblocks)
{
	return SSD_LOG_BLOCK + 2 * slot_bytes_for(nblocks);
}

static uint64_t layout_end(uint64_t nblocks)
{
	return log_off_for(nblocks) + nblocks * SSD_LOG_BLOCK;
}

/* the most log blocks a device of dev bytes holds; 0 if fewer than MIN_BLOCKS */
static uint32_t blocks_for(uint64_t dev)
{
	uint64_t n;

	if (dev < layout_end(MIN_BLOCKS))
		return 0;
	n = (dev - SSD_LOG_BLOCK - 2 * (1u << 20)) / (SSD_LOG_BLOCK + SSD_LOG_BLOCK / 16);
	if (n > MAX_BLOCKS)
		n = MAX_BLOCKS;
	while (n < MAX_BLOCKS && layout_end(n + 1) <= dev)
		n++;
	while (n > MIN_BLOCKS && layout_end(n) > dev)
		n--;
	return (uint32_t)n;
}

/* ------------------------------------------------------------------- I/O */

static void io_prep(struct ssd_store *s, struct io *io)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&s->ring);

	if (!sqe) {
		/* cannot happen with RING_DEPTH > SSD_WB_BUFS + 1 outstanding */
		io_uring_submit(&s->ring);
		sqe = io_uring_get_sqe(&s->ring);
	}
	if (io->write)
		io_uring_prep_write(sqe, s->fd, io->buf + io->done, io->len - io->done,
				    io->off + io->done);
	else
		io_uring_prep_read(sqe, s->fd, io->buf + io->done, io->len - io->done,
				   io->off + io->done);
	io_uring_sqe_set_data(sqe, io);
}

static int io_submit(struct ssd_store *s, struct io *io)
{
	int r;

	io->done = 0;
	io->complete = false;
	io->err = 0;
	io_prep(s, io);
	r = io_uring_submit(&s->ring);
	if (r < 0) {
		io->err = -r;
		io->complete = true;
		return -1;
	}
	if (io->write) {
		s->writes++;
		s->write_bytes += io->len;
	} else {
		s->reads++;
		s->read_bytes += io->len;
	}
	return 0;
}

static void io_done(struct ssd_store *s, struct io *io)
{
	io->complete = true;
	if (io->wb < 0)
		return;
	struct wbuf *w = &s->wb[io->wb];

	if (io->err && !s->io_err) {
		s->io_err = io->err;
		s->io_err_blk = w->blk;
	}
	if (w->state == WB_INFLIGHT) {
		w->state = WB_FREE;
		if (s->state[w->blk] == B_ACTIVE)
			s->state[w->blk] = B_USED;
	}
}

/* reaps one completion (waiting for it); false if the ring itself failed */
static bool io_reap_one(struct ssd_store *s)
{
	struct io_uring_cqe *cqe;
	struct io *io;
	int r;

	do
		r = io_uring_wait_cqe(&s->ring, &cqe);
	while (r == -EINTR || r == -EAGAIN);
	if (r < 0)
		return false;
	io = io_uring_cqe_get_data(cqe);
	r = cqe->res;
	io_uring_cqe_seen(&s->ring, cqe);
	if (!io)
		return true;
	if (r == -EINTR || r == -EAGAIN) {
		io_prep(s, io);
	} else if (r < 0) {
		io->err = -r;
		io_done(s, io);
		return true;
	} else if (r == 0) {
		io->err = EIO;	/* past the end of the device */
		io_done(s, io);
		return true;
	} else {
		io->done += (size_t)r;
		if (io->done >= io->len) {
			io_done(s, io);
			return true;
		}
		io_prep(s, io);	/* short transfer: the rest */
	}
	if (io_uring_submit(&s->ring) < 0) {
		io->err = EIO;
		io_done(s, io);
	}
	return true;
}

static int io_wait(struct ssd_store *s, struct io *io)
{
	while (!io->complete)
		if (!io_reap_one(s)) {
			io->err = EIO;
			return -1;
		}
	return io->err ? -1 : 0;
}

/* synchronous read or write, in chunks */
static int io_rw(struct ssd_store *s, bool write, void *buf, size_t len, uint64_t off)
{
	while (len) {
		size_t n = len < IO_CHUNK ? len : IO_CHUNK;
		struct io io = { .buf = buf, .len = n, .off = off, .write = write, .wb = -1 };

		if (io_submit(s, &io) < 0 || io_wait(s, &io) < 0)
			return ssd_err(io.err ? io.err : EIO, "%s: %s of %zu bytes at %llu failed: %s",
				       s->path, write ? "write" : "read", n,
				       (unsigned long long)off, strerror(io.err ? io.err : EIO));
		buf = (uint8_t *)buf + n;
		off += n;
		len -= n;
	}
	return 0;
}

static int io_wait_all(struct ssd_store *s)
{
	for (int i = 0; i < SSD_WB_BUFS; i++)
		if (s->wb[i].state == WB_INFLIGHT)
			while (!s->wb[i].io.complete)
				if (!io_reap_one(s))
					return ssd_err(EIO, "%s: io_uring wait failed", s->path);
	return 0;
}

static int check_io_err(struct ssd_store *s)
{
	if (s->io_err)
		return ssd_err(EIO, "%s: an earlier write of log block %u failed: %s", s->path,
			       s->io_err_blk, strerror(s->io_err));
	return 0;
}

/* ------------------------------------------------------- block accounting */

static void live_add(struct ssd_store *s, uint32_t b, uint32_t n)
{
	s->live[b] += n;
	s->live_total += n;
	if (!s->pinned[b])
		s->live_unpinned += n;
}

static void live_sub(struct ssd_store *s, uint32_t b, uint32_t n)
{
	n = n > s->live[b] ? s->live[b] : n;
	s->live[b] -= n;
	s->live_total -= n;
	if (!s->pinned[b])
		s->live_unpinned -= n;
}

static void block_free(struct ssd_store *s, uint32_t b)
{
	s->state[b] = B_FREE;
	s->fq[(s->fq_head + s->nfree) % s->nblocks] = b;
	s->nfree++;
}

static uint32_t block_pop(struct ssd_store *s)
{
	uint32_t b = s->fq[s->fq_head];

	s->fq_head = (s->fq_head + 1) % s->nblocks;
	s->nfree--;
	return b;
}

/*
 * A checkpoint is durable and the ce views are what it names: pinned = the
 * blocks holding checkpoint-live objects; held blocks (cleaned out) are free
 * now; recounts what depends on pins.
 */
static void repin(struct ssd_store *s)
{
	memset(s->pinned, 0, s->nblocks);
	for (uint32_t i = 0; i < s->nots; i++) {
		struct ot *t = &s->ots[i];

		for (uint32_t k = 0; t->ce && k < t->nobj; k++)
			if (t->ce[k])
				s->pinned[(t->ce[k] - 1) / SPB] = 1;
	}
	s->live_unpinned = 0;
	s->live_total = 0;
	s->npinned = 0;
	for (uint32_t b = 0; b < s->nblocks; b++) {
		s->npinned += s->pinned[b];
		s->live_total += s->live[b];
		if (!s->pinned[b])
			s->live_unpinned += s->live[b];
		if (s->state[b] == B_HELD)
			block_free(s, b);
	}
	s->nheld = 0;
	s->ck_known = true;
}

/* the bytes of the version an entry names (the header included) */
static uint32_t ent_bytes(const uint16_t *sz, uint32_t k)
{
	return OHDR + sz[k] + 1u;
}

/*
 * The current version of an object is replaced or freed: its bytes are garbage
 * unless the checkpoint view names the same version.
 */
static void entry_drop(struct ssd_store *s, struct ot *t, uint32_t oto)
{
	if (!t->e[oto])
		return;
	if (!t->ce || t->ce[oto] != t->e[oto])
		live_sub(s, (t->e[oto] - 1) / SPB, ent_bytes(t->sz, oto));
	t->e[oto] = 0;
	t->sz[oto] = 0;
}

/* a table slot with either view (a destroyed table the last checkpoint names too) */
static struct ot *ot_any(struct ssd_store *s, uint32_t otid)
{
	if (otid >= s->nots || (!s->ots[otid].used && !s->ots[otid].ce))
		return NULL;
	return &s->ots[otid];
}

static struct ot *ot_get(struct ssd_store *s, uint32_t otid)
{
	if (otid >= s->nots || !s->ots[otid].used)
		return NULL;
	return &s->ots[otid];
}

/* ----------------------------------------------------------- the writer */

static void stream_put(uint8_t *blk, uint32_t pos, const void *src, uint32_t len)
{
	const uint8_t *p = src;

	while (len) {
		uint32_t sec = pos / SDATA, o = pos % SDATA, n = SDATA - o;

		n = n < len ? n : len;
		memcpy(blk + sec * SSD_SECTOR + 2 + o, p, n);
		p += n;
		pos += n;
		len -= n;
	}
}

static void stream_get(const uint8_t *blk, uint32_t pos, void *dst, uint32_t len)
{
	uint8_t *p = dst;

	while (len) {
		uint32_t sec = pos / SDATA, o = pos % SDATA, n = SDATA - o;

		n = n < len ? n : len;
		memcpy(p, blk + sec * SSD_SECTOR + 2 + o, n);
		p += n;
		pos += n;
		len -= n;
	}
}

static uint32_t stream_crc(uint32_t c, const uint8_t *blk, uint32_t pos, uint32_t len)
{
	while (len) {
		uint32_t sec = pos / SDATA, o = pos % SDATA, n = SDATA - o;

		n = n < len ? n : len;
		c = crc_upd(c, blk + sec * SSD_SECTOR + 2 + o, n);
		pos += n;
		len -= n;
	}
	return c;
}

static uint32_t obj_crc(uint32_t otid, uint32_t oto, uint32_t size, const void *data)
{
	uint32_t h[3] = { htole32(otid), htole32(oto), htole32(size) };

	return ~crc_upd(crc_upd(~0u, h, sizeof(h)), data, size);
}

/* submits the rest of the block being filled; it continues in flight */
static int block_close(struct ssd_store *s)
{
	struct wbuf *w = &s->wb[s->cur];
	uint32_t from = (uint32_t)((s->wsynced / SDATA) * SSD_SECTOR / s->align * s->align);

	w->state = WB_INFLIGHT;
	w->io = (struct io){ .buf = w->buf + from, .len = SSD_LOG_BLOCK - from,
			     .off = s->log_off + (uint64_t)w->blk * SSD_LOG_BLOCK + from,
			     .write = true, .wb = s->cur };
	s->cur = -1;
	if (io_submit(s, &w->io) < 0) {
		io_done(s, &w->io);
		return check_io_err(s);
	}
	return 0;
}

static int block_open(struct ssd_store *s)
{
	int i;

	for (;;) {
		for (i = 0; i < SSD_WB_BUFS; i++)
			if (s->wb[i].state == WB_FREE)
				break;
		if (i < SSD_WB_BUFS)
			break;
		if (!io_reap_one(s))
			return ssd_err(EIO, "%s: io_uring wait failed", s->path);
	}
	if (!s->nfree)	/* ensure_space() said there would be one */
		return ssd_err(ENOSPC, "%s: no free log block (internal)", s->path);
	struct wbuf *w = &s->wb[i];

	w->blk = block_pop(s);
	w->state = WB_FILLING;
	s->state[w->blk] = B_ACTIVE;
	memset(w->buf, 0, SSD_LOG_BLOCK);
	for (uint32_t k = 0; k < SPB; k++)
		put16(w->buf + k * SSD_SECTOR, NO_HDR);
	s->cur = i;
	s->wpos = s->wsynced = 0;
	return 0;
}

/*
 * Appends one object (room checked by ensure_space); returns its sector. An
 * entry names only a sector, so two versions of one object must never start
 * in the same sector: old is the sector + 1 of the version being replaced, and
 * if the new one would start there it starts at the next sector instead; the same
 * for old2, the version the checkpoint view names. (Also
 * after a crash: the block being filled at a checkpoint goes on being filled,
 * so the checkpointed version and a later one could otherwise share a sector.)
 */
/*
 * Does a header of <otid, oto> start in the current buffer's sector sec, before
 * the write position? Not only the versions the two views name: a discarded
 * one (ssd_obj_discard, a size-0 write, a destroyed table whose otid came back)
 * is garbage to the views but would be found first by a reader walking the
 * sector's headers, and handed out as the new version's bytes.
 */
static bool sector_holds(const struct ssd_store *s, uint32_t sec, uint32_t otid, uint32_t oto)
{
	const uint8_t *buf = s->wb[s->cur].buf;
	uint32_t p, end = (sec + 1) * SDATA;
	struct { uint32_t otid, oto, size, crc; } h;
	uint16_t first;

	if (sec >= SPB)		/* the block is full: the object goes to a new one */
		return false;
	first = get16(buf + sec * SSD_SECTOR);
	if (first == NO_HDR || first < 2 || first >= SSD_SECTOR)
		return false;
	for (p = sec * SDATA + first - 2; p < end && p + OHDR <= s->wpos;
	     p += OHDR + le32toh(h.size)) {
		stream_get(buf, p, &h, OHDR);
		if (le32toh(h.otid) == otid && le32toh(h.oto) == oto)
			return true;
		if (le32toh(h.size) > OBJ_MAX)	/* our own buffer: cannot happen */
			return true;
	}
	return false;
}

static int append(struct ssd_store *s, uint32_t otid, uint32_t oto, uint32_t size,
		  const void *data, uint32_t crc, uint32_t old, uint32_t old2, uint32_t *gsec)
{
	struct { uint32_t otid, oto, size, crc; } h;
	uint8_t *buf;
	uint32_t sec;

	/* old2: the other view's version (current or checkpoint), which must stay findable */
	if (s->cur >= 0 && ((old && old - 1 == s->wb[s->cur].blk * SPB + s->wpos / SDATA) ||
			    (old2 && old2 - 1 == s->wb[s->cur].blk * SPB + s->wpos / SDATA) ||
			    sector_holds(s, s->wpos / SDATA, otid, oto)))
		s->wpos = (s->wpos / SDATA + 1) * SDATA;
	if (s->cur >= 0 && s->wpos + OHDR + size > STREAM && block_close(s) < 0)
		return -1;
	if (s->cur < 0 && block_open(s) < 0)
		return -1;
	buf = s->wb[s->cur].buf;
	sec = s->wpos / SDATA;
	if (get16(buf + sec * SSD_SECTOR) == NO_HDR)
		put16(buf + sec * SSD_SECTOR, (uint16_t)(2 + s->wpos % SDATA));
	h.otid = htole32(otid);
	h.oto = htole32(oto);
	h.size = htole32(size);
	h.crc = htole32(crc);
	stream_put(buf, s->wpos, &h, OHDR);
	stream_put(buf, s->wpos + OHDR, data, size);
	*gsec = s->wb[s->cur].blk * SPB + sec;
	s->wpos += OHDR + size;
	live_add(s, s->wb[s->cur].blk, OHDR + size);
	s->objs++;
	s->obj_bytes += size;
	return 0;
}

/*
 * New blocks the writer needs to append objects of these sizes, packing them as
 * append() does; slack: an object may first skip the rest of a sector (the
 * next-fit packing can only need more blocks when objects grow).
 */
static uint32_t blocks_needed(const struct ssd_store *s, const uint32_t *sizes, unsigned int n,
			      uint32_t slack)
{
	uint32_t pos = s->cur >= 0 ? s->wpos : STREAM, k = 0;

	for (unsigned int i = 0; i < n; i++) {
		if (pos + OHDR + sizes[i] + slack > STREAM) {
			k++;
			pos = 0;
		}
		pos += OHDR + sizes[i] + slack;
	}
	return k;
}

/* ------------------------------------------------------------ block views */

/*
 * A log block as far as we have it: in a write buffer (all of it) or read from
 * the device into rbuf/gcbuf at its own offset, sectors [lo, hi).
 */
struct view {
	struct ssd_store *s;
	uint8_t *base;
	uint32_t blk, lo, hi;
	bool mem;
};

static uint8_t *mem_block(struct ssd_store *s, uint32_t blk)
{
	for (int i = 0; i < SSD_WB_BUFS; i++)
		if (s->wb[i].state != WB_FREE && s->wb[i].blk == blk)
			return s->wb[i].buf;
	return NULL;
}

static int view_ensure(struct view *v, uint32_t end)
{
	uint32_t spa = v->s->align / SSD_SECTOR, lo, hi;

	if (end > SPB)
		end = SPB;
	if (v->mem || end <= v->hi)
		return 0;
	lo = v->hi > v->lo ? v->hi : v->lo / spa * spa;
	hi = (uint32_t)round_up(end, spa);
	if (v->hi <= v->lo)
		v->lo = lo;
	if (io_rw(v->s, false, v->base + lo * SSD_SECTOR, (hi - lo) * SSD_SECTOR,
		  v->s->log_off + (uint64_t)v->blk * SSD_LOG_BLOCK + lo * SSD_SECTOR) < 0)
		return -1;
	v->hi = hi;
	return 0;
}

/* a view of block blk starting at sector first, reading nsec sectors now */
static int view_init(struct view *v, struct ssd_store *s, uint8_t *buf, uint32_t blk,
		     uint32_t first, uint32_t nsec)
{
	uint8_t *m = mem_block(s, blk);

	v->s = s;
	v->blk = blk;
	v->mem = m != NULL;
	v->base = m ? m : buf;
	v->lo = m ? 0 : first;
	v->hi = m ? SPB : first;
	return view_ensure(v, first + nsec);
}

/* ------------------------------------------------------------ open/close */

static int read_sb(struct ssd_store *s, uint8_t *buf)
{
	struct sb_disk sb;
	uint64_t dev, nb;

	if (io_rw(s, false, buf, SB_BYTES, 0) < 0)
		return -1;
	memcpy(&sb, buf, sizeof(sb));
	if (memcmp(sb.magic, SB_MAGIC, 8))
		return ssd_err(ENOENT, "%s: no SSDAlloc store here (no superblock); format it",
			       s->path);
	if (crc32c(&sb, offsetof(struct sb_disk, crc)) != le32toh(sb.crc))
		return ssd_err(ENOENT, "%s: the superblock's checksum is wrong; format it",
			       s->path);
	if (le32toh(sb.version) != SB_VERSION)
		return ssd_err(EBADMSG, "%s: store version %u, this library knows %u", s->path,
			       le32toh(sb.version), SB_VERSION);
	dev = le64toh(sb.dev_bytes);
	nb = le64toh(sb.log_blocks);
	if (dev > s->dev_bytes)
		return ssd_err(EBADMSG, "%s: the superblock says %llu bytes, the device has %llu",
			       s->path, (unsigned long long)dev,
			       (unsigned long long)s->dev_bytes);
	if (le32toh(sb.sb_bytes) != SB_BYTES || le32toh(sb.log_block) != SSD_LOG_BLOCK ||
	    le32toh(sb.sector) != SSD_SECTOR || le32toh(sb.flags))
		return ssd_err(EBADMSG, "%s: superblock with unknown geometry (block %u, sector %u)",
			       s->path, le32toh(sb.log_block), le32toh(sb.sector));
	/* every region must be exactly where the layout for this size puts it */
	if (nb < MIN_BLOCKS || nb != blocks_for(dev) ||
	    le64toh(sb.ckpt_off) != SSD_LOG_BLOCK ||
	    le64toh(sb.slot_bytes) != slot_bytes_for(nb) ||
	    le64toh(sb.log_off) != log_off_for(nb) || layout_end(nb) > dev)
		return ssd_err(EBADMSG,
			       "%s: inconsistent superblock: %llu log blocks, log at %llu, slots of %llu, checkpoint region at %llu for %llu bytes",
			       s->path, (unsigned long long)nb,
			       (unsigned long long)le64toh(sb.log_off),
			       (unsigned long long)le64toh(sb.slot_bytes),
			       (unsigned long long)le64toh(sb.ckpt_off),
			       (unsigned long long)dev);
	s->dev_bytes = dev;
	s->nblocks = (uint32_t)nb;
	memcpy(s->uuid, sb.uuid, 16);
	return 0;
}

static int write_sb(struct ssd_store *s, uint8_t *buf)
{
	struct sb_disk sb = { .version = htole32(SB_VERSION), .sb_bytes = htole32(SB_BYTES) };

	memcpy(sb.magic, SB_MAGIC, 8);
	memcpy(sb.uuid, s->uuid, 16);
	sb.dev_bytes = htole64(s->dev_bytes);
	sb.log_block = htole32(SSD_LOG_BLOCK);
	sb.sector = htole32(SSD_SECTOR);
	sb.ckpt_off = htole64(s->ckpt_off);
	sb.slot_bytes = htole64(s->slot_bytes);
	sb.log_off = htole64(s->log_off);
	sb.log_blocks = htole64(s->nblocks);
	sb.crc = htole32(crc32c(&sb, offsetof(struct sb_disk, crc)));
	memset(buf, 0, SB_BYTES);
	memcpy(buf, &sb, sizeof(sb));
	return io_rw(s, true, buf, SB_BYTES, 0);
}

/*
 * The devices this process has open as stores: a second open of one is refused at
 * once (no lock retry: the holder is alive, here).
 */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static struct open_dev {
	dev_t dev;
	ino_t ino;
	struct open_dev *next;
} *open_devs;

static bool open_find(dev_t dev, ino_t ino, bool remove)
{
	struct open_dev **p;

	for (p = &open_devs; *p; p = &(*p)->next)
		if ((*p)->dev == dev && (*p)->ino == ino) {
			if (remove) {
				struct open_dev *d = *p;

				*p = d->next;
				free(d);
			}
			return true;
		}
	return false;
}

/*
 * The exclusive lock on the device, retried for up to 2 s: a process killed with
 * the store open releases it only when its io_uring is torn down, which the
 * kernel does asynchronously, a little after the process is gone.
 */
static int lock_dev(int fd)
{
	for (int i = 0; i < 200; i++) {
		const struct timespec ts = { 0, 10 * 1000 * 1000 };

		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		nanosleep(&ts, NULL);
	}
	return -1;
}

static int open_dev(struct ssd_store *s, const char *path, uint64_t file_bytes)
{
	struct stat st;
	int fd;

	fd = open(path, O_RDWR | O_CLOEXEC | O_DIRECT);
	if (fd < 0 && errno == ENOENT && file_bytes)
		fd = open(path, O_RDWR | O_CLOEXEC | O_DIRECT | O_CREAT, 0600);
	if (fd < 0 && errno == EINVAL) {
		/* a filesystem without O_DIRECT (tmpfs): buffered, and fdatasync */
		fd = open(path, O_RDWR | O_CLOEXEC | (file_bytes ? O_CREAT : 0), 0600);
		s->direct = false;
	} else {
		s->direct = true;
	}
	if (fd < 0)
		return ssd_err(errno, "%s: cannot open: %s%s", path, strerror(errno),
			       errno == ENOENT ? " (give a size to create a file)" : "");
	s->fd = fd;
	if (fstat(fd, &st) < 0)
		return ssd_err(errno, "%s: fstat: %s", path, strerror(errno));
	pthread_mutex_lock(&open_lock);
	if (open_find(st.st_dev, S_ISBLK(st.st_mode) ? st.st_rdev : st.st_ino, false)) {
		pthread_mutex_unlock(&open_lock);
		return ssd_err(EBUSY, "%s: in use by another store", path);
	}
	pthread_mutex_unlock(&open_lock);
	if (S_ISBLK(st.st_mode)) {
		int lbs = 512;

		s->bdev = true;
		if (ioctl(fd, BLKGETSIZE64, &s->dev_bytes) < 0)
			return ssd_err(errno, "%s: BLKGETSIZE64: %s", path, strerror(errno));
		if (ioctl(fd, BLKSSZGET, &lbs) < 0)
			lbs = 4096;
		if (lbs < (int)SSD_SECTOR || lbs > (int)SB_BYTES || (lbs & (lbs - 1)))
			return ssd_err(EINVAL, "%s: logical block size %d not supported", path, lbs);
		s->align = (uint32_t)lbs;
		/* one user per device: refuse if the device is mounted or opened by a store */
		if (lock_dev(fd) < 0)
			return ssd_err(EBUSY, "%s: in use by another store", path);
	} else if (S_ISREG(st.st_mode)) {
		if (lock_dev(fd) < 0)
			return ssd_err(EBUSY, "%s: in use by another store", path);
		if (file_bytes > (uint64_t)st.st_size) {
			if (ftruncate(fd, (off_t)file_bytes) < 0)
				return ssd_err(errno, "%s: cannot grow to %llu bytes: %s", path,
					       (unsigned long long)file_bytes, strerror(errno));
			st.st_size = (off_t)file_bytes;
		}
		s->dev_bytes = (uint64_t)st.st_size;
		/* safe for direct I/O on any filesystem over <= 4 KiB logical blocks */
		s->align = 4096;
	} else {
		return ssd_err(EINVAL, "%s: neither a block device nor a regular file", path);
	}
	/* ours now (locked): a second open in this process fails at once */
	struct open_dev *d = malloc(sizeof(*d));

	if (!d)
		return ssd_err(ENOMEM, "out of memory");
	d->dev = st.st_dev;
	d->ino = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_ino;
	pthread_mutex_lock(&open_lock);
	d->next = open_devs;
	open_devs = d;
	pthread_mutex_unlock(&open_lock);
	s->reg_dev = d->dev;
	s->reg_ino = d->ino;
	s->registered = true;
	return 0;
}

static void store_free(struct ssd_store *s)
{
	if (s->fd >= 0) {
		if (s->ring.ring_fd > 0) {
			io_wait_all(s);
			io_uring_queue_exit(&s->ring);
		}
		close(s->fd);
	}
	if (s->registered) {	/* after the close: the lock is released */
		pthread_mutex_lock(&open_lock);
		open_find(s->reg_dev, s->reg_ino, true);
		pthread_mutex_unlock(&open_lock);
	}
	for (uint32_t i = 0; i < s->nots; i++) {
		free(s->ots[i].e);
		free(s->ots[i].sz);
		free(s->ots[i].ce);
		free(s->ots[i].csz);
	}
	free(s->ots);
	free(s->free_otids);
	free(s->ck_blob);
	for (int i = 0; i < SSD_WB_BUFS; i++)
		free(s->wb[i].buf);
	free(s->gcbuf);
	free(s->rbuf);
	free(s->gc_lo);
	free(s->gc_sizes);
	free(s->gc_keys);
	free(s->gc_tmp);
	free(s->gc_order);
	free(s->live);
	free(s->state);
	free(s->pinned);
	free(s->fq);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

struct ck {
	uint8_t *img;		/* the slot, validated */
	uint64_t gen;
	uint32_t ntables, head, tail;
	uint64_t tables_bytes, blob_bytes;
};

static int ck_read(struct ssd_store *s, int slot, struct ck *c, char *why, size_t whylen);
static void ck_blocks(const struct ck *c, uint8_t *mark);

/* the free queue: every non-used block, starting after block `after` */
static void fq_rebuild(struct ssd_store *s, uint32_t after)
{
	s->fq_head = 0;
	s->nfree = 0;
	for (uint32_t i = 1; i <= s->nblocks; i++) {
		uint32_t b = (after + i) % s->nblocks;

		if (s->state[b] == B_FREE)
			block_free(s, b);
	}
	s->cursor = (after + 1) % s->nblocks;
}

int ssd_store_open(struct ssd_store **out, const char *path, uint64_t file_bytes, bool format)
{
	struct ssd_store *s;
	uint8_t *buf = NULL;
	int err;

	pthread_once(&crc_once, crc_init);
	*out = NULL;
	if (!path || !*path)
		return ssd_err(EINVAL, "no device given");
	s = calloc(1, sizeof(*s));
	if (!s)
		return ssd_err(ENOMEM, "out of memory");
	s->fd = -1;
	s->cur = -1;
	pthread_mutex_init(&s->lock, NULL);
	snprintf(s->path, sizeof(s->path), "%s", path);
	if (open_dev(s, path, file_bytes) < 0)
		goto fail;
	if (s->dev_bytes < layout_end(MIN_BLOCKS)) {
		ssd_err(EINVAL, "%s: device too small: %llu bytes, need at least %llu", path,
			(unsigned long long)s->dev_bytes,
			(unsigned long long)layout_end(MIN_BLOCKS));
		goto fail;
	}
	err = io_uring_queue_init(RING_DEPTH, &s->ring, 0);
	if (err < 0) {
		s->ring.ring_fd = 0;
		ssd_err(-err, "io_uring_queue_init: %s", strerror(-err));
		goto fail;
	}
	if (posix_memalign((void **)&buf, 4096, SB_BYTES)) {
		ssd_err(ENOMEM, "out of memory");
		goto fail;
	}
	if (format) {
		s->nblocks = blocks_for(s->dev_bytes);
		if (getrandom(s->uuid, 16, 0) != 16) {
			ssd_err(EIO, "getrandom: %s", strerror(errno));
			goto fail;
		}
	} else if (read_sb(s, buf) < 0) {
		goto fail;
	}
	s->ckpt_off = SSD_LOG_BLOCK;
	s->slot_bytes = slot_bytes_for(s->nblocks);
	s->log_off = log_off_for(s->nblocks);

	s->live = calloc(s->nblocks, sizeof(*s->live));
	s->state = calloc(s->nblocks, 1);
	s->pinned = calloc(s->nblocks, 1);
	s->fq = calloc(s->nblocks, sizeof(*s->fq));
	s->gc_lo = calloc(STREAM / OHDR, sizeof(*s->gc_lo));
	s->gc_sizes = calloc(STREAM / OHDR, sizeof(*s->gc_sizes));
	s->gc_keys = calloc(GC_KEYS, sizeof(*s->gc_keys));
	s->gc_tmp = malloc(OBJ_MAX);
	s->gc_order = calloc(s->nblocks, sizeof(*s->gc_order));
	if (!s->live || !s->state || !s->pinned || !s->fq || !s->gc_lo || !s->gc_sizes || !s->gc_keys ||
	    !s->gc_tmp || !s->gc_order ||
	    posix_memalign((void **)&s->gcbuf, 4096, SSD_LOG_BLOCK) ||
	    posix_memalign((void **)&s->rbuf, 4096, SSD_LOG_BLOCK)) {
		ssd_err(ENOMEM, "out of memory for %u log blocks", s->nblocks);
		goto fail;
	}
	for (int i = 0; i < SSD_WB_BUFS; i++)
		if (posix_memalign((void **)&s->wb[i].buf, 4096, SSD_LOG_BLOCK)) {
			ssd_err(ENOMEM, "out of memory");
			goto fail;
		}

	if (format) {
		/* both slots empty first, then the superblock that makes it a store */
		memset(buf, 0, SB_BYTES);
		if (io_rw(s, true, buf, SB_BYTES, s->ckpt_off) < 0 ||
		    io_rw(s, true, buf, SB_BYTES, s->ckpt_off + s->slot_bytes) < 0 ||
		    write_sb(s, buf) < 0)
			goto fail;
		if (fdatasync(s->fd) < 0) {
			ssd_err(errno, "%s: format: fdatasync: %s", path, strerror(errno));
			goto fail;
		}
		fq_rebuild(s, s->nblocks - 1);
	} else {
		/* the last checkpoint's blocks stay untouched until the next one */
		struct ck c[2];
		char why[160];
		int best = -1;

		for (int i = 0; i < 2; i++)
			if (ck_read(s, i, &c[i], why, sizeof(why)) == 0 &&
			    (best < 0 || c[i].gen > c[best].gen))
				best = i;
		if (best >= 0) {
			s->ckpt_gen = c[best].gen;
			ck_blocks(&c[best], s->pinned);
			for (uint32_t b = 0; b < s->nblocks; b++)
				if (s->pinned[b]) {
					s->state[b] = B_USED;
					s->npinned++;
				}
		}
		for (int i = 0; i < 2; i++)
			if (c[i].img)
				free(c[i].img);
		fq_rebuild(s, best >= 0 ? c[best].tail : s->nblocks - 1);
	}
	free(buf);
	*out = s;
	return 0;
fail:
	err = errno;
	free(buf);
	store_free(s);
	errno = err;
	return -1;
}

void ssd_store_close(struct ssd_store *s)
{
	if (s)
		store_free(s);	/* in-flight writes complete; nothing is synced */
}

uint64_t ssd_store_log_bytes(const struct ssd_store *s)
{
	return (uint64_t)s->nblocks * SSD_LOG_BLOCK;
}

bool ssd_store_direct_io(const struct ssd_store *s)
{
	return s->direct;
}

void ssd_store_id(const struct ssd_store *s, uint8_t uuid[16], uint64_t *ckpt_gen)
{
	pthread_mutex_lock((pthread_mutex_t *)&s->lock);
	memcpy(uuid, s->uuid, 16);
	*ckpt_gen = s->ckpt_gen;
	pthread_mutex_unlock((pthread_mutex_t *)&s->lock);
}

/* ------------------------------------------------------------ Object Tables */

static int ot_alloc(struct ssd_store *s, uint32_t otid, uint32_t nobj)
{
	struct ot *t;

	if (otid >= s->nots) {
		uint32_t n = s->nots ? s->nots : 16;
		struct ot *o;

		while (n <= otid)
			n *= 2;
		o = realloc(s->ots, n * sizeof(*o));
		if (!o)
			return ssd_err(ENOMEM, "out of memory for %u Object Tables", n);
		memset(o + s->nots, 0, (n - s->nots) * sizeof(*o));
		s->ots = o;
		s->nots = n;
	}
	t = &s->ots[otid];
	t->e = calloc(nobj, sizeof(*t->e));
	t->sz = calloc(nobj, sizeof(*t->sz));
	if (!t->e || !t->sz) {
		free(t->e);
		free(t->sz);
		t->e = NULL;
		t->sz = NULL;
		return ssd_err(ENOMEM, "out of memory for an Object Table of %u objects", nobj);
	}
	t->nobj = nobj;
	t->used = true;
	s->ot_bytes += (uint64_t)nobj * (sizeof(*t->e) + sizeof(*t->sz));
	return 0;
}

int ssd_ot_create(struct ssd_store *s, uint32_t nobj, uint32_t *otid)
{
	uint32_t id = 0;
	int r;

	if (!nobj || nobj > MAX_NOBJ)
		return ssd_err(EINVAL, "Object Table of %u objects (1..%u)", nobj, MAX_NOBJ);
	pthread_mutex_lock(&s->lock);
	/*
	 * The lowest free otid; not one the last checkpoint still names (a
	 * destroyed durable table keeps its checkpoint view until the next one).
	 */
	while (id < s->nots && (s->ots[id].used || s->ots[id].ce))
		id++;
	if (id >= MAX_OTID) {
		pthread_mutex_unlock(&s->lock);
		return ssd_err(ENOSPC, "too many Object Tables (%u)", MAX_OTID);
	}
	r = ot_alloc(s, id, nobj);
	if (!r)
		*otid = id;
	pthread_mutex_unlock(&s->lock);
	return r;
}

static void ce_free(struct ssd_store *s, struct ot *t)
{
	if (!t->ce)
		return;
	s->ot_bytes -= (uint64_t)t->nobj * (sizeof(*t->ce) + sizeof(*t->csz));
	free(t->ce);
	free(t->csz);
	t->ce = NULL;
	t->csz = NULL;
	t->in_ck = false;
}

static int ce_alloc(struct ssd_store *s, struct ot *t)
{
	if (t->ce)
		return 0;
	t->ce = calloc(t->nobj, sizeof(*t->ce));
	t->csz = calloc(t->nobj, sizeof(*t->csz));
	if (!t->ce || !t->csz) {
		free(t->ce);
		free(t->csz);
		t->ce = NULL;
		t->csz = NULL;
		return ssd_err(ENOMEM, "out of memory for an Object Table of %u objects", t->nobj);
	}
	s->ot_bytes += (uint64_t)t->nobj * (sizeof(*t->ce) + sizeof(*t->csz));
	return 0;
}

/*
 * account: the objects become garbage (unless the checkpoint view names them:
 * then the slot stays, not used, until the next checkpoint); else everything
 * goes (restore replacing all tables).
 */
static void ot_release(struct ssd_store *s, uint32_t otid, bool account)
{
	struct ot *t = &s->ots[otid];
	bool keep = false;

	if (account)
		for (uint32_t i = 0; i < t->nobj; i++)
			entry_drop(s, t, i);
	if (t->used)
		s->ot_bytes -= (uint64_t)t->nobj * (sizeof(*t->e) + sizeof(*t->sz));
	free(t->e);
	free(t->sz);
	t->e = NULL;
	t->sz = NULL;
	t->used = false;
	t->durable = false;
	if (account && t->in_ck)
		keep = true;
	if (!keep) {
		/* a view that no checkpoint names yet (durable since the last one) */
		ce_free(s, t);
		memset(t, 0, sizeof(*t));
	}
}

void ssd_ot_destroy(struct ssd_store *s, uint32_t otid)
{
	pthread_mutex_lock(&s->lock);
	if (ot_get(s, otid))
		ot_release(s, otid, true);
	pthread_mutex_unlock(&s->lock);
}

int ssd_ot_set_durable(struct ssd_store *s, uint32_t otid, bool durable)
{
	struct ot *t;
	int r = 0;

	pthread_mutex_lock(&s->lock);
	t = ot_get(s, otid);
	if (!t) {
		r = ssd_err(EINVAL, "Object Table %u: no such table", otid);
	} else if (durable) {
		/* the view is allocated now: a checkpoint commit must not fail for memory */
		r = ce_alloc(s, t);
		if (!r)
			t->durable = true;
	} else {
		/* a view the last checkpoint names stays until the next one commits */
		t->durable = false;
		if (!t->in_ck)
			ce_free(s, t);
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* ------------------------------------------------------------------ reads */

static int obj_read(struct ssd_store *s, uint32_t otid, uint32_t oto, void *buf, uint32_t cap,
		    uint32_t *size)
{
	struct ot *t = ot_get(s, otid);
	struct view v;
	uint32_t gsec, blk, sec, off, pos, nsec, h[4], sz, crc;

	if (!t || oto >= t->nobj)
		return ssd_err(EINVAL, "object <%u,%u>: no such Object Table entry", otid, oto);
	if (!t->e[oto]) {
		*size = 0;
		return 0;
	}
	gsec = t->e[oto] - 1;
	blk = gsec / SPB;
	sec = gsec % SPB;
	if (blk >= s->nblocks)
		return ssd_err(EBADMSG, "object <%u,%u>: sector %u outside the log", otid, oto, gsec);
	/* the read rounded to the caller's size class: the header may start anywhere in sec */
	nsec = 1 + (OHDR + (cap < OBJ_MAX ? cap : OBJ_MAX) + SDATA - 1) / SDATA;
	if (view_init(&v, s, s->rbuf, blk, sec, nsec) < 0)
		return -1;
	off = get16(v.base + sec * SSD_SECTOR);
	if (off == NO_HDR || off < 2 || off >= SSD_SECTOR)
		return ssd_err(EBADMSG, "object <%u,%u>: sector %u has no object header (offset %#x)",
			       otid, oto, gsec, off);
	pos = sec * SDATA + off - 2;
	for (;;) {
		if (pos + OHDR > STREAM)
			goto bad;
		if (view_ensure(&v, (pos + OHDR - 1) / SDATA + 1) < 0)
			return -1;
		stream_get(v.base, pos, h, OHDR);
		sz = le32toh(h[2]);
		if (sz > OBJ_MAX || pos + OHDR + sz > STREAM)
			goto bad;
		if (le32toh(h[0]) == otid && le32toh(h[1]) == oto)
			break;
		pos += OHDR + sz;
		if (pos / SDATA != sec)
			return ssd_err(EBADMSG, "object <%u,%u>: not found in sector %u (back-pointer)",
				       otid, oto, gsec);
	}
	if (sz != t->sz[oto] + 1u)
		return ssd_err(EBADMSG, "object <%u,%u> at sector %u: %u bytes, %u written", otid, oto,
			       gsec, sz, t->sz[oto] + 1u);
	if (sz > cap) {
		*size = sz;
		return ssd_err(EMSGSIZE, "object <%u,%u>: %u bytes, buffer of %u", otid, oto, sz, cap);
	}
	/* bigger than the rounded read: read the rest */
	if (view_ensure(&v, (pos + OHDR + sz - 1) / SDATA + 1) < 0)
		return -1;
	crc = crc_upd(~0u, h, 12);
	crc = ~stream_crc(crc, v.base, pos + OHDR, sz);
	if (crc != le32toh(h[3]))
		return ssd_err(EBADMSG, "object <%u,%u> at sector %u: checksum mismatch", otid, oto,
			       gsec);
	stream_get(v.base, pos + OHDR, buf, sz);
	*size = sz;
	return 0;
bad:
	return ssd_err(EBADMSG, "object <%u,%u> at sector %u: bad object header chain", otid, oto,
		       gsec);
}

int ssd_obj_read(struct ssd_store *s, uint32_t otid, uint32_t oto, void *buf, uint32_t cap,
		 uint32_t *size)
{
	int r;

	*size = 0;
	pthread_mutex_lock(&s->lock);
	r = obj_read(s, otid, oto, buf, cap, size);
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* ---------------------------------------------------------------- cleaner */

/*
 * The live objects of block b, read into gcbuf: those whose Object Table entry
 * names the sector their header starts in. *bad: a live object whose bytes do
 * not check (it stays where it is).
 */
static int gc_scan(struct ssd_store *s, uint32_t b, struct live_obj *lo, unsigned int *n,
		   uint32_t *sizes)
{
	uint32_t h[4];

	*n = 0;
	if (io_rw(s, false, s->gcbuf, SSD_LOG_BLOCK, s->log_off + (uint64_t)b * SSD_LOG_BLOCK) < 0)
		return -1;
	for (uint32_t sec = 0; sec < SPB; sec++) {
		uint32_t off = get16(s->gcbuf + sec * SSD_SECTOR), pos;

		if (off == NO_HDR || off < 2 || off >= SSD_SECTOR)
			continue;
		for (pos = sec * SDATA + off - 2; pos / SDATA == sec;) {
			struct ot *t;
			uint32_t sz, k;

			if (pos + OHDR > STREAM)
				break;
			stream_get(s->gcbuf, pos, h, OHDR);
			sz = le32toh(h[2]);
			if (sz > OBJ_MAX || pos + OHDR + sz > STREAM)
				break;	/* padding or garbage: nothing more starts here */
			t = ot_any(s, le32toh(h[0]));
			k = le32toh(h[1]);
			/* live in either view: the entry names this sector, with this size */
			if (t && k < t->nobj &&
			    ((t->used && t->e[k] == b * SPB + sec + 1 && t->sz[k] + 1u == sz) ||
			     (t->ce && t->ce[k] == b * SPB + sec + 1 && t->csz[k] + 1u == sz))) {
				uint32_t c = ~stream_crc(crc_upd(~0u, h, 12), s->gcbuf, pos + OHDR, sz);

				if (c == le32toh(h[3]) && *n < STREAM / OHDR) {
					lo[*n] = (struct live_obj){ pos, sz, le32toh(h[0]),
								    le32toh(h[1]), b * SPB + sec };
					sizes[(*n)++] = sz;
				}
			}
			pos += OHDR + sz;
		}
	}
	return 0;
}

/*
 * A set of <otid, oto> keys (open addressing, 0 = empty: keys are stored + 1):
 * every header in the block being filled, and every object moved so far, to
 * tell which moves may skip a sector in append() (sector_holds).
 */

static uint64_t gkey(uint32_t otid, uint32_t oto)
{
	return ((uint64_t)otid << 32 | oto) + 1;
}

/* adds k; true if it was there */
static bool gkeys_add(uint64_t *set, uint64_t k)
{
	uint64_t i = (k * 0x9e3779b97f4a7c15ull) % GC_KEYS;

	while (set[i]) {
		if (set[i] == k)
			return true;
		i = (i + 1) % GC_KEYS;
	}
	set[i] = k;
	return false;
}

static void gkeys_fill(struct ssd_store *s)
{
	struct { uint32_t otid, oto, size, crc; } h;
	const uint8_t *buf;

	memset(s->gc_keys, 0, GC_KEYS * sizeof(*s->gc_keys));
	if (s->cur < 0)
		return;
	buf = s->wb[s->cur].buf;
	/* our own buffer: a header chain from 0 to wpos, padding only at sector ends
	 * that a header skipped (walk each sector from its first header) */
	for (uint32_t sec = 0; sec * SDATA < s->wpos; sec++) {
		uint16_t first = get16(buf + sec * SSD_SECTOR);

		if (first == NO_HDR || first < 2 || first >= SSD_SECTOR)
			continue;
		for (uint32_t p = sec * SDATA + first - 2; p < (sec + 1) * SDATA &&
		     p + OHDR <= s->wpos; p += OHDR + le32toh(h.size)) {
			stream_get(buf, p, &h, OHDR);
			gkeys_add(s->gc_keys, gkey(le32toh(h.otid), le32toh(h.oto)));
			if (le32toh(h.size) > OBJ_MAX)
				break;
		}
	}
}

/*
 * Moves block b's live objects (either view) to the head of the log; 1 if b is
 * free after. A pinned block is held instead (free after the next durable slot).
 */
static int gc_clean(struct ssd_store *s, uint32_t b, uint32_t may_use)
{
	uint32_t cblk = s->cur >= 0 ? s->wb[s->cur].blk : UINT32_MAX;
	unsigned int n;

	if (gc_scan(s, b, s->gc_lo, &n, s->gc_sizes) < 0)
		return -1;
	/*
	 * A move may skip the rest of a sector when a header of its key is in the
	 * block being filled (either view's version, or a discarded one: append()),
	 * or was moved just before it (both views' versions in block b).
	 */
	gkeys_fill(s);
	for (unsigned int i = 0; i < n; i++) {
		struct ot *t = &s->ots[s->gc_lo[i].otid];
		uint32_t k = s->gc_lo[i].oto;

		if (gkeys_add(s->gc_keys, gkey(s->gc_lo[i].otid, k)) ||
		    (t->used && t->e[k] && (t->e[k] - 1) / SPB == cblk) ||
		    (t->ce && t->ce[k] && (t->ce[k] - 1) / SPB == cblk))
			s->gc_sizes[i] += SDATA - 1;
	}
	/*
	 * may_use: the new blocks it may take. An unpinned block: never more than
	 * the block it frees, one (the write reserve guarantees one), so cleaning
	 * cannot leave the log with no free block and no way to make one. A pinned
	 * one: any free block, the relocation checkpoint that follows frees it.
	 */
	if (blocks_needed(s, s->gc_sizes, n, 0) > (s->nfree < may_use ? s->nfree : may_use))
		return 0;
	s->gc_runs++;
	for (unsigned int i = 0; i < n; i++) {
		struct live_obj *o = &s->gc_lo[i];
		struct ot *t = &s->ots[o->otid];
		bool cur = t->used && t->e[o->oto] == o->gsec + 1;
		bool ck = t->ce && t->ce[o->oto] == o->gsec + 1;
		uint32_t h[4], gsec;

		if (!cur && !ck)
			continue;	/* a second header claiming it (crafted): moved already */
		stream_get(s->gcbuf, o->pos, h, OHDR);
		stream_get(s->gcbuf, o->pos + OHDR, s->gc_tmp, o->size);
		if (append(s, o->otid, o->oto, o->size, s->gc_tmp, le32toh(h[3]),
			   t->used ? t->e[o->oto] : 0, t->ce ? t->ce[o->oto] : 0, &gsec) < 0)
			return -1;
		s->objs--;		/* a move, not an application write */
		s->obj_bytes -= o->size;
		live_sub(s, b, OHDR + o->size);
		if (cur)
			t->e[o->oto] = gsec + 1;
		if (ck)
			t->ce[o->oto] = gsec + 1;
		s->gc_moves++;
		s->gc_move_bytes += o->size;
	}
	if (s->live[b]) {
		/* live objects we could not find or that do not check: keep the block */
		s->state[b] = B_BAD;
		s->nbad++;
		return 0;
	}
	if (s->pinned[b]) {
		s->state[b] = B_HELD;
		s->nheld++;
		return 0;
	}
	block_free(s, b);
	return 1;
}

static int ck_relocate(struct ssd_store *s);
extern void (*ssd_store_test_hook)(int step);

/* blocks the cleaner may empty: all but bad ones, and opaque pins (open without restore) */
static uint32_t cleanable(const struct ssd_store *s)
{
	return s->nblocks - s->nbad - (s->ck_known ? 0 : s->npinned);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Cleans pinned blocks, the least live first (the most room for a read and a
 * move), while their objects fit the free blocks, until free + held blocks
 * reach want. Their objects' new locations become durable with the relocation
 * checkpoint the caller writes next, which makes the held blocks free.
 */
static int gc_pinned(struct ssd_store *s, uint32_t want)
{
	uint32_t n = 0;

	for (uint32_t b = 0; b < s->nblocks; b++)
		if (s->state[b] == B_USED && s->pinned[b])
			s->gc_order[n++] = (uint64_t)s->live[b] << 32 | b;
	qsort(s->gc_order, n, sizeof(*s->gc_order), cmp_u64);
	for (uint32_t i = 0; i < n && s->nfree + s->nheld < want; i++) {
		uint32_t b = (uint32_t)s->gc_order[i], held = s->nheld;

		if (s->state[b] != B_USED)
			continue;
		if (!s->live[b]) {
			s->state[b] = B_HELD;	/* nothing live: no read */
			s->nheld++;
			continue;
		}
		if (s->live[b] >= STREAM - SDATA)
			break;			/* full: nothing to gain, nor after it */
		if (gc_clean(s, b, s->nfree) < 0)
			return -1;
		if (s->nheld == held && s->state[b] == B_USED)
			break;			/* no room left to move into */
	}
	return 0;
}

/*
 * Makes room for appending objects of these sizes: as many free blocks as they
 * need plus SSD_GC_RESERVE that only the cleaner may use (it needs one to move
 * live objects into), and SSD_GC_LOW more when cleaning can get them. Unpinned
 * blocks first, from the log's head (pass 0 skips mostly live ones, little to
 * gain for a read; pass 1 takes any); then, when the batch still does not fit,
 * pinned ones (gc_pinned), made free by a relocation checkpoint. Each pass
 * visits each block at most once and there are at most SSD_GC_ROUNDS rounds, each
 * ending in a relocation that freed blocks, so it ends; changes nothing the
 * caller can see but object locations.
 */
#define SSD_GC_ROUNDS	8
static int ensure_space(struct ssd_store *s, const uint32_t *sizes, unsigned int n,
			uint64_t bytes)
{
	uint32_t k = blocks_needed(s, sizes, n, SDATA - 1) + SSD_GC_RESERVE;

	if (s->nfree >= k + SSD_GC_LOW)
		return 0;
	/* cheap refusal when even perfect packing could not fit it */
	if (s->nfree + s->nheld < k &&
	    s->live_total + bytes > (uint64_t)(cleanable(s) - SSD_GC_RESERVE) * STREAM)
		goto nospc;
	for (int round = 0; round < SSD_GC_ROUNDS; round++) {
		for (int pass = 0; pass < 2 && s->nfree < k + SSD_GC_LOW; pass++) {
			for (uint32_t i = 0; i < s->nblocks && s->nfree < k + SSD_GC_LOW; i++) {
				uint32_t b = s->cursor;

				s->cursor = (s->cursor + 1) % s->nblocks;
				if (s->state[b] != B_USED || s->pinned[b])
					continue;
				if (!s->live[b]) {
					block_free(s, b);	/* nothing live: no read */
					continue;
				}
				if (pass == 0 && s->live[b] > STREAM / 4 * 3)
					continue;
				if (gc_clean(s, b, 1) < 0)
					return -1;
				k = blocks_needed(s, sizes, n, SDATA - 1) + SSD_GC_RESERVE;
			}
			/* enough for the batch: the rest of the watermark can wait */
			if (s->nfree >= k)
				return 0;
		}
		if (s->nfree >= k)
			return 0;
		if (!s->ck_known)
			break;	/* opaque pins (opened without restore): nothing known to move */
		if (gc_pinned(s, k + SSD_GC_LOW) < 0)
			return -1;
		if (!s->nheld)
			break;
		/* the new locations of the cleaned pinned blocks' objects become durable */
		if (ck_relocate(s) < 0)
			return -1;
		k = blocks_needed(s, sizes, n, SDATA - 1) + SSD_GC_RESERVE;
		if (s->nfree >= k)
			return 0;
	}
	if (s->nfree >= k)
		return 0;
nospc:
	return ssd_err(ENOSPC,
		       "%s: log full: %llu live bytes (current objects and the last checkpoint's versions of rewritten ones; %llu in blocks the last checkpoint pins) in %u usable blocks of %u bytes, %llu more asked",
		       s->path, (unsigned long long)s->live_total,
		       (unsigned long long)(s->live_total - s->live_unpinned), cleanable(s),
		       STREAM, (unsigned long long)bytes);
}

/* ----------------------------------------------------------------- writes */

int ssd_obj_write(struct ssd_store *s, const struct ssd_obj *objs, unsigned int n)
{
	uint32_t *sizes;
	uint64_t bytes = 0;
	unsigned int m = 0;
	int r = -1;

	sizes = malloc((n ? n : 1) * sizeof(*sizes));
	if (!sizes)
		return ssd_err(ENOMEM, "out of memory");
	pthread_mutex_lock(&s->lock);
	if (check_io_err(s) < 0)
		goto out;
	for (unsigned int i = 0; i < n; i++) {
		struct ot *t = ot_get(s, objs[i].otid);

		if (!t || objs[i].oto >= t->nobj) {
			ssd_err(EINVAL, "write of object <%u,%u>: no such Object Table entry",
				objs[i].otid, objs[i].oto);
			goto out;
		}
		if (objs[i].size > OBJ_MAX || (objs[i].size && !objs[i].data)) {
			ssd_err(EINVAL, "write of object <%u,%u>: %u bytes (at most %u)",
				objs[i].otid, objs[i].oto, objs[i].size, OBJ_MAX);
			goto out;
		}
		if (objs[i].size) {
			sizes[m++] = objs[i].size;
			bytes += OHDR + objs[i].size;
		}
	}
	if (ensure_space(s, sizes, m, bytes) < 0)
		goto out;
	for (unsigned int i = 0; i < n; i++) {
		const struct ssd_obj *o = &objs[i];
		struct ot *t = &s->ots[o->otid];
		uint32_t gsec;

		if (!o->size) {		/* nothing to keep: reads as never written */
			entry_drop(s, t, o->oto);
			continue;
		}
		if (append(s, o->otid, o->oto, o->size, o->data,
			   obj_crc(o->otid, o->oto, o->size, o->data), t->e[o->oto],
			   t->ce ? t->ce[o->oto] : 0, &gsec) < 0)
			goto out;
		entry_drop(s, t, o->oto);
		t->e[o->oto] = gsec + 1;
		t->sz[o->oto] = (uint16_t)(o->size - 1);
	}
	r = 0;
out:
	pthread_mutex_unlock(&s->lock);
	free(sizes);
	return r;
}

void ssd_obj_discard(struct ssd_store *s, uint32_t otid, uint32_t oto)
{
	struct ot *t;

	pthread_mutex_lock(&s->lock);
	t = ot_get(s, otid);
	if (t && oto < t->nobj)
		entry_drop(s, t, oto);
	pthread_mutex_unlock(&s->lock);
}

static int store_sync(struct ssd_store *s)
{
	if (s->cur >= 0 && s->wpos > s->wsynced) {
		struct wbuf *w = &s->wb[s->cur];
		uint32_t from = (uint32_t)((s->wsynced / SDATA) * SSD_SECTOR / s->align * s->align);
		uint32_t to = (uint32_t)round_up(((s->wpos - 1) / SDATA + 1) * SSD_SECTOR, s->align);

		if (io_rw(s, true, w->buf + from, to - from,
			  s->log_off + (uint64_t)w->blk * SSD_LOG_BLOCK + from) < 0)
			return -1;
		s->wsynced = s->wpos;
	}
	if (io_wait_all(s) < 0 || check_io_err(s) < 0)
		return -1;
	if (fdatasync(s->fd) < 0)
		return ssd_err(errno, "%s: fdatasync: %s", s->path, strerror(errno));
	return 0;
}

int ssd_store_sync(struct ssd_store *s)
{
	int r;

	pthread_mutex_lock(&s->lock);
	r = store_sync(s);
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* ------------------------------------------------------------- checkpoints */

static uint64_t slot_off(const struct ssd_store *s, uint64_t gen)
{
	return s->ckpt_off + (gen & 1) * s->slot_bytes;
}

/*
 * Writes generation ckpt_gen + 1 to its slot and fdatasyncs: the durable tables'
 * current entries (a user checkpoint) or, reloc, the tables of the last
 * checkpoint with their checkpoint view (same state, new locations). Everything
 * appended is synced first, so every object the slot names is durable.
 */
static int ck_write(struct ssd_store *s, bool reloc, const void *blob, size_t len)
{
	struct ck_disk h = { .version = htole32(CK_VERSION), .hdr_bytes = htole32(sizeof(h)) };
	uint64_t tables = 0, total, gen;
	uint32_t ntables = 0;
	uint8_t *img = NULL, *p;
	int r = -1;

	for (uint32_t i = 0; i < s->nots; i++) {
		struct ot *t = &s->ots[i];

		if (reloc ? t->in_ck : t->used && t->durable) {
			ntables++;
			tables += 8 + 4ull * t->nobj;
		}
	}
	total = sizeof(h) + tables + len;
	if (total > s->slot_bytes)
		return ssd_err(ENOSPC, "%s: checkpoint of %llu bytes (%u Object Tables, blob %zu) does not fit the slot of %llu",
			       s->path, (unsigned long long)total, ntables, len,
			       (unsigned long long)s->slot_bytes);
	if (store_sync(s) < 0)
		return -1;
	if (posix_memalign((void **)&img, 4096, round_up(total, s->align)))
		return ssd_err(ENOMEM, "out of memory for a checkpoint of %llu bytes",
			       (unsigned long long)total);
	gen = s->ckpt_gen + 1;
	memcpy(h.magic, CK_MAGIC, 8);
	h.gen = htole64(gen);
	memcpy(h.uuid, s->uuid, 16);
	h.log_blocks = htole32(s->nblocks);
	h.ntables = htole32(ntables);
	h.tables_bytes = htole64(tables);
	h.blob_bytes = htole64(len);
	h.head = htole32(s->cursor);
	h.tail = htole32(s->cur >= 0 ? s->wb[s->cur].blk : (s->cursor + s->nblocks - 1) % s->nblocks);
	p = img + sizeof(h);
	for (uint32_t i = 0; i < s->nots; i++) {
		struct ot *t = &s->ots[i];
		uint32_t v[2] = { htole32(i), htole32(t->nobj) };
		const uint32_t *ent = reloc ? t->ce : t->e;

		if (!(reloc ? t->in_ck : t->used && t->durable))
			continue;
		memcpy(p, v, 8);
		p += 8;
		for (uint32_t k = 0; k < t->nobj; k++, p += 4) {
			uint32_t e = htole32(ent[k]);

			memcpy(p, &e, 4);
		}
	}
	if (len)
		memcpy(p, blob, len);
	memset(img + total, 0, round_up(total, s->align) - total);
	memcpy(img, &h, sizeof(h));
	h.crc = htole32(crc32c(img, total));
	memcpy(img, &h, sizeof(h));
	if (io_rw(s, true, img, round_up(total, s->align), slot_off(s, gen)) < 0)
		goto out;
	if (reloc && ssd_store_test_hook)
		ssd_store_test_hook(1);
	if (fdatasync(s->fd) < 0) {
		ssd_err(errno, "%s: fdatasync: %s", s->path, strerror(errno));
		goto out;
	}
	s->ckpt_gen = gen;
	r = 0;
out:
	free(img);
	return r;
}

/*
 * test-store.c's hook (not exported from the library; NULL otherwise): called
 * at the steps of a relocation checkpoint (0: before its slot is written, 1:
 * written, not yet fdatasynced, 2: committed), so that a test can kill the
 * process exactly there.
 */
void (*ssd_store_test_hook)(int step);

/* a relocation checkpoint: frees the held blocks (store_lock held) */
static int ck_relocate(struct ssd_store *s)
{
	if (ssd_store_test_hook)
		ssd_store_test_hook(0);
	if (ck_write(s, true, s->ck_blob, s->ck_blob_len) < 0)
		return -1;
	s->relocations++;
	repin(s);
	if (ssd_store_test_hook)
		ssd_store_test_hook(2);
	return 0;
}

int ssd_store_checkpoint(struct ssd_store *s, const void *blob, size_t len)
{
	uint8_t *copy;
	int r = -1;

	/* taken before the slot is written: nothing after it may fail */
	copy = malloc(len ? len : 1);
	if (!copy)
		return ssd_err(ENOMEM, "out of memory for a checkpoint blob of %zu bytes", len);
	if (len)
		memcpy(copy, blob, len);
	pthread_mutex_lock(&s->lock);
	if (ck_write(s, false, blob, len) < 0) {
		free(copy);
		goto out;
	}
	/*
	 * Committed: the durable tables' current entries are the checkpoint view
	 * now; the versions only the old view named are garbage, and the views of
	 * tables not in this checkpoint (destroyed or made volatile) go.
	 */
	for (uint32_t i = 0; i < s->nots; i++) {
		struct ot *t = &s->ots[i];

		if (!t->ce)
			continue;
		for (uint32_t k = 0; k < t->nobj; k++)
			if (t->ce[k] && !(t->used && t->e[k] == t->ce[k]))
				live_sub(s, (t->ce[k] - 1) / SPB, ent_bytes(t->csz, k));
		if (t->used && t->durable) {
			memcpy(t->ce, t->e, t->nobj * sizeof(*t->ce));
			memcpy(t->csz, t->sz, t->nobj * sizeof(*t->csz));
			t->in_ck = true;
		} else {
			ce_free(s, t);
			if (!t->used)
				memset(t, 0, sizeof(*t));
		}
	}
	free(s->ck_blob);
	s->ck_blob = copy;
	s->ck_blob_len = len;
	repin(s);
	s->checkpoints++;
	r = 0;
out:
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* reads and validates a slot; 0 with c->img set, or -1 with the reason in why */
static int ck_read(struct ssd_store *s, int slot, struct ck *c, char *why, size_t whylen)
{
	uint64_t off = s->ckpt_off + (uint64_t)slot * s->slot_bytes, total, tb;
	struct ck_disk h;
	uint8_t *img = NULL;
	const uint8_t *p, *end;
	uint32_t crc;

	memset(c, 0, sizeof(*c));
	if (posix_memalign((void **)&img, 4096, SB_BYTES)) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (io_rw(s, false, img, SB_BYTES, off) < 0) {
		snprintf(why, whylen, "%s", ssd_strerror());
		goto bad;
	}
	memcpy(&h, img, sizeof(h));
	if (memcmp(h.magic, CK_MAGIC, 8)) {
		snprintf(why, whylen, "empty");
		goto bad;
	}
	tb = le64toh(h.tables_bytes);
	total = sizeof(h) + tb + le64toh(h.blob_bytes);
	if (le32toh(h.version) != CK_VERSION || le32toh(h.hdr_bytes) != sizeof(h) ||
	    tb > s->slot_bytes || le64toh(h.blob_bytes) > s->slot_bytes ||
	    total > s->slot_bytes) {
		snprintf(why, whylen, "bad header (version %u, %llu + %llu bytes in a slot of %llu)",
			 le32toh(h.version), (unsigned long long)tb,
			 (unsigned long long)le64toh(h.blob_bytes),
			 (unsigned long long)s->slot_bytes);
		goto bad;
	}
	free(img);
	img = NULL;
	if (posix_memalign((void **)&img, 4096, round_up(total, s->align))) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	if (io_rw(s, false, img, round_up(total, s->align), off) < 0) {
		snprintf(why, whylen, "%s", ssd_strerror());
		goto bad;
	}
	memcpy(&h, img, sizeof(h));
	crc = le32toh(h.crc);
	((struct ck_disk *)img)->crc = 0;
	if (crc32c(img, total) != crc) {
		snprintf(why, whylen, "checksum mismatch (torn or damaged)");
		goto bad;
	}
	if (memcmp(h.uuid, s->uuid, 16)) {
		snprintf(why, whylen, "from another store (uuid)");
		goto bad;
	}
	if (le32toh(h.log_blocks) != s->nblocks || le32toh(h.head) >= s->nblocks ||
	    le32toh(h.tail) >= s->nblocks) {
		snprintf(why, whylen, "for %u log blocks, head %u, tail %u; the store has %u",
			 le32toh(h.log_blocks), le32toh(h.head), le32toh(h.tail), s->nblocks);
		goto bad;
	}
	/* (a generation near 2^64 is crafted: ours count up from 1 and never get there,
	 * and one more would wrap to 0, which no slot may hold) */
	if (!le64toh(h.gen) || le64toh(h.gen) > (UINT64_C(1) << 62) ||
	    (le64toh(h.gen) & 1) != (uint64_t)slot) {
		snprintf(why, whylen, "generation %llu in slot %d",
			 (unsigned long long)le64toh(h.gen), slot);
		goto bad;
	}
	/* the tables: within their length, otids unique and bounded, entries in the log */
	p = img + sizeof(h);
	end = p + tb;
	for (uint32_t i = 0, prev = 0; i < le32toh(h.ntables); i++) {
		uint32_t v[2], nobj, otid;

		if (end - p < 8) {
			snprintf(why, whylen, "%u tables do not fit %llu bytes",
				 le32toh(h.ntables), (unsigned long long)tb);
			goto bad;
		}
		memcpy(v, p, 8);
		otid = le32toh(v[0]);
		nobj = le32toh(v[1]);
		p += 8;
		if (otid >= MAX_OTID || (i && otid <= prev) || !nobj || nobj > MAX_NOBJ ||
		    (uint64_t)(end - p) < 4ull * nobj) {
			snprintf(why, whylen, "table %u: otid %u with %u objects (%lld bytes left)", i,
				 otid, nobj, (long long)(end - p));
			goto bad;
		}
		prev = otid;
		for (uint32_t k = 0; k < nobj; k++, p += 4) {
			uint32_t e;

			memcpy(&e, p, 4);
			e = le32toh(e);
			if (e > s->nblocks * SPB) {
				snprintf(why, whylen,
					 "object <%u,%u> at sector %u, outside the log (%u sectors)",
					 otid, k, e - 1, s->nblocks * SPB);
				goto bad;
			}
		}
	}
	if (p != end) {
		snprintf(why, whylen, "table bytes %llu, tables end at %lld", (unsigned long long)tb,
			 (long long)(p - img - sizeof(h)));
		goto bad;
	}
	c->img = img;
	c->gen = le64toh(h.gen);
	c->ntables = le32toh(h.ntables);
	c->head = le32toh(h.head);
	c->tail = le32toh(h.tail);
	c->tables_bytes = tb;
	c->blob_bytes = le64toh(h.blob_bytes);
	return 0;
bad:
	free(img);
	return -1;
}

/* the blocks a validated checkpoint's entries point into */
static void ck_blocks(const struct ck *c, uint8_t *mark)
{
	const uint8_t *p = c->img + sizeof(struct ck_disk);

	for (uint32_t i = 0; i < c->ntables; i++) {
		uint32_t v[2], e;

		memcpy(v, p, 8);
		p += 8;
		for (uint32_t k = 0; k < le32toh(v[1]); k++, p += 4) {
			memcpy(&e, p, 4);
			if (e)
				mark[(le32toh(e) - 1) / SPB] = 1;
		}
	}
}

/*
 * Installs checkpoint c: builds its tables, then finds every object in the log
 * (header at the entry's sector, back-pointer, size, CRC) to get the sizes and
 * the per-block live bytes. Nothing changes if an object is missing.
 */
static int ck_install(struct ssd_store *s, const struct ck *c)
{
	struct ssd_store n = { 0 };	/* the new tables and counters */
	const uint8_t *p = c->img + sizeof(struct ck_disk);
	uint8_t *mark = calloc(s->nblocks, 1), **found = NULL, *blob = NULL;
	uint64_t want = 0, got = 0;
	uint32_t maxid = 0;
	int r = -1;

	n.live = calloc(s->nblocks, sizeof(*n.live));
	if (!mark || !n.live) {
		ssd_err(ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < c->ntables; i++) {
		uint32_t v[2], e;

		memcpy(v, p, 8);
		p += 8;
		maxid = le32toh(v[0]) + 1;
		if (ot_alloc(&n, le32toh(v[0]), le32toh(v[1])) < 0)
			goto out;
		for (uint32_t k = 0; k < le32toh(v[1]); k++, p += 4) {
			memcpy(&e, p, 4);
			n.ots[le32toh(v[0])].e[k] = le32toh(e);
			if (e) {
				mark[(le32toh(e) - 1) / SPB] = 1;
				want++;
			}
		}
	}
	found = calloc(maxid ? maxid : 1, sizeof(*found));
	if (!found) {
		ssd_err(ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < maxid; i++)
		if (n.ots && n.ots[i].used && !(found[i] = calloc((n.ots[i].nobj + 7) / 8, 1))) {
			ssd_err(ENOMEM, "out of memory");
			goto out;
		}
	for (uint32_t b = 0; b < s->nblocks; b++) {
		uint32_t h[4];

		if (!mark[b])
			continue;
		if (io_rw(s, false, s->gcbuf, SSD_LOG_BLOCK,
			  s->log_off + (uint64_t)b * SSD_LOG_BLOCK) < 0)
			goto out;
		for (uint32_t sec = 0; sec < SPB; sec++) {
			uint32_t off = get16(s->gcbuf + sec * SSD_SECTOR), pos;

			if (off == NO_HDR || off < 2 || off >= SSD_SECTOR)
				continue;
			for (pos = sec * SDATA + off - 2; pos / SDATA == sec;) {
				uint32_t otid, oto, sz;

				if (pos + OHDR > STREAM)
					break;
				stream_get(s->gcbuf, pos, h, OHDR);
				otid = le32toh(h[0]);
				oto = le32toh(h[1]);
				sz = le32toh(h[2]);
				if (sz > OBJ_MAX || pos + OHDR + sz > STREAM)
					break;
				if (sz && otid < maxid && n.ots[otid].used && oto < n.ots[otid].nobj &&
				    n.ots[otid].e[oto] == b * SPB + sec + 1 &&
				    !(found[otid][oto / 8] & (1u << (oto % 8))) &&
				    ~stream_crc(crc_upd(~0u, h, 12), s->gcbuf, pos + OHDR, sz) ==
				    le32toh(h[3])) {
					found[otid][oto / 8] |= (uint8_t)(1u << (oto % 8));
					n.ots[otid].sz[oto] = (uint16_t)(sz - 1);
					n.live[b] += OHDR + sz;
					got++;
				}
				pos += OHDR + sz;
			}
		}
	}
	if (got != want) {
		for (uint32_t i = 0; i < maxid; i++)
			for (uint32_t k = 0; n.ots[i].used && k < n.ots[i].nobj; k++)
				if (n.ots[i].e[k] && !(found[i][k / 8] & (1u << (k % 8)))) {
					ssd_err(EBADMSG,
						"checkpoint %llu: object <%u,%u> is not at sector %u of the log (missing, wrong back-pointer or checksum); %llu of %llu objects found",
						(unsigned long long)c->gen, i, k, n.ots[i].e[k] - 1,
						(unsigned long long)got, (unsigned long long)want);
					goto out;
				}
		ssd_err(EBADMSG, "checkpoint %llu: %llu of %llu objects found",
			(unsigned long long)c->gen, (unsigned long long)got,
			(unsigned long long)want);
		goto out;
	}

	/* the restored tables are durable, and what the durable slot names */
	blob = malloc(c->blob_bytes ? c->blob_bytes : 1);
	if (!blob) {
		ssd_err(ENOMEM, "out of memory for a blob of %llu bytes",
			(unsigned long long)c->blob_bytes);
		goto out;
	}
	memcpy(blob, c->img + sizeof(struct ck_disk) + c->tables_bytes, c->blob_bytes);
	for (uint32_t i = 0; i < n.nots; i++) {
		struct ot *t = &n.ots[i];

		if (!t->used)
			continue;
		if (ce_alloc(&n, t) < 0)
			goto out;
		memcpy(t->ce, t->e, t->nobj * sizeof(*t->ce));
		memcpy(t->csz, t->sz, t->nobj * sizeof(*t->csz));
		t->durable = t->in_ck = true;
	}

	/* commit: nothing of the running state survives */
	io_wait_all(s);
	if (s->cur >= 0)
		s->wb[s->cur].state = WB_FREE;	/* unsynced appends: dropped */
	s->cur = -1;
	s->io_err = 0;
	for (uint32_t i = 0; i < s->nots; i++)
		if (s->ots[i].used || s->ots[i].ce)
			ot_release(s, i, false);
	free(s->ots);
	free(s->free_otids);
	s->ots = n.ots;
	s->nots = n.nots;
	s->ot_bytes = n.ot_bytes;
	s->free_otids = NULL;
	s->nfree_otids = 0;
	n.ots = NULL;
	n.nots = 0;
	free(s->live);
	s->live = n.live;
	n.live = NULL;
	s->nbad = 0;
	s->nheld = 0;
	for (uint32_t b = 0; b < s->nblocks; b++)
		s->state[b] = s->live[b] ? B_USED : B_FREE;
	repin(s);
	fq_rebuild(s, c->tail);
	s->ckpt_gen = c->gen;
	free(s->ck_blob);
	s->ck_blob = blob;
	s->ck_blob_len = c->blob_bytes;
	blob = NULL;
	r = 0;
out:
	free(blob);
	if (found)
		for (uint32_t i = 0; i < maxid; i++)
			free(found[i]);
	free(found);
	for (uint32_t i = 0; i < n.nots; i++) {
		free(n.ots[i].e);
		free(n.ots[i].sz);
		free(n.ots[i].ce);
		free(n.ots[i].csz);
	}
	free(n.ots);
	free(n.live);
	free(mark);
	return r;
}

int ssd_store_restore(struct ssd_store *s, void **blob, size_t *len)
{
	struct ck c[2];
	char why[2][200];
	int order[2], nvalid = 0, r = -1, ierr = 0;
	char ibuf[256] = "";

	*blob = NULL;
	*len = 0;
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < 2; i++)
		if (ck_read(s, i, &c[i], why[i], sizeof(why[i])) == 0)
			order[nvalid++] = i;
	if (nvalid == 2 && c[order[1]].gen > c[order[0]].gen) {
		int t = order[0];

		order[0] = order[1];
		order[1] = t;
	}
	/* newest first; if its objects are not all in the log, the previous one */
	for (int i = 0; i < nvalid && r < 0; i++) {
		struct ck *k = &c[order[i]];

		if (ck_install(s, k) < 0) {
			if (!ierr) {
				ierr = errno;
				snprintf(ibuf, sizeof(ibuf), "%s", ssd_strerror());
			}
			continue;
		}
		*blob = malloc(k->blob_bytes ? k->blob_bytes : 1);
		if (!*blob) {
			ssd_err(ENOMEM, "out of memory for a blob of %llu bytes",
				(unsigned long long)k->blob_bytes);
			break;
		}
		memcpy(*blob, k->img + sizeof(struct ck_disk) + k->tables_bytes, k->blob_bytes);
		*len = k->blob_bytes;
		r = 0;
	}
	if (r < 0 && !nvalid) {
		bool none = !strcmp(why[0], "empty") && !strcmp(why[1], "empty");

		ssd_err(none ? ENOENT : EBADMSG, "%s: no valid checkpoint: slot 0: %s; slot 1: %s",
			s->path, why[0], why[1]);
	} else if (r < 0 && ierr) {
		ssd_err(ierr, "%s", ibuf);
	}
	for (int i = 0; i < 2; i++)
		free(c[i].img);
	pthread_mutex_unlock(&s->lock);
	return r;
}

/* ------------------------------------------------------------------ stats */

void ssd_store_stats(struct ssd_store *s, struct ssd_stats *st)
{
	pthread_mutex_lock(&s->lock);
	st->ssd_reads += s->reads;
	st->ssd_read_bytes += s->read_bytes;
	st->ssd_writes += s->writes;
	st->ssd_write_bytes += s->write_bytes;
	st->objects_written += s->objs;
	st->object_bytes_written += s->obj_bytes;
	st->gc_runs += s->gc_runs;
	st->gc_moves += s->gc_moves;
	st->gc_move_bytes += s->gc_move_bytes;
	st->ot_bytes += s->ot_bytes;
	st->checkpoints += s->checkpoints;
	pthread_mutex_unlock(&s->lock);
}
