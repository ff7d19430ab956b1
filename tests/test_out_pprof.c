/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define ZLIB_CONST
#include <zlib.h>

#include "util/pb.h"
#include "util/xalloc.h"

/*
 * The protobuf writer (src/pb.c) field by field, and the writer itself,
 * included here with its ops table renamed so that the library's own
 * out_pprof stays the one out_find() returns.
 */
#define out_pprof out_pprof_under_test
#include "../src/output/out_pprof.c"
#undef out_pprof

#include "stack/stack.h"

static void assert_bytes(const struct pb *b, const unsigned char *want, size_t len)
{
	cr_assert_eq(b->len, len, "encoded %zu bytes, want %zu", b->len, len);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(b->buf[i], want[i], "byte %zu: %02x, want %02x", i, b->buf[i], want[i]);
}

Test(pprof, varint)
{
	static const struct {
		uint64_t v;
		unsigned char bytes[10];
		size_t len;
	} cases[] = {
		{ 0, { 0x00 }, 1 },
		{ 1, { 0x01 }, 1 },
		{ 127, { 0x7f }, 1 },
		{ 128, { 0x80, 0x01 }, 2 },
		{ 150, { 0x96, 0x01 }, 2 },
		{ 300, { 0xac, 0x02 }, 2 },
		{ 10000000, { 0x80, 0xad, 0xe2, 0x04 }, 4 },
		{ UINT64_MAX, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 10 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct pb b = { 0 };

		pb_varint(&b, cases[i].v);
		assert_bytes(&b, cases[i].bytes, cases[i].len);
		pb_release(&b);
	}
}

/* The examples of protobuf's encoding guide, and zero left out. */
Test(pprof, fields)
{
	static const unsigned char want[] = {
		0x08, 0x96, 0x01,				/* 1: 150 */
		0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g',	/* 2: "testing" */
		0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05,	/* 4: packed [3, 270, 86942] */
		0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, /* 5: -1 */
		0x32, 0x00,					/* 6: "" */
	};
	struct pb b = { 0 };
	size_t list;

	pb_int(&b, 1, 150);
	pb_int(&b, 3, 0);
	pb_bytes(&b, 2, "testing", 7);
	list = pb_open(&b, 4);
	pb_varint(&b, 3);
	pb_varint(&b, 270);
	pb_varint(&b, 86942);
	pb_close(&b, list);
	pb_int(&b, 5, -1);
	pb_bytes(&b, 6, "", 0);
	assert_bytes(&b, want, sizeof(want));
	pb_release(&b);
}

Test(pprof, nested_messages)
{
	static const unsigned char small[] = { 0x0a, 0x04, 0x12, 0x02, 0x08, 0x05 };
	struct pb b = { 0 };
	size_t outer, inner;

	outer = pb_open(&b, 1);
	inner = pb_open(&b, 2);
	pb_int(&b, 1, 5);
	pb_close(&b, inner);
	pb_close(&b, outer);
	assert_bytes(&b, small, sizeof(small));
	pb_release(&b);

	/* a body of 128 bytes or more moves along for a two-byte length */
	char big[200];

	memset(big, 'x', sizeof(big));
	outer = pb_open(&b, 2);
	pb_bytes(&b, 1, big, sizeof(big));
	pb_close(&b, outer);
	cr_assert_eq(b.len, 2 + 2 + 2 + sizeof(big));
	cr_assert_eq(b.buf[0], 0x12);
	cr_assert_eq(b.buf[1], 0xcb);	/* 203 = 0xcb 0x01 */
	cr_assert_eq(b.buf[2], 0x01);
	cr_assert_eq(b.buf[3], 0x0a);
	cr_assert_eq(b.buf[4], 0xc8);	/* 200 = 0xc8 0x01 */
	cr_assert_eq(b.buf[5], 0x01);
	cr_assert(!memcmp(b.buf + 6, big, sizeof(big)));
	pb_release(&b);
}

/* The writer's output, gunzipped; caller frees. */
static unsigned char *write_raw(const struct profile *p, const struct out_meta *meta, size_t *len)
{
	char *gz = NULL;
	size_t gzlen = 0;
	FILE *f = open_memstream(&gz, &gzlen);
	struct pb out = { 0 };
	z_stream z;
	int ret;

	cr_assert(f);
	cr_assert_eq(out_pprof_under_test.write(f, p, meta), 0);
	cr_assert_eq(fclose(f), 0);
	cr_assert(gzlen > 18 && (unsigned char)gz[0] == 0x1f && (unsigned char)gz[1] == 0x8b,
		  "not gzip");
	memset(&z, 0, sizeof(z));
	cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (const Bytef *)gz;
	z.avail_in = (uInt)gzlen;
	do {
		pb_reserve(&out, 4096);
		z.next_out = out.buf + out.len;
		z.avail_out = 4096;
		ret = inflate(&z, Z_NO_FLUSH);
		cr_assert(ret == Z_OK || ret == Z_STREAM_END, "inflate: %d", ret);
		out.len += 4096 - z.avail_out;
	} while (ret != Z_STREAM_END);
	cr_assert_eq(z.avail_in, 0, "bytes after the gzip member");
	inflateEnd(&z);
	free(gz);
	*len = out.len;
	return out.buf;
}

Test(pprof, empty_profile_bytes)
{
	static const unsigned char want[] = {
		0x0a, 0x04, 0x08, 0x02, 0x10, 0x03,	/* sample_type samples/count */
		0x0a, 0x04, 0x08, 0x04, 0x10, 0x05,	/* sample_type cpu/nanoseconds */
		0x32, 0x00,
		0x32, 0x06, 't', 'h', 'r', 'e', 'a', 'd',
		0x32, 0x07, 's', 'a', 'm', 'p', 'l', 'e', 's',
		0x32, 0x05, 'c', 'o', 'u', 'n', 't',
		0x32, 0x03, 'c', 'p', 'u',
		0x32, 0x0b, 'n', 'a', 'n', 'o', 's', 'e', 'c', 'o', 'n', 'd', 's',
		0x5a, 0x04, 0x08, 0x04, 0x10, 0x05,	/* period_type cpu/nanoseconds */
		0x60, 0x80, 0xad, 0xe2, 0x04,		/* period 10000000 */
	};
	struct out_meta meta = { .title = "test", .rate = 100 };
	struct profile p;
	unsigned char *raw;
	size_t len;

	profile_init(&p);
	raw = write_raw(&p, &meta, &len);
	cr_assert_eq(len, sizeof(want));
	cr_assert(!memcmp(raw, want, len), "empty profile differs");
	free(raw);
	profile_release(&p);
}

/*
 * A decoder of the little of profile.proto the writer uses, independent
 * of the encoder: it reads fields one by one and fails on anything odd.
 */
struct rd {
	const unsigned char *p, *end;
};

static uint64_t rd_varint(struct rd *r)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		cr_assert(r->p < r->end, "varint runs off the end");
		v |= (uint64_t)(*r->p & 0x7f) << shift;
		if (!(*r->p++ & 0x80))
			return v;
	}
	cr_assert_fail("varint longer than ten bytes");
	return 0;
}

/* The next field: its number, and its value or its body.  0 at the end. */
static uint32_t rd_field(struct rd *r, uint64_t *v, struct rd *body)
{
	uint64_t key, len;

	if (r->p == r->end)
		return 0;
	key = rd_varint(r);
	cr_assert(key >> 3, "field 0");
	switch (key & 7) {
	case 0:
		*v = rd_varint(r);
		body->p = body->end = NULL;
		break;
	case 2:
		len = rd_varint(r);
		cr_assert(len <= (uint64_t)(r->end - r->p), "length past the end");
		body->p = r->p;
		body->end = r->p + len;
		r->p += len;
		*v = 0;
		break;
	default:
		cr_assert_fail("wire type %u", (unsigned)(key & 7));
	}
	return (uint32_t)(key >> 3);
}

#define DMAX 32
#define LOCMAX 512

struct dsample {
	uint64_t loc[LOCMAX], value[4], key[8], str[8];
	size_t nloc, nvalue, nlabel;
};

struct dlocation {
	uint64_t id, function, line;
	size_t nline;
};

struct dfunction {
	uint64_t id, name, filename, start_line;
};

struct dprofile {
	struct rd str[64];
	size_t nstr;
	uint64_t sample_type[4][2], period_type[2];
	size_t nsample_type;
	struct dsample sample[DMAX];
	struct dlocation loc[DMAX];
	struct dfunction fn[DMAX];
	size_t nsample, nloc, nfn;
	int64_t time_nanos, duration_nanos, period;
};

static void d_value_type(struct rd r, uint64_t *vt)
{
	struct rd b;
	uint64_t v;
	uint32_t f;

	vt[0] = vt[1] = 0;
	while ((f = rd_field(&r, &v, &b)))
		if (f == 1 || f == 2)
			vt[f - 1] = v;
}

/* Repeated varints, packed or not. */
static void d_list(uint64_t *to, size_t *n, size_t cap, uint64_t v, struct rd b)
{
	if (!b.p) {
		cr_assert_lt(*n, cap);
		to[(*n)++] = v;
		return;
	}
	while (b.p < b.end) {
		cr_assert_lt(*n, cap);
		to[(*n)++] = rd_varint(&b);
	}
}

static void d_sample(struct rd r, struct dsample *s)
{
	struct rd b, lb;
	uint64_t v, lv;
	uint32_t f, lf;

	memset(s, 0, sizeof(*s));
	while ((f = rd_field(&r, &v, &b))) {
		if (f == 1)
			d_list(s->loc, &s->nloc, LOCMAX, v, b);
		else if (f == 2)
			d_list(s->value, &s->nvalue, 4, v, b);
		else if (f == 3) {
			cr_assert_lt(s->nlabel, 8);
			while ((lf = rd_field(&b, &lv, &lb))) {
				cr_assert(lf == 1 || lf == 2, "label field %u", lf);
				(lf == 1 ? s->key : s->str)[s->nlabel] = lv;
			}
			s->nlabel++;
		}
	}
}

static void d_location(struct rd r, struct dlocation *l)
{
	struct rd b, lb;
	uint64_t v, lv;
	uint32_t f, lf;

	memset(l, 0, sizeof(*l));
	while ((f = rd_field(&r, &v, &b))) {
		if (f == 1)
			l->id = v;
		else if (f == 4) {
			l->nline++;
			while ((lf = rd_field(&b, &lv, &lb)))
				if (lf == 1)
					l->function = lv;
				else if (lf == 2)
					l->line = lv;
		} else
			cr_assert_fail("location field %u", f);
	}
}

static void d_function(struct rd r, struct dfunction *fn)
{
	struct rd b;
	uint64_t v;
	uint32_t f;

	memset(fn, 0, sizeof(*fn));
	while ((f = rd_field(&r, &v, &b))) {
		if (f == 1)
			fn->id = v;
		else if (f == 2)
			fn->name = v;
		else if (f == 4)
			fn->filename = v;
		else if (f == 5)
			fn->start_line = v;
		else
			cr_assert_fail("function field %u", f);
	}
}

static void d_profile(const unsigned char *buf, size_t len, struct dprofile *d)
{
	struct rd r = { buf, buf + len }, b;
	uint64_t v;
	uint32_t f;

	memset(d, 0, sizeof(*d));
	while ((f = rd_field(&r, &v, &b))) {
		switch (f) {
		case 1:
			cr_assert_lt(d->nsample_type, 4);
			d_value_type(b, d->sample_type[d->nsample_type++]);
			break;
		case 2:
			cr_assert_lt(d->nsample, DMAX);
			d_sample(b, &d->sample[d->nsample++]);
			break;
		case 4:
			cr_assert_lt(d->nloc, DMAX);
			d_location(b, &d->loc[d->nloc++]);
			break;
		case 5:
			cr_assert_lt(d->nfn, DMAX);
			d_function(b, &d->fn[d->nfn++]);
			break;
		case 6:
			cr_assert_lt(d->nstr, 64);
			d->str[d->nstr++] = b;
			break;
		case 9:
			d->time_nanos = (int64_t)v;
			break;
		case 10:
			d->duration_nanos = (int64_t)v;
			break;
		case 11:
			d_value_type(b, d->period_type);
			break;
		case 12:
			d->period = (int64_t)v;
			break;
		default:
			cr_assert_fail("profile field %u", f);
		}
	}
}

/* String idx of the table is s, byte for byte. */
static int d_str_is(const struct dprofile *d, uint64_t idx, const char *s)
{
	cr_assert_lt(idx, d->nstr, "string index %llu out of range", (unsigned long long)idx);
	return (size_t)(d->str[idx].end - d->str[idx].p) == strlen(s) &&
	       !memcmp(d->str[idx].p, s, strlen(s));
}

static const struct dlocation *d_loc(const struct dprofile *d, uint64_t id)
{
	for (size_t i = 0; i < d->nloc; i++)
		if (d->loc[i].id == id)
			return &d->loc[i];
	cr_assert_fail("no location %llu", (unsigned long long)id);
	return NULL;
}

static const struct dfunction *d_fn(const struct dprofile *d, uint64_t id)
{
	for (size_t i = 0; i < d->nfn; i++)
		if (d->fn[i].id == id)
			return &d->fn[i];
	cr_assert_fail("no function %llu", (unsigned long long)id);
	return NULL;
}

/* Frame depth of sample s is function name:file:line. */
static void assert_frame(const struct dprofile *d, const struct dsample *s, size_t depth,
			 const char *name, const char *file, int line)
{
	const struct dlocation *l;
	const struct dfunction *fn;

	cr_assert_lt(depth, s->nloc);
	l = d_loc(d, s->loc[depth]);
	cr_assert_eq(l->nline, 1);
	fn = d_fn(d, l->function);
	cr_assert(d_str_is(d, fn->name, name), "frame %zu is not %s", depth, name);
	cr_assert(d_str_is(d, fn->filename, file), "frame %zu of %s: file is not '%s'", depth,
		  name, file);
	cr_assert_eq(l->line, (uint64_t)line, "frame %zu of %s: line %llu, want %d", depth, name,
		     (unsigned long long)l->line, line);
	cr_assert_eq(fn->start_line, 0);
}

/* The string label key of sample s, NULL if none. */
static const struct rd *d_label(const struct dprofile *d, const struct dsample *s, const char *key)
{
	for (size_t i = 0; i < s->nlabel; i++)
		if (d_str_is(d, s->key[i], key))
			return &d->str[s->str[i]];
	return NULL;
}

static void assert_label(const struct dprofile *d, const struct dsample *s, const char *key,
			 const char *want)
{
	const struct rd *v = d_label(d, s, key);

	cr_assert(v, "no label %s", key);
	cr_assert((size_t)(v->end - v->p) == strlen(want) && !memcmp(v->p, want, strlen(want)),
		  "label %s is '%.*s', want '%s'", key, (int)(v->end - v->p), v->p, want);
}

static struct stack st;

static void seed_stack(pid_t tid, int work_line)
{
	memset(&st, 0, sizeof(st));
	st.tid = tid;
	st.depth = 3;
	st.frame[2] = (struct stack_frame){ "<module>", "app.py", 20 };
	st.frame[1] = (struct stack_frame){ "foo", "app.py", 8 };
	st.frame[0] = (struct stack_frame){ "work", "app.py", work_line };
}

Test(pprof, golden_profile)
{
	struct out_meta meta = { .title = "test", .duration = 3.25, .rate = 100,
				 .start = 1700000000.5 };
	struct profile p;
	struct dprofile *d = malloc(sizeof(*d));
	unsigned char *raw;
	size_t len;
	const struct dsample *s;
	uint64_t work4, work5;

	profile_init(&p);
	seed_stack(4242, 4);
	profile_add(&p, "route=/cart,vehicle=a=b", &st, 3);
	seed_stack(4243, 4);
	st.thread_name = "worker";
	profile_add(&p, NULL, &st, 2);
	seed_stack(4242, 5);	/* another line of work: a location, not a function */
	profile_add(&p, NULL, &st, 1);
	/* hostile names, a pseudo-frame, and a truncated stack */
	memset(&st, 0, sizeof(st));
	st.tid = 4242;
	st.truncated = 1;
	st.depth = 2;
	st.frame[1] = (struct stack_frame){ "a\"b", "<x>", 7 };
	st.frame[0] = (struct stack_frame){ "(garbage collection)", "", 0 };
	profile_add(&p, NULL, &st, 4);

	raw = write_raw(&p, &meta, &len);
	d_profile(raw, len, d);

	cr_assert(d->nstr > 0 && d->str[0].p == d->str[0].end, "string_table[0] is not empty");
	for (size_t i = 0; i < d->nstr; i++)
		for (size_t j = i + 1; j < d->nstr; j++)
			cr_assert(d->str[i].end - d->str[i].p != d->str[j].end - d->str[j].p ||
				  memcmp(d->str[i].p, d->str[j].p, (size_t)(d->str[i].end - d->str[i].p)),
				  "strings %zu and %zu are the same", i, j);
	cr_assert_eq(d->nsample_type, 2);
	cr_assert(d_str_is(d, d->sample_type[0][0], "samples"));
	cr_assert(d_str_is(d, d->sample_type[0][1], "count"));
	cr_assert(d_str_is(d, d->sample_type[1][0], "cpu"));
	cr_assert(d_str_is(d, d->sample_type[1][1], "nanoseconds"));
	cr_assert(d_str_is(d, d->period_type[0], "cpu"));
	cr_assert(d_str_is(d, d->period_type[1], "nanoseconds"));
	cr_assert_eq(d->period, 10000000);
	cr_assert_eq(d->time_nanos, 1700000000500000000ll);
	cr_assert_eq(d->duration_nanos, 3250000000ll);

	/* trie order: tag set first seen first, then threads, then stacks */
	cr_assert_eq(d->nsample, 4);
	s = &d->sample[0];
	cr_assert_eq(s->nvalue, 2);
	cr_assert_eq(s->value[0], 3);
	cr_assert_eq(s->value[1], 30000000);
	cr_assert_eq(s->nloc, 3);
	assert_frame(d, s, 0, "work", "app.py", 4);	/* leaf first */
	assert_frame(d, s, 1, "foo", "app.py", 8);
	assert_frame(d, s, 2, "<module>", "app.py", 20);
	cr_assert_eq(s->nlabel, 3);
	assert_label(d, s, "thread", "thread (4242)");
	assert_label(d, s, "route", "/cart");
	assert_label(d, s, "vehicle", "a=b");
	work4 = s->loc[0];

	s = &d->sample[1];
	cr_assert_eq(s->value[0], 2);
	cr_assert_eq(s->value[1], 20000000);
	cr_assert_eq(s->nlabel, 1);
	assert_label(d, s, "thread", "thread (4243): worker");
	cr_assert_eq(s->loc[0], work4, "the same frame is the same location");

	s = &d->sample[2];
	cr_assert_eq(s->value[0], 1);
	assert_label(d, s, "thread", "thread (4242)");
	assert_frame(d, s, 0, "work", "app.py", 5);
	work5 = s->loc[0];
	cr_assert_neq(work5, work4);
	cr_assert_eq(d_loc(d, work5)->function, d_loc(d, work4)->function,
		     "two lines of work are one function");

	s = &d->sample[3];
	cr_assert_eq(s->value[0], 4);
	cr_assert_eq(s->value[1], 40000000);
	cr_assert_eq(s->nloc, 3);
	assert_frame(d, s, 0, "(garbage collection)", "", 0);
	assert_frame(d, s, 1, "a\"b", "<x>", 7);
	assert_frame(d, s, 2, "[truncated]", "", 0);
	cr_assert_eq(s->nlabel, 1);

	/* <module>, foo, work, a"b, gc, [truncated]; work:5 is a seventh location */
	cr_assert_eq(d->nfn, 6);
	cr_assert_eq(d->nloc, 7);
	for (size_t i = 0; i < d->nloc; i++)
		cr_assert_eq(d->loc[i].id, i + 1, "location ids are 1..n");
	free(raw);
	free(d);
	profile_release(&p);
}

/* A profile deeper than a short varint length, and many strings. */
Test(pprof, large_profile_round_trips)
{
	struct out_meta meta = { .title = "test", .duration = 1, .rate = 1000 };
	struct profile p;
	char names[300][16];
	uint64_t total = 0;
	unsigned char *raw;
	size_t len;
	struct rd r, b;
	uint64_t v;
	uint32_t f;
	size_t nsample = 0, nstr = 0;

	profile_init(&p);
	memset(&st, 0, sizeof(st));
	st.tid = 1;
	st.depth = 300;
	for (int i = 0; i < 300; i++) {
		snprintf(names[i], sizeof(names[i]), "f%d", i);
		st.frame[i] = (struct stack_frame){ names[i], "deep.py", i + 1 };
	}
	for (int i = 0; i < 50; i++) {
		st.frame[0].line = 1000 + i;
		profile_add(&p, NULL, &st, (uint64_t)i + 1);
		total += (uint64_t)i + 1;
	}
	raw = write_raw(&p, &meta, &len);
	r = (struct rd){ raw, raw + len };
	while ((f = rd_field(&r, &v, &b))) {
		if (f == 2) {
			struct dsample s;

			d_sample(b, &s);
			nsample++;
			cr_assert_eq(s.nloc, 300);
			total -= s.value[0];
			cr_assert_eq(s.value[1], s.value[0] * 1000000);
		} else if (f == 6)
			nstr++;
	}
	cr_assert_eq(nsample, 50);
	cr_assert_eq(total, 0, "sample values do not add up");
	cr_assert_eq(nstr, 1 + 5 + 300 + 1 + 1, "strings: \"\", fixed, names, file, thread");
	free(raw);
	profile_release(&p);
}

Test(pprof, write_error_sets_errno)
{
	struct out_meta meta = { .title = "test", .duration = 1, .rate = 100 };
	struct profile p;
	FILE *f = fopen("/dev/full", "w");

	cr_assert(f);
	setvbuf(f, NULL, _IONBF, 0);
	profile_init(&p);
	seed_stack(1, 4);
	profile_add(&p, NULL, &st, 1);
	errno = 0;
	cr_assert_eq(out_pprof_under_test.write(f, &p, &meta), -1);
	cr_assert_eq(errno, ENOSPC);
	fclose(f);
	profile_release(&p);
}

Test(pprof, registered_as_a_format)
{
	const struct out_ops *ops = out_find("pprof");

	cr_assert(ops);
	cr_assert_str_eq(ops->ext, "pb.gz");
}
