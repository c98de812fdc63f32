// SPDX-License-Identifier: GPL-2.0
/*
 * devcmp: compare two block devices (or files), reading both with O_DIRECT.
 *
 *   devcmp A B [MIB]
 *	compares the first MIB MiB of A and B, or all of both when MIB is not
 *	given (then a size difference is a difference). Exit 0: the same; 1: they
 *	differ, and the first differing byte is printed as cmp(1) prints it
 *	("A B differ: byte N", counting from 1; "EOF on A" when A ends first);
 *	2: an error (open, read), printed.
 *
 * What `dd iflag=direct | cmp` did, without the pipe's copies and cmp's byte
 * loop: under TCG the compare, not the devices, was what took the time.
 * O_DIRECT keeps the page cache out of it: what is read is what the device
 * holds now. A file system that refuses O_DIRECT (tmpfs before 6.6) is read
 * through the page cache instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (4u << 20)

static int open_direct(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECT);

	if (fd < 0 && errno == EINVAL)
		fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "devcmp: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return fd;
}

static uint64_t size_of(int fd, const char *path)
{
	struct stat st;
	uint64_t n;

	if (fstat(fd, &st)) {
		fprintf(stderr, "devcmp: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	if (!S_ISBLK(st.st_mode))
		return st.st_size;
	if (ioctl(fd, BLKGETSIZE64, &n)) {
		fprintf(stderr, "devcmp: %s: BLKGETSIZE64: %s\n", path, strerror(errno));
		exit(2);
	}
	return n;
}

/* read len bytes at off, short only at the end of the file */
static size_t read_full(int fd, const char *path, unsigned char *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = pread(fd, buf + got, len - got, off + got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "devcmp: %s: read at byte %llu: %s\n", path,
				(unsigned long long)(off + got), strerror(errno));
			exit(2);
		}
		if (r == 0)
			break;
		got += r;
	}
	return got;
}

int main(int argc, char **argv)
{
	unsigned char *a, *b;
	uint64_t sa, sb, len, off;
	char *end;
	int fa, fb;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: devcmp A B [MIB]\n");
		return 2;
	}
	len = 0;
	if (argc == 4) {
		errno = 0;
		len = strtoull(argv[3], &end, 10);
		if (errno || end == argv[3] || *end || len == 0 || len > (UINT64_MAX >> 20)) {
			fprintf(stderr, "devcmp: MIB: not a positive number: '%s'\n", argv[3]);
			return 2;
		}
		len <<= 20;
	}
	fa = open_direct(argv[1]);
	fb = open_direct(argv[2]);
	sa = size_of(fa, argv[1]);
	sb = size_of(fb, argv[2]);
	if (!len)
		len = sa > sb ? sa : sb;
	if (posix_memalign((void **)&a, 4096, CHUNK) || posix_memalign((void **)&b, 4096, CHUNK)) {
		fprintf(stderr, "devcmp: out of memory\n");
		return 2;
	}
	for (off = 0; off < len; off += CHUNK) {
		size_t want = len - off < CHUNK ? len - off : CHUNK;
		size_t na = read_full(fa, argv[1], a, want, off);
		size_t nb = read_full(fb, argv[2], b, want, off);
		size_t n = na < nb ? na : nb;

		if (memcmp(a, b, n)) {
			size_t i = 0;

			while (a[i] == b[i])
				i++;
			printf("%s %s differ: byte %llu\n", argv[1], argv[2],
			       (unsigned long long)(off + i + 1));
			return 1;
		}
		if (n < want) {
			/* the shorter one ended (both: the first named, as cmp says) */
			printf("devcmp: EOF on %s after byte %llu\n", nb < na ? argv[2] : argv[1],
			       (unsigned long long)(off + n));
			return 1;
		}
	}
	return 0;
}
