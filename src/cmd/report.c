/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cmd/common.h"
#include "profile/foldedread.h"
#include "output/out.h"
#include "output/outfile.h"
#include "profile/pprofread.h"
#include "profile/profile.h"
#include "profile/raw.h"
#include "profile/rawread.h"
#include "cmd/report.h"
#include "stack/stack.h"
#include "util/xalloc.h"

const char report_usage[] =
	"usage: pyrospy report RECORDING [options]\n"
	"\n"
	"Write a raw recording (pyrospy record -f raw) in any format, keeping only\n"
	"the samples the filters select.  A folded profile or a gzipped pprof CPU\n"
	"profile (pyrospy's, go tool pprof -proto's) is read too, with the filters\n"
	"its samples can answer (--pid, --thread, --tag).\n"
	"\n"
	"options:\n"
	"  -f, --format FMT       folded (default for -o -), flamegraph, speedscope\n"
	"                         (in time order), pprof, summary, raw, chrome (trace\n"
	"                         events: each thread over time), html (a report to\n"
	"                         open in a browser); by default the one -o FILE's\n"
	"                         name says (.html .svg .txt .json .pb.gz .raw ...)\n"
	"  -o, --output FILE      write to FILE, - for stdout (default: -)\n"
	"      --from WHEN        only samples from WHEN on: seconds into the recording,\n"
	"                         or a wall time, HH:MM:SS or YYYY-MM-DDTHH:MM:SS[Z]\n"
	"                         (default: from the first sample)\n"
	"      --until WHEN       only samples before WHEN (as --from; default: to the\n"
	"                         last sample)\n"
	"      --pid PID          only the samples of process PID\n"
	"      --thread TID|NAME  only this thread's samples (repeatable: any of them)\n"
	"      --tag KEY=VALUE    only samples tagged so (repeatable: all of them);\n"
	"                         KEY!=VALUE: only samples not tagged so\n"
	"      --idle             keep idle threads' samples (if recorded with --idle)\n"
	"      --gil              keep only samples of the thread holding the GIL/GVL\n"
	"      --threads          put a 'thread (TID)' frame at the root of each stack\n"
	"      --no-tags          merge the tag sets: no {k=v} frame at the root\n"
	"      --function         aggregate by function, dropping line numbers\n"
	"      --full-paths       whole file paths in flamegraph and summary, not the\n"
	"                         short forms (json/encoder.py; see pyrospy(1))\n"
	"      --flame-direction D\n"
	"                         flamegraph: down (default: the root at the top, its\n"
	"                         callees under it) or up (the root at the bottom)\n"
	"  -q, --quiet            print nothing but errors and warnings\n"
	"  -h, --help             show this help\n"
	"\n"
	"examples:\n"
	"  pyrospy record --pid 1234 -d 60 -o web.raw\n"
	"  pyrospy report web.raw --from 10 --until 20 -f flamegraph -o spike.svg\n"
	"  pyrospy report web.raw --tag route=/cart -f summary\n"
	"  pyrospy report web.raw --thread worker-1 -f speedscope -o worker.json\n";

struct report_opts {
	const char *in, *format, *output;
	struct report_filter flt;
	int threads, no_tags, function, quiet, full_paths, flame_up;
};

/* One input being read: by report_main(), or by report_load() into a profile. */
struct report {
	const struct report_opts *o;	/* report_main()'s; NULL for report_load() */
	const struct report_filter *flt;
	int function;			/* drop line numbers */
	const struct rawread *r;
	const struct out_ops *ops;
	struct out_stream *stream;	/* a streaming format's writer */
	struct profile *p;		/* the others' profile */
	struct outfile *of;
	int failed;			/* the streaming writer could not start */
	uint64_t kept, total;		/* samples kept, read */
	double from, until;		/* flt's bounds, into the recording (report_bounds()) */
	int bounded;			/* from and until are set */
	int64_t first_ns, last_ns;	/* of the samples kept */
	uint32_t *ids;			/* a folded line's path */
	int overflow;			/* a profile's counts add up to over INT64_MAX */
	/* a recording's samples into the profile (report_count()) */
	struct memo *memo;		/* open addressing, memo_cap slots */
	uint32_t nmemo, memo_cap;
	uint32_t *walk;			/* stack nodes on the way up */
	uint64_t *pend;			/* samples by profile node, not yet in its counts */
	size_t apend;
	uint32_t *thread_frame;		/* by the file's thread: its profile thread frame + 1 */
	size_t athread_frame;
};

/*
 * A recording's stack node may be 4096 frames deep, and named by a
 * hundred thousand samples of 6 bytes: adding each to the profile frame
 * by frame cost 12 s of CPU for a file of 7 KB.  Instead the profile node
 * of each (stack node, thread, tag set, truncated) of the file is kept
 * here, made once from its parent's; a sample adds one to the pending
 * count of its node, and report_flush() puts the pending counts into the
 * profile's self and total counts in one pass over it at the end.  So a
 * sample costs the same at any depth, and a stack node is walked once.
 * The cache holds at most REPORT_MEMO_MAX entries (16 bytes each, twice
 * that in slots), then starts again empty: it is only a cache.
 */
#define REPORT_MEMO_MAX (1u << 20)

struct memo {
	uint32_t node;		/* the file's stack node; top bit: truncated */
	uint32_t thread, tags;	/* the file's numbers */
	uint32_t pnode;		/* the profile's node + 1; 0: an empty slot */
};

/* The value of key in the tag set tags ("k=v,k=v"), and its length; NULL if none. */
static const char *tag_value(const char *tags, const char *key, size_t klen, size_t *vlen)
{
	for (const char *p = tags; p && *p;) {
		const char *end = strchr(p, ',');

		if (!end)
			end = p + strlen(p);
		if ((size_t)(end - p) > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			*vlen = (size_t)(end - p) - klen - 1;
			return p + klen + 1;
		}
		p = *end ? end + 1 : end;
	}
	return NULL;
}

void report_filter_init(struct report_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->until = -1;
	f->from_at = f->until_at = -1;
}

int report_filter_timed(const struct report_filter *f)
{
	return f->from > 0 || f->until >= 0 || f->from_at >= 0 || f->until_at >= 0;
}

/*
 * The Unix time of the local time of day tod (seconds after midnight)
 * nearest start: on start's day, the day before or the day after.
 */
static double time_of_day(double start, double tod)
{
	time_t t = (time_t)start;
	double best = -1;
	struct tm tm;

	for (int day = -1; day <= 1; day++) {
		double at;

		if (!localtime_r(&t, &tm))
			return -1;
		tm.tm_mday += day;
		tm.tm_hour = (int)(tod / 3600);
		tm.tm_min = (int)(tod / 60) % 60;
		tm.tm_sec = (int)tod % 60;
		tm.tm_isdst = -1;
		at = (double)mktime(&tm) + (tod - (double)(long)tod);
		if (best < 0 || (at > start ? at - start : start - at) <
				(best > start ? best - start : start - best))
			best = at;
	}
	return best;
}

/* A wall time into seconds into the recording that started at start. */
static double into(double start, double at, int tod)
{
	return (tod ? time_of_day(start, at) : at) - start;
}

/* The filter's bounds in seconds into the recording, once its start is known. */
static void report_bounds(struct report *rp)
{
	const struct report_filter *f = rp->flt;
	double start = rp->r->start;

	if (rp->bounded)
		return;
	rp->bounded = 1;
	rp->from = f->from_at >= 0 ? into(start, f->from_at, f->from_tod) : f->from;
	if (rp->from < 0)
		rp->from = 0;
	rp->until = f->until_at >= 0 ? into(start, f->until_at, f->until_tod) : f->until;
	/* a wall end before the start: nothing, not "no end" */
	if (f->until_at >= 0 && rp->until < 0)
		rp->until = 0;
}

/* --pid, --thread and --tag */
static int keep_where(const struct report_filter *o, pid_t pid, pid_t tid, const char *name,
		      const char *tags)
{
	int any = !o->nthread;

	if (o->pid && pid != o->pid)
		return 0;
	for (unsigned int i = 0; i < o->nthread && !any; i++) {
		char id[16];

		snprintf(id, sizeof(id), "%d", (int)tid);
		any = !strcmp(o->thread[i], id) || (name && !strcmp(o->thread[i], name));
	}
	if (!any)
		return 0;
	for (unsigned int i = 0; i < o->ntag; i++) {
		const struct report_tag *t = &o->tag[i];
		size_t vlen = 0;
		const char *v = tag_value(tags, t->key, t->klen, &vlen);
		int is = v && vlen == strlen(t->value) && !strncmp(v, t->value, vlen);

		if (is == t->negate)
			return 0;
	}
	return 1;
}

static int keep(struct report *rp, int64_t when_ns, const char *tags, const struct stack *st)
{
	const struct report_filter *o = rp->flt;
	double at = (double)when_ns / 1e9 - rp->r->start;

	report_bounds(rp);
	if (at < rp->from || (rp->until >= 0 && at >= rp->until))
		return 0;
	if ((o->gil && st->holds_gil != 1) || (!o->idle && st->idle == 1))
		return 0;
	return keep_where(o, st->pid, st->tid, st->thread_name, tags);
}

/*
 * A line of a folded profile: a path of the profile as profile_add()
 * makes them (tag set, thread, frames), "all threads" when the file
 * keeps no threads apart.
 */
static int report_folded(void *arg, const struct folded_line *l)
{
	struct report *rp = arg;
	uint32_t *ids = rp->ids, n = 0;

	if (!keep_where(rp->flt, l->pid, l->tid, l->thread_name, l->tags))
		return 0;
	/* a sum that wraps is a total that lies: the profile is refused */
	if (l->count > INT64_MAX - rp->total) {
		rp->overflow = 1;
		return 1;
	}
	ids[n++] = profile_frame(rp->p, PROFILE_TAGS, l->tags ? l->tags : "", "", 0);
	ids[n++] = profile_frame(rp->p, PROFILE_THREAD, l->thread ? l->thread : "all threads",
				 "", 0);
	for (uint32_t i = 0; i < l->depth; i++) {
		const struct folded_frame *f = &l->frame[i];

		ids[n++] = profile_frame(rp->p, *f->file ? PROFILE_CODE : PROFILE_MARK, f->name,
					 f->file, rp->function ? 0 : f->line);
	}
	profile_add_path(rp->p, ids, n, l->count);
	rp->kept += l->count;
	rp->total += l->count;
	return 0;
}

static struct memo *memo_slot(const struct report *rp, uint32_t node, uint32_t thread,
			      uint32_t tags)
{
	uint64_t h = node * 0x9e3779b97f4a7c15ull ^ (thread + 1ull) * 0xc2b2ae3d27d4eb4full ^
		     (tags + 3ull) * 0x165667b19e3779f9ull;

	for (uint32_t j = (uint32_t)(h ^ h >> 32) & (rp->memo_cap - 1);;
	     j = (j + 1) & (rp->memo_cap - 1)) {
		struct memo *m = &rp->memo[j];

		if (!m->pnode || (m->node == node && m->thread == thread && m->tags == tags))
			return m;
	}
}

static void memo_put(struct report *rp, struct memo *m, uint32_t node, uint32_t pnode)
{
	m->node = node;
	m->thread = rp->r->thread;
	m->tags = rp->r->tags;
	m->pnode = pnode + 1;
	rp->nmemo++;
}

/* Room in the cache for a walk up a whole stack, at most half its slots full. */
static void memo_room(struct report *rp)
{
	const uint32_t walk = STACK_MAX_DEPTH + 2;
	struct memo *old = rp->memo;
	uint32_t cap = rp->memo_cap;

	if (!rp->walk)
		rp->walk = xmalloc(walk * sizeof(*rp->walk));
	if (rp->nmemo + walk > REPORT_MEMO_MAX) {
		memset(rp->memo, 0, rp->memo_cap * sizeof(*rp->memo));
		rp->nmemo = 0;
	}
	if ((rp->nmemo + walk) * 2 <= rp->memo_cap)
		return;
	rp->memo_cap = rp->memo_cap ? rp->memo_cap * 2 : 16384;
	rp->memo = xcalloc(rp->memo_cap, sizeof(*rp->memo));
	for (uint32_t i = 0; i < cap; i++)
		if (old[i].pnode)
			*memo_slot(rp, old[i].node, old[i].thread, old[i].tags) = old[i];
	free(old);
}

/* The thread frame of the file's thread of this sample: the one at or above node top. */
static void report_thread_frame(struct report *rp, uint32_t top)
{
	const struct profile *p = rp->p;
	uint32_t t = rp->r->thread;

	while (top && p->frame[p->node[top].frame].kind != PROFILE_THREAD)
		top = p->node[top].parent;
	if (!top)
		return;
	if (t >= rp->athread_frame) {
		size_t cap = rp->athread_frame ? rp->athread_frame : 64;

		while (cap <= t)
			cap *= 2;
		rp->thread_frame = xreallocarray(rp->thread_frame, cap, sizeof(*rp->thread_frame));
		memset(rp->thread_frame + rp->athread_frame, 0,
		       (cap - rp->athread_frame) * sizeof(*rp->thread_frame));
		rp->athread_frame = cap;
	}
	rp->thread_frame[t] = p->node[top].frame + 1;
}

/* One sample of the recording being read (rawread_run_nodes()) into the profile. */
static void report_count(struct report *rp, const char *tags, const struct stack *st)
{
	const struct rawread *r = rp->r;
	struct profile *p = rp->p;
	uint32_t key = st->truncated ? 1u << 31 : 0, n = r->node, depth = 0, pnode;
	struct stack_frame sf;
	struct memo *m;

	memo_room(rp);
	/* up from the sample's node to one whose profile node is known */
	for (;;) {
		m = memo_slot(rp, key | n, r->thread, r->tags);
		if (m->pnode || !n)
			break;
		rp->walk[depth++] = n;
		n = rawread_node(r, n, &sf);
	}
	if (m->pnode) {
		pnode = m->pnode - 1;
	} else {
		/* the empty stack: the tag set and the thread (and [truncated]) */
		static struct stack top;

		memcpy(&top, st, offsetof(struct stack, frame));
		top.depth = 0;
		/* threads named as the recording's own profile named them */
		p->show_pid = (r->flags & RAW_META_PIDS) != 0;
		pnode = profile_add(p, tags, &top, 0);
		memo_put(rp, m, key, pnode);
		report_thread_frame(rp, pnode);
	}
	/* and down again, each node's made from its parent's */
	while (depth--) {
		n = rp->walk[depth];
		rawread_node(r, n, &sf);
		pnode = profile_child(p, pnode, profile_frame(p, *sf.file ? PROFILE_CODE : PROFILE_MARK,
							      sf.name, sf.file,
							      p->no_lines ? 0 : sf.line));
		memo_put(rp, memo_slot(rp, key | n, r->thread, r->tags), key | n, pnode);
	}
	if (pnode >= rp->apend) {
		size_t cap = rp->apend ? rp->apend : 4096;

		while (cap <= pnode)
			cap *= 2;
		rp->pend = xreallocarray(rp->pend, cap, sizeof(*rp->pend));
		memset(rp->pend + rp->apend, 0, (cap - rp->apend) * sizeof(*rp->pend));
		rp->apend = cap;
	}
	rp->pend[pnode]++;
	/* the thread's last name is that of its last sample, cached or not */
	if (r->thread < rp->athread_frame && rp->thread_frame[r->thread])
		profile_thread_note(p, st->pid, st->tid, st->interp,
				    rp->thread_frame[r->thread] - 1);
}

/*
 * The pending counts into the profile: a node's own into its self count,
 * and the sums below each node into its total, from the last node made to
 * the first (a node is made after its parent).
 */
static void report_flush(struct report *rp)
{
	struct profile *p = rp->p;
	uint64_t *sub = rp->pend;
	uint32_t n = p->nnode < rp->apend ? p->nnode : (uint32_t)rp->apend;

	if (!sub)
		return;
	for (uint32_t i = 1; i < n; i++)
		p->node[i].self += sub[i];
	for (uint32_t i = n; i-- > 1;) {
		p->node[i].total += sub[i];
		sub[p->node[i].parent] += sub[i];
	}
	p->node[0].total += sub[0];
	p->total += sub[0];
	memset(sub, 0, rp->apend * sizeof(*sub));
}

static void report_free(struct report *rp)
{
	free(rp->ids);
	free(rp->memo);
	free(rp->walk);
	free(rp->pend);
	free(rp->thread_frame);
}

/* What the writers are told of the recording, once its header is read. */
static void report_meta(struct report *rp, struct out_meta *meta)
{
	const struct report_opts *o = rp->o;
	const struct rawread *r = rp->r;
	double end;

	report_bounds(rp);
	end = rp->until >= 0 && rp->until < r->duration ? rp->until : r->duration;
	memset(meta, 0, sizeof(*meta));
	meta->title = r->title;
	meta->rate = r->rate;
	meta->start = r->start + rp->from;
	meta->duration = end > rp->from ? end - rp->from : 0;
	meta->threads = o->threads;
	meta->no_tags = o->no_tags;
	meta->full_paths = o->full_paths;
	meta->flame_up = o->flame_up;
}

/* A streaming writer starts when the recording's header is known. */
static int stream_start(struct report *rp)
{
	struct out_meta meta;
	unsigned int kept = (rp->flt->idle && (rp->r->flags & RAW_META_IDLE) ? OUT_KEPT_IDLE : 0u) |
			    (rp->flt->gil || (rp->r->flags & RAW_META_GIL) ? OUT_KEPT_GIL : 0u) |
			    (rp->r->flags & RAW_META_PIDS ? OUT_KEPT_PIDS : 0u);

	report_meta(rp, &meta);
	rp->stream = rp->ops->open(rp->of->f, &meta, kept);
	rp->failed = !rp->stream;
	return rp->failed ? -1 : 0;
}

static int report_sample(void *arg, int64_t when_ns, const char *tags, const struct stack *st)
{
	struct report *rp = arg;

	if (!keep(rp, when_ns, tags, st))
		return 0;
	if (rp->ops->open && !rp->stream && stream_start(rp))
		return 1;
	if (rp->stream)
		st = rawread_frames(rp->r);
	if (rp->stream && rp->function) {
		/* --function: the streaming writers keep lines, so take them off here */
		static struct stack copy;

		memcpy(&copy, st, offsetof(struct stack, frame) + st->depth * sizeof(st->frame[0]));
		for (unsigned int i = 0; i < copy.depth; i++)
			copy.frame[i].line = 0;
		st = &copy;
	}
	if (!rp->kept)
		rp->first_ns = when_ns;
	rp->last_ns = when_ns;
	rp->kept++;
	if (rp->stream)
		rp->ops->sample(rp->stream, when_ns, tags, st);
	else
		report_count(rp, tags, st);
	return 0;
}

int report_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || end == s || !(v >= 0) || v > 1e9)
		return 0;
	*out = v;
	return 1;
}

/* "HH:MM[:SS[.frac]]": seconds after midnight, or -1. */
static double parse_tod(const char *s, const char **end)
{
	unsigned int h, m, sec = 0;
	int n = 0;
	double frac = 0;

	if (sscanf(s, "%2u:%2u%n", &h, &m, &n) != 2 || n != 5 || h > 23 || m > 59)
		return -1;
	s += n;
	if (*s == ':') {
		if (sscanf(s, ":%2u%n", &sec, &n) != 1 || n != 3 || sec > 60)
			return -1;
		s += n;
		if (*s == '.' && s[1] >= '0' && s[1] <= '9') {
			char *e;

			frac = strtod(s, &e);
			s = e;
		}
	}
	*end = s;
	return h * 3600.0 + m * 60.0 + sec + frac;
}

/* "YYYY-MM-DD(T| )HH:MM[:SS[.frac]][Z|+HH:MM|-HH:MM|+HHMM]": a Unix time, or -1. */
static double parse_iso(const char *s)
{
	unsigned int y, mo, d, zh, zm;
	int n = 0, sign;
	double tod;
	const char *p;
	struct tm tm;
	time_t t;

	if (sscanf(s, "%4u-%2u-%2u%n", &y, &mo, &d, &n) != 3 || n != 10 || (s[10] != 'T' &&
									      s[10] != ' ') ||
	    y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31)
		return -1;
	tod = parse_tod(s + 11, &p);
	if (tod < 0)
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = (int)y - 1900;
	tm.tm_mon = (int)mo - 1;
	tm.tm_mday = (int)d;
	tm.tm_hour = (int)(tod / 3600);
	tm.tm_min = (int)(tod / 60) % 60;
	tm.tm_sec = (int)tod % 60;
	if (!*p) {
		tm.tm_isdst = -1;
		t = mktime(&tm);
	} else if (!strcmp(p, "Z")) {
		t = timegm(&tm);
	} else {
		sign = *p == '+' ? 1 : *p == '-' ? -1 : 0;
		if (!sign || !((sscanf(p + 1, "%2u:%2u%n", &zh, &zm, &n) == 2 && n == 5) ||
			       (sscanf(p + 1, "%2u%2u%n", &zh, &zm, &n) == 2 && n == 4)) ||
		    p[1 + n] || zh > 23 || zm > 59)
			return -1;
		t = timegm(&tm);
		if (t != (time_t)-1)
			t -= sign * (time_t)(zh * 3600 + zm * 60);
	}
	if (t == (time_t)-1 || t < 0)
		return -1;
	return (double)t + (tod - (double)(long)tod);
}

int report_filter_time(struct report_filter *f, const char *s, int until)
{
	double *rel = until ? &f->until : &f->from, *at = until ? &f->until_at : &f->from_at;
	int *tod = until ? &f->until_tod : &f->from_tod;
	const char *end;
	double v;

	/* the last one given counts */
	if (!strchr(s, ':')) {
		if (!report_seconds(s, rel))
			return 0;
		*at = -1;
		return 1;
	}
	if (strchr(s, '-')) {
		v = parse_iso(s);
		*tod = 0;
	} else {
		v = parse_tod(s, &end);
		*tod = 1;
		if (v >= 0 && *end)
			v = -1;
	}
	if (v < 0)
		return 0;
	*at = v;
	*rel = until ? -1 : 0;
	return 1;
}

int report_filter_tag(struct report_filter *f, const char *arg)
{
	const char *eq = strchr(arg, '=');
	struct report_tag *t;

	if (f->ntag == REPORT_MAX_TAGS)
		return 1;
	if (!eq || eq == arg || (eq == arg + 1 && *arg == '!'))
		return 2;
	t = &f->tag[f->ntag++];
	t->key = arg;
	t->negate = eq[-1] == '!';
	t->klen = (size_t)(eq - arg) - (size_t)t->negate;
	t->value = eq + 1;
	return 0;
}

static int parse_tag(struct report_opts *o, const char *arg)
{
	switch (report_filter_tag(&o->flt, arg)) {
	case 1:
		return cli_usage_error("report", "more than %d --tag filters", REPORT_MAX_TAGS);
	case 2:
		return cli_usage_error("report", "invalid tag filter '%s': want KEY=VALUE or KEY!=VALUE", arg);
	}
	return -1;
}

enum {
	OPT_FROM = 256, OPT_UNTIL, OPT_PID, OPT_THREAD, OPT_TAG, OPT_IDLE, OPT_GIL, OPT_THREADS,
	OPT_NO_TAGS, OPT_FUNCTION, OPT_FULL_PATHS, OPT_FLAME_DIRECTION,
};

static const struct option long_opts[] = {
	{ "format", required_argument, NULL, 'f' },
	{ "output", required_argument, NULL, 'o' },
	{ "from", required_argument, NULL, OPT_FROM },
	{ "until", required_argument, NULL, OPT_UNTIL },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "thread", required_argument, NULL, OPT_THREAD },
	{ "tag", required_argument, NULL, OPT_TAG },
	{ "idle", no_argument, NULL, OPT_IDLE },
	{ "gil", no_argument, NULL, OPT_GIL },
	{ "threads", no_argument, NULL, OPT_THREADS },
	{ "no-tags", no_argument, NULL, OPT_NO_TAGS },
	{ "function", no_argument, NULL, OPT_FUNCTION },
	{ "full-paths", no_argument, NULL, OPT_FULL_PATHS },
	{ "flame-direction", required_argument, NULL, OPT_FLAME_DIRECTION },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Returns -1 to go on, or an exit status. */
static int parse_opts(struct report_opts *o, int argc, char **argv)
{
	int c, ret, idx = -1;

	optind = 1;
	opterr = 0;
	/* options may follow the recording's name */
	while ((c = getopt_long(argc, argv, ":f:o:qh", long_opts, &idx)) != -1) {
		const char *abbr;
		char *end;
		long v;

		if (c != ':' && c != '?' &&
		    (abbr = cli_abbreviated(long_opts, idx, argv, optind, optarg)))
			return cli_unknown_long_option("report", abbr, long_opts);
		idx = -1;
		switch (c) {
		case 'f':
			if (!out_find(optarg))
				return cli_usage_error("report", "unknown format '%s': want one of %s", optarg,
						   out_names());
			o->format = optarg;
			break;
		case 'o':
			if (!*optarg)
				return cli_usage_error("report", "empty output file name");
			o->output = optarg;
			break;
		case OPT_FROM:
		case OPT_UNTIL:
			if (!report_filter_time(&o->flt, optarg, c == OPT_UNTIL))
				return cli_usage_error("report", "invalid %s '%s': want seconds into the recording, "
						   "HH:MM:SS or YYYY-MM-DDTHH:MM:SS[Z]",
						   c == OPT_FROM ? "--from" : "--until", optarg);
			break;
		case OPT_PID:
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || end == optarg || v <= 0 || v > INT_MAX)
				return cli_usage_error("report", "invalid pid '%s'", optarg);
			o->flt.pid = (pid_t)v;
			break;
		case OPT_THREAD:
			if (o->flt.nthread == REPORT_MAX_THREADS)
				return cli_usage_error("report", "more than %d --thread filters",
						   REPORT_MAX_THREADS);
			o->flt.thread[o->flt.nthread++] = optarg;
			break;
		case OPT_TAG:
			ret = parse_tag(o, optarg);
			if (ret >= 0)
				return ret;
			break;
		case OPT_IDLE:
			o->flt.idle = 1;
			break;
		case OPT_GIL:
			o->flt.gil = 1;
			break;
		case OPT_THREADS:
			o->threads = 1;
			break;
		case OPT_NO_TAGS:
			o->no_tags = 1;
			break;
		case OPT_FUNCTION:
			o->function = 1;
			break;
		case OPT_FULL_PATHS:
			o->full_paths = 1;
			break;
		case OPT_FLAME_DIRECTION:
			if ((ret = cli_flame_direction("report", optarg, &o->flame_up)) >= 0)
				return ret;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return EXIT_OK;
		case ':':
			return cli_usage_error("report", "option '%s' needs a value", argv[optind - 1]);
		default:
			if (optopt)
				return cli_usage_error("report", "unknown option '-%c'", optopt);
			return cli_unknown_long_option("report", argv[optind - 1], long_opts);
		}
	}
	if (optind >= argc)
		return cli_usage_error("report", "report needs a recording: pyrospy report FILE.raw");
	if (optind + 1 < argc)
		return cli_usage_error("report", "unexpected argument '%s'", argv[optind + 1]);
	o->in = argv[optind];
	if (o->flt.until >= 0 && o->flt.until <= o->flt.from && o->flt.from_at < 0 &&
	    o->flt.until_at < 0)
		return cli_usage_error("report", "--until %g is not after --from %g", o->flt.until, o->flt.from);
	return -1;
}

/* What an input is: a recording, or a profile of sums (folded, pprof). */
enum { IN_RAW, IN_FOLDED, IN_PPROF };

/*
 * The kind of the file in (IN_*), -1 with errno set when it cannot be
 * read; it is read again from its start.
 */
static int is_folded(FILE *in)
{
	char magic[RAW_MAGIC_LEN];
	size_t n = fread(magic, 1, sizeof(magic), in);

	if (ferror(in) || fseek(in, 0, SEEK_SET))
		return -1;
	if (pprofread_is((const unsigned char *)magic, n))
		return IN_PPROF;
	return n < sizeof(magic) || memcmp(magic, RAW_MAGIC, RAW_MAGIC_LEN) ? IN_FOLDED : IN_RAW;
}

/* The input could not be read as a recording: say why; the exit status. */
static int bad_input(const char *path, const struct rawread *r, enum perr err, int folded)
{
	if (err == PERR_IO) {
		cli_error("cannot read '%s': %s", path, r->why);
		cli_hint("check the file is there and readable");
		return EXIT_FAIL;
	}
	if (folded) {
		cli_error("cannot read '%s' as a %s profile: %s", path,
			  folded == IN_PPROF ? "pprof" : "folded", r->why);
		cli_hint("give a raw recording (pyrospy record -f raw), a folded profile (-f folded) "
			 "or a gzipped pprof CPU profile (-f pprof)");
		return EXIT_BADFILE;
	}
	cli_error("cannot read '%s' as a recording: %s", path, r->why);
	if (strstr(r->why, "version"))
		cli_hint("read it with the pyrospy that wrote it");
	else
		cli_hint("give a file written by pyrospy record -f raw; this one is damaged or is "
		     "something else");
	return EXIT_BADFILE;
}

/* Open path and tell a folded profile (*folded set) from a recording; the exit status. */
static int report_open(const char *path, struct outfile *inf, FILE **in, int *folded)
{
	enum perr err = outfile_open_input(inf, path);

	if (err == PERR_UNSAFE && S_ISLNK(inf->bad_mode)) {
		cli_error("refused to follow symlink '%s': it belongs to uid %u, in a directory "
			  "others can write", inf->bad, (unsigned)inf->bad_uid);
		cli_hint("another user's link there may lead anywhere: give the real path");
		return EXIT_FAIL;
	}
	if (err == PERR_UNSAFE) {
		cli_error("refused to read '%s': it is %s, not a regular file", inf->bad,
			  S_ISFIFO(inf->bad_mode) ? "a FIFO" : S_ISSOCK(inf->bad_mode) ? "a socket" :
			  "a device");
		cli_hint("give the path of a file: a FIFO or device may never end");
		return EXIT_FAIL;
	}
	if (err) {
		cli_error("cannot open '%s': %s", path, strerror(errno));
		cli_hint("give the path of a recording written by pyrospy record -f raw");
		return EXIT_FAIL;
	}
	*in = inf->f;
	*folded = is_folded(*in);
	if (*folded < 0) {
		cli_error("cannot read '%s': %s", path, strerror(errno));
		cli_hint("give a file: a recording is read from its start twice");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* Read in (path) through the filters into rp's writer or profile; the exit status. */
static int report_run(struct report *rp, FILE *in, int folded, const char *path,
		      struct rawread *r)
{
	enum perr err;

	if (folded) {
		char why[160];

		rp->ids = xmalloc((FOLDEDREAD_MAX_DEPTH + 2) * sizeof(*rp->ids));
		if (folded == IN_PPROF)
			err = pprofread_run(in, report_folded, rp, why, sizeof(why));
		else
			err = foldedread_run(in, report_folded, rp, why, sizeof(why));
		if (!err && rp->overflow) {
			snprintf(why, sizeof(why), "its counts add up to over 2^63 - 1");
			err = PERR_TOOBIG;
		}
		if (err) {
			snprintf(r->why, sizeof(r->why), "%s", why);
			return bad_input(path, r, err, folded);
		}
		r->samples = rp->total;
	} else {
		err = rawread_run_nodes(r, in, report_sample, rp);
		report_flush(rp);
		if (err)
			return bad_input(path, r, err, 0);
	}
	if (r->torn)
		fprintf(stderr, "pyrospy: warning: '%s' was cut short: %s\n", path, r->why);
	return EXIT_OK;
}

/* A filter only a raw recording answers, given for a folded profile. */
static int folded_cannot(const struct report_filter *f, const char *path, const char *cmd)
{
	if (!(report_filter_timed(f) || f->idle || f->gil))
		return EXIT_OK;
	cli_error("filters by time (--from, --until, diff's --base-from ...), --idle and --gil "
		  "need a raw recording: '%s' is a profile of sums", path);
	cli_hint("see 'pyrospy help %s'", cmd);
	return EXIT_USAGE;
}

int report_load(const char *path, const struct report_filter *f, int function,
		struct profile *p, struct report_input *info, const char *cmd)
{
	struct report rp = { .flt = f, .function = function, .ops = &out_folded, .p = p };
	struct rawread r;
	struct outfile inf;
	FILE *in = NULL;
	int ret, folded = 0;

	memset(&r, 0, sizeof(r));
	memset(info, 0, sizeof(*info));
	rp.r = &r;
	p->no_lines = function;
	ret = report_open(path, &inf, &in, &folded);
	if (ret == EXIT_OK && folded)
		ret = folded_cannot(f, path, cmd);
	if (ret == EXIT_OK)
		ret = report_run(&rp, in, folded, path, &r);
	if (ret == EXIT_OK) {
		info->samples = r.samples;
		info->kept = rp.kept;
		info->rate = r.rate;
		info->duration = r.duration;
	}
	outfile_close(&inf);
	rawread_release(&r);
	report_free(&rp);
	return ret;
}

int report_main(int argc, char **argv)
{
	struct report_opts o = { .output = "-" };
	struct report rp = { .o = &o, .flt = &o.flt };
	struct profile prof;
	struct rawread r;
	struct out_meta meta;
	struct outfile of, inf;
	FILE *in = NULL;
	int ret, folded;

	memset(&of, 0, sizeof(of));
	of.dirfd = -1;
	memset(&inf, 0, sizeof(inf));
	inf.dirfd = -1;
	memset(&r, 0, sizeof(r));
	report_filter_init(&o.flt);
	profile_init(&prof);
	rp.p = &prof;
	ret = parse_opts(&o, argc, argv);
	if (ret >= 0)
		goto out;
	rp.ops = cli_output_format(o.format, o.output, "flamegraph");
	if (!rp.ops) {
		ret = EXIT_USAGE;
		goto out;
	}
	rp.r = &r;
	rp.function = o.function;
	prof.no_lines = o.function;
	ret = report_open(o.in, &inf, &in, &folded);
	if (ret != EXIT_OK)
		goto out;
	if (folded) {
		ret = folded_cannot(&o.flt, o.in, "report");
		if (ret != EXIT_OK)
			goto out;
	}
	if (folded && rp.ops->open) {
		ret = cli_usage_error("report", "-f %s needs a raw recording: '%s' is no raw recording",
				  rp.ops->name, o.in);
		goto out;
	}
	/* what has a time order is written in it */
	if (!folded && rp.ops == &out_speedscope)
		rp.ops = &out_timeline;
	ret = cli_output_open(&of, o.output, "report", rp.ops->ext);
	if (ret != EXIT_OK)
		goto out;
	rp.of = &of;
	ret = report_run(&rp, in, folded, o.in, &r);
	if (ret != EXIT_OK)
		goto out;
	if (rp.ops->open) {
		if ((!rp.stream && !rp.failed && stream_start(&rp)) || rp.failed) {
			ret = cli_output_failed(&of);
			goto out;
		}
		ret = rp.ops->close(rp.stream);
		rp.stream = NULL;
		if (ret) {
			ret = cli_output_failed(&of);
			goto out;
		}
	} else {
		report_meta(&rp, &meta);
		if (rp.ops->write(of.f, &prof, &meta)) {
			ret = cli_output_failed(&of);
			goto out;
		}
	}
	ret = cli_output_commit(&of, 0);
	if (ret == EXIT_OK && !o.quiet && strcmp(of.path, "-"))
		fprintf(stderr, "pyrospy: wrote %s profile to '%s' (%llu of %llu samples)\n",
			rp.ops->name, of.path, (unsigned long long)rp.kept,
			(unsigned long long)r.samples);
	if (ret == EXIT_OK && !o.quiet && !rp.kept)
		fprintf(stderr, "pyrospy: no sample of the %llu in '%s' passed the filters\n",
			(unsigned long long)r.samples, o.in);
out:
	if (rp.stream)
		rp.ops->close(rp.stream);
	outfile_close(&inf);
	rawread_release(&r);
	profile_release(&prof);
	report_free(&rp);
	outfile_close(&of);
	return ret;
}
