/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

/*
 * Issue 36, item 2: every path normalised, in every output; short paths
 * where a person reads them (svg, summary, top, dump), whole ones with
 * --full-paths and in the formats tools read.  Each target runs as
 * nobody, from its own files in a directory of nobody's, started as
 * DIR/sub/../app.EXT, with code of the standard library, of an installed
 * package or gem, and of the app itself.
 */

static char dir[256];		/* the app's directory, as the target sees it */
static char hostdir[512];	/* the same from here (inside its chroot) */
static pid_t target;		/* the running target, stopped by the suite's fini */

static void put(const char *name, const char *text)
{
	char path[640];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", hostdir, name);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/* A directory of nobody's under the chroot's /tmp (root NULL: the host's). */
static void make_dir(const char *root)
{
	char tmpl[512];

	if (root)
		snprintf(tmpl, sizeof(tmpl), "%s/%s/tmp/pyrospy-paths-XXXXXX", test_chroots(), root);
	else
		snprintf(tmpl, sizeof(tmpl), "/tmp/pyrospy-paths-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpl));
	snprintf(hostdir, sizeof(hostdir), "%s", tmpl);
	snprintf(dir, sizeof(dir), "%s", strstr(tmpl, "/tmp/pyrospy-paths-"));
	test_sh("mkdir -p '%s/sub'", hostdir);
}

static void own_dir(void)
{
	test_sh("chmod 755 '%s' && chown -R nobody:nogroup '%s'", hostdir, hostdir);
}

static void paths_teardown(void)
{
	char cmd[600];

	/* set*id cleared its parent-death signal: an assertion would leave it */
	if (target > 0)
		test_stop(target);
	if (!*hostdir)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", hostdir);
	if (system(cmd))
		cr_log_info("cannot remove %s", hostdir);
}

TestSuite(paths, .fini = paths_teardown, .timeout = 90);

/* Start `bin script args...' as nobody (in root's chroot, NULL the host). */
static pid_t start(const char *root, const char *bin, const char *const *args)
{
	const struct interp setpriv = { root, "setpriv", 0, 0, 0 };
	const char *argv[16] = { "--reuid=nobody", "--regid=nogroup", "--clear-groups", bin };
	char ready[64];
	size_t n = 4;

	for (size_t i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	target = test_start(&setpriv, argv, ready, sizeof(ready));
	return target;
}

/* pyrospy args... (printf-made words, NULL-ended): its stdout; fails unless it exits 0. */
static char *run(const char *first, ...)
{
	const char *args[24];
	char *words[24], *out, *err;
	size_t n = 0;
	va_list ap;
	int st;

	va_start(ap, first);
	for (const char *a = first; a && n < 23; a = va_arg(ap, const char *))
	{
		words[n] = strdup(a);
		args[n] = words[n];
		n++;
	}
	va_end(ap);
	args[n] = NULL;
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "pyrospy %s %s: exit %d: %s", args[0], args[1], st, err);
	for (size_t i = 0; i < n; i++)
		free(words[i]);
	free(err);
	return out;
}

static void has(const char *what, const char *text, const char *needle)
{
	cr_assert_not_null(strstr(text, needle), "%s lacks '%s':\n%.3000s", what, needle, text);
}

static void lacks(const char *what, const char *text, const char *needle)
{
	const char *p = strstr(text, needle);

	cr_assert_null(p, "%s has '%s': ...%.200s", what, needle, p ? p : "");
}

/* No "/../" or "/./" (nor a path that starts with "./"). */
static void normal(const char *what, const char *text)
{
	lacks(what, text, "/../");
	lacks(what, text, "/./");
	lacks(what, text, "(./");
}

/* The whole file (a gzipped one unzipped). */
static char *slurp(const char *path, int gz)
{
	char cmd[700];
	int st;
	char *s;

	if (!gz)
		return test_slurp(path);
	snprintf(cmd, sizeof(cmd), "gzip -dc '%s' | tr '\\000' ' '", path);
	s = test_run(cmd, &st);
	cr_assert_eq(st, 0);
	return s;
}

/*
 * One language's checks on the running target pid: short[i] are what
 * the labels show of the files full[i] (n of them, the app's first, then
 * the standard library's, then the package's or gem's; each sampled).
 */
static void check(pid_t pid, const char *const *shorts, const char *const *full, size_t n)
{
	char p[16], svg[640], raw[640], pb[640], ss[640], fold[640], html[640], need[600];
	char *text, *t2;

	snprintf(p, sizeof(p), "%d", (int)pid);
	snprintf(svg, sizeof(svg), "%s/out.svg", hostdir);
	snprintf(raw, sizeof(raw), "%s/rec.raw", hostdir);
	snprintf(pb, sizeof(pb), "%s/out.pb.gz", hostdir);
	snprintf(ss, sizeof(ss), "%s/out.json", hostdir);
	snprintf(fold, sizeof(fold), "%s/out.txt", hostdir);
	snprintf(html, sizeof(html), "%s/out.html", hostdir);

	/* dump and top first: record's samples need the target warm */
	text = run("dump", "--pid", p, NULL);
	normal("dump", text);
	snprintf(need, sizeof(need), " (%s", shorts[0]);
	has("dump", text, need);
	t2 = run("dump", "--full-paths", "--pid", p, NULL);
	normal("dump --full-paths", t2);
	snprintf(need, sizeof(need), " (%s", full[0]);
	has("dump --full-paths", t2, need);
	lacks("dump", text, need);
	free(text);
	free(t2);
	text = run("top", "--pid", p, "-d", "1.2", NULL);
	/* the table's rows are the most self time first: the helper's, not the main script's */
	normal("top", text);
	snprintf(need, sizeof(need), " (%s", shorts[1]);
	has("top", text, need);
	t2 = run("top", "--full-paths", "--pid", p, "-d", "1.2", NULL);
	normal("top --full-paths", t2);
	snprintf(need, sizeof(need), " (%s", full[1]);
	has("top --full-paths", t2, need);
	lacks("top", text, need);
	free(text);
	free(t2);

	/* record: a flame graph, and every sample for report */
	free(run("record", "--pid", p, "-d", "1.5", "-r", "200", "-q", "-o", svg, "--raw", raw,
		 NULL));
	text = slurp(svg, 0);
	normal("svg", text);
	for (size_t i = 0; i < n; i++) {
		/* the label is short, the title (the tooltip) whole */
		snprintf(need, sizeof(need), " (%s", shorts[i]);
		has("svg labels", text, need);
		snprintf(need, sizeof(need), " (%s", full[i]);
		has("svg titles", text, need);
	}
	free(text);
	text = run("report", raw, "-f", "summary", NULL);
	t2 = run("report", raw, "-f", "summary", "--full-paths", NULL);
	normal("summary", text);
	normal("summary --full-paths", t2);
	for (size_t i = 0; i < n; i++) {
		snprintf(need, sizeof(need), " (%s", shorts[i]);
		has("summary", text, need);
		snprintf(need, sizeof(need), " (%s", full[i]);
		lacks("summary", text, need);
		has("summary --full-paths", t2, need);
	}
	free(text);
	free(t2);
	/* the html report: the short forms for its table, the whole paths for hover */
	free(run("report", raw, "-f", "html", "-o", html, NULL));
	text = slurp(html, 0);
	normal("html", text);
	lacks("html", text, "\"short\":[]");
	for (size_t i = 0; i < n; i++) {
		snprintf(need, sizeof(need), "\"%s", shorts[i]);
		has("html short forms", text, need);
		has("html whole paths", text, full[i]);
	}
	free(text);
	free(run("report", raw, "-f", "html", "--full-paths", "-o", html, NULL));
	text = slurp(html, 0);
	has("html --full-paths", text, "\"short\":[]");
	free(text);
	free(run("report", raw, "--full-paths", "-f", "flamegraph", "-o", svg, NULL));
	text = slurp(svg, 0);
	lacks("svg --full-paths", text, "data-l=");
	free(text);
	/* a differential flame graph, of the recording against itself */
	free(run("diff", raw, raw, "-q", "-o", svg, NULL));
	text = slurp(svg, 0);
	normal("diff", text);
	snprintf(need, sizeof(need), " (%s", shorts[1]);
	has("diff labels", text, need);
	has("diff labels", text, "data-l=");
	free(text);
	free(run("diff", raw, raw, "-q", "--full-paths", "-o", svg, NULL));
	text = slurp(svg, 0);
	lacks("diff --full-paths", text, "data-l=");
	snprintf(need, sizeof(need), " (%s", full[1]);
	has("diff --full-paths", text, need);
	free(text);

	/* the formats tools read: whole paths, normalised */
	free(run("report", raw, "-f", "pprof", "-o", pb, NULL));
	free(run("report", raw, "-f", "speedscope", "-o", ss, NULL));
	free(run("report", raw, "-f", "folded", "-o", fold, NULL));
	for (int k = 0; k < 3; k++) {
		static const char *const what[] = { "pprof", "speedscope", "folded" };
		const char *file = k == 0 ? pb : k == 1 ? ss : fold;

		text = slurp(file, k == 0);
		normal(what[k], text);
		for (size_t i = 0; i < n; i++)
			has(what[k], text, full[i]);
		free(text);
	}
}

static const char py_app[] =
	"import json, sys, time\n"
	"try:\n"
	"    import yaml\n"
	"except ImportError:\n"
	"    yaml = None\n"
	"import helpers\n"
	"# json's own Python encoder (json/encoder.py), not its C accelerator\n"
	"json.encoder.c_make_encoder = None\n"
	"def main():\n"
	"    print('ready', flush=True)\n"
	"    data = {'a': [1, 2.5, 'x' * 20] * 40}\n"
	"    while True:\n"
	"        json.dumps(data)\n"
	"        if yaml:\n"
	"            yaml.safe_dump({'b': list(range(30))})\n"
	"        helpers.work()\n"
	"main()\n";

static const char py_helpers[] =
	"def work():\n"
	"    s = 0\n"
	"    for i in range(10000):\n"
	"        s += i * i\n"
	"    return s\n";

static void python_case(const char *root, const char *bin, const char *stdlib, int with_yaml)
{
	char script[300], app[300], helpers[300], std[300];
	const char *shorts[] = { "app.py", "helpers.py", "json/encoder.py", "yaml/" };
	const char *full[] = { app, helpers, std, "/usr/lib/python3/dist-packages/yaml/" };
	const char *args[] = { script, NULL };
	pid_t pid;

	make_dir(root);
	put("app.py", py_app);
	put("helpers.py", py_helpers);
	own_dir();
	snprintf(script, sizeof(script), "%s/sub/../app.py", dir);
	snprintf(app, sizeof(app), "%s/app.py", dir);
	snprintf(helpers, sizeof(helpers), "%s/helpers.py", dir);
	snprintf(std, sizeof(std), "%s/json/encoder.py", stdlib);
	pid = start(root, bin, args);
	check(pid, shorts, full, with_yaml ? 4 : 3);
	test_stop(pid);
	target = 0;
}

/* The host's Python: its standard library, python3-yaml from dist-packages, the app's files. */
Test(paths, python_host)
{
	python_case(NULL, "/usr/bin/python3.11", "/usr/lib/python3.11", 1);
}

/* Another prefix's standard library (Debian trixie's 3.13, in its chroot). */
Test(paths, python_chroot)
{
	python_case("trixie", "python3.13", "/usr/lib/python3.13", 0);
}

static const char rb_app[] =
	"require 'set'\n"
	"require 'mygem'\n"
	"require_relative 'helper'\n"
	"$stdout.puts 'ready'\n"
	"$stdout.flush\n"
	"loop do\n"
	"  s = Set.new\n"
	"  3000.times { |i| s.add(i) }\n"
	"  MyGem.spin\n"
	"  Helper.work\n"
	"end\n";

static const char rb_helper[] =
	"module Helper\n"
	"  def self.work\n"
	"    x = 0\n"
	"    30000.times { |i| x += i * i }\n"
	"    x\n"
	"  end\n"
	"end\n";

static const char rb_gem[] =
	"module MyGem\n"
	"  def self.spin\n"
	"    x = 0\n"
	"    30000.times { |i| x += i }\n"
	"    x\n"
	"  end\n"
	"end\n";

/* The host's Ruby: set.rb of its library, a gem's file in a gem's layout, the app's files. */
Test(paths, ruby_host)
{
	char script[300], app[300], helper[300], gem[300], inc[300];
	const char *shorts[] = { "app.rb", "helper.rb", "set.rb", "mygem-1.2.3/lib/mygem.rb" };
	const char *full[] = { app, helper, "/usr/lib/ruby/3.1.0/set.rb", gem };
	const char *args[] = { "-I", inc, script, NULL };
	pid_t pid;

	make_dir(NULL);
	test_sh("mkdir -p '%s/gems/gems/mygem-1.2.3/lib'", hostdir);
	put("app.rb", rb_app);
	put("helper.rb", rb_helper);
	put("gems/gems/mygem-1.2.3/lib/mygem.rb", rb_gem);
	own_dir();
	snprintf(script, sizeof(script), "%s/sub/../app.rb", dir);
	snprintf(inc, sizeof(inc), "%s/sub/../gems/gems/mygem-1.2.3/lib", dir);
	snprintf(app, sizeof(app), "%s/app.rb", dir);
	snprintf(helper, sizeof(helper), "%s/helper.rb", dir);
	snprintf(gem, sizeof(gem), "%s/gems/gems/mygem-1.2.3/lib/mygem.rb", dir);
	pid = start(NULL, "/usr/bin/ruby3.1", args);
	check(pid, shorts, full, 4);
	test_stop(pid);
	target = 0;
}

/*
 * Two files of the same short form (mymod/core.py under two
 * site-packages) keep their whole paths, in the same output as files
 * that are shortened.
 */
Test(paths, collision)
{
	char script[300], a[300], b[300], p[16], need[400];
	const char *args[] = { script, NULL };
	char *text;
	pid_t pid;

	make_dir(NULL);
	test_sh("mkdir -p '%s/a/site-packages/mymod' '%s/b/site-packages/mymod'", hostdir, hostdir);
	put("a/site-packages/mymod/core.py", "def spin():\n    return sum(i for i in range(20000))\n");
	put("b/site-packages/mymod/core.py", "def spin():\n    return sum(i for i in range(20000))\n");
	put("helpers.py", py_helpers);
	put("app.py",
	    "import os, helpers\n"
	    "here = os.path.dirname(os.path.abspath(__file__))\n"
	    "fns = []\n"
	    "for d in ('a', 'b'):\n"
	    "    p = os.path.join(here, d, 'site-packages', 'mymod', 'core.py')\n"
	    "    ns = {}\n"
	    "    exec(compile(open(p).read(), p, 'exec'), ns)\n"
	    "    fns.append(ns['spin'])\n"
	    "print('ready', flush=True)\n"
	    "while True:\n"
	    "    for f in fns:\n"
	    "        f()\n"
	    "    helpers.work()\n");
	own_dir();
	snprintf(script, sizeof(script), "%s/app.py", dir);
	snprintf(a, sizeof(a), "%s/a/site-packages/mymod/core.py", dir);
	snprintf(b, sizeof(b), "%s/b/site-packages/mymod/core.py", dir);
	pid = start(NULL, "/usr/bin/python3.11", args);
	snprintf(p, sizeof(p), "%d", (int)pid);
	text = run("record", "--pid", p, "-d", "1.5", "-r", "200", "-q", "-f", "summary", "-o", "-",
		   NULL);
	test_stop(pid);
	target = 0;
	has("summary", text, "work (helpers.py:");
	snprintf(need, sizeof(need), "spin (%s:", a);
	has("summary", text, need);
	snprintf(need, sizeof(need), "spin (%s:", b);
	has("summary", text, need);
	lacks("summary", text, "spin (mymod/core.py");
	free(text);
}

/*
 * A Ruby script started as ../app.rb: a path no lexical rule can make
 * whole, so the iseq's real path (absolute, Ruby's own) is shown.
 */
Test(paths, ruby_relative_up)
{
	char cmd[600], p[16], need[400];
	const char *args[] = { "-c", cmd, NULL };
	char *text;
	pid_t pid;

	make_dir(NULL);
	put("app.rb", "require_relative 'helper'\n$stdout.puts 'ready'\n$stdout.flush\n"
		      "loop { Helper.work }\n");
	put("helper.rb", rb_helper);
	own_dir();
	snprintf(cmd, sizeof(cmd), "cd '%s/sub' && exec /usr/bin/ruby3.1 ../app.rb", dir);
	pid = start(NULL, "/bin/sh", args);
	snprintf(p, sizeof(p), "%d", (int)pid);
	text = run("dump", "--pid", p, NULL);
	lacks("dump", text, "../app.rb");
	has("dump", text, "<main> (app.rb:");
	free(text);
	text = run("dump", "--full-paths", "--pid", p, NULL);
	test_stop(pid);
	target = 0;
	lacks("dump --full-paths", text, "../app.rb");
	snprintf(need, sizeof(need), "<main> (%s/app.rb:", dir);
	has("dump --full-paths", text, need);
	free(text);
}

/*
 * The main thread only waits for its worker (the README's example does):
 * no "<module>" or "<main>" frame is sampled, and the app's files are
 * still short, in a profile recorded live and in a folded one read back.
 * The first language is Python, the second Ruby.
 */
static void threads_only(const char *bin, const char *app, const char *text, const char *leaf)
{
	char script[300], p[16], need[400], fold[640];
	const char *args[] = { script, NULL };
	char *out;
	pid_t pid;

	make_dir(NULL);
	put(app, text);
	own_dir();
	snprintf(script, sizeof(script), "%s/%s", dir, app);
	snprintf(fold, sizeof(fold), "%s/out.txt", hostdir);
	pid = start(NULL, bin, args);
	snprintf(p, sizeof(p), "%d", (int)pid);
	out = run("record", "--pid", p, "-d", "1.5", "-r", "200", "-q", "-f", "summary", "-o", "-",
		  NULL);
	normal("summary", out);
	snprintf(need, sizeof(need), "%s (%s:", leaf, app);
	has("summary", out, need);
	snprintf(need, sizeof(need), "(%s/%s", dir, app);
	lacks("summary", out, need);
	lacks("summary", out, "  <main> (");
	lacks("summary", out, "  <module> (");
	free(out);
	free(run("record", "--pid", p, "-d", "1", "-q", "-o", fold, NULL));
	test_stop(pid);
	target = 0;
	out = run("report", fold, "-f", "summary", NULL);
	snprintf(need, sizeof(need), "%s (%s:", leaf, app);
	has("summary of folded", out, need);
	free(out);
}

Test(paths, python_threads_only)
{
	threads_only("/usr/bin/python3.11", "worker.py",
		     "import threading\n"
		     "def spin():\n"
		     "    while True:\n"
		     "        sum(i * i for i in range(5000))\n"
		     "t = threading.Thread(target=spin)\n"
		     "t.start()\n"
		     "print('ready', flush=True)\n"
		     "t.join()\n",
		     "<genexpr>");
}

Test(paths, ruby_threads_only)
{
	threads_only("/usr/bin/ruby3.1", "worker.rb",
		     "def spin\n"
		     "  loop { x = 0; 5000.times { |i| x += i * i } }\n"
		     "end\n"
		     "t = Thread.new { spin }\n"
		     "$stdout.puts 'ready'\n"
		     "$stdout.flush\n"
		     "t.join\n",
		     "block (2 levels) in Object#spin");
}

/*
 * What report reads is normalised too: a folded profile of nobody's with
 * "..", "." and doubled slashes, written out folded (whole paths) and as
 * a summary (short ones: the app's directory from its <module> frame).
 */
Test(paths, report_of_folded)
{
	char in[600], *text;

	make_dir(NULL);
	put("in.txt", "<module> (/srv/app/build/../main.py:3);work (/srv/app/./lib//x.py:7) 5\n"
		      "<module> (/srv/app/build/../main.py:3);dumps "
		      "(/usr/lib/python3.11/json/../json/__init__.py:231) 2\n"
		      "<main> (./bin/../app.rb:1);Set#add (/usr/lib/ruby/3.1.0/./set.rb:9) 1\n");
	own_dir();
	snprintf(in, sizeof(in), "%s/in.txt", hostdir);
	text = run("report", in, "-f", "folded", NULL);
	normal("folded", text);
	lacks("folded", text, "//");
	has("folded", text, "<module> (/srv/app/main.py:3);work (/srv/app/lib/x.py:7) 5");
	has("folded", text, "dumps (/usr/lib/python3.11/json/__init__.py:231) 2");
	has("folded", text, "<main> (app.rb:1);Set#add (/usr/lib/ruby/3.1.0/set.rb:9) 1");
	free(text);
	text = run("report", in, "-f", "summary", NULL);
	normal("summary", text);
	has("summary", text, "work (lib/x.py:7)");
	has("summary", text, "dumps (json/__init__.py:231)");
	has("summary", text, "Set#add (set.rb:9)");
	has("summary", text, "<main> (app.rb:1)");
	free(text);
}
