/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cmd/common.h"
#include "cmd/httpd.h"
#include "util/http.h"
#include "util/xalloc.h"

#define NSEC 1000000000ll
#define READ_TIMEOUT (HTTPD_READ_TIMEOUT * NSEC)	/* to send a whole request head */
#define WRITE_TIMEOUT (10 * NSEC)	/* to take a whole response */
#define LINGER_TIME (2 * NSEC)		/* reading what is left after answering */
#define SLOTS HTTPD_SLOTS

/*
 * A connection's life: READ its head, WAIT while the handler holds it
 * (serve's profile request, for its window of samples to pass), WRITE the
 * response, then LINGER: its end shut, read what the client still sends
 * until it hangs up, so that closing does not reset the connection before
 * the client has read the answer.
 *
 * READ and LINGER are idle: the slot is held for nothing pyrospy has to
 * do.  Anyone who can connect can open many (on loopback, every local
 * user is 127.0.0.1), so an idle slot is taken back when a new
 * connection needs one: see httpd_evict().
 */
enum conn_state { CONN_FREE, CONN_READ, CONN_WAIT, CONN_WRITE, CONN_LINGER };

/* An IPv4 address (also when IPv4-mapped in IPv6) in a[0..4), or IPv6. */
struct addr {
	int family;
	unsigned char a[16];
};

struct conn {
	int fd;
	enum conn_state state;
	int counted;		/* held, until answered */
	int eof;		/* WAIT: the client shut its end; it may still read */
	int64_t deadline;	/* monotonic ns: of the state */
	int64_t since;		/* monotonic ns: idle since (READ, LINGER) */
	struct addr peer, local;	/* the client's address, and the one it reached */
	char head[HTTP_MAX_HEAD];
	size_t hlen;
	char *out;		/* the response */
	size_t olen, off;
};

struct httpd {
	const struct httpd_opts *o;
	const struct httpd_handler *hd;
	int lfd;
	char url[128];		/* http://ADDR:PORT */
	pthread_t thread;
	pthread_mutex_t lock;
	int quit;			/* under lock */
	struct conn conn[SLOTS];	/* the server thread's */
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NSEC + ts.tv_nsec;
}

static void addr_of(const struct sockaddr_storage *ss, struct addr *a)
{
	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		a->family = AF_INET;
		memcpy(a->a, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const unsigned char *v6 = ((const struct sockaddr_in6 *)ss)->sin6_addr.s6_addr;
		static const unsigned char mapped[12] = { [10] = 0xff, [11] = 0xff };

		if (!memcmp(v6, mapped, 12)) {
			a->family = AF_INET;
			memcpy(a->a, v6 + 12, 4);
		} else {
			a->family = AF_INET6;
			memcpy(a->a, v6, 16);
		}
	}
}

static int addr_eq(const struct addr *a, const struct addr *b)
{
	return a->family == b->family && !memcmp(a->a, b->a, sizeof(a->a));
}

/* 127.0.0.0/8 or ::1 */
static int addr_loopback(const struct addr *a)
{
	static const unsigned char one[16] = { [15] = 1 };

	return (a->family == AF_INET && a->a[0] == 127) ||
	       (a->family == AF_INET6 && !memcmp(a->a, one, 16));
}

static void conn_close(struct httpd *s, size_t i)
{
	struct conn *c = &s->conn[i];

	if (c->state == CONN_WAIT && s->hd->drop)
		s->hd->drop(s->hd->arg, i);
	close(c->fd);
	free(c->out);
	c->out = NULL;
	c->state = CONN_FREE;
	c->counted = 0;
}

static void conn_reply(struct conn *c, int status, const char *type, const void *body, size_t len,
		       int64_t now)
{
	c->out = http_response(status, type, body, len, &c->olen);
	c->off = 0;
	c->state = CONN_WRITE;
	c->deadline = now + WRITE_TIMEOUT;
}

static void conn_text(struct conn *c, int status, const char *msg, int64_t now)
{
	char body[256];
	int n = snprintf(body, sizeof(body), "%s\n", msg);

	if (n < 0 || (size_t)n >= sizeof(body))
		n = (int)sizeof(body) - 1;
	conn_reply(c, status, "text/plain; charset=utf-8", body, (size_t)n, now);
}

/* The handler answers a held request; one that does not gets a 500. */
static void conn_due(struct httpd *s, size_t i, int64_t now)
{
	struct conn *c = &s->conn[i];

	if (s->hd->due)
		s->hd->due(s->hd->arg, s, i, now);
	if (c->state == CONN_WAIT)
		conn_text(c, 500, "no answer", now);
}

/*
 * Does the request's Host name this server: the address the client
 * reached (an IP literal), localhost when that is a loopback address, or
 * a name of --allow-host?  The port is not looked at: a forwarded port
 * (ssh -L, kubectl port-forward) changes it.  A web page that had its
 * name resolve to this address (DNS rebinding) sends its own name, and
 * is refused.  No Host at all (HTTP/1.0 only, http_parse() refuses it in
 * 1.1) is taken: browsers always send one.
 */
static int host_allowed(const struct httpd *s, const struct conn *c, const struct http_req *req)
{
	const char *h;
	size_t n;
	char lit[64];
	struct sockaddr_storage ss = { 0 };
	struct addr a;

	if (!req->host)
		return 1;
	n = http_host_name(req->host, req->host_len, &h);
	for (unsigned int k = 0; k < s->o->nallow_host; k++)
		if (strlen(s->o->allow_host[k]) == n && !strncasecmp(h, s->o->allow_host[k], n))
			return 1;
	if (n == 9 && !strncasecmp(h, "localhost", 9))
		return addr_loopback(&c->local);
	if (n < 3 || n >= sizeof(lit))
		return 0;
	if (h[0] == '[' && h[n - 1] == ']') {
		memcpy(lit, h + 1, n - 2);
		lit[n - 2] = '\0';
		ss.ss_family = AF_INET6;
		if (inet_pton(AF_INET6, lit, &((struct sockaddr_in6 *)&ss)->sin6_addr) != 1)
			return 0;
	} else {
		memcpy(lit, h, n);
		lit[n] = '\0';
		ss.ss_family = AF_INET;
		if (inet_pton(AF_INET, lit, &((struct sockaddr_in *)&ss)->sin_addr) != 1)
			return 0;
	}
	addr_of(&ss, &a);
	return addr_eq(&a, &c->local);
}

/* A whole request head of connection i: checked, then the handler's. */
static void conn_request(struct httpd *s, size_t i, const struct http_req *req, int64_t now)
{
	struct conn *c = &s->conn[i];
	char msg[160];

	if (!host_allowed(s, c, req)) {
		snprintf(msg, sizeof(msg), "the Host header names another server: %s",
			 s->hd->allow_hint ? s->hd->allow_hint : "see pyrospy(1)");
		conn_text(c, 421, msg, now);
	} else if (req->method_len != 3 || memcmp(req->method, "GET", 3)) {
		conn_text(c, 405, "only GET is served", now);
	} else {
		s->hd->request(s->hd->arg, s, i, req, now);
	}
}

static void conn_read(struct httpd *s, size_t i, int64_t now)
{
	struct conn *c = &s->conn[i];
	struct http_req req;
	const char *why;
	ssize_t n = recv(c->fd, c->head + c->hlen, sizeof(c->head) - c->hlen, 0);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(s, i);	/* gone before asking anything */
		return;
	}
	c->hlen += (size_t)n;
	switch (http_parse(c->head, c->hlen, &req, &why)) {
	case HTTP_PARSE_MORE:
		break;
	case HTTP_PARSE_BAD:
		conn_text(c, 400, why, now);
		break;
	case HTTP_PARSE_OK:
		conn_request(s, i, &req, now);
		break;
	}
}

/*
 * Read and drop what comes (WAIT, LINGER).  Closed by the client: in
 * LINGER, the end; in WAIT, maybe only its half (nc -N): it gets its
 * answer all the same, or the write fails.
 */
static void conn_drain(struct httpd *s, size_t i)
{
	char buf[4096];
	ssize_t n = recv(s->conn[i].fd, buf, sizeof(buf), 0);

	if (n == 0 && s->conn[i].state == CONN_WAIT)
		s->conn[i].eof = 1;
	else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		conn_close(s, i);
}

static void conn_write(struct httpd *s, size_t i, int64_t now)
{
	struct conn *c = &s->conn[i];
	ssize_t n = send(c->fd, c->out + c->off, c->olen - c->off, MSG_NOSIGNAL);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n < 0) {
		conn_close(s, i);
		return;
	}
	c->off += (size_t)n;
	if (c->off < c->olen)
		return;
	shutdown(c->fd, SHUT_WR);
	FREE_AND_NULL(c->out);
	c->state = CONN_LINGER;
	c->since = now;
	c->deadline = now + LINGER_TIME;
	c->counted = 0;
}

static int conn_idle(const struct conn *c)
{
	return c->state == CONN_READ || c->state == CONN_LINGER;
}

/*
 * A slot for a new connection: a free one (unless peer is given), else
 * the slot of the connection idle the longest, closed (of those from
 * peer, when given).  A connection still in READ is read once more
 * first, so one whose request has come is never closed to make room: a
 * scraper sends its request at once, and once accepted keeps its slot
 * however fast others connect.  SLOTS when no slot can be had: every
 * one (of peer's) carries a request.
 */
static size_t httpd_evict(struct httpd *s, const struct addr *peer, int64_t now)
{
	for (;;) {
		size_t v = SLOTS;

		for (size_t i = 0; i < SLOTS; i++) {
			const struct conn *c = &s->conn[i];

			if (c->state == CONN_FREE && !peer)
				return i;
			if (!conn_idle(c) || (peer && !addr_eq(&c->peer, peer)))
				continue;
			if (v == SLOTS || c->since < s->conn[v].since)
				v = i;
		}
		if (v == SLOTS)
			return SLOTS;
		if (s->conn[v].state == CONN_READ)
			conn_read(s, v, now);
		if (s->conn[v].state == CONN_FREE)
			return v;	/* it hung up */
		if (conn_idle(&s->conn[v])) {
			conn_close(s, v);
			return v;
		}
	}
}

static void httpd_accept(struct httpd *s, int64_t now)
{
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct addr peer;
		unsigned int held = 0;
		size_t i = SLOTS;

		if (fd < 0)
			return;	/* EAGAIN, or a connection gone before accepted */
		addr_of(&ss, &peer);
		/* local users all come from loopback: there a share cannot tell them apart */
		if (!addr_loopback(&peer)) {
			for (size_t k = 0; k < SLOTS; k++)
				held += s->conn[k].state != CONN_FREE &&
					addr_eq(&s->conn[k].peer, &peer);
			if (held >= HTTPD_MAX_PER_PEER) {
				i = httpd_evict(s, &peer, now);
				if (i == SLOTS) {
					close(fd);	/* its share all carry requests */
					continue;
				}
			}
		}
		if (i == SLOTS)
			i = httpd_evict(s, NULL, now);
		if (i == SLOTS) {
			close(fd);	/* every slot carries a request: no room to say so */
			continue;
		}
		memset(&s->conn[i], 0, sizeof(s->conn[i]));
		s->conn[i].fd = fd;
		s->conn[i].peer = peer;
		sl = sizeof(ss);
		if (!getsockname(fd, (struct sockaddr *)&ss, &sl))
			addr_of(&ss, &s->conn[i].local);
		s->conn[i].state = CONN_READ;
		s->conn[i].since = now;
		s->conn[i].deadline = now + READ_TIMEOUT;
	}
}

/* A state's time is up. */
static void conn_expire(struct httpd *s, size_t i, int64_t now)
{
	struct conn *c = &s->conn[i];

	switch (c->state) {
	case CONN_READ:
	{
		char msg[64];

		snprintf(msg, sizeof(msg), "the request head did not come within %d seconds",
			 HTTPD_READ_TIMEOUT);
		conn_text(c, 408, msg, now);
		break;
	}
	case CONN_WAIT:
		conn_due(s, i, now);
		break;
	default:
		conn_close(s, i);	/* a client that does not read, or does not hang up */
		break;
	}
}

static void *httpd_thread(void *arg)
{
	struct httpd *s = arg;
	struct pollfd pfd[SLOTS + 1];
	size_t slot[SLOTS + 1];

	for (;;) {
		int64_t now = mono_ns(), next = now + 200 * 1000 * 1000;
		int quit, any = 0;
		nfds_t n = 0;

		pthread_mutex_lock(&s->lock);
		quit = s->quit;
		pthread_mutex_unlock(&s->lock);
		for (size_t i = 0; i < SLOTS; i++) {
			struct conn *c = &s->conn[i];

			/* stopping: what is held gets its answer now, a head half read none */
			if (quit && c->state == CONN_READ)
				conn_close(s, i);
			if (quit && c->state == CONN_WAIT)
				conn_due(s, i, now);
			if (c->state != CONN_FREE && now >= c->deadline)
				conn_expire(s, i, now);
			if (c->state == CONN_FREE)
				continue;
			any = 1;
			if (c->deadline < next)
				next = c->deadline;
			if (c->state == CONN_WAIT && c->eof)
				continue;	/* nothing to read: the answer is written when due */
			pfd[n].fd = c->fd;
			pfd[n].events = c->state == CONN_WRITE ? POLLOUT : POLLIN;
			pfd[n].revents = 0;
			slot[n++] = i;
		}
		if (quit && !any)
			break;
		if (!quit) {
			pfd[n].fd = s->lfd;
			pfd[n].events = POLLIN;
			pfd[n].revents = 0;
			slot[n++] = SLOTS;
		}
		if (poll(pfd, n, next > now ? (int)((next - now + 999999) / 1000000) : 0) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		now = mono_ns();
		for (nfds_t k = 0; k < n; k++) {
			size_t i = slot[k];

			if (!pfd[k].revents)
				continue;
			if (i == SLOTS) {
				httpd_accept(s, now);
				continue;
			}
			switch (s->conn[i].state) {
			case CONN_READ:
				conn_read(s, i, now);
				break;
			case CONN_WRITE:
				conn_write(s, i, now);
				break;
			case CONN_WAIT:
			case CONN_LINGER:
				conn_drain(s, i);
				break;
			default:
				break;
			}
		}
	}
	for (size_t i = 0; i < SLOTS; i++)
		if (s->conn[i].state != CONN_FREE)
			conn_close(s, i);
	return NULL;
}

int httpd_host_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > HTTPD_MAX_HOST_NAME)
		return 0;
	if (name[0] == '[')
		return n > 2 && name[n - 1] == ']' &&
		       strspn(name + 1, "0123456789abcdefABCDEF:.") == n - 2;
	return strspn(name, "abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") == n;
}

/* An address must be given: an empty one would listen on every interface unasked. */
int httpd_parse_listen(const char *spec, char *host, size_t hcap, char *port, size_t pcap)
{
	const char *colon, *h = spec;
	size_t hlen;

	if (*spec == '[') {
		const char *rb = strchr(spec, ']');

		if (!rb || rb[1] != ':')
			return -1;
		h = spec + 1;
		hlen = (size_t)(rb - h);
		colon = rb + 1;
	} else {
		colon = strrchr(spec, ':');
		if (!colon)
			return -1;
		hlen = (size_t)(colon - spec);
	}
	if (!hlen || hlen >= hcap || !colon[1] || strlen(colon + 1) >= pcap ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1) || atol(colon + 1) > 65535)
		return -1;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	strcpy(port, colon + 1);
	return 0;
}

/* Bind and listen; the exit status on failure, having said why. */
static int httpd_listen(struct httpd *s, const char *spec)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256], port[16], nh[NI_MAXHOST], np[NI_MAXSERV];
	int rc, one = 1, err = 0;

	if (httpd_parse_listen(spec, host, sizeof(host), port, sizeof(port))) {
		cli_error("invalid --listen '%s': want ADDR:PORT", spec);
		cli_hint("e.g. --listen 127.0.0.1:6060, 0.0.0.0:6060 (every interface) or [::1]:6060");
		return EXIT_USAGE;
	}
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc) {
		cli_error("cannot listen on '%s': %s", spec, gai_strerror(rc));
		cli_hint("give a numeric address, e.g. --listen 127.0.0.1:6060");
		return EXIT_USAGE;
	}
	s->lfd = -1;
	for (struct addrinfo *ai = res; ai && s->lfd < 0; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		if (fd < 0) {
			err = errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
			err = errno;
			close(fd);
			continue;
		}
		s->lfd = fd;
	}
	freeaddrinfo(res);
	if (s->lfd < 0) {
		cli_error("cannot listen on '%s': %s", spec, strerror(err));
		cli_hint(err == EADDRINUSE ? "another program listens there: choose another port, or "
					     "PORT 0 for any free one" :
					     "check the address is one of this host's");
		return EXIT_FAIL;
	}
	if (getsockname(s->lfd, (struct sockaddr *)&ss, &sl) ||
	    getnameinfo((struct sockaddr *)&ss, sl, nh, sizeof(nh), np, sizeof(np),
			NI_NUMERICHOST | NI_NUMERICSERV)) {
		snprintf(nh, sizeof(nh), "%s", host);
		snprintf(np, sizeof(np), "%s", port);
	}
	snprintf(s->url, sizeof(s->url), ss.ss_family == AF_INET6 ? "http://[%s]:%s" :
				 "http://%s:%s", nh, np);
	return EXIT_OK;
}


int httpd_start(struct httpd **out, const struct httpd_opts *o, const struct httpd_handler *hd)
{
	struct httpd *s = xcalloc(1, sizeof(*s));
	sigset_t block, old;
	int ret, rc;

	*out = NULL;
	s->o = o;
	s->hd = hd;
	ret = httpd_listen(s, o->listen);
	if (ret != EXIT_OK) {
		free(s);
		return ret;
	}
	pthread_mutex_init(&s->lock, NULL);
	/* signals are the main thread's (the sampler stops on them) */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	rc = pthread_create(&s->thread, NULL, httpd_thread, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		cli_error("cannot start the server's thread: %s", strerror(rc));
		close(s->lfd);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return EXIT_FAIL;
	}
	*out = s;
	return EXIT_OK;
}

const char *httpd_url(const struct httpd *h)
{
	return h->url;
}

void httpd_stop(struct httpd *h)
{
	pthread_mutex_lock(&h->lock);
	h->quit = 1;
	pthread_mutex_unlock(&h->lock);
	pthread_join(h->thread, NULL);
	close(h->lfd);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

void httpd_reply(struct httpd *h, size_t i, int status, const char *type, const void *body,
		 size_t len, int64_t now)
{
	conn_reply(&h->conn[i], status, type, body, len, now);
}

void httpd_text(struct httpd *h, size_t i, int status, const char *msg, int64_t now)
{
	conn_text(&h->conn[i], status, msg, now);
}

void httpd_hold(struct httpd *h, size_t i, int64_t deadline)
{
	h->conn[i].counted = 1;
	h->conn[i].state = CONN_WAIT;
	h->conn[i].deadline = deadline;
}

unsigned int httpd_held(const struct httpd *h)
{
	unsigned int n = 0;

	for (size_t k = 0; k < SLOTS; k++)
		n += (unsigned int)h->conn[k].counted;
	return n;
}
