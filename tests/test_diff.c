/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

/*
 * pyrospy diff on real recordings: diffwork's foo takes 75 % of the
 * samples, then 25 % (bar the other way round).  The differential flame
 * graph colours foo blue with about -50 points and bar red with about
 * +50, read from each frame's title and fill; one recording cut by its
 * tags (--base phase=base --new phase=new), or by time (--base-until,
 * --new-from) say the same; -f summary
 * lists bar as grown and foo as shrunk; bad inputs get one line, a hint
 * and a documented status.
 */

struct files {
	char dir[64], base[96], next[96], tags[96], cut[96], svg[96];
};

static void files_make(struct files *f)
{
	snprintf(f->dir, sizeof(f->dir), "/tmp/pyrospy-diff-XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->base, sizeof(f->base), "%s/base.raw", f->dir);
	snprintf(f->next, sizeof(f->next), "%s/new.raw", f->dir);
	snprintf(f->tags, sizeof(f->tags), "%s/tags.raw", f->dir);
	snprintf(f->cut, sizeof(f->cut), "%s/cut.raw", f->dir);
	snprintf(f->svg, sizeof(f->svg), "%s/diff.svg", f->dir);
}

static void files_remove(const struct files *f)
{
	unlink(f->base);
	unlink(f->next);
	unlink(f->tags);
	unlink(f->cut);
	unlink(f->svg);
	rmdir(f->dir);
}

/*
 * Record secs seconds of diffwork in mode (DIFFWORK) into raw.  At 500 Hz:
 * the time cut's 1.5 s of "new" at 100 Hz were 150 samples, foo's 25 %
 * of them within 3.5 points (one sigma), and "bar more than twice foo"
 * failed about once in a hundred runs (CI: foo 55, bar 93).
 */
static void record(const struct interp *in, const char *script, const char *mode, const char *raw,
		   const char *secs)
{
	const char *extra[] = { "-d", secs, "-r", "500", NULL };
	char *err;
	int st;

	setenv("DIFFWORK", mode, 1);
	st = test_record_to(in, script, extra, raw, &err);
	unsetenv("DIFFWORK");
	cr_assert_eq(st, 0, "%s: record %s failed (%d): %s", in->bin, mode, st, err);
	cr_assert(strstr(err, "wrote raw recording"), "%s: %s", in->bin, err);
	free(err);
}

struct frame {
	unsigned long base, next;
	double base_share, new_share, delta;
	unsigned int rgb[3];
};

/* The frame of function func in the diff's SVG: its title's numbers and its fill. */
static void frame_of(const struct interp *in, const char *svg, const char *func, struct frame *fr)
{
	char needle[128];
	const char *t, *fill;

	snprintf(needle, sizeof(needle), "<title>%s (", func);
	t = strstr(svg, needle);
	cr_assert_not_null(t, "%s: no frame of %s in: %.3000s", in->bin, func, svg);
	t = strstr(t, ") (base ");
	cr_assert_not_null(t, "%s: %s", in->bin, func);
	cr_assert_eq(sscanf(t, ") (base %lu samples, %lf%%; new %lu samples, %lf%%; %lf points)",
			    &fr->base, &fr->base_share, &fr->next, &fr->new_share, &fr->delta), 5,
		     "%s: title of %s: %.200s", in->bin, func, t);
	fill = strstr(t, "fill=\"rgb(");
	cr_assert_not_null(fill);
	cr_assert_eq(sscanf(fill, "fill=\"rgb(%u,%u,%u)", &fr->rgb[0], &fr->rgb[1], &fr->rgb[2]),
		     3);
}

/* foo 75 % -> 25 %: blue, about -50 points; bar 25 % -> 75 %: red, about +50. */
static void check_svg(const struct interp *in, const char *path, const char *how)
{
	char *svg = test_slurp(path);
	struct frame foo, bar;

	frame_of(in, svg, test_func(in, "foo"), &foo);
	frame_of(in, svg, test_func(in, "bar"), &bar);
	cr_log_info("%s %s: foo %lu -> %lu (%+.2f), rgb(%u,%u,%u); bar %lu -> %lu (%+.2f), "
		    "rgb(%u,%u,%u)", in->bin, how, foo.base, foo.next, foo.delta, foo.rgb[0],
		    foo.rgb[1], foo.rgb[2], bar.base, bar.next, bar.delta, bar.rgb[0], bar.rgb[1],
		    bar.rgb[2]);
	cr_assert(foo.delta > -65 && foo.delta < -35, "%s %s: foo %+.2f points", in->bin, how,
		  foo.delta);
	cr_assert(bar.delta > 35 && bar.delta < 65, "%s %s: bar %+.2f points", in->bin, how,
		  bar.delta);
	cr_assert(foo.base_share > 60 && foo.new_share < 40, "%s %s: foo %.2f%% -> %.2f%%",
		  in->bin, how, foo.base_share, foo.new_share);
	cr_assert(foo.rgb[2] == 255 && foo.rgb[0] < 120 && foo.rgb[1] < 120,
		  "%s %s: foo shrank, not blue: rgb(%u,%u,%u)", in->bin, how, foo.rgb[0],
		  foo.rgb[1], foo.rgb[2]);
	cr_assert(bar.rgb[0] == 255 && bar.rgb[1] < 120 && bar.rgb[2] < 120,
		  "%s %s: bar grew, not red: rgb(%u,%u,%u)", in->bin, how, bar.rgb[0], bar.rgb[1],
		  bar.rgb[2]);
	/* widths from NEW: bar is three times as wide as foo */
	cr_assert(bar.next > 2 * foo.next, "%s %s: foo %lu, bar %lu new samples", in->bin, how,
		  foo.next, bar.next);
	free(svg);
}

/*
 * The diff as its consumers read it: XML that parses, and in headless
 * Chromium, a page with red and blue frames (bar and foo, each a row of
 * thousands of pixels).
 */
static void rendered(const struct interp *in, const char *svg)
{
	char png[128], cmd[256];
	struct test_pixels px;
	unsigned long red = 0, blue = 0;

	snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", svg);
	cr_assert_eq(system(cmd), 0, "%s: the diff does not parse as XML", in->bin);
	snprintf(png, sizeof(png), "%s.png", svg);
	test_screenshot(svg, png, &px);
	for (size_t i = 0; i < (size_t)px.w * px.h; i++) {
		const unsigned char *c = px.rgb + i * px.bpp;

		red += c[0] > 200 && c[1] < 120 && c[2] < 120;
		blue += c[2] > 200 && c[0] < 120 && c[1] < 120;
	}
	free(px.rgb);
	unlink(png);
	cr_log_info("%s: %lu red, %lu blue pixels", in->bin, red, blue);
	cr_assert(red >= 1500 && blue >= 1500, "%s: %lu red and %lu blue pixels", in->bin, red,
		  blue);
}

static void run_ok(const struct interp *in, const char *const *args, char **out)
{
	char *o, *err;
	int st = test_pyrospy(args, &o, &err);

	cr_assert_eq(st, 0, "%s: diff failed (%d): %s", in->bin, st, err);
	free(err);
	if (out)
		*out = o;
	else
		free(o);
}

/* The change on the summary's line of func, which must be under heading. */
static double summary_change(const struct interp *in, const char *out, const char *func,
			     const char *heading)
{
	char needle[128];
	const char *line, *head = strstr(out, heading);

	snprintf(needle, sizeof(needle), "  %s (", func);
	line = strstr(out, needle);
	cr_assert(line && head && head < line, "%s: %s not under '%s': %s", in->bin, func, heading,
		  out);
	while (line > out && line[-1] != '\n')
		line--;
	return strtod(line, NULL);
}

static void diff(const struct interp *in, const char *script)
{
	struct files f;
	char *out;

	files_make(&f);
	test_use_helpers(in);
	record(in, script, "base", f.base, "3");
	record(in, script, "new", f.next, "3");
	record(in, script, "tags", f.tags, "3");
	record(in, script, "switch", f.cut, "4");
	{
		const char *args[] = { "diff", f.base, f.next, "-o", f.svg, NULL };

		run_ok(in, args, NULL);
		check_svg(in, f.svg, "two recordings");
		rendered(in, f.svg);
	}
	{
		const char *args[] = { "diff", f.tags, "--base", "phase=base", "--new", "phase=new",
				       "-o", f.svg, NULL };

		run_ok(in, args, NULL);
		check_svg(in, f.svg, "tag filters");
	}
	{
		/*
		 * base until 2 s after ready, new from then: half a second's
		 * margin for the attach, and for the round under way at 2 s
		 */
		const char *args[] = { "diff", f.cut, "--base-until", "1.5", "--new-from", "2.5",
				       "-o", f.svg, NULL };

		run_ok(in, args, NULL);
		check_svg(in, f.svg, "time cuts");
	}
	{
		const char *args[] = { "diff", f.base, f.next, "-f", "summary", NULL };
		double foo, bar;

		run_ok(in, args, &out);
		cr_log_info("%s summary:\n%s", in->bin, out);
		bar = summary_change(in, out, test_func(in, "bar"), "\ngrew:\n");
		foo = summary_change(in, out, test_func(in, "foo"), "\nshrank:\n");
		cr_assert(foo > -65 && foo < -35 && bar > 35 && bar < 65,
			  "%s: foo %+.2f, bar %+.2f: %s", in->bin, foo, bar, out);
		free(out);
	}
	files_remove(&f);
}

ParameterizedTestParameters(diff, foo_shrinks_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

ParameterizedTest(size_t *i, diff, foo_shrinks_python, .timeout = 90)
{
	diff(&test_pythons[*i], "diffwork.py");
}

ParameterizedTestParameters(diff, foo_shrinks_ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, diff, foo_shrinks_ruby, .timeout = 90)
{
	diff(&test_rubies[*i], "diffwork.rb");
}

/* The <g ...> tag of the frame of func in dom, and its rect's width. */
static void frame_tag(const char *dom, const char *func, char *tag, size_t cap, double *width)
{
	char needle[128];
	const char *t, *g, *r;

	snprintf(needle, sizeof(needle), "<title>%s (", func);
	t = strstr(dom, needle);
	cr_assert_not_null(t, "no frame of %s", func);
	for (g = t; g > dom && strncmp(g, "<g ", 3); g--)
		;
	snprintf(tag, cap, "%.*s", (int)(t - g), g);
	r = strstr(t, "<rect ");
	cr_assert_not_null(r);
	r = strstr(r, " width=\"");
	cr_assert_not_null(r);
	*width = strtod(r + 8, NULL);
}

/* The page's script, then n clicks on its "Hide BASE-only" */
#define GONE_CLICKS(n) "var b = document.getElementById('gone');" \
	"for (var k = 0; k < " #n "; k++) b.dispatchEvent(new MouseEvent('click', " \
	"{ bubbles: true }));"

/*
 * Frames only in BASE (car's, in a diff of car's samples against bike's)
 * are drawn at BASE's share, and the page's "Hide BASE-only" hides them
 * and gives NEW's frames all the width; clicked again, they are back.
 * Read in headless Chromium, as the page's script left the DOM.
 */
Test(diff, base_only_frames_toggle, .timeout = 120)
{
	const char *fixture = SRCDIR "/tests/fixtures/rideshare-py311.raw";
	const char *svg = "/tmp/pyrospy-diff-gone.svg", *click = "/tmp/pyrospy-diff-gone-click.svg";
	const char *args[] = { "diff", fixture, "--base", "vehicle=car", "--new", "vehicle=bike",
			       "-o", svg, NULL };
	char *out, *err, *s, *dom, tag[512];
	double car_w, bike_w;
	int st = test_pyrospy(args, &out, &err);

	cr_assert_eq(st, 0, "diff failed (%d): %s", st, err);
	free(out);
	free(err);
	s = test_slurp(svg);
	cr_assert(strstr(s, ">Hide BASE-only</text>"), "no toggle");
	frame_tag(s, "order_car", tag, sizeof(tag), &car_w);
	cr_assert(strstr(tag, "data-n2=\"0\""), "order_car is in NEW: %s", tag);
	free(s);

	/* as written: car's frames beside bike's, about half the width each */
	dom = test_dom(svg);
	frame_tag(dom, "order_car", tag, sizeof(tag), &car_w);
	cr_assert(!strstr(tag, "display"), "order_car hidden before any click: %s", tag);
	frame_tag(dom, "order_bike", tag, sizeof(tag), &bike_w);
	cr_log_info("shown: order_car %.2f px, order_bike %.2f px", car_w, bike_w);
	cr_assert(car_w > 400 && bike_w > 400 && bike_w < 800, "car %.2f, bike %.2f px", car_w,
		  bike_w);
	free(dom);

	/* hidden: bike's frames take the whole graph */
	test_svg_onload(svg, click, GONE_CLICKS(1));
	dom = test_dom(click);
	frame_tag(dom, "order_car", tag, sizeof(tag), &car_w);
	cr_assert(strstr(tag, "display: none"), "order_car still shown: %s", tag);
	frame_tag(dom, "order_bike", tag, sizeof(tag), &bike_w);
	cr_log_info("hidden: order_bike %.2f px", bike_w);
	cr_assert_gt(bike_w, 1150, "order_bike %.2f px wide without BASE's frames", bike_w);
	cr_assert(strstr(dom, ">Show BASE-only</text>"), "the toggle does not say so");
	free(dom);

	/* and back */
	test_svg_onload(svg, click, GONE_CLICKS(2));
	dom = test_dom(click);
	frame_tag(dom, "order_car", tag, sizeof(tag), &car_w);
	cr_assert(!strstr(tag, "display: none"), "order_car hidden after two clicks: %s", tag);
	frame_tag(dom, "order_bike", tag, sizeof(tag), &bike_w);
	cr_assert_lt(bike_w, 800, "order_bike %.2f px after two clicks", bike_w);
	free(dom);
	unlink(svg);
	unlink(click);
}

static void refused(const char *const *args, int status, const char *what)
{
	char *out, *err;
	int st = test_pyrospy(args, &out, &err);

	cr_assert_eq(st, status, "%s: exit %d, want %d: %s", what, st, status, err);
	cr_assert(!strncmp(err, "pyrospy: error: ", 16) && strstr(err, "\nhint: "), "%s: %s", what,
		  err);
	cr_assert_eq(strchr(err, '\n'), strstr(err, "\nhint: "), "%s: more than one line: %s",
		     what, err);
	cr_assert_str_eq(out, "", "%s", what);
	free(out);
	free(err);
}

/* Bad inputs: one line, a hint, the status the man page gives. */
Test(diff, refuses_bad_input)
{
	const char *fixture = SRCDIR "/tests/fixtures/rideshare-py311.raw";
	const char *junk = "/tmp/pyrospy-diff-junk.raw";
	const char *one[] = { "diff", fixture, NULL };
	const char *none[] = { "diff", NULL };
	const char *missing[] = { "diff", fixture, "/nonexistent/new.raw", NULL };
	const char *bad[] = { "diff", junk, fixture, NULL };
	const char *badtag[] = { "diff", fixture, "--base", "vehicle", "--new", "vehicle=car",
				 NULL };
	const char *empty[] = { "diff", fixture, "--base", "vehicle=plane", "--new",
				"vehicle=car", NULL };
	const char *format[] = { "diff", fixture, fixture, "-f", "pprof", NULL };
	FILE *f = fopen(junk, "wb");

	cr_assert_not_null(f);
	fputs("PYSPYRAW\001\377\377\377\377garbage and more garbage", f);
	fclose(f);
	refused(one, 2, "one recording, no filters");
	refused(none, 2, "no input");
	refused(missing, 1, "no such file");
	refused(bad, 7, "no recording");
	refused(badtag, 2, "bad tag filter");
	refused(empty, 1, "no sample passes");
	refused(format, 2, "unknown format");
	unlink(junk);
}
