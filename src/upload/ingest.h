/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_INGEST_H
#define PYROSPY_INGEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

struct profile;

/*
 * Streaming profiles to a Pyroscope server, over its /ingest API (the
 * one both the current Grafana server and the last pyroscope-io server
 * speak) or Grafana Pyroscope's push API (see
 * /work/shared/research/pyroscope-ingest.md for both wire protocols).
 *
 * The sampler hands over one finished window at a time; ingest_window()
 * turns it into request bodies at once and queues them in a bounded
 * in-memory spool, and a background thread posts them in order:
 *
 *   sampler --ingest_window()--> [spool: req req req ...] --thread--> POST /ingest
 *
 * A request that fails for a reason that may pass (no connection, timeout,
 * 5xx, 429, 408) stays at the head of the spool and is retried with
 * backoff; nothing behind it goes first.  One the server refuses (other
 * 4xx) is dropped after saying why once.  When the spool outgrows its
 * bound the oldest requests go, said once.
 */

/* The server's limits we stay under (per request). */
#define INGEST_MAX_STACKS	16000	/* unique stacks (Grafana rejects more) */
#define INGEST_MAX_DEPTH	1000	/* frames per stack, a marker included */
#define INGEST_MAX_LINE		60000	/* bytes of one stack; servers stop at 64 KiB */
#define INGEST_MAX_FRAME	1024	/* bytes of one frame's text */
#define INGEST_MAX_BODY		(1u << 20)	/* bytes; under the 2 MB rate-limit burst */
#define INGEST_MAX_TAGS		26	/* 30 labels less the 4 the server adds */
#define INGEST_MAX_KEY		128	/* bytes of a tag key */
#define INGEST_MAX_VALUE	1024	/* bytes of a tag value (server: 2048) */
#define INGEST_MAX_APP		1024	/* bytes of the app name */

#define INGEST_MAX_PROFILE	(4u << 20)	/* bytes of a pprof, uncompressed (Grafana) */

#define INGEST_WINDOW		10	/* seconds per window, wall-clock aligned */
#define INGEST_SPOOL_DEFAULT	((size_t)64 << 20)

/* How windows travel (--protocol). */
enum ingest_protocol {
	INGEST_PROTOCOL_INGEST,	/* POST /ingest: both servers */
	INGEST_PROTOCOL_PUSH,	/* POST /push.v1.PusherService/Push: Grafana Pyroscope */
};

/* The body of an /ingest request (--ingest-format). */
enum ingest_format {
	INGEST_FORMAT_FOLDED,
	INGEST_FORMAT_TRIE,
	INGEST_FORMAT_PPROF,	/* gzipped pprof, tags as sample labels */
};

struct ingest_opts {
	const char *server;	/* "https://host:4040/prefix"; /ingest is appended */
	const char *app_name;	/* "shop"; ".cpu" is appended unless present */
	const char *spy_name;	/* "pyrospy-python", "pyrospy-ruby"; NULL: "pyrospy" */
	const char *const *tags;	/* "k=v" from --tag, NULL-terminated; may be NULL */
	const char *auth_token;	/* Authorization: Bearer TOKEN */
	const char *basic_auth;	/* "user:password": Authorization: Basic */
	const char *tenant_id;	/* X-Scope-OrgID */
	const char *const *headers;	/* "K: V", NULL-terminated; set last, may override */
	const char *header_lines;	/* more "K: V" separated by '\n' ($PYROSPY_HEADERS) */
	int insecure;		/* skip TLS verification (warned about) */
	const char *cacert;	/* CA bundle file for TLS */
	enum ingest_protocol protocol;
	enum ingest_format format;	/* with INGEST_PROTOCOL_INGEST */
	const char *runtime_name;	/* "cpython", "ruby": a push label; NULL: none */
	const char *runtime_version;	/* "3.11.2" */
	unsigned int rate;	/* the real sampling rate, Hz (sampleRate) */
	size_t spool_bytes;	/* bound of the spool; 0: INGEST_SPOOL_DEFAULT */
	double flush_timeout;	/* seconds ingest_stop() may take; 0: 5 */
	double timeout;		/* seconds per HTTP request; 0: 10 */
	double retry_min, retry_max;	/* backoff, seconds; 0: 1 and 60 */
	int verbose;		/* say something about every request */
	FILE *log;		/* where warnings go; NULL: stderr */
};

struct ingest_stats {
	uint64_t windows;	/* handed over by ingest_window() */
	uint64_t delivered;	/* windows whose every request the server accepted */
	uint64_t dropped;	/* windows some of which was dropped (refused, spool full) */
	uint64_t requests;	/* requests accepted */
	uint64_t attempts;	/* HTTP attempts, retries included */
	uint64_t failures;	/* attempts that failed and were kept for a retry */
	uint64_t bytes;		/* body bytes accepted */
	size_t spooled;		/* bytes waiting in the spool */
	unsigned int pending;	/* requests waiting in the spool */
	char last_error[256];	/* "" when none; never holds a secret */
};

/*
 * Fill auth_token, basic_auth, tenant_id and header_lines, where NULL, from
 * $PYROSPY_AUTH_TOKEN, $PYROSPY_BASIC_AUTH, $PYROSPY_TENANT_ID and
 * $PYROSPY_HEADERS.  The pointers are the environment's own.
 */
void ingest_env(struct ingest_opts *o);

/*
 * Remove the variables of ingest_env() that hold secrets ($PYROSPY_AUTH_TOKEN,
 * $PYROSPY_BASIC_AUTH, $PYROSPY_HEADERS) from the environment: in a forked
 * child, before it runs a program that must not inherit them (the parent's
 * environment, and what ingest_env() took from it, are untouched).
 */
void ingest_env_unset_secrets(void);

/* The most bytes a secret file of ingest_read_secret() may hold. */
#define INGEST_SECRET_FILE_MAX 4096

/*
 * --auth-token-file, --basic-auth-file: the first line of the regular file
 * at path (its newline, and a carriage return before it, left out), in a
 * malloc'd string the caller frees (after explicit_bzero()).  The file is
 * opened without blocking (a FIFO or a device is refused, never waited
 * for) and may hold at most INGEST_SECRET_FILE_MAX bytes, checked before
 * reading.  *others_read is set when users other than its owner and group
 * may read it.  Returns NULL with a one-line message in err (and errno)
 * on failure.
 */
char *ingest_read_secret(const char *path, int *others_read, char *err, size_t errlen);

/*
 * Check o before anything starts: the URL (http or https, no credentials,
 * no query), the app name, the spy name and the --tag keys and values
 * against the grammar both servers accept and the keys they treat
 * specially, the auth options and the header syntax.  Returns 0, or -1
 * with a one-line message in err ("invalid tag key '1x': ...").
 */
int ingest_check(const struct ingest_opts *o, char *err, size_t errlen);

/*
 * Start the uploader thread for options that passed ingest_check().  o and
 * what it points to are copied.  Returns NULL (with a message in the log)
 * only when libcurl or the thread cannot start.
 */
struct ingest *ingest_start(const struct ingest_opts *o);

/*
 * Encode window (a profile as the sampler builds it: tag sets, then
 * threads, then code) for the window [from, until) and queue it.  Threads
 * merged, one series per tag set: as many requests as the wire format
 * makes of them (ingest_format.h), split further when a tag set has more
 * stacks or bytes than a request may carry.  The caller may clear or
 * reuse window as soon as this returns; it never waits for the network.
 * A window without samples is counted as delivered and sends nothing.
 *
 * from is ingest_align()ed and until = from + INGEST_WINDOW, also for the
 * partial last window before ingest_stop() (the agents' convention; the
 * servers store a window at from).  Not to be called after ingest_stop().
 */
void ingest_window(struct ingest *in, const struct profile *window, time_t from, time_t until);

/*
 * Send what is queued (the caller hands over its partial last window
 * first), waiting at most flush_timeout seconds, then stop the thread and
 * free in.  Returns 0 when every window was delivered, else -1 after
 * saying on the log what was lost.
 */
int ingest_stop(struct ingest *in);

/* A snapshot of the counters, for a status line. */
void ingest_stats(struct ingest *in, struct ingest_stats *out);

/* Start of the window t falls in: t floored to a multiple of INGEST_WINDOW. */
time_t ingest_align(time_t t);

/*
 * What ingest_window() queues, exposed for tests: one request per element,
 * in sending order.
 */
struct ingest_req {
	struct ingest_req *next;
	char *name;		/* "shop.cpu{env=prod}", before percent-encoding */
	char *query;		/* the whole query string, encoded; NULL: none (push) */
	char *body;
	size_t len;
	unsigned int stacks;	/* unique stacks in body (pprof: samples) */
	uint64_t samples;	/* their total count */
	struct ingest_win *win;	/* the window's bookkeeping (uploader only) */
};

/* Encode window as ingest_window() does; the caller frees with ingest_req_free(). */
struct ingest_req *ingest_encode(const struct ingest_opts *o, const struct profile *window,
				 time_t from, time_t until);
void ingest_req_free(struct ingest_req *r);

/*
 * The name for tag set tags ("k=v,k=v" from the profile, untrusted; NULL
 * or "" for none) merged with o->tags: "app.cpu" or "app.cpu{k=v,...}",
 * keys sorted, made safe for the server whatever tags holds.  Caller frees.
 */
char *ingest_name(const struct ingest_opts *o, const char *tags);

/* s percent-encoded for a query string; caller frees. */
char *ingest_urlencode(const char *s);

#endif
