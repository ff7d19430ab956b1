/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_SERVE_H
#define PYROSPY_SERVE_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/perr.h"

struct target;

/*
 * pyrospy serve: sample a process for as long as it runs and answer
 * scrapers over HTTP the way Go programs do (net/http/pprof):
 *
 *   GET /debug/pprof/profile?seconds=N   the next N seconds (1..300,
 *                                        default 30) as a gzipped pprof
 *   GET /debug/pprof/                    an index
 *
 * Every request is untrusted: its head is bounded (http.h), answered 400
 * when malformed and 408 when not received within HTTPD_READ_TIMEOUT s,
 * 421 when its Host names another server (DNS rebinding); at most 16
 * profiles are served at once, others answered 503.  Every connection
 * that comes from anyone who can connect: an idle one (no whole request
 * head yet, or answered and not gone) gives its slot up to a new one,
 * and an address other than loopback holds at most HTTPD_MAX_PER_PEER
 * (httpd.h, the server both serve and agent --listen use).
 */

#define SERVE_DEFAULT_LISTEN "127.0.0.1:6060"
#define SERVE_MAX_REQUESTS 16
#define SERVE_MAX_SECONDS 300
#define SERVE_DEFAULT_SECONDS 30

struct serve_opts {
	const char *listen;	/* "ADDR:PORT", "[V6]:PORT"; NULL: the default */
	const char *const *allow_host;	/* --allow-host: more names of this server */
	unsigned int nallow_host;
	unsigned int rate;	/* Hz */
	double duration;	/* seconds, 0 = until stopped */
	size_t max_memory;	/* --max-memory: the profiles of all requests at once, 0 none */
	int idle, gil, gvl_wait, no_gc, async_tasks, read_only, subprocesses, quiet, verbose;
};

/*
 * Listen, then sample t (NULL with subprocesses when pid is no
 * interpreter itself) until *stop or the target goes away, answering
 * requests from a thread of its own.  Returns the exit status (common.h),
 * having said what went wrong, except when sampling could not start:
 * then *err is set (and EXIT_FAIL returned) for the caller to report
 * with the target.
 */
int serve_run(const struct serve_opts *o, struct target *t, pid_t pid,
	      volatile sig_atomic_t *stop, enum perr *err);

#endif
