/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

/*
 * The flame graph of a real interpreter, read by its real consumers: an
 * XML parser (xmllint) and a browser (headless Chromium), whose
 * screenshot must show coloured frames, and, with the page's own script
 * driven to zoom and search, the search highlight.
 */

static void spit(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");

	cr_assert(f, "cannot create %s", path);
	cr_assert(fputs(s, f) != EOF);
	cr_assert_eq(fclose(f), 0);
}

/* `record --pid PID -d 2 -f flamegraph -o svg'; returns the samples it reports. */
static unsigned long record_svg(const struct interp *in, const char *script, const char *svg)
{
	const char *sargs[] = { test_target_for(in, script), NULL };
	char ready[64], pidbuf[32], *out, *err, *p;
	const char *args[] = { "record", "--pid", pidbuf, "-d", "2", "-f", "flamegraph", "-o", svg,
			       NULL };
	unsigned long n = 0;
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int st;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_leq(test_dropped_share(err), 0.01, "%s: dropped samples: %s", in->bin, err);
	p = strstr(err, "wrote flamegraph profile to");
	cr_assert(p && (p = strstr(p, "' (")) && sscanf(p, "' (%lu samples)", &n) == 1,
		  "no sample count in: %s", err);
	free(out);
	free(err);
	return n;
}

/*
 * Pixels of clear colour (frames), as opposed to the white page, the
 * pale background and the grey text; and of those, the search magenta.
 */
static void png_count(const struct test_pixels *px, unsigned long *coloured, unsigned long *magenta)
{
	*coloured = *magenta = 0;
	for (size_t i = 0; i < (size_t)px->w * px->h; i++) {
		const unsigned char *c = px->rgb + i * px->bpp;
		int hi = c[0] > c[1] ? c[0] : c[1], lo = c[0] < c[1] ? c[0] : c[1];

		hi = c[2] > hi ? c[2] : hi;
		lo = c[2] < lo ? c[2] : lo;
		if (px->bpp == 4 && !c[3])
			continue;
		if (hi - lo >= 64)
			(*coloured)++;
		if (c[0] > 200 && c[1] < 40 && c[2] > 200)
			(*magenta)++;
	}
}

static void check(const struct interp *in, const char *script)
{
	char svg[] = "/tmp/pyrospy-fg-XXXXXX.svg", zsvg[4096], png[4096], cmd[4200], want[64];
	unsigned long samples, coloured, magenta;
	struct test_pixels px;
	char *s, *onload;
	int fd = mkstemps(svg, 4);

	cr_assert(fd >= 0);
	close(fd);
	samples = record_svg(in, script, svg);
	cr_assert(samples > 50, "%s: only %lu samples in 2 s", in->bin, samples);

	snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", svg);
	cr_assert_eq(system(cmd), 0, "%s: the SVG does not parse as XML", in->bin);
	s = test_slurp(svg);
	cr_assert(strstr(s, "work ("), "%s: no work frame", in->bin);
	snprintf(want, sizeof(want), " at 100 Hz, %lu samples</text>", samples);
	cr_assert(strstr(s, want), "%s: title without the sample count %lu", in->bin, samples);
	cr_assert(!strstr(s, "href=") && !strstr(s, "url(http"), "no network resource");

	snprintf(png, sizeof(png), "%s.png", svg);
	test_screenshot(svg, png, &px);
	png_count(&px, &coloured, &magenta);
	free(px.rgb);
	cr_log_info("%s: %lu samples, %zu bytes, %lu coloured pixels", in->bin, samples, strlen(s),
		    coloured);
	cr_assert(coloured >= 3000, "%s: blank flame graph: %lu coloured pixels", in->bin,
		  coloured);
	cr_assert_lt(magenta, 100, "%s: search colour before any search", in->bin);

	/*
	 * Drive the page's script as a user would: zoom into the outermost
	 * frame, search for "work".  Only the load handler is changed.
	 */
	onload = strstr(s, "onload=\"init(evt)\"");
	cr_assert(onload);
	*onload = '\0';
	snprintf(zsvg, sizeof(zsvg), "%s.zoom.svg", svg);
	{
		char *z = malloc(strlen(s) + strlen(onload + 1) + 128);

		sprintf(z, "%sonload=\"init(evt);zoom(frames[0]);search('work [(]')\"%s", s,
			onload + strlen("onload=\"init(evt)\""));
		spit(zsvg, z);
		free(z);
	}
	test_screenshot(zsvg, png, &px);
	png_count(&px, &coloured, &magenta);
	free(px.rgb);
	cr_log_info("%s: zoomed and searched: %lu magenta pixels", in->bin, magenta);
	cr_assert(magenta >= 2000, "%s: search highlighted only %lu pixels", in->bin, magenta);

	unlink(png);
	unlink(zsvg);
	unlink(svg);
	free(s);
}

Test(consume_svg, python, .timeout = 120)
{
	check(&test_pythons[1], "seed.py");
}

Test(consume_svg, ruby, .timeout = 120)
{
	check(&test_rubies[1], "seed.rb");
}
