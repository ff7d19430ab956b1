/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "proc/target.h"

/*
 * Issue 37: the command lines py-spy's, rbspy's and CPython's profiler's
 * users type first do what they mean, or say what to type instead.
 */

#define PY "/usr/bin/python3.11"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* err is "pyrospy: error: ...needle...\nhint: ...hint...\n", nothing more */
static void assert_error(const char *err, const char *needle, const char *hint)
{
	const char *nl = strchr(err, '\n');

	cr_assert(!strncmp(err, "pyrospy: error: ", 16), "stderr is '%s'", err);
	cr_assert(nl && strstr(err, needle) && strstr(err, needle) < nl, "'%s' not in '%s'",
		  needle, err);
	cr_assert(!strncmp(nl + 1, "hint: ", 6), "no hint line in '%s'", err);
	cr_assert_not_null(strstr(nl + 1, hint), "'%s' not in the hint of '%s'", hint, err);
	cr_assert(!strchr(nl + 1, '\n')[1], "more than two lines: '%s'", err);
}

/* py-spy record -o x -- python app.py, rbspy record -- ruby app.rb */
Test(habits, record_dash_dash_runs_the_command, .timeout = 30)
{
	const char *args[] = { "record", "-d", "1", "-o", "-", "--", PY,
			       test_target_path("seed.py"), NULL };
	char *out, *err;

	cr_assert_eq(test_pyrospy(args, &out, &err), 0, "stderr: %s", err);
	cr_assert_gt(test_folded_count(out, "foo ("), 20, "profile: '%s'", out);
	free(out);
	free(err);
}

/* exec's own options with record and no command: the form they need */
Test(habits, record_exec_options_need_a_command)
{
	const char *args[] = { "record", "--user", "nobody", "-o", "-", "--pid", "1", NULL };
	const char *both[] = { "record", "--pid", "1", "-o", "-", "--", PY, "-c", "pass", NULL };
	char *out, *err;

	cr_assert_eq(test_pyrospy(args, &out, &err), 2, "stderr: %s", err);
	assert_error(err, "--user applies to a command run by pyrospy: record [options] -- COMMAND",
		     "pyrospy help record");
	free(out);
	free(err);
	cr_assert_eq(test_pyrospy(both, &out, &err), 2, "stderr: %s", err);
	assert_error(err, "give --pid (or --pid-of) or a command to run, not both",
		     "pyrospy help record");
	free(out);
	free(err);
}

/* py-spy dump --pid N, but CPython's profiler and many a user: dump N */
Test(habits, bare_pid, .timeout = 30)
{
	const char *sargs[] = { test_target_path("seed.py"), NULL };
	static const struct interp py = { NULL, PY, TARGET_PYTHON, 3, 11 };
	char ready[64], pidbuf[32], *out, *err;
	const char *dump[] = { "dump", pidbuf, NULL };
	const char *rec[] = { "record", "-d", "1", "-o", "-", pidbuf, NULL };
	const char *twice[] = { "dump", "--pid", pidbuf, pidbuf, NULL };
	const char *first[] = { "dump", pidbuf, "--locals", NULL };
	pid_t pid = test_start(&py, sargs, ready, sizeof(ready));

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	cr_assert_eq(test_pyrospy(dump, &out, &err), 0, "stderr: %s", err);
	cr_assert_not_null(strstr(out, "<module> ("), "dump: '%s'", out);
	free(out);
	free(err);
	cr_assert_eq(test_pyrospy(rec, &out, &err), 0, "stderr: %s", err);
	cr_assert_gt(test_folded_count(out, "foo ("), 20, "profile: '%s'", out);
	free(out);
	free(err);
	/* the pid first, then options (dump 1234 --locals) */
	cr_assert_eq(test_pyrospy(first, &out, &err), 0, "stderr: %s", err);
	cr_assert_not_null(strstr(out, "<module> ("), "dump: '%s'", out);
	free(out);
	free(err);
	cr_assert_eq(test_pyrospy(twice, &out, &err), 2, "stderr: %s", err);
	assert_error(err, "give the pid once", "pyrospy help dump");
	free(out);
	free(err);
	test_stop(pid);
}

static void suggests(const char *const *args, const char *word, const char *hint)
{
	char *out, *err, msg[128];

	snprintf(msg, sizeof(msg), "unknown command '%s'", word);
	cr_assert_eq(test_pyrospy(args, &out, &err), 2, "stderr: %s", err);
	assert_error(err, msg, hint);
	cr_assert_str_empty(out);
	free(out);
	free(err);
}

/* a typo, a prefix, a peer's word: the command meant; else the list, never an empty hint */
Test(habits, did_you_mean)
{
	const char *recrod[] = { "recrod", "--pid", "1", NULL };
	const char *rec[] = { "rec", NULL };
	const char *snapshot[] = { "snapshot", "--pid", "1", NULL };
	const char *tpo[] = { "tpo", NULL };
	const char *help_nosuch[] = { "help", "nosuch", NULL };
	const char *help_dupm[] = { "help", "dupm", NULL };
	const char *help_help[] = { "help", "help", NULL };
	char *out, *err;

	suggests(recrod, "recrod", "did you mean 'pyrospy record'?");
	suggests(rec, "rec", "did you mean 'pyrospy record'?");
	suggests(snapshot, "snapshot", "did you mean 'pyrospy dump'?");
	suggests(tpo, "tpo", "did you mean 'pyrospy top'?");
	suggests(help_dupm, "dupm", "did you mean 'pyrospy dump'?");
	suggests(help_nosuch, "nosuch", "commands are record, exec, dump");
	{
		const char *lcals[] = { "dump", "--lcals", "1", NULL };
		const char *bsae[] = { "diff", "--bsae", "a=b", "x.raw", NULL };
		const char *zz[] = { "record", "--zzzzzz", NULL };

		cr_assert_eq(test_pyrospy(lcals, &out, &err), 2, "stderr: %s", err);
		assert_error(err, "unknown option '--lcals'", "did you mean --locals?");
		free(out);
		free(err);
		cr_assert_eq(test_pyrospy(bsae, &out, &err), 2, "stderr: %s", err);
		assert_error(err, "unknown option '--bsae'", "did you mean --base?");
		free(out);
		free(err);
		cr_assert_eq(test_pyrospy(zz, &out, &err), 2, "stderr: %s", err);
		assert_error(err, "unknown option '--zzzzzz'", "see 'pyrospy help record'");
		cr_assert_null(strstr(err, "did you mean"), "%s", err);
		free(out);
		free(err);
	}
	cr_assert_eq(test_pyrospy(help_help, &out, &err), 0, "stderr: %s", err);
	cr_assert_not_null(strstr(out, "usage: pyrospy"), "help help: '%s'", out);
	free(out);
	free(err);
}

/* A process whose command line holds s, or 0. */
static int running_with(const char *s)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int found = 0;

	cr_assert_not_null(d);
	while (!found && (e = readdir(d))) {
		char path[300], buf[4096];
		size_t n;
		FILE *f;

		if (!atoi(e->d_name))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		for (size_t i = 0; i < n; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[n] = '\0';
		if (strstr(buf, s))
			found = atoi(e->d_name);
	}
	closedir(d);
	return found;
}

/*
 * exec of an interpreter pyrospy cannot read says so at once, by its
 * version, and stops the program it started instead of waiting for it
 * for ever (it was killed after 10 minutes): py 3.7 and 2.7 of pyenv.
 */
static void exec_unsupported(const char *bin, const char *said)
{
	char pidfile[] = "/tmp/pyrospy-habits-XXXXXX", code[256], *out, *err;
	const char *args[] = { "exec", "-d", "30", "-o", "/dev/null", "--", bin, "-c", code, NULL };
	double t0;
	int fd = mkstemp(pidfile), child;

	if (access(bin, X_OK))
		cr_skip_test("%s is not installed (pyenv)", bin);
	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(code, sizeof(code),
		 "import os, time\nopen('%s', 'w').write(str(os.getpid()))\n"
		 "while True: time.sleep(0.05)\n", pidfile);
	t0 = now();
	cr_assert_eq(test_pyrospy(args, &out, &err), 6, "%s: stderr: %s", bin, err);
	cr_assert_lt(now() - t0, 10.0, "%s: exec took %.1f s", bin, now() - t0);
	cr_assert_not_null(strstr(err, said), "%s: stderr: %s", bin, err);
	cr_assert_not_null(strstr(err, "stopping"), "%s: stderr: %s", bin, err);
	/* the program is gone, reaped by pyrospy: no process has its command line */
	child = running_with(pidfile);
	cr_assert_eq(child, 0, "%s: pid %d still runs", bin, child);
	unlink(pidfile);
	free(out);
	free(err);
}

Test(habits, exec_unsupported_python_3_7, .timeout = 60)
{
	exec_unsupported("/root/.pyenv/versions/3.7.16/bin/python3.7",
			 "error: Python 3.7 is not supported");
}

Test(habits, exec_unsupported_python_2_7, .timeout = 60)
{
	exec_unsupported("/root/.pyenv/versions/2.7.18/bin/python2.7",
			 "error: Python 2.7 is not supported");
}

/*
 * Each command's help lists its own options and no other command's, has
 * examples, and fits 80 columns; pyrospy --help is the commands.
 */
Test(habits, help_per_command)
{
	static const struct {
		const char *cmd, *has, *hasnt;
	} want[] = {
		{ "record", "--rate", "--locals" },
		{ "record", "--server", "--listen" },
		{ "exec", "--user", "--tasks" },
		{ "exec", "--subprocesses", "--pid-of" },
		{ "dump", "--tasks", "--rate" },
		{ "top", "--rate", "--output" },
		{ "serve", "--listen", "--user" },
		{ "agent", "--listen", "--pid" },
		{ "report", "--from", "--pid-of" },
		{ "diff", "--base", "--rate" },
	};
	const char *h[] = { "help", NULL, NULL };
	char *out, *err;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		h[1] = want[i].cmd;
		cr_assert_eq(test_pyrospy(h, &out, &err), 0, "help %s: %s", h[1], err);
		cr_assert_not_null(strstr(out, want[i].has), "help %s lacks %s:\n%s", h[1],
				   want[i].has, out);
		cr_assert_null(strstr(out, want[i].hasnt), "help %s lists %s:\n%s", h[1],
			       want[i].hasnt, out);
		cr_assert_not_null(strstr(out, "\nexamples:\n  "), "help %s: no examples", h[1]);
		for (const char *l = out; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
			cr_assert_leq(strcspn(l, "\n"), 79, "help %s: a line over 79 columns: %.*s",
				      h[1], (int)strcspn(l, "\n"), l);
		free(out);
		free(err);
	}
	h[1] = NULL;
	h[0] = "--help";
	cr_assert_eq(test_pyrospy(h, &out, &err), 0);
	cr_assert_not_null(strstr(out, "pyrospy help COMMAND"), "--help: %s", out);
	cr_assert_null(strstr(out, "--auth-token"), "--help lists every option: %s", out);
	free(out);
	free(err);
}

/*
 * The status line on a terminal (script(1) gives pyrospy one) says ticks
 * and samples as the man page defines them; under exec, whose command
 * writes to the same terminal, there is none to run into its output.
 */
Test(habits, status_line_words, .timeout = 30)
{
	char cmd[1024], *out;
	int st;

	snprintf(cmd, sizeof(cmd),
		 "script -qfec \"%s exec -d 2.5 -o /dev/null -f folded -- %s -c "
		 "'import time\nwhile True: time.sleep(0.4); print(\\\"app: tick\\\", flush=True)'\" "
		 "/dev/null", getenv("PYROSPY"), PY);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s", out);
	cr_assert_not_null(strstr(out, "app: tick"), "%s", out);
	cr_assert_null(strstr(out, "\033[K"), "a status line under exec: %s", out);
	free(out);
	snprintf(cmd, sizeof(cmd),
		 "%s -c 'while True: pass' & p=$!; script -qfec \"%s record -d 2.5 -o /dev/null "
		 "-f folded --pid $p\" /dev/null; kill $p", PY, getenv("PYROSPY"));
	out = test_run(cmd, &st);
	cr_assert_not_null(strstr(out, "\033[Kpyrospy: 1 s, "), "%s", out);
	cr_assert_not_null(strstr(out, " ticks ("), "%s", out);
	cr_assert_not_null(strstr(out, " samples, "), "%s", out);
	cr_assert_null(strstr(out, " stacks"), "%s", out);
	free(out);
}

/*
 * tmux send-keys KEY (none: NULL), then the screen once it shows want, or
 * after 10 s: top redraws once a second, later on a loaded machine.
 */
static char *top_key(const char *sock, const char *key, const char *want)
{
	char send[128] = "", cmd[1024];
	int st;

	if (key)
		snprintf(send, sizeof(send), "tmux -L %s send-keys -t top '%s' && ", sock, key);
	snprintf(cmd, sizeof(cmd),
		 "%sfor i in $(seq 40); do sleep 0.25; "
		 "tmux -L %s capture-pane -p -J -t top > /tmp/%s.screen; "
		 "grep -qF -- '%s' /tmp/%s.screen && break; done; cat /tmp/%s.screen; "
		 "rm -f /tmp/%s.screen", send, sock, sock, want, sock, sock, sock);
	return test_run(cmd, &st);
}

/*
 * top in a terminal (tmux) of cols x rows: no line is wider than the
 * screen, not the header and not a 5000-character function's row (-J
 * joins wrapped lines: a line over cols is one that wrapped); the long
 * function heads the table by self.
 */
static char *top_screen(const char *sock, pid_t pid, int cols, int rows)
{
	char cmd[1024], *screen, *row;
	int st;

	snprintf(cmd, sizeof(cmd), "tmux -L %s new-session -d -s top -x %d -y %d '%s top %d'", sock,
		 cols, rows, getenv("PYROSPY"), (int)pid);
	free(test_run(cmd, &st));
	cr_assert_eq(st, 0, "tmux new-session failed");
	/* two redraws: the long function has samples */
	screen = top_key(sock, NULL, " 2 s, ");
	for (const char *l = screen; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
		cr_assert_leq(strcspn(l, "\n"), (size_t)cols, "%dx%d: a line wrapped:\n%s", cols,
			      rows, screen);
	cr_assert_not_null(strstr(screen, "q quit"), "%s", screen);
	row = strstr(screen, "%self*");
	cr_assert_not_null(row, "no table sorted by self:\n%s", screen);
	row = strchr(row, '\n') + 1;
	cr_assert(!strncmp(strstr(row, "  f") ? strstr(row, "  f") + 2 : "", "fffff", 5),
		  "the long function is not first: %s", row);
	return screen;
}

/*
 * top at 80x24 and 200x50 fits; t sorts by total (the outermost frame
 * first), l shows lines, ? its keys, space pauses.  To a pipe: plain
 * tables, no terminal codes.
 */
Test(habits, top_fits_and_keys, .timeout = 60)
{
	static const struct interp py = { NULL, PY, TARGET_PYTHON, 3, 11 };
	const char *sargs[] = { test_target_path("longname.py"), NULL };
	char ready[64], cmd[1024], sock[64], *screen, *row, *out;
	pid_t pid = test_start(&py, sargs, ready, sizeof(ready));
	int st;

	/* a server of its own for each size: a new session may race a dying server */
	snprintf(sock, sizeof(sock), "pyrospy-habits-wide-%d", (int)getpid());
	free(top_screen(sock, pid, 200, 50));
	snprintf(cmd, sizeof(cmd), "tmux -L %s kill-server", sock);
	free(test_run(cmd, &st));
	snprintf(sock, sizeof(sock), "pyrospy-habits-%d", (int)getpid());
	screen = top_screen(sock, pid, 80, 24);
	cr_assert_null(strstr(screen, ".py:"), "lines by default:\n%s", screen);
	free(screen);
	screen = top_key(sock, "t", "%total*");
	row = strstr(screen, "%total*");
	cr_assert_not_null(row, "t did not sort by total:\n%s", screen);
	row = strchr(row, '\n') + 1;
	cr_assert_not_null(strstr(row, "<module>"), "<module> is not first by total: %s", row);
	free(screen);
	/* the loop's two lines (while, pass) are two rows of the long function */
	screen = top_key(sock, "l", "l functions");
	row = strstr(screen, "  fffff");
	cr_assert(row && strstr(row + 1, "  fffff") && strstr(screen, "l functions"),
		  "l shows no lines:\n%s", screen);
	free(screen);
	screen = top_key(sock, "?", "this help");
	cr_assert_not_null(strstr(screen, "this help"), "? shows no help:\n%s", screen);
	free(screen);
	free(top_key(sock, "?", "? help"));
	screen = top_key(sock, " ", "space go on");
	snprintf(cmd, sizeof(cmd), "tmux -L %s kill-server", sock);
	free(test_run(cmd, &st));
	cr_assert_not_null(strstr(screen, "space go on"), "space did not pause:\n%s", screen);
	free(screen);
	snprintf(cmd, sizeof(cmd), "%s top -d 2.5 %d | cat", getenv("PYROSPY"), (int)pid);
	out = test_run(cmd, &st);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s", out);
	cr_assert_null(strchr(out, '\033'), "terminal codes to a pipe: %s", out);
	cr_assert_not_null(strstr(out, "pyrospy top: pid "), "%s", out);
	free(out);
}

/*
 * Start script (its path for in) and run "COUNT PID | ...; pyrospy dump
 * JSON_OPTS PID > FILE; node validate-dump.js SCHEMA FILE": COUNT's number
 * (the text's), then the JSON's digest (caller frees); the target stopped,
 * its pid in *pidp.
 */
static char *dump_digest(const struct interp *in, const char *script, const char *count,
			 const char *json_opts, pid_t *pidp)
{
	const char *sargs[] = { script, NULL };
	char ready[64], pidbuf[32], cmd[2048], file[64], *out;
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int st;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(file, sizeof(file), "/tmp/pyrospy-dump-%d.json", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "%s dump %s %s && %s dump %s %s > %s && cd %s && node validate-dump.js "
		 "%s/docs/dump-json.schema.json %s", getenv("PYROSPY"), pidbuf, count,
		 getenv("PYROSPY"), json_opts, pidbuf, file, TEST_CONSUMERS, SRCDIR, file);
	out = test_run(cmd, &st);
	test_stop(pid);
	unlink(file);
	cr_assert_eq(st, 0, "%s: %s", in->bin, out);
	cr_assert_not_null(strstr(out, "\"valid\":true"), "%s: %s", in->bin, out);
	*pidp = pid;
	return out;
}

/*
 * dump --json --locals (py-spy's dump --json): valid against the schema
 * the man page points to (docs/dump-json.schema.json, by ajv), with the
 * threads the text dump counts, the frames and the locals.
 */
static void dump_json(const struct interp *in, const char *script, const char *fn,
		      const char *local)
{
	pid_t pid;
	char *out = dump_digest(in, test_target_path(script),
				"| sed -n 's/^Process .*: \\([0-9]*\\) threads*$/\\1/p'",
				"--json --locals", &pid);
	unsigned int text = 0, json = 0;
	char want[96];
	const char *p;

	p = strstr(out, "\"threads\":");
	cr_assert(sscanf(out, "%u", &text) == 1 && p && sscanf(p, "\"threads\":%u", &json) == 1,
		  "%s: %s", in->bin, out);
	cr_assert(text > 1 && text == json, "%s: %u threads in the text, %u in the JSON: %s",
		  in->bin, text, json, out);
	snprintf(want, sizeof(want), "\"pid\":%d,\"language\":\"%s\"", (int)pid,
		 in->lang == TARGET_RUBY ? "Ruby" : "Python");
	cr_assert_not_null(strstr(out, want), "%s: %s", in->bin, out);
	snprintf(want, sizeof(want), "\"%s\"", fn);
	cr_assert_not_null(strstr(out, want), "%s: no frame %s: %s", in->bin, fn, out);
	cr_assert_not_null(strstr(out, local), "%s: no local %s: %s", in->bin, local, out);
	free(out);
}

Test(habits, dump_json_python, .timeout = 30)
{
	static const struct interp py = { NULL, PY, TARGET_PYTHON, 3, 11 };

	dump_json(&py, "threads.py", "Thread._bootstrap", "\"self: Thread = <Thread object>\"");
}

Test(habits, dump_json_ruby, .timeout = 30)
{
	dump_json(&test_rubies[1], "threads.rb", "<main>", "\"i: Integer = ");
}

/*
 * One vocabulary: the closing line gives the ticks and the rate delivered
 * of the rate asked, the samples kept, and what was dropped and why.
 */
Test(habits, closing_line, .timeout = 30)
{
	const char *args[] = { "record", "-d", "1.5", "-r", "50", "-o", "-", "--", PY, "-c",
			       "while True: pass", NULL };
	char *out, *err, asked[16];
	const char *last;
	unsigned long ticks = 0, samples = 0;
	double secs = 0, hz = 0;

	cr_assert_eq(test_pyrospy(args, &out, &err), 0, "stderr: %s", err);
	last = strstr(err, "\npyrospy: 1.");
	cr_assert_not_null(last, "no closing line: %s", err);
	cr_assert_eq(sscanf(last, "\npyrospy: %lf s, %lu ticks (%lf Hz of %15s", &secs, &ticks, &hz,
			    asked), 4, "%s", err);
	cr_assert_str_eq(asked, "50", "%s", err);
	cr_assert(ticks > 40 && hz > 30 && hz < 70, "%s", err);
	last = strstr(last, "), ");
	cr_assert(last && sscanf(last, "), %lu samples", &samples) == 1, "%s", err);
	cr_assert_eq(samples, (unsigned long)test_folded_count(out, ""), "%s", err);
	free(out);
	free(err);
}

/*
 * dump --json --tasks: the asyncio tasks as a tree of objects, valid
 * against the schema, holding the tasks the text --tasks shows (the same
 * names, as many), on a Python of the old registry (3.11) and of the new
 * one (3.14).
 */
static void dump_json_tasks(const struct interp *in)
{
	pid_t pid;
	char *out = dump_digest(in, test_target_for(in, "asynctasks.py"),
				"--tasks | grep -c '^ *Task \"'", "--json --tasks", &pid);
	unsigned int text = 0, json = 0;
	const char *p;

	cr_assert_eq(sscanf(out, "%u", &text), 1, "%s: %s", in->bin, out);
	p = strstr(out, "\"tasks\":[");
	cr_assert_not_null(p, "%s: %s", in->bin, out);
	for (p += 9; *p && *p != ']'; p++)
		json += *p == '"' && p[-1] != '\\';
	json /= 2;
	cr_assert(text > 10 && text == json, "%s: %u task lines in the text, %u in the JSON: %s",
		  in->bin, text, json, out);
	cr_assert(strstr(out, "\"gatherer\"") && strstr(out, "\"gathered-0\""), "%s: %s", in->bin,
		  out);
	free(out);
}

Test(habits, dump_json_tasks_3_11, .timeout = 30)
{
	static const struct interp py = { NULL, PY, TARGET_PYTHON, 3, 11 };

	dump_json_tasks(&py);
}

Test(habits, dump_json_tasks_3_14, .timeout = 30)
{
	dump_json_tasks(&test_pythons[3]);
}

/*
 * make portable (so make wheel and gem) needs one root, not the test
 * matrix: provision-chroots --build-only stops after bullseye-build (here
 * found ready by its stamp, so that nothing is downloaded) and makes no
 * other root.
 */
Test(habits, provision_build_only, .timeout = 30)
{
	char dir[] = "/tmp/pyrospy-roots-XXXXXX", cmd[1024], *out;
	int st;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
		 "mkdir %s/bullseye-build && "
		 "sed -n 's/^\t\"bullseye-build|\\([^\"]*\\)\"$/\\1/p' %s/scripts/provision-chroots "
		 "> %s/bullseye-build/.pyrospy-ready && cat %s/bullseye-build/.pyrospy-ready && "
		 "timeout 10 %s/scripts/provision-chroots --build-only %s && ls %s", dir, SRCDIR, dir,
		 dir, SRCDIR, dir, dir);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s", out);
	cr_assert(!strncmp(out, "bullseye|gcc ", 13), "%s", out);
	cr_assert_not_null(strstr(out, "provision-chroots: bullseye-build: ready\n"), "%s", out);
	cr_assert_null(strstr(out, "building"), "%s", out);
	/* ls: the one root, nothing else */
	cr_assert(strstr(out, "ready\nbullseye-build\n") && !strstr(out, "trixie"), "%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	free(test_run(cmd, &st));
}
