/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_HTTPD_H
#define PYROSPY_HTTPD_H

#include <stddef.h>
#include <stdint.h>

#include "util/http.h"

/*
 * The HTTP server of pyrospy serve and agent --listen: a listener and a
 * thread of its own answering GET requests, what to answer being a
 * handler's.  Every request is untrusted: its head is bounded (http.h),
 * answered 400 when malformed and 408 when not received within
 * HTTPD_READ_TIMEOUT s, 421 when its Host names another server (DNS
 * rebinding), 405 when not GET.  An idle connection (no whole request
 * head yet, or answered and not gone) gives its slot up to a new one,
 * and an address other than loopback holds at most HTTPD_MAX_PER_PEER.
 *
 * The handler runs on the server's thread: whatever it shares with
 * another thread it reads under its own lock, and it must not block.
 */

#define HTTPD_SLOTS 32		/* connections at once */
#define HTTPD_READ_TIMEOUT 5	/* seconds */
#define HTTPD_MAX_PER_PEER 8	/* connections of one address, loopback aside */
#define HTTPD_MAX_ALLOW_HOSTS 16
#define HTTPD_MAX_HOST_NAME 253

struct httpd;

struct httpd_handler {
	/*
	 * A whole request head of slot i (0..HTTPD_SLOTS), its Host and method
	 * checked: answer it with httpd_reply() or httpd_text(), or hold it
	 * with httpd_hold() to answer later.  now: monotonic ns.
	 */
	void (*request)(void *arg, struct httpd *h, size_t i, const struct http_req *req,
			int64_t now);
	/* optional: a held request's time came, or the server stops: answer it */
	void (*due)(void *arg, struct httpd *h, size_t i, int64_t now);
	/* optional: a held request's connection closed unanswered: let go of what it holds */
	void (*drop)(void *arg, size_t i);
	void *arg;
	const char *allow_hint;	/* said with a 421: where the names allowed are set */
};

struct httpd_opts {
	const char *listen;	/* "ADDR:PORT", "[V6]:PORT" */
	const char *const *allow_host;	/* --allow-host: more names of this server */
	unsigned int nallow_host;
};

/*
 * Split "ADDR:PORT" or "[V6]:PORT" (ADDR not empty, PORT 0 to 65535)
 * into host and port.  0, or -1 when malformed or too long.
 */
int httpd_parse_listen(const char *spec, char *host, size_t hcap, char *port, size_t pcap);

/*
 * Is name fit for --allow-host: 1 to HTTPD_MAX_HOST_NAME letters, digits,
 * dots and dashes, or an IPv6 literal in brackets, without a port?
 */
int httpd_host_name_ok(const char *name);

/*
 * Listen on o->listen and start the thread; o and hd must outlive the
 * server.  The exit status (common.h): on failure *out is NULL and why
 * has been said.
 */
int httpd_start(struct httpd **out, const struct httpd_opts *o, const struct httpd_handler *hd);

/* "http://ADDR:PORT" as listened on (the port chosen, for port 0). */
const char *httpd_url(const struct httpd *h);

/*
 * Stop: new connections are no longer taken, held requests get their
 * due(), what is being written is finished (bounded in time), then the
 * thread ends and h is freed.
 */
void httpd_stop(struct httpd *h);

/* The answer of slot i (copied). */
void httpd_reply(struct httpd *h, size_t i, int status, const char *type, const void *body,
		 size_t len, int64_t now);
/* A short text answer: msg and a newline. */
void httpd_text(struct httpd *h, size_t i, int status, const char *msg, int64_t now);

/* Hold slot i's request until deadline (monotonic ns): then due(). */
void httpd_hold(struct httpd *h, size_t i, int64_t deadline);

/* How many requests are held or being answered after being held. */
unsigned int httpd_held(const struct httpd *h);

#endif
