/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "upload/ingest_format.h"
#include "util/pb.h"
#include "util/xalloc.h"

/*
 * Grafana Pyroscope's push API: POST /push.v1.PusherService/Push, Connect
 * unary over HTTP/1.1, the body a binary protobuf (api/push/v1/push.proto,
 * api/types/v1/types.proto):
 *
 *   PushRequest      { repeated RawProfileSeries series = 1; }
 *   RawProfileSeries { repeated LabelPair labels = 1; repeated RawSample samples = 2; }
 *   LabelPair        { string name = 1; string value = 2; }
 *   RawSample        { bytes raw_profile = 1; string ID = 2; }
 *
 * One request per window: a series per tag set (per chunk of one, should
 * it be big), labelled __name__=process_cpu, service_name=APP, its tags,
 * and process_runtime_name/_version (the server's own spelling of the
 * process.runtime.* labels the agents send: it makes '.' '_'), its
 * samples one gzipped pprof.  The server gives each profile its ID.
 * Requests are cut at INGEST_MAX_BODY bytes of pprof uncompressed, under
 * the server's rate-limit burst.
 *
 * A span_id tag (span profiles: the helpers' span processors) is the
 * exception: it goes in the pprof as a sample label, the groups that
 * differ by it alone sharing one series.  That is where the agents put it
 * and where Grafana Pyroscope looks for it (its distributor groups the
 * samples without span_id, pkg/model VisitSampleSeries); as a series label
 * every span would be a series of its own.
 */

struct label {
	const char *name, *value;
};

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct label *)a)->name, ((const struct label *)b)->name);
}

static void series(struct pb *b, const struct ingest_opts *o, const char *service,
		   const struct ingest_group *g, const struct pb *gz)
{
	struct label l[INGEST_MAX_TAGS + 4];
	size_t n = 0, msg, m;

	l[n++] = (struct label){ "__name__", "process_cpu" };
	l[n++] = (struct label){ "service_name", service };
	/* the tags' keys never take these names (tags.c reserves them) */
	if (o->runtime_name && *o->runtime_name)
		l[n++] = (struct label){ "process_runtime_name", o->runtime_name };
	if (o->runtime_version && *o->runtime_version)
		l[n++] = (struct label){ "process_runtime_version", o->runtime_version };
	for (size_t i = 0; i < g->ntags && n < INGEST_MAX_TAGS + 4; i++)
		l[n++] = (struct label){ g->tags[i].key, g->tags[i].value };
	qsort(l, n, sizeof(*l), label_cmp);

	msg = pb_open(b, 1);
	for (size_t i = 0; i < n; i++) {
		m = pb_open(b, 1);
		pb_str(b, 1, l[i].name);
		pb_str(b, 2, l[i].value);
		pb_close(b, m);
	}
	m = pb_open(b, 2);
	pb_bytes(b, 1, gz->buf, gz->len);
	pb_close(b, m);
	pb_close(b, msg);
}

#define SPAN_ID "span_id"

/* Whether a and b have the same tags but for span_id (tags are by key). */
static int same_but_span(const struct ingest_group *a, const struct ingest_group *b)
{
	size_t i = 0, j = 0;

	for (;;) {
		if (i < a->ntags && !strcmp(a->tags[i].key, SPAN_ID))
			i++;
		if (j < b->ntags && !strcmp(b->tags[j].key, SPAN_ID))
			j++;
		if (i == a->ntags || j == b->ntags)
			return i == a->ntags && j == b->ntags;
		if (strcmp(a->tags[i].key, b->tags[j].key) ||
		    strcmp(a->tags[i].value, b->tags[j].value))
			return 0;
		i++;
		j++;
	}
}

/* Group g's span_id as a tag set text ("span_id=V"), "" without one; caller frees. */
static char *span_text(const struct ingest_group *g)
{
	for (size_t i = 0; i < g->ntags; i++)
		if (!strcmp(g->tags[i].key, SPAN_ID))
			return xstrfmt("%s=%s", SPAN_ID, g->tags[i].value);
	return xstrdup("");
}

/* g with its span_id left out (the tags shared, not copied), in buf[cap]. */
static struct ingest_group without_span(const struct ingest_group *g, struct ingest_tag *buf,
					size_t cap)
{
	struct ingest_group r = *g;

	r.ntags = 0;
	for (size_t i = 0; i < g->ntags && r.ntags < cap; i++)
		if (strcmp(g->tags[i].key, SPAN_ID))
			buf[r.ntags++] = g->tags[i];
	r.tags = buf;
	return r;
}

struct pending {
	struct pb body;
	size_t raw;
	unsigned int nseries, stacks;
	uint64_t samples;
	const char *first;	/* name of its first series */
};

static struct ingest_req **flush(struct pending *q, struct ingest_req **tail)
{
	struct ingest_req *r;

	if (!q->nseries)
		return tail;
	r = xcalloc(1, sizeof(*r));
	r->name = q->nseries == 1 ? xstrdup(q->first)
				  : xstrfmt("%s and %u more series", q->first, q->nseries - 1);
	r->body = (char *)q->body.buf;
	r->len = q->body.len;
	r->stacks = q->stacks;
	r->samples = q->samples;
	memset(q, 0, sizeof(*q));
	*tail = r;
	return &r->next;
}

static struct ingest_req **push_encode(const struct ingest_opts *o, const struct ingest_group *g,
				       size_t ng, time_t from, time_t until,
				       struct ingest_req **tail)
{
	struct pending q = { 0 };
	char *service = ingest_service_name(o);
	char *done = xcalloc(ng ? ng : 1, 1);

	for (size_t i = 0; i < ng; i++) {
		struct ingest_tag tags[INGEST_MAX_TAGS + 1];
		struct ingest_group base;
		struct ingest_chunk *ck;
		struct profile all;
		size_t n;

		if (done[i])
			continue;
		/* this group and those differing from it by span_id alone */
		profile_init(&all);
		for (size_t j = i; j < ng; j++) {
			char *t;

			if (done[j] || !same_but_span(&g[i], &g[j]))
				continue;
			done[j] = 1;
			t = span_text(&g[j]);
			ingest_profile_under(&all, t, &g[j].prof);
			free(t);
		}
		base = without_span(&g[i], tags, ARRAY_SIZE(tags));
		n = ingest_pprof_chunks(o, &all, from, until, &ck);
		for (size_t k = 0; k < n; k++) {
			if (q.nseries && q.raw + ck[k].raw > INGEST_MAX_BODY)
				tail = flush(&q, tail);
			if (!q.nseries)
				q.first = g[i].name;
			series(&q.body, o, service, &base, &ck[k].gz);
			q.raw += ck[k].raw;
			q.nseries++;
			q.stacks += ck[k].stacks;
			q.samples += ck[k].samples;
			pb_release(&ck[k].gz);
		}
		free(ck);
		profile_release(&all);
	}
	tail = flush(&q, tail);
	free(done);
	free(service);
	return tail;
}

static const char *const push_headers[] = {
	"Content-Type: application/proto",
	"Connect-Protocol-Version: 1",
	NULL,
};

const struct ingest_format_ops ingest_push = {
	.name = "push",
	.path = "push.v1.PusherService/Push",
	.headers = push_headers,
	.not_found = "the server has no push API (the older Pyroscope server?): use "
		     "--protocol ingest",
	.encode = push_encode,
};
