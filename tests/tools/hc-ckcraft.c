// SPDX-License-Identifier: GPL-2.0
/*
 * hc-ckcraft DEVICE ACTION [ARGS]: read or rewrite the HashCache checkpoint
 * on DEVICE (kernel/hashcache/hc-format.h) as someone who can write the
 * device would, sealing it again with a valid CRC:
 *   show             the newest valid superblock's region and the header
 *   fill BYTE        every byte of the arrays set to BYTE (0-255)
 *   flip N SEED      N random bits of the arrays flipped
 *   xor OFF          the byte at OFF of the arrays inverted (OFF < 0: from
 *                    their end; -1 is the last byte)
 *   state I VALUE    the policy's state word I (0-7) set
 *   seq VALUE        the superblock seq it names
 *   wseq VALUE       the write counter
 *   kind K           marked periodic (written while attached, used only
 *                    after a crash) or a detach's (used only by a clean attach)
 *   crc              the CRC broken (and not sealed again)
 *   region BYTES     the newest superblock's region length set (sealed
 *                    again), as a module that sized it smaller left it
 * The region and the checkpoint's length come from the newest superblock
 * whose CRC checks and from the header. O_DIRECT.
 * Exit 0 done, 1 an error, 2 usage, 3 no checkpoint there (no region, bad
 * magic, a length past the region).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc-disk.h"

#define CK_MAGIC	0x4843636bu
#define CK_HDR		128	/* struct hc_ckpt_disk */

static void *aligned(size_t n)
{
	void *p;

	if (posix_memalign(&p, 4096, n ? n : 4096))
		return NULL;
	return p;
}

static int usage(void)
{
	fprintf(stderr, "usage: hc-ckcraft DEVICE show|fill BYTE|flip N SEED|xor OFF|state I VALUE|seq VALUE|wseq VALUE|kind periodic|detach|crc|region BYTES\n");
	return 2;
}

int main(int argc, char **argv)
{
	uint8_t *sb, *ck;
	uint64_t off = 0, bytes = 0, len, total;
	int fd, have, bi = 0;

	if (argc < 3)
		return usage();
	fd = open(argv[1], O_RDWR | O_DIRECT);
	sb = aligned(SB_BYTES);
	if (fd < 0 || !sb) {
		perror(argv[1]);
		return 1;
	}
	have = newest_sb(fd, sb, &bi);
	if (have < 0)
		return 1;
	if (have) {
		off = get(sb + 120, 8);
		bytes = get(sb + 128, 8);
	}
	if (!have || !bytes || bytes > (1ULL << 31)) {
		fprintf(stderr, "no checkpoint region\n");
		return 3;
	}
	if (!strcmp(argv[2], "region") && argc == 4) {
		put(sb + 128, 8, strtoull(argv[3], NULL, 0));
		put(sb + 4, 4, seal(~0U, sb, SB_BYTES, 4));
		if (pwrite(fd, sb, SB_BYTES, (off_t)bi * SB_BYTES) != SB_BYTES || fsync(fd)) {
			perror("write superblock");
			return 1;
		}
		return 0;
	}
	ck = aligned(bytes);
	if (!ck || pread(fd, ck, bytes, (off_t)off) != (ssize_t)bytes) {
		perror("read checkpoint");
		return 1;
	}
	len = get(ck + 24, 8);
	if (get(ck, 4) != CK_MAGIC || len > bytes - CK_HDR) {
		fprintf(stderr, "no checkpoint at %llu\n", (unsigned long long)off);
		return 3;
	}
	total = CK_HDR + len;
	if (!strcmp(argv[2], "show")) {
		printf("region %llu %llu sb_seq %llu superblock %llu len %llu policy %llu parts %llu "
		       "objects %llu wseq %llu crc %s state",
		       (unsigned long long)off, (unsigned long long)bytes,
		       (unsigned long long)get(ck + 16, 8), (unsigned long long)get(sb + 80, 8),
		       (unsigned long long)len, (unsigned long long)get(ck + 32, 4),
		       (unsigned long long)get(ck + 36, 4), (unsigned long long)get(ck + 40, 8),
		       (unsigned long long)get(ck + 48, 8),
		       get(ck + 4, 4) == seal(~0U, ck, total, 4) ? "good" : "bad");
		for (int i = 0; i < 8; i++)
			printf(" %llu", (unsigned long long)get(ck + 56 + 8 * i, 8));
		/* the layout word's bit 32: written while attached (Log), not by a detach */
		printf(" kind %s\n", get(ck + 120, 8) >> 32 & 1 ? "periodic" : "detach");
		return 0;
	}
	if (!strcmp(argv[2], "fill") && argc == 4) {
		memset(ck + CK_HDR, atoi(argv[3]), len);
	} else if (!strcmp(argv[2], "flip") && argc == 5) {
		long n = atol(argv[3]);

		srandom((unsigned int)atol(argv[4]));
		while (len && n-- > 0) {
			uint64_t bit = (uint64_t)random() * 65536 + (uint64_t)random() % 65536;

			bit %= len * 8;
			ck[CK_HDR + bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
	} else if (!strcmp(argv[2], "xor") && argc == 4) {
		long long o = atoll(argv[3]);

		if (o < 0)
			o += (long long)len;
		if (o < 0 || (uint64_t)o >= len)
			return usage();
		ck[CK_HDR + o] ^= 0xff;
	} else if (!strcmp(argv[2], "state") && argc == 5 && atoi(argv[3]) >= 0 &&
		   atoi(argv[3]) < 8) {
		put(ck + 56 + 8 * atoi(argv[3]), 8, strtoull(argv[4], NULL, 0));
	} else if (!strcmp(argv[2], "seq") && argc == 4) {
		put(ck + 16, 8, strtoull(argv[3], NULL, 0));
	} else if (!strcmp(argv[2], "wseq") && argc == 4) {
		put(ck + 48, 8, strtoull(argv[3], NULL, 0));
	} else if (!strcmp(argv[2], "kind") && argc == 4 &&
		   (!strcmp(argv[3], "periodic") || !strcmp(argv[3], "detach"))) {
		uint64_t layout = get(ck + 120, 8) & ~(1ULL << 32);

		put(ck + 120, 8, layout | (uint64_t)!strcmp(argv[3], "periodic") << 32);
	} else if (!strcmp(argv[2], "crc") && argc == 3) {
		put(ck + 4, 4, get(ck + 4, 4) ^ 1);
		goto write;
	} else {
		return usage();
	}
	put(ck + 4, 4, seal(~0U, ck, total, 4));
write:
	if (pwrite(fd, ck, bytes, (off_t)off) != (ssize_t)bytes || fsync(fd)) {
		perror("write checkpoint");
		return 1;
	}
	return 0;
}
