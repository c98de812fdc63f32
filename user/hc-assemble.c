// SPDX-License-Identifier: GPL-2.0
/*
 * hcctl assemble / disassemble: the ssc volumes listed in /etc/ssctab.
 *
 * One line per volume (ssctab(5)):
 *
 *   NAME  CACHE  ORIGIN  MODE  [OPTIONS]
 *
 * CACHE and ORIGIN are absolute paths (/dev/disk/by-id/...) or PARTUUID= /
 * PARTLABEL= (looked up as udev's /dev/disk/by-part* links: no device is ever
 * scanned, so udev's questions stay quick). Assembling creates, through
 * cmd_create(), each listed volume that is not there yet; a volume already
 * there over the same devices is left alone, so running it again (at boot,
 * from udev for each device that appears, by hand) changes nothing. Before a
 * table is made, the cache device must not be claimed by another volume:
 * not listed twice, not in another live ssc table, not held by anything,
 * not holding a superblock made for an origin of another size, nor another
 * signature over its metadata; and the origin must not hold an ssc superblock
 * (the columns swapped). A cache device is formatted only when its line says
 * format=blank and the device is blank (zeroes where the metadata goes, no
 * signature libblkid knows). create opens exactly the device numbers these
 * checks looked at (hc_expect_*), whatever the paths point to by then.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/fs.h>
#include <linux/dm-ioctl.h>

#include <blkid/blkid.h>
#include <libdevmapper.h>

#include "hc-common.h"
#include "hcctl.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

#define SSCTAB_DEFAULT	"/etc/ssctab"
#define ASSEMBLE_LOCK	"/run/ssc-assemble.lock"
#define TAB_MAX		256	/* lines with a volume */
#define OPT_ARGS	16	/* create arguments an option line can make */

/* the superblock fields we look at (kernel/ssc/ssc-format.h, little endian) */
#define SSC_SB_MAGIC	0x53534353U
#define SB_SIZE		4096
#define SB_OFF_CRC	0
#define SB_OFF_MAGIC	4
#define SB_OFF_BLOCK	16	/* block_sectors */
#define SB_OFF_SEGMENT	20	/* segment_sectors */
#define SB_OFF_DATA	80	/* data_start, sectors */
#define SB_OFF_ORIGIN	88	/* origin_blocks */
/* disassemble's mark: udev's runs (--device) leave such a volume alone until boot */
#define DOWN_DIR	"/run/ssc"
/* what must be zero for a device to count as blank: room for any metadata head */
#define BLANK_BYTES	(1U << 20)

enum fmt { FMT_NEVER, FMT_BLANK };

struct tab_ent {
	unsigned int line;
	char name[DM_NAME_LEN];
	char *cache, *origin;		/* as written */
	char mode[16];
	char *args[OPT_ARGS];		/* create's options */
	int nargs;
	bool have_bs, have_seg;
	uint64_t bs, seg;
	bool noauto, initramfs;
	enum fmt format;
	/* resolved */
	char *cache_path, *origin_path;
	dev_t cache_rdev, origin_rdev;
	bool bad;			/* another line names it or a device of it */
};

struct tab {
	struct tab_ent ent[TAB_MAX];
	int n;
	int errors;			/* lines that could not be used */
	const char *path;
};

static const char *const modes[] = { "writethrough", "writeback", "writearound", "passthrough" };

static void tab_err(const struct tab *t, const struct tab_ent *e, unsigned int line,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void tab_err(const struct tab *t, const struct tab_ent *e, unsigned int line,
		    const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (e)
		err("%s:%u: %s: %s", t->path, e->line, e->name, msg);
	else
		err("%s:%u: %s", t->path, line, msg);
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p) {
		err("out of memory");
		exit(EX_FAIL);
	}
	return p;
}

static void add_arg(struct tab_ent *e, const char *a, const char *b)
{
	e->args[e->nargs++] = xstrdup(a);
	e->args[e->nargs++] = xstrdup(b);
}

/* the options column: comma-separated key=value and flags; 0 or -1 (said why) */
static int parse_opts(struct tab *t, struct tab_ent *e, char *opts)
{
	/* each option's argument of create, or NULL for a flag; the index is its bit */
	static const char *const names[] = {
		"block-size", "segment-size", "sequential-threshold", "dirty-high", "dirty-low",
		"admit", "format", "noauto", "initramfs",
	};
	static const char *const args[] = {
		"--block-size", "--segment-size", "--sequential-threshold", "--dirty-high",
		"--dirty-low", "--admit", NULL, NULL, NULL,
	};
	char *o, *save = NULL, *val;
	uint64_t v, hi = 0, lo = 0;
	unsigned int seen = 0;
	size_t i;

	if (!strcmp(opts, "-") || !strcmp(opts, "defaults"))
		return 0;
	for (o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		val = strchr(o, '=');
		if (val)
			*val++ = '\0';
		for (i = 0; i < ARRAY_SIZE(names) && strcmp(o, names[i]); i++)
			;
		if (i == ARRAY_SIZE(names) || !val != (i >= 7)) {
			tab_err(t, e, 0, "unknown option '%s%s%s'", o, val ? "=" : "", val ? val : "");
			return -1;
		}
		if (seen & 1U << i) {
			tab_err(t, e, 0, "option %s given twice", o);
			return -1;
		}
		seen |= 1U << i;
		switch (i) {
		case 0: case 1: case 2:		/* sizes: create checks their range */
			if (parse_bytes(val, &v)) {
				tab_err(t, e, 0, "%s=%s: not a size", o, val);
				return -1;
			}
			if (i == 0) {
				e->have_bs = true;
				e->bs = v;
			} else if (i == 1) {
				e->have_seg = true;
				e->seg = v;
			}
			break;
		case 3: case 4:
			if (parse_u64(val, &v) || v > 75) {
				tab_err(t, e, 0, "%s=%s: want a percentage from 0 to 75", o, val);
				return -1;
			}
			*(i == 3 ? &hi : &lo) = v;
			break;
		case 5:
			if (strcmp(val, "all") && strcmp(val, "reuse")) {
				tab_err(t, e, 0, "admit=%s: want all or reuse", val);
				return -1;
			}
			break;
		case 6:
			if (!strcmp(val, "never")) {
				e->format = FMT_NEVER;
			} else if (!strcmp(val, "blank")) {
				e->format = FMT_BLANK;
			} else {
				tab_err(t, e, 0, "format=%s: want never or blank", val);
				return -1;
			}
			break;
		case 7: e->noauto = true; break;
		case 8: e->initramfs = true; break;
		}
		if (args[i])
			add_arg(e, args[i], val);
	}
	if (!(seen & 1U << 3) != !(seen & 1U << 4) || ((seen & 1U << 3) && lo >= hi)) {
		tab_err(t, e, 0, "want dirty-high and dirty-low together, dirty-low below dirty-high");
		return -1;
	}
	return 0;
}

static bool name_ok(const char *n)
{
	const char *p;

	if (!*n || strlen(n) >= DM_NAME_LEN || *n == '.' || *n == '-')
		return false;
	for (p = n; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._+-", *p))
			return false;
	return true;
}

/*
 * The tags a line may use, and udev's directory of links for each. Not UUID=
 * or LABEL=: they name a file system, which the cache device does not hold,
 * and which an origin's cached volume shows too once it is assembled.
 */
static const char *const tags[][2] = {
	{ "PARTUUID=", "/dev/disk/by-partuuid/" },
	{ "PARTLABEL=", "/dev/disk/by-partlabel/" },
};

/* A device as ssctab(5) names it: an absolute path, PARTUUID= or PARTLABEL=. */
static bool spec_ok(const char *spec)
{
	if (spec[0] == '/')
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(tags); i++)
		if (!strncmp(spec, tags[i][0], strlen(tags[i][0])) && spec[strlen(tags[i][0])])
			return true;
	return false;
}

/*
 * Read and check the whole file into a new table (*@tp, for tab_free); the
 * lines that cannot be used are counted and said.
 */
static int tab_read(struct tab **tp, const char *path)
{
	char *line = NULL, *f[6], *save;
	size_t cap = 0;
	unsigned int ln = 0;
	struct tab *t;
	int nf, i;
	FILE *fp;

	fp = fopen(path, "r");
	if (!fp) {
		err("%s: %s", path, strerror(errno));
		return errno == ENOENT ? EX_NOVOL : EX_FAIL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		err("out of memory");
		fclose(fp);
		return EX_FAIL;
	}
	t->path = path;
	*tp = t;
	while (getline(&line, &cap, fp) > 0) {
		struct tab_ent *e;

		ln++;
		line[strcspn(line, "#\n")] = '\0';
		nf = 0;
		for (char *w = strtok_r(line, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
			if (nf == 6)
				break;
			f[nf++] = w;
		}
		if (!nf)
			continue;
		if (nf < 4 || nf > 5) {
			tab_err(t, NULL, ln, "want NAME CACHE ORIGIN MODE [OPTIONS], found %d field%s",
				nf, nf == 1 ? "" : "s");
			t->errors++;
			continue;
		}
		if (t->n == TAB_MAX) {
			tab_err(t, NULL, ln, "more than %d volumes: the rest are ignored", TAB_MAX);
			t->errors++;
			break;
		}
		e = &t->ent[t->n];
		memset(e, 0, sizeof(*e));
		e->line = ln;
		if (!name_ok(f[0])) {
			tab_err(t, NULL, ln, "bad volume name '%s': want letters, digits, '.', '_', '+', '-', under %d characters",
				f[0], DM_NAME_LEN);
			t->errors++;
			continue;
		}
		snprintf(e->name, sizeof(e->name), "%s", f[0]);
		for (i = 0; i < (int)ARRAY_SIZE(modes) && strcmp(f[3], modes[i]); i++)
			;
		if (i == (int)ARRAY_SIZE(modes)) {
			tab_err(t, e, 0, "bad mode '%s': want writethrough, writeback, writearound or passthrough",
				f[3]);
			t->errors++;
			continue;
		}
		snprintf(e->mode, sizeof(e->mode), "%s", f[3]);
		if (nf == 5 && parse_opts(t, e, f[4]))
			goto drop;
		for (i = 0; i < t->n; i++) {
			if (!strcmp(t->ent[i].name, e->name))
				break;
			if (!strcmp(t->ent[i].cache, f[1]) || !strcmp(t->ent[i].origin, f[1]) ||
			    !strcmp(t->ent[i].cache, f[2]) || !strcmp(t->ent[i].origin, f[2]))
				break;
		}
		if (i < t->n) {
			/* neither line is used: which one is meant is the admin's call */
			tab_err(t, e, 0, "%s already listed on line %u (%s): neither line is used",
				!strcmp(t->ent[i].name, e->name) ? "the name is" : "a device is",
				t->ent[i].line, t->ent[i].name);
			if (!t->ent[i].bad)
				t->errors++;
			t->ent[i].bad = true;
			goto drop;
		}
		if (!spec_ok(f[1]) || !spec_ok(f[2])) {
			tab_err(t, e, 0, "device '%s': want an absolute path, PARTUUID= or PARTLABEL=",
				spec_ok(f[1]) ? f[2] : f[1]);
			goto drop;
		}
		if (!strcmp(f[1], f[2])) {
			tab_err(t, e, 0, "cache and origin are the same device");
			goto drop;
		}
		e->cache = xstrdup(f[1]);
		e->origin = xstrdup(f[2]);
		t->n++;
		continue;
drop:
		for (i = 0; i < e->nargs; i++)
			free(e->args[i]);
		t->errors++;
	}
	free(line);
	fclose(fp);
	return EX_OK;
}

static void tab_free(struct tab *t)
{
	for (int i = 0; i < t->n; i++) {
		struct tab_ent *e = &t->ent[i];

		for (int j = 0; j < e->nargs; j++)
			free(e->args[j]);
		free(e->cache);
		free(e->origin);
		free(e->cache_path);
		free(e->origin_path);
	}
	free(t);
}

/*
 * A spec as a block device: a path, or a tag by udev's link for it (values
 * encoded as udev encodes them); NULL if it is not there (yet).
 */
static char *resolve(const char *spec, dev_t *rdev)
{
	char link[PATH_MAX], enc[PATH_MAX / 2];
	const char *path = spec;
	struct stat st;
	char *p;

	for (size_t i = 0; spec[0] != '/' && i < ARRAY_SIZE(tags); i++) {
		const char *val = spec + strlen(tags[i][0]);

		if (strncmp(spec, tags[i][0], strlen(tags[i][0])))
			continue;
		if (blkid_encode_string(val, enc, sizeof(enc)))
			return NULL;
		if (i == 0)	/* udev's by-partuuid links are lower case */
			for (char *c = enc; *c; c++)
				*c = (char)tolower((unsigned char)*c);
		snprintf(link, sizeof(link), "%s%s", tags[i][1], enc);
		path = link;
	}
	if (stat(path, &st) || !S_ISBLK(st.st_mode))
		return NULL;
	p = realpath(path, NULL);
	if (!p)
		return NULL;
	*rdev = st.st_rdev;
	return p;
}

static void tab_resolve(struct tab *t)
{
	for (int i = 0; i < t->n; i++) {
		struct tab_ent *e = &t->ent[i];

		e->cache_path = resolve(e->cache, &e->cache_rdev);
		e->origin_path = resolve(e->origin, &e->origin_rdev);
	}
}

/* the other line (or NULL) that names a device @e uses: both lines are refused */
static const struct tab_ent *tab_conflict(const struct tab *t, const struct tab_ent *e)
{
	for (int i = 0; i < t->n; i++) {
		const struct tab_ent *o = &t->ent[i];
		dev_t ours[2] = { e->cache_path ? e->cache_rdev : 0, e->origin_path ? e->origin_rdev : 0 };
		dev_t theirs[2] = { o->cache_path ? o->cache_rdev : 0, o->origin_path ? o->origin_rdev : 0 };

		if (o == e)
			continue;
		for (int a = 0; a < 2; a++)
			for (int b = 0; b < 2; b++)
				if (ours[a] && ours[a] == theirs[b])
					return o;
	}
	return NULL;
}

static int parse_devt(const char *s, dev_t *d)
{
	unsigned int ma, mi;
	char c;

	if (sscanf(s, "%u:%u%c", &ma, &mi, &c) != 2)
		return -1;
	*d = makedev(ma, mi);
	return 0;
}

/*
 * The devices of live ssc volume @name, from its table; 0, or -1 if it is
 * not an ssc volume.
 */
static int live_devs(const char *name, dev_t *cache, dev_t *origin)
{
	struct dm_task *dmt = dm_task_create(DM_DEVICE_TABLE);
	uint64_t start, len;
	char *type = NULL, *params = NULL, c[32], o[32];
	int r = -1;

	if (!dm_exists(name))	/* no libdevmapper error for a name that is free */
		goto out;
	if (!dmt || !dm_task_set_name(dmt, name) || !dm_task_run(dmt))
		goto out;
	dm_get_next_target(dmt, NULL, &start, &len, &type, &params);
	if (type && !strcmp(type, "ssc") && params &&
	    sscanf(params, "%31s %31s", c, o) == 2 &&
	    !parse_devt(c, cache) && !parse_devt(o, origin))
		r = 0;
out:
	if (dmt)
		dm_task_destroy(dmt);
	return r;
}

/* The live ssc volume other than @self whose table uses @d, into @who; true if one does. */
static bool used_by_live(dev_t d, const char *self, char *who, size_t n)
{
	struct dm_task *dmt = dm_task_create(DM_DEVICE_LIST);
	struct dm_names *names;
	unsigned int next = 0;
	bool found = false;
	dev_t c, o;

	if (!dmt || !dm_task_run(dmt))
		goto out;
	names = dm_task_get_names(dmt);
	if (!names || !names->dev)
		goto out;
	do {
		names = (struct dm_names *)((char *)names + next);
		if (strcmp(names->name, self) && !live_devs(names->name, &c, &o) &&
		    (c == d || o == d)) {
			snprintf(who, n, "%s", names->name);
			found = true;
			break;
		}
		next = names->next;
	} while (next);
out:
	if (dmt)
		dm_task_destroy(dmt);
	return found;
}

/* What holds block device @d (its sysfs holders, by dm name where there is one). */
static bool held_by(dev_t d, char *who, size_t n)
{
	char dir[64], p[PATH_MAX];
	struct dirent *de;
	bool found = false;
	DIR *dp;
	FILE *f;

	snprintf(dir, sizeof(dir), "/sys/dev/block/%u:%u/holders", major(d), minor(d));
	dp = opendir(dir);
	if (!dp)
		return false;
	while ((de = readdir(dp))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(who, n, "%.*s", (int)n - 1, de->d_name);
		snprintf(p, sizeof(p), "/sys/block/%s/dm/name", de->d_name);
		f = fopen(p, "r");
		if (f) {
			if (fgets(p, sizeof(p), f)) {
				p[strcspn(p, "\n")] = '\0';
				snprintf(who, n, "%.*s", (int)n - 1, p);
			}
			fclose(f);
		}
		found = true;
		break;
	}
	closedir(dp);
	return found;
}

static uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78U & -(crc & 1));
	}
	return crc;
}

static uint64_t le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	while (bytes--)
		v = v << 8 | p[bytes];
	return v;
}

enum head { HEAD_SSC, HEAD_BAD_SSC, HEAD_BLANK, HEAD_OTHER };

/* what an ssc superblock says of its cache */
struct sb_info {
	uint64_t bs, seg;		/* block and segment size, bytes */
	uint64_t origin_blocks;		/* the origin's size at format */
	uint64_t data_start;		/* bytes of metadata before segment 0 */
};

/*
 * libblkid's look for a signature in the first @size bytes of @path (0: all
 * of it): 1 nothing found, 0 one (named in @what), -2 several, -1 an error.
 * Its own descriptor: libblkid's reads are not aligned for O_DIRECT.
 */
static int probe_sig(const char *path, uint64_t size, char *what, size_t n)
{
	blkid_probe pr = blkid_new_probe();
	const char *type;
	int rc = -1, fd;

	if (!pr)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !blkid_probe_set_device(pr, fd, 0, (blkid_loff_t)size)) {
		blkid_probe_enable_superblocks(pr, 1);
		blkid_probe_enable_partitions(pr, 1);
		rc = blkid_do_safeprobe(pr);
		if (!rc && (!blkid_probe_lookup_value(pr, "TYPE", &type, NULL) ||
			    !blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL)))
			snprintf(what, n, "a %s signature", type);
	}
	blkid_free_probe(pr);
	if (fd >= 0)
		close(fd);
	return rc;
}

/*
 * What the start of device @path holds. An ssc superblock is trusted only
 * once its CRC checks (the kernel validates the rest at load), and only if
 * no other signature lies over the metadata it describes (a device reused
 * as an md member or for a file system keeps its old ssc superblock).
 * Blank: zeroes where any metadata head goes, and no signature anywhere.
 */
static enum head read_head(const char *path, struct sb_info *sb, char *what, size_t n)
{
	uint8_t *buf = NULL;
	enum head h = HEAD_OTHER;
	uint64_t size = 0;
	ssize_t got;
	uint32_t crc;
	int fd, rc;

	snprintf(what, n, "something else");
	fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0) {
		snprintf(what, n, "nothing readable: %s", strerror(errno));
		return HEAD_OTHER;
	}
	rc = posix_memalign((void **)&buf, 4096, BLANK_BYTES);
	if (rc) {
		snprintf(what, n, "nothing readable: %s", strerror(rc));
		buf = NULL;
		goto out;
	}
	got = pread(fd, buf, BLANK_BYTES, 0);
	if (got < SB_SIZE) {
		snprintf(what, n, "nothing readable: %s", got < 0 ? strerror(errno) : "short read");
		goto out;
	}
	if (le(buf + SB_OFF_MAGIC, 4) == SSC_SB_MAGIC) {
		crc = (uint32_t)le(buf + SB_OFF_CRC, 4);
		memset(buf + SB_OFF_CRC, 0, 4);
		if (crc32c(~0U, buf, SB_SIZE) != crc) {
			snprintf(what, n, "an ssc superblock that fails its CRC");
			h = HEAD_BAD_SSC;
			goto out;
		}
		sb->bs = le(buf + SB_OFF_BLOCK, 4) * 512;
		sb->seg = le(buf + SB_OFF_SEGMENT, 4) * 512;
		sb->origin_blocks = le(buf + SB_OFF_ORIGIN, 8);
		sb->data_start = le(buf + SB_OFF_DATA, 8) * 512;
		/* the data segments hold cached blocks: what is in them is no signature */
		size = sb->data_start ? sb->data_start : SB_SIZE;
		h = HEAD_SSC;
	} else {
		h = HEAD_BLANK;
		for (ssize_t i = 0; i < got; i++) {
			if (buf[i]) {
				h = HEAD_OTHER;
				break;
			}
		}
	}
	rc = probe_sig(path, size, what, n);
	if (rc != 1) {
		if (h == HEAD_SSC)
			snprintf(what + strlen(what), n - strlen(what),
				 " over an ssc superblock's metadata");
		h = HEAD_OTHER;
	}
out:
	free(buf);
	close(fd);
	return h;
}

static int dev_bytes(const char *path, uint64_t *bytes)
{
	int fd = open(path, O_RDONLY);
	int r;

	if (fd < 0)
		return -1;
	r = ioctl(fd, BLKGETSIZE64, bytes);
	close(fd);
	return r;
}

enum outcome { DONE, ALREADY, PENDING, REFUSED };

/* disassemble's mark on @name: udev's runs leave the volume alone until boot */
static void down_path(const char *name, char *p, size_t n)
{
	snprintf(p, n, "%s/%s.down", DOWN_DIR, name);
}

static bool is_down(const char *name)
{
	char p[PATH_MAX];

	down_path(name, p, sizeof(p));
	return !access(p, F_OK);
}

static void set_down(const char *name, bool down)
{
	char p[PATH_MAX];
	int fd;

	down_path(name, p, sizeof(p));
	if (!down) {
		unlink(p);
		return;
	}
	mkdir(DOWN_DIR, 0700);
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
}

/* Everything but the table itself; @check: only say what would be done. */
static enum outcome assemble_one(const struct tab *t, struct tab_ent *e, bool check)
{
	const struct tab_ent *o;
	char who[DM_NAME_LEN + 32], what[160], bsarg[32], segarg[32];
	char *argv[OPT_ARGS + 16];
	struct sb_info sb = { 0 };
	uint64_t obytes, bs;
	dev_t c, og;
	bool format = false;
	int argc = 0, r;
	enum head h;

	if (e->bad)
		return REFUSED;		/* said when the file was read */
	if (!e->cache_path || !e->origin_path) {
		const char *spec = e->cache_path ? e->origin : e->cache;
		struct stat st;

		if (spec[0] == '/' && !stat(spec, &st) && !S_ISBLK(st.st_mode)) {
			tab_err(t, e, 0, "%s is not a block device", spec);
			return REFUSED;
		}
		printf("%s: waiting for %s device %s\n", e->name,
		       e->cache_path ? "origin" : "cache", spec);
		return PENDING;
	}
	if (e->cache_rdev == e->origin_rdev) {
		tab_err(t, e, 0, "cache %s and origin %s are the same device", e->cache, e->origin);
		return REFUSED;
	}
	o = tab_conflict(t, e);
	if (o) {
		tab_err(t, e, 0, "a device it uses is also listed for %s on line %u: neither is assembled",
			o->name, o->line);
		return REFUSED;
	}
	if (!live_devs(e->name, &c, &og)) {
		if (c == e->cache_rdev && og == e->origin_rdev) {
			printf("%s: already assembled\n", e->name);
			return ALREADY;
		}
		tab_err(t, e, 0, "a volume of that name is live over other devices (%u:%u over %u:%u)",
			major(c), minor(c), major(og), minor(og));
		return REFUSED;
	}
	if (dm_exists(e->name)) {
		tab_err(t, e, 0, "a device-mapper device of that name exists and is not an ssc volume");
		return REFUSED;
	}
	if (used_by_live(e->cache_rdev, e->name, who, sizeof(who))) {
		tab_err(t, e, 0, "cache device %s belongs to live volume %s", e->cache_path, who);
		return REFUSED;
	}
	if (used_by_live(e->origin_rdev, e->name, who, sizeof(who))) {
		tab_err(t, e, 0, "origin device %s is used by live volume %s", e->origin_path, who);
		return REFUSED;
	}
	if (held_by(e->cache_rdev, who, sizeof(who))) {
		tab_err(t, e, 0, "cache device %s is held by %s", e->cache_path, who);
		return REFUSED;
	}
	if (held_by(e->origin_rdev, who, sizeof(who))) {
		tab_err(t, e, 0, "origin device %s is held by %s", e->origin_path, who);
		return REFUSED;
	}
	if (dev_bytes(e->origin_path, &obytes)) {
		tab_err(t, e, 0, "origin device %s: cannot read its size: %s", e->origin_path,
			strerror(errno));
		return REFUSED;
	}
	/* an origin that holds a cache: the columns are swapped, or the names moved */
	h = read_head(e->origin_path, &sb, what, sizeof(what));
	if (h == HEAD_SSC || h == HEAD_BAD_SSC) {
		tab_err(t, e, 0, "origin device %s holds an ssc cache superblock: are cache and origin swapped?",
			e->origin_path);
		return REFUSED;
	}
	memset(&sb, 0, sizeof(sb));
	h = read_head(e->cache_path, &sb, what, sizeof(what));
	switch (h) {
	case HEAD_SSC:
		if (e->have_bs && e->bs != sb.bs) {
			tab_err(t, e, 0, "cache device %s was formatted with %" PRIu64
				"-byte blocks, not block-size=%" PRIu64, e->cache_path, sb.bs, e->bs);
			return REFUSED;
		}
		if (e->have_seg && e->seg != sb.seg) {
			tab_err(t, e, 0, "cache device %s was formatted with %" PRIu64
				"-byte segments, not segment-size=%" PRIu64, e->cache_path, sb.seg, e->seg);
			return REFUSED;
		}
		bs = sb.bs;
		/*
		 * The superblock records no identity of its origin, only its
		 * size: a cache moved to another origin of the same size is not
		 * caught here (ssctab(5) says so).
		 */
		if (!bs || obytes / bs != sb.origin_blocks) {
			tab_err(t, e, 0, "cache device %s was formatted for an origin of %" PRIu64
				" blocks, and %s has %" PRIu64 ": it belongs to another volume, or this origin was resized (hcctl create, without --format, loads it anyway)",
				e->cache_path, sb.origin_blocks, e->origin_path, bs ? obytes / bs : 0);
			return REFUSED;
		}
		break;
	case HEAD_BLANK:
		if (e->format != FMT_BLANK) {
			tab_err(t, e, 0, "cache device %s is blank: add format=blank to its line, or format it once with hcctl create --format",
				e->cache_path);
			return REFUSED;
		}
		format = true;
		break;
	case HEAD_BAD_SSC:
		tab_err(t, e, 0, "cache device %s holds an ssc superblock that fails its CRC: refused (it may hold dirty blocks: formatting would lose them; hcctl create without --format shows the kernel's verdict)",
			e->cache_path);
		return REFUSED;
	default:
		tab_err(t, e, 0, "cache device %s holds %s, not an ssc cache: refused",
			e->cache_path, what);
		return REFUSED;
	}
	if (check) {
		printf("%s: would %s %s over %s (%s)\n", e->name, format ? "format" : "load",
		       e->cache_path, e->origin_path, e->mode);
		return DONE;
	}
	argv[argc++] = "create";
	argv[argc++] = e->name;
	argv[argc++] = "--cache";
	argv[argc++] = e->cache_path;
	argv[argc++] = "--origin";
	argv[argc++] = e->origin_path;
	argv[argc++] = "--mode";
	argv[argc++] = e->mode;
	for (int i = 0; i < e->nargs; i++)
		argv[argc++] = e->args[i];
	if (h == HEAD_SSC && !e->have_bs) {
		snprintf(bsarg, sizeof(bsarg), "%" PRIu64, sb.bs);
		argv[argc++] = "--block-size";
		argv[argc++] = bsarg;
	}
	if (h == HEAD_SSC && !e->have_seg) {
		snprintf(segarg, sizeof(segarg), "%" PRIu64, sb.seg);
		argv[argc++] = "--segment-size";
		argv[argc++] = segarg;
	}
	if (format)
		argv[argc++] = "--format";
	argv[argc] = NULL;
	/* the devices these checks looked at, whatever the paths point to by now */
	hc_expect_cache = e->cache_rdev;
	hc_expect_origin = e->origin_rdev;
	r = cmd_create(argc, argv);
	hc_expect_cache = hc_expect_origin = 0;
	if (r) {
		tab_err(t, e, 0, "not assembled");
		return REFUSED;
	}
	printf("%s: assembled (%s%s over %s)\n", e->name, format ? "formatted " : "",
	       e->cache_path, e->origin_path);
	return DONE;
}

static void assemble_usage(void)
{
	err("assemble: want [--file F] [--check | --names] [--initramfs] [--device DEV | --listed DEV] [NAME]");
}

/*
 * One assemble or disassemble at a time: the boot unit and udev's runs for
 * devices that appear meanwhile would both see a volume missing and race to
 * create it, or recreate one being retired. Without a writable /run (early
 * initramfs), go on alone.
 */
static int take_lock(void)
{
	int fd = open(ASSEMBLE_LOCK, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd >= 0 && flock(fd, LOCK_EX)) {
		err("cannot lock %s: %s", ASSEMBLE_LOCK, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * hcctl assemble [--file F] [--check] [--initramfs] [--device DEV] [NAME]
 * hcctl assemble [--file F] --listed DEV
 */
int cmd_assemble(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "check", no_argument, NULL, 'c' },
		{ "initramfs", no_argument, NULL, 'i' },
		{ "device", required_argument, NULL, 'd' },
		{ "listed", required_argument, NULL, 'l' },
		{ "names", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = SSCTAB_DEFAULT, *name = NULL, *dev = NULL, *listed = NULL;
	bool check = false, initramfs = false, seen = false, names = false;
	int c, ret = EX_OK, pending = 0, lock = -1;
	struct stat st;
	struct tab *t;
	dev_t d = 0;

	optind = 0;
	while ((c = getopt_long(argc, argv, "f:cid:l:n", lo, NULL)) != -1) {
		switch (c) {
		case 'f': path = optarg; break;
		case 'c': check = true; break;
		case 'n': names = check = true; break;
		case 'i': initramfs = true; break;
		case 'd': dev = optarg; break;
		case 'l': listed = optarg; break;
		default: assemble_usage(); return EX_USAGE;
		}
	}
	if (optind < argc - 1 || (dev && listed) || (listed && (optind < argc || check))) {
		assemble_usage();
		return EX_USAGE;
	}
	if (optind < argc)
		name = argv[optind];
	if (dev || listed) {
		if (stat(dev ? dev : listed, &st) || !S_ISBLK(st.st_mode)) {
			if (listed)
				return EX_FAIL;	/* udev asks about devices that are gone */
			err("assemble: %s is not a block device", dev);
			return EX_USAGE;
		}
		d = st.st_rdev;
	}
	/* no file: nothing to assemble, unless a volume was asked for by name */
	if (!name && !check && access(path, F_OK) && errno == ENOENT)
		return listed ? EX_FAIL : EX_OK;
	ret = tab_read(&t, path);
	if (ret)
		return ret;
	if (!listed && !check)
		lock = take_lock();
	tab_resolve(t);
	for (int i = 0; i < t->n; i++) {
		struct tab_ent *e = &t->ent[i];
		bool uses = d && ((e->cache_path && e->cache_rdev == d) ||
				  (e->origin_path && e->origin_rdev == d));

		if (listed) {
			if (uses && !e->noauto && !e->bad) {
				seen = true;
				break;
			}
			continue;
		}
		if (name ? strcmp(e->name, name) : (e->noauto && !check))
			continue;
		if (initramfs && !e->initramfs)
			continue;
		if (dev && !uses)
			continue;
		seen = true;
		if (names) {	/* which lines, not whether they would work */
			printf("%s\n", e->name);
			continue;
		}
		/* udev's runs leave a volume disassembled by hand alone until boot */
		if (dev && is_down(e->name)) {
			printf("%s: disassembled by hand: not assembled for %s (hcctl assemble %s does)\n",
			       e->name, dev, e->name);
			continue;
		}
		switch (assemble_one(t, e, check)) {
		case PENDING:
			pending++;
			break;
		case REFUSED:
			ret = EX_FAIL;
			break;
		default:
			if (!check)
				set_down(e->name, false);
			break;
		}
	}
	if (listed) {
		ret = seen ? EX_OK : EX_FAIL;
	} else {
		if (name && !seen) {
			err("assemble: %s is not listed in %s", name, path);
			ret = ret ? ret : EX_NOVOL;
		}
		/* a named volume must come up now; the others come when their devices do */
		if (name && pending)
			ret = EX_FAIL;
		if (t->errors)
			ret = EX_FAIL;
	}
	if (lock >= 0)
		close(lock);
	tab_free(t);
	return ret;
}

/*
 * hcctl disassemble [--file F] [--flush] [NAME]: remove the listed volumes
 * that are live over the devices their lines name, and mark them so that
 * udev's runs do not bring them back before the next boot
 */
int cmd_disassemble(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "file", required_argument, NULL, 'f' },
		{ "flush", no_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = SSCTAB_DEFAULT, *name = NULL;
	bool flush = false, seen = false;
	int c, ret, lock;
	dev_t cd, od;
	struct tab *t;

	optind = 0;
	while ((c = getopt_long(argc, argv, "f:F", lo, NULL)) != -1) {
		switch (c) {
		case 'f': path = optarg; break;
		case 'F': flush = true; break;
		default:
			err("disassemble: want [--file F] [--flush] [NAME]");
			return EX_USAGE;
		}
	}
	if (optind < argc - 1) {
		err("disassemble: want [--file F] [--flush] [NAME]");
		return EX_USAGE;
	}
	if (optind < argc)
		name = argv[optind];
	if (!name && access(path, F_OK) && errno == ENOENT)
		return EX_OK;
	ret = tab_read(&t, path);
	if (ret)
		return ret;
	ret = t->errors && !name ? EX_FAIL : EX_OK;
	lock = take_lock();
	tab_resolve(t);
	/* the reverse of the file's order: a volume stacked on an earlier one goes first */
	for (int i = t->n - 1; i >= 0; i--) {
		struct tab_ent *e = &t->ent[i];
		char *rm[2] = { e->name, NULL };

		if (name && strcmp(e->name, name))
			continue;
		seen = true;
		if (live_devs(e->name, &cd, &od))
			continue;	/* not assembled: nothing to do */
		if ((e->cache_path && cd != e->cache_rdev) || (e->origin_path && od != e->origin_rdev)) {
			tab_err(t, e, 0, "the live volume of that name is over other devices (%u:%u over %u:%u): left alone",
				major(cd), minor(cd), major(od), minor(od));
			ret = EX_FAIL;
			continue;
		}
		if (flush) {
			char *fl[2] = { e->name, NULL };

			c = cmd_flush(1, fl);
			if (c == EX_INTR) {
				ret = c;
				break;
			}
			if (c) {
				ret = EX_FAIL;
				continue;
			}
		}
		if (cmd_remove(1, rm)) {
			ret = EX_FAIL;
		} else {
			set_down(e->name, true);
			printf("%s: disassembled\n", e->name);
		}
	}
	if (name && !seen) {
		err("disassemble: %s is not listed in %s", name, path);
		ret = EX_NOVOL;
	}
	if (lock >= 0)
		close(lock);
	tab_free(t);
	return ret;
}
