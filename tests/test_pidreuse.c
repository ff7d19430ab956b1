/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "proc/target.h"

/*
 * A target is a process, not a number.  Root profiles a target of
 * nobody's; nobody ends it and a root job gets its pid.  pyrospy must
 * neither sample the root job (its frames in nobody's profile) nor, on
 * CPython 3.15, write into it (last_profiled_frame), and must say the
 * target exited.
 *
 * The switch is made deterministic: pyrospy is stopped (SIGSTOP: as if
 * not scheduled for a moment, which a loaded machine does anyway), the
 * target killed and reaped, the next pid set to the target's
 * (/proc/sys/kernel/ns_last_pid, root in the initial pid namespace) and
 * the root job forked onto it and started, and only then pyrospy let go
 * on.  Whatever pyrospy does after that is to the root job's process.
 * Two ways: each process laid out at random (today's pyrospy takes the
 * new image for an exec() of the target and opens it again), and both
 * laid out alike (setarch -R, same arguments and environment: no exec is
 * seen, and today's pyrospy reads the job at the addresses it knew).
 *
 * The write is seen by the root job itself: it reads its own thread's
 * last_profiled_frame (ctypes, at the offset _Py_DebugOffsets gives),
 * which stays 0 until a profiler writes it, and writes a report file if
 * it ever is not.
 */

/* setpriv, and the target dies with the test (a change of user clears it) */
#define AS_NOBODY "setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", \
	"--pdeathsig=SIGKILL"
#define SECRET "root_only_secret_handler_for_payroll"

/* argv (in in's chroot, if any) with stdout on a pipe; wait for its "ready" */
static void start_in(const struct interp *in, const char *const *args, const char **argv)
{
	static char root[1024];
	int n = 0;

	if (in->root) {
		struct stat st;

		snprintf(root, sizeof(root), "%s/%s", test_chroots(), in->root);
		cr_assert(stat(root, &st) == 0, "chroot %s missing: run scripts/provision-chroots",
			  root);
		argv[n++] = "chroot";
		argv[n++] = root;
	}
	for (int i = 0; args[i] && n < 30; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
}

/* The child: a group of its own, dies with the test, stdout on fd. */
static void child_exec(const struct interp *in, const char **argv, int fd)
{
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	dup2(fd, 1);
	for (const char *const *e = test_env(in); e && *e; e++)
		putenv((char *)*e);
	execvp(argv[0], (char *const *)argv);
	_exit(127);
}

static void wait_ready(FILE *f, const char *what)
{
	char line[128];

	cr_assert(fgets(line, sizeof(line), f), "%s did not start", what);
	cr_assert(!strncmp(line, "ready", 5), "%s said '%s', not ready", what, line);
}

/*
 * Fork onto pid want, which is free: the kernel gives a new process
 * ns_last_pid + 1.  Another process may take it first (other tests fork
 * too): then again.
 */
static pid_t claim(pid_t want, const struct interp *in, const char **argv)
{
	for (int tries = 0; tries < 500; tries++) {
		int fds[2], status;
		FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");
		pid_t pid;

		cr_assert(f, "cannot open ns_last_pid: %s (run as root)", strerror(errno));
		fprintf(f, "%d", (int)want - 1);
		cr_assert(fclose(f) == 0, "cannot set ns_last_pid: %s", strerror(errno));
		cr_assert(pipe(fds) == 0);
		pid = fork();
		cr_assert(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			if (getpid() != want)
				_exit(0);
			child_exec(in, argv, fds[1]);
		}
		close(fds[1]);
		if (pid == want) {
			f = fdopen(fds[0], "r");
			cr_assert(f);
			wait_ready(f, "the root job");
			/* its pipe stays open (a leaked FILE): closing it would SIGPIPE it */
			return pid;
		}
		close(fds[0]);
		waitpid(pid, &status, 0);
	}
	cr_assert_fail("pid %d was taken by another process 500 times", (int)want);
	return -1;
}

static char *slurp(int fd)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;

	lseek(fd, 0, SEEK_SET);
	while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (cap - len < 2)
			buf = realloc(buf, cap *= 2);
	}
	buf[len] = '\0';
	return buf;
}

/* The report file of the root job on pid, as this process sees it. */
static void report_path(const struct interp *in, pid_t pid, char *host, size_t cap)
{
	snprintf(host, cap, "%s%s%s/tmp/pyrospy-pidreuse-%d-written", in->root ? test_chroots() : "",
		 in->root ? "/" : "", in->root ? in->root : "", (int)pid);
}

static void stop_group(pid_t pid)
{
	int status;

	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/*
 * Run `pyrospy cmd --pid T ...' on nobody's target, switch T to a root job
 * of in as above, and return pyrospy's stderr (caller frees); its stdout
 * goes to out (a file), the profile to file if cmd is record.  same: both
 * run without address space randomisation (setarch -R), so that the job
 * has the very layout of the target: its image looks unchanged (no exec
 * seen), and the addresses pyrospy knew are the job's interpreter's.
 */
static char *switch_under(const struct interp *in, const char *script, int same, const char *cmd,
			  const char *file, const char *out, pid_t *pid)
{
	const char *nargs[] = { AS_NOBODY, "setarch", "-R", in->bin, test_target_for(in, script),
				NULL };
	const char *rargs[] = { "setarch", "-R", in->bin, test_target_for(in, script), NULL };
	const char *argv[32], *bin = getenv("PYROSPY");
	char errpath[] = "/tmp/pyrospy-pidreuse-err-XXXXXX", pidbuf[32], old[1024], *err;
	struct timespec ts = { 1, 300 * 1000 * 1000 };
	int fds[2], efd, ofd, status;
	pid_t target, root, pyro;
	FILE *f;

	cr_assert_eq(geteuid(), 0, "run as root: the target runs as nobody, the job as root");
	cr_assert(bin, "PYROSPY not set");
	if (!same) {
		/* each its own layout: no setarch -R */
		memmove(nargs + 5, nargs + 7, 3 * sizeof(*nargs));
		memmove(rargs, rargs + 2, 3 * sizeof(*rargs));
	}
	/* nobody's target */
	start_in(in, nargs, argv);
	cr_assert(pipe(fds) == 0);
	target = fork();
	cr_assert(target >= 0);
	if (target == 0) {
		close(fds[0]);
		child_exec(in, argv, fds[1]);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	cr_assert(f);
	wait_ready(f, "nobody's target");
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)target);
	report_path(in, target, old, sizeof(old));
	unlink(old);	/* an earlier job's on this pid */

	/* pyrospy on it */
	efd = mkstemp(errpath);
	cr_assert(efd >= 0);
	unlink(errpath);
	ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert(ofd >= 0);
	pyro = fork();
	cr_assert(pyro >= 0);
	if (pyro == 0) {
		const char *pargs[] = { bin, cmd, "--pid", pidbuf, "-d", "5", "-o", file,
					"-f", "folded", NULL };

		if (!strcmp(cmd, "serve")) {
			pargs[6] = "--listen";
			pargs[7] = "127.0.0.1:0";
			pargs[8] = NULL;
		} else if (strcmp(cmd, "record")) {
			pargs[6] = NULL;	/* top: no file */
		}
		dup2(open("/dev/null", O_RDONLY), 0);	/* top: no 'q' to read */
		dup2(ofd, 1);
		dup2(efd, 2);
		execv(bin, (char *const *)pargs);
		_exit(127);
	}
	close(ofd);
	nanosleep(&ts, NULL);		/* a second of nobody's samples, and top's first table */

	/* the switch, while pyrospy is not running */
	kill(pyro, SIGSTOP);
	cr_assert_eq(waitpid(pyro, &status, WUNTRACED), pyro);
	cr_assert(WIFSTOPPED(status), "pyrospy ended before the switch (status %d)", status);
	kill(target, SIGKILL);
	cr_assert_eq(waitpid(target, &status, 0), target);
	fclose(f);
	start_in(in, rargs, argv);
	root = claim(target, in, argv);
	*pid = root;
	kill(pyro, SIGCONT);
	while (waitpid(pyro, &status, 0) < 0 && errno == EINTR)
		;
	/* the root job checks its word in a loop: give it a turn or two */
	ts = (struct timespec){ 0, 300 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	stop_group(root);
	err = slurp(efd);
	close(efd);
	cr_assert(WIFEXITED(status), "pyrospy died of signal %d\n%s", WTERMSIG(status), err);
	return err;
}


static void record_switch(const struct interp *in, const char *script, int same)
{
	char file[] = "/tmp/pyrospy-pidreuse-XXXXXX.folded", host[1024], *err, *folded;
	int fd = mkstemps(file, 7);
	struct stat st;
	pid_t pid;

	cr_assert(in->lang == (!strcmp(script, "pidreuse.py") ? TARGET_PYTHON : TARGET_RUBY));
	cr_assert(fd >= 0);
	close(fd);
	err = switch_under(in, script, same, "record", file, "/dev/null", &pid);
	report_path(in, pid, host, sizeof(host));
	folded = test_slurp(file);
	unlink(file);
	cr_assert(folded, "no profile written\n%s", err);
	/* the attack was real: nobody's target was sampled, then its pid was the job's;
	 * each of the rest is said apart */
	cr_assert_gt(test_folded_count(folded, test_func(in, "nobody_loop")), 0,
		     "nobody's target was not sampled\n%s", err);
	cr_expect_eq(test_folded_count(folded, SECRET), 0,
		     "the root job on the target's pid was sampled:\n%s\n%s", err, folded);
	cr_expect(!strstr(err, "exec()'d"), "a new process on the pid taken for an exec():\n%s",
		  err);
	cr_expect(strstr(err, "exited"), "pyrospy did not say the target exited:\n%s", err);
	if (in->minor == 15 && in->lang == TARGET_PYTHON)
		cr_expect(stat(host, &st) < 0, "the root job was written into (%s):\n%s",
			  test_slurp(host), err);
	unlink(host);
	free(folded);
	free(err);
}

/* top: its table never shows the root job's functions */
Test(pidreuse, top_python3_11, .timeout = 30)
{
	const struct interp *in = &test_pythons[1];
	char out[] = "/tmp/pyrospy-pidreuse-top-XXXXXX", host[1024], *err, *table;
	int fd = mkstemp(out);
	pid_t pid;

	cr_assert(fd >= 0);
	close(fd);
	err = switch_under(in, "pidreuse.py", 0, "top", NULL, out, &pid);
	report_path(in, pid, host, sizeof(host));
	table = test_slurp(out);
	unlink(out);
	cr_assert(table);
	cr_assert(strstr(table, "nobody_loop"), "top did not show nobody's target:\n%s\n%s", err,
		  table);
	cr_expect(!strstr(table, SECRET), "top showed the root job on the target's pid:\n%s",
		  table);
	cr_expect(!strstr(err, "exec()'d"), "a new process on the pid taken for an exec():\n%s",
		  err);
	unlink(host);
	free(table);
	free(err);
}

/* serve: stops serving when the target exits, not serving the root job on */
Test(pidreuse, serve_python3_11, .timeout = 30)
{
	pid_t pid;
	char *err = switch_under(&test_pythons[1], "pidreuse.py", 0, "serve", NULL, "/dev/null",
				 &pid);

	cr_expect(strstr(err, "exited; no longer serving"),
		  "serve went on after the target's pid was the root job's:\n%s", err);
	free(err);
}

Test(pidreuse, python3_11, .timeout = 30)
{
	record_switch(&test_pythons[1], "pidreuse.py", 0);
}

Test(pidreuse, python3_15, .timeout = 30)
{
	record_switch(&test_pythons[4], "pidreuse.py", 0);
}

Test(pidreuse, ruby3_1, .timeout = 30)
{
	record_switch(&test_rubies[1], "pidreuse.rb", 0);
}

Test(pidreuse, python3_11_same_layout, .timeout = 30)
{
	record_switch(&test_pythons[1], "pidreuse.py", 1);
}

Test(pidreuse, python3_15_same_layout, .timeout = 30)
{
	record_switch(&test_pythons[4], "pidreuse.py", 1);
}

Test(pidreuse, ruby3_1_same_layout, .timeout = 30)
{
	record_switch(&test_rubies[1], "pidreuse.rb", 1);
}
