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
 * The wheel and the gem (make wheel gem, from pyrospy-portable) installed
 * as users install them: pip install into a fresh venv, gem install
 * --local into a directory of its own, on the host and in the chroots.
 * Then the pyrospy they put in their bin directory profiles a tagged app
 * that imports the tag helpers from the package (not from the copy that
 * pyrospy exec writes out), and every sample carries the app's tags.
 * Skipped without pyrospy-portable (make portable, as root), as in
 * tests/test_portable.c; scripts/test builds it, then make wheel gem.
 */

/* The wheel and the gem in the build tree, built by make if need be. */
static void packages(char *whl, size_t wcap, char *gem, size_t gcap)
{
	char portable[1024], cmd[4096], *out;
	int st;

	snprintf(portable, sizeof(portable), "%s/pyrospy-portable", BUILDDIR);
	if (access(portable, X_OK))
		cr_skip_test("no %s: 'make portable' (as root) builds it", portable);
	/* criterion runs two tests at once: one make at a time, not make check's */
	snprintf(cmd, sizeof(cmd), "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL flock '%s' "
		 "make -s -C '%s' wheel gem 2>&1", portable, BUILDDIR);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: exit %d:\n%s", cmd, st, out);
	free(out);
	snprintf(whl, wcap, "%s/pyrospy-%s-py3-none-manylinux_2_31_x86_64.whl", BUILDDIR,
		 PACKAGE_VERSION);
	snprintf(gem, gcap, "%s/pyrospy-%s-x86_64-linux.gem", BUILDDIR, PACKAGE_VERSION);
	cr_assert_eq(access(whl, R_OK), 0, "make wheel wrote no %s", whl);
	cr_assert_eq(access(gem, R_OK), 0, "make gem wrote no %s", gem);
}

/* The test's directory (a venv, a gem home), removed at the end. */
static char work[1024];

static void remove_work(void)
{
	char cmd[1200];

	if (*work) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", work);
		if (system(cmd))
			cr_log_info("cannot remove %s", work);
	}
}

/*
 * The app ran under exec says where its module is (after "at "): it must
 * be under prefix; and spin's samples carry its two tags, one set with the
 * pyrospy names, one with the Pyroscope agent's.
 */
static void check_tagged(const char *who, const char *out, const char *err,
			 const char *prefix, const char *tag)
{
	const char *at = strstr(err, "helpers at ");
	unsigned long all, tagged, via;

	cr_assert_not_null(at, "%s: the app did not start: %s", who, err);
	at += strlen("helpers at ");
	cr_assert(!strncmp(at, prefix, strlen(prefix)),
		  "%s: the helpers came from elsewhere than the package at %s: %s", who, prefix,
		  err);
	all = test_folded_count2(out, "spin (", NULL);
	tagged = test_folded_count2(out, "spin (", tag);
	via = test_folded_count2(out, "spin (", "via=pyroscope");
	/*
	 * Enough samples that 1 % untagged is a sample (what is judged is the
	 * tags): not the 200 asked, which two spinning neighbours cut to 61
	 */
	cr_assert_geq(all, 40, "%s: %lu samples of spin in 2 s:\n%s%s", who, all, err, out);
	if (tagged * 100 < all * 99) {
		/* the stacks of spin, which the output's start (the app's loading) hides */
		char spin[3001];
		size_t n = 0;

		for (const char *l = out; *l && n < sizeof(spin) - 1; l += strcspn(l, "\n") + !!l[strcspn(l, "\n")]) {
			size_t len = strcspn(l, "\n");

			if (memmem(l, len, "spin (", 6))
				n += (size_t)snprintf(spin + n, sizeof(spin) - n, "%.*s\n", (int)len, l);
			if (n >= sizeof(spin))
				n = sizeof(spin) - 1;
		}
		spin[n] = 0;
		cr_assert_fail("%s: %lu of %lu with %s:\n%s\n%s", who, tagged, all, tag, spin, err);
	}
	cr_assert_geq(via * 100, all * 99, "%s: %lu of %lu with via=pyroscope:\n%.3000s", who,
		      via, all, out);
}

/*
 * Every Python of the matrix, and the oldest and newest of pyenv's: a
 * fresh venv of each (the chroots' Debian Pythons get venv and pip from
 * their pythonX.Y-venv packages, scripts/provision-chroots; the
 * free-threaded 3.13t from its own source tree's ensurepip), inside its
 * chroot, as the gems are below.
 */
static const struct interp wheel_pythons[] = {
	{ "bullseye", "python3.9", TARGET_PYTHON, 3, 9 },
	{ NULL, "/usr/bin/python3.11", TARGET_PYTHON, 3, 11 },
	{ "trixie", "python3.13", TARGET_PYTHON, 3, 13 },
	{ "sid", "python3.14", TARGET_PYTHON, 3, 14 },
	{ "sid", "python3.15", TARGET_PYTHON, 3, 15 },
	{ "trixie-ft", "/opt/pyft/python3.13/python", TARGET_PYTHON, 3, 13 },
	{ NULL, "/root/.pyenv/versions/3.8.18/bin/python3.8", TARGET_PYTHON, 3, 8 },
	{ NULL, "/root/.pyenv/versions/3.13.0/bin/python3.13", TARGET_PYTHON, 3, 13 },
};

/* pyrospy, mount /proc in the chroot $PKG_ROOT and run there (in a namespace of its own) */
static const char *const in_root[] = {
	"unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
	"mount -t proc proc \"$PKG_ROOT/proc\" && exec chroot \"$PKG_ROOT\" \"$0\" \"$@\"",
	NULL };

/* the same for a shell command line: PREFIX'COMMAND' ARGS... */
static const char proc_chroot[] = "unshare --mount --propagation private -- sh -c "
	"'mount -t proc proc \"$PKG_ROOT/proc\" && exec chroot \"$PKG_ROOT\" \"$0\" \"$@\"' ";

/* root: the chroot of in (the host: ""); work: a new directory under its /tmp. */
static const char *work_in(const struct interp *in, const char *what, char *root, size_t cap)
{
	snprintf(root, cap, "%s/%s", in->root ? test_chroots() : "", in->root ? in->root : "");
	if (!in->root)
		*root = 0;
	snprintf(work, sizeof(work), "%s/tmp/pyrospy-%s.XXXXXX", root, what);
	cr_assert_not_null(mkdtemp(work), "mkdtemp %s", work);
	cr_assert_eq(setenv("PKG_ROOT", *root ? root : "/", 1), 0);
	return work + strlen(root);
}

ParameterizedTestParameters(packages, pip_install)
{
	size_t n = sizeof(wheel_pythons) / sizeof(wheel_pythons[0]);

	return cr_make_param_array(size_t, (void *)test_indexes(n), n);
}

ParameterizedTest(size_t *i, packages, pip_install, .timeout = 120, .fini = remove_work)
{
	static const char app[] =
		"import sys, pyrospy, pyroscope\n"
		"sys.stderr.write('helpers at ' + pyrospy.__file__ + '\\n')\n"
		"sys.stderr.flush()\n"
		"pyroscope.configure(tags={'via': 'pyroscope'})\n"
		"def spin():\n"
		"    while True:\n"
		"        pass\n"
		"with pyrospy.tag_wrapper({'where': 'wheel'}):\n"
		"    spin()\n";
	const struct interp *in = &wheel_pythons[*i];
	char whl[1200], gem[1200], root[512], cmd[4096], bin[1100], py[1100], site[1100];
	char chroot[600], *out, *err;
	const char *args[] = { "exec", "-d", "2", "-f", "folded", "-o", "-", "--", py, "-c", app,
			       NULL };
	const char *inside;
	int st;

	packages(whl, sizeof(whl), gem, sizeof(gem));
	inside = work_in(in, "wheel", root, sizeof(root));
	snprintf(chroot, sizeof(chroot), "%s%s%s", *root ? "chroot '" : "", root, *root ? "' " : "");
	snprintf(cmd, sizeof(cmd), "install -m 0644 '%s' '%s/' && %s'%s' -m venv '%s/venv' 2>&1",
		 whl, work, chroot, in->bin, inside);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: exit %d:\n%s", cmd, st, out);
	free(out);
	/*
	 * The free-threaded 3.13t is Debian's source built by hand, which
	 * Debian does not ship: its site.py (patched for Debian's layout)
	 * looks for a venv's packages in lib/python3.13/, where sysconfig puts
	 * them in lib/python3.13t/ (ensurepip's pip is there, unseen).  Both
	 * names for the one directory, as a build of its own layout would have.
	 */
	if (in->root && !strcmp(in->root, "trixie-ft")) {
		snprintf(cmd, sizeof(cmd), "ln -s python3.13t '%s/venv/lib/python3.13'", work);
		cr_assert_eq(system(cmd), 0, "%s", cmd);
	}
	/* offline, and pip says nothing to warn about */
	snprintf(cmd, sizeof(cmd), "%senv PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 "
		 "'%s/venv/bin/pip' install --no-index '%s/%s' 2>&1", chroot, inside, inside,
		 strrchr(whl, '/') + 1);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: exit %d:\n%s", cmd, st, out);
	cr_assert(strstr(out, "Successfully installed pyrospy-" PACKAGE_VERSION "\n"), "%s", out);
	{
		/* 3.13t is built without ssl (scripts/build-python-ft): pip says so, and only that */
		static const char no_ssl[] = "WARNING: Disabling truststore since ssl support is missing\n";
		char *w = in->root && !strcmp(in->root, "trixie-ft") ? strstr(out, no_ssl) : NULL;

		if (w)
			memmove(w, w + strlen(no_ssl), strlen(w + strlen(no_ssl)) + 1);
	}
	cr_assert(!strcasestr(out, "warning") && !strcasestr(out, "error"), "%s:\n%s", cmd, out);
	free(out);
	/* the binary itself is in the venv's bin */
	snprintf(bin, sizeof(bin), "%s/venv/bin/pyrospy", inside);
	/* /proc mounted: it finds its package by /proc/self/exe */
	snprintf(cmd, sizeof(cmd), "%s'%s' --version 2>&1", *root ? proc_chroot : "", bin);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: exit %d:\n%s", cmd, st, out);
	cr_assert(!strncmp(out, "pyrospy " PACKAGE_VERSION "\n", strlen(PACKAGE_VERSION) + 9),
		  "%s", out);
	cr_assert(strstr(out, "\npython helpers: the wheel's (import pyrospy)\nruby helpers: built in"),
		  "%s", out);
	free(out);
	snprintf(py, sizeof(py), "%s/venv/bin/python", inside);
	snprintf(site, sizeof(site), "%s/venv/lib/python3.", inside);
	unsetenv("PYTHONPATH");
	unsetenv("RUBYLIB");
	cr_assert_eq(setenv("PYROSPY", bin, 1), 0);
	st = test_pyrospy_wrapped(*root ? in_root : NULL, args, &out, &err);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	check_tagged(in->bin, out, err, site, "where=wheel");
	free(out);
	free(err);
	if (*root)
		return;
	/* the wheel has no Ruby helpers: a Ruby program still gets exec's own */
	args[8] = "/usr/bin/ruby3.1";
	args[9] = "-e";
	args[10] = "require 'pyrospy'\n"
		   "$stderr.puts 'ruby helpers at ' + $LOADED_FEATURES.grep(/pyrospy\\.rb\\z/).first\n"
		   "$stderr.flush\n"
		   "loop { }\n";
	args[2] = "1";
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "ruby from the venv's pyrospy: exit %d: %s", st, err);
	cr_assert(strstr(err, "ruby helpers at /tmp/pyrospy-helpers."), "%s", err);
	free(out);
	free(err);
}

/*
 * gem install --local of the gem with each Ruby's own gem command, on the
 * host or inside the Ruby's chroot (with /proc mounted there, in a mount
 * namespace of its own, as tests/test_portable.c runs pyrospy-portable),
 * into a directory of its own; GEM_HOME and GEM_PATH name it for the app.
 * The YJIT root's Ruby runs with YJIT on, as in the other tests.
 */
static const struct interp gem_rubies[] = {
	{ "bullseye", "ruby2.7", TARGET_RUBY, 2, 7 },
	{ NULL, "/usr/bin/ruby3.1", TARGET_RUBY, 3, 1 },
	{ "trixie", "ruby3.3", TARGET_RUBY, 3, 3 },
	{ "sid", "ruby3.4", TARGET_RUBY, 3, 4 },
	/* the same Ruby built with YJIT, run with it on */
	{ "sid-yjit", "ruby3.4", TARGET_RUBY, 3, 4 },
};

ParameterizedTestParameters(packages, gem_install)
{
	size_t n = sizeof(gem_rubies) / sizeof(gem_rubies[0]);

	return cr_make_param_array(size_t, (void *)test_indexes(n), n);
}

ParameterizedTest(size_t *i, packages, gem_install, .timeout = 60, .fini = remove_work)
{
	static const char app[] =
		"require 'pyrospy'\n"
		"require 'pyroscope'\n"
		"$stderr.puts 'helpers at ' + $LOADED_FEATURES.grep(/pyrospy\\.rb\\z/).first\n"
		"$stderr.flush\n"
		"Pyroscope.configure { |c| c.tags = { 'via' => 'pyroscope' } }\n"
		"def spin; loop { }; end\n"
		"Pyrospy.tag_wrapper({ 'where' => 'gem' }) { spin }\n";
	const struct interp *in = &gem_rubies[*i];
	const char *args[] = { "exec", "-d", "2", "-f", "folded", "-o", "-", "--", in->bin, "-e",
			       app, NULL };
	char whl[1200], gem[1200], root[512], cmd[4096], home[1100], bin[1100], gemcmd[64];
	char *out, *err;
	const char *inside;
	int st;

	packages(whl, sizeof(whl), gem, sizeof(gem));
	inside = work_in(in, "gem", root, sizeof(root));
	/* gem2.7 for ruby2.7, /usr/bin/gem3.1 for /usr/bin/ruby3.1 */
	snprintf(gemcmd, sizeof(gemcmd), "%.*sgem%s", (int)(strstr(in->bin, "ruby") - in->bin),
		 in->bin, strstr(in->bin, "ruby") + 4);
	snprintf(cmd, sizeof(cmd), "install -m 0644 '%s' '%s/' && %s%s%s %s install --local "
		 "--no-document --install-dir '%s/gems' '%s/%s' 2>&1", gem, work,
		 in->root ? "chroot '" : "", in->root ? root : "", in->root ? "'" : "", gemcmd,
		 inside, inside, strrchr(gem, '/') + 1);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: exit %d:\n%s", cmd, st, out);
	cr_assert(strstr(out, "Successfully installed pyrospy-" PACKAGE_VERSION "-x86_64-linux\n"),
		  "%s:\n%s", cmd, out);
	cr_assert(!strcasestr(out, "warning") && !strcasestr(out, "error"), "%s:\n%s", cmd, out);
	free(out);
	snprintf(home, sizeof(home), "%s/gems", inside);
	snprintf(bin, sizeof(bin), "%s/gems/bin/pyrospy", inside);
	/* the gem's binary says whose helpers the program gets */
	snprintf(cmd, sizeof(cmd), "%senv GEM_HOME='%s' GEM_PATH='%s' '%s' --version 2>&1",
		 in->root ? proc_chroot : "", home, home, bin);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: exit %d:\n%s", cmd, st, out);
	cr_assert(strstr(out, "\npython helpers: built in (written to a private temporary "
			      "directory by exec)\nruby helpers: the gem's (require \"pyrospy\")\n"),
		  "%s", out);
	free(out);
	unsetenv("PYTHONPATH");
	unsetenv("RUBYLIB");
	unsetenv("RUBYOPT");
	cr_assert_eq(setenv("GEM_HOME", home, 1), 0);
	cr_assert_eq(setenv("GEM_PATH", home, 1), 0);
	cr_assert_eq(setenv("PYROSPY", bin, 1), 0);
	for (const char *const *e = test_env(in); e && *e; e++)
		cr_assert_eq(putenv((char *)*e), 0);
	st = test_pyrospy_wrapped(in->root ? in_root : NULL, args, &out, &err);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	/* the gem's lib: GEM_HOME/gems/pyrospy-VERSION-x86_64-linux/lib/pyrospy.rb */
	snprintf(home, sizeof(home), "%s/gems/gems/pyrospy-%s-x86_64-linux/lib/", inside,
		 PACKAGE_VERSION);
	check_tagged(in->bin, out, err, home, "where=gem");
	free(out);
	free(err);
}
