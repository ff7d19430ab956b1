/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "output/out.h"
#include "profile/profile.h"
#include "profile/shortpath.h"
#include "util/xalloc.h"

/*
 * A top table: one row per function (name and file; per line too unless
 * --function), with the share of samples spent in it (self) and under it
 * (total), sorted by self, then total:
 *
 *     %self  %total  samples  function
 *      74.8    74.8      748  work (app.py:4)
 *       0.0    75.1        0  foo (app.py:8)
 */
struct row {
	uint32_t frame;		/* in the projected view */
	uint64_t self, total;
	uint64_t seen;		/* last stack counted, for recursion */
};

struct sum {
	struct row *row;	/* by frame id */
	uint64_t stack;
};

static int tally(void *arg, const struct profile *p, const uint32_t *frames, uint32_t depth,
		 uint64_t count)
{
	struct sum *s = arg;

	(void)p;
	s->stack++;
	if (!depth)
		return 0;
	s->row[frames[depth - 1]].self += count;
	for (uint32_t d = 0; d < depth; d++) {
		struct row *r = &s->row[frames[d]];

		if (r->seen == s->stack)
			continue;	/* recursion: count a stack once */
		r->seen = s->stack;
		r->total += count;
	}
	return 0;
}

static int by_self(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

static int by_total(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	/* as much under both: the caller (less of it its own) first */
	if (x->self != y->self)
		return x->self < y->self ? -1 : 1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

/*
 * s, sanitized, in at most cols columns (a code point a column): the
 * rest is cut, at a character's start, never within one.
 */
static int put_cut(FILE *f, const char *s, unsigned int cols)
{
	const char *p = s;
	unsigned int n = 0;

	for (; *p; p++)
		if (((unsigned char)*p & 0xc0) != 0x80 && n++ == cols)
			break;
	return fprintf(f, "%.*s", (int)(p - s), s) < 0 ? -1 : 0;
}

int out_summary_table(FILE *f, const struct profile *p, const struct out_table *t)
{
	struct shortpath *sp = t->full_paths ? NULL : shortpath_new(p);
	struct profile view;
	struct sum s = { 0 };
	double total;
	char buf[8192];
	int ret = -1;

	profile_project(p, t->by_function ? PROFILE_DROP_LINES : 0, &view);
	s.row = xcalloc(view.nframe + 1, sizeof(*s.row));
	for (uint32_t i = 0; i < view.nframe; i++)
		s.row[i].frame = i;
	profile_stacks(&view, tally, &s);
	qsort(s.row, view.nframe, sizeof(*s.row), t->by_total ? by_total : by_self);
	total = view.total ? (double)view.total : 1.0;
	if (fprintf(f, "%7s %7s %9s  %s\n", t->mark && !t->by_total ? "%self*" : "%self",
		    t->mark && t->by_total ? "%total*" : "%total", "samples", "function") < 0)
		goto out;
	for (uint32_t i = 0; i < view.nframe && i < t->max_rows; i++) {
		const struct row *r = &s.row[i];

		if (!r->total)
			continue;
		if (fprintf(f, "%7.1f %7.1f %9" PRIu64 "  ", 100.0 * (double)r->self / total,
			    100.0 * (double)r->total / total, r->self) < 0)
			goto out;
		out_frame_label(&view, r->frame, sp, buf, sizeof(buf));
		/* as out_put_sanitized() writes it: ';' ':' and controls '?' */
		for (char *c = buf; *c; c++)
			if (*c == ';')
				*c = ':';
			else if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
		if ((t->width > 27 ? put_cut(f, buf, t->width - 27) : fputs(buf, f) < 0) ||
		    putc('\n', f) == EOF)
			goto out;
	}
	ret = 0;
out:
	shortpath_free(sp);
	free(s.row);
	profile_release(&view);
	return ret;
}

int out_summary_rows(FILE *f, const struct profile *p, unsigned int max_rows, int full_paths)
{
	struct out_table t = { .max_rows = max_rows, .full_paths = full_paths };

	return out_summary_table(f, p, &t);
}

/*
 * The header: the title's line, then what is known of the target and of
 * what was lost, in the words of record's closing line:
 *
 *     pid 4242: 1998 samples in 10.0 s at 200 Hz
 *     Python 3.11.2, pid 4242, 2026-11-28 14:20:01 to 14:20:11 UTC
 *     command: python3 app.py
 *     2001 ticks (200.1 Hz of 200 asked, 3 late), 1998 samples, 3 dropped (changed under every read)
 */
static int summary_header(FILE *f, const struct profile *p, const struct out_meta *meta)
{
	int any = 0;

	if (fprintf(f, "%s: %" PRIu64 " samples in %.1f s at %u Hz\n",
		    meta->title ? meta->title : "pyrospy", p->total, meta->duration, meta->rate) < 0)
		return -1;
	if (meta->interp && fprintf(f, "%s", meta->interp) < 0)
		return -1;
	any = !!meta->interp;
	if (meta->pid > 0 && fprintf(f, "%spid %d", any ? ", " : "", meta->pid) < 0)
		return -1;
	any |= meta->pid > 0;
	if (meta->start > 0) {
		time_t from = (time_t)meta->start, to = (time_t)(meta->start + meta->duration);
		struct tm a, b;
		char ta[32], tb[32];

		gmtime_r(&from, &a);
		gmtime_r(&to, &b);
		strftime(ta, sizeof(ta), "%Y-%m-%d %H:%M:%S", &a);
		strftime(tb, sizeof(tb), a.tm_yday == b.tm_yday && a.tm_year == b.tm_year ?
			 "%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &b);
		if (fprintf(f, "%s%s to %s UTC", any ? ", " : "", ta, tb) < 0)
			return -1;
		any = 1;
	}
	if (any && putc('\n', f) == EOF)
		return -1;
	if (meta->command && fprintf(f, "command: %s\n", meta->command) < 0)
		return -1;
	if (meta->ticks) {
		if (fprintf(f, "%" PRIu64 " ticks (%.1f Hz of %u asked", meta->ticks,
			    meta->duration > 0 ? (double)meta->ticks / meta->duration : 0.0,
			    meta->rate) < 0 ||
		    (meta->late && fprintf(f, ", %" PRIu64 " late", meta->late) < 0) ||
		    fprintf(f, "), %" PRIu64 " samples", p->total) < 0 ||
		    (meta->dropped &&
		     fprintf(f, ", %" PRIu64 " dropped (changed under every read)", meta->dropped) < 0) ||
		    (meta->tags_dropped &&
		     fprintf(f, ", %" PRIu64 " without their tags (the tags changed under the read)",
			     meta->tags_dropped) < 0) ||
		    putc('\n', f) == EOF)
			return -1;
	}
	return putc('\n', f) == EOF ? -1 : 0;
}

static int summary_write(FILE *f, const struct profile *p, const struct out_meta *meta)
{
	if (summary_header(f, p, meta))
		return -1;
	return out_summary_rows(f, p, UINT32_MAX, meta->full_paths);
}

const struct out_ops out_summary = {
	.name = "summary",
	.ext = "summary.txt",
	.write = summary_write,
};
