/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

/*
 * Threads queued for the GVL: tests/targets/gvlwait.rb runs three threads
 * that only compute (gvl_spin_a, _b, _c), so that one holds the GVL and
 * the others wait for it, while the main thread sleeps in Thread#join.
 * dump says "waiting for the GVL" of the waiting ones, and record
 * --gvl-wait keeps them under a "(waiting for GVL)" leaf frame.  Having
 * said "ready", the main thread itself queues for the GVL behind them (for
 * up to two time slices of 100 ms) before it reaches join: the tests wait
 * a second first.
 */

ParameterizedTestParameters(gvlwait, dump)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, gvlwait, dump, .timeout = 60)
{
	const struct interp *in = &test_rubies[*i];
	const char *sargs[] = { test_target_for(in, "gvlwait.rb"), NULL };
	char ready[256], pidbuf[32], *out, *err;
	const char *args[] = { "dump", "--pid", pidbuf, NULL };
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int st, waiting = 0;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	sleep(1);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	for (const char *p = out; (p = strstr(p, "\nThread ")); p++) {
		const char *eol = strchr(p + 1, '\n'), *next = strstr(p + 1, "\nThread ");
		const char *spin = strstr(p, "Object#gvl_spin_");

		cr_assert_not_null(eol);
		if (!strstr(p, " (waiting for the GVL)\n") ||
		    strstr(p, " (waiting for the GVL)\n") > eol)
			continue;
		waiting++;
		/* only the computing threads wait: never the main one in join */
		cr_assert(spin && (!next || spin < next), "%s: a thread waits for the GVL "
			  "outside gvl_spin_*:\n%s", in->bin, out);
	}
	/* three threads want the GVL all the time: two wait while one runs */
	cr_assert_geq(waiting, 1, "%s: no thread waits for the GVL:\n%s", in->bin, out);
	cr_assert_leq(waiting, 2, "%s: %d threads wait for the GVL:\n%s", in->bin, waiting, out);
	free(out);
	free(err);
}

ParameterizedTestParameters(gvlwait, record)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

/* The samples of folded text out: with the leaf frame, and without. */
static void count(const char *bin, char *out, unsigned long *wait, unsigned long *run)
{
	*wait = *run = 0;
	for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
		char *sp = strrchr(l, ' ');
		unsigned long n = sp ? strtoul(sp + 1, NULL, 10) : 0;
		char *w = strstr(l, "(waiting for GVL)");

		if (!w) {
			if (strstr(l, "Object#gvl_spin_"))
				*run += n;
			continue;
		}
		/* the leaf, on a computing thread's stack */
		cr_assert(w[-1] == ';' && w + strlen("(waiting for GVL)") == sp,
			  "%s: not the leaf: %s", bin, l);
		cr_assert_not_null(strstr(l, "Object#gvl_spin_"), "%s: %s", bin, l);
		*wait += n;
	}
}

ParameterizedTest(size_t *i, gvlwait, record, .timeout = 90)
{
	const struct interp *in = &test_rubies[*i];
	const char *sargs[] = { test_target_for(in, "gvlwait.rb"), NULL };
	char ready[256], pidbuf[32], *out, *err;
	const char *args[] = { "record", "--pid", pidbuf, "-d", "2", "-f", "folded", "-o", "-",
			       "--gvl-wait", NULL };
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	unsigned long wait, run;
	int st;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	sleep(1);
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	count(in->bin, out, &wait, &run);
	/*
	 * 200 ticks of three threads: one runs, two wait (the waits a bit
	 * fewer: a tick may find the GVL passing hands, or the machine
	 * busy with other tests).
	 */
	cr_assert(wait >= 100 && run >= 50, "%s: %lu samples waiting for the GVL, %lu running",
		  in->bin, wait, run);
	free(out);
	free(err);
	/* without --gvl-wait, no such frame */
	args[9] = NULL;
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	count(in->bin, out, &wait, &run);
	cr_assert(wait == 0 && run >= 50, "%s: without --gvl-wait: %lu waiting, %lu running",
		  in->bin, wait, run);
	free(out);
	free(err);
}
