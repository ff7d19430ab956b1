/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "proc/target.h"

/*
 * record --async against tests/targets/asyncrec.py, where each task runs
 * a function of its own (work_handler_0 only in the task "handler-0"...):
 * every sample of such a function must be under exactly the chain of tasks
 * the program built ("<task> Task-1;<task> server;<task> handler-0", right
 * over the task's coroutine "handler"), and at least 90 % of them must
 * have it (the rest: no task frame at all, a stack read while the running
 * task changed is dropped, never shown under another).  On 3.15 the
 * chains are also those CPython's own `profiling.sampling --async-aware'
 * finds in the same process.  The free-threaded 3.13 is read like the
 * others.  Where --async cannot read the tasks (Ruby), it is refused in
 * one line, exit 6.
 */

#define MAXF	512	/* frames of one folded line */

/* The tasks that run work_NAME, outermost first, and the coroutine under them. */
static int expected(const char *work, const char **chain, const char **coro)
{
	static char last[64];

	if (!strcmp(work, "work_ticker")) {
		chain[0] = "ticker";
		*coro = "ticker";
		return 1;
	}
	if (!strncmp(work, "work_handler_", 13) || !strncmp(work, "work_short_", 11)) {
		snprintf(last, sizeof(last), "%s-%s", !strncmp(work, "work_handler_", 13) ?
			 "handler" : "short", strrchr(work, '_') + 1);
		chain[0] = "Task-1";
		chain[1] = "server";
		chain[2] = last;
		*coro = "handler";
		return 3;
	}
	return 0;
}

struct counts {
	char work[32];
	unsigned long ok, bare;	/* under the right chain; under no task */
	unsigned long shared;	/* of ok: under "<awaited by 2 tasks>" */
	unsigned long eager;	/* of ok: run eagerly, inside server's step */
};

#define SHARED	1	/* handler-0 may be awaited by two tasks (mode "shared") */
#define EAGER	2	/* tasks may run inside create_task() (mode "eager") */

/*
 * A task run eagerly: its task alone, right over its coroutine, on top of
 * its creator's own frames (the creator's task is running create_task()):
 * a handler inside server's step, and the ticker inside main's, once, at
 * the start (seen under exec on 3.13: 1 sample).  Its name is the one
 * given from 3.14 on; before, create_task() names the task after the
 * factory returns, so it is still "Task-N" then.
 */
static int eager_ok(unsigned int minor, char **f, int first, int w, const char *task,
		    const char *creator, const char *coro, const char *want)
{
	int under = 0;

	for (int i = 0; i < first; i++)
		under |= !strcmp(f[i], creator);
	if (!under || first != w - 2 || strcmp(f[w - 1], coro))
		return 0;
	if (minor >= 14)
		return !strcmp(task, want);
	return !strncmp(task, "Task-", 5) && task[5] && strspn(task + 5, "0123456789") == strlen(task + 5);
}

/*
 * Check every line of folded (record --function) holding a work_ frame;
 * count them per function into c (up to 8).  Fails on any line whose
 * work_ frame sits under another chain of tasks.  root, when given, is
 * the first frame every such line must start with.  With SHARED in how
 * (mode "shared"), handler-0 may also be under "<awaited by 2 tasks>"
 * alone, once the second task awaits it; with EAGER (mode "eager"), a
 * handler may run inside server's step, the ticker inside main's (eager_ok()).
 */
static size_t check_folded(const struct interp *in, char *folded, struct counts *c,
			   const char *root, int how)
{
	const char *bin = in->bin;

	size_t nc = 0;

	for (char *line = strtok(folded, "\n"); line; line = strtok(NULL, "\n")) {
		char *f[MAXF], *sp = strrchr(line, ' ');
		const char *chain[4], *coro, *task[MAXF];
		unsigned long n;
		int nf = 0, w = -1, nt = 0, first = -1, want, ok;
		size_t k;

		cr_assert(sp, "%s: folded line: %s", bin, line);
		*sp = 0;
		n = strtoul(sp + 1, NULL, 10);
		for (char *p = line, *e; p && nf < MAXF; p = e) {
			char *par;

			e = strchr(p, ';');
			if (e)
				*e++ = 0;
			par = strstr(p, " (");	/* "name (file)" */
			if (par && strncmp(p, "<task> ", 7))
				*par = 0;
			f[nf++] = p;
		}
		for (int i = 0; i < nf; i++) {
			if (!strncmp(f[i], "work_", 5))
				w = i;
			if (!strncmp(f[i], "<task> ", 7)) {
				if (first < 0)
					first = i;
				task[nt++] = f[i] + 7;
			}
		}
		if (w < 0)
			continue;
		want = expected(f[w], chain, &coro);
		cr_assert(want, "%s: unknown work function %s", bin, f[w]);
		for (k = 0; k < nc && strcmp(c[k].work, f[w]); k++)
			;
		if (k == nc) {
			cr_assert_lt(nc, 8);
			snprintf(c[nc++].work, sizeof(c->work), "%s", f[w]);
		}
		/* 3.9 names functions without their class: _bootstrap */
		if (root)
			cr_assert(!strcmp(f[0], root) || (strchr(root, '.') &&
				  !strcmp(f[0], strchr(root, '.') + 1)), "%s: %s not under %s: %s",
				  bin, f[w], root, f[0]);
		if (!nt) {
			c[k].bare += n;
			continue;
		}
		/* the chain, contiguous, right over the task's coroutine and work_ */
		ok = nt == want && first + nt == w - 1 && !strcmp(f[w - 1], coro);
		for (int i = 0; ok && i < nt; i++)
			ok = !strcmp(task[i], chain[i]);
		if (!ok && (how & EAGER) && nt == 1 &&
		    (!strncmp(f[w], "work_handler_", 13) || !strcmp(f[w], "work_ticker")) &&
		    eager_ok(in->minor, f, first, w, task[0], want == 1 ? "main" : "server", coro,
			     chain[want - 1])) {
			ok = 1;
			c[k].eager += n;
		}
		if (!ok && (how & SHARED) && !strcmp(f[w], "work_handler_0") && nt == 1 &&
		    first == w - 2 && first > 0 && !strcmp(task[0], "handler-0") &&
		    !strcmp(f[w - 1], coro) && !strcmp(f[first - 1], "<awaited by 2 tasks>")) {
			ok = 1;
			c[k].shared += n;
		}
		if (!ok) {
			char got[4096] = "";

			for (int i = 0; i < nf; i++)
				snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s",
					 i ? ";" : "", f[i]);
			cr_assert_fail("%s: %s under the wrong tasks (%lu samples): %s", bin, f[w],
				       n, got);
		}
		c[k].ok += n;
	}
	return nc;
}

/*
 * Profile asyncrec.py MODE with --async (the process keep, else one
 * started for it; with exec, `pyrospy exec' starts it, before asyncio is
 * imported); the folded profile (caller frees).
 */
static char *record_async(const struct interp *in, const char *mode, pid_t keep, int exec,
			  char **err)
{
	char ready[256], pidbuf[32], file[96], root[1024], *out;
	const char *sargs[] = { test_target_for(in, "asyncrec.py"), mode, NULL };
	const char *args[24] = { "record", "--pid", pidbuf, "--async", "--function", "-r", "100",
				 "-d", "3", "-f", "folded", "-o", file, "-v", NULL };
	pid_t pid = keep;
	int st, n = 14;

	if (exec) {
		memmove(args + 1, args + 3, sizeof(*args) * (n - 3));
		n -= 2;
		args[0] = "exec";
		args[n++] = "--";
		if (in->root) {
			snprintf(root, sizeof(root), "%s/%s", test_chroots(), in->root);
			args[n++] = "chroot";
			args[n++] = root;
		}
		args[n++] = in->bin;
		args[n++] = sargs[0];
		args[n++] = mode;
		args[n] = NULL;
	} else if (!pid) {
		pid = test_start(in, sargs, ready, sizeof(ready));
		cr_assert(!strncmp(ready, "ready", 5), "%s: target: %s", in->bin, ready);
	}
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(file, sizeof(file), "/tmp/pyrospy-test-asyncrec-%d.folded", (int)getpid());
	st = test_pyrospy(args, &out, err);
	free(out);
	if (!keep && !exec)
		test_stop(pid);
	cr_assert_eq(st, 0, "%s %s: exit %d: %s", in->bin, mode, st, *err);
	cr_log_info("%s %s: %s", in->bin, mode, *err);
	out = test_slurp(file);
	unlink(file);
	return out;
}

/* The works of mode, each present, with >= 90 % of its samples under its chain. */
static void check_mode(const struct interp *in, const char *mode, int exec)
{
	static const char *const direct[] = { "work_handler_0", "work_handler_1", "work_ticker",
					      NULL };
	static const char *const churn[] = { "work_short_0", "work_short_1", "work_short_2",
					     "work_ticker", NULL };
	static const char *const shared[] = { "work_handler_0", "work_ticker", NULL };
	const char *const *works = !strcmp(mode, "churn") ? churn :
				   !strcmp(mode, "shared") ? shared : direct;
	struct counts c[8];
	char *err, *out = record_async(in, mode, 0, exec, &err), *copy = strdup(out);
	unsigned long eager = 0;
	size_t nc;

	memset(c, 0, sizeof(c));
	nc = check_folded(in, copy, c, !strcmp(mode, "thread") ? "Thread._bootstrap" : "<module>",
			  !strcmp(mode, "shared") ? SHARED : !strcmp(mode, "eager") ? EAGER : 0);
	for (size_t i = 0; works[i]; i++) {
		size_t k;

		for (k = 0; k < nc && strcmp(c[k].work, works[i]); k++)
			;
		cr_assert_lt(k, nc, "%s %s: no sample of %s:\n%s", in->bin, mode, works[i], out);
		cr_log_info("%s %s: %s: %lu under its tasks (%lu run eagerly), %lu under none",
			    in->bin, mode, works[i], c[k].ok, c[k].eager, c[k].bare);
		cr_assert_geq(c[k].ok, 10, "%s %s: %s: %lu samples under its tasks:\n%s", in->bin,
			      mode, works[i], c[k].ok, out);
		cr_assert_geq(c[k].ok * 10, (c[k].ok + c[k].bare) * 9,
			      "%s %s: %s: %lu of %lu samples under its tasks:\n%s", in->bin, mode,
			      works[i], c[k].ok, c[k].ok + c[k].bare, out);
		/* 9 of its 10 rounds are run once waiter awaits it too */
		if (!strcmp(mode, "shared") && !strcmp(works[i], "work_handler_0"))
			cr_assert_geq(c[k].shared * 2, c[k].ok,
				      "%s shared: %lu of %lu samples awaited by 2 tasks:\n%s",
				      in->bin, c[k].shared, c[k].ok, out);
		if (!strncmp(works[i], "work_handler_", 13))
			eager += c[k].eager;
	}
	/* each handler's first round of ten is run eagerly */
	if (!strcmp(mode, "eager"))
		cr_assert_gt(eager, 0, "%s eager: no sample of a handler run eagerly:\n%s", in->bin,
			     out);
	free(copy);
	free(out);
	free(err);
}

/*
 * An eager task factory (3.12+), under `pyrospy exec': pyrospy is there
 * before asyncio is imported.  A handler's first round runs inside
 * create_task(), in server's step, under its own task alone; the other
 * nine under Task-1;server;handler-K as in "direct".
 */
ParameterizedTestParameters(asyncrec, eager_under_exec)
{
	size_t *v = cr_malloc(sizeof(size_t) * test_npythons_any), n = 0;

	for (size_t i = 0; i < test_npythons_any; i++)
		if (test_python_any(i)->minor >= 12)
			v[n++] = i;
	return cr_make_param_array(size_t, v, n);
}

ParameterizedTest(size_t *i, asyncrec, eager_under_exec, .timeout = 100)
{
	check_mode(test_python_any(*i), "eager", 1);
}

/* Refused in one line with exit 6, for interpreter in. */
static void check_refused(const struct interp *in, const char *const *sargs)
{
	char ready[256], pidbuf[32], *out, *err;
	const char *args[] = { "record", "--pid", pidbuf, "--async", "-d", "1", "-o", "/dev/null",
			       NULL };
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int st;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 6, "%s: --async: exit %d: %s", in->bin, st, err);
	cr_assert(!strncmp(err, "pyrospy: error: --async: process ", 33) &&
		  strstr(err, in->lang == TARGET_RUBY ? " is Ruby " : " is Python "), "%s: %s",
		  in->bin, err);
	cr_assert(strstr(err, "of Python"), "%s: %s", in->bin, err);
	/* the error and its hint: two lines */
	cr_assert(strchr(err, '\n') && strchr(strchr(err, '\n') + 1, '\n') &&
		  !*(strchr(strchr(err, '\n') + 1, '\n') + 1), "%s: %s", in->bin, err);
	free(out);
	free(err);
}

ParameterizedTestParameters(asyncrec, chains)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_any),
				   test_npythons_any);
}

/*
 * Direct awaits, gather(), a TaskGroup (3.11+), a loop in a second thread,
 * tasks that end and are replaced every few milliseconds and a task
 * awaited by two: each work function under its own chain, never another.
 */
ParameterizedTest(size_t *i, asyncrec, chains, .timeout = 200)
{
	const struct interp *in = test_python_any(*i);
	const char *modes[] = { "direct", "gather", "group", "thread", "churn", "shared", NULL };

	for (size_t m = 0; modes[m]; m++)
		if (strcmp(modes[m], "group") || in->minor >= 11)	/* TaskGroup: 3.11+ */
			check_mode(in, modes[m], 0);
}

/*
 * The pyenv builds every machine has, CI too (3.8, 3.10, 3.12: no Debian
 * chroot of theirs): direct awaits, gather() and tasks that come and go,
 * each work function under its own chain.
 */
static const struct interp pyenvs[] = {
	{ NULL, "/root/.pyenv/versions/3.8.18/bin/python3.8", TARGET_PYTHON, 3, 8 },
	{ NULL, "/root/.pyenv/versions/3.10.13/bin/python3.10", TARGET_PYTHON, 3, 10 },
	{ NULL, "/root/.pyenv/versions/3.12.1/bin/python3.12", TARGET_PYTHON, 3, 12 },
};

ParameterizedTestParameters(asyncrec, chains_pyenv)
{
	return cr_make_param_array(size_t, (void *)test_indexes(3), 3);
}

ParameterizedTest(size_t *i, asyncrec, chains_pyenv, .timeout = 100)
{
	const char *modes[] = { "direct", "gather", "churn", NULL };

	for (size_t m = 0; modes[m]; m++)
		check_mode(&pyenvs[*i], modes[m], 0);
}

/* Ruby: refused in one line, exit 6. */
Test(asyncrec, refused_ruby, .timeout = 60)
{
	const char *rargs[] = { test_target_for(&test_rubies[0], "seed.rb"), NULL };

	check_refused(&test_rubies[0], rargs);
}

/*
 * CPython 3.15's own sampler, `python3.15 -m profiling.sampling attach
 * --async-aware --collapsed', on the same process: for each work
 * function, the chain of tasks most of its samples have there is the one
 * pyrospy shows (CPython keeps the awaiting tasks' coroutine frames
 * between the task frames, "<task>:NAME:0"; only the tasks are compared).
 */
Test(asyncrec, same_as_cpython_3_15, .timeout = 120)
{
	const struct interp *in = NULL;
	char ready[256], cmd[1024], *theirs, *err, *out, *copy;
	const char *sargs[3] = { NULL, "direct", NULL };
	struct counts c[8];
	size_t nc;
	pid_t pid;
	int st;

	for (size_t i = 0; i < test_npythons; i++)
		if (test_pythons[i].minor == 15)
			in = &test_pythons[i];
	cr_assert(in, "no Python 3.15 in the matrix");
	sargs[0] = test_target_for(in, "asyncrec.py");
	pid = test_start(in, sargs, ready, sizeof(ready));
	cr_assert(!strncmp(ready, "ready", 5), "target: %s", ready);
	snprintf(cmd, sizeof(cmd),
		 "R=%s/%s; { mountpoint -q \"$R/proc\" || mount -t proc proc \"$R/proc\"; } && "
		 "chroot \"$R\" %s -m profiling.sampling attach --async-aware --collapsed -d 3 "
		 "-o /tmp/pyrospy-test-asyncrec.collapsed %d >/dev/null && "
		 "cat \"$R/tmp/pyrospy-test-asyncrec.collapsed\" && "
		 "rm -f \"$R/tmp/pyrospy-test-asyncrec.collapsed\"",
		 test_chroots(), in->root, in->bin, (int)pid);
	theirs = test_run(cmd, &st);
	out = record_async(in, "direct", pid, 0, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d", cmd, st);
	/* pyrospy: every work function under its chain */
	copy = strdup(out);
	memset(c, 0, sizeof(c));
	nc = check_folded(in, copy, c, "<module>", 0);
	cr_assert_eq(nc, 3, "%s:\n%s", in->bin, out);
	free(copy);
	/* CPython: the chain of most of each work function's samples */
	for (size_t k = 0; k < nc; k++) {
		const char *chain[4], *coro;
		char want[256] = "", *buf = strdup(theirs);
		unsigned long match = 0, all = 0;
		int n = expected(c[k].work, chain, &coro);

		for (int j = 0; j < n; j++)
			snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s",
				 j ? ";" : "", chain[j]);
		for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
			char needle[512], got[512] = "", *sp = strrchr(line, ' ');
			unsigned long cnt;

			snprintf(needle, sizeof(needle), ":%.31s:", c[k].work);
			if (!sp || !strstr(line, needle))
				continue;
			cnt = strtoul(sp + 1, NULL, 10);
			for (char *p = strstr(line, "<task>:"); p; p = strstr(p + 1, "<task>:")) {
				const char *name = p + 7, *end = strchr(name, ':');

				if (end)
					snprintf(got + strlen(got), sizeof(got) - strlen(got),
						 "%s%.*s", *got ? ";" : "", (int)(end - name), name);
			}
			all += cnt;
			if (!strcmp(got, want))
				match += cnt;
			else
				cr_log_info("CPython: %s under %s (%lu samples)", c[k].work, got, cnt);
		}
		cr_log_info("%s: CPython %lu of %lu samples under %s; pyrospy %lu", c[k].work,
			    match, all, want, c[k].ok);
		cr_assert_gt(all, 20, "CPython: %lu samples of %s:\n%s", all, c[k].work, theirs);
		cr_assert_geq(match * 10, all * 9, "CPython: %s under %s in %lu of %lu:\n%s",
			      c[k].work, want, match, all, theirs);
		free(buf);
	}
	free(theirs);
	free(out);
	free(err);
}
