// SPDX-License-Identifier: GPL-2.0
/*
 * What hcctl's commands share: the program name, --json, error messages and
 * the number parsers.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hc-common.h"

const char *prog = "hcctl";
bool opt_json;

void err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* a decimal, 0x hex or 0 octal number, no sign, nothing after it */
int parse_u64(const char *p, uint64_t *v)
{
	char *end;

	if (!*p || *p == '-' || *p == '+')
		return -1;
	errno = 0;
	*v = strtoull(p, &end, 0);
	return (errno || *end) ? -1 : 0;
}

/* bytes: a decimal number with an optional K, M or G (KiB, KB: the same) */
int parse_bytes(const char *p, uint64_t *v)
{
	char *end;
	uint64_t m = 1;

	if (!*p || *p == '-')
		return -1;
	errno = 0;
	*v = strtoull(p, &end, 10);
	if (errno || end == p)
		return -1;
	switch (*end) {
	case 'k': case 'K': m = 1ULL << 10; end++; break;
	case 'm': case 'M': m = 1ULL << 20; end++; break;
	case 'g': case 'G': m = 1ULL << 30; end++; break;
	case '\0': break;
	default: return -1;
	}
	/* 4K, 4KiB and 4KB all mean 4096 */
	if (m > 1 && (!strcmp(end, "iB") || !strcmp(end, "B")))
		end += strlen(end);
	if (*end || *v > UINT64_MAX / m)
		return -1;
	*v *= m;
	return 0;
}
