/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

/*
 * A stack reused from an earlier tick (issue 38: a thread the kernel says
 * has not run since is not read again) is never stale.  The targets'
 * waiters (tests/targets/waitphase.*) wake many times a second and wait
 * again at once, at the same depth, in another function: park_0 while
 * the phase is 0, park_1 while it is 1, so that their frame pointer (the
 * thread state's frame, Ruby's cfp) is the same before and after.  The
 * main thread tags the process phase=P only once every waiter is parked
 * in park_P, and phase=moving around the flip: a waiter's stack under
 * phase=P that holds park_(1-P) was read before the flip and shown after.
 * It measures no share, only an invariant: it holds beside other work,
 * and runs with the other tests (not in run-integration's accuracy pass).
 */

#define WAITERS "16"

/*
 * Seconds of the recording, at 200 Hz: ~2000 wakes (1700 beside two
 * spinners a core), and ~120 ticks under each phase's tag, each of 16
 * waiters (1500 to 2300 stacks).  A stack reused on an unchanged frame
 * pointer alone (a throwaway change to pyreader.c) put 1700 to 2200 of
 * them in the other phase's function on 3.9 to 3.15.
 */
#define SECS "5"

/* The target's wakes, written by it to path on SIGTERM; -1 if it did not. */
static long wakes_of(pid_t pid, const char *path)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	long n = -1;
	FILE *f;
	int status;

	kill(pid, SIGTERM);
	for (int i = 0; i < 250 && waitpid(pid, &status, WNOHANG) == 0; i++)
		nanosleep(&pause, NULL);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	unlink(path);
	return n;
}

static void reuse(const struct interp *in, const char *script)
{
	const char *args[] = { "record", "--pid", NULL, "--idle", "-r", "200", "-d", SECS,
			       "-o", "-", "-f", "folded", "-v", NULL };
	char name[64], target[128], host[1024], ready[64], pidbuf[32], tag[2][16], park[2][64];
	char *out, *err;
	unsigned long good[2], stale[2];
	long wakes;
	unsigned long reused = 0;
	const char *r;
	pid_t pid;
	int st;

	snprintf(name, sizeof(name), "waitphase-%d.count", (int)getpid());
	snprintf(target, sizeof(target), "/tmp/%s", name);
	if (in->root)
		snprintf(host, sizeof(host), "%s/%s/tmp/%s", test_chroots(), in->root, name);
	else
		snprintf(host, sizeof(host), "/tmp/%s", name);
	unlink(host);
	test_use_helpers(in);
	{
		const char *sargs[] = { test_target_for(in, script), WAITERS, target, NULL };

		pid = test_start(in, sargs, ready, sizeof(ready));
	}
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	args[2] = pidbuf;
	st = test_pyrospy(args, &out, &err);
	wakes = wakes_of(pid, host);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	for (int p = 0; p < 2; p++) {
		snprintf(tag[p], sizeof(tag[p]), "{phase=%d};", p);
		snprintf(park[p], sizeof(park[p]), ";%s (", test_func(in, p ? "park_1" : "park_0"));
	}
	for (int p = 0; p < 2; p++) {
		good[p] = test_folded_count2(out, tag[p], park[p]);
		stale[p] = test_folded_count2(out, tag[p], park[!p]);
	}
	/* the waiters' stacks were reused, or nothing here was tested */
	r = strstr(err, " stacks of threads that had not run since their last read reused");
	if (r) {
		while (r > err && r[-1] >= '0' && r[-1] <= '9')
			r--;
		reused = strtoul(r, NULL, 10);
	}
	cr_log_info("%s: %ld wakes; phase=0: %lu in park_0, %lu in park_1; phase=1: %lu in "
		    "park_1, %lu in park_0; %lu reused", in->bin, wakes, good[0], stale[0], good[1],
		    stale[1], reused);
	for (int p = 0; p < 2; p++) {
		cr_assert_eq(stale[p], 0,
			     "%s: %lu stacks under phase=%d hold park_%d, where no waiter was "
			     "(%lu in park_%d): a stale stack was shown\n%.3000s",
			     in->bin, stale[p], p, !p, good[p], p, out);
		cr_assert_geq(good[p], 300, "%s: %lu stacks under phase=%d in park_%d:\n%s\n%.3000s",
			      in->bin, good[p], p, p, err, out);
	}
	cr_assert_geq(wakes, 1000, "%s: the waiters woke %ld times in " SECS " s", in->bin, wakes);
	cr_assert_geq(reused, 1000, "%s: %lu stacks reused:\n%s", in->bin, reused, err);
	free(out);
	free(err);
}

ParameterizedTestParameters(reuse, python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_any),
				   test_npythons_any);
}

ParameterizedTest(size_t *i, reuse, python, .timeout = 60)
{
	reuse(test_python_any(*i), "waitphase.py");
}

ParameterizedTestParameters(reuse, ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, reuse, ruby, .timeout = 60)
{
	reuse(&test_rubies[*i], "waitphase.rb");
}
