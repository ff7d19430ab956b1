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

#include "upload/ingest.h"
#include "upload/ingest_format.h"
#include "output/outfile.h"
#include "util/utf8.h"
#include "util/xalloc.h"

/*
 * The transport, whatever the wire format: libcurl, the spool, retries
 * with backoff, auth headers, and keeping secrets out of every message.
 * The encoder of ingest_format_of() says which path and headers a body
 * needs; a request with a query string gets it appended.
 */

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

struct ingest_win {
	unsigned int pending;	/* its requests not done yet */
	int dropped;
};

/* POST_PARTIAL: taken, but the server says it rejected part (not sent again) */
enum post_result { POST_OK, POST_PARTIAL, POST_RETRY, POST_DROP };

struct ingest {
	struct ingest_opts o;	/* app_name, spy_name, tags, runtime owned; the rest unused */
	const struct ingest_format_ops *ops;
	char **tags;
	char *url;		/* ".../ingest", ".../push.v1.PusherService/Push" */
	char *server;		/* as given, for messages */
	char **secrets;		/* redacted from every message */
	FILE *log;
	size_t bound;
	double flush_timeout, timeout, retry_min, retry_max;

	CURL *curl;
	struct curl_slist *headers;
	/*
	 * --cacert, opened once as report's input is (outfile_open_input()):
	 * curl reads it by /proc/self/fd/N, the file checked, never a file
	 * swapped in for it later
	 */
	struct outfile ca;
	char ca_path[32];
	char errbuf[CURL_ERROR_SIZE];
	struct ingest_buf resp;
	size_t resp_seen;	/* bytes of the answer, kept or not */
	uint64_t rejected;	/* by the answer just read (POST_PARTIAL) */
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
	int failing, said_partial;
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
	char **hdrs = ingest_headers_collect(o);
	size_t nsec = 0;
	char *s;

	for (const char *const *h = in->ops->headers; *h; h++) {
		char name[64];

		snprintf(name, sizeof(name), "%.*s", (int)strcspn(*h, ":"), *h);
		if (!has_header(hdrs, name))
			in->headers = lc.slist_append(in->headers, *h);
	}
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
	ingest_headers_free(hdrs);
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct ingest *in = arg;
	struct ingest_buf *b = &in->resp;
	size_t n = size * nmemb;

	in->resp_seen += n;
	/* keep the start: enough for the server's message */
	if (b->len < BODY_KEEP)
		ingest_buf_add(b, data, n < BODY_KEEP - b->len ? n : BODY_KEEP - b->len);
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
	lc.easy_setopt(c, CURLOPT_WRITEDATA, in);
	lc.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	lc.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	lc.easy_setopt(c, CURLOPT_XFERINFODATA, in);
	lc.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(in->timeout * 1000 / 2));
	if (o->insecure) {
		lc.easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		lc.easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (in->ca.f)
		lc.easy_setopt(c, CURLOPT_CAINFO, in->ca_path);
	return c;
}

/*
 * The server's message from an error body, raw, on one line: the "message"
 * of Grafana's {"code":...,"message":...}, or the old server's plain text.
 * Returns 1 when it runs to the end of what was kept of a longer body.
 */
static int server_message(const struct ingest_buf *b, char *out, size_t cap)
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
	char *url = r->query ? xstrfmt("%s?%s", in->url, r->query) : xstrdup(in->url);
	char raw[BODY_KEEP + 1], msg[MESSAGE_MAX + 1];
	double tmo = in->timeout, left;
	long long at = atomic_load(&in->abort_ms);
	CURLcode rc;

	if (at) {
		left = (double)at / 1000 - mono();
		if (left < tmo)
			tmo = left > 0.001 ? left : 0.001;
	}
	in->resp.len = 0;
	in->resp_seen = 0;
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
	if (*status >= 200 && *status < 300) {
		int cut = in->resp_seen > in->resp.len;

		if (!in->ops->partial ||
		    !in->ops->partial(in->resp.s, in->resp.len, cut, &in->rejected, raw, sizeof(raw)))
			return POST_OK;
		message_clean(in, raw, cut, msg, sizeof(msg));
		snprintf(err, errlen, "%s", *msg ? msg : "no reason given");
		return POST_PARTIAL;
	}
	message_clean(in, raw, server_message(&in->resp, raw, sizeof(raw)), msg, sizeof(msg));
	snprintf(err, errlen, "HTTP %ld%s%s", *status, *msg ? ": " : "", msg);
	/* 408: the server timed out reading the body; it may pass */
	if (*status == 408 || *status == 429 || *status >= 500)
		return POST_RETRY;
	return POST_DROP;
}

/* What a request takes of the spool. */
static size_t req_bytes(const struct ingest_req *r)
{
	return r->len + (r->query ? strlen(r->query) : 0);
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
	in->st.spooled -= req_bytes(r);
	r->next = NULL;
	ingest_req_free(r);
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
	} else if (res == POST_PARTIAL) {
		if (!in->said_partial || in->o.verbose) {
			if (in->rejected)
				say(in, "warning: server '%s' rejected %" PRIu64 " of the profiles "
					"of '%s': %s; not sending them again", in->server,
				    in->rejected, r->name, err);
			else
				say(in, "warning: server '%s' took the profile of '%s' with a "
					"warning: %s", in->server, r->name, err);
		}
		in->said_partial = 1;
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
		if (!in->said_status[status] && status == 404 && in->ops->not_found)
			fprintf(in->log, "hint: %s\n", in->ops->not_found);
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
		if (res == POST_PARTIAL)
			in->st.rejected += in->rejected;
		if (res != POST_OK)
			snprintf(in->st.last_error, sizeof(in->st.last_error), "%s", err);
		if (res == POST_RETRY) {
			in->st.failures++;
			if (!in->st.failing_since)
				in->st.failing_since = mono();
			backoff = backoff ? backoff * 2 : in->retry_min;
			if (backoff > in->retry_max)
				backoff = in->retry_max;
			next = mono() + backoff;
			continue;
		}
		backoff = next = 0;
		/* refused is failing too: the server takes none of it */
		if (res == POST_OK || res == POST_PARTIAL)
			in->st.failing_since = 0;
		else if (!in->st.failing_since)
			in->st.failing_since = mono();
		pop(in);
		if (res == POST_OK || res == POST_PARTIAL) {
			in->st.requests++;
			in->st.bytes += r->len;
			in->st.samples += r->samples;
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
	free((char *)in->o.runtime_name);
	free((char *)in->o.runtime_version);
	free((char *)in->o.exe_name);
	strv_free(in->tags);
	strv_free(in->secrets);
	free(in->url);
	free(in->server);
	free(in->resp.s);
	outfile_close(&in->ca);
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
	in->ca.dirfd = -1;
	in->log = o->log ? o->log : stderr;
	in->o.verbose = o->verbose;
	in->o.protocol = o->protocol;
	in->o.format = o->format;
	in->o.runtime_name = o->runtime_name ? xstrdup(o->runtime_name) : NULL;
	in->o.runtime_version = o->runtime_version ? xstrdup(o->runtime_version) : NULL;
	in->o.pid = o->pid;
	in->o.per_process = o->per_process;
	in->o.exe_name = o->exe_name ? xstrdup(o->exe_name) : NULL;
	in->ops = ingest_format_of(o);
	in->o.rate = o->rate;
	in->o.app_name = xstrdup(o->app_name);
	in->o.spy_name = xstrdup(o->spy_name ? o->spy_name : "pyrospy");
	in->tags = strv_dup(o->tags);
	in->o.tags = (const char *const *)in->tags;
	in->server = xstrdup(o->server);
	n = strlen(o->server);
	while (n && o->server[n - 1] == '/')
		n--;
	in->url = xstrfmt("%.*s/%s", (int)n, o->server, in->ops->path);
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
	if (o->cacert && outfile_open_input(&in->ca, o->cacert)) {
		say(in, "error: cannot read CA file '%s': %s", o->cacert,
		    in->ca.bad ? "refused: another user's link, or no regular file" : strerror(errno));
		fprintf(in->log, "hint: give the path of a PEM file of your own\n");
		ingest_free(in);
		return NULL;
	}
	if (in->ca.f)
		snprintf(in->ca_path, sizeof(in->ca_path), "/proc/self/fd/%d", fileno(in->ca.f));
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
	ingest_window_at(in, window, from, until, in->o.rate);
}

void ingest_window_at(struct ingest *in, const struct profile *window, time_t from,
		      time_t until, unsigned int rate)
{
	struct ingest_opts o = in->o;	/* the thread reads only o.verbose of in->o */
	struct ingest_req *list, *r;
	struct ingest_win *w = xcalloc(1, sizeof(*w));
	int say_full = 0;

	o.rate = rate ? rate : in->o.rate;
	list = ingest_encode(&o, window, from, until);

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
		in->st.spooled += req_bytes(r);
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
	out->refused = in->lost_refused;
	out->lost_full = in->lost_full;
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
	else if (st.rejected) {
		say(in, "warning: every window reached '%s', which rejected %" PRIu64 " of their "
		    "profiles", in->server, st.rejected);
		ret = 1;
	}
	ingest_free(in);
	return ret;
}
