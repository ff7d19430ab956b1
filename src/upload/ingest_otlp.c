/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "upload/ingest_format.h"
#include "profile/profile.h"
#include "util/pb.h"
#include "util/utf8.h"
#include "util/xalloc.h"

/*
 * OpenTelemetry profiles over HTTP (OTLP/HTTP, binary protobuf): POST
 * /v1development/profiles, the body a gzipped ExportProfilesServiceRequest
 * of opentelemetry-proto 1.11.0 (collector/profiles/v1development/
 * profiles_service.proto, profiles/v1development/profiles.proto,
 * common/v1/common.proto, resource/v1/resource.proto):
 *
 *   ExportProfilesServiceRequest { 1 resource_profiles; 2 dictionary }
 *   ResourceProfiles { 1 resource: Resource { 1 attributes: KeyValue };
 *                      2 scope_profiles }
 *   ScopeProfiles    { 1 scope: InstrumentationScope { 1 name; 2 version };
 *                      2 profiles }
 *   Profile          { 1 sample_type; 2 samples; 3 time_unix_nano (fixed64);
 *                      4 duration_nano; 5 period_type; 6 period }
 *   Sample           { 1 stack_index; 2 attribute_indices; 3 link_index;
 *                      4 values }
 *   ProfilesDictionary { 1 mapping_table; 2 location_table; 3 function_table;
 *                        4 link_table; 5 string_table; 6 attribute_table;
 *                        7 stack_table }
 *   Stack    { 1 location_indices, the leaf first }
 *   Location { 3 lines: Line { 1 function_index; 2 line } }
 *   Function { 1 name_strindex; 2 system_name_strindex; 3 filename_strindex }
 *   Link     { 1 trace_id (16 bytes); 2 span_id (8 bytes) }
 *   KeyValueAndUnit { 1 key_strindex; 2 value: AnyValue { 1 string_value } }
 *   KeyValue { 1 key; 2 value: AnyValue { 1 string_value; 3 int_value } }
 *   ValueType { 1 type_strindex; 2 unit_strindex }
 *
 * One request per window: one ResourceProfiles (the process: service.name,
 * process.pid, process.executable.name, process.runtime.*, host.name), one
 * ScopeProfiles (pyrospy, its version), one Profile of samples/count, the
 * period cpu/nanoseconds, a sample per distinct (tag set, stack).  Every
 * table of the dictionary starts with its zero entry, as the proto says
 * they MUST; strings, functions, locations, stacks, attributes and links
 * are each written once.  A group's tags are its samples' attributes
 * (string values), except span_id and trace_id: when both are there and
 * well-formed (16 and 32 hex digits, not all zero) they make the sample's
 * Link instead; a span_id without a valid trace_id stays an attribute, as
 * OTLP has no link without a trace.  The thread is two more attributes,
 * thread.id (an int) and thread.name (when it has one), as OpenTelemetry's
 * semantic conventions name them: tags of those keys are left out.
 *
 * Bounds: as for pprof chunks, a request holds at most INGEST_MAX_STACKS
 * samples and is closed once its dictionary and samples pass
 * INGEST_MAX_BODY bytes (estimated from what they hold); the frames and
 * tags are the groups' (INGEST_MAX_DEPTH, INGEST_MAX_FRAME,
 * INGEST_MAX_TAGS, INGEST_MAX_VALUE), so one sample adds about 2.1 MiB at
 * worst and a body stays well under INGEST_MAX_PROFILE.
 */

#define SPAN_ID		"span_id"
#define TRACE_ID	"trace_id"

/* What one request holds so far. */
struct otlp_req {
	struct profile strs;	/* the string table: ids are indices, "" first */
	struct profile fns;	/* functions: frames (name, file, 0) */
	struct profile locs;	/* locations: frames (name, file, line) */
	uint32_t *loc_fn;	/* per location: its function's index */
	size_t aloc;
	struct profile attrs;	/* attributes: frames (key, value, 0), of kind
				 * PROFILE_CODE for a string value, PROFILE_MARK
				 * for an int (its decimal text) */
	struct profile links;	/* links: frames (trace hex, span hex, 0) */
	struct profile stk;	/* stacks: a trie of location ids */
	uint32_t *stack_of;	/* per node of stk: its stack's index, 0 none */
	size_t astack_of;
	uint32_t *stack_leaf;	/* per stack index (from 1): its leaf node */
	uint32_t nstack;
	size_t astack;
	struct pb samples;	/* the Profile's samples, encoded */
	unsigned int nsamples;
	uint64_t count;
	size_t raw;		/* bytes, estimated, of what it holds */
};

static void req_init(struct otlp_req *q)
{
	memset(q, 0, sizeof(*q));
	profile_init(&q->strs);
	profile_str_id(&q->strs, "");
	profile_init(&q->fns);
	profile_init(&q->locs);
	profile_init(&q->attrs);
	profile_init(&q->links);
	profile_init(&q->stk);
}

static void req_release(struct otlp_req *q)
{
	profile_release(&q->strs);
	profile_release(&q->fns);
	profile_release(&q->locs);
	profile_release(&q->attrs);
	profile_release(&q->links);
	profile_release(&q->stk);
	free(q->loc_fn);
	free(q->stack_of);
	free(q->stack_leaf);
	pb_release(&q->samples);
	memset(q, 0, sizeof(*q));
}

static uint32_t str_index(struct otlp_req *q, const char *s)
{
	return profile_str_id(&q->strs, s);
}

/* The location of frame f of p (1-based), made if new. */
static uint32_t location(struct otlp_req *q, const struct profile *p,
			 const struct profile_frame *f)
{
	const char *name = profile_str(p, f->name), *file = profile_str(p, f->file);
	uint32_t n = q->locs.nframe, id = profile_frame(&q->locs, f->kind, name, file, f->line);

	if (id == n) {
		uint32_t nfn = q->fns.nframe, fn = profile_frame(&q->fns, PROFILE_CODE, name, file, 0);

		if (q->aloc <= id)
			q->loc_fn = xreallocarray(q->loc_fn, q->aloc = 2 * id + 16,
						  sizeof(*q->loc_fn));
		q->loc_fn[id] = fn + 1;
		/* its entry; a new function's, and its strings (at most: they may be shared) */
		q->raw += 10;
		if (fn == nfn)
			q->raw += strlen(name) + strlen(file) + 12;
	}
	return id + 1;
}

/* The stack of locations locs[0..n) (root first): its index, made if new. */
static uint32_t stack(struct otlp_req *q, const uint32_t *locs, uint32_t n)
{
	uint32_t node = 0;

	for (uint32_t i = 0; i < n; i++)
		node = profile_child(&q->stk, node, locs[i]);
	if (q->astack_of < q->stk.nnode) {
		size_t old = q->astack_of;

		q->astack_of = 2 * (size_t)q->stk.nnode;
		q->stack_of = xreallocarray(q->stack_of, q->astack_of, sizeof(*q->stack_of));
		memset(q->stack_of + old, 0, (q->astack_of - old) * sizeof(*q->stack_of));
	}
	if (!q->stack_of[node]) {
		if (q->astack <= q->nstack + 1)
			q->stack_leaf = xreallocarray(q->stack_leaf, q->astack = 2 * q->astack + 16,
						      sizeof(*q->stack_leaf));
		q->stack_of[node] = ++q->nstack;
		q->stack_leaf[q->nstack] = node;
		q->raw += 3 * (size_t)n + 4;
	}
	return q->stack_of[node];
}

/* hex (2 * n digits, lowercase or not) into out[n]; 0, or -1 if malformed or all zero. */
static int unhex(const char *hex, unsigned char *out, size_t n)
{
	unsigned char any = 0;

	if (strlen(hex) != 2 * n)
		return -1;
	for (size_t i = 0; i < 2 * n; i++) {
		int c = (unsigned char)hex[i], v;

		if (c >= '0' && c <= '9')
			v = c - '0';
		else if (c >= 'a' && c <= 'f')
			v = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v = c - 'A' + 10;
		else
			return -1;
		if (i % 2)
			out[i / 2] |= (unsigned char)v;
		else
			out[i / 2] = (unsigned char)(v << 4);
	}
	for (size_t i = 0; i < n; i++)
		any |= out[i];
	return any ? 0 : -1;
}

/* A group's attributes and link in the request's tables. */
struct sample_ctx {
	uint32_t attr[INGEST_MAX_TAGS + 2];
	size_t nattr;
	uint32_t link;
};

static uint32_t attribute(struct otlp_req *q, enum profile_kind kind, const char *key,
			  const char *value)
{
	uint32_t n = q->attrs.nframe, id = profile_frame(&q->attrs, kind, key, value, 0) + 1;

	if (id > n)
		q->raw += strlen(key) + strlen(value) + 16;
	return id;
}

#define THREAD_ID	"thread.id"
#define THREAD_NAME	"thread.name"

/*
 * The thread of a thread frame ("[pid N: ]thread (TID)[ [interpreter
 * I]][: NAME]", profile.c) as attributes appended to c.
 */
static void thread_attrs(struct otlp_req *q, const char *s, struct sample_ctx *c)
{
	char tid[16];
	int pid, t, n = 0, m = 0;

	if (!strncmp(s, "pid ", 4) && (sscanf(s, "pid %d: %n", &pid, &n) != 1 || !n))
		return;
	if (sscanf(s + n, "thread (%d)%n", &t, &m) != 1 || t <= 0 || !m)
		return;
	s += n + m;
	if (!strncmp(s, " [interpreter ", 14) && strchr(s, ']'))
		s = strchr(s, ']') + 1;
	snprintf(tid, sizeof(tid), "%d", t);
	c->attr[c->nattr++] = attribute(q, PROFILE_MARK, THREAD_ID, tid);
	if (!strncmp(s, ": ", 2) && s[2])
		c->attr[c->nattr++] = attribute(q, PROFILE_CODE, THREAD_NAME, s + 2);
}

static void group_ctx(struct otlp_req *q, const struct ingest_group *g, struct sample_ctx *c)
{
	const char *span = NULL, *trace = NULL;
	unsigned char id[16];
	int linked;

	for (size_t i = 0; i < g->ntags; i++) {
		if (!strcmp(g->tags[i].key, SPAN_ID))
			span = g->tags[i].value;
		else if (!strcmp(g->tags[i].key, TRACE_ID))
			trace = g->tags[i].value;
	}
	linked = span && trace && !unhex(span, id, 8) && !unhex(trace, id, 16);
	c->link = 0;
	if (linked) {
		uint32_t n = q->links.nframe;

		c->link = profile_frame(&q->links, PROFILE_CODE, trace, span, 0) + 1;
		if (c->link > n)
			q->raw += 32;
	}
	c->nattr = 0;
	for (size_t i = 0; i < g->ntags && c->nattr < INGEST_MAX_TAGS; i++) {
		const struct ingest_tag *t = &g->tags[i];

		if (linked && (!strcmp(t->key, SPAN_ID) || !strcmp(t->key, TRACE_ID)))
			continue;
		if (!strcmp(t->key, THREAD_ID) || !strcmp(t->key, THREAD_NAME))
			continue;
		c->attr[c->nattr++] = attribute(q, PROFILE_CODE, t->key, t->value);
	}
}

static void sample(struct otlp_req *q, const struct sample_ctx *c, uint32_t st, uint64_t count)
{
	struct pb *b = &q->samples;
	size_t m = pb_open(b, 2), l;

	pb_int(b, 1, st);
	if (c->nattr) {
		l = pb_open(b, 2);
		for (size_t i = 0; i < c->nattr; i++)
			pb_varint(b, c->attr[i]);
		pb_close(b, l);
	}
	pb_int(b, 3, c->link);
	l = pb_open(b, 4);
	pb_varint(b, count);
	pb_close(b, l);
	pb_close(b, m);
	q->nsamples++;
	q->count += count;
	q->raw += 10 + 3 * c->nattr;
}

static void append(struct pb *b, const struct pb *src)
{
	pb_reserve(b, src->len);
	if (src->len)
		memcpy(b->buf + b->len, src->buf, src->len);
	b->len += src->len;
}

/* A resource attribute: KeyValue { key, AnyValue { string_value } }. */
static void kv_str(struct pb *b, const char *key, const char *value)
{
	size_t m = pb_open(b, 1), v;

	pb_str(b, 1, key);
	v = pb_open(b, 2);
	pb_str(b, 1, value);
	pb_close(b, v);
	pb_close(b, m);
}

static void kv_int(struct pb *b, const char *key, int64_t value)
{
	size_t m = pb_open(b, 1), v;

	pb_str(b, 1, key);
	v = pb_open(b, 2);
	pb_int(b, 3, value);
	pb_close(b, v);
	pb_close(b, m);
}

/* s made fit for a string field: valid UTF-8, no control bytes, cut; "" if none. */
static char *clean(const char *s, size_t max)
{
	char *out = xmalloc(max + 4);
	size_t n = s ? utf8_sanitize(out, max + 4, s, strlen(s)) : 0;

	if (n > max) {
		n = max;
		while (n && ((unsigned char)out[n] & 0xc0) == 0x80)
			n--;
	}
	out[n] = '\0';
	return out;
}

static void resource(struct pb *b, const struct ingest_opts *o, const char *service)
{
	char host[256] = "", *h, *exe = NULL;
	size_t m = pb_open(b, 1);

	kv_str(b, "service.name", service);
	if (o->pid > 0)
		kv_int(b, "process.pid", o->pid);
	if (o->exe_name && *o->exe_name) {
		const char *base = strrchr(o->exe_name, '/');

		exe = clean(base ? base + 1 : o->exe_name, INGEST_MAX_VALUE);
		if (*exe)
			kv_str(b, "process.executable.name", exe);
		free(exe);
	}
	if (o->runtime_name && *o->runtime_name)
		kv_str(b, "process.runtime.name", o->runtime_name);
	if (o->runtime_version && *o->runtime_version)
		kv_str(b, "process.runtime.version", o->runtime_version);
	if (!gethostname(host, sizeof(host) - 1)) {
		host[sizeof(host) - 1] = '\0';
		h = clean(host, sizeof(host));
		if (*h)
			kv_str(b, "host.name", h);
		free(h);
	}
	pb_close(b, m);
}

static void value_type(struct otlp_req *q, struct pb *b, uint32_t field, const char *type,
		       const char *unit)
{
	size_t m = pb_open(b, field);

	pb_int(b, 1, str_index(q, type));
	pb_int(b, 2, str_index(q, unit));
	pb_close(b, m);
}

static void dictionary(struct otlp_req *q, struct pb *b)
{
	static const unsigned char zero[16];
	size_t d = pb_open(b, 2), m, l;

	m = pb_open(b, 1);	/* mapping_table[0], the only one */
	pb_close(b, m);
	pb_close(b, pb_open(b, 2));	/* location_table[0] */
	for (uint32_t i = 0; i < q->locs.nframe; i++) {
		const struct profile_frame *f = &q->locs.frame[i];

		m = pb_open(b, 2);
		l = pb_open(b, 3);
		pb_int(b, 1, q->loc_fn[i]);
		pb_int(b, 2, f->line > 0 ? f->line : 0);
		pb_close(b, l);
		pb_close(b, m);
	}
	pb_close(b, pb_open(b, 3));	/* function_table[0] */
	for (uint32_t i = 0; i < q->fns.nframe; i++) {
		const struct profile_frame *f = &q->fns.frame[i];
		uint32_t name = str_index(q, profile_str(&q->fns, f->name));

		m = pb_open(b, 3);
		pb_int(b, 1, name);
		pb_int(b, 2, name);
		pb_int(b, 3, str_index(q, profile_str(&q->fns, f->file)));
		pb_close(b, m);
	}
	m = pb_open(b, 4);	/* link_table[0]: the 16 and 8 zero bytes */
	pb_bytes(b, 1, zero, 16);
	pb_bytes(b, 2, zero, 8);
	pb_close(b, m);
	for (uint32_t i = 0; i < q->links.nframe; i++) {
		const struct profile_frame *f = &q->links.frame[i];
		unsigned char trace[16], span[8];

		/* group_ctx() checked both */
		unhex(profile_str(&q->links, f->name), trace, 16);
		unhex(profile_str(&q->links, f->file), span, 8);
		m = pb_open(b, 4);
		pb_bytes(b, 1, trace, 16);
		pb_bytes(b, 2, span, 8);
		pb_close(b, m);
	}
	pb_close(b, pb_open(b, 6));	/* attribute_table[0] */
	for (uint32_t i = 0; i < q->attrs.nframe; i++) {
		const struct profile_frame *f = &q->attrs.frame[i];

		m = pb_open(b, 6);
		pb_int(b, 1, str_index(q, profile_str(&q->attrs, f->name)));
		l = pb_open(b, 2);
		if (f->kind == PROFILE_MARK)
			pb_int(b, 3, strtoll(profile_str(&q->attrs, f->file), NULL, 10));
		else
			pb_str(b, 1, profile_str(&q->attrs, f->file));
		pb_close(b, l);
		pb_close(b, m);
	}
	pb_close(b, pb_open(b, 7));	/* stack_table[0] */
	for (uint32_t i = 1; i <= q->nstack; i++) {
		m = pb_open(b, 7);
		l = pb_open(b, 1);
		for (uint32_t n = q->stack_leaf[i]; n; n = q->stk.node[n].parent)
			pb_varint(b, q->stk.node[n].frame);
		pb_close(b, l);
		pb_close(b, m);
	}
	/* last: every string above is in it now */
	for (uint32_t i = 0; i < q->strs.nstr; i++)
		pb_str(b, 5, q->strs.str[i]);
	pb_close(b, d);
}

struct otlp_enc {
	const struct ingest_opts *o;
	char *service;
	time_t from, until;
	struct otlp_req q;
	const struct ingest_group *g;	/* the group being added */
	struct sample_ctx ctx;
	int ctx_valid;			/* ctx is of g in q */
	uint32_t *locs;
	struct ingest_req **tail;
};

static void flush(struct otlp_enc *e)
{
	struct otlp_req *q = &e->q;
	struct pb body = { 0 }, gz = { 0 };
	const struct pb *parts[] = { &body };
	struct ingest_req *r;
	size_t rp, sp, s, p;

	if (!q->nsamples)
		return;
	rp = pb_open(&body, 1);
	resource(&body, e->o, e->service);
	sp = pb_open(&body, 2);
	s = pb_open(&body, 1);
	pb_str(&body, 1, "pyrospy");
	pb_str(&body, 2, PACKAGE_VERSION);
	pb_close(&body, s);
	p = pb_open(&body, 2);
	value_type(q, &body, 1, "samples", "count");
	append(&body, &q->samples);
	pb_fixed64(&body, 3, (uint64_t)e->from * 1000000000u);
	pb_int(&body, 4, (int64_t)(e->until - e->from) * 1000000000);
	value_type(q, &body, 5, "cpu", "nanoseconds");
	pb_int(&body, 6, 1000000000 / e->o->rate);
	pb_close(&body, p);
	pb_close(&body, sp);
	pb_close(&body, rp);
	dictionary(q, &body);

	/* zlib fails only without memory, which xmalloc() never returns */
	if (!pb_gzip(parts, 1, &gz)) {
		r = xcalloc(1, sizeof(*r));
		r->name = xstrdup(e->service);
		r->body = (char *)gz.buf;
		r->len = gz.len;
		r->stacks = q->nsamples;
		r->samples = q->count;
		*e->tail = r;
		e->tail = &r->next;
	} else {
		pb_release(&gz);
	}
	pb_release(&body);
	req_release(q);
	req_init(q);
	e->ctx_valid = 0;
}

static int add_stack(void *arg, const struct profile *p, const uint32_t *frames, uint32_t depth,
		     uint64_t count)
{
	struct otlp_enc *e = arg;
	struct otlp_req *q = &e->q;
	struct sample_ctx c;
	uint32_t st, n = 0;

	if (q->nsamples >= INGEST_MAX_STACKS || q->raw >= INGEST_MAX_BODY)
		flush(e);
	if (!e->ctx_valid) {
		group_ctx(q, e->g, &e->ctx);
		e->ctx_valid = 1;
	}
	c = e->ctx;
	if (depth && p->frame[frames[0]].kind == PROFILE_THREAD) {
		thread_attrs(q, profile_str(p, p->frame[frames[0]].name), &c);
		frames++;
		depth--;
	}
	for (; n < depth && n < INGEST_MAX_DEPTH; n++)
		e->locs[n] = location(q, p, &p->frame[frames[n]]);
	st = stack(q, e->locs, n);
	sample(q, &c, st, count);
	return 0;
}

static struct ingest_req **otlp_encode(const struct ingest_opts *o, const struct ingest_group *g,
				       size_t ng, time_t from, time_t until,
				       struct ingest_req **tail)
{
	struct otlp_enc e = {
		.o = o,
		.service = ingest_service_name(o),
		.from = from,
		.until = until,
		.tail = tail,
	};

	req_init(&e.q);
	e.locs = xmalloc(INGEST_MAX_DEPTH * sizeof(*e.locs));
	for (size_t i = 0; i < ng; i++) {
		e.g = &g[i];
		e.ctx_valid = 0;
		profile_stacks(&g[i].prof, add_stack, &e);
	}
	flush(&e);
	req_release(&e.q);
	free(e.locs);
	free(e.service);
	return e.tail;
}

/*
 * The server's answer to a request it took (2xx): an
 * ExportProfilesServiceResponse { 1 partial_success } with
 * ExportProfilesPartialSuccess { 1 rejected_profiles; 2 error_message }.
 * A server that took only part says how many profiles it rejected, and
 * why; one that took all may still warn (a message, none rejected).  OTLP
 * says not to send such a request again.  What we have of the answer may
 * be cut (cut): a message running past it is taken as far as it goes.
 * Anything malformed says nothing: the status said the request was taken.
 */
static int otlp_partial(const char *body, size_t len, int cut, uint64_t *rejected, char *msg,
			size_t cap)
{
	struct pb_cur c = { (const unsigned char *)body, (const unsigned char *)body + len, cut }, ps;
	uint64_t v, n = 0;
	uint32_t field;
	enum pb_wire wire;
	int r, found = 0;
	struct pb_cur sub, text = { NULL, NULL, 0 };

	*rejected = 0;
	msg[0] = '\0';
	while (!(r = pb_next(&c, &field, &wire, &v, &sub)))
		if (field == 1 && wire == PB_LEN) {
			found = 1;
			ps = sub;
		}
	if (!found || r < 0)
		return 0;
	while (!(r = pb_next(&ps, &field, &wire, &v, &sub))) {
		if (field == 1 && wire == PB_VARINT)
			n = v;
		else if (field == 2 && wire == PB_LEN)
			text = sub;
	}
	if (r < 0)
		return 0;
	if (text.p && cap) {
		size_t k = (size_t)(text.end - text.p) < cap - 1 ? (size_t)(text.end - text.p) : cap - 1;

		memcpy(msg, text.p, k);
		msg[k] = '\0';
	}
	*rejected = n;
	return n || msg[0];
}

static const char *const otlp_headers[] = {
	"Content-Type: application/x-protobuf",
	"Content-Encoding: gzip",
	NULL,
};

const struct ingest_format_ops ingest_otlp = {
	.name = "otlp",
	.path = "v1development/profiles",
	.headers = otlp_headers,
	.threads = 1,
	.not_found = "the server has no OpenTelemetry profiles endpoint (/v1development/profiles): "
		     "an OpenTelemetry Collector with the feature gate service.profilesSupport, "
		     "or Grafana Pyroscope 2.0 or later, takes them; else use --protocol push or "
		     "ingest",
	.encode = otlp_encode,
	.partial = otlp_partial,
};
