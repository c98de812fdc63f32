// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libssdalloc-nolib.a: the public API with every call failing (ENOSYS), so that
 * the applications link and run in malloc mode where the library does not build
 * (`make nolib`, used by tests/user/ssdalloc/test-apps.sh). Nothing here pretends
 * to be SSDAlloc: mp and opp fail at their first allocation.
 */
#include <errno.h>
#include <string.h>
#include "ssdalloc.h"

#define NOLIB __attribute__((visibility("default")))

static void *fail_ptr(void)
{
	errno = ENOSYS;
	return NULL;
}

static int fail_int(void)
{
	errno = ENOSYS;
	return -1;
}

NOLIB int ssd_init(const struct ssd_config *cfg) { (void)cfg; return fail_int(); }
NOLIB void ssd_shutdown(void) {}
NOLIB void *ssd_oalloc(int n, int size) { (void)n; (void)size; return fail_ptr(); }
NOLIB void *ssd_malloc(size_t size) { (void)size; return fail_ptr(); }
NOLIB void *ssd_calloc(size_t n, size_t size) { (void)n; (void)size; return fail_ptr(); }
NOLIB void *ssd_realloc(void *p, size_t size) { (void)p; (void)size; return fail_ptr(); }
NOLIB void ssd_free(void *p) { (void)p; }
NOLIB int ssd_free_checked(void *p) { (void)p; return fail_int(); }
NOLIB int ssd_checkpoint(const char *path) { (void)path; return fail_int(); }
NOLIB int ssd_restore(const char *path) { (void)path; return fail_int(); }
NOLIB int ssd_stats(struct ssd_stats *st) { memset(st, 0, sizeof(*st)); return fail_int(); }
NOLIB const char *ssd_strerror(void) { return "built without libssdalloc (nolib.c)"; }
