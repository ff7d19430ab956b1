/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cmd/agent_metrics.h"
#include "cmd/common.h"
#include "upload/ingest.h"
#include "util/perr.h"
#include "util/promtext.h"
#include "util/xalloc.h"

#define NSEC 1000000000ll

/*
 * The reasons a process is skipped or forgotten, as labels: the agent's
 * own (want()), the sampler's, and every perr_str() (a process's open or
 * its end).  Anything else is "other", so the series stay this many.
 */
static const struct {
	const char *why, *label;
} reasons[] = {
	{ "pyrospy itself", "self" },
	{ "a child of pyrospy's", "own_child" },
	{ "not matched by --match", "not_matched" },
	{ "excluded by --exclude", "excluded" },
	{ "gone", "gone" },
	{ "its memory maps are past pyrospy's bounds", "maps_too_big" },
	{ AGENT_MEMORY_FULL, "memory" },
};

static const char *const perr_labels[PERR__COUNT] = {
	[PERR_OK] = "other",
	[PERR_NOMEM] = "out_of_memory",
	[PERR_IO] = "io_error",
	[PERR_NOPROC] = "gone",
	[PERR_EXITED] = "exited",
	[PERR_PERM] = "permission",
	[PERR_FAULT] = "bad_address",
	[PERR_SHORT] = "short_read",
	[PERR_NOTINTERP] = "not_interpreter",
	[PERR_UNSUPPORTED] = "unsupported",
	[PERR_NOTFOUND] = "not_found",
	[PERR_CORRUPT] = "inconsistent",
	[PERR_TOOBIG] = "too_big",
	[PERR_STARTUP] = "not_initialised",
	[PERR_UNSAFE] = "unsafe_path",
	[PERR_REFUSED] = "refused",
};

/* Each label once: the series of a counter by reason. */
static const char *const labels[] = {
	"self", "own_child", "not_matched", "excluded", "gone", "maps_too_big", "memory",
	"out_of_memory", "io_error", "exited", "permission", "bad_address", "short_read",
	"not_interpreter", "unsupported", "not_found", "inconsistent", "too_big",
	"not_initialised", "unsafe_path", "refused", "other",
};

#define NREASONS (sizeof(labels) / sizeof(labels[0]))

struct agent_metrics {
	struct httpd *h;
	struct httpd_opts ho;
	struct httpd_handler hd;
	struct ingest *in;
	pthread_mutex_t lock;
	/* under lock */
	uint64_t found;
	uint64_t skipped[NREASONS], forgotten[NREASONS];	/* by labels[] */
	struct sampler_result res;
	size_t processes;
	uint64_t unlabelled;
	unsigned int rate;	/* every process's, now */
	int64_t last_tick;	/* monotonic ns; the start before the first */
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NSEC + ts.tv_nsec;
}

const char *agent_metrics_reason(const char *why)
{
	for (size_t i = 0; why && i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (!strcmp(why, reasons[i].why))
			return reasons[i].label;
	for (int e = 0; why && e < PERR__COUNT; e++)
		if (!strcmp(why, perr_str((enum perr)e)))
			return perr_labels[e] ? perr_labels[e] : "other";
	return "other";
}

static size_t reason_index(const char *why)
{
	const char *label = agent_metrics_reason(why);

	for (size_t i = 0; i < NREASONS; i++)
		if (!strcmp(labels[i], label))
			return i;
	return NREASONS - 1;
}

void agent_metrics_event(struct agent_metrics *m, enum sampler_event ev, const char *why)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	switch (ev) {
	case SAMPLER_FOUND:
		m->found++;
		break;
	case SAMPLER_SKIPPED:
		m->skipped[reason_index(why)]++;
		break;
	case SAMPLER_FORGOTTEN:
		m->forgotten[reason_index(why)]++;
		break;
	}
	pthread_mutex_unlock(&m->lock);
}

void agent_metrics_tick(struct agent_metrics *m, const struct sampler_result *res,
			size_t processes, uint64_t unlabelled, unsigned int rate)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->rate = rate;
	m->res = *res;
	m->processes = processes;
	m->unlabelled = unlabelled;
	m->last_tick = mono_ns();
	pthread_mutex_unlock(&m->lock);
}

uint64_t agent_rss_bytes(void)
{
	unsigned long long size, resident;
	FILE *f = fopen("/proc/self/statm", "re");
	int ok;

	if (!f)
		return 0;
	ok = fscanf(f, "%llu %llu", &size, &resident) == 2;
	fclose(f);
	return ok ? resident * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

static void counter(struct promtext *pt, const char *name, const char *help, uint64_t v)
{
	promtext_family(pt, name, "counter", help);
	promtext_u64(pt, name, NULL, NULL, v);
}

static void gauge(struct promtext *pt, const char *name, const char *help, uint64_t v)
{
	promtext_family(pt, name, "gauge", help);
	promtext_u64(pt, name, NULL, NULL, v);
}

/* Every reason, those never seen too: a series does not appear out of nowhere. */
static void by_reason(struct promtext *pt, const char *name, const char *help,
		      const uint64_t *v)
{
	promtext_family(pt, name, "counter", help);
	for (size_t i = 0; i < NREASONS; i++)
		promtext_u64(pt, name, "reason", labels[i], v[i]);
}

static void metrics(struct agent_metrics *m, struct promtext *pt)
{
	struct agent_metrics c;
	struct ingest_stats st;
	struct rusage ru;
	double cpu = 0;

	pthread_mutex_lock(&m->lock);
	memcpy(c.skipped, m->skipped, sizeof(c.skipped));
	memcpy(c.forgotten, m->forgotten, sizeof(c.forgotten));
	c.found = m->found;
	c.res = m->res;
	c.processes = m->processes;
	c.unlabelled = m->unlabelled;
	c.rate = m->rate;
	pthread_mutex_unlock(&m->lock);
	ingest_stats(m->in, &st);
	if (!getrusage(RUSAGE_SELF, &ru))
		cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;

	gauge(pt, "pyrospy_processes", "Ruby and Python processes sampled now", c.processes);
	gauge(pt, "pyrospy_sample_rate_hz",
	      "the rate every process is sampled at now (--rate, lowered by --max-cpu)", c.rate);
	counter(pt, "pyrospy_processes_found_total", "processes found and sampled from then on",
		c.found);
	by_reason(pt, "pyrospy_processes_skipped_total",
		  "processes looked at and left alone (once per image), by reason", c.skipped);
	by_reason(pt, "pyrospy_processes_forgotten_total",
		  "processes sampled no more, by reason", c.forgotten);
	counter(pt, "pyrospy_ticks_total", "sampling ticks taken", c.res.ticks);
	counter(pt, "pyrospy_ticks_late_total", "ticks that came more than a period late",
		c.res.late);
	counter(pt, "pyrospy_samples_total", "stacks sampled (one a thread a tick)", c.res.stacks);
	promtext_family(pt, "pyrospy_samples_dropped_total", "counter",
			"samples lost, by reason: unreadable (torn or unreadable stacks), "
			"tags (tags lost to a torn read, the stack kept), unlabelled (of a "
			"process no longer known, not uploaded)");
	promtext_u64(pt, "pyrospy_samples_dropped_total", "reason", "unreadable", c.res.dropped);
	promtext_u64(pt, "pyrospy_samples_dropped_total", "reason", "tags", c.res.tags_dropped);
	promtext_u64(pt, "pyrospy_samples_dropped_total", "reason", "unlabelled", c.unlabelled);
	counter(pt, "pyrospy_upload_windows_total", "windows handed to the uploader", st.windows);
	counter(pt, "pyrospy_upload_windows_delivered_total",
		"windows whose every request the server accepted", st.delivered);
	counter(pt, "pyrospy_upload_windows_dropped_total",
		"windows of which some was dropped (refused, or the spool full)", st.dropped);
	counter(pt, "pyrospy_upload_requests_total", "requests the server accepted", st.requests);
	counter(pt, "pyrospy_upload_samples_total", "samples in the requests the server accepted",
		st.samples);
	counter(pt, "pyrospy_upload_bytes_total", "body bytes the server accepted", st.bytes);
	counter(pt, "pyrospy_upload_failures_total",
		"attempts that failed and are retried (no connection, timeout, 5xx, 429, 408)",
		st.failures);
	counter(pt, "pyrospy_upload_refused_total", "requests the server refused, dropped",
		st.refused);
	counter(pt, "pyrospy_upload_profiles_rejected_total",
		"profiles the server said it rejected of requests it took (OTLP partial success)",
		st.rejected);
	counter(pt, "pyrospy_upload_spool_dropped_total",
		"requests dropped, oldest first, from a full spool", st.lost_full);
	gauge(pt, "pyrospy_spool_bytes", "bytes waiting in the upload spool", st.spooled);
	gauge(pt, "pyrospy_spool_requests", "requests waiting in the upload spool", st.pending);
	promtext_family(pt, "process_cpu_seconds_total", "counter",
			"user and system CPU time the agent spent, seconds");
	promtext_f64(pt, "process_cpu_seconds_total", NULL, NULL, cpu);
	gauge(pt, "process_resident_memory_bytes", "the agent's resident memory, bytes",
	      agent_rss_bytes());
}

int agent_health(int64_t now, int64_t last_tick, double failing_since, char *msg, size_t cap)
{
	double failing = failing_since ? (double)now / NSEC - failing_since : 0;

	if (now - last_tick > (int64_t)AGENT_HEALTH_TICK * NSEC) {
		snprintf(msg, cap, "no sampling tick for %lld s",
			 (long long)((now - last_tick) / NSEC));
		return 1;
	}
	if (failing > AGENT_HEALTH_UPLOAD) {
		snprintf(msg, cap, "every upload failing for %.0f s", failing);
		return 1;
	}
	return 0;
}

/* Why the agent is not healthy, in msg; 0 when it is. */
static int unhealthy(struct agent_metrics *m, char *msg, size_t cap)
{
	struct ingest_stats st;
	int64_t last;

	pthread_mutex_lock(&m->lock);
	last = m->last_tick;
	pthread_mutex_unlock(&m->lock);
	ingest_stats(m->in, &st);
	return agent_health(mono_ns(), last, st.failing_since, msg, cap);
}

static int path_is(const struct http_req *req, const char *path)
{
	return req->path_len == strlen(path) && !memcmp(req->path, path, req->path_len);
}

static void request(void *arg, struct httpd *h, size_t i, const struct http_req *req,
		    int64_t now)
{
	struct agent_metrics *m = arg;
	char msg[128];

	if (path_is(req, "/metrics")) {
		struct promtext pt;

		promtext_init(&pt);
		metrics(m, &pt);
		httpd_reply(h, i, 200, PROMTEXT_TYPE, pt.s, pt.len, now);
		promtext_release(&pt);
	} else if (path_is(req, "/healthz")) {
		if (unhealthy(m, msg, sizeof(msg)))
			httpd_text(h, i, 503, msg, now);
		else
			httpd_text(h, i, 200, "ok", now);
	} else {
		httpd_text(h, i, 404, "no such page: see /metrics and /healthz", now);
	}
}

int agent_metrics_start(struct agent_metrics **out, const struct httpd_opts *o, struct ingest *in)
{
	struct agent_metrics *m = xcalloc(1, sizeof(*m));
	int ret;

	*out = NULL;
	m->in = in;
	m->ho = *o;
	m->last_tick = mono_ns();
	m->hd = (struct httpd_handler){ .request = request, .arg = m,
					.allow_hint = "see --allow-host in pyrospy(1)" };
	pthread_mutex_init(&m->lock, NULL);
	ret = httpd_start(&m->h, &m->ho, &m->hd);
	if (ret != EXIT_OK) {
		pthread_mutex_destroy(&m->lock);
		free(m);
		return ret;
	}
	*out = m;
	return EXIT_OK;
}

const char *agent_metrics_url(const struct agent_metrics *m)
{
	return httpd_url(m->h);
}

void agent_metrics_stop(struct agent_metrics *m)
{
	if (!m)
		return;
	httpd_stop(m->h);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
