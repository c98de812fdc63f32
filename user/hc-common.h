/* SPDX-License-Identifier: GPL-2.0 */
/* What hcctl's commands share: exit codes, --json, errors, number parsers. */
#ifndef HC_COMMON_H
#define HC_COMMON_H

#include <stdbool.h>
#include <stdint.h>

/* exit codes */
enum {
	EX_OK = 0,
	EX_FAIL = 1,		/* the kernel or a device refused */
	EX_USAGE = 2,		/* bad command line */
	EX_NOVOL = 3,		/* no such ssc volume, no index on the device */
	EX_TIMEOUT = 4,		/* monitor: --timeout before --count events */
	EX_NOKEY = 5,		/* index get/lookup/del: no such key */
	EX_INTR = 130,		/* interrupted (flush) */
};

extern const char *prog;
extern bool opt_json;

void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int parse_u64(const char *p, uint64_t *v);
int parse_bytes(const char *p, uint64_t *v);

#endif
