/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/foldedread.h"
#include "util/xalloc.h"

/*
 * Folded profiles as report reads them (src/foldedread.c): frames split
 * into name, file and line as out_frame_text() joined them; tag sets and
 * thread frames recognised at the root; what is no folded line refused
 * with the line's number; bytes that are no text made harmless.
 */

struct got {
	char text[4096];	/* every line as "tags|thread|pid|tid|name|frames...|count\n" */
	size_t len;
};

static int collect(void *arg, const struct folded_line *l)
{
	struct got *g = arg;
	int n = snprintf(g->text + g->len, sizeof(g->text) - g->len, "%s|%s|%d|%d|%s",
			 l->tags ? l->tags : "-", l->thread ? l->thread : "-", (int)l->pid,
			 (int)l->tid, l->thread_name ? l->thread_name : "-");

	g->len += (size_t)n;
	for (uint32_t i = 0; i < l->depth; i++)
		g->len += (size_t)snprintf(g->text + g->len, sizeof(g->text) - g->len, "|<%s><%s><%d>",
					   l->frame[i].name, l->frame[i].file, l->frame[i].line);
	g->len += (size_t)snprintf(g->text + g->len, sizeof(g->text) - g->len, "|%llu\n",
				   (unsigned long long)l->count);
	return 0;
}

static enum perr parse(const char *text, size_t len, struct got *g, char *why, size_t cap)
{
	FILE *f = len ? fmemopen((void *)text, len, "rb") : fopen("/dev/null", "rb");
	enum perr err;

	cr_assert_not_null(f);
	memset(g, 0, sizeof(*g));
	err = foldedread_run(f, collect, g, why, cap);
	fclose(f);
	return err;
}

Test(foldedread, frames_tags_and_threads)
{
	static const char in[] =
		"{vehicle=car};<module> (app.py:18);foo (app.py:9);work (app.py:5) 742\n"
		"pid 12: thread (34): worker;block (2 levels) in <main> (a(b).rb:26);(garbage collection) 3\r\n"
		"\n"
		"thread (7);Shop#checkout (/srv/x:y.rb);[truncated] 1\n"
		"{region=eu};thread (8);f (c:\\\\x.py:0) 2\n";
	static const char want[] =
		"vehicle=car|-|0|0|-|<<module>><app.py><18>|<foo><app.py><9>|<work><app.py><5>|742\n"
		"-|pid 12: thread (34): worker|12|34|worker|<block (2 levels) in <main>><a(b).rb><26>|"
		"<(garbage collection)><><0>|3\n"
		"-|thread (7)|0|7|-|<Shop#checkout></srv/x:y.rb><0>|<[truncated]><><0>|1\n"
		"region=eu|thread (8)|0|8|-|<f><c:\\\\x.py><0>|2\n";
	struct got g;
	char why[160];

	cr_assert_eq(parse(in, strlen(in), &g, why, sizeof(why)), PERR_OK, "%s", why);
	cr_assert_str_eq(g.text, want);
}

/*
 * A Python subinterpreter's thread state: " [interpreter N]" after the
 * tid, before any name; anything else there is no thread frame, a frame.
 */
Test(foldedread, subinterpreter_threads)
{
	static const char in[] =
		"thread (34) [interpreter 2]: subloop;spin (<script>:7) 5\n"
		"pid 12: thread (34) [interpreter 18446744073709551615];f (a.py:1) 1\n"
		"thread (34): x [interpreter 2];f (a.py:1) 1\n"
		"thread (34) [interpreter ];f (a.py:1) 1\n"
		"thread (34) [interpreter 2]x;f (a.py:1) 1\n";
	static const char want[] =
		"-|thread (34) [interpreter 2]: subloop|0|34|subloop|<spin><<script>><7>|5\n"
		"-|pid 12: thread (34) [interpreter 18446744073709551615]|12|34|-|<f><a.py><1>|1\n"
		"-|thread (34): x [interpreter 2]|0|34|x [interpreter 2]|<f><a.py><1>|1\n"
		"-|-|0|0|-|<thread (34) [interpreter ]><><0>|<f><a.py><1>|1\n"
		"-|-|0|0|-|<thread (34) [interpreter 2]x><><0>|<f><a.py><1>|1\n";
	struct got g;
	char why[160];

	cr_assert_eq(parse(in, strlen(in), &g, why, sizeof(why)), PERR_OK, "%s", why);
	cr_assert_str_eq(g.text, want);
}

Test(foldedread, refuses_what_is_no_folded_line)
{
	static const struct {
		const char *in, *why;
	} bad[] = {
		{ "a;b 1\nc;d\n", "line 2: no count" },
		{ "a;;b 1\n", "line 1: an empty frame" },
		{ " 5\n", "line 1: no count" },
		{ "a 99999999999999999\n", "line 1: no count" },
		{ "a -1\n", "line 1: no count" },
	};
	struct got g;
	char why[160];

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		cr_assert_eq(parse(bad[i].in, strlen(bad[i].in), &g, why, sizeof(why)), PERR_CORRUPT,
			     "%s", bad[i].in);
		cr_assert(strstr(why, bad[i].why), "%s: %s", bad[i].in, why);
	}
}

Test(foldedread, caps_length_and_depth)
{
	size_t n = FOLDEDREAD_MAX_LINE + 10, i;
	char *big = xmalloc(n + 1), why[160];
	struct got g;

	memset(big, 'a', n);
	big[n] = '\0';
	cr_assert_eq(parse(big, n, &g, why, sizeof(why)), PERR_TOOBIG);
	cr_assert(strstr(why, "longer than"), "%s", why);
	/* 5000 frames "a;" and a count */
	for (i = 0; i < 5000; i++) {
		big[2 * i] = 'a';
		big[2 * i + 1] = ';';
	}
	strcpy(big + 2 * i - 1, " 1\n");
	cr_assert_eq(parse(big, strlen(big), &g, why, sizeof(why)), PERR_TOOBIG);
	cr_assert(strstr(why, "more than"), "%s", why);
	free(big);
}

Test(foldedread, control_and_broken_bytes_made_harmless)
{
	static const char in[] = "f\x1b[31m (a\xff.py:3) 2\n";
	struct got g;
	char why[160];

	cr_assert_eq(parse(in, sizeof(in) - 1, &g, why, sizeof(why)), PERR_OK, "%s", why);
	cr_assert_str_eq(g.text, "-|-|0|0|-|<f?[31m><a?.py><3>|2\n");
}
