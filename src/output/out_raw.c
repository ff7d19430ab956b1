/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "output/out.h"
#include "profile/profile.h"
#include "profile/raw.h"
#include "stack/stack.h"
#include "util/xalloc.h"

/*
 * The raw recording's writer (format in raw.h and docs/raw-format.md).
 * A private profile is the dictionary: its strings, frames and trie nodes
 * get their ids in the order they are made, which is the order the file
 * defines them in, so after each sample the writer defines what is new
 * (ids from the last count on) and refers to the rest.  Records gather in
 * a block that is compressed and written when it holds a second of
 * samples or BLOCK_BYTES, so a pyrospy killed loses at most that.
 */
#define BLOCK_BYTES (64u * 1024)
#define BLOCK_NS 1000000000ll

struct raw_thread {
	int32_t pid, tid;
	uint64_t thread_id;
	uint32_t name;		/* string id + 1, 0 none */
};

struct out_stream {
	FILE *f;
	struct profile dict;
	uint32_t nstr, nframe, nnode;	/* defined so far */
	struct raw_thread *thread;
	uint32_t nthread, athread;
	uint32_t *thread_hash;	/* open addressing: id + 1, 0 empty */
	uint32_t thread_hcap;
	unsigned char *buf;	/* the block's records */
	size_t len, cap;
	unsigned char *zbuf;
	size_t zcap;
	int64_t start_us, last_us;	/* of the recording, of the last sample */
	int64_t block_ns;	/* when the block was started, 0 empty */
	uint64_t samples;
	int err;		/* errno of the first failure, 0 none */
};

static void put_byte(struct out_stream *s, unsigned char c)
{
	if (s->len == s->cap) {
		s->cap = s->cap ? s->cap * 2 : BLOCK_BYTES * 2;
		s->buf = xrealloc(s->buf, s->cap);
	}
	s->buf[s->len++] = c;
}

static void put_varint(struct out_stream *s, uint64_t v)
{
	while (v >= 0x80) {
		put_byte(s, (unsigned char)(v | 0x80));
		v >>= 7;
	}
	put_byte(s, (unsigned char)v);
}

static void put_string(struct out_stream *s, const char *str)
{
	size_t n = strlen(str);

	/* readers cut names at 4096 bytes, tag sets are shorter: never in practice */
	if (n > RAW_MAX_STRING)
		n = RAW_MAX_STRING;
	put_varint(s, n);
	for (size_t i = 0; i < n; i++)
		put_byte(s, (unsigned char)str[i]);
}

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/* Compress the block's records and write them; then f is flushed. */
static int flush_block(struct out_stream *s)
{
	unsigned char head[RAW_BLOCK_HEADER];
	uLongf zlen;

	if (s->err)
		return -1;
	if (!s->len)
		return 0;
	zlen = compressBound((uLong)s->len);
	if (zlen > s->zcap) {
		s->zcap = zlen;
		s->zbuf = xrealloc(s->zbuf, s->zcap);
	}
	if (compress2(s->zbuf, &zlen, s->buf, (uLong)s->len, Z_BEST_COMPRESSION) != Z_OK) {
		s->err = ENOMEM;
		return -1;
	}
	put_le32(head, (uint32_t)zlen);
	put_le32(head + 4, (uint32_t)s->len);
	put_le32(head + 8, (uint32_t)crc32(0L, s->zbuf, (uInt)zlen));
	if (fwrite(head, sizeof(head), 1, s->f) != 1 || fwrite(s->zbuf, zlen, 1, s->f) != 1 ||
	    fflush(s->f) == EOF) {
		s->err = errno ? errno : EIO;
		return -1;
	}
	s->len = 0;
	s->block_ns = 0;
	return 0;
}

/* Define what the last additions to the dictionary made. */
static void define_new(struct out_stream *s)
{
	const struct profile *d = &s->dict;

	/* a deep stack of long new names is split: definitions hold across blocks */
	for (; s->nstr < d->nstr; s->nstr++) {
		if (s->len >= BLOCK_BYTES)
			flush_block(s);
		put_byte(s, RAW_STRING);
		put_string(s, d->str[s->nstr]);
	}
	for (; s->nframe < d->nframe; s->nframe++) {
		const struct profile_frame *f = &d->frame[s->nframe];

		if (s->len >= BLOCK_BYTES)
			flush_block(s);
		put_byte(s, RAW_FRAME);
		put_varint(s, f->name);
		put_varint(s, f->file);
		/* zigzag: a line is never negative, but a format need not trust that */
		put_varint(s, ((uint64_t)(int64_t)f->line << 1) ^ (uint64_t)((int64_t)f->line >> 63));
	}
	for (; s->nnode < d->nnode; s->nnode++) {
		if (s->len >= BLOCK_BYTES)
			flush_block(s);
		put_byte(s, RAW_NODE);
		put_varint(s, d->node[s->nnode].parent);
		put_varint(s, d->node[s->nnode].frame);
	}
}

static uint64_t thread_key(const struct raw_thread *t)
{
	uint64_t h = ((uint64_t)(uint32_t)t->pid << 32 | (uint32_t)t->tid) ^
		     (t->thread_id * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)t->name << 17);

	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 29);
}

/* The thread's id, defined first if new. */
static uint32_t thread_id(struct out_stream *s, const struct raw_thread *t)
{
	uint32_t j;

	if (s->nthread + 1 > s->thread_hcap / 2) {
		uint32_t ncap = s->thread_hcap ? s->thread_hcap * 2 : 64;
		uint32_t *nt = xcalloc(ncap, sizeof(*nt));

		for (uint32_t i = 0; i < s->nthread; i++) {
			for (j = (uint32_t)thread_key(&s->thread[i]) & (ncap - 1); nt[j];
			     j = (j + 1) & (ncap - 1))
				;
			nt[j] = i + 1;
		}
		free(s->thread_hash);
		s->thread_hash = nt;
		s->thread_hcap = ncap;
	}
	for (j = (uint32_t)thread_key(t) & (s->thread_hcap - 1); s->thread_hash[j];
	     j = (j + 1) & (s->thread_hcap - 1))
		if (!memcmp(&s->thread[s->thread_hash[j] - 1], t, sizeof(*t)))
			return s->thread_hash[j] - 1;
	if (s->nthread == s->athread) {
		s->athread = s->athread ? s->athread * 2 : 16;
		s->thread = xreallocarray(s->thread, s->athread, sizeof(*s->thread));
	}
	s->thread[s->nthread] = *t;
	s->thread_hash[j] = ++s->nthread;
	define_new(s);		/* the name */
	put_byte(s, RAW_THREAD);
	put_varint(s, (uint32_t)t->pid);
	put_varint(s, (uint32_t)t->tid);
	put_varint(s, t->thread_id);
	put_varint(s, t->name);
	return s->nthread - 1;
}

static unsigned int state_bits(int v)
{
	return v < 0 ? 0u : v ? 2u : 1u;
}

static int raw_sample(struct out_stream *s, int64_t when_ns, const char *tags,
		      const struct stack *st)
{
	uint32_t ids[STACK_MAX_DEPTH];
	struct raw_thread th;
	uint32_t n = 0, node, thread, tagid;
	int64_t us = when_ns / 1000;

	if (s->err)
		return -1;
	for (uint32_t i = st->depth; i-- > 0 && n < STACK_MAX_DEPTH;) {
		const struct stack_frame *f = &st->frame[i];

		ids[n++] = profile_frame(&s->dict, *f->file ? PROFILE_CODE : PROFILE_MARK, f->name,
					 f->file, f->line);
	}
	node = n ? profile_add_path(&s->dict, ids, n, 1) : 0;
	tagid = tags && *tags ? profile_str_id(&s->dict, tags) + 1 : 0;
	memset(&th, 0, sizeof(th));
	th.pid = st->pid;
	th.tid = st->tid;
	th.thread_id = st->thread_id;
	th.name = st->thread_name ? profile_str_id(&s->dict, st->thread_name) + 1 : 0;
	define_new(s);
	thread = thread_id(s, &th);
	/* the sampler's times never go back; a caller's might */
	if (us < s->last_us)
		us = s->last_us;
	put_byte(s, RAW_SAMPLE);
	put_varint(s, (uint64_t)(us - s->last_us));
	put_varint(s, thread);
	put_varint(s, node);
	put_varint(s, tagid);
	put_byte(s, (unsigned char)(state_bits(st->holds_gil) | state_bits(st->idle) << 2 |
				    (st->truncated ? RAW_STATE_TRUNCATED : 0u)));
	s->last_us = us;
	s->samples++;
	if (!s->block_ns)
		s->block_ns = when_ns;
	if (s->len >= BLOCK_BYTES || when_ns - s->block_ns >= BLOCK_NS)
		return flush_block(s);
	return 0;
}

static struct out_stream *raw_open(FILE *f, const struct out_meta *meta, unsigned int kept)
{
	struct out_stream *s = xcalloc(1, sizeof(*s));
	unsigned int flags = (kept & OUT_KEPT_IDLE ? RAW_META_IDLE : 0u) |
			     (kept & OUT_KEPT_GIL ? RAW_META_GIL : 0u) |
			     (kept & OUT_KEPT_PIDS ? RAW_META_PIDS : 0u);

	s->f = f;
	profile_init(&s->dict);
	s->nnode = 1;		/* the root, node 0: the empty stack, never defined */
	s->start_us = s->last_us = (int64_t)(meta->start * 1e6);
	if (fwrite(RAW_MAGIC, RAW_MAGIC_LEN, 1, f) != 1 || putc(RAW_VERSION, f) == EOF) {
		s->err = errno ? errno : EIO;
		goto out;
	}
	put_byte(s, RAW_META);
	put_varint(s, (uint64_t)s->start_us);
	put_varint(s, meta->rate);
	put_varint(s, flags);
	put_string(s, meta->title ? meta->title : "");
	flush_block(s);
out:
	if (s->err) {
		int e = s->err;

		profile_release(&s->dict);
		free(s->buf);
		free(s);
		errno = e;
		return NULL;
	}
	return s;
}

static int raw_close(struct out_stream *s)
{
	int ret;

	if (!s->err) {
		put_byte(s, RAW_END);
		put_varint(s, s->samples);
		put_varint(s, (uint64_t)(s->last_us - s->start_us));
		flush_block(s);
	}
	ret = s->err ? -1 : 0;
	errno = s->err;
	profile_release(&s->dict);
	free(s->thread);
	free(s->thread_hash);
	free(s->buf);
	free(s->zbuf);
	free(s);
	return ret;
}

const struct out_ops out_raw = {
	.name = "raw",
	.ext = "raw",
	.open = raw_open,
	.sample = raw_sample,
	.close = raw_close,
};
