/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/out.h"
#include "profile/rawread.h"
#include "stack/stack.h"
#include "util/xalloc.h"

/*
 * The raw recording: what out_raw writes, rawread reads back field for
 * field; a real recording (tests/fixtures/rideshare-py311.raw, pyrospy
 * exec -d 20 of tests/targets/rideshare.py on the host's Python 3.11) cut
 * anywhere in its last 4 KiB reads up to its last whole block with a
 * warning; damaged bytes are refused, never a crash.
 */

#define FIXTURE SRCDIR "/tests/fixtures/rideshare-py311.raw"

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf;
	long n;

	cr_assert_not_null(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = xmalloc((size_t)n + 1);
	cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* What a read saw: a digest of every sample, and the count. */
struct seen {
	uint64_t n, hash;
	int64_t last_ns;
	int ordered;
};

static uint64_t mixs(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull;
}

static int digest(void *arg, int64_t when_ns, const char *tags, const struct stack *st)
{
	struct seen *s = arg;
	uint64_t h = s->hash;

	if (when_ns < s->last_ns)
		s->ordered = 0;
	s->last_ns = when_ns;
	h = mixs(h, tags);
	h = mixs(h, st->thread_name);
	h = (h ^ (uint64_t)when_ns ^ (uint64_t)st->tid << 20 ^ (uint64_t)st->pid) * 0x100000001b3ull;
	h = (h ^ (uint64_t)(st->holds_gil + 1) << 2 ^ (uint64_t)(st->idle + 1) ^
	     (uint64_t)st->truncated << 5 ^ st->thread_id) * 0x100000001b3ull;
	for (unsigned int i = 0; i < st->depth; i++) {
		h = mixs(h, st->frame[i].name);
		h = mixs(h, st->frame[i].file);
		h = (h ^ (uint64_t)st->frame[i].line) * 0x100000001b3ull;
	}
	s->hash = h;
	s->n++;
	return 0;
}

static enum perr read_mem(const unsigned char *data, size_t len, struct rawread *r,
			  struct seen *s)
{
	/* fmemopen() will not open nothing */
	FILE *f = len ? fmemopen((void *)data, len, "rb") : fopen("/dev/null", "rb");
	enum perr err;

	cr_assert_not_null(f);
	memset(s, 0, sizeof(*s));
	s->ordered = 1;
	err = rawread_run(r, f, digest, s);
	fclose(f);
	return err;
}

/* Samples made by hand, written by out_raw into memory. */
struct built {
	char *data;
	size_t len;
	struct seen seen;	/* the digest of what was written */
};

static void build(struct built *b, unsigned int samples, unsigned int depth)
{
	static struct stack st;
	static const char *names[] = { "<module>", "main", "Shop#checkout", "work", "\xc3\xa9t\xc3\xa9" };
	static const char *tagsets[] = { NULL, "vehicle=car", "region=eu,vehicle=bike" };
	struct out_meta meta = { .title = "pid 42", .rate = 100, .start = 1700000000.25 };
	struct out_stream *s;
	FILE *f;

	memset(b, 0, sizeof(*b));
	b->seen.ordered = 1;
	f = open_memstream(&b->data, &b->len);
	s = out_raw.open(f, &meta, 0);
	cr_assert_not_null(s);
	for (unsigned int i = 0; i < samples; i++) {
		int64_t when = 1700000000250000000ll + (int64_t)i * 10000000 + (i % 7) * 1000;
		const char *tags = tagsets[i % 3];

		memset(&st, 0, sizeof(st));
		st.pid = 42 + (int)(i % 2);
		st.tid = 1000 + (int)(i % 5);
		st.thread_id = 0x7f0000001000ull + (i % 5);
		st.thread_name = i % 5 == 3 ? "worker-3" : NULL;
		st.holds_gil = (int)(i % 3) - 1;
		st.idle = (int)((i / 3) % 3) - 1;
		st.truncated = i % 11 == 0;
		st.depth = depth > 0 ? depth - (i % 3) : 0;
		for (unsigned int d = 0; d < st.depth; d++) {
			st.frame[d].name = names[(d + i / 50) % 5];
			st.frame[d].file = d == st.depth - 1 && i % 4 == 0 ? "" : "app.py";
			st.frame[d].line = (int)(d * 3 + (i % 13 == 0));
		}
		cr_assert_eq(out_raw.sample(s, when, tags, &st), 0);
		digest(&b->seen, when / 1000 * 1000, tags, &st);
	}
	cr_assert_eq(out_raw.close(s), 0);
	fclose(f);
}

Test(rawread, reads_back_every_field)
{
	struct built b;
	struct rawread r;
	struct seen got;

	build(&b, 3000, 50);
	cr_assert_eq(read_mem((unsigned char *)b.data, b.len, &r, &got), PERR_OK, "%s", r.why);
	cr_assert_not(r.torn, "%s", r.why);
	cr_assert_eq(got.n, 3000);
	cr_assert_eq(r.samples, 3000);
	cr_assert_eq(got.hash, b.seen.hash, "a field came back different");
	cr_assert(got.ordered);
	cr_assert_eq(r.rate, 100);
	cr_assert_str_eq(r.title, "pid 42");
	cr_assert_float_eq(r.start, 1700000000.25, 1e-6);
	cr_assert_float_eq(r.duration, 29.99, 0.01);
	cr_log_info("3000 samples of a ~50-deep stack: %zu bytes, %.2f bytes a sample", b.len,
		    (double)b.len / 3000);
	rawread_release(&r);
	free(b.data);
}

Test(rawread, empty_stacks_and_a_recording_of_nothing)
{
	struct built b;
	struct rawread r;
	struct seen got;

	build(&b, 10, 0);
	cr_assert_eq(read_mem((unsigned char *)b.data, b.len, &r, &got), PERR_OK, "%s", r.why);
	cr_assert_eq(got.hash, b.seen.hash);
	rawread_release(&r);
	free(b.data);
	build(&b, 0, 0);
	cr_assert_eq(read_mem((unsigned char *)b.data, b.len, &r, &got), PERR_OK, "%s", r.why);
	cr_assert_eq(got.n, 0);
	cr_assert_not(r.torn);
	rawread_release(&r);
	free(b.data);
}

/* Stacks repeat, as in a real program: a few bytes a sample. */
Test(rawread, compact_once_stacks_repeat)
{
	struct built b;

	build(&b, 20000, 50);
	cr_assert_lt((double)b.len / 20000, 8.0, "%zu bytes for 20000 samples", b.len);
	free(b.data);
}

Test(rawread, a_real_recording_cut_anywhere_in_its_last_4k)
{
	size_t len;
	unsigned char *data = slurp(FIXTURE, &len);
	struct rawread r;
	struct seen whole, got;
	uint64_t before = 0;

	cr_assert_gt(len, 4096 + 1024, "the fixture is too small to cut: %zu bytes", len);
	cr_assert_eq(read_mem(data, len, &r, &whole), PERR_OK, "%s", r.why);
	cr_assert_not(r.torn, "%s", r.why);
	cr_assert_gt(whole.n, 1000);
	rawread_release(&r);
	for (size_t cut = len - 4096; cut < len; cut++) {
		enum perr err = read_mem(data, cut, &r, &got);

		cr_assert_eq(err, PERR_OK, "cut at %zu of %zu: %s", cut, len, r.why);
		cr_assert(r.torn, "cut at %zu of %zu: no warning", cut, len);
		cr_assert(strstr(r.why, "ends "), "cut at %zu: %s", cut, r.why);
		cr_assert_lt(got.n, whole.n, "cut at %zu: all %llu samples", cut,
			     (unsigned long long)got.n);
		/* a longer piece never reads less */
		cr_assert_geq(got.n, before, "cut at %zu", cut);
		cr_assert(got.ordered);
		before = got.n;
		rawread_release(&r);
	}
	/* the last block is a second at most: little is lost */
	cr_assert_gt(before * 10, whole.n * 9);
	free(data);
}

Test(rawread, damaged_bytes_are_refused_or_read_never_a_crash)
{
	size_t len;
	unsigned char *data = slurp(FIXTURE, &len);
	unsigned int refused = 0;

	for (size_t i = 0; i < len; i += 7) {
		struct rawread r;
		struct seen got;
		unsigned char keep = data[i];
		enum perr err;

		data[i] ^= (unsigned char)((0x5a + i) | 1);
		err = read_mem(data, len, &r, &got);
		/* a flipped length may look like a cut: then it is torn */
		cr_assert(err == PERR_CORRUPT || err == PERR_TOOBIG || (err == PERR_OK && r.torn),
			  "byte %zu: %d %s", i, err, r.why);
		refused += err != PERR_OK;
		cr_assert(err == PERR_OK || *r.why, "byte %zu: no reason given", i);
		rawread_release(&r);
		data[i] = keep;
	}
	cr_assert_gt(refused, 0);
	free(data);
}

Test(rawread, not_a_recording)
{
	static const char *const inputs[] = { "", "PYSPYRA", "PYSPYRAW\x02", "folded;stack 1\n",
					      "PYSPYRAW\x01\xff\xff\xff\xff\x01\0\0\0\0\0\0\0" };
	struct rawread r;
	struct seen got;

	for (size_t i = 0; i < ARRAY_SIZE(inputs); i++) {
		size_t n = i == 4 ? 21 : strlen(inputs[i]);

		cr_assert_eq(read_mem((const unsigned char *)inputs[i], n, &r, &got), PERR_CORRUPT,
			     "input %zu read", i);
		cr_assert(*r.why);
		rawread_release(&r);
	}
}
