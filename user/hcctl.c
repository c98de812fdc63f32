// SPDX-License-Identifier: GPL-2.0
/*
 * hcctl: the operator tool of dm-ssc volumes.
 *
 * Everything goes through libdevmapper (list, status, table, messages,
 * create, remove); nothing here speaks the dm ioctls itself. Events come
 * from the dm_ssc generic netlink family through libnl-genl-3.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/fs.h>
#include <linux/dm-ioctl.h>

#include <libdevmapper.h>
#include <json-c/json.h>
#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <linux/dm-ssc.h>

#include "hc-common.h"
#include "hcctl.h"

#define HCCTL_VERSION "0.20.0"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* the kernel's mode numbers (netlink) and the table line's mode words */
static const char *const mode_names[] = {
	[DM_SSC_MODE_WRITETHROUGH] = "writethrough",
	[DM_SSC_MODE_WRITEBACK] = "writeback",
	[DM_SSC_MODE_WRITEAROUND] = "writearound",
	[DM_SSC_MODE_PASSTHROUGH] = "passthrough",
};

static volatile sig_atomic_t interrupted;
dev_t hc_expect_cache, hc_expect_origin;

/*
 * libdevmapper's log levels (its public header does not export them): 3 is
 * an error; bit 7 asks for stderr.
 */
#define HC_LOG_ERR	3
#define HC_LOG_STDERR	128

/* libdevmapper's messages: only errors, with our prefix; debug noise dropped */
static void hc_dm_log(int level, const char *file, int line, int dm_errno,
		      const char *fmt, ...)
{
	va_list ap;

	(void)file;
	(void)line;
	(void)dm_errno;
	if ((level & ~HC_LOG_STDERR) > HC_LOG_ERR)
		return;
	fprintf(stderr, "%s: device-mapper: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ------------------------------------------------------------------ */
/* status of one volume */

struct ssc_status {
	char name[DM_NAME_LEN];
	uint64_t start, len;		/* sectors */
	char mode[16];
	uint64_t block_sectors;
	uint64_t cached, slots, dirty, free_segs, nr_segs;
	uint64_t read_hits, read_misses, write_hits, write_misses;
	uint64_t gc_runs, gc_evicted, gc_copied, writebacks;
	uint64_t data_sectors, meta_sectors, checkpoints, log_used, log_blocks;
	uint64_t ram_bytes, recovered, replayed, cache_errors, origin_errors;
	uint64_t bypassed, admitted, rejected;
	char state[16];
	char cache_dev[32], origin_dev[32];
};

/* Parse the ssc target's status line; 0 or -1 if it is not one. */
static int parse_status(const char *p, struct ssc_status *s)
{
	int n = 0;

	if (sscanf(p,
		   "%15s %" SCNu64 " %" SCNu64 "/%" SCNu64 " %" SCNu64 " %" SCNu64 "/%" SCNu64
		   " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
		   " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
		   " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 "/%" SCNu64
		   " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
		   " %15s%n",
		   s->mode, &s->block_sectors, &s->cached, &s->slots, &s->dirty,
		   &s->free_segs, &s->nr_segs,
		   &s->read_hits, &s->read_misses, &s->write_hits, &s->write_misses,
		   &s->gc_runs, &s->gc_evicted, &s->gc_copied, &s->writebacks,
		   &s->data_sectors, &s->meta_sectors, &s->checkpoints, &s->log_used,
		   &s->log_blocks, &s->ram_bytes, &s->recovered, &s->replayed,
		   &s->cache_errors, &s->origin_errors, &s->bypassed, s->state, &n) != 27 || !n)
		return -1;
	/* admission's counters follow the state (modules before them end there) */
	s->admitted = s->rejected = 0;
	if (sscanf(p + n, " %" SCNu64 " %" SCNu64, &s->admitted, &s->rejected) != 2)
		s->admitted = s->rejected = 0;
	return 0;
}

/* First ssc target of @name: its status, and from its table the two devices. */
static int get_status(const char *name, struct ssc_status *s)
{
	struct dm_task *dmt;
	uint64_t start, len;
	char *type, *params;
	void *next;
	int r = -1;

	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	dmt = dm_task_create(DM_DEVICE_STATUS);
	if (!dmt || !dm_task_set_name(dmt, name) || !dm_task_run(dmt))
		goto out;
	next = NULL;
	do {
		next = dm_get_next_target(dmt, next, &start, &len, &type, &params);
		if (type && !strcmp(type, "ssc")) {
			s->start = start;
			s->len = len;
			r = parse_status(params, s);
			break;
		}
	} while (next);
	dm_task_destroy(dmt);
	if (r)
		return r;

	dmt = dm_task_create(DM_DEVICE_TABLE);
	if (!dmt || !dm_task_set_name(dmt, name) || !dm_task_run(dmt))
		goto out;
	next = NULL;
	do {
		next = dm_get_next_target(dmt, next, &start, &len, &type, &params);
		if (type && !strcmp(type, "ssc") && start == s->start) {
			if (sscanf(params, "%31s %31s", s->cache_dev, s->origin_dev) != 2)
				r = -1;
			break;
		}
	} while (next);
out:
	if (dmt)
		dm_task_destroy(dmt);
	return r;
}

/* Does @name exist as a dm device? */
bool dm_exists(const char *name)
{
	struct dm_task *dmt = dm_task_create(DM_DEVICE_INFO);
	struct dm_info info = { 0 };
	bool ret = false;

	if (dmt && dm_task_set_name(dmt, name) && dm_task_run(dmt) &&
	    dm_task_get_info(dmt, &info))
		ret = info.exists;
	if (dmt)
		dm_task_destroy(dmt);
	return ret;
}

/* Load @name's status or say clearly why not; returns an exit code. */
static int need_volume(const char *name, struct ssc_status *s)
{
	if (strlen(name) >= DM_NAME_LEN) {
		err("%s: name too long", name);
		return EX_USAGE;
	}
	if (!dm_exists(name)) {
		err("%s: no such device-mapper device", name);
		return EX_NOVOL;
	}
	if (get_status(name, s)) {
		err("%s: not an ssc volume", name);
		return EX_NOVOL;
	}
	return EX_OK;
}

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

/* cache bytes written (data + metadata) per data byte */
static double cache_wamp(const struct ssc_status *s)
{
	return s->data_sectors ? ratio(s->data_sectors + s->meta_sectors, s->data_sectors) : 0.0;
}

static json_object *status_json(const struct ssc_status *s)
{
	json_object *o = json_object_new_object();
	uint64_t bbytes = s->block_sectors * 512;

#define JS(k, v) json_object_object_add(o, k, json_object_new_string(v))
#define JU(k, v) json_object_object_add(o, k, json_object_new_uint64(v))
#define JD(k, v) json_object_object_add(o, k, json_object_new_double(v))
	JS("name", s->name);
	JS("mode", s->mode);
	JS("state", s->state);
	JS("cache_device", s->cache_dev);
	JS("origin_device", s->origin_dev);
	JU("size_bytes", s->len * 512);
	JU("block_bytes", bbytes);
	JU("cache_blocks", s->slots);
	JU("cached_blocks", s->cached);
	JU("dirty_blocks", s->dirty);
	JU("free_segments", s->free_segs);
	JU("segments", s->nr_segs);
	JU("read_hits", s->read_hits);
	JU("read_misses", s->read_misses);
	JU("write_hits", s->write_hits);
	JU("write_misses", s->write_misses);
	JD("read_hit_ratio", ratio(s->read_hits, s->read_hits + s->read_misses));
	JD("write_hit_ratio", ratio(s->write_hits, s->write_hits + s->write_misses));
	JU("gc_runs", s->gc_runs);
	JU("gc_evicted_blocks", s->gc_evicted);
	JU("gc_copied_blocks", s->gc_copied);
	JU("written_back_blocks", s->writebacks);
	JU("bypassed", s->bypassed);
	JU("admitted", s->admitted);
	JU("rejected", s->rejected);
	JU("cache_data_bytes_written", s->data_sectors * 512);
	JU("cache_meta_bytes_written", s->meta_sectors * 512);
	JD("cache_write_amplification", cache_wamp(s));
	JU("checkpoints", s->checkpoints);
	JU("log_blocks_used", s->log_used);
	JU("log_blocks", s->log_blocks);
	JU("ram_bytes", s->ram_bytes);
	JD("ram_bytes_per_cached_block", ratio(s->ram_bytes, s->cached));
	JU("recovered", s->recovered);
	JU("replayed_records", s->replayed);
	JU("cache_errors", s->cache_errors);
	JU("origin_errors", s->origin_errors);
#undef JS
#undef JU
#undef JD
	return o;
}

static void human_size(uint64_t bytes, char *buf, size_t n)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	int i = 0;

	while (v >= 1024 && i < 5) {
		v /= 1024;
		i++;
	}
	snprintf(buf, n, i ? "%.1f%s" : "%.0f%s", v, unit[i]);
}

static void status_row(const struct ssc_status *s)
{
	char size[16], used[48];

	human_size(s->len * 512, size, sizeof(size));
	snprintf(used, sizeof(used), "%" PRIu64 "/%" PRIu64 "/%" PRIu64,
		 s->cached, s->dirty, s->slots);
	printf("%-16s %-12s %8s %6" PRIu64 " %-22s %7.1f%% %7.1f%% %7" PRIu64 " %9" PRIu64
	       " %6.3f %6.2f %s\n",
	       s->name, s->mode, size, s->block_sectors * 512, used,
	       100 * ratio(s->read_hits, s->read_hits + s->read_misses),
	       100 * ratio(s->write_hits, s->write_hits + s->write_misses),
	       s->gc_runs, s->gc_evicted, cache_wamp(s),
	       ratio(s->ram_bytes, s->cached), s->state);
}

static void status_header(void)
{
	printf("%-16s %-12s %8s %6s %-22s %8s %8s %7s %9s %6s %6s %s\n",
	       "VOLUME", "MODE", "SIZE", "BLOCK", "CACHED/DIRTY/BLOCKS", "RD-HIT", "WR-HIT",
	       "GC", "EVICTED", "WAMP", "RAM/B", "STATE");
}

static int cmd_status(int argc, char **argv)
{
	struct dm_names *names;
	struct dm_task *dmt;
	struct ssc_status s;
	json_object *arr = NULL;
	unsigned int next = 0;
	int r;

	if (argc > 1) {
		err("status: at most one VOLUME");
		return EX_USAGE;
	}
	if (opt_json)
		arr = json_object_new_array();
	if (argc == 1) {
		r = need_volume(argv[0], &s);
		if (r)
			return r;
		if (opt_json) {
			json_object_array_add(arr, status_json(&s));
		} else {
			status_header();
			status_row(&s);
		}
		goto print;
	}

	dmt = dm_task_create(DM_DEVICE_LIST);
	if (!dmt || !dm_task_run(dmt) || !(names = dm_task_get_names(dmt))) {
		err("cannot list device-mapper devices (is dm-mod loaded, are you root?)");
		if (dmt)
			dm_task_destroy(dmt);
		return EX_FAIL;
	}
	if (!opt_json)
		status_header();
	if (names->dev) {
		do {
			names = (struct dm_names *)((char *)names + next);
			if (!get_status(names->name, &s)) {
				if (opt_json)
					json_object_array_add(arr, status_json(&s));
				else
					status_row(&s);
			}
			next = names->next;
		} while (next);
	}
	dm_task_destroy(dmt);
print:
	if (opt_json) {
		json_object *top = json_object_new_object();

		json_object_object_add(top, "volumes", arr);
		printf("%s\n", json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(top);
	}
	return EX_OK;
}

/* ------------------------------------------------------------------ */
/* messages */

/* Send @msg to @name's first target; the kernel's answer goes to @resp. */
static int send_message(const char *name, const char *msg, char **resp)
{
	struct dm_task *dmt = dm_task_create(DM_DEVICE_TARGET_MSG);
	const char *out;
	int ok;

	if (!dmt)
		return -1;
	ok = dm_task_set_name(dmt, name) && dm_task_set_sector(dmt, 0) &&
	     dm_task_set_message(dmt, msg) && dm_task_run(dmt);
	if (ok && resp) {
		out = dm_task_get_message_response(dmt);
		*resp = strdup(out ? out : "");
	}
	dm_task_destroy(dmt);
	return ok ? 0 : -1;
}

/* RANGE: BLOCK, FIRST-LAST (inclusive) or FIRST+COUNT, in cache blocks */
static int parse_range(const char *arg, uint64_t *first, uint64_t *count)
{
	char buf[64], *sep;
	uint64_t b;

	if (strlen(arg) >= sizeof(buf))
		return -1;
	strcpy(buf, arg);
	sep = strpbrk(buf, "-+");
	if (!sep) {
		*count = 1;
		return parse_u64(buf, first);
	}
	char op = *sep;

	*sep = '\0';
	if (parse_u64(buf, first) || parse_u64(sep + 1, &b))
		return -1;
	if (op == '+') {
		*count = b;
		return b ? 0 : -1;
	}
	if (b < *first)
		return -1;
	*count = b - *first + 1;
	return 0;
}

/* the kernel answers exists for at most this many blocks at a time */
#define EXISTS_CHUNK (1ULL << 20)

struct ranges {
	json_object *arr;	/* --json */
	bool open, any;
	uint64_t a, b;		/* the range being built */
};

static void range_emit(struct ranges *r)
{
	if (!r->open)
		return;
	if (r->arr) {
		json_object *pair = json_object_new_array();

		json_object_array_add(pair, json_object_new_uint64(r->a));
		json_object_array_add(pair, json_object_new_uint64(r->b));
		json_object_array_add(r->arr, pair);
	} else if (r->a == r->b) {
		printf("%s%" PRIu64, r->any ? "," : "", r->a);
	} else {
		printf("%s%" PRIu64 "-%" PRIu64, r->any ? "," : "", r->a, r->b);
	}
	r->any = true;
	r->open = false;
}

/* add [a, b], merging with the range being built when they touch */
static void range_add(struct ranges *r, uint64_t a, uint64_t b)
{
	if (r->open && a == r->b + 1) {
		r->b = b;
		return;
	}
	range_emit(r);
	r->a = a;
	r->b = b;
	r->open = true;
}

/* exists over any range: asked in chunks, answered as one list */
static int do_exists(const char *name, uint64_t first, uint64_t count)
{
	struct ranges r = { .arr = opt_json ? json_object_new_array() : NULL };
	uint64_t at, n;
	char msg[96];

	for (at = first; at < first + count; at += n) {
		char *resp = NULL, *tok, *save = NULL;

		n = first + count - at < EXISTS_CHUNK ? first + count - at : EXISTS_CHUNK;
		snprintf(msg, sizeof(msg), "exists %" PRIu64 " %" PRIu64, at, n);
		if (send_message(name, msg, &resp)) {
			err("exists: the volume refused the message, see dmesg");
			json_object_put(r.arr);
			return EX_FAIL;
		}
		/* offsets into the chunk, as "%pbl": 0,4-7 */
		for (tok = strtok_r(resp, ",\n", &save); tok; tok = strtok_r(NULL, ",\n", &save)) {
			uint64_t a, b;

			if (sscanf(tok, "%" SCNu64 "-%" SCNu64, &a, &b) != 2)
				b = a = strtoull(tok, NULL, 10);
			range_add(&r, at + a, at + b);
		}
		free(resp);
	}
	range_emit(&r);
	if (r.arr) {
		json_object *top = json_object_new_object();

		json_object_object_add(top, "dirty", r.arr);
		printf("%s\n", json_object_to_json_string_ext(top, JSON_C_TO_STRING_PLAIN));
		json_object_put(top);
	} else {
		printf("\n");
	}
	return EX_OK;
}

static int cmd_block_msg(const char *what, int argc, char **argv)
{
	uint64_t first, count, nblocks;
	struct ssc_status s;
	char msg[96], *resp = NULL;
	int r;

	if (argc != 2) {
		err("%s: want VOLUME RANGE (RANGE: BLOCK, FIRST-LAST or FIRST+COUNT)", what);
		return EX_USAGE;
	}
	if (parse_range(argv[1], &first, &count)) {
		err("%s: bad RANGE '%s': want BLOCK, FIRST-LAST or FIRST+COUNT", what, argv[1]);
		return EX_USAGE;
	}
	r = need_volume(argv[0], &s);
	if (r)
		return r;
	nblocks = s.len / s.block_sectors;
	if (first >= nblocks || count > nblocks - first) {
		err("%s: range %s is outside the volume (%" PRIu64 " blocks of %" PRIu64 " bytes)",
		    what, argv[1], nblocks, s.block_sectors * 512);
		return EX_USAGE;
	}
	if (!strcmp(what, "exists"))
		return do_exists(argv[0], first, count);
	snprintf(msg, sizeof(msg), "%s %" PRIu64 " %" PRIu64, what, first, count);
	if (send_message(argv[0], msg, &resp)) {
		if (!strcmp(what, "evict"))
			err("evict: refused; a dirty block must be cleaned first ('hcctl clean'), see dmesg");
		else
			err("%s: the volume refused the message, see dmesg", what);
		return EX_FAIL;
	}
	free(resp);
	return EX_OK;
}

static int cmd_checkpoint(int argc, char **argv)
{
	struct ssc_status s;
	int r;

	if (argc != 1) {
		err("checkpoint: want VOLUME");
		return EX_USAGE;
	}
	r = need_volume(argv[0], &s);
	if (r)
		return r;
	if (send_message(argv[0], "checkpoint", NULL)) {
		err("checkpoint: failed, see dmesg");
		return EX_FAIL;
	}
	return EX_OK;
}

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void progress(bool tty, uint64_t done, uint64_t total, uint64_t dirty)
{
	if (tty) {
		unsigned int w = 40, fill = total ? (unsigned int)(w * done / total) : w;

		printf("\r[%-*.*s] %3u%% %" PRIu64 " dirty  ", w, fill,
			"########################################",
			total ? (unsigned int)(100 * done / total) : 100, dirty);
		fflush(stdout);
	} else {
		printf("flush: %" PRIu64 " of %" PRIu64 " written back, %" PRIu64 " dirty\n",
		       done, total, dirty);
		fflush(stdout);
	}
}

int cmd_flush(int argc, char **argv)
{
	bool tty = isatty(STDOUT_FILENO), wait = true;
	struct ssc_status s;
	uint64_t total, last = UINT64_MAX;
	struct timespec ts = { 0, 200 * 1000 * 1000 };
	int r;

	if (argc == 2 && !strcmp(argv[1], "--no-wait")) {
		wait = false;
		argc--;
	}
	if (argc != 1) {
		err("flush: want VOLUME [--no-wait]");
		return EX_USAGE;
	}
	r = need_volume(argv[0], &s);
	if (r)
		return r;
	if (strcmp(s.state, "ok") && strcmp(s.state, "writeback_all")) {
		err("flush: %s is %s: the cache device fails, nothing can be written back",
		    argv[0], s.state);
		return EX_FAIL;
	}
	if (send_message(argv[0], "writeback_all", NULL)) {
		err("flush: the volume refused writeback_all, see dmesg");
		return EX_FAIL;
	}
	if (!wait)
		return EX_OK;
	total = s.dirty;
	signal(SIGINT, on_sigint);
	signal(SIGTERM, on_sigint);
	for (;;) {
		if (get_status(argv[0], &s)) {
			err("flush: %s went away", argv[0]);
			return EX_FAIL;
		}
		if (s.dirty > total)
			total = s.dirty;
		if (s.dirty != last || !tty)
			progress(tty, total - s.dirty, total, s.dirty);
		if (!s.dirty)
			break;
		if (strcmp(s.state, "ok") && strcmp(s.state, "writeback_all")) {
			if (tty)
				putchar('\n');
			err("flush: %s is %s with %" PRIu64 " blocks dirty", argv[0], s.state, s.dirty);
			return EX_FAIL;
		}
		last = s.dirty;
		if (interrupted) {
			if (tty)
				putchar('\n');
			err("flush: interrupted with %" PRIu64 " blocks dirty; write-back goes on in the kernel",
			    s.dirty);
			return EX_INTR;
		}
		nanosleep(&ts, NULL);
	}
	if (tty)
		putchar('\n');
	return EX_OK;
}

/* ------------------------------------------------------------------ */
/* create / remove */

struct bdev_info {
	dev_t rdev;
	uint64_t bytes;
	unsigned int lbs;
};

/* A block device we can have to ourselves: not mounted, not held. */
static int probe_bdev(const char *what, const char *path, struct bdev_info *b)
{
	struct stat st;
	int fd, lbs;

	if (stat(path, &st)) {
		err("%s device %s: %s", what, path, strerror(errno));
		return EX_USAGE;
	}
	if (!S_ISBLK(st.st_mode)) {
		err("%s device %s: not a block device", what, path);
		return EX_USAGE;
	}
	fd = open(path, O_RDONLY | O_EXCL);
	if (fd < 0) {
		if (errno == EBUSY)
			err("%s device %s is in use (mounted, swap, or held by another device)",
			    what, path);
		else
			err("%s device %s: %s", what, path, strerror(errno));
		return EX_FAIL;
	}
	if (ioctl(fd, BLKGETSIZE64, &b->bytes) || ioctl(fd, BLKSSZGET, &lbs)) {
		err("%s device %s: cannot read its size: %s", what, path, strerror(errno));
		close(fd);
		return EX_FAIL;
	}
	close(fd);
	b->rdev = st.st_rdev;
	b->lbs = (unsigned int)lbs;
	return EX_OK;
}

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* the kernel's last ssc line in the log: why a table was refused */
static void explain_from_kmsg(void)
{
	char buf[8192], last[1024] = "";
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	ssize_t n;

	if (fd < 0)
		return;
	while ((n = read(fd, buf, sizeof(buf) - 1)) > 0 || (n < 0 && errno == EPIPE)) {
		char *msg;

		if (n <= 0)
			continue;
		buf[n] = '\0';
		msg = strchr(buf, ';');
		if (msg && strstr(msg, "ssc") && (strstr(msg, "table:") || strstr(msg, "ssc:")))
			snprintf(last, sizeof(last), "%s", msg + 1);
	}
	close(fd);
	last[strcspn(last, "\n")] = '\0';
	if (*last)
		err("the kernel says: %s", last);
}

int cmd_create(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cache", required_argument, NULL, 'c' },
		{ "origin", required_argument, NULL, 'o' },
		{ "mode", required_argument, NULL, 'm' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "segment-size", required_argument, NULL, 's' },
		{ "dirty-high", required_argument, NULL, 'H' },
		{ "dirty-low", required_argument, NULL, 'L' },
		{ "sequential-threshold", required_argument, NULL, 'q' },
		{ "admit", required_argument, NULL, 'a' },
		{ "format", no_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cache = NULL, *origin = NULL, *mode = "writethrough", *name;
	/* make bench-traces: reuse caches more and wears the flash less (ssc.rst) */
	const char *admit = "reuse";
	uint64_t bsize = 4096, seg = 0, seq = 0, hi = 0, lo_pct = 0;
	bool have_seg = false, have_seq = false, have_hi = false, have_lo = false, format = false;
	struct bdev_info cb, ob;
	char table[512], feat[256];
	unsigned int nfeat = 1;
	size_t i;
	struct dm_task *dmt;
	uint32_t cookie = 0;
	int c, r;

	optind = 0;	/* 0: glibc starts over, with permutation */
	while ((c = getopt_long(argc, argv, "c:o:m:b:s:H:L:q:a:f", lo, NULL)) != -1) {
		switch (c) {
		case 'a': admit = optarg; break;
		case 'c': cache = optarg; break;
		case 'o': origin = optarg; break;
		case 'm': mode = optarg; break;
		case 'b':
			if (parse_bytes(optarg, &bsize))
				goto bad_num;
			break;
		case 's':
			if (parse_bytes(optarg, &seg))
				goto bad_num;
			have_seg = true;
			break;
		case 'q':
			if (parse_bytes(optarg, &seq))
				goto bad_num;
			have_seq = true;
			break;
		case 'H':
			if (parse_u64(optarg, &hi))
				goto bad_num;
			have_hi = true;
			break;
		case 'L':
			if (parse_u64(optarg, &lo_pct))
				goto bad_num;
			have_lo = true;
			break;
		case 'f': format = true; break;
		default:
			return EX_USAGE;
		}
	}
	if (optind != argc - 1 || !cache || !origin) {
		err("create: want VOLUME --cache DEV --origin DEV [--mode MODE] [options]");
		return EX_USAGE;
	}
	name = argv[optind];
	if (!*name || strlen(name) >= DM_NAME_LEN || strchr(name, '/')) {
		err("create: bad volume name '%s'", name);
		return EX_USAGE;
	}
	for (i = 0; i < ARRAY_SIZE(mode_names) && strcmp(mode, mode_names[i]); i++)
		;
	if (i == ARRAY_SIZE(mode_names)) {
		err("create: bad mode '%s': want writethrough, writeback, writearound or passthrough",
		    mode);
		return EX_USAGE;
	}
	if (!pow2(bsize) || bsize < 4096 || bsize > 1 << 20) {
		err("create: bad block size %" PRIu64 ": want a power of two from 4KiB to 1MiB", bsize);
		return EX_USAGE;
	}
	if (have_seg && (!pow2(seg) || seg < 128 << 10 || seg > 64 << 20 || seg < 2 * bsize)) {
		err("create: bad segment size %" PRIu64
		    ": want a power of two from 128KiB to 64MiB holding two blocks", seg);
		return EX_USAGE;
	}
	if (have_seq && (seq % 512 || seq > (1ULL << 40))) {
		err("create: bad sequential threshold %" PRIu64 ": want 0 (off) to 1TiB in 512 B units",
		    seq);
		return EX_USAGE;
	}
	if (strcmp(admit, "all") && strcmp(admit, "reuse")) {
		err("create: bad admission policy '%s': want all or reuse", admit);
		return EX_USAGE;
	}
	if (have_hi != have_lo || (have_hi && (hi > 75 || lo_pct >= hi))) {
		err("create: want --dirty-high and --dirty-low together, 0 <= low < high <= 75");
		return EX_USAGE;
	}
	if (dm_exists(name)) {
		err("create: %s already exists", name);
		return EX_FAIL;
	}
	r = probe_bdev("cache", cache, &cb);
	if (!r)
		r = probe_bdev("origin", origin, &ob);
	if (r)
		return r;
	if (cb.rdev == ob.rdev) {
		err("create: cache and origin are the same device");
		return EX_USAGE;
	}
	/* the table names devices by number: these are the ones the caller checked */
	if ((hc_expect_cache && cb.rdev != hc_expect_cache) ||
	    (hc_expect_origin && ob.rdev != hc_expect_origin)) {
		err("create: %s or %s changed under us (now %u:%u and %u:%u)", cache, origin,
		    major(cb.rdev), minor(cb.rdev), major(ob.rdev), minor(ob.rdev));
		return EX_FAIL;
	}
	if (bsize < cb.lbs || bsize < ob.lbs) {
		err("create: block size %" PRIu64 " is smaller than a device's logical block size (cache %u, origin %u)",
		    bsize, cb.lbs, ob.lbs);
		return EX_USAGE;
	}
	/* the metadata fits in the first segment of a small cache: the kernel checks the rest */
	if (cb.bytes < 8 * (have_seg ? seg : 2 << 20)) {
		err("create: cache device %s is too small (%" PRIu64 " bytes): it must hold at least 8 segments",
		    cache, cb.bytes);
		return EX_FAIL;
	}
	if (ob.bytes < bsize) {
		err("create: origin device %s is smaller than one block", origin);
		return EX_FAIL;
	}
	/* the kernel formats the cache device at the volume's first resume */
	snprintf(feat, sizeof(feat), "%s%s", format ? "format " : "", mode);
	nfeat += format;
	if (have_seg) {
		snprintf(feat + strlen(feat), sizeof(feat) - strlen(feat), " segment_size %" PRIu64, seg / 512);
		nfeat += 2;
	}
	if (have_hi) {
		snprintf(feat + strlen(feat), sizeof(feat) - strlen(feat),
			 " dirty_high %" PRIu64 " dirty_low %" PRIu64, hi, lo_pct);
		nfeat += 4;
	}
	if (have_seq) {
		snprintf(feat + strlen(feat), sizeof(feat) - strlen(feat),
			 " sequential_threshold %" PRIu64, seq / 512);
		nfeat += 2;
	}
	snprintf(feat + strlen(feat), sizeof(feat) - strlen(feat), " admit %s", admit);
	nfeat += 2;
	snprintf(table, sizeof(table), "%u:%u %u:%u %" PRIu64 " %u %s",
		 major(cb.rdev), minor(cb.rdev), major(ob.rdev), minor(ob.rdev),
		 bsize / 512, nfeat, feat);

	dmt = dm_task_create(DM_DEVICE_CREATE);
	if (!dmt || !dm_task_set_name(dmt, name) ||
	    !dm_task_add_target(dmt, 0, ob.bytes / bsize * (bsize / 512), "ssc", table) ||
	    !dm_task_set_cookie(dmt, &cookie, 0) || !dm_task_run(dmt)) {
		if (dmt)
			dm_task_destroy(dmt);
		dm_udev_wait(cookie);
		err("create: the kernel refused the table '0 %" PRIu64 " ssc %s'",
		    ob.bytes / bsize * (bsize / 512), table);
		explain_from_kmsg();
		return EX_FAIL;
	}
	dm_task_destroy(dmt);
	dm_udev_wait(cookie);
	printf("/dev/mapper/%s\n", name);
	return EX_OK;
bad_num:
	err("create: bad value '%s'", optarg);
	return EX_USAGE;
}

int cmd_remove(int argc, char **argv)
{
	struct ssc_status s;
	struct dm_task *dmt;
	uint32_t cookie = 0;
	int r;

	if (argc != 1) {
		err("remove: want VOLUME");
		return EX_USAGE;
	}
	r = need_volume(argv[0], &s);
	if (r)
		return r;
	dmt = dm_task_create(DM_DEVICE_REMOVE);
	if (!dmt || !dm_task_set_name(dmt, argv[0]) || !dm_task_set_cookie(dmt, &cookie, 0) ||
	    !dm_task_run(dmt)) {
		if (dmt)
			dm_task_destroy(dmt);
		dm_udev_wait(cookie);
		err("remove: %s could not be removed (is it open or mounted?)", argv[0]);
		return EX_FAIL;
	}
	dm_task_destroy(dmt);
	dm_udev_wait(cookie);
	if (s.dirty)
		fprintf(stderr, "%s: %s removed with %" PRIu64
			" dirty blocks kept on %s; recreate it over the same devices to reach them\n",
			prog, argv[0], s.dirty, s.cache_dev);
	return EX_OK;
}

/* ------------------------------------------------------------------ */

/* ---------------------------------------------------------------------
 * monitor: dm_ssc netlink events
 */

static const char *const state_names[] = {
	[DM_SSC_STATE_OK] = "ok",
	[DM_SSC_STATE_WRITEBACK_ALL] = "writeback_all",
	[DM_SSC_STATE_READ_ONLY] = "read_only",
	[DM_SSC_STATE_FAILED] = "failed",
};

static const char *const event_names[] = {
	[DM_SSC_EVENT_MODE] = "mode",
	[DM_SSC_EVENT_STATE] = "state",
	[DM_SSC_EVENT_GC_STALL] = "gc_stall",
	[DM_SSC_EVENT_WRITEBACK_DONE] = "writeback_done",
	[DM_SSC_EVENT_RECOVERY] = "recovery",
};

struct monitor {
	const char *volume;	/* only this one, or NULL */
	long count;		/* events left to print; < 0: no limit */
};

static void mon_u64(json_object *o, const char *key, struct nlattr *a)
{
	if (a)
		json_object_object_add(o, key, json_object_new_uint64(nla_get_u64(a)));
}

#define mon_name(o, key, a, tab) mon_name_n(o, key, a, tab, ARRAY_SIZE(tab))
static void mon_name_n(json_object *o, const char *key, struct nlattr *a,
		       const char *const *tab, size_t n)
{
	uint32_t v;

	if (!a)
		return;
	v = nla_get_u32(a);
	json_object_object_add(o, key, json_object_new_string(v < n && tab[v] ? tab[v] : "unknown"));
}

/* One event as a JSON object; the human line is made from the same object. */
static json_object *event_json(struct nlattr **tb)
{
	json_object *o = json_object_new_object();
	char when[64], dev[32];
	struct timespec ts;
	struct tm tm;
	uint32_t d = nla_get_u32(tb[DM_SSC_A_DEV]);

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + strlen(when), sizeof(when) - strlen(when), ".%03ld",
		 ts.tv_nsec / 1000000);
	snprintf(dev, sizeof(dev), "%u:%u", d >> 20, d & 0xfffff);
	json_object_object_add(o, "time", json_object_new_string(when));
	json_object_object_add(o, "volume", json_object_new_string(nla_get_string(tb[DM_SSC_A_VOLUME])));
	json_object_object_add(o, "dev", json_object_new_string(dev));
	mon_name(o, "event", tb[DM_SSC_A_EVENT], event_names);
	mon_name(o, "mode", tb[DM_SSC_A_MODE], mode_names);
	mon_name(o, "old_mode", tb[DM_SSC_A_OLD_MODE], mode_names);
	mon_name(o, "state", tb[DM_SSC_A_STATE], state_names);
	if (tb[DM_SSC_A_ERROR])
		json_object_object_add(o, "error", json_object_new_int64(nla_get_u32(tb[DM_SSC_A_ERROR])));
	mon_u64(o, "stalls", tb[DM_SSC_A_COUNT]);
	mon_u64(o, "max_wait_us", tb[DM_SSC_A_MAX_WAIT_US]);
	mon_u64(o, "duration_us", tb[DM_SSC_A_DURATION_US]);
	mon_u64(o, "bypassed", tb[DM_SSC_A_BYPASSED]);
	mon_u64(o, "blocks", tb[DM_SSC_A_BLOCKS]);
	mon_u64(o, "replayed", tb[DM_SSC_A_REPLAYED]);
	mon_u64(o, "cached", tb[DM_SSC_A_CACHED]);
	mon_u64(o, "dirty", tb[DM_SSC_A_DIRTY]);
	return o;
}

static const char *js(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "?";
}

static void event_human(json_object *o, uint32_t ev)
{
	printf("%s %s (%s) %s", js(o, "time"), js(o, "volume"), js(o, "dev"),
	       js(o, "event"));
	switch (ev) {
	case DM_SSC_EVENT_MODE:
		printf(": %s -> %s", js(o, "old_mode"), js(o, "mode"));
		break;
	case DM_SSC_EVENT_STATE:
		printf(": %s", js(o, "state"));
		if (strcmp(js(o, "error"), "0"))
			printf(" (%s)", strerror(atoi(js(o, "error"))));
		break;
	case DM_SSC_EVENT_GC_STALL:
		printf(": %s stalls (no free segment) for %s us in all, the longest %s us; "
		       "%s writes and fills went around the cache",
		       js(o, "stalls"), js(o, "duration_us"), js(o, "max_wait_us"),
		       js(o, "bypassed"));
		break;
	case DM_SSC_EVENT_WRITEBACK_DONE:
		printf(": %s blocks written back in %s us", js(o, "blocks"),
		       js(o, "duration_us"));
		break;
	case DM_SSC_EVENT_RECOVERY:
		printf(": took %s us, %s log records replayed, %s cached, %s dirty",
		       js(o, "duration_us"), js(o, "replayed"), js(o, "cached"),
		       js(o, "dirty"));
		break;
	}
	putchar('\n');
}

static int on_event(struct nl_msg *msg, void *arg)
{
	static struct nla_policy pol[DM_SSC_A_MAX + 1] = {
		[DM_SSC_A_VOLUME] = { .type = NLA_STRING },
		[DM_SSC_A_DEV] = { .type = NLA_U32 },
		[DM_SSC_A_EVENT] = { .type = NLA_U32 },
		[DM_SSC_A_MODE] = { .type = NLA_U32 },
		[DM_SSC_A_OLD_MODE] = { .type = NLA_U32 },
		[DM_SSC_A_STATE] = { .type = NLA_U32 },
		[DM_SSC_A_ERROR] = { .type = NLA_U32 },
		[DM_SSC_A_DURATION_US] = { .type = NLA_U64 },
		[DM_SSC_A_BLOCKS] = { .type = NLA_U64 },
		[DM_SSC_A_COUNT] = { .type = NLA_U64 },
		[DM_SSC_A_MAX_WAIT_US] = { .type = NLA_U64 },
		[DM_SSC_A_CACHED] = { .type = NLA_U64 },
		[DM_SSC_A_DIRTY] = { .type = NLA_U64 },
		[DM_SSC_A_REPLAYED] = { .type = NLA_U64 },
		[DM_SSC_A_NR_SLOTS] = { .type = NLA_U64 },
		[DM_SSC_A_BYPASSED] = { .type = NLA_U64 },
	};
	struct monitor *m = arg;
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	struct genlmsghdr *gh = nlmsg_data(nlh);
	struct nlattr *tb[DM_SSC_A_MAX + 1];
	json_object *o;
	uint32_t ev;

	if (gh->cmd != DM_SSC_CMD_EVENT)
		return NL_SKIP;
	if (genlmsg_parse(nlh, 0, tb, DM_SSC_A_MAX, pol) < 0 ||
	    !tb[DM_SSC_A_VOLUME] || !tb[DM_SSC_A_DEV] || !tb[DM_SSC_A_EVENT]) {
		err("monitor: ignoring a malformed event");
		return NL_SKIP;
	}
	if (m->volume && strcmp(m->volume, nla_get_string(tb[DM_SSC_A_VOLUME])))
		return NL_SKIP;
	ev = nla_get_u32(tb[DM_SSC_A_EVENT]);
	o = event_json(tb);
	if (opt_json)
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	else
		event_human(o, ev);
	fflush(stdout);
	json_object_put(o);
	if (m->count > 0)
		m->count--;
	return NL_OK;
}

static int cmd_monitor(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "count", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	struct monitor m = { .count = -1 };
	struct nl_sock *sk;
	struct timespec end = { 0, 0 }, now;
	uint64_t v;
	int c, grp, r, ret = EX_OK;
	struct sigaction sa = { .sa_handler = on_sigint };

	optind = 1;
	while ((c = getopt_long(argc, argv, "+c:t:", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (parse_u64(optarg, &v) || !v || v > LONG_MAX) {
				err("monitor: --count wants a positive number");
				return EX_USAGE;
			}
			m.count = (long)v;
			break;
		case 't':
			if (parse_u64(optarg, &v) || !v || v > 86400 * 365) {
				err("monitor: --timeout wants a positive number of seconds");
				return EX_USAGE;
			}
			clock_gettime(CLOCK_MONOTONIC, &end);
			end.tv_sec += (time_t)v;
			break;
		default:
			err("monitor: want [--count N] [--timeout SECONDS] [VOLUME]");
			return EX_USAGE;
		}
	}
	if (argc - optind > 1) {
		err("monitor: want [--count N] [--timeout SECONDS] [VOLUME]");
		return EX_USAGE;
	}
	if (argc - optind == 1)
		m.volume = argv[optind];

	sk = nl_socket_alloc();
	if (!sk) {
		err("monitor: out of memory");
		return EX_FAIL;
	}
	r = genl_connect(sk);
	if (r < 0) {
		err("monitor: cannot open a generic netlink socket: %s", nl_geterror(r));
		ret = EX_FAIL;
		goto out;
	}
	grp = genl_ctrl_resolve_grp(sk, DM_SSC_GENL_NAME, DM_SSC_GENL_MCGRP_EVENTS);
	if (grp < 0) {
		err("monitor: no %s netlink family: is the dm-ssc module loaded? (modprobe dm-ssc)",
		    DM_SSC_GENL_NAME);
		ret = EX_FAIL;
		goto out;
	}
	nl_socket_disable_seq_check(sk);
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, on_event, &m);
	r = nl_socket_add_membership(sk, grp);
	if (r < 0) {
		err("monitor: cannot join the %s group: %s%s", DM_SSC_GENL_MCGRP_EVENTS,
		    nl_geterror(r), r == -NLE_PERM ? " (needs CAP_NET_ADMIN)" : "");
		ret = EX_FAIL;
		goto out;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	fprintf(stderr, "%s: monitoring dm-ssc events%s%s\n", prog,
		m.volume ? " of " : "", m.volume ? m.volume : "");

	while (!interrupted && m.count != 0) {
		struct pollfd pfd = { .fd = nl_socket_get_fd(sk), .events = POLLIN };
		int ms = -1;

		if (end.tv_sec) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if (now.tv_sec > end.tv_sec ||
			    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
				break;
			ms = (int)((end.tv_sec - now.tv_sec) * 1000 +
				   (end.tv_nsec - now.tv_nsec) / 1000000) + 1;
		}
		r = poll(&pfd, 1, ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err("monitor: poll: %s", strerror(errno));
			ret = EX_FAIL;
			break;
		}
		if (!r)
			continue;
		r = nl_recvmsgs_default(sk);
		if (r < 0 && r != -NLE_INTR) {
			err("monitor: receive: %s", nl_geterror(r));
			ret = EX_FAIL;
			break;
		}
	}
	/* --count not reached by --timeout: say so to scripts */
	if (ret == EX_OK && !interrupted && m.count > 0)
		ret = EX_TIMEOUT;
out:
	nl_socket_free(sk);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: hcctl [--json] COMMAND [ARGS]\n"
"\n"
"Commands:\n"
"  status [VOLUME]              every ssc volume, or one (--json: machine-readable)\n"
"  exists VOLUME RANGE          dirty blocks of RANGE\n"
"  clean VOLUME RANGE           write dirty blocks of RANGE back to the origin\n"
"  evict VOLUME RANGE           drop clean blocks of RANGE from the cache\n"
"  checkpoint VOLUME            write a checkpoint now\n"
"  flush VOLUME [--no-wait]     write back every dirty block, with progress\n"
"  create VOLUME --cache DEV --origin DEV [--mode MODE] [--block-size SIZE]\n"
"         [--segment-size SIZE] [--dirty-high PCT --dirty-low PCT]\n"
"         [--sequential-threshold SIZE] [--admit all|reuse] [--format]\n"
"  remove VOLUME\n"
"  assemble [--file F] [--check] [--initramfs] [--device DEV] [NAME]\n"
"                               create the volumes /etc/ssctab lists that are not\n"
"                               there yet (--listed DEV: is DEV in a listed volume?)\n"
"  disassemble [--file F] [--flush] [NAME]\n"
"                               remove the listed volumes (--flush: write back first)\n"
"  monitor [--count N] [--timeout SECONDS] [VOLUME]\n"
"                               print dm-ssc events (--json: one object a line)\n"
"  index SUBCOMMAND DEVICE ...  the HashCache index on a block device:\n"
"        format DEVICE [--policy P] [--block-size SIZE] [--ways N] [--tag-bits N]\n"
"                      [--sets N] [--seed N] [--resident-sets N]\n"
"                      [--ram-ways N] [--log-size SIZE] [--buffer-size SIZE]\n"
"                      [--prefetch] [--lru] [--partial-discard] [--space-gc]\n"
"                      (P: basic set setmem setmemlru log loglru\n"
"                                      bufferhash cascade)\n"
"        attach|detach|flush|info|stats DEVICE\n"
"        put DEVICE KEY [VALUE]    (no VALUE: standard input)\n"
"        get|lookup|del DEVICE KEY\n"
"        mput|mget DEVICE          (standard input: KEY VALUE / KEY lines)\n"
"        bench DEVICE [--objects N] [--lookups N] [--hit-rate PCT] [--value-size N]\n"
"                     [--seed N] [--group N] [--key-size N]\n"
"                     [--workload fill|lookup-insert|ycsb] [--dist uniform|zipfian|hotspot|normal]\n"
"                     [--set-ratio N]   inserts, then a workload; ops/s, I/Os per op, RAM\n"
"  swap status                  swap devices, swap counters, flashvm's tunables and counters\n"
"  swap tune [NAME=VALUE]...    the none scheduler for non-rotational swap devices,\n"
"                               then flashvm's tunables (flashvm.ko loaded);\n"
"                               devices=auto|all|PATH,... picks the devices it tunes\n"
"\n"
"RANGE is BLOCK, FIRST-LAST or FIRST+COUNT, in cache blocks. SIZE takes K, M, G.\n"
"MODE: writethrough (default), writeback, writearound, passthrough.\n"
"Exit status: 0 ok, 1 refused or failed, 2 usage, 3 no such ssc volume or\n"
"index or flashvm not loaded, 4 monitor timed out before --count events,\n"
"5 no such key, 130 interrupted.\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd;
	int c;

	while ((c = getopt_long(argc, argv, "+jhV", lo, NULL)) != -1) {
		switch (c) {
		case 'j': opt_json = true; break;
		case 'h': usage(stdout); return EX_OK;
		case 'V': printf("hcctl %s\n", HCCTL_VERSION); return EX_OK;
		default: usage(stderr); return EX_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EX_USAGE;
	}
	dm_log_with_errno_init(hc_dm_log);
	cmd = argv[optind];
	argc -= optind + 1;
	argv += optind + 1;
	if (!strcmp(cmd, "status"))
		return cmd_status(argc, argv);
	if (!strcmp(cmd, "exists") || !strcmp(cmd, "clean") || !strcmp(cmd, "evict"))
		return cmd_block_msg(cmd, argc, argv);
	if (!strcmp(cmd, "checkpoint"))
		return cmd_checkpoint(argc, argv);
	if (!strcmp(cmd, "flush"))
		return cmd_flush(argc, argv);
	if (!strcmp(cmd, "create"))
		return cmd_create(argc + 1, argv - 1);
	if (!strcmp(cmd, "remove"))
		return cmd_remove(argc, argv);
	if (!strcmp(cmd, "assemble"))
		return cmd_assemble(argc + 1, argv - 1);
	if (!strcmp(cmd, "disassemble"))
		return cmd_disassemble(argc + 1, argv - 1);
	if (!strcmp(cmd, "monitor"))
		return cmd_monitor(argc + 1, argv - 1);
	if (!strcmp(cmd, "index"))
		return cmd_index(argc, argv);
	if (!strcmp(cmd, "swap"))
		return cmd_swap(argc, argv);
	if (!strcmp(cmd, "help")) {
		usage(stdout);
		return EX_OK;
	}
	err("unknown command '%s' (hcctl --help)", cmd);
	return EX_USAGE;
}
