/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile/raw.h"
#include "profile/rawread.h"
#include "stack/stack.h"
#include "util/path.h"
#include "util/pb.h"
#include "util/utf8.h"
#include "util/xalloc.h"

struct rr_frame {
	uint32_t name, file;
	int line;
};

struct rr_node {
	uint32_t parent, frame;
	uint32_t depth;		/* frames from the root down to it */
};

struct rr_thread {
	int32_t pid, tid;
	uint64_t thread_id;
	uint32_t name;		/* string id + 1, 0 none */
};

struct rawread_priv {
	char **str;
	uint32_t nstr, astr;
	size_t strbytes;
	char **file;		/* [astr]: str[i] normalised when not normal, or NULL */
	struct rr_frame *frame;
	uint32_t nframe, aframe;
	struct rr_node *node;
	uint32_t nnode, anode;
	struct rr_thread *thread;
	uint32_t nthread, athread;
	unsigned char *zbuf, *buf;
	struct stack *st;
	uint32_t expanded;	/* the node st's frames are of, UINT32_MAX none */
	int lazy;		/* rawread_run_nodes(): frames only when asked */
	int64_t last_us, start_us;
	int meta, end;
};

/* A cursor over one block's records. */

static enum perr bad(struct rawread *r, enum perr err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static enum perr bad(struct rawread *r, enum perr err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
	return err;
}

/* A varint that must be below limit. */
static int get_below(struct pb_cur *c, uint64_t limit, uint32_t *out)
{
	uint64_t v;

	if (pb_get_varint(c, &v) || v >= limit)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define GROW(arr, n, a) do {							\
	if ((n) == (a)) {							\
		(a) = (a) ? (a) * 2 : 64;					\
		(arr) = xreallocarray((arr), (a), sizeof(*(arr)));		\
	}									\
} while (0)

static enum perr rec_string(struct rawread *r, struct pb_cur *c)
{
	struct rawread_priv *q = r->priv;
	uint64_t n;
	char *s;

	if (pb_get_varint(c, &n) || n > (uint64_t)(c->end - c->p))
		return bad(r, PERR_CORRUPT, "string %u runs past its block", q->nstr);
	if (n > RAW_MAX_STRING)
		return bad(r, PERR_TOOBIG, "string %u is %llu bytes long (at most %u)", q->nstr,
			   (unsigned long long)n, RAW_MAX_STRING);
	if (q->nstr >= RAW_MAX_ITEMS || q->strbytes + n > RAW_MAX_STRBYTES)
		return bad(r, PERR_TOOBIG, "more than %u strings or %u MiB of them", RAW_MAX_ITEMS,
			   RAW_MAX_STRBYTES >> 20);
	/* names go on into output formats: valid UTF-8 with no NUL, as readers make them */
	s = xmalloc(n + 1);
	utf8_sanitize(s, n + 1, (const char *)c->p, n);
	c->p += n;
	GROW(q->str, q->nstr, q->astr);
	q->file = xreallocarray(q->file, q->astr, sizeof(*q->file));
	q->file[q->nstr] = NULL;
	q->str[q->nstr++] = s;
	q->strbytes += n;
	return PERR_OK;
}

static enum perr rec_frame(struct rawread *r, struct pb_cur *c)
{
	struct rawread_priv *q = r->priv;
	struct rr_frame f;
	uint64_t z;
	int64_t line;

	if (get_below(c, q->nstr, &f.name) || get_below(c, q->nstr, &f.file) || pb_get_varint(c, &z))
		return bad(r, PERR_CORRUPT, "frame %u refers to an undefined string", q->nframe);
	line = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
	if (line < 0 || line > INT_MAX)
		return bad(r, PERR_CORRUPT, "frame %u has line %lld", q->nframe, (long long)line);
	f.line = (int)line;
	if (q->nframe >= RAW_MAX_ITEMS)
		return bad(r, PERR_TOOBIG, "more than %u frames", RAW_MAX_ITEMS);
	/*
	 * A file goes on normalised (util/path.h), as readers make them: a
	 * copy (the string may be a name too), once, within the same bound.
	 */
	if (!q->file[f.file] && !path_is_normal(q->str[f.file])) {
		size_t n = strlen(q->str[f.file]);

		if (q->strbytes + n > RAW_MAX_STRBYTES)
			return bad(r, PERR_TOOBIG, "more than %u strings or %u MiB of them",
				   RAW_MAX_ITEMS, RAW_MAX_STRBYTES >> 20);
		q->file[f.file] = path_normalize(xstrdup(q->str[f.file]));
		q->strbytes += n;
	}
	GROW(q->frame, q->nframe, q->aframe);
	q->frame[q->nframe++] = f;
	return PERR_OK;
}

static enum perr rec_node(struct rawread *r, struct pb_cur *c)
{
	struct rawread_priv *q = r->priv;
	struct rr_node n;

	if (get_below(c, q->nnode, &n.parent) || get_below(c, q->nframe, &n.frame))
		return bad(r, PERR_CORRUPT, "stack node %u refers to an undefined node or frame",
			   q->nnode);
	n.depth = q->node[n.parent].depth + 1;
	if (n.depth > STACK_MAX_DEPTH)
		return bad(r, PERR_TOOBIG, "stack node %u is %u frames deep (at most %d)", q->nnode,
			   n.depth, STACK_MAX_DEPTH);
	if (q->nnode >= RAW_MAX_ITEMS)
		return bad(r, PERR_TOOBIG, "more than %u stack nodes", RAW_MAX_ITEMS);
	GROW(q->node, q->nnode, q->anode);
	q->node[q->nnode++] = n;
	return PERR_OK;
}

static enum perr rec_thread(struct rawread *r, struct pb_cur *c)
{
	struct rawread_priv *q = r->priv;
	struct rr_thread t;
	uint32_t pid, tid;

	if (get_below(c, (uint64_t)INT32_MAX + 1, &pid) ||
	    get_below(c, (uint64_t)INT32_MAX + 1, &tid) || pb_get_varint(c, &t.thread_id) ||
	    get_below(c, (uint64_t)q->nstr + 1, &t.name))
		return bad(r, PERR_CORRUPT, "thread %u is malformed", q->nthread);
	t.pid = (int32_t)pid;
	t.tid = (int32_t)tid;
	if (q->nthread >= RAW_MAX_THREADS)
		return bad(r, PERR_TOOBIG, "more than %u threads", RAW_MAX_THREADS);
	GROW(q->thread, q->nthread, q->athread);
	q->thread[q->nthread++] = t;
	return PERR_OK;
}

static int state_value(unsigned int bits)
{
	return bits == 0 ? -1 : bits == 2;
}

static enum perr rec_sample(struct rawread *r, struct pb_cur *c, rawread_fn fn, void *arg, int *stop)
{
	struct rawread_priv *q = r->priv;
	struct stack *st = q->st;
	const struct rr_thread *t;
	uint32_t thread, node, tags;
	uint64_t dt;
	unsigned int state;

	if (pb_get_varint(c, &dt) || get_below(c, q->nthread, &thread) ||
	    get_below(c, q->nnode, &node) || get_below(c, (uint64_t)q->nstr + 1, &tags) ||
	    c->p >= c->end)
		return bad(r, PERR_CORRUPT, "sample %llu refers to something undefined",
			   (unsigned long long)r->samples);
	state = *c->p++;
	if (state & ~(RAW_STATE_TRUNCATED | 15u) || RAW_STATE_GIL(state) == 3 ||
	    RAW_STATE_IDLE(state) == 3)
		return bad(r, PERR_CORRUPT, "sample %llu has state %#x",
			   (unsigned long long)r->samples, state);
	/* ten years in all: a time that overflows is no recording's */
	if (dt > 315360000000000ull || q->last_us > INT64_MAX / 1000 - (int64_t)dt)
		return bad(r, PERR_CORRUPT, "sample %llu is %llu us after the one before",
			   (unsigned long long)r->samples, (unsigned long long)dt);
	q->last_us += (int64_t)dt;
	t = &q->thread[thread];
	st->pid = t->pid;
	st->tid = t->tid;
	st->thread_id = t->thread_id;
	st->thread_name = t->name ? q->str[t->name - 1] : NULL;
	st->holds_gil = state_value(RAW_STATE_GIL(state));
	st->idle = state_value(RAW_STATE_IDLE(state));
	st->truncated = !!(state & RAW_STATE_TRUNCATED);
	r->node = node;
	r->thread = thread;
	r->tags = tags;
	if (q->lazy)
		st->depth = 0;
	else
		rawread_frames(r);
	r->samples++;
	if (fn(arg, q->last_us * 1000, tags ? q->str[tags - 1] : NULL, st))
		*stop = 1;
	return PERR_OK;
}

/*
 * A node's stack is as deep as it is, and samples of one node may come by
 * the hundred thousand: the frames are walked only for a node other than
 * the last one walked, and by rawread_run_nodes()'s callers only when they
 * need them.
 */
const struct stack *rawread_frames(const struct rawread *r)
{
	struct rawread_priv *q = r->priv;
	struct stack *st = q->st;

	if (q->expanded != r->node) {
		unsigned int depth = 0;

		/* leaf first: from the node up to the root */
		for (uint32_t n = r->node; n; n = q->node[n].parent) {
			const struct rr_frame *f = &q->frame[q->node[n].frame];

			st->frame[depth].name = q->str[f->name];
			st->frame[depth].file = q->file[f->file] ? q->file[f->file] : q->str[f->file];
			st->frame[depth].line = f->line;
			depth++;
		}
		q->expanded = r->node;
	}
	st->depth = q->node[r->node].depth;
	return st;
}

uint32_t rawread_node(const struct rawread *r, uint32_t node, struct stack_frame *frame)
{
	const struct rawread_priv *q = r->priv;
	const struct rr_frame *f = &q->frame[q->node[node].frame];

	frame->name = q->str[f->name];
	frame->file = q->file[f->file] ? q->file[f->file] : q->str[f->file];
	frame->line = f->line;
	return q->node[node].parent;
}

static enum perr rec_meta(struct rawread *r, struct pb_cur *c)
{
	struct rawread_priv *q = r->priv;
	uint64_t start, rate, flags, n;

	if (pb_get_varint(c, &start) || pb_get_varint(c, &rate) || pb_get_varint(c, &flags) ||
	    pb_get_varint(c, &n) || n > (uint64_t)(c->end - c->p))
		return bad(r, PERR_CORRUPT, "its header record is malformed");
	if (start > INT64_MAX / 1000 || rate > 1000000 || flags > 7)
		return bad(r, PERR_CORRUPT, "its header record has impossible values");
	q->start_us = q->last_us = (int64_t)start;
	r->start = (double)start / 1e6;
	r->rate = (unsigned int)rate;
	r->flags = (unsigned int)flags;
	utf8_sanitize(r->title, sizeof(r->title), (const char *)c->p,
		      n < sizeof(r->title) ? n : sizeof(r->title) - 1);
	c->p += n;
	q->meta = 1;
	return PERR_OK;
}

static enum perr rec_end(struct rawread *r, struct pb_cur *c)
{
	struct rawread_priv *q = r->priv;
	uint64_t samples, duration;

	if (pb_get_varint(c, &samples) || pb_get_varint(c, &duration))
		return bad(r, PERR_CORRUPT, "its end record is malformed");
	if (samples != r->samples)
		return bad(r, PERR_CORRUPT, "its end record counts %llu samples, the file holds %llu",
			   (unsigned long long)samples, (unsigned long long)r->samples);
	if (c->p != c->end)
		return bad(r, PERR_CORRUPT, "records follow its end record");
	r->duration = (double)duration / 1e6;
	q->end = 1;
	return PERR_OK;
}

static enum perr block_records(struct rawread *r, struct pb_cur *c, rawread_fn fn, void *arg,
			       int *stop)
{
	struct rawread_priv *q = r->priv;
	enum perr err = PERR_OK;

	while (c->p < c->end && !err && !*stop) {
		int type = *c->p++;

		if (!q->meta && type != RAW_META)
			return bad(r, PERR_CORRUPT, "it does not start with its header record");
		switch (type) {
		case RAW_META:
			if (q->meta)
				return bad(r, PERR_CORRUPT, "it has a second header record");
			err = rec_meta(r, c);
			break;
		case RAW_STRING:
			err = rec_string(r, c);
			break;
		case RAW_FRAME:
			err = rec_frame(r, c);
			break;
		case RAW_NODE:
			err = rec_node(r, c);
			break;
		case RAW_THREAD:
			err = rec_thread(r, c);
			break;
		case RAW_SAMPLE:
			err = rec_sample(r, c, fn, arg, stop);
			break;
		case RAW_END:
			err = rec_end(r, c);
			break;
		default:
			return bad(r, PERR_CORRUPT, "unknown record type %#x", (unsigned int)type);
		}
	}
	return err;
}

/* Read exactly n bytes: 1, 0 at a clean end of file, -1 torn (or errno). */
static int read_all(FILE *f, void *buf, size_t n)
{
	size_t got = fread(buf, 1, n, f);

	if (got == n)
		return 1;
	if (ferror(f))
		return -2;
	return got ? -1 : 0;
}

static void torn(struct rawread *r, uint64_t block, const char *where)
{
	r->torn = 1;
	snprintf(r->why, sizeof(r->why), "it ends %s (block %llu): %llu samples read", where,
		 (unsigned long long)block, (unsigned long long)r->samples);
}

static enum perr run(struct rawread *r, FILE *f, rawread_fn fn, void *arg, int lazy)
{
	unsigned char magic[RAW_MAGIC_LEN + 1], head[RAW_BLOCK_HEADER];
	struct rawread_priv *q;
	uint64_t block = 0;
	int stop = 0, n;

	memset(r, 0, sizeof(*r));
	q = r->priv = xcalloc(1, sizeof(*r->priv));
	q->lazy = lazy;
	q->expanded = UINT32_MAX;
	q->st = xmalloc(sizeof(*q->st));
	memset(q->st, 0, sizeof(*q->st));
	/* node 0: the empty stack */
	q->anode = 64;
	q->node = xcalloc(q->anode, sizeof(*q->node));
	q->nnode = 1;
	q->buf = xmalloc(RAW_MAX_BLOCK);
	q->zbuf = xmalloc(compressBound(RAW_MAX_BLOCK));
	n = read_all(f, magic, sizeof(magic));
	if (n == -2)
		return bad(r, PERR_IO, "%s", strerror(errno));
	if (n != 1 || memcmp(magic, RAW_MAGIC, RAW_MAGIC_LEN))
		return bad(r, PERR_CORRUPT, "it is not a raw recording (no '%s' at its start)",
			   RAW_MAGIC);
	if (magic[RAW_MAGIC_LEN] != RAW_VERSION)
		return bad(r, PERR_CORRUPT, "it is a raw recording of version %u; this pyrospy reads "
			   "version %u", magic[RAW_MAGIC_LEN], RAW_VERSION);
	while (!stop) {
		uint32_t zlen, rawlen;
		uLongf outlen;
		struct pb_cur c;
		enum perr err;

		n = read_all(f, head, sizeof(head));
		if (n == -2)
			return bad(r, PERR_IO, "%s", strerror(errno));
		if (n == 0 && !q->end)
			torn(r, block, "without its end record");
		if (n == 0)
			break;
		if (n < 0) {
			torn(r, block, "inside a block header");
			break;
		}
		if (q->end)
			return bad(r, PERR_CORRUPT, "blocks follow its end record");
		zlen = le32(head);
		rawlen = le32(head + 4);
		if (!rawlen || rawlen > RAW_MAX_BLOCK || !zlen || zlen > compressBound(rawlen))
			return bad(r, PERR_CORRUPT, "block %llu claims %u bytes in %u compressed",
				   (unsigned long long)block, rawlen, zlen);
		n = read_all(f, q->zbuf, zlen);
		if (n == -2)
			return bad(r, PERR_IO, "%s", strerror(errno));
		if (n != 1) {
			torn(r, block, "inside a block");
			break;
		}
		if ((uint32_t)crc32(0L, q->zbuf, zlen) != le32(head + 8))
			return bad(r, PERR_CORRUPT, "block %llu fails its checksum",
				   (unsigned long long)block);
		outlen = rawlen;
		if (uncompress(q->buf, &outlen, q->zbuf, zlen) != Z_OK || outlen != rawlen)
			return bad(r, PERR_CORRUPT, "block %llu does not decompress to its %u bytes",
				   (unsigned long long)block, rawlen);
		c.p = q->buf;
		c.end = q->buf + rawlen;
		err = block_records(r, &c, fn, arg, &stop);
		if (err)
			return err;
		block++;
	}
	if (!q->end || stop)
		r->duration = (double)(q->last_us - q->start_us) / 1e6;
	return PERR_OK;
}

enum perr rawread_run(struct rawread *r, FILE *f, rawread_fn fn, void *arg)
{
	return run(r, f, fn, arg, 0);
}

enum perr rawread_run_nodes(struct rawread *r, FILE *f, rawread_fn fn, void *arg)
{
	return run(r, f, fn, arg, 1);
}

void rawread_release(struct rawread *r)
{
	struct rawread_priv *q = r->priv;

	if (!q)
		return;
	for (uint32_t i = 0; i < q->nstr; i++)
		free(q->str[i]);
	for (uint32_t i = 0; i < q->nstr; i++)
		free(q->file[i]);
	free(q->str);
	free(q->file);
	free(q->frame);
	free(q->node);
	free(q->thread);
	free(q->zbuf);
	free(q->buf);
	free(q->st);
	free(q);
	r->priv = NULL;
}
