/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_INGEST_WIRE_H
#define PYROSPY_INGEST_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * What the uploader (ingest.c, ingest_upload.c) and the wire formats
 * (ingest_folded.c, ingest_pprof.c, ingest_push.c, ingest_otlp.c) share:
 * the options of an upload and the servers' limits, a request, a growing
 * buffer, and the bits of text every format writes the same way.
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
	INGEST_PROTOCOL_OTLP,	/* POST /v1development/profiles: OpenTelemetry profiles */
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
	long pid;		/* the target's (otlp: process.pid); 0: none */
	const char *exe_name;	/* otlp: process.executable.name, raw; NULL: none */
	unsigned int rate;	/* the real sampling rate, Hz (sampleRate) */
	/*
	 * The agent: a tag set's service_name (the agent's label, never a
	 * program's: theirs are cleaned to tag_service_name) is its series'
	 * app name, and each process's series (service_name and pid) go in
	 * requests of their own, otlp's process.pid that pid.
	 */
	int per_process;
	size_t spool_bytes;	/* bound of the spool; 0: INGEST_SPOOL_DEFAULT */
	double flush_timeout;	/* seconds ingest_stop() may take; 0: 5 */
	double timeout;		/* seconds per HTTP request; 0: 10 */
	double retry_min, retry_max;	/* backoff, seconds; 0: 1 and 60 */
	int verbose;		/* say something about every request */
	FILE *log;		/* where warnings go; NULL: stderr */
};

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

/* A growing, NUL-terminated byte buffer. */
struct ingest_buf {
	char *s;
	size_t len, cap;
};

void ingest_buf_add(struct ingest_buf *b, const void *data, size_t n);
void ingest_buf_str(struct ingest_buf *b, const char *s);

/* o->app_name without a ".cpu" suffix (the service name); caller frees. */
char *ingest_service_name(const struct ingest_opts *o);

/* s percent-encoded for a query string; caller frees. */
char *ingest_urlencode(const char *s);

#endif
