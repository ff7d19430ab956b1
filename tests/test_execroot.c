/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"

/*
 * pyrospy exec run as root (as the tests are): whom the command runs as.
 * Under sudo ($SUDO_UID, $SUDO_GID) it is the user who ran sudo, with
 * --user NAME that user, with --as-root root; the command is profiled all
 * the same.  The probe says what it is, then spins until it is stopped.
 */
static const char probe_py[] =
	"import os, time\n"
	"fds = []\n"
	"for f in sorted(os.listdir('/proc/self/fd'), key=int):\n"
	"    if int(f) > 2:\n"
	"        try:\n"
	"            fds.append(os.readlink('/proc/self/fd/' + f))\n"
	"        except OSError:\n"
	"            pass\n"
	"cap = [l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')][0]\n"
	"try:\n"
	"    os.setuid(0)\n"
	"    back = 'possible'\n"
	"except OSError:\n"
	"    back = 'refused'\n"
	"print('ids: uid=%d euid=%d gid=%d egid=%d groups=%s capeff=%s setuid0=%s home=%s "
	"user=%s logname=%s' % (os.getuid(), os.geteuid(), os.getgid(), os.getegid(),\n"
	"      sorted(os.getgroups()), cap, back, os.environ.get('HOME'),\n"
	"      os.environ.get('USER'), os.environ.get('LOGNAME')))\n"
	"print('fds: %s' % ' '.join(fds), flush=True)\n"
	"def spin():\n"
	"    end = time.monotonic() + 30\n"
	"    while time.monotonic() < end:\n"
	"        pass\n"
	"spin()\n";

/* What nobody (65534, group nogroup 65534 and no other) is, seen by the probe. */
static const char nobody_ids[] =
	"ids: uid=65534 euid=65534 gid=65534 egid=65534 groups=[65534] "
	"capeff=0000000000000000 setuid0=refused home=/nonexistent user=nobody logname=nobody\n";

/*
 * Run the probe under exec with env (the wrapper's VAR=VALUE words) and
 * opts; its stdout (the command's) into *out, the profile in file.
 */
static int run_probe(const char *const *env, const char *const *opts, const char *file,
		     char **out, char **err)
{
	const char *wrap[16] = { "env", "-u", "SUDO_UID", "-u", "SUDO_GID", "-u", "SUDO_USER",
				 "HOME=/root", "USER=root", "LOGNAME=root" };
	const char *args[32] = { "exec", "-d", "2", "-f", "folded", "-o", file };
	int w = 10, n = 7;

	for (; env && *env; env++)
		wrap[w++] = *env;
	wrap[w] = NULL;
	for (; opts && *opts; opts++)
		args[n++] = *opts;
	args[n++] = "--";
	args[n++] = "/usr/bin/python3.11";
	args[n++] = "-c";
	args[n++] = probe_py;
	args[n] = NULL;
	unlink(file);
	return test_pyrospy_wrapped(wrap, args, out, err);
}

/* The probe was sampled: its spin() took most of the 2 s. */
static void assert_profiled(const char *file, const char *err)
{
	char *folded = test_slurp(file);
	unsigned long n = test_folded_count(folded, "spin (");

	cr_assert_gt(n, 100, "%lu samples of spin() in 2 s at 100 Hz: %s\n%s", n, err, folded);
	free(folded);
}

/*
 * The command run as another user has no descriptor but 0, 1 and 2: none
 * of pyrospy's, none of root's that pyrospy inherited (the tests' own
 * pipes and files are open in pyrospy).
 */
static void assert_no_fd_of_root(const char *out)
{
	cr_assert_not_null(strstr(out, "\nfds: \n"), "%s", out);
}

static void paths(char *file, size_t cap)
{
	snprintf(file, cap, "/tmp/pyrospy-execroot-%d.txt", (int)getpid());
}

/*
 * sudo pyrospy exec -- python3 app.py: the app runs as the user who ran
 * sudo (nobody here), with that user's groups only, no capability, no way
 * back to root, and that user's HOME, USER and LOGNAME; it is profiled.
 */
Test(execroot, sudo_runs_the_command_as_the_invoker, .timeout = 30)
{
	const char *env[] = { "SUDO_UID=65534", "SUDO_GID=65534", "SUDO_USER=nobody", NULL };
	char file[64], *out, *err;
	int st;

	paths(file, sizeof(file));
	st = run_probe(env, NULL, file, &out, &err);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert_not_null(strstr(out, nobody_ids), "%s\n%s", out, err);
	cr_assert_not_null(strstr(err, "as uid 65534 ('nobody'), who ran sudo"), "%s", err);
	assert_no_fd_of_root(out);
	assert_profiled(file, err);
	free(out);
	free(err);
	unlink(file);
}

/* --user nobody, without sudo: the same. */
Test(execroot, user_option, .timeout = 30)
{
	const char *opts[] = { "--user", "nobody", NULL };
	char file[64], *out, *err;
	int st;

	paths(file, sizeof(file));
	st = run_probe(NULL, opts, file, &out, &err);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert_not_null(strstr(out, nobody_ids), "%s\n%s", out, err);
	assert_no_fd_of_root(out);
	assert_profiled(file, err);
	free(out);
	free(err);
	unlink(file);
}

/* --as-root under sudo keeps root, as asked; and a root shell (no sudo) stays root. */
Test(execroot, as_root_keeps_root, .timeout = 30)
{
	const char *env[] = { "SUDO_UID=65534", "SUDO_GID=65534", NULL };
	const char *opts[] = { "--as-root", NULL };
	char file[64], *out, *err;
	int st;

	paths(file, sizeof(file));
	st = run_probe(env, opts, file, &out, &err);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert_not_null(strstr(out, "ids: uid=0 euid=0 gid=0 egid=0 "), "%s\n%s", out, err);
	cr_assert_not_null(strstr(out, "setuid0=possible home=/root user=root"), "%s", out);
	assert_profiled(file, err);
	free(out);
	free(err);

	st = run_probe(NULL, NULL, file, &out, &err);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert_not_null(strstr(out, "ids: uid=0 euid=0 gid=0 egid=0 "), "%s\n%s", out, err);
	free(out);
	free(err);
	unlink(file);
}

/*
 * A user that does not exist, --user with --as-root, and --user when
 * pyrospy is not root: one error and its hint, a documented status, and
 * the command never runs.
 */
Test(execroot, refused_before_anything_runs, .timeout = 30)
{
	char marker[64], touch[96], *out, *err;
	const char *nosuch[] = { "exec", "--user", "nosuchuser-x7", "--", "/bin/sh", "-c", touch,
				 NULL };
	const char *both[] = { "exec", "--user", "nobody", "--as-root", "--", "/bin/sh", "-c",
			       touch, NULL };
	const char *as_root_user[] = { "exec", "--user", "root", "--", "/bin/sh", "-c", touch,
				       NULL };
	const char *nobody[] = { "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
				 NULL };
	struct {
		const char *const *wrap, *const *args;
		int status;
		const char *error, *hint;
	} cases[] = {
		{ NULL, nosuch, 2, "pyrospy: error: no user 'nosuchuser-x7'\n",
		  "hint: check the name with 'getent passwd nosuchuser-x7', or leave out --user\n" },
		{ NULL, both, 2, "pyrospy: error: give --user or --as-root, not both\n",
		  "hint: see 'pyrospy help exec'\n" },
		{ nobody, as_root_user, 4, "pyrospy: error: --user 'root': pyrospy runs as uid 65534, "
		  "and only root may run a command as another user\n",
		  "hint: run pyrospy as root (sudo), or leave out --user\n" },
	};

	snprintf(marker, sizeof(marker), "/tmp/pyrospy-execroot-ran-%d", (int)getpid());
	snprintf(touch, sizeof(touch), "touch %s", marker);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char want[512];
		int st;

		unlink(marker);
		st = test_pyrospy_wrapped(cases[i].wrap, cases[i].args, &out, &err);
		snprintf(want, sizeof(want), "%s%s", cases[i].error, cases[i].hint);
		cr_assert_eq(st, cases[i].status, "case %zu: exit %d: %s", i, st, err);
		cr_assert_str_eq(err, want, "case %zu", i);
		cr_assert_neq(access(marker, F_OK), 0, "case %zu: the command ran", i);
		free(out);
		free(err);
	}
}

/*
 * The tag helpers exec puts on the command's paths are read by the user
 * the command runs as: a tagged Python and a tagged Ruby program run as
 * nobody under sudo get their tags.
 */
Test(execroot, tags_of_the_invoker, .timeout = 60)
{
	const char *wrap[] = { "env", "-u", "PYTHONPATH", "-u", "RUBYLIB", "SUDO_UID=65534",
			       "SUDO_GID=65534", NULL };
	const char *py[] = {
		"exec", "-d", "2", "-f", "folded", "-o", "-", "--", "/usr/bin/python3.11", "-c",
		"import os, pyrospy\n"
		"assert os.getuid() == 65534\n"
		"def spin():\n"
		"    while True:\n"
		"        pass\n"
		"with pyrospy.tag_wrapper({'route': '/cart'}):\n"
		"    spin()\n",
		NULL };
	const char *rb[] = {
		"exec", "-d", "2", "-f", "folded", "-o", "-", "--", "/usr/bin/ruby3.1", "-e",
		"require 'pyrospy'\n"
		"raise 'root' unless Process.uid == 65534\n"
		"def spin; loop { }; end\n"
		"Pyrospy.tag_wrapper({ 'route' => '/cart' }) { spin }\n",
		NULL };
	const char *const *cmd[2] = { py, rb };

	for (int i = 0; i < 2; i++) {
		char *out, *err;
		unsigned long all, tagged;
		int st = test_pyrospy_wrapped(wrap, cmd[i], &out, &err);

		cr_assert_eq(st, 0, "exit %d: %s", st, err);
		all = test_folded_count(out, i ? "Object#spin" : "spin (");
		tagged = test_folded_count(out, "{route=/cart}");
		cr_assert_gt(all, 100, "%s:\n%s", err, out);
		cr_assert_geq(tagged * 100, all * 99, "%lu of %lu tagged:\n%s", tagged, all, out);
		free(out);
		free(err);
	}
}
