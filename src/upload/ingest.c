/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "upload/ingest.h"
#include "upload/ingest_format.h"
#include "output/out.h"
#include "output/outfile.h"
#include "profile/profile.h"
#include "stack/stack.h"
#include "stack/tags.h"
#include "util/utf8.h"
#include "util/xalloc.h"

/*
 * What every wire format shares: the name grammar and the tags, the
 * checks of the options, and the split of a window into one group per
 * tag set that the encoders (ingest_folded.c, ingest_pprof.c,
 * ingest_push.c, ingest_otlp.c) turn into requests.
 */

static const struct ingest_format_ops *const formats[] = {
	[INGEST_FORMAT_FOLDED] = &ingest_folded,
	[INGEST_FORMAT_TRIE] = &ingest_trie,
	[INGEST_FORMAT_PPROF] = &ingest_pprof,
};

const struct ingest_format_ops *ingest_format_of(const struct ingest_opts *o)
{
	if (o->protocol == INGEST_PROTOCOL_PUSH)
		return &ingest_push;
	if (o->protocol == INGEST_PROTOCOL_OTLP)
		return &ingest_otlp;
	return (size_t)o->format < ARRAY_SIZE(formats) ? formats[o->format] : &ingest_folded;
}

/* --- the name: app, tags, and what the servers accept in them --- */

static int is_alnum(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The intersection of Grafana's [A-Za-z0-9_./-] and the old server's [A-Za-z0-9_.-]. */
static int is_app_char(int c)
{
	return is_alnum(c) || c == '_' || c == '.' || c == '-';
}

struct tags {
	struct ingest_tag t[INGEST_MAX_TAGS];
	size_t n;
	char *service;		/* o->per_process: the set's service_name, cleaned; NULL: none */
};

/*
 * o->per_process: a tag set's service_name (the agent's label; a program's
 * own key of that name was cleaned to tag_service_name before it reached
 * the profile) made an app name: [A-Za-z0-9_.-], at most 128 bytes.
 */
#define SERVICE_MAX 128
static char *service_clean(const char *v, size_t n)
{
	char *s = xmalloc(SERVICE_MAX + 1);
	size_t k = 0;

	for (size_t i = 0; i < n && k < SERVICE_MAX; i++)
		s[k++] = is_app_char((unsigned char)v[i]) ? v[i] : '_';
	s[k] = '\0';
	if (!k) {
		free(s);
		return NULL;
	}
	return s;
}

static void tags_put(struct tags *ts, const char *k, size_t kn, const char *v, size_t vn)
{
	char val[INGEST_MAX_VALUE + 1];
	size_t len = tags_value_clean(v, vn, val);

	if (!len)
		return;
	for (size_t i = 0; i < ts->n; i++) {
		struct ingest_tag *t = &ts->t[i];

		if (strlen(t->key) != kn || memcmp(t->key, k, kn))
			continue;
		free(t->value);
		t->value = xstrdup(val);
		return;
	}
	if (ts->n == INGEST_MAX_TAGS)
		return;		/* the server's label budget: the rest are left out */
	ts->t[ts->n].key = xstrndup(k, kn);
	ts->t[ts->n].value = xstrdup(val);
	ts->n++;
}

/*
 * A key from the profiled program, made usable: "__name__" arrives as
 * "tag___name__" rather than replacing the app name.
 */
static void tags_put_untrusted(struct tags *ts, const char *k, size_t kn, const char *v,
			       size_t vn)
{
	char key[INGEST_MAX_KEY + 1];

	tags_put(ts, key, tags_key_clean(k, kn, key), v, vn);
}

static void tags_put_one(struct tags *ts, const char *k, size_t kn, const char *v, size_t vn,
			 int per_process)
{
	if (per_process && kn == 12 && !memcmp(k, "service_name", 12)) {
		free(ts->service);
		ts->service = service_clean(v, vn);
		return;
	}
	tags_put_untrusted(ts, k, kn, v, vn);
}

/*
 * Split the profile's "k=v,k=v" into tags.  A value may itself hold ',':
 * a piece without '=' continues the value before it.  Past a few pieces
 * (hostile input) the last value takes the rest.
 */
static void tags_parse(struct tags *ts, const char *s, int per_process)
{
	const char *key = NULL, *eq = NULL, *p = s;
	unsigned int pieces = 0;

	while (*p && pieces++ < 4 * INGEST_MAX_TAGS) {
		const char *end = p + strcspn(p, ","), *e = memchr(p, '=', (size_t)(end - p));

		if (e) {
			/* the value before ends at the ',' before this piece */
			if (key)
				tags_put_one(ts, key, (size_t)(eq - key), eq + 1,
					     (size_t)(p - 1 - (eq + 1)), per_process);
			key = p;
			eq = e;
		}
		p = *end ? end + 1 : end;
	}
	if (key)
		tags_put_one(ts, key, (size_t)(eq - key), eq + 1, strlen(eq + 1), per_process);
}

static int tag_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ingest_tag *)a)->key, ((const struct ingest_tag *)b)->key);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

/* o->tags, then the program's tags (untrusted) over them, sorted by key. */
static void tags_collect(const struct ingest_opts *o, const char *tags, struct tags *ts)
{
	ts->n = 0;
	ts->service = NULL;
	for (const char *const *t = o->tags; t && *t; t++) {
		const char *eq = strchr(*t, '=');

		if (eq)
			tags_put(ts, *t, (size_t)(eq - *t), eq + 1, strlen(eq + 1));
	}
	if (tags)
		tags_parse(ts, tags, o->per_process);
	if (ts->n > 1)
		qsort(ts->t, ts->n, sizeof(ts->t[0]), tag_cmp);
}

static void tags_release(struct tags *ts)
{
	for (size_t i = 0; i < ts->n; i++) {
		free(ts->t[i].key);
		free(ts->t[i].value);
	}
	ts->n = 0;
	FREE_AND_NULL(ts->service);
}

static char *tags_name(const struct ingest_opts *o, const struct tags *ts)
{
	struct ingest_buf b = { 0 };

	const char *app = ts->service ? ts->service : o->app_name;

	/* Grafana takes the profile type from the last dotted part */
	ingest_buf_str(&b, app);
	if (!ends_with(app, ".cpu"))
		ingest_buf_str(&b, ".cpu");
	for (size_t i = 0; i < ts->n; i++) {
		ingest_buf_str(&b, i ? "," : "{");
		ingest_buf_str(&b, ts->t[i].key);
		ingest_buf_str(&b, "=");
		ingest_buf_str(&b, ts->t[i].value);
	}
	if (ts->n)
		ingest_buf_str(&b, "}");
	return b.s;
}

char *ingest_name(const struct ingest_opts *o, const char *tags)
{
	struct tags ts;
	char *name;

	tags_collect(o, tags, &ts);
	name = tags_name(o, &ts);
	tags_release(&ts);
	return name;
}

time_t ingest_align(time_t t)
{
	time_t r = t % INGEST_WINDOW;

	return t - (r < 0 ? r + INGEST_WINDOW : r);
}

/* --- option checks --- */

static int __attribute__((format(printf, 3, 4))) fail(char *err, size_t errlen,
						       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int check_url(const char *url, char *err, size_t errlen)
{
	const char *host, *end;

	if (!url || !*url)
		return fail(err, errlen, "no server URL");
	if (!strncasecmp(url, "http://", 7))
		host = url + 7;
	else if (!strncasecmp(url, "https://", 8))
		host = url + 8;
	else
		return fail(err, errlen, "invalid server URL '%s': the scheme must be http or https",
			    url);
	for (const char *p = url; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return fail(err, errlen, "invalid server URL '%s': white space or a control character",
				    url);
	end = host + strcspn(host, "/");
	if (end == host)
		return fail(err, errlen, "invalid server URL '%s': no host", url);
	if (memchr(host, '@', (size_t)(end - host)))
		return fail(err, errlen,
			    "invalid server URL: credentials in it are not supported (use --basic-auth)");
	if (strpbrk(url, "?#"))
		return fail(err, errlen, "invalid server URL '%s': a query or fragment is not supported",
			    url);
	return 0;
}

static int is_tchar(int c)
{
	return is_alnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Headers from headers and header_lines, each trimmed; NULL-terminated, caller frees. */
char **ingest_headers_collect(const struct ingest_opts *o)
{
	size_t n = 0, a = 8;
	char **v = xmalloc(a * sizeof(*v));
	const char *p = o->header_lines;

	for (const char *const *h = o->headers; h && *h; h++) {
		if (n + 2 > a)
			v = xreallocarray(v, a *= 2, sizeof(*v));
		v[n++] = xstrdup(*h);
	}
	while (p && *p) {
		size_t len = strcspn(p, "\n");
		const char *s = p, *e = p + len;

		p = *e ? e + 1 : e;
		while (s < e && (*s == ' ' || *s == '\t' || *s == '\r'))
			s++;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		if (s == e)
			continue;
		if (n + 2 > a)
			v = xreallocarray(v, a *= 2, sizeof(*v));
		v[n++] = xstrndup(s, (size_t)(e - s));
	}
	v[n] = NULL;
	return v;
}

void ingest_headers_free(char **v)
{
	for (char **h = v; *h; h++)
		free(*h);
	free(v);
}

/*
 * A header's value may be a key, and so may what a malformed one holds
 * ("Authorization Bearer sk-..." has no ':'): a message names a header
 * only by a name that passed, or else by where it was given (which).
 */
static int check_header(const char *h, const char *which, char *err, size_t errlen)
{
	static const char *const body_headers[] = {
		"Content-Type", "Content-Length", "Content-Encoding", "Transfer-Encoding",
	};
	size_t n = strcspn(h, ":");
	const char *v = h + n + 1;

	if (!h[n])
		return fail(err, errlen, "invalid header (%s): expected 'NAME: VALUE'", which);
	if (!n)
		return fail(err, errlen, "invalid header (%s): no name before ':'", which);
	for (size_t i = 0; i < n; i++)
		if (!is_tchar((unsigned char)h[i]))
			return fail(err, errlen, "invalid header name (%s): letters, digits and "
				    "!#$%%&'*+-.^_`|~ only", which);
	for (size_t i = 0; i < ARRAY_SIZE(body_headers); i++)
		if (strlen(body_headers[i]) == n && !strncasecmp(body_headers[i], h, n))
			return fail(err, errlen, "header '%.*s' cannot be set: pyrospy sets the body",
				    (int)n, h);
	while (*v == ' ' || *v == '\t')
		v++;
	if (!*v)
		return fail(err, errlen, "header '%.*s' has no value", (int)n, h);
	for (; *v; v++)
		if (((unsigned char)*v < 0x20 && *v != '\t') || *v == 0x7f)
			return fail(err, errlen, "value of header '%.*s' holds a control character",
				    (int)n, h);
	return 0;
}

static int check_secret(const char *what, const char *s, char *err, size_t errlen)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return fail(err, errlen, "%s holds a control character", what);
	return 0;
}

/* dskit's tenant ID rules: [a-zA-Z0-9!-_.*'()], at most 150 bytes, not "." or "..". */
static int check_tenant(const char *t, char *err, size_t errlen)
{
	size_t n = strlen(t);

	if (!n || n > 150 || !strcmp(t, ".") || !strcmp(t, ".."))
		return fail(err, errlen, "invalid tenant ID '%.160s': 1 to 150 characters, not '.' or '..'",
			    t);
	for (size_t i = 0; i < n; i++)
		if (!is_alnum((unsigned char)t[i]) && !strchr("!-_.*'()", t[i]))
			return fail(err, errlen, "invalid tenant ID '%s': character '%c' is not allowed",
				    t, t[i]);
	return 0;
}

static int check_auth(const struct ingest_opts *o, char *err, size_t errlen)
{
	char **hdrs;
	size_t nopt = 0;
	int ret = 0;

	if (o->auth_token && o->basic_auth)
		return fail(err, errlen, "--auth-token and --basic-auth cannot be used together");
	if (o->auth_token && !*o->auth_token)
		return fail(err, errlen, "the auth token is empty");
	if (o->basic_auth && !strchr(o->basic_auth, ':'))
		return fail(err, errlen, "invalid basic auth: expected USER:PASSWORD");
	if (check_secret("the auth token", o->auth_token, err, errlen) ||
	    check_secret("the basic auth", o->basic_auth, err, errlen))
		return -1;
	if (o->tenant_id && check_tenant(o->tenant_id, err, errlen))
		return -1;
	for (const char *const *h = o->headers; h && *h; h++)
		nopt++;
	hdrs = ingest_headers_collect(o);
	for (size_t i = 0; hdrs[i] && !ret; i++) {
		char which[64];

		if (i < nopt)
			snprintf(which, sizeof(which), "--header number %zu", i + 1);
		else
			snprintf(which, sizeof(which), "header %zu of $PYROSPY_HEADERS", i - nopt + 1);
		ret = check_header(hdrs[i], which, err, errlen);
	}
	ingest_headers_free(hdrs);
	return ret;
}

int ingest_check(const struct ingest_opts *o, char *err, size_t errlen)
{
	const char *app = o->app_name, *spy = o->spy_name;

	if (check_url(o->server, err, errlen))
		return -1;
	if (!app || !*app)
		return fail(err, errlen, "no app name");
	if (strlen(app) > INGEST_MAX_APP)
		return fail(err, errlen, "app name longer than %d bytes", INGEST_MAX_APP);
	for (const char *p = app; *p; p++)
		if (!is_app_char((unsigned char)*p))
			return fail(err, errlen,
				    "invalid app name '%s': only letters, digits, '_', '.' and '-' are allowed",
				    app);
	for (const char *p = spy; p && *p; p++)
		if (!is_app_char((unsigned char)*p) || p - spy >= 64)
			return fail(err, errlen, "invalid spy name '%s'", spy);
	if (spy && !*spy)
		return fail(err, errlen, "empty spy name");
	if (tags_check(o->tags, err, errlen) || check_auth(o, err, errlen))
		return -1;
	if (o->cacert) {
		struct outfile ca;
		enum perr e = outfile_open_input(&ca, o->cacert);
		int en = errno;

		if (e == PERR_UNSAFE)
			fail(err, errlen, "refused to read CA file '%s': %s", ca.bad,
			     S_ISLNK(ca.bad_mode) ? "a link of another user's, in a directory others "
			     "can write" : "it is no regular file");
		else if (e)
			fail(err, errlen, "cannot read CA file '%s': %s", o->cacert, strerror(en));
		outfile_close(&ca);
		if (e)
			return -1;
	}
	if (!o->rate)
		return fail(err, errlen, "the sampling rate must be positive");
	if (o->protocol == INGEST_PROTOCOL_PUSH && o->format != INGEST_FORMAT_FOLDED)
		return fail(err, errlen, "--ingest-format is for --protocol ingest: the push API "
			    "takes pprof only");
	if (o->protocol == INGEST_PROTOCOL_OTLP && o->format != INGEST_FORMAT_FOLDED)
		return fail(err, errlen, "--ingest-format is for --protocol ingest: OTLP has its "
			    "own format");
	if (o->flush_timeout < 0 || o->timeout < 0 || o->retry_min < 0 || o->retry_max < 0)
		return fail(err, errlen, "negative timeout");
	return 0;
}


/* --- a window in groups, one per tag set --- */

/*
 * text cut to max bytes on a character boundary, "..." marking the cut;
 * into out (max + 1 bytes).  Returns its length.
 */
static size_t cut(char *s, size_t n, size_t max)
{
	if (n <= max)
		return n;
	n = max - 3;
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	memcpy(s + n, "...", 3);
	return n + 3;
}

/*
 * A frame as the text formats show it, made safe for the body: valid
 * UTF-8, no control characters, no ';' (it would split the frame: there is
 * no escaping), at most INGEST_MAX_FRAME bytes, "..." marking a cut.
 */
static char *frame_text(const struct profile *p, uint32_t frame)
{
	char raw[INGEST_MAX_FRAME + 2], san[INGEST_MAX_FRAME + 2];
	size_t n;

	out_frame_text(p, frame, raw, sizeof(raw));
	n = utf8_sanitize(san, sizeof(san), raw, strlen(raw));
	for (size_t i = 0; i < n; i++)
		if (san[i] == ';')
			san[i] = ':';
	n = cut(san, n, INGEST_MAX_FRAME);
	return n ? xstrndup(san, n) : xstrdup("?");
}

/* A name or file for pprof: sanitized, at most INGEST_MAX_FRAME bytes. */
static char *frame_string(const char *s)
{
	char san[INGEST_MAX_FRAME + 2];
	size_t n = utf8_sanitize(san, sizeof(san), s, strlen(s));

	return xstrndup(san, cut(san, n, INGEST_MAX_FRAME));
}

struct frame_copy {
	char *text;		/* the text formats' frame */
	char *name, *file;	/* the others' */
};

struct grouper {
	const struct ingest_opts *o;
	int text;
	int threads;		/* keep each stack's thread frame first */
	struct frame_copy *fc;	/* per frame of the window, made when first needed */
	uint32_t *group_of;	/* per frame of the window: group + 1 */
	uint32_t none;		/* group + 1 of stacks with no tag set */
	struct ingest_group *g;
	size_t ng;
	const char **path;
	uint32_t *src, *ids;
};

static uint32_t group_of(struct grouper *e, const char *tags)
{
	struct ingest_group *g;
	struct tags ts;
	char *name;

	tags_collect(e->o, tags, &ts);
	name = tags_name(e->o, &ts);
	/* two raw tag sets may sanitize to one name: one group for both */
	for (size_t i = 0; i < e->ng; i++) {
		if (!strcmp(e->g[i].name, name)) {
			free(name);
			tags_release(&ts);
			return (uint32_t)i;
		}
	}
	e->g = xreallocarray(e->g, e->ng + 1, sizeof(*e->g));
	g = &e->g[e->ng];
	g->name = name;
	g->service = ts.service;	/* moves */
	ts.service = NULL;
	g->ntags = ts.n;
	g->tags = xcalloc(ts.n ? ts.n : 1, sizeof(*g->tags));
	memcpy(g->tags, ts.t, ts.n * sizeof(*g->tags));	/* the strings move */
	profile_init(&g->prof);
	return (uint32_t)e->ng++;
}

/*
 * Keep a stack (path[0..n), root first) within the server's limits: at
 * most INGEST_MAX_DEPTH frames and INGEST_MAX_LINE bytes.  Like the
 * sampler's own cut, the leaf side is kept, the root side becomes a
 * "[truncated]" frame.  Returns the index the stack now starts at.
 */
static uint32_t fit_stack(const char **path, uint32_t n)
{
	size_t len = 0, budget = INGEST_MAX_LINE - sizeof(INGEST_MARK_TRUNCATED);
	uint32_t k = 0;

	for (uint32_t i = 0; i < n; i++)
		len += strlen(path[i]) + 1;
	if (n <= INGEST_MAX_DEPTH && len <= INGEST_MAX_LINE)
		return 0;
	len = 0;
	while (k < n - 1 && k < INGEST_MAX_DEPTH - 1) {
		size_t l = strlen(path[n - 1 - k]) + 1;

		if (len + l > budget)
			break;
		len += l;
		k++;
	}
	path[n - 1 - k] = INGEST_MARK_TRUNCATED;
	return n - 1 - k;
}

/* Text frames: each frame's text, the stack fit to a line. */
static uint32_t text_path(struct grouper *e, struct ingest_group *g, const struct profile *p,
			  uint32_t n)
{
	uint32_t start;

	for (uint32_t i = 0; i < n; i++) {
		uint32_t f = e->src[i];

		if (!e->fc[f].text)
			e->fc[f].text = frame_text(p, f);
		e->path[i] = e->fc[f].text;
	}
	if (!n)
		e->path[n++] = "[unknown]";
	start = fit_stack(e->path, n);
	for (uint32_t i = start; i < n; i++)
		e->ids[i - start] = profile_frame(&g->prof, PROFILE_CODE, e->path[i], "", 0);
	return n - start;
}

/* Frames as sampled, names cut, at most INGEST_MAX_DEPTH of them, from e->ids[k]. */
static uint32_t frame_path(struct grouper *e, struct ingest_group *g, const struct profile *p,
			   uint32_t n, uint32_t k)
{
	uint32_t start = 0;

	if (!n)
		e->ids[k++] = profile_frame(&g->prof, PROFILE_MARK, "[unknown]", "", 0);
	if (n > INGEST_MAX_DEPTH) {
		start = n - (INGEST_MAX_DEPTH - 1);
		e->ids[k++] = profile_frame(&g->prof, PROFILE_MARK, INGEST_MARK_TRUNCATED, "", 0);
	}
	for (uint32_t i = start; i < n; i++) {
		const struct profile_frame *f = &p->frame[e->src[i]];
		struct frame_copy *c = &e->fc[e->src[i]];

		if (!c->name) {
			c->name = frame_string(profile_str(p, f->name));
			c->file = frame_string(profile_str(p, f->file));
		}
		e->ids[k++] = profile_frame(&g->prof, f->kind, c->name, c->file, f->line);
	}
	return k;
}

static int group_stack(void *arg, const struct profile *p, const uint32_t *frames, uint32_t depth,
		       uint64_t count)
{
	struct grouper *e = arg;
	uint32_t i = 0, n = 0, thread = UINT32_MAX, k = 0;
	struct ingest_group *g;

	if (depth && p->frame[frames[0]].kind == PROFILE_TAGS) {
		if (!e->group_of[frames[0]])
			e->group_of[frames[0]] = group_of(e, profile_str(p, p->frame[frames[0]].name)) + 1;
		g = &e->g[e->group_of[frames[0]] - 1];
		i = 1;
	} else {
		if (!e->none)
			e->none = group_of(e, NULL) + 1;
		g = &e->g[e->none - 1];
	}
	for (; i < depth; i++) {
		if (p->frame[frames[i]].kind == PROFILE_THREAD && e->threads && !e->text)
			thread = profile_thread_last(p, frames[i]);
		if (p->frame[frames[i]].kind != PROFILE_TAGS &&
		    p->frame[frames[i]].kind != PROFILE_THREAD)
			e->src[n++] = frames[i];
	}
	if (thread != UINT32_MAX) {
		struct frame_copy *c = &e->fc[thread];

		if (!c->name)
			c->name = frame_string(profile_str(p, p->frame[thread].name));
		e->ids[k++] = profile_frame(&g->prof, PROFILE_THREAD, c->name, "", 0);
	}
	n = e->text ? text_path(e, g, p, n) : frame_path(e, g, p, n, k);
	profile_add_path(&g->prof, e->ids, n, count);
	return 0;
}

static const char *group_tag(const struct ingest_group *g, const char *key)
{
	for (size_t i = 0; i < g->ntags; i++)
		if (!strcmp(g->tags[i].key, key))
			return g->tags[i].value;
	return "";
}

static int same_process(const struct ingest_group *a, const struct ingest_group *b)
{
	return !strcmp(a->service ? a->service : "", b->service ? b->service : "") &&
	       !strcmp(group_tag(a, "pid"), group_tag(b, "pid"));
}

/*
 * o->per_process (the agent): the groups of each process (its service
 * name and pid) encoded apart, as if its own pyrospy had sent them: the
 * service is the app name of its requests (the name of /ingest, push's
 * service_name, otlp's service.name) and the pid otlp's process.pid.
 */
static void encode_per_process(const struct ingest_opts *o, const struct ingest_format_ops *ops,
			       struct ingest_group *g, size_t ng, time_t from, time_t until,
			       struct ingest_req **list)
{
	struct ingest_group *one = xcalloc(ng ? ng : 1, sizeof(*one));
	char *done = xcalloc(ng ? ng : 1, 1);
	struct ingest_req **tail = list;

	while (*tail)
		tail = &(*tail)->next;
	for (size_t i = 0; i < ng; i++) {
		struct ingest_opts c = *o;
		size_t m = 0;
		char *end;
		long pid;

		if (done[i])
			continue;
		for (size_t j = i; j < ng; j++) {
			if (!done[j] && same_process(&g[i], &g[j])) {
				one[m++] = g[j];
				done[j] = 1;
			}
		}
		if (g[i].service)
			c.app_name = g[i].service;
		pid = strtol(group_tag(&g[i], "pid"), &end, 10);
		c.pid = *end || pid <= 0 ? 0 : pid;
		/* the agent's label: otlp's process.executable.name */
		c.exe_name = *group_tag(&g[i], "process_executable_name") ?
			     group_tag(&g[i], "process_executable_name") : NULL;
		tail = ops->encode(&c, one, m, from, until, tail);
	}
	free(one);
	free(done);
}

struct ingest_req *ingest_encode(const struct ingest_opts *o, const struct profile *window,
				 time_t from, time_t until)
{
	const struct ingest_format_ops *ops = ingest_format_of(o);
	struct grouper e = { .o = o, .text = ops->text, .threads = ops->threads };
	struct ingest_req *list = NULL;

	if (!window->total)
		return NULL;
	e.fc = xcalloc(window->nframe + 1, sizeof(*e.fc));
	e.group_of = xcalloc(window->nframe + 1, sizeof(*e.group_of));
	e.path = xmalloc((STACK_MAX_DEPTH + 16) * sizeof(*e.path));
	e.src = xmalloc((STACK_MAX_DEPTH + 16) * sizeof(*e.src));
	e.ids = xmalloc((STACK_MAX_DEPTH + 16) * sizeof(*e.ids));
	profile_stacks(window, group_stack, &e);
	if (o->per_process)
		encode_per_process(o, ops, e.g, e.ng, from, until, &list);
	else
		ops->encode(o, e.g, e.ng, from, until, &list);
	for (size_t i = 0; i < e.ng; i++) {
		free(e.g[i].name);
		free(e.g[i].service);
		for (size_t t = 0; t < e.g[i].ntags; t++) {
			free(e.g[i].tags[t].key);
			free(e.g[i].tags[t].value);
		}
		free(e.g[i].tags);
		profile_release(&e.g[i].prof);
	}
	for (uint32_t f = 0; f < window->nframe; f++) {
		free(e.fc[f].text);
		free(e.fc[f].name);
		free(e.fc[f].file);
	}
	free(e.fc);
	free(e.group_of);
	free(e.path);
	free(e.src);
	free(e.ids);
	free(e.g);
	return list;
}

void ingest_req_free(struct ingest_req *r)
{
	while (r) {
		struct ingest_req *next = r->next;

		free(r->name);
		free(r->query);
		free(r->body);
		free(r);
		r = next;
	}
}

void ingest_env(struct ingest_opts *o)
{
	if (!o->auth_token)
		o->auth_token = getenv("PYROSPY_AUTH_TOKEN");
	if (!o->basic_auth)
		o->basic_auth = getenv("PYROSPY_BASIC_AUTH");
	if (!o->tenant_id)
		o->tenant_id = getenv("PYROSPY_TENANT_ID");
	if (!o->header_lines)
		o->header_lines = getenv("PYROSPY_HEADERS");
}

char *ingest_read_secret(const char *path, int *others_read, char *err, size_t errlen)
{
	char *buf = NULL, *nl;
	struct stat st;
	size_t len = 0;
	int fd, saved;

	*others_read = 0;
	/* O_NONBLOCK: a FIFO put where the file should be is not waited on */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		saved = errno;
		fail(err, errlen, "cannot open '%s': %s", path, strerror(saved));
		errno = saved;
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		saved = errno;
		fail(err, errlen, "cannot read '%s': %s", path, strerror(saved));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		saved = EINVAL;
		fail(err, errlen, "'%s' is not a regular file", path);
		goto out;
	}
	if (st.st_size > INGEST_SECRET_FILE_MAX) {
		saved = EFBIG;
		fail(err, errlen, "'%s' holds more than %d bytes", path, INGEST_SECRET_FILE_MAX);
		goto out;
	}
	*others_read = (st.st_mode & S_IROTH) != 0;
	/* one byte more than allowed: a file that grew since fstat() is seen */
	buf = xmalloc(INGEST_SECRET_FILE_MAX + 2);
	while (len <= INGEST_SECRET_FILE_MAX) {
		ssize_t n = read(fd, buf + len, INGEST_SECRET_FILE_MAX + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			saved = errno;
			fail(err, errlen, "cannot read '%s': %s", path, strerror(saved));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > INGEST_SECRET_FILE_MAX) {
		saved = EFBIG;
		fail(err, errlen, "'%s' holds more than %d bytes", path, INGEST_SECRET_FILE_MAX);
		goto out;
	}
	buf[len] = '\0';
	if (memchr(buf, '\0', len)) {
		saved = EINVAL;
		fail(err, errlen, "'%s' holds a NUL byte", path);
		goto out;
	}
	nl = strchr(buf, '\n');
	if (nl) {
		if (nl > buf && nl[-1] == '\r')
			nl--;
		/* the lines after the first are no one's business */
		explicit_bzero(nl, len - (size_t)(nl - buf));
	}
	close(fd);
	return buf;
out:
	close(fd);
	if (buf)
		explicit_bzero(buf, INGEST_SECRET_FILE_MAX + 2);
	free(buf);
	errno = saved;
	return NULL;
}

void ingest_env_unset_secrets(void)
{
	/* the tenant ID is no secret: a program may want to know it */
	unsetenv("PYROSPY_AUTH_TOKEN");
	unsetenv("PYROSPY_BASIC_AUTH");
	unsetenv("PYROSPY_HEADERS");
}

