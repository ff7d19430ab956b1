/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_AGENT_METRICS_H
#define PYROSPY_AGENT_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "cmd/httpd.h"
#include "sample/sampler.h"

struct ingest;

/*
 * pyrospy agent --listen ADDR: the agent's own health over HTTP (httpd.h,
 * the server pyrospy serve uses, with its bounds):
 *
 *   GET /metrics   Prometheus text (promtext.h): processes sampled now,
 *                  found, skipped and forgotten by reason (a fixed set),
 *                  ticks, samples, drops by reason, windows, requests,
 *                  samples and bytes uploaded, upload failures, the
 *                  spool, the agent's CPU seconds and RSS
 *   GET /healthz   200 "ok", or 503 and why: no tick for
 *                  AGENT_HEALTH_TICK s, or every upload attempt failing
 *                  for AGENT_HEALTH_UPLOAD s
 *
 * The sampler's thread hands its counts over with agent_metrics_event()
 * and agent_metrics_tick(), under a lock the server's thread holds only
 * to copy them: a scrape never holds a tick up.  No series per process:
 * what a process is named never reaches a label.
 */

#define AGENT_HEALTH_TICK 10	/* seconds without a tick: sampling is stuck */
#define AGENT_HEALTH_UPLOAD 120	/* seconds of failed attempts only: uploads are failing */

/* why a process is put off (looked at again a second later): label "memory" */
#define AGENT_MEMORY_FULL "the agent's memory is at half its --max-memory"

struct agent_metrics;

/*
 * Listen (the exit status; on failure *out is NULL, why said); o is
 * copied, what it points to must outlive m; in's counters are read.
 */
int agent_metrics_start(struct agent_metrics **out, const struct httpd_opts *o, struct ingest *in);

/* "http://ADDR:PORT" listened on */
const char *agent_metrics_url(const struct agent_metrics *m);

/* A process found, skipped or forgotten (sampler.h's event(), why as given there). */
void agent_metrics_event(struct agent_metrics *m, enum sampler_event ev, const char *why);

/*
 * The sampler's counts (its tick()), the processes held, the samples of
 * no process known (unlabelled, not uploaded) and the rate every process
 * is sampled at now (--max-cpu's).
 */
void agent_metrics_tick(struct agent_metrics *m, const struct sampler_result *res,
			size_t processes, uint64_t unlabelled, unsigned int rate);

/* Stop serving (before in is stopped) and free m; NULL is nothing. */
void agent_metrics_stop(struct agent_metrics *m);

/*
 * /healthz's answer at now (CLOCK_MONOTONIC ns), the last tick then (ns)
 * and the uploads failing since (CLOCK_MONOTONIC s, 0: not failing): 0
 * healthy, else 1 and why in msg.
 */
int agent_health(int64_t now, int64_t last_tick, double failing_since, char *msg, size_t cap);

/* The agent's resident set, bytes (/proc/self/statm's second field); 0: unknown. */
uint64_t agent_rss_bytes(void);

/* The label value of a reason (event()'s why): one of a fixed set, "other" else. */
const char *agent_metrics_reason(const char *why);

#endif
