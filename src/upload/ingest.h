/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_INGEST_H
#define PYROSPY_INGEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "upload/ingest_wire.h"

struct profile;

/*
 * Streaming profiles to a Pyroscope server, over its /ingest API (the
 * one both the current Grafana server and the last pyroscope-io server
 * speak) or Grafana Pyroscope's push API (see
 * /work/shared/research/pyroscope-ingest.md for both wire protocols), or
 * as OpenTelemetry profiles (OTLP/HTTP, ingest_otlp.c).
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

struct ingest_stats {
	uint64_t windows;	/* handed over by ingest_window() */
	uint64_t delivered;	/* windows whose every request the server accepted */
	uint64_t dropped;	/* windows some of which was dropped (refused, spool full) */
	uint64_t requests;	/* requests accepted */
	uint64_t attempts;	/* HTTP attempts, retries included */
	uint64_t failures;	/* attempts that failed and were kept for a retry */
	uint64_t bytes;		/* body bytes accepted */
	uint64_t rejected;	/* profiles the server said it rejected of requests it
				   took (OpenTelemetry's partial success) */
	uint64_t samples;	/* samples in the requests accepted */
	uint64_t refused;	/* requests the server refused (dropped) */
	uint64_t lost_full;	/* requests dropped from a full spool */
	double failing_since;	/* CLOCK_MONOTONIC s of the first of the failed attempts
				   since the last that did not fail; 0: none */
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
 * ingest_window() for samples taken at rate Hz, not the options' (0: at
 * theirs): what each request says (sampleRate, a pprof's period, OTLP's
 * period).  The agent's budget changes the rate within a window: the
 * samples of each rate are handed over apart, for the same [from, until)
 * (the servers add requests of a series and window up, each scaled by its
 * own rate).
 */
void ingest_window_at(struct ingest *in, const struct profile *window, time_t from,
		      time_t until, unsigned int rate);

/*
 * Send what is queued (the caller hands over its partial last window
 * first), waiting at most flush_timeout seconds, then stop the thread and
 * free in.  Returns 0 when every window was delivered, else -1 after
 * saying on the log what was lost; 1 when every window was, but the
 * server said it rejected part of them (also said on the log).
 */
int ingest_stop(struct ingest *in);

/* A snapshot of the counters, for a status line. */
void ingest_stats(struct ingest *in, struct ingest_stats *out);

/* Start of the window t falls in: t floored to a multiple of INGEST_WINDOW. */
time_t ingest_align(time_t t);


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


struct ingest_format_ops;
/* The encoder o asks for. */
const struct ingest_format_ops *ingest_format_of(const struct ingest_opts *o);

/* The user's headers (--header, then $PYROSPY_HEADERS), trimmed; NULL-terminated. */
char **ingest_headers_collect(const struct ingest_opts *o);
void ingest_headers_free(char **v);

#endif
