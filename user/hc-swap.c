// SPDX-License-Identifier: GPL-2.0
/*
 * hcctl swap: flash-backed swap with flashvm.ko's tuning.
 *
 *   status   swap devices, the kernel's swap counters and, if flashvm is
 *            loaded, its tunables and counters (/sys/kernel/flashvm)
 *   tune     the "none" I/O scheduler on every non-rotational swap device,
 *            then NAME=VALUE for flashvm's tunables; devices= also takes
 *            paths of swap devices or files, which it turns into the
 *            MAJOR:MINOR list the module wants
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <json-c/json.h>

#include "hc-common.h"
#include "hcctl.h"

#define FVM_SYS		"/sys/kernel/flashvm"
#define VMA_RA		"/sys/kernel/mm/swap/vma_ra_enabled"
#define LRU_GEN		"/sys/kernel/mm/lru_gen/enabled"

/* flashvm's tunables, in the order status shows them */
static const char *const tunables[] = {
	"prefetch", "prefetch_scan", "stride_pages", "sampling", "sample_inv",
	"sample_adaptive", "sample_batch", "merged_discard", "discard_batch_mb",
	"discard_delay_ms", "dummy_discard", "dummy_free_pct", "clustering",
	"erase_block_kb", "preclean_pages",
};

/* the one tunable whose value is a list, not a number (after them in status) */
#define DEVICES		"devices"

/* the /proc/vmstat counters status shows */
static const char *const vmstat_keys[] = {
	"pswpin", "pswpout", "swpin_zero", "swpout_zero", "pgmajfault", "swap_ra", "swap_ra_hit",
};

/* read_line PATH BUF LEN: the first line of PATH, without its newline; 0 or -errno */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int r = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, len, f))
		r = -EIO;
	else
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
	return r;
}

/* write_str PATH VALUE: 0 or -errno (the kernel's answer to the write) */
static int write_str(const char *path, const char *v)
{
	FILE *f = fopen(path, "we");
	int r = 0;

	if (!f)
		return -errno;
	if (fputs(v, f) < 0)
		r = -errno;
	if (fclose(f) && !r)
		r = -errno;
	return r;
}

static bool fvm_loaded(void)
{
	struct stat st;

	return !stat(FVM_SYS, &st) && S_ISDIR(st.st_mode);
}

/* the block device name (sysfs) of a swap area from /proc/swaps, or NULL */
static char *swap_blockdev(const char *path, char *name, size_t len)
{
	char link[64], target[256];
	struct stat st;
	ssize_t n;
	char *base;

	if (stat(path, &st) || !S_ISBLK(st.st_mode))
		return NULL;
	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(st.st_rdev),
		 minor(st.st_rdev));
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return NULL;
	target[n] = 0;
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (strlen(base) >= len)
		return NULL;
	strcpy(name, base);
	return name;
}

/* each swap area: "path type size used prio" as in /proc/swaps */
static int for_each_swap(int (*fn)(const char *path, const char *type,
				   unsigned long kb, unsigned long used, int prio, void *arg),
			 void *arg)
{
	char line[512], path[256], type[32];
	unsigned long kb, used;
	FILE *f = fopen("/proc/swaps", "re");
	int prio, r = 0;

	if (!f) {
		err("swap: /proc/swaps: %s", strerror(errno));
		return -1;
	}
	if (!fgets(line, sizeof(line), f)) {	/* the header */
		fclose(f);
		return 0;
	}
	while (!r && fgets(line, sizeof(line), f))
		if (sscanf(line, "%255s %31s %lu %lu %d", path, type, &kb, &used, &prio) == 5)
			r = fn(path, type, kb, used, prio, arg);
	fclose(f);
	return r;
}

static int show_swap(const char *path, const char *type, unsigned long kb,
		     unsigned long used, int prio, void *arg)
{
	struct json_object *arr = arg, *o;
	char dev[64], p[128], sched[128] = "", disc[32] = "";

	if (swap_blockdev(path, dev, sizeof(dev))) {
		snprintf(p, sizeof(p), "/sys/class/block/%s/queue/scheduler", dev);
		read_line(p, sched, sizeof(sched));
		snprintf(p, sizeof(p), "/sys/class/block/%s/queue/discard_max_bytes", dev);
		read_line(p, disc, sizeof(disc));
	}
	if (arr) {
		o = json_object_new_object();
		json_object_object_add(o, "path", json_object_new_string(path));
		json_object_object_add(o, "type", json_object_new_string(type));
		json_object_object_add(o, "size_kb", json_object_new_uint64(kb));
		json_object_object_add(o, "used_kb", json_object_new_uint64(used));
		json_object_object_add(o, "priority", json_object_new_int(prio));
		json_object_object_add(o, "scheduler", json_object_new_string(sched));
		json_object_object_add(o, "discard", json_object_new_boolean(disc[0] && strcmp(disc, "0")));
		json_object_array_add(arr, o);
	} else {
		printf("swap %s: %s, %lu KiB, %lu KiB used, priority %d, scheduler %s, %s\n",
		       path, type, kb, used, prio, sched[0] ? sched : "-",
		       disc[0] && strcmp(disc, "0") ? "discard" : "no discard");
	}
	return 0;
}

/*
 * show_kv_file PATH KEYS N O INDENT: the "name value" lines of PATH (only
 * those named in KEYS, unless KEYS is NULL), into the JSON object O or,
 * without one, printed after INDENT
 */
static void show_kv_file(const char *path, const char *const *keys, size_t nkeys,
			 struct json_object *o, const char *indent)
{
	char line[256], key[64];
	unsigned long long v;
	FILE *f = fopen(path, "re");
	size_t i;

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63s %llu", key, &v) != 2)
			continue;
		for (i = 0; keys && i < nkeys && strcmp(key, keys[i]); i++)
			;
		if (keys && i == nkeys)
			continue;
		if (o)
			json_object_object_add(o, key, json_object_new_uint64(v));
		else
			printf("%s%s %llu\n", indent, key, v);
	}
	if (f)
		fclose(f);
}

static int swap_status(void)
{
	struct json_object *root = NULL, *swaps = NULL, *vm = NULL, *fvm = NULL;
	char buf[64], p[128];
	size_t i;

	if (opt_json) {
		root = json_object_new_object();
		swaps = json_object_new_array();
		vm = json_object_new_object();
		json_object_object_add(root, "swaps", swaps);
		json_object_object_add(root, "vm", vm);
	}
	if (for_each_swap(show_swap, swaps)) {
		json_object_put(root);
		return EX_FAIL;
	}
	if (!read_line(VMA_RA, buf, sizeof(buf))) {
		if (vm)
			json_object_object_add(vm, "vma_ra_enabled",
					       json_object_new_boolean(!strcmp(buf, "true")));
		else
			printf("vma_ra_enabled %s\n", buf);
	}
	if (!read_line(LRU_GEN, buf, sizeof(buf))) {
		if (vm)
			json_object_object_add(vm, "lru_gen", json_object_new_string(buf));
		else
			printf("lru_gen %s\n", buf);
	}
	show_kv_file("/proc/vmstat", vmstat_keys, sizeof(vmstat_keys) / sizeof(vmstat_keys[0]),
		     vm, "");

	if (fvm_loaded()) {
		if (root)
			fvm = json_object_new_object();
		else
			printf("flashvm: loaded\n");
		for (i = 0; i < sizeof(tunables) / sizeof(tunables[0]); i++) {
			snprintf(p, sizeof(p), FVM_SYS "/%s", tunables[i]);
			if (read_line(p, buf, sizeof(buf)))
				continue;
			if (fvm)
				json_object_object_add(fvm, tunables[i],
						       json_object_new_uint64(strtoull(buf, NULL, 0)));
			else
				printf("  %s %s\n", tunables[i], buf);
		}
		{
			char line[512];

			if (!read_line(FVM_SYS "/" DEVICES, line, sizeof(line))) {
				if (fvm)
					json_object_object_add(fvm, DEVICES,
							       json_object_new_string(line));
				else
					printf("  " DEVICES " %s\n", line);
			}
		}
		show_kv_file(FVM_SYS "/stats", NULL, 0, fvm, "  ");
	} else if (!root) {
		printf("flashvm: not loaded (modprobe flashvm)\n");
	}
	if (root) {
		/* null when the module is not loaded */
		json_object_object_add(root, "flashvm", fvm);
		printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN));
		json_object_put(root);
	}
	return EX_OK;
}

static int set_none_scheduler(const char *path, const char *type, unsigned long kb,
			      unsigned long used, int prio, void *arg)
{
	char dev[64], p[128];
	int r;

	char rot[8] = "";

	(void)type; (void)kb; (void)used; (void)prio; (void)arg;
	if (!swap_blockdev(path, dev, sizeof(dev)))
		return 0;	/* a swap file: its filesystem's device is not ours to tune */
	/* a disk keeps its scheduler, as it keeps the stock swap policy */
	snprintf(p, sizeof(p), "/sys/class/block/%s/queue/rotational", dev);
	if (read_line(p, rot, sizeof(rot)) || strcmp(rot, "0"))
		return 0;
	snprintf(p, sizeof(p), "/sys/class/block/%s/queue/scheduler", dev);
	r = write_str(p, "none");
	if (r)
		err("swap tune: scheduler of %s: %s", dev, strerror(-r));
	return 0;
}

/*
 * devices_value VALUE OUT LEN: the value for flashvm's "devices": auto and
 * all as they are; otherwise a comma-separated list whose paths become
 * MAJOR:MINOR (a block device's own, a swap file's filesystem's) and whose
 * MAJOR:MINOR entries pass as they are. 0, or -1 after an error message.
 */
static int devices_value(const char *v, char *out, size_t len)
{
	char *copy, *tok, *save = NULL;
	size_t n = 0;
	struct stat st;
	int r = 0;

	if (!strcmp(v, "auto") || !strcmp(v, "all")) {
		snprintf(out, len, "%s", v);
		return 0;
	}
	copy = strdup(v);
	if (!copy) {
		err("swap tune: out of memory");
		return -1;
	}
	out[0] = 0;
	for (tok = strtok_r(copy, ",", &save); tok && !r; tok = strtok_r(NULL, ",", &save)) {
		char one[32];

		if (tok[0] == '/') {
			if (stat(tok, &st)) {
				err("swap tune: devices: %s: %s", tok, strerror(errno));
				r = -1;
				break;
			}
			if (S_ISBLK(st.st_mode))
				snprintf(one, sizeof(one), "%u:%u", major(st.st_rdev), minor(st.st_rdev));
			else
				snprintf(one, sizeof(one), "%u:%u", major(st.st_dev), minor(st.st_dev));
		} else {
			snprintf(one, sizeof(one), "%.31s", tok);
		}
		if (n + strlen(one) + 2 > len) {
			err("swap tune: devices: too long a list");
			r = -1;
			break;
		}
		n += snprintf(out + n, len - n, "%s%s", n ? " " : "", one);
	}
	free(copy);
	return r;
}

static int swap_tune(int argc, char **argv)
{
	char path[128], name[64], val[512];
	const char *eq, *v;
	size_t i;
	int a, r;

	/* check every NAME=VALUE before changing anything */
	for (a = 0; a < argc; a++) {
		eq = strchr(argv[a], '=');
		if (!eq || eq == argv[a] || !eq[1] || (size_t)(eq - argv[a]) >= sizeof(name)) {
			err("swap tune: want NAME=VALUE, not '%s'", argv[a]);
			return EX_USAGE;
		}
		snprintf(name, sizeof(name), "%.*s", (int)(eq - argv[a]), argv[a]);
		for (i = 0; i < sizeof(tunables) / sizeof(tunables[0]); i++)
			if (!strcmp(name, tunables[i]))
				break;
		if (i == sizeof(tunables) / sizeof(tunables[0]) && strcmp(name, DEVICES)) {
			err("swap tune: no tunable '%s' (hcctl swap status lists them)", name);
			return EX_USAGE;
		}
	}
	if (!fvm_loaded()) {
		err("swap tune: flashvm is not loaded (modprobe flashvm)");
		return EX_NOVOL;
	}
	if (for_each_swap(set_none_scheduler, NULL))
		return EX_FAIL;
	for (a = 0; a < argc; a++) {
		eq = strchr(argv[a], '=');
		v = eq + 1;
		snprintf(name, sizeof(name), "%.*s", (int)(eq - argv[a]), argv[a]);
		if (!strcmp(name, DEVICES)) {
			if (devices_value(v, val, sizeof(val)))
				return EX_USAGE;
			v = val;
		}
		snprintf(path, sizeof(path), FVM_SYS "/%s", name);
		r = write_str(path, v);
		if (r) {
			err("swap tune: %s: %s", argv[a],
			    r == -EINVAL ? "value out of range" : strerror(-r));
			return r == -EINVAL ? EX_USAGE : EX_FAIL;
		}
	}
	return EX_OK;
}

int cmd_swap(int argc, char **argv)
{
	if (argc < 1) {
		err("swap: want status or tune (hcctl --help)");
		return EX_USAGE;
	}
	if (!strcmp(argv[0], "status")) {
		if (argc != 1) {
			err("swap status: takes no arguments");
			return EX_USAGE;
		}
		return swap_status();
	}
	if (!strcmp(argv[0], "tune"))
		return swap_tune(argc - 1, argv + 1);
	err("swap: unknown subcommand '%s' (hcctl --help)", argv[0]);
	return EX_USAGE;
}
