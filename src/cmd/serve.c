/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd/common.h"
#include "cmd/httpd.h"
#include "util/http.h"
#include "util/pb.h"
#include "profile/pprof.h"
#include "profile/profile.h"
#include "sample/sampler.h"
#include "cmd/serve.h"
#include "proc/target.h"
#include "util/xalloc.h"

#define NSEC 1000000000ll
#define SLOTS HTTPD_SLOTS

/*
 * The windows, one per connection slot: the sampler thread adds every
 * stack to each open one, under lock; the server thread opens and closes
 * them, and reads one only once closed.
 */
struct window {
	int open;
	struct profile p;
	int64_t from_wall;	/* the window's start, Unix ns (the server thread's) */
	int64_t from;		/* and monotonic */
};

struct serve {
	const struct serve_opts *o;
	struct httpd_opts ho;
	struct httpd_handler hd;
	pthread_mutex_t lock;
	struct window win[SLOTS];	/* under lock */
	uint64_t period;		/* ns between samples */
};

static int64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NSEC + ts.tv_nsec;
}

/* sampler_opts.add: every stack to every open window */
static void serve_add(void *arg, const char *tags, const struct stack *st)
{
	struct serve *s = arg;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < SLOTS; i++)
		if (s->win[i].open)
			profile_add(&s->win[i].p, tags, st, 1);
	pthread_mutex_unlock(&s->lock);
}

static void window_open(struct serve *s, size_t i)
{
	pthread_mutex_lock(&s->lock);
	profile_init(&s->win[i].p);
	s->win[i].p.show_pid = s->o->subprocesses;
	/* each of the profiles that may be made at once its share */
	s->win[i].p.max_bytes = s->o->max_memory / SERVE_MAX_REQUESTS;
	s->win[i].open = 1;
	pthread_mutex_unlock(&s->lock);
}

/* Close window i: the sampler no longer touches it. */
static void window_close(struct serve *s, size_t i)
{
	pthread_mutex_lock(&s->lock);
	s->win[i].open = 0;
	pthread_mutex_unlock(&s->lock);
}

/* A held request's connection closed: its window goes. */
static void serve_drop(void *arg, size_t i)
{
	struct serve *s = arg;

	window_close(s, i);
	profile_release(&s->win[i].p);
}

/* The window of connection i has passed (or sampling ended): its profile. */
static void serve_due(void *arg, struct httpd *h, size_t i, int64_t now)
{
	struct serve *s = arg;
	struct window *win = &s->win[i];
	struct profile *p = &win->p;
	struct pprof *w;
	struct pb out = { 0 };

	window_close(s, i);
	w = pprof_new(p, s->period);
	profile_stacks(p, pprof_add, w);
	if (pprof_finish(w, win->from_wall, now - win->from, &out, NULL))
		httpd_text(h, i, 500, "cannot compress the profile", now);
	else
		httpd_reply(h, i, 200, "application/octet-stream", out.buf, out.len, now);
	pprof_free(w);
	pb_release(&out);
	profile_release(p);
}

static const char index_html[] =
	"<!DOCTYPE html>\n<html><head><title>/debug/pprof/</title></head><body>\n"
	"<h1>pyrospy: /debug/pprof/</h1>\n"
	"<p>The stacks of the Ruby or Python process pyrospy samples, as gzipped pprof.</p>\n"
	"<ul>\n<li><a href=\"profile?seconds=30\">profile</a>: the next N seconds "
	"(?seconds=N, 1 to 300, default 30), e.g. <code>go tool pprof "
	"http://HOST:PORT/debug/pprof/profile?seconds=10</code></li>\n</ul>\n"
	"</body></html>\n";

/* seconds=N of a profile request: 1..SERVE_MAX_SECONDS, or 0 if bad. */
static unsigned int parse_seconds(const struct http_req *req)
{
	const char *v;
	size_t n;
	unsigned int secs = 0;

	if (!http_query(req->query, req->query_len, "seconds", &v, &n))
		return SERVE_DEFAULT_SECONDS;
	if (!n || n > 3)
		return 0;
	for (size_t k = 0; k < n; k++) {
		if (v[k] < '0' || v[k] > '9')
			return 0;
		secs = secs * 10 + (unsigned int)(v[k] - '0');
	}
	return secs <= SERVE_MAX_SECONDS ? secs : 0;
}

static int path_is(const struct http_req *req, const char *path)
{
	return req->path_len == strlen(path) && !memcmp(req->path, path, req->path_len);
}

/* A request of slot i, its Host and method checked: answer, or open its window. */
static void serve_request(void *arg, struct httpd *h, size_t i, const struct http_req *req,
			  int64_t now)
{
	struct serve *s = arg;
	unsigned int secs;

	if (path_is(req, "/debug/pprof/profile")) {
		secs = parse_seconds(req);
		if (!secs) {
			httpd_text(h, i, 400, "bad seconds: want a whole number of seconds from 1 to "
				   "300", now);
			return;
		}
		if (httpd_held(h) >= SERVE_MAX_REQUESTS) {
			httpd_text(h, i, 503, "too many requests at once (16): try again later", now);
			return;
		}
		window_open(s, i);
		s->win[i].from = now;
		s->win[i].from_wall = wall_ns();
		httpd_hold(h, i, now + (int64_t)secs * NSEC);
	} else if (path_is(req, "/debug/pprof/") || path_is(req, "/debug/pprof") ||
		   path_is(req, "/")) {
		httpd_reply(h, i, 200, "text/html; charset=utf-8", index_html,
			    sizeof(index_html) - 1, now);
	} else {
		httpd_text(h, i, 404, "no such page: see /debug/pprof/", now);
	}
}

int serve_run(const struct serve_opts *o, struct target *t, pid_t pid,
	      volatile sig_atomic_t *stop, enum perr *err)
{
	struct serve *s = xcalloc(1, sizeof(*s));
	struct sampler_opts so = {
		.rate = o->rate,
		.duration = o->duration,
		.reader = { .idle = o->idle, .gil_only = o->gil, .gvl_wait = o->gvl_wait,
			    .no_gc = o->no_gc, .async_tasks = o->async_tasks,
			    .anchor = !o->read_only, .reuse = 1 },
		.root = o->subprocesses ? pid : 0,
		.announce = !o->quiet,
		.verbose = o->verbose,
		.add = serve_add,
		.count_only = 1,	/* for days: only the windows keep stacks */
		.arg = s,
	};
	struct sampler_result res;
	struct profile p;
	struct httpd *h;
	int ret;

	*err = PERR_OK;
	s->o = o;
	s->period = (uint64_t)(NSEC / o->rate);
	s->ho = (struct httpd_opts){ .listen = o->listen ? o->listen : SERVE_DEFAULT_LISTEN,
				     .allow_host = o->allow_host, .nallow_host = o->nallow_host };
	s->hd = (struct httpd_handler){ .request = serve_request, .due = serve_due,
					.drop = serve_drop, .arg = s,
					.allow_hint = "see --allow-host in pyrospy(1)" };
	pthread_mutex_init(&s->lock, NULL);
	ret = httpd_start(&h, &s->ho, &s->hd);
	if (ret != EXIT_OK) {
		pthread_mutex_destroy(&s->lock);
		free(s);
		return ret;
	}
	/* one line, even with --quiet: with port 0 nothing else says where */
	if (t)
		fprintf(stderr, "pyrospy: serving process %d (%s %s) at %s/debug/pprof/\n", (int)pid,
			target_lang_name(t->lang), t->version, httpd_url(h));
	else
		fprintf(stderr, "pyrospy: serving the Ruby and Python subprocesses of process %d at "
			"%s/debug/pprof/\n", (int)pid, httpd_url(h));
	profile_init(&p);
	*err = sampler_run(t, &p, &so, &res, stop);
	profile_release(&p);
	httpd_stop(h);
	pthread_mutex_destroy(&s->lock);
	free(s);
	if (*err)
		return EXIT_FAIL;
	if (!o->quiet && res.end == PERR_EXITED)
		fprintf(stderr, "pyrospy: process %d exited; no longer serving\n", (int)pid);
	else if (!o->quiet && res.end != PERR_OK)
		fprintf(stderr, "pyrospy: sampling stopped: %s; no longer serving\n",
			perr_str(res.end));
	return EXIT_OK;
}
