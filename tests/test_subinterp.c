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
 * Threads of a Python program that runs subinterpreters (3.12+): each
 * interpreter has its own threading module, and a thread running code in
 * a subinterpreter has a thread state in each, its main interpreter's
 * suspended below.  tests/targets/subinterp.py names its main thread and a
 * "worker" in the main interpreter; "runner" runs a busy loop in a
 * subinterpreter that names the thread "subloop" in its own threading;
 * "sleeper" sleeps in one that has no threading, the first on the
 * runtime's list.  Each thread state is named from its own interpreter,
 * and one of a subinterpreter says which (its id, as
 * concurrent.interpreters gives it): in dump "(interpreter N, ...)", in
 * --threads roots "thread (TID) [interpreter N]".
 */

/* pyenv's 3.12 (no Debian chroot of it), and the matrix's 3.12+ builds. */
static const struct interp pyenv312 = {
	NULL, "/root/.pyenv/versions/3.12.1/bin/python3.12", TARGET_PYTHON, 3, 12
};

static const struct interp *python(size_t i, size_t *n)
{
	const struct interp *in = NULL;

	*n = 1;
	if (i == 0)
		in = &pyenv312;
	for (size_t k = 0; k < test_npythons_any; k++) {
		const struct interp *p = test_python_any(k);

		if (p->major == 3 && p->minor >= 12 && (*n)++ == i)
			in = p;
	}
	return in;
}

struct ids {
	char main[16], worker[16], runner[16], sleeper[16], spin[24], sleep[24];
};

static void parse_ready(const char *ready, struct ids *t)
{
	cr_assert_eq(sscanf(ready, "ready %15s %15s %15s %15s %23s %23s", t->main, t->worker,
			    t->runner, t->sleeper, t->spin, t->sleep), 6, "ready line: %s", ready);
	cr_assert(strcmp(t->spin, "0") && strcmp(t->sleep, "0"), "ready line: %s", ready);
}

/* The line of text that starts with start (after a newline), or NULL. */
static const char *line_at(const char *text, const char *start, size_t *len)
{
	char want[128];
	const char *p;

	snprintf(want, sizeof(want), "\n%s", start);
	p = strstr(text, want);
	if (!p)
		return NULL;
	*len = strcspn(p + 1, "\n");
	return p + 1;
}

/* The next line of dump after the one that starts with start starts with frame. */
static void dump_has(const char *bin, const char *out, const char *start, const char *frame)
{
	size_t len;
	const char *l = line_at(out, start, &len);

	cr_assert_not_null(l, "%s: dump: no line '%s' in:\n%s", bin, start, out);
	cr_assert(l[len] == '\n' && !strncmp(l + len + 1, frame, strlen(frame)),
		  "%s: dump: '%.*s' is not followed by '%s' in:\n%s", bin, (int)len, l, frame, out);
}

/* The line of dump that starts with start says no interpreter: the main one's. */
static void dump_main(const char *bin, const char *out, const char *start)
{
	size_t len;
	const char *l = line_at(out, start, &len);

	cr_assert(l && !memmem(l, len, "interpreter", 11), "%s: dump: '%s' of a subinterpreter:\n%s",
		  bin, start, out);
}

/*
 * Every folded line with needle starts with one of the roots (up to two;
 * NULL: none), and there is at least one.
 */
static void folded_under(const char *bin, const char *folded, const char *needle,
			 const char *root1, const char *root2)
{
	unsigned int n = 0;

	for (const char *p = folded; *p;) {
		size_t len = strcspn(p, "\n");
		char line[8192];

		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		if (strstr(line, needle)) {
			n++;
			cr_assert(!strncmp(line, root1, strlen(root1)) ||
				  (root2 && !strncmp(line, root2, strlen(root2))),
				  "%s: folded: '%s' not under '%s'%s%s:\n%s", bin, needle, root1,
				  root2 ? " or " : "", root2 ? root2 : "", line);
		}
		p += len + (p[len] == '\n');
	}
	cr_assert_gt(n, 0, "%s: folded: no '%s' in:\n%s", bin, needle, folded);
}

ParameterizedTestParameters(subinterp, names)
{
	size_t n;

	python(0, &n);
	return cr_make_param_array(size_t, (void *)test_indexes(n), n);
}

ParameterizedTest(size_t *i, subinterp, names, .timeout = 60)
{
	size_t n;
	const struct interp *in = python(*i, &n);
	const char *sargs[] = { test_target_for(in, "subinterp.py"), NULL };
	char ready[256], pidbuf[32], file[64], want[192], want2[192], *out, *err, *folded, *rep;
	const char *dargs[] = { "dump", "--pid", pidbuf, NULL };
	const char *rargs[] = { "record", "--pid", pidbuf, "--threads", "--idle", "-r", "50",
				"-d", "1", "-f", "folded", "-o", file, NULL };
	const char *pargs[] = { "report", file, "--thread", "subloop", "--threads", "-f",
				"folded", NULL };
	struct ids t;
	pid_t pid;
	int st;

	cr_assert_not_null(in);
	pid = test_start(in, sargs, ready, sizeof(ready));
	parse_ready(ready, &t);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(file, sizeof(file), "/tmp/pyrospy-subinterp-%d.folded", (int)getpid());
	st = test_pyrospy(dargs, &out, &err);
	cr_assert_eq(st, 0, "%s: dump: exit %d: %s", in->bin, st, err);
	free(err);
	st = test_pyrospy(rargs, &rep, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: record: exit %d: %s", in->bin, st, err);
	free(rep);
	free(err);
	folded = test_slurp(file);

	/* dump: the main interpreter's names, with no interpreter said */
	snprintf(want, sizeof(want), "Thread %s \"MainThread\" (", t.main);
	dump_has(in->bin, out, want, "    main_wait (");
	snprintf(want, sizeof(want), "Thread %s \"worker\" (", t.worker);
	dump_has(in->bin, out, want, "    worker_wait (");
	/* 3.14+ name the OS thread "subloop" from the subinterpreter's threading */
	snprintf(want, sizeof(want), "Thread %s \"runner", t.runner);
	dump_has(in->bin, out, want, "    ");
	dump_main(in->bin, out, want);
	snprintf(want, sizeof(want), "Thread %s \"sleeper\" (", t.sleeper);
	dump_has(in->bin, out, want, "    ");
	dump_main(in->bin, out, want);
	cr_assert_not_null(strstr(out, "runner_enter ("), "%s: dump:\n%s", in->bin, out);
	/* a subinterpreter's thread state: its own name, and its interpreter */
	snprintf(want, sizeof(want), "Thread %s \"subloop\" (interpreter %s, ", t.runner,
		 t.spin);
	dump_has(in->bin, out, want, "    subspin (");
	/* no threading there: no Python name (3.14+: the OS name the main one set) */
	snprintf(want, sizeof(want), "Thread %s (interpreter %s, ", t.sleeper, t.sleep);
	snprintf(want2, sizeof(want2), "Thread %s \"[sleeper]\" (interpreter %s, ", t.sleeper,
		 t.sleep);
	dump_has(in->bin, out, in->minor >= 14 ? want2 : want, "    subsleep (");

	/* record --threads: one root per thread state, the subinterpreters' said */
	snprintf(want, sizeof(want), "thread (%s): MainThread;", t.main);
	folded_under(in->bin, folded, "main_wait (", want, NULL);
	snprintf(want, sizeof(want), "thread (%s): worker;", t.worker);
	folded_under(in->bin, folded, "worker_wait (", want, NULL);
	snprintf(want, sizeof(want), "thread (%s): runner", t.runner);
	folded_under(in->bin, folded, "runner_enter (", want, NULL);
	snprintf(want, sizeof(want), "thread (%s): sleeper;", t.sleeper);
	folded_under(in->bin, folded, "sleeper_enter (", want, NULL);
	snprintf(want, sizeof(want), "thread (%s) [interpreter %s]: subloop;", t.runner, t.spin);
	folded_under(in->bin, folded, "subspin (", want, NULL);
	snprintf(want, sizeof(want), "thread (%s) [interpreter %s];", t.sleeper, t.sleep);
	snprintf(want2, sizeof(want2), "thread (%s) [interpreter %s]: [sleeper];", t.sleeper,
		 t.sleep);
	folded_under(in->bin, folded, "subsleep (", want, want2);

	/* and read back: the root is a thread's, named "subloop" */
	st = test_pyrospy(pargs, &rep, &err);
	cr_assert_eq(st, 0, "%s: report: exit %d: %s", in->bin, st, err);
	snprintf(want, sizeof(want), "thread (%s) [interpreter %s]: subloop;", t.runner, t.spin);
	folded_under(in->bin, rep, "subspin (", want, NULL);
	cr_assert_null(strstr(rep, "main_wait ("), "%s: report --thread subloop:\n%s", in->bin,
		       rep);
	unlink(file);
	free(rep);
	free(err);
	free(out);
	free(folded);
}
