/* SPDX-License-Identifier: GPL-2.0 */
/*
 * On-disk format of a dm-ssc cache device.
 *
 * All integers are little endian. Every metadata object starts with a
 * CRC32C (seed ~0, over the object with the crc field taken as zero) and a
 * magic number that names the object type.
 *
 *   sector 0        superblock, 4 KiB
 *   ckpt[0], ckpt[1] two checkpoint regions, used alternately
 *   log             the operation log, in logical blocks of the cache device
 *   data            segments, aligned to the segment size; each segment is
 *                   slots_per_seg data blocks followed by its summary
 *
 * See Documentation/ssc.rst for the meaning of every field.
 */
#ifndef SSC_FORMAT_H
#define SSC_FORMAT_H

#include <linux/types.h>

#define SSC_SB_MAGIC		0x53534353U	/* "SSCS" */
#define SSC_CKPT_MAGIC		0x53534343U	/* "SSCC" */
#define SSC_CKPT_ENT_MAGIC	0x53534345U	/* "SSCE" */
#define SSC_LOG_MAGIC		0x5353434cU	/* "SSCL" */
#define SSC_SUM_MAGIC		0x53534d53U	/* "SSMS" */

#define SSC_FORMAT_VERSION	1

/* Size of every metadata block: superblock, checkpoint and log blocks. */
#define SSC_MBLOCK_SIZE		4096U
#define SSC_MBLOCK_SECTORS	(SSC_MBLOCK_SIZE >> SECTOR_SHIFT)

/* Superblock flags */
#define SSC_SB_CLEAN		0x1	/* shut down cleanly */

struct ssc_sb {
	__le32 crc;
	__le32 magic;
	__le32 version;
	__le32 flags;
	__le32 block_sectors;
	__le32 segment_sectors;
	__le32 slots_per_seg;
	__le32 summary_sectors;
	__le64 nr_segments;
	__le64 ckpt_start[2];	/* sector of each checkpoint region */
	__le64 ckpt_sectors;	/* size of one checkpoint region */
	__le64 log_start;
	__le64 log_blocks;	/* in log_block_bytes units */
	__le64 data_start;	/* sector of segment 0 */
	__le64 origin_blocks;	/* informational: origin size at format */
	__le64 format_time;	/* seconds since the epoch */
	__le64 shutdowns;	/* number of clean shutdowns */
	__le32 log_block_bytes;	/* the cache device's logical block size */
	__le32 reserved;
} __packed;

/*
 * Header of a checkpoint: the first block of a checkpoint region. The
 * forward map follows in entry blocks.
 */
struct ssc_ckpt_hdr {
	__le32 crc;
	__le32 magic;
	__le64 seq;		/* checkpoint sequence number, never 0 */
	__le64 nr_entries;
	__le64 log_seq;		/* sequence of the first log block after it */
	__le32 open_seg;	/* segment open when it was taken, or ~0 */
	__le32 nr_blocks;	/* entry blocks that follow */
	__le64 user_seq;	/* segment age clock */
} __packed;

struct ssc_map_ent {
	__le64 oblock;
	__le32 slot;
	__le32 flags;		/* SSC_ENT_DIRTY */
} __packed;

#define SSC_ENT_DIRTY		0x1

struct ssc_ckpt_blk {
	__le32 crc;
	__le32 magic;
	__le64 ckpt_seq;
	__le32 index;		/* block number inside the checkpoint */
	__le32 nr;		/* entries used in this block */
	__le64 reserved;
	struct ssc_map_ent ent[];
} __packed;

#define SSC_CKPT_PER_BLOCK \
	((SSC_MBLOCK_SIZE - sizeof(struct ssc_ckpt_blk)) / sizeof(struct ssc_map_ent))

/* Operation log record types */
enum {
	SSC_REC_INSERT = 1,	/* oblock -> slot, flags = dirty or clean */
	SSC_REC_REMOVE = 2,	/* oblock no longer cached */
	SSC_REC_CLEAN = 3,	/* oblock's data is on the origin now */
	SSC_REC_OPEN = 4,	/* segment (in slot) opened for writing */
};

struct ssc_log_rec {
	__le64 oblock;
	__le32 slot;
	__u8 type;
	__u8 flags;		/* SSC_ENT_DIRTY for INSERT */
	__le16 reserved;
} __packed;

struct ssc_log_blk {
	__le32 crc;
	__le32 magic;
	__le64 seq;		/* log block sequence number, +1 per block */
	__le64 ckpt_seq;	/* checkpoint this log continues */
	__le32 nr;		/* records used */
	__le32 reserved;
	struct ssc_log_rec rec[];
} __packed;

/* Log blocks are one logical block of the cache device: 512 B to 4 KiB. */
#define SSC_LOG_PER_BLOCK(bytes) \
	(((bytes) - sizeof(struct ssc_log_blk)) / sizeof(struct ssc_log_rec))

/*
 * Segment summary, the stand-in for the flash OOB area: written at the
 * end of a segment when its last slot has been handed out. oblock[i] is
 * the origin block stored in slot i, plus one (0 = never written).
 */
struct ssc_sum {
	__le32 crc;		/* over summary_sectors bytes */
	__le32 magic;
	__le64 seg_seq;		/* incarnation of the segment */
	__le32 seg;
	__le32 nr;
	__le64 reserved;
	__le64 oblock[];
} __packed;

#endif /* SSC_FORMAT_H */
