// SPDX-License-Identifier: GPL-2.0
/*
 * nl-fuzz: feed the dm_ssc generic netlink family well-formed and malformed
 * requests over a raw netlink socket and check every answer.
 *
 *   nl-fuzz VOLUME NRANDOM SEED
 *
 * VOLUME must be a live ssc volume. Prints one TAP-ish line per check
 * ("ok - ..." / "not ok - ...") and exits 1 if any failed. Checks:
 *  - a valid GET of VOLUME answers with its name, a mode and a state;
 *  - a GET dump lists VOLUME;
 *  - hand-made malformed requests get the documented error (EINVAL for a
 *    missing, unterminated, oversized, unknown or truncated attribute,
 *    a truncated or reserved-field header; EOPNOTSUPP for unknown commands
 *    and for DM_SSC_CMD_EVENT as a request; ENODEV for a name that is not a
 *    volume; EPERM without CAP_NET_ADMIN, for requests and for joining the
 *    events group);
 *  - NRANDOM random requests (random command, flags, attribute types,
 *    lengths and contents, from SEED) each get an answer, an error or a
 *    finished dump, within the socket's receive timeout.
 * Whether the kernel stayed healthy (no oops, no warning) is checked by the
 * test harness from the kernel log afterwards.
 *
 * Raw sockets on purpose: a library would refuse to build most of these.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <linux/netlink.h>
#include <linux/genetlink.h>

#include "../../include/uapi/linux/dm-ssc.h"

#define BUFSZ 65536

static int failures;
static uint64_t rng;

static uint64_t next(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void check(bool cond, const char *what)
{
	printf("%s - nl-fuzz: %s\n", cond ? "ok" : "not ok", what);
	if (!cond)
		failures++;
}

static int nl_open(void)
{
	struct timeval tv = { .tv_sec = 10 };
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int one = 1, fd;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("nl-fuzz: netlink socket");
		exit(2);
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* extended acks: the kernel says which attribute it refused */
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	return fd;
}

/* A request under construction */
struct req {
	char buf[BUFSZ];
	size_t len;
};

static void req_init(struct req *r, uint16_t type, uint16_t flags, uint8_t cmd,
		     uint8_t version)
{
	struct nlmsghdr *nh = (struct nlmsghdr *)r->buf;
	struct genlmsghdr *gh = NLMSG_DATA(nh);

	memset(r->buf, 0, NLMSG_HDRLEN + GENL_HDRLEN);
	nh->nlmsg_type = type;
	nh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	nh->nlmsg_seq = (uint32_t)next();
	gh->cmd = cmd;
	gh->version = version;
	r->len = NLMSG_HDRLEN + GENL_HDRLEN;
}

/* An attribute whose header says @nla_len, followed by @n bytes of @data */
static void req_attr_raw(struct req *r, uint16_t type, uint16_t nla_len,
			 const void *data, size_t n)
{
	struct nlattr *a = (struct nlattr *)(r->buf + r->len);

	if (r->len + NLA_HDRLEN + NLA_ALIGN(n) > BUFSZ)
		return;
	a->nla_type = type;
	a->nla_len = nla_len;
	memcpy(a + 1, data, n);
	memset((char *)(a + 1) + n, 0, NLA_ALIGN(n) - n);
	r->len += NLA_HDRLEN + NLA_ALIGN(n);
}

static void req_attr(struct req *r, uint16_t type, const void *data, size_t n)
{
	req_attr_raw(r, type, NLA_HDRLEN + n, data, n);
}

static void req_str(struct req *r, uint16_t type, const char *s)
{
	req_attr(r, type, s, strlen(s) + 1);
}

/*
 * Send, then read until the final answer. Returns 0 for a plain ack, the
 * negative errno of an error, or the number of replies of @cmd_want seen
 * before NLMSG_DONE or the ack. @each is called on each such reply.
 * Returns -1000 on a receive timeout: the kernel never answered.
 */
static int req_send(int fd, struct req *r, uint32_t len_override,
		    void (*each)(struct nlmsghdr *, void *), void *arg)
{
	struct nlmsghdr *nh = (struct nlmsghdr *)r->buf;
	struct sockaddr_nl to = { .nl_family = AF_NETLINK };
	static char rb[BUFSZ];
	int replies = 0;

	nh->nlmsg_len = len_override ? len_override : r->len;
	if (sendto(fd, r->buf, r->len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -errno;
	for (;;) {
		ssize_t n = recv(fd, rb, sizeof(rb), 0);
		struct nlmsghdr *h;

		if (n < 0)
			return errno == EAGAIN ? -1000 : -errno;
		for (h = (struct nlmsghdr *)rb; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != nh->nlmsg_seq)
				continue;	/* a late answer to an earlier request */
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error ? e->error : replies;
			}
			if (h->nlmsg_type == NLMSG_DONE)
				return replies;
			replies++;
			if (each)
				each(h, arg);
		}
	}
}

/* The attribute @type of a reply, or NULL */
static struct nlattr *reply_attr(struct nlmsghdr *h, uint16_t type)
{
	struct nlattr *a = (struct nlattr *)((char *)NLMSG_DATA(h) + GENL_HDRLEN);
	int rem = (int)h->nlmsg_len - NLMSG_HDRLEN - GENL_HDRLEN;

	while (rem >= NLA_HDRLEN && a->nla_len >= NLA_HDRLEN && a->nla_len <= rem) {
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
		rem -= NLA_ALIGN(a->nla_len);
		a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
	}
	return NULL;
}

static uint16_t ctrl_family;
static int ctrl_group = -1;

static void on_family(struct nlmsghdr *h, void *arg)
{
	struct nlattr *id = reply_attr(h, CTRL_ATTR_FAMILY_ID);
	struct nlattr *grps = reply_attr(h, CTRL_ATTR_MCAST_GROUPS), *g;
	int rem;

	(void)arg;
	if (id)
		ctrl_family = *(uint16_t *)(id + 1);
	if (!grps)
		return;
	/* nested: one nest per group with NAME and ID */
	g = grps + 1;
	rem = grps->nla_len - NLA_HDRLEN;
	while (rem >= NLA_HDRLEN && g->nla_len >= NLA_HDRLEN && g->nla_len <= rem) {
		struct nlattr *f = g + 1;
		int frem = g->nla_len - NLA_HDRLEN;
		const char *name = NULL;
		int gid = -1;

		while (frem >= NLA_HDRLEN && f->nla_len >= NLA_HDRLEN && f->nla_len <= frem) {
			if (f->nla_type == CTRL_ATTR_MCAST_GRP_NAME)
				name = (const char *)(f + 1);
			if (f->nla_type == CTRL_ATTR_MCAST_GRP_ID)
				gid = *(int *)(f + 1);
			frem -= NLA_ALIGN(f->nla_len);
			f = (struct nlattr *)((char *)f + NLA_ALIGN(f->nla_len));
		}
		if (name && !strcmp(name, DM_SSC_GENL_MCGRP_EVENTS))
			ctrl_group = gid;
		rem -= NLA_ALIGN(g->nla_len);
		g = (struct nlattr *)((char *)g + NLA_ALIGN(g->nla_len));
	}
}

struct found {
	const char *volume;
	int match;
	bool mode_ok, state_ok;
};

static void on_get(struct nlmsghdr *h, void *arg)
{
	struct found *f = arg;
	struct nlattr *v = reply_attr(h, DM_SSC_A_VOLUME);
	struct nlattr *m = reply_attr(h, DM_SSC_A_MODE);
	struct nlattr *s = reply_attr(h, DM_SSC_A_STATE);

	if (!v || strcmp((char *)(v + 1), f->volume))
		return;
	f->match++;
	f->mode_ok = m && *(uint32_t *)(m + 1) <= DM_SSC_MODE_PASSTHROUGH;
	f->state_ok = s && *(uint32_t *)(s + 1) <= DM_SSC_STATE_FAILED;
}

static int get(int fd, uint16_t fam, const char *vol, struct found *f)
{
	struct req r;

	req_init(&r, fam, 0, DM_SSC_CMD_GET, DM_SSC_GENL_VERSION);
	req_str(&r, DM_SSC_A_VOLUME, vol);
	return req_send(fd, &r, 0, on_get, f);
}

/* a request expected to fail with @want */
static void expect(int fd, struct req *r, uint32_t len_override, int want,
		   const char *what)
{
	char line[256];
	int got = req_send(fd, r, len_override, NULL, NULL);

	snprintf(line, sizeof(line), "%s: %s (got %d)", what,
		 want ? strerror(-want) : "accepted", got);
	check(got == want, line);
}

static void unprivileged(uint16_t fam, const char *vol)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
		struct req r;
		int fd, got;

		if (setgid(65534) || setuid(65534))
			_exit(3);
		fd = nl_open();
		req_init(&r, fam, 0, DM_SSC_CMD_GET, DM_SSC_GENL_VERSION);
		req_str(&r, DM_SSC_A_VOLUME, vol);
		got = req_send(fd, &r, 0, NULL, NULL);
		if (got != -EPERM)
			_exit(4);
		/* joining the events group needs CAP_NET_ADMIN too */
		if (ctrl_group > 0) {
			int g = ctrl_group;

			close(fd);
			fd = socket(AF_NETLINK, SOCK_RAW, NETLINK_GENERIC);
			bind(fd, (struct sockaddr *)&sa, sizeof(sa));
			if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &g, sizeof(g)) == 0 ||
			    errno != EPERM)
				_exit(5);
		}
		_exit(0);
	}
	waitpid(pid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "without CAP_NET_ADMIN: GET and joining the events group are refused with EPERM");
}

int main(int argc, char **argv)
{
	static const char longname[300] = { [0 ... 298] = 'x' };
	const char *vol;
	struct found f = { 0 };
	struct req r;
	long nrandom, i, answered = 0, errors = 0, timeouts = 0;
	uint16_t fam;
	int fd, got;
	char line[256];

	if (argc != 4) {
		fprintf(stderr, "usage: nl-fuzz VOLUME NRANDOM SEED\n");
		return 2;
	}
	vol = argv[1];
	nrandom = atol(argv[2]);
	rng = strtoull(argv[3], NULL, 0);
	fd = nl_open();

	/* resolve the family through the controller */
	req_init(&r, GENL_ID_CTRL, 0, CTRL_CMD_GETFAMILY, 1);
	req_str(&r, CTRL_ATTR_FAMILY_NAME, DM_SSC_GENL_NAME);
	got = req_send(fd, &r, 0, on_family, NULL);
	check(got == 1 && ctrl_family && ctrl_group > 0,
	      "the dm_ssc family and its events group are registered");
	if (!ctrl_family)
		return 1;
	fam = ctrl_family;

	/* well-formed */
	f.volume = vol;
	got = get(fd, fam, vol, &f);
	check(got == 1 && f.match == 1 && f.mode_ok && f.state_ok,
	      "GET of the volume answers with its name, mode and state");
	memset(&f, 0, sizeof(f));
	f.volume = vol;
	req_init(&r, fam, NLM_F_DUMP, DM_SSC_CMD_GET, DM_SSC_GENL_VERSION);
	got = req_send(fd, &r, 0, on_get, &f);
	snprintf(line, sizeof(line), "GET dump lists the volume once (%d replies)", got);
	check(got >= 1 && f.match == 1, line);

	/* malformed, each with the error it must get */
	req_init(&r, fam, 0, DM_SSC_CMD_GET, DM_SSC_GENL_VERSION);
	expect(fd, &r, 0, -EINVAL, "GET without a volume");
	req_init(&r, fam, 0, DM_SSC_CMD_GET, DM_SSC_GENL_VERSION);
	req_attr(&r, DM_SSC_A_VOLUME, "abc", 3);
	expect(fd, &r, 0, -EINVAL, "volume name without its NUL");
	req_init(&r, fam, 0, DM_SSC_CMD_GET, DM_SSC_GENL_VERSION);
	req_str(&r, DM_SSC_A_VOLUME, longname);
	expect(fd, &r, 0, -EINVAL, "volume name of 299 bytes");
	req_init(&r, fam, 0, DM_SSC_CMD_GET, DM_SSC_GENL_VERSION);
	req_str(&r, DM_SSC_A_VOLUME, "");
	expect(fd, &r, 0, -ENODEV, "empty volume name");
	req_init(&r, fam, 0, DM_SSC_CMD_GET, DM_SSC_GENL_VERSION);
	req_str(&r, DM_SSC_A_VOLUME, "no-such-volume");
	expect(fd, &r, 0, -ENODEV, "a name that is not an ssc volume");
	req_init(&r, fam, 0, DM_SSC_CMD_GET, DM_SSC_GENL_VERSION);
	req_str(&r, DM_SSC_A_VOLUME, vol);
	req_attr(&r, DM_SSC_A_MAX + 7, "junk", 4);
	expect(fd, &r, 0, -EINVAL, "unknown attribute type");
	req_init(&r, fam, 0, DM_SSC_CMD_GET, DM_SSC_GENL_VERSION);
	req_str(&r, DM_SSC_A_VOLUME, vol);
	req_attr(&r, DM_SSC_A_DEV, "\1", 1);
	expect(fd, &r, 0, -EINVAL, "attribute the request does not take (DEV, 1 byte)");
	req_init(&r, fam, 0, DM_SSC_CMD_GET, DM_SSC_GENL_VERSION);
	req_attr_raw(&r, DM_SSC_A_VOLUME, 2, "ab", 4);
	expect(fd, &r, 0, -EINVAL, "attribute length shorter than its header");
	req_init(&r, fam, 0, DM_SSC_CMD_GET, DM_SSC_GENL_VERSION);
	req_attr_raw(&r, DM_SSC_A_VOLUME, 200, "ab\0", 4);
	expect(fd, &r, 0, -EINVAL, "attribute length past the message");
	req_init(&r, fam, 0, DM_SSC_CMD_GET, DM_SSC_GENL_VERSION);
	((struct genlmsghdr *)NLMSG_DATA((struct nlmsghdr *)r.buf))->reserved = 1;
	req_str(&r, DM_SSC_A_VOLUME, vol);
	expect(fd, &r, 0, -EINVAL, "reserved header field set");
	req_init(&r, fam, 0, DM_SSC_CMD_GET, DM_SSC_GENL_VERSION);
	r.len = NLMSG_HDRLEN + 2;
	expect(fd, &r, 0, -EINVAL, "header cut short");
	req_init(&r, fam, 0, 77, DM_SSC_GENL_VERSION);
	expect(fd, &r, 0, -EOPNOTSUPP, "unknown command 77");
	req_init(&r, fam, 0, DM_SSC_CMD_UNSPEC, DM_SSC_GENL_VERSION);
	expect(fd, &r, 0, -EOPNOTSUPP, "command 0");
	req_init(&r, fam, 0, DM_SSC_CMD_EVENT, DM_SSC_GENL_VERSION);
	req_str(&r, DM_SSC_A_VOLUME, vol);
	expect(fd, &r, 0, -EOPNOTSUPP, "EVENT sent as a request");
	unprivileged(fam, vol);

	/* random */
	for (i = 0; i < nrandom; i++) {
		uint8_t cmd = (uint8_t)(next() % 4);
		uint16_t flags = next() % 4 == 0 ? NLM_F_DUMP : 0;
		unsigned int nattr = (unsigned int)(next() % 5), k;

		if (next() % 16 == 0)
			cmd = (uint8_t)next();
		req_init(&r, fam, flags, cmd, (uint8_t)(next() % 3));
		for (k = 0; k < nattr; k++) {
			uint16_t type = (uint16_t)(next() % (DM_SSC_A_MAX + 4));
			size_t n = (size_t)(next() % 40);
			char data[512];
			size_t j;

			if (next() % 8 == 0)
				n = (size_t)(next() % sizeof(data));
			for (j = 0; j < n; j++)
				data[j] = (char)(next() % 4 ? 'a' + next() % 26 : next());
			if (type == DM_SSC_A_VOLUME && next() % 2)
				snprintf(data, sizeof(data), "%s", vol), n = strlen(vol) + (next() % 2);
			if (next() % 8 == 0)
				type |= NLA_F_NESTED;
			if (next() % 10 == 0)
				req_attr_raw(&r, type, (uint16_t)next(), data, n);
			else
				req_attr(&r, type, data, n);
		}
		/* a length below the netlink header is dropped unanswered: stay above */
		got = req_send(fd, &r, next() % 20 == 0 ?
			       (uint32_t)(NLMSG_HDRLEN + next() % (r.len - NLMSG_HDRLEN + 1)) : 0,
			       NULL, NULL);
		if (got == -1000)
			timeouts++;
		else if (got < 0)
			errors++;
		else
			answered++;
	}
	snprintf(line, sizeof(line),
		 "%ld random requests: %ld answered, %ld refused, %ld unanswered",
		 nrandom, answered, errors, timeouts);
	check(timeouts == 0 && answered + errors == nrandom, line);

	/* and the family still works */
	memset(&f, 0, sizeof(f));
	f.volume = vol;
	got = get(fd, fam, vol, &f);
	check(got == 1 && f.match == 1, "GET still answers after the fuzzing");
	close(fd);
	return failures ? 1 : 0;
}
