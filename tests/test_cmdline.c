/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "target.h"

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
