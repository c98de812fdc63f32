// SPDX-License-Identifier: GPL-2.0
/*
 * kv-load: the load of make bench-ssdalloc's key-value workload, against a server
 * speaking memcached's text protocol (memcached, or memcached on SSDAlloc) over a
 * UNIX socket or TCP. It sets every one of K keys once (the load, pipelined), then makes M
 * requests to keys drawn uniformly, P % of them sets and the rest gets. Every value
 * is derived from its key and a version the driver keeps, so every get is checked:
 * a wrong value is a failure, a miss is counted (a cache may drop what it holds).
 * The server's "stats" before and after the requests give its own counters for
 * them (SSDAlloc's, when the server reports them as "STAT ssd_<name> <value>").
 *
 *   kv-load --unix PATH | --tcp ADDRESS:PORT --keys K --value BYTES --ops M
 *           [--set-pct P] [--seed S]
 *
 * One line of key=value results on stdout; exit 1 on a wrong value or a protocol
 * error, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int fd = -1;
static char rbuf[1 << 16];
static size_t rlen, rpos;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "kv-load: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rng;
static uint64_t below(uint64_t n)
{
	rng += 0x9e3779b97f4a7c15ull;
	return (uint64_t)(((unsigned __int128)mix64(rng) * n) >> 64);
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void send_all(const void *p, size_t n)
{
	const char *c = p;
	ssize_t w;

	while (n) {
		w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write to the server: %s", w < 0 ? strerror(errno) : "closed");
		c += w;
		n -= (size_t)w;
	}
}

static void fill_rbuf(void)
{
	ssize_t r;

	if (rpos < rlen)
		return;
	do
		r = read(fd, rbuf, sizeof(rbuf));
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		die("read from the server: %s", r < 0 ? strerror(errno) : "closed");
	rlen = (size_t)r;
	rpos = 0;
}

/* one line of the answer, without its \r\n, into line (at most len - 1 bytes) */
static void read_line(char *line, size_t len)
{
	size_t n = 0;
	char c;

	for (;;) {
		fill_rbuf();
		c = rbuf[rpos++];
		if (c == '\n')
			break;
		if (n + 1 >= len)
			die("an answer line longer than %zu bytes", len);
		line[n++] = c;
	}
	if (n && line[n - 1] == '\r')
		n--;
	line[n] = 0;
}

static void read_exact(char *p, size_t n)
{
	size_t k;

	while (n) {
		fill_rbuf();
		k = rlen - rpos < n ? rlen - rpos : n;
		memcpy(p, rbuf + rpos, k);
		rpos += k;
		p += k;
		n -= k;
	}
}

/* the value of key at version ver: every byte depends on both */
static void make_value(char *v, size_t n, uint64_t key, uint32_t ver)
{
	uint64_t w = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if ((i & 7) == 0)
			w = mix64(key * 0x100000001b3ull + ver + i);
		v[i] = (char)(w >> ((i & 7) * 8));
	}
}

/* a set of key at version ver, sent; its answer is read by set_done() */
static void set_send(uint64_t key, uint32_t ver, char *val, size_t vlen)
{
	char hdr[96];
	int n;

	make_value(val, vlen, key, ver);
	n = snprintf(hdr, sizeof(hdr), "set k%010" PRIu64 " 0 0 %zu\r\n", key, vlen);
	send_all(hdr, (size_t)n);
	memcpy(val + vlen, "\r\n", 2);
	send_all(val, vlen + 2);
}

static void set_done(uint64_t key)
{
	char line[256];

	read_line(line, sizeof(line));
	if (strcmp(line, "STORED"))
		die("set k%010" PRIu64 ": '%s'", key, line);
}

static void set(uint64_t key, uint32_t ver, char *val, size_t vlen)
{
	set_send(key, ver, val, vlen);
	set_done(key);
}

/* 1 hit and right, 0 miss, -1 a wrong value */
static int get(uint64_t key, uint32_t ver, char *val, char *want, size_t vlen)
{
	char hdr[64], line[256], name[32];
	unsigned int flags;
	size_t n;
	int r;

	r = snprintf(hdr, sizeof(hdr), "get k%010" PRIu64 "\r\n", key);
	send_all(hdr, (size_t)r);
	read_line(line, sizeof(line));
	if (!strcmp(line, "END"))
		return 0;
	if (sscanf(line, "VALUE %31s %u %zu", name, &flags, &n) != 3)
		die("get k%010" PRIu64 ": '%s'", key, line);
	if (n != vlen)
		die("get k%010" PRIu64 ": %zu bytes, not %zu", key, n, vlen);
	read_exact(val, n + 2);
	read_line(line, sizeof(line));
	if (strcmp(line, "END"))
		die("get k%010" PRIu64 ": '%s' after the value", key, line);
	make_value(want, vlen, key, ver);
	return memcmp(val, want, vlen) ? -1 : 1;
}

/* the server's "STAT ssd_* N" counters into names/vals; their number */
#define MAXSTATS 64
/* sets in flight during the load: at most 64 KiB of them, so no socket buffer fills */
#define LOAD_BYTES 65536
static int server_stats(char names[][40], uint64_t *vals)
{
	char line[256], name[40];
	unsigned long long v;
	int n = 0;

	send_all("stats\r\n", 7);
	for (;;) {
		read_line(line, sizeof(line));
		if (!strcmp(line, "END"))
			return n;
		if (sscanf(line, "STAT ssd_%39s %llu", name, &v) == 2 && n < MAXSTATS) {
			strcpy(names[n], name);
			vals[n++] = v;
		}
	}
}

static uint64_t num(const char *opt, const char *s)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-') {
		fprintf(stderr, "kv-load: %s: '%s' is not a number\n", opt, s);
		exit(2);
	}
	return v;
}

static void connect_to(const char *unix_path, const char *tcp)
{
	if (unix_path) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };

		if (strlen(unix_path) >= sizeof(a.sun_path))
			die("--unix: path too long");
		strcpy(a.sun_path, unix_path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
			die("connect to %s: %s", unix_path, strerror(errno));
	} else {
		struct sockaddr_in a = { .sin_family = AF_INET };
		char host[64], *port;

		/* numeric only: a static binary has no resolver to speak of */
		snprintf(host, sizeof(host), "%s", tcp);
		port = strrchr(host, ':');
		if (!port)
			die("--tcp: want ADDRESS:PORT");
		*port++ = 0;
		if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
			die("--tcp: '%s' is not an IPv4 address", host);
		a.sin_port = htons((uint16_t)num("--tcp", port));
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
			die("connect to %s: %s", tcp, strerror(errno));
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "unix", required_argument, NULL, 'u' },
		{ "tcp", required_argument, NULL, 't' },
		{ "keys", required_argument, NULL, 'k' },
		{ "value", required_argument, NULL, 'v' },
		{ "ops", required_argument, NULL, 'o' },
		{ "set-pct", required_argument, NULL, 'p' },
		{ "seed", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 }
	};
	const char *unix_path = NULL, *tcp = NULL;
	uint64_t keys = 10000, vlen = 1024, ops = 10000, setpct = 10, seed = 1;
	uint64_t i, batch, gets = 0, sets = 0, hits = 0, misses = 0, wrong = 0;
	static char names0[MAXSTATS][40], names1[MAXSTATS][40];
	uint64_t vals0[MAXSTATS], vals1[MAXSTATS];
	int n0, n1, c, j, k;
	double t0, t1, tl;
	uint32_t *ver;
	char *val, *want;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'u': unix_path = optarg; break;
		case 't': tcp = optarg; break;
		case 'k': keys = num("--keys", optarg); break;
		case 'v': vlen = num("--value", optarg); break;
		case 'o': ops = num("--ops", optarg); break;
		case 'p': setpct = num("--set-pct", optarg); break;
		case 'S': seed = num("--seed", optarg); break;
		default: exit(2);
		}
	}
	if (optind != argc || !unix_path == !tcp || !keys || !vlen || vlen > (1 << 20) ||
	    setpct > 100) {
		fprintf(stderr, "usage: kv-load --unix PATH | --tcp ADDRESS:PORT --keys K --value BYTES "
			"(1..1M) --ops M [--set-pct 0..100] [--seed S]\n");
		exit(2);
	}
	ver = calloc(keys, sizeof(*ver));
	val = malloc(vlen + 2);
	want = malloc(vlen);
	if (!ver || !val || !want)
		die("out of memory for %" PRIu64 " keys", keys);
	connect_to(unix_path, tcp);
	rng = seed;

	/*
	 * the load, not measured: a batch of sets in flight at a time (one round trip
	 * each would make it as slow as the requests, and the load is keys long)
	 */
	batch = LOAD_BYTES / (vlen + 64) + 1;
	tl = now();
	for (i = 0; i < keys; i += batch) {
		uint64_t j, end = i + batch < keys ? i + batch : keys;

		for (j = i; j < end; j++)
			set_send(j, 0, val, vlen);
		for (j = i; j < end; j++)
			set_done(j);
	}
	tl = now() - tl;

	n0 = server_stats(names0, vals0);
	t0 = now();
	for (i = 0; i < ops; i++) {
		uint64_t key = below(keys);

		if (below(100) < setpct) {
			set(key, ++ver[key], val, vlen);
			sets++;
			continue;
		}
		gets++;
		switch (get(key, ver[key], val, want, vlen)) {
		case 1: hits++; break;
		case 0: misses++; break;
		default:
			if (wrong++ < 5)
				fprintf(stderr, "kv-load: k%010" PRIu64 " does not hold version %u\n",
					key, ver[key]);
		}
	}
	t1 = now();
	n1 = server_stats(names1, vals1);

	printf("app=kv-load keys=%" PRIu64 " value=%" PRIu64 " set_pct=%" PRIu64 " seed=%" PRIu64
	       " ops=%" PRIu64 " gets=%" PRIu64 " sets=%" PRIu64 " hits=%" PRIu64 " misses=%" PRIu64
	       " wrong=%" PRIu64 " load_seconds=%.6f seconds=%.6f ops_per_s=%.0f"
	       " app_bytes_written=%" PRIu64, keys, vlen, setpct, seed, ops, gets, sets, hits,
	       misses, wrong, tl, t1 - t0, t1 > t0 ? ops / (t1 - t0) : 0.0, sets * vlen);
	/* the server's counters over the requests (gauges such as ot_bytes as they end) */
	for (j = 0; j < n1; j++) {
		uint64_t before = 0;
		bool gauge = !strcmp(names1[j], "ot_bytes") || !strcmp(names1[j], "objects") ||
			     !strcmp(names1[j], "ram_bytes") || !strcmp(names1[j], "uffd");

		for (k = 0; k < n0; k++)
			if (!strcmp(names0[k], names1[j]))
				before = vals0[k];
		printf(" %s=%" PRIu64, names1[j], gauge ? vals1[j] : vals1[j] - before);
	}
	printf("\n");
	return wrong ? 1 : 0;
}
