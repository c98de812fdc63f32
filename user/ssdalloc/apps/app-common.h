/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the SSDAlloc applications share: the allocation mode (malloc for the
 * swap baselines, mp for ssd_malloc, opp for ssd_oalloc), a seeded random
 * number generator, a clock, number parsing and the final key=value line with
 * the library's counters.
 */
#ifndef APP_COMMON_H
#define APP_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ssdalloc.h"

enum app_mode { MODE_MALLOC, MODE_MP, MODE_OPP };

extern const char *prog;

void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* an allocation of SSDAlloc failed: its message, then exit */
void die_ssd(const char *what) __attribute__((noreturn));

enum app_mode parse_mode(const char *s);
const char *mode_name(enum app_mode m);
/* decimal with an optional K/M/G suffix (powers of 1024); dies on bad input */
uint64_t parse_num(const char *opt, const char *s);

/*
 * One object of size bytes from the mode's allocator: malloc, or ssd_malloc
 * (page-granular), or ssd_oalloc(1, size) (an OPP object from the pool
 * allocator). Zeroed. Dies when the allocator fails.
 */
void *obj_alloc(enum app_mode m, size_t size);
void obj_free(enum app_mode m, void *p);

/*
 * MP nodes carved from big ssd_malloc'd arenas, as malloc carves its heap:
 * an object-per-page allocation would waste most of each page.
 */
struct arena {
	enum app_mode mode;
	size_t obj_size;	/* multiple of 16 */
	size_t chunk_bytes;	/* bytes asked of the allocator at a time */
	char *cur, *end;
	void *free_list;	/* freed objects, the link in their first word */
};
void arena_init(struct arena *a, enum app_mode m, size_t obj_size);
/* OPP and malloc: obj_alloc; MP: from the arena. Zeroed. */
void *arena_alloc(struct arena *a);
void arena_free(struct arena *a, void *p);

/* splitmix64: a fast generator whose streams differ with the seed */
static inline uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline uint64_t rnd(uint64_t *state)
{
	*state += 0x9e3779b97f4a7c15ull;
	return mix64(*state);
}

/* uniform in [0, n) (n > 0) */
static inline uint64_t rnd_below(uint64_t *state, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)rnd(state) * n) >> 64);
}

double now_seconds(void);

/*
 * The counters to report: a snapshot of ssd_stats() (zero in malloc mode),
 * and the difference of two snapshots (the gauges - ram_bytes, ot_bytes,
 * objects, uffd - keep the later value).
 */
void stats_snapshot(enum app_mode m, struct ssd_stats *st);
void stats_delta(struct ssd_stats *d, const struct ssd_stats *before, const struct ssd_stats *after);
/* " faults=... ssd_write_bytes=... ..." for mp/opp, nothing for malloc */
void print_stats(FILE *f, enum app_mode m, const struct ssd_stats *st);

#endif
