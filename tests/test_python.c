/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

/* Real CPython interpreters of every version in the matrix, profiled by pyrospy. */

ParameterizedTestParameters(python, seed_split)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

/* foo 75% +- 4, bar 25% +- 4, and the leaf on the loop's lines. */
ParameterizedTest(size_t *i, python, seed_split, .timeout = 60)
{
	const struct interp *in = &test_pythons[*i];
	const char *extra[] = { "-r", "100", "-d", "10", NULL };
	const char *path;
	char *out = test_profile(in, "seed.py", extra, &path);
	unsigned long foo = test_folded_count(out, "foo ("), bar = test_folded_count(out, "bar (");
	unsigned long work = test_folded_count(out, "work ("), at[6] = { 0 };
	double share;

	cr_assert_gt(foo + bar, 900, "%s: %lu samples in 10 s at 100 Hz", in->bin, foo + bar);
	share = 100.0 * (double)foo / (double)(foo + bar);
	cr_assert(share >= 71 && share <= 79, "%s: foo %.1f%% (foo %lu, bar %lu)", in->bin, share,
		  foo, bar);
	/*
	 * The loop (lines 4-5) is where work() spends its time.  A sample may
	 * rightly land on its entry (line 2, RESUME on 3.11+) or on "i = 0"
	 * (line 3) about once in a thousand; never outside the function.
	 */
	for (int l = 2; l <= 5; l++) {
		char want[1100];

		snprintf(want, sizeof(want), "work (%s:%d)", path, l);
		at[l] = test_folded_count(out, want);
	}
	cr_assert_eq(at[2] + at[3] + at[4] + at[5], work, "%s: work samples off its lines:\n%s",
		     in->bin, out);
	cr_assert_geq(at[4] + at[5], work - work / 100,
		      "%s: %lu of %lu work samples on the loop lines:\n%s", in->bin, at[4] + at[5],
		      work, out);
	free(out);
}

ParameterizedTestParameters(python, deep_recursion)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

/* All 400 frames, in order: <module>, rec x 400, spin. */
ParameterizedTest(size_t *i, python, deep_recursion, .timeout = 60)
{
	const struct interp *in = &test_pythons[*i];
	const char *extra[] = { "-r", "100", "-d", "2", NULL };
	const char *path;
	char *out = test_profile(in, "recursion.py", extra, &path);
	char *line = out, *save;
	unsigned long stacks = 0;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char want[1200];
		int recs = 0;
		char *p = line;

		if (!strstr(line, "spin ("))
			continue;
		stacks++;
		snprintf(want, sizeof(want), "<module> (%s:", path);
		cr_assert(!strncmp(line, want, strlen(want)), "%s: root is not <module>: %.200s",
			  in->bin, line);
		while ((p = strstr(p, ";rec (")))
			recs++, p++;
		cr_assert_eq(recs, 400, "%s: %d rec frames", in->bin, recs);
		p = strrchr(line, ';');
		cr_assert(!strncmp(p, ";spin (", 7), "%s: leaf is %.60s", in->bin, p);
		snprintf(want, sizeof(want), ";rec (%s:14);spin", path);
		cr_assert_not_null(strstr(line, want), "%s: the innermost rec calls spin at line 14",
				   in->bin);
	}
	cr_assert_gt(stacks, 0, "%s: no stack reached spin()", in->bin);
	free(out);
}

ParameterizedTestParameters(python, threads)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

/*
 * Four busy threads each appear under their own thread; the main thread,
 * sleeping in join(), only with --idle.
 */
ParameterizedTest(size_t *i, python, threads, .timeout = 60)
{
	const struct interp *in = &test_pythons[*i];
	const char *extra[] = { "--threads", "-r", "100", "-d", "3", NULL };
	const char *extra_idle[] = { "--threads", "--idle", "-r", "100", "-d", "2", NULL };
	const char *path;
	char *out = test_profile(in, "threads.py", extra, &path);
	char *idle = test_profile(in, "threads.py", extra_idle, &path);

	test_busy_threads_apart(out, in->bin, "");
	cr_assert_eq(test_folded_count(out, "join ("), 0, "%s: idle main thread shown:\n%s",
		     in->bin, out);
	cr_assert_gt(test_folded_count(idle, "join ("), 0, "%s: --idle lost the main thread:\n%s",
		     in->bin, idle);
	free(out);
	free(idle);
}

ParameterizedTestParameters(python, names)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

/* Qualified names where the version has them; sensible names for the rest. */
ParameterizedTest(size_t *i, python, names, .timeout = 60)
{
	const struct interp *in = &test_pythons[*i];
	const char *extra[] = { "-r", "200", "-d", "4", NULL };
	const char *path;
	char *out = test_profile(in, "names.py", extra, &path);
	const char *want_new[] = { ";Shop.checkout (", ";Shop.report (", ";<lambda> (", ";gen (",
				   ";coro (", NULL };
	const char *want_old[] = { ";checkout (", ";report (", ";<lambda> (", ";gen (", ";coro (",
				   ";<listcomp> (", NULL };
	const char **want = in->minor >= 11 ? want_new : want_old;

	for (int k = 0; want[k]; k++)
		cr_assert_gt(test_folded_count(out, want[k]), 0, "%s: no '%s' in:\n%s", in->bin,
			     want[k], out);
	free(out);
}

ParameterizedTestParameters(python, gil_only)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

/*
 * --gil keeps one thread per sample at most: four busy threads give no
 * more stacks than samples, where without it they give about four times
 * as many running-or-runnable stacks.
 */
ParameterizedTest(size_t *i, python, gil_only, .timeout = 60)
{
	const struct interp *in = &test_pythons[*i];
	const char *extra[] = { "--gil", "--idle", "-r", "100", "-d", "2", NULL };
	const char *path;
	char *out = test_profile(in, "threads.py", extra, &path);
	unsigned long busy = 0;

	for (int k = 0; k < 4; k++) {
		char fn[16];

		snprintf(fn, sizeof(fn), "busy%d (", k);
		busy += test_folded_count(out, fn);
	}
	cr_assert_gt(busy, 50, "%s: GIL holder found in only %lu samples:\n%s", in->bin, busy, out);
	cr_assert_leq(busy, 215, "%s: %lu stacks in ~200 samples: more than one per sample",
		      in->bin, busy);
	cr_assert_eq(test_folded_count(out, "join ("), 0, "%s: the joining thread holds no GIL",
		     in->bin);
	free(out);
}

ParameterizedTestParameters(python, gc_frame)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

/*
 * While the cyclic collector runs, the thread running it (the one holding
 * the GIL) shows a (garbage collection) leaf over the Python code that
 * started it; code that allocates nothing it tracks, and a thread asleep,
 * never do.  --no-gc leaves the leaf out.
 */
ParameterizedTest(size_t *i, python, gc_frame, .timeout = 60)
{
	const struct interp *in = &test_pythons[*i];
	const char *extra[] = { "--function", "--idle", "-r", "100", "-d", "3", NULL };
	const char *off[] = { "--function", "--no-gc", "-r", "100", "-d", "2", NULL };
	const char *path;
	char *out = test_profile(in, "gcwork.py", extra, &path), want[1100];
	unsigned long in_collect = test_folded_count(out, "collect ("), gc, all_gc, idle;

	snprintf(want, sizeof(want), ";collect (%s);(garbage collection)", path);
	gc = test_folded_count(out, want);
	all_gc = test_folded_count(out, "(garbage collection)");
	idle = test_folded_count(out, "idle (");
	cr_assert_gt(in_collect, 50, "%s: %lu samples in collect():\n%s", in->bin, in_collect, out);
	cr_assert_gt(idle, 150, "%s: %lu samples of the sleeping thread:\n%s", in->bin, idle, out);
	cr_assert_geq(gc * 10, in_collect * 9, "%s: %lu of %lu samples in collect() in GC:\n%s",
		      in->bin, gc, in_collect, out);
	cr_assert_eq(all_gc, gc, "%s: a (garbage collection) leaf outside collect():\n%s",
		     in->bin, out);
	free(out);

	out = test_profile(in, "gcwork.py", off, &path);
	cr_assert_gt(test_folded_count(out, "collect ("), 20, "%s: --no-gc:\n%s", in->bin, out);
	cr_assert_eq(test_folded_count(out, "(garbage collection)"), 0,
		     "%s: --no-gc and still a (garbage collection) leaf:\n%s", in->bin, out);
	free(out);
}
