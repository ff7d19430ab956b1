/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "output/out.h"
#include "profile/profile.h"
#include "profile/shortpath.h"
#include "util/utf8.h"
#include "util/xalloc.h"

/*
 * An interactive flame graph: one self-contained SVG file, no network
 * resources, in the style of flamegraph.pl and inferno.  By default an
 * icicle, root at the top, as inferno and py-spy draw it: the first
 * screen of a deep profile shows its widest frames, not the tallest rare
 * stack (an import tower); meta->flame_up draws the classic flame graph,
 * root at the bottom:
 *
 *   +--------------------------------------------------------+
 *   | Reset zoom        pid 42 - 2.0 s at 100 Hz ...  Search |
 *   |           [<module> (app.py:20)                 ]      |  depth 1
 *   |           [foo (app.py:8)   ][bar (app.py:12)]         |  depth 2
 *   |           [work (app.py:4)  ]                          |  depth 3
 *   | Function: foo (app.py:8) (75 samples, 75.00%) Matched: |
 *   +--------------------------------------------------------+
 *
 * One <g> per frame holds a <title> (the frame's text, samples and
 * percentage, for tooltips and screen readers), a <rect> and a <text>
 * label clipped to the rectangle.  The x-axis is not time: children sit
 * left to right in the order the trie stores them (first seen first).
 *
 * The page's script never contains profile data.  It reads each frame's
 * position from attributes in samples (data-s: samples to its left,
 * data-n: its total, data-d: its depth) and its name from the <title>, so
 * all the target's text goes through XML escaping and nothing else.
 * Without script (an image viewer) the file still shows the graph.
 */

#define FG_WIDTH	1200	/* px, as flamegraph.pl */
#define FG_XPAD		10
#define FG_GRAPH_W	(FG_WIDTH - 2 * FG_XPAD)
#define FG_FRAME_H	16
#define FG_TOP		60	/* title and controls */
#define FG_BOTTOM	34	/* details line */
#define FG_CHAR_W	7	/* average width of a 12px Verdana character */
/*
 * Frames under a thousandth of the samples (about a pixel) are left out
 * with everything above them, as inferno's --minwidth: they cannot be
 * seen or clicked, and a long tail of them would make the file huge.
 */
#define FG_MIN_SHARE	0.001
/*
 * The tag bar: at most FG_TAG_KEYS keys and FG_TAG_CHARS characters of
 * names and shares (a line of the page), each name cut to FG_TAG_NAME.
 * Every value shown brings its own graph, so the file grows by at most
 * one graph's frames per key shown (a key's values split its samples).
 */
#define FG_TAG_KEYS	8
#define FG_TAG_CHARS	150
#define FG_TAG_NAME	32

struct fg {
	FILE *f;
	/* the graph being written (fg_view_begin()) */
	const struct profile *p;	/* the projected view */
	const struct out_diff *diff;	/* a differential flame graph's counts, or NULL */
	uint64_t *width;		/* with diff: each node's width, in units */
	double scale;			/* with diff: the change that is the deepest colour */
	uint64_t total;
	uint32_t maxdepth;		/* of the frames shown, in all graphs */
	int up;				/* root at the bottom (meta->flame_up) */
	uint64_t *next;			/* per depth: where the next child starts */
	uint64_t *next2;		/* with diff: the same without the frames only in BASE */
	size_t nnext;
	int errnum;			/* first write error, 0 if none */
	struct shortpath *sp;		/* the labels' short paths; NULL: --full-paths */
	char text[8192], clean[8192], sclean[8192];
	char label[FG_GRAPH_W / FG_CHAR_W * 4 + 8];	/* the widest label, 4-byte characters */
};

static void fg_printf(struct fg *fg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Writes stop at the first error and remember its errno, so that the
 * checks do not drown the layout code and write() reports the first cause.
 */
static void fg_printf(struct fg *fg, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (fg->errnum)
		return;
	va_start(ap, fmt);
	r = vfprintf(fg->f, fmt, ap);
	va_end(ap);
	if (r < 0)
		fg->errnum = errno ? errno : EIO;
}

static void fg_puts(struct fg *fg, const char *s)
{
	if (!fg->errnum && fputs(s, fg->f) == EOF)
		fg->errnum = errno ? errno : EIO;
}

static void fg_escaped(struct fg *fg, const char *s)
{
	if (!fg->errnum && out_put_escaped(fg->f, s, 1))
		fg->errnum = errno ? errno : EIO;
}

/*
 * Copy s into out replacing with '?' what XML 1.0 cannot hold even
 * escaped: bytes outside well-formed UTF-8 (out_frame_text() may cut a
 * long name inside a character) and U+FFFE, U+FFFF.  Control characters
 * are left to out_put_escaped().
 */
static void fg_clean(char *out, size_t cap, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), o = 0, i = 0;

	while (i < n && o + 5 < cap) {
		size_t k = u[i] < 0x80 ? 1 : u[i] >= 0xf0 ? 4 : u[i] >= 0xe0 ? 3 : 2;

		if (k > n - i || !utf8_valid(s + i, k) ||
		    (k == 3 && u[i] == 0xef && u[i + 1] == 0xbf && u[i + 2] >= 0xbe)) {
			out[o++] = '?';
			i++;
			continue;
		}
		memcpy(out + o, s + i, k);
		o += k;
		i += k;
	}
	out[o] = '\0';
}

/* Characters (not bytes) of the n bytes of clean UTF-8 at s. */
static size_t fg_chars(const char *s, size_t n)
{
	size_t chars = 0;

	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			chars++;
	return chars;
}

/* The byte at which the last k characters of the n bytes at s begin. */
static size_t fg_tail(const char *s, size_t n, size_t k)
{
	size_t i = n;

	while (i > 0 && k > 0)
		if (((unsigned char)s[--i] & 0xc0) != 0x80)
			k--;
	return i;
}

/*
 * The label that fits w pixels, names before paths: the whole text; else,
 * for "name (where)", the name and the end of where ("name (..shop.py:10)",
 * at least FG_FIT_WHERE characters of it), or the name alone; else the
 * start of the name and "..", or nothing under three characters.  Counts
 * characters, not bytes, and never cuts one (s is clean UTF-8).  The
 * script's fit() applies the same rule when zooming.
 */
#define FG_FIT_WHERE 8
static const char *fg_fit(char *out, size_t cap, const char *s, double w)
{
	long max = (long)((w - 6) / FG_CHAR_W);
	size_t n = strlen(s), o = 0, chars = 0, i, name = n;
	const char *paren = NULL;

	if (max < 3)
		return "";
	if (fg_chars(s, n) <= (size_t)max)
		return s;
	/* the last " (" of a text that ends with ")" starts where the frame is */
	for (const char *p = s; n > 1 && s[n - 1] == ')' && (p = strstr(p, " (")); p++)
		paren = p;
	if (paren && paren > s) {
		size_t nc, room;

		name = (size_t)(paren - s);
		nc = fg_chars(s, name);
		room = (size_t)max > nc + 5 ? (size_t)max - nc - 5 : 0;
		if (room >= FG_FIT_WHERE && name + 4 + (n - 1 - fg_tail(s, n - 1, room)) + 2 <= cap) {
			size_t from = fg_tail(s, n - 1, room);

			memcpy(out, s, name);
			memcpy(out + name, " (..", 4);
			memcpy(out + name + 4, s + from, n - from);
			out[name + 4 + n - from] = '\0';
			return out;
		}
		if (nc <= (size_t)max && name < cap) {
			memcpy(out, s, name);
			out[name] = '\0';
			return out;
		}
	}
	for (i = 0; i < name && o + 3 < cap; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80 && chars++ == (size_t)max - 2)
			break;
		out[o++] = s[i];
	}
	memcpy(out + o, "..", 3);
	return out;
}

/* FNV-1a: stable across runs and machines, so a file keeps its colour. */
static uint32_t fg_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static unsigned int fg_channel(double p, double q, double t)
{
	double v;

	if (t < 0)
		t += 1;
	if (t > 1)
		t -= 1;
	if (t < 1.0 / 6)
		v = p + (q - p) * 6 * t;
	else if (t < 0.5)
		v = q;
	else if (t < 2.0 / 3)
		v = p + (q - p) * (2.0 / 3 - t) * 6;
	else
		v = p;
	return (unsigned int)(v * 255 + 0.5);
}

static void fg_hsl(unsigned int rgb[3], double h, double s, double l)
{
	double q = l < 0.5 ? l * (1 + s) : l + s - l * s, p = 2 * l - q;

	h /= 360;
	rgb[0] = fg_channel(p, q, h + 1.0 / 3);
	rgb[1] = fg_channel(p, q, h);
	rgb[2] = fg_channel(p, q, h - 1.0 / 3);
}

/*
 * The file picks a hue family, so that one module's frames read as one
 * patch; the function varies the shade within it, so that neighbours
 * stay apart.  Magenta is left out: search highlights with it.
 * Pseudo-frames (threads, tag sets, "(garbage collection)") are grey.
 */
static void fg_colour(const struct profile *p, uint32_t frame, unsigned int rgb[3])
{
	static const unsigned short hues[] = {
		0, 16, 30, 42, 52, 75, 115, 155, 180, 200, 220, 255,
	};
	const struct profile_frame *fr = &p->frame[frame];
	uint32_t v = fg_hash(profile_str(p, fr->name)), hue;

	if (fr->kind != PROFILE_CODE) {
		fg_hsl(rgb, 0, 0, 0.72 + (v % 8) / 100.0);
		return;
	}
	hue = hues[fg_hash(profile_str(p, fr->file)) % ARRAY_SIZE(hues)];
	fg_hsl(rgb, hue + (double)(v % 17) - 8, 0.60 + (v >> 8) % 20 / 100.0,
	       0.55 + (v >> 16) % 14 / 100.0);
}

/* A node's width in the graph's units: its samples, or, in a diff, fg_diff_layout()'s. */
static uint64_t fg_width(const struct fg *fg, uint32_t id)
{
	return fg->width ? fg->width[id] : fg->p->node[id].total;
}

/*
 * The change of a node between BASE and NEW: in points of share of each
 * side's samples, or (absolute) in samples.
 */
static double fg_delta(const struct fg *fg, uint32_t id)
{
	const struct out_diff *d = fg->diff;

	if (d->absolute)
		return (double)d->next[id] - (double)d->base[id];
	return 100.0 * ((d->new_total ? (double)d->next[id] / (double)d->new_total : 0) -
			(d->base_total ? (double)d->base[id] / (double)d->base_total : 0));
}

/*
 * Red for what grew, blue for what shrank, the deeper the larger the
 * change against the largest one (or a floor, so that noise stays pale);
 * grey for no change.
 */
static void fg_diff_colour(const struct fg *fg, uint32_t id, unsigned int rgb[3])
{
	double delta = fg_delta(fg, id), i = delta < 0 ? -delta / fg->scale : delta / fg->scale;
	unsigned int c = 235 - (unsigned int)((i > 1 ? 1 : i) * 200 + 0.5);

	rgb[0] = rgb[1] = rgb[2] = delta ? c : 235;
	if (delta > 0)
		rgb[0] = 255;
	else if (delta < 0)
		rgb[2] = 255;
}

static void fg_diff_title(struct fg *fg, uint32_t id)
{
	const struct out_diff *d = fg->diff;
	double bt = d->base_total ? (double)d->base_total : 1;
	double nt = d->new_total ? (double)d->new_total : 1;

	fg_printf(fg, " (base %" PRIu64 " samples, %.2f%%; new %" PRIu64 " samples, %.2f%%; ",
		  d->base[id], 100.0 * (double)d->base[id] / bt, d->next[id],
		  100.0 * (double)d->next[id] / nt);
	if (d->absolute)
		fg_printf(fg, "%+.0f samples)</title>", fg_delta(fg, id));
	else
		fg_printf(fg, "%+.2f points)</title>", fg_delta(fg, id));
}

static void fg_frame(struct fg *fg, uint32_t id, uint32_t depth, uint64_t start, uint64_t start2)
{
	const struct profile_node *n = &fg->p->node[id];
	uint64_t width = fg_width(fg, id);
	double x = FG_XPAD + (double)start * FG_GRAPH_W / (double)fg->total;
	double w = (double)width * FG_GRAPH_W / (double)fg->total;
	unsigned int y = FG_TOP + (fg->up ? fg->maxdepth - depth : depth - 1) * FG_FRAME_H, rgb[3];

	const char *label = fg->clean;

	/* the title has the whole path, the label (data-l for the script) the short one */
	fg_clean(fg->clean, sizeof(fg->clean), out_frame_text(fg->p, n->frame, fg->text,
							     sizeof(fg->text)));
	if (fg->sp) {
		fg_clean(fg->sclean, sizeof(fg->sclean),
			 out_frame_label(fg->p, n->frame, fg->sp, fg->text, sizeof(fg->text)));
		if (strcmp(fg->sclean, fg->clean))
			label = fg->sclean;
	}
	if (fg->diff)
		fg_diff_colour(fg, id, rgb);
	else
		fg_colour(fg->p, n->frame, rgb);
	fg_printf(fg, "<g data-s=\"%" PRIu64 "\" data-n=\"%" PRIu64 "\" data-d=\"%" PRIu32 "\"",
		  start, width, depth);
	/* where the frame goes with the frames only in BASE hidden */
	if (fg->diff)
		fg_printf(fg, " data-s2=\"%" PRIu64 "\" data-n2=\"%" PRIu64 "\"", start2,
			  fg->diff->next[id]);
	if (label != fg->clean) {
		fg_puts(fg, " data-l=\"");
		fg_escaped(fg, label);
		fg_puts(fg, "\"");
	}
	fg_puts(fg, "><title>");
	fg_escaped(fg, fg->clean);
	if (fg->diff)
		fg_diff_title(fg, id);
	else
		fg_printf(fg, " (%" PRIu64 " sample%s, %.2f%%)</title>", n->total,
			  n->total == 1 ? "" : "s", 100.0 * (double)n->total / (double)fg->total);
	fg_printf(fg, "<rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%u\" "
		  "fill=\"rgb(%u,%u,%u)\" rx=\"2\"/><text x=\"%.2f\" y=\"%u\">", x, y, w,
		  FG_FRAME_H - 1, rgb[0], rgb[1], rgb[2], x + 3, y + 11);
	fg_escaped(fg, fg_fit(fg->label, sizeof(fg->label), label, w));
	fg_puts(fg, "</text></g>\n");
}

static void fg_reserve(struct fg *fg, size_t depth)
{
	if (depth < fg->nnext)
		return;
	fg->nnext = depth * 2 + 16;
	fg->next = xreallocarray(fg->next, fg->nnext, sizeof(*fg->next));
	fg->next2 = xreallocarray(fg->next2, fg->nnext, sizeof(*fg->next2));
}

/*
 * Depth-first over the frames wide enough to show, as profile_stacks()
 * walks: a child starts where its previous sibling ended, the first at
 * its parent's start.  With emit unset, only measures the depth.
 */
static void fg_walk(struct fg *fg, int emit)
{
	const struct profile *p = fg->p;
	uint32_t id = p->node[0].child, depth = 1;

	fg_reserve(fg, 1);
	fg->next[0] = fg->next2[0] = 0;
	while (id) {
		const struct profile_node *n = &p->node[id];
		uint64_t start = fg->next[depth - 1], width = fg_width(fg, id);
		uint64_t start2 = fg->next2[depth - 1];

		fg->next[depth - 1] += width;
		fg->next2[depth - 1] += fg->diff ? fg->diff->next[id] : 0;
		if ((double)width >= FG_MIN_SHARE * (double)fg->total) {
			if (emit) {
				fg_frame(fg, id, depth, start, start2);
			} else {
				if (depth > fg->maxdepth)
					fg->maxdepth = depth;
				if (fg->diff) {
					double d = fg_delta(fg, id);

					if (d < 0)
						d = -d;
					if (d > fg->scale)
						fg->scale = d;
				}
			}
			if (n->child) {
				fg_reserve(fg, depth);
				fg->next2[depth] = start2;
				fg->next[depth++] = start;
				id = n->child;
				continue;
			}
		}
		while (id && !p->node[id].sibling) {
			id = p->node[id].parent;
			depth--;
		}
		if (id)
			id = p->node[id].sibling;
	}
}

static const char fg_style[] =
	"<defs><linearGradient id=\"bg\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
	"<stop stop-color=\"#f8f8f8\" offset=\"5%\"/><stop stop-color=\"#efefd0\" offset=\"95%\"/>"
	"</linearGradient></defs>\n"
	"<style type=\"text/css\">\n"
	"text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }\n"
	"#title { font-size: 17px; text-anchor: middle; }\n"
	"#search, #matched { text-anchor: end; }\n"
	"#search, #unzoom, #gone, #tags .tv { cursor: pointer; }\n"
	"#gone { text-anchor: end; }\n"
	"#tags .key { fill: #555; }\n"
	"#tags .tv { fill: #1a4fd0; }\n"
	"#tags .on { font-weight: bold; text-decoration: underline; }\n"
	"#search:hover, #unzoom:hover { fill: #1a4fd0; }\n"
	"#frames g { cursor: pointer; }\n"
	"#frames g:hover rect { stroke: #000; stroke-width: 0.5; }\n"
	"#frames text { pointer-events: none; }\n"
	".parent { opacity: 0.5; }\n"
	".hide { display: none; }\n"
	"</style>\n";

/*
 * The viewer.  Static text: frame data only ever comes from the DOM.  The
 * label rule in fit() is fg_fit()'s, with the character width measured
 * in the font the browser picked.
 */
static const char fg_script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"\"use strict\";\n"
	"var views = [], view = 0, frames = [], total = 0, gx = 0, gw = 0;\n"
	"var details, matched, unzoom, searchbtn, gonebtn;\n"
	"var hilite = \"rgb(230,0,230)\", searching = false, gone = false;\n"
	"var cw = 7;\n"
	"function init(evt) {\n"
	"\tvar g = document.getElementById(\"frames\"), vs = g.getElementsByClassName(\"view\");\n"
	"\tvar tags = document.getElementById(\"tags\");\n"
	"\tdetails = document.getElementById(\"details\").firstChild;\n"
	"\tmatched = document.getElementById(\"matched\").firstChild;\n"
	"\tunzoom = document.getElementById(\"unzoom\");\n"
	"\tsearchbtn = document.getElementById(\"search\");\n"
	"\tgonebtn = document.getElementById(\"gone\");\n"
	"\tgx = +g.getAttribute(\"data-x\");\n"
	"\tgw = +g.getAttribute(\"data-w\");\n"
	"\tfor (var v = 0; v < vs.length; v++) {\n"
	"\t\tvar gs = vs[v].getElementsByTagName(\"g\"), fs = [];\n"
	"\t\tfor (var i = 0; i < gs.length; i++) {\n"
	"\t\t\tvar e = gs[i], t = e.getElementsByTagName(\"title\")[0].textContent;\n"
	"\t\t\tvar r = e.getElementsByTagName(\"rect\")[0];\n"
	"\t\t\tvar s = +e.getAttribute(\"data-s\"), n = +e.getAttribute(\"data-n\");\n"
	"\t\t\tvar two = e.hasAttribute(\"data-n2\");\n"
	"\t\t\te.fg = { g: e, rect: r, label: e.getElementsByTagName(\"text\")[0],\n"
	"\t\t\t\ts: s, n: n, s1: s, n1: n, d: +e.getAttribute(\"data-d\"), title: t,\n"
	"\t\t\t\ts2: two ? +e.getAttribute(\"data-s2\") : s,\n"
	"\t\t\t\tn2: two ? +e.getAttribute(\"data-n2\") : n,\n"
	"\t\t\t\tname: e.getAttribute(\"data-l\") || t.substring(0, t.lastIndexOf(\" (\")),\n"
	"\t\t\t\tfill: r.getAttribute(\"fill\") };\n"
	"\t\t\tfs.push(e.fg);\n"
	"\t\t}\n"
	"\t\tviews.push({ g: vs[v], frames: fs, total1: +vs[v].getAttribute(\"data-total\"),\n"
	"\t\t\ttotal2: +vs[v].getAttribute(\"data-total2\") });\n"
	"\t}\n"
	"\tframes = views[0].frames;\n"
	"\ttotal = views[0].total1;\n"
	"\t/* the writer clipped labels for Verdana; measure the font we got */\n"
	"\tdetails.nodeValue = \"sub (/usr/lib/python3.11/re/__init__.py:185) Shop#checkout\";\n"
	"\tcw = document.getElementById(\"details\").getComputedTextLength() /\n"
	"\t\tdetails.nodeValue.length || 7;\n"
	"\tdetails.nodeValue = \" \";\n"
	"\tviews.forEach(function (w) {\n"
	"\t\tw.frames.forEach(function (f) { fit(f, +f.rect.getAttribute(\"width\")); });\n"
	"\t});\n"
	"\tg.addEventListener(\"mouseover\", function (ev) {\n"
	"\t\tvar f = frame_of(ev.target);\n"
	"\t\tif (f) details.nodeValue = \"Function: \" + f.title;\n"
	"\t});\n"
	"\tg.addEventListener(\"mouseout\", function () { details.nodeValue = \" \"; });\n"
	"\tg.addEventListener(\"click\", function (ev) {\n"
	"\t\tvar f = frame_of(ev.target);\n"
	"\t\tif (f) zoom(f);\n"
	"\t});\n"
	"\tunzoom.addEventListener(\"click\", reset_zoom);\n"
	"\tsearchbtn.addEventListener(\"click\", function () {\n"
	"\t\tif (searching) reset_search(); else search_prompt();\n"
	"\t});\n"
	"\t/* a tag's value shows only its samples' graph; clicked again, all */\n"
	"\tif (tags) tags.addEventListener(\"click\", function (ev) {\n"
	"\t\tvar i = ev.target.getAttribute(\"data-view\");\n"
	"\t\tif (i) show(+i === view ? 0 : +i);\n"
	"\t});\n"
	"\tif (gonebtn) gonebtn.addEventListener(\"click\", function () { show_gone(!gone); });\n"
	"\twindow.addEventListener(\"keydown\", function (ev) {\n"
	"\t\tif (ev.keyCode === 114 || ((ev.ctrlKey || ev.metaKey) && ev.keyCode === 70)) {\n"
	"\t\t\tev.preventDefault();\n"
	"\t\t\tsearch_prompt();\n"
	"\t\t} else if (ev.key === \"Escape\") {\n"
	"\t\t\treset_search();\n"
	"\t\t}\n"
	"\t});\n"
	"}\n"
	"function show(i) {\n"
	"\tvar ts = document.querySelectorAll(\"#tags .tv\");\n"
	"\treset_search();\n"
	"\tviews[view].g.classList.add(\"hide\");\n"
	"\tview = i;\n"
	"\tviews[i].g.classList.remove(\"hide\");\n"
	"\tframes = views[i].frames;\n"
	"\tfor (var k = 0; k < ts.length; k++)\n"
	"\t\tts[k].classList.toggle(\"on\", +ts[k].getAttribute(\"data-view\") === i);\n"
	"\tlayout();\n"
	"}\n"
	"/* a diff's frames only in BASE: shown, or hidden with NEW's layout */\n"
	"function show_gone(hide) {\n"
	"\tgone = hide;\n"
	"\tgonebtn.firstChild.nodeValue = hide ? \"Show BASE-only\" : \"Hide BASE-only\";\n"
	"\tlayout();\n"
	"}\n"
	"function layout() {\n"
	"\tviews.forEach(function (w) {\n"
	"\t\tw.frames.forEach(function (f) {\n"
	"\t\t\tf.s = gone ? f.s2 : f.s1;\n"
	"\t\t\tf.n = gone ? f.n2 : f.n1;\n"
	"\t\t});\n"
	"\t});\n"
	"\ttotal = gone ? views[view].total2 : views[view].total1;\n"
	"\treset_zoom();\n"
	"}\n"
	"function frame_of(e) {\n"
	"\tfor (; e && e.nodeName !== \"svg\"; e = e.parentNode)\n"
	"\t\tif (e.fg) return e.fg;\n"
	"\treturn null;\n"
	"}\n"
	"/* names before paths: fg_fit()'s rule */\n"
	"function fit(f, w) {\n"
	"\tvar max = Math.floor((w - 6) / cw), t = f.name, p = t.lastIndexOf(\" (\");\n"
	"\tif (max < 3) {\n"
	"\t\tt = \"\";\n"
	"\t} else if (t.length > max) {\n"
	"\t\tif (p > 0 && t.charAt(t.length - 1) === \")\") {\n"
	"\t\t\tvar room = max - p - 5;\n"
	"\t\t\tt = room >= 8 ? t.substring(0, p) + \" (..\" + t.substring(t.length - 1 - room) :\n"
	"\t\t\t\tt.substring(0, p);\n"
	"\t\t}\n"
	"\t\tif (t.length > max) t = t.substring(0, max - 2) + \"..\";\n"
	"\t}\n"
	"\tf.label.textContent = t;\n"
	"}\n"
	"function place(f, x, w) {\n"
	"\tf.rect.setAttribute(\"x\", x.toFixed(2));\n"
	"\tf.rect.setAttribute(\"width\", w.toFixed(2));\n"
	"\tf.label.setAttribute(\"x\", (x + 3).toFixed(2));\n"
	"\tfit(f, w);\n"
	"}\n"
	"function zoom(z) {\n"
	"\tvar scale = gw / z.n;\n"
	"\tframes.forEach(function (f) {\n"
	"\t\tvar above = f.d < z.d && f.s <= z.s && f.s + f.n >= z.s + z.n;\n"
	"\t\tvar below = f.n && f.d >= z.d && f.s >= z.s && f.s + f.n <= z.s + z.n;\n"
	"\t\tf.g.style.display = above || below ? \"\" : \"none\";\n"
	"\t\tif (above) f.g.classList.add(\"parent\"); else f.g.classList.remove(\"parent\");\n"
	"\t\tif (above) place(f, gx, gw);\n"
	"\t\telse if (below) place(f, gx + (f.s - z.s) * scale, f.n * scale);\n"
	"\t});\n"
	"\tunzoom.classList.remove(\"hide\");\n"
	"}\n"
	"function reset_zoom() {\n"
	"\tframes.forEach(function (f) {\n"
	"\t\tf.g.style.display = f.n ? \"\" : \"none\";\n"
	"\t\tf.g.classList.remove(\"parent\");\n"
	"\t\tif (f.n) place(f, gx + f.s * gw / total, f.n * gw / total);\n"
	"\t});\n"
	"\tunzoom.classList.add(\"hide\");\n"
	"}\n"
	"function search_prompt() {\n"
	"\tvar term = prompt(\"Search for (regular expression):\", \"\");\n"
	"\tif (term) search(term);\n"
	"}\n"
	"function search(term) {\n"
	"\tvar re, hits = [], sum = 0, end = -1;\n"
	"\ttry {\n"
	"\t\tre = new RegExp(term);\n"
	"\t} catch (err) {\n"
	"\t\talert(\"bad regular expression: \" + err.message);\n"
	"\t\treturn;\n"
	"\t}\n"
	"\tframes.forEach(function (f) {\n"
	"\t\tvar hit = f.n > 0 && re.test(f.name);\n"
	"\t\tf.rect.setAttribute(\"fill\", hit ? hilite : f.fill);\n"
	"\t\tif (hit) hits.push(f);\n"
	"\t});\n"
	"\t/* count nested matches once: outermost first, skip what it covers */\n"
	"\thits.sort(function (a, b) { return a.s - b.s || a.d - b.d; });\n"
	"\thits.forEach(function (f) {\n"
	"\t\tif (f.s >= end) {\n"
	"\t\t\tsum += f.n;\n"
	"\t\t\tend = f.s + f.n;\n"
	"\t\t}\n"
	"\t});\n"
	"\tsearching = true;\n"
	"\tsearchbtn.firstChild.nodeValue = \"Reset search\";\n"
	"\tmatched.nodeValue = \"Matched: \" +\n"
	"\t\t(total ? 100 * sum / total : 0).toFixed(2) + \"%\";\n"
	"}\n"
	"function reset_search() {\n"
	"\tframes.forEach(function (f) { f.rect.setAttribute(\"fill\", f.fill); });\n"
	"\tsearching = false;\n"
	"\tsearchbtn.firstChild.nodeValue = \"Search\";\n"
	"\tmatched.nodeValue = \" \";\n"
	"}\n"
	"]]></script>\n";

static void fg_header(struct fg *fg, const struct profile *p, const struct out_meta *meta,
		      unsigned int height)
{
	fg_printf(fg, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		  "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" "
		  "height=\"%u\" viewBox=\"0 0 %u %u\" onload=\"init(evt)\">\n",
		  FG_WIDTH, height, FG_WIDTH, height);
	fg_puts(fg, fg_style);
	fg_puts(fg, fg_script);
	fg_printf(fg, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"url(#bg)\"/>\n",
		  FG_WIDTH, height);
	fg_printf(fg, "<text id=\"title\" x=\"%u\" y=\"24\">", FG_WIDTH / 2);
	fg_escaped(fg, meta->title ? meta->title : "pyrospy");
	if (fg->diff)
		fg_printf(fg, " \xe2\x80\x94 %" PRIu64 " and %" PRIu64 " samples; red grew, "
			  "blue shrank</text>\n", fg->diff->base_total, fg->diff->new_total);
	else
		fg_printf(fg, " \xe2\x80\x94 %.1f s at %u Hz, %" PRIu64 " sample%s</text>\n",
			  meta->duration, meta->rate, p->total, p->total == 1 ? "" : "s");
	fg_printf(fg, "<text id=\"unzoom\" class=\"hide\" x=\"%u\" y=\"24\">Reset zoom</text>\n",
		  FG_XPAD);
	fg_printf(fg, "<text id=\"search\" x=\"%u\" y=\"24\">Search</text>\n", FG_WIDTH - FG_XPAD);
	if (fg->diff)
		fg_printf(fg, "<text id=\"gone\" x=\"%u\" y=\"24\">Hide BASE-only</text>\n",
			  FG_WIDTH - FG_XPAD - 70);
	fg_printf(fg, "<text id=\"details\" x=\"%u\" y=\"%u\"> </text>\n", FG_XPAD, height - 12);
	fg_printf(fg, "<text id=\"matched\" x=\"%u\" y=\"%u\"> </text>\n", FG_WIDTH - FG_XPAD,
		  height - 12);
}

/*
 * The widths of a diff: NEW's samples, so that the graph is NEW's flame
 * graph, plus, for the frames only in BASE, BASE's samples (scaled to
 * NEW's total unless absolute), so that what went away is there to see.
 * In units where both are whole: a NEW sample is base_total units, a
 * BASE sample new_total.  A child's id is above its parent's, so one
 * pass down the ids adds each subtree's BASE-only width to its parent.
 */
static void fg_diff_layout(struct fg *fg)
{
	const struct out_diff *d = fg->diff;
	const struct profile *p = fg->p;
	uint64_t un = d->absolute || !d->base_total ? 1 : d->base_total;
	uint64_t ub = d->absolute || !d->new_total ? 1 : d->new_total;
	uint64_t *extra = xcalloc(p->nnode, sizeof(*extra));

	fg->width = xcalloc(p->nnode, sizeof(*fg->width));
	for (uint32_t i = p->nnode; i-- > 1;) {
		uint32_t parent = p->node[i].parent;

		if (d->next[i]) {
			fg->width[i] = d->next[i] * un + extra[i];
			extra[parent] += extra[i];
		} else {
			fg->width[i] = d->base[i] * ub;
			if (!parent || d->next[parent])
				extra[parent] += fg->width[i];
		}
	}
	fg->width[0] = d->new_total * un + extra[0];
	free(extra);
}

/* Make v the graph being written: its layout, its colour scale. */
static void fg_view_begin(struct fg *fg, const struct out_view *v)
{
	fg->p = v->p;
	fg->diff = v->diff;
	fg->width = NULL;
	if (fg->diff) {
		const struct out_diff *d = fg->diff;

		fg_diff_layout(fg);
		fg->scale = d->absolute ? 0.05 * (double)(d->new_total > d->base_total ?
							  d->new_total : d->base_total) : 5.0;
		if (fg->scale < 1)
			fg->scale = 1;
	}
	fg->total = fg->width ? fg->width[0] : fg->p->total;
}

static void fg_view_end(struct fg *fg)
{
	free(fg->width);
	fg->width = NULL;
}

/* A name of the tag bar, cut to FG_TAG_NAME characters. */
static void fg_tag_name(struct fg *fg, const char *s, size_t len)
{
	char raw[FG_TAG_NAME * 4 + 8];

	snprintf(raw, sizeof(raw), "%.*s", (int)len, s);
	fg_clean(fg->clean, sizeof(fg->clean), raw);
	fg_escaped(fg, fg_fit(fg->label, sizeof(fg->label), fg->clean,
			      FG_TAG_NAME * FG_CHAR_W + 6));
}

/*
 * The tag bar, one line under the title:
 *
 *   region: eu 100.0%   vehicle: car 49.9% bike 33.5% scooter 16.6%
 *
 * each value a tspan naming its graph (data-view), which the script shows.
 */
static void fg_tag_bar(struct fg *fg, const struct out_view *v, size_t n)
{
	const char *key = NULL;
	size_t klen = 0;
	double all = v[0].samples ? (double)v[0].samples : 1;

	fg_printf(fg, "<text id=\"tags\" x=\"%u\" y=\"46\">", FG_XPAD);
	for (size_t i = 1; i < n; i++) {
		const char *kv = v[i].tag, *eq = strchr(kv, '=');
		size_t kl = eq ? (size_t)(eq - kv) : strlen(kv);

		if (!key || kl != klen || memcmp(kv, key, kl)) {
			fg_puts(fg, key ? "   <tspan class=\"key\">" : "<tspan class=\"key\">");
			fg_tag_name(fg, kv, kl);
			fg_puts(fg, ":</tspan>");
			key = kv;
			klen = kl;
		}
		fg_printf(fg, " <tspan class=\"tv\" data-view=\"%zu\">", i);
		fg_tag_name(fg, eq ? eq + 1 : "", eq ? strlen(eq + 1) : 0);
		fg_printf(fg, " %.1f%%</tspan>", 100.0 * (double)v[i].samples / all);
	}
	fg_puts(fg, "</text>\n");
}

/*
 * The file: the header, then one group (class "view") per graph in the
 * group the script lays out (id "frames"); all but the first hidden.
 */
static int fg_write(struct fg *fg, const struct out_view *v, size_t n,
		    const struct out_meta *meta)
{
	unsigned int height;
	int ret;

	/* v[0] has every file of the others (theirs are its subsets) */
	if (!meta->full_paths)
		fg->sp = shortpath_new(v[0].p);
	fg->up = meta->flame_up;
	for (size_t i = 0; i < n; i++) {
		fg_view_begin(fg, &v[i]);
		if (fg->total)
			fg_walk(fg, 0);
		fg_view_end(fg);
	}
	height = FG_TOP + (fg->maxdepth ? fg->maxdepth : 1) * FG_FRAME_H + FG_BOTTOM;
	fg_view_begin(fg, &v[0]);
	fg_header(fg, v[0].p, meta, height);
	fg_view_end(fg);
	if (n > 1)
		fg_tag_bar(fg, v, n);
	fg_printf(fg, "<g id=\"frames\" data-x=\"%u\" data-w=\"%u\">\n", FG_XPAD, FG_GRAPH_W);
	for (size_t i = 0; i < n; i++) {
		fg_view_begin(fg, &v[i]);
		fg_printf(fg, "<g class=\"view%s\" data-total=\"%" PRIu64 "\" data-total2=\"%"
			  PRIu64 "\">\n", i ? " hide" : "", fg->total,
			  fg->diff ? fg->diff->new_total : fg->total);
		if (!fg->total)
			fg_printf(fg, "<text x=\"%u\" y=\"%u\" text-anchor=\"middle\">no samples"
				  "</text>\n", FG_WIDTH / 2, FG_TOP + FG_FRAME_H - 4);
		else
			fg_walk(fg, 1);
		fg_puts(fg, "</g>\n");
		fg_view_end(fg);
	}
	fg_puts(fg, "</g>\n</svg>\n");
	ret = fg->errnum;
	shortpath_free(fg->sp);
	free(fg->next);
	free(fg->next2);
	free(fg);
	if (ret) {
		errno = ret;
		return -1;
	}
	return 0;
}

/* By key, then most samples first, then by value. */
static int tag_order(const void *a, const void *b)
{
	const struct out_tag *x = a, *y = b;
	size_t kx = strcspn(x->kv, "="), ky = strcspn(y->kv, "=");
	int c = memcmp(x->kv, y->kv, kx < ky ? kx : ky);

	if (c || kx != ky)
		return c ? c : kx < ky ? -1 : 1;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->kv, y->kv);
}

static int tag_by_kv(const void *a, const void *b)
{
	return strcmp(((const struct out_tag *)a)->kv, ((const struct out_tag *)b)->kv);
}

/* The characters a name takes in the bar. */
static size_t tag_chars(const char *s, size_t len)
{
	size_t c = 0;

	for (size_t i = 0; i < len; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c < FG_TAG_NAME ? c : FG_TAG_NAME;
}

size_t out_tag_bar(const struct profile *const *p, size_t np, struct out_tag **tags)
{
	struct out_tag *t = NULL;
	size_t n = 0, a = 0, m = 0, chars = 0, keys = 0;

	/* every pair of every tag set (the nodes under the root), then merged */
	for (size_t k = 0; k < np; k++) {
		for (uint32_t id = p[k]->nnode ? p[k]->node[0].child : 0; id;
		     id = p[k]->node[id].sibling) {
			const struct profile_frame *fr = &p[k]->frame[p[k]->node[id].frame];
			const char *set = profile_str(p[k], fr->name);

			if (fr->kind != PROFILE_TAGS)
				continue;
			while (*set) {
				size_t len = strcspn(set, ",");

				if (memchr(set, '=', len)) {
					if (n == a)
						t = xreallocarray(t, a = a ? 2 * a : 16, sizeof(*t));
					t[n].kv = xstrndup(set, len);
					t[n++].samples = k ? 0 : p[k]->node[id].total;
				}
				set += len + (set[len] == ',');
			}
		}
	}
	if (n)
		qsort(t, n, sizeof(*t), tag_by_kv);
	for (size_t i = 0; i < n; i++) {
		if (m && !strcmp(t[m - 1].kv, t[i].kv)) {
			t[m - 1].samples += t[i].samples;
			free(t[i].kv);
		} else {
			t[m++] = t[i];
		}
	}
	if (m)
		qsort(t, m, sizeof(*t), tag_order);
	/* as many as fit the bar, by key: "   key:" then " value 12.3%" */
	n = 0;
	for (size_t i = 0; i < m; i++) {
		size_t kl = strcspn(t[i].kv, "=");
		int first = !n || kl != strcspn(t[n - 1].kv, "=") || memcmp(t[i].kv, t[n - 1].kv, kl);
		size_t cost = tag_chars(t[i].kv + kl + 1, strlen(t[i].kv + kl + 1)) + 8 +
			      (first ? tag_chars(t[i].kv, kl) + 4 : 0);

		if ((first && keys == FG_TAG_KEYS) || chars + cost > FG_TAG_CHARS) {
			free(t[i].kv);
			continue;
		}
		keys += first;
		chars += cost;
		t[n++] = t[i];
	}
	*tags = t;
	return n;
}

void out_tags_free(struct out_tag *tags, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(tags[i].kv);
	free(tags);
}

/*
 * The graph of all samples, and one per value of the tag bar: the
 * samples of its tag sets, merged (as Pyroscope's UI shows a tag).
 */
static int flamegraph_write(FILE *f, const struct profile *p, const struct out_meta *meta)
{
	struct profile view, *tp;
	struct out_tag *tags;
	size_t ntag = out_tag_bar(&p, 1, &tags);
	struct out_view *v = xcalloc(ntag + 1, sizeof(*v));
	struct fg *fg = xcalloc(1, sizeof(*fg));
	int ret;

	tp = xcalloc(ntag + 1, sizeof(*tp));
	profile_project(p, OUT_KEEP(meta), &view);
	v[0].p = &view;
	v[0].samples = p->total;
	for (size_t i = 0; i < ntag; i++) {
		profile_project_tag(p, OUT_KEEP(meta), tags[i].kv, &tp[i]);
		v[i + 1].tag = tags[i].kv;
		v[i + 1].p = &tp[i];
		v[i + 1].samples = tags[i].samples;
	}
	fg->f = f;
	ret = fg_write(fg, v, ntag + 1, meta);
	for (size_t i = 0; i < ntag; i++)
		profile_release(&tp[i]);
	profile_release(&view);
	out_tags_free(tags, ntag);
	free(tp);
	free(v);
	return ret;
}

int out_flamegraph_diff(FILE *f, const struct out_view *v, size_t n,
			const struct out_meta *meta)
{
	struct fg *fg = xcalloc(1, sizeof(*fg));

	fg->f = f;
	return fg_write(fg, v, n, meta);
}

const struct out_ops out_flamegraph = {
	.name = "flamegraph",
	.ext = "svg",
	.write = flamegraph_write,
};
