/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "python/pyvm.h"
#include "proc/target.h"

/* Real CPython interpreters of every version in the matrix, profiled by pyrospy. */

ParameterizedTestParameters(python, seed_split)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_any),
				   test_npythons_any);
}

/* foo 75% +- 4, bar 25% +- 4, and the leaf on the loop's lines. */
ParameterizedTest(size_t *i, python, seed_split, .timeout = 60)
{
	const struct interp *in = test_python_any(*i);
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
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_any),
				   test_npythons_any);
}

/* All 400 frames, in order: <module>, rec x 400, spin. */
ParameterizedTest(size_t *i, python, deep_recursion, .timeout = 60)
{
	const struct interp *in = test_python_any(*i);
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

ParameterizedTestParameters(python, deep_thread)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_any),
				   test_npythons_any);
}

/*
 * A thread's 300 frames (recursion.py thread), all of them, nearly every
 * sample: its second data stack chunk lies right under its C stack, whose
 * guard page (glibc 2.42+, sid) /proc/PID/maps calls readable; a read
 * past the chunk's end must not lose the stack (3.14 and 3.15 showed none).
 */
ParameterizedTest(size_t *i, python, deep_thread, .timeout = 60)
{
	const struct interp *in = test_python_any(*i);
	const char *extra[] = { "-r", "200", "-d", "2", "-v", "-f", "folded", NULL };
	const char *sargs[] = { test_target_for(in, "recursion.py"), "thread", NULL };
	char file[] = "/tmp/pyrospy-deepthread-XXXXXX", ready[64], *out, *err, *line, *save;
	unsigned long spins = 0;
	int fd = mkstemp(file), st;
	pid_t pid;

	cr_assert(fd >= 0);
	close(fd);
	pid = test_start(in, sargs, ready, sizeof(ready));
	st = test_record_pid(pid, file, extra, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	out = test_slurp(file);
	unlink(file);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *p = line;
		int recs = 0;

		if (!strstr(line, ";spin ("))
			continue;
		while ((p = strstr(p, ";rec (")))
			recs++, p++;
		cr_assert_eq(recs, 300, "%s: %d rec frames: %.300s", in->bin, recs, line);
		spins += strtoul(strrchr(line, ' ') + 1, NULL, 10);
	}
	cr_log_info("%s: %lu stacks of the deep thread; %s", in->bin, spins, err);
	cr_assert_geq(spins, 300, "%s: %lu stacks of the deep thread in 2 s at 200 Hz: %s",
		      in->bin, spins, err);
	free(out);
	free(err);
}

ParameterizedTestParameters(python, threads)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_any),
				   test_npythons_any);
}

/*
 * Four busy threads each appear under their own thread; the main thread,
 * sleeping in join(), only with --idle.
 */
ParameterizedTest(size_t *i, python, threads, .timeout = 60)
{
	const struct interp *in = test_python_any(*i);
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
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_any),
				   test_npythons_any);
}

/* Qualified names where the version has them; sensible names for the rest. */
ParameterizedTest(size_t *i, python, names, .timeout = 60)
{
	const struct interp *in = test_python_any(*i);
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

ParameterizedTestParameters(python, freethreaded_parallel)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_ft),
				   test_npythons_ft);
}

/*
 * A free-threaded build runs its threads at once: four busy threads are
 * all running (or runnable) in a sample, where a GIL build has about one
 * (the others wait for the GIL, asleep).  So well over one busy stack per
 * sample, each thread in about every sample, and no GIL holder claimed.
 */
ParameterizedTest(size_t *i, python, freethreaded_parallel, .timeout = 60)
{
	const struct interp *in = &test_pythons_ft[*i];
	const char *extra[] = { "-v", "--threads", "-r", "100", "-d", "3", "-f", "folded", NULL };
	char file[64], *err, *out;
	const char *p, *path;
	unsigned long samples = 0, busy = 0;
	int st;

	snprintf(file, sizeof(file), "/tmp/pyrospy-test-ft-%d.folded", (int)getpid());
	path = test_target_for(in, "threads.py");
	st = test_record_to(in, "threads.py", extra, file, &err);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	p = strstr(err, " ticks in ");
	while (p && p > err && p[-1] >= '0' && p[-1] <= '9')
		p--;
	if (p)
		samples = strtoul(p, NULL, 10);
	out = test_slurp(file);
	unlink(file);
	test_busy_threads_apart(out, in->bin, "");
	for (int k = 0; k < 4; k++) {
		char fn[16], at[1100];
		unsigned long n, on = 0;

		snprintf(fn, sizeof(fn), "busy%d (", k);
		n = test_folded_count(out, fn);
		cr_assert_geq(n, samples / 2, "%s: busy%d in %lu of %lu samples", in->bin, k, n,
			      samples);
		busy += n;
		/* busyK is defined at line 6 + 5K; its loop is on the next two */
		for (int l = 7 + 5 * k; l <= 8 + 5 * k; l++) {
			snprintf(at, sizeof(at), "busy%d (%s:%d)", k, path, l);
			on += test_folded_count(out, at);
		}
		cr_assert_eq(on, n, "%s: busy%d off its loop's lines:\n%s", in->bin, k, out);
	}
	cr_assert_gt(samples, 100, "%s: %lu samples: %s", in->bin, samples, err);
	cr_assert_geq(busy, samples * 2, "%s: %lu busy stacks in %lu samples: not parallel",
		      in->bin, busy, samples);
	free(out);
	free(err);
}

ParameterizedTestParameters(python, freethreaded_gil_refused)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_ft),
				   test_npythons_ft);
}

/* --gil on a build without a GIL: one line and EXIT_UNSUPPORTED, never an empty profile. */
ParameterizedTest(size_t *i, python, freethreaded_gil_refused, .timeout = 60)
{
	const struct interp *in = &test_pythons_ft[*i];
	const char *extra[] = { "--gil", "-r", "100", "-d", "1", NULL };
	char file[64], *err;
	const char *p;
	int st;

	snprintf(file, sizeof(file), "/tmp/pyrospy-test-ftgil-%d.folded", (int)getpid());
	st = test_record_to(in, "threads.py", extra, file, &err);
	unlink(file);
	cr_assert_eq(st, 6, "%s: exit %d: %s", in->bin, st, err);
	/* one error line and its hint, nothing else */
	cr_assert(!strncmp(err, "pyrospy: error: --gil: Python 3.", 32), "%s", err);
	cr_assert_not_null(strstr(err, "t (process "), "%s", err);
	cr_assert_not_null(strstr(err, ") is a free-threaded build: it has no GIL\nhint: "), "%s",
			   err);
	p = strchr(err, '\n');
	cr_assert(p && strchr(p + 1, '\n') && !strchr(p + 1, '\n')[1], "%s", err);
	free(err);
}

ParameterizedTestParameters(python, freethreaded_unknown_layout)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_ft),
				   test_npythons_ft);
}

/*
 * A free-threaded build whose _Py_DebugOffsets does not hold together
 * (here: its object header made to say 16 bytes, as a GIL build's, by
 * writing the running target's own table) is refused as unsupported, with
 * its version and a hint: never read as a GIL build, never an empty or
 * wrong profile.  (A reader that fails is tried again for a second, as
 * for an interpreter starting up: -d 5 outlasts that.)
 */
ParameterizedTest(size_t *i, python, freethreaded_unknown_layout, .timeout = 60)
{
	const struct interp *in = &test_pythons_ft[*i];
	const char *sargs[] = { test_target_for(in, "seed.py"), NULL };
	const struct pyvm_debug_layout *dl = pyvm_debug_find(in->minor);
	char ready[64], pidbuf[32], mem[64], *out, *err;
	const char *args[] = { "record", "--pid", pidbuf, "-d", "5", "-o", "-", "-f", "folded",
			       NULL };
	uint64_t runtime, eight = 8;
	struct target t;
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int tls, fd, st;

	cr_assert_not_null(dl);
	cr_assert_eq(target_open(&t, pid), PERR_OK);
	cr_assert(t.free_threaded, "%s: not seen as free-threaded", in->bin);
	cr_assert_eq(target_symbol(&t, "_PyRuntime", &runtime, &tls), PERR_OK);
	target_close(&t);
	snprintf(mem, sizeof(mem), "/proc/%d/mem", (int)pid);
	fd = open(mem, O_RDWR);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, &eight, 8, (off_t)(runtime + dl->pyobject_ob_type)), 8);
	close(fd);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 6, "%s: exit %d: %s\n%s", in->bin, st, err, out);
	cr_assert_not_null(strstr(err, "t is not supported (process "), "%s", err);
	cr_assert_not_null(strstr(err, "hint: a free-threaded build"), "%s", err);
	cr_assert_eq(*out, '\0', "%s: a profile: %s", in->bin, out);
	free(out);
	free(err);
}
