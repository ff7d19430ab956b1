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
 * The tag bar of the flame graph and of the diff, driven in headless
 * Chromium as a user would: rideshare tags its rounds vehicle=car, bike
 * and scooter.  Clicking "car" must leave a graph of car's samples only
 * (none of order_bike, order_scooter), with the counts `report --tag
 * vehicle=car' gives; clicking it again brings all samples back.  The
 * page's DOM is read as the page's script left it (--dump-dom).
 */

struct files {
	char dir[64], raw[96], svg[96], click[96], png[112];
};

static void files_make(struct files *f)
{
	snprintf(f->dir, sizeof(f->dir), "/tmp/pyrospy-tagbar-XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->raw, sizeof(f->raw), "%s/rec.raw", f->dir);
	snprintf(f->svg, sizeof(f->svg), "%s/fg.svg", f->dir);
	snprintf(f->click, sizeof(f->click), "%s/click.svg", f->dir);
	snprintf(f->png, sizeof(f->png), "%s/click.png", f->dir);
}

static void files_remove(const struct files *f)
{
	unlink(f->raw);
	unlink(f->svg);
	unlink(f->click);
	unlink(f->png);
	rmdir(f->dir);
}

/* The graph the page shows: its one view group without "hide" (caller frees). */
static char *shown_view(const char *dom, const char *what)
{
	const char *at = strstr(dom, "<g class=\"view\""), *end;

	cr_assert_not_null(at, "%s: no view shown: %.2000s", what, dom);
	cr_assert_null(strstr(at + 1, "<g class=\"view\""), "%s: two views shown", what);
	end = strstr(at + 1, "<g class=\"view");
	if (!end)
		end = at + strlen(at);
	return strndup(at, (size_t)(end - at));
}

/* The view's total: its data-total. */
static unsigned long view_total(const char *view)
{
	const char *t = strstr(view, "data-total=\"");

	cr_assert_not_null(t);
	return strtoul(t + 12, NULL, 10);
}

/*
 * The samples of the frames of func (all its lines) in view: a flame
 * graph's "(N samples", or a diff's "new N samples" (base in *base).
 */
static unsigned long frames_of(const char *view, const char *func, unsigned long *base)
{
	char needle[160];
	unsigned long sum = 0;

	snprintf(needle, sizeof(needle), "<title>%s (", func);
	if (base)
		*base = 0;
	for (const char *t = strstr(view, needle); t; t = strstr(t + 1, needle)) {
		const char *end = strstr(t, "</title>"), *p = end;
		unsigned long n, b;

		cr_assert_not_null(end);
		while (p > t && strncmp(p, " (", 2))
			p--;
		if (base) {
			cr_assert_eq(sscanf(p, " (base %lu samples, %*f%%; new %lu", &b, &n), 2,
				     "%.200s", t);
			*base += b;
		} else {
			cr_assert_eq(sscanf(p, " (%lu sample", &n), 1, "%.200s", t);
		}
		sum += n;
	}
	return sum;
}

/* `report raw extra... -f folded' */
static char *folded(const char *raw, const char *const *extra)
{
	const char *args[16] = { "report", raw, "-f", "folded", "-o", "-" };
	char *out, *err;
	size_t n = 6;
	int st;

	for (; extra && *extra; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "report failed (%d): %s", st, err);
	free(err);
	return out;
}

/* The tag bar offers value of key, at about share percent (within 0.1). */
static void bar_offers(const char *svg, const char *bin, const char *value, double share)
{
	char needle[64];
	const char *t = strstr(svg, "<text id=\"tags\""), *v;
	double got;

	cr_assert_not_null(t, "%s: no tag bar", bin);
	snprintf(needle, sizeof(needle), "\">%s ", value);
	v = strstr(t, needle);
	cr_assert(v && v < strstr(t, "</text>"), "%s: no %s in the tag bar: %.500s", bin, value,
		  t);
	cr_assert_eq(sscanf(v + strlen(needle), "%lf%%", &got), 1);
	cr_assert(got > share - 0.11 && got < share + 0.11, "%s: %s %.1f%%, want %.2f%%", bin,
		  value, got, share);
}

/* Click the tag bar's value (once, or twice: on and off again) and read the DOM. */
static char *clicked(const struct files *f, const char *svg, const char *value, int times)
{
	char js[512];

	snprintf(js, sizeof(js),
		 "var e = Array.prototype.filter.call(document.querySelectorAll('#tags .tv'), "
		 "function (t) { return t.textContent.indexOf('%s ') === 0; })[0];"
		 "for (var k = 0; k < %d; k++) e.dispatchEvent(new MouseEvent('click', "
		 "{ bubbles: true }));", value, times);
	test_svg_onload(svg, f->click, js);
	return test_dom(f->click);
}

static void flamegraph(const struct interp *in, const struct files *f)
{
	const char *args[] = { "report", f->raw, "-o", f->svg, NULL };
	const char *car_only[] = { "--tag", "vehicle=car", NULL };
	const char *car = test_func(in, "order_car"), *bike = test_func(in, "order_bike");
	const char *scooter = test_func(in, "order_scooter");
	char *out, *err, *all = folded(f->raw, NULL), *cars = folded(f->raw, car_only);
	char *svg, *dom, *view;
	unsigned long nall = test_folded_count(all, ""), ncar = test_folded_count(cars, "");
	struct test_pixels px;
	unsigned long coloured = 0;
	int st = test_pyrospy(args, &out, &err);

	cr_assert_eq(st, 0, "%s: report failed (%d): %s", in->bin, st, err);
	free(out);
	free(err);
	cr_assert_gt(ncar, nall / 3, "%s: car %lu of %lu samples", in->bin, ncar, nall);
	svg = test_slurp(f->svg);
	bar_offers(svg, in->bin, "car", 100.0 * (double)ncar / (double)nall);
	bar_offers(svg, in->bin, "bike", 100.0 * (double)test_folded_count(all, "vehicle=bike}") /
		   (double)nall);
	cr_log_info("%s: %zu bytes of SVG, %lu samples, %lu of car", in->bin, strlen(svg), nall,
		    ncar);

	/* before any click: all samples */
	dom = test_dom(f->svg);
	view = shown_view(dom, in->bin);
	cr_assert_eq(view_total(view), nall, "%s", in->bin);
	cr_assert(frames_of(view, bike, NULL) > 0 && frames_of(view, car, NULL) > 0, "%s", in->bin);
	free(view);
	free(dom);

	/* car: car's functions only, with car's counts */
	dom = clicked(f, f->svg, "car", 1);
	view = shown_view(dom, in->bin);
	cr_log_info("%s: car shown: %lu samples, %s %lu (report: %lu)", in->bin, view_total(view),
		    car, frames_of(view, car, NULL), test_folded_count(cars, car));
	cr_assert_eq(view_total(view), ncar, "%s: the car view holds %lu samples, report %lu",
		     in->bin, view_total(view), ncar);
	cr_assert_eq(frames_of(view, car, NULL), test_folded_count(cars, car), "%s", in->bin);
	cr_assert_eq(frames_of(view, bike, NULL), 0, "%s: bike in car's graph", in->bin);
	cr_assert_eq(frames_of(view, scooter, NULL), 0, "%s: scooter in car's graph", in->bin);
	cr_assert(strstr(dom, "class=\"tv on\""), "%s: the value clicked is not marked", in->bin);
	free(view);
	free(dom);

	/* and as a user sees it: a graph, not a blank page */
	test_screenshot(f->click, f->png, &px);
	for (size_t i = 0; i < (size_t)px.w * px.h; i++) {
		const unsigned char *c = px.rgb + i * px.bpp;
		int hi = c[0] > c[1] ? c[0] : c[1], lo = c[0] < c[1] ? c[0] : c[1];

		hi = c[2] > hi ? c[2] : hi;
		lo = c[2] < lo ? c[2] : lo;
		coloured += hi - lo >= 64;
	}
	free(px.rgb);
	cr_assert_geq(coloured, 3000, "%s: car's graph is blank", in->bin);

	/* clicked again: all samples again */
	dom = clicked(f, f->svg, "car", 2);
	view = shown_view(dom, in->bin);
	cr_assert_eq(view_total(view), nall, "%s", in->bin);
	cr_assert_gt(frames_of(view, bike, NULL), 0, "%s", in->bin);
	cr_assert_null(strstr(dom, "class=\"tv on\""), "%s", in->bin);
	free(view);
	free(dom);
	free(svg);
	free(all);
	free(cars);
}

/*
 * The diff's tag bar: the first half of the recording against the second,
 * car's value clicked: car's functions only, each side's counts those of
 * car's samples in its half.
 */
static void diff(const struct interp *in, const struct files *f)
{
	const char *args[] = { "diff", f->raw, "--base-until", "1.5", "--new-from", "1.5", "-o",
			       f->svg, NULL };
	const char *base_car[] = { "--tag", "vehicle=car", "--until", "1.5", NULL };
	const char *new_car[] = { "--tag", "vehicle=car", "--from", "1.5", NULL };
	const char *car = test_func(in, "order_car"), *bike = test_func(in, "order_bike");
	char *out, *err, *b = folded(f->raw, base_car), *n = folded(f->raw, new_car), *dom, *view;
	unsigned long nbase, nnew;
	int st = test_pyrospy(args, &out, &err);

	cr_assert_eq(st, 0, "%s: diff failed (%d): %s", in->bin, st, err);
	free(out);
	free(err);
	dom = clicked(f, f->svg, "car", 1);
	view = shown_view(dom, in->bin);
	nnew = frames_of(view, car, &nbase);
	cr_log_info("%s: diff, car shown: %s base %lu new %lu (report: %lu, %lu)", in->bin, car,
		    nbase, nnew, test_folded_count(b, car), test_folded_count(n, car));
	cr_assert_eq(nbase, test_folded_count(b, car), "%s: base", in->bin);
	cr_assert_eq(nnew, test_folded_count(n, car), "%s: new", in->bin);
	cr_assert_gt(nnew, 0, "%s", in->bin);
	frames_of(view, bike, &nbase);
	cr_assert_eq(frames_of(view, bike, NULL) + nbase, 0, "%s: bike in car's diff", in->bin);
	free(view);
	free(dom);
	free(b);
	free(n);
}

static void tagbar(const struct interp *in, const char *script)
{
	const char *extra[] = { "-d", "3", "-r", "100", NULL };
	struct files f;
	char *err;
	int st;

	files_make(&f);
	test_use_helpers(in);
	st = test_record_to(in, script, extra, f.raw, &err);
	cr_assert_eq(st, 0, "%s: record failed (%d): %s", in->bin, st, err);
	free(err);
	flamegraph(in, &f);
	diff(in, &f);
	files_remove(&f);
}

ParameterizedTestParameters(tagbar, python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

ParameterizedTest(size_t *i, tagbar, python, .timeout = 120)
{
	tagbar(&test_pythons[*i], "rideshare.py");
}

ParameterizedTestParameters(tagbar, ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, tagbar, ruby, .timeout = 120)
{
	tagbar(&test_rubies[*i], "rideshare.rb");
}
