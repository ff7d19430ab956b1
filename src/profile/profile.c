/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "stack/stack.h"
#include "util/path.h"
#include "util/xalloc.h"

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
	p->anode = 64;
	p->node = xcalloc(p->anode, sizeof(*p->node));
	p->nnode = 1;		/* the root */
	p->bytes = p->anode * sizeof(*p->node);
}

void profile_release(struct profile *p)
{
	for (uint32_t i = 0; i < p->nstr; i++)
		free(p->str[i]);
	free(p->str);
	free(p->str_hash);
	free(p->frame);
	free(p->frame_hash);
	free(p->node);
	free(p->node_hash);
	free(p->seen);
	free(p->thr);
	free(p->kept);
	memset(p, 0, sizeof(*p));
}

const char *profile_str(const struct profile *p, uint32_t id)
{
	return id < p->nstr ? p->str[id] : "";
}

/* Grow an open-addressing table of ids (stored + 1) to keep load <= 1/2. */
typedef uint64_t (*rehash_fn)(const struct profile *p, uint32_t id);

static void table_grow(struct profile *p, uint32_t **tab, uint32_t *cap, uint32_t n,
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
	p->bytes += (size_t)(ncap - *cap) * sizeof(*nt);
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
		p->bytes += (p->astr ? p->astr : 64) * sizeof(*p->str);
		p->astr = p->astr ? p->astr * 2 : 64;
		p->str = xreallocarray(p->str, p->astr, sizeof(*p->str));
	}
	p->str[p->nstr] = xstrdup(s);
	p->bytes += strlen(s) + 1;
	p->str_hash[j] = ++p->nstr;
	return p->nstr - 1;
}

/* A 64-bit finaliser (splitmix64's): every bit of x moves the low bits. */
static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint32_t profile_str_id(struct profile *p, const char *s)
{
	return intern_str(p, s);
}

static uint64_t frame_key(const struct profile_frame *f)
{
	return mix(((uint64_t)f->name << 32 | f->file) ^ mix((uint64_t)(uint32_t)f->line << 8 | f->kind));
}

static uint64_t frame_rehash(const struct profile *p, uint32_t id)
{
	return frame_key(&p->frame[id]);
}

/*
 * The frames of one sample are, sample after sample, the same strings at
 * the same addresses in a reader's caches: a small direct-mapped table of
 * (name, file) addresses and line finds a frame without hashing its
 * strings.  An address is only a hint (a reader may free a string and
 * keep another there), so a hit still compares both strings with the
 * frame's own.
 */
#define SEEN_MIN 64u		/* powers of two */
#define SEEN_MAX 2048u

struct profile_seen {
	const char *name, *file;
	int line;
	uint32_t kind;
	uint32_t id;		/* frame id + 1; 0 empty */
};

static struct profile_seen *seen(struct profile *p, enum profile_kind kind, const char *name,
				 const char *file, int line)
{
	uint64_t h = mix((uint64_t)(uintptr_t)name ^ mix((uint64_t)(uintptr_t)file) ^
			 ((uint64_t)(uint32_t)line << 3 | kind));

	/* sized to the frames known (a profile per tag set is often tiny) */
	if (!p->seen || (p->nframe > p->seen_size && p->seen_size < SEEN_MAX)) {
		p->bytes += (p->seen ? p->seen_size : SEEN_MIN) * sizeof(*p->seen);
		p->seen_size = p->seen ? p->seen_size * 2 : SEEN_MIN;
		free(p->seen);
		p->seen = xcalloc(p->seen_size, sizeof(*p->seen));
	}
	return &p->seen[h & (p->seen_size - 1)];
}

static uint32_t frame_find(struct profile *p, enum profile_kind kind, const char *name,
			   const char *file, int line);

/*
 * A code frame's file as the profile keeps it: normalised (util/path.h).
 * The readers normalise theirs once per code object; this is for what
 * comes from elsewhere (recordings, folded and pprof files read back),
 * once per distinct frame: a file that is not normal misses the seen
 * table and comes here.  *tmp is a copy to free, or NULL.
 */
static const char *norm_file(enum profile_kind kind, const char *file, char **tmp)
{
	*tmp = NULL;
	if (kind != PROFILE_CODE || path_is_normal(file))
		return file;
	*tmp = path_normalize(xstrdup(file));
	return *tmp;
}

uint32_t profile_frame(struct profile *p, enum profile_kind kind, const char *name,
		       const char *file, int line)
{
	struct profile_seen *e = seen(p, kind, name, file, line);

	if (e->id && e->name == name && e->file == file && e->line == line && e->kind == kind) {
		const struct profile_frame *f = &p->frame[e->id - 1];

		if (!strcmp(p->str[f->name], name) && !strcmp(p->str[f->file], file))
			return e->id - 1;
	}
	*e = (struct profile_seen){ name, file, line, kind, 0 };
	e->id = frame_find(p, kind, name, file, line) + 1;
	return e->id - 1;
}

static uint32_t frame_find(struct profile *p, enum profile_kind kind, const char *name,
			   const char *file, int line)
{
	struct profile_frame f;
	uint32_t j;
	char *tmp;

	memset(&f, 0, sizeof(f));
	f.name = intern_str(p, name);
	f.file = intern_str(p, norm_file(kind, file, &tmp));
	free(tmp);
	f.line = line;
	f.kind = kind;
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
		p->bytes += (p->aframe ? p->aframe : 64) * sizeof(*p->frame);
		p->aframe = p->aframe ? p->aframe * 2 : 64;
		p->frame = xreallocarray(p->frame, p->aframe, sizeof(*p->frame));
	}
	p->frame[p->nframe] = f;
	p->frame_hash[j] = ++p->nframe;
	return p->nframe - 1;
}

static uint64_t node_key(uint32_t parent, uint32_t frame)
{
	return mix((uint64_t)parent << 32 | frame);
}

static uint64_t node_rehash(const struct profile *p, uint32_t id)
{
	return node_key(p->node[id].parent, p->node[id].frame);
}

/* The child of parent for frame, made if new. */
static uint32_t child(struct profile *p, uint32_t parent, uint32_t frame)
{
	struct profile_node *n;
	uint32_t j;

	table_grow(p, &p->node_hash, &p->node_hcap, p->nnode, node_rehash);
	for (j = (uint32_t)node_key(parent, frame) & (p->node_hcap - 1);;
	     j = (j + 1) & (p->node_hcap - 1)) {
		uint32_t id = p->node_hash[j];

		if (!id)
			break;
		if (p->node[id - 1].parent == parent && p->node[id - 1].frame == frame)
			return id - 1;
	}
	if (p->nnode == p->anode) {
		p->bytes += p->anode * sizeof(*p->node);
		p->anode *= 2;
		p->node = xreallocarray(p->node, p->anode, sizeof(*p->node));
	}
	n = &p->node[p->nnode];
	memset(n, 0, sizeof(*n));
	n->frame = frame;
	n->parent = parent;
	n->depth = p->node[parent].depth + 1;
	if (p->node[parent].last)
		p->node[p->node[parent].last].sibling = p->nnode;
	else
		p->node[parent].child = p->nnode;
	p->node[parent].last = p->nnode;
	p->node_hash[j] = p->nnode + 1;
	return p->nnode++;
}

uint32_t profile_add_path(struct profile *p, const uint32_t *frames, uint32_t n, uint64_t weight)
{
	uint32_t node = 0;

	p->node[0].total += weight;
	for (uint32_t i = 0; i < n; i++) {
		node = child(p, node, frames[i]);
		p->node[node].total += weight;
	}
	p->node[node].self += weight;
	p->total += weight;
	return node;
}

uint32_t profile_child(struct profile *p, uint32_t parent, uint32_t frame)
{
	return child(p, parent, frame);
}

struct profile_thread {
	int32_t pid, tid;	/* pid 0 without show_pid; tid 0: empty slot */
	uint64_t interp;	/* Python: its interpreter's id, 0 the main one's */
	uint32_t frame;		/* the thread frame it had last */
};

/*
 * The slot of the thread (pid, tid) in interpreter interp (a thread in a
 * subinterpreter is another root than the same thread in the main one):
 * its own, or the empty one where it goes.
 */
static struct profile_thread *thread_slot(const struct profile *p, int32_t pid, int32_t tid,
					  uint64_t interp)
{
	uint32_t j = (uint32_t)mix(((uint64_t)(uint32_t)pid << 32 | (uint32_t)tid) ^
				   interp * 0x9E3779B97F4A7C15ull);

	for (j &= p->thr_cap - 1;; j = (j + 1) & (p->thr_cap - 1)) {
		struct profile_thread *t = &p->thr[j];

		if (!t->tid || (t->tid == tid && t->pid == pid && t->interp == interp))
			return t;
	}
}

/*
 * The thread (pid, tid) had thread frame `frame' in its last sample.  A
 * thread is named "thread (TID): NAME" and its name may change (set after
 * its first samples, or renamed): it is the same thread all the same.
 */
static void thread_note(struct profile *p, int32_t pid, int32_t tid, uint64_t interp,
			uint32_t frame)
{
	struct profile_thread *t;

	if (tid <= 0)
		return;
	if (p->nthr + 1 > p->thr_cap / 2) {
		struct profile_thread *old = p->thr;
		uint32_t cap = p->thr_cap;

		p->thr_cap = cap ? cap * 2 : 64;
		p->thr = xcalloc(p->thr_cap, sizeof(*p->thr));
		p->bytes += (size_t)(p->thr_cap - cap) * sizeof(*p->thr);
		for (uint32_t i = 0; i < cap; i++)
			if (old[i].tid)
				*thread_slot(p, old[i].pid, old[i].tid, old[i].interp) = old[i];
		free(old);
	}
	t = thread_slot(p, pid, tid, interp);
	if (!t->tid) {
		t->pid = pid;
		t->tid = tid;
		t->interp = interp;
		p->nthr++;
	} else if (t->frame != frame) {
		p->renamed = 1;
	}
	t->frame = frame;
}

void profile_thread_note(struct profile *p, pid_t pid, pid_t tid, uint64_t interp,
			 uint32_t frame)
{
	thread_note(p, p->show_pid ? (int32_t)pid : 0, (int32_t)tid, interp, frame);
}

uint32_t profile_thread_last(const struct profile *p, uint32_t frame)
{
	const char *s;
	int pid = 0, tid = 0, n = 0, m = 0;
	uint64_t interp = 0;
	const struct profile_thread *t;

	if (!p->renamed || frame >= p->nframe || p->frame[frame].kind != PROFILE_THREAD)
		return frame;
	/* the ids as profile_add() wrote them: "pid N: thread (TID)..." */
	s = profile_str(p, p->frame[frame].name);
	if (p->show_pid && (sscanf(s, "pid %d: %n", &pid, &n) != 1 || !n))
		return frame;
	if (sscanf(s + n, "thread (%d)%n", &tid, &m) != 1 || tid <= 0 || !m)
		return frame;
	/* " [interpreter N]" before the name, if any: written, not read from a target */
	if (!strncmp(s + n + m, " [interpreter ", 14))
		interp = strtoull(s + n + m + 14, NULL, 10);
	t = thread_slot(p, pid, tid, interp);
	return t->tid ? t->frame : frame;
}

#define NONE UINT32_MAX

static uint32_t str_lookup(const struct profile *p, const char *s)
{
	uint64_t h = hash_bytes(s, strlen(s), HASH_SEED);

	if (!p->str_hcap)
		return NONE;
	for (uint32_t j = (uint32_t)h & (p->str_hcap - 1);; j = (j + 1) & (p->str_hcap - 1)) {
		uint32_t id = p->str_hash[j];

		if (!id)
			return NONE;
		if (!strcmp(p->str[id - 1], s))
			return id - 1;
	}
}

static uint32_t frame_lookup(const struct profile *p, enum profile_kind kind, const char *name,
			     const char *file, int line)
{
	struct profile_frame f;
	char *tmp;

	memset(&f, 0, sizeof(f));
	f.name = str_lookup(p, name);
	f.file = str_lookup(p, norm_file(kind, file, &tmp));
	free(tmp);
	f.line = line;
	f.kind = kind;
	if (f.name == NONE || f.file == NONE || !p->frame_hcap)
		return NONE;
	for (uint32_t j = (uint32_t)frame_key(&f) & (p->frame_hcap - 1);;
	     j = (j + 1) & (p->frame_hcap - 1)) {
		uint32_t id = p->frame_hash[j];

		if (!id)
			return NONE;
		if (!memcmp(&p->frame[id - 1], &f, sizeof(f)))
			return id - 1;
	}
}

/* The child of parent for frame, 0 when there is none (the root is no child). */
static uint32_t node_lookup(const struct profile *p, uint32_t parent, uint32_t frame)
{
	if (!p->node_hcap)
		return 0;
	for (uint32_t j = (uint32_t)node_key(parent, frame) & (p->node_hcap - 1);;
	     j = (j + 1) & (p->node_hcap - 1)) {
		uint32_t id = p->node_hash[j];

		if (!id)
			return 0;
		if (p->node[id - 1].parent == parent && p->node[id - 1].frame == frame)
			return id - 1;
	}
}

/* What a sample would add to a bounded profile (counted generously). */
struct need {
	uint32_t strs, frames, nodes;
	size_t sbytes;
};

/* An array of a, doubled (from first) until it holds n. */
static uint64_t grown(uint64_t a, uint64_t n, uint64_t first)
{
	if (n <= a)
		return a;
	for (a = a ? a : first; a < n; a *= 2)
		;
	return a;
}

/* A table_grow() table of cap once it holds n, and is asked for one more. */
static uint64_t hgrown(uint64_t cap, uint64_t n)
{
	while (n + 1 > cap / 2)
		cap = cap ? cap * 2 : 256;
	return cap;
}

#define OTHER "[other]"

/*
 * Whether nd fits under max_bytes, every array and table grown as it
 * would be, the seen table at its largest, and with spare, room left for
 * one more node, and the [other] frame and its name if not made yet.
 */
static int room(const struct profile *p, struct need nd, int spare)
{
	uint64_t b = p->bytes + nd.sbytes;

	if (spare) {
		if (frame_lookup(p, PROFILE_MARK, OTHER, "", 0) == NONE) {
			nd.strs += 2;
			nd.sbytes += sizeof(OTHER) + 1;
			b += sizeof(OTHER) + 1;
			nd.frames++;
		}
		nd.nodes++;
	}
	b += (grown(p->astr, (uint64_t)p->nstr + nd.strs, 64) - p->astr) * sizeof(*p->str);
	b += (hgrown(p->str_hcap, (uint64_t)p->nstr + nd.strs) - p->str_hcap) * sizeof(uint32_t);
	b += (grown(p->aframe, (uint64_t)p->nframe + nd.frames, 64) - p->aframe) *
	     sizeof(*p->frame);
	b += (hgrown(p->frame_hcap, (uint64_t)p->nframe + nd.frames) - p->frame_hcap) *
	     sizeof(uint32_t);
	b += (grown(p->anode, (uint64_t)p->nnode + nd.nodes, 64) - p->anode) * sizeof(*p->node);
	b += (hgrown(p->node_hcap, (uint64_t)p->nnode + nd.nodes) - p->node_hcap) *
	     sizeof(uint32_t);
	b += (SEEN_MAX - (p->seen_size < SEEN_MAX ? p->seen_size : SEEN_MAX)) * sizeof(*p->seen);
	/* the sample's thread may be a new one, and grow the table of threads */
	if (p->nthr + 1 > p->thr_cap / 2)
		b += (uint64_t)(p->thr_cap ? p->thr_cap : 64) * sizeof(*p->thr);
	return b <= p->max_bytes;
}

/*
 * A frame of a sample: interned (nd NULL), or only looked for (NONE when
 * absent), what it would take counted in nd.
 */
static uint32_t stack_frame(struct profile *p, struct need *nd, enum profile_kind kind,
			    const char *name, const char *file, int line)
{
	struct profile_seen *e;
	uint32_t id;

	if (!nd)
		return profile_frame(p, kind, name, file, line);
	e = seen(p, kind, name, file, line);
	if (e->id && e->name == name && e->file == file && e->line == line && e->kind == kind) {
		const struct profile_frame *f = &p->frame[e->id - 1];

		if (!strcmp(p->str[f->name], name) && !strcmp(p->str[f->file], file))
			return e->id - 1;
	}
	id = frame_lookup(p, kind, name, file, line);
	if (id != NONE) {
		*e = (struct profile_seen){ name, file, line, kind, id + 1 };
		return id;
	}
	nd->frames++;
	if (str_lookup(p, name) == NONE) {
		nd->strs++;
		nd->sbytes += strlen(name) + 1;
	}
	if (str_lookup(p, file) == NONE) {
		nd->strs++;
		nd->sbytes += strlen(file) + 1;
	}
	return NONE;
}

/* The frame ids of st's sample, outermost first: their number. */
/* The first two of stack_ids(): st's tag set's frame, then its thread's. */
static void stack_head_ids(struct profile *p, const char *tags, const struct stack *st,
			   uint32_t *ids, struct need *nd)
{
	uint32_t n = 0;
	char buf[176], in[40] = "";
	size_t off;

	ids[n++] = stack_frame(p, nd, PROFILE_TAGS, tags ? tags : "", "", 0);
	off = p->show_pid ? (size_t)snprintf(buf, sizeof(buf), "pid %d: ", (int)st->pid) : 0;
	/* a subinterpreter's thread state: after the tid, where no name can be */
	if (st->interp)
		snprintf(in, sizeof(in), " [interpreter %" PRIu64 "]", st->interp);
	if (st->thread_name) {
		/* at most 60 bytes of the name, never half a character */
		size_t len = strlen(st->thread_name);

		if (len > 60)
			for (len = 60; len && ((unsigned char)st->thread_name[len] & 0xc0) == 0x80;
			     len--)
				;
		snprintf(buf + off, sizeof(buf) - off, "thread (%d)%s: %.*s", (int)st->tid, in,
			 (int)len, st->thread_name);
	} else
		snprintf(buf + off, sizeof(buf) - off, "thread (%d)%s", (int)st->tid, in);
	ids[n] = stack_frame(p, nd, PROFILE_THREAD, buf, "", 0);
	/* made (not only looked for): the thread's latest name */
	if (!nd)
		profile_thread_note(p, st->pid, st->tid, st->interp, ids[n]);
}

static uint32_t stack_ids(struct profile *p, const char *tags, const struct stack *st,
			  uint32_t *ids, struct need *nd)
{
	uint32_t n = 2;

	stack_head_ids(p, tags, st, ids, nd);
	if (st->truncated)
		ids[n++] = stack_frame(p, nd, PROFILE_MARK, "[truncated]", "", 0);
	for (uint32_t i = st->depth; i-- > 0;) {
		const struct stack_frame *f = &st->frame[i];

		ids[n++] = stack_frame(p, nd, *f->file ? PROFILE_CODE : PROFILE_MARK, f->name,
				       f->file, p->no_lines ? 0 : f->line);
	}
	return n;
}

/* weight at node and along its path up to the root */
static void add_up(struct profile *p, uint32_t node, uint64_t weight)
{
	p->node[node].self += weight;
	for (;; node = p->node[node].parent) {
		p->node[node].total += weight;
		if (!node)
			break;
	}
	p->total += weight;
}

/*
 * A sample with no room: counted in the [other] frame under anchor (its
 * thread's or tag set's node, or the root).  The first goes to the
 * root's, made in the room kept for it; the others there too when their
 * anchor has none and no room is left for it.
 */
static uint32_t add_other(struct profile *p, uint32_t anchor, uint64_t weight)
{
	uint32_t of = frame_lookup(p, PROFILE_MARK, OTHER, "", 0), node;
	struct need one = { 0, 0, 1, 0 };

	if (of == NONE || !node_lookup(p, 0, of))
		anchor = 0;
	else if (anchor && !node_lookup(p, anchor, of) && !room(p, one, 0))
		anchor = 0;
	if (of == NONE)
		of = profile_frame(p, PROFILE_MARK, OTHER, "", 0);
	/* child() may grow its table even to find a node: only to make one */
	node = node_lookup(p, anchor, of);
	if (!node)
		node = child(p, anchor, of);
	add_up(p, node, weight);
	p->other += weight;
	return node;
}

/*
 * A reader's kept stack (stack.kept) met before: where its path ends, and
 * the node of its tag set and thread it ends under.  Direct-mapped: a
 * miss costs only what a stack costs anyway.
 */
#define KEPT_SLOTS 4096u	/* a power of two */

struct profile_kept {
	uint64_t serial;	/* stack.kept; 0: empty */
	uint32_t under, leaf;
};

/*
 * The node of st's tag set and thread, if it is there already (nothing
 * is made), else 0; the thread noted as profile_add() notes it.
 */
static uint32_t kept_under(struct profile *p, const char *tags, const struct stack *st)
{
	uint32_t ids[2], node;
	struct need nd = { 0, 0, 0, 0 };

	stack_head_ids(p, tags, st, ids, &nd);
	if (ids[0] == NONE || ids[1] == NONE || !(node = node_lookup(p, 0, ids[0])) ||
	    !(node = node_lookup(p, node, ids[1])))
		return 0;
	profile_thread_note(p, st->pid, st->tid, st->interp, ids[1]);
	return node;
}

static uint32_t add_stack(struct profile *p, const char *tags, const struct stack *st,
			  uint64_t weight);

/*
 * A thousand waiting threads shown again each tick (a reader's kept
 * stacks) would cost a thousand walks down the trie a tick, a node lookup
 * a frame: a stack met before under the same tag set and thread is added
 * where it ended then.
 */
uint32_t profile_add(struct profile *p, const char *tags, const struct stack *st, uint64_t weight)
{
	struct profile_kept *k;
	uint32_t under, leaf, up, steps = st->depth + (st->truncated ? 1u : 0u);
	uint64_t other;

	if (!st->kept)
		return add_stack(p, tags, st, weight);
	if (!p->kept) {
		p->kept = xcalloc(KEPT_SLOTS, sizeof(*p->kept));
		p->bytes += KEPT_SLOTS * sizeof(*p->kept);
	}
	k = &p->kept[mix(st->kept) & (KEPT_SLOTS - 1)];
	under = kept_under(p, tags, st);
	if (under && k->serial == st->kept && k->under == under) {
		add_up(p, k->leaf, weight);
		return k->leaf;
	}
	other = p->other;
	leaf = add_stack(p, tags, st, weight);
	/* only a path made whole (not an [other] frame's count) is kept */
	if (p->other != other)
		return leaf;
	if (!under)
		under = kept_under(p, tags, st);
	for (up = leaf; up && steps; steps--)
		up = p->node[up].parent;
	if (under && !steps && up == under && leaf != under) {
		k->serial = st->kept;
		k->under = under;
		k->leaf = leaf;
	}
	return leaf;
}

static uint32_t add_stack(struct profile *p, const char *tags, const struct stack *st,
			  uint64_t weight)
{
	uint32_t ids[STACK_MAX_DEPTH + 3];
	uint32_t n, i, node = 0, anchor = 0;
	struct need nd = { 0, 0, 0, 0 };

	if (!p->max_bytes) {
		n = stack_ids(p, tags, st, ids, NULL);
		return profile_add_path(p, ids, n, weight);
	}
	/* bounded: what the sample needs is looked at before anything is made */
	n = stack_ids(p, tags, st, ids, &nd);
	/* a thread frame made before: its thread's (seen before), its latest */
	if (ids[1] != NONE)
		profile_thread_note(p, st->pid, st->tid, st->interp, ids[1]);
	for (i = 0; i < n && ids[i] != NONE; i++) {
		uint32_t c = node_lookup(p, node, ids[i]);

		if (!c)
			break;
		node = c;
		if (i < 2)	/* the tag set, then the thread */
			anchor = node;
	}
	if (i == n) {
		add_up(p, node, weight);
		return node;
	}
	nd.nodes = n - i;
	if (!room(p, nd, 1))
		return add_other(p, anchor, weight);
	n = stack_ids(p, tags, st, ids, NULL);
	return profile_add_path(p, ids, n, weight);
}

int profile_stacks(const struct profile *p, profile_stack_fn fn, void *arg)
{
	return profile_stacks_below(p, 0, fn, arg);
}

int profile_stacks_below(const struct profile *p, uint32_t top, profile_stack_fn fn, void *arg)
{
	uint32_t *path = xmalloc((STACK_MAX_DEPTH + 8) * sizeof(*path));
	uint32_t node = p->node[top].child, depth = 0;
	int ret = 0;

	/* iterative depth-first walk: children, then siblings, then back up */
	while (node && !ret) {
		const struct profile_node *n = &p->node[node];

		if (depth < STACK_MAX_DEPTH + 8)
			path[depth] = n->frame;
		depth++;
		if (n->self)
			ret = fn(arg, p, path, depth < STACK_MAX_DEPTH + 8 ? depth : STACK_MAX_DEPTH + 8,
				 n->self);
		if (n->child) {
			node = n->child;
			continue;
		}
		while (node != top && !p->node[node].sibling) {
			node = p->node[node].parent;
			depth--;
		}
		if (node == top)
			break;
		node = p->node[node].sibling;
		depth--;
	}
	free(path);
	return ret;
}

struct project {
	struct profile *dst;
	unsigned int keep;
	const char *tag;	/* "k=v": only the tag sets holding it; NULL: all */
};

/* Whether the tag set set ("k=v,k=v") holds the pair kv ("k=v") whole. */
static int tags_hold(const char *set, const char *kv)
{
	size_t n = strlen(kv);

	for (const char *s = set; *s;) {
		size_t len = strcspn(s, ",");

		if (len == n && !memcmp(s, kv, n))
			return 1;
		s += len;
		if (*s)
			s++;
	}
	return 0;
}

static int project_one(void *arg, const struct profile *src, const uint32_t *frames,
		       uint32_t depth, uint64_t count)
{
	struct project *pj = arg;
	uint32_t *ids, n = 0;

	if (pj->tag && (!depth || src->frame[frames[0]].kind != PROFILE_TAGS ||
			!tags_hold(profile_str(src, src->frame[frames[0]].name), pj->tag)))
		return 0;
	ids = xmalloc((depth ? depth : 1) * sizeof(*ids));
	for (uint32_t i = 0; i < depth; i++) {
		const struct profile_frame *f = &src->frame[profile_thread_last(src, frames[i])];

		/* an empty tag set (no tags) leaves no frame behind either */
		if ((f->kind == PROFILE_TAGS &&
		     (!(pj->keep & PROFILE_KEEP_TAGS) || !*profile_str(src, f->name))) ||
		    (f->kind == PROFILE_THREAD && !(pj->keep & PROFILE_KEEP_THREADS)))
			continue;
		ids[n++] = profile_frame(pj->dst, f->kind, profile_str(src, f->name),
					 profile_str(src, f->file),
					 pj->keep & PROFILE_DROP_LINES ? 0 : f->line);
	}
	profile_add_path(pj->dst, ids, n, count);
	free(ids);
	return 0;
}

void profile_project(const struct profile *src, unsigned int keep, struct profile *dst)
{
	struct project pj = { dst, keep, NULL };

	profile_init(dst);
	dst->no_lines = src->no_lines || (keep & PROFILE_DROP_LINES);
	profile_stacks(src, project_one, &pj);
}

void profile_project_tag(const struct profile *src, unsigned int keep, const char *tag,
			 struct profile *dst)
{
	struct project pj = { dst, keep & ~PROFILE_KEEP_TAGS, tag };

	profile_init(dst);
	dst->no_lines = src->no_lines;
	profile_stacks(src, project_one, &pj);
}

size_t profile_footprint(const struct profile *p)
{
	size_t n = 0;

	for (uint32_t i = 0; i < p->nstr; i++)
		n += strlen(p->str[i]) + 1;
	n += (size_t)p->astr * sizeof(*p->str) + (size_t)p->str_hcap * sizeof(uint32_t);
	n += (size_t)p->aframe * sizeof(*p->frame) + (size_t)p->frame_hcap * sizeof(uint32_t);
	n += (size_t)p->anode * sizeof(*p->node) + (size_t)p->node_hcap * sizeof(uint32_t);
	n += (size_t)p->seen_size * sizeof(*p->seen);
	n += (size_t)p->thr_cap * sizeof(*p->thr);
	return n;
}
