/* SPDX-License-Identifier: GPL-2.0 */
/*
 * HashCache on-device format. Little-endian; every structure is covered by
 * a CRC32C with its crc field zero.
 *
 *   byte 0       superblock copy 0 (4 KiB)
 *   byte 4096    superblock copy 1 (4 KiB); the valid copy with the higher
 *                seq wins
 *   table_offset the Disk Table: sets * ways slots of block_size bytes, set
 *                by set, a set's slots contiguous (one read fetches a set)
 *
 * A slot holds one object: a header, the key, then the value. A slot is in
 * use only if its magic, its format id (the superblock's, new at every
 * format: nothing needs zeroing) and its CRC (header, key and value) are
 * right; anything else - never written, deleted, torn by a crash, from an
 * earlier format - is empty.
 */
#ifndef HC_FORMAT_H
#define HC_FORMAT_H

#include <linux/types.h>

#define HC_SB_MAGIC		0x48436163	/* "HCac" */
#define HC_SLOT_MAGIC		0x48436f62	/* "HCob" */
#define HC_FORMAT_VERSION	1
#define HC_SB_BYTES		4096
#define HC_SB_COPIES		2
#define HC_TABLE_OFFSET		(HC_SB_COPIES * HC_SB_BYTES)

struct hc_sb_disk {
	__le32 magic;
	__le32 crc;
	__le32 version;
	__le32 policy;
	__le32 flags;
	__le32 block_size;
	__le32 ways;
	__le32 tag_bits;
	__le32 resident_sets;
	__le32 ram_ways;
	__le32 clean;		/* 1 when detached cleanly */
	__le32 pad;
	__le64 sets;
	__le64 log_bytes;
	__le64 seed;
	__le64 format_id;
	__le64 seq;		/* bumped at every superblock write */
	__le64 table_offset;
	__le64 log_offset;
	__le64 dev_bytes;	/* device size at format */
} __packed;

struct hc_slot_disk {
	__le32 magic;
	__le32 crc;		/* over header, key and value_len bytes of value */
	__le64 format_id;
	__le64 seq;		/* the index's write counter when written */
	__le64 value_len;
	__le32 group;
	__le16 key_len;
	__le16 flags;
	u8 key[256];		/* HC_KEY_MAX; the value follows */
} __packed;

#define HC_SLOT_HDR_BYTES	sizeof(struct hc_slot_disk)

#endif /* HC_FORMAT_H */
