/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

/*
 * Issue 36, item 4 and issue 37's "work thrown away": the format of -o
 * FILE comes from its name in record, exec, report and diff (-f wins);
 * a name that says no format, and an output that cannot be written, are
 * refused before anything is sampled or run.  The target is the seed
 * workload of the host's Python, run as nobody; every file is checked by
 * what it really is (xmllint, JSON, gzip and a pprof decoder, magic).
 */
#define PYTHON "/usr/bin/python3.11"
#define LIMIT "20"	/* seconds before timeout(1) kills a pyrospy that hangs */

static char dir[64];		/* root's, where the profiles go */

static void formats_setup(void)
{
	cr_assert_eq(geteuid(), 0, "these tests run pyrospy as root and as nobody");
	strcpy(dir, "/tmp/pyrospy-formats-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
}

static void formats_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		cr_log_info("cannot remove %s", dir);
}

TestSuite(formats, .init = formats_setup, .fini = formats_teardown, .timeout = 120);

struct run {
	int status;
	double secs;
	char *out, *err;
};

/* pyrospy args (through wrap, if not NULL), timed. */
static struct run run_wrapped(const char *const *wrap, const char *const *args)
{
	static const char *const timeout[] = { "timeout", "-s", "KILL", LIMIT, NULL };
	struct timespec t0, t1;
	struct run r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	r.status = test_pyrospy_wrapped(wrap ? wrap : timeout, args, &r.out, &r.err);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r.secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	return r;
}

static struct run run(const char *const *args)
{
	return run_wrapped(NULL, args);
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* The seed workload (foo 3x bar) as nobody. */
static pid_t start_seed(void)
{
	static const struct interp setpriv = { NULL, "setpriv", 0, 0, 0 };
	const char *args[] = { "--reuid=nobody", "--regid=nogroup", "--clear-groups", PYTHON,
			       test_target_path("seed.py"), NULL };
	char ready[64];

	return test_start(&setpriv, args, ready, sizeof(ready));
}

/* dir/name; the last eight asked stay valid */
static const char *in_dir(const char *name)
{
	static char paths[8][192];
	static unsigned int next;
	char *p = paths[next++ % 8];

	snprintf(p, sizeof(paths[0]), "%s/%s", dir, name);
	return p;
}

static int exists(const char *path)
{
	struct stat st;

	return !lstat(path, &st);
}

/* Nothing in dir but the files named (NULL-terminated): no temporary file left. */
static void dir_holds_only(const char *const *names)
{
	char cmd[256], *ls;
	int st;
	size_t n = 0;

	snprintf(cmd, sizeof(cmd), "ls -A '%s'", dir);
	ls = test_run(cmd, &st);
	for (char *line = strtok(ls, "\n"); line; line = strtok(NULL, "\n"), n++) {
		int known = 0;

		for (const char *const *nm = names; *nm; nm++)
			known |= !strcmp(line, *nm);
		cr_assert(known, "'%s' left in %s", line, dir);
	}
	free(ls);
}

/* An SVG: XML that xmllint parses, whose root is <svg>. */
static void is_svg(const char *path)
{
	char *text = test_slurp(path);

	cr_assert(!strncmp(text, "<?xml", 5) && strstr(text, "<svg"), "%s is no SVG: %.80s", path,
		  text);
	free(text);
	test_sh("xmllint --noout '%s'", path);
}

/* Folded stacks: "frame;frame N" lines only, foo's among them. */
static void is_folded(const char *path)
{
	char *text = test_slurp(path), *save = NULL;
	unsigned long lines = 0;

	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');

		cr_assert(sp && sp > line && sp[1] && strspn(sp + 1, "0123456789") == strlen(sp + 1),
			  "%s: not a folded line: '%.120s'", path, line);
		lines++;
	}
	free(text);
	text = test_slurp(path);
	cr_assert(lines > 0 && test_folded_count(text, "foo (") > 0, "%s: no foo: %.200s", path,
		  text);
	free(text);
}

/* speedscope's JSON: parses, and says its schema. */
static void is_speedscope(const char *path)
{
	char *text = test_slurp(path);

	cr_assert(strstr(text, "\"$schema\":\"https://www.speedscope.app/file-format-schema.json\""),
		  "%s is no speedscope file: %.80s", path, text);
	free(text);
	test_sh("python3 -c 'import json,sys; json.load(open(sys.argv[1]))' '%s'", path);
}

/* A gzipped pprof profile that the Node.js decoder reads, of samples samples. */
static void is_pprof(const char *path, unsigned long samples)
{
	char cmd[512], want[64], *out;
	unsigned char magic[2] = { 0, 0 };
	FILE *f = fopen(path, "rb");
	int st;

	cr_assert_not_null(f, "%s", path);
	cr_assert_eq(fread(magic, 1, 2, f), 2);
	fclose(f);
	cr_assert(magic[0] == 0x1f && magic[1] == 0x8b, "%s is not gzipped", path);
	snprintf(cmd, sizeof(cmd), "node '%s/decode-pprof.js' '%s' 2>&1", TEST_CONSUMERS, path);
	out = test_run(cmd, &st);
	snprintf(want, sizeof(want), "\"samples\":%lu,", samples);
	cr_assert(st == 0 && strstr(out, want), "%s: %s (want %s)", path, out, want);
	free(out);
}

static void is_raw(const char *path)
{
	char *text = test_slurp(path);

	cr_assert(!memcmp(text, "PYSPYRAW", 8), "%s is no raw recording: %.8s", path, text);
	free(text);
}

/* A one-second raw recording of the seed workload, by -o NAME.raw; its samples. */
static unsigned long record_raw(const char *raw)
{
	char pidbuf[16];
	pid_t pid = start_seed();
	const char *args[] = { "record", "--pid", pidbuf, "-d", "1", "-o", raw, NULL };
	struct run r;
	unsigned long n;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	r = run(args);
	test_stop(pid);
	cr_assert_eq(r.status, 0, "record: exit %d: %s", r.status, r.err);
	n = test_samples_written(r.err);
	cr_assert(n > 20, "record: %lu samples: %s", n, r.err);
	run_free(&r);
	is_raw(raw);
	return n;
}

/* report writes every format its -o name says; -f wins over the name. */
Test(formats, report_by_name)
{
	static const struct {
		const char *name, *format;
	} cases[] = {
		{ "x.svg", "flamegraph" }, { "x.SVG", "flamegraph" }, { "x.txt", "folded" },
		{ "x.folded", "folded" }, { "x.json", "speedscope" },
		{ "x.speedscope.json", "speedscope" }, { "x.pb.gz", "pprof" },
		{ "x.pprof", "pprof" }, { "x.raw", "raw" },
	};
	char raw[192];
	unsigned long n;

	snprintf(raw, sizeof(raw), "%s", in_dir("rec.raw"));
	n = record_raw(raw);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *out = in_dir(cases[i].name);
		const char *args[] = { "report", raw, "-o", out, NULL };
		char said[64];
		struct run r = run(args);

		cr_assert_eq(r.status, 0, "%s: exit %d: %s", cases[i].name, r.status, r.err);
		snprintf(said, sizeof(said), "wrote %s profile", cases[i].format);
		cr_assert(strstr(r.err, said), "%s: %s", cases[i].name, r.err);
		run_free(&r);
		if (!strcmp(cases[i].format, "flamegraph"))
			is_svg(out);
		else if (!strcmp(cases[i].format, "folded"))
			is_folded(out);
		else if (!strcmp(cases[i].format, "speedscope"))
			is_speedscope(out);
		else if (!strcmp(cases[i].format, "pprof"))
			is_pprof(out, n);
		else
			is_raw(out);
	}
	{
		/* -f wins, even against the name */
		const char *out = in_dir("summary.txt");
		const char *args[] = { "report", raw, "-f", "summary", "-o", out, NULL };
		struct run r = run(args);
		char *text;

		cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
		run_free(&r);
		text = test_slurp(out);
		cr_assert(strstr(text, "%self  %total"), "not a summary: %.200s", text);
		free(text);
	}
	{
		/* standard output stays folded */
		const char *args[] = { "report", raw, "-o", "-", NULL };
		struct run r = run(args);

		cr_assert(r.status == 0 && test_folded_count(r.out, "foo (") > 0, "exit %d: %s",
			  r.status, r.err);
		run_free(&r);
	}
}

/* record -o NAME.txt writes folded stacks, exec -o NAME.json speedscope's. */
Test(formats, record_and_exec_by_name)
{
	char pidbuf[16];
	pid_t pid = start_seed();
	const char *txt = in_dir("rec.txt"), *json = in_dir("exec.json");
	const char *rec[] = { "record", "--pid", pidbuf, "-d", "1", "-o", txt, NULL };
	const char *ex[] = { "exec", "--user", "nobody", "-d", "1", "-o", json, "--", PYTHON,
			     test_target_path("seed.py"), NULL };
	struct run r;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	r = run(rec);
	test_stop(pid);
	cr_assert_eq(r.status, 0, "record: exit %d: %s", r.status, r.err);
	run_free(&r);
	is_folded(txt);
	r = run(ex);
	cr_assert_eq(r.status, 0, "exec: exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "wrote speedscope profile"), "%s", r.err);
	run_free(&r);
	is_speedscope(json);
}

/* One "pyrospy: error: " line, then one "hint: " line holding hint. */
static void one_error(const struct run *r, const char *error, const char *hint)
{
	const char *nl = strchr(r->err, '\n');

	cr_assert(!strncmp(r->err, "pyrospy: error: ", 16) && strstr(r->err, error) && nl &&
		  nl < strstr(r->err, "hint: ") && !strncmp(nl + 1, "hint: ", 6) &&
		  strstr(nl, hint) && !strchr(nl + 1, '\n')[1],
		  "not one error (%s) and one hint (%s): %s", error, hint, r->err);
}

/*
 * A name that says no format: usage error at once, before anything is
 * sampled (-d 5 is never waited for) or run (exec's command never starts).
 */
Test(formats, unknown_name_refused_before_sampling)
{
	char pidbuf[16];
	pid_t pid = start_seed();
	const char *dat = in_dir("out.dat"), *marker = in_dir("marker");
	char code[192];
	const char *rec[] = { "record", "--pid", pidbuf, "-d", "5", "-o", dat, NULL };
	const char *ex[] = { "exec", "-d", "5", "-o", dat, "--", PYTHON, "-c", code, NULL };
	const char *rep[] = { "report", in_dir("none.raw"), "-o", dat, NULL };
	const char *const only[] = { NULL };
	struct run r;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(code, sizeof(code), "open('%s', 'w')", marker);
	r = run(rec);
	test_stop(pid);
	cr_assert_eq(r.status, 2, "record: exit %d: %s", r.status, r.err);
	cr_assert(r.secs < 2, "record took %.1f s: it sampled", r.secs);
	one_error(&r, "cannot tell the format of '", ".svg .txt .folded .json .pb.gz .pprof .raw");
	cr_assert(strstr(r.err, "or give -f FORMAT") && !strstr(r.err, "profiling"), "%s", r.err);
	run_free(&r);
	r = run(ex);
	cr_assert_eq(r.status, 2, "exec: exit %d: %s", r.status, r.err);
	cr_assert(r.secs < 2, "exec took %.1f s", r.secs);
	one_error(&r, "cannot tell the format of '", "or give -f FORMAT");
	cr_assert(!exists(marker), "exec ran the command before refusing its output");
	run_free(&r);
	/* said before the recording is even looked for */
	r = run(rep);
	cr_assert_eq(r.status, 2, "report: exit %d: %s", r.status, r.err);
	one_error(&r, "cannot tell the format of '", "or give -f FORMAT");
	run_free(&r);
	dir_holds_only(only);
}

/*
 * An output that cannot be written (its directory missing, a directory,
 * a directory the user may not write) is said before sampling starts, and
 * before exec's command runs, not after the samples were taken.
 */
Test(formats, unwritable_refused_before_sampling)
{
	static const char *const nobody[] = { "timeout", "-s", "KILL", LIMIT, "setpriv",
					      "--reuid=nobody", "--regid=nogroup",
					      "--clear-groups", NULL };
	char pidbuf[16], code[192];
	pid_t pid = start_seed();
	const char *missing = in_dir("missing-dir/x.svg"), *ro = in_dir("ro"),
		   *ro_file = in_dir("ro/x.svg"), *mine = in_dir("mine"),
		   *marker = in_dir("mine/marker");
	const char *rec[] = { "record", "--pid", pidbuf, "-d", "5", "-o", NULL, NULL };
	const char *ex[] = { "exec", "-d", "5", "-o", NULL, "--", PYTHON, "-c", code, NULL };
	static const struct {
		const char *error, *hint;
	} said[] = {
		{ "No such file or directory", "check the directory exists and is writable" },
		{ "it is a directory", "name a file in it, e.g. --output " },
	};
	const char *outs[] = { missing, dir };
	struct run r;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(code, sizeof(code), "open('%s', 'w')", marker);
	cr_assert_eq(mkdir(ro, 0755), 0);
	cr_assert_eq(mkdir(mine, 0755), 0);
	test_sh("chown nobody:nogroup '%s'", mine);
	for (size_t i = 0; i < 2; i++) {
		rec[6] = outs[i];
		r = run(rec);
		cr_assert_eq(r.status, 1, "record -o %s: exit %d: %s", outs[i], r.status, r.err);
		cr_assert(r.secs < 2, "record -o %s took %.1f s: it sampled", outs[i], r.secs);
		one_error(&r, said[i].error, said[i].hint);
		cr_assert(!strstr(r.err, "profiling"), "%s", r.err);
		run_free(&r);
		ex[4] = outs[i];
		r = run(ex);
		cr_assert_eq(r.status, 1, "exec -o %s: exit %d: %s", outs[i], r.status, r.err);
		cr_assert(!exists(marker), "exec ran the command before refusing -o %s", outs[i]);
		one_error(&r, said[i].error, said[i].hint);
		run_free(&r);
	}
	test_stop(pid);
	/* pyrospy as nobody: root's directory is not nobody's to write */
	ex[4] = ro_file;
	r = run_wrapped(nobody, ex);
	cr_assert_eq(r.status, 1, "exec -o %s as nobody: exit %d: %s", ro_file, r.status, r.err);
	cr_assert(!exists(marker), "exec ran the command before refusing -o %s", ro_file);
	one_error(&r, "Permission denied", "check the directory exists and is writable");
	run_free(&r);
	/* the check is the real open: with write permission, the same command runs */
	ex[4] = in_dir("mine/x.svg");
	r = run_wrapped(nobody, ex);
	cr_assert_eq(r.status, 0, "exec -o mine/x.svg as nobody: exit %d: %s", r.status, r.err);
	cr_assert(exists(marker), "the command did not run");
	run_free(&r);
}

/* The y of a flame graph's first root frame (depth 1), and the most of any frame. */
static void frame_ys(const char *path, long *root, long *hi)
{
	char *s = test_slurp(path);
	const char *p = strstr(s, "<g id=\"frames\"");

	*root = *hi = -1;
	cr_assert(p, "%s: no frames", path);
	for (p = strstr(p, "<g data-s="); p; p = strstr(p + 1, "<g data-s=")) {
		const char *r = strstr(p, "<rect ");
		long y;

		cr_assert(r && sscanf(strstr(r, " y=\""), " y=\"%ld\"", &y) == 1);
		if (*root < 0 && !strncmp(strstr(p, "data-d="), "data-d=\"1\"", 10))
			*root = y;
		if (y > *hi)
			*hi = y;
	}
	free(s);
}

/*
 * diff: .svg a flame graph (root at the top, as record's; at the bottom
 * with --flame-direction up), .txt FlameGraph's difffolded stacks; .json
 * refused.
 */
Test(formats, diff_by_name)
{
	const char *raw = in_dir("rec.raw"), *svg = in_dir("d.svg"), *txt = in_dir("d.txt");
	const char *args[] = { "diff", raw, "--base-until", "0.5", "--new-from", "0.5", "-o", NULL,
			       NULL };
	unsigned long base = 0, next = 0, sb = 0, sn = 0, lines = 0;
	char *text, *save = NULL;
	const char *at;
	struct run r;

	record_raw(raw);
	args[7] = svg;
	r = run(args);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	run_free(&r);
	is_svg(svg);
	{
		const char *up[] = { "diff", raw, "--base-until", "0.5", "--new-from", "0.5",
				     "--flame-direction", "up", "-o", in_dir("up.svg"), NULL };
		long root, hi;

		frame_ys(svg, &root, &hi);
		cr_assert(root == 60 && hi > root, "diff: root at y %ld, frames to %ld", root, hi);
		r = run(up);
		cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
		run_free(&r);
		frame_ys(in_dir("up.svg"), &root, &hi);
		cr_assert(root == hi && root > 60, "diff up: root at y %ld, frames to %ld", root,
			  hi);
	}

	args[7] = txt;
	r = run(args);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	at = strstr(r.err, "(base ");
	cr_assert(at && sscanf(at, "(base %lu, new %lu samples)", &base, &next) == 2 && base &&
		  next, "%s", r.err);
	run_free(&r);
	/* "stack BASE NEW": both sides' self samples, adding up to each side's */
	text = test_slurp(txt);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *b, *n;

		n = strrchr(line, ' ');
		cr_assert(n && n > line, "'%s'", line);
		*n++ = '\0';
		b = strrchr(line, ' ');
		cr_assert(b && b > line, "not stack BASE NEW: '%s'", line);
		*b++ = '\0';
		cr_assert(strspn(b, "0123456789") == strlen(b) && *b &&
			  strspn(n, "0123456789") == strlen(n) && *n, "'%s %s %s'", line, b, n);
		cr_assert(strstr(line, "work ("), "'%s'", line);
		sb += strtoul(b, NULL, 10);
		sn += strtoul(n, NULL, 10);
		lines++;
	}
	free(text);
	cr_assert(lines >= 2 && sb == base && sn == next,
		  "%lu lines, %lu and %lu samples, want %lu and %lu", lines, sb, sn, base, next);

	args[7] = in_dir("d.json");
	r = run(args);
	cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
	one_error(&r, "diff writes no speedscope", ".svg, .txt, .folded, .summary.txt or .html");
	run_free(&r);
	cr_assert(!exists(in_dir("d.json")));
}

/*
 * No -o: the profile's name, pyrospy-PID-DATE.svg in the current
 * directory, is opened before exec runs its command too: a directory the
 * user may not write is said at once, the command never run; where it
 * may, the name has the command's pid (known only once it runs), and no
 * temporary file is left.
 */
Test(formats, default_name_opened_before_exec)
{
	static const char *const nobody[] = { "timeout", "-s", "KILL", LIMIT, "setpriv",
					      "--reuid=nobody", "--regid=nogroup",
					      "--clear-groups", NULL };
	char code[512], want[64], mine[192], marker[256], *ls;
	const char *ex[] = { "exec", "-d", "1", "--", PYTHON, "-c", code, NULL };
	struct run r;
	int st, pid = 0;

	snprintf(mine, sizeof(mine), "%s", in_dir("mine"));
	snprintf(marker, sizeof(marker), "%s/marker", mine);
	cr_assert_eq(mkdir(mine, 0755), 0);
	test_sh("chown nobody:nogroup '%s'", mine);
	/* busy until the duration stops it */
	snprintf(code, sizeof(code), "import os, time\nopen('%s', 'w')\nprint(os.getpid(), "
		 "flush=True)\nt = time.time()\nwhile time.time() < t + 10:\n    pass\n", marker);
	/* root's directory: not nobody's to write */
	cr_assert_eq(chdir(dir), 0);
	r = run_wrapped(nobody, ex);
	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	one_error(&r, "cannot create a profile in the current directory: Permission denied",
		  "name the file with --output");
	cr_assert(!exists(marker), "exec ran the command before refusing its output");
	run_free(&r);
	/* nobody's own */
	cr_assert_eq(chdir(mine), 0);
	r = run_wrapped(nobody, ex);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	cr_assert(exists(marker) && sscanf(r.out, "%d", &pid) == 1 && pid > 0, "out: %s", r.out);
	run_free(&r);
	unlink(marker);
	ls = test_run("ls -A", &st);
	snprintf(want, sizeof(want), "pyrospy-%d-", pid);
	cr_assert(!strncmp(ls, want, strlen(want)) && strstr(ls, ".svg\n") &&
		  !strchr(ls, '\n')[1], "want one %s*.svg, have: %s", want, ls);
	free(ls);
	cr_assert_eq(chdir("/"), 0);
}
