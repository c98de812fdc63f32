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
 *   ckpt_offset  the checkpoint region, ckpt_bytes long, after everything
 *                else (version 2; 0 bytes: none, every attach scans)
 *
 * A slot holds one object: a header, the key, then the value. A slot is in
 * use only if its magic, its format id (the superblock's, new at every
 * format: nothing needs zeroing) and its CRC (header, key and value) are
 * right; anything else - never written, deleted, torn by a crash, from an
 * earlier format - is empty.
 */
#ifndef HC_FORMAT_H
#define HC_FORMAT_H

#include <linux/bits.h>
#include <linux/types.h>
#include <linux/hashcache.h>

#define HC_SB_MAGIC		0x48436163	/* "HCac" */
#define HC_SLOT_MAGIC		0x48436f62	/* "HCob" */
#define HC_FORMAT_VERSION	2	/* 2: the checkpoint region; 1 is still attached */
#define HC_FORMAT_VERSION_MIN	1
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
	__le64 buffer_bytes;	/* BufferHash: an incarnation (earlier formats: 0) */
	__le64 ckpt_offset;	/* the checkpoint region (version 1: 0) */
	__le64 ckpt_bytes;	/* its size; 0: no region */
} __packed;

/*
 * The checkpoint: the RAM part of the index as a clean detach left it, so
 * that the next attach reads it instead of the whole table or log. At
 * ckpt_offset: this header, the policy's arrays one after another, zeros to
 * the end of the last 4 KiB. It counts only if its CRC (header with crc
 * zero, then len bytes after the header) checks, it names the format, and
 * its sb_seq is the seq of the newest superblock, a clean one: an attach
 * writes a superblock of a higher seq before it changes anything, so a
 * checkpoint never outlives the state it describes. What it holds is still
 * checked as a scan checks what it reads (hc_ckpt_load).
 */
#define HC_CKPT_MAGIC		0x4843636b	/* "HCck" */
#define HC_CKPT_STATE		8

struct hc_ckpt_disk {
	__le32 magic;
	__le32 crc;
	__le64 format_id;
	__le64 sb_seq;		/* the clean superblock written after it */
	__le64 len;		/* bytes of arrays after the header */
	__le32 policy;
	__le32 parts;		/* arrays */
	__le64 objects;		/* what the stats count */
	__le64 wseq;		/* the write counter */
	__le64 state[HC_CKPT_STATE];	/* the policy's (ops->ckpt_save) */
	__le64 layout;		/* HC_CKPT_LAYOUT of the host that wrote it */
} __packed;

/*
 * The arrays are the RAM part as it is, bitmaps of the host's unsigned
 * longs: a checkpoint counts only on a host of the same word size and byte
 * order (any other scans).
 */
#define HC_CKPT_LAYOUT	((u64)BITS_PER_LONG << 8 | IS_ENABLED(CONFIG_CPU_BIG_ENDIAN))
/*
 * and, in the same word, which checkpoint it is: a periodic one (a policy
 * with ckpt_tail, while attached, naming that attach's superblock; LogLRU's
 * with its copy of the spill region) counts only after a crash, one
 * a detach wrote only for a clean attach; a module before periodic
 * checkpoints takes none of them
 */
#define HC_CKPT_PERIODIC	BIT_ULL(32)

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

/*
 * BufferHash: the incarnations region at table_offset, log_bytes long: for
 * each super table (sets of them), ways incarnations of buffer_bytes, each
 * blocks of block_size. A block: a header, then records packed, appended
 * only. A block counts for an incarnation only if its header checks and
 * names that incarnation's place and its generation (the newest of the
 * place's blocks); a record only if its CRC (seeded with the format id)
 * checks and it lies inside the block's used bytes.
 */
#define HC_BH_BLOCK_MAGIC	0x48434268	/* "HCBh" */
#define HC_BH_OVERFLOW		1		/* block flags: a record went elsewhere */
#define HC_BH_TOMB		1		/* record flags: a delete */

/* at the start of every block of an incarnation */
struct hc_bh_block {
	__le32 magic;
	__le32 crc;		/* of this header, crc zero */
	__le64 format_id;
	__le64 gen;		/* the incarnation's generation (never 0) */
	__le32 table;
	__le16 slot;		/* the incarnation's place in its super table's ring */
	__le16 flags;		/* HC_BH_OVERFLOW */
	__le32 used;		/* bytes of records after the header */
	__le32 pad;
} __packed;

/* a record: this, the key, the value, padded to 8 bytes */
struct hc_bh_rec {
	__le32 crc;		/* seeded with the format id: header (crc zero), key, value */
	__le16 key_len;
	__le16 flags;		/* HC_BH_TOMB */
	__le32 value_len;
	__le32 pad;
	__le64 seq;
} __packed;

/*
 * Cascade Mapping: three regions, each after the one before it.
 *
 *   table_offset  T2: for each of ram_ways partitions, a FIFO ring of ways
 *                 index blocks
 *   (after T2)    T3's active table: for each of sets buckets, a list of
 *                 HC_CA_LIST index blocks, in place, the oldest first
 *   (after it)    T3's wide table: a circular log of index blocks up to
 *                 log_offset, each the newest of one of sets * HC_CA_WIDE
 *                 wide buckets' chains (bucket b's range is wide buckets
 *                 b * HC_CA_WIDE on); only a compaction writes there
 *   log_offset    the data: log_bytes / buffer_bytes slabs in a ring, each
 *                 blocks as BufferHash's (struct hc_bh_block: table = the
 *                 slab's place, slot = the block in it, gen = the slab's
 *                 sequence number), objects packed as its records
 *
 * The superblock's flags have HC_CA_SB_WIDE: a Cascade index formatted
 * before the wide table (one log of chains) has not, and does not attach.
 *
 * An index block is a header and entries. It counts only if its CRC (the
 * whole block) checks, it names the format and the epoch (the superblock seq
 * of the attach that last rebuilt the index from the slabs: every block of
 * an earlier one is void), and it is at the place, with the sequence number,
 * RAM expects. An entry is the key's hash and
 * where its newest record was when it was made; it is stale, and never
 * read, once its slab has been reused (zero-I/O demapping).
 */
#define HC_CA_SB_WIDE		BIT(16)	/* superblock flags: the layout above */
/*
 * LogLRU's superblock flag: its periodic checkpoints carry a copy of the
 * spill region as it was (after the RAM part), and a crash recovers from
 * one. Set at format when the region is at most HC_LL_COPY_MAX; without it
 * (or formatted before) a crash scans, as before.
 */
#define HC_LL_SB_COPY		BIT(17)
#define HC_LL_COPY_MAX		(128ULL << 20)
/*
 * LogLRU's superblock flag: every spill entry carries 15 check bits
 * (HC_SPILL_CHECK: bits 48-62), the low bits of a CRC32C seeded with the
 * format id over the slot and the entry's pass, block and group run (two
 * little-endian u64s), so that an entry changed, or written to another
 * slot, is refused. Set by every format since; an index without it has
 * none and is read as before.
 */
#define HC_LL_SB_CHECK		BIT(18)
#define HC_SPILL_CHECK_SHIFT	48
#define HC_SPILL_CHECK_BITS	15
#define HC_CA_LIST		HC_CASCADE_LIST	/* blocks in an active list */
#define HC_CA_WIDE		HC_CASCADE_WIDE	/* wide buckets an active one's range */
#define HC_CA_IBLK_MAGIC	0x48436349	/* "HCcI" */
#define HC_CA_T3_OWNER		BIT(31)	/* owner: a T3 bucket's block */
#define HC_CA_WIDE_OWNER	BIT(30)	/* with it: a wide bucket's */
#define HC_CA_TOMB		BIT(31)	/* loc: a delete */
/* flags (wide blocks only): the last block a compaction wrote, its first, */
#define HC_CA_END		1
#define HC_CA_BEGIN		2
/* and on the first, its bucket's chains were dropped before it (hc_ca_drop) */
#define HC_CA_DROP		4
#define HC_CA_FLAGS		(HC_CA_END | HC_CA_BEGIN | HC_CA_DROP)

struct hc_ca_iblk {
	__le32 magic;
	__le32 crc;		/* of the whole block, crc zero */
	__le64 format_id;
	__le64 epoch;		/* the index's epoch when it was written */
	__le64 seq;		/* index blocks written in that epoch, this one too */
	/* T2: the partition; T3: HC_CA_T3_OWNER | the bucket (| HC_CA_WIDE_OWNER) */
	__le32 owner;
	__le32 count;		/* entries */
	__le32 prev;		/* wide: the place of the bucket's block before this one */
	__le32 flags;		/* wide: HC_CA_END, HC_CA_BEGIN, HC_CA_DROP; else 0 */
	__le64 prev_seq;	/* its seq; 0: none */
} __packed;

struct hc_ca_ent {
	__le64 hash;
	__le32 slab;		/* low 32 bits of the slab's sequence number */
	__le32 loc;		/* the record's byte in its slab | HC_CA_TOMB */
} __packed;

#endif /* HC_FORMAT_H */
