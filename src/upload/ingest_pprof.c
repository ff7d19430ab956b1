/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "upload/ingest_format.h"
#include "util/pb.h"
#include "profile/pprof.h"
#include "profile/profile.h"
#include "util/xalloc.h"

/*
 * pprof bodies: the chunks that both the /ingest pprof format and the
 * push API send, and the /ingest encoder (format=pprof).
 *
 * A chunk holds at most INGEST_MAX_STACKS samples (Grafana refuses more)
 * and is closed once it passes INGEST_MAX_BODY bytes uncompressed.  A
 * stack adds INGEST_MAX_DEPTH frames at most, each with strings of
 * INGEST_MAX_FRAME bytes at most, so about 2.1 MiB: a chunk stays under
 * the INGEST_MAX_PROFILE (4 MiB) that Grafana takes.
 */

struct chunker {
	time_t from, until;
	uint64_t period;
	struct pprof *w;
	uint64_t samples;
	struct ingest_chunk *c;
	size_t n, a;
};

static void chunk_close(struct chunker *ch)
{
	struct ingest_chunk *c;

	if (!ch->w)
		return;
	if (ch->n == ch->a)
		ch->c = xreallocarray(ch->c, ch->a = ch->a ? 2 * ch->a : 4, sizeof(*ch->c));
	c = &ch->c[ch->n];
	memset(c, 0, sizeof(*c));
	c->stacks = pprof_samples(ch->w);
	c->samples = ch->samples;
	/* zlib fails only without memory, which xmalloc() never returns */
	if (!pprof_finish(ch->w, (int64_t)ch->from * 1000000000,
			  (int64_t)(ch->until - ch->from) * 1000000000, &c->gz, &c->raw))
		ch->n++;
	else
		pb_release(&c->gz);
	pprof_free(ch->w);
	ch->w = NULL;
	ch->samples = 0;
}

static int chunk_stack(void *arg, const struct profile *p, const uint32_t *frames, uint32_t depth,
		       uint64_t count)
{
	struct chunker *ch = arg;

	if (ch->w && (pprof_samples(ch->w) >= INGEST_MAX_STACKS ||
		      pprof_size(ch->w) >= INGEST_MAX_BODY))
		chunk_close(ch);
	if (!ch->w)
		ch->w = pprof_new(p, ch->period);
	pprof_add(ch->w, p, frames, depth, count);
	ch->samples += count;
	return 0;
}

size_t ingest_pprof_chunks(const struct ingest_opts *o, const struct profile *p, time_t from,
			   time_t until, struct ingest_chunk **out)
{
	struct chunker ch = {
		.from = from,
		.until = until,
		.period = 1000000000u / o->rate,
	};

	profile_stacks(p, chunk_stack, &ch);
	chunk_close(&ch);
	*out = ch.c;
	return ch.n;
}

/* "k=v,k=v": the group's tags as the pprof builder makes labels of them. */
static char *tags_text(const struct ingest_group *g)
{
	struct ingest_buf b = { 0 };

	ingest_buf_add(&b, "", 0);
	for (size_t i = 0; i < g->ntags; i++) {
		if (i)
			ingest_buf_str(&b, ",");
		ingest_buf_str(&b, g->tags[i].key);
		ingest_buf_str(&b, "=");
		ingest_buf_str(&b, g->tags[i].value);
	}
	return b.s;
}

struct copier {
	struct profile *dst;
	uint32_t tags;		/* the tag set frame in dst */
	uint32_t *ids;
};

static int copy_stack(void *arg, const struct profile *p, const uint32_t *frames, uint32_t depth,
		      uint64_t count)
{
	struct copier *c = arg;

	c->ids[0] = c->tags;
	for (uint32_t i = 0; i < depth; i++) {
		const struct profile_frame *f = &p->frame[frames[i]];

		c->ids[i + 1] = profile_frame(c->dst, f->kind, profile_str(p, f->name),
					      profile_str(p, f->file), f->line);
	}
	profile_add_path(c->dst, c->ids, depth + 1, count);
	return 0;
}

void ingest_profile_under(struct profile *dst, const char *tags, const struct profile *src)
{
	struct copier c = { .dst = dst };

	c.ids = xmalloc((INGEST_MAX_DEPTH + 2) * sizeof(*c.ids));
	c.tags = profile_frame(dst, PROFILE_TAGS, tags, "", 0);
	profile_stacks(src, copy_stack, &c);
	free(c.ids);
}

/*
 * One request per window (more if it is big): the groups under their tag
 * sets in one profile, each tag a sample label, which Grafana turns into
 * series labels.  The name is the app alone, as the agents send it.
 */
static struct ingest_req **pprof_encode(const struct ingest_opts *o, const struct ingest_group *g,
					size_t ng, time_t from, time_t until,
					struct ingest_req **tail)
{
	struct profile all;
	struct ingest_chunk *ck;
	char *app = ingest_service_name(o), *eapp = ingest_urlencode(app);
	char *espy = ingest_urlencode(o->spy_name ? o->spy_name : "pyrospy");
	size_t n;

	profile_init(&all);
	for (size_t i = 0; i < ng; i++) {
		char *t = tags_text(&g[i]);

		ingest_profile_under(&all, t, &g[i].prof);
		free(t);
	}
	n = ingest_pprof_chunks(o, &all, from, until, &ck);
	for (size_t i = 0; i < n; i++) {
		struct ingest_req *r = xcalloc(1, sizeof(*r));

		r->name = xstrdup(app);
		r->body = (char *)ck[i].gz.buf;
		r->len = ck[i].gz.len;
		r->stacks = ck[i].stacks;
		r->samples = ck[i].samples;
		r->query = xstrfmt("name=%s&from=%lld&until=%lld&format=pprof&sampleRate=%u&spyName=%s",
				   eapp, (long long)from, (long long)until, o->rate, espy);
		*tail = r;
		tail = &r->next;
	}
	free(ck);
	profile_release(&all);
	free(app);
	free(eapp);
	free(espy);
	return tail;
}

static const char *const pprof_headers[] = { "Content-Type: binary/octet-stream", NULL };

const struct ingest_format_ops ingest_pprof = {
	.name = "pprof",
	.path = "ingest",
	.headers = pprof_headers,
	.encode = pprof_encode,
};
