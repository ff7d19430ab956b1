/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/out.h"
#include "profile/profile.h"
#include "stack/stack.h"

static struct stack st;

/* One sample of weight n on the stack names[0] (outermost) ... in app.py. */
static void add(struct profile *p, const char *tags, const char *const *names, uint64_t n)
{
	unsigned int d = 0;

	memset(&st, 0, sizeof(st));
	st.tid = 7;
	while (names[d])
		d++;
	st.depth = d;
	for (unsigned int i = 0; i < d; i++)
		st.frame[d - 1 - i] = (struct stack_frame){ names[i], "app.py", 10 + (int)i };
	profile_add(p, tags, &st, n);
}

static char *svg_meta(const struct profile *p, const char *title, int threads, int no_tags)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct out_meta meta = { .title = title, .duration = 2.0, .rate = 100, .threads = threads,
				 .no_tags = no_tags };

	cr_assert(f);
	cr_assert_eq(out_flamegraph.write(f, p, &meta), 0);
	fclose(f);
	return buf;
}

static char *svg_opt(const struct profile *p, const char *title, int threads)
{
	return svg_meta(p, title, threads, 1);
}

static char *svg(const struct profile *p)
{
	return svg_meta(p, "pid 42", 0, 0);
}

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;

	for (s = strstr(s, needle); s; s = strstr(s + 1, needle))
		n++;
	return n;
}

/* Does svg parse as XML?  Through a real parser, xmllint. */
static int xml_ok(const char *svg)
{
	char path[] = "/tmp/pyrospy-fg-XXXXXX", cmd[128];
	int fd = mkstemp(path), rc;
	size_t len = strlen(svg);

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, svg, len), (ssize_t)len);
	close(fd);
	snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", path);
	rc = system(cmd);
	unlink(path);
	cr_assert_neq(rc, -1, "cannot run xmllint");
	return rc == 0;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long len;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len + 1);
	cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

/*
 *   work 60  |  work 30
 *   foo 70   |  bar 30
 *   <module> 100
 * foo has 10 samples of its own.
 */
static void basic(struct profile *p)
{
	profile_init(p);
	add(p, NULL, (const char *const[]){ "<module>", "foo", "work", NULL }, 60);
	add(p, NULL, (const char *const[]){ "<module>", "bar", "work", NULL }, 30);
	add(p, NULL, (const char *const[]){ "<module>", "foo", NULL }, 10);
}

Test(flamegraph, frames_widths_and_title)
{
	struct profile p;
	char *s;

	basic(&p);
	s = svg(&p);
	cr_assert(xml_ok(s));
	cr_assert_eq(count(s, "<g data-s="), 5, "one group per frame");
	cr_assert_eq(count(s, "<rect x="), 5 + 1, "one rect per frame and the background");
	cr_assert(strstr(s, ">pid 42 \xe2\x80\x94 2.0 s at 100 Hz, 100 samples</text>"));
	cr_assert(strstr(s, "height=\"142\""), "3 levels: 60 + 3 * 16 + 34");
	/* the root spans the graph, at the top (an icicle), its callees under it */
	cr_assert(strstr(s, "<g data-s=\"0\" data-n=\"100\" data-d=\"1\">"
			    "<title>&lt;module&gt; (app.py:10) (100 samples, 100.00%)</title>"
			    "<rect x=\"10.00\" y=\"60\" width=\"1180.00\" height=\"15\""));
	cr_assert(strstr(s, "<g data-s=\"0\" data-n=\"70\" data-d=\"2\">"
			    "<title>foo (app.py:11) (70 samples, 70.00%)</title>"
			    "<rect x=\"10.00\" y=\"76\" width=\"826.00\" height=\"15\""));
	cr_assert(strstr(s, "<g data-s=\"0\" data-n=\"60\" data-d=\"3\">"
			    "<title>work (app.py:12) (60 samples, 60.00%)</title>"
			    "<rect x=\"10.00\" y=\"92\" width=\"708.00\" height=\"15\""));
	/* bar starts where foo ends */
	cr_assert(strstr(s, "<g data-s=\"70\" data-n=\"30\" data-d=\"2\">"
			    "<title>bar (app.py:11) (30 samples, 30.00%)</title>"
			    "<rect x=\"836.00\" y=\"76\" width=\"354.00\" height=\"15\""));
	cr_assert(strstr(s, ">work (app.py:12)</text></g>"), "a label that fits is whole");
	cr_assert(strstr(s, "<![CDATA["));
	cr_assert(!strstr(s, "http://") || count(s, "http://") == 1, "only the SVG namespace");
	free(s);
	profile_release(&p);
}

/* --flame-direction up: the classic flame graph, root at the bottom. */
Test(flamegraph, direction_up)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct out_meta meta = { .title = "pid 42", .duration = 2.0, .rate = 100, .flame_up = 1 };
	struct profile p;

	basic(&p);
	cr_assert(f);
	cr_assert_eq(out_flamegraph.write(f, &p, &meta), 0);
	fclose(f);
	cr_assert(xml_ok(buf));
	cr_assert(strstr(buf, "height=\"142\""), "the same size");
	cr_assert(strstr(buf, "<title>&lt;module&gt; (app.py:10) (100 samples, 100.00%)</title>"
			      "<rect x=\"10.00\" y=\"92\" width=\"1180.00\""));
	cr_assert(strstr(buf, "<title>foo (app.py:11) (70 samples, 70.00%)</title>"
			      "<rect x=\"10.00\" y=\"76\" width=\"826.00\""));
	cr_assert(strstr(buf, "<title>work (app.py:12) (60 samples, 60.00%)</title>"
			      "<rect x=\"10.00\" y=\"60\" width=\"708.00\""));
	free(buf);
	profile_release(&p);
}

/* One frame, name in file:line, alone on its stack, of weight n. */
static void add_at(struct profile *p, const char *name, const char *file, uint64_t n)
{
	memset(&st, 0, sizeof(st));
	st.tid = 7;
	st.depth = 1;
	st.frame[0] = (struct stack_frame){ name, file, 10 };
	profile_add(p, NULL, &st, n);
}

/*
 * Names before paths: a label cut to its frame keeps the function's name
 * and the end of its file and line, then the name alone, and cuts the
 * name only when that is all there is room for.
 */
Test(flamegraph, labels_keep_names)
{
	static const char path[] = "/srv/shop/pyrospy/build/../examples/shop.py";
	struct profile p;
	char *s;

	profile_init(&p);
	/* files far apart: no app directory to shorten them by (profile/shortpath.h) */
	add_at(&p, "main", "/opt/app.py", 70);
	add_at(&p, "Shop.price", path, 15);		/* 177 px: 24 characters */
	add_at(&p, "Shop.total", path, 10);		/* 118 px: 16 */
	add_at(&p, "Cart.checkout_everything", path, 5);	/* 59 px: 7 */
	s = svg(&p);
	cr_assert(xml_ok(s));
	cr_assert(strstr(s, ">main (/opt/app.py:10)</text>"), "a label that fits is whole");
	cr_assert(strstr(s, ">Shop.price (..hop.py:10)</text>"), "%s", strstr(s, "Shop.price"));
	cr_assert(strstr(s, ">Shop.total</text>"), "%s", strstr(s, "Shop.total"));
	cr_assert(strstr(s, ">Cart...</text>"), "%s", strstr(s, "Cart.checkout"));
	/* the page's own fit() has the same rule */
	cr_assert(strstr(s, "t.substring(0, p) + \" (..\" + t.substring(t.length - 1 - room)"));
	free(s);
	profile_release(&p);
}

/* The whole file, against tests/fixtures/flamegraph-basic.svg. */
Test(flamegraph, golden)
{
	struct profile p;
	char *s, *want;

	basic(&p);
	s = svg(&p);
	want = slurp(SRCDIR "/tests/fixtures/flamegraph-basic.svg");
	cr_assert(want, "missing fixture");
	if (strcmp(s, want)) {
		FILE *f = fopen("/tmp/flamegraph-basic.svg", "w");

		if (f) {
			fputs(s, f);
			fclose(f);
		}
		cr_assert_fail("output differs from the fixture: see /tmp/flamegraph-basic.svg, "
			       "copy it over the fixture if the change is meant");
	}
	free(want);
	free(s);
	profile_release(&p);
}

Test(flamegraph, hostile_names_stay_text)
{
	static char longname[12000];
	const char *names[] = {
		"<script>alert(1)</script>", "a&b", "q\"uote'", "]]>", "semi;colon",
		"ctl\x01\x1b\x7f", "nonchar\xef\xbf\xbf\xef\xbf\xbe", longname, NULL,
	};
	struct profile p;
	char *s;

	/* 'e' with acute accent, 2 bytes: the 8 KiB text buffer cuts one in half */
	for (size_t i = 0; i + 2 < sizeof(longname); i += 2)
		memcpy(longname + i, "\xc3\xa9", 2);
	profile_init(&p);
	add(&p, "route=<a&b>", names, 5);
	memset(&st, 0, sizeof(st));
	st.depth = 1;
	st.tid = 9;
	st.thread_name = "</title><script>x</script>";
	st.frame[0] = (struct stack_frame){ "leaf", "<&>\"'.py", 3 };
	profile_add(&p, NULL, &st, 5);
	s = svg_meta(&p, "pid <1&2> ]]>", 1, 0);
	cr_assert(xml_ok(s), "%s", s);
	cr_assert(!strstr(s, "<script>"), "only our own <script type=...>");
	cr_assert_eq(count(s, "]]>"), 1, "only the end of our CDATA");
	cr_assert(strstr(s, "&lt;script&gt;alert(1)&lt;/script&gt; (app.py:10) (5 samples"));
	cr_assert(strstr(s, ">a&amp;b (app.py:11) ("));
	cr_assert(strstr(s, ">q&quot;uote' (app.py:12) ("));
	cr_assert(strstr(s, ">]]&gt; (app.py:13) ("));
	cr_assert(strstr(s, ">semi;colon (app.py:14) ("));
	cr_assert(strstr(s, ">ctl??\x7f (app.py:15) ("));
	cr_assert(strstr(s, ">nonchar?????? (app.py:16) ("));
	cr_assert(strstr(s, ">leaf (&lt;&amp;&gt;&quot;'.py:3) ("));
	cr_assert(strstr(s, "&lt;/title&gt;&lt;script&gt;x&lt;/script&gt;"), "thread name");
	cr_assert(strstr(s, ">pid &lt;1&amp;2&gt; ]]&gt; \xe2\x80\x94 "));
	/* the long name's label is clipped to whole characters, with ".." */
	cr_assert(strstr(s, "\xc3\xa9\xc3\xa9..</text>"));
	cr_assert(strstr(s, "<title>{route=&lt;a&amp;b&gt;} (5 samples"), "the tag set, escaped");
	free(s);
	profile_release(&p);
}

Test(flamegraph, empty_profile)
{
	struct profile p;
	char *s;

	profile_init(&p);
	s = svg(&p);
	cr_assert(xml_ok(s));
	cr_assert(strstr(s, ">no samples</text>"));
	cr_assert(strstr(s, "2.0 s at 100 Hz, 0 samples</text>"));
	cr_assert_eq(count(s, "<g data-s="), 0);
	free(s);
	profile_release(&p);
}

/* Threads only with --threads, in grey; tag sets at the root unless --no-tags. */
Test(flamegraph, threads_and_tags)
{
	struct profile p;
	unsigned int r, g, b;
	const char *t;
	char *s;

	profile_init(&p);
	add(&p, "k=v", (const char *const[]){ "main", NULL }, 3);
	add(&p, NULL, (const char *const[]){ "main", NULL }, 4);
	s = svg(&p);
	cr_assert(strstr(s, "<title>{k=v} (3 samples, 42.86%)</title>"), "%s", s);
	cr_assert(strstr(s, "<title>main (app.py:10) (3 samples, 42.86%)</title>"));
	cr_assert(strstr(s, "<title>main (app.py:10) (4 samples, 57.14%)</title>"));
	cr_assert(!strstr(s, "thread ("));
	free(s);
	s = svg_meta(&p, "pid 42", 0, 1);
	cr_assert(strstr(s, "<title>main (app.py:10) (7 samples, 100.00%)</title>"));
	cr_assert(!strstr(s, "k=v"));
	free(s);
	s = svg_opt(&p, "pid 42", 1);
	t = strstr(s, "<title>thread (7) (7 samples, 100.00%)</title>");
	cr_assert(t);
	t = strstr(t, "fill=\"rgb(");
	cr_assert(t && sscanf(t, "fill=\"rgb(%u,%u,%u)", &r, &g, &b) == 3);
	cr_assert(r == g && g == b, "pseudo-frames are grey: %u,%u,%u", r, g, b);
	cr_assert(strstr(s, "data-d=\"2\"><title>main (app.py:10) (7 samples"));
	free(s);
	profile_release(&p);
}

/* Frames under 0.1% of the samples are left out, with what is above them. */
Test(flamegraph, narrow_frames_omitted)
{
	struct profile p;
	char *s;

	profile_init(&p);
	add(&p, NULL, (const char *const[]){ "main", "big", NULL }, 2000);
	add(&p, NULL, (const char *const[]){ "main", "tinyfn", "abovefn", NULL }, 1);
	add(&p, NULL, (const char *const[]){ "main", "small", NULL }, 3);
	s = svg(&p);
	cr_assert(xml_ok(s));
	cr_assert(strstr(s, "<title>small (app.py:11) (3 samples, 0.15%)</title>"));
	cr_assert(!strstr(s, "tinyfn"));
	cr_assert(!strstr(s, "abovefn"));
	/* small still starts after tiny's sample */
	cr_assert(strstr(s, "<g data-s=\"2001\" data-n=\"3\" data-d=\"2\">"));
	cr_assert(strstr(s, "height=\"126\""), "2 levels shown");
	free(s);
	profile_release(&p);
}

/* Same file, same hue family; colours do not change between runs. */
Test(flamegraph, stable_colours)
{
	struct profile p;
	char *a, *b;

	basic(&p);
	a = svg(&p);
	b = svg(&p);
	cr_assert_str_eq(a, b);
	cr_assert(!strstr(a, "fill=\"rgb(230,0,230)\""), "magenta is for search hits");
	free(a);
	free(b);
	profile_release(&p);
}

Test(flamegraph, write_error_sets_errno)
{
	struct out_meta meta = { .title = "pid 42", .duration = 2.0, .rate = 100 };
	struct profile p;
	FILE *f = fopen("/dev/full", "w");

	cr_assert(f);
	setvbuf(f, NULL, _IONBF, 0);
	basic(&p);
	errno = 0;
	cr_assert_eq(out_flamegraph.write(f, &p, &meta), -1);
	cr_assert_eq(errno, ENOSPC);
	fclose(f);
	profile_release(&p);
}

/* The hidden graph of total samples in s (caller frees). */
static char *view_of(const char *s, unsigned int total)
{
	char needle[64];
	const char *v, *end;

	snprintf(needle, sizeof(needle), "<g class=\"view hide\" data-total=\"%u\"", total);
	v = strstr(s, needle);
	cr_assert_not_null(v, "no graph of %u samples", total);
	end = strstr(v + 1, "<g class=\"view");
	if (!end)
		end = v + strlen(v);
	return strndup(v, (size_t)(end - v));
}

/*
 * The tag bar: each key's values, most samples first, with their share;
 * each value's graph of its samples alone, its tag sets merged (region=eu
 * holds car's and bike's); names as text, never markup.
 */
Test(flamegraph, tag_bar_views)
{
	const char *car[] = { "main", "order_car", NULL };
	const char *bike[] = { "main", "order_bike", NULL };
	struct profile p;
	char *s;
	const char *bar;
	char *view;

	profile_init(&p);
	add(&p, "region=eu,vehicle=car", car, 60);
	add(&p, "region=eu,vehicle=bike", bike, 30);
	add(&p, "vehicle=<b>&\"x\"", bike, 10);
	s = svg(&p);
	cr_assert(xml_ok(s));
	bar = strstr(s, "<text id=\"tags\"");
	cr_assert_not_null(bar);
	cr_assert(strstr(bar, "<tspan class=\"key\">region:</tspan> <tspan class=\"tv\" "
			      "data-view=\"1\">eu 90.0%</tspan>   <tspan class=\"key\">vehicle:"
			      "</tspan> <tspan class=\"tv\" data-view=\"2\">car 60.0%</tspan> "
			      "<tspan class=\"tv\" data-view=\"3\">bike 30.0%</tspan> <tspan "
			      "class=\"tv\" data-view=\"4\">&lt;b&gt;&amp;&quot;x&quot; 10.0%</tspan>"
			      "</text>"), "%.600s", bar);
	cr_assert_eq(count(s, "<g class=\"view"), 5);
	cr_assert_eq(count(s, "<g class=\"view hide\""), 4, "only all samples shown at first");
	/* region=eu: 90 samples, main merged across its two tag sets, no tag frame */
	view = view_of(s, 90);
	cr_assert(strstr(view, "<title>main (app.py:10) (90 samples, 100.00%)</title>"), "%s", view);
	cr_assert_null(strstr(view, "{"), "%s", view);
	free(view);
	/* vehicle=car: car's function only */
	view = view_of(s, 60);
	cr_assert(strstr(view, "<title>order_car (app.py:11) (60 samples, 100.00%)</title>"));
	cr_assert_null(strstr(view, "order_bike"), "%s", view);
	free(view);
	free(s);
	profile_release(&p);
}

/*
 * A key of many values (a request id): the bar shows what fits one line
 * (150 characters), so the file carries at most that many more graphs,
 * whatever the number of values.
 */
Test(flamegraph, tag_bar_bounded)
{
	const char *work[] = { "main", "work", NULL };
	struct profile p;
	char tags[64], *s;
	size_t values, plain;

	profile_init(&p);
	for (int i = 0; i < 5000; i++) {
		snprintf(tags, sizeof(tags), "request=%08d", i);
		add(&p, tags, work, 1 + (uint64_t)(i % 3));
	}
	s = svg_meta(&p, "pid 42", 0, 1);
	values = count(s, "class=\"tv\"");
	cr_assert(values >= 5 && values <= 150 / 18, "%zu values in the bar", values);
	cr_assert_eq(count(s, "<g class=\"view"), values + 1);
	plain = strlen(s);
	free(s);
	profile_release(&p);
	cr_assert_lt(plain, 64 * 1024, "%zu bytes", plain);
}
