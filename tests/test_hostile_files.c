/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

/*
 * Issue 16, item 2: a target run as nobody turns its files against root's
 * pyrospy.  Ruby runs from a copy of its libruby (tests/targets/
 * replace_lib.rb), deletes the copy and puts in its place a FIFO (open()
 * would block for ever) or a symbolic link to a root-only file of the
 * host (a copy of python3.11: taken for the interpreter, it would make
 * the Ruby process a Python one).  pyrospy runs as root, with every
 * capability (it opens the mapped file through /proc/PID/map_files), and
 * as root without CAP_SYS_ADMIN and CAP_CHECKPOINT_RESTORE (a container
 * given CAP_SYS_PTRACE: map_files is closed, paths are all there is).
 * Either way it returns at once, never opens the planted file, and says
 * what it refused in one line.
 */
#define RUBY "/usr/bin/ruby3.1"
#define LIBRUBY "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"
#define LIBNAME "libruby-3.1.so.3.1"
#define LIMIT "20"	/* seconds before timeout(1) kills a hung pyrospy */

static const char *const full_root[] = { "timeout", "-s", "KILL", LIMIT, NULL };
static const char *const no_map_files[] = {
	"timeout", "-s", "KILL", LIMIT, "setpriv", "--inh-caps=-sys_admin,-checkpoint_restore",
	"--bounding-set=-sys_admin,-checkpoint_restore", NULL
};

static char dir[64];		/* the attacker's directory, nobody's */
static char secret_dir[64];	/* root-only, on tmpfs (never overlayfs) */
static char secret[128];	/* the host file a link points to */

static void hostile_setup(void)
{
	cr_assert_eq(geteuid(), 0, "these tests attack root's pyrospy: run them as root");
	strcpy(dir, "/tmp/pyrospy-hostile-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	test_sh("cp '%s' '%s/'", LIBRUBY, dir);
	test_sh("cp '%s' '%s/'", test_target_path("replace_lib.rb"), dir);
	test_sh("cp '%s' '%s/'", test_target_path("seed.py"), dir);
	test_sh("cp '%s' '%s/'", test_target_path("crafted_lib.py"), dir);
	test_sh("chmod 755 '%s' && chown -R nobody:nogroup '%s'", dir, dir);
	strcpy(secret_dir, "/dev/shm/pyrospy-secret-XXXXXX");
	cr_assert_not_null(mkdtemp(secret_dir));
	snprintf(secret, sizeof(secret), "%s/secret.so", secret_dir);
	test_sh("cp /usr/bin/python3.11 '%s' && chmod 600 '%s'", secret, secret);
}

static void hostile_teardown(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", dir, secret_dir);
	if (system(cmd))
		cr_log_warn("cannot remove %s", dir);
}

TestSuite(hostile_files, .init = hostile_setup, .fini = hostile_teardown, .timeout = 90);

/* Start replace_lib.rb as nobody: MODE fifo, or link to the secret. */
static pid_t start_attacker(const char *mode)
{
	static const struct interp setpriv = { NULL, "setpriv", 0, 0, 0 };
	char env[128], script[128], ready[64], maps[256], *text;
	const char *args[] = { "--reuid=nobody", "--regid=nogroup", "--clear-groups", "env", env,
			       RUBY, script, dir, mode, secret, NULL };
	int status;
	pid_t pid;

	snprintf(env, sizeof(env), "LD_LIBRARY_PATH=%s", dir);
	snprintf(script, sizeof(script), "%s/replace_lib.rb", dir);
	pid = test_start(&setpriv, args, ready, sizeof(ready));
	cr_assert_str_eq(ready, "ready");
	/* the attack is set: the interpreter runs from a deleted copy in dir */
	snprintf(maps, sizeof(maps), "grep -c '%s/" LIBNAME " (deleted)' /proc/%d/maps", dir,
		 (int)pid);
	text = test_run(maps, &status);
	cr_assert(status == 0 && atoi(text) > 0, "libruby is not mapped from %s", dir);
	free(text);
	return pid;
}

struct run {
	int status;
	double seconds;
	char *out, *err;
	int opened;		/* the secret was opened meanwhile (inotify IN_OPEN) */
};

/*
 * pyrospy ARGS as root (wrapped in timeout(1), and setpriv for
 * no_map_files), watching whether the secret gets opened.  O_PATH, which
 * only names a file, is no open for inotify (Linux 5.x and later).
 */
static struct run run_pyrospy(const char *const *wrap, const char *const *args)
{
	struct run r = { 0 };
	struct timespec t0, t1;
	char ev[4096];
	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	cr_assert(in >= 0);
	cr_assert(inotify_add_watch(in, secret, IN_OPEN) >= 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r.status = test_pyrospy_wrapped(wrap, args, &r.out, &r.err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r.seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	r.opened = read(in, ev, sizeof(ev)) > 0;
	close(in);
	return r;
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* It returned, and promptly: not killed by timeout(1). */
static void assert_prompt(const struct run *r)
{
	cr_assert_neq(r->status, 128 + 9, "pyrospy hung (killed after " LIMIT " s): %s", r->err);
	cr_assert_lt(r->seconds, 10.0, "pyrospy took %.1f s", r->seconds);
}

/* Exactly one line of stderr says it refused path, and why. */
static void assert_refusal_line(const char *err, const char *path, const char *why)
{
	int lines = 0;
	const char *p = err;

	while ((p = strstr(p, "refused to read '"))) {
		const char *eol = strchrnul(p, '\n');
		char *line = strndup(p, (size_t)(eol - p));

		cr_assert(strstr(line, path), "the refusal names another file: %s", line);
		cr_assert(strstr(line, why), "the refusal does not say '%s': %s", why, line);
		free(line);
		lines++;
		p = eol;
	}
	cr_assert_eq(lines, 1, "%d refusal lines in:\n%s", lines, err);
}

static char *lib_path(void)
{
	static char path[128];

	snprintf(path, sizeof(path), "%s/" LIBNAME, dir);
	return path;
}

Test(hostile_files, fifo_with_map_files)
{
	char p[32];
	const char *args[] = { "dump", "--pid", p, NULL };
	pid_t pid = start_attacker("fifo");
	struct run r;

	snprintf(p, sizeof(p), "%d", (int)pid);
	r = run_pyrospy(full_root, args);
	test_stop(pid);
	assert_prompt(&r);
	/* the mapped file itself, deleted as it is: the Ruby is read */
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.out, "Ruby 3.1") && strstr(r.out, "Object#work"), "%s", r.out);
	run_free(&r);
}

Test(hostile_files, fifo_without_map_files)
{
	char p[32];
	const char *args[] = { "dump", "--pid", p, NULL };
	pid_t pid = start_attacker("fifo");
	struct run r;

	snprintf(p, sizeof(p), "%d", (int)pid);
	r = run_pyrospy(no_map_files, args);
	test_stop(pid);
	assert_prompt(&r);
	/* libruby was refused, and with it the interpreter: status 1 */
	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	assert_refusal_line(r.err, lib_path(), "a FIFO");
	run_free(&r);
}

Test(hostile_files, link_to_host_file_with_map_files)
{
	char p[32];
	const char *args[] = { "dump", "--pid", p, NULL };
	pid_t pid = start_attacker("link");
	struct run r;

	snprintf(p, sizeof(p), "%d", (int)pid);
	r = run_pyrospy(full_root, args);
	test_stop(pid);
	assert_prompt(&r);
	cr_assert_not(r.opened, "pyrospy opened %s, the link's target", secret);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.out, "Ruby 3.1"), "the planted python3.11 was used:\n%s", r.out);
	run_free(&r);
}

Test(hostile_files, link_to_host_file_without_map_files)
{
	char p[32];
	const char *args[] = { "dump", "--pid", p, NULL };
	pid_t pid = start_attacker("link");
	struct run r;

	snprintf(p, sizeof(p), "%d", (int)pid);
	r = run_pyrospy(no_map_files, args);
	test_stop(pid);
	assert_prompt(&r);
	cr_assert_not(r.opened, "pyrospy opened %s, the link's target", secret);
	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	assert_refusal_line(r.err, lib_path(), "another file than the one the process mapped");
	cr_assert_not(strstr(r.out, "Python"), "the planted python3.11 was used:\n%s", r.out);
	run_free(&r);
}

/*
 * The same link inside a container: a mount namespace whose root is a
 * tmpfs (pivot_root), with /usr and /etc bound from the host, its own
 * /proc (for umount), the attacker's copy of libruby in /evil.  Its link names an absolute path
 * that exists on the host only: resolved through /proc/PID/root by the
 * host's root, it would reach the host's secret.
 */
static const char container[] =
	"set -e\n"
	"r=$1 src=$2 secret=$3\n"
	"mount -t tmpfs -o mode=755 ctr \"$r\"\n"
	"mkdir \"$r/usr\" \"$r/etc\" \"$r/tmp\" \"$r/old\" \"$r/evil\" \"$r/proc\"\n"
	"mount -t proc proc \"$r/proc\"\n"
	"chmod 1777 \"$r/tmp\"\n"
	"mount --rbind /usr \"$r/usr\"\n"
	"mount --rbind /etc \"$r/etc\"\n"
	"ln -s usr/lib \"$r/lib\"; ln -s usr/lib64 \"$r/lib64\"; ln -s usr/bin \"$r/bin\"\n"
	"cp \"$src/" LIBNAME "\" \"$src/replace_lib.rb\" \"$r/evil/\"\n"
	"chown -R nobody:nogroup \"$r/evil\"\n"
	"cd \"$r\"\n"
	"pivot_root . old\n"
	"umount -l /old\n"
	"exec setpriv --reuid=nobody --regid=nogroup --clear-groups env LD_LIBRARY_PATH=/evil "
	RUBY " /evil/replace_lib.rb /evil link \"$secret\"\n";

static void link_in_container(const char *const *wrap, int with_map_files)
{
	static const struct interp unshare = { NULL, "unshare", 0, 0, 0 };
	char root[64], ready[64], p[32];
	const char *sargs[] = { "-m", "--propagation", "private", "sh", "-c", container, "sh", root,
				dir, secret, NULL };
	const char *args[] = { "dump", "--pid", p, NULL };
	struct run r;
	pid_t pid;

	strcpy(root, "/tmp/pyrospy-ctr-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	pid = test_start(&unshare, sargs, ready, sizeof(ready));
	cr_assert_str_eq(ready, "ready");
	snprintf(p, sizeof(p), "%d", (int)pid);
	r = run_pyrospy(wrap, args);
	test_stop(pid);
	rmdir(root);
	assert_prompt(&r);
	cr_assert_not(r.opened, "pyrospy opened the host's %s, the container's link's target",
		      secret);
	cr_assert_not(strstr(r.out, "Python"), "the host's python3.11 was used:\n%s", r.out);
	if (with_map_files) {
		cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
		cr_assert(strstr(r.out, "Ruby 3.1"), "%s", r.out);
	} else {
		/* the link leads nowhere inside the container: no libruby, no Ruby */
		cr_assert_eq(r.status, 5, "exit %d: %s", r.status, r.err);
	}
	run_free(&r);
}

Test(hostile_files, link_in_container_with_map_files)
{
	link_in_container(full_root, 1);
}

Test(hostile_files, link_in_container_without_map_files)
{
	link_in_container(no_map_files, 0);
}

/*
 * --subprocesses: a shell (nobody's) runs the FIFO attacker beside a
 * Python worker.  The attacker is refused in one line; the worker is
 * sampled all the same.
 */
Test(hostile_files, subprocesses_fifo_does_not_stall_the_others)
{
	static const struct interp setpriv = { NULL, "setpriv", 0, 0, 0 };
	static const char script[] =
		"LD_LIBRARY_PATH=\"$1\" " RUBY " \"$1/replace_lib.rb\" \"$1\" fifo >/dev/null &\n"
		"/usr/bin/python3.11 \"$1/seed.py\" >/dev/null &\n"
		"while [ ! -p \"$1/" LIBNAME "\" ]; do sleep 0.1; done\n"
		"sleep 0.5\n"
		"echo ready\n"
		"wait\n";
	const char *sargs[] = { "--reuid=nobody", "--regid=nogroup", "--clear-groups", "sh", "-c",
				script, "sh", dir, NULL };
	char ready[64], p[32];
	const char *args[] = { "record", "--pid", p, "--subprocesses", "-d", "2", "-o", "-", NULL };
	pid_t pid = test_start(&setpriv, sargs, ready, sizeof(ready));
	struct run r;

	snprintf(p, sizeof(p), "%d", (int)pid);
	r = run_pyrospy(no_map_files, args);
	test_stop(pid);
	assert_prompt(&r);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	cr_assert_gt(test_folded_count(r.out, ";work ("), 0, "the Python worker was not sampled:\n%s\n%s",
		     r.out, r.err);
	assert_refusal_line(r.err, lib_path(), "a FIFO");
	cr_assert(strstr(r.err, "not profiling subprocess"), "%s", r.err);
	run_free(&r);
}

/*
 * Issue 16, item 3, end to end: Python maps a decoy libpython3.11.so.1.0
 * that claims four million section headers (tests/targets/crafted_lib.py).
 * It is refused at once, in one line, and the Python is read all the same
 * (its executable holds the interpreter).
 */
Test(hostile_files, crafted_library_past_limits)
{
	static const struct interp setpriv = { NULL, "setpriv", 0, 0, 0 };
	char script[128], ready[64], p[32], lib[128];
	const char *sargs[] = { "--reuid=nobody", "--regid=nogroup", "--clear-groups",
				"/usr/bin/python3.11", script, dir, NULL };
	const char *args[] = { "dump", "--pid", p, NULL };
	struct run r;
	pid_t pid;

	snprintf(script, sizeof(script), "%s/crafted_lib.py", dir);
	snprintf(lib, sizeof(lib), "%s/libpython3.11.so.1.0", dir);
	pid = test_start(&setpriv, sargs, ready, sizeof(ready));
	cr_assert_str_eq(ready, "ready");
	snprintf(p, sizeof(p), "%d", (int)pid);
	r = run_pyrospy(full_root, args);
	test_stop(pid);
	assert_prompt(&r);
	cr_assert_lt(r.seconds, 2.0, "%.1f s for a file of holes", r.seconds);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.out, "Python 3.11") && strstr(r.out, "work"), "%s", r.out);
	assert_refusal_line(r.err, lib, "an ELF file past pyrospy's limits");
	run_free(&r);
}
