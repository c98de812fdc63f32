/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * dm-ssc generic netlink interface: volume queries and event notifications.
 *
 * Family DM_SSC_GENL_NAME, version DM_SSC_GENL_VERSION, one multicast group
 * DM_SSC_GENL_MCGRP_EVENTS. Documented in Documentation/ssc.rst ("Netlink
 * events"); hcctl monitor is the reference listener.
 *
 * Commands:
 *
 *   DM_SSC_CMD_GET    request; doit with DM_SSC_A_VOLUME answers for one
 *                     volume, dump answers for every live one. Needs
 *                     CAP_NET_ADMIN. Reply attributes: VOLUME, DEV, MODE,
 *                     STATE, ERROR, CACHED, DIRTY, NR_SLOTS.
 *   DM_SSC_CMD_EVENT  notification on the "events" group, never a request.
 *                     Always VOLUME, DEV, EVENT; the rest depends on EVENT
 *                     (see enum dm_ssc_event).
 *
 * Integers are host-endian netlink attributes; 64-bit ones are aligned
 * with DM_SSC_A_PAD. New attributes and events are only ever appended.
 */
#ifndef _UAPI_LINUX_DM_SSC_H
#define _UAPI_LINUX_DM_SSC_H

#define DM_SSC_GENL_NAME		"dm_ssc"
#define DM_SSC_GENL_VERSION		1
#define DM_SSC_GENL_MCGRP_EVENTS	"events"

/* Longest device-mapper name, with its NUL (DM_NAME_LEN) */
#define DM_SSC_VOLUME_LEN		128

enum dm_ssc_cmd {
	DM_SSC_CMD_UNSPEC,
	DM_SSC_CMD_GET,
	DM_SSC_CMD_EVENT,

	__DM_SSC_CMD_MAX,
};

#define DM_SSC_CMD_MAX (__DM_SSC_CMD_MAX - 1)

enum dm_ssc_attr {
	DM_SSC_A_UNSPEC,
	DM_SSC_A_PAD,
	DM_SSC_A_VOLUME,	/* string: the dm device name */
	DM_SSC_A_DEV,		/* u32: the dm device, major << 20 | minor */
	DM_SSC_A_EVENT,		/* u32: enum dm_ssc_event */
	DM_SSC_A_MODE,		/* u32: enum dm_ssc_mode */
	DM_SSC_A_OLD_MODE,	/* u32: enum dm_ssc_mode, before the change */
	DM_SSC_A_STATE,		/* u32: enum dm_ssc_state */
	DM_SSC_A_ERROR,		/* u32: the errno that failed the cache */
	DM_SSC_A_DURATION_US,	/* u64: microseconds */
	DM_SSC_A_BLOCKS,	/* u64: blocks written back */
	DM_SSC_A_COUNT,		/* u64: stalls since the last GC_STALL event */
	DM_SSC_A_MAX_WAIT_US,	/* u64: the longest of them */
	DM_SSC_A_CACHED,	/* u64: cached blocks */
	DM_SSC_A_DIRTY,		/* u64: dirty blocks */
	DM_SSC_A_REPLAYED,	/* u64: log records replayed by recovery */
	DM_SSC_A_NR_SLOTS,	/* u64: cache capacity in blocks */
	DM_SSC_A_BYPASSED,	/* u64: writes and fills a stall sent around the cache */

	__DM_SSC_A_MAX,
};

#define DM_SSC_A_MAX (__DM_SSC_A_MAX - 1)

enum dm_ssc_event {
	DM_SSC_EVENT_UNSPEC,
	/* a table reload changed the mode: MODE, OLD_MODE */
	DM_SSC_EVENT_MODE,
	/* the cache degraded (read_only, failed) or came back (ok): STATE, ERROR */
	DM_SSC_EVENT_STATE,
	/*
	 * Garbage collection fell behind: no segment was free for a while, so
	 * writes and fills went around the cache. Sent when a stall ends, at most
	 * once a second (stalls in between are summed): COUNT stalls, DURATION_US
	 * their total length, MAX_WAIT_US the longest, BYPASSED the writes and
	 * fills they sent around the cache.
	 */
	DM_SSC_EVENT_GC_STALL,
	/* a write-back of everything (flush) finished: BLOCKS, DURATION_US */
	DM_SSC_EVENT_WRITEBACK_DONE,
	/* crash recovery finished: DURATION_US, REPLAYED, CACHED, DIRTY */
	DM_SSC_EVENT_RECOVERY,

	__DM_SSC_EVENT_MAX,
};

#define DM_SSC_EVENT_MAX (__DM_SSC_EVENT_MAX - 1)

enum dm_ssc_mode {
	DM_SSC_MODE_WRITETHROUGH,
	DM_SSC_MODE_WRITEBACK,
	DM_SSC_MODE_WRITEAROUND,
	DM_SSC_MODE_PASSTHROUGH,
};

enum dm_ssc_state {
	DM_SSC_STATE_OK,
	DM_SSC_STATE_WRITEBACK_ALL,	/* writing everything back */
	DM_SSC_STATE_READ_ONLY,		/* write-back cache failed: dirty data kept */
	DM_SSC_STATE_FAILED,		/* cache failed: all I/O goes to the origin */
};

#endif /* _UAPI_LINUX_DM_SSC_H */
