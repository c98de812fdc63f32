// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ssd-hashcache: the HashCache index on SSDAlloc (thesis section 3.4.5). An
 * array of 128 B sets, 16 entries each; an entry is one 64-bit word: a 4 B
 * location of the cached object (0: empty), 28 hash bits of the key and 4 LRU
 * bits (the entry's recency rank in its set, 0 = most recent). Lookups and
 * inserts of random keys; an insert into a full set replaces its LRU entry.
 *
 * Allocation: malloc (the SSD-swap baseline) and mp (ssd_malloc) one contiguous
 * array of sets; opp one ssd_oalloc(1, 128) object per set, found through a
 * plain array of pointers, and also through a directory of 4 KiB OPP objects
 * under a small root object, so that a checkpoint holds everything: --checkpoint
 * FILE calls ssd_checkpoint(FILE) after the run and writes FILE.app (the root's
 * address, the parameters, the oracle's sets, a checksum of the whole index);
 * --restore FILE, in a later process, calls ssd_restore(FILE), which maps the
 * same addresses, finds the root, rebuilds the pointer array from the directory
 * and verifies the whole index against FILE.app before running more operations.
 *
 * Verification: a location is a function of the set and the hash bits, so every
 * hit is checked; every SAMPLE-th set also has a shadow in plain memory (an
 * independent model: a recency-ordered list) and after each operation on it the
 * hit or miss and the set's whole content (entries, locations, LRU ranks) must
 * match the shadow. At the end every shadowed set is compared once more.
 * One line of key=value results; exit 1 on a verification failure.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "app-common.h"

const char *prog = "ssd-hashcache";

#define WAYS		16
#define LOC_MASK	0xffffffffull
#define TAG_SHIFT	32
#define TAG_MASK	0x0fffffffull
#define RANK_SHIFT	60

struct hc_set {
	uint64_t e[WAYS];
};
_Static_assert(sizeof(struct hc_set) == 128, "a set is 128 bytes");

static inline uint32_t e_loc(uint64_t e) { return (uint32_t)(e & LOC_MASK); }
static inline uint32_t e_tag(uint64_t e) { return (uint32_t)((e >> TAG_SHIFT) & TAG_MASK); }
static inline unsigned int e_rank(uint64_t e) { return (unsigned int)(e >> RANK_SHIFT); }
static inline uint64_t e_make(uint32_t loc, uint32_t tag, unsigned int rank)
{
	return loc | ((uint64_t)tag << TAG_SHIFT) | ((uint64_t)rank << RANK_SHIFT);
}

/* the directory of OPP sets: root -> top (512 pointers) -> mid (512) -> leaf (512 sets) */
#define DIR_FAN		512u
#define DIR_BYTES	(DIR_FAN * sizeof(void *))
#define ROOT_MAGIC	0x48436469723031ull	/* "HCdir01" */
#define APP_MAGIC	0x4843617070303031ull	/* "HCapp001" */

struct hc_root {
	uint64_t magic;
	uint64_t nsets;
	void **top;
	uint64_t pad[5];
};

/* FILE.app: what run 2 needs before it can find anything */
struct app_file {
	uint64_t magic;
	uint64_t root;		/* the root object's address */
	uint64_t nsets, keys, seed, sample, nshadow;
	uint64_t index_sum;	/* fnv1a64 over every set, in order */
	uint64_t inserted;	/* inserts done before the checkpoint, all runs */
};

/* the oracle of one sampled set: its keys, most recent first */
struct shadow {
	uint32_t n;
	uint32_t tag[WAYS];
	uint32_t loc[WAYS];
	uint64_t key[WAYS];
};

static enum app_mode mode = MODE_MALLOC;
static uint64_t nsets = 1 << 16, nkeys, seed = 1, sample = 64, nshadow;
static struct hc_set *array;		/* malloc and mp */
static struct hc_set **ptrs;		/* opp */
static struct hc_root *root;		/* opp */
static struct shadow *shadows;
static uint64_t bad;

static inline struct hc_set *set_at(uint64_t i)
{
	return ptrs ? ptrs[i] : &array[i];
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	if (bad++ >= 5)
		return;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* a key's set and hash bits */
static void key_hash(uint64_t key, uint64_t *set, uint32_t *tag)
{
	uint64_t h = mix64(key * 0x9e3779b97f4a7c15ull + seed);

	*set = (uint64_t)(((unsigned __int128)h * nsets) >> 64);
	*tag = (uint32_t)(h & TAG_MASK);
}

/* where the cached object would be: a function of what the index knows, never 0 */
static uint32_t loc_of(uint64_t set, uint32_t tag)
{
	return (uint32_t)mix64((set << 28 | tag) ^ (seed << 1)) | 1;
}

/* entry i becomes the most recent: the entries more recent than it age by one */
static void touch(struct hc_set *s, int i, unsigned int rank)
{
	int j;

	for (j = 0; j < WAYS; j++)
		if (j != i && e_loc(s->e[j]) && e_rank(s->e[j]) < rank)
			s->e[j] += 1ull << RANK_SHIFT;
	s->e[i] &= ~(0xfull << RANK_SHIFT);
}

static uint32_t hc_lookup(struct hc_set *s, uint32_t tag)
{
	int i;

	for (i = 0; i < WAYS; i++) {
		if (e_loc(s->e[i]) && e_tag(s->e[i]) == tag) {
			touch(s, i, e_rank(s->e[i]));
			return e_loc(s->e[i]);
		}
	}
	return 0;
}

static void hc_insert(struct hc_set *s, uint32_t tag, uint32_t loc)
{
	int i, empty = -1, lru = -1;
	unsigned int used = 0;

	for (i = 0; i < WAYS; i++) {
		if (!e_loc(s->e[i])) {
			if (empty < 0)
				empty = i;
			continue;
		}
		used++;
		if (e_tag(s->e[i]) == tag) {
			s->e[i] = e_make(loc, tag, e_rank(s->e[i]));
			touch(s, i, e_rank(s->e[i]));
			return;
		}
		if (e_rank(s->e[i]) == WAYS - 1)
			lru = i;
	}
	if (empty >= 0) {
		/* a new entry starts as the least recent, then is touched */
		s->e[empty] = e_make(loc, tag, used);
		touch(s, empty, used);
	} else {
		s->e[lru] = e_make(loc, tag, WAYS - 1);
		touch(s, lru, WAYS - 1);
	}
}

/* the shadow's move-to-front list */
static int shadow_find(struct shadow *sh, uint32_t tag)
{
	uint32_t i;

	for (i = 0; i < sh->n; i++)
		if (sh->tag[i] == tag)
			return (int)i;
	return -1;
}

static void shadow_front(struct shadow *sh, int i, uint64_t key, uint32_t tag, uint32_t loc)
{
	memmove(sh->tag + 1, sh->tag, i * sizeof(sh->tag[0]));
	memmove(sh->loc + 1, sh->loc, i * sizeof(sh->loc[0]));
	memmove(sh->key + 1, sh->key, i * sizeof(sh->key[0]));
	sh->tag[0] = tag;
	sh->loc[0] = loc;
	sh->key[0] = key;
}

static void shadow_insert(struct shadow *sh, uint64_t key, uint32_t tag, uint32_t loc)
{
	int i = shadow_find(sh, tag);

	if (i < 0) {
		if (sh->n < WAYS)
			sh->n++;
		i = (int)sh->n - 1;	/* the new one, or the least recent dropped */
	}
	shadow_front(sh, i, key, tag, loc);
}

/* the set holds exactly the shadow's entries, ranked in the shadow's order */
static int compare_set(uint64_t si, const struct hc_set *s, const struct shadow *sh)
{
	unsigned int used = 0, i;
	int j;

	for (j = 0; j < WAYS; j++)
		used += !!e_loc(s->e[j]);
	if (used != sh->n) {
		fail("set %" PRIu64 ": %u entries, the oracle has %u", si, used, sh->n);
		return -1;
	}
	for (i = 0; i < sh->n; i++) {
		for (j = 0; j < WAYS; j++)
			if (e_loc(s->e[j]) && e_tag(s->e[j]) == sh->tag[i])
				break;
		if (j == WAYS || e_loc(s->e[j]) != sh->loc[i] || e_rank(s->e[j]) != i) {
			fail("set %" PRIu64 ": key %" PRIu64 " (recency %u) is %s", si, sh->key[i],
			     i, j == WAYS ? "missing" : "there with a wrong location or LRU rank");
			return -1;
		}
	}
	return 0;
}

static uint64_t fnv1a64(const void *p, size_t len, uint64_t h)
{
	const unsigned char *c = p;

	while (len--)
		h = (h ^ *c++) * 0x100000001b3ull;
	return h;
}

static uint64_t index_sum(void)
{
	uint64_t h = 0xcbf29ce484222325ull, i;

	for (i = 0; i < nsets; i++)
		h = fnv1a64(set_at(i), sizeof(struct hc_set), h);
	return h;
}

/* OPP: every set an object, recorded in the directory as well */
static void alloc_opp(void)
{
	uint64_t i;
	void **mid = NULL, **leaf = NULL;

	if (nsets > (uint64_t)DIR_FAN * DIR_FAN * DIR_FAN)
		die("--sets: at most %u in opp mode", DIR_FAN * DIR_FAN * DIR_FAN);
	root = obj_alloc(MODE_OPP, sizeof(*root));
	root->magic = ROOT_MAGIC;
	root->nsets = nsets;
	root->top = obj_alloc(MODE_OPP, DIR_BYTES);
	for (i = 0; i < nsets; i++) {
		if (i % ((uint64_t)DIR_FAN * DIR_FAN) == 0)
			root->top[i / DIR_FAN / DIR_FAN] = mid = obj_alloc(MODE_OPP, DIR_BYTES);
		if (i % DIR_FAN == 0)
			mid[i / DIR_FAN % DIR_FAN] = leaf = obj_alloc(MODE_OPP, DIR_BYTES);
		leaf[i % DIR_FAN] = ptrs[i] = obj_alloc(MODE_OPP, sizeof(struct hc_set));
	}
}

/*
 * FILE.app is ours but still input: before the root's address is followed, it
 * must lie in a mapping of this process (ssd_restore mapped the pool again)
 */
static bool mapped(uintptr_t a, size_t len)
{
	unsigned long lo, hi;
	char line[512];
	bool ok = false;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		die("/proc/self/maps: %s", strerror(errno));
	while (!ok && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && a >= lo && a + len <= hi && a + len > a)
			ok = true;
	fclose(f);
	return ok;
}

/* after a restore: the pointer array again, from the directory */
static void walk_opp(void)
{
	uint64_t i;
	void **mid, **leaf = NULL;

	if (!mapped((uintptr_t)root, sizeof(*root)))
		die("restore: the root object's address %p is not mapped after ssd_restore",
		    (void *)root);
	if (root->magic != ROOT_MAGIC || root->nsets != nsets)
		die("restore: the root object at %p is not this index's (magic %" PRIx64
		    ", %" PRIu64 " sets)", (void *)root, root->magic, root->nsets);
	for (i = 0; i < nsets; i++) {
		if (i % DIR_FAN == 0) {
			mid = root->top[i / DIR_FAN / DIR_FAN];
			leaf = mid ? mid[i / DIR_FAN % DIR_FAN] : NULL;
			if (!leaf)
				die("restore: the directory has no entry for set %" PRIu64, i);
		}
		ptrs[i] = leaf[i % DIR_FAN];
		if (!ptrs[i])
			die("restore: the directory has no entry for set %" PRIu64, i);
	}
}

static char *app_path(const char *ckpt)
{
	size_t len = strlen(ckpt) + 5;
	char *p = malloc(len);

	if (!p)
		die("out of memory");
	snprintf(p, len, "%s.app", ckpt);
	return p;
}

static void write_app_file(const char *ckpt, uint64_t sum, uint64_t inserted)
{
	struct app_file af = {
		.magic = APP_MAGIC, .root = (uintptr_t)root, .nsets = nsets, .keys = nkeys,
		.seed = seed, .sample = sample, .nshadow = nshadow, .index_sum = sum,
		.inserted = inserted,
	};
	char *path = app_path(ckpt), *tmp = malloc(strlen(path) + 5);
	FILE *f;

	if (!tmp)
		die("out of memory");
	sprintf(tmp, "%s.tmp", path);
	f = fopen(tmp, "wb");
	if (!f || fwrite(&af, sizeof(af), 1, f) != 1 ||
	    fwrite(shadows, sizeof(*shadows), nshadow, f) != nshadow || fflush(f) ||
	    fsync(fileno(f)) || fclose(f))
		die("%s: %s", tmp, strerror(errno));
	/* FILE.app names the checkpoint just taken: renamed only after it succeeded */
	if (rename(tmp, path))
		die("rename %s: %s", path, strerror(errno));
	free(tmp);
	free(path);
}

static void read_app_file(const char *ckpt, struct app_file *af)
{
	char *path = app_path(ckpt);
	FILE *f = fopen(path, "rb");

	if (!f)
		die("%s: %s", path, strerror(errno));
	if (fread(af, sizeof(*af), 1, f) != 1 || af->magic != APP_MAGIC)
		die("%s: not an ssd-hashcache checkpoint description", path);
	if (af->nsets == 0 || af->nsets > (uint64_t)DIR_FAN * DIR_FAN * DIR_FAN ||
	    af->sample == 0 || af->nshadow != (af->nsets + af->sample - 1) / af->sample ||
	    af->keys == 0)
		die("%s: inconsistent parameters", path);
	nsets = af->nsets;
	nkeys = af->keys;
	seed = af->seed;
	sample = af->sample;
	nshadow = af->nshadow;
	shadows = calloc(nshadow, sizeof(*shadows));
	if (!shadows)
		die("out of memory for the oracle");
	if (fread(shadows, sizeof(*shadows), nshadow, f) != nshadow)
		die("%s: truncated", path);
	fclose(f);
	free(path);
}

/* the whole index checked against the oracle, then checkpointed; the time it took */
static double take_checkpoint(const char *ckpt, uint64_t inserted)
{
	uint64_t i, sum;
	double t;

	for (i = 0; i < nshadow; i++)
		compare_set(i * sample, set_at(i * sample), &shadows[i]);
	if (bad)
		return 0;
	sum = index_sum();
	t = now_seconds();
	if (ssd_checkpoint(ckpt))
		die_ssd("ssd_checkpoint");
	t = now_seconds() - t;
	write_app_file(ckpt, sum, inserted);
	return t;
}

static void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: %s [--mode malloc|mp|opp] [--sets N] [--ops M] [--insert-pct P]\n"
		"       [--keys K] [--seed S] [--sample R] [--checkpoint FILE] [--restore FILE]\n"
		"       [--checkpoint-at K] [--kill] [--corrupt]\n"
		"An index of N 128-byte sets of 16 entries; M operations on random keys out of\n"
		"K (default 32 N), P%% of them inserts (default 50), the rest lookups. Every\n"
		"R-th set (default 64; 1: all) is checked against an oracle. opp only:\n"
		"--checkpoint FILE checkpoints at the end (and writes FILE.app); --restore FILE\n"
		"restores it, verifies the whole index, then runs the M operations.\n"
		"--checkpoint-at K: the checkpoint after K operations instead of at the end.\n"
		"--kill: SIGKILL itself at the end (a crash: a restore must find the index\n"
		"as it was at the checkpoint, whatever was written after it).\n"
		"--corrupt changes one entry behind the oracle's back (its own test).\n", prog);
	exit(code);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "sets", required_argument, NULL, 'n' },
		{ "ops", required_argument, NULL, 'o' },
		{ "insert-pct", required_argument, NULL, 'i' },
		{ "keys", required_argument, NULL, 'k' },
		{ "seed", required_argument, NULL, 'S' },
		{ "sample", required_argument, NULL, 'r' },
		{ "checkpoint", required_argument, NULL, 'c' },
		{ "restore", required_argument, NULL, 'R' },
		{ "checkpoint-at", required_argument, NULL, 'a' },
		{ "kill", no_argument, NULL, 'K' },
		{ "corrupt", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	uint64_t ops = 1000000, ipct = 50, i, rng, inserts = 0, lookups = 0, hits = 0;
	uint64_t inserted = 0, restored_keys = 0, ckpt_at = UINT64_MAX;
	const char *ckpt = NULL, *rest = NULL;
	double t0, t1, tr = 0, tc = 0;
	struct ssd_stats st0, st1, st;
	bool corrupt = false, kill_self = false, ckpt_done = false;
	int c;

	while ((c = getopt_long(argc, argv, "m:n:o:i:k:S:r:c:R:a:KCh", opts, NULL)) != -1) {
		switch (c) {
		case 'm': mode = parse_mode(optarg); break;
		case 'n': nsets = parse_num("--sets", optarg); break;
		case 'o': ops = parse_num("--ops", optarg); break;
		case 'i': ipct = parse_num("--insert-pct", optarg); break;
		case 'k': nkeys = parse_num("--keys", optarg); break;
		case 'S': seed = parse_num("--seed", optarg); break;
		case 'r': sample = parse_num("--sample", optarg); break;
		case 'c': ckpt = optarg; break;
		case 'R': rest = optarg; break;
		case 'a': ckpt_at = parse_num("--checkpoint-at", optarg); break;
		case 'K': kill_self = true; break;
		case 'C': corrupt = true; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc)
		usage(2);
	if ((ckpt || rest) && mode != MODE_OPP)
		die("--checkpoint and --restore need --mode opp: only pool-allocated OPP objects"
		    " are checkpointed");
	if (ckpt_at != UINT64_MAX && (!ckpt || ckpt_at > ops))
		die("--checkpoint-at needs --checkpoint and at most --ops operations");
	if (ipct > 100)
		die("--insert-pct must be 0..100");
	if (sample == 0)
		die("--sample must be at least 1");

	if (rest) {
		struct app_file af;

		read_app_file(rest, &af);
		inserted = af.inserted;
		tr = now_seconds();
		if (ssd_restore(rest))
			die_ssd("ssd_restore");
		tr = now_seconds() - tr;
		ptrs = malloc(nsets * sizeof(*ptrs));
		if (!ptrs)
			die("out of memory for %" PRIu64 " set pointers", nsets);
		root = (struct hc_root *)(uintptr_t)af.root;
		walk_opp();
		if (index_sum() != af.index_sum)
			fail("restore: the index differs from the one checkpointed");
		/* every key the checkpoint held, found where it was, in its LRU place */
		for (i = 0; i < nshadow; i++) {
			compare_set(i * sample, set_at(i * sample), &shadows[i]);
			restored_keys += shadows[i].n;
		}
	} else {
		if (nsets == 0 || nsets > (1ull << 40) / sizeof(struct hc_set))
			die("--sets must be 1..%llu", (1ull << 40) / sizeof(struct hc_set));
		if (!nkeys)
			nkeys = nsets * 2 * WAYS;
		nshadow = (nsets + sample - 1) / sample;
		shadows = calloc(nshadow, sizeof(*shadows));
		if (!shadows)
			die("out of memory for the oracle");
		if (mode == MODE_OPP) {
			ptrs = malloc(nsets * sizeof(*ptrs));
			if (!ptrs)
				die("out of memory for %" PRIu64 " set pointers", nsets);
			alloc_opp();
		} else if (mode == MODE_MP) {
			array = ssd_calloc(nsets, sizeof(struct hc_set));
			if (!array)
				die_ssd("ssd_calloc");
		} else {
			array = calloc(nsets, sizeof(struct hc_set));
			if (!array)
				die("out of memory for %" PRIu64 " sets", nsets);
		}
	}

	stats_snapshot(mode, &st0);
	rng = mix64(seed) ^ (rest ? inserted + 1 : 0);
	t0 = now_seconds();
	for (i = 0; i <= ops; i++) {
		uint64_t key, si;
		struct shadow *sh;
		struct hc_set *s;
		uint32_t tag, loc;
		bool ins;
		int j;

		if (i == ckpt_at) {
			tc = take_checkpoint(ckpt, inserted + inserts);
			ckpt_done = !bad;
		}
		if (i == ops)
			break;
		key = rnd_below(&rng, nkeys);
		ins = rnd_below(&rng, 100) < ipct;
		key_hash(key, &si, &tag);
		s = set_at(si);
		sh = si % sample ? NULL : &shadows[si / sample];
		if (ins) {
			hc_insert(s, tag, loc_of(si, tag));
			inserts++;
			if (sh)
				shadow_insert(sh, key, tag, loc_of(si, tag));
		} else {
			loc = hc_lookup(s, tag);
			lookups++;
			hits += !!loc;
			if (loc && loc != loc_of(si, tag))
				fail("set %" PRIu64 ": key %" PRIu64 " found with a wrong location",
				     si, key);
			if (sh) {
				j = shadow_find(sh, tag);
				if ((j >= 0) != !!loc)
					fail("set %" PRIu64 ": key %" PRIu64 " %s", si, key,
					     loc ? "found, but the oracle does not have it" :
					     "not found, but the oracle has it");
				if (j >= 0)
					shadow_front(sh, j, sh->key[j], tag, sh->loc[j]);
			}
		}
		if (sh)
			compare_set(si, s, sh);
	}
	t1 = now_seconds();
	inserted += inserts;

	if (corrupt)
		set_at(0)->e[0] ^= 1ull << TAG_SHIFT;
	/* every shadowed set once more, untimed */
	for (i = 0; i < nshadow; i++)
		compare_set(i * sample, set_at(i * sample), &shadows[i]);

	if (ckpt && ckpt_at == UINT64_MAX && !bad) {
		tc = take_checkpoint(ckpt, inserted);
		ckpt_done = !bad;
	}
	stats_snapshot(mode, &st1);
	stats_delta(&st, &st0, &st1);

	printf("app=hashcache mode=%s sets=%" PRIu64 " index_bytes=%" PRIu64 " keys=%" PRIu64
	       " seed=%" PRIu64 " sample=%" PRIu64 " ops=%" PRIu64 " inserts=%" PRIu64
	       " lookups=%" PRIu64 " hits=%" PRIu64 " seconds=%.6f ops_per_s=%.0f"
	       " restored=%d restore_seconds=%.6f restored_keys_verified=%" PRIu64
	       " checkpointed=%d checkpoint_seconds=%.6f verify_failures=%" PRIu64,
	       mode_name(mode), nsets, nsets * (uint64_t)sizeof(struct hc_set), nkeys, seed,
	       sample, ops, inserts, lookups, hits, t1 - t0,
	       t1 > t0 ? (double)ops / (t1 - t0) : 0.0, !!rest, tr, bad ? 0 : restored_keys,
	       ckpt_done, tc, bad);
	print_stats(stdout, mode, &st);
	printf("\n");
	fflush(stdout);
	if (bad)
		fprintf(stderr, "%s: %" PRIu64 " verification failures%s\n", prog, bad,
			ckpt && !ckpt_done ? " (no checkpoint taken)" : "");
	if (kill_self)
		raise(SIGKILL);
	if (mode == MODE_MALLOC)
		free(array);
	else
		ssd_shutdown();
	free(ptrs);
	free(shadows);
	return bad ? 1 : 0;
}
