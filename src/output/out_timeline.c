/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/out.h"
#include "profile/profile.h"
#include "stack/stack.h"
#include "util/xalloc.h"

/*
 * speedscope in time order, for pyrospy report of a raw recording: one
 * "sampled" profile per thread whose samples are the thread's samples in
 * the order taken (a run of the same stack is one sample, weighted by
 * its length), so that speedscope's "Time Order" view is the thread's
 * timeline.  The tag set is the outermost frame ({k=v,...}) unless
 * --no-tags, so the timeline shows when each tag set was on.  Memory
 * grows with the runs, as the output does.
 *
 *   thread  ->  run run run ...      run = (stack node, samples)
 *   stack node: a node of the trie of a private profile, whose frames are
 *   the shared frames, in the order first seen
 */
struct tl_run {
	uint32_t node;
	uint64_t count;
};

struct tl_thread {
	int32_t pid, tid;
	char *name;		/* the last one seen, NULL none */
	int64_t first_ns;	/* of its first sample */
	struct tl_run *run;
	size_t nrun, arun;
};

struct out_stream {
	FILE *f;
	struct profile dict;
	struct tl_thread *th;
	size_t nth, ath, last;	/* last: the thread of the last sample */
	uint64_t period;	/* ns a sample stands for */
	int64_t start_ns;	/* of the recording */
	char *title;
	int no_tags;
	int pids;		/* more than one process: name threads by pid too */
};

static struct out_stream *timeline_open(FILE *f, const struct out_meta *meta, unsigned int kept)
{
	struct out_stream *s = xcalloc(1, sizeof(*s));

	(void)kept;
	s->f = f;
	profile_init(&s->dict);
	s->period = meta->rate ? 1000000000u / meta->rate : 10000000u;
	s->start_ns = (int64_t)(meta->start * 1e9);
	s->title = xstrdup(meta->title ? meta->title : "pyrospy");
	s->no_tags = meta->no_tags;
	return s;
}

static struct tl_thread *thread_of(struct out_stream *s, const struct stack *st, int64_t when)
{
	struct tl_thread *t;

	if (s->nth && s->th[s->last].pid == st->pid && s->th[s->last].tid == st->tid)
		return &s->th[s->last];
	for (size_t i = 0; i < s->nth; i++) {
		if (s->th[i].pid == st->pid && s->th[i].tid == st->tid) {
			s->last = i;
			return &s->th[i];
		}
	}
	if (s->nth == s->ath) {
		s->ath = s->ath ? s->ath * 2 : 8;
		s->th = xreallocarray(s->th, s->ath, sizeof(*s->th));
	}
	t = &s->th[s->nth];
	memset(t, 0, sizeof(*t));
	t->pid = st->pid;
	t->tid = st->tid;
	t->first_ns = when;
	s->pids |= s->nth && st->pid != s->th[0].pid;
	s->last = s->nth++;
	return t;
}

static int timeline_sample(struct out_stream *s, int64_t when_ns, const char *tags,
			   const struct stack *st)
{
	uint32_t ids[STACK_MAX_DEPTH + 2], n = 0, node;
	struct tl_thread *t = thread_of(s, st, when_ns);

	if (st->thread_name && (!t->name || strcmp(t->name, st->thread_name))) {
		free(t->name);
		t->name = xstrdup(st->thread_name);
	}
	if (tags && *tags && !s->no_tags)
		ids[n++] = profile_frame(&s->dict, PROFILE_TAGS, tags, "", 0);
	if (st->truncated)
		ids[n++] = profile_frame(&s->dict, PROFILE_MARK, "[truncated]", "", 0);
	for (uint32_t i = st->depth; i-- > 0 && n < ARRAY_SIZE(ids);) {
		const struct stack_frame *f = &st->frame[i];

		ids[n++] = profile_frame(&s->dict, *f->file ? PROFILE_CODE : PROFILE_MARK, f->name,
					 f->file, f->line);
	}
	node = profile_add_path(&s->dict, ids, n, 1);
	if (t->nrun && t->run[t->nrun - 1].node == node) {
		t->run[t->nrun - 1].count++;
		return 0;
	}
	if (t->nrun == t->arun) {
		t->arun = t->arun ? t->arun * 2 : 64;
		t->run = xreallocarray(t->run, t->arun, sizeof(*t->run));
	}
	t->run[t->nrun++] = (struct tl_run){ node, 1 };
	return 0;
}

static int frame_json(FILE *f, const struct profile *p, uint32_t id)
{
	const struct profile_frame *fr = &p->frame[id];
	const char *file = profile_str(p, fr->file);
	int tagset = fr->kind == PROFILE_TAGS;

	if (fputs(tagset ? "{\"name\":\"{" : "{\"name\":\"", f) == EOF ||
	    out_put_escaped(f, profile_str(p, fr->name), 0) || (tagset && fputc('}', f) == EOF))
		return -1;
	if (*file && (fputs("\",\"file\":\"", f) == EOF || out_put_escaped(f, file, 0)))
		return -1;
	if (fputc('"', f) == EOF || (fr->line > 0 && fprintf(f, ",\"line\":%d", fr->line) < 0))
		return -1;
	return fputc('}', f) == EOF ? -1 : 0;
}

/* The frames of node, root first, as shared indexes (= frame ids). */
static int stack_json(FILE *f, const struct profile *p, uint32_t node, uint32_t *path)
{
	uint32_t n = 0;

	for (; node; node = p->node[node].parent)
		path[n++] = p->node[node].frame;
	if (fputc('[', f) == EOF)
		return -1;
	while (n-- > 0)
		if (fprintf(f, "%u%s", path[n], n ? "," : "") < 0)
			return -1;
	return fputc(']', f) == EOF ? -1 : 0;
}

static int thread_json(struct out_stream *s, const struct tl_thread *t, uint32_t *path)
{
	FILE *f = s->f;
	int64_t start = t->first_ns > s->start_ns ? t->first_ns - s->start_ns : 0;
	uint64_t end = (uint64_t)start;
	char label[64];

	if (s->pids)
		snprintf(label, sizeof(label), "pid %d: thread (%d)", (int)t->pid, (int)t->tid);
	else
		snprintf(label, sizeof(label), "thread (%d)", (int)t->tid);
	if (fputs("{\"type\":\"sampled\",\"name\":\"", f) == EOF || out_put_escaped(f, label, 0) ||
	    (t->name && (fputs(": ", f) == EOF || out_put_escaped(f, t->name, 0))) ||
	    fprintf(f, "\",\"unit\":\"nanoseconds\",\"startValue\":%" PRId64 ",\"samples\":[",
		    start) < 0)
		return -1;
	for (size_t i = 0; i < t->nrun; i++)
		if ((i && fputc(',', f) == EOF) || stack_json(f, &s->dict, t->run[i].node, path))
			return -1;
	if (fputs("],\"weights\":[", f) == EOF)
		return -1;
	for (size_t i = 0; i < t->nrun; i++) {
		end += t->run[i].count * s->period;
		if (fprintf(f, i ? ",%" PRIu64 : "%" PRIu64, t->run[i].count * s->period) < 0)
			return -1;
	}
	return fprintf(f, "],\"endValue\":%" PRIu64 "}", end) < 0 ? -1 : 0;
}

static int timeline_write(struct out_stream *s)
{
	FILE *f = s->f;
	uint32_t *path = xmalloc((STACK_MAX_DEPTH + 4) * sizeof(*path));
	int ret = -1;

	if (fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
		  "\"exporter\":\"pyrospy " PACKAGE_VERSION "\",\"name\":\"", f) == EOF ||
	    out_put_escaped(f, s->title, 0) ||
	    fputs("\",\"activeProfileIndex\":0,\"shared\":{\"frames\":[", f) == EOF)
		goto out;
	for (uint32_t i = 0; i < s->dict.nframe; i++)
		if ((i && fputc(',', f) == EOF) || frame_json(f, &s->dict, i))
			goto out;
	if (fputs("]},\"profiles\":[", f) == EOF)
		goto out;
	for (size_t i = 0; i < s->nth; i++)
		if ((i && fputc(',', f) == EOF) || thread_json(s, &s->th[i], path))
			goto out;
	ret = fputs("]}\n", f) == EOF ? -1 : 0;
out:
	free(path);
	return ret;
}

static int timeline_close(struct out_stream *s)
{
	int ret = timeline_write(s), e = errno;

	for (size_t i = 0; i < s->nth; i++) {
		free(s->th[i].name);
		free(s->th[i].run);
	}
	free(s->th);
	free(s->title);
	profile_release(&s->dict);
	free(s);
	errno = e;
	return ret;
}

const struct out_ops out_timeline = {
	.name = "speedscope",
	.ext = "speedscope.json",
	.open = timeline_open,
	.sample = timeline_sample,
	.close = timeline_close,
};
