// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * SSDAlloc killed with SIGKILL, then restored in a new process (the oracle's
 * workload and checks: test-oracle child / verify, found beside this program).
 *
 *   after:  the child takes checkpoints 1..N (N drawn from 1..3) and goes on
 *           allocating, writing and freeing; killed at a random moment after
 *           checkpoint N, the restore must give exactly checkpoint N's pool
 *           objects (the snapshot saved at N)
 *   during: after checkpoint N and more work, a thread of the child kills it a
 *           random time into checkpoint N + 1 (up to 1.5 times the length of
 *           checkpoint N); the restore gives N or N + 1, entirely one of them
 *           (never a mix), and N + 1 if the checkpoint had returned; the
 *           restoring process never crashes
 *
 * test-crash [--seed N] [--rounds R] [--dir DIR] [--oracle PATH] [oracle options]
 * runs R rounds of each; the seed is printed, and round i uses seed + i.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t seed;
static char oracle[4096];
static const char *dir;
static const char *pass[32];	/* options handed to test-oracle */
static int npass;

static void __attribute__((format(printf, 1, 2), noreturn)) fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "test-crash: FAIL (seed %" PRIu64 "): ", seed);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd(uint64_t *s, uint64_t lo, uint64_t hi)
{
	return lo + splitmix(s) % (hi - lo + 1);
}

/* test-oracle ARGS... with the common options; its report pipe on fd 3 when rfd >= 0 */
static pid_t spawn(uint64_t rseed, int rfd, const char *const *args)
{
	const char *argv[64];
	char s[32];
	int n = 0, i;
	pid_t pid;

	snprintf(s, sizeof(s), "%" PRIu64, rseed);
	argv[n++] = oracle;
	argv[n++] = "--seed";
	argv[n++] = s;
	argv[n++] = "--dir";
	argv[n++] = dir;
	for (i = 0; i < npass; i++)
		argv[n++] = pass[i];
	for (i = 0; args[i]; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (!pid) {
		if (rfd >= 0 && rfd != 3) {
			dup2(rfd, 3);
			close(rfd);
		}
		execv(oracle, (char *const *)argv);
		fprintf(stderr, "test-crash: exec %s: %s\n", oracle, strerror(errno));
		_exit(127);
	}
	return pid;
}

static const char *status_text(int st)
{
	static char buf[128];

	if (WIFSIGNALED(st))
		snprintf(buf, sizeof(buf), "killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(buf, sizeof(buf), "exit %d", WEXITSTATUS(st));
	return buf;
}

/* the restore: which of the snapshots (0 or 1) it gave */
static int verify(uint64_t rseed, int n1, int n2)
{
	char a[4200], b[4200];
	const char *args[8] = { "--snap", a, NULL, NULL, NULL, NULL };
	int st;
	pid_t pid;

	snprintf(a, sizeof(a), "%s/snap-%d", dir, n1);
	if (n2) {
		snprintf(b, sizeof(b), "%s/snap-%d", dir, n2);
		args[2] = "--snap";
		args[3] = b;
		args[4] = "verify";
	} else {
		args[2] = "verify";
	}
	pid = spawn(rseed, -1, args);
	if (waitpid(pid, &st, 0) < 0)
		fail("waitpid: %s", strerror(errno));
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 4 && n2)
		return 1;
	fail("the restoring process: %s (2: ssd_restore failed; 1: contents wrong)",
	     status_text(st));
}

static void clean_dir(void)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -f '%s'/snap-* '%s'/ckpt*", dir, dir);
	if (system(cmd))
		fail("cannot clean %s", dir);
}

/*
 * One round. The child's reports: "C k usec" after checkpoint k, "B k usec"
 * when its killer thread starts (checkpoint k is about to begin), "C k" when
 * that checkpoint returned after all.
 */
static void round_(int r, bool during, uint64_t *rng)
{
	uint64_t rseed = seed + (uint64_t)r * 2 + during;
	int n = (int)rnd(rng, 1, during ? 2 : 3), fds[2], st, last = 0, got;
	char nbuf[16], buf[4096], *line;
	size_t have = 0;
	bool done_next = false;
	uint64_t delay_ms = 0, kill_us = 0, ck_us = 0;
	const char *args[8] = { "--ckpts", nbuf, "--report-fd", "3", NULL, NULL, NULL };
	pid_t pid;
	time_t t0 = time(NULL);

	clean_dir();
	snprintf(nbuf, sizeof(nbuf), "%d", n);
	if (during) {
		args[4] = "--during";
		args[5] = "child";
	} else {
		args[4] = "child";
	}
	if (pipe(fds))
		fail("pipe: %s", strerror(errno));
	pid = spawn(rseed, fds[1], args);
	close(fds[1]);
	for (;;) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		ssize_t k;
		char *nl;

		if (time(NULL) - t0 > 300) {
			kill(pid, SIGKILL);
			fail("round %d: the child reported nothing for 300 s", r);
		}
		if (poll(&p, 1, 1000) <= 0)
			continue;
		k = read(fds[0], buf + have, sizeof(buf) - 1 - have);
		if (k <= 0)
			break;		/* the child is gone */
		have += k;
		buf[have] = 0;
		while ((nl = strchr(buf, '\n'))) {
			int a;
			uint64_t us;

			*nl = 0;
			line = buf;
			if (sscanf(line, "C %d %" SCNu64, &a, &us) == 2) {
				last = a;
				ck_us = us;
			} else if (sscanf(line, "B %d %" SCNu64, &a, &us) == 2) {
				kill_us = us;
			} else if (sscanf(line, "C %d", &a) == 1 && a == n + 1) {
				done_next = true;
			}
			memmove(buf, nl + 1, have - (nl + 1 - buf) + 1);
			have -= nl + 1 - buf;
			if (!during && last == n) {
				/* the kill: a random moment of the writes after checkpoint n */
				struct timespec ts;

				delay_ms = rnd(rng, 0, 400);
				ts.tv_sec = delay_ms / 1000;
				ts.tv_nsec = (long)(delay_ms % 1000) * 1000000;
				nanosleep(&ts, NULL);
				kill(pid, SIGKILL);
			}
		}
	}
	close(fds[0]);
	if (waitpid(pid, &st, 0) < 0)
		fail("waitpid: %s", strerror(errno));
	if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL)
		fail("round %d: the child was to die of SIGKILL: %s (checkpoint %d reported)", r,
		     status_text(st), last);
	if (last != n)
		fail("round %d: killed after checkpoint %d, before checkpoint %d", r, last, n);
	if (!during) {
		verify(rseed, n, 0);
		printf("test-crash: round %d: killed %" PRIu64 " ms after checkpoint %d: restored "
		       "exactly checkpoint %d\n", r, delay_ms, n, n);
		return;
	}
	got = verify(rseed, n, n + 1);
	if (done_next && !got)
		fail("round %d: checkpoint %d had returned, the restore gave %d", r, n + 1, n);
	printf("test-crash: round %d: killed %" PRIu64 " us into checkpoint %d (checkpoint %d took "
	       "%" PRIu64 " us; it %s): restored checkpoint %d, all of it\n", r, kill_us, n + 1, n,
	       ck_us, done_next ? "returned first" : "had not returned", got ? n + 1 : n);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", 1, NULL, 's' }, { "rounds", 1, NULL, 'n' }, { "dir", 1, NULL, 'd' },
		{ "oracle", 1, NULL, 'O' }, { "device", 1, NULL, 'p' },
		{ "dev-size", 1, NULL, 'p' }, { "ram", 1, NULL, 'p' },
		{ "page-buffer", 1, NULL, 'p' }, { "live", 1, NULL, 'p' }, { "ops", 1, NULL, 'p' },
		{ "no-uffd", 0, NULL, 'q' }, { "expect-uffd", 1, NULL, 'p' },
		{ "no-zero-check", 0, NULL, 'q' }, { NULL, 0, NULL, 0 }
	};
	const char *env = getenv("SSC_SEED");
	char tmpl[] = "/tmp/test-crash.XXXXXX", self[4096];
	static char names[16][32];
	int c, rounds = 2, r, idx, nnames = 0;
	bool own_dir = false;
	uint64_t rng;
	ssize_t n;

	seed = env && *env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)getpid();
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		fail("readlink: %s", strerror(errno));
	self[n] = 0;
	snprintf(oracle, sizeof(oracle), "%s/test-oracle", dirname(self));
	/* small by default: each round is a workload and a restore */
	pass[npass++] = "--ram";
	pass[npass++] = "2M";
	pass[npass++] = "--page-buffer";
	pass[npass++] = "512K";
	pass[npass++] = "--live";
	pass[npass++] = "6M";
	pass[npass++] = "--ops";
	pass[npass++] = "5000";
	pass[npass++] = "--dev-size";
	pass[npass++] = "32M";
	while ((c = getopt_long(argc, argv, "", lo, &idx)) != -1) {
		switch (c) {
		case 's': seed = strtoull(optarg, NULL, 10); break;
		case 'n': rounds = atoi(optarg); break;
		case 'd': dir = optarg; break;
		case 'O': snprintf(oracle, sizeof(oracle), "%s", optarg); break;
		case 'p':
			/* a later option of the same name wins in test-oracle's getopt */
			if (npass + 2 > (int)(sizeof(pass) / sizeof(pass[0])) || nnames == 16)
				fail("too many options");
			snprintf(names[nnames], sizeof(names[0]), "--%s", lo[idx].name);
			pass[npass++] = names[nnames++];
			pass[npass++] = optarg;
			break;
		case 'q':	/* a flag */
			if (npass + 1 > (int)(sizeof(pass) / sizeof(pass[0])) || nnames == 16)
				fail("too many options");
			snprintf(names[nnames], sizeof(names[0]), "--%s", lo[idx].name);
			pass[npass++] = names[nnames++];
			break;
		default:
			fprintf(stderr, "usage: test-crash [--seed N] [--rounds R] [--dir DIR] "
				"[--oracle PATH] [--device B] [--dev-size B] [--ram B] "
				"[--page-buffer B] [--live B] [--ops N] [--no-uffd] [--expect-uffd 0|1]\n"
				"       [--no-zero-check]\n");
			return 2;
		}
	}
	if (access(oracle, X_OK))
		fail("%s: %s (--oracle PATH)", oracle, strerror(errno));
	if (!dir) {
		dir = mkdtemp(tmpl);
		if (!dir)
			fail("mkdtemp: %s", strerror(errno));
		own_dir = true;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("test-crash: seed %" PRIu64 " (--seed %" PRIu64 " replays it), %d rounds each\n",
	       seed, seed, rounds);
	rng = seed;
	for (r = 0; r < rounds; r++) {
		round_(2 * r, false, &rng);
		round_(2 * r + 1, true, &rng);
	}
	if (own_dir) {
		char cmd[4200];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			fprintf(stderr, "test-crash: cannot remove %s\n", dir);
	}
	printf("test-crash: ok, seed %" PRIu64 "\n", seed);
	return 0;
}
