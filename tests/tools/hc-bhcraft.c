// SPDX-License-Identifier: GPL-2.0
/*
 * hc-bhcraft DEVICE OFFSET FIELD VALUE: rewrite one field of the BufferHash
 * block at byte OFFSET of DEVICE (kernel/hashcache/hc-format.h) and seal it
 * again with a valid CRC, as someone who can write the device would: the
 * header's used, gen, slot or table (header CRC), or the first record's
 * key_len or value_len (its CRC, seeded with the block's format id and
 * generation). FIELD
 * "show" prints the header. O_DIRECT, one 4 KiB read and write.
 * Exit 0 done, 1 an error, 2 usage, 3 no valid block header there.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc-disk.h"

#define BLOCK_MAGIC	0x48434268u
#define HDR		40	/* struct hc_bh_block */
#define REC		24	/* struct hc_bh_rec */

int main(int argc, char **argv)
{
	uint8_t *b;
	uint64_t val;
	off_t off;
	int fd;

	if (argc != 5 && !(argc == 4 && !strcmp(argv[3], "show"))) {
		fprintf(stderr, "usage: hc-bhcraft DEVICE OFFSET used|gen|slot|table|klen|vlen VALUE\n"
			"       hc-bhcraft DEVICE OFFSET show\n");
		return 2;
	}
	off = strtoll(argv[2], NULL, 0);
	val = argc == 5 ? strtoull(argv[4], NULL, 0) : 0;
	fd = open(argv[1], O_RDWR | O_DIRECT);
	if (fd < 0 || posix_memalign((void **)&b, 4096, 4096) ||
	    pread(fd, b, 4096, off) != 4096) {
		perror(argv[1]);
		return 1;
	}
	if (get(b, 4) != BLOCK_MAGIC || get(b + 4, 4) != seal(~0U, b, HDR, 4)) {
		fprintf(stderr, "no valid block header at %lld\n", (long long)off);
		return 3;
	}
	if (!strcmp(argv[3], "show")) {
		printf("gen %llu table %llu slot %llu flags %llu used %llu\n",
		       (unsigned long long)get(b + 16, 8), (unsigned long long)get(b + 24, 4),
		       (unsigned long long)get(b + 28, 2), (unsigned long long)get(b + 30, 2),
		       (unsigned long long)get(b + 32, 4));
		return 0;
	}
	if (!strcmp(argv[3], "klen") || !strcmp(argv[3], "vlen")) {
		uint8_t *r = b + HDR, seed[16];
		uint64_t klen, vlen;

		if (!strcmp(argv[3], "klen"))
			put(r + 4, 2, val);
		else
			put(r + 8, 4, val);
		klen = get(r + 4, 2);
		vlen = get(r + 8, 4);
		/* the CRC over as much as the lengths claim, within the 4 KiB read */
		if (HDR + REC + klen + vlen > 4096) {
			klen = klen > 4096 - HDR - REC ? 4096 - HDR - REC : klen;
			vlen = 4096 - HDR - REC - klen;
		}
		/* seeded with the format id and the block's generation */
		memcpy(seed, b + 8, 16);
		put(r, 4, seal(crc32c(~0U, seed, 16), r, REC + klen + vlen, 0));
	} else {
		if (!strcmp(argv[3], "used"))
			put(b + 32, 4, val);
		else if (!strcmp(argv[3], "gen"))
			put(b + 16, 8, val);
		else if (!strcmp(argv[3], "slot"))
			put(b + 28, 2, val);
		else if (!strcmp(argv[3], "table"))
			put(b + 24, 4, val);
		else
			return 2;
	}
	put(b + 4, 4, seal(~0U, b, HDR, 4));
	if (pwrite(fd, b, 4096, off) != 4096 || fsync(fd)) {
		perror("write");
		return 1;
	}
	return 0;
}
