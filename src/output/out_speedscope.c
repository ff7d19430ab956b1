/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>

#include "output/out.h"
#include "profile/profile.h"
#include "util/xalloc.h"

/*
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json):
 * the frames once, in "shared", then one "sampled" profile per thread
 * whose samples are lists of frame indexes, root first, weighted by the
 * CPU time they stand for (count x period, in nanoseconds).  Tag sets are
 * merged; threads are always kept apart.
 */
struct ss {
	FILE *f;
	uint32_t *index;	/* frame id -> shared index + 1, 0 for none yet */
	uint32_t nindex;
	uint64_t period;	/* ns */
	uint64_t sum;		/* of the current profile's weights */
	int first;
	int pass;		/* 0: frames, 1: samples, 2: weights */
};

static int frame_json(FILE *f, const struct profile *p, uint32_t id)
{
	const struct profile_frame *fr = &p->frame[id];
	const char *file = profile_str(p, fr->file);

	if (fputs("{\"name\":\"", f) == EOF || out_put_escaped(f, profile_str(p, fr->name), 0))
		return -1;
	if (*file && (fputs("\",\"file\":\"", f) == EOF || out_put_escaped(f, file, 0)))
		return -1;
	if (fputc('"', f) == EOF || (fr->line > 0 && fprintf(f, ",\"line\":%d", fr->line) < 0))
		return -1;
	return fputc('}', f) == EOF ? -1 : 0;
}

static int visit(void *arg, const struct profile *p, const uint32_t *frames, uint32_t depth,
		 uint64_t count)
{
	struct ss *ss = arg;

	if (ss->pass == 0) {
		for (uint32_t d = 0; d < depth; d++) {
			if (ss->index[frames[d]])
				continue;
			ss->index[frames[d]] = ++ss->nindex;
			if ((ss->nindex > 1 && fputc(',', ss->f) == EOF) ||
			    frame_json(ss->f, p, frames[d]))
				return -1;
		}
		return 0;
	}
	if (!ss->first && fputc(',', ss->f) == EOF)
		return -1;
	ss->first = 0;
	if (ss->pass == 2) {
		ss->sum += count * ss->period;
		return fprintf(ss->f, "%" PRIu64, count * ss->period) < 0 ? -1 : 0;
	}
	if (fputc('[', ss->f) == EOF)
		return -1;
	for (uint32_t d = 0; d < depth; d++)
		if (fprintf(ss->f, d ? ",%u" : "%u", ss->index[frames[d]] - 1) < 0)
			return -1;
	return fputc(']', ss->f) == EOF ? -1 : 0;
}

/*
 * One profile for the thread at node th, "thread (42) {k=v}" when under a
 * tag set's node tags (0 for none).
 */
static int thread_profile(struct ss *ss, const struct profile *p, uint32_t tags, uint32_t th)
{
	FILE *f = ss->f;

	if (fputs("{\"type\":\"sampled\",\"name\":\"", f) == EOF ||
	    out_put_escaped(f, profile_str(p, p->frame[p->node[th].frame].name), 0) ||
	    (tags && (fputs(" {", f) == EOF ||
		      out_put_escaped(f, profile_str(p, p->frame[p->node[tags].frame].name), 0) ||
		      fputc('}', f) == EOF)) ||
	    fputs("\",\"unit\":\"nanoseconds\",\"startValue\":0,\"samples\":[", f) == EOF)
		return -1;
	ss->pass = 1;
	ss->first = 1;
	if (profile_stacks_below(p, th, visit, ss) || fputs("],\"weights\":[", f) == EOF)
		return -1;
	ss->pass = 2;
	ss->first = 1;
	ss->sum = 0;
	if (profile_stacks_below(p, th, visit, ss))
		return -1;
	return fprintf(f, "],\"endValue\":%" PRIu64 "}", ss->sum) < 0 ? -1 : 0;
}

/*
 * The thread node after th (0: the first), in a view whose top level holds
 * threads and tag sets with threads below them; *tags gets the tag set's
 * node, or 0.  0 when there are no more.
 */
static uint32_t next_thread(const struct profile *p, uint32_t th, uint32_t *tags)
{
	const struct profile_node *n = p->node;
	uint32_t next;

	if (!th)
		next = n[0].child;
	else if (*tags && n[th].sibling)
		return n[th].sibling;	/* the tag set's next thread */
	else
		next = *tags ? n[*tags].sibling : n[th].sibling;
	if (next && p->frame[n[next].frame].kind == PROFILE_TAGS) {
		*tags = next;
		return n[next].child;
	}
	*tags = 0;
	return next;
}

static int speedscope_write(FILE *f, const struct profile *p, const struct out_meta *meta)
{
	uint32_t tags = 0;
	struct profile view;
	struct ss ss = { .f = f };
	int ret = -1;

	profile_project(p, PROFILE_KEEP_THREADS | (meta->no_tags ? 0u : PROFILE_KEEP_TAGS), &view);
	ss.index = xcalloc(view.nframe + 1, sizeof(*ss.index));
	ss.period = meta->rate ? 1000000000u / meta->rate : 0;
	if (fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
		  "\"exporter\":\"pyrospy " PACKAGE_VERSION "\",\"name\":\"", f) == EOF ||
	    out_put_escaped(f, meta->title ? meta->title : "pyrospy", 0) ||
	    fputs("\",\"activeProfileIndex\":0,\"shared\":{\"frames\":[", f) == EOF)
		goto out;
	/* frames below the thread level, each thread's subtree in turn */
	for (uint32_t th = 0; (th = next_thread(&view, th, &tags));)
		if (profile_stacks_below(&view, th, visit, &ss))
			goto out;
	if (fputs("]},\"profiles\":[", f) == EOF)
		goto out;
	for (uint32_t th = 0, n = 0; (th = next_thread(&view, th, &tags)); n++)
		if ((n && fputc(',', f) == EOF) || thread_profile(&ss, &view, tags, th))
			goto out;
	ret = fputs("]}\n", f) == EOF ? -1 : 0;
out:
	free(ss.index);
	profile_release(&view);
	return ret;
}

const struct out_ops out_speedscope = {
	.name = "speedscope",
	.ext = "speedscope.json",
	.write = speedscope_write,
};
