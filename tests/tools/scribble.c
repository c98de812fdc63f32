// SPDX-License-Identifier: GPL-2.0
/*
 * scribble: change an O_DIRECT buffer while the kernel does I/O with it, and
 * check that a cache never ends up holding something other than its origin.
 *
 *   scribble read VOL ORIGIN FIRST NBLK BS
 *	for each of NBLK blocks of BS bytes from block FIRST: a thread writes
 *	over the buffer while the block is read from VOL with O_DIRECT (a read
 *	miss that fills the cache); then the block read again from VOL (a cache
 *	hit now) must equal the block on ORIGIN.
 *   scribble write VOL ORIGIN FIRST NBLK BS
 *	the same while the block is written to VOL (writethrough caches it):
 *	afterwards VOL and ORIGIN must hold the same data, whichever it is.
 *
 * A user who may only read a file must not be able to choose what later
 * readers of it get. Prints "blocks N differ D" and exits 1 if any differ.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned char *buf;
static size_t bs;
static atomic_int run;

static void *scribbler(void *arg)
{
	unsigned char v = 0;

	(void)arg;
	while (atomic_load(&run)) {
		memset(buf, 0xa0 ^ v++, bs);
		sched_yield();
	}
	return NULL;
}

static void *xalloc(size_t len)
{
	void *p;

	if (posix_memalign(&p, 4096, len)) {
		perror("posix_memalign");
		exit(2);
	}
	return p;
}

static void xpio(int write, int fd, void *p, size_t len, off_t off, const char *what)
{
	ssize_t n = write ? pwrite(fd, p, len, off) : pread(fd, p, len, off);

	if (n != (ssize_t)len) {
		fprintf(stderr, "%s at %lld: %s\n", what, (long long)off,
			n < 0 ? strerror(errno) : "short");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	unsigned long long first, nblk, i, differ = 0;
	unsigned char *a, *b;
	int vol, origin, write;
	pthread_t t;

	if (argc != 7 || (strcmp(argv[1], "read") && strcmp(argv[1], "write"))) {
		fprintf(stderr, "usage: scribble read|write VOL ORIGIN FIRST NBLK BS\n");
		return 2;
	}
	write = !strcmp(argv[1], "write");
	first = strtoull(argv[4], NULL, 0);
	nblk = strtoull(argv[5], NULL, 0);
	bs = strtoull(argv[6], NULL, 0);
	vol = open(argv[2], O_RDWR | O_DIRECT);
	origin = open(argv[3], O_RDONLY | O_DIRECT);
	if (vol < 0 || origin < 0 || !bs || bs % 4096) {
		perror("open");
		return 2;
	}
	buf = xalloc(bs);
	a = xalloc(bs);
	b = xalloc(bs);
	for (i = first; i < first + nblk; i++) {
		off_t off = (off_t)(i * bs);

		memset(buf, 0x5c, bs);
		atomic_store(&run, 1);
		if (pthread_create(&t, NULL, scribbler, NULL)) {
			perror("pthread_create");
			return 2;
		}
		xpio(write, vol, buf, bs, off, write ? "write" : "read");
		atomic_store(&run, 0);
		pthread_join(t, NULL);
		xpio(0, vol, a, bs, off, "read back");
		xpio(0, origin, b, bs, off, "read origin");
		if (memcmp(a, b, bs)) {
			if (differ < 5)
				printf("block %llu: the cache holds other data than the origin\n", i);
			differ++;
		}
	}
	printf("blocks %llu differ %llu\n", nblk, differ);
	return differ ? 1 : 0;
}
