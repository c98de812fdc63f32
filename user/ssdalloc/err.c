// SPDX-License-Identifier: LGPL-2.1-or-later
/* SSDAlloc: the calling thread's last error (ssd_strerror) */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include "ssd-int.h"

static __thread char ssd_errbuf[256];

int ssd_err(int errnum, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ssd_errbuf, sizeof(ssd_errbuf), fmt, ap);
	va_end(ap);
	errno = errnum;
	return -1;
}

SSD_API const char *ssd_strerror(void)
{
	return ssd_errbuf[0] ? ssd_errbuf : "no error";
}
