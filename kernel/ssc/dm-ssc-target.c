// SPDX-License-Identifier: GPL-2.0
/*
 * dm-ssc: a device-mapper target that uses a flash device as a solid-state
 * cache (FlashTier) for a slower origin device.
 *
 * This file holds the target glue: the table line, status, messages and the
 * bio path. The cache engine arrives in later changes; for now only the
 * passthrough mode is implemented, in which every bio goes to the origin
 * and the cache device is opened and validated but never touched.
 *
 * Documentation/ssc.rst in the project tree describes the table line.
 */

#include <linux/device-mapper.h>
#include <linux/module.h>
#include <linux/blkdev.h>
#include <linux/bio.h>
#include <linux/log2.h>
#include <linux/math64.h>

#include "ssc-smap.h"

#define DM_MSG_PREFIX "ssc"

/* Block size in 512-byte sectors: 4 KiB to 1 MiB, a power of two. */
#define SSC_MIN_BLOCK_SECTORS	8
#define SSC_MAX_BLOCK_SECTORS	2048

/* Erase-block-sized log segments: 128 KiB to 64 MiB, a power of two. */
#define SSC_MIN_SEGMENT_SECTORS	256
#define SSC_MAX_SEGMENT_SECTORS	(64 * 2048)
#define SSC_DEF_SEGMENT_SECTORS	(2 * 2048)

/*
 * The cache device must hold at least this many segments: the log needs one
 * segment being written, one being cleaned and room to make progress.
 */
#define SSC_MIN_SEGMENTS	4

/* ti->error strings too long to sit on their line */
#define SSC_ERR_ARGS \
	"Not enough arguments: want <cache_dev> <origin_dev> <block_size> <#feature_args> [<feature_arg>]*"
#define SSC_ERR_SEGMENT \
	"Invalid segment_size: want a power of two from 256 to 131072 sectors"

enum ssc_mode {
	SSC_MODE_WRITETHROUGH,
	SSC_MODE_WRITEBACK,
	SSC_MODE_WRITEAROUND,
	SSC_MODE_PASSTHROUGH,
};

static const char * const ssc_mode_names[] = {
	[SSC_MODE_WRITETHROUGH]	= "writethrough",
	[SSC_MODE_WRITEBACK]	= "writeback",
	[SSC_MODE_WRITEAROUND]	= "writearound",
	[SSC_MODE_PASSTHROUGH]	= "passthrough",
};

struct ssc_stats {
	atomic64_t reads;
	atomic64_t writes;
	atomic64_t discards;
	atomic64_t flushes;
};

struct ssc_c {
	struct dm_target *ti;
	struct dm_dev *cache_dev;
	struct dm_dev *origin_dev;

	sector_t block_sectors;
	sector_t segment_sectors;
	sector_t cache_sectors;
	u64 nr_segments;
	enum ssc_mode mode;

	struct ssc_stats stats;
};

static int ssc_parse_mode(const char *name, enum ssc_mode *mode)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(ssc_mode_names); i++) {
		if (!strcasecmp(name, ssc_mode_names[i])) {
			*mode = i;
			return 0;
		}
	}
	return -EINVAL;
}

static int ssc_parse_sectors(const char *arg, unsigned int min, unsigned int max,
			     sector_t *result)
{
	unsigned int val;
	char dummy;

	if (sscanf(arg, "%u%c", &val, &dummy) != 1)
		return -EINVAL;
	if (val < min || val > max || !is_power_of_2(val))
		return -EINVAL;
	*result = val;
	return 0;
}

/*
 * Feature arguments:
 *   writethrough | writeback | writearound | passthrough
 *   segment_size <sectors>
 */
static int ssc_parse_features(struct ssc_c *sc, struct dm_arg_set *as)
{
	static const struct dm_arg _args[] = {
		{0, 3, "Invalid number of feature arguments"},
	};
	struct dm_target *ti = sc->ti;
	bool have_mode = false, have_segment = false;
	unsigned int argc;
	const char *arg;
	int r;

	r = dm_read_arg_group(_args, as, &argc, &ti->error);
	if (r)
		return r;

	while (argc--) {
		arg = dm_shift_arg(as);

		if (!ssc_parse_mode(arg, &sc->mode)) {
			if (have_mode) {
				ti->error = "Conflicting mode feature arguments";
				return -EINVAL;
			}
			have_mode = true;
		} else if (!strcasecmp(arg, "segment_size")) {
			if (have_segment) {
				ti->error = "Duplicate segment_size feature argument";
				return -EINVAL;
			}
			if (!argc) {
				ti->error = "segment_size needs a value";
				return -EINVAL;
			}
			argc--;
			if (ssc_parse_sectors(dm_shift_arg(as),
					      SSC_MIN_SEGMENT_SECTORS,
					      SSC_MAX_SEGMENT_SECTORS,
					      &sc->segment_sectors)) {
				ti->error = SSC_ERR_SEGMENT;
				return -EINVAL;
			}
			have_segment = true;
		} else {
			DMERR("unrecognised feature argument '%s'", arg);
			ti->error = "Unrecognised feature argument";
			return -EINVAL;
		}
	}
	return 0;
}

static int ssc_check_geometry(struct ssc_c *sc)
{
	struct dm_target *ti = sc->ti;
	struct block_device *cache_bdev = sc->cache_dev->bdev;
	struct block_device *origin_bdev = sc->origin_dev->bdev;
	unsigned int lbs;

	lbs = max(bdev_logical_block_size(cache_bdev),
		  bdev_logical_block_size(origin_bdev));
	if ((sc->block_sectors << SECTOR_SHIFT) < lbs) {
		ti->error = "Block size is smaller than a device's logical block size";
		return -EINVAL;
	}
	if (sc->segment_sectors < sc->block_sectors) {
		ti->error = "segment_size is smaller than the block size";
		return -EINVAL;
	}
	if (ti->len > bdev_nr_sectors(origin_bdev)) {
		ti->error = "Origin device is smaller than the target";
		return -EINVAL;
	}
	sc->cache_sectors = bdev_nr_sectors(cache_bdev);
	sc->nr_segments = div64_u64(sc->cache_sectors, sc->segment_sectors);
	if (sc->nr_segments < SSC_MIN_SEGMENTS) {
		ti->error = "Cache device is too small: it must hold at least 4 segments";
		return -EINVAL;
	}
	return 0;
}

static void ssc_dtr(struct dm_target *ti)
{
	struct ssc_c *sc = ti->private;

	if (sc->cache_dev)
		dm_put_device(ti, sc->cache_dev);
	if (sc->origin_dev)
		dm_put_device(ti, sc->origin_dev);
	kfree(sc);
}

/*
 * ssc <cache_dev> <origin_dev> <block_size> <#feature_args> [<feature_arg>]*
 */
static int ssc_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct dm_arg_set as;
	struct ssc_c *sc;
	int r;

	if (argc < 4) {
		ti->error = SSC_ERR_ARGS;
		return -EINVAL;
	}

	sc = kzalloc(sizeof(*sc), GFP_KERNEL);
	if (!sc) {
		ti->error = "Cannot allocate ssc context";
		return -ENOMEM;
	}
	sc->ti = ti;
	sc->mode = SSC_MODE_WRITETHROUGH;
	sc->segment_sectors = SSC_DEF_SEGMENT_SECTORS;
	ti->private = sc;

	as.argc = argc;
	as.argv = argv;

	r = dm_get_device(ti, dm_shift_arg(&as), dm_table_get_mode(ti->table),
			  &sc->cache_dev);
	if (r) {
		ti->error = "Error opening cache device";
		goto bad;
	}
	r = dm_get_device(ti, dm_shift_arg(&as), dm_table_get_mode(ti->table),
			  &sc->origin_dev);
	if (r) {
		ti->error = "Error opening origin device";
		goto bad;
	}
	if (sc->cache_dev->bdev == sc->origin_dev->bdev) {
		ti->error = "Cache and origin must be different devices";
		r = -EINVAL;
		goto bad;
	}

	r = ssc_parse_sectors(dm_shift_arg(&as), SSC_MIN_BLOCK_SECTORS,
			      SSC_MAX_BLOCK_SECTORS, &sc->block_sectors);
	if (r) {
		ti->error = "Invalid block size: want a power of two from 8 to 2048 sectors";
		goto bad;
	}

	r = ssc_parse_features(sc, &as);
	if (r)
		goto bad;
	if (as.argc) {
		ti->error = "Too many arguments";
		r = -EINVAL;
		goto bad;
	}

	if (sc->mode != SSC_MODE_PASSTHROUGH) {
		ti->error = "Only passthrough mode is implemented so far";
		r = -EOPNOTSUPP;
		goto bad;
	}

	r = ssc_check_geometry(sc);
	if (r)
		goto bad;

	ti->num_flush_bios = 1;
	ti->num_discard_bios = 1;
	return 0;

bad:
	ssc_dtr(ti);
	return r;
}

static int ssc_map(struct dm_target *ti, struct bio *bio)
{
	struct ssc_c *sc = ti->private;

	if (bio->bi_opf & REQ_PREFLUSH)
		atomic64_inc(&sc->stats.flushes);
	if (bio_op(bio) == REQ_OP_DISCARD)
		atomic64_inc(&sc->stats.discards);
	else if (bio_data_dir(bio) == WRITE && bio_sectors(bio))
		atomic64_inc(&sc->stats.writes);
	else if (bio_sectors(bio))
		atomic64_inc(&sc->stats.reads);

	bio_set_dev(bio, sc->origin_dev->bdev);
	if (bio_sectors(bio))
		bio->bi_iter.bi_sector = dm_target_offset(ti, bio->bi_iter.bi_sector);
	return DM_MAPIO_REMAPPED;
}

static void ssc_status(struct dm_target *ti, status_type_t type,
		       unsigned int status_flags, char *result, unsigned int maxlen)
{
	struct ssc_c *sc = ti->private;
	unsigned int sz = 0;

	switch (type) {
	case STATUSTYPE_INFO:
		DMEMIT("%s %llu %llu %llu %llu %llu %llu",
		       ssc_mode_names[sc->mode],
		       (unsigned long long)sc->block_sectors,
		       (unsigned long long)sc->nr_segments,
		       (unsigned long long)atomic64_read(&sc->stats.reads),
		       (unsigned long long)atomic64_read(&sc->stats.writes),
		       (unsigned long long)atomic64_read(&sc->stats.discards),
		       (unsigned long long)atomic64_read(&sc->stats.flushes));
		break;
	case STATUSTYPE_TABLE:
		DMEMIT("%s %s %llu 3 %s segment_size %llu",
		       sc->cache_dev->name, sc->origin_dev->name,
		       (unsigned long long)sc->block_sectors,
		       ssc_mode_names[sc->mode],
		       (unsigned long long)sc->segment_sectors);
		break;
	default:
		break;
	}
}

static int ssc_message(struct dm_target *ti, unsigned int argc, char **argv,
		       char *result, unsigned int maxlen)
{
	struct ssc_c *sc = ti->private;

	if (argc == 1 && !strcasecmp(argv[0], "clear_stats")) {
		atomic64_set(&sc->stats.reads, 0);
		atomic64_set(&sc->stats.writes, 0);
		atomic64_set(&sc->stats.discards, 0);
		atomic64_set(&sc->stats.flushes, 0);
		return 0;
	}
	DMWARN("%s: unrecognised message \"%s\" (%u arguments)",
	       dm_table_device_name(ti->table), argc ? argv[0] : "", argc);
	return -EINVAL;
}

static int ssc_iterate_devices(struct dm_target *ti,
			       iterate_devices_callout_fn fn, void *data)
{
	struct ssc_c *sc = ti->private;
	int r;

	r = fn(ti, sc->cache_dev, 0, sc->cache_sectors, data);
	if (!r)
		r = fn(ti, sc->origin_dev, 0, ti->len, data);
	return r;
}

static struct target_type ssc_target = {
	.name		= "ssc",
	.version	= {0, 1, 0},
	.module		= THIS_MODULE,
	.ctr		= ssc_ctr,
	.dtr		= ssc_dtr,
	.map		= ssc_map,
	.status		= ssc_status,
	.message	= ssc_message,
	.iterate_devices = ssc_iterate_devices,
};

static int __init dm_ssc_init(void)
{
	int r;

	r = ssc_smap_global_init();
	if (r)
		return r;
	r = dm_register_target(&ssc_target);
	if (r) {
		ssc_smap_global_exit();
		return r;
	}
	return 0;
}

static void __exit dm_ssc_exit(void)
{
	dm_unregister_target(&ssc_target);
	ssc_smap_global_exit();
}

module_init(dm_ssc_init);
module_exit(dm_ssc_exit);

MODULE_DESCRIPTION(DM_NAME " solid-state cache (FlashTier SSC) target");
MODULE_LICENSE("GPL");
