/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <linux/landlock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "util/xalloc.h"
#include "proc/target.h"

static const struct interp host_python = { NULL, "/usr/bin/python3.11", TARGET_PYTHON, 3, 11 };

static void assert_error_hint(const char *err, const char *needle, const char *hint_needle)
{
	const char *nl = strchr(err, '\n');

	cr_assert(!strncmp(err, "pyrospy: error: ", 16), "stderr is '%s'", err);
	cr_assert_not_null(strstr(err, needle), "'%s' not in '%s'", needle, err);
	cr_assert(nl && !strncmp(nl + 1, "hint: ", 6), "no hint line in '%s'", err);
	cr_assert_not_null(strstr(nl, hint_needle), "'%s' not in hint '%s'", hint_needle, nl);
	nl = strchr(nl + 1, '\n');
	cr_assert(nl && nl[1] == '\0', "more than two lines: '%s'", err);
}

static int record(pid_t pid, char **out, char **err)
{
	char p[32];
	const char *args[] = { "record", "--pid", p, "-d", "1", "-o", "-", NULL };

	snprintf(p, sizeof(p), "%d", (int)pid);
	return test_pyrospy(args, out, err);
}

Test(errors, no_such_process)
{
	char *out, *err;

	cr_assert_eq(record(0x3ffffff0, &out, &err), 3);
	assert_error_hint(err, "no such process", "ps -p");
	free(out);
	free(err);
}

Test(errors, dead_process)
{
	char *out, *err;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	/* a zombie: exists in /proc, has no memory */
	usleep(100000);
	cr_assert_eq(record(pid, &out, &err), 3, "stderr: %s", err);
	assert_error_hint(err, "exited", "zombie");
	waitpid(pid, NULL, 0);
	free(out);
	free(err);
}

Test(errors, not_an_interpreter)
{
	char *out, *err;
	pid_t pid = fork();

	if (pid == 0) {
		execl("/bin/sleep", "sleep", "3600", (char *)NULL);
		_exit(127);
	}
	usleep(200000);
	cr_assert_eq(record(pid, &out, &err), 5, "stderr: %s", err);
	assert_error_hint(err, "'sleep'", "python");
	cr_assert_not_null(strstr(err, "/sleep"), "says what it is: %s", err);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	free(out);
	free(err);
}

static pid_t start_python(void)
{
	const char *args[] = { test_target_path("version.py"), NULL };
	char ready[64];

	return test_start(&host_python, args, ready, sizeof(ready));
}

Test(errors, other_user)
{
	const char *wrap[] = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", NULL };
	char p[32], *out, *err;
	const char *args[] = { "record", "--pid", p, "-d", "1", "-o", "-", NULL };
	pid_t pid = start_python();

	snprintf(p, sizeof(p), "%d", (int)pid);
	cr_assert_eq(test_pyrospy_wrapped(wrap, args, &out, &err), 4, "stderr: %s", err);
	assert_error_hint(err, "permission denied", "another user");
	test_stop(pid);
	free(out);
	free(err);
}

Test(errors, missing_cap_sys_ptrace)
{
	const char *wrap[] = { "setpriv", "--bounding-set=-sys_ptrace", "--inh-caps=-sys_ptrace", NULL };
	char p[32], *out, *err;
	const char *args[] = { "record", "--pid", p, "-d", "1", "-o", "-", NULL };
	pid_t pid = start_python();

	cr_assert_eq(getuid(), 0, "this test runs as root, like CI");
	snprintf(p, sizeof(p), "%d", (int)pid);
	cr_assert_eq(test_pyrospy_wrapped(wrap, args, &out, &err), 4, "stderr: %s", err);
	assert_error_hint(err, "permission denied", "CAP_SYS_PTRACE");
	test_stop(pid);
	free(out);
	free(err);
}

/*
 * Root with CAP_SYS_PTRACE and still refused (here: pyrospy in a Landlock
 * domain the target is outside of, which the kernel lets read no other
 * process): the hint must not tell root to run as root.
 */
Test(errors, root_refused_all_same)
{
	struct landlock_ruleset_attr attr = { .handled_access_fs = LANDLOCK_ACCESS_FS_MAKE_FIFO };
	char *out, *err;
	pid_t pid = start_python();
	long fd;

	cr_assert_eq(getuid(), 0, "this test runs as root, like CI");
	/* this test's own process (criterion forks one a test), and pyrospy after it */
	fd = syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
	cr_assert_geq(fd, 0, "Landlock is needed for this test: %s", strerror(errno));
	cr_assert_eq(syscall(SYS_landlock_restrict_self, (int)fd, 0), 0, "%s", strerror(errno));
	cr_assert_eq(record(pid, &out, &err), 4, "stderr: %s", err);
	assert_error_hint(err, "permission denied", "security module");
	cr_expect_null(strstr(err, "run as root"), "root is told to run as root: %s", err);
	test_stop(pid);
	free(out);
	free(err);
}

/*
 * No Python 3.7 or Ruby 2.5 is in the matrix: tests/fake_interp.c is a
 * process that exports what identifies one (_PyRuntime and Py_Version, or
 * ruby_version) and nothing else, enough to exercise the version gate.
 */
static void check_unsupported(const char *fake, const char *lang_version)
{
	char path[1024], p[32], *out, *err;
	const char *args[] = { "record", "--pid", p, "-d", "1", "-o", "-", NULL };
	const struct interp in = { NULL, path, 0, 0, 0 };
	const char *none[] = { NULL };
	char ready[64];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/tests/%s", BUILDDIR, fake);
	pid = test_start(&in, none, ready, sizeof(ready));
	snprintf(p, sizeof(p), "%d", (int)pid);
	cr_assert_eq(test_pyrospy(args, &out, &err), 6, "stderr: %s", err);
	assert_error_hint(err, lang_version, "Python 3.8 to 3.15 and Ruby 2.7 to 4.0");
	test_stop(pid);
	free(out);
	free(err);
}

Test(errors, unsupported_python)
{
	check_unsupported("fake-python37", "Python 3.7.0 is not supported");
}

Test(errors, unsupported_ruby)
{
	check_unsupported("fake-ruby25", "Ruby 2.5.9 is not supported");
}

Test(exec, passes_exit_status)
{
	const char *args[] = { "exec", "-q", "-o", "/dev/null", "--", "/usr/bin/python3.11", "-c",
			       "import sys, time; time.sleep(0.3); sys.exit(3)", NULL };
	char *out, *err;

	cr_assert_eq(test_pyrospy(args, &out, &err), 3, "stderr: %s", err);
	free(out);
	free(err);
}

/*
 * A command that has ended but is not yet reaped is no duration that
 * passed: its status is ours, every time.  50 runs per language and timing
 * (commands ending after 0, 0.3 and 2 s), ten at a time.
 */
static void exec_status_50(const char *interp, const char *flag, const char *before,
			   const char *after)
{
	static const char *const delays[] = { "0", "0.3", "2" };
	const char *bin = getenv("PYROSPY");

	for (size_t d = 0; d < ARRAY_SIZE(delays); d++) {
		char prog[256], cmd[2048], *out;
		int st, ok = 0;

		snprintf(prog, sizeof(prog), "%s%s%s", before, delays[d], after);
		/* each run prints its status, and its stderr when it is not 3 */
		snprintf(cmd, sizeof(cmd),
			 "for batch in 1 2 3 4 5; do for i in 1 2 3 4 5 6 7 8 9 10; do ("
			 "e=$(%s exec -o /dev/null -- %s %s \"%s\" 2>&1 >/dev/null); s=$?; "
			 "echo \"status $s\"; [ $s = 3 ] || echo \"stderr: $e\"; "
			 "case \"$e\" in *duration*|*error*|*stopping*) echo \"said: $e\";; esac) & "
			 "done; wait; done",
			 bin ? bin : BUILDDIR "/pyrospy", interp, flag, prog);
		out = test_run(cmd, &st);
		for (const char *p = out; (p = strstr(p, "status 3\n")); p++)
			ok++;
		cr_expect_eq(ok, 50, "%s after %s s: %d of 50 runs passed status 3 on:\n%s", interp,
			     delays[d], ok, out);
		cr_expect_null(strstr(out, "said: "), "%s after %s s:\n%s", interp, delays[d], out);
		free(out);
	}
}

Test(exec, exit_status_every_time_python, .timeout = 120)
{
	exec_status_50("/usr/bin/python3.11", "-c",
		       "import sys, time\ndef f(): time.sleep(", ")\nf(); sys.exit(3)");
}

Test(exec, exit_status_every_time_ruby, .timeout = 120)
{
	exec_status_50("/usr/bin/ruby3.1", "-e", "def f; sleep ", "; end; f; exit 3");
}

/* A command that cannot be run: one error, a hint, and a shell's status. */
Test(exec, missing_command_one_error)
{
	const char *args[] = { "exec", "-o", "/dev/null", "--", "/nonexistent/command", NULL };
	char *out, *err;
	int errors = 0;

	cr_assert_eq(test_pyrospy(args, &out, &err), 127, "stderr: %s", err);
	for (const char *p = err; (p = strstr(p, "error:")); p++)
		errors++;
	cr_assert_eq(errors, 1, "stderr: %s", err);
	cr_assert_not_null(strstr(err, "cannot run '/nonexistent/command'"), "stderr: %s", err);
	cr_assert_not_null(strstr(err, "hint: "), "stderr: %s", err);
	free(out);
	free(err);
}

/* exec -o -: standard output is the profile's alone; the command's goes to stderr. */
Test(exec, stdout_is_the_profile, .timeout = 30)
{
	const char *args[] = { "exec", "-q", "-r", "200", "-o", "-", "--", "/usr/bin/python3.11",
			       "-c",
			       "import time\nprint('command-says-hello', flush=True)\n"
			       "t = time.time()\nwhile time.time() - t < 1: pass\n", NULL };
	char *out, *err;

	cr_assert_eq(test_pyrospy(args, &out, &err), 0, "stderr: %s", err);
	cr_assert_null(strstr(out, "command-says-hello"), "stdout: %s", out);
	cr_assert_not_null(strstr(err, "command-says-hello"), "stderr: %s", err);
	cr_assert_gt(test_folded_count(out, "<module> ("), 50, "stdout: %s", out);
	free(out);
	free(err);
}

Test(exec, profiles_the_child)
{
	const char *args[] = { "exec", "-q", "-r", "200", "-o", "-", "--", "/usr/bin/python3.11",
			       test_target_path("seed.py"), NULL };
	char *out, *err;
	const char *wrap[] = { "timeout", "-s", "INT", "3", NULL };

	/* timeout sends SIGINT to pyrospy, which forwards it to the child */
	(void)test_pyrospy_wrapped(wrap, args, &out, &err);
	cr_assert_gt(test_folded_count(out, "work ("), 100, "profile: '%s' stderr '%s'", out, err);
	free(out);
	free(err);
}

/* The same with Ruby: attached before the VM exists, sampled once it does. */
Test(exec, profiles_a_ruby_child)
{
	const char *args[] = { "exec", "-q", "-r", "200", "-d", "3", "-o", "-", "--",
			       "/usr/bin/ruby3.1", test_target_path("seed.rb"), NULL };
	char *out, *err;

	cr_assert_eq(test_pyrospy(args, &out, &err), 0, "stderr: %s", err);
	cr_assert_gt(test_folded_count(out, "Object#work ("), 100, "profile: '%s' stderr '%s'", out,
		     err);
	free(out);
	free(err);
}

/* --duration ends the profile and then the command, with status 0. */
Test(exec, duration_stops_the_command, .timeout = 30)
{
	const char *args[] = { "exec", "-d", "1", "-o", "-", "--", "/usr/bin/python3.11",
			       test_target_path("seed.py"), NULL };
	char *out, *err;

	cr_assert_eq(test_pyrospy(args, &out, &err), 0, "stderr: %s", err);
	cr_assert_gt(test_folded_count(out, "work ("), 50, "profile: '%s'", out);
	cr_assert_not_null(strstr(err, "stopping"), "stderr: %s", err);
	free(out);
	free(err);
}

/* dump prints every thread once: busy ones, the blocked ones, the GIL/GVL holder. */
static void check_dump(const struct interp *in, const char *script, int nthreads,
		       const char *const *want, const char *lock)
{
	const char *sargs[] = { test_target_for(in, script), NULL };
	char ready[64], pidbuf[32], *out, *err;
	const char *args[] = { "dump", "--pid", pidbuf, NULL };
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	const char *p;
	int st, threads = 0, holders = 0;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	for (p = out; (p = strstr(p, "\nThread ")); p++)
		threads++;
	for (p = out; (p = strstr(p, lock)); p++)
		holders++;
	cr_assert_eq(threads, nthreads, "%s: %d threads:\n%s", in->bin, threads, out);
	cr_assert_leq(holders, 1, "%s: %d holders of the lock:\n%s", in->bin, holders, out);
	for (int i = 0; want[i]; i++)
		cr_assert_not_null(strstr(out, want[i]), "%s: no '%s' in:\n%s", in->bin, want[i],
				   out);
	free(out);
	free(err);
}

Test(dump, python_threads, .timeout = 30)
{
	const char *want[] = { "    busy0 (", "    busy1 (", "    busy2 (", "    busy3 (",
			       "    Thread.join (", NULL };

	/* main, four busy ones, the one that said "ready" */
	check_dump(&test_pythons[1], "threads.py", 6, want, "holds the GIL");
}

/*
 * Free-threaded: the same threads, and no GIL holder (there is none).  The
 * main thread is in <module>: in join(), or, on a loaded machine where the
 * four busy threads run at once, maybe still starting the last thread.
 */
Test(dump, python_threads_freethreaded, .timeout = 30)
{
	const char *want[] = { "    busy0 (", "    busy1 (", "    busy2 (", "    busy3 (",
			       "    <module> (threads.py:", ", Python 3.13.", "t): 6 threads",
			       NULL };

	check_dump(&test_pythons_ft[0], "threads.py", 6, want, "holds the GIL");
}

Test(dump, ruby_threads, .timeout = 30)
{
	const char *want[] = { "    Object#busy0 (", "    Object#busy1 (", "    Object#busy2 (",
			       "    Object#busy3 (", "    Thread::Queue#pop (", "    Thread#join (",
			       NULL };

	/* main, the one blocked in pop, four busy ones, the one that said "ready" */
	check_dump(&test_rubies[1], "threads.rb", 7, want, "holds the GVL");
}

/*
 * top in a real terminal (tmux): the seed workload's hot function heads
 * the table, and q quits.
 */
Test(top, hot_function_first_under_tmux, .timeout = 60)
{
	const char *sargs[] = { test_target_path("seed.py"), NULL };
	char ready[64], cmd[1024], sock[64], *screen, *row, *out;
	pid_t pid = test_start(&test_pythons[1], sargs, ready, sizeof(ready));
	int st;

	snprintf(sock, sizeof(sock), "pyrospy-test-%d", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "tmux -L %s new-session -d -s top -x 120 -y 30 '%s top --pid %d' && sleep 3.5 && "
		 "tmux -L %s capture-pane -p -t top", sock, getenv("PYROSPY"), (int)pid, sock);
	screen = test_run(cmd, &st);
	cr_assert_eq(st, 0, "tmux: %s", screen);
	row = strstr(screen, "%self");
	cr_assert_not_null(row, "no table on the screen:\n%s", screen);
	row = strchr(row, '\n') + 1;	/* the first row of the table */
	*strchrnul(row, '\n') = '\0';
	cr_assert_not_null(strstr(row, " work ("), "work is not on top: '%s'", row);
	snprintf(cmd, sizeof(cmd),
		 "tmux -L %s send-keys -t top q && sleep 2; tmux -L %s has-session -t top 2>&1; "
		 "tmux -L %s kill-server 2>/dev/null; true", sock, sock, sock);
	out = test_run(cmd, &st);
	test_stop(pid);
	cr_assert(strstr(out, "can't find session") || strstr(out, "no server running"),
		  "top did not quit on q: %s", out);
	free(out);
	free(screen);
}

/*
 * --subprocesses on a shell script that starts two Python workers and one
 * Ruby worker: all three are profiled, each under its own pid.
 */
Test(subprocesses, shell_with_three_workers, .timeout = 60)
{
	static const struct interp sh = { NULL, "/bin/sh", 0, 0, 0 };
	const char *sargs[] = { test_target_path("workers.sh"), "/usr/bin/python3.11",
				test_target_path("seed.py"), "/usr/bin/ruby3.1",
				test_target_path("seed.rb"), NULL };
	const char *args[] = { "record", "--pid", NULL, "--subprocesses", "--threads", "-d", "3",
			       "-o", "-", NULL };
	char ready[64], pidbuf[32], *out, *err, *line, *save;
	char pids[8][32];
	int npids = 0, py = 0, rb = 0, st, is_py[8] = { 0 }, is_rb[8] = { 0 };
	pid_t pid = test_start(&sh, sargs, ready, sizeof(ready));

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	args[2] = pidbuf;
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	/* a process may show stacks without work() (its start): look at all */
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char who[32];
		int k = 0;

		if (sscanf(line, "pid %31[0-9]:", who) != 1)
			continue;
		while (k < npids && strcmp(pids[k], who))
			k++;
		if (k == 8)
			continue;
		if (k == npids)
			snprintf(pids[npids++], sizeof(pids[0]), "%s", who);
		is_py[k] |= strstr(line, ";work (") != NULL;
		is_rb[k] |= strstr(line, ";Object#work (") != NULL;
	}
	for (int k = 0; k < npids; k++) {
		py += is_py[k];
		rb += is_rb[k];
	}
	cr_assert_eq(npids, 3, "%d processes profiled:\n%s\n%s", npids, out, err);
	cr_assert(py == 2 && rb == 1, "python %d ruby %d:\n%s", py, rb, out);
	free(out);
	free(err);
}

/* --pid-of finds a process by name or command line; none or a bad pattern fail. */
Test(pid_of, finds_by_command_line, .timeout = 30)
{
	char script[64], cmd[160], ready[64], *out, *err;
	const char *sargs[] = { script, NULL };
	const char *none[] = { "dump", "--pid-of", "no-such-process-4c1d", NULL };
	const char *bad[] = { "dump", "--pid-of", "(", NULL };
	const char *args[] = { "dump", "--pid-of", script, NULL };
	pid_t pid;

	snprintf(script, sizeof(script), "/tmp/pyrospy-pidof-%d.py", (int)getpid());
	snprintf(cmd, sizeof(cmd), "cp '%s' %s", test_target_path("seed.py"), script);
	cr_assert_eq(system(cmd), 0);
	pid = test_start(&test_pythons[1], sargs, ready, sizeof(ready));
	cr_assert_eq(test_pyrospy(args, &out, &err), 0, "%s", err);
	snprintf(cmd, sizeof(cmd), "Process %d (", (int)pid);
	cr_assert_not_null(strstr(out, cmd), "%s", out);
	cr_assert_not_null(strstr(out, "    work ("), "%s", out);
	test_stop(pid);
	unlink(script);
	free(out);
	free(err);
	cr_assert_eq(test_pyrospy(none, &out, &err), 3, "%s", err);
	cr_assert_not_null(strstr(err, "hint: "), "%s", err);
	free(out);
	free(err);
	cr_assert_eq(test_pyrospy(bad, &out, &err), 2, "%s", err);
	free(out);
	free(err);
}

/* Every option works where it is accepted; elsewhere it is refused, not ignored. */
Test(options, refused_where_they_do_nothing)
{
	static const char *const dump_bad[] = { "-r", "10", "--rate=10", "-d", "1", "--idle",
						"--gil", "-o", "x", "-f", "folded", "--threads",
						"--tag", "a=b", "--function", "--no-tags", NULL };
	static const char *const top_bad[] = { "-o", "x", "-f", "folded", "--threads", "--tag",
					       "a=b", "--subprocesses", "--function", NULL };
	const char *const *bad[2] = { dump_bad, top_bad };
	const char *cmds[2] = { "dump", "top" };

	for (int c = 0; c < 2; c++) {
		for (int i = 0; bad[c][i]; i++) {
			const char *opt = bad[c][i];
			int has_value = opt[1] != '-' || !strcmp(opt, "--tag");
			const char *args[8] = { cmds[c], "--pid", "1", opt };
			char *out, *err;
			int n = 4;

			if (has_value && strchr(opt, '=') == NULL && bad[c][i + 1])
				args[n++] = bad[c][++i];
			args[n] = NULL;
			cr_expect_eq(test_pyrospy(args, &out, &err), 2, "%s %s: %s", cmds[c], opt,
				     err);
			cr_expect_not_null(strstr(err, "does not apply to"), "%s %s: %s", cmds[c],
					   opt, err);
			free(out);
			free(err);
		}
	}
}

/* dump --subprocesses: the interpreters a shell started, each dumped. */
Test(dump, subprocesses, .timeout = 30)
{
	const char *sargs[] = { "-c",
				"/usr/bin/python3.11 -c 'import time; time.sleep(60)' & "
				"/usr/bin/ruby3.1 -e 'sleep 60' & echo ready; wait", NULL };
	static const struct interp sh = { NULL, "/bin/sh", 0, 0, 0 };
	char ready[64], pidbuf[32], *out, *err;
	const char *args[] = { "dump", "--pid", pidbuf, "--subprocesses", NULL };
	pid_t pid = test_start(&sh, sargs, ready, sizeof(ready));

	usleep(500 * 1000);	/* both interpreters started */
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	cr_expect_eq(test_pyrospy(args, &out, &err), 0, "%s", err);
	test_stop(pid);
	cr_expect_not_null(strstr(out, ", Python 3.11"), "%s%s", out, err);
	cr_expect_not_null(strstr(out, ", Ruby 3.1"), "%s%s", out, err);
	cr_expect_not_null(strstr(out, "Kernel#sleep ("), "%s", out);
	free(out);
	free(err);
}

/*
 * record --subprocesses of a process that exits and is not reaped (its
 * parent, this test, waits for it only later): the zombie ends the profile.
 */
Test(subprocesses, zombie_root_ends_the_profile, .timeout = 60)
{
	const char *sargs[] = { "-c", "import time\nprint('ready', flush=True)\ntime.sleep(1)\n",
				NULL };
	static const struct interp py = { NULL, "/usr/bin/python3.11", 0, 3, 11 };
	char ready[64], pidbuf[32], *out, *err;
	const char *args[] = { "record", "--pid", pidbuf, "--subprocesses", "-d", "40", "--idle",
			       "-o", "/dev/null", NULL };
	pid_t pid = test_start(&py, sargs, ready, sizeof(ready));
	struct timespec a, b;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	clock_gettime(CLOCK_MONOTONIC, &a);
	cr_expect_eq(test_pyrospy(args, &out, &err), 0, "%s", err);
	clock_gettime(CLOCK_MONOTONIC, &b);
	test_stop(pid);
	/* ~1 s; 40 s if the zombie were taken for a live process */
	cr_expect_lt(b.tv_sec - a.tv_sec, 20, "took %ld s: %s", (long)(b.tv_sec - a.tv_sec), err);
	free(out);
	free(err);
}

/* -q: nothing but errors, not even the statistics of a run that dropped many. */
Test(options, quiet_says_nothing, .timeout = 30)
{
	static const struct interp py = { NULL, "/usr/bin/python3.11", 0, 3, 11 };
	const char *sargs[] = { test_target_path("corrupt.py"), NULL };
	char ready[64], pidbuf[32], *out, *err;
	const char *args[] = { "record", "-q", "--pid", pidbuf, "-d", "2", "-o", "/dev/null", NULL };
	pid_t pid = test_start(&py, sargs, ready, sizeof(ready));

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	cr_expect_eq(test_pyrospy(args, &out, &err), 0, "%s", err);
	test_stop(pid);
	cr_expect_str_empty(err, "stderr under -q: %s", err);
	free(out);
	free(err);
}
