/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "util/pb.h"
#include "profile/pprof.h"
#include "profile/profile.h"
#include "util/xalloc.h"

/*
 * The fields written, in field order:
 *
 *   1  sample_type     [samples/count, cpu/nanoseconds]
 *   2  sample          location_id leaf first, value [n, n * period],
 *                      label "thread" and one per tag
 *   4  location        one per code or pseudo-frame, one Line each
 *   5  function        one per (name, file); pseudo-frames have no file
 *   6  string_table    "" first, then every string once
 *   9  time_nanos, 10 duration_nanos, 11 period_type cpu/nanoseconds,
 *   12 period          nanoseconds between samples
 *
 * A message is a sequence of fields in any order, and a repeated field is
 * its occurrences in order, so each section grows in its own buffer as
 * the walk meets new locations, functions and strings, and the profile is
 * their concatenation, deflated as one stream.
 */

/* Open addressing over ids (stored + 1, 0 empty) with their hashes kept. */
struct htab_slot {
	uint32_t id;
	uint32_t hash;
};

struct htab {
	struct htab_slot *slot;
	uint32_t cap, n;
};

static void htab_grow(struct htab *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : 256;
	struct htab_slot *slot = xcalloc(cap, sizeof(*slot));

	for (uint32_t i = 0; i < t->cap; i++) {
		uint32_t j;

		if (!t->slot[i].id)
			continue;
		for (j = t->slot[i].hash & (cap - 1); slot[j].id; j = (j + 1) & (cap - 1))
			;
		slot[j] = t->slot[i];
	}
	free(t->slot);
	t->slot = slot;
	t->cap = cap;
}

/* The first slot to probe for hash; grows first so an insert always fits. */
static struct htab_slot *htab_first(struct htab *t, uint32_t hash)
{
	if (2 * (t->n + 1) > t->cap)
		htab_grow(t);
	return &t->slot[hash & (t->cap - 1)];
}

static struct htab_slot *htab_next(const struct htab *t, struct htab_slot *s)
{
	return s + 1 == t->slot + t->cap ? t->slot : s + 1;
}

static void htab_set(struct htab *t, struct htab_slot *s, uint32_t hash, uint32_t id)
{
	s->id = id + 1;
	s->hash = hash;
	t->n++;
}

static uint32_t fnv1a(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return (uint32_t)(h ^ h >> 32);
}

struct pprof {
	/* the sections, concatenated in this order */
	struct pb sample, location, function, string, tail;
	/* string_table: where each entry's bytes sit in .string */
	struct pprof_str {
		size_t off, len;
	} *str;
	uint32_t nstr, astr;
	struct htab str_index;
	/* functions, by the profile's (name, file) string ids */
	uint64_t *fn_key;
	uint32_t nfn, afn;
	struct htab fn_index;
	/* location id of each frame of the profile, 0 not yet written */
	uint32_t *loc;
	uint32_t nloc;
	uint64_t period;	/* nanoseconds between samples */
	uint32_t thread_key;	/* "thread" */
	uint32_t nsample;
};

/* The string_table index of s (len bytes), adding it if new. */
static uint32_t pprof_strn(struct pprof *w, const char *s, size_t len)
{
	uint32_t hash = fnv1a(s, len);
	struct htab_slot *slot;

	for (slot = htab_first(&w->str_index, hash); slot->id; slot = htab_next(&w->str_index, slot)) {
		const struct pprof_str *e = &w->str[slot->id - 1];

		if (slot->hash == hash && e->len == len && !memcmp(w->string.buf + e->off, s, len))
			return slot->id - 1;
	}
	if (w->nstr == w->astr) {
		w->astr = w->astr ? w->astr * 2 : 64;
		w->str = xreallocarray(w->str, w->astr, sizeof(*w->str));
	}
	pb_bytes(&w->string, 6, s, len);
	w->str[w->nstr].off = w->string.len - len;
	w->str[w->nstr].len = len;
	htab_set(&w->str_index, slot, hash, w->nstr);
	return w->nstr++;
}

static uint32_t pprof_str(struct pprof *w, const char *s)
{
	return pprof_strn(w, s, strlen(s));
}

/*
 * The function id of a frame: one Function per (name, file).  start_line
 * stays 0: the readers see the line executing, not where the function
 * begins, and the smallest line sampled would only look like an answer.
 */
static uint32_t pprof_function(struct pprof *w, const struct profile *p,
			       const struct profile_frame *f)
{
	uint64_t key = (uint64_t)f->name << 32 | f->file;
	uint32_t hash = fnv1a(&key, sizeof(key));
	struct htab_slot *slot;
	size_t msg;

	for (slot = htab_first(&w->fn_index, hash); slot->id; slot = htab_next(&w->fn_index, slot))
		if (w->fn_key[slot->id - 1] == key)
			return slot->id;	/* ids start at 1 like the slots */
	if (w->nfn == w->afn) {
		w->afn = w->afn ? w->afn * 2 : 64;
		w->fn_key = xreallocarray(w->fn_key, w->afn, sizeof(*w->fn_key));
	}
	w->fn_key[w->nfn] = key;
	htab_set(&w->fn_index, slot, hash, w->nfn++);
	msg = pb_open(&w->function, 5);
	pb_int(&w->function, 1, w->nfn);
	pb_int(&w->function, 2, pprof_str(w, profile_str(p, f->name)));
	pb_int(&w->function, 4, pprof_str(w, profile_str(p, f->file)));
	pb_close(&w->function, msg);
	return w->nfn;
}

/* The location id of a code frame or pseudo-frame: one Line, no address. */
static uint32_t pprof_location(struct pprof *w, const struct profile *p, uint32_t frame)
{
	const struct profile_frame *f = &p->frame[frame];
	uint32_t fn;
	size_t msg, line;

	if (w->loc[frame])
		return w->loc[frame];
	fn = pprof_function(w, p, f);
	w->loc[frame] = ++w->nloc;
	msg = pb_open(&w->location, 4);
	pb_int(&w->location, 1, w->nloc);
	line = pb_open(&w->location, 4);
	pb_int(&w->location, 1, fn);
	pb_int(&w->location, 2, f->line);
	pb_close(&w->location, line);
	pb_close(&w->location, msg);
	return w->nloc;
}

static void pprof_label(struct pprof *w, uint32_t key, uint32_t str)
{
	size_t msg = pb_open(&w->sample, 3);

	pb_int(&w->sample, 1, key);
	pb_int(&w->sample, 2, str);
	pb_close(&w->sample, msg);
}

/*
 * One label per pair of the tag set "k=v,k2=v2".  Keys hold no '=' but
 * values may, so a pair splits at its first '='.  Splitting the set at
 * every ',' assumes neither keys nor values hold one, which is true of
 * the tags we make today.
 */
static void pprof_tags(struct pprof *w, const char *tags)
{
	while (*tags) {
		size_t n = strcspn(tags, ","), k = strcspn(tags, "=");

		if (k > n)
			k = n;
		if (n)
			pprof_label(w, pprof_strn(w, tags, k),
				    k < n ? pprof_strn(w, tags + k + 1, n - k - 1) : 0);
		tags += n;
		if (*tags)
			tags++;
	}
}

int pprof_add(void *arg, const struct profile *p, const uint32_t *frames, uint32_t depth,
	      uint64_t count)
{
	struct pprof *w = arg;
	size_t msg = pb_open(&w->sample, 2), list = 0;

	/* pprof wants the leaf first; the trie gives the root first */
	for (uint32_t d = depth; d-- > 0;) {
		uint32_t kind = p->frame[frames[d]].kind;

		if (kind != PROFILE_CODE && kind != PROFILE_MARK)
			continue;
		if (!list)
			list = pb_open(&w->sample, 1);
		pb_varint(&w->sample, pprof_location(w, p, frames[d]));
	}
	if (list)
		pb_close(&w->sample, list);
	list = pb_open(&w->sample, 2);
	pb_varint(&w->sample, count);
	pb_varint(&w->sample, count * w->period);
	pb_close(&w->sample, list);
	/* tag sets and threads are levels of the trie, labels here */
	for (uint32_t d = 0; d < depth; d++) {
		/* a thread's samples are labelled with the name it had last */
		const struct profile_frame *f = &p->frame[profile_thread_last(p, frames[d])];

		if (f->kind == PROFILE_THREAD)
			pprof_label(w, w->thread_key, pprof_str(w, profile_str(p, f->name)));
		else if (f->kind == PROFILE_TAGS)
			pprof_tags(w, profile_str(p, f->name));
	}
	pb_close(&w->sample, msg);
	w->nsample++;
	return 0;
}

static void pprof_value_type(struct pprof *w, struct pb *b, uint32_t field, const char *type,
			     const char *unit)
{
	size_t msg = pb_open(b, field);

	pb_int(b, 1, pprof_str(w, type));
	pb_int(b, 2, pprof_str(w, unit));
	pb_close(b, msg);
}

struct pprof *pprof_new(const struct profile *p, uint64_t period)
{
	struct pprof *w = xcalloc(1, sizeof(*w));

	w->period = period;
	w->loc = xcalloc(p->nframe ? p->nframe : 1, sizeof(*w->loc));
	pprof_str(w, "");
	w->thread_key = pprof_str(w, "thread");
	pprof_value_type(w, &w->sample, 1, "samples", "count");
	pprof_value_type(w, &w->sample, 1, "cpu", "nanoseconds");
	return w;
}

uint32_t pprof_samples(const struct pprof *w)
{
	return w->nsample;
}

size_t pprof_size(const struct pprof *w)
{
	return w->sample.len + w->location.len + w->function.len + w->string.len + w->tail.len;
}

int pprof_finish(struct pprof *w, int64_t time_nanos, int64_t duration_nanos, struct pb *out,
		 size_t *raw)
{
	const struct pb *part[] = { &w->sample, &w->location, &w->function, &w->string, &w->tail };

	pb_int(&w->tail, 9, time_nanos);
	pb_int(&w->tail, 10, duration_nanos);
	pprof_value_type(w, &w->tail, 11, "cpu", "nanoseconds");
	pb_int(&w->tail, 12, (int64_t)w->period);
	if (raw)
		*raw = pprof_size(w);
	return pb_gzip(part, ARRAY_SIZE(part), out);
}

void pprof_free(struct pprof *w)
{
	if (!w)
		return;
	pb_release(&w->sample);
	pb_release(&w->location);
	pb_release(&w->function);
	pb_release(&w->string);
	pb_release(&w->tail);
	free(w->str);
	free(w->str_index.slot);
	free(w->fn_key);
	free(w->fn_index.slot);
	free(w->loc);
	free(w);
}
