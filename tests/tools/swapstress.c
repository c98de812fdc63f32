// SPDX-License-Identifier: GPL-2.0
/*
 * swapstress: make a process swap hard in a known access pattern and verify
 * every page it reads back.
 *
 *   swapstress [-m MB] [-o seq|stride|random|hot] [-s STRIDE] [-n PASSES]
 *              [-w WRITE_PCT] [-z ZERO_PCT] [-H HOLE_PCT] [-S SEED] [-P]
 *              [-h HOT_PCT[:HOT_VISIT_PCT]] [-R READONLY_PCT] [-U UNIT]
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
 * With -U UNIT (pages; run as root on a swap device smaller than MB) it
 * probes how swap slots are handed out in units of UNIT aligned slots, as
 * flashvm's clustering does: it pages out all but the last sixteenth of the
 * mapping (A), which fills the swap device, then drops the A pages in every
 * fourth unit and in the upper half of the other units, by the swap slot
 * /proc/self/pagemap shows for each, then pages out the last sixteenth (B)
 * and counts the B pages whose unit still holds an A page (b_shared). It
 * runs on one CPU, so that no other CPU's cache of free slots is involved.
 *
 * Prints one line of key=value pairs (pages, visits, errors, majflt, minflt,
 * ms, swapped_kb with -P, a_swapped a_kept b_swapped b_shared with -U) and
 * exits 1 if any page read back wrong.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
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

/* the swap slot (offset) of @page of @mem, or -1 when it is not swapped out */
static long long swap_slot(int fd, const char *mem, size_t page)
{
	uint64_t e;
	off_t at = (off_t)((uintptr_t)mem / psize + page) * sizeof(e);

	if (pread(fd, &e, sizeof(e), at) != sizeof(e) || !(e & (1ULL << 62)))
		return -1;
	/* bits 0-4 swap type, 5-54 swap offset */
	return (long long)((e >> 5) & ((1ULL << 50) - 1));
}

/* -U: see the comment at the top. Returns nonzero on a setup failure. */
static int unit_probe(char *mem, size_t npages, unsigned long unit, size_t *counts)
{
	size_t nb = npages / 16, na = npages - nb, i, nunits;
	long long slot, *slots = calloc(npages, sizeof(*slots));
	unsigned char *held;
	cpu_set_t one;
	int fd;

	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
	fd = open("/proc/self/pagemap", O_RDONLY);
	if (!slots || fd < 0 || sched_setaffinity(0, sizeof(one), &one)) {
		perror("swapstress: -U setup");
		return 2;
	}
	if (madvise(mem, na * psize, MADV_PAGEOUT)) {
		perror("swapstress: MADV_PAGEOUT");
		return 2;
	}
	for (i = 0; i < na; i++) {
		slots[i] = swap_slot(fd, mem, i);
		if (slots[i] < 0)
			continue;
		counts[0]++;
		if ((slots[i] / unit) % 4 == 0 || slots[i] % unit >= unit / 2) {
			if (madvise(mem + i * psize, psize, MADV_DONTNEED)) {
				perror("swapstress: madvise");
				return 2;
			}
			kind[i] = 2;
			slots[i] = -1;
		} else {
			counts[1]++;
		}
	}
	if (madvise(mem + na * psize, nb * psize, MADV_PAGEOUT)) {
		perror("swapstress: MADV_PAGEOUT");
		return 2;
	}
	for (i = na; i < npages; i++)
		slots[i] = swap_slot(fd, mem, i);
	nunits = 1;
	for (i = 0; i < npages; i++)
		if (slots[i] >= 0 && (size_t)(slots[i] / unit) >= nunits)
			nunits = slots[i] / unit + 1;
	held = calloc(nunits, 1);
	if (!held)
		return 2;
	for (i = 0; i < na; i++)
		if (slots[i] >= 0)
			held[slots[i] / unit] = 1;
	for (i = na; i < npages; i++) {
		slot = slots[i];
		if (slot < 0)
			continue;
		counts[2]++;
		counts[3] += held[slot / unit];
	}
	free(held);
	free(slots);
	close(fd);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: swapstress [-m MB] [-o seq|stride|random|hot] [-s STRIDE] [-n PASSES]\n"
		"                  [-w WRITE_PCT] [-z ZERO_PCT] [-H HOLE_PCT] [-S SEED] [-P]\n"
		"                  [-h HOT_PCT[:HOT_VISIT_PCT]] [-R READONLY_PCT] [-U UNIT]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long mb = 64, stride = 16, passes = 2, wpct = 50, zpct = 0, hpct = 0;
	unsigned long hot_pct = 25, hot_visit_pct = 90, ro_pct = 0, unit = 0;
	size_t ucounts[4] = { 0 };
	char *end;
	const char *order = "seq";
	size_t npages, i, j, k, visits = 0, errors = 0, *perm;
	struct rusage ru0, ru1;
	char *mem;
	double t0;
	long swapped_kb = -1;
	int c, pageout = 0;

	while ((c = getopt(argc, argv, "m:o:s:n:w:z:H:S:Ph:R:U:")) != -1) {
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
		case 'U': unit = strtoul(optarg, NULL, 0); break;
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
	    hot_visit_pct > 100 || ro_pct > 100 || unit == 1 || (unit && (pageout || hpct)) ||
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

	if (unit && unit_probe(mem, npages, unit, ucounts))
		return 2;
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
	if (unit)
		printf(" a_swapped=%zu a_kept=%zu b_swapped=%zu b_shared=%zu",
		       ucounts[0], ucounts[1], ucounts[2], ucounts[3]);
	printf("\n");
	return errors ? 1 : 0;
}
