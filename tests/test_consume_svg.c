/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

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
	cr_assert(!strstr(err, "dropped"), "%s: dropped samples: %s", in->bin, err);
	p = strstr(err, "wrote flamegraph profile to");
	cr_assert(p && (p = strstr(p, "' (")) && sscanf(p, "' (%lu samples)", &n) == 1,
		  "no sample count in: %s", err);
	free(out);
	free(err);
	return n;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
	int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);

	return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

struct pixels {
	uint32_t w, h, bpp;	/* bytes per pixel: 3 RGB, 4 RGBA */
	unsigned char *rgb;	/* w * h * bpp, unfiltered */
};

/*
 * Just enough PNG for Chromium's screenshots: 8-bit RGB or RGBA, not
 * interlaced.  The IDAT chunks joined are one zlib stream of scanlines,
 * each behind a filter byte that must be undone to see the colours.
 */
static void png_decode(const char *path, struct pixels *px)
{
	FILE *f = fopen(path, "rb");
	unsigned char *png, *z = NULL, *raw, *prev;
	size_t zlen = 0, len, stride;
	uLongf rawlen;
	long flen;

	cr_assert(f, "no screenshot %s", path);
	fseek(f, 0, SEEK_END);
	flen = ftell(f);
	rewind(f);
	cr_assert(flen > 33, "screenshot too short");
	png = malloc((size_t)flen);
	cr_assert_eq(fread(png, 1, (size_t)flen, f), (size_t)flen);
	fclose(f);
	len = (size_t)flen;
	cr_assert(!memcmp(png, "\x89PNG\r\n\x1a\n", 8), "not a PNG");
	for (size_t off = 8; off + 12 <= len;) {
		uint32_t clen = be32(png + off);
		const unsigned char *type = png + off + 4, *data = png + off + 8;

		cr_assert(clen <= len - off - 12, "truncated chunk");
		if (!memcmp(type, "IHDR", 4)) {
			px->w = be32(data);
			px->h = be32(data + 4);
			cr_assert_eq(data[8], 8, "bit depth %d", data[8]);
			cr_assert(data[9] == 2 || data[9] == 6, "colour type %d", data[9]);
			cr_assert_eq(data[12], 0, "interlaced");
			px->bpp = data[9] == 6 ? 4 : 3;
		} else if (!memcmp(type, "IDAT", 4)) {
			z = realloc(z, zlen + clen);
			memcpy(z + zlen, data, clen);
			zlen += clen;
		}
		off += 12 + clen;
	}
	cr_assert(px->w && px->h && px->w < 10000 && px->h < 10000 && z, "bad PNG");
	stride = (size_t)px->w * px->bpp;
	rawlen = (uLongf)((stride + 1) * px->h);
	raw = malloc(rawlen);
	cr_assert_eq(uncompress(raw, &rawlen, z, zlen), Z_OK, "cannot inflate IDAT");
	cr_assert_eq(rawlen, (stride + 1) * px->h);
	px->rgb = malloc(stride * px->h);
	prev = calloc(1, stride);
	for (uint32_t y = 0; y < px->h; y++) {
		unsigned char *in = raw + y * (stride + 1), *out = px->rgb + y * stride;

		for (size_t i = 0; i < stride; i++) {
			int a = i >= px->bpp ? out[i - px->bpp] : 0, b = prev[i];
			int c = i >= px->bpp ? prev[i - px->bpp] : 0, v = in[1 + i];

			switch (in[0]) {
			case 0: break;
			case 1: v += a; break;
			case 2: v += b; break;
			case 3: v += (a + b) / 2; break;
			case 4: v += paeth(a, b, c); break;
			default: cr_assert_fail("filter %d", in[0]);
			}
			out[i] = (unsigned char)v;
		}
		memcpy(prev, out, stride);
	}
	free(prev);
	free(raw);
	free(z);
	free(png);
}

/*
 * Pixels of clear colour (frames), as opposed to the white page, the
 * pale background and the grey text; and of those, the search magenta.
 */
static void png_count(const struct pixels *px, unsigned long *coloured, unsigned long *magenta)
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

static void screenshot(const char *svg, const char *png, struct pixels *px)
{
	char dir[] = "/tmp/pyrospy-chromium-XXXXXX", cmd[4096];
	int st;

	cr_assert(mkdtemp(dir));
	unlink(png);
	/* its own profile directory: another chromium may be running */
	snprintf(cmd, sizeof(cmd),
		 "timeout 90 chromium --headless --no-sandbox --disable-gpu --user-data-dir=%s "
		 "--screenshot=%s --window-size=1200,800 file://%s >/dev/null 2>&1",
		 dir, png, svg);
	st = system(cmd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(st, 0, "chromium failed (status %d): is /usr/bin/chromium installed?", st);
	png_decode(png, px);
	cr_assert_eq(px->w, 1200);
}

static void check(const struct interp *in, const char *script)
{
	char svg[] = "/tmp/pyrospy-fg-XXXXXX.svg", zsvg[4096], png[4096], cmd[4200], want[64];
	unsigned long samples, coloured, magenta;
	struct pixels px;
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
	screenshot(svg, png, &px);
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
	screenshot(zsvg, png, &px);
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
