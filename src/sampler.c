/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "profile.h"
#include "reader.h"
#include "sampler.h"
#include "target.h"

#define NSEC 1000000000ll
#define STARTUP_WAIT_NS (10 * NSEC)	/* for an interpreter still starting */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NSEC + ts.tv_nsec;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void add_stack(void *arg, const struct stack *st)
{
	profile_add(arg, st, 1);
}

static int child_gone(pid_t child)
{
	siginfo_t si;

	if (!child)
		return 0;
	memset(&si, 0, sizeof(si));
	/* WNOWAIT: leave the status for the caller to collect */
	if (waitid(P_PID, (id_t)child, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return errno == ECHILD;
	return si.si_pid == child;
}

enum perr sampler_run(struct target *t, struct profile *p, const struct sampler_opts *opts,
		      struct sampler_result *res, volatile sig_atomic_t *stop)
{
	int64_t period = NSEC / opts->rate, start, next, end = 0;
	struct reader *r = NULL;
	double cpu0;
	enum perr err;

	memset(res, 0, sizeof(*res));
	cpu0 = cpu_seconds();
	start = next = now_ns();
	if (opts->duration > 0)
		end = start + (int64_t)(opts->duration * NSEC);
	while (!*stop) {
		struct timespec ts;
		int64_t now;

		if (!r) {
			/* a Ruby VM that does not exist yet cannot be found */
			err = reader_new(t, &opts->reader, &r);
			if (err && err != PERR_STARTUP)
				return err;
			if (r)
				snprintf(res->describe, sizeof(res->describe), "%s",
					 reader_describe(r));
		}
		err = r ? reader_sample(r, add_stack, p) : PERR_STARTUP;
		res->ticks++;
		if (err == PERR_STARTUP) {
			/* exec mode attaches before the runtime exists */
			res->ticks--;
			if (now_ns() - start > STARTUP_WAIT_NS && !opts->child) {
				res->end = err;
				break;
			}
		} else if (err) {
			res->end = err;
			break;
		}
		if (child_gone(opts->child)) {
			res->end = PERR_EXITED;
			break;
		}
		next += period;
		now = now_ns();
		if (end && now >= end)
			break;
		if (now > next + period) {
			/* fell behind: skip the missed ticks rather than burst */
			res->late++;
			next = now;
			continue;
		}
		ts.tv_sec = next / NSEC;
		ts.tv_nsec = next % NSEC;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !*stop)
			;
	}
	res->elapsed = (double)(now_ns() - start) / NSEC;
	res->cpu = cpu_seconds() - cpu0;
	if (r) {
		res->stacks = reader_stats(r)->stacks;
		res->dropped = reader_stats(r)->dropped;
		res->retries = reader_stats(r)->retries;
	}
	res->reads = t->mem.calls;
	reader_free(r);
	return PERR_OK;
}
