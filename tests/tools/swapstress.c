// SPDX-License-Identifier: GPL-2.0
/*
 * swapstress: make a process swap hard in a known access pattern and verify
 * every page it reads back.
 *
 *   swapstress [-m MB] [-o seq|stride|random|hot] [-s STRIDE] [-n PASSES]
 *              [-w WRITE_PCT] [-z ZERO_PCT] [-H HOLE_PCT] [-S SEED] [-P]
 *              [-h HOT_PCT[:HOT_VISIT_PCT]] [-R READONLY_PCT]
 *
 * It maps MB of anonymous memory and fills each page with words derived from
 * (seed, page, generation); ZERO_PCT of the pages stay all zero. HOLE_PCT of
 * the pages are then dropped (MADV_DONTNEED), which frees their swap slots
 * and leaves holes in the swap area. Each pass visits the pages in the
 * chosen order (seq; stride: every STRIDE-th page, then the next offset;
 * random: a fresh permutation; hot: random pages, HOT_VISIT_PCT of them
 * from a hot set of the first HOT_PCT of the pages, set with -h
 * HOT_PCT[:HOT_VISIT_PCT], default 25:90) and checks each page in full;
 * READONLY_PCT of the pages (spread evenly: page % 100 < READONLY_PCT) are
 * never rewritten, so that some pages stay clean however often they are
 * read; WRITE_PCT of
 * the visits also rewrite the page with its next generation, so reclaim
 * keeps finding dirty pages. Run it under a memory limit smaller than MB.
 * With -P it pages the whole mapping out itself (MADV_PAGEOUT) after
 * filling it, with no limit needed, and reports how much of it went to swap
 * (swapped_kb, from VmSwap): pages for which no swap slot was found stay in
 * memory.
 *
 * Prints one line of key=value pairs (pages, visits, errors, majflt, minflt,
 * ms, and swapped_kb with -P) and exits 1 if any page read back wrong.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static uint64_t seed = 1;
static size_t psize;

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* kind of each page: 0 data, 1 zero, 2 hole (dropped, reads as zero) */
static unsigned char *kind;
static unsigned char *gen;

static void fill(uint64_t *p, size_t page)
{
	size_t i, n = psize / sizeof(*p);
	uint64_t base = mix(seed ^ (page << 8) ^ gen[page]);

	for (i = 0; i < n; i++)
		p[i] = base + i;
}

/* 0 if the page holds what it should */
static int verify(const uint64_t *p, size_t page)
{
	size_t i, n = psize / sizeof(*p);
	uint64_t base;

	if (kind[page]) {
		for (i = 0; i < n; i++)
			if (p[i])
				return -1;
		return 0;
	}
	base = mix(seed ^ (page << 8) ^ gen[page]);
	for (i = 0; i < n; i++)
		if (p[i] != base + i)
			return -1;
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* this process's VmSwap in KiB, or -1 */
static long vm_swap_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSwap: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void usage(void)
{
	fprintf(stderr, "usage: swapstress [-m MB] [-o seq|stride|random|hot] [-s STRIDE] [-n PASSES]\n"
		"                  [-w WRITE_PCT] [-z ZERO_PCT] [-H HOLE_PCT] [-S SEED] [-P]\n"
		"                  [-h HOT_PCT[:HOT_VISIT_PCT]] [-R READONLY_PCT]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long mb = 64, stride = 16, passes = 2, wpct = 50, zpct = 0, hpct = 0;
	unsigned long hot_pct = 25, hot_visit_pct = 90, ro_pct = 0;
	char *end;
	const char *order = "seq";
	size_t npages, i, j, k, visits = 0, errors = 0, *perm;
	struct rusage ru0, ru1;
	char *mem;
	double t0;
	long swapped_kb = -1;
	int c, pageout = 0;

	while ((c = getopt(argc, argv, "m:o:s:n:w:z:H:S:Ph:R:")) != -1) {
		switch (c) {
		case 'm': mb = strtoul(optarg, NULL, 0); break;
		case 'o': order = optarg; break;
		case 's': stride = strtoul(optarg, NULL, 0); break;
		case 'n': passes = strtoul(optarg, NULL, 0); break;
		case 'w': wpct = strtoul(optarg, NULL, 0); break;
		case 'z': zpct = strtoul(optarg, NULL, 0); break;
		case 'H': hpct = strtoul(optarg, NULL, 0); break;
		case 'S': seed = strtoull(optarg, NULL, 0); break;
		case 'P': pageout = 1; break;
		case 'R': ro_pct = strtoul(optarg, NULL, 0); break;
		case 'h':
			hot_pct = strtoul(optarg, &end, 0);
			if (*end == ':')
				hot_visit_pct = strtoul(end + 1, &end, 0);
			if (*end)
				usage();
			break;
		default: usage();
		}
	}
	if (!mb || !stride || wpct > 100 || zpct + hpct > 100 || !hot_pct || hot_pct > 100 ||
	    hot_visit_pct > 100 || ro_pct > 100 ||
	    (strcmp(order, "seq") && strcmp(order, "stride") && strcmp(order, "random") &&
	     strcmp(order, "hot")))
		usage();
	rng_state ^= mix(seed);
	psize = sysconf(_SC_PAGESIZE);
	npages = mb * 1024 * 1024 / psize;
	mem = mmap(NULL, npages * psize, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	kind = calloc(npages, 1);
	gen = calloc(npages, 1);
	perm = calloc(npages, sizeof(*perm));
	if (mem == MAP_FAILED || !kind || !gen || !perm) {
		perror("swapstress: memory");
		return 2;
	}
	/* no THP: keep to order-0 pages, which is what the swap policies see */
	madvise(mem, npages * psize, MADV_NOHUGEPAGE);

	getrusage(RUSAGE_SELF, &ru0);
	t0 = now_ms();
	for (i = 0; i < npages; i++) {
		if (rnd() % 100 < zpct) {
			kind[i] = 1;
			/* touch it, so it is a real zero page in memory */
			mem[i * psize] = 1;
			mem[i * psize] = 0;
		} else {
			fill((uint64_t *)(mem + i * psize), i);
		}
	}
	/* holes: drop runs of 4 pages, which frees their swap slots */
	for (i = 0; hpct && i + 4 <= npages; i += 4) {
		if (rnd() % 100 >= hpct)
			continue;
		if (madvise(mem + i * psize, 4 * psize, MADV_DONTNEED)) {
			perror("swapstress: madvise");
			return 2;
		}
		for (j = i; j < i + 4; j++)
			kind[j] = 2;
	}

	if (pageout) {
		if (madvise(mem, npages * psize, MADV_PAGEOUT)) {
			perror("swapstress: MADV_PAGEOUT");
			return 2;
		}
		swapped_kb = vm_swap_kb();
	}

	for (k = 0; k < passes; k++) {
		if (!strcmp(order, "seq")) {
			for (i = 0; i < npages; i++)
				perm[i] = i;
		} else if (!strcmp(order, "stride")) {
			size_t n = 0;

			for (j = 0; j < stride; j++)
				for (i = j; i < npages; i += stride)
					perm[n++] = i;
		} else if (!strcmp(order, "hot")) {
			size_t nhot = npages * hot_pct / 100;

			if (!nhot)
				nhot = 1;
			for (i = 0; i < npages; i++)
				perm[i] = (rnd() % 100 < hot_visit_pct || nhot == npages) ?
					  rnd() % nhot : nhot + rnd() % (npages - nhot);
		} else {
			for (i = 0; i < npages; i++)
				perm[i] = i;
			for (i = npages - 1; i > 0; i--) {
				size_t r = rnd() % (i + 1), t = perm[i];

				perm[i] = perm[r];
				perm[r] = t;
			}
		}
		for (i = 0; i < npages; i++) {
			size_t pg = perm[i];
			uint64_t *p = (uint64_t *)(mem + pg * psize);

			visits++;
			if (verify(p, pg)) {
				if (errors++ < 5)
					fprintf(stderr, "swapstress: page %zu (kind %d, gen %d) is wrong\n",
						pg, kind[pg], gen[pg]);
				continue;
			}
			if (kind[pg] == 0 && pg % 100 >= ro_pct && rnd() % 100 < wpct) {
				gen[pg]++;
				fill(p, pg);
			}
		}
	}
	getrusage(RUSAGE_SELF, &ru1);
	printf("pages=%zu visits=%zu errors=%zu majflt=%ld minflt=%ld ms=%.0f",
	       npages, visits, errors, ru1.ru_majflt - ru0.ru_majflt,
	       ru1.ru_minflt - ru0.ru_minflt, now_ms() - t0);
	if (pageout)
		printf(" swapped_kb=%ld", swapped_kb);
	printf("\n");
	return errors ? 1 : 0;
}
