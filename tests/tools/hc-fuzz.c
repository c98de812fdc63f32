// SPDX-License-Identifier: GPL-2.0
/*
 * hc-fuzz: feed /dev/hashcache malformed and random ioctls and check every
 * answer.
 *
 *   hc-fuzz DEVICE NRANDOM SEED
 *
 * DEVICE must hold an attached index (hcctl index attach). Prints one line
 * per check ("ok - ..." / "not ok - ...") and exits 1 if any failed:
 *  - a good PUT, GET and STATS work;
 *  - each struct with a wrong hdr.size, a wrong version, a reserved field
 *    set, a bad pointer, an empty or oversized key, an unknown id gets the
 *    documented errno (EINVAL, EFAULT, ENOENT), an unknown command ENOTTY;
 *  - NRANDOM random ioctls (HashCache's commands and sizes, random bytes,
 *    some with a valid header and id, some with valid pointers) each return;
 *  - afterwards the good GET still returns the value it put.
 * Whether the kernel stayed healthy is checked by the harness's console scan.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "../../include/uapi/linux/hashcache.h"

static int failed;

static void check(int cond, const char *what)
{
	printf("%s - %s\n", cond ? "ok" : "not ok", what);
	if (!cond)
		failed = 1;
}

/* ioctl that reports -errno (0 on success) */
static int io(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static uint64_t rs;

static uint64_t rnd(void)
{
	uint64_t z = (rs += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

#define HDR(s) { .size = sizeof(s), .version = HC_ABI_VERSION }

int main(int argc, char **argv)
{
	static const char key[] = "fuzz-key", val[] = "fuzz-value";
	static const unsigned long cmds[] = {
		HC_IOC_FORMAT, HC_IOC_ATTACH, HC_IOC_DETACH, HC_IOC_PUT, HC_IOC_GET,
		HC_IOC_LOOKUP, HC_IOC_DELETE, HC_IOC_FLUSH, HC_IOC_GET_INFO, HC_IOC_STATS,
		HC_IOC_FIND,
	};
	struct hc_find fnd = { .hdr = HDR(fnd) };
	struct hc_object o, good;
	struct hc_stats s;
	char out[64], msg[128], big[512];
	unsigned long i, n;
	struct stat st;
	uint32_t id;
	int ctl, r;

	if (argc != 4 || stat(argv[1], &st) || !S_ISBLK(st.st_mode)) {
		fprintf(stderr, "usage: hc-fuzz DEVICE NRANDOM SEED\n");
		return 2;
	}
	n = strtoul(argv[2], NULL, 0);
	rs = strtoull(argv[3], NULL, 0);
	ctl = open("/dev/" HC_MISC_NAME, O_RDWR);
	if (ctl < 0) {
		perror("/dev/" HC_MISC_NAME);
		return 2;
	}
	fnd.dev_major = major(st.st_rdev);
	fnd.dev_minor = minor(st.st_rdev);
	r = io(ctl, HC_IOC_FIND, &fnd);
	check(!r, "FIND: the index on DEVICE");
	if (r)
		return 1;
	id = fnd.id;

	memset(&good, 0, sizeof(good));
	good.hdr = (struct hc_hdr)HDR(good);
	good.id = id;
	good.key = (uintptr_t)key;
	good.key_len = sizeof(key) - 1;
	good.value = (uintptr_t)val;
	good.value_len = sizeof(val) - 1;
	check(!io(ctl, HC_IOC_PUT, &good), "PUT of a good object");
	o = good;
	o.value = (uintptr_t)out;
	o.value_len = sizeof(out);
	check(!io(ctl, HC_IOC_GET, &o) && o.found && o.value_len == sizeof(val) - 1 &&
	      !memcmp(out, val, o.value_len), "GET returns it");
	/* ios is the operation's own count, whatever the caller left there */
	o = good;
	o.value = (uintptr_t)out;
	o.value_len = sizeof(out);
	o.ios = ~0ULL;
	check(!io(ctl, HC_IOC_GET, &o) && o.found && o.ios < 64, "GET with ios set: taken, its own I/Os");
	memset(&s, 0, sizeof(s));
	s.hdr = (struct hc_hdr)HDR(s);
	s.id = id;
	check(!io(ctl, HC_IOC_STATS, &s) && s.objects >= 1, "STATS");
	{
		/* a caller built before tier_hits: its smaller struct, nothing written past it */
		union { struct hc_stats s; char b[sizeof(struct hc_stats)]; } v0;
		size_t k;
		int bad = 0;

		memset(&v0, 0xa5, sizeof(v0));
		memset(&v0, 0, HC_STATS_SIZE_V0);
		v0.s.hdr.size = HC_STATS_SIZE_V0;
		v0.s.hdr.version = HC_ABI_VERSION;
		v0.s.id = id;
		check(!io(ctl, HC_IOC_STATS_V0, &v0) && v0.s.objects == s.objects &&
		      v0.s.hdr.size == HC_STATS_SIZE_V0, "STATS of the size before tier_hits");
		for (k = HC_STATS_SIZE_V0; k < sizeof(v0); k++)
			bad |= (unsigned char)v0.b[k] != 0xa5;
		check(!bad, "STATS of the size before tier_hits: nothing written past it");
		v0.s.hdr.size = sizeof(struct hc_stats);
		check(io(ctl, HC_IOC_STATS_V0, &v0) == -EINVAL, "STATS_V0 with the new size: EINVAL");
		/* ... and one built before compactions */
		memset(&v0, 0xa5, sizeof(v0));
		memset(&v0, 0, HC_STATS_SIZE_V1);
		v0.s.hdr.size = HC_STATS_SIZE_V1;
		v0.s.hdr.version = HC_ABI_VERSION;
		v0.s.id = id;
		check(!io(ctl, HC_IOC_STATS_V1, &v0) && v0.s.objects == s.objects &&
		      v0.s.hdr.size == HC_STATS_SIZE_V1, "STATS of the size before compactions");
		for (bad = 0, k = HC_STATS_SIZE_V1; k < sizeof(v0); k++)
			bad |= (unsigned char)v0.b[k] != 0xa5;
		check(!bad, "STATS of the size before compactions: nothing written past it");
	}

	/* hand-made bad structs: the errno each must get */
#define EXPECT(want, cmd, arg, what) do { \
		r = io(ctl, cmd, arg); \
		snprintf(msg, sizeof(msg), "%s: %s (got %d)", what, #want, -r); \
		check(r == -(want), msg); \
	} while (0)
	o = good;
	o.hdr.size--;
	EXPECT(EINVAL, HC_IOC_GET, &o, "hdr.size one short");
	o = good;
	o.hdr.version = 2;
	EXPECT(EINVAL, HC_IOC_GET, &o, "hdr.version 2");
	o = good;
	o.reserved = 1;
	EXPECT(EINVAL, HC_IOC_GET, &o, "reserved field set");
	o = good;
	o.group = 3;
	EXPECT(EINVAL, HC_IOC_GET, &o, "group on a GET");
	o = good;
	o.key_len = 0;
	EXPECT(EINVAL, HC_IOC_PUT, &o, "empty key");
	o = good;
	o.key_len = HC_KEY_MAX + 1;
	o.key = (uintptr_t)big;
	EXPECT(EINVAL, HC_IOC_PUT, &o, "key over HC_KEY_MAX");
	o = good;
	o.key = 8;
	EXPECT(EFAULT, HC_IOC_GET, &o, "key pointer into nowhere");
	o = good;
	o.value = 16;
	EXPECT(EFAULT, HC_IOC_PUT, &o, "value pointer into nowhere");
	o = good;
	o.value = 16;
	o.value_len = 4;
	EXPECT(EFAULT, HC_IOC_GET, &o, "GET into a bad buffer");
	o = good;
	o.value_len = 1ULL << 40;
	EXPECT(EFBIG, HC_IOC_PUT, &o, "value of 1 TiB");
	o = good;
	o.id = 0xfffffff0;
	EXPECT(ENOENT, HC_IOC_GET, &o, "unknown id");
	EXPECT(EFAULT, HC_IOC_STATS, (void *)8, "struct pointer into nowhere");
	EXPECT(ENOTTY, _IOWR(HC_IOC_MAGIC, 99, struct hc_object), &o, "unknown command number");
	EXPECT(ENOTTY, _IOWR(HC_IOC_MAGIC, 5, struct hc_stats), &s, "GET's number with STATS's size");
	{
		struct hc_format f = { .hdr = HDR(f), .fd = -1, .policy = HC_POLICY_SETMEM };

		EXPECT(EBADF, HC_IOC_FORMAT, &f, "FORMAT of fd -1");
		f.fd = ctl;
		EXPECT(ENOTBLK, HC_IOC_FORMAT, &f, "FORMAT of a character device");
		f.policy = 77;
		EXPECT(EINVAL, HC_IOC_FORMAT, &f, "FORMAT of policy 77");
	}
	{
		struct hc_attach a = { .hdr = HDR(a), .fd = ctl, .id = 5 };

		EXPECT(EINVAL, HC_IOC_ATTACH, &a, "ATTACH with an out field set");
	}
	{
		struct hc_info in = { .hdr = HDR(in), .id = id, .ways = 1 };

		EXPECT(EINVAL, HC_IOC_GET_INFO, &in, "GET_INFO with an out field set");
	}

	/* random ioctls: every one must come back */
	for (i = 0; i < n; i++) {
		unsigned long cmd = cmds[rnd() % (sizeof(cmds) / sizeof(cmds[0]))];
		uint64_t buf[32];
		unsigned int k, sz = _IOC_SIZE(cmd);
		struct hc_hdr *h = (struct hc_hdr *)buf;

		for (k = 0; k < 32; k++)
			buf[k] = rnd();
		switch (rnd() % 4) {
		case 0:	/* random bytes */
			break;
		case 1:	/* a valid header, the rest random */
			h->size = sz;
			h->version = HC_ABI_VERSION;
			break;
		case 2:	/* a valid header and id, small fields, good pointers */
			h->size = sz;
			h->version = HC_ABI_VERSION;
			buf[1] = id | (rnd() % 300) << 32;	/* id, key_len */
			buf[2] = (uintptr_t)big;
			buf[3] = (uintptr_t)big;
			buf[4] = rnd() % 600;
			for (k = 5; k < sz / 8; k++)
				buf[k] = rnd() % 3 ? 0 : rnd();
			break;
		default: /* a random size in the command */
			cmd = _IOC(_IOC_DIR(cmd), HC_IOC_MAGIC, _IOC_NR(cmd), rnd() % 256);
			break;
		}
		if (cmd == HC_IOC_DETACH || cmd == HC_IOC_FORMAT || cmd == HC_IOC_ATTACH)
			buf[1] = (buf[1] & ~0xffffffffULL) | 0xfffffffe;	/* not ours */
		for (k = 0; k < sizeof(big); k++)
			big[k] = (char)rnd();
		io(ctl, cmd, buf);
	}
	snprintf(msg, sizeof(msg), "%lu random ioctls returned", n);
	check(1, msg);

	o = good;
	o.value = (uintptr_t)out;
	o.value_len = sizeof(out);
	r = io(ctl, HC_IOC_GET, &o);
	check(!r && o.found && o.value_len == sizeof(val) - 1 && !memcmp(out, val, o.value_len),
	      "the good object is still there afterwards");
	close(ctl);
	return failed;
}
