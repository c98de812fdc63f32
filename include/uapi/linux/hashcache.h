/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * HashCache: an object index (key -> location, length) kept on a block
 * device, after HashCache (Badam et al., NSDI 2009). The ABI of the
 * /dev/hashcache misc device.
 *
 * Every ioctl takes one fixed-size struct. The size is part of the ioctl
 * number, and every struct starts with the same header: the caller sets
 * hdr.size to sizeof() the struct and hdr.version to HC_ABI_VERSION, and
 * leaves every reserved field zero. The kernel refuses anything else with
 * EINVAL, a bad pointer with EFAULT, and an unknown index with ENOENT.
 *
 * Keys are byte strings of 1 to HC_KEY_MAX bytes; values 0 to the limit
 * the format gives (HC_IOC_GET_INFO: max_value).
 */
#ifndef _UAPI_LINUX_HASHCACHE_H
#define _UAPI_LINUX_HASHCACHE_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define HC_ABI_VERSION		1
#define HC_MISC_NAME		"hashcache"
#define HC_KEY_MAX		256

/* Index policies (Table 2.3 of the HashCache thesis), fixed at format time */
enum hc_policy {
	HC_POLICY_BASIC		= 1,	/* one object per bin, nothing in RAM */
	HC_POLICY_SET		= 2,	/* N-way sets on the device, nothing in RAM */
	HC_POLICY_SETMEM	= 3,	/* N-way sets, tags and LRU ranks in RAM */
	HC_POLICY_SETMEMLRU	= 4,	/* SetMem with a bounded cache of set headers */
	HC_POLICY_LOG		= 5,	/* a log on the device, tag + offset in RAM */
	HC_POLICY_LOGLRU	= 6,	/* Log with K of N ways' log offsets per set in RAM */
	HC_POLICY_BUFFERHASH	= 7,	/* BufferHash: RAM buffers, Bloom-filtered incarnations */
	HC_POLICY_CASCADE	= 8,	/* Cascade Mapping: CLOCK in RAM, 2 tiers on flash */
};

/* hc_format.flags */
#define HC_FORMAT_PREFETCH	(1U << 0)	/* LOG*: read a group's records together */
#define HC_FORMAT_LRU		(1U << 1)	/* BUFFERHASH: re-insert what a GET finds */
#define HC_FORMAT_PARTIAL	(1U << 2)	/* BUFFERHASH: an eviction keeps what is live */
#define HC_FORMAT_SPACE_GC	(1U << 3)	/* CASCADE: a reused slab's records all go */
/* (1U << 16) and up: the superblock's own (CASCADE's, LOGLRU's layout), never a FORMAT flag */

/* CASCADE's T3: each of its sets (active buckets) has a list of this many blocks, */
#define HC_CASCADE_LIST		8
/* which a compaction moves into this many wide buckets */
#define HC_CASCADE_WIDE		8

struct hc_hdr {
	__u32 size;		/* sizeof the whole struct */
	__u32 version;		/* HC_ABI_VERSION */
};

/*
 * HC_IOC_FORMAT: write a new, empty index to a block device. BUFFERHASH reads
 * the fields its own way: sets = super tables (0: as many as fit), ways =
 * incarnations a super table (2 to 64; 0 = 16), tag_bits = Bloom filter bits
 * per 256 bytes of an incarnation, log_bytes = room for all incarnations.
 * CASCADE too: buffer_bytes = a slab (0 = 1 MiB), log_bytes = the slabs,
 * ram_ways = partitions (1 to 32), ways = T2 blocks a partition (2 to 64),
 * sets = T3 buckets, resident_sets = T1 entries (0: each as fits the
 * device, T1 a tenth of the objects it holds); no tag_bits.
 */
struct hc_format {
	struct hc_hdr hdr;
	__s32 fd;		/* an open block device; it must not be attached */
	__u32 policy;		/* enum hc_policy */
	__u32 flags;		/* HC_FORMAT_* */
	__u32 block_size;	/* bytes: 4096 to 65536, a power of two; 0 = 8192 */
	__u32 ways;		/* objects per set, 1 to 64 (BASIC: 1); 0 = 8 */
	__u32 tag_bits;		/* hash bits kept per object in RAM, 1 to 16; 0 = 8 */
	__u32 resident_sets;	/* SETMEMLRU: sets kept in RAM; 0 = sets / 4 */
	__u32 ram_ways;		/* LOGLRU: offsets per set kept in RAM; 0 = ways / 2 */
	__u64 log_bytes;	/* LOG*: size of the circular log; 0 = what is left */
	__u64 sets;		/* 0 = as many as fit (BUFFERHASH: super tables) */
	__u64 seed;		/* hash seed; 0 = random */
	__u64 buffer_bytes;	/* BUFFERHASH: one buffer (= incarnation); 0 = 128 KiB */
	__u64 reserved[3];
};

/* HC_IOC_ATTACH: open an index; returns its id */
struct hc_attach {
	struct hc_hdr hdr;
	__s32 fd;		/* an open block device holding a formatted index */
	__u32 id;		/* out: the index's id, for every other call */
	__u32 flags;		/* out: HC_ATTACH_* */
	__u32 reserved0;
	__u64 read_bytes;	/* out: bytes the attach read from the device */
	__u64 reserved[3];
};

#define HC_ATTACH_RECOVERED	(1U << 0)	/* it was not detached cleanly */
#define HC_ATTACH_CHECKPOINT	(1U << 1)	/* the RAM part came from the checkpoint: no scan */
/* both: from a periodic checkpoint, with what was written after it replayed */

/* HC_IOC_FIND: the id of the index attached on a block device */
struct hc_find {
	struct hc_hdr hdr;
	__u32 dev_major;	/* the block device (stat's st_rdev) */
	__u32 dev_minor;
	__u32 id;		/* out */
	__u32 reserved0;
	__u64 reserved[2];
};

/* HC_IOC_DETACH, HC_IOC_FLUSH */
struct hc_id {
	struct hc_hdr hdr;
	__u32 id;
	__u32 reserved0;
	__u64 reserved[2];
};

/*
 * HC_IOC_PUT, HC_IOC_GET, HC_IOC_LOOKUP, HC_IOC_DELETE: one object.
 * PUT stores value (value_len bytes); GET copies up to value_len bytes of
 * it into value and sets value_len to its full length; LOOKUP does no data
 * I/O and returns where the object lies on the device (the thesis's
 * external interface: the caller reads it itself); DELETE removes it.
 */
struct hc_object {
	struct hc_hdr hdr;
	__u32 id;
	__u32 key_len;
	__u64 key;		/* pointer to the key */
	__u64 value;		/* pointer to the value (PUT, GET) */
	__u64 value_len;	/* in: length or buffer size; out: the length */
	__u64 dev_offset;	/* out (LOOKUP, GET): byte offset of the value on the device */
	__u32 group;		/* PUT: related objects share a group (prefetch) */
	__u32 found;		/* out: 1 if found */
	__u64 ios;		/* out: device I/Os this operation made (in: ignored) */
	__u64 reserved;
};

/* HC_IOC_GET_INFO: the geometry the index was formatted with */
struct hc_info {
	struct hc_hdr hdr;
	__u32 id;
	__u32 policy;
	__u32 flags;
	__u32 block_size;
	__u32 ways;
	__u32 tag_bits;
	__u32 resident_sets;
	__u32 ram_ways;
	__u64 sets;
	__u64 log_bytes;
	__u64 max_value;	/* largest value a PUT takes */
	__u64 dev_bytes;
	__u32 dev_major;	/* the block device it is attached on */
	__u32 dev_minor;
	__u64 buffer_bytes;	/* BUFFERHASH: one buffer (= incarnation) */
	__u64 ckpt_bytes;	/* the checkpoint region; 0: none, every attach scans */
	__u64 reserved1;
};

/* HC_IOC_STATS: counters since attach, and the RAM the index uses */
struct hc_stats {
	struct hc_hdr hdr;
	__u32 id;
	__u32 reserved0;
	__u64 objects;		/* stored now */
	__u64 lookups;		/* GET and LOOKUP */
	__u64 hits;
	__u64 misses;
	__u64 misses_in_ram;	/* misses settled without device I/O */
	__u64 false_positives;	/* tag matched, key did not */
	__u64 inserts;		/* PUT of a new key */
	/* PUT of a stored key; BUFFERHASH: a re-insert (LRU, partial); CASCADE: a copy by GC */
	__u64 overwrites;
	__u64 deletes;
	__u64 evictions;	/* objects replaced to make room */
	__u64 read_ios;		/* device reads */
	__u64 write_ios;	/* device writes */
	__u64 seeks;		/* I/Os not starting where the previous one ended */
	__u64 bytes_read;
	__u64 bytes_written;
	__u64 lookup_ios;	/* device I/Os made by GET/LOOKUP */
	__u64 insert_ios;	/* device I/Os made by PUT */
	__u64 miss_ios;		/* device I/Os made by lookups that missed */
	__u64 log_wraps;
	__u64 ram_bytes;	/* RAM of the index proper (not the device's) */
	__u64 ram_bits_per_object;	/* ram_bytes * 8 / objects, x1000 */
	__u64 slots;		/* objects the index can hold */
	__u64 set_loads;	/* SETMEMLRU: sets read in to RAM on demand */
	__u64 offset_fetches;	/* LOGLRU: log offsets read back from the device */
	__u64 spill_writes;	/* LOGLRU: spill blocks written (read and rewritten) */
	__u64 prefetch_reads;	/* PREFETCH: reads of a record and the rest of its group */
	__u64 prefetch_hits;	/* PREFETCH: records served from the last group read */
	__u64 torn_records;	/* slots or records a crash left torn, found at attach */
	__u64 bad_entries;	/* LOGLRU: spill entries failing their checks, ignored */
	__u64 checkpoints;	/* LOG*, BUFFERHASH, CASCADE: periodic checkpoints written */
	/* added later: a caller built before them uses HC_IOC_STATS_V0 (the same number) */
	__u64 tier_hits[3];	/* CASCADE: lookups settled in T1, T2, T3 (a hit or a tombstone) */
	__u64 tier_reads[3];	/* CASCADE: index blocks read in T2, T3 ([0]: none, T1 is RAM) */
	/* added later: a caller built before it uses HC_IOC_STATS_V1 */
	__u64 compactions;	/* CASCADE: T3 active lists moved into the wide table */
	__u64 t3_drops;		/* CASCADE: T3 buckets dropped: a list written over (a crash) */
};

#define HC_STATS_SIZE_V0	256	/* bytes of the struct before tier_hits */
#define HC_STATS_SIZE_V1	304	/* bytes of the struct before compactions */

#define HC_IOC_MAGIC		0xC4
#define HC_IOC_FORMAT		_IOW(HC_IOC_MAGIC, 1, struct hc_format)
#define HC_IOC_ATTACH		_IOWR(HC_IOC_MAGIC, 2, struct hc_attach)
#define HC_IOC_DETACH		_IOW(HC_IOC_MAGIC, 3, struct hc_id)
#define HC_IOC_PUT		_IOWR(HC_IOC_MAGIC, 4, struct hc_object)
#define HC_IOC_GET		_IOWR(HC_IOC_MAGIC, 5, struct hc_object)
#define HC_IOC_LOOKUP		_IOWR(HC_IOC_MAGIC, 6, struct hc_object)
#define HC_IOC_DELETE		_IOWR(HC_IOC_MAGIC, 7, struct hc_object)
#define HC_IOC_FLUSH		_IOW(HC_IOC_MAGIC, 8, struct hc_id)
#define HC_IOC_GET_INFO		_IOWR(HC_IOC_MAGIC, 9, struct hc_info)
#define HC_IOC_STATS		_IOWR(HC_IOC_MAGIC, 10, struct hc_stats)
#define HC_IOC_FIND		_IOWR(HC_IOC_MAGIC, 11, struct hc_find)
/* HC_IOC_STATS of a caller built before tier_hits: hdr.size HC_STATS_SIZE_V0 */
#define HC_IOC_STATS_V0		_IOC(_IOC_READ | _IOC_WRITE, HC_IOC_MAGIC, 10, HC_STATS_SIZE_V0)
/* ... and of one built before compactions: hdr.size HC_STATS_SIZE_V1 */
#define HC_IOC_STATS_V1		_IOC(_IOC_READ | _IOC_WRITE, HC_IOC_MAGIC, 10, HC_STATS_SIZE_V1)

#endif /* _UAPI_LINUX_HASHCACHE_H */
