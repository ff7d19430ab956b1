/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/out.h"
#include "output/report_data.h"
#include "profile/profile.h"
#include "profile/shortpath.h"
#include "util/xalloc.h"

/*
 * One self-contained HTML page: the report's own markup, style and script
 * (src/output/report/, embedded at build time) and the profile as JSON in
 * a <script type="application/json"> element that the script reads.  No
 * resource is fetched: the page carries a Content-Security-Policy that
 * forbids every load, and works from file://.
 *
 * The data is compact: every string once, frames as indices into the
 * strings, the trie's nodes in preorder as three arrays (how far back
 * its parent is, frame, self samples); the script computes the totals.
 * In preorder a parent comes before its children, most often just before:
 * the distance is a short number where an index would be a long one.
 *
 *   {"version":1,"meta":{...},
 *    "strings":["", "foo", "app.py", ...],
 *    "frames":[name,file,line,kind, name,file,line,kind, ...],
 *    "up":[0,1,1,1,2,...],"frame":[0,3,5,...],"self":[0,0,12,...]}
 *
 * Node 0 is the root (its frame means nothing).  The tag set and thread
 * levels are kept (kind 1 and 2, as enum profile_kind) when the run kept
 * them: the page merges them away, or filters by them.  pyrospy diff adds
 * "compare":{"key":..,"base":..,"new":..,"baseLabel":..,"newLabel":..}
 * (struct out_compare): the page opens comparing those two values.
 *
 * Names come from the target: every string is written so that it cannot
 * end the script element or the page, whatever it holds ("<", ">" and
 * "&" as \u escapes, and U+2028/U+2029 too, which old parsers take for
 * line ends).  The readers made them valid UTF-8.
 */

/*
 * "short":[full,short,...]: the string ids of each file whose short form
 * (profile/shortpath.h) is not the whole path, and of that short form,
 * interned here so that the string table holds it.  Frames keep the whole
 * path: the page shows the short form in its table and the whole one on
 * hover, and tells families of code by the whole one.
 */
static uint32_t *html_short(struct profile *v, const struct shortpath *sp, uint32_t *n)
{
	uint32_t *pairs = xcalloc((size_t)v->nframe * 2 + 1, sizeof(*pairs)), nf = v->nframe;
	uint32_t nstr = v->nstr;	/* the strings before any short form */
	unsigned char *done = xcalloc((size_t)nstr + 1, 1);

	*n = 0;
	for (uint32_t i = 0; sp && i < nf; i++) {
		uint32_t file = v->frame[i].file;
		const char *full = profile_str(v, file), *shown;

		if (!*full || file >= nstr || done[file])
			continue;
		done[file] = 1;
		shown = shortpath_get(sp, full);
		if (shown == full || !strcmp(shown, full))
			continue;
		pairs[(*n)++] = file;
		pairs[(*n)++] = profile_str_id(v, shown);
	}
	free(done);
	return pairs;
}

static int html_json_str(FILE *f, const char *s)
{
	if (putc('"', f) == EOF)
		return -1;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		int r;

		if (*c == '"' || *c == '\\')
			r = fprintf(f, "\\%c", *c);
		else if (*c < 0x20 || *c == '<' || *c == '>' || *c == '&' || *c == 0x7f)
			r = fprintf(f, "\\u%04x", *c);
		else if (c[0] == 0xe2 && c[1] == 0x80 && (c[2] == 0xa8 || c[2] == 0xa9)) {
			r = fprintf(f, "\\u%04x", c[2] == 0xa8 ? 0x2028 : 0x2029);
			c += 2;
		} else
			r = putc(*c, f);
		if (r < 0)
			return -1;
	}
	return putc('"', f) == EOF ? -1 : 0;
}

/*
 * The summary header's facts; those not known (a report of a recording
 * that did not keep them) are left out, not written as 0.  The command
 * line is the target's: a string like any name.
 */
static int html_meta(FILE *f, const struct profile *p, const struct out_meta *meta)
{
	const char *title = meta->command ? meta->command : meta->title ? meta->title : "pyrospy";

	/* the heading: the command profiled when known */
	if (fputs("\"meta\":{\"title\":", f) == EOF || html_json_str(f, title))
		return -1;
	if (meta->interp && (fputs(",\"interp\":", f) == EOF || html_json_str(f, meta->interp)))
		return -1;
	if (meta->command && (fputs(",\"command\":", f) == EOF || html_json_str(f, meta->command)))
		return -1;
	if (meta->pid > 0 && fprintf(f, ",\"pid\":%d", meta->pid) < 0)
		return -1;
	if (meta->ticks &&
	    fprintf(f, ",\"ticks\":%" PRIu64 ",\"late\":%" PRIu64 ",\"dropped\":%" PRIu64
		       ",\"tagsDropped\":%" PRIu64, meta->ticks, meta->late, meta->dropped,
		    meta->tags_dropped) < 0)
		return -1;
	if (fprintf(f, ",\"start\":%.3f,\"duration\":%.3f,\"rate\":%u,\"samples\":%" PRIu64
		       ",\"threads\":%s,\"version\":\"" PACKAGE_VERSION "\"}",
		    meta->start, meta->duration, meta->rate, p->total,
		    meta->threads ? "true" : "false") < 0)
		return -1;
	return 0;
}

static int html_strings(FILE *f, struct profile *p)
{
	if (fputs(",\"strings\":[", f) == EOF)
		return -1;
	for (uint32_t i = 0; i < p->nstr; i++) {
		if ((i && putc(',', f) == EOF) || html_json_str(f, profile_str(p, i)))
			return -1;
	}
	if (fputs("],\"frames\":[", f) == EOF)
		return -1;
	for (uint32_t i = 0; i < p->nframe; i++) {
		const struct profile_frame *fr = &p->frame[i];

		if (fprintf(f, i ? ",%u,%u,%d,%u" : "%u,%u,%d,%u", fr->name, fr->file, fr->line,
			    fr->kind) < 0)
			return -1;
	}
	return fputc(']', f) == EOF ? -1 : 0;
}

/*
 * The nodes in preorder: one array at a time (pass 0 up, 1 frame,
 * 2 self), each walk the same, with index[] mapping node ids to their
 * place in it.
 */
static int html_nodes(FILE *f, const struct profile *p, uint32_t *index)
{
	static const char *const names[] = { "up", "frame", "self" };

	for (int pass = 0; pass < 3; pass++) {
		uint32_t n = 0, at = 0;

		if (fprintf(f, ",\"%s\":[", names[pass]) < 0)
			return -1;
		for (;;) {
			const struct profile_node *nd = &p->node[at];
			int r;

			index[at] = n;
			if (pass == 0)
				r = fprintf(f, n ? ",%u" : "%u", at ? n - index[nd->parent] : 0);
			else if (pass == 1)
				r = fprintf(f, n ? ",%u" : "%u", at ? nd->frame : 0);
			else
				r = fprintf(f, n ? ",%" PRIu64 : "%" PRIu64, nd->self);
			if (r < 0)
				return -1;
			n++;
			/* next in preorder: the first child, else the next sibling of
			 * the nearest node that has one */
			if (nd->child) {
				at = nd->child;
				continue;
			}
			while (at && !p->node[at].sibling)
				at = p->node[at].parent;
			if (!at)
				break;
			at = p->node[at].sibling;
		}
		if (putc(']', f) == EOF)
			return -1;
	}
	return 0;
}

static int html_pairs(FILE *f, const uint32_t *pairs, uint32_t n)
{
	if (fputs(",\"short\":[", f) == EOF)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (fprintf(f, i ? ",%u" : "%u", pairs[i]) < 0)
			return -1;
	return putc(']', f) == EOF ? -1 : 0;
}

static int html_compare(FILE *f, const struct out_compare *c)
{
	if (!c)
		return 0;
	if (fputs(",\"compare\":{\"key\":", f) == EOF || html_json_str(f, c->key) ||
	    fputs(",\"base\":", f) == EOF || html_json_str(f, c->base) ||
	    fputs(",\"new\":", f) == EOF || html_json_str(f, c->next) ||
	    fputs(",\"baseLabel\":", f) == EOF || html_json_str(f, c->base_label) ||
	    fputs(",\"newLabel\":", f) == EOF || html_json_str(f, c->new_label) ||
	    putc('}', f) == EOF)
		return -1;
	return 0;
}

static int html_write(FILE *f, const struct profile *p, const struct out_meta *meta)
{
	struct shortpath *sp = meta->full_paths ? NULL : shortpath_new(p);
	struct profile view;
	uint32_t *index, *pairs, npairs;
	int ret = -1;

	profile_project(p, OUT_KEEP(meta), &view);
	/* the short forms are interned before the strings are written */
	pairs = html_short(&view, sp, &npairs);
	index = xcalloc(view.nnode ? view.nnode : 1, sizeof(*index));
	if (fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		  "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
		  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
		  "<meta name=\"generator\" content=\"pyrospy " PACKAGE_VERSION "\">\n"
		  "<title>pyrospy report</title>\n<style>\n", f) == EOF ||
	    fwrite(report_report_css, 1, report_report_css_len, f) != report_report_css_len ||
	    fputs("</style>\n</head>\n<body>\n", f) == EOF ||
	    fwrite(report_report_html, 1, report_report_html_len, f) != report_report_html_len ||
	    fputs("<script type=\"application/json\" id=\"pyrospy-data\">{\"version\":1,", f) == EOF ||
	    html_meta(f, &view, meta) || html_strings(f, &view) || html_nodes(f, &view, index) ||
	    html_pairs(f, pairs, npairs) || html_compare(f, meta->compare) ||
	    fputs("}</script>\n<script>\n", f) == EOF ||
	    fwrite(report_report_js, 1, report_report_js_len, f) != report_report_js_len ||
	    fputs("</script>\n</body>\n</html>\n", f) == EOF)
		goto out;
	ret = 0;
out:
	free(index);
	free(pairs);
	profile_release(&view);
	shortpath_free(sp);
	return ret;
}

const struct out_ops out_html = {
	.name = "html",
	.ext = "html",
	.write = html_write,
};
