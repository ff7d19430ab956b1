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
 * Issue 38 on Ruby: a thread that has not run since its stack was read
 * is not read again (rbreader.c, sample_kept()).  tests/targets/rbwaiters.rb
 * parks 200 threads 20 calls deep in Queue#pop and spins on the main
 * thread.  Read whole, each waiting thread cost about 5 reads of the
 * target a tick (1070 a tick at 200 threads, 854 at 160 with Ruby 3.4);
 * reused, the list of threads is read in one scatter read and a waiting
 * thread costs its schedstat read alone.
 */

#define WAITERS 200

ParameterizedTestParameters(rbreuse, waiters)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

/* The number before `what' in pyrospy's -v output, or -1. */
static double verbose_num(const char *err, const char *what)
{
	const char *p = strstr(err, what), *q;

	if (!p)
		return -1;
	for (q = p; q > err && (q[-1] == '.' || (q[-1] >= '0' && q[-1] <= '9')); q--)
		;
	return q == p ? -1 : strtod(q, NULL);
}

/* Samples of folded lines holding needle, and how many distinct lines. */
static unsigned long lines_with(const char *folded, const char *needle, unsigned long *distinct)
{
	unsigned long n = 0;

	*distinct = 0;
	for (const char *l = folded; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *eol = strchr(l, '\n'), *hit = strstr(l, needle), *sp;

		if (!hit || (eol && hit > eol))
			continue;
		for (sp = eol ? eol : l + strlen(l); sp > l && sp[-1] != ' '; sp--)
			;
		n += strtoul(sp, NULL, 10);
		(*distinct)++;
	}
	return n;
}

/*
 * --idle: every waiting thread is there at every tick, with the stack it
 * waits in (21 frames of deep, one line of its own), most of them reused,
 * and the reads of a tick far fewer than a thread's.  CPU mode: no
 * waiting thread, the spinning main thread at every tick, and the waiting
 * ones cost no read of the target.
 */
ParameterizedTest(size_t *i, rbreuse, waiters, .timeout = 60)
{
	const struct interp *in = &test_rubies[*i];
	char nbuf[16], ready[64], file[] = "/tmp/pyrospy-rbreuse-XXXXXX";
	const char *sargs[] = { test_target_for(in, "rbwaiters.rb"), nbuf, NULL };
	const char *idle[] = { "--idle", "-v", "-r", "100", "-d", "2", "-f", "folded", NULL };
	const char *cpu[] = { "-v", "-r", "100", "-d", "1", "-f", "folded", NULL };
	char *err, *err2, *out, *out2;
	const char *line, *eol;
	unsigned long waits, distinct, mains, d2, frames = 0;
	double ticks, reads, reused, ticks2, reads2;
	int fd = mkstemp(file), st;
	pid_t pid;

	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(nbuf, sizeof(nbuf), "%d", WAITERS);
	pid = test_start(in, sargs, ready, sizeof(ready));
	st = test_record_pid(pid, file, idle, &err);
	out = test_slurp(file);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	st = test_record_pid(pid, file, cpu, &err2);
	out2 = test_slurp(file);
	test_stop(pid);
	unlink(file);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err2);

	ticks = verbose_num(err, " ticks in ");
	reads = verbose_num(err, " reads and ");
	reused = verbose_num(err, " stacks of threads that had not run since their last read reused");
	cr_log_info("%s --idle: %.0f ticks, %.1f reads a tick, %.0f stacks reused", in->bin,
		    ticks, reads, reused);
	cr_assert_gt(ticks, 50, "%s: %s", in->bin, err);
	/* each waiting thread, every tick, 21 frames of deep under the pop */
	waits = lines_with(out, "Object#deep (", &distinct);
	cr_assert_geq((double)waits, 0.97 * WAITERS * ticks,
		      "%s: %lu samples of waiting threads in %.0f ticks:\n%s", in->bin, waits, ticks,
		      err);
	cr_assert_leq((double)waits, 1.0 * WAITERS * ticks, "%s: %lu samples of waiting threads",
		      in->bin, waits);
	cr_assert_eq(distinct, 1, "%s: the waiting threads in %lu stacks:\n%s", in->bin, distinct,
		     out);
	line = strstr(out, "Object#deep (");
	eol = line ? strchr(line, '\n') : NULL;
	for (const char *p = line; p && (!eol || p < eol); p = strstr(p + 1, "Object#deep ("))
		frames++;
	cr_assert_eq(frames, 21, "%s: %lu frames of deep:\n%s", in->bin, frames, out);
	cr_assert_geq(reused, 0.8 * (double)waits, "%s: %.0f of %lu stacks reused:\n%s", in->bin,
		      reused, waits, err);
	cr_assert_leq(reads, WAITERS / 4, "%s: %.1f reads a tick:\n%s", in->bin, reads, err);

	ticks2 = verbose_num(err2, " ticks in ");
	reads2 = verbose_num(err2, " reads and ");
	cr_log_info("%s CPU mode: %.0f ticks, %.1f reads a tick", in->bin, ticks2, reads2);
	cr_assert_gt(ticks2, 25, "%s: %s", in->bin, err2);
	cr_assert_eq(lines_with(out2, "Object#deep (", &d2), 0,
		     "%s: waiting threads in CPU mode:\n%s", in->bin, out2);
	mains = lines_with(out2, "<main>", &d2);
	cr_assert_geq((double)mains, 0.97 * ticks2, "%s: the main thread in %lu of %.0f ticks",
		      in->bin, mains, ticks2);
	cr_assert_leq(reads2, WAITERS / 8, "%s: %.1f reads a tick in CPU mode:\n%s", in->bin,
		      reads2, err2);
	free(out);
	free(out2);
	free(err);
	free(err2);
}
