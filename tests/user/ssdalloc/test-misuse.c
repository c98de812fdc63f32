// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * SSDAlloc used wrongly: each misuse is refused with a clear error (errno and
 * ssd_strerror(), or a message on stderr for ssd_free) and the process goes on
 * working; a use after free of an OPP object dies of SIGSEGV. Through the
 * public API only (libssdalloc.a).
 *
 *   test-misuse [--dir DIR] [--seed N]            every case, one line each
 *   test-misuse [--dir DIR] [--seed N] CASE...    those cases
 *   test-misuse --list                            the cases' names
 *
 * Every case runs in a process of its own (the library is initialized once a
 * process); lines are "ok - misuse: ..." / "not ok - misuse: ...".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "ssdalloc.h"

#define PAGE 4096
#define NOBJ 64
#define OSIZE 200

static const char *dir;
static uint64_t seed;
static char dev_a[4200], dev_b[4200], ck_a[4200], ck_b[4200], addrs_a[4200];

/* inside a case's process: the first failed expectation ends it */
static void __attribute__((format(printf, 1, 2), noreturn)) bad(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(NULL);
	_exit(1);
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static void init_dev(const char *dev, uint64_t bytes, unsigned int flags)
{
	struct ssd_config cfg = {
		.device = dev, .device_bytes = bytes, .ram_bytes = 4 << 20,
		.page_buffer_bytes = 1 << 20, .flags = flags | SSD_QUIET,
	};

	if (getenv("SSDALLOC_NO_UFFD") && !strcmp(getenv("SSDALLOC_NO_UFFD"), "1"))
		cfg.flags |= SSD_NO_UFFD;
	if (ssd_init(&cfg))
		bad("ssd_init(%s, %" PRIu64 " B): %s", dev, bytes, ssd_strerror());
}

/* the call's result was a refusal with errno E and a message */
static void refused(int rc, int e, const char *what)
{
	const char *m = ssd_strerror();

	if (rc != -1)
		bad("%s: returned %d, not -1", what, rc);
	if (e && errno != e)
		bad("%s: errno %d (%s), expected %d (%s)", what, errno, strerror(errno), e,
		    strerror(e));
	if (!e && !errno)
		bad("%s: errno not set", what);
	if (!m || !*m || !strcmp(m, "no error"))
		bad("%s: no message from ssd_strerror()", what);
	note("%s: refused: %s (errno %s)", what, m, strerrorname_np(errno));
}

/* ssd_free (void) of p: refused with EINVAL and something on stderr */
static void free_refused(void *p, const char *what)
{
	char path[4300], msg[512] = "";
	int save = dup(2), fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/stderr.%d", dir, getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || save < 0)
		bad("%s: %s", path, strerror(errno));
	fflush(stderr);
	dup2(fd, 2);
	errno = 0;
	ssd_free(p);
	{
		int e = errno;

		fflush(stderr);
		dup2(save, 2);
		close(save);
		errno = e;
	}
	n = pread(fd, msg, sizeof(msg) - 1, 0);
	close(fd);
	unlink(path);
	if (errno != EINVAL)
		bad("%s: ssd_free left errno %d (%s), expected EINVAL", what, errno,
		    strerror(errno));
	if (n <= 0)
		bad("%s: ssd_free said nothing on stderr", what);
	msg[n] = 0;
	if (strchr(msg, '\n'))
		*strchr(msg, '\n') = 0;
	note("%s: ssd_free on stderr: %s", what, msg);
	refused(ssd_free_checked(p), EINVAL, what);
}

static void fill(void *p, size_t n, int v)
{
	memset(p, v, n);
}

static void expect(const void *p, size_t n, int v, const char *what)
{
	const unsigned char *c = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (c[i] != (unsigned char)v)
			bad("%s: byte %zu of %p is 0x%02x, expected 0x%02x", what, i, p, c[i],
			    (unsigned char)v);
}

/* the process still works: objects of each kind allocated, written, read, freed */
static void still_works(const char *after)
{
	void *a = ssd_oalloc(1, 300), *b = ssd_oalloc(3, 5000), *c = ssd_malloc(20000);

	if (!a || !b || !c)
		bad("after %s: allocation failed: %s", after, ssd_strerror());
	fill(a, 300, 0x5a);
	fill(b, 3 * 8192, 0x6b);
	fill(c, 20000, 0x7c);
	expect(a, 300, 0x5a, after);
	expect(b, 3 * 8192, 0x6b, after);
	expect(c, 20000, 0x7c, after);
	if (ssd_free_checked(a) || ssd_free_checked(b) || ssd_free_checked(c))
		bad("after %s: ssd_free_checked of live objects: %s", after, ssd_strerror());
}

/* ------------------------------------------------------------ frees */

static void case_free_stack(void)
{
	volatile char x[64];

	init_dev(dev_a, 32 << 20, SSD_FORMAT);
	free_refused((void *)x, "ssd_free of a stack pointer");
	still_works("a stack pointer's free");
}

static void case_free_malloc(void)
{
	void *p = malloc(100);

	init_dev(dev_a, 32 << 20, SSD_FORMAT);
	free_refused(p, "ssd_free of a malloc() pointer");
	free(p);
	still_works("a malloc() pointer's free");
}

static void case_free_interior(void)
{
	char *o, *a, *m;

	init_dev(dev_a, 32 << 20, SSD_FORMAT);
	o = ssd_oalloc(1, 256);
	a = ssd_oalloc(4, 100);
	m = ssd_malloc(3 * PAGE);
	if (!o || !a || !m)
		bad("allocation: %s", ssd_strerror());
	fill(o, 256, 1);
	fill(a, 4 * PAGE, 2);
	fill(m, 3 * PAGE, 3);
	free_refused(o + 8, "ssd_free of a pointer 8 B into a pool object");
	free_refused(a + PAGE, "ssd_free of an OPP array's second element");
	free_refused(m + PAGE, "ssd_free of a pointer a page into an ssd_malloc block");
	free_refused(m + 1, "ssd_free of a pointer 1 B into an ssd_malloc block");
	/* nothing was freed: all three are intact, and free */
	expect(o, 256, 1, "pool object after the refused interior free");
	expect(a, 4 * PAGE, 2, "OPP array after the refused interior free");
	expect(m, 3 * PAGE, 3, "ssd_malloc block after the refused interior frees");
	if (ssd_free_checked(o) || ssd_free_checked(a) || ssd_free_checked(m))
		bad("the objects themselves could not be freed: %s", ssd_strerror());
	still_works("interior pointers' frees");
}

static void case_double_free(void)
{
	char *o, *a, *m, *keep;

	init_dev(dev_a, 32 << 20, SSD_FORMAT);
	keep = ssd_oalloc(1, 512);
	o = ssd_oalloc(1, 512);
	a = ssd_oalloc(2, 1000);
	m = ssd_malloc(10000);
	if (!keep || !o || !a || !m)
		bad("allocation: %s", ssd_strerror());
	fill(keep, 512, 0x11);
	if (ssd_free_checked(o) || ssd_free_checked(a) || ssd_free_checked(m))
		bad("first free: %s", ssd_strerror());
	free_refused(o, "a second ssd_free of a pool object");
	free_refused(a, "a second ssd_free of an OPP array");
	free_refused(m, "a second ssd_free of an ssd_malloc block");
	expect(keep, 512, 0x11, "another object after the double frees");
	still_works("double frees");
}

/* ------------------------------------------------------------ init */

static void case_too_small(void)
{
	struct ssd_config cfg = {
		.device = dev_a, .device_bytes = 64 << 10, .ram_bytes = 4 << 20,
		.page_buffer_bytes = 1 << 20, .flags = SSD_FORMAT | SSD_QUIET,
	};

	errno = 0;
	refused(ssd_init(&cfg), 0, "ssd_init of a 64 KiB device");
	init_dev(dev_a, 32 << 20, SSD_FORMAT);
	still_works("a refused ssd_init");
}

static void case_missing_device(void)
{
	struct ssd_config cfg = {
		.device = "/nonexistent-dir/ssdalloc-dev", .device_bytes = 0,
		.ram_bytes = 4 << 20, .page_buffer_bytes = 1 << 20, .flags = SSD_QUIET,
	};

	errno = 0;
	refused(ssd_init(&cfg), ENOENT, "ssd_init of a missing device");
	if (!strstr(ssd_strerror(), "/nonexistent-dir/ssdalloc-dev"))
		bad("the message does not name the device: %s", ssd_strerror());
	init_dev(dev_a, 32 << 20, SSD_FORMAT);
	still_works("a refused ssd_init");
}

static void case_bad_ram(void)
{
	struct ssd_config cfg = {
		.device = dev_a, .device_bytes = 32 << 20, .ram_bytes = 1 << 20,
		.page_buffer_bytes = 4 << 20, .flags = SSD_FORMAT | SSD_QUIET,
	};

	errno = 0;
	refused(ssd_init(&cfg), EINVAL, "ssd_init with a page buffer larger than the RAM budget");
	init_dev(dev_a, 32 << 20, SSD_FORMAT);
	still_works("a refused ssd_init");
}

/* ------------------------------------------------------------ restore */

/* in a process of its own: store A with NOBJ pool objects, checkpointed to ck_a */
static void make_ckpt(void)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	if (!pid) {
		void *p[NOBJ];
		FILE *f;
		int i;

		init_dev(dev_a, 32 << 20, SSD_FORMAT);
		for (i = 0; i < NOBJ; i++) {
			p[i] = ssd_oalloc(1, OSIZE);
			if (!p[i])
				bad("ssd_oalloc: %s", ssd_strerror());
			fill(p[i], OSIZE, i * 7 + 1);
		}
		if (ssd_checkpoint(ck_a))
			bad("ssd_checkpoint: %s", ssd_strerror());
		f = fopen(addrs_a, "w");
		if (!f || fwrite(p, sizeof(p), 1, f) != 1 || fclose(f))
			bad("%s: cannot write", addrs_a);
		ssd_shutdown();
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		bad("making checkpoint A failed");
}

/* store A restored from ck_a: every object as written */
static void restore_good(const char *after)
{
	void *p[NOBJ];
	FILE *f = fopen(addrs_a, "r");
	int i;

	if (!f || fread(p, sizeof(p), 1, f) != 1)
		bad("%s: cannot read", addrs_a);
	fclose(f);
	if (ssd_restore(ck_a)) {
		/* what the process has mapped around the objects' addresses, for the log */
		char line[512];
		uintptr_t lo, hi, at = (uintptr_t)p[0];

		f = fopen("/proc/self/maps", "r");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &lo, &hi) == 2 &&
			    hi + (4u << 20) > at && lo < at + (4u << 20))
				note("mapped near the first object (%p): %.*s", p[0],
				     (int)strcspn(line, "\n"), line);
		if (f)
			fclose(f);
		bad("after %s, ssd_restore of the good checkpoint: %s", after, ssd_strerror());
	}
	for (i = 0; i < NOBJ; i++)
		expect(p[i], OSIZE, i * 7 + 1, "restored object");
	still_works(after);
}

static void copy_file(const char *from, const char *to, long len)
{
	char buf[1 << 16];
	FILE *a = fopen(from, "r"), *b = fopen(to, "w");
	size_t n;

	if (!a || !b)
		bad("copy %s: %s", from, strerror(errno));
	while ((n = fread(buf, 1, sizeof(buf), a)) > 0)
		if (fwrite(buf, 1, n, b) != n)
			bad("copy %s: cannot write", to);
	fclose(a);
	if (fclose(b))
		bad("copy %s", to);
	if (len >= 0 && truncate(to, len))
		bad("truncate %s: %s", to, strerror(errno));
}

static long file_len(const char *p)
{
	struct stat st;

	if (stat(p, &st))
		bad("%s: %s", p, strerror(errno));
	return st.st_size;
}

static void case_restore_not_ckpt(void)
{
	char p[4300];
	FILE *f;

	make_ckpt();
	snprintf(p, sizeof(p), "%s/not-a-checkpoint", dir);
	f = fopen(p, "w");
	if (!f)
		bad("%s: %s", p, strerror(errno));
	fprintf(f, "this is not a checkpoint, just some text\n");
	fclose(f);
	init_dev(dev_a, 0, 0);
	errno = 0;
	refused(ssd_restore(p), 0, "ssd_restore of a text file");
	errno = 0;
	refused(ssd_restore("/nonexistent-dir/ckpt"), ENOENT, "ssd_restore of a missing file");
	snprintf(p, sizeof(p), "%s/empty", dir);
	copy_file(ck_a, p, 0);
	errno = 0;
	refused(ssd_restore(p), 0, "ssd_restore of an empty file");
	restore_good("refused restores");
}

static void case_restore_truncated(void)
{
	char p[4300];
	long len, cut[3];
	int i;

	make_ckpt();
	len = file_len(ck_a);
	note("the checkpoint file is %ld B", len);
	cut[0] = len / 2;
	cut[1] = len - 1;
	cut[2] = 1;
	init_dev(dev_a, 0, 0);
	for (i = 0; i < 3; i++) {
		char what[64];

		snprintf(p, sizeof(p), "%s/trunc", dir);
		copy_file(ck_a, p, cut[i]);
		snprintf(what, sizeof(what), "ssd_restore of the file cut to %ld of %ld B", cut[i], len);
		errno = 0;
		refused(ssd_restore(p), 0, what);
	}
	restore_good("truncated files' restores");
}

/* every byte of the checkpoint file counts: flips at a few seeded places (each alone) */
static void case_restore_flipped(void)
{
	char p[4300];
	long len;
	uint64_t r = seed;
	int i;

	make_ckpt();
	len = file_len(ck_a);
	init_dev(dev_a, 0, 0);
	for (i = 0; i < 8; i++) {
		long at;

		unsigned char c;
		char what[96];
		FILE *f;

		/* the first and the last byte, then seeded ones */
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		at = i == 0 ? 0 : i == 1 ? len - 1 : (long)((r >> 33) % (uint64_t)len);
		snprintf(p, sizeof(p), "%s/flip", dir);
		copy_file(ck_a, p, -1);
		f = fopen(p, "r+");
		if (!f || fseek(f, at, SEEK_SET) || fread(&c, 1, 1, f) != 1)
			bad("%s: cannot read byte %ld", p, at);
		c ^= 1u << (i % 8);
		if (fseek(f, at, SEEK_SET) || fwrite(&c, 1, 1, f) != 1 || fclose(f))
			bad("%s: cannot write byte %ld", p, at);
		snprintf(what, sizeof(what), "ssd_restore of the file with bit %d of byte %ld of %ld flipped",
			 i % 8, at, len);
		errno = 0;
		refused(ssd_restore(p), 0, what);
	}
	restore_good("flipped files' restores");
}

static void case_restore_other_store(void)
{
	make_ckpt();
	init_dev(dev_b, 32 << 20, SSD_FORMAT);
	errno = 0;
	refused(ssd_restore(ck_a), 0, "ssd_restore of store A's checkpoint on store B");
	still_works("a refused restore");
}

static void case_restore_reformatted(void)
{
	make_ckpt();
	init_dev(dev_a, 32 << 20, SSD_FORMAT);
	errno = 0;
	refused(ssd_restore(ck_a), 0, "ssd_restore of a checkpoint of the store before SSD_FORMAT");
	/* the same path is named: the message must say the store there changed */
	if (!strstr(ssd_strerror(), "different store"))
		bad("the message does not say the device now holds a different store: %s",
		    ssd_strerror());
	still_works("a refused restore");
}

static void case_restore_other_size(void)
{
	char p[4300];

	make_ckpt();
	/* the same bytes on a device of another size: another layout */
	snprintf(p, sizeof(p), "%s/dev-grown", dir);
	copy_file(dev_a, p, -1);
	if (truncate(p, 64 << 20))
		bad("truncate: %s", strerror(errno));
	{
		struct ssd_config cfg = {
			.device = p, .device_bytes = 0, .ram_bytes = 4 << 20,
			.page_buffer_bytes = 1 << 20, .flags = SSD_QUIET,
		};

		if (ssd_init(&cfg)) {
			/* refusing the grown device at init is as good */
			note("ssd_init of the grown device refused: %s", ssd_strerror());
			init_dev(dev_b, 32 << 20, SSD_FORMAT);
			still_works("a refused ssd_init");
			return;
		}
	}
	errno = 0;
	if (ssd_restore(ck_a) == 0) {
		/* the store says how large it is: a restore that works must be right */
		void *q[NOBJ];
		FILE *f = fopen(addrs_a, "r");
		int i;

		if (!f || fread(q, sizeof(q), 1, f) != 1)
			bad("%s: cannot read", addrs_a);
		fclose(f);
		for (i = 0; i < NOBJ; i++)
			expect(q[i], OSIZE, i * 7 + 1, "restored object on the grown device");
		note("the store on a grown file restored, every object right");
	} else {
		refused(-1, 0, "ssd_restore on a device of another size");
	}
	still_works("a restore on a grown device");
}

static void case_restore_after_alloc(void)
{
	void *p;

	make_ckpt();
	init_dev(dev_a, 0, 0);
	p = ssd_oalloc(1, 100);
	if (!p)
		bad("ssd_oalloc: %s", ssd_strerror());
	errno = 0;
	refused(ssd_restore(ck_a), 0, "ssd_restore after an allocation");
	fill(p, 100, 9);
	expect(p, 100, 9, "the object allocated before the refused restore");
	still_works("a refused restore");
}

/* a restore whose heap part fails (its address range is taken) leaves no Object
 * Table of the checkpoint behind (nothing would name it): once a new checkpoint
 * has replaced the old one's views, the store holds no table at all */
static void case_restore_fail_tables(void)
{
	struct ssd_stats before, after;
	void *p[NOBJ], *block;
	FILE *f;

	make_ckpt();
	f = fopen(addrs_a, "r");
	if (!f || fread(p, sizeof(p), 1, f) != 1)
		bad("%s: cannot read", addrs_a);
	fclose(f);
	init_dev(dev_a, 0, 0);
	if (ssd_stats(&before))
		bad("ssd_stats: %s", ssd_strerror());
	block = mmap((void *)((uintptr_t)p[0] & ~(uintptr_t)(PAGE - 1)), PAGE, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (block == MAP_FAILED)
		bad("mmap at %p: %s", p[0], strerror(errno));
	errno = 0;
	refused(ssd_restore(ck_a), 0, "ssd_restore with the objects' addresses taken");
	munmap(block, PAGE);
	snprintf(ck_b, sizeof(ck_b), "%s/ckpt-b", dir);
	if (ssd_checkpoint(ck_b))
		bad("ssd_checkpoint: %s", ssd_strerror());
	if (ssd_stats(&after))
		bad("ssd_stats: %s", ssd_strerror());
	if (after.ot_bytes != before.ot_bytes)
		bad("a failed restore left Object Tables behind: ot_bytes %" PRIu64 " before, %"
		    PRIu64 " after (and a checkpoint)", before.ot_bytes, after.ot_bytes);
	still_works("a restore that failed in the heap");
}

/* ------------------------------------------------------------ use after free */

static void uaf(bool no_uffd, bool write)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	if (!pid) {
		volatile char *p;

		init_dev(dev_a, 32 << 20, SSD_FORMAT | (no_uffd ? SSD_NO_UFFD : 0));
		p = ssd_oalloc(1, 100);
		if (!p)
			bad("ssd_oalloc: %s", ssd_strerror());
		p[0] = 1;
		if (ssd_free_checked((void *)p))
			bad("ssd_free_checked: %s", ssd_strerror());
		/* the access that must kill; if it does not, say what it saw */
		if (write)
			p[0] = 2;
		st = p[0];
		printf("# the %s after free went through (read %d)\n", write ? "write" : "read", st);
		fflush(NULL);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		bad("fork/waitpid: %s", strerror(errno));
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSEGV) {
		if (WIFSIGNALED(st))
			bad("a %s after free (%s): died of signal %d (%s), not SIGSEGV",
			    write ? "write" : "read", no_uffd ? "mprotect" : "userfaultfd",
			    WTERMSIG(st), strsignal(WTERMSIG(st)));
		bad("a %s after free of an OPP object (%s): the process lived on (exit %d)",
		    write ? "write" : "read", no_uffd ? "mprotect" : "userfaultfd", WEXITSTATUS(st));
	}
}

static void case_uaf(void) { uaf(false, false); uaf(false, true); }
static void case_uaf_no_uffd(void) { uaf(true, false); uaf(true, true); }

/* ------------------------------------------------------------ checkpoint races */

/*
 * A checkpoint while another thread allocates and frees (each object is
 * written whole before it is published in the root, the old one freed after):
 * the checkpoint must be one consistent state of the heap, the runtime and the
 * store. Before the fix a free between the heap's snapshot and the store's, or
 * a slot freed and reused after the flush, restored live objects as zeros (or
 * not allocated at all). Rounds of: make the checkpoint in a child, restore it
 * in another, check every object the root names.
 */
#define RACE_N 64
#define RACE_SZ 4000
#define RACE_ROUNDS 8

struct race_root { unsigned char *obj[RACE_N]; };
static struct race_root *race_root;
static atomic_int race_stop;
static atomic_ulong race_iter;

static void *race_mutator(void *arg)
{
	unsigned int g = 1;

	(void)arg;
	while (!atomic_load(&race_stop)) {
		unsigned int i = g % RACE_N;
		unsigned char *n = ssd_oalloc(1, RACE_SZ), *old = race_root->obj[i];

		if (!n)
			bad("ssd_oalloc in the mutator: %s", ssd_strerror());
		memset(n, 1 + g % 250, RACE_SZ);
		atomic_thread_fence(memory_order_seq_cst);
		race_root->obj[i] = n;		/* publish, then free the old one */
		if (ssd_free_checked(old))
			bad("ssd_free_checked in the mutator: %s", ssd_strerror());
		g++;
		atomic_fetch_add(&race_iter, 1);
	}
	return NULL;
}

/* the restoring process is configured as the checkpointing one was, so that it maps
 * the same things in the same order and the objects' addresses are free there too */
static const struct ssd_config race_cfg = {
	.device_bytes = 256 << 20, .ram_bytes = 200 << 20, .page_buffer_bytes = 64 << 20,
	.flags = SSD_QUIET,
};

static void race_make(void)
{
	struct ssd_config cfg = race_cfg;
	pthread_t t;
	FILE *f;
	int i;

	cfg.device = dev_a;
	cfg.flags |= SSD_FORMAT;
	if (ssd_init(&cfg))
		bad("ssd_init: %s", ssd_strerror());
	race_root = ssd_oalloc(1, sizeof(*race_root));
	if (!race_root)
		bad("ssd_oalloc: %s", ssd_strerror());
	for (i = 0; i < RACE_N; i++) {
		race_root->obj[i] = ssd_oalloc(1, RACE_SZ);
		if (!race_root->obj[i])
			bad("ssd_oalloc: %s", ssd_strerror());
		memset(race_root->obj[i], 200, RACE_SZ);
	}
	f = fopen(addrs_a, "w");
	if (!f || fwrite(&race_root, sizeof(race_root), 1, f) != 1 || fclose(f))
		bad("%s: cannot write", addrs_a);
	if (pthread_create(&t, NULL, race_mutator, NULL))
		bad("pthread_create failed");
	/* the mutator is well under way (no clock: a count of its iterations) */
	while (atomic_load(&race_iter) < 10000)
		sched_yield();
	if (ssd_checkpoint(ck_a))
		bad("ssd_checkpoint: %s", ssd_strerror());
	atomic_store(&race_stop, 1);
	pthread_join(t, NULL);
}

static void race_check(int round)
{
	struct ssd_config cfg = race_cfg;
	FILE *f = fopen(addrs_a, "r");
	int i, j;

	if (!f || fread(&race_root, sizeof(race_root), 1, f) != 1)
		bad("%s: cannot read", addrs_a);
	fclose(f);
	cfg.device = dev_a;
	if (ssd_init(&cfg))
		bad("ssd_init: %s", ssd_strerror());
	if (ssd_restore(ck_a))
		bad("round %d: ssd_restore: %s", round, ssd_strerror());
	for (i = 0; i < RACE_N; i++) {
		unsigned char *q = race_root->obj[i];

		for (j = 0; j < RACE_SZ; j++)
			if (!q[j] || q[j] != q[0])
				bad("round %d: restored obj[%d] = %p: byte %d is %d (byte 0: %d)",
				    round, i, (void *)q, j, q[j], q[0]);
		if (ssd_free_checked(q))
			bad("round %d: restored obj[%d] = %p is not allocated: %s", round, i,
			    (void *)q, ssd_strerror());
	}
}

static void in_child(void (*fn)(void), int round, const char *what)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	if (!pid) {
		if (fn)
			fn();
		else
			race_check(round);
		fflush(NULL);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		bad("fork/waitpid: %s", strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		bad("round %d: %s failed (%s %d)", round, what,
		    WIFSIGNALED(st) ? "signal" : "exit",
		    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

static void case_ckpt_race(void)
{
	int r;

	for (r = 1; r <= RACE_ROUNDS; r++) {
		in_child(race_make, r, "making the checkpoint");
		in_child(NULL, r, "restoring and checking it");
	}
	note("%d rounds: every restored object whole and allocated", RACE_ROUNDS);
}

/* ------------------------------------------------------------ chunk units */

/*
 * writeChunk/readChunk with a buffer that is SSDAlloc memory not in RAM (the
 * library must not touch it under its locks: a fault there needs them). The
 * process runs under alarm(): a deadlock ends as SIGALRM instead of hanging
 * the suite.
 */
static void chunk_ssd_buf(bool no_uffd)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	if (!pid) {
		struct ssd_config cfg = {
			.device = dev_a, .device_bytes = 64 << 20, .ram_bytes = 8 << 20,
			.page_buffer_bytes = 1 << 20,
			.flags = SSD_FORMAT | SSD_QUIET | (no_uffd ? SSD_NO_UFFD : 0),
		};
		struct ssd_unit *u;
		char local[4096];
		unsigned char *buf, *big;
		int i;

		alarm(100);
		if (ssd_init(&cfg))
			bad("ssd_init: %s", ssd_strerror());
		u = ssdalloc(8, 4096, 4096);	/* a cache of one chunk */
		if (!u)
			bad("ssdalloc: %s", ssd_strerror());
		memset(local, 'a', sizeof(local));
		if (writeChunk(u, 0, local))	/* chunk 0 cached, dirty */
			bad("writeChunk: %s", ssd_strerror());
		buf = ssd_malloc(4096);		/* never touched: not in RAM */
		if (!buf)
			bad("ssd_malloc: %s", ssd_strerror());
		/* evicts dirty chunk 0: a batched write that must not read buf under the store lock */
		if (writeChunk(u, 1, buf))
			bad("writeChunk from SSDAlloc memory: %s", ssd_strerror());
		/* push buf's page out of RAM, then read chunk 0 into it */
		big = ssd_malloc(16 << 20);
		if (!big)
			bad("ssd_malloc: %s", ssd_strerror());
		for (i = 0; i < (16 << 20); i += 4096)
			big[i] = 1;
		if (readChunk(u, 0, buf))
			bad("readChunk into SSDAlloc memory: %s", ssd_strerror());
		expect(buf, 4096, 'a', "chunk 0 read into SSDAlloc memory");
		memset(buf, 'b', 4096);
		for (i = 0; i < (16 << 20); i += 4096)
			big[i] = 2;
		if (writeChunk(u, 2, buf) || readChunk(u, 1, local))
			bad("writeChunk/readChunk: %s", ssd_strerror());
		expect(local, 4096, 0, "chunk 1 (written from an untouched SSDAlloc buffer)");
		if (readChunk(u, 2, local))
			bad("readChunk: %s", ssd_strerror());
		expect(local, 4096, 'b', "chunk 2");
		ssdfree(u);
		fflush(NULL);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		bad("fork/waitpid: %s", strerror(errno));
	if (WIFSIGNALED(st))
		bad("chunk I/O with SSDAlloc buffers (%s): died of signal %d (%s)%s",
		    no_uffd ? "mprotect" : "userfaultfd", WTERMSIG(st), strsignal(WTERMSIG(st)),
		    WTERMSIG(st) == SIGALRM ? ": deadlocked" : "");
	if (WEXITSTATUS(st))
		bad("chunk I/O with SSDAlloc buffers (%s) failed", no_uffd ? "mprotect" : "userfaultfd");
}

static void case_chunk_ssd_buf(void) { chunk_ssd_buf(false); chunk_ssd_buf(true); }

static void case_chunk_huge(void)
{
	struct ssd_unit *u;

	init_dev(dev_a, 64 << 20, SSD_FORMAT);
	errno = 0;
	u = ssdalloc(UINT32_MAX, 65536, 0);
	refused(u ? 0 : -1, ENOSPC, "ssdalloc(UINT32_MAX, 65536) on 64 MiB");
	u = ssdalloc(4, 65536, 0);
	if (!u)
		bad("ssdalloc(4, 65536): %s", ssd_strerror());
	errno = 0;
	refused(ssdrealloc(u, UINT32_MAX), ENOSPC, "ssdrealloc to UINT32_MAX chunks of 64 KiB");
	{
		char c[65536];

		memset(c, 3, sizeof(c));
		if (writeChunk(u, 3, c) || readChunk(u, 3, c))
			bad("the unit after a refused ssdrealloc: %s", ssd_strerror());
		expect(c, sizeof(c), 3, "chunk 3 after a refused ssdrealloc");
	}
	ssdfree(u);
	still_works("refused huge units");
}

/* a unit made before ssd_shutdown is refused after a new ssd_init, and the new
 * store's tables are untouched */
static void case_unit_stale(void)
{
	struct ssd_unit *old, *nu;
	char c[512];

	init_dev(dev_a, 32 << 20, SSD_FORMAT);
	old = ssdalloc(4, 512, 0);
	if (!old)
		bad("ssdalloc: %s", ssd_strerror());
	ssd_shutdown();
	init_dev(dev_b, 32 << 20, SSD_FORMAT);
	nu = ssdalloc(4, 512, 0);	/* most likely the same otid as the old one */
	if (!nu)
		bad("ssdalloc: %s", ssd_strerror());
	memset(c, 7, sizeof(c));
	if (writeChunk(nu, 1, c) || flushUnit(nu))
		bad("writeChunk/flushUnit: %s", ssd_strerror());
	errno = 0;
	refused(writeChunk(old, 1, c), EINVAL, "writeChunk of a unit from before ssd_shutdown");
	errno = 0;
	refused(readChunk(old, 1, c), EINVAL, "readChunk of a unit from before ssd_shutdown");
	errno = 0;
	ssdfree(old);
	if (errno != EINVAL)
		bad("ssdfree of a unit from before ssd_shutdown: errno %d, expected EINVAL", errno);
	note("ssdfree of a stale unit: %s", ssd_strerror());
	memset(c, 0, sizeof(c));
	if (readChunk(nu, 1, c))
		bad("readChunk: %s", ssd_strerror());
	expect(c, sizeof(c), 7, "the new unit's chunk after the stale unit's ssdfree");
	ssdfree(nu);
	still_works("a stale unit");
}

/* ------------------------------------------------------------ a full device */

/*
 * More live data than the device holds: allocation must end in ENOSPC with a
 * message (not grind on), and work again once enough was freed. Under alarm():
 * a process that grinds on ends as SIGALRM.
 */
#define FULL_SZ 4000

static void case_enospc(void)
{
	struct ssd_config cfg = {
		.device = dev_a, .device_bytes = 6 << 20, .ram_bytes = 1 << 20,
		.page_buffer_bytes = 256 << 10, .flags = SSD_FORMAT | SSD_QUIET,
	};
	size_t n = 0, cap = (6u << 20) / FULL_SZ * 4, i;	/* far more than fits */
	unsigned char **p = calloc(cap, sizeof(*p));

	if (!p)
		bad("calloc failed");
	alarm(100);
	if (ssd_init(&cfg))
		bad("ssd_init: %s", ssd_strerror());
	for (;;) {
		unsigned char *q;

		if (n == cap)
			bad("%zu objects of %d B on a 6 MiB device: never refused", n, FULL_SZ);
		errno = 0;
		q = ssd_oalloc(1, FULL_SZ);
		if (!q)
			break;
		memset(q, (int)(n % 250) + 1, FULL_SZ);
		p[n++] = q;
	}
	refused(-1, ENOSPC, "ssd_oalloc on a full device");
	note("refused after %zu objects of %d B", n, FULL_SZ);
	errno = 0;
	refused(ssd_malloc(10000) ? 0 : -1, ENOSPC, "ssd_malloc on a full device");
	/* the objects kept are intact (the ones held in RAM as well) */
	for (i = 0; i < n; i += 97)
		expect(p[i], FULL_SZ, (int)(i % 250) + 1, "an object on the full device");
	/* free half: room again */
	for (i = 0; i < n; i += 2)
		if (ssd_free_checked(p[i]))
			bad("ssd_free_checked: %s", ssd_strerror());
	for (i = 0; i < 8; i++) {
		unsigned char *q = ssd_oalloc(1, FULL_SZ);

		if (!q)
			bad("ssd_oalloc after freeing half: %s", ssd_strerror());
		memset(q, 9, FULL_SZ);
		expect(q, FULL_SZ, 9, "a new object after freeing half");
	}
	for (i = 1; i < n; i += 2 * 97)
		expect(p[i], FULL_SZ, (int)(i % 250) + 1, "an object kept after freeing half");
	free(p);
}

/* ------------------------------------------------------------ main */

static const struct {
	const char *name, *what;
	void (*fn)(void);
} cases[] = {
	{ "free-stack", "ssd_free of a stack pointer: EINVAL, a message, the process goes on",
	  case_free_stack },
	{ "free-malloc", "ssd_free of a malloc() pointer: EINVAL, a message, the process goes on",
	  case_free_malloc },
	{ "free-interior", "ssd_free of interior pointers (pool, OPP array, MP): refused, nothing freed",
	  case_free_interior },
	{ "double-free", "double free (pool, OPP array, MP): EINVAL, a message, the process goes on",
	  case_double_free },
	{ "too-small", "ssd_init of a device too small: a clear error, then init works",
	  case_too_small },
	{ "missing-device", "ssd_init of a missing device: ENOENT naming it, then init works",
	  case_missing_device },
	{ "bad-ram", "ssd_init with a page buffer over the RAM budget: EINVAL", case_bad_ram },
	{ "restore-not-ckpt", "ssd_restore of text, a missing and an empty file: refused; then the real one works",
	  case_restore_not_ckpt },
	{ "restore-truncated", "ssd_restore of a truncated checkpoint file: refused; then the real one works",
	  case_restore_truncated },
	{ "restore-flipped", "ssd_restore of a checkpoint file with a flipped bit: refused; then the real one works",
	  case_restore_flipped },
	{ "restore-other-store", "ssd_restore of another store's checkpoint: refused",
	  case_restore_other_store },
	{ "restore-reformatted", "ssd_restore of a checkpoint from before SSD_FORMAT: refused",
	  case_restore_reformatted },
	{ "restore-other-size", "ssd_restore on the store's bytes in a larger file: right or refused",
	  case_restore_other_size },
	{ "restore-after-alloc", "ssd_restore after an allocation: refused, the object intact",
	  case_restore_after_alloc },
	{ "restore-fail-tables", "ssd_restore failing in the heap: no Object Table left behind",
	  case_restore_fail_tables },
	{ "ckpt-race", "ssd_checkpoint while another thread allocates and frees: restores whole",
	  case_ckpt_race },
	{ "chunk-ssd-buf", "readChunk/writeChunk with SSDAlloc memory as the buffer: no deadlock",
	  case_chunk_ssd_buf },
	{ "chunk-huge", "ssdalloc/ssdrealloc of more than the device holds: ENOSPC at once",
	  case_chunk_huge },
	{ "unit-stale", "a chunk unit from before ssd_shutdown: EINVAL, the new store untouched",
	  case_unit_stale },
	{ "enospc", "allocating past a full device: ENOSPC and a message; works again after frees",
	  case_enospc },
	{ "uaf", "use after free of an OPP object (userfaultfd): SIGSEGV", case_uaf },
	{ "uaf-no-uffd", "use after free of an OPP object (mprotect + SIGSEGV): SIGSEGV",
	  case_uaf_no_uffd },
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

static int run_case(int i)
{
	char cmd[4300];
	pid_t pid;
	int st;

	fflush(NULL);
	snprintf(cmd, sizeof(cmd), "rm -f '%s'/*", dir);
	if (system(cmd))
		return 1;
	snprintf(dev_a, sizeof(dev_a), "%s/dev-a", dir);
	snprintf(dev_b, sizeof(dev_b), "%s/dev-b", dir);
	snprintf(ck_a, sizeof(ck_a), "%s/ckpt-a", dir);
	snprintf(addrs_a, sizeof(addrs_a), "%s/addrs-a", dir);
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		cases[i].fn();
		fflush(NULL);
		_exit(0);
	}
	if (waitpid(pid, &st, 0) < 0)
		return 1;
	if (WIFEXITED(st) && !WEXITSTATUS(st)) {
		printf("ok - misuse: %s: %s\n", cases[i].name, cases[i].what);
		return 0;
	}
	printf("not ok - misuse: %s: %s # %s %d\n", cases[i].name, cases[i].what,
	       WIFSIGNALED(st) ? "died of signal" : "exit",
	       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	return 1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dir", 1, NULL, 'd' }, { "seed", 1, NULL, 's' }, { "list", 0, NULL, 'l' },
		{ NULL, 0, NULL, 0 }
	};
	const char *env = getenv("SSC_SEED");
	char tmpl[] = "/tmp/test-misuse.XXXXXX";
	bool own = false;
	int c, i, j, failed = 0;

	seed = env && *env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 's': seed = strtoull(optarg, NULL, 10); break;
		case 'l':
			for (i = 0; i < NCASES; i++)
				printf("%s\n", cases[i].name);
			return 0;
		default:
			fprintf(stderr, "usage: test-misuse [--dir DIR] [--seed N] [--list] [CASE...]\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!dir) {
		dir = mkdtemp(tmpl);
		if (!dir) {
			perror("mkdtemp");
			return 1;
		}
		own = true;
	}
	printf("# test-misuse: seed %" PRIu64 "\n", seed);
	if (optind == argc) {
		for (i = 0; i < NCASES; i++)
			failed += run_case(i);
	} else {
		for (j = optind; j < argc; j++) {
			for (i = 0; i < NCASES && strcmp(cases[i].name, argv[j]); i++)
				;
			if (i == NCASES) {
				printf("not ok - misuse: %s # no such case\n", argv[j]);
				failed++;
				continue;
			}
			failed += run_case(i);
		}
	}
	if (own) {
		char cmd[4300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			fprintf(stderr, "test-misuse: cannot remove %s\n", dir);
	}
	return failed ? 1 : 0;
}
