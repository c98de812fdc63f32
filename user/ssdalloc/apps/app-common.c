// SPDX-License-Identifier: LGPL-2.1-or-later
/* What the SSDAlloc applications share (app-common.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "app-common.h"

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void die_ssd(const char *what)
{
	die("%s: %s", what, ssd_strerror());
}

/* --mode: dies on anything but malloc, mp, opp (like parse_num) */
enum app_mode parse_mode(const char *s)
{
	if (!strcmp(s, "malloc"))
		return MODE_MALLOC;
	if (!strcmp(s, "mp"))
		return MODE_MP;
	if (!strcmp(s, "opp"))
		return MODE_OPP;
	die("--mode: '%s' is not malloc, mp or opp", s);
}

const char *mode_name(enum app_mode m)
{
	return m == MODE_MP ? "mp" : m == MODE_OPP ? "opp" : "malloc";
}

uint64_t parse_num(const char *opt, const char *s)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	errno = 0;
	if (!s || *s < '0' || *s > '9')
		die("%s: '%s' is not a number", opt, s ? s : "");
	v = strtoull(s, &end, 10);
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (errno || *end || (shift && v > (~0ull >> shift)))
		die("%s: '%s' is not a number (K/M/G suffixes allowed)", opt, s);
	return (uint64_t)v << shift;
}

void *obj_alloc(enum app_mode m, size_t size)
{
	void *p;

	switch (m) {
	case MODE_MP:
		p = ssd_calloc(1, size);
		if (!p)
			die_ssd("ssd_calloc");
		return p;
	case MODE_OPP:
		if (size > (size_t)INT32_MAX)
			die("object of %zu bytes is too large for ssd_oalloc", size);
		p = ssd_oalloc(1, (int)size);
		if (!p)
			die_ssd("ssd_oalloc");
		/* what a pool hands out again after a free must not be trusted to be zero */
		memset(p, 0, size);
		return p;
	default:
		p = calloc(1, size);
		if (!p)
			die("out of memory (%zu bytes)", size);
		return p;
	}
}

void obj_free(enum app_mode m, void *p)
{
	if (m == MODE_MALLOC)
		free(p);
	else if (ssd_free_checked(p))
		die_ssd("ssd_free");
}

void arena_init(struct arena *a, enum app_mode m, size_t obj_size)
{
	memset(a, 0, sizeof(*a));
	a->mode = m;
	a->obj_size = (obj_size + 15) & ~(size_t)15;
	a->chunk_bytes = 1u << 20;
	if (a->chunk_bytes < a->obj_size)
		a->chunk_bytes = a->obj_size;
}

void *arena_alloc(struct arena *a)
{
	void *p;

	if (a->mode != MODE_MP)
		return obj_alloc(a->mode, a->obj_size);
	if (a->free_list) {
		p = a->free_list;
		a->free_list = *(void **)p;
		memset(p, 0, a->obj_size);
		return p;
	}
	if ((size_t)(a->end - a->cur) < a->obj_size) {
		/* the rest of the old chunk is lost: at most one object's worth */
		a->cur = ssd_malloc(a->chunk_bytes);
		if (!a->cur)
			die_ssd("ssd_malloc");
		a->end = a->cur + a->chunk_bytes;
	}
	p = a->cur;
	a->cur += a->obj_size;
	/* fresh SSDAlloc memory reads as zeros; no need to touch it here */
	return p;
}

void arena_free(struct arena *a, void *p)
{
	if (a->mode != MODE_MP) {
		obj_free(a->mode, p);
		return;
	}
	*(void **)p = a->free_list;
	a->free_list = p;
}

double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void stats_snapshot(enum app_mode m, struct ssd_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (m != MODE_MALLOC && ssd_stats(st))
		die_ssd("ssd_stats");
}

void stats_delta(struct ssd_stats *d, const struct ssd_stats *b, const struct ssd_stats *a)
{
	*d = *a;
#define D(f) (d->f = a->f - b->f)
	D(faults_read); D(faults_write); D(materializations); D(dematerializations);
	D(ram_hits); D(ram_misses); D(ram_evictions_clean); D(ram_evictions_dirty);
	D(ssd_reads); D(ssd_read_bytes); D(ssd_writes); D(ssd_write_bytes);
	D(objects_written); D(object_bytes_written); D(gc_runs); D(gc_moves);
	D(gc_move_bytes); D(checkpoints);
#undef D
}

void print_stats(FILE *f, enum app_mode m, const struct ssd_stats *st)
{
	if (m == MODE_MALLOC)
		return;
#define P(name, v) fprintf(f, " " name "=%" PRIu64, (uint64_t)(v))
	P("faults", st->faults_read + st->faults_write);
	P("faults_read", st->faults_read);
	P("faults_write", st->faults_write);
	P("materializations", st->materializations);
	P("dematerializations", st->dematerializations);
	P("ram_hits", st->ram_hits);
	P("ram_misses", st->ram_misses);
	P("ram_evictions_clean", st->ram_evictions_clean);
	P("ram_evictions_dirty", st->ram_evictions_dirty);
	P("ram_bytes", st->ram_bytes);
	P("ssd_reads", st->ssd_reads);
	P("ssd_read_bytes", st->ssd_read_bytes);
	P("ssd_writes", st->ssd_writes);
	P("ssd_write_bytes", st->ssd_write_bytes);
	P("objects_written", st->objects_written);
	P("object_bytes_written", st->object_bytes_written);
	P("gc_runs", st->gc_runs);
	P("gc_moves", st->gc_moves);
	P("gc_move_bytes", st->gc_move_bytes);
	P("ot_bytes", st->ot_bytes);
	P("objects", st->objects);
	P("checkpoints", st->checkpoints);
	P("uffd", st->uffd);
#undef P
}
