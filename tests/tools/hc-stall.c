// SPDX-License-Identifier: GPL-2.0
/*
 * hc-stall: a caller whose buffer faults slowly must not stall an index's
 * other callers.
 *
 *   hc-stall DEVICE
 *
 * DEVICE must hold an attached index. Twice, with a buffer on a page that
 * userfaultfd leaves missing until told: a PUT whose value is that page
 * (the kernel reads it), then a GET whose output is that page (the kernel
 * writes it). While that call waits for its fault, a GET and a PUT of other
 * keys from another thread must complete (waited for up to 60 s: a hang
 * detector, not a speed bar). Then the fault is resolved and the stalled call
 * must have done its work. Prints one "ok - ..."/"not ok - ..." line per
 * check; exit 1 if any failed, 2 on a setup error, 3 if the kernel has no
 * userfaultfd (nothing checked).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "../../include/uapi/linux/hashcache.h"

#define HDR(s) { .size = sizeof(s), .version = HC_ABI_VERSION }

static int ctl, failed;
static uint32_t id;
static long psz;

static void check(int cond, const char *what)
{
	printf("%s - %s\n", cond ? "ok" : "not ok", what);
	if (!cond)
		failed = 1;
}

static void die(const char *what)
{
	fprintf(stderr, "hc-stall: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* PUT (put) or GET of @key with @val/@len; the ioctl's result, -errno on failure */
static int obj(int put, const char *key, void *val, uint64_t len, uint64_t *got)
{
	struct hc_object o = { .hdr = HDR(o), .id = id };
	int r;

	o.key = (uintptr_t)key;
	o.key_len = strlen(key);
	o.value = (uintptr_t)val;
	o.value_len = len;
	r = ioctl(ctl, put ? HC_IOC_PUT : HC_IOC_GET, &o);
	if (got)
		*got = o.found ? o.value_len : 0;
	return r ? -errno : 0;
}

struct call {
	int put, rc;
	const char *key;
	void *val;
	uint64_t len, got;
	volatile int done;
};

static void *run_call(void *p)
{
	struct call *c = p;

	c->rc = obj(c->put, c->key, c->val, c->len, &c->got);
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* wait up to @secs for @c to end */
static int ended(struct call *c, int secs)
{
	int i;

	for (i = 0; i < secs * 10; i++) {
		if (__atomic_load_n(&c->done, __ATOMIC_ACQUIRE))
			return 1;
		usleep(100000);
	}
	return 0;
}

/*
 * One round: @stalled (a PUT or GET whose buffer is the missing page @page)
 * runs in a thread until its fault arrives; then a GET and a PUT of other
 * keys must end while it waits; then the page is filled with @fill.
 */
static void round_with(int uffd, char *page, struct call *stalled, const char *what, char fill)
{
	struct uffdio_register reg = { .range = { (uintptr_t)page, psz },
				       .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };
	char buf[64], name[160], *src;
	struct call g = { .put = 0, .key = "hc-stall other", .val = buf, .len = sizeof(buf) };
	struct call p = { .put = 1, .key = "hc-stall third", .val = "third", .len = 5 };
	struct uffdio_copy cp = { .dst = (uintptr_t)page, .len = psz };
	struct uffd_msg msg;
	pthread_t ts, tg, tp;

	if (ioctl(uffd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
	if (pthread_create(&ts, NULL, run_call, stalled))
		die("pthread_create");
	/* the stalled call is in the kernel, at its fault */
	if (poll(&pfd, 1, 60000) != 1 || read(uffd, &msg, sizeof(msg)) != sizeof(msg) ||
	    msg.event != UFFD_EVENT_PAGEFAULT) {
		snprintf(name, sizeof(name), "%s: its buffer faulted", what);
		check(0, name);
		exit(1);
	}
	if (pthread_create(&tg, NULL, run_call, &g) || pthread_create(&tp, NULL, run_call, &p))
		die("pthread_create");
	snprintf(name, sizeof(name), "%s, waiting for its fault: a GET of another key ends", what);
	check(ended(&g, 60) && g.rc == 0 && g.got == 5 && !memcmp(buf, "other", 5), name);
	snprintf(name, sizeof(name), "%s, waiting for its fault: a PUT of another key ends", what);
	check(ended(&p, 60) && p.rc == 0, name);
	snprintf(name, sizeof(name), "%s: not ended while its fault waits", what);
	check(!__atomic_load_n(&stalled->done, __ATOMIC_ACQUIRE), name);
	src = aligned_alloc(psz, psz);
	if (!src)
		die("aligned_alloc");
	memset(src, fill, psz);
	cp.src = (uintptr_t)src;
	if (ioctl(uffd, UFFDIO_COPY, &cp))
		die("UFFDIO_COPY");
	pthread_join(ts, NULL);
	pthread_join(tg, NULL);
	pthread_join(tp, NULL);
	free(src);
}

int main(int argc, char **argv)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct hc_find f = { .hdr = HDR(f) };
	struct call c = { 0 };
	char *area, buf[200];
	uint64_t got;
	struct stat st;
	int uffd, i;

	if (argc != 2) {
		fprintf(stderr, "usage: hc-stall DEVICE\n");
		return 2;
	}
	psz = sysconf(_SC_PAGESIZE);
	ctl = open("/dev/hashcache", O_RDWR);
	if (ctl < 0)
		die("/dev/hashcache");
	if (stat(argv[1], &st))
		die(argv[1]);
	f.dev_major = major(st.st_rdev);
	f.dev_minor = minor(st.st_rdev);
	if (ioctl(ctl, HC_IOC_FIND, &f))
		die("HC_IOC_FIND (is an index attached?)");
	id = f.id;
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0 && errno == ENOSYS) {
		fprintf(stderr, "hc-stall: this kernel has no userfaultfd\n");
		return 3;
	}
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api))
		die("userfaultfd");
	area = mmap(NULL, 2 * psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED)
		die("mmap");
	check(obj(1, "hc-stall other", "other", 5, NULL) == 0, "PUT of the other key");

	/* a PUT whose value the kernel must read from the missing page */
	c.put = 1;
	c.key = "hc-stall stalled";
	c.val = area;
	c.len = 100;
	round_with(uffd, area, &c, "a PUT reading a missing page", 'p');
	check(c.rc == 0, "the PUT ended once its page was there");
	check(obj(0, "hc-stall stalled", buf, sizeof(buf), &got) == 0 && got == 100 &&
	      buf[0] == 'p' && buf[99] == 'p', "and stored the page's bytes");

	/* a GET whose value the kernel must write to the missing page */
	memset(&c, 0, sizeof(c));
	c.key = "hc-stall stalled";
	c.val = area + psz;
	c.len = 100;
	round_with(uffd, area + psz, &c, "a GET writing a missing page", 'g');
	check(c.rc == 0 && c.got == 100, "the GET ended once its page was there");
	for (i = 0; i < 100 && area[psz + i] == 'p'; i++)
		;
	check(i == 100, "and wrote the value over the page");
	check(obj(0, "hc-stall third", buf, sizeof(buf), &got) == 0 && got == 5 &&
	      !memcmp(buf, "third", 5), "the other thread's PUT is there");
	return failed;
}
