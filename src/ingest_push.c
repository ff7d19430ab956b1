/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ingest.h"
#include "ingest_format.h"
#include "pb.h"
#include "xalloc.h"

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

	for (size_t i = 0; i < ng; i++) {
		struct ingest_chunk *ck;
		size_t n = ingest_pprof_chunks(o, &g[i].prof, from, until, &ck);

		for (size_t k = 0; k < n; k++) {
			if (q.nseries && q.raw + ck[k].raw > INGEST_MAX_BODY)
				tail = flush(&q, tail);
			if (!q.nseries)
				q.first = g[i].name;
			series(&q.body, o, service, &g[i], &ck[k].gz);
			q.raw += ck[k].raw;
			q.nseries++;
			q.stacks += ck[k].stacks;
			q.samples += ck[k].samples;
			pb_release(&ck[k].gz);
		}
		free(ck);
	}
	tail = flush(&q, tail);
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
