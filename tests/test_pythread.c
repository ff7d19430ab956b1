/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "util/utf8.h"

/*
 * Python threads' names (threading.Thread.name, and the kernel's name when
 * it says something else) in dump, in --threads root frames, in speedscope
 * profile names and pprof thread labels, against what the program itself
 * sees: tests/targets/threadnames.py reports each thread's native id and
 * name, the kernel its comm.  Names are shown sanitized (utf8.h, tested on
 * its own in test_utf8.c): the escape and the bidi override of the
 * "evil" thread become '?'.
 */

#define NTHREADS 7

struct named {
	char tid[16];
	char want[512];		/* the name pyrospy should show */
};

static void unhex(const char *s, size_t n, char *out, size_t cap)
{
	size_t i;

	cr_assert(n % 2 == 0 && n / 2 < cap, "bad hex %.*s", (int)n, s);
	for (i = 0; i < n / 2; i++) {
		unsigned int b;

		cr_assert(sscanf(s + 2 * i, "%2x", &b) == 1);
		out[i] = (char)b;
	}
	out[i] = '\0';
}

/* /proc/PID/comm, or /proc/PID/task/TID/comm, into out. */
static void comm_of(pid_t pid, const char *tid, char *out, size_t cap)
{
	char path[96];
	FILE *f;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	cr_assert_not_null(fgets(out, (int)cap, f), "%s", path);
	fclose(f);
	out[strcspn(out, "\n")] = '\0';
	cr_assert_gt(strlen(out), 0, "%s", path);
}

/* n bytes of s without a last UTF-8 character cut short (3.14's OS names). */
static size_t whole(const char *s, size_t n)
{
	size_t i = n;

	while (i > 0 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i > 0 && ((unsigned char)s[i - 1] & 0xc0) == 0xc0) {
		unsigned char lead = (unsigned char)s[i - 1];
		size_t len = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;

		if (n - (i - 1) < len)
			return i - 1;
	}
	return n;
}

/*
 * The names pyrospy should show, from the ready line and the kernel: the
 * Python name, and " [comm]" when the kernel's name is neither the
 * process's nor the start of the Python name (both as shown: sanitized).
 */
static void parse_ready(pid_t pid, const char *ready, struct named *t)
{
	char proc[64], raw[256], name[256], comm[64], head[64], shown[64];
	const char *p = strchr(ready, '\t'), *q;
	int n = 0;

	cr_assert_not_null(p, "ready line: %s", ready);
	comm_of(pid, NULL, proc, sizeof(proc));
	for (p++; *p && *p != '\n'; n++) {
		const char *c1 = strchr(p, ':');

		cr_assert(n < NTHREADS && c1, "ready line: %s", ready);
		q = c1 + strcspn(c1, "\t\n");
		snprintf(t[n].tid, sizeof(t[n].tid), "%.*s", (int)(c1 - p), p);
		unhex(c1 + 1, (size_t)(q - c1 - 1), raw, sizeof(raw));
		utf8_sanitize(name, sizeof(name), raw, strlen(raw));
		comm_of(pid, t[n].tid, comm, sizeof(comm));
		utf8_sanitize(head, sizeof(head), comm, whole(comm, strlen(comm)));
		utf8_sanitize(shown, sizeof(shown), comm, strlen(comm));
		if (!strcmp(comm, proc) || !strncmp(name, head, strlen(head)))
			snprintf(t[n].want, sizeof(t[n].want), "%s", name);
		else
			snprintf(t[n].want, sizeof(t[n].want), "%s [%s]", name, shown);
		p = *q == '\t' ? q + 1 : q;
	}
	cr_assert_eq(n, NTHREADS, "ready line: %s", ready);
}

/* pre, the thread's tid, mid, its name and post, in want. */
static const char *expect(char *want, size_t cap, const char *pre, const struct named *t,
			  const char *mid, const char *post)
{
	int n = snprintf(want, cap, "%s%s%s%s%s", pre, t->tid, mid, t->want, post);

	cr_assert(n > 0 && (size_t)n < cap);
	return want;
}

/*
 * pyrospy record --pid PID --threads --idle -d 1 -f format, and the
 * profile it wrote: the file, or with gz what gzip -dc makes of it (NULs
 * as newlines, so that its strings can be searched).
 */
static char *record(pid_t pid, const char *bin, const char *format, int gz)
{
	char pidbuf[32], file[64], cmd[128], *out, *err, *text;
	const char *args[] = { "record", "--pid", pidbuf, "--threads", "--idle", "-r", "50",
			       "-d", "1", "-f", format, "-o", file, NULL };
	int st;

	snprintf(file, sizeof(file), "/tmp/pyrospy-test-%d.out", (int)getpid());
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "%s: record -f %s: exit %d: %s", bin, format, st, err);
	if (gz) {
		snprintf(cmd, sizeof(cmd), "gzip -dc %s | tr '\\000' '\\n'", file);
		text = test_run(cmd, &st);
		cr_assert_eq(st, 0, "%s: -f %s: not gzip", bin, format);
	} else {
		text = test_slurp(file);
	}
	unlink(file);
	free(out);
	free(err);
	return text;
}

/* The free-threaded builds too: the target needs ctypes, which build-python-ft builds. */
ParameterizedTestParameters(pythread, names)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_any),
				   test_npythons_any);
}

ParameterizedTest(size_t *i, pythread, names, .timeout = 90)
{
	const struct interp *in = test_python_any(*i);
	const char *sargs[] = { test_target_for(in, "threadnames.py"), NULL };
	char ready[4096], pidbuf[32], want[1024], *out, *err, *folded, *ss, *pb;
	const char *args[] = { "dump", "--pid", pidbuf, NULL };
	struct named t[NTHREADS];
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int st;

	parse_ready(pid, ready, t);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "%s: dump: exit %d: %s", in->bin, st, err);
	folded = record(pid, in->bin, "folded", 0);
	ss = record(pid, in->bin, "speedscope", 0);
	pb = record(pid, in->bin, "pprof", 1);
	test_stop(pid);
	for (int k = 0; k < NTHREADS; k++) {
		expect(want, sizeof(want), "\nThread ", &t[k], " \"", "\" (");
		cr_assert_not_null(strstr(out, want), "%s: dump: no '%s' in:\n%s", in->bin,
				   want + 1, out);
		expect(want, sizeof(want), "\nthread (", &t[k], "): ", ";");
		cr_assert(strstr(folded, want) || !strncmp(folded, want + 1, strlen(want + 1)),
			  "%s: folded: no '%s' in:\n%s", in->bin, want + 1, folded);
		expect(want, sizeof(want), "\"name\":\"thread (", &t[k], "): ", "\"");
		cr_assert_not_null(strstr(ss, want), "%s: speedscope: no '%s' in:\n%.3000s",
				   in->bin, want, ss);
		/* pprof: the label's value is in the profile's string table as it is */
		expect(want, sizeof(want), "thread (", &t[k], "): ", "");
		cr_assert_not_null(strstr(pb, want), "%s: pprof: no label '%s'", in->bin, want);
	}
	free(out);
	free(err);
	free(folded);
	free(ss);
	free(pb);
}

ParameterizedTestParameters(pythread, renamed)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_any),
				   test_npythons_any);
}

/*
 * One thread, one root, named as the thread was last: a thread renamed one
 * second into a four-second record, one that gets a name only then, and
 * one renamed at 0.5 s and back at 2 s (names are read again every 100 to
 * 150 samples, so that each has samples under either name), each have all
 * their samples under one root with their last name; report --threads of
 * the recording of the same run too (byte for byte), where the thread
 * renamed back has its last samples under a name it had before.
 */
ParameterizedTest(size_t *i, pythread, renamed, .timeout = 60)
{
	const struct interp *in = test_python_any(*i);
	const char *sargs[] = { test_target_for(in, "rename.py"), NULL };
	char ready[64], pidbuf[32], any[64], after[64], late[64], raw[64], *out, *err, *p, *rep;
	const char *args[] = { "record", "--pid", pidbuf, "--threads", "--idle", "-r", "100",
			       "-d", "4", "-f", "folded", "-o", "-", "--raw", raw, NULL };
	const char *rargs[] = { "report", raw, "--threads", "--idle", "-f", "folded", "-o", "-",
				NULL };
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int st, tid = (int)strtol(ready + 6, &p, 10), late_tid = (int)strtol(p, &p, 10);
	int back_tid = (int)strtol(p, NULL, 10);
	unsigned long all;

	cr_assert(tid > 0 && late_tid > 0 && back_tid > 0, "ready line: %s", ready);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(raw, sizeof(raw), "/tmp/pyrospy-test-%d.raw", (int)getpid());
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	free(err);
	/* the recording of the same run: the same roots */
	st = test_pyrospy(rargs, &rep, &err);
	unlink(raw);
	cr_assert_eq(st, 0, "%s: report: exit %d: %s", in->bin, st, err);
	cr_assert_str_eq(rep, out, "%s: report --threads of the recording differs", in->bin);
	free(rep);
	/* 3.14+ set the OS name when the thread started: it stays, in brackets */
	snprintf(after, sizeof(after), "thread (%d): after-rename%s", tid,
		 in->minor >= 14 ? " [before-rename];" : ";");
	snprintf(any, sizeof(any), "thread (%d)", tid);
	all = test_folded_count(out, any);
	cr_assert_gt(all, 300, "%s: %lu samples of '%s' in 4 s:\n%s", in->bin, all, any, out);
	cr_assert_eq(test_folded_count(out, after), all, "%s: not all under '%s':\n%s", in->bin,
		     after, out);
	snprintf(late, sizeof(late), "thread (%d): late-name;", late_tid);
	snprintf(any, sizeof(any), "thread (%d)", late_tid);
	all = test_folded_count(out, any);
	cr_assert_gt(all, 300, "%s: %lu samples of '%s' in 4 s:\n%s", in->bin, all, any, out);
	cr_assert_eq(test_folded_count(out, late), all, "%s: not all under '%s':\n%s", in->bin,
		     late, out);
	/* renamed and back: its first name, read last */
	snprintf(late, sizeof(late), "thread (%d): first-name;", back_tid);
	snprintf(any, sizeof(any), "thread (%d)", back_tid);
	all = test_folded_count(out, any);
	cr_assert_gt(all, 300, "%s: %lu samples of '%s' in 4 s:\n%s", in->bin, all, any, out);
	cr_assert_eq(test_folded_count(out, late), all, "%s: not all under '%s':\n%s", in->bin,
		     late, out);
	free(out);
	free(err);
}

/*
 * Every thread of the process is in dump, those the interpreter does not
 * know too: a thread started from C (pthread_create with libc's sleep,
 * through ctypes or Fiddle) is listed with its tid, its kernel name, its
 * state and "no Python frames" ("no Ruby frames"), and dump lists as many
 * threads as /proc/PID/task holds.
 */
static void c_thread_in_dump(const struct interp *in, const char *script, const char *lang)
{
	const char *sargs[] = { test_target_for(in, script), NULL };
	char ready[64], pidbuf[32], want[128], cmd[64], *out, *err, *ntask;
	const char *args[] = { "dump", "--pid", pidbuf, NULL };
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int st, rst, tid;
	unsigned long listed = 0;

	snprintf(cmd, sizeof(cmd), "grep -lx cworker /proc/%d/task/*/comm", (int)pid);
	ntask = test_run(cmd, &rst);
	cr_assert_eq(rst, 0, "%s", cmd);
	cr_assert(sscanf(ntask, "/proc/%*d/task/%d/comm", &tid) == 1 && tid > 0, "%s", ntask);
	free(ntask);
	/*
	 * "ready" comes as the thread is created, not once it sleeps: until
	 * it does, it runs (libc starting it), and dump rightly says so
	 * (seen once on 3.15 in a clean-clone run)
	 */
	snprintf(cmd, sizeof(cmd), "/proc/%d/task/%d/stat", (int)pid, tid);
	for (int i = 0; i < 200; i++) {
		char stat[512] = "";
		const char *state;
		FILE *f = fopen(cmd, "r");

		if (f) {
			if (!fgets(stat, sizeof(stat), f))
				stat[0] = '\0';
			fclose(f);
		}
		state = strrchr(stat, ')');
		if (state && state[1] == ' ' && state[2] == 'S')
			break;
		usleep(10 * 1000);
	}
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	snprintf(cmd, sizeof(cmd), "ls /proc/%d/task | wc -l", (int)pid);
	ntask = test_run(cmd, &rst);
	cr_assert_eq(rst, 0, "%s", cmd);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: dump: exit %d: %s", in->bin, st, err);
	snprintf(want, sizeof(want), "\nThread %d \"[cworker]\" (idle)\n    no %s frames\n", tid,
		 lang);
	cr_assert_not_null(strstr(out, want), "%s: no '%s' in:\n%s", in->bin, want + 1, out);
	for (const char *p = out; (p = strstr(p, "\nThread ")); p++)
		listed++;
	cr_assert_eq(listed, strtoul(ntask, NULL, 10), "%s: %lu threads listed, %s in /proc:\n%s",
		     in->bin, listed, ntask, out);
	snprintf(want, sizeof(want), "): %lu threads\n", listed);
	cr_assert_not_null(strstr(out, want), "%s: no '%s' in:\n%s", in->bin, want, out);
	free(ntask);
	free(out);
	free(err);
}

ParameterizedTestParameters(dump, c_thread_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_any),
				   test_npythons_any);
}

ParameterizedTest(size_t *i, dump, c_thread_python, .timeout = 30)
{
	c_thread_in_dump(test_python_any(*i), "cthread.py", "Python");
}

ParameterizedTestParameters(dump, c_thread_ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, dump, c_thread_ruby, .timeout = 30)
{
	c_thread_in_dump(&test_rubies[*i], "cthread.rb", "Ruby");
}
