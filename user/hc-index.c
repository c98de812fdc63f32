// SPDX-License-Identifier: GPL-2.0
/*
 * hcctl index: the HashCache index on a block device, through the ioctls
 * of /dev/hashcache (include/uapi/linux/hashcache.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include <json-c/json.h>
#include <linux/hashcache.h>

#include "hc-common.h"
#include "hcctl.h"

#define HC_DEV		"/dev/" HC_MISC_NAME
#define HC_VALUE_MAX	(64U << 10)

static const char *const policy_names[] = {
	[HC_POLICY_BASIC] = "basic",
	[HC_POLICY_SET] = "set",
	[HC_POLICY_SETMEM] = "setmem",
	[HC_POLICY_SETMEMLRU] = "setmemlru",
	[HC_POLICY_LOG] = "log",
	[HC_POLICY_LOGLRU] = "loglru",
	[HC_POLICY_BUFFERHASH] = "bufferhash",
	[HC_POLICY_CASCADE] = "cascade",
};

#define HDR(s) { .size = sizeof(s), .version = HC_ABI_VERSION }

/* print a JSON object on one line and free it */
static void json_out(struct json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	json_object_put(o);
}

static void jset(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

static int hc_ctl(void)
{
	int fd = open(HC_DEV, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		err("%s: %s%s", HC_DEV, strerror(errno),
		    errno == ENOENT ? " (is the hashcache module loaded?)" : "");
	return fd;
}

/* the block device DEV, opened for writing; -1 (and a message) if not */
static int open_blk(const char *dev)
{
	struct stat st;
	int fd = open(dev, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		err("%s: %s", dev, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISBLK(st.st_mode)) {
		err("%s: not a block device", dev);
		close(fd);
		return -1;
	}
	return fd;
}

/* the id of the index attached on DEV; EX_* on failure */
static int find_index(int ctl, const char *dev, uint32_t *id)
{
	struct hc_find f = { .hdr = HDR(f) };
	struct stat st;

	if (stat(dev, &st) || !S_ISBLK(st.st_mode)) {
		err("%s: %s", dev, errno ? strerror(errno) : "not a block device");
		return EX_USAGE;
	}
	f.dev_major = major(st.st_rdev);
	f.dev_minor = minor(st.st_rdev);
	if (ioctl(ctl, HC_IOC_FIND, &f)) {
		if (errno == ENOENT) {
			err("%s: no index attached (hcctl index attach %s)", dev, dev);
			return EX_NOVOL;
		}
		err("%s: %s", dev, strerror(errno));
		return EX_FAIL;
	}
	*id = f.id;
	return EX_OK;
}

/*
 * BufferHash sizes its buffers and filters itself: say what it chose (attach,
 * read the geometry, detach; the index is as format left it).
 */
/* the sizes Cascade Mapping's tiers were given */
static void say_cascade(const struct hc_info *in)
{
	printf("cascade: T1 of %u mappings in RAM (CLOCK) in %u partitions; T2 a FIFO of %u "
	       "blocks a partition; T3 %" PRIu64 " buckets (lists of %u blocks), compacted into %"
	       PRIu64 " wide ones; %" PRIu64 " slabs of %" PRIu64 " KiB; GC %s\n",
	       in->resident_sets, in->ram_ways, in->ways, (uint64_t)in->sets, HC_CASCADE_LIST,
	       (uint64_t)in->sets * HC_CASCADE_WIDE,
	       (uint64_t)(in->buffer_bytes ? in->log_bytes / in->buffer_bytes : 0),
	       (uint64_t)in->buffer_bytes >> 10,
	       in->flags & HC_FORMAT_SPACE_GC ? "in space mode (whole slabs)" :
	       "in hit mode (copies forward what T1 maps)");
}

/* what format chose for BufferHash or Cascade, read back by an attach */
static int say_geometry(int ctl, const char *dev)
{
	struct hc_attach a = { .hdr = HDR(a) };
	struct hc_info in = { .hdr = HDR(in) };
	struct hc_id d = { .hdr = HDR(d) };
	int fd = open_blk(dev), r;

	if (fd < 0)
		return EX_FAIL;
	a.fd = fd;
	r = ioctl(ctl, HC_IOC_ATTACH, &a);
	close(fd);
	if (r) {
		err("index format %s: formatted, but attach to read its geometry: %s", dev,
		    strerror(errno));
		return EX_FAIL;
	}
	in.id = a.id;
	d.id = a.id;
	r = ioctl(ctl, HC_IOC_GET_INFO, &in);
	if (ioctl(ctl, HC_IOC_DETACH, &d) || r) {
		err("index format %s: formatted, but its geometry: %s", dev, strerror(errno));
		return EX_FAIL;
	}
	if (opt_json)
		return EX_OK;
	if (in.policy == HC_POLICY_CASCADE)
		say_cascade(&in);
	else
		printf("bufferhash: %" PRIu64 " super tables, %u incarnations each of %" PRIu64
		       " KiB (a buffer in RAM each), %u filter bits per 256 B of incarnation\n",
		       (uint64_t)in.sets, in.ways, (uint64_t)in.buffer_bytes >> 10, in.tag_bits);
	return EX_OK;
}

static int idx_format(int ctl, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "block-size", required_argument, NULL, 'b' },
		{ "ways", required_argument, NULL, 'w' },
		{ "tag-bits", required_argument, NULL, 't' },
		{ "sets", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "log-size", required_argument, NULL, 'l' },
		{ "resident-sets", required_argument, NULL, 'r' },
		{ "ram-ways", required_argument, NULL, 'k' },
		{ "buffer-size", required_argument, NULL, 'B' },
		{ "prefetch", no_argument, NULL, 'P' },
		{ "lru", no_argument, NULL, 'L' },
		{ "partial-discard", no_argument, NULL, 'D' },
		{ "space-gc", no_argument, NULL, 'G' },
		{ NULL, 0, NULL, 0 },
	};
	struct hc_format f = { .hdr = HDR(f), .policy = HC_POLICY_SETMEM };
	uint64_t v;
	unsigned int i;
	int c, fd, r;

	optind = 0;	/* 0: glibc starts over, with permutation */
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			f.policy = 0;
			for (i = 1; i < sizeof(policy_names) / sizeof(policy_names[0]); i++)
				if (policy_names[i] && !strcasecmp(optarg, policy_names[i]))
					f.policy = i;
			if (!f.policy) {
				err("index format: unknown policy '%s' (basic, set, setmem, setmemlru, log, loglru, bufferhash, cascade)",
				    optarg);
				return EX_USAGE;
			}
			break;
		case 'b':
			if (parse_bytes(optarg, &v) || v > UINT32_MAX) {
				err("index format: bad --block-size '%s'", optarg);
				return EX_USAGE;
			}
			f.block_size = (uint32_t)v;
			break;
		case 'w':
		case 't':
			if (parse_u64(optarg, &v) || !v || v > 64) {
				err("index format: bad --%s '%s'", c == 'w' ? "ways" : "tag-bits", optarg);
				return EX_USAGE;
			}
			if (c == 'w')
				f.ways = (uint32_t)v;
			else
				f.tag_bits = (uint32_t)v;
			break;
		case 's':
			if (parse_u64(optarg, &v) || !v) {
				err("index format: bad --sets '%s'", optarg);
				return EX_USAGE;
			}
			f.sets = v;
			break;
		case 'r':
			if (parse_u64(optarg, &v) || !v || v >= UINT32_MAX) {
				err("index format: bad --resident-sets '%s'", optarg);
				return EX_USAGE;
			}
			f.resident_sets = (uint32_t)v;
			break;
		case 'P':
			f.flags |= HC_FORMAT_PREFETCH;
			break;
		case 'L':
			f.flags |= HC_FORMAT_LRU;
			break;
		case 'D':
			f.flags |= HC_FORMAT_PARTIAL;
			break;
		case 'G':
			f.flags |= HC_FORMAT_SPACE_GC;
			break;
		case 'k':
			if (parse_u64(optarg, &v) || !v || v >= 64) {
				err("index format: bad --ram-ways '%s'", optarg);
				return EX_USAGE;
			}
			f.ram_ways = (uint32_t)v;
			break;
		case 'B':
			if (parse_bytes(optarg, &v) || !v) {
				err("index format: bad --buffer-size '%s'", optarg);
				return EX_USAGE;
			}
			f.buffer_bytes = v;
			break;
		case 'l':
			if (parse_bytes(optarg, &v) || !v) {
				err("index format: bad --log-size '%s'", optarg);
				return EX_USAGE;
			}
			f.log_bytes = v;
			break;
		case 'S':
			if (parse_u64(optarg, &v)) {
				err("index format: bad --seed '%s'", optarg);
				return EX_USAGE;
			}
			f.seed = v;
			break;
		default:
			return EX_USAGE;
		}
	}
	if (optind != argc - 1) {
		err("index format: want one DEVICE");
		return EX_USAGE;
	}
	fd = open_blk(argv[optind]);
	if (fd < 0)
		return EX_FAIL;
	f.fd = fd;
	r = ioctl(ctl, HC_IOC_FORMAT, &f);
	close(fd);
	if (r) {
		const char *why = errno == EBUSY ? " (attached, or in use)" :
				  errno == ENOSPC ? " (too small for one set, or for the log)" :
				  errno == EINVAL ? " (see hcctl --help and Documentation/hashcache.rst)" : "";

		err("index format %s: %s%s", argv[optind], strerror(errno), why);
		return errno == EINVAL ? EX_USAGE : EX_FAIL;
	}
	if (f.policy == HC_POLICY_BUFFERHASH || f.policy == HC_POLICY_CASCADE)
		return say_geometry(ctl, argv[optind]);
	return EX_OK;
}

static int idx_attach(int ctl, const char *dev)
{
	struct hc_attach a = { .hdr = HDR(a) };
	int fd = open_blk(dev), r;

	if (fd < 0)
		return EX_FAIL;
	a.fd = fd;
	r = ioctl(ctl, HC_IOC_ATTACH, &a);
	close(fd);
	if (r) {
		err("index attach %s: %s%s", dev, strerror(errno),
		    errno == EINVAL ? " (no index there: hcctl index format)" :
		    errno == EBUSY ? " (attached already, or in use)" : "");
		return EX_FAIL;
	}
	if (opt_json) {
		struct json_object *o = json_object_new_object();

		jset(o, "id", a.id);
		json_object_object_add(o, "recovered",
				       json_object_new_boolean(a.flags & HC_ATTACH_RECOVERED));
		json_object_object_add(o, "checkpoint",
				       json_object_new_boolean(a.flags & HC_ATTACH_CHECKPOINT));
		jset(o, "read_bytes", a.read_bytes);
		json_out(o);
	} else {
		printf("%s: index %u attached%s, %" PRIu64 " B read (%s)\n", dev, a.id,
		       a.flags & HC_ATTACH_RECOVERED ? " (it was not detached cleanly)" : "",
		       (uint64_t)a.read_bytes,
		       (a.flags & HC_ATTACH_CHECKPOINT) && (a.flags & HC_ATTACH_RECOVERED) ?
		       "its last checkpoint and what was written since" :
		       a.flags & HC_ATTACH_CHECKPOINT ? "its checkpoint" : "a scan");
	}
	return EX_OK;
}

static int idx_simple(int ctl, const char *what, unsigned long cmd, const char *dev)
{
	struct hc_id d = { .hdr = HDR(d) };
	int r = find_index(ctl, dev, &d.id);

	if (r)
		return r;
	if (ioctl(ctl, cmd, &d)) {
		err("index %s %s: %s", what, dev, strerror(errno));
		return EX_FAIL;
	}
	return EX_OK;
}

/* the value of put: VALUE, or standard input */
static char *read_value(int argc, char **argv, size_t *len)
{
	char *buf;
	size_t n = 0;
	ssize_t k;

	if (argc > 0) {
		*len = strlen(argv[0]);
		return strdup(argv[0]);
	}
	buf = malloc(HC_VALUE_MAX + 1);
	if (!buf)
		return NULL;
	while ((k = read(0, buf + n, HC_VALUE_MAX + 1 - n)) > 0)
		n += (size_t)k;
	if (k < 0 || n > HC_VALUE_MAX) {
		err("index put: %s", k < 0 ? strerror(errno) : "value longer than 64 KiB");
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

static int idx_object(int ctl, const char *sub, int argc, char **argv)
{
	struct hc_object o = { .hdr = HDR(o) };
	unsigned long cmd;
	char *val = NULL;
	size_t klen, vlen = 0;
	int r;

	if (argc < 2 || argc > (strcmp(sub, "put") ? 2 : 3)) {
		err("index %s: want DEVICE KEY%s", sub, strcmp(sub, "put") ? "" : " [VALUE]");
		return EX_USAGE;
	}
	klen = strlen(argv[1]);
	if (!klen || klen > HC_KEY_MAX) {
		err("index %s: a key is 1 to %d bytes", sub, HC_KEY_MAX);
		return EX_USAGE;
	}
	r = find_index(ctl, argv[0], &o.id);
	if (r)
		return r;
	o.key = (uintptr_t)argv[1];
	o.key_len = (uint32_t)klen;
	if (!strcmp(sub, "put")) {
		cmd = HC_IOC_PUT;
		val = read_value(argc - 2, argv + 2, &vlen);
		if (!val)
			return EX_FAIL;
	} else if (!strcmp(sub, "get")) {
		cmd = HC_IOC_GET;
		vlen = HC_VALUE_MAX;
		val = malloc(vlen);
		if (!val)
			return EX_FAIL;
	} else {
		cmd = !strcmp(sub, "lookup") ? HC_IOC_LOOKUP : HC_IOC_DELETE;
	}
	o.value = (uintptr_t)val;
	o.value_len = vlen;
	if (ioctl(ctl, cmd, &o)) {
		err("index %s: %s%s", sub, strerror(errno),
		    errno == EFBIG ? " (value too large for this index: hcctl index info)" : "");
		free(val);
		return EX_FAIL;
	}
	r = EX_OK;
	if (cmd != HC_IOC_PUT && !o.found) {
		if (opt_json) {
			struct json_object *j = json_object_new_object();

			json_object_object_add(j, "found", json_object_new_boolean(0));
			json_out(j);
		} else {
			err("%s: no such key", argv[1]);
		}
		r = EX_NOKEY;
	} else if (cmd == HC_IOC_GET) {
		if (o.value_len > vlen) {
			err("index get: value truncated to %zu bytes", vlen);
			o.value_len = vlen;
		}
		if (fwrite(val, 1, o.value_len, stdout) != o.value_len)
			r = EX_FAIL;
	} else if (cmd == HC_IOC_LOOKUP) {
		if (opt_json) {
			struct json_object *j = json_object_new_object();

			json_object_object_add(j, "found", json_object_new_boolean(1));
			jset(j, "dev_offset", o.dev_offset);
			jset(j, "length", o.value_len);
			json_out(j);
		} else {
			printf("%" PRIu64 " %" PRIu64 "\n", (uint64_t)o.dev_offset,
			       (uint64_t)o.value_len);
		}
	}
	free(val);
	return r;
}

static int idx_info(int ctl, const char *dev)
{
	struct hc_info in = { .hdr = HDR(in) };
	const char *pol;
	int r = find_index(ctl, dev, &in.id);

	if (r)
		return r;
	if (ioctl(ctl, HC_IOC_GET_INFO, &in)) {
		err("index info %s: %s", dev, strerror(errno));
		return EX_FAIL;
	}
	pol = in.policy < sizeof(policy_names) / sizeof(policy_names[0]) &&
	      policy_names[in.policy] ? policy_names[in.policy] : "?";
	if (opt_json) {
		struct json_object *j = json_object_new_object();

		jset(j, "id", in.id);
		json_object_object_add(j, "policy", json_object_new_string(pol));
		jset(j, "block_size", in.block_size);
		jset(j, "ways", in.ways);
		jset(j, "tag_bits", in.tag_bits);
		jset(j, "sets", in.sets);
		jset(j, "resident_sets", in.resident_sets);
		jset(j, "ram_ways", in.ram_ways);
		json_object_object_add(j, "prefetch",
				       json_object_new_boolean(in.flags & HC_FORMAT_PREFETCH));
		json_object_object_add(j, "lru", json_object_new_boolean(in.flags & HC_FORMAT_LRU));
		json_object_object_add(j, "partial_discard",
				       json_object_new_boolean(in.flags & HC_FORMAT_PARTIAL));
		json_object_object_add(j, "space_gc",
				       json_object_new_boolean(in.flags & HC_FORMAT_SPACE_GC));
		jset(j, "log_bytes", in.log_bytes);
		jset(j, "buffer_bytes", in.buffer_bytes);
		jset(j, "max_value", in.max_value);
		jset(j, "dev_bytes", in.dev_bytes);
		jset(j, "checkpoint_bytes", in.ckpt_bytes);
		json_out(j);
	} else {
		printf("index %u on %s: %s, %u ways of %u B, %" PRIu64 " sets, %u tag bits, "
		       "values up to %" PRIu64 " B\n", in.id, dev, pol, in.ways, in.block_size,
		       (uint64_t)in.sets, in.tag_bits, (uint64_t)in.max_value);
		if (in.policy == HC_POLICY_CASCADE)
			say_cascade(&in);
		else if (in.resident_sets)
			printf("%u sets kept in RAM\n", in.resident_sets);
		if (in.ram_ways && in.policy != HC_POLICY_CASCADE)
			printf("log offsets of %u ways a set kept in RAM\n", in.ram_ways);
		if (in.flags & HC_FORMAT_PREFETCH)
			printf("prefetch: a group's records are read together\n");
		if (in.flags & HC_FORMAT_LRU)
			printf("lru: a record a get finds in an incarnation is inserted again\n");
		if (in.flags & HC_FORMAT_PARTIAL)
			printf("partial discard: an eviction inserts again what is live in the incarnation\n");
		if (in.buffer_bytes && in.policy == HC_POLICY_BUFFERHASH)
			printf("buffers and incarnations of %" PRIu64 " B: %" PRIu64
			       " super tables, %u incarnations each\n", (uint64_t)in.buffer_bytes,
			       (uint64_t)in.sets, in.ways);
		if (in.ckpt_bytes)
			printf("checkpoint region of %" PRIu64 " B: a clean attach reads it, not the %s\n",
			       (uint64_t)in.ckpt_bytes, in.log_bytes ? "log" : "table");
		else
			printf("no checkpoint region: every attach scans\n");
	}
	return EX_OK;
}

static int idx_stats(int ctl, const char *dev)
{
	struct hc_stats s = { .hdr = HDR(s) };
	struct { const char *name; uint64_t v; } f[40];
	unsigned int n = 0, i;
	int r = find_index(ctl, dev, &s.id);

	if (r)
		return r;
	if (ioctl(ctl, HC_IOC_STATS, &s)) {
		err("index stats %s: %s", dev, strerror(errno));
		return EX_FAIL;
	}
#define F(x) do { f[n].name = #x; f[n].v = s.x; n++; } while (0)
	F(objects); F(lookups); F(hits); F(misses); F(misses_in_ram); F(false_positives);
	F(inserts); F(overwrites); F(deletes); F(evictions); F(read_ios); F(write_ios);
	F(seeks); F(bytes_read); F(bytes_written); F(lookup_ios); F(insert_ios);
	F(miss_ios); F(log_wraps); F(ram_bytes); F(slots); F(set_loads);
	F(offset_fetches); F(spill_writes); F(prefetch_reads); F(prefetch_hits);
	F(torn_records); F(bad_entries); F(checkpoints);
#undef F
	/* Cascade's tiers: where lookups were settled, index blocks read */
	f[n].name = "t1_hits"; f[n++].v = s.tier_hits[0];
	f[n].name = "t2_hits"; f[n++].v = s.tier_hits[1];
	f[n].name = "t3_hits"; f[n++].v = s.tier_hits[2];
	f[n].name = "t2_reads"; f[n++].v = s.tier_reads[1];
	f[n].name = "t3_reads"; f[n++].v = s.tier_reads[2];
	f[n].name = "compactions"; f[n++].v = s.compactions;
	f[n].name = "t3_drops"; f[n++].v = s.t3_drops;
	if (opt_json) {
		struct json_object *j = json_object_new_object();

		jset(j, "id", s.id);
		for (i = 0; i < n; i++)
			jset(j, f[i].name, f[i].v);
		json_object_object_add(j, "ram_bits_per_object",
				       json_object_new_double(s.ram_bits_per_object / 1000.0));
		json_object_object_add(j, "ram_bits_per_slot",
				       json_object_new_double(s.slots ? s.ram_bytes * 8.0 / s.slots : 0));
		json_out(j);
	} else {
		for (i = 0; i < n; i++)
			printf("%-20s %" PRIu64 "\n", f[i].name, f[i].v);
		printf("%-20s %.3f\n", "ram_bits_per_object", s.ram_bits_per_object / 1000.0);
		printf("%-20s %.3f\n", "ram_bits_per_slot",
		       s.slots ? s.ram_bytes * 8.0 / s.slots : 0);
	}
	return EX_OK;
}

/* a cheap reproducible generator for the bench's keys and choices */
static uint64_t bench_rnd(uint64_t *st)
{
	uint64_t z = (*st += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int get_stats(int ctl, uint32_t id, struct hc_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->hdr = (struct hc_hdr)HDR(*s);
	s->id = id;
	if (ioctl(ctl, HC_IOC_STATS, s)) {
		err("index bench: stats: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* the bench's workloads and YCSB's request distributions */
enum { WL_FILL, WL_LOOKUP_INSERT, WL_YCSB };
enum { DIST_UNIFORM, DIST_ZIPFIAN, DIST_HOTSPOT, DIST_NORMAL };
static const char *const wl_names[] = { "fill", "lookup-insert", "ycsb" };
static const char *const dist_names[] = { "uniform", "zipfian", "hotspot", "normal" };

static int name_index(const char *const *names, int n, const char *s)
{
	int i;

	for (i = 0; i < n; i++)
		if (!strcmp(names[i], s))
			return i;
	return -1;
}

/* uniform in [0, 1) from 53 bits */
static double bench_unit(uint64_t *st)
{
	return (bench_rnd(st) >> 11) * (1.0 / 9007199254740992.0);
}

/*
 * YCSB's request distributions over N keys: zipfian with constant 0.99
 * (Gray et al.'s generator, as YCSB's), its ranks scrambled over the keys by a
 * hash as YCSB's scrambled zipfian does, so the hot keys are not the first
 * inserted; hotspot: 80 % of the requests to 20 % of the keys; normal: mean
 * N / 2, standard deviation N / 8, clamped (Cascade Mapping's "Normal"; its
 * paper gives no deviation, this one is ours).
 */
struct bench_dist {
	int kind;
	uint64_t n;
	double theta, zetan, alpha, eta;
};

static void bench_dist_init(struct bench_dist *d, int kind, uint64_t n)
{
	double zeta2 = 1 + pow(0.5, 0.99);
	uint64_t i;

	memset(d, 0, sizeof(*d));
	d->kind = kind;
	d->n = n;
	if (kind != DIST_ZIPFIAN)
		return;
	d->theta = 0.99;
	for (i = 1; i <= n; i++)
		d->zetan += 1 / pow((double)i, d->theta);
	d->alpha = 1 / (1 - d->theta);
	d->eta = (1 - pow(2.0 / n, 1 - d->theta)) / (1 - zeta2 / d->zetan);
}

static uint64_t bench_draw(const struct bench_dist *d, uint64_t *st)
{
	double u, uz, x;
	uint64_t r, h;

	switch (d->kind) {
	case DIST_ZIPFIAN:
		u = bench_unit(st);
		uz = u * d->zetan;
		if (uz < 1)
			r = 0;
		else if (uz < 1 + pow(0.5, d->theta))
			r = 1;
		else
			r = (uint64_t)(d->n * pow(d->eta * u - d->eta + 1, d->alpha));
		h = r * 0x9E3779B97F4A7C15ULL;	/* the scramble */
		return (h ^ (h >> 29)) % d->n;
	case DIST_HOTSPOT: {
		uint64_t hot = d->n / 5 ? d->n / 5 : 1;

		if (bench_rnd(st) % 100 < 80 || hot == d->n)
			return bench_rnd(st) % hot;
		return hot + bench_rnd(st) % (d->n - hot);
	}
	case DIST_NORMAL:
		/* Box-Muller */
		u = bench_unit(st);
		x = d->n / 2.0 + d->n / 8.0 * sqrt(-2 * log(1 - u)) *
			cos(2 * M_PI * bench_unit(st));
		if (x < 0)
			return 0;
		return x >= d->n ? d->n - 1 : (uint64_t)x;
	default:
		return bench_rnd(st) % d->n;
	}
}

/* "PREFIX-SEED-I", padded with '.' to @size bytes when @size is longer */
static uint32_t bench_key(char *key, size_t cap, const char *prefix, uint64_t seed,
			  uint64_t i, uint64_t size)
{
	int len = snprintf(key, cap, "%s-%" PRIu64 "-%" PRIu64, prefix, seed, i);

	if (len < 0 || (size_t)len > cap - 1)
		len = (int)(cap - 1);
	while ((uint64_t)len < size && (size_t)len < cap - 1)
		key[len++] = '.';
	key[len] = 0;
	return (uint32_t)len;
}

struct bench {
	int ctl;
	uint32_t id;
	uint64_t vsize, seed, ksize;
	char key[HC_KEY_MAX + 1];
	char *val, *got;
	uint64_t puts, hits, misses, wrong;
	uint64_t one_io;	/* lookups that made at most one device I/O */
};

/*
 * the value of key I at version VER: bytes 'a' + (I + VER) % 26 (what the
 * suites' own readers of a bench's keys expect of version 0); a later
 * version's first 16 bytes are I and VER, so that an older version never
 * passes for it
 */
static void bench_value(char *v, uint64_t vsize, uint64_t i, uint64_t ver)
{
	uint64_t id[2] = { i, ver };

	memset(v, 'a' + (int)((i + ver) % 26), vsize);
	if (ver)
		memcpy(v, id, vsize < sizeof(id) ? vsize : sizeof(id));
}

/* put key PREFIX-SEED-I with the value of version VER */
static int bench_put(struct bench *b, const char *prefix, uint64_t i, uint64_t ver, uint32_t group)
{
	struct hc_object o = { .hdr = HDR(o) };

	o.id = b->id;
	o.key_len = bench_key(b->key, sizeof(b->key), prefix, b->seed, i, b->ksize);
	o.key = (uintptr_t)b->key;
	bench_value(b->val, b->vsize, i, ver);
	o.value = (uintptr_t)b->val;
	o.value_len = b->vsize;
	o.group = group;
	if (ioctl(b->ctl, HC_IOC_PUT, &o)) {
		err("index bench: put: %s", strerror(errno));
		return -1;
	}
	b->puts++;
	return 0;
}

/*
 * get key PREFIX-SEED-I; @want: the version it must hold if found, -1 if it
 * must not be found. Counts hits, misses and wrong answers. Return: 1 found,
 * 0 not, -1 error.
 */
static int bench_get(struct bench *b, const char *prefix, uint64_t i, int64_t want)
{
	struct hc_object o = { .hdr = HDR(o) };

	o.id = b->id;
	o.key_len = bench_key(b->key, sizeof(b->key), prefix, b->seed, i, b->ksize);
	o.key = (uintptr_t)b->key;
	o.value = (uintptr_t)b->got;
	o.value_len = b->vsize;
	if (ioctl(b->ctl, HC_IOC_GET, &o)) {
		err("index bench: get: %s", strerror(errno));
		return -1;
	}
	if (o.ios <= 1)
		b->one_io++;
	if (!o.found) {
		b->misses++;
		return 0;
	}
	b->hits++;
	bench_value(b->val, b->vsize, i, want < 0 ? 0 : (uint64_t)want);
	if (want < 0 || o.value_len != b->vsize || memcmp(b->got, b->val, b->vsize))
		b->wrong++;
	return 1;
}

/*
 * bench: insert N objects, then run one workload over them, counting from the
 * kernel's counters (and giving operations a second, wall clock: under
 * emulation compare runs, never quote):
 *  fill (the default): M lookups of which PCT % were inserted;
 *  lookup-insert: BufferHash's, M random keys each looked up and then
 *	inserted, PCT % of them inserted before (the lookup success rate);
 *  ycsb: M requests by --dist, one SET (a new version of the key) per
 *	--set-ratio GETs; a GET must find the newest version or nothing.
 */
static int idx_bench(int ctl, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "objects", required_argument, NULL, 'n' },
		{ "lookups", required_argument, NULL, 'm' },
		{ "hit-rate", required_argument, NULL, 'h' },
		{ "value-size", required_argument, NULL, 'v' },
		{ "seed", required_argument, NULL, 's' },
		{ "group", required_argument, NULL, 'g' },
		{ "workload", required_argument, NULL, 'w' },
		{ "dist", required_argument, NULL, 'd' },
		{ "set-ratio", required_argument, NULL, 'r' },
		{ "key-size", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t n = 1000, m = 1000, pct = 40, v, i, st, fresh = 0, ratio = 30;
	uint64_t group = 0, gk = 0, grem = 0, ins_puts;
	int wl = WL_FILL, dist = DIST_ZIPFIAN, c, r;
	struct bench b = { .ctl = ctl, .vsize = 1024, .seed = 1 };
	struct hc_stats s0, s1, s2, a, z;
	struct bench_dist bd;
	uint32_t *ver = NULL;
	double t0, t1, t2;

	optind = 0;	/* 0: glibc starts over, with permutation */
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'w' || c == 'd') {
			r = c == 'w' ? name_index(wl_names, 3, optarg) :
				       name_index(dist_names, 4, optarg);
			if (r < 0) {
				err("index bench: no %s '%s'", c == 'w' ? "workload" : "distribution",
				    optarg);
				return EX_USAGE;
			}
			*(c == 'w' ? &wl : &dist) = r;
			continue;
		}
		if (c == '?' || parse_u64(optarg, &v) ||
		    (c == 'h' && v > 100) || (c == 'v' && v > HC_VALUE_MAX) ||
		    (c == 'k' && v > HC_KEY_MAX) || (c == 'r' && v > 1000000) ||
		    ((c == 'n' || c == 'm' || c == 'r') && !v)) {
			err("index bench: bad option value");
			return EX_USAGE;
		}
		switch (c) {
		case 'n': n = v; break;
		case 'm': m = v; break;
		case 'h': pct = v; break;
		case 'v': b.vsize = v; break;
		case 'g': group = v; break;
		case 'r': ratio = v; break;
		case 'k': b.ksize = v; break;
		default: b.seed = v; break;
		}
	}
	if (optind != argc - 1) {
		err("index bench: want one DEVICE");
		return EX_USAGE;
	}
	if (wl == WL_YCSB && b.vsize < 16) {
		err("index bench: ycsb needs --value-size 16 or more (a key's version is in its value)");
		return EX_USAGE;
	}
	r = find_index(ctl, argv[optind], &b.id);
	if (r)
		return r;
	b.val = malloc(b.vsize + 1);
	b.got = malloc(b.vsize + 1);
	if (wl == WL_YCSB)
		ver = calloc(n, sizeof(*ver));
	if (!b.val || !b.got || (wl == WL_YCSB && !ver)) {
		err("index bench: out of memory");
		goto fail;
	}
	bench_dist_init(&bd, wl == WL_YCSB ? dist : DIST_UNIFORM, n);
	if (get_stats(ctl, b.id, &s0))
		goto fail;
	t0 = now_s();
	/* --group G: each G keys in a row are related (one page's objects) */
	for (i = 0; i < n; i++)
		if (bench_put(&b, "bench", i, 0, group ? (uint32_t)(i / group + 1) : 0))
			goto fail;
	t1 = now_s();
	if (get_stats(ctl, b.id, &s1))
		goto fail;
	ins_puts = b.puts;
	b.puts = 0;
	st = b.seed;
	for (i = 0; i < m; i++) {
		bool hit = bench_rnd(&st) % 100 < pct;
		uint64_t k = bench_rnd(&st) % n;

		switch (wl) {
		case WL_LOOKUP_INSERT:
			if (hit) {
				if (bench_get(&b, "bench", k, 0) < 0 || bench_put(&b, "bench", k, 0, 0))
					goto fail;
			} else {
				k = fresh++;	/* never seen: must miss */
				if (bench_get(&b, "absent", k, -1) < 0 ||
				    bench_put(&b, "absent", k, 0, 0))
					goto fail;
			}
			continue;
		case WL_YCSB:
			k = bench_draw(&bd, &st);
			if (bench_rnd(&st) % (ratio + 1) == 0) {
				if (bench_put(&b, "bench", k, ++ver[k], 0))
					goto fail;
			} else if (bench_get(&b, "bench", k, ver[k]) < 0) {
				goto fail;
			}
			continue;
		}
		/* fill; --group: hits walk a random group in order, as a page load does */
		if (group && hit) {
			if (!grem) {
				gk = k / group * group;
				grem = n - gk < group ? n - gk : group;
			}
			k = gk++;
			grem--;
		}
		if (bench_get(&b, hit ? "bench" : "absent", k, hit ? 0 : -1) < 0)
			goto fail;
	}
	t2 = now_s();
	if (get_stats(ctl, b.id, &s2))
		goto fail;
	/* the inserts counted: the fill's, or the workload's own puts */
	a = wl == WL_FILL ? s0 : s1;
	z = wl == WL_FILL ? s1 : s2;
	if (wl != WL_FILL)
		ins_puts = b.puts;
#define D(a, b, f) ((double)((b).f - (a).f))
	{
		double ins_s = n / (t1 - t0), look_s = m / (t2 - t1);
		double io_ins = ins_puts ? D(a, z, insert_ios) / ins_puts : 0;
		double wb_ins = ins_puts ? D(a, z, bytes_written) / ins_puts : 0;
		double io_hit = b.hits ? (D(s1, s2, lookup_ios) - D(s1, s2, miss_ios)) / b.hits : 0;
		double io_miss = b.misses ? D(s1, s2, miss_ios) / b.misses : 0;
		double bits = s2.slots ? s2.ram_bytes * 8.0 / s2.slots : 0;
		double bits_obj = s2.objects ? s2.ram_bytes * 8.0 / s2.objects : 0;

		if (opt_json) {
			struct json_object *j = json_object_new_object();

			json_object_object_add(j, "workload", json_object_new_string(wl_names[wl]));
			if (wl == WL_YCSB) {
				json_object_object_add(j, "dist",
						       json_object_new_string(dist_names[dist]));
				jset(j, "set_ratio", ratio);
			}
			jset(j, "objects", n);
			jset(j, "lookups", m);
			if (wl != WL_YCSB)
				jset(j, "hit_rate_pct", pct);
			jset(j, "puts", ins_puts);
			jset(j, "hits", b.hits);
			jset(j, "misses", b.misses);
			jset(j, "wrong", b.wrong);
			jset(j, "lookups_one_io", b.one_io);
			jset(j, "stored", s2.objects);
			jset(j, "evictions", s2.evictions - s0.evictions);
			jset(j, "false_positives", s2.false_positives - s1.false_positives);
			jset(j, "set_loads", s2.set_loads - s1.set_loads);
			jset(j, "offset_fetches", s2.offset_fetches - s1.offset_fetches);
			jset(j, "spill_writes", s2.spill_writes - s0.spill_writes);
			jset(j, "prefetch_reads", s2.prefetch_reads - s1.prefetch_reads);
			jset(j, "prefetch_hits", s2.prefetch_hits - s1.prefetch_hits);
			/* Cascade: the lookups settled in each tier, the index blocks read */
			jset(j, "t1_hits", s2.tier_hits[0] - s1.tier_hits[0]);
			jset(j, "t2_hits", s2.tier_hits[1] - s1.tier_hits[1]);
			jset(j, "t3_hits", s2.tier_hits[2] - s1.tier_hits[2]);
			jset(j, "t2_reads", s2.tier_reads[1] - s1.tier_reads[1]);
			jset(j, "t3_reads", s2.tier_reads[2] - s1.tier_reads[2]);
			jset(j, "compactions", s2.compactions - s0.compactions);
			json_object_object_add(j, "inserts_per_s", json_object_new_double(ins_s));
			json_object_object_add(j, "lookups_per_s", json_object_new_double(look_s));
			json_object_object_add(j, "ios_per_insert", json_object_new_double(io_ins));
			json_object_object_add(j, "bytes_written_per_insert",
					       json_object_new_double(wb_ins));
			json_object_object_add(j, "ios_per_hit", json_object_new_double(io_hit));
			json_object_object_add(j, "ios_per_miss", json_object_new_double(io_miss));
			json_object_object_add(j, "ram_bits_per_slot", json_object_new_double(bits));
			json_object_object_add(j, "ram_bits_per_object",
					       json_object_new_double(bits_obj));
			json_out(j);
		} else {
			printf("%s: %" PRIu64 " objects inserted at %.0f/s; %" PRIu64
			       " inserts counted, %.3f device I/Os and %.0f bytes written each; %"
			       PRIu64 " evictions\n", wl_names[wl], n, ins_s, ins_puts, io_ins, wb_ins,
			       (uint64_t)(s2.evictions - s0.evictions));
			printf("%" PRIu64 " requests (%s): %.0f/s; %" PRIu64
			       " hits at %.3f I/Os, %" PRIu64 " misses at %.3f I/Os; %" PRIu64
			       " wrong values\n", m,
			       wl == WL_YCSB ? dist_names[dist] : "hit rate", look_s, b.hits, io_hit,
			       b.misses, io_miss, b.wrong);
			printf("RAM: %.2f bits per slot, %.2f per object stored (%" PRIu64 ")\n", bits,
			       bits_obj, (uint64_t)s2.objects);
			if (s2.tier_hits[0] + s2.tier_hits[1] + s2.tier_hits[2])
				printf("tiers: %" PRIu64 " / %" PRIu64 " / %" PRIu64
				       " lookups settled in T1 / T2 / T3; %" PRIu64 " T2 and %" PRIu64
				       " T3 blocks read\n",
				       (uint64_t)(s2.tier_hits[0] - s1.tier_hits[0]),
				       (uint64_t)(s2.tier_hits[1] - s1.tier_hits[1]),
				       (uint64_t)(s2.tier_hits[2] - s1.tier_hits[2]),
				       (uint64_t)(s2.tier_reads[1] - s1.tier_reads[1]),
				       (uint64_t)(s2.tier_reads[2] - s1.tier_reads[2]));
		}
	}
#undef D
	free(ver);
	free(b.val);
	free(b.got);
	return b.wrong ? EX_FAIL : EX_OK;
fail:
	free(ver);
	free(b.val);
	free(b.got);
	return EX_FAIL;
}

/*
 * mput: standard input is lines "KEY VALUE" (split at the first space), one
 * put each; mget: lines "KEY", answered "KEY<tab>VALUE" when found and
 * "KEY" alone when not (exit 5 if any was not). One process for many keys.
 */
static int idx_batch(int ctl, bool put, const char *dev)
{
	struct hc_object o = { .hdr = HDR(o) };
	char *line = NULL, *val = NULL, *sp;
	size_t cap = 0, klen, vlen;
	unsigned long lineno = 0;
	ssize_t n;
	int r = find_index(ctl, dev, &o.id), missing = 0;

	if (r)
		return r;
	if (!put) {
		val = malloc(HC_VALUE_MAX);
		if (!val)
			return EX_FAIL;
	}
	while ((n = getline(&line, &cap, stdin)) > 0) {
		lineno++;
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		sp = put ? strchr(line, ' ') : NULL;
		klen = sp ? (size_t)(sp - line) : (size_t)n;
		vlen = sp ? (size_t)n - klen - 1 : 0;
		if (!klen || klen > HC_KEY_MAX || (put && !sp)) {
			err("index %s: line %lu: want %s (a key is 1 to %d bytes)",
			    put ? "mput" : "mget", lineno, put ? "KEY VALUE" : "KEY", HC_KEY_MAX);
			r = EX_USAGE;
			break;
		}
		o.key = (uintptr_t)line;
		o.key_len = (uint32_t)klen;
		o.value = (uintptr_t)(put ? sp + 1 : val);
		o.value_len = put ? vlen : HC_VALUE_MAX;
		if (ioctl(ctl, put ? HC_IOC_PUT : HC_IOC_GET, &o)) {
			err("index %s: line %lu: %s", put ? "mput" : "mget", lineno, strerror(errno));
			r = EX_FAIL;
			break;
		}
		if (put)
			continue;
		if (!o.found) {
			missing = 1;
			printf("%.*s\n", (int)klen, line);
			continue;
		}
		printf("%.*s\t", (int)klen, line);
		fwrite(val, 1, o.value_len < HC_VALUE_MAX ? o.value_len : HC_VALUE_MAX, stdout);
		putchar('\n');
	}
	free(line);
	free(val);
	if (fflush(stdout))
		r = EX_FAIL;
	return r ? r : missing ? EX_NOKEY : EX_OK;
}

int cmd_index(int argc, char **argv)
{
	const char *sub;
	int ctl, r;

	if (argc < 2) {
		err("index: want SUBCOMMAND DEVICE (hcctl --help)");
		return EX_USAGE;
	}
	sub = argv[0];
	if (strcmp(sub, "format") && strcmp(sub, "attach") && strcmp(sub, "detach") &&
	    strcmp(sub, "flush") && strcmp(sub, "info") && strcmp(sub, "stats") &&
	    strcmp(sub, "put") && strcmp(sub, "get") && strcmp(sub, "lookup") &&
	    strcmp(sub, "del") && strcmp(sub, "bench") && strcmp(sub, "mput") &&
	    strcmp(sub, "mget")) {
		err("index: unknown subcommand '%s' (hcctl --help)", sub);
		return EX_USAGE;
	}
	if (strcmp(sub, "format") && strcmp(sub, "bench") && strcmp(sub, "put") &&
	    strcmp(sub, "get") && strcmp(sub, "lookup") && strcmp(sub, "del") && argc != 2) {
		err("index %s: want one DEVICE", sub);
		return EX_USAGE;
	}
	ctl = hc_ctl();
	if (ctl < 0)
		return EX_FAIL;
	if (!strcmp(sub, "format"))
		r = idx_format(ctl, argc, argv);
	else if (!strcmp(sub, "attach"))
		r = idx_attach(ctl, argv[1]);
	else if (!strcmp(sub, "detach"))
		r = idx_simple(ctl, sub, HC_IOC_DETACH, argv[1]);
	else if (!strcmp(sub, "flush"))
		r = idx_simple(ctl, sub, HC_IOC_FLUSH, argv[1]);
	else if (!strcmp(sub, "info"))
		r = idx_info(ctl, argv[1]);
	else if (!strcmp(sub, "stats"))
		r = idx_stats(ctl, argv[1]);
	else if (!strcmp(sub, "bench"))
		r = idx_bench(ctl, argc, argv);
	else if (!strcmp(sub, "mput") || !strcmp(sub, "mget"))
		r = idx_batch(ctl, sub[1] == 'p', argv[1]);
	else
		r = idx_object(ctl, sub, argc - 1, argv + 1);
	close(ctl);
	return r;
}
