/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "proc/target.h"
#include "util/xalloc.h"

/*
 * Exact or nothing: every stack pyrospy shows is one the program had.
 * Targets whose stacks change faster than a sample reads them are where a
 * walk reads frames that were freed, reused or rewritten under it.
 */

/*
 * What fastrec.{py,rb} may look like: the root frame (script line of the
 * loop), frames allowed between it and the recursion, the recursive
 * function and the line it calls itself on, and the lines its innermost
 * frame may be on.
 */
struct shape {
	const char *root;		/* "<module>" */
	int root_lines[2];
	const char *between[3];		/* prefixes of frames allowed under the root */
	const char *rec;		/* "recurse" */
	int call_line, leaf_from, leaf_to;
	int max_rec;
	/*
	 * Callers seen on a line other than their call, per 10 000 stacks,
	 * that the reader does not yet rule out: none.  Python 3.11-3.13: a
	 * frame popped and pushed again at the same place of the data stack
	 * between the reads showed a caller on its condition under a stale
	 * callee (118 in 9663 on 3.13 on a busy machine) until the reader
	 * checked that a caller is at an instruction that calls.  Ruby: the
	 * same (0 to 72 in 10 000) until it checked that a caller's pc
	 * follows a call (its last operand, or the one before, a call data
	 * of its iseq).
	 */
	int caller_lines_per_10k;
};

static const struct shape py_shape = {
	"<module>", { 12, 13 }, { NULL }, "recurse", 8, 5, 8, 21, 0,
};
static const struct shape rb_shape = {
	"<main>", { 10, 10 }, { "Kernel#loop (", "block in <main> (", NULL }, "Object#recurse", 5,
	3, 6, 21, 0,
};

/* "name (file:line)" -> name and line; 0 if it does not parse. */
static int frame_parse(const char *f, size_t len, char *name, size_t cap, int *line)
{
	const char *open = memchr(f, '(', len), *colon;

	if (!open || open == f || f[len - 1] != ')')
		return 0;
	snprintf(name, cap, "%.*s", (int)(open - f - 1), f);
	*line = -1;
	for (colon = f + len - 1; colon > open && *colon != ':'; colon--)
		;
	if (colon > open)
		*line = atoi(colon + 1);
	return 1;
}

/* The interpreter runs with YJIT on (helpers.c's root environments). */
static int yjit_env(const struct interp *in)
{
	for (const char *const *e = test_env(in); e && *e; e++)
		if (!strcmp(*e, "RUBY_YJIT_ENABLE=1"))
			return 1;
	return 0;
}

/*
 * One folded stack (without its count): a reason it is wrong, or NULL.
 * *caller_line is set when the one thing wrong is a caller's line.
 */
static const char *stack_check(const struct shape *sh, const char *path, const char *stack,
			       char *why, size_t cap, int *caller_line, int jit)
{
	const char *p = stack;
	char name[512];
	int idx = 0, recs = 0, line, last_rec_line = -1;

	*caller_line = 0;

	while (*p) {
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (!frame_parse(p, len, name, sizeof(name), &line)) {
			snprintf(why, cap, "frame %d does not parse", idx);
			return why;
		}
		if (idx == 0) {
			char want[1100];

			snprintf(want, sizeof(want), "%s (%s:", sh->root, path);
			if (strncmp(p, want, strlen(want)) ||
			    (line != sh->root_lines[0] && line != sh->root_lines[1])) {
				snprintf(why, cap, "no root: starts with %.*s", (int)len, p);
				return why;
			}
		} else if (!strcmp(name, sh->rec)) {
			if (recs && last_rec_line != sh->call_line) {
				snprintf(why, cap, "%s %d called on from line %d", sh->rec, recs,
					 last_rec_line);
				*caller_line = 1;
				return why;
			}
			recs++;
			last_rec_line = line;
		} else {
			int ok = 0;

			for (int k = 0; sh->between[k] && !recs; k++)
				ok |= !strncmp(p, sh->between[k], strlen(sh->between[k]));
			if (!ok) {
				snprintf(why, cap, "frame %d is %.*s", idx, (int)len, p);
				return why;
			}
		}
		idx++;
		p = end ? end + 1 : p + len;
	}
	if (recs > sh->max_rec) {
		snprintf(why, cap, "%d %s frames", recs, sh->rec);
		return why;
	}
	/* under YJIT the innermost frame running machine code has no line (-1) */
	if (recs && !(jit && last_rec_line == -1) &&
	    (last_rec_line < sh->leaf_from || last_rec_line > sh->leaf_to)) {
		snprintf(why, cap, "innermost %s on line %d", sh->rec, last_rec_line);
		return why;
	}
	return NULL;
}

/* "..., S samples, D dropped, ..." of pyrospy -v */
static void stacks_dropped(const char *err, unsigned long *stacks, unsigned long *dropped)
{
	const char *p = strstr(err, " samples, ");

	*stacks = *dropped = 0;
	if (!p)
		return;
	while (p > err && p[-1] != ' ')
		p--;
	*stacks = strtoul(p, NULL, 10);
	p = strstr(p, " samples, ") + 10;
	*dropped = strtoul(p, NULL, 10);
}

/*
 * Percent of samples the fast recursion may drop.  The goal is under 2:
 * Ruby (8 reads at most) 0 to 3 % here; Python 3.11+ (32) 0.03 to 0.4 %
 * in most runs but up to 7 % in some (3.11, 3.13); Python <= 3.10, whose
 * frame objects are read one by one and freed and reused within a read,
 * 16 to 30 % on an idle machine (the target on a core of its own).  What
 * is asserted is what holds in every run measured; the goal is not met
 * (issue 15).
 */
static int drop_limit(const struct interp *in)
{
	return in->lang == TARGET_PYTHON && in->minor <= 10 ? 45 : 15;
}

/* "pyrospy: N stacks read only above ..." of pyrospy -v (CPython 3.15+), or 0 */
static unsigned long stacks_anchored(const char *err)
{
	const char *p = strstr(err, " stacks read only above ");

	if (!p)
		return 0;
	while (p > err && p[-1] != ' ')
		p--;
	return strtoul(p, NULL, 10);
}

/* "pyrospy: N ranges of the target's memory read per tick" of pyrospy -v, or -1 */
static double ranges_per_sample(const char *err)
{
	const char *p = strstr(err, " ranges of the target's memory read per tick");

	if (!p)
		return -1;
	while (p > err && p[-1] != ' ')
		p--;
	return strtod(p, NULL);
}

/* The verdict on a folded profile of script (path) and what -v said of it. */
static void fast_recursion_check(const struct interp *in, const struct shape *sh,
				 const char *path, char *out, const char *err)
{
	unsigned long shown = 0, wrong = 0, callers = 0, stacks, dropped;
	char *save, *line, why[256];

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');
		unsigned long n;
		int caller_line;

		cr_assert_not_null(sp, "%s: no count: %.200s", in->bin, line);
		*sp = '\0';
		n = strtoul(sp + 1, NULL, 10);
		shown += n;
		if (stack_check(sh, path, line, why, sizeof(why), &caller_line, yjit_env(in))) {
			if (!wrong && !callers)
				cr_log_info("%s: %s: %.400s (x%lu)", in->bin, why, line, n);
			if (caller_line)
				callers += n;
			else
				wrong += n;
		}
	}
	stacks_dropped(err, &stacks, &dropped);
	/* never a stack without its root, a name Ruby or Python would not give, ... */
	cr_expect_eq(wrong, 0, "%s: %lu of %lu stacks shown are stacks the program never had",
		     in->bin, wrong, shown);
	/* ... nor a caller off its call, but for what the shape allows (Ruby) */
	cr_expect_leq(callers * 10000, (unsigned long)sh->caller_lines_per_10k * shown,
		      "%s: %lu of %lu stacks have a caller off its call line", in->bin, callers,
		      shown);
	cr_expect_gt(stacks, 2000, "%s: %lu stacks in 10 s at 1000 Hz: %s", in->bin, stacks, err);
	/* drops are counted and said, and few (see drop_limit()) */
	cr_expect_lt(dropped * 100, (unsigned long)drop_limit(in) * (stacks + dropped),
		     "%s: %lu of %lu dropped (%d %% allowed): %s", in->bin, dropped,
		     stacks + dropped, drop_limit(in), err);
	cr_expect_not_null(strstr(err, " dropped"), "%s: drops not reported: %s", in->bin, err);
	cr_log_info("%s: fast recursion: %lu stacks, %lu dropped (%.2f %%), %lu wrong, "
		    "%lu callers off their line, %lu read above the anchor", in->bin, stacks,
		    dropped, stacks + dropped ? 100.0 * (double)dropped / (double)(stacks + dropped) :
		    0.0, wrong, callers, stacks_anchored(err));
}

/*
 * Neighbour load: two processes spinning per core, at the priority of the
 * test (the target's and pyrospy's), as on a busy machine.  There pyrospy
 * is descheduled between the reads of one sample while the target runs
 * on: a check that holds only when the reads come close together lets
 * through what it would not on an idle machine.  Each dies with the test.
 */
static size_t spinners_start(pid_t *pids, size_t cap)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t n = cpus > 0 ? 2 * (size_t)cpus : 2;

	if (n > cap)
		n = cap;
	for (size_t i = 0; i < n; i++) {
		pids[i] = fork();
		cr_assert(pids[i] >= 0);
		if (pids[i] == 0) {
			volatile unsigned long spin = 0;

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				spin++;
		}
	}
	return n;
}

static void spinners_stop(const pid_t *pids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
}

static void fast_recursion(const struct interp *in, const struct shape *sh, const char *script,
			   int loaded)
{
	const char *extra[] = { "-r", "1000", "-d", "10", "-v", "-f", "folded", NULL };
	char file[] = "/tmp/pyrospy-exact-XXXXXX", *err, *out;
	int fd = mkstemp(file), st;
	pid_t spin[64];
	size_t nspin = 0;

	cr_assert(fd >= 0);
	close(fd);
	if (loaded)
		nspin = spinners_start(spin, sizeof(spin) / sizeof(spin[0]));
	st = test_record_to(in, script, extra, file, &err);
	spinners_stop(spin, nspin);
	if (loaded)
		cr_log_info("%s: beside %zu spinning processes", in->bin, nspin);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	out = test_slurp(file);
	unlink(file);
	fast_recursion_check(in, sh, test_target_for(in, script), out, err);
	/* 3.15+: the stacks checked are those read above the anchor, most of them */
	if (in->lang == TARGET_PYTHON && in->minor >= 15)
		cr_expect_gt(stacks_anchored(err), 1000, "%s: %s", in->bin, err);
	free(out);
	free(err);
}

ParameterizedTestParameters(exact, fast_recursion_python)
{
	size_t n = test_npythons + test_npythons_ft;

	return cr_make_param_array(size_t, (void *)test_indexes(n), n);
}

/*
 * recurse(20) and back, for ever, at 1000 Hz, beside two spinning
 * processes per core: every stack rooted and possible, no caller off its
 * call line (free-threaded 3.13 too).
 */
ParameterizedTest(size_t *i, exact, fast_recursion_python, .timeout = 90)
{
	fast_recursion(test_python_any(*i), &py_shape, "fastrec.py", 1);
}

ParameterizedTestParameters(exact, fast_recursion_ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, exact, fast_recursion_ruby, .timeout = 90)
{
	fast_recursion(&test_rubies[*i], &rb_shape, "fastrec.rb", 0);
}

/* CPython 3.11 to 3.13: the matrix's, and pyenv's 3.12 (no Debian root has one) */
static const struct interp pyenv_3_12 = {
	NULL, "/root/.pyenv/versions/3.12.1/bin/python3.12", TARGET_PYTHON, 3, 12,
};

static size_t pythons_3_11_to_13(const struct interp **out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < test_npythons_any && n + 1 < cap; i++)
		if (test_python_any(i)->minor >= 11 && test_python_any(i)->minor <= 13)
			out[n++] = test_python_any(i);
	out[n++] = &pyenv_3_12;
	return n;
}

ParameterizedTestParameters(exact, caller_off_call_python)
{
	const struct interp *v[16];

	return cr_make_param_array(size_t, (void *)test_indexes(pythons_3_11_to_13(v, 16)),
				   pythons_3_11_to_13(v, 16));
}

/*
 * offcall.py holds its caller on the condition before its call while its
 * callee runs (ctypes): the stack a torn read puts together, a frame read
 * again just as it was (same code, same caller, same instruction).  It is
 * never shown (old code: every sample of the thread, `caller (...:28)');
 * it is dropped and counted, and the other thread is shown as ever.
 */
ParameterizedTest(size_t *i, exact, caller_off_call_python, .timeout = 60)
{
	const struct interp *v[16], *in;
	const char *extra[] = { "-r", "200", "-d", "2", "-v", "-f", "folded", NULL };
	char file[] = "/tmp/pyrospy-offcall-XXXXXX", needle[1200], *err, *out;
	unsigned long stacks, dropped;
	int fd = mkstemp(file), st;

	pythons_3_11_to_13(v, 16);
	in = v[*i];
	cr_assert(fd >= 0);
	close(fd);
	st = test_record_to(in, "offcall.py", extra, file, &err);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	out = test_slurp(file);
	unlink(file);
	snprintf(needle, sizeof(needle), "caller (%s:28)", test_target_for(in, "offcall.py"));
	stacks_dropped(err, &stacks, &dropped);
	cr_expect_eq(test_folded_count(out, needle), 0, "%s: a caller off its call shown: %s",
		     in->bin, out);
	cr_expect_gt(test_folded_count(out, "spin ("), 100, "%s: the other thread: %s", in->bin,
		     out);
	cr_expect_gt(dropped, 100, "%s: the held thread's samples not counted dropped: %s",
		     in->bin, err);
	cr_log_info("%s: caller held off its call: %lu stacks shown, %lu dropped, %lu with it",
		    in->bin, stacks, dropped, test_folded_count(out, needle));
	free(out);
	free(err);
}

static const struct interp *python_3_15(void)
{
	for (size_t i = 0; i < test_npythons; i++)
		if (test_pythons[i].minor == 15)
			return &test_pythons[i];
	cr_assert_fail("no Python 3.15 in the matrix");
	return NULL;
}

/* record the process pid -v -f folded, args more: status, folded profile, stderr */
static int record_pid(pid_t pid, const char *const *more, char **folded, char **err)
{
	char file[] = "/tmp/pyrospy-anchor-XXXXXX";
	const char *args[20] = { "-v", "-f", "folded" };
	int n = 3, fd = mkstemp(file), st;

	cr_assert(fd >= 0);
	close(fd);
	for (int i = 0; more[i] && n < 18; i++)
		args[n++] = more[i];
	args[n] = NULL;
	st = test_record_pid(pid, file, args, err);
	*folded = test_slurp(file);
	unlink(file);
	return st;
}

ParameterizedTestParameters(exact, resumed_elsewhere_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

/*
 * A generator resumed, or a key function called back by sorted(), from
 * via_a and via_b in turn, their frames at the same place of the stack:
 * spin() under each about half the time.  On 3.15 this is what keeps the
 * anchor (LAST PROFILED FRAME) from being a generator's frame or a C
 * call's entry frame, which leave the stack uncounted: the stack below
 * would be the last caller's, via_a's where via_b runs.
 */
ParameterizedTest(size_t *i, exact, resumed_elsewhere_python, .timeout = 60)
{
	const struct interp *in = &test_pythons[*i];
	const char *modes[] = { "gen", "key" };

	for (size_t m = 0; m < 2; m++) {
		const char *sargs[] = { test_target_for(in, "resumed.py"), modes[m], NULL };
		const char *more[] = { "-r", "1000", "-d", "3", "--function", NULL };
		char ready[64], *out, *err, *save, *line;
		unsigned long a = 0, b = 0;
		pid_t pid = test_start(in, sargs, ready, sizeof(ready));
		int st = record_pid(pid, more, &out, &err);

		test_stop(pid);
		cr_assert_eq(st, 0, "%s %s: exit %d: %s", in->bin, modes[m], st, err);
		for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			const char *sp = strrchr(line, ' ');
			unsigned long n = sp ? strtoul(sp + 1, NULL, 10) : 0;

			/* --function: "name (file)" */
			if (!strstr(line, ";spin ("))
				continue;
			if (strstr(line, ";via_a ("))
				a += n;
			else if (strstr(line, ";via_b ("))
				b += n;
		}
		cr_log_info("%s %s: spin under via_a %lu, via_b %lu", in->bin, modes[m], a, b);
		cr_assert_gt(a + b, 1000, "%s %s: %s", in->bin, modes[m], err);
		cr_assert(a * 100 >= (a + b) * 35 && b * 100 >= (a + b) * 35,
			  "%s %s: spin under via_a %lu, via_b %lu", in->bin, modes[m], a, b);
		free(out);
		free(err);
	}
}

/*
 * CPython 3.15's last_profiled_frame (pyrospy(1), LAST PROFILED FRAME):
 * a stack 400 frames deep that does not change is read above the frame
 * pyrospy wrote there, nearly every sample, and it is the stack a
 * --read-only run (every frame read and checked) shows: all 400 frames,
 * the innermost call on its line.
 */
Test(exact, anchor_deep_python, .timeout = 90)
{
	const struct interp *in = python_3_15();
	const char *sargs[] = { test_target_for(in, "recursion.py"), NULL };
	const char *on[] = { "-r", "1000", "-d", "3", NULL };
	const char *off[] = { "-r", "1000", "-d", "3", "--read-only", NULL };
	char ready[64], *f[2], *err[2], *first = NULL;
	unsigned long stacks, dropped;
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int st[2];

	usleep(300 * 1000);	/* "ready" comes before the recursion */
	st[0] = record_pid(pid, on, &f[0], &err[0]);
	st[1] = record_pid(pid, off, &f[1], &err[1]);
	test_stop(pid);
	/* every stack, either way: the same 400 frames over spin (on either of its lines) */
	for (int k = 0; k < 2; k++) {
		char *save, *line, want[1200];
		unsigned int n = 0;

		cr_assert_eq(st[k], 0, "exit %d: %s", st[k], err[k]);
		snprintf(want, sizeof(want), ";rec (%s:14);spin (", sargs[0]);
		for (line = strtok_r(f[k], "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			const char *p = line;
			char *at = strstr(line, want);
			int recs = 0;

			cr_assert_not_null(at, "%s", line);
			while ((p = strstr(p, ";rec (")))
				recs++, p++;
			cr_assert_eq(recs, 400, "%d rec frames: %.300s", recs, line);
			at[strlen(want)] = '\0';
			if (!first)
				first = line;
			cr_assert_str_eq(line, first, "anchored and --read-only stacks differ");
			n++;
		}
		cr_assert_gt(n, 0, "%s", err[k]);
	}
	stacks_dropped(err[0], &stacks, &dropped);
	cr_log_info("%s: %lu stacks, %lu read above the anchor", in->bin, stacks,
		    stacks_anchored(err[0]));
	cr_assert_gt(stacks, 1000, "%s", err[0]);
	cr_assert_geq(stacks_anchored(err[0]) * 10, stacks * 9, "%s", err[0]);
	cr_assert_eq(stacks_anchored(err[1]), 0, "--read-only: %s", err[1]);
	/*
	 * An anchored sample reads the places of the last one again (the
	 * frames above the anchor, the thread state, the code objects: 6
	 * ranges here) and then, to check it, the frame pointer and the
	 * pair next to it, one range: not the frame the walk stopped at, nor
	 * its code object, which that frame keeps while it lives (11 ranges
	 * before: each range costs the kernel a look-up and a pin).
	 */
	cr_log_info("%s: %.1f ranges a sample anchored, %.1f --read-only", in->bin,
		    ranges_per_sample(err[0]), ranges_per_sample(err[1]));
	cr_assert(ranges_per_sample(err[0]) > 0 && ranges_per_sample(err[0]) <= 8.5, "%s", err[0]);
	for (int k = 0; k < 2; k++) {
		free(f[k]);
		free(err[k]);
	}
}

/*
 * CPython's own profiler writes last_profiled_frame too.  Both attached to
 * the fast recursion at once: pyrospy's stacks are still every one the
 * program had, and CPython's profiler still works.
 */
Test(exact, anchor_beside_cpython, .timeout = 90)
{
	const struct interp *in = python_3_15();
	const char *sargs[] = { test_target_for(in, "fastrec.py"), NULL };
	const char *more[] = { "-r", "1000", "-d", "4", NULL };
	char ready[64], cmd[1024], host[1024], *out, *err, *theirs;
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int st;

	snprintf(host, sizeof(host), "%s/%s/tmp/pyrospy-anchor-%d.collapsed", test_chroots(),
		 in->root, (int)getpid());
	unlink(host);
	snprintf(cmd, sizeof(cmd),
		 "R=%s/%s; { mountpoint -q \"$R/proc\" || mount -t proc proc \"$R/proc\"; } && "
		 "{ nohup chroot \"$R\" %s -m profiling.sampling attach --collapsed -d 6 "
		 "-o /tmp/pyrospy-anchor-%d.collapsed %d >/dev/null 2>&1 & }",
		 test_chroots(), in->root, in->bin, (int)getpid(), (int)pid);
	free(test_run(cmd, &st));
	cr_assert_eq(st, 0, "%s", cmd);
	usleep(1000 * 1000);	/* it has attached */
	st = record_pid(pid, more, &out, &err);
	for (int i = 0; i < 150 && access(host, F_OK); i++)
		usleep(100 * 1000);
	test_stop(pid);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	theirs = test_slurp(host);
	unlink(host);
	cr_log_info("CPython's profiler: %.300s", theirs);
	cr_assert_not_null(strstr(theirs, "recurse"), "CPython's profiler: %s", theirs);
	fast_recursion_check(in, &py_shape, sargs[0], out, err);
	free(theirs);
	free(out);
	free(err);
}

/*
 * dump of a busy one-thread process, 100 times: the thread every time,
 * with its whole stack.
 */
static void dump_100(const struct interp *in, const struct shape *sh, const char *script)
{
	const char *sargs[] = { test_target_for(in, script), NULL };
	char ready[64], pidbuf[32], want[1100];
	/* whole paths: the root's file as the test names it */
	const char *args[] = { "dump", "--full-paths", "--pid", pidbuf, NULL };
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int good = 0;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(want, sizeof(want), "    %s (%s:", sh->root, sargs[0]);
	for (int k = 0; k < 100; k++) {
		char *out, *err;
		int st = test_pyrospy(args, &out, &err);

		if (st == 0 && strstr(out, "\nThread ") && strstr(out, want))
			good++;
		else if (good == k)
			cr_log_info("%s: dump %d: status %d:\n%s%s", in->bin, k, st, out, err);
		free(out);
		free(err);
	}
	test_stop(pid);
	cr_expect_eq(good, 100, "%s: %d of 100 dumps showed the thread and its root", in->bin,
		     good);
}

ParameterizedTestParameters(exact, dump_busy_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

ParameterizedTest(size_t *i, exact, dump_busy_python, .timeout = 120)
{
	dump_100(&test_pythons[*i], &py_shape, "fastrec.py");
}

ParameterizedTestParameters(exact, dump_busy_ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, exact, dump_busy_ruby, .timeout = 120)
{
	dump_100(&test_rubies[*i], &rb_shape, "fastrec.rb");
}

/*
 * A new function every 0.2 s, each a fresh code object (iseq) where the
 * last one may have been: 6 s show about 30 names, each about 0.2 s worth
 * of samples, never one name for all of them.  key: what the names start
 * with before their number ("f_" for f_12, "Shop" for Shop12#price).
 */
static void recycled(const struct interp *in, const char *script, const char *key)
{
	const char *extra[] = { "-r", "100", "-d", "6", NULL };
	const char *path;
	char *out = test_profile(in, script, extra, &path), *save, *line;
	unsigned long count[256] = { 0 }, most = 0;
	int names = 0;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *f = strstr(line, key), *sp = strrchr(line, ' ');
		unsigned long k;

		if (!f || !sp)
			continue;
		k = strtoul(f + strlen(key), NULL, 10);
		if (k < ARRAY_SIZE(count))
			count[k] += strtoul(sp + 1, NULL, 10);
	}
	for (size_t k = 0; k < ARRAY_SIZE(count); k++) {
		names += count[k] > 0;
		if (count[k] > most)
			most = count[k];
	}
	cr_expect_geq(names, 20, "%s: %d names in 6 s of a new one every 0.2 s", in->bin,
		      names);
	/* 0.2 s at 100 Hz is 20 samples: one name holding far more is several */
	cr_expect_leq(most, 45, "%s: one name has %lu samples", in->bin, most);
	free(out);
}

ParameterizedTestParameters(exact, recycled_code_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

ParameterizedTest(size_t *i, exact, recycled_code_python, .timeout = 60)
{
	recycled(&test_pythons[*i], "recycle.py", "f_");
}

ParameterizedTestParameters(exact, recycled_code_ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, exact, recycled_code_ruby, .timeout = 60)
{
	recycled(&test_rubies[*i], "recycle.rb", "f_");
}

/*
 * A new class every 0.2 s (tests/targets/classchurn.rb), Shop<N>, each
 * with a method entry of its own for price, over the same iseq; the last
 * class collected first, so that the new class, its method entry and its
 * definition may each be where the last one's were.  Each name about 0.2
 * s worth, never the last class's name for the next ones.
 */
ParameterizedTestParameters(exact, recycled_class_ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, exact, recycled_class_ruby, .timeout = 60)
{
	recycled(&test_rubies[*i], "classchurn.rb", "Shop");
}

/*
 * A function named with 5000 characters: its thread is shown, the name cut
 * with a mark, in a profile and in dump.
 */
static void long_name(const struct interp *in, const char *script)
{
	const char *extra[] = { "-r", "100", "-d", "2", NULL };
	const char *path, *sargs[] = { test_target_for(in, script), NULL };
	char *out = test_profile(in, script, extra, &path), *err, ready[64], pidbuf[32], want[64];
	const char *args[] = { "dump", "--pid", pidbuf, NULL };
	unsigned long n;
	pid_t pid;

	/* 4096 bytes kept at most: the cut falls in the run of f's */
	snprintf(want, sizeof(want), "%s%s (", "ffff", "[...]");
	n = test_folded_count(out, want);
	cr_expect_gt(n, 100, "%s: %lu samples of the long-named function:\n%.300s", in->bin, n,
		     out);
	cr_expect_null(strstr(out, "_long_name"), "%s: not cut", in->bin);
	free(out);
	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	cr_expect_eq(test_pyrospy(args, &out, &err), 0, "%s: %s", in->bin, err);
	test_stop(pid);
	cr_expect_not_null(strstr(out, "\nThread "), "%s: dump shows no thread:\n%s", in->bin, out);
	cr_expect_not_null(strstr(out, want), "%s: dump:\n%.300s", in->bin, out);
	free(out);
	free(err);
}

ParameterizedTestParameters(exact, long_name_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

ParameterizedTest(size_t *i, exact, long_name_python, .timeout = 60)
{
	long_name(&test_pythons[*i], "longname.py");
}

ParameterizedTestParameters(exact, long_name_ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, exact, long_name_ruby, .timeout = 60)
{
	long_name(&test_rubies[*i], "longname.rb");
}

/*
 * CPython 3.13+ runs a specialised `Point(3)`'s __init__ under a shim
 * frame (_Py_InitCleanup: named and filed "__init__", no RESUME) that no
 * traceback shows, and 3.11+ shows no frame before its first traceable
 * instruction: every sample in __init__ has main's frame, on its call
 * line, as __init__'s caller, and nothing else between.
 */
static void init_shim(const struct interp *in)
{
	const char *extra[] = { "-r", "200", "-d", "2", NULL };
	const char *path;
	char *out = test_profile(in, "initshim.py", extra, &path), *line, *save = NULL;
	char want[512];
	unsigned long init = 0, bad = 0;

	/* co_qualname from 3.11 on */
	snprintf(want, sizeof(want), "main (%s:19);%s (%s:", path,
		 in->minor >= 11 ? "Point.__init__" : "__init__", path);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long n;
		char *sp = strrchr(line, ' ');

		if (!sp || !strstr(line, "__init__"))
			continue;
		n = strtoul(sp + 1, NULL, 10);
		init += n;
		if (!strstr(line, want) || strstr(line, "__init__ (__init__")) {
			if (bad < 3)
				cr_log_warn("%s: %s", in->bin, line);
			bad += n;
		}
	}
	cr_expect_gt(init, 150, "%s: %lu samples in __init__", in->bin, init);
	cr_expect_eq(bad, 0, "%s: %lu of %lu samples in __init__ not right under main's call",
		     in->bin, bad, init);
	free(out);
}

ParameterizedTestParameters(exact, init_shim_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_any),
				   test_npythons_any);
}

ParameterizedTest(size_t *i, exact, init_shim_python, .timeout = 60)
{
	init_shim(test_python_any(*i));
}

/*
 * Every Python frame has a line.  A module waiting for the GIL at its first
 * instruction (CPython numbers a module's RESUME line 0) is on its first
 * line, as a function's RESUME is on its def line.
 */
ParameterizedTestParameters(exact, module_first_line_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

ParameterizedTest(size_t *i, exact, module_first_line_python, .timeout = 60)
{
	const struct interp *in = &test_pythons[*i];
	const char *extra[] = { "--idle", "-r", "1000", "-d", "2", NULL };
	const char *path;
	char *out = test_profile(in, "modresume.py", extra, &path), *line, *save, name[4200];
	unsigned long generated = 0;

	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *end = strrchr(line, ' '), *f = line, *semi;
		int at;

		cr_assert_not_null(end, "%s: %s", in->bin, line);
		for (; f < end; f = semi + 1) {
			semi = memchr(f, ';', (size_t)(end - f));
			if (!semi)
				semi = end;
			cr_assert(frame_parse(f, (size_t)(semi - f), name, sizeof(name), &at),
				  "%s: frame '%.*s'", in->bin, (int)(semi - f), f);
			cr_assert_gt(at, 0, "%s: frame without a line in\n%s", in->bin, line);
		}
		if (strstr(line, ";<module> (generated.py:1) "))
			generated += strtoul(end + 1, NULL, 10);
	}
	cr_assert_gt(generated, 10, "%s: the generated module seen %lu times", in->bin, generated);
	free(out);
}

/*
 * A worker forked from C after threads started (uWSGI): its one thread is
 * shown under its own id and state, idle while its request sleeps; the
 * parent's other threads, which the child does not have, are not shown.
 */
ParameterizedTestParameters(exact, forked_worker_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_any),
				   test_npythons_any);
}

ParameterizedTest(size_t *i, exact, forked_worker_python, .timeout = 60)
{
	const struct interp *in = test_python_any(*i);
	const char *sargs[] = { test_target_for(in, "forkworker.py"), NULL };
	char worker[64], want[96], *out, *err;
	const char *dump[] = { "dump", "--pid", worker, NULL };
	const char *rec[] = { "record", "--pid", worker, "-d", "2", "-f", "folded", "-o", "-", NULL };
	pid_t pid = test_start(in, sargs, worker, sizeof(worker));
	int threads = 0;
	const char *p;

	cr_expect_eq(test_pyrospy(dump, &out, &err), 0, "%s: %s", in->bin, err);
	for (p = out; (p = strstr(p, "\nThread ")); p++)
		threads++;
	/* in a chroot of its own PID namespace? no: the ids are the host's */
	snprintf(want, sizeof(want), "\nThread %s ", worker);
	cr_expect_eq(threads, 1, "%s: %d threads:\n%s", in->bin, threads, out);
	p = strstr(out, want);
	cr_expect_not_null(p, "%s: no '%s' in:\n%s", in->bin, want + 1, out);
	/* "Thread TID (idle)", or with its name: "Thread TID "MainThread" (idle)" */
	if (p) {
		size_t len = strcspn(p + 1, "\n");

		cr_expect(len > 7 && !strncmp(p + 1 + len - 7, " (idle)", 7), "%s: not idle:\n%s",
			  in->bin, out);
	}
	cr_expect_not_null(strstr(out, "handle_request ("), "%s:\n%s", in->bin, out);
	free(out);
	free(err);
	cr_expect_eq(test_pyrospy(rec, &out, &err), 0, "%s: %s", in->bin, err);
	cr_expect_eq(test_folded_count(out, "handle_request ("), 0,
		     "%s: a sleeping worker sampled without --idle:\n%s", in->bin, out);
	free(out);
	free(err);
	kill(atoi(worker), SIGKILL);
	test_stop(pid);
}

/*
 * An interpreter copied under another name, as venv --copies does
 * ("python"): its version comes from what it is, not from its name.
 */
ParameterizedTestParameters(exact, copied_interpreter_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

ParameterizedTest(size_t *i, exact, copied_interpreter_python, .timeout = 60)
{
	const struct interp *in = &test_pythons[*i];
	struct interp copy = *in;
	const char *extra[] = { "-r", "100", "-d", "2", NULL };
	char top[1024], bin[128], cmd[4096];
	const char *path;
	char *out;

	/* where the copy is as the interpreter sees it, and as we see it */
	snprintf(bin, sizeof(bin), "/tmp/pyrospy-venvcopy-%u/bin/python", in->minor);
	if (in->root) {
		snprintf(top, sizeof(top), "%s/%s/tmp/pyrospy-venvcopy-%u", test_chroots(),
			 in->root, in->minor);
		snprintf(cmd, sizeof(cmd), "mkdir -p '%s/bin' && cp '%s/%s/usr/bin/%s' '%s/bin/python'",
			 top, test_chroots(), in->root, in->bin, top);
	} else {
		snprintf(top, sizeof(top), "/tmp/pyrospy-venvcopy-%u", in->minor);
		snprintf(cmd, sizeof(cmd), "mkdir -p '%s/bin' && cp '%s' '%s/bin/python'", top,
			 in->bin, top);
	}
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	copy.bin = bin;
	out = test_profile(&copy, "seed.py", extra, &path);
	cr_expect_gt(test_folded_count(out, "work ("), 100, "%s copied as python:\n%s", in->bin,
		     out);
	free(out);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	cr_expect_eq(system(cmd), 0);
}

/*
 * 3.11-3.13's check that a stack is whole (issue 38): at 50 frames at
 * most 15 ranges of the target's memory a sample, the stack still right.
 * A sample was 15.3 (3.11), 16.4 (3.12), 17.3 (3.13) and 15.3 (3.13t)
 * ranges: the frames read again in ranges cut at 4 KiB, and each code
 * object with its name, two ranges each, every sample.  Now the frames
 * are one range, and a code object is not read again while the
 * interpreter's code counter says none was made since it was.
 * exact/recycled_code_python holds the other side: a new code object in
 * a freed one's place is still found.
 */
static const struct interp *ranges_interp(size_t i)
{
	static const struct interp *list[4];

	list[0] = &test_pythons[1];	/* the host's 3.11 */
	list[1] = &pyenv_3_12;
	list[2] = &test_pythons[2];	/* trixie's 3.13 */
	list[3] = &test_pythons_ft[0];
	return list[i];
}

ParameterizedTestParameters(exact, ranges_deep_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(4), 4);
}

ParameterizedTest(size_t *i, exact, ranges_deep_python, .timeout = 60)
{
	const struct interp *in = ranges_interp(*i);
	const char *sargs[] = { test_target_for(in, "deep50.py"), NULL };
	const char *opt[] = { "-r", "200", "-d", "3", NULL };
	char ready[64], *f, *err, *save, *line, want[256];
	unsigned long stacks, dropped;
	unsigned int n = 0;
	static const int minor[] = { 11, 12, 13, 13 };
	pid_t pid;
	int st;

	cr_assert_eq(in->minor, minor[*i]);
	pid = test_start(in, sargs, ready, sizeof(ready));
	st = record_pid(pid, opt, &f, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	/* the innermost rec on its call of spin, the others on their call of rec */
	snprintf(want, sizeof(want), ";rec (%s:15);rec (%s:14);spin (", sargs[0], sargs[0]);
	for (line = strtok_r(f, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *p = line;
		int recs = 0;

		while ((p = strstr(p, ";rec (")))
			recs++, p++;
		cr_assert_eq(recs, 48, "%s: %d rec frames: %.300s", in->bin, recs, line);
		cr_assert_not_null(strstr(line, want), "%s: %.3000s", in->bin, line);
		n++;
	}
	stacks_dropped(err, &stacks, &dropped);
	cr_log_info("%s: %.1f ranges a sample, %lu stacks, %lu dropped", in->bin,
		    ranges_per_sample(err), stacks, dropped);
	cr_assert_gt(n, 0, "%s: %s", in->bin, err);
	cr_assert_gt(stacks, 300, "%s: %s", in->bin, err);
	cr_assert(ranges_per_sample(err) > 0 && ranges_per_sample(err) <= 15, "%s: %s", in->bin,
		  err);
	free(f);
	free(err);
}
