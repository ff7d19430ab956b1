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
 * pyrospy-portable (make portable, as root) against every interpreter of
 * the matrix, run where that interpreter lives: on the host, or copied
 * into the chroot and run there, with the chroot's libc and nothing else.
 * $PYROSPY_PORTABLE names the binary (it must then exist); by default
 * BUILDDIR/pyrospy-portable, and the tests are skipped without it.
 */
static const char *portable_bin(void)
{
	static char path[1024];
	const char *env = getenv("PYROSPY_PORTABLE");

	if (env && *env) {
		cr_assert_eq(access(env, X_OK), 0, "PYROSPY_PORTABLE=%s: not executable", env);
		return env;
	}
	snprintf(path, sizeof(path), "%s/pyrospy-portable", BUILDDIR);
	if (access(path, X_OK))
		cr_skip_test("no %s: 'make portable' (as root) builds it", path);
	return path;
}

/* Where the copy in the chroot goes: one per test process, removed at the end. */
static char copy[1200];

static void remove_copy(void)
{
	if (*copy)
		unlink(copy);
}

/*
 * Make test_pyrospy_wrapped(wrap, ...) run the portable binary where in
 * lives.  In a chroot it runs in a mount namespace of its own, with /proc
 * mounted in the chroot (the chroots have none), and nothing of the host.
 */
static const char *const *use_portable(const struct interp *in)
{
	static const char *const wrap[] = {
		"unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
		"mount -t proc proc \"$PORTABLE_ROOT/proc\" && "
		"exec chroot \"$PORTABLE_ROOT\" \"$0\" \"$@\"",
		NULL };
	const char *bin = portable_bin();
	char root[1024], inside[128], cmd[4096];

	if (!in->root) {
		cr_assert_eq(setenv("PYROSPY", bin, 1), 0);
		return NULL;
	}
	snprintf(root, sizeof(root), "%s/%s", test_chroots(), in->root);
	snprintf(inside, sizeof(inside), "/tmp/pyrospy-portable.%d", (int)getpid());
	snprintf(copy, sizeof(copy), "%s%s", root, inside);
	snprintf(cmd, sizeof(cmd), "install -m 0755 '%s' '%s'", bin, copy);
	cr_assert_eq(system(cmd), 0, "cannot copy %s into %s", bin, root);
	cr_assert_eq(setenv("PORTABLE_ROOT", root, 1), 0);
	cr_assert_eq(setenv("PYROSPY", inside, 1), 0);
	return wrap;
}

/*
 * The binary needs nothing but glibc 2.31 (bullseye's) or older symbol
 * versions, and no library beyond glibc's own: it runs on any x86-64
 * distribution with glibc 2.31 or later.
 */
Test(portable, glibc_2_31_only)
{
	static const char *const glibc[] = {
		"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
		"ld-linux-x86-64.so.2" };
	const char *bin = portable_bin();
	char cmd[2048], *out, *line;
	int status, nversions = 0;

	snprintf(cmd, sizeof(cmd), "readelf --wide --dynamic '%s'", bin);
	out = test_run(cmd, &status);
	cr_assert_eq(status, 0, "%s", cmd);
	for (line = strstr(out, "(NEEDED)"); line; line = strstr(line + 1, "(NEEDED)")) {
		char lib[256] = "";
		int ok = 0;

		cr_assert_eq(sscanf(line, "(NEEDED) Shared library: [%255[^]]", lib), 1, "%.200s",
			     line);
		for (size_t i = 0; i < sizeof(glibc) / sizeof(glibc[0]); i++)
			ok |= !strcmp(lib, glibc[i]);
		cr_assert(ok, "%s needs %s, not part of glibc", bin, lib);
	}
	free(out);
	/* every symbol version the binary asks for (.gnu.version_r) */
	snprintf(cmd, sizeof(cmd), "readelf --wide --version-info '%s'", bin);
	out = test_run(cmd, &status);
	cr_assert_eq(status, 0, "%s", cmd);
	line = strstr(out, "Version needs section");
	cr_assert_not_null(line, "%s: no version needs:\n%s", bin, out);
	for (line = strstr(line, "Name: "); line; line = strstr(line + 1, "Name: ")) {
		unsigned int major = 0, minor = 0;
		char name[64] = "";

		cr_assert_eq(sscanf(line, "Name: %63s", name), 1);
		cr_assert(sscanf(name, "GLIBC_%u.%u", &major, &minor) == 2,
			  "%s asks for symbol version %s, not a GLIBC_x.y", bin, name);
		cr_assert(major < 2 || (major == 2 && minor <= 31),
			  "%s asks for %s: newer than bullseye's glibc 2.31", bin, name);
		nversions++;
	}
	cr_assert_gt(nversions, 0, "no symbol version found in:\n%s", out);
	free(out);
	/* and objdump -T, as users check it, agrees symbol by symbol */
	snprintf(cmd, sizeof(cmd), "objdump -T '%s'", bin);
	out = test_run(cmd, &status);
	cr_assert_eq(status, 0, "%s", cmd);
	nversions = 0;
	for (line = strstr(out, "GLIBC_"); line; line = strstr(line + 1, "GLIBC_")) {
		unsigned int major = 0, minor = 0;

		if (sscanf(line, "GLIBC_%u.%u", &major, &minor) != 2)
			cr_assert_fail("objdump -T %s: %.40s", bin, line);
		cr_assert(major < 2 || (major == 2 && minor <= 31), "objdump -T %s: %.40s", bin,
			  line);
		nversions++;
	}
	cr_assert_gt(nversions, 10, "objdump -T %s: %d versioned symbols", bin, nversions);
	free(out);
}

/*
 * record of the seed target (foo three times bar) with the interpreter's
 * name and version right, and the frames of the script's own file.
 */
static void record_seed(const struct interp *in, const char *script)
{
	const char *const *wrap = use_portable(in);
	const char *sargs[] = { test_target_for(in, script), NULL };
	const char *args[] = { "record", "--pid", NULL, "-d", "3", "-f", "folded", "-o", "-",
			       NULL };
	char ready[64], pidbuf[32], version[64], work[1100], *out, *err, *v;
	unsigned long foo, bar;
	pid_t pid;
	int st;

	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	args[2] = pidbuf;
	st = test_pyrospy_wrapped(wrap, args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	snprintf(version, sizeof(version), "(%s %u.%u", in->lang == TARGET_PYTHON ? "Python" :
		 "Ruby", in->major, in->minor);
	v = strstr(err, version);
	cr_assert(v && strchr(".)", v[strlen(version)]), "%s: not '%s' in: %s", in->bin, version,
		  err);
	foo = test_folded_count2(out, test_func(in, "foo ("), NULL);
	bar = test_folded_count2(out, test_func(in, "bar ("), NULL);
	/* in its file; under YJIT, running machine code, without a line (RUBY WITH YJIT) */
	snprintf(work, sizeof(work), "%s (%s", test_func(in, "work"), sargs[0]);
	cr_assert_gt(foo + bar, 150, "%s: %lu samples in 3 s at 100 Hz:\n%s%s", in->bin,
		     foo + bar, err, out);
	cr_assert_gt(foo, bar, "%s: foo %lu, bar %lu:\n%s", in->bin, foo, bar, out);
	cr_assert_gt(test_folded_count2(out, work, NULL), 100, "%s: no '%s':\n%s", in->bin, work,
		     out);
	free(out);
	free(err);
}

ParameterizedTestParameters(portable, record_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

ParameterizedTest(size_t *i, portable, record_python, .timeout = 60, .fini = remove_copy)
{
	record_seed(&test_pythons[*i], "seed.py");
}

ParameterizedTestParameters(portable, record_ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, portable, record_ruby, .timeout = 60, .fini = remove_copy)
{
	record_seed(&test_rubies[*i], "seed.rb");
}

/*
 * exec of a tagged app with nothing installed: the helpers come out of
 * the binary into a private directory of the chroot's /tmp, which is gone
 * when pyrospy ends, and every sample carries the app's tag.
 */
static void exec_tagged(const struct interp *in)
{
	static const char py[] =
		"import sys, pyrospy\n"
		"sys.stderr.write('helpers at ' + pyrospy.__file__ + '\\n')\n"
		"sys.stderr.flush()\n"
		"def spin():\n"
		"    while True:\n"
		"        pass\n"
		"with pyrospy.tag_wrapper({'where': 'portable'}):\n"
		"    spin()\n";
	static const char rb[] =
		"require 'pyrospy'\n"
		"$stderr.puts 'helpers at ' + $LOADED_FEATURES.grep(/pyrospy\\.rb\\z/).first\n"
		"$stderr.flush\n"
		"def spin; loop { }; end\n"
		"Pyrospy.tag_wrapper({ 'where' => 'portable' }) { spin }\n";
	const char *const *wrap = use_portable(in);
	int python = in->lang == TARGET_PYTHON;
	const char *args[] = { "exec", "-d", "2", "-f", "folded", "-o", "-", "--", in->bin,
			       python ? "-c" : "-e", python ? py : rb, NULL };
	char dir[1024], *out, *err, *at;
	unsigned long all, tagged;
	size_t len;
	int st;

	unsetenv("PYTHONPATH");
	unsetenv("RUBYLIB");
	unsetenv("TMPDIR");
	st = test_pyrospy_wrapped(wrap, args, &out, &err);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	at = strstr(err, "helpers at /tmp/pyrospy-helpers.");
	cr_assert_not_null(at, "%s: the helpers were not the built-in ones: %s", in->bin, err);
	at += strlen("helpers at ");
	len = strcspn(at, "\n");
	cr_assert(len > 0 && len < 512);
	/* the private directory: the file's path less /python/pyrospy.py */
	snprintf(dir, sizeof(dir), "%s/%s%.*s", in->root ? test_chroots() : "",
		 in->root ? in->root : "", (int)len, at);
	*strrchr(dir, '/') = '\0';
	*strrchr(dir, '/') = '\0';
	cr_assert_neq(access(dir, F_OK), 0, "%s: %s is still there", in->bin, dir);
	all = test_folded_count2(out, "spin (", NULL);
	tagged = test_folded_count2(out, "spin (", "{where=portable};");
	cr_assert_gt(all, 100, "%s: %lu samples of spin:\n%s%s", in->bin, all, err, out);
	cr_assert_geq(tagged * 100, all * 99, "%s: %lu of %lu tagged:\n%.3000s", in->bin, tagged,
		      all, out);
	free(out);
	free(err);
}

ParameterizedTestParameters(portable, exec_tagged_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

ParameterizedTest(size_t *i, portable, exec_tagged_python, .timeout = 60, .fini = remove_copy)
{
	exec_tagged(&test_pythons[*i]);
}

ParameterizedTestParameters(portable, exec_tagged_ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, portable, exec_tagged_ruby, .timeout = 60, .fini = remove_copy)
{
	exec_tagged(&test_rubies[*i]);
}

/*
 * libcurl is loaded only to upload: in a root without it (the chroots
 * have none) the binary profiles, and --server fails at once saying what
 * to install.
 */
Test(portable, upload_without_libcurl, .timeout = 60, .fini = remove_copy)
{
	const struct interp *in = &test_pythons[0];
	const char *const *wrap;
	const char *sargs[] = { test_target_for(in, "seed.py"), NULL };
	const char *args[] = { "record", "--pid", NULL, "-d", "1", "--server", "http://127.0.0.1:9",
			       "--app-name", "portable", NULL };
	char ready[64], pidbuf[32], lib[1200], *out, *err;
	pid_t pid;
	int st;

	cr_assert_not_null(in->root, "the first Python of the matrix is in a chroot");
	snprintf(lib, sizeof(lib), "%s/%s/usr/lib/x86_64-linux-gnu/libcurl.so.4", test_chroots(),
		 in->root);
	cr_assert_neq(access(lib, F_OK), 0, "%s has libcurl: the test proves nothing", in->root);
	wrap = use_portable(in);
	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	args[2] = pidbuf;
	st = test_pyrospy_wrapped(wrap, args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 1, "%s: exit %d: %s", in->root, st, err);
	cr_assert(strstr(err, "error: cannot load libcurl, which uploads need"), "%s", err);
	cr_assert(strstr(err, "\nhint: install it"), "%s", err);
	free(out);
	free(err);
}
