/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "proc/target.h"

/*
 * The two ways pyrospy meets a containerised application, built with real
 * namespaces (podman and docker cannot run here):
 *
 *  - from the host into a container: the application runs in PID, mount,
 *    UTS and IPC namespaces of its own, a chroot of the matrix its root,
 *    pid 1 there; pyrospy on the host profiles it by its host pid;
 *  - as a sidecar: pyrospy shares the application's PID namespace (its own
 *    /proc mounted for it, as in a pod with shareProcessNamespace) but not
 *    its root, and holds CAP_SYS_PTRACE and no other capability.
 *
 * The interpreters are ones the host does not have: what pyrospy reads of
 * their files, it reads through /proc/PID/root.  Python <= 3.10 and Ruby
 * <= 3.0 store no kernel tid of their own (pthtid.h): pid 1 is where
 * finding it once went wrong.
 */
static const struct interp boxed[] = {
	{ "bullseye", "python3.9", TARGET_PYTHON, 3, 9 },
	{ "trixie", "python3.13", TARGET_PYTHON, 3, 13 },
	{ "bullseye", "ruby2.7", TARGET_RUBY, 2, 7 },
	{ "trixie", "ruby3.3", TARGET_RUBY, 3, 3 },
	{ "sid", "python3.14", TARGET_PYTHON, 3, 14 },
	{ "sid", "ruby3.4", TARGET_RUBY, 3, 4 },
};
#define NBOXED (sizeof(boxed) / sizeof(boxed[0]))

static const struct interp unshare = { NULL, "unshare", 0, 0, 0 };

/* Our only CAP_SYS_PTRACE, and that capability only, as a sidecar's (setpriv). */
#define ONLY_PTRACE "--inh-caps=-all,+sys_ptrace", "--ambient-caps=-all,+sys_ptrace", \
		"--bounding-set=-all,+sys_ptrace"
#define NO_CAPS "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"

/*
 * Start `bin args...' as the container's pid 1, as user (chroot's
 * --userspec; NULL: root), ready once it prints a line.  Returns the pid
 * of unshare (for test_stop()); *app gets the application's host pid.
 */
static pid_t container_start_as(const struct interp *in, const char *user,
				const char *const *args, pid_t *app)
{
	char root[1024], mount_proc[1100], userspec[64], ready[64];
	const char *argv[24] = { "--pid", "--fork", "--kill-child", "--mount", "--uts", "--ipc",
				 mount_proc, "chroot" };
	int n = 8;
	struct stat st;
	pid_t pid;

	snprintf(root, sizeof(root), "%s/%s", test_chroots(), in->root);
	cr_assert(stat(root, &st) == 0, "chroot %s missing: run scripts/provision-chroots", root);
	snprintf(mount_proc, sizeof(mount_proc), "--mount-proc=%s/proc", root);
	if (user) {
		snprintf(userspec, sizeof(userspec), "--userspec=%s", user);
		argv[n++] = userspec;
	}
	argv[n++] = root;
	argv[n++] = in->bin;
	for (int i = 0; args[i] && n < 23; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid = test_start(&unshare, argv, ready, sizeof(ready));
	*app = test_first_child(pid);
	return pid;
}

static pid_t container_start(const struct interp *in, const char *const *args, pid_t *app)
{
	return container_start_as(in, NULL, args, app);
}

/* The innermost id of the NSpid line of /proc/PID/task/TID/status, and how many ids it has. */
static pid_t nspid(pid_t pid, pid_t tid, int *levels)
{
	char path[96], line[256];
	pid_t last = 0;
	FILE *f;

	*levels = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 6, *end;

		if (strncmp(line, "NSpid:", 6))
			continue;
		for (long v; (v = strtol(p, &end, 10)), end != p; p = end) {
			last = (pid_t)v;
			(*levels)++;
		}
	}
	fclose(f);
	return last;
}

/* Is tid a thread of app: by host tid, or by its id in app's namespace (ns)? */
static int is_thread_of(pid_t app, pid_t tid, int ns)
{
	pid_t *tids;
	int n = target_tasks(app, &tids), found = 0, levels;

	cr_assert_geq(n, 1, "process %d is gone", (int)app);
	for (int i = 0; i < n && !found; i++)
		found = (ns ? nspid(app, tids[i], &levels) : tids[i]) == tid;
	free(tids);
	return found;
}

/* Every "thread (TID)" root frame of folded names a thread of app (ns: as it knows it). */
static void assert_tids_of(const char *folded, pid_t app, int ns, const char *bin)
{
	int seen = 0;

	for (const char *p = folded; (p = strstr(p, "thread (")); p++) {
		long tid = strtol(p + 8, NULL, 10);

		cr_assert(is_thread_of(app, (pid_t)tid, ns),
			  "%s: thread (%ld) is no thread of process %d (%s ids):\n%s", bin, tid,
			  (int)app, ns ? "its namespace's" : "host", folded);
		seen++;
	}
	cr_assert_geq(seen, 4, "%s: no thread root frames:\n%s", bin, folded);
}

/* The interpreter is nowhere on the host: its files can only come through /proc/PID/root. */
static void assert_not_on_host(const struct interp *in)
{
	char path[256];

	snprintf(path, sizeof(path), "/usr/bin/%s", in->bin);
	cr_assert_neq(access(path, F_OK), 0, "%s exists on the host: the test proves nothing",
		      path);
}

static const char *prefix_of(const struct interp *in)
{
	return in->lang == TARGET_RUBY ? "Object#" : "";
}

ParameterizedTestParameters(container, from_host)
{
	return cr_make_param_array(size_t, (void *)test_indexes(NBOXED), NBOXED);
}

/*
 * record by host pid: each busy thread under a thread of its own, named by
 * its host tid; the main thread, asleep in join, left out as idle (its
 * state read through the tid translation) and there with --idle, under
 * the application's host pid.
 */
ParameterizedTest(size_t *i, container, from_host, .timeout = 60)
{
	const struct interp *in = &boxed[*i];
	const char *sargs[] = { test_target_for(in, in->lang == TARGET_RUBY ? "threads.rb" :
						 "threads.py"), NULL };
	const char *args[] = { "record", "--pid", NULL, "--threads", "-d", "2", "-o", "-", NULL,
			       NULL };
	char pidbuf[32], main_thread[48], *out, *err;
	int st, levels;
	pid_t app, pid;

	assert_not_on_host(in);
	pid = container_start(in, sargs, &app);
	cr_assert_eq(nspid(app, app, &levels), 1, "%s is not pid 1 of its namespace", in->bin);
	cr_assert_geq(levels, 2, "%s: NSpid has %d ids: no namespace of its own", in->bin, levels);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)app);
	snprintf(main_thread, sizeof(main_thread), "thread (%d)", (int)app);
	args[2] = pidbuf;
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	test_busy_threads_apart(out, in->bin, prefix_of(in));
	assert_tids_of(out, app, 0, in->bin);
	cr_assert_eq(test_folded_count(out, main_thread), 0,
		     "%s: the main thread, asleep, is there without --idle:\n%s", in->bin, out);
	free(out);
	free(err);

	args[8] = "--idle";
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "%s --idle: exit %d: %s", in->bin, st, err);
	cr_assert_geq(test_folded_count(out, main_thread), 1,
		      "%s --idle: no stack of the main thread, %s:\n%s", in->bin, main_thread, out);
	assert_tids_of(out, app, 0, in->bin);
	test_stop(pid);
	free(out);
	free(err);
}

ParameterizedTestParameters(container, dump_from_host)
{
	return cr_make_param_array(size_t, (void *)test_indexes(NBOXED), NBOXED);
}

/* dump by host pid: every thread once, by its host tid; the main thread idle. */
ParameterizedTest(size_t *i, container, dump_from_host, .timeout = 60)
{
	const struct interp *in = &boxed[*i];
	const char *sargs[] = { test_target_for(in, in->lang == TARGET_RUBY ? "threads.rb" :
						 "threads.py"), NULL };
	const char *args[] = { "dump", "--pid", NULL, NULL };
	char pidbuf[32], *out, *err;
	pid_t app, pid = container_start(in, sargs, &app), seen[64], *tids;
	int st, nseen = 0, main_idle = 0, ntask;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)app);
	args[2] = pidbuf;
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	for (const char *p = out; (p = strstr(p, "\nThread ")); p++) {
		pid_t tid = (pid_t)strtol(p + 8, NULL, 10);
		const char *eol = strchr(p + 1, '\n');

		cr_assert(is_thread_of(app, tid, 0), "%s: Thread %d is none of process %d:\n%s",
			  in->bin, (int)tid, (int)app, out);
		for (int k = 0; k < nseen; k++)
			cr_assert_neq(seen[k], tid, "%s: Thread %d twice:\n%s", in->bin, (int)tid,
				      out);
		cr_assert_lt(nseen, 64);
		seen[nseen++] = tid;
		if (tid == app)
			main_idle = eol && memmem(p, (size_t)(eol - p), "(idle", 5) != NULL;
	}
	ntask = target_tasks(app, &tids);
	free(tids);
	test_stop(pid);
	/* every thread of the kernel's, Ruby 3.3+'s timer thread too, with no frames */
	cr_assert_eq(nseen, ntask, "%s: %d threads of %d:\n%s", in->bin, nseen, ntask, out);
	for (const char *p = out; (p = strstr(p, "\n    no ")); p++)
		nseen--;
	/* threads.py: main, 4 busy, 1 announcing; threads.rb: also one in Queue#pop */
	cr_assert_eq(nseen, in->lang == TARGET_RUBY ? 7 : 6, "%s: %d threads:\n%s", in->bin, nseen,
		     out);
	cr_assert(main_idle, "%s: the main thread (%d) is not shown idle:\n%s", in->bin, (int)app,
		  out);
	free(out);
	free(err);
}

/*
 * --subprocesses by the host pid of the container's pid 1, a shell: its
 * two Python workers and one Ruby worker, each under its host pid.
 */
Test(container, subprocesses_from_host, .timeout = 60)
{
	const struct interp sh = { "bullseye", "/bin/sh", 0, 0, 0 };
	const char *sargs[] = { test_target_for(&sh, "workers.sh"), "python3.9",
				test_target_for(&sh, "seed.py"), "ruby2.7",
				test_target_for(&sh, "seed.rb"), NULL };
	const char *args[] = { "record", "--pid", NULL, "--subprocesses", "--threads", "-d", "3",
			       "-o", "-", NULL };
	char pidbuf[32], path[96], kids[256] = "", *out, *err;
	pid_t app, pid = container_start(&sh, sargs, &app);
	int st, py = 0, rb = 0, nkids = 0;
	FILE *f;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)app);
	args[2] = pidbuf;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)app, (int)app);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(kids, sizeof(kids), f));
	fclose(f);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	/* each worker (a child of the shell, by host pid) is there, with its own language */
	for (char *save, *k = strtok_r(kids, " \n", &save); k; k = strtok_r(NULL, " \n", &save)) {
		char who[48];

		snprintf(who, sizeof(who), "pid %s:", k);
		cr_assert(strstr(out, who), "worker %s is missing:\n%s\n%s", k, out, err);
		for (const char *l = out; (l = strstr(l, who)); l++) {
			const char *eol = strchr(l, '\n');
			size_t len = eol ? (size_t)(eol - l) : strlen(l);

			if (memmem(l, len, ";Object#work (", 14)) {
				rb++;
				break;
			}
			if (memmem(l, len, ";work (", 7)) {
				py++;
				break;
			}
		}
		nkids++;
	}
	cr_assert_eq(nkids, 3, "the shell has %d children", nkids);
	cr_assert(py == 2 && rb == 1, "python %d ruby %d:\n%s", py, rb, out);
	free(out);
	free(err);
}

/*
 * pyrospy as a sidecar of the container's application: in its PID
 * namespace (nsenter), with a /proc of its own for it (unshare
 * --mount-proc, as a container runtime mounts one), its root the host's,
 * then every capability dropped but those in caps (setpriv).
 */
static int sidecar(pid_t app, const char *const *caps, const char *const *args, char **out,
		   char **err)
{
	char ns[64];
	const char *wrap[16] = { "nsenter", ns, "--", "unshare", "--mount", "--mount-proc", "--",
				 "setpriv" };
	int n = 8;

	snprintf(ns, sizeof(ns), "--pid=/proc/%d/ns/pid", (int)app);
	for (int i = 0; caps[i] && n < 14; i++)
		wrap[n++] = caps[i];
	wrap[n++] = "--";
	wrap[n] = NULL;
	return test_pyrospy_wrapped(wrap, args, out, err);
}

ParameterizedTestParameters(sidecar, pid_of_with_only_sys_ptrace)
{
	return cr_make_param_array(size_t, (void *)test_indexes(NBOXED), NBOXED);
}

/*
 * The sidecar finds the application with --pid-of and profiles it, holding
 * CAP_SYS_PTRACE alone: every busy thread apart, named by the ids of the
 * shared namespace (the ones the sidecar's /proc shows).
 */
ParameterizedTest(size_t *i, sidecar, pid_of_with_only_sys_ptrace, .timeout = 60)
{
	const struct interp *in = &boxed[*i];
	const char *sargs[] = { test_target_for(in, in->lang == TARGET_RUBY ? "threads.rb" :
						 "threads.py"), NULL };
	const char *caps[] = { ONLY_PTRACE, NULL };
	const char *args[] = { "record", "--pid-of", in->bin, "--threads", "-d", "2", "-o", "-",
			       NULL };
	char *out, *err;
	pid_t app, pid;
	int st;

	assert_not_on_host(in);
	pid = container_start(in, sargs, &app);
	/* the wrapper leaves CAP_SYS_PTRACE (bit 19) and nothing else effective */
	out = test_run("setpriv --inh-caps=-all,+sys_ptrace --ambient-caps=-all,+sys_ptrace "
		       "--bounding-set=-all,+sys_ptrace -- grep CapEff: /proc/self/status", &st);
	cr_assert(st == 0 && strstr(out, "\t0000000000080000"), "setpriv left %s", out);
	free(out);
	st = sidecar(app, caps, args, &out, &err);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert(strstr(err, "profiling process 1 "), "%s: not the namespace's pid 1: %s",
		  in->bin, err);
	test_busy_threads_apart(out, in->bin, prefix_of(in));
	assert_tids_of(out, app, 1, in->bin);
	test_stop(pid);
	free(out);
	free(err);
}

/*
 * Without CAP_SYS_PTRACE the sidecar says what is missing, in one error
 * line and one hint, and exits with 4 (man page: EXIT STATUS).
 */
Test(sidecar, without_sys_ptrace, .timeout = 60)
{
	const struct interp *in = &boxed[1];
	const char *sargs[] = { test_target_for(in, "threads.py"), NULL };
	const char *caps[] = { NO_CAPS, NULL };
	const char *args[] = { "record", "--pid-of", in->bin, "-d", "2", "-o", "-", NULL };
	char *out, *err, *nl;
	pid_t app, pid = container_start(in, sargs, &app);
	int st = sidecar(app, caps, args, &out, &err);

	test_stop(pid);
	cr_assert_eq(st, 4, "exit %d: %s", st, err);
	nl = strchr(err, '\n');
	cr_assert(nl && !strncmp(err, "pyrospy: error: permission denied", 33), "%s", err);
	cr_assert(!strncmp(nl + 1, "hint: ", 6) && strstr(nl + 1, "CAP_SYS_PTRACE"), "%s", err);
	cr_assert(strchr(nl + 1, '\n') && strchr(nl + 1, '\n')[1] == '\0',
		  "more than an error and a hint: %s", err);
	cr_assert_str_empty(out);
	free(out);
	free(err);
}

/*
 * examples/container, as far as can be checked without a container engine
 * (tests/container-recipe-check): the pod parses as YAML, shares its PID
 * namespace and gives the sidecar SYS_PTRACE alone, pyrospy accepts the
 * sidecar's arguments, and the image holds the portable binary, built as
 * make portable builds it, and no other file.
 */
Test(image, recipe_and_manifest, .timeout = 60)
{
	const char *bin = getenv("PYROSPY");
	char cmd[4096], *out;
	int st;

	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 '%s/tests/container-recipe-check' '%s' '%s' "
		 "2>&1",
		 SRCDIR, SRCDIR, bin ? bin : BUILDDIR "/pyrospy");
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s", out);
	free(out);
}

/*
 * The sidecar as its image is (examples/container): pyrospy-portable alone
 * in a root of its own (another chroot of the matrix, sid: not the app's),
 * in the app's PID namespace, with CAP_SYS_PTRACE alone.  Needs make
 * portable (scripts/test builds it), like tests/test_portable.c.
 */
Test(sidecar, portable_in_a_root_of_its_own, .timeout = 60)
{
	const struct interp *in = &boxed[0];	/* python3.9, in bullseye */
	const char *sargs[] = { test_target_for(in, "threads.py"), NULL };
	const char *args[] = { "record", "--pid-of", in->bin, "--threads", "-d", "2", "-o", "-",
			       NULL };
	char portable[1024], side[1200], cmd[3000], ns[64], script[3000], *out, *err;
	const char *wrap[] = { "nsenter", ns, "--", "unshare", "--mount", "--propagation",
			       "private", "--", "sh", "-c", script, "sh", NULL };
	const char *env = getenv("PYROSPY_PORTABLE");
	pid_t app, pid;
	int st;

	snprintf(portable, sizeof(portable), "%s",
		 env && *env ? env : BUILDDIR "/pyrospy-portable");
	if (access(portable, X_OK))
		cr_skip_test("no %s: 'make portable' (as root) builds it", portable);
	snprintf(side, sizeof(side), "%s/sid", test_chroots());
	snprintf(cmd, sizeof(cmd), "install -m 0755 '%s' '%s/tmp/pyrospy-sidecar-%d'", portable,
		 side, (int)getpid());
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	/* sh drops its first argument, the host's pyrospy: the sidecar runs its own */
	snprintf(script, sizeof(script),
		 "mount -t proc proc '%s/proc' && shift && exec chroot '%s' setpriv %s %s %s -- "
		 "/tmp/pyrospy-sidecar-%d \"$@\"", side, side, "--inh-caps=-all,+sys_ptrace",
		 "--ambient-caps=-all,+sys_ptrace", "--bounding-set=-all,+sys_ptrace",
		 (int)getpid());
	pid = container_start(in, sargs, &app);
	snprintf(ns, sizeof(ns), "--pid=/proc/%d/ns/pid", (int)app);
	st = test_pyrospy_wrapped(wrap, args, &out, &err);
	snprintf(cmd, sizeof(cmd), "%s/tmp/pyrospy-sidecar-%d", side, (int)getpid());
	unlink(cmd);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert(strstr(err, "profiling process 1 "), "not the namespace's pid 1: %s", err);
	test_busy_threads_apart(out, in->bin, "");
	assert_tids_of(out, app, 1, in->bin);
	test_stop(pid);
	free(out);
	free(err);
}

/*
 * The application runs as another user than the sidecar (nobody; the
 * sidecar is root): CAP_SYS_PTRACE alone still lets it read the memory and
 * the files under /proc/PID/root.
 */
Test(sidecar, app_of_another_user, .timeout = 60)
{
	const struct interp *in = &boxed[1];	/* python3.13, in trixie */
	const char *sargs[] = { test_target_for(in, "threads.py"), NULL };
	const char *caps[] = { ONLY_PTRACE, NULL };
	const char *args[] = { "record", "--pid-of", in->bin, "--threads", "-d", "2", "-o", "-",
			       NULL };
	char path[96], line[256], *out, *err;
	pid_t app, pid = container_start_as(in, "65534:65534", sargs, &app);
	int st, nobody = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)app);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		nobody |= !strncmp(line, "Uid:\t65534\t", 11);
	fclose(f);
	cr_assert(nobody, "%s does not run as nobody", in->bin);
	st = sidecar(app, caps, args, &out, &err);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	test_busy_threads_apart(out, in->bin, "");
	assert_tids_of(out, app, 1, in->bin);
	test_stop(pid);
	free(out);
	free(err);
}
