/* SPDX-License-Identifier: MIT */
#include "config.h"

#define CURL_DISABLE_TYPECHECK	/* its macros would name the functions we load */
#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "ingest.h"
#include "out.h"
#include "profile.h"
#include "stack.h"
#include "tags.h"
#include "utf8.h"
#include "xalloc.h"

#define MARK_TRUNCATED "[truncated]"

/*
 * libcurl is loaded when pyrospy first uploads, not at start: with it come
 * some thirty libraries (OpenSSL, GnuTLS, Kerberos, LDAP, libssh2, ...)
 * whose loading costs every run 4 ms and 5 MB of resident memory, though
 * only --server needs them.  Debian's libcurl4 first, then the GnuTLS build.
 */
static const char *const curl_sonames[] = { "libcurl.so.4", "libcurl-gnutls.so.4" };

static struct {
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *c);
	const char *(*easy_strerror)(CURLcode rc);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
} lc;

/* Load libcurl (once; the library stays).  0, or -1 with why in err. */
static int curl_load(char *err, size_t errlen)
{
	static const char *const names[] = {
		"curl_global_init", "curl_global_cleanup", "curl_easy_init",
		"curl_easy_setopt", "curl_easy_perform", "curl_easy_getinfo",
		"curl_easy_cleanup", "curl_easy_strerror", "curl_slist_append",
		"curl_slist_free_all",
	};
	void *fn[ARRAY_SIZE(names)];
	void *h = NULL;
	const char *why;
	char *old;

	_Static_assert(sizeof(lc) == sizeof(fn), "one pointer per name");
	if (lc.global_init)
		return 0;
	/*
	 * GnuTLS (brought by librtmp, a protocol pyrospy never speaks)
	 * initialises itself when loaded unless told not to: 1.7 MB of
	 * memory for nothing.  What needs it initialises it explicitly.
	 * pyrospy has no other thread yet, and the environment is put back.
	 */
	old = getenv("GNUTLS_NO_IMPLICIT_INIT");
	old = old ? xstrdup(old) : NULL;
	setenv("GNUTLS_NO_IMPLICIT_INIT", "1", 1);
	for (size_t i = 0; i < ARRAY_SIZE(curl_sonames) && !h; i++) {
		h = dlopen(curl_sonames[i], RTLD_NOW | RTLD_LOCAL);
		if (!h && !i) {
			/* the first name's reason is the one to tell */
			why = dlerror();
			snprintf(err, errlen, "%s", why ? why : curl_sonames[0]);
		}
	}
	if (old)
		setenv("GNUTLS_NO_IMPLICIT_INIT", old, 1);
	else
		unsetenv("GNUTLS_NO_IMPLICIT_INIT");
	free(old);
	if (!h)
		return -1;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		fn[i] = dlsym(h, names[i]);
		if (!fn[i]) {
			snprintf(err, errlen, "libcurl has no %s (too old?)", names[i]);
			dlclose(h);
			return -1;
		}
	}
	memcpy(&lc, fn, sizeof(lc));	/* data to function pointers: POSIX allows it */
	return 0;
}

#define BODY_KEEP	4096	/* bytes kept of an error body */
#define MESSAGE_MAX	200	/* bytes of a server's message we repeat */

/* A growing byte buffer. */
struct buf {
	char *s;
	size_t len, cap;
};

static void buf_add(struct buf *b, const void *data, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (b->len + n + 1 > cap)
			cap *= 2;
		b->s = xrealloc(b->s, cap);
		b->cap = cap;
	}
	memcpy(b->s + b->len, data, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void buf_str(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

static void buf_uvarint(struct buf *b, uint64_t v)
{
	unsigned char out[10];
	size_t n = 0;

	/* Go's binary.PutUvarint: 7 bits a byte, low first, high bit = more */
	do {
		out[n] = v & 0x7f;
		v >>= 7;
		if (v)
			out[n] |= 0x80;
		n++;
	} while (v);
	buf_add(b, out, n);
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

struct tag {
	char *key, *value;
};

struct tags {
	struct tag t[INGEST_MAX_TAGS];
	size_t n;
};

static void tags_put(struct tags *ts, const char *k, size_t kn, const char *v, size_t vn)
{
	char val[INGEST_MAX_VALUE + 1];
	size_t len = tags_value_clean(v, vn, val);

	if (!len)
		return;
	for (size_t i = 0; i < ts->n; i++) {
		struct tag *t = &ts->t[i];

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

/*
 * Split the profile's "k=v,k=v" into tags.  A value may itself hold ',':
 * a piece without '=' continues the value before it.  Past a few pieces
 * (hostile input) the last value takes the rest.
 */
static void tags_parse(struct tags *ts, const char *s)
{
	const char *key = NULL, *eq = NULL, *p = s;
	unsigned int pieces = 0;

	while (*p && pieces++ < 4 * INGEST_MAX_TAGS) {
		const char *end = p + strcspn(p, ","), *e = memchr(p, '=', (size_t)(end - p));

		if (e) {
			/* the value before ends at the ',' before this piece */
			if (key)
				tags_put_untrusted(ts, key, (size_t)(eq - key), eq + 1,
						   (size_t)(p - 1 - (eq + 1)));
			key = p;
			eq = e;
		}
		p = *end ? end + 1 : end;
	}
	if (key)
		tags_put_untrusted(ts, key, (size_t)(eq - key), eq + 1, strlen(eq + 1));
}

static int tag_cmp(const void *a, const void *b)
{
	return strcmp(((const struct tag *)a)->key, ((const struct tag *)b)->key);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

char *ingest_name(const struct ingest_opts *o, const char *tags)
{
	struct tags ts = { .n = 0 };
	struct buf b = { 0 };

	for (const char *const *t = o->tags; t && *t; t++) {
		const char *eq = strchr(*t, '=');

		if (eq)
			tags_put(&ts, *t, (size_t)(eq - *t), eq + 1, strlen(eq + 1));
	}
	if (tags)
		tags_parse(&ts, tags);
	if (ts.n > 1)
		qsort(ts.t, ts.n, sizeof(ts.t[0]), tag_cmp);

	/* Grafana takes the profile type from the last dotted part */
	buf_str(&b, o->app_name);
	if (!ends_with(o->app_name, ".cpu"))
		buf_str(&b, ".cpu");
	for (size_t i = 0; i < ts.n; i++) {
		buf_str(&b, i ? "," : "{");
		buf_str(&b, ts.t[i].key);
		buf_str(&b, "=");
		buf_str(&b, ts.t[i].value);
		free(ts.t[i].key);
		free(ts.t[i].value);
	}
	if (ts.n)
		buf_str(&b, "}");
	return b.s;
}

char *ingest_urlencode(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	struct buf b = { 0 };

	buf_add(&b, "", 0);
	/*
	 * Everything but the unreserved set: Go drops a query pair holding a
	 * raw ';' and reads '+' as a space.
	 */
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[3] = { '%', hex[c >> 4], hex[c & 15] };

		if (is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
			buf_add(&b, s, 1);
		else
			buf_add(&b, esc, 3);
	}
	return b.s;
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
static char **headers_collect(const struct ingest_opts *o)
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

static void headers_free(char **v)
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
	hdrs = headers_collect(o);
	for (size_t i = 0; hdrs[i] && !ret; i++) {
		char which[64];

		if (i < nopt)
			snprintf(which, sizeof(which), "--header number %zu", i + 1);
		else
			snprintf(which, sizeof(which), "header %zu of $PYROSPY_HEADERS", i - nopt + 1);
		ret = check_header(hdrs[i], which, err, errlen);
	}
	headers_free(hdrs);
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
	if (o->cacert && access(o->cacert, R_OK))
		return fail(err, errlen, "cannot read CA file '%s': %s", o->cacert, strerror(errno));
	if (!o->rate)
		return fail(err, errlen, "the sampling rate must be positive");
	if (o->flush_timeout < 0 || o->timeout < 0 || o->retry_min < 0 || o->retry_max < 0)
		return fail(err, errlen, "negative timeout");
	return 0;
}

/* --- bodies --- */

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
	if (n > INGEST_MAX_FRAME) {
		n = INGEST_MAX_FRAME - 3;
		while (n && ((unsigned char)san[n] & 0xc0) == 0x80)
			n--;
		memcpy(san + n, "...", 3);
		n += 3;
	}
	return n ? xstrndup(san, n) : xstrdup("?");
}

struct group {
	char *name;
	struct profile prof;	/* stacks of the tag set, threads merged, frames = text */
};

struct encoder {
	const struct ingest_opts *o;
	char **text;		/* per frame of the window, made when first needed */
	uint32_t *group_of;	/* per frame of the window: group + 1 */
	uint32_t none;		/* group + 1 of stacks with no tag set */
	struct group *g;
	size_t ng;
	const char **path;
	uint32_t *ids;
};

static uint32_t enc_group(struct encoder *e, const char *tags)
{
	char *name = ingest_name(e->o, tags);

	/* two raw tag sets may sanitize to one name: one request for both */
	for (size_t i = 0; i < e->ng; i++) {
		if (!strcmp(e->g[i].name, name)) {
			free(name);
			return (uint32_t)i;
		}
	}
	e->g = xreallocarray(e->g, e->ng + 1, sizeof(*e->g));
	e->g[e->ng].name = name;
	profile_init(&e->g[e->ng].prof);
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
	size_t len = 0, budget = INGEST_MAX_LINE - sizeof(MARK_TRUNCATED);
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
	path[n - 1 - k] = MARK_TRUNCATED;
	return n - 1 - k;
}

static int enc_stack(void *arg, const struct profile *p, const uint32_t *frames, uint32_t depth,
		     uint64_t count)
{
	struct encoder *e = arg;
	uint32_t i = 0, n = 0, start;
	struct group *g;

	if (depth && p->frame[frames[0]].kind == PROFILE_TAGS) {
		if (!e->group_of[frames[0]])
			e->group_of[frames[0]] = enc_group(e, profile_str(p, p->frame[frames[0]].name)) + 1;
		g = &e->g[e->group_of[frames[0]] - 1];
		i = 1;
	} else {
		if (!e->none)
			e->none = enc_group(e, NULL) + 1;
		g = &e->g[e->none - 1];
	}
	for (; i < depth; i++) {
		uint32_t f = frames[i];

		if (p->frame[f].kind == PROFILE_TAGS || p->frame[f].kind == PROFILE_THREAD)
			continue;
		if (!e->text[f])
			e->text[f] = frame_text(p, f);
		e->path[n++] = e->text[f];
	}
	if (!n)
		e->path[n++] = "[unknown]";
	start = fit_stack(e->path, n);
	for (i = start; i < n; i++)
		e->ids[i - start] = profile_frame(&g->prof, PROFILE_CODE, e->path[i], "", 0);
	profile_add_path(&g->prof, e->ids, n - start, count);
	return 0;
}

struct key {
	char *s;
	size_t len;
	uint64_t count;
};

struct keys {
	struct key *k;
	size_t n, a;
};

static int key_stack(void *arg, const struct profile *p, const uint32_t *frames, uint32_t depth,
		     uint64_t count)
{
	struct keys *ks = arg;
	struct buf b = { 0 };

	for (uint32_t i = 0; i < depth; i++) {
		if (i)
			buf_add(&b, ";", 1);
		buf_str(&b, profile_str(p, p->frame[frames[i]].name));
	}
	if (ks->n == ks->a)
		ks->k = xreallocarray(ks->k, ks->a = ks->a ? 2 * ks->a : 256, sizeof(*ks->k));
	ks->k[ks->n++] = (struct key){ b.s, b.len, count };
	return 0;
}

static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* "frame;frame;leaf count\n" per stack: the folded ("groups") format. */
static void encode_folded(struct buf *b, const struct key *k, size_t n)
{
	char num[24];

	for (size_t i = 0; i < n; i++) {
		buf_add(b, k[i].s, k[i].len);
		buf_add(b, num, (size_t)snprintf(num, sizeof(num), " %" PRIu64 "\n", k[i].count));
	}
}

/* Length of the common prefix of a and b from byte d on. */
static size_t lcp(const struct key *a, const struct key *b, size_t d)
{
	size_t n = d;

	while (n < a->len && n < b->len && a->s[n] == b->s[n])
		n++;
	return n - d;
}

/* Number of runs of keys k[lo..hi) with the same byte at d (all longer than d). */
static size_t runs(const struct key *k, size_t lo, size_t hi, size_t d)
{
	size_t n = 0;

	for (size_t i = lo; i < hi; i++)
		if (i == lo || k[i].s[d] != k[i - 1].s[d])
			n++;
	return n;
}

struct trie_task {
	size_t lo, hi, d;
};

struct trie_stack {
	struct trie_task *t;
	size_t n, a;
};

/* Push the runs of k[lo..hi) by byte d, last first, so the first is written next. */
static void push_runs(struct trie_stack *st, const struct key *k, size_t lo, size_t hi, size_t d)
{
	for (size_t i = hi; i > lo;) {
		size_t j = i - 1;

		while (j > lo && k[j - 1].s[d] == k[i - 1].s[d])
			j--;
		if (st->n == st->a)
			st->t = xreallocarray(st->t, st->a = st->a ? 2 * st->a : 64, sizeof(*st->t));
		st->t[st->n++] = (struct trie_task){ j, i, d };
		i = j;
	}
}

/*
 * The transport trie: a radix trie over the bytes of the sorted, distinct
 * keys, written depth first, each node as
 *
 *   uvarint(len(label)) label uvarint(value) uvarint(children)
 *
 * from an empty root.  A node's key is the labels on its path joined, so
 * "foo;bar" 2 and "foo;baz" 3 become
 *
 *   "" 0 1 -- "foo;ba" 0 2 -+- "r" 2 0
 *                           +- "z" 3 0
 *
 * A node stands for a run of keys sharing its key as a prefix; for sorted
 * keys that is the common prefix of the run's first and last.  No label is
 * ever empty (the servers' reader mishandles that): every key is non-empty
 * and a child starts at least one byte past its parent.
 */
static void encode_trie(struct buf *b, const struct key *k, size_t n)
{
	struct trie_stack st = { 0 };

	buf_add(b, "\0\0", 2);
	buf_uvarint(b, n ? runs(k, 0, n, 0) : 0);
	push_runs(&st, k, 0, n, 0);
	while (st.n) {
		struct trie_task t = st.t[--st.n];
		size_t e = t.d + lcp(&k[t.lo], &k[t.hi - 1], t.d), first = t.lo;
		uint64_t value = 0;

		if (k[first].len == e)
			value = k[first++].count;
		buf_uvarint(b, e - t.d);
		buf_add(b, k[t.lo].s + t.d, e - t.d);
		buf_uvarint(b, value);
		buf_uvarint(b, runs(k, first, t.hi, e));
		push_runs(&st, k, first, t.hi, e);
	}
	free(st.t);
}

static struct ingest_req *make_req(const struct ingest_opts *o, const char *name,
				   const struct key *k, size_t n, time_t from, time_t until)
{
	struct ingest_req *r = xcalloc(1, sizeof(*r));
	char *ename = ingest_urlencode(name);
	char *espy = ingest_urlencode(o->spy_name ? o->spy_name : "pyrospy");
	struct buf b = { 0 };

	if (o->trie_format)
		encode_trie(&b, k, n);
	else
		encode_folded(&b, k, n);
	r->name = xstrdup(name);
	r->body = b.s;
	r->len = b.len;
	r->stacks = (unsigned int)n;
	for (size_t i = 0; i < n; i++)
		r->samples += k[i].count;
	r->query = xstrfmt("name=%s&from=%lld&until=%lld&format=%s&sampleRate=%u&spyName=%s"
			   "&units=samples&aggregationType=sum",
			   ename, (long long)from, (long long)until, o->trie_format ? "trie" : "folded",
			   o->rate, espy);
	free(ename);
	free(espy);
	return r;
}

/*
 * Requests for one tag set: its stacks sorted, cut into runs of at most
 * INGEST_MAX_STACKS stacks and INGEST_MAX_BODY bytes of folded text (the
 * trie of a run is smaller).  The server adds up requests with the same
 * name and window, so a split loses nothing.
 */
static struct ingest_req **group_reqs(const struct ingest_opts *o, struct group *g, time_t from,
				      time_t until, struct ingest_req **tail)
{
	struct keys ks = { 0 };
	size_t i = 0;

	profile_stacks(&g->prof, key_stack, &ks);
	if (ks.n > 1)
		qsort(ks.k, ks.n, sizeof(*ks.k), key_cmp);
	while (i < ks.n) {
		size_t j = i, bytes = 0;

		while (j < ks.n && j - i < INGEST_MAX_STACKS) {
			size_t line = ks.k[j].len + 22;

			if (j > i && bytes + line > INGEST_MAX_BODY)
				break;
			bytes += line;
			j++;
		}
		*tail = make_req(o, g->name, ks.k + i, j - i, from, until);
		tail = &(*tail)->next;
		i = j;
	}
	for (i = 0; i < ks.n; i++)
		free(ks.k[i].s);
	free(ks.k);
	return tail;
}

struct ingest_req *ingest_encode(const struct ingest_opts *o, const struct profile *window,
				 time_t from, time_t until)
{
	struct encoder e = { .o = o };
	struct ingest_req *list = NULL, **tail = &list;

	if (!window->total)
		return NULL;
	e.text = xcalloc(window->nframe + 1, sizeof(*e.text));
	e.group_of = xcalloc(window->nframe + 1, sizeof(*e.group_of));
	e.path = xmalloc((STACK_MAX_DEPTH + 16) * sizeof(*e.path));
	e.ids = xmalloc((STACK_MAX_DEPTH + 16) * sizeof(*e.ids));
	profile_stacks(window, enc_stack, &e);
	for (size_t i = 0; i < e.ng; i++) {
		tail = group_reqs(o, &e.g[i], from, until, tail);
		free(e.g[i].name);
		profile_release(&e.g[i].prof);
	}
	for (uint32_t f = 0; f < window->nframe; f++)
		free(e.text[f]);
	free(e.text);
	free(e.group_of);
	free(e.path);
	free(e.ids);
	free(e.g);
	return list;
}

static void req_free(struct ingest_req *r)
{
	free(r->name);
	free(r->query);
	free(r->body);
	free(r);
}

void ingest_req_free(struct ingest_req *r)
{
	while (r) {
		struct ingest_req *next = r->next;

		req_free(r);
		r = next;
	}
}

/* --- the uploader --- */

struct ingest_win {
	unsigned int pending;	/* its requests not done yet */
	int dropped;
};

enum post_result { POST_OK, POST_RETRY, POST_DROP };

struct ingest {
	struct ingest_opts o;	/* app_name, spy_name, tags owned; the rest unused */
	char **tags;
	char *url;		/* ".../ingest" */
	char *server;		/* as given, for messages */
	char **secrets;		/* redacted from every message */
	FILE *log;
	size_t bound;
	double flush_timeout, timeout, retry_min, retry_max;

	CURL *curl;
	struct curl_slist *headers;
	char errbuf[CURL_ERROR_SIZE];
	struct buf resp;
	_Atomic long long abort_ms;	/* monotonic ms after which a transfer stops; 0 none */

	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock */
	struct ingest_req *head, **tail, *busy;
	int stopping, said_full;
	double deadline;
	struct ingest_stats st;
	uint64_t lost_refused, lost_full, lost_stop;	/* requests */

	/* the thread's own */
	int failing;
	uint64_t fail_count;
	unsigned char said_status[600];
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Replace every secret in s by "***", and every start of one: a server
 * that echoes a header may cut it, and what it kept is as secret.  A start
 * is REDACT_START bytes or more (the whole of a shorter secret).  Secrets
 * are 4 bytes or more, so s never grows.  Whatever is cut from a message
 * is cut after this, never before.
 */
#define REDACT_START 8

static void redact(const struct ingest *in, char *s)
{
	for (char **sec = in->secrets; sec && *sec; sec++) {
		size_t n = strlen(*sec), least = n < REDACT_START ? n : REDACT_START;

		for (char *p = s; *p; p++) {
			size_t m = 0;

			while (m < n && p[m] == (*sec)[m])
				m++;
			if (m < least)
				continue;
			memcpy(p, "***", 3);
			memmove(p + 3, p + m, strlen(p + m) + 1);
			p += 2;
		}
	}
}

/*
 * s ends where the server's answer was cut (we keep its start only): what
 * ends it may be the first bytes of a secret, too few for redact() to know.
 * Drop any end of s that a secret starts with.
 */
static void redact_end(const struct ingest *in, char *s)
{
	size_t len = strlen(s);

	for (char **sec = in->secrets; sec && *sec; sec++) {
		size_t n = strlen(*sec);

		for (size_t m = len < n ? len : n - 1; m > 0; m--)
			if (!memcmp(s + len - m, *sec, m)) {
				s[len -= m] = '\0';
				break;
			}
	}
}

/* Print: formatted whole, redacted, then printed (never cut first). */
static void __attribute__((format(printf, 2, 3))) say(const struct ingest *in, const char *fmt, ...)
{
	va_list ap;
	char *msg;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	msg = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(msg, (size_t)n + 1, fmt, ap);
	va_end(ap);
	redact(in, msg);
	fprintf(in->log, "pyrospy: %s\n", msg);
	fflush(in->log);
	free(msg);
}

static void add_secret(struct ingest *in, size_t *n, const char *s)
{
	/* shorter ones would blank out innocent text and are no secret anyway */
	if (!s || strlen(s) < 4)
		return;
	in->secrets = xreallocarray(in->secrets, *n + 2, sizeof(*in->secrets));
	in->secrets[(*n)++] = xstrdup(s);
	in->secrets[*n] = NULL;
}

static char *base64(const char *s)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(s), o = 0;
	char *out = xmalloc(4 * (n / 3 + 1) + 1);
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);

		out[o++] = tab[v >> 18 & 63];
		out[o++] = tab[v >> 12 & 63];
		out[o++] = i + 1 < n ? tab[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? tab[v & 63] : '=';
	}
	out[o] = '\0';
	return out;
}

static int has_header(char **hdrs, const char *name)
{
	size_t n = strlen(name);

	for (char **h = hdrs; *h; h++)
		if (!strncasecmp(*h, name, n) && (*h)[n] == ':')
			return 1;
	return 0;
}

/*
 * Our headers, then the user's, which win: one of ours with the same name
 * is left out rather than sent twice.
 */
static void build_headers(struct ingest *in, const struct ingest_opts *o)
{
	char **hdrs = headers_collect(o);
	size_t nsec = 0;
	char *s;

	in->headers = lc.slist_append(NULL, o->trie_format ? "Content-Type: binary/octet-stream+trie"
							      : "Content-Type: binary/octet-stream");
	/* no "Expect: 100-continue" round trip before larger bodies */
	in->headers = lc.slist_append(in->headers, "Expect:");
	add_secret(in, &nsec, o->auth_token);
	add_secret(in, &nsec, o->basic_auth);
	if (o->basic_auth)
		add_secret(in, &nsec, strchr(o->basic_auth, ':') + 1);
	if (o->auth_token && !has_header(hdrs, "Authorization")) {
		s = xstrfmt("Authorization: Bearer %s", o->auth_token);
		in->headers = lc.slist_append(in->headers, s);
		free(s);
	} else if (o->basic_auth && !has_header(hdrs, "Authorization")) {
		char *b64 = base64(o->basic_auth);

		add_secret(in, &nsec, b64);
		s = xstrfmt("Authorization: Basic %s", b64);
		in->headers = lc.slist_append(in->headers, s);
		free(s);
		free(b64);
	}
	if (o->tenant_id && !has_header(hdrs, "X-Scope-OrgID")) {
		s = xstrfmt("X-Scope-OrgID: %s", o->tenant_id);
		in->headers = lc.slist_append(in->headers, s);
		free(s);
	}
	for (char **h = hdrs; *h; h++) {
		const char *v = strchr(*h, ':') + 1;

		while (*v == ' ' || *v == '\t')
			v++;
		/* any header may carry a key: keep its value out of messages */
		add_secret(in, &nsec, v);
		in->headers = lc.slist_append(in->headers, *h);
	}
	headers_free(hdrs);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;
	size_t n = size * nmemb;

	/* keep the start: enough for the server's message */
	if (b->len < BODY_KEEP)
		buf_add(b, data, n < BODY_KEEP - b->len ? n : BODY_KEEP - b->len);
	return n;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct ingest *in = arg;
	long long at = atomic_load(&in->abort_ms);

	return at && mono() * 1000 > (double)at;
}

static CURL *make_curl(struct ingest *in, const struct ingest_opts *o)
{
	CURL *c = lc.easy_init();

	if (!c)
		return NULL;
	lc.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
	lc.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	lc.easy_setopt(c, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	lc.easy_setopt(c, CURLOPT_POST, 1L);
	lc.easy_setopt(c, CURLOPT_HTTPHEADER, in->headers);
	lc.easy_setopt(c, CURLOPT_USERAGENT, "pyrospy/" PACKAGE_VERSION);
	lc.easy_setopt(c, CURLOPT_ERRORBUFFER, in->errbuf);
	lc.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	lc.easy_setopt(c, CURLOPT_WRITEDATA, &in->resp);
	lc.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	lc.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	lc.easy_setopt(c, CURLOPT_XFERINFODATA, in);
	lc.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(in->timeout * 1000 / 2));
	if (o->insecure) {
		lc.easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		lc.easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (o->cacert)
		lc.easy_setopt(c, CURLOPT_CAINFO, o->cacert);
	return c;
}

/*
 * The server's message from an error body, raw, on one line: the "message"
 * of Grafana's {"code":...,"message":...}, or the old server's plain text.
 * Returns 1 when it runs to the end of what was kept of a longer body.
 */
static int server_message(const struct buf *b, char *out, size_t cap)
{
	const char *s = b->s ? b->s : "", *m = strstr(s, "\"message\"");
	size_t n = 0;

	if (m) {
		m += 9;
		m += strspn(m, " \t");
		if (*m == ':')
			m += 1 + strspn(m + 1, " \t");
		if (*m == '"')
			s = m + 1;
		else
			m = NULL;
	}
	for (; *s && n + 1 < cap; s++) {
		if (m && *s == '"')
			break;
		if (m && *s == '\\' && s[1])
			s++;
		if (*s == '\n' && !m)
			break;
		out[n++] = *s;
	}
	out[n] = '\0';
	return !*s && b->len >= BODY_KEEP;
}

/*
 * Make msg (a server's or libcurl's words) fit for a message, into out
 * (cap bytes, more than 3): secrets redacted first (and, if the body was
 * cut, an end that may start one), then sanitized (utf8.h), and only then
 * cut to MESSAGE_MAX bytes.
 */
static void message_clean(const struct ingest *in, char *msg, int cut, char *out, size_t cap)
{
	char san[BODY_KEEP + 1];
	size_t n, max = cap - 1 < MESSAGE_MAX ? cap - 1 : MESSAGE_MAX;

	redact(in, msg);
	if (cut)
		redact_end(in, msg);
	n = utf8_sanitize(san, sizeof(san), msg, strlen(msg));
	if (n > max) {
		n = max - 3;
		while (n && ((unsigned char)san[n] & 0xc0) == 0x80)
			n--;
		memcpy(san + n, "...", 3);
		n += 3;
	}
	memcpy(out, san, n);
	out[n] = '\0';
}

static enum post_result post(struct ingest *in, struct ingest_req *r, char *err, size_t errlen,
			     long *status)
{
	char *url = xstrfmt("%s?%s", in->url, r->query), raw[BODY_KEEP + 1], msg[MESSAGE_MAX + 1];
	double tmo = in->timeout, left;
	long long at = atomic_load(&in->abort_ms);
	CURLcode rc;

	if (at) {
		left = (double)at / 1000 - mono();
		if (left < tmo)
			tmo = left > 0.001 ? left : 0.001;
	}
	in->resp.len = 0;
	in->errbuf[0] = '\0';
	lc.easy_setopt(in->curl, CURLOPT_URL, url);
	lc.easy_setopt(in->curl, CURLOPT_POSTFIELDS, r->body);
	lc.easy_setopt(in->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
	lc.easy_setopt(in->curl, CURLOPT_TIMEOUT_MS, (long)(tmo * 1000));
	rc = lc.easy_perform(in->curl);
	free(url);
	*status = 0;
	if (rc != CURLE_OK) {
		snprintf(raw, sizeof(raw), "%s", in->errbuf[0] ? in->errbuf : lc.easy_strerror(rc));
		message_clean(in, raw, 0, err, errlen);
		return POST_RETRY;
	}
	lc.easy_getinfo(in->curl, CURLINFO_RESPONSE_CODE, status);
	if (*status >= 200 && *status < 300)
		return POST_OK;
	message_clean(in, raw, server_message(&in->resp, raw, sizeof(raw)), msg, sizeof(msg));
	snprintf(err, errlen, "HTTP %ld%s%s", *status, *msg ? ": " : "", msg);
	/* 408: the server timed out reading the body; it may pass */
	if (*status == 408 || *status == 429 || *status >= 500)
		return POST_RETRY;
	return POST_DROP;
}

/* Under lock: one request of w is done, delivered or not. */
static void win_done(struct ingest *in, struct ingest_req *r, int dropped)
{
	struct ingest_win *w = r->win;

	if (dropped && !w->dropped) {
		w->dropped = 1;
		in->st.dropped++;
	}
	if (!--w->pending) {
		if (!w->dropped)
			in->st.delivered++;
		free(w);
	}
	in->st.pending--;
	in->st.spooled -= r->len + strlen(r->query);
	req_free(r);
}

/* Under lock: take the head off the spool. */
static struct ingest_req *pop(struct ingest *in)
{
	struct ingest_req *r = in->head;

	in->head = r->next;
	if (!in->head)
		in->tail = &in->head;
	return r;
}

static void wait_until(struct ingest *in, double t)
{
	struct timespec ts;
	double now = mono();

	if (t <= now)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t -= now;
	ts.tv_sec += (time_t)t;
	ts.tv_nsec += (long)((t - (double)(time_t)t) * 1e9);
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&in->cond, &in->lock, &ts);
}

/* Outside the lock: say what happened, once per kind unless verbose. */
static void report(struct ingest *in, const struct ingest_req *r, enum post_result res,
		   const char *err, long status)
{
	if (res == POST_OK) {
		if (in->failing)
			say(in, "upload to '%s' resumed after %" PRIu64 " failed attempts", in->server,
			    in->fail_count);
		else if (in->o.verbose)
			say(in, "uploaded '%s' (%zu bytes, %u stacks)", r->name, r->len, r->stacks);
		in->failing = 0;
		in->fail_count = 0;
	} else if (res == POST_RETRY) {
		if (!in->failing || in->o.verbose)
			say(in, "warning: cannot upload to '%s': %s; keeping the data and retrying",
			    in->server, err);
		in->failing = 1;
		in->fail_count++;
	} else {
		if (status < 0 || status >= (long)sizeof(in->said_status))
			status = 0;
		if (!in->said_status[status] || in->o.verbose)
			say(in, "warning: server '%s' refused the profile of '%s': %s; dropping it",
			    in->server, r->name, err);
		in->said_status[status] = 1;
	}
}

static void *uploader(void *arg)
{
	struct ingest *in = arg;
	double backoff = 0, next = 0;

	pthread_mutex_lock(&in->lock);
	for (;;) {
		struct ingest_req *r;
		enum post_result res;
		char err[256];
		long status;

		if (in->stopping && (!in->head || mono() >= in->deadline))
			break;
		if (!in->head) {
			pthread_cond_wait(&in->cond, &in->lock);
			continue;
		}
		if (mono() < next) {
			wait_until(in, in->stopping && in->deadline < next ? in->deadline : next);
			continue;
		}
		r = in->busy = in->head;
		in->st.attempts++;
		pthread_mutex_unlock(&in->lock);

		res = post(in, r, err, sizeof(err), &status);
		if (res != POST_OK)
			redact(in, err);
		report(in, r, res, err, status);

		pthread_mutex_lock(&in->lock);
		in->busy = NULL;
		if (res != POST_OK)
			snprintf(in->st.last_error, sizeof(in->st.last_error), "%s", err);
		if (res == POST_RETRY) {
			in->st.failures++;
			backoff = backoff ? backoff * 2 : in->retry_min;
			if (backoff > in->retry_max)
				backoff = in->retry_max;
			next = mono() + backoff;
			continue;
		}
		backoff = next = 0;
		pop(in);
		if (res == POST_OK) {
			in->st.requests++;
			in->st.bytes += r->len;
		} else {
			in->lost_refused++;
		}
		win_done(in, r, res == POST_DROP);
	}
	pthread_mutex_unlock(&in->lock);
	return NULL;
}

static char **strv_dup(const char *const *v)
{
	size_t n = 0;
	char **d;

	while (v && v[n])
		n++;
	d = xcalloc(n + 1, sizeof(*d));
	for (size_t i = 0; i < n; i++)
		d[i] = xstrdup(v[i]);
	return d;
}

static void strv_free(char **v)
{
	for (char **p = v; p && *p; p++)
		free(*p);
	free(v);
}

static void ingest_free(struct ingest *in)
{
	ingest_req_free(in->head);
	if (in->curl)
		lc.easy_cleanup(in->curl);
	lc.slist_free_all(in->headers);
	free((char *)in->o.app_name);
	free((char *)in->o.spy_name);
	strv_free(in->tags);
	strv_free(in->secrets);
	free(in->url);
	free(in->server);
	free(in->resp.s);
	pthread_mutex_destroy(&in->lock);
	pthread_cond_destroy(&in->cond);
	free(in);
	lc.global_cleanup();
}

struct ingest *ingest_start(const struct ingest_opts *o)
{
	struct ingest *in;
	pthread_condattr_t ca;
	char why[256];
	size_t n;
	int err;


	if (curl_load(why, sizeof(why))) {
		fprintf(o->log ? o->log : stderr,
			"pyrospy: error: cannot load libcurl, which uploads need: %s\n"
			"hint: install it (Debian, Ubuntu: apt-get install libcurl4)\n", why);
		return NULL;
	}
	if (lc.global_init(CURL_GLOBAL_DEFAULT)) {
		fprintf(o->log ? o->log : stderr, "pyrospy: error: cannot initialise libcurl\n"
			"hint: reinstall it (apt-get install --reinstall libcurl4)\n");
		return NULL;
	}
	in = xcalloc(1, sizeof(*in));
	in->log = o->log ? o->log : stderr;
	in->o.verbose = o->verbose;
	in->o.trie_format = o->trie_format;
	in->o.rate = o->rate;
	in->o.app_name = xstrdup(o->app_name);
	in->o.spy_name = xstrdup(o->spy_name ? o->spy_name : "pyrospy");
	in->tags = strv_dup(o->tags);
	in->o.tags = (const char *const *)in->tags;
	in->server = xstrdup(o->server);
	n = strlen(o->server);
	while (n && o->server[n - 1] == '/')
		n--;
	in->url = xstrfmt("%.*s/ingest", (int)n, o->server);
	in->bound = o->spool_bytes ? o->spool_bytes : INGEST_SPOOL_DEFAULT;
	in->flush_timeout = o->flush_timeout > 0 ? o->flush_timeout : 5;
	in->timeout = o->timeout > 0 ? o->timeout : 10;
	in->retry_min = o->retry_min > 0 ? o->retry_min : 1;
	in->retry_max = o->retry_max > 0 ? o->retry_max : 60;
	in->tail = &in->head;
	pthread_mutex_init(&in->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&in->cond, &ca);
	pthread_condattr_destroy(&ca);

	build_headers(in, o);
	in->curl = make_curl(in, o);
	if (!in->curl) {
		say(in, "error: cannot initialise libcurl");
		fprintf(in->log, "hint: reinstall it (apt-get install --reinstall libcurl4)\n");
		ingest_free(in);
		return NULL;
	}
	if (o->insecure)
		say(in, "warning: --insecure: the TLS certificate of '%s' is not verified", in->server);
	err = pthread_create(&in->thread, NULL, uploader, in);
	if (err) {
		say(in, "error: cannot start the upload thread: %s", strerror(err));
		fprintf(in->log, "hint: the system is out of threads or memory (ulimit -u, ulimit -v)\n");
		ingest_free(in);
		return NULL;
	}
	return in;
}

/* Under lock: drop the oldest requests not being sent until the spool fits. */
static int spool_trim(struct ingest *in)
{
	struct ingest_req **pp = &in->head;
	int trimmed = 0;

	while (in->st.spooled > in->bound && *pp) {
		struct ingest_req *r = *pp;

		if (r == in->busy) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		if (in->tail == &r->next)
			in->tail = pp;
		in->lost_full++;
		win_done(in, r, 1);
		trimmed = 1;
	}
	return trimmed;
}

void ingest_window(struct ingest *in, const struct profile *window, time_t from, time_t until)
{
	struct ingest_req *list = ingest_encode(&in->o, window, from, until), *r;
	struct ingest_win *w = xcalloc(1, sizeof(*w));
	int say_full = 0;

	for (r = list; r; r = r->next) {
		r->win = w;
		w->pending++;
	}
	pthread_mutex_lock(&in->lock);
	in->st.windows++;
	if (!list) {
		in->st.delivered++;
		free(w);
		pthread_mutex_unlock(&in->lock);
		return;
	}
	*in->tail = list;
	for (r = list; r; r = r->next) {
		in->st.pending++;
		in->st.spooled += r->len + strlen(r->query);
		in->tail = &r->next;
	}
	if (spool_trim(in) && !in->said_full)
		say_full = in->said_full = 1;
	pthread_cond_signal(&in->cond);
	pthread_mutex_unlock(&in->lock);
	if (say_full)
		say(in, "warning: upload spool full (%zu %s) as '%s' does not keep up: "
		    "dropping the oldest windows",
		    in->bound >= (1u << 20) ? in->bound >> 20 : in->bound,
		    in->bound >= (1u << 20) ? "MiB" : "bytes", in->server);
}

void ingest_stats(struct ingest *in, struct ingest_stats *out)
{
	pthread_mutex_lock(&in->lock);
	*out = in->st;
	pthread_mutex_unlock(&in->lock);
}

int ingest_stop(struct ingest *in)
{
	struct ingest_stats st;
	int ret;

	pthread_mutex_lock(&in->lock);
	in->stopping = 1;
	in->deadline = mono() + in->flush_timeout;
	atomic_store(&in->abort_ms, (long long)(in->deadline * 1000));
	pthread_cond_signal(&in->cond);
	pthread_mutex_unlock(&in->lock);
	pthread_join(in->thread, NULL);

	/* what the flush could not send is lost now */
	while (in->head) {
		struct ingest_req *r = pop(in);

		in->lost_stop++;
		win_done(in, r, 1);
	}
	st = in->st;
	ret = st.dropped ? -1 : 0;
	if (ret)
		say(in, "warning: %" PRIu64 " of %" PRIu64 " profile windows not delivered to '%s' "
		    "(requests: %" PRIu64 " refused, %" PRIu64 " dropped from a full spool, %" PRIu64
		    " unsent after %.1f s)%s%s",
		    st.dropped, st.windows, in->server, in->lost_refused, in->lost_full, in->lost_stop,
		    in->flush_timeout, *st.last_error ? "; last error: " : "", st.last_error);
	ingest_free(in);
	return ret;
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

void ingest_env_unset_secrets(void)
{
	/* the tenant ID is no secret: a program may want to know it */
	unsetenv("PYROSPY_AUTH_TOKEN");
	unsetenv("PYROSPY_BASIC_AUTH");
	unsetenv("PYROSPY_HEADERS");
}
