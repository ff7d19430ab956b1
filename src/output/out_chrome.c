/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "output/out.h"
#include "profile/profile.h"
#include "stack/stack.h"
#include "util/xalloc.h"

/*
 * Chrome's trace event format (the JSON "traceEvents" array that Perfetto
 * and chrome://tracing open), written as samples come: each frame of a
 * thread's stack becomes a complete event ("X": start and duration), from
 * the first sample that has it to the first that has not (or a period
 * after the thread's last sample, when the thread goes unsampled for more
 * than two periods), written when it ends; holding the GIL/GVL and being
 * idle become async spans ("b"/"e", one track each per thread).  Not
 * "B"/"E" pairs: Chrome's own trace engine matches those in file order
 * across all threads.  Times are microseconds
 * from the start of the recording.  A streaming writer: memory holds each
 * thread's current stack, and the file grows with the samples.
 */
struct ch_thread {
	int32_t pid, tid;
	uint32_t *stack;	/* frame ids, outermost first */
	int64_t *since;		/* when each began */
	uint32_t depth, cap;
	int64_t last_ns;	/* of its last sample */
	int gil, idle;		/* spans open */
	int named;		/* its name has been given */
};

struct out_stream {
	FILE *f;
	struct profile dict;
	struct ch_thread *th;
	size_t nth, ath;
	int64_t start_ns, period_ns;
	int no_tags;
	int events;		/* written so far: a comma before the next */
	int err;
};

static void event_start(struct out_stream *s)
{
	if (s->events++ && fputc(',', s->f) == EOF)
		s->err = errno ? errno : EIO;
	if (fputc('\n', s->f) == EOF)
		s->err = errno ? errno : EIO;
}

static double us(const struct out_stream *s, int64_t ns)
{
	return ns > s->start_ns ? (double)(ns - s->start_ns) / 1e3 : 0.0;
}

static void put_name(struct out_stream *s, const char *name)
{
	if (out_put_escaped(s->f, name, 0))
		s->err = errno ? errno : EIO;
}

/* Frame id of thread t, from ns to end. */
static void frame_event(struct out_stream *s, const struct ch_thread *t, uint32_t id, int64_t ns,
			int64_t end)
{
	char buf[8192];

	event_start(s);
	fprintf(s->f, "{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
		"\"name\":\"", (int)t->pid, (int)t->tid, us(s, ns), us(s, end) - us(s, ns));
	put_name(s, out_frame_text(&s->dict, id, buf, sizeof(buf)));
	if (fputs("\"}", s->f) == EOF)
		s->err = errno ? errno : EIO;
}

/* An async span of thread t: "b" or "e" of what ("GIL/GVL held", "idle"). */
static void span_event(struct out_stream *s, const struct ch_thread *t, const char *what, char ph,
		       int64_t ns)
{
	event_start(s);
	if (fprintf(s->f, "{\"ph\":\"%c\",\"cat\":\"state\",\"name\":\"%s\",\"id\":\"%d-%s\","
		    "\"pid\":%d,\"tid\":%d,\"ts\":%.3f}", ph, what, (int)t->tid, what, (int)t->pid,
		    (int)t->tid, us(s, ns)) < 0)
		s->err = errno ? errno : EIO;
}

#define GIL_SPAN "GIL/GVL held"
#define IDLE_SPAN "idle"

/* End t's frames from depth keep on, and its spans if all, at ns. */
static void thread_end(struct out_stream *s, struct ch_thread *t, uint32_t keep, int64_t ns)
{
	/* callers first: a caller and callee of the same span then read in order */
	for (uint32_t d = keep; d < t->depth; d++)
		frame_event(s, t, t->stack[d], t->since[d], ns);
	if (t->depth > keep)
		t->depth = keep;
	if (keep)
		return;
	if (t->gil)
		span_event(s, t, GIL_SPAN, 'e', ns);
	if (t->idle)
		span_event(s, t, IDLE_SPAN, 'e', ns);
	t->gil = t->idle = 0;
}

static struct ch_thread *thread_of(struct out_stream *s, const struct stack *st)
{
	struct ch_thread *t;

	for (size_t i = 0; i < s->nth; i++)
		if (s->th[i].pid == st->pid && s->th[i].tid == st->tid)
			return &s->th[i];
	if (s->nth == s->ath) {
		s->ath = s->ath ? s->ath * 2 : 8;
		s->th = xreallocarray(s->th, s->ath, sizeof(*s->th));
	}
	t = &s->th[s->nth++];
	memset(t, 0, sizeof(*t));
	t->pid = st->pid;
	t->tid = st->tid;
	return t;
}

static void thread_name(struct out_stream *s, const struct ch_thread *t, const char *name)
{
	char label[96];

	snprintf(label, sizeof(label), "thread (%d)%s%.60s", (int)t->tid, name ? ": " : "",
		 name ? name : "");
	event_start(s);
	fprintf(s->f, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,"
		"\"args\":{\"name\":\"", (int)t->pid, (int)t->tid);
	put_name(s, label);
	if (fputs("\"}}", s->f) == EOF)
		s->err = errno ? errno : EIO;
}

static int chrome_sample(struct out_stream *s, int64_t when_ns, const char *tags,
			 const struct stack *st)
{
	uint32_t ids[STACK_MAX_DEPTH + 2], n = 0, k = 0;
	struct ch_thread *t = thread_of(s, st);

	if (s->err)
		return -1;
	/* "thread (TID)", and again once it has a name (the last one given counts) */
	if (!t->last_ns || (st->thread_name && !t->named)) {
		thread_name(s, t, st->thread_name);
		t->named = st->thread_name != NULL;
	}
	/* unsampled for a while (idle, not kept): what it did ended */
	if (t->last_ns && when_ns - t->last_ns > 2 * s->period_ns)
		thread_end(s, t, 0, t->last_ns + s->period_ns);
	if (tags && *tags && !s->no_tags)
		ids[n++] = profile_frame(&s->dict, PROFILE_TAGS, tags, "", 0);
	if (st->truncated)
		ids[n++] = profile_frame(&s->dict, PROFILE_MARK, "[truncated]", "", 0);
	for (uint32_t i = st->depth; i-- > 0 && n < ARRAY_SIZE(ids);) {
		const struct stack_frame *f = &st->frame[i];

		ids[n++] = profile_frame(&s->dict, *f->file ? PROFILE_CODE : PROFILE_MARK, f->name,
					 f->file, f->line);
	}
	while (k < n && k < t->depth && t->stack[k] == ids[k])
		k++;
	thread_end(s, t, k, when_ns);
	if (n > t->cap) {
		t->cap = n;
		t->stack = xreallocarray(t->stack, t->cap, sizeof(*t->stack));
		t->since = xreallocarray(t->since, t->cap, sizeof(*t->since));
	}
	for (; t->depth < n; t->depth++) {
		t->stack[t->depth] = ids[t->depth];
		t->since[t->depth] = when_ns;
	}
	if ((st->holds_gil == 1) != t->gil) {
		t->gil = !t->gil;
		span_event(s, t, GIL_SPAN, t->gil ? 'b' : 'e', when_ns);
	}
	if ((st->idle == 1) != t->idle) {
		t->idle = !t->idle;
		span_event(s, t, IDLE_SPAN, t->idle ? 'b' : 'e', when_ns);
	}
	t->last_ns = when_ns;
	return s->err ? -1 : 0;
}

static struct out_stream *chrome_open(FILE *f, const struct out_meta *meta, unsigned int kept)
{
	struct out_stream *s = xcalloc(1, sizeof(*s));

	(void)kept;
	s->f = f;
	profile_init(&s->dict);
	s->start_ns = (int64_t)(meta->start * 1e9);
	s->period_ns = 1000000000ll / (meta->rate ? meta->rate : 100);
	s->no_tags = meta->no_tags;
	if (fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"exporter\":\"pyrospy "
		  PACKAGE_VERSION "\",\"title\":\"", f) == EOF ||
	    out_put_escaped(f, meta->title ? meta->title : "pyrospy", 0) ||
	    fputs("\"},\"traceEvents\":[", f) == EOF) {
		int e = errno;

		profile_release(&s->dict);
		free(s);
		errno = e;
		return NULL;
	}
	return s;
}

static int chrome_close(struct out_stream *s)
{
	int ret;

	for (size_t i = 0; i < s->nth; i++) {
		thread_end(s, &s->th[i], 0, s->th[i].last_ns + s->period_ns);
		free(s->th[i].stack);
		free(s->th[i].since);
	}
	if (!s->err && fputs("\n]}\n", s->f) == EOF)
		s->err = errno ? errno : EIO;
	ret = s->err ? -1 : 0;
	errno = s->err;
	free(s->th);
	profile_release(&s->dict);
	free(s);
	return ret;
}

const struct out_ops out_chrome = {
	.name = "chrome",
	.ext = "trace.json",
	.open = chrome_open,
	.sample = chrome_sample,
	.close = chrome_close,
};
