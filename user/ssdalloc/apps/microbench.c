// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ssd-microbench: random reads and writes of small objects, the thesis's
 * microbenchmark (seed 000 section 3.4.1). N objects of SIZE bytes: malloc and
 * mp one contiguous array (malloc / ssd_malloc), opp N ssd_oalloc(1, SIZE)
 * objects whose pointers sit in a plain malloc'd array. Every object carries
 * a stamp, its own index and a checksum, and its payload is derived from the
 * stamp; a plain-memory oracle keeps each object's last stamp, so every read
 * detects corrupt, misplaced and stale (lost-write) data alike.
 *
 * One line of key=value results on stdout; exit 1 on a verification failure.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "app-common.h"

const char *prog = "ssd-microbench";

struct obj_hdr {
	uint64_t stamp;
	uint32_t index;
	uint32_t csum;		/* over the stamp, the index and the payload */
};

static uint32_t fnv1a(const void *p, size_t len, uint32_t h)
{
	const unsigned char *c = p;

	while (len--)
		h = (h ^ *c++) * 16777619u;
	return h;
}

static void fill(void *obj, size_t size, uint32_t index, uint64_t stamp)
{
	struct obj_hdr *h = obj;
	unsigned char *pay = (unsigned char *)(h + 1);
	size_t n = size - sizeof(*h), i;
	uint64_t w = stamp;

	for (i = 0; i < n; i++) {
		if ((i & 7) == 0)
			w = mix64(stamp + i);
		pay[i] = (unsigned char)(w >> ((i & 7) * 8));
	}
	h->stamp = stamp;
	h->index = index;
	h->csum = fnv1a(pay, n, fnv1a(h, offsetof(struct obj_hdr, csum), 2166136261u));
}

/* 0 when the object holds exactly what the last write to it put there */
static int check(const void *obj, size_t size, uint32_t index, uint64_t stamp)
{
	const struct obj_hdr *h = obj;
	const unsigned char *pay = (const unsigned char *)(h + 1);
	size_t n = size - sizeof(*h), i;
	uint64_t w = 0;

	if (h->stamp != stamp || h->index != index ||
	    h->csum != fnv1a(pay, n, fnv1a(h, offsetof(struct obj_hdr, csum), 2166136261u)))
		return -1;
	for (i = 0; i < n; i++) {
		if ((i & 7) == 0)
			w = mix64(stamp + i);
		if (pay[i] != (unsigned char)(w >> ((i & 7) * 8)))
			return -1;
	}
	return 0;
}

static void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: %s [--mode malloc|mp|opp] [--objects N] [--size BYTES] [--ops M]\n"
		"       [--write-pct P] [--seed S] [--corrupt]\n"
		"N objects of BYTES each, all written once, then M random accesses, P%% of\n"
		"them writes; every read is verified, and every object at the end (untimed).\n"
		"--corrupt changes one byte of one object behind the oracle's back (the\n"
		"verification's own test). Sizes take K/M/G suffixes. SSDAlloc is\n"
		"configured by SSDALLOC_DEVICE, SSDALLOC_SIZE, SSDALLOC_RAM, ... (ssdalloc.h).\n",
		prog);
	exit(code);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "objects", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "ops", required_argument, NULL, 'o' },
		{ "write-pct", required_argument, NULL, 'w' },
		{ "seed", required_argument, NULL, 'S' },
		{ "corrupt", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	enum app_mode mode = MODE_MALLOC;
	uint64_t nobj = 100000, size = 128, ops = 1000000, wpct = 50, seed = 1;
	uint64_t rng, i, reads = 0, writes = 0, bad = 0, app_bytes = 0, init_bytes;
	uint64_t *stamps;
	char **ptrs = NULL, *array = NULL;
	struct ssd_stats st0, st1, st;
	struct rusage ru0, ru1;
	double t0, t1, tinit;
	bool corrupt = false;
	int c;

	while ((c = getopt_long(argc, argv, "m:n:s:o:w:S:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'm': mode = parse_mode(optarg); break;
		case 'n': nobj = parse_num("--objects", optarg); break;
		case 's': size = parse_num("--size", optarg); break;
		case 'o': ops = parse_num("--ops", optarg); break;
		case 'w': wpct = parse_num("--write-pct", optarg); break;
		case 'S': seed = parse_num("--seed", optarg); break;
		case 'C': corrupt = true; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc)
		usage(2);
	if (nobj == 0 || nobj > UINT32_MAX)
		die("--objects must be 1..%" PRIu32, UINT32_MAX);
	if (size < sizeof(struct obj_hdr) || size > (1u << 30))
		die("--size must be %zu bytes .. 1G", sizeof(struct obj_hdr));
	if (wpct > 100)
		die("--write-pct must be 0..100");
	if (mode != MODE_OPP && nobj > SIZE_MAX / size)
		die("--objects * --size overflows");

	stamps = malloc(nobj * sizeof(*stamps));
	if (!stamps)
		die("out of memory for the oracle (%" PRIu64 " objects)", nobj);
	if (mode == MODE_OPP) {
		ptrs = malloc(nobj * sizeof(*ptrs));
		if (!ptrs)
			die("out of memory for %" PRIu64 " object pointers", nobj);
	} else if (mode == MODE_MP) {
		array = ssd_malloc(nobj * size);
		if (!array)
			die_ssd("ssd_malloc");
	} else {
		array = malloc(nobj * size);
		if (!array)
			die("out of memory (%" PRIu64 " bytes)", nobj * size);
	}

	/* every object written once: reads from the start have something to check */
	rng = seed;
	tinit = now_seconds();
	for (i = 0; i < nobj; i++) {
		char *o;

		if (mode == MODE_OPP) {
			ptrs[i] = ssd_oalloc(1, (int)size);
			if (!ptrs[i])
				die_ssd("ssd_oalloc");
		}
		o = ptrs ? ptrs[i] : array + i * size;
		stamps[i] = rnd(&rng);
		fill(o, size, (uint32_t)i, stamps[i]);
	}
	init_bytes = nobj * size;
	tinit = now_seconds() - tinit;

	stats_snapshot(mode, &st0);
	/* this process's own major faults in the accesses: swap-ins of malloc mode */
	getrusage(RUSAGE_SELF, &ru0);
	t0 = now_seconds();
	for (i = 0; i < ops; i++) {
		uint64_t k = rnd_below(&rng, nobj);
		char *o = ptrs ? ptrs[k] : array + k * size;

		if (rnd_below(&rng, 100) < wpct) {
			stamps[k] = rnd(&rng);
			fill(o, size, (uint32_t)k, stamps[k]);
			writes++;
			app_bytes += size;
		} else {
			reads++;
			if (check(o, size, (uint32_t)k, stamps[k]) && bad++ < 5)
				fprintf(stderr, "%s: object %" PRIu64 " (%p) does not hold its last write\n",
					prog, k, (void *)o);
		}
	}
	t1 = now_seconds();
	getrusage(RUSAGE_SELF, &ru1);
	stats_snapshot(mode, &st1);
	stats_delta(&st, &st0, &st1);

	if (corrupt) {
		char *o = ptrs ? ptrs[nobj / 2] : array + nobj / 2 * size;

		o[size - 1] ^= 1;
	}
	/* the whole array once more: what the random reads missed */
	for (i = 0; i < nobj; i++) {
		char *o = ptrs ? ptrs[i] : array + i * size;

		if (check(o, size, (uint32_t)i, stamps[i]) && bad++ < 5)
			fprintf(stderr, "%s: object %" PRIu64 " (%p) does not hold its last write\n",
				prog, i, (void *)o);
	}

	printf("app=microbench mode=%s objects=%" PRIu64 " size=%" PRIu64 " write_pct=%" PRIu64
	       " seed=%" PRIu64 " ops=%" PRIu64 " reads=%" PRIu64 " writes=%" PRIu64
	       " seconds=%.6f ops_per_s=%.0f init_seconds=%.6f init_bytes_written=%" PRIu64
	       " app_bytes_written=%" PRIu64 " verify_failures=%" PRIu64 " majflt=%ld",
	       mode_name(mode), nobj, size, wpct, seed, ops, reads, writes, t1 - t0,
	       t1 > t0 ? (double)ops / (t1 - t0) : 0.0, tinit, init_bytes, app_bytes, bad,
	       ru1.ru_majflt - ru0.ru_majflt);
	print_stats(stdout, mode, &st);
	printf("\n");
	fflush(stdout);
	if (bad)
		fprintf(stderr, "%s: %" PRIu64 " reads found wrong data\n", prog, bad);
	/* ssd_shutdown unmaps what SSDAlloc handed out */
	if (mode == MODE_MALLOC)
		free(array);
	else
		ssd_shutdown();
	free(ptrs);
	free(stamps);
	return bad ? 1 : 0;
}
