/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tools that rewrite HashCache's on-device structures share
 * (hc-bhcraft.c, hc-ckcraft.c): little-endian fields and the kernel's CRC32C
 * (kernel/hashcache/hc-core.c: hc_crc_from, no inversion before or after).
 */
#ifndef HC_DISK_H
#define HC_DISK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

static inline uint32_t crc32c(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78U & -(crc & 1));
	}
	return crc;
}

/* the @n-byte little-endian field at @p */
static inline uint64_t get(const uint8_t *p, int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static inline void put(uint8_t *p, int n, uint64_t v)
{
	for (int i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

/* CRC of @len bytes at @p with the 4-byte field at @at taken as zero, after @seed */
static inline uint32_t seal(uint32_t c, const uint8_t *p, size_t len, size_t at)
{
	static const uint8_t zero[4];

	c = crc32c(c, p, at);
	c = crc32c(c, zero, 4);
	return crc32c(c, p + at + 4, len - at - 4);
}

#define SB_MAGIC	0x48436163u
#define SB_BYTES	4096

/*
 * The newest of the two superblocks (struct hc_sb_disk) on @fd whose magic
 * and CRC check, into @sb (4 KiB, aligned for O_DIRECT); its copy (0 or 1)
 * in *@copy. 1 found, 0 none, -1 a read failed (said on stderr).
 */
static inline int newest_sb(int fd, uint8_t *sb, int *copy)
{
	uint64_t best = 0;
	int have = 0;

	for (int i = 0; i < 2; i++) {
		if (pread(fd, sb, SB_BYTES, (off_t)i * SB_BYTES) != SB_BYTES) {
			perror("read superblock");
			return -1;
		}
		if (get(sb, 4) != SB_MAGIC || get(sb + 4, 4) != seal(~0U, sb, SB_BYTES, 4))
			continue;
		if (!have || get(sb + 80, 8) > best) {
			best = get(sb + 80, 8);
			*copy = i;
			have = 1;
		}
	}
	/* the winner's bytes again (the loop may have read the other after it) */
	if (have && pread(fd, sb, SB_BYTES, (off_t)*copy * SB_BYTES) != SB_BYTES) {
		perror("read superblock");
		return -1;
	}
	return have;
}

#endif
