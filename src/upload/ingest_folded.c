/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "upload/ingest_format.h"
#include "profile/profile.h"
#include "util/xalloc.h"

/*
 * The text bodies of /ingest: folded ("frame;frame;leaf count" lines) and
 * the transport trie, one request per tag set, its name app.cpu{tags}.
 */

static void buf_uvarint(struct ingest_buf *b, uint64_t v)
{
	unsigned char out[10];
	size_t n = 0;

	/* Go's binary.PutUvarint: 7 bits a byte, low first, high bit = more */
	do {
		out[n] = v & 0x7f;
		v >>= 7;
		if (v)
			out[n] |= 0x80;
		n++;
	} while (v);
	ingest_buf_add(b, out, n);
}

struct key {
	char *s;
	size_t len;
	uint64_t count;
};

struct keys {
	struct key *k;
	size_t n, a;
};

static int key_stack(void *arg, const struct profile *p, const uint32_t *frames, uint32_t depth,
		     uint64_t count)
{
	struct keys *ks = arg;
	struct ingest_buf b = { 0 };

	for (uint32_t i = 0; i < depth; i++) {
		if (i)
			ingest_buf_add(&b, ";", 1);
		ingest_buf_str(&b, profile_str(p, p->frame[frames[i]].name));
	}
	if (ks->n == ks->a)
		ks->k = xreallocarray(ks->k, ks->a = ks->a ? 2 * ks->a : 256, sizeof(*ks->k));
	ks->k[ks->n++] = (struct key){ b.s, b.len, count };
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* "frame;frame;leaf count\n" per stack: the folded ("groups") format. */
static void encode_folded(struct ingest_buf *b, const struct key *k, size_t n)
{
	char num[24];

	for (size_t i = 0; i < n; i++) {
		ingest_buf_add(b, k[i].s, k[i].len);
		ingest_buf_add(b, num, (size_t)snprintf(num, sizeof(num), " %" PRIu64 "\n", k[i].count));
	}
}

/* Length of the common prefix of a and b from byte d on. */
static size_t lcp(const struct key *a, const struct key *b, size_t d)
{
	size_t n = d;

	while (n < a->len && n < b->len && a->s[n] == b->s[n])
		n++;
	return n - d;
}

/* Number of runs of keys k[lo..hi) with the same byte at d (all longer than d). */
static size_t runs(const struct key *k, size_t lo, size_t hi, size_t d)
{
	size_t n = 0;

	for (size_t i = lo; i < hi; i++)
		if (i == lo || k[i].s[d] != k[i - 1].s[d])
			n++;
	return n;
}

struct trie_task {
	size_t lo, hi, d;
};

struct trie_stack {
	struct trie_task *t;
	size_t n, a;
};

/* Push the runs of k[lo..hi) by byte d, last first, so the first is written next. */
static void push_runs(struct trie_stack *st, const struct key *k, size_t lo, size_t hi, size_t d)
{
	for (size_t i = hi; i > lo;) {
		size_t j = i - 1;

		while (j > lo && k[j - 1].s[d] == k[i - 1].s[d])
			j--;
		if (st->n == st->a)
			st->t = xreallocarray(st->t, st->a = st->a ? 2 * st->a : 64, sizeof(*st->t));
		st->t[st->n++] = (struct trie_task){ j, i, d };
		i = j;
	}
}

/*
 * The transport trie: a radix trie over the bytes of the sorted, distinct
 * keys, written depth first, each node as
 *
 *   uvarint(len(label)) label uvarint(value) uvarint(children)
 *
 * from an empty root.  A node's key is the labels on its path joined, so
 * "foo;bar" 2 and "foo;baz" 3 become
 *
 *   "" 0 1 -- "foo;ba" 0 2 -+- "r" 2 0
 *                           +- "z" 3 0
 *
 * A node stands for a run of keys sharing its key as a prefix; for sorted
 * keys that is the common prefix of the run's first and last.  No label is
 * ever empty (the servers' reader mishandles that): every key is non-empty
 * and a child starts at least one byte past its parent.
 */
static void encode_trie(struct ingest_buf *b, const struct key *k, size_t n)
{
	struct trie_stack st = { 0 };

	ingest_buf_add(b, "\0\0", 2);
	buf_uvarint(b, n ? runs(k, 0, n, 0) : 0);
	push_runs(&st, k, 0, n, 0);
	while (st.n) {
		struct trie_task t = st.t[--st.n];
		size_t e = t.d + lcp(&k[t.lo], &k[t.hi - 1], t.d), first = t.lo;
		uint64_t value = 0;

		if (k[first].len == e)
			value = k[first++].count;
		buf_uvarint(b, e - t.d);
		ingest_buf_add(b, k[t.lo].s + t.d, e - t.d);
		buf_uvarint(b, value);
		buf_uvarint(b, runs(k, first, t.hi, e));
		push_runs(&st, k, first, t.hi, e);
	}
	free(st.t);
}

static struct ingest_req *make_req(const struct ingest_opts *o, int trie, const char *name,
				   const struct key *k, size_t n, time_t from, time_t until)
{
	struct ingest_req *r = xcalloc(1, sizeof(*r));
	char *ename = ingest_urlencode(name);
	char *espy = ingest_urlencode(o->spy_name ? o->spy_name : "pyrospy");
	struct ingest_buf b = { 0 };

	if (trie)
		encode_trie(&b, k, n);
	else
		encode_folded(&b, k, n);
	r->name = xstrdup(name);
	r->body = b.s;
	r->len = b.len;
	r->stacks = (unsigned int)n;
	for (size_t i = 0; i < n; i++)
		r->samples += k[i].count;
	r->query = xstrfmt("name=%s&from=%lld&until=%lld&format=%s&sampleRate=%u&spyName=%s"
			   "&units=samples&aggregationType=sum",
			   ename, (long long)from, (long long)until, trie ? "trie" : "folded",
			   o->rate, espy);
	free(ename);
	free(espy);
	return r;
}

/*
 * Requests for one tag set: its stacks sorted, cut into runs of at most
 * INGEST_MAX_STACKS stacks and INGEST_MAX_BODY bytes of folded text (the
 * trie of a run is smaller).  The server adds up requests with the same
 * name and window, so a split loses nothing.
 */
static struct ingest_req **group_reqs(const struct ingest_opts *o, int trie,
				      const struct ingest_group *g, time_t from, time_t until,
				      struct ingest_req **tail)
{
	struct keys ks = { 0 };
	size_t i = 0;

	profile_stacks(&g->prof, key_stack, &ks);
	if (ks.n > 1)
		qsort(ks.k, ks.n, sizeof(*ks.k), key_cmp);
	while (i < ks.n) {
		size_t j = i, bytes = 0;

		while (j < ks.n && j - i < INGEST_MAX_STACKS) {
			size_t line = ks.k[j].len + 22;

			if (j > i && bytes + line > INGEST_MAX_BODY)
				break;
			bytes += line;
			j++;
		}
		*tail = make_req(o, trie, g->name, ks.k + i, j - i, from, until);
		tail = &(*tail)->next;
		i = j;
	}
	for (i = 0; i < ks.n; i++)
		free(ks.k[i].s);
	free(ks.k);
	return tail;
}

static struct ingest_req **encode(const struct ingest_opts *o, int trie,
				  const struct ingest_group *g, size_t ng, time_t from, time_t until,
				  struct ingest_req **tail)
{
	for (size_t i = 0; i < ng; i++)
		tail = group_reqs(o, trie, &g[i], from, until, tail);
	return tail;
}

static struct ingest_req **folded_encode(const struct ingest_opts *o, const struct ingest_group *g,
					 size_t ng, time_t from, time_t until,
					 struct ingest_req **tail)
{
	return encode(o, 0, g, ng, from, until, tail);
}

static struct ingest_req **trie_encode(const struct ingest_opts *o, const struct ingest_group *g,
				       size_t ng, time_t from, time_t until, struct ingest_req **tail)
{
	return encode(o, 1, g, ng, from, until, tail);
}

static const char *const folded_headers[] = { "Content-Type: binary/octet-stream", NULL };
static const char *const trie_headers[] = { "Content-Type: binary/octet-stream+trie", NULL };

const struct ingest_format_ops ingest_folded = {
	.name = "folded",
	.path = "ingest",
	.headers = folded_headers,
	.text = 1,
	.encode = folded_encode,
};

const struct ingest_format_ops ingest_trie = {
	.name = "trie",
	.path = "ingest",
	.headers = trie_headers,
	.text = 1,
	.encode = trie_encode,
};
