/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/common.h"
#include "cmd/diff.h"
#include "output/out.h"
#include "output/outfile.h"
#include "profile/profile.h"
#include "profile/shortpath.h"
#include "cmd/report.h"
#include "util/xalloc.h"

/*
 * Two profiles, BASE and NEW, read as report reads them, are merged into
 * one trie, the union of their stacks by function (line numbers move when
 * code changes, functions rarely do), without tag sets or threads (the
 * filters choose those).  NEW's stacks go in first, and each node's
 * counts are copied aside; BASE's then add to them, so that BASE's share
 * of a node is what it gained since:
 *
 *   u.node[i].total = next[i] + base[i]     next[]: as it was after NEW
 *
 * The flame graph (out_flamegraph_diff()), the folded stacks and the
 * summary read those.
 */

#define DIFF_SUMMARY_ROWS 20

const char diff_usage[] =
	"usage: pyrospy diff BASE NEW [options]\n"
	"       pyrospy diff RECORDING --base KEY=VALUE --new KEY=VALUE [options]\n"
	"\n"
	"Compare two profiles: a differential flame graph whose widths are NEW's and\n"
	"whose colours say how each function's share of the samples changed from\n"
	"BASE (red: grew, blue: shrank).  BASE and NEW are raw recordings or folded\n"
	"profiles, or one recording cut in two by filters.  Functions are compared\n"
	"by name and file, not line.\n"
	"\n"
	"options:\n"
	"  -f, --format FMT       flamegraph (default, and for -o FILE.svg), folded\n"
	"                         (-o FILE.txt, .folded: each stack's self samples in\n"
	"                         BASE and NEW, as difffolded.pl writes them), summary\n"
	"                         (-o FILE.summary.txt: the functions whose self share\n"
	"                         changed most, both ways) or html (-o FILE.html: the\n"
	"                         report page opened comparing BASE and NEW, their\n"
	"                         flame graphs side by side and the diff under them)\n"
	"  -o, --output FILE      write to FILE, - for stdout (default: diff.svg,\n"
	"                         diff-1.svg ... for a flame graph, diff.html ... for\n"
	"                         html; - for the others)\n"
	"      --base KEY=VALUE   only BASE's samples tagged so (repeatable; KEY!=VALUE)\n"
	"      --new KEY=VALUE    only NEW's samples tagged so (repeatable; KEY!=VALUE)\n"
	"      --base-from WHEN   only BASE's samples from WHEN on: seconds into it,\n"
	"                         or a wall time, HH:MM:SS or YYYY-MM-DDTHH:MM:SS[Z]\n"
	"                         (default: from its first sample)\n"
	"      --base-until WHEN  only BASE's samples before WHEN (default: to its last)\n"
	"      --new-from WHEN    only NEW's samples from WHEN on (default: its first)\n"
	"      --new-until WHEN   only NEW's samples before WHEN (default: its last)\n"
	"      --absolute         compare samples, not shares of each side's samples\n"
	"      --full-paths       whole file paths, not the short forms (see pyrospy(1))\n"
	"      --flame-direction D\n"
	"                         down (default: the root at the top, its callees\n"
	"                         under it) or up (the root at the bottom)\n"
	"  -q, --quiet            print nothing but errors and warnings\n"
	"  -h, --help             show this help\n"
	"\n"
	"examples:\n"
	"  pyrospy diff before.raw after.raw -o change.svg\n"
	"  pyrospy diff web.raw --base vehicle=car --new vehicle=bike\n"
	"  pyrospy diff web.raw --base-until 30 --new-from 30 -f summary\n"
	"  pyrospy diff web.raw --base vehicle=bike --new vehicle=car -o change.html\n";

struct diff_side {
	const char *in;
	struct report_filter flt;
	int filtered;		/* some filter was given */
	char desc[512];		/* its filters: " [k=v, from 60 s" */
	char label[1100];	/* the input and its filters, for titles */
	struct profile p;
	struct report_input info;
};

struct diff_opts {
	const char *format, *output;
	int absolute, quiet, full_paths, flame_up;
};

struct diff {
	struct profile u;	/* the union, by function */
	uint64_t *base, *next;	/* per node of u: total in BASE, in NEW */
	uint64_t *base_self, *next_self;
	uint64_t base_total, new_total;
	struct shortpath *sp;	/* the union's short paths; NULL with --full-paths */
};

/* Append ", what" (or " [what" first) to a side's label of filters. */
static void side_note(struct diff_side *s, const char *what, const char *arg)
{
	size_t len = strlen(s->desc);

	snprintf(s->desc + len, sizeof(s->desc) - len, "%s%s%s", s->filtered ? ", " : " [",
		 what, arg);
	s->filtered = 1;
}

enum {
	OPT_BASE = 256, OPT_NEW, OPT_BASE_FROM, OPT_BASE_UNTIL, OPT_NEW_FROM, OPT_NEW_UNTIL,
	OPT_ABSOLUTE, OPT_FULL_PATHS, OPT_FLAME_DIRECTION,
};

static const struct option long_opts[] = {
	{ "format", required_argument, NULL, 'f' },
	{ "output", required_argument, NULL, 'o' },
	{ "base", required_argument, NULL, OPT_BASE },
	{ "new", required_argument, NULL, OPT_NEW },
	{ "base-from", required_argument, NULL, OPT_BASE_FROM },
	{ "base-until", required_argument, NULL, OPT_BASE_UNTIL },
	{ "new-from", required_argument, NULL, OPT_NEW_FROM },
	{ "new-until", required_argument, NULL, OPT_NEW_UNTIL },
	{ "absolute", no_argument, NULL, OPT_ABSOLUTE },
	{ "full-paths", no_argument, NULL, OPT_FULL_PATHS },
	{ "flame-direction", required_argument, NULL, OPT_FLAME_DIRECTION },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int parse_side_opt(struct diff_side *side, int c, const char *arg)
{
	static const char *const what[] = { "from ", "until ", "from ", "until " };
	if (c == OPT_BASE || c == OPT_NEW) {
		switch (report_filter_tag(&side->flt, arg)) {
		case 1:
			return cli_usage_error("diff", "more than %d tag filters for %s", REPORT_MAX_TAGS,
					   c == OPT_BASE ? "BASE" : "NEW");
		case 2:
			return cli_usage_error("diff", "invalid tag filter '%s': want KEY=VALUE or KEY!=VALUE",
					   arg);
		}
		side_note(side, "", arg);
		return -1;
	}
	if (!report_filter_time(&side->flt, arg, c == OPT_BASE_UNTIL || c == OPT_NEW_UNTIL))
		return cli_usage_error("diff", "invalid --%s '%s': want seconds into the recording, "
				   "HH:MM:SS or YYYY-MM-DDTHH:MM:SS[Z]",
				   long_opts[c - OPT_BASE + 2].name, arg);
	side_note(side, what[c - OPT_BASE_FROM], arg);
	if (!strchr(arg, ':'))
		strncat(side->desc, " s", sizeof(side->desc) - strlen(side->desc) - 1);
	return -1;
}

/*
 * No -f: the format -o's name says, of those diff writes; a flame graph
 * for no name, standard output or a stream (a device, a FIFO) as before
 * there was a choice.  -1 to go on, or EXIT_USAGE (said why).
 */
static int diff_format(struct diff_opts *o)
{
	const struct out_ops *ops;
	struct stat st;

	if (o->format || !o->output)
		return -1;
	ops = out_by_ext(o->output);
	if (ops == &out_flamegraph || ops == &out_folded || ops == &out_summary || ops == &out_html) {
		o->format = ops->name;
		return -1;
	}
	if (!ops && (!strcmp(o->output, "-") || (!stat(o->output, &st) && !S_ISREG(st.st_mode))))
		return -1;
	if (ops)
		cli_error("diff writes no %s: '%s'", ops->name, o->output);
	else
		cli_error("cannot tell the format of '%s' from its name", o->output);
	cli_hint("name it .svg, .txt, .folded, .summary.txt or .html, or give -f flamegraph, folded, "
		 "summary or html");
	return EXIT_USAGE;
}

/* Returns -1 to go on, or an exit status. */
static int parse_opts(struct diff_opts *o, struct diff_side *base, struct diff_side *next,
		      int argc, char **argv)
{
	int c, ret, idx = -1;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:o:qh", long_opts, &idx)) != -1) {
		const char *abbr;

		if (c != ':' && c != '?' &&
		    (abbr = cli_abbreviated(long_opts, idx, argv, optind, optarg)))
			return cli_unknown_long_option("diff", abbr, long_opts);
		idx = -1;
		switch (c) {
		case 'f':
			if (strcmp(optarg, "flamegraph") && strcmp(optarg, "folded") &&
			    strcmp(optarg, "summary") && strcmp(optarg, "html"))
				return cli_usage_error("diff", "unknown diff format '%s': want flamegraph, "
						   "folded, summary or html", optarg);
			o->format = optarg;
			break;
		case 'o':
			if (!*optarg)
				return cli_usage_error("diff", "empty output file name");
			o->output = optarg;
			break;
		case OPT_BASE:
		case OPT_BASE_FROM:
		case OPT_BASE_UNTIL:
			ret = parse_side_opt(base, c, optarg);
			if (ret >= 0)
				return ret;
			break;
		case OPT_NEW:
		case OPT_NEW_FROM:
		case OPT_NEW_UNTIL:
			ret = parse_side_opt(next, c, optarg);
			if (ret >= 0)
				return ret;
			break;
		case OPT_ABSOLUTE:
			o->absolute = 1;
			break;
		case OPT_FULL_PATHS:
			o->full_paths = 1;
			break;
		case OPT_FLAME_DIRECTION:
			if ((ret = cli_flame_direction("diff", optarg, &o->flame_up)) >= 0)
				return ret;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'h':
			fputs(diff_usage, stdout);
			return EXIT_OK;
		case ':':
			return cli_usage_error("diff", "option '%s' needs a value", argv[optind - 1]);
		default:
			if (optopt)
				return cli_usage_error("diff", "unknown option '-%c'", optopt);
			return cli_unknown_long_option("diff", argv[optind - 1], long_opts);
		}
	}
	ret = diff_format(o);
	if (ret >= 0)
		return ret;
	if (optind >= argc)
		return cli_usage_error("diff", "diff needs two profiles: pyrospy diff BASE NEW");
	if (optind + 2 < argc)
		return cli_usage_error("diff", "unexpected argument '%s'", argv[optind + 2]);
	base->in = argv[optind];
	next->in = optind + 1 < argc ? argv[optind + 1] : argv[optind];
	if (optind + 1 == argc && !base->filtered && !next->filtered)
		return cli_usage_error("diff", "diff of one recording needs filters: --base KEY=VALUE --new "
				   "KEY=VALUE, or --base-until and --new-from");
	if (base->flt.until >= 0 && base->flt.until <= base->flt.from && base->flt.from_at < 0 &&
	    base->flt.until_at < 0)
		return cli_usage_error("diff", "--base-until %g is not after --base-from %g", base->flt.until,
				   base->flt.from);
	if (next->flt.until >= 0 && next->flt.until <= next->flt.from && next->flt.from_at < 0 &&
	    next->flt.until_at < 0)
		return cli_usage_error("diff", "--new-until %g is not after --new-from %g", next->flt.until,
				   next->flt.from);
	return -1;
}

/* A stack of BASE into the union, its frames interned there. */
static int add_base(void *arg, const struct profile *src, const uint32_t *frames, uint32_t depth,
		    uint64_t count)
{
	struct profile *u = arg;
	uint32_t *ids = xmalloc((depth ? depth : 1) * sizeof(*ids));

	for (uint32_t i = 0; i < depth; i++) {
		const struct profile_frame *f = &src->frame[frames[i]];

		ids[i] = profile_frame(u, f->kind, profile_str(src, f->name),
				       profile_str(src, f->file), f->line);
	}
	profile_add_path(u, ids, depth, count);
	free(ids);
	return 0;
}

static void diff_build(struct diff *d, const struct profile *base, const struct profile *next)
{
	struct profile view;
	uint32_t n;

	profile_project(next, 0, &d->u);
	n = d->u.nnode;
	d->next = xcalloc(n, sizeof(*d->next));
	d->next_self = xcalloc(n, sizeof(*d->next_self));
	for (uint32_t i = 0; i < n; i++) {
		d->next[i] = d->u.node[i].total;
		d->next_self[i] = d->u.node[i].self;
	}
	d->new_total = d->u.total;
	profile_project(base, 0, &view);
	profile_stacks(&view, add_base, &d->u);
	profile_release(&view);
	d->next = xreallocarray(d->next, d->u.nnode, sizeof(*d->next));
	d->next_self = xreallocarray(d->next_self, d->u.nnode, sizeof(*d->next_self));
	d->base = xcalloc(d->u.nnode, sizeof(*d->base));
	d->base_self = xcalloc(d->u.nnode, sizeof(*d->base_self));
	for (uint32_t i = 0; i < d->u.nnode; i++) {
		if (i >= n)
			d->next[i] = d->next_self[i] = 0;
		d->base[i] = d->u.node[i].total - d->next[i];
		d->base_self[i] = d->u.node[i].self - d->next_self[i];
	}
	d->base_total = d->base[0];
}

static void diff_release(struct diff *d)
{
	profile_release(&d->u);
	free(d->base);
	free(d->next);
	free(d->base_self);
	free(d->next_self);
}

/* A function's self samples in BASE and NEW, and the change. */
struct diff_row {
	uint32_t frame;
	uint64_t base, next;
	double delta;
};

static int by_delta(const void *a, const void *b)
{
	const struct diff_row *x = a, *y = b;

	if (x->delta != y->delta)
		return x->delta < y->delta ? 1 : -1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

static int summary_row(FILE *f, const struct diff *d, const struct diff_row *r, int absolute)
{
	double bt = d->base_total ? (double)d->base_total : 1;
	double nt = d->new_total ? (double)d->new_total : 1;
	char buf[8192];

	if (fprintf(f, absolute ? "%+9.0f" : "%+9.2f", r->delta) < 0 ||
	    fprintf(f, " %7.2f %7.2f %9" PRIu64 " %9" PRIu64 "  ", 100.0 * (double)r->base / bt,
		    100.0 * (double)r->next / nt, r->base, r->next) < 0 ||
	    out_put_sanitized(f, out_frame_label(&d->u, r->frame, d->sp, buf, sizeof(buf))) ||
	    putc('\n', f) == EOF)
		return -1;
	return 0;
}

/*
 * The functions whose self share (or count) grew most, then those that
 * shrank most, DIFF_SUMMARY_ROWS of each:
 *
 *       change   %base    %new      base       new  function
 *       +49.80   24.90   74.70       249       747  bar (work.py)
 */
static int diff_summary(FILE *f, const struct diff *d, const struct diff_side *base,
			const struct diff_side *next, int absolute)
{
	struct diff_row *row = xcalloc(d->u.nframe + 1, sizeof(*row));
	uint32_t n = d->u.nframe, shown;
	int ret = -1;

	for (uint32_t i = 0; i < n; i++)
		row[i].frame = i;
	for (uint32_t i = 1; i < d->u.nnode; i++) {
		struct diff_row *r = &row[d->u.node[i].frame];

		r->base += d->base_self[i];
		r->next += d->next_self[i];
	}
	for (uint32_t i = 0; i < n; i++)
		row[i].delta = absolute ? (double)row[i].next - (double)row[i].base :
			100.0 * ((double)row[i].next / (double)(d->new_total ? d->new_total : 1) -
				 (double)row[i].base / (double)(d->base_total ? d->base_total : 1));
	qsort(row, n, sizeof(*row), by_delta);
	if (fprintf(f, "base: %s, %" PRIu64 " samples\nnew:  %s, %" PRIu64 " samples\n\n"
		    "%s\n%9s %7s %7s %9s %9s  %s\n", base->label, d->base_total, next->label,
		    d->new_total, absolute ? "self samples, change" :
		    "self share of the samples, change in points",
		    "change", "%base", "%new", "base", "new", "function") < 0)
		goto out;
	if (fputs("grew:\n", f) == EOF)
		goto out;
	for (uint32_t i = 0; i < n && i < DIFF_SUMMARY_ROWS && row[i].delta > 0; i++)
		if (summary_row(f, d, &row[i], absolute))
			goto out;
	if (fputs("shrank:\n", f) == EOF)
		goto out;
	shown = 0;
	for (uint32_t i = n; i-- > 0 && shown < DIFF_SUMMARY_ROWS && row[i].delta < 0; shown++)
		if (summary_row(f, d, &row[i], absolute))
			goto out;
	ret = 0;
out:
	free(row);
	return ret;
}

/*
 * Each stack's self samples in BASE and in NEW, the union's stacks as
 * FlameGraph's difffolded.pl writes them (flamegraph.pl draws them):
 *
 *   <module> (app.py);work (app.py);bar (app.py) 249 747
 *
 * 0, or -1 with errno set.
 */
static int diff_folded(FILE *f, const struct diff *d)
{
	uint32_t *path = NULL, cap = 0;
	char buf[8192];
	int ret = -1;

	for (uint32_t i = 1; i < d->u.nnode; i++) {
		uint32_t n = 0;

		if (!d->base_self[i] && !d->next_self[i])
			continue;
		for (uint32_t j = i; j; j = d->u.node[j].parent) {
			if (n == cap) {
				cap = cap ? 2 * cap : 64;
				path = xreallocarray(path, cap, sizeof(*path));
			}
			path[n++] = j;
		}
		while (n-- > 0) {
			if (out_put_sanitized(f, out_frame_text(&d->u, d->u.node[path[n]].frame, buf,
								sizeof(buf))) ||
			    putc(n ? ';' : ' ', f) == EOF)
				goto out;
		}
		if (fprintf(f, "%" PRIu64 " %" PRIu64 "\n", d->base_self[i], d->next_self[i]) < 0)
			goto out;
	}
	ret = 0;
out:
	free(path);
	return ret;
}

/*
 * The differential flame graph, and for each value of its tag bar the
 * diff of that tag's samples on both sides.  0, or -1 with errno set.
 */
static int diff_flamegraph(FILE *f, const struct diff *d, const struct diff_side *base,
			   const struct diff_side *next, int absolute, int flame_up)
{
	const struct profile *both[2] = { &next->p, &base->p };
	struct out_tag *tags;
	size_t ntag = out_tag_bar(both, 2, &tags);
	struct out_view *v = xcalloc(ntag + 1, sizeof(*v));
	struct out_diff *od = xcalloc(ntag + 1, sizeof(*od));
	struct diff *dt = xcalloc(ntag + 1, sizeof(*dt));
	struct out_meta meta;
	char title[2300];
	int ret;

	for (size_t i = 0; i <= ntag; i++) {
		const struct diff *di = d;

		if (i) {
			struct profile b, n;

			profile_project_tag(&base->p, 0, tags[i - 1].kv, &b);
			profile_project_tag(&next->p, 0, tags[i - 1].kv, &n);
			diff_build(&dt[i], &b, &n);
			profile_release(&b);
			profile_release(&n);
			di = &dt[i];
			v[i].tag = tags[i - 1].kv;
		}
		od[i] = (struct out_diff){ di->base, di->next, di->base_total, di->new_total,
					   absolute };
		v[i].p = &di->u;
		v[i].diff = &od[i];
		v[i].samples = i ? tags[i - 1].samples : d->new_total;
	}
	snprintf(title, sizeof(title), "%s \xe2\x86\x92 %s", base->label, next->label);
	memset(&meta, 0, sizeof(meta));
	meta.title = title;
	meta.rate = next->info.rate;
	meta.duration = next->info.duration;
	meta.full_paths = !d->sp;
	meta.flame_up = flame_up;
	ret = out_flamegraph_diff(f, v, ntag + 1, &meta);
	for (size_t i = 1; i <= ntag; i++)
		diff_release(&dt[i]);
	out_tags_free(tags, ntag);
	free(dt);
	free(od);
	free(v);
	return ret;
}

/* A stack of one side into the html report's profile, under its tag set. */
struct html_side {
	struct profile *u;
	uint32_t tags;
};

static int add_side(void *arg, const struct profile *src, const uint32_t *frames, uint32_t depth,
		    uint64_t count)
{
	struct html_side *hs = arg;
	uint32_t *ids = xmalloc(((size_t)depth + 1) * sizeof(*ids));

	ids[0] = hs->tags;
	for (uint32_t i = 0; i < depth; i++) {
		const struct profile_frame *f = &src->frame[frames[i]];

		ids[i + 1] = profile_frame(hs->u, f->kind, profile_str(src, f->name),
					   profile_str(src, f->file), f->line);
	}
	profile_add_path(hs->u, ids, depth + 1, count);
	free(ids);
	return 0;
}

/*
 * The html report, opened comparing BASE and NEW: one profile with each
 * side's stacks (without tag sets or threads, as the diff has them)
 * under the tag set "profile=BASE" or "profile=NEW"; the page compares
 * those two values of the key "profile".  0, or -1 with errno set.
 */
static int diff_html(FILE *f, const struct diff_side *base, const struct diff_side *next,
		     int full_paths)
{
	const struct diff_side *side[2] = { base, next };
	const struct out_compare cmp = { "profile", "BASE", "NEW", base->label, next->label };
	struct profile u, view;
	struct out_meta meta;
	char title[2300];
	int ret;

	profile_init(&u);
	for (int i = 0; i < 2; i++) {
		struct html_side hs = { &u, profile_frame(&u, PROFILE_TAGS, i ? "profile=NEW" :
							  "profile=BASE", "", 0) };

		profile_project(&side[i]->p, 0, &view);
		profile_stacks(&view, add_side, &hs);
		profile_release(&view);
	}
	snprintf(title, sizeof(title), "%s \xe2\x86\x92 %s", base->label, next->label);
	memset(&meta, 0, sizeof(meta));
	meta.title = title;
	meta.rate = next->info.rate;
	meta.duration = next->info.duration;
	meta.full_paths = full_paths;
	meta.compare = &cmp;
	ret = out_html.write(f, &u, &meta);
	profile_release(&u);
	return ret;
}

static int load(struct diff_side *s, const char *which)
{
	int ret = report_load(s->in, &s->flt, 1, &s->p, &s->info, "diff");

	if (ret != EXIT_OK)
		return ret;
	if (!s->info.kept) {
		cli_error("no sample of %s '%s' passed its filters (of %llu)", which, s->in,
			  (unsigned long long)s->info.samples);
		cli_hint("check the filters against the recording: pyrospy report '%s' -f folded "
			 "--tag ...", s->in);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

int diff_main(int argc, char **argv)
{
	struct diff_opts o = { 0 };
	struct diff_side base, next;
	struct diff d;
	struct outfile of;
	int ret, summary, folded, html;

	memset(&base, 0, sizeof(base));
	memset(&next, 0, sizeof(next));
	memset(&d, 0, sizeof(d));
	memset(&of, 0, sizeof(of));
	of.dirfd = -1;
	report_filter_init(&base.flt);
	report_filter_init(&next.flt);
	profile_init(&base.p);
	profile_init(&next.p);
	ret = parse_opts(&o, &base, &next, argc, argv);
	if (ret >= 0)
		goto out;
	summary = o.format && !strcmp(o.format, "summary");
	folded = o.format && !strcmp(o.format, "folded");
	html = o.format && !strcmp(o.format, "html");
	/* the labels: the input, then its filters as side_note() gathered them */
	snprintf(base.label, sizeof(base.label), "%.500s%s%s", base.in, base.desc,
		 base.filtered ? "]" : "");
	snprintf(next.label, sizeof(next.label), "%.500s%s%s", next.in, next.desc,
		 next.filtered ? "]" : "");
	ret = load(&base, "BASE");
	if (ret == EXIT_OK)
		ret = load(&next, "NEW");
	if (ret != EXIT_OK)
		goto out;
	diff_build(&d, &base.p, &next.p);
	if (!o.full_paths)
		d.sp = shortpath_new(&d.u);
	ret = cli_output_open(&of, o.output ? o.output : summary || folded ? "-" : NULL, "diff",
			      html ? "html" : "svg");
	if (ret != EXIT_OK)
		goto out;
	if (summary || folded) {
		if (summary ? diff_summary(of.f, &d, &base, &next, o.absolute) :
			      diff_folded(of.f, &d)) {
			ret = cli_output_failed(&of);
			goto out;
		}
	} else if (html ? diff_html(of.f, &base, &next, o.full_paths) :
			  diff_flamegraph(of.f, &d, &base, &next, o.absolute, o.flame_up)) {
		ret = cli_output_failed(&of);
		goto out;
	}
	ret = cli_output_commit(&of, 0);
	if (ret == EXIT_OK && !o.quiet && strcmp(of.path, "-"))
		fprintf(stderr, "pyrospy: wrote %s diff to '%s' (base %llu, new %llu samples)\n",
			summary ? "summary" : folded ? "folded" : html ? "html" : "flame graph", of.path,
			(unsigned long long)d.base_total, (unsigned long long)d.new_total);
out:
	shortpath_free(d.sp);
	diff_release(&d);
	profile_release(&base.p);
	profile_release(&next.p);
	outfile_close(&of);
	return ret;
}
