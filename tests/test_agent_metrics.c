/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/agent_metrics.h"
#include "helpers.h"
#include "upload/ingest.h"
#include "util/perr.h"

/*
 * The reason label of /metrics (src/cmd/agent_metrics.c): every reason
 * the sampler and the agent give is one of a fixed set, and anything else
 * (a process's name, were one ever passed) is "other".
 */
Test(agent_metrics, reasons_bounded)
{
	static const char *const set[] = {
		"self", "own_child", "not_matched", "excluded", "gone", "maps_too_big", "memory",
		"out_of_memory", "io_error", "exited", "permission", "bad_address", "short_read",
		"not_interpreter", "unsupported", "not_found", "inconsistent", "too_big",
		"not_initialised", "unsafe_path", "refused", "other",
	};

	cr_assert_str_eq(agent_metrics_reason("pyrospy itself"), "self");
	cr_assert_str_eq(agent_metrics_reason("excluded by --exclude"), "excluded");
	cr_assert_str_eq(agent_metrics_reason(AGENT_MEMORY_FULL), "memory");
	cr_assert_str_eq(agent_metrics_reason(perr_str(PERR_EXITED)), "exited");
	cr_assert_str_eq(agent_metrics_reason(perr_str(PERR_NOTINTERP)), "not_interpreter");
	cr_assert_str_eq(agent_metrics_reason(perr_str(PERR_NOPROC)), "gone");
	cr_assert_str_eq(agent_metrics_reason(perr_str(PERR_OK)), "other");
	cr_assert_str_eq(agent_metrics_reason("python3\"} 1\nevil{"), "other");
	cr_assert_str_eq(agent_metrics_reason(NULL), "other");
	for (int e = 0; e <= PERR__COUNT; e++) {
		const char *l = agent_metrics_reason(perr_str((enum perr)e));
		size_t k = 0;

		while (k < sizeof(set) / sizeof(set[0]) && strcmp(set[k], l))
			k++;
		cr_assert_lt(k, sizeof(set) / sizeof(set[0]), "perr %d: label %s", e, l);
	}
}

/* /healthz's rules: a tick at most AGENT_HEALTH_TICK s ago, uploads failing at most AGENT_HEALTH_UPLOAD s. */
Test(agent_metrics, health_rules)
{
	const int64_t s = 1000000000, now = 5000 * s;
	char msg[128];

	cr_assert_eq(agent_health(now, now - AGENT_HEALTH_TICK * s, 0, msg, sizeof(msg)), 0);
	cr_assert_eq(agent_health(now, now - AGENT_HEALTH_TICK * s - 1, 0, msg, sizeof(msg)), 1);
	cr_assert_str_eq(msg, "no sampling tick for 10 s");
	cr_assert_eq(agent_health(now, now - s, 5000 - AGENT_HEALTH_UPLOAD, msg, sizeof(msg)), 0);
	cr_assert_eq(agent_health(now, now - s, 5000 - AGENT_HEALTH_UPLOAD - 1, msg, sizeof(msg)), 1);
	cr_assert_str_eq(msg, "every upload failing for 121 s");
	/* stuck sampling is said first: no upload can start without it */
	cr_assert_eq(agent_health(now, now - 60 * s, 5000 - 200, msg, sizeof(msg)), 1);
	cr_assert_str_eq(msg, "no sampling tick for 60 s");
}

static char *healthz(int port)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
	int fd = test_connect(port);
	size_t len;

	test_send_all(fd, req, sizeof(req) - 1);
	return test_read_all(fd, &len);
}

/*
 * The real server and uploader, no sampler: /healthz is 200 "ok" after a
 * tick, 503 and why once no tick came for AGENT_HEALTH_TICK s (a sampler
 * stuck on a target, say), and 200 again at the next tick.
 */
Test(agent_metrics, healthz_503_when_no_tick, .timeout = 40)
{
	struct ingest_opts io = { .server = "http://127.0.0.1:1", .app_name = "a",
				  .spy_name = "pyrospy", .rate = 100, .per_process = 1 };
	struct httpd_opts ho = { .listen = "127.0.0.1:0" };
	struct sampler_result res = { .ticks = 1 };
	struct agent_metrics *m;
	struct ingest *in = ingest_start(&io);
	char *r, *at;
	int port, secs;

	cr_assert_not_null(in);
	cr_assert_eq(agent_metrics_start(&m, &ho, in), 0);
	port = atoi(strrchr(agent_metrics_url(m), ':') + 1);
	agent_metrics_tick(m, &res, 0, 0, 100);
	r = healthz(port);
	cr_assert(!strncmp(r, "HTTP/1.1 200 ", 13) && strstr(r, "\r\n\r\nok\n"), "%s", r);
	free(r);
	sleep(AGENT_HEALTH_TICK + 1);
	r = healthz(port);
	at = strstr(r, "\r\n\r\nno sampling tick for ");
	cr_assert(!strncmp(r, "HTTP/1.1 503 ", 13) && at, "%s", r);
	secs = atoi(at + 25);
	cr_assert(secs >= AGENT_HEALTH_TICK + 1 && secs < 30, "%s", r);
	free(r);
	agent_metrics_tick(m, &res, 0, 0, 100);
	r = healthz(port);
	cr_assert(!strncmp(r, "HTTP/1.1 200 ", 13), "%s", r);
	free(r);
	agent_metrics_stop(m);
	ingest_stop(in);
}
