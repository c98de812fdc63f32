// SPDX-License-Identifier: GPL-2.0
/*
 * hc-spillcraft DEVICE FIRST COUNT VALUE: write LogLRU spill entries on
 * DEVICE (kernel/hashcache/hc-format.h) as someone who can write the device
 * would: slots FIRST .. FIRST + COUNT - 1 each get bit 63 and VALUE (the
 * pass, log block and group run bits), with the check bits of that slot
 * (HC_LL_SB_CHECK: bits 48-62, CRC32C seeded with the format id over the
 * slot and VALUE) when the superblock has the flag. The spill region and the
 * format id come from the newest superblock whose CRC checks. O_DIRECT, one
 * read and one write of each 4 KiB block touched.
 * Exit 0 done, 1 an error, 2 usage, 3 no LogLRU index there.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc-disk.h"

#define POLICY_LOGLRU	6
#define SB_CHECK	(1u << 18)
#define CHECK_SHIFT	48
#define CHECK_BITS	15
#define BLOCK		4096
#define PER_BLOCK	(BLOCK / 8)

static uint64_t check_bits(uint64_t format_id, uint64_t slot, uint64_t value)
{
	uint8_t w[16];

	put(w, 8, slot);
	put(w + 8, 8, value);
	return crc32c((uint32_t)format_id, w, sizeof(w)) & ((1u << CHECK_BITS) - 1);
}

int main(int argc, char **argv)
{
	uint64_t format_id, spill, first, count, value, s;
	uint8_t *sb, *blk;
	uint32_t flags;
	int fd, have, copy;

	if (argc != 5) {
		fprintf(stderr, "usage: hc-spillcraft DEVICE FIRST COUNT VALUE\n");
		return 2;
	}
	first = strtoull(argv[2], NULL, 0);
	count = strtoull(argv[3], NULL, 0);
	value = strtoull(argv[4], NULL, 0);
	if (value >> CHECK_SHIFT) {
		fprintf(stderr, "hc-spillcraft: VALUE above bit 47\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_DIRECT);
	if (fd < 0 || posix_memalign((void **)&sb, 4096, SB_BYTES) ||
	    posix_memalign((void **)&blk, 4096, BLOCK)) {
		perror(argv[1]);
		return 1;
	}
	have = newest_sb(fd, sb, &copy);
	if (have < 0)
		return 1;
	if (!have || get(sb + 12, 4) != POLICY_LOGLRU) {
		fprintf(stderr, "hc-spillcraft: no LogLRU index on %s\n", argv[1]);
		return 3;
	}
	flags = (uint32_t)get(sb + 16, 4);
	format_id = get(sb + 72, 8);
	/* the log from byte 8192, the spill region after it */
	spill = 8192 + get(sb + 56, 8);
	for (s = first; s < first + count; ) {
		off_t at = (off_t)(spill + s / PER_BLOCK * BLOCK);

		if (pread(fd, blk, BLOCK, at) != BLOCK) {
			perror("read spill block");
			return 1;
		}
		do {
			uint64_t v = 1ULL << 63 | value;

			if (flags & SB_CHECK)
				v |= check_bits(format_id, s, value) << CHECK_SHIFT;
			put(blk + s % PER_BLOCK * 8, 8, v);
			s++;
		} while (s < first + count && s % PER_BLOCK);
		if (pwrite(fd, blk, BLOCK, at) != BLOCK) {
			perror("write spill block");
			return 1;
		}
	}
	if (fsync(fd)) {
		perror("fsync");
		return 1;
	}
	return 0;
}
