/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "proc/target.h"

/*
 * Targets that die, stop or go very deep while being profiled: pyrospy
 * neither crashes nor hangs, writes what it sampled, and says what
 * happened.
 */

/*
 * Start the target (script and its args, NULL-terminated), then record it
 * with pyrospy's extra options while `act' (a shell command: $0 is the
 * target's pid, $$ pyrospy's) runs beside.
 */
static int record_with(const struct interp *in, const char *const *script, const char *act,
		       const char *const *extra, char **out, char **err)
{
	const char *sargs[8] = { test_target_for(in, script[0]) };
	char ready[64], pidbuf[32], cmd[1024];
	const char *wrap[] = { "sh", "-c", cmd, pidbuf, NULL };
	const char *args[24] = { "record", "--pid", pidbuf, "-f", "folded", "-o", "-" };
	int n = 7, st;
	pid_t pid;

	for (int i = 1; script[i] && i < 7; i++)
		sargs[i] = script[i];
	for (int i = 0; extra[i] && n < 23; i++)
		args[n++] = extra[i];
	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	/* sh runs the action in the background and becomes pyrospy */
	snprintf(cmd, sizeof(cmd), "(%s) & exec \"$@\"", act);
	st = test_pyrospy_wrapped(wrap, args, out, err);
	test_stop(pid);
	return st;
}

/* record the target for secs while `act' runs beside */
static int record_while(const struct interp *in, const char *script, const char *act,
			const char *secs, char **out, char **err)
{
	const char *sargs[] = { script, NULL };
	const char *extra[] = { "-d", secs, NULL };

	return record_with(in, sargs, act, extra, out, err);
}

/* a frame of function name: "name (" (its file may hold the name too) */
static const char *fn(const struct interp *in, const char *name)
{
	static char buf[4][160];
	static int k;
	char *b = buf[k++ % 4];

	snprintf(b, 160, "%s (", test_func(in, name));
	return b;
}

/* the script of in's language */
static const char *of(const struct interp *in, const char *base)
{
	static char buf[4][64];
	static int k;
	char *b = buf[k++ % 4];

	snprintf(b, 64, "%s.%s", base, in->lang == TARGET_RUBY ? "rb" : "py");
	return b;
}

/* the "N dropped" of pyrospy's closing counts (-v), and its samples */
static unsigned long dropped(const char *err, unsigned long *samples)
{
	const char *p = strstr(err, " ticks in ");
	unsigned long d = 0;

	cr_assert_not_null(p, "no counts in: %s", err);
	while (p > err && p[-1] >= '0' && p[-1] <= '9')
		p--;
	*samples = strtoul(p, NULL, 10);
	p = strstr(p, " samples, ");
	cr_assert_not_null(p, "%s", err);
	d = strtoul(p + 10, NULL, 10);
	return d;
}

static void killed(const struct interp *in, const char *script, const char *leaf)
{
	char *out, *err;
	int st = record_while(in, script, "sleep 1.5; kill -9 $0", "20", &out, &err);

	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_not_null(strstr(err, "exited; writing what was sampled"), "%s: %s", in->bin, err);
	cr_assert_gt(test_folded_count(out, leaf), 50, "%s: profile so far lost:\n%s", in->bin,
		     out);
	free(out);
	free(err);
}

Test(dying, python_killed_mid_profile, .timeout = 60)
{
	killed(&test_pythons[1], "seed.py", "work (");
}

Test(dying, ruby_killed_mid_profile, .timeout = 60)
{
	killed(&test_rubies[1], "seed.rb", "Object#work (");
}

/* SIGSTOP then SIGCONT: sampling goes on and ends on time. */
static void stopped(const struct interp *in, const char *script, const char *leaf)
{
	char *out, *err;
	int st = record_while(in, script, "sleep 1; kill -STOP $0; sleep 1; kill -CONT $0", "3",
			      &out, &err);

	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_gt(test_folded_count(out, leaf), 50, "%s:\n%s\n%s", in->bin, out, err);
	free(out);
	free(err);
}

Test(dying, python_stopped_and_continued, .timeout = 60)
{
	stopped(&test_pythons[1], "seed.py", "work (");
}

Test(dying, ruby_stopped_and_continued, .timeout = 60)
{
	stopped(&test_rubies[1], "seed.rb", "Object#work (");
}

/* 10 000 frames: the leaf-most 4096 are kept, under a [truncated] mark. */
static void ten_thousand_deep(const struct interp *in, const char *script)
{
	const char *extra[] = { "-r", "50", "-d", "2", NULL };
	const char *path;
	char *out = test_profile(in, script, extra, &path);
	char want[64];

	snprintf(want, sizeof(want), "[truncated];%s (", test_func(in, "rec"));
	cr_assert_gt(test_folded_count(out, want), 10, "%s: %.2000s", in->bin, out);
	snprintf(want, sizeof(want), ";%s (", test_func(in, "spin"));
	cr_assert_gt(test_folded_count(out, want), 10, "%s: %.2000s", in->bin, out);
	free(out);
}

Test(dying, python_ten_thousand_deep, .timeout = 60)
{
	ten_thousand_deep(&test_pythons[1], "deep.py");
}

Test(dying, ruby_ten_thousand_deep, .timeout = 60)
{
	ten_thousand_deep(&test_rubies[1], "deep.rb");
}

/*
 * exec() into a program that is no interpreter: what was sampled is
 * written, the message says what happened, nothing is dropped on the way.
 */
static void exec_away(const struct interp *in)
{
	const char *sargs[] = { of(in, "execs"), "sleep", NULL };
	const char *extra[] = { "-d", "20", NULL };
	char *out, *err;
	int st = record_with(in, sargs, "true", extra, &out, &err);

	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_not_null(strstr(err, "exec()'d 'sleep', which cannot be profiled"), "%s: %s",
			   in->bin, err);
	cr_assert_gt(test_folded_count(out, fn(in, "before_exec")), 50, "%s: %s", in->bin, out);
	cr_assert_leq(test_dropped_share(err), 0.01, "%s: %s", in->bin, err);
	free(out);
	free(err);
}

Test(dying, python_execs_another_program, .timeout = 60)
{
	exec_away(&test_pythons[1]);
}

Test(dying, ruby_execs_another_program, .timeout = 60)
{
	exec_away(&test_rubies[1]);
}

/* exec() into the interpreter again: sampling goes on in the new program. */
static void exec_self(const struct interp *in)
{
	const char *sargs[] = { of(in, "execs"), "self", NULL };
	const char *extra[] = { "-d", "4", NULL };
	char *out, *err;
	int st;

	test_target_for(in, of(in, "seed"));
	st = record_with(in, sargs, "true", extra, &out, &err);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_not_null(strstr(err, in->lang == TARGET_RUBY ? "exec()'d Ruby" : "exec()'d Python"),
			   "%s: %s", in->bin, err);
	cr_assert_gt(test_folded_count(out, fn(in, "before_exec")), 50, "%s: %s", in->bin, out);
	cr_assert_gt(test_folded_count(out, fn(in, "foo")), 50, "%s: %s", in->bin, out);
	cr_assert_leq(test_dropped_share(err), 0.01, "%s: %s", in->bin, err);
	free(out);
	free(err);
}

Test(dying, python_execs_itself, .timeout = 60)
{
	exec_self(&test_pythons[1]);
}

Test(dying, ruby_execs_itself, .timeout = 60)
{
	exec_self(&test_rubies[1]);
}

/* A forked child is not the process profiled, unless --subprocesses. */
static void forks(const struct interp *in)
{
	const char *sargs[] = { of(in, "forks"), NULL };
	const char *alone[] = { "-d", "2", NULL };
	const char *both[] = { "-d", "3", "--subprocesses", NULL };
	char *out, *err;
	int st = record_with(in, sargs, "true", alone, &out, &err);

	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_gt(test_folded_count(out, fn(in, "in_parent")), 50, "%s: %s", in->bin, out);
	cr_assert_eq(test_folded_count(out, fn(in, "in_child")), 0, "%s: %s", in->bin, out);
	free(out);
	free(err);
	st = record_with(in, sargs, "true", both, &out, &err);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_gt(test_folded_count(out, fn(in, "in_parent")), 50, "%s: %s", in->bin, out);
	cr_assert_gt(test_folded_count(out, fn(in, "in_child")), 50, "%s: %s", in->bin, out);
	free(out);
	free(err);
}

Test(dying, python_forks, .timeout = 60)
{
	forks(&test_pythons[1]);
}

Test(dying, ruby_forks, .timeout = 60)
{
	forks(&test_rubies[1]);
}

/* Threads that live a few milliseconds each, 8 at a time, sampled at 200 Hz. */
static void churn(const struct interp *in)
{
	const char *sargs[] = { of(in, "churn"), NULL };
	const char *extra[] = { "-d", "4", "-r", "200", "-v", NULL };
	unsigned long samples, drops, all, jobs;
	char *out, *err;
	int st = record_with(in, sargs, "true", extra, &out, &err);

	all = test_folded_count(out, "");
	jobs = test_folded_count(out, fn(in, "short_job"));
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	/*
	 * Threads of a millisecond are read: short_job is seen.  Its share
	 * is the scheduler's, not pyrospy's: 25-60 % on an idle machine, 9 %
	 * beside two builds (the main thread, runnable in Thread#join while
	 * the new threads wait for a core, took the rest), so what is
	 * asserted is a count that 4 s at 200 Hz give under load too.
	 */
	cr_assert(all > 100 && jobs >= 20, "%s: %lu of %lu in short_job: %s", in->bin, jobs,
		  all, out);
	drops = dropped(err, &samples);
	cr_assert_lt(drops * 20, samples, "%s: %lu of %lu dropped: %s", in->bin, drops, samples,
		     err);
	free(out);
	free(err);
}

Test(dying, python_thread_churn, .timeout = 60)
{
	churn(&test_pythons[1]);
}

Test(dying, ruby_thread_churn, .timeout = 60)
{
	churn(&test_rubies[1]);
}

/* The program ends itself, threads still running, work left in an exit handler. */
static void shutdown(const struct interp *in)
{
	const char *sargs[] = { of(in, "shutdown"), NULL };
	const char *extra[] = { "-d", "20", NULL };
	char *out, *err;
	int st = record_with(in, sargs, "true", extra, &out, &err);

	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_not_null(strstr(err, "exited; writing what was sampled"), "%s: %s", in->bin, err);
	cr_assert_gt(test_folded_count(out, fn(in, "main_work")), 50, "%s: %s", in->bin, out);
	cr_assert_gt(test_folded_count(out, fn(in, "at_exit_work")), 25, "%s: %s", in->bin, out);
	free(out);
	free(err);
}

Test(dying, python_shuts_down, .timeout = 60)
{
	shutdown(&test_pythons[1]);
}

Test(dying, ruby_shuts_down, .timeout = 60)
{
	shutdown(&test_rubies[1]);
}

/*
 * Every frame of out named as a victim, or at a victim's place (Ruby's
 * victims are defined at corrupt.rb:49, Python's in "<string>"), is a
 * victim with its own name and file as the program defined them
 * ("Object#victim_12 (.../corrupt.rb:49)", "victim_12 (<string>:3)"), or
 * the code that defines them there: none made of the garbage.  A victim
 * can be shown: a stack read while it ran whose names were read after the
 * program put them back (on a loaded machine, pyrospy descheduled between
 * the two reads: 1 sample of 350 seen) is a stack the program had.
 */
static void victims_named(const struct interp *in, const char *out)
{
	static const char *const rb_others[] = { "block in <main> (", "Module#class_eval (", NULL };
	static const char *const py_others[] = { "<module> (", NULL };
	int rb = in->lang == TARGET_RUBY;
	const char *prefix = rb ? "Object#victim_" : "victim_";
	const char *place = rb ? "/corrupt.rb:49)" : " (<string>:";
	const char *const *others = rb ? rb_others : py_others;

	for (const char *f = out; *f; f += strcspn(f, ";\n"), f += !!*f) {
		size_t len = strcspn(f, ";\n"), plen = strlen(prefix);
		int named = !strncmp(f, prefix, plen) && f[plen] >= '0' && f[plen] <= '9';
		int at = memmem(f, len, place, strlen(place)) != NULL, other = 0;

		if (!named && !memmem(f, len, "victim_", 7) && !at)
			continue;
		for (size_t i = 0; others[i]; i++)
			other |= !strncmp(f, others[i], strlen(others[i]));
		if (named && at)
			cr_log_info("%s: a victim's stack read as it was: %.*s", in->bin, (int)len, f);
		cr_assert((named && at) || (other && at), "%s: a corrupt frame shown: %.*s", in->bin,
			  (int)len, f);
	}
}

/*
 * The program points the names of its running code at garbage (ctypes,
 * Fiddle): those stacks are dropped and counted, never shown with the
 * garbage, and the rest is profiled as usual.
 */
static void corrupt(const struct interp *in)
{
	const char *sargs[] = { of(in, "corrupt"), NULL };
	const char *extra[] = { "-d", "4", "-v", NULL };
	unsigned long samples, drops;
	char *out, *err;
	int st = record_with(in, sargs, "true", extra, &out, &err);

	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_gt(test_folded_count(out, fn(in, "clean")), 100, "%s: %s", in->bin, out);
	victims_named(in, out);
	drops = dropped(err, &samples);
	cr_assert_gt(drops * 4, samples, "%s: %lu of %lu dropped: %s", in->bin, drops, samples,
		     err);
	free(out);
	free(err);
}

Test(dying, python_corrupts_its_code_objects, .timeout = 60)
{
	corrupt(&test_pythons[1]);
}

/* The free-threaded build: its 32-byte object headers, the same garbage. */
Test(dying, python_ft_corrupts_its_code_objects, .timeout = 60)
{
	corrupt(&test_pythons_ft[0]);
}

Test(dying, ruby_corrupts_its_iseq_labels, .timeout = 60)
{
	corrupt(&test_rubies[1]);
}
