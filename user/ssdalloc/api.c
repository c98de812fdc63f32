// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * SSDAlloc public entry points: configuration, init and shutdown, the
 * allocation calls, checkpoint/restore and its small file, the counters.
 *
 * Configuration: struct ssd_config, whose zero fields fall back to the
 * environment (SSDALLOC_DEVICE, SSDALLOC_SIZE, SSDALLOC_RAM,
 * SSDALLOC_PAGE_BUFFER, SSDALLOC_NO_UFFD), then to the defaults. The first call
 * of any allocation function initializes the library from the environment
 * alone if ssd_init() was not called.
 *
 * The checkpoint file (little endian; it only names a checkpoint: the Object
 * Tables and the heap's state are in the store's checkpoint region):
 *   0  char magic[8]  "SSDACKPT"
 *   8  u32 version    1
 *  12  u32 length     of the whole file, CRC included
 *  16  u8 uuid[16]    the store's
 *  32  u64 generation the store's checkpoint generation
 *  40  u32 path_len   then the device path (no NUL)
 *  44  u32 0
 *  48  char path[path_len]
 *  ..  u32 crc32c     of all the bytes before it
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ssd-int.h"

#define DEF_RAM		(256ull << 20)
#define DEF_PB		(25ull << 20)
#define CKPT_MAGIC	"SSDACKPT"
#define CKPT_VERSION	1u
#define CKPT_HDR	48u
#define CKPT_PATH_MAX	4096u

struct ssd_store *ssd_store;

static pthread_mutex_t api_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool inited;
static _Atomic uint64_t init_epoch;	/* successful initializations: units remember theirs */
/* a fork() child of an initialized process: the library's memory, threads and
 * locks are the parent's (the ranges are MADV_DONTFORK), so every call is refused */
static volatile bool api_child;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void api_atfork_child(void)
{
	if (atomic_load(&inited))
		api_child = true;
}

static void api_atfork_register(void)
{
	pthread_atfork(NULL, NULL, api_atfork_child);
}

static int child_refused(const char *call)
{
	return ssd_err(EPERM, "%s: this process is a fork() child of the one that initialized "
		       "SSDAlloc; its memory and state stay the parent's", call);
}
static char *dev_path;			/* as opened (absolute if it could be resolved) */
static bool stats_registered;

/* ---------------------------------------------------------------- CRC32C */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	uint32_t i, j, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (j = 0; j < 8; j++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;	/* Castagnoli, reflected */
		crc_table[i] = c;
	}
}

static uint32_t crc32c(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = ~0u;

	pthread_once(&crc_once, crc_init);
	while (len--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* ---------------------------------------------------------------- config */

/* "64M", "1g", "4096", "2GiB": bytes; -1 if it is not a size */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned int shift = 0;

	errno = 0;
	if (!s || !*s || *s == '-')
		return -1;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (shift && (!strcmp(end, "iB") || !strcmp(end, "B")))
		end += strlen(end);
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

static int env_size(const char *name, uint64_t *out)
{
	const char *v = getenv(name);

	if (!v || !*v)
		return 0;
	if (parse_size(v, out))
		return ssd_err(EINVAL, "%s=%s: not a size (a number, optionally K, M, G or T)",
			       name, v);
	return 0;
}

static bool env_true(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0") != 0;
}

/* ---------------------------------------------------------------- stats */

static const struct {
	const char *name;
	size_t off;
} stat_names[] = {
#define S(f) { #f, offsetof(struct ssd_stats, f) }
	S(faults_read), S(faults_write), S(materializations), S(dematerializations),
	S(ram_hits), S(ram_misses), S(ram_evictions_clean), S(ram_evictions_dirty),
	S(ram_bytes), S(ssd_reads), S(ssd_read_bytes), S(ssd_writes), S(ssd_write_bytes),
	S(objects_written), S(object_bytes_written), S(gc_runs), S(gc_moves),
	S(gc_move_bytes), S(ot_bytes), S(objects), S(checkpoints), S(uffd),
#undef S
};

static void stats_print(const struct ssd_stats *st)
{
	size_t i;

	for (i = 0; i < sizeof(stat_names) / sizeof(stat_names[0]); i++) {
		uint64_t v;

		memcpy(&v, (const char *)st + stat_names[i].off, sizeof(v));
		fprintf(stderr, "%s %" PRIu64 "\n", stat_names[i].name, v);
	}
}

/* api_lock held, library initialized */
static void stats_locked(struct ssd_stats *st)
{
	memset(st, 0, sizeof(*st));
	ssd_store_stats(ssd_store, st);
	ssd_rt_stats(st);
	ssd_heap_stats(st);
}

/* SSDALLOC_STATS=1: at exit, or at ssd_shutdown() if that comes first */
static void stats_at_exit(void)
{
	struct ssd_stats st;
	bool have = false;

	pthread_mutex_lock(&api_lock);
	if (atomic_load(&inited)) {
		stats_locked(&st);
		have = true;
	}
	pthread_mutex_unlock(&api_lock);
	if (have)
		stats_print(&st);
}

SSD_API int ssd_stats(struct ssd_stats *st)
{
	if (!st)
		return ssd_err(EINVAL, "ssd_stats: NULL");
	if (api_child)
		return child_refused("ssd_stats");
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&api_lock);
	if (atomic_load(&inited))
		stats_locked(st);
	pthread_mutex_unlock(&api_lock);
	return 0;
}

/* ---------------------------------------------------------------- init */

/* api_lock held */
static int init_locked(const struct ssd_config *cfg, const char *device_override)
{
	struct ssd_config c = { 0 };
	const char *dev;
	struct stat sb;
	char *path;
	int err;

	if (atomic_load(&inited))
		return ssd_err(EBUSY, "ssd_init: already initialized (ssd_shutdown() first)");
	pthread_once(&atfork_once, api_atfork_register);
	if (cfg)
		c = *cfg;
	if (c.flags & ~(unsigned int)(SSD_FORMAT | SSD_NO_UFFD | SSD_QUIET))
		return ssd_err(EINVAL, "ssd_init: unknown flags 0x%x", c.flags);
	dev = device_override ? device_override : c.device ? c.device : getenv("SSDALLOC_DEVICE");
	if (!dev || !*dev)
		return ssd_err(ENODEV, "SSDAlloc has no device: set SSDALLOC_DEVICE (a block device "
			       "or a file, with SSDALLOC_SIZE to create the file) or call ssd_init()");
	/* restore opens the device its file names as it is: never grown or formatted */
	if (!device_override && !c.device_bytes && env_size("SSDALLOC_SIZE", &c.device_bytes))
		return -1;
	if (!c.ram_bytes && env_size("SSDALLOC_RAM", &c.ram_bytes))
		return -1;
	if (!c.page_buffer_bytes && env_size("SSDALLOC_PAGE_BUFFER", &c.page_buffer_bytes))
		return -1;
	if (env_true("SSDALLOC_NO_UFFD"))
		c.flags |= SSD_NO_UFFD;
	/* a program that initializes lazily formats a blank device this way (never
	 * on a restore: the device must hold the checkpointed store) */
	if (!device_override && env_true("SSDALLOC_FORMAT"))
		c.flags |= SSD_FORMAT;
	if (!c.ram_bytes)
		c.ram_bytes = DEF_RAM;
	if (!c.page_buffer_bytes)
		c.page_buffer_bytes = c.ram_bytes > 2 * DEF_PB ? DEF_PB : c.ram_bytes / 4;
	if (c.page_buffer_bytes < SSD_PAGE || c.page_buffer_bytes >= c.ram_bytes)
		return ssd_err(EINVAL, "ssd_init: the Page Buffer (%" PRIu64 " B) must be at least "
			       "a page and less than the RAM budget (%" PRIu64 " B)",
			       c.page_buffer_bytes, c.ram_bytes);
	if (stat(dev, &sb) && errno == ENOENT) {
		if (!c.device_bytes)
			return ssd_err(ENOENT, "%s: no such device or file (give its size, "
				       "SSDALLOC_SIZE or device_bytes, to create a file)", dev);
		/* a file we create holds nothing to keep: format it. An existing
		 * device without a store is refused unless SSD_FORMAT says so */
		c.flags |= SSD_FORMAT;
	}
	path = realpath(dev, NULL);
	if (!path)
		path = strdup(dev);	/* not created yet: the store creates it */
	if (!path)
		return ssd_err(ENOMEM, "ssd_init: out of memory");
	if (ssd_store_open(&ssd_store, dev, c.device_bytes, c.flags & SSD_FORMAT))
		goto fail;
	if (ssd_rt_init(ssd_store, c.ram_bytes, c.page_buffer_bytes, c.flags & SSD_NO_UFFD,
			c.flags & SSD_QUIET))
		goto fail_store;
	if (ssd_heap_init())
		goto fail_rt;
	if (path[0] != '/') {
		/* created by the store just now: resolve it for the checkpoint file */
		char *abs = realpath(dev, NULL);

		if (abs) {
			free(path);
			path = abs;
		}
	}
	dev_path = path;
	if (env_true("SSDALLOC_STATS") && !stats_registered)
		stats_registered = atexit(stats_at_exit) == 0;
	atomic_fetch_add(&init_epoch, 1);
	atomic_store(&inited, true);
	return 0;
fail_rt:
	err = errno;
	ssd_rt_fini();
	errno = err;
fail_store:
	err = errno;
	ssd_store_close(ssd_store);
	ssd_store = NULL;
	errno = err;
fail:
	free(path);
	return -1;
}

SSD_API int ssd_init(const struct ssd_config *cfg)
{
	int ret;

	if (api_child)
		return child_refused("ssd_init");
	pthread_mutex_lock(&api_lock);
	ret = init_locked(cfg, NULL);
	pthread_mutex_unlock(&api_lock);
	return ret;
}

uint64_t ssd_api_epoch(void)
{
	if (api_child)
		return 0;
	return atomic_load_explicit(&inited, memory_order_acquire) ? atomic_load(&init_epoch) : 0;
}

int ssd_api_ready(void)
{
	int ret = 0;

	if (api_child)
		return child_refused("SSDAlloc");
	if (atomic_load_explicit(&inited, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&api_lock);
	if (!atomic_load(&inited))
		ret = init_locked(NULL, NULL);
	pthread_mutex_unlock(&api_lock);
	return ret;
}

SSD_API void ssd_shutdown(void)
{
	struct ssd_stats st;
	bool print = false;

	if (api_child)
		return;		/* the parent's: nothing here to shut down */
	pthread_mutex_lock(&api_lock);
	if (atomic_load(&inited)) {
		if (stats_registered) {
			stats_locked(&st);
			print = true;
		}
		atomic_store(&inited, false);
		ssd_heap_fini();
		ssd_rt_fini();
		ssd_store_close(ssd_store);
		ssd_store = NULL;
		free(dev_path);
		dev_path = NULL;
	}
	pthread_mutex_unlock(&api_lock);
	if (print)
		stats_print(&st);
}

/* ---------------------------------------------------------------- allocation */

/*
 * The store refused a write for lack of space (live data does not fit): new
 * objects would only add to what cannot be written, and the process would
 * grind evicting nothing. Refuse them until something is freed or a
 * checkpoint ran (ssd_calloc and ssd_realloc come through ssd_malloc).
 */
static int device_full(const char *call)
{
	if (!ssd_rt_full())
		return 0;
	return ssd_err(ENOSPC, "%s: the device is full (its live data does not fit): free "
		       "objects or use a larger device", call);
}

SSD_API void *ssd_oalloc(int n, int size)
{
	if (n < 1 || size < 1) {
		ssd_err(EINVAL, "ssd_oalloc(%d, %d): count and size must be positive", n, size);
		return NULL;
	}
	if (ssd_api_ready() || device_full("ssd_oalloc"))
		return NULL;
	return ssd_heap_oalloc((uint32_t)n, (uint32_t)size);
}

SSD_API void *ssd_malloc(size_t size)
{
	if (ssd_api_ready() || device_full("ssd_malloc"))
		return NULL;
	return ssd_heap_malloc(size);
}

SSD_API void *ssd_calloc(size_t n, size_t size)
{
	uintptr_t a, end, head_end, tail;
	size_t total;
	void *p;

	if (size && n > SIZE_MAX / size) {
		ssd_err(ENOMEM, "ssd_calloc(%zu, %zu): too big", n, size);
		return NULL;
	}
	total = n * size;
	p = ssd_malloc(total);
	if (!p || !total)
		return p;
	/*
	 * Only the first and the last page of the block can hold old bytes: they
	 * may be shared with other blocks, live or freed. A page wholly inside
	 * the block had no live block when it was handed out, so the heap had
	 * dropped and discarded it and it reads as zeros (or was never written).
	 * Zeroing only the ends keeps a big calloc from materializing and
	 * writing back every page. No lock is held here: this may fault.
	 */
	a = (uintptr_t)p;
	end = a + total;
	head_end = (a + SSD_PAGE) & ~(uintptr_t)(SSD_PAGE - 1);
	if (head_end > end)
		head_end = end;
	memset(p, 0, head_end - a);
	tail = (end - 1) & ~(uintptr_t)(SSD_PAGE - 1);
	if (tail < head_end)
		tail = head_end;
	memset((void *)tail, 0, end - tail);
	return p;
}

static void report_refusal(const char *call, void *p)
{
	int err = errno;

	fprintf(stderr, "ssdalloc: %s(%p) refused: %s\n", call, p, ssd_strerror());
	errno = err;
}

SSD_API int ssd_free_checked(void *p)
{
	if (!p)
		return 0;
	if (api_child)
		return child_refused("ssd_free");
	if (!atomic_load_explicit(&inited, memory_order_acquire))
		return ssd_err(EINVAL, "ssd_free: %p was not allocated by SSDAlloc (the library "
			       "is not initialized)", p);
	return ssd_heap_free(p);
}

SSD_API void ssd_free(void *p)
{
	if (ssd_free_checked(p))
		report_refusal("ssd_free", p);
}

SSD_API void *ssd_realloc(void *p, size_t size)
{
	size_t old;
	void *n;

	if (!p)
		return ssd_malloc(size);
	if (!size) {
		ssd_free(p);
		return NULL;
	}
	old = atomic_load(&inited) ? ssd_heap_size(p) : 0;
	if (!old) {
		ssd_err(EINVAL, "ssd_realloc: %p is not a live SSDAlloc allocation", p);
		report_refusal("ssd_realloc", p);
		return NULL;
	}
	n = ssd_malloc(size);
	if (!n)
		return NULL;	/* p is left as it was, as realloc does */
	/* no lock held: both sides may fault */
	memcpy(n, p, old < size ? old : size);
	if (ssd_heap_free(p))
		report_refusal("ssd_realloc", p);	/* freed meanwhile by another thread */
	return n;
}

/* ---------------------------------------------------------------- checkpoint */

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* path's directory, for the fsync that makes the rename durable */
static int fsync_dir(const char *path)
{
	char *d = strdup(path), *slash;
	int fd, ret;

	if (!d)
		return -1;
	slash = strrchr(d, '/');
	if (!slash)
		strcpy(d, ".");
	else if (slash == d)
		d[1] = 0;
	else
		*slash = 0;
	fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(d);
	if (fd < 0)
		return -1;
	ret = fsync(fd);
	close(fd);
	return ret;
}

static int write_ckpt_file(const char *path, const uint8_t uuid[16], uint64_t gen)
{
	size_t plen = strlen(dev_path), len = CKPT_HDR + plen + 4;
	uint8_t *buf;
	char *tmp;
	int fd, ret = -1;

	if (plen > CKPT_PATH_MAX)
		return ssd_err(ENAMETOOLONG, "checkpoint: device path too long");
	buf = calloc(1, len);
	if (!buf || asprintf(&tmp, "%s.tmp.%ld", path, (long)getpid()) < 0) {
		free(buf);
		return ssd_err(ENOMEM, "checkpoint: out of memory");
	}
	memcpy(buf, CKPT_MAGIC, 8);
	put32(buf + 8, CKPT_VERSION);
	put32(buf + 12, (uint32_t)len);
	memcpy(buf + 16, uuid, 16);
	put64(buf + 32, gen);
	put32(buf + 40, (uint32_t)plen);
	memcpy(buf + CKPT_HDR, dev_path, plen);
	put32(buf + len - 4, crc32c(buf, len - 4));
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		ssd_err(errno, "checkpoint: %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (write_all(fd, buf, len) || fsync(fd)) {
		ssd_err(errno ? errno : EIO, "checkpoint: writing %s: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		goto out;
	}
	close(fd);
	/* the old file stays whole until the new one replaces it */
	if (rename(tmp, path)) {
		ssd_err(errno, "checkpoint: rename %s to %s: %s", tmp, path, strerror(errno));
		unlink(tmp);
		goto out;
	}
	fsync_dir(path);
	ret = 0;
out:
	free(tmp);
	free(buf);
	return ret;
}

static int store_commit(const void *blob, size_t len, void *arg)
{
	(void)arg;
	return ssd_store_checkpoint(ssd_store, blob, len);
}

SSD_API int ssd_checkpoint(const char *path)
{
	uint8_t uuid[16];
	uint64_t gen;
	int ret = -1;

	if (!path || !*path)
		return ssd_err(EINVAL, "ssd_checkpoint: no file name");
	if (ssd_api_ready())
		return -1;
	pthread_mutex_lock(&api_lock);
	if (!atomic_load(&inited)) {
		ssd_err(ESHUTDOWN, "ssd_checkpoint: the library was shut down");
		goto out;
	}
	/* flush, heap state and store tables as one snapshot (see ssd_heap_checkpoint) */
	if (ssd_heap_checkpoint(store_commit, NULL))
		goto out;
	ssd_store_id(ssd_store, uuid, &gen);
	ret = write_ckpt_file(path, uuid, gen);
out:
	pthread_mutex_unlock(&api_lock);
	return ret;
}

/* reads and checks the file; *dev: the device path (malloc'd) */
static int read_ckpt_file(const char *path, uint8_t uuid[16], uint64_t *gen, char **dev)
{
	uint8_t buf[CKPT_HDR + CKPT_PATH_MAX + 4 + 1];
	ssize_t n;
	size_t got = 0;
	uint32_t len, plen;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return ssd_err(errno, "ssd_restore: %s: %s", path, strerror(errno));
	while (got < sizeof(buf) && (n = read(fd, buf + got, sizeof(buf) - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;

			close(fd);
			return ssd_err(err, "ssd_restore: reading %s: %s", path, strerror(err));
		}
		got += (size_t)n;
	}
	close(fd);
	if (got < CKPT_HDR + 4 || memcmp(buf, CKPT_MAGIC, 8))
		return ssd_err(EINVAL, "ssd_restore: %s: not an SSDAlloc checkpoint", path);
	len = get32(buf + 12);
	plen = get32(buf + 40);
	if (get32(buf + 8) != CKPT_VERSION || get32(buf + 44) || plen == 0 ||
	    plen > CKPT_PATH_MAX || len != CKPT_HDR + plen + 4)
		return ssd_err(EINVAL, "ssd_restore: %s: checkpoint of another layout/version "
			       "(version %u)", path, get32(buf + 8));
	if (got != len || get32(buf + len - 4) != crc32c(buf, len - 4))
		return ssd_err(EINVAL, "ssd_restore: %s: not an SSDAlloc checkpoint (damaged: "
			       "length or CRC wrong)", path);
	memcpy(uuid, buf + 16, 16);
	*gen = get64(buf + 32);
	if (memchr(buf + CKPT_HDR, 0, plen))
		return ssd_err(EINVAL, "ssd_restore: %s: bad device path", path);
	*dev = strndup((char *)buf + CKPT_HDR, plen);
	if (!*dev)
		return ssd_err(ENOMEM, "ssd_restore: out of memory");
	return 0;
}

SSD_API int ssd_restore(const char *path)
{
	uint8_t uuid[16], have[16];
	uint64_t gen, have_gen;
	char *dev = NULL;
	void *blob = NULL;
	size_t len = 0;
	int ret = -1;

	if (!path || !*path)
		return ssd_err(EINVAL, "ssd_restore: no file name");
	if (api_child)
		return child_refused("ssd_restore");
	if (read_ckpt_file(path, uuid, &gen, &dev))
		return -1;
	pthread_mutex_lock(&api_lock);
	if (!atomic_load(&inited) && init_locked(NULL, dev))
		goto out;
	ssd_store_id(ssd_store, have, &have_gen);
	if (memcmp(uuid, have, 16)) {
		if (!strcmp(dev, dev_path))
			ssd_err(EINVAL, "ssd_restore: %s: the device %s now holds a different store "
				"than the one checkpointed (uuid mismatch: reformatted or replaced)",
				path, dev);
		else
			ssd_err(EINVAL, "ssd_restore: %s is a checkpoint of another store (%s), "
				"not of %s (uuid mismatch)", path, dev, dev_path);
		goto out;
	}
	if (!ssd_heap_empty() || ssd_chunk_units()) {
		ssd_err(EBUSY, "ssd_restore: something was allocated already (restore first)");
		goto out;
	}
	/*
	 * The store restores its latest valid checkpoint: the one the file names,
	 * or the one before if that was torn, or one after if the process died
	 * between writing it and renaming the file.
	 */
	if (ssd_store_restore(ssd_store, &blob, &len)) {
		if (errno == ENOENT)
			ssd_err(ENOENT, "ssd_restore: %s holds no checkpoint", dev_path);
		goto out;
	}
	ret = ssd_heap_load(blob, len);
	if (ret) {
		/* the store's restored tables would be orphaned: nothing names them */
		int err = errno;

		ssd_heap_drop_tables(blob, len);
		errno = err;
	}
out:
	free(blob);
	free(dev);
	pthread_mutex_unlock(&api_lock);
	return ret;
}
