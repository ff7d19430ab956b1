/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "stack.h"
#include "xalloc.h"

static uint64_t hash_bytes(const void *data, size_t len, uint64_t h)
{
	const unsigned char *p = data;

	/* FNV-1a: fine for keys we make ourselves */
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#define HASH_SEED 0xcbf29ce484222325ull

void profile_init(struct profile *p)
{
	memset(p, 0, sizeof(*p));
}

void profile_release(struct profile *p)
{
	for (uint32_t i = 0; i < p->nstr; i++)
		free(p->str[i]);
	for (uint32_t i = 0; i < p->nstack; i++)
		free(p->stack[i].frames);
	free(p->str);
	free(p->str_hash);
	free(p->frame);
	free(p->frame_hash);
	free(p->stack);
	free(p->stack_hash);
	memset(p, 0, sizeof(*p));
}

const char *profile_str(const struct profile *p, uint32_t id)
{
	return id < p->nstr ? p->str[id] : "";
}

/* Grow an open-addressing table of ids (stored + 1) to keep load <= 1/2. */
typedef uint64_t (*rehash_fn)(const struct profile *p, uint32_t id);

static void table_grow(const struct profile *p, uint32_t **tab, uint32_t *cap, uint32_t n,
		       rehash_fn fn)
{
	uint32_t ncap = *cap ? *cap * 2 : 256;
	uint32_t *nt;

	if (n + 1 <= *cap / 2)
		return;
	nt = xcalloc(ncap, sizeof(*nt));
	for (uint32_t i = 0; i < *cap; i++) {
		uint32_t id = (*tab)[i];
		uint64_t h;

		if (!id)
			continue;
		h = fn(p, id - 1);
		for (uint32_t j = (uint32_t)h & (ncap - 1);; j = (j + 1) & (ncap - 1)) {
			if (!nt[j]) {
				nt[j] = id;
				break;
			}
		}
	}
	free(*tab);
	*tab = nt;
	*cap = ncap;
}

static uint64_t str_rehash(const struct profile *p, uint32_t id)
{
	return hash_bytes(p->str[id], strlen(p->str[id]), HASH_SEED);
}

static uint32_t intern_str(struct profile *p, const char *s)
{
	uint64_t h;
	uint32_t j;

	table_grow(p, &p->str_hash, &p->str_hcap, p->nstr, str_rehash);
	h = hash_bytes(s, strlen(s), HASH_SEED);
	for (j = (uint32_t)h & (p->str_hcap - 1);; j = (j + 1) & (p->str_hcap - 1)) {
		uint32_t id = p->str_hash[j];

		if (!id)
			break;
		if (!strcmp(p->str[id - 1], s))
			return id - 1;
	}
	if (p->nstr == p->astr) {
		p->astr = p->astr ? p->astr * 2 : 64;
		p->str = xreallocarray(p->str, p->astr, sizeof(*p->str));
	}
	p->str[p->nstr] = xstrdup(s);
	p->str_hash[j] = ++p->nstr;
	return p->nstr - 1;
}

static uint64_t frame_key(const struct profile_frame *f)
{
	return hash_bytes(f, sizeof(*f), HASH_SEED);
}

static uint64_t frame_rehash(const struct profile *p, uint32_t id)
{
	return frame_key(&p->frame[id]);
}

static uint32_t intern_frame(struct profile *p, const char *name, const char *file, int line)
{
	struct profile_frame f;
	uint32_t j;

	memset(&f, 0, sizeof(f));
	f.name = intern_str(p, name);
	f.file = intern_str(p, file);
	f.line = line;
	table_grow(p, &p->frame_hash, &p->frame_hcap, p->nframe, frame_rehash);
	for (j = (uint32_t)frame_key(&f) & (p->frame_hcap - 1);;
	     j = (j + 1) & (p->frame_hcap - 1)) {
		uint32_t id = p->frame_hash[j];

		if (!id)
			break;
		if (!memcmp(&p->frame[id - 1], &f, sizeof(f)))
			return id - 1;
	}
	if (p->nframe == p->aframe) {
		p->aframe = p->aframe ? p->aframe * 2 : 64;
		p->frame = xreallocarray(p->frame, p->aframe, sizeof(*p->frame));
	}
	p->frame[p->nframe] = f;
	p->frame_hash[j] = ++p->nframe;
	return p->nframe - 1;
}

static uint64_t stack_rehash(const struct profile *p, uint32_t id)
{
	return hash_bytes(p->stack[id].frames, p->stack[id].depth * sizeof(uint32_t), HASH_SEED);
}

void profile_add(struct profile *p, const struct stack *st, uint64_t weight)
{
	uint32_t ids[STACK_MAX_DEPTH + 2];
	uint32_t n = 0, j;
	uint64_t h;

	if (p->threads) {
		char buf[96];

		if (st->thread_name)
			snprintf(buf, sizeof(buf), "thread (%d): %.60s", (int)st->tid, st->thread_name);
		else
			snprintf(buf, sizeof(buf), "thread (%d)", (int)st->tid);
		ids[n++] = intern_frame(p, buf, "", 0);
	}
	for (uint32_t i = st->depth; i-- > 0;) {
		const struct stack_frame *f = &st->frame[i];

		ids[n++] = intern_frame(p, f->name, f->file, p->no_lines ? 0 : f->line);
	}
	if (st->truncated)
		ids[n++] = intern_frame(p, "[truncated]", "", 0);
	table_grow(p, &p->stack_hash, &p->stack_hcap, p->nstack, stack_rehash);
	h = hash_bytes(ids, n * sizeof(uint32_t), HASH_SEED);
	for (j = (uint32_t)h & (p->stack_hcap - 1);; j = (j + 1) & (p->stack_hcap - 1)) {
		uint32_t id = p->stack_hash[j];
		struct profile_stack *s;

		if (!id)
			break;
		s = &p->stack[id - 1];
		if (s->depth == n && !memcmp(s->frames, ids, n * sizeof(uint32_t))) {
			s->count += weight;
			p->total += weight;
			return;
		}
	}
	if (p->nstack == p->astack) {
		p->astack = p->astack ? p->astack * 2 : 64;
		p->stack = xreallocarray(p->stack, p->astack, sizeof(*p->stack));
	}
	p->stack[p->nstack].frames = xmalloc(n ? n * sizeof(uint32_t) : 1);
	memcpy(p->stack[p->nstack].frames, ids, n * sizeof(uint32_t));
	p->stack[p->nstack].depth = n;
	p->stack[p->nstack].count = weight;
	p->stack_hash[j] = ++p->nstack;
	p->total += weight;
}
