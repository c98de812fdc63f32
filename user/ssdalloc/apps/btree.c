// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ssd-btree: a B+tree whose nodes come from the chosen allocator (thesis
 * section 3.4.3: a B+tree ported to SSDAlloc by changing its node allocation):
 * malloc, ssd_malloc (MP: nodes carved from 1 MiB ssd_malloc'd arenas, as malloc
 * carves its heap) or ssd_oalloc(1, node size) (OPP: each node an object).
 *
 * The driver inserts N keys in random order, optionally deletes some, then does
 * M random lookups (a quarter of them of keys never inserted) and range scans,
 * and at the end walks the whole leaf chain. Keys are a bijective mix of 0..N-1,
 * so they are distinct; each value is a function of its key, and a sorted
 * plain-memory array of the live keys is the oracle for scans. Every result is
 * verified. One line of key=value results; exit 1 on a verification failure.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "app-common.h"

const char *prog = "ssd-btree";

struct node {
	uint32_t leaf;
	uint32_t n;		/* keys in use */
	struct node *next;	/* leaves: the next leaf, for range scans */
	/* keys[cap], then vals[cap] (leaf) or children[cap + 1] (internal) */
	uint64_t w[];
};

static struct arena nodes;
static uint32_t cap;		/* keys per node */
static uint64_t nnodes, height = 1;
static struct node *root;

static inline uint64_t *keys(struct node *nd) { return nd->w; }
static inline uint64_t *vals(struct node *nd) { return nd->w + cap; }
static inline struct node **kids(struct node *nd) { return (struct node **)(nd->w + cap); }

static struct node *node_new(bool leaf)
{
	struct node *nd = arena_alloc(&nodes);

	nd->leaf = leaf;
	nnodes++;
	return nd;
}

/* the first index whose key is >= key */
static uint32_t lower_bound(const uint64_t *k, uint32_t n, uint64_t key)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (k[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* the child of an internal node to follow: keys[i] is the least key of kids[i + 1] */
static uint32_t child_index(struct node *nd, uint64_t key)
{
	uint32_t i = lower_bound(keys(nd), nd->n, key);

	return i < nd->n && keys(nd)[i] == key ? i + 1 : i;
}

/*
 * Inserts into the subtree; returns 1 and the new right sibling and its least
 * key when nd split, 0 otherwise. *added: 0 when the key existed (value updated).
 */
static int insert_rec(struct node *nd, uint64_t key, uint64_t val, uint64_t *up_key,
		      struct node **up, int *added)
{
	uint64_t *k = keys(nd);
	uint32_t i, half;
	struct node *r;

	if (nd->leaf) {
		uint64_t *v = vals(nd);

		i = lower_bound(k, nd->n, key);
		if (i < nd->n && k[i] == key) {
			v[i] = val;
			*added = 0;
			return 0;
		}
		*added = 1;
		if (nd->n < cap) {
			memmove(k + i + 1, k + i, (nd->n - i) * sizeof(*k));
			memmove(v + i + 1, v + i, (nd->n - i) * sizeof(*v));
			k[i] = key;
			v[i] = val;
			nd->n++;
			return 0;
		}
		/* full: the upper half moves to a new right leaf, then insert into one */
		r = node_new(true);
		half = cap / 2;
		memcpy(keys(r), k + half, (cap - half) * sizeof(*k));
		memcpy(vals(r), v + half, (cap - half) * sizeof(*v));
		r->n = cap - half;
		nd->n = half;
		r->next = nd->next;
		nd->next = r;
		insert_rec(key < keys(r)[0] ? nd : r, key, val, up_key, up, added);
		*up_key = keys(r)[0];
		*up = r;
		return 1;
	}

	i = child_index(nd, key);
	{
		uint64_t ck;
		struct node *cn, **c = kids(nd);

		if (!insert_rec(c[i], key, val, &ck, &cn, added))
			return 0;
		if (nd->n < cap) {
			memmove(k + i + 1, k + i, (nd->n - i) * sizeof(*k));
			memmove(c + i + 2, c + i + 1, (nd->n - i) * sizeof(*c));
			k[i] = ck;
			c[i + 1] = cn;
			nd->n++;
			return 0;
		}
		/*
		 * full: split around the middle key, which moves up; the new key and
		 * child then go into the half they belong to (each has room)
		 */
		r = node_new(false);
		half = cap / 2;
		*up_key = k[half];
		memcpy(keys(r), k + half + 1, (cap - half - 1) * sizeof(*k));
		memcpy(kids(r), c + half + 1, (cap - half) * sizeof(*c));
		r->n = cap - half - 1;
		nd->n = half;
		*up = r;
		{
			struct node *t = ck < *up_key ? nd : r;
			uint64_t *tk = keys(t);
			struct node **tc = kids(t);
			uint32_t j = lower_bound(tk, t->n, ck);

			memmove(tk + j + 1, tk + j, (t->n - j) * sizeof(*tk));
			memmove(tc + j + 2, tc + j + 1, (t->n - j) * sizeof(*tc));
			tk[j] = ck;
			tc[j + 1] = cn;
			t->n++;
		}
		return 1;
	}
}

/* 1 when the key was new */
static int bt_insert(uint64_t key, uint64_t val)
{
	uint64_t up_key;
	struct node *up, *nr;
	int added = 0;

	if (insert_rec(root, key, val, &up_key, &up, &added)) {
		nr = node_new(false);
		keys(nr)[0] = up_key;
		kids(nr)[0] = root;
		kids(nr)[1] = up;
		nr->n = 1;
		root = nr;
		height++;
	}
	return added;
}

static struct node *find_leaf(uint64_t key)
{
	struct node *nd = root;

	while (!nd->leaf)
		nd = kids(nd)[child_index(nd, key)];
	return nd;
}

static bool bt_lookup(uint64_t key, uint64_t *val)
{
	struct node *l = find_leaf(key);
	uint32_t i = lower_bound(keys(l), l->n, key);

	if (i < l->n && keys(l)[i] == key) {
		*val = vals(l)[i];
		return true;
	}
	return false;
}

/* removes from the leaf only: nodes may underflow, which lookups and scans allow */
static bool bt_delete(uint64_t key)
{
	struct node *l = find_leaf(key);
	uint32_t i = lower_bound(keys(l), l->n, key);

	if (i >= l->n || keys(l)[i] != key)
		return false;
	memmove(keys(l) + i, keys(l) + i + 1, (l->n - i - 1) * sizeof(uint64_t));
	memmove(vals(l) + i, vals(l) + i + 1, (l->n - i - 1) * sizeof(uint64_t));
	l->n--;
	return true;
}

/* up to max pairs with key >= from, in order; returns how many */
static uint64_t bt_scan(uint64_t from, uint64_t max, uint64_t *ok, uint64_t *ov)
{
	struct node *l = find_leaf(from);
	uint32_t i = lower_bound(keys(l), l->n, from);
	uint64_t n = 0;

	while (l && n < max) {
		for (; i < l->n && n < max; i++, n++) {
			ok[n] = keys(l)[i];
			ov[n] = vals(l)[i];
		}
		l = l->next;
		i = 0;
	}
	return n;
}

static uint64_t seed;

static uint64_t key_of(uint64_t i) { return mix64(seed * 0x100000001b3ull + i); }
static uint64_t val_of(uint64_t key) { return mix64(key ^ 0x5bd1e9955bd1e995ull) | 1; }

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t bad;

static void fail(const char *fmt, uint64_t key)
{
	if (bad++ < 5) {
		fprintf(stderr, "%s: ", prog);
		fprintf(stderr, fmt, key);
		fputc('\n', stderr);
	}
}

/* the scan from `from` against the sorted oracle */
static void check_scan(const uint64_t *sorted, uint64_t nsorted, uint64_t from, uint64_t len,
		       uint64_t *sk, uint64_t *sv)
{
	uint64_t lo = 0, hi = nsorted, got, j;

	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2;

		if (sorted[mid] < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	got = bt_scan(from, len, sk, sv);
	if (got != (nsorted - lo < len ? nsorted - lo : len)) {
		fail("scan from %016" PRIx64 ": wrong number of keys", from);
		return;
	}
	for (j = 0; j < got; j++) {
		if (sk[j] != sorted[lo + j] || sv[j] != val_of(sk[j])) {
			fail("scan: key %016" PRIx64 " or its value differs from the oracle",
			     sorted[lo + j]);
			return;
		}
	}
}

static void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: %s [--mode malloc|mp|opp] [--inserts N] [--lookups M] [--deletes D]\n"
		"       [--scans S] [--scan-len L] [--node-size BYTES] [--seed S] [--corrupt]\n"
		"N random inserts, D deletes, M random lookups (a quarter of absent keys), S\n"
		"range scans of L keys, a full scan; everything verified. --corrupt changes\n"
		"one value behind the oracle's back (the verification's own test).\n", prog);
	exit(code);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "inserts", required_argument, NULL, 'n' },
		{ "lookups", required_argument, NULL, 'l' },
		{ "deletes", required_argument, NULL, 'd' },
		{ "scans", required_argument, NULL, 's' },
		{ "scan-len", required_argument, NULL, 'L' },
		{ "node-size", required_argument, NULL, 'z' },
		{ "seed", required_argument, NULL, 'S' },
		{ "corrupt", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	enum app_mode mode = MODE_MALLOC;
	uint64_t n = 100000, m = 1000000, ndel = 0, nscan = 1000, scanlen = 100, node_size = 512;
	uint64_t i, rng, live, *sorted, *sk, *sv, found = 0, absent = 0, full;
	struct ssd_stats st0, st1, st;
	double t0, t1, t2, t3;
	bool corrupt = false;
	int c;

	seed = 1;
	while ((c = getopt_long(argc, argv, "m:n:l:d:s:L:z:S:Ch", opts, NULL)) != -1) {
		switch (c) {
		case 'm': mode = parse_mode(optarg); break;
		case 'n': n = parse_num("--inserts", optarg); break;
		case 'l': m = parse_num("--lookups", optarg); break;
		case 'd': ndel = parse_num("--deletes", optarg); break;
		case 's': nscan = parse_num("--scans", optarg); break;
		case 'L': scanlen = parse_num("--scan-len", optarg); break;
		case 'z': node_size = parse_num("--node-size", optarg); break;
		case 'S': seed = parse_num("--seed", optarg); break;
		case 'C': corrupt = true; break;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc)
		usage(2);
	if (n == 0 || n > (1ull << 32))
		die("--inserts must be 1..4G");
	if (ndel > n)
		die("--deletes must be at most --inserts");
	if (node_size < 64 || node_size > 65536 || node_size % 16)
		die("--node-size must be a multiple of 16 in 64..65536");
	if (scanlen == 0 || scanlen > (1u << 20))
		die("--scan-len must be 1..1M");
	cap = (uint32_t)((node_size - sizeof(struct node) - sizeof(uint64_t)) / 16);
	arena_init(&nodes, mode, node_size);

	sorted = malloc(n * sizeof(*sorted));
	sk = malloc(scanlen * sizeof(*sk));
	sv = malloc(scanlen * sizeof(*sv));
	if (!sorted || !sk || !sv)
		die("out of memory for the oracle");

	stats_snapshot(mode, &st0);
	root = node_new(true);
	t0 = now_seconds();
	for (i = 0; i < n; i++)
		if (!bt_insert(key_of(i), val_of(key_of(i))))
			fail("insert: key %016" PRIx64 " was there already", key_of(i));
	for (i = 0; i < ndel; i++)
		if (!bt_delete(key_of(i)))
			fail("delete: key %016" PRIx64 " was not found", key_of(i));
	t1 = now_seconds();

	if (corrupt) {
		struct node *l = find_leaf(key_of(n - 1));

		vals(l)[lower_bound(keys(l), l->n, key_of(n - 1))] ^= 2;
	}

	rng = seed ^ 0x2545f4914f6cdd1dull;
	for (i = 0; i < m; i++) {
		uint64_t idx, key, v = 0;
		bool want, got;

		/* a quarter of the lookups are of keys never inserted */
		idx = rnd_below(&rng, 4) ? rnd_below(&rng, n) : n + rnd_below(&rng, n);
		key = key_of(idx);
		want = idx >= ndel && idx < n;
		got = bt_lookup(key, &v);
		if (got != want)
			fail(want ? "lookup: key %016" PRIx64 " not found" :
			     "lookup: key %016" PRIx64 " found but never inserted or deleted", key);
		else if (got && v != val_of(key))
			fail("lookup: key %016" PRIx64 " has a wrong value", key);
		found += got;
		absent += !got;
	}
	t2 = now_seconds();

	/* the oracle: the live keys, sorted */
	for (i = ndel, live = 0; i < n; i++)
		sorted[live++] = key_of(i);
	qsort(sorted, live, sizeof(*sorted), cmp_u64);
	for (i = 0; i < nscan; i++)
		check_scan(sorted, live, rnd(&rng), scanlen, sk, sv);
	t3 = now_seconds();

	/* the whole leaf chain, untimed */
	{
		struct node *l = root;
		uint32_t j;

		while (!l->leaf)
			l = kids(l)[0];

		full = 0;
		for (; l; l = l->next)
			for (j = 0; j < l->n; j++, full++)
				if (full >= live || keys(l)[j] != sorted[full] ||
				    vals(l)[j] != val_of(keys(l)[j])) {
					fail("full scan: differs from the oracle at key %016" PRIx64,
					     keys(l)[j]);
					goto done;
				}
		if (full != live)
			fail("full scan: %" PRIu64 " keys missing", live - full);
	}
done:
	stats_snapshot(mode, &st1);
	stats_delta(&st, &st0, &st1);
	printf("app=btree mode=%s inserts=%" PRIu64 " deletes=%" PRIu64 " lookups=%" PRIu64
	       " found=%" PRIu64 " absent=%" PRIu64 " scans=%" PRIu64 " scan_len=%" PRIu64
	       " node_size=%" PRIu64 " fanout=%" PRIu32 " nodes=%" PRIu64 " height=%" PRIu64
	       " seed=%" PRIu64 " insert_seconds=%.6f inserts_per_s=%.0f lookup_seconds=%.6f"
	       " lookups_per_s=%.0f scan_seconds=%.6f seconds=%.6f verify_failures=%" PRIu64,
	       mode_name(mode), n, ndel, m, found, absent, nscan, scanlen, node_size, cap,
	       nnodes, height, seed, t1 - t0, t1 > t0 ? (double)(n + ndel) / (t1 - t0) : 0.0,
	       t2 - t1, t2 > t1 ? (double)m / (t2 - t1) : 0.0, t3 - t2, t3 - t0, bad);
	print_stats(stdout, mode, &st);
	printf("\n");
	fflush(stdout);
	if (bad)
		fprintf(stderr, "%s: %" PRIu64 " verification failures\n", prog, bad);
	/* malloc'd nodes go with the process; ssd_shutdown unmaps SSDAlloc's */
	if (mode != MODE_MALLOC)
		ssd_shutdown();
	free(sorted);
	free(sk);
	free(sv);
	return bad ? 1 : 0;
}
