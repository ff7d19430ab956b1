/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/common.h"
#include "helpers.h"
#include "proc/target.h"

/*
 * Targets run as nobody and profiled by root name themselves, their
 * threads, functions and files to drive a terminal: ESC sequences (clear
 * the screen, set its title), C1 controls (U+009B, the one-character CSI,
 * as UTF-8 and as a raw byte) and bidi overrides and isolates.  Nothing
 * pyrospy prints -- dump, top, the profile formats, its error and status
 * messages -- carries one (each is one '?'), and names in other scripts
 * come out whole.
 */

static const struct interp nobody_python = { NULL, "setpriv", TARGET_PYTHON, 3, 11 };
static const struct interp nobody_ruby = { NULL, "setpriv", TARGET_RUBY, 3, 1 };

/* setpriv, and the target dies with the test (a change of user clears it) */
#define AS_NOBODY "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--pdeathsig=SIGKILL"

/* café_日本, a name that must survive */
#define CAFE "caf\xc3\xa9_\xe6\x97\xa5\xe6\x9c\xac"
/* EVIL of the targets, "\e[2J\e]2;PWN\a\u009b31m\u202eevil\u2066x\u2069", cleaned */
#define EVIL_CLEAN "?[2J?]2;PWN??31m?evil?x?"
/* the name the targets give themselves, "\e]2;PWN\a\xc2\x9b\xe2\x80\xae\x9b", cleaned */
#define COMM_CLEAN "?]2;PWN????"
/* the file name of a program that is no interpreter, and its name (15 bytes of it) */
#define EXE_NAME "\x1b[2J\x1b]2;PWN\x07\xc2\x9b\xe2\x80\xae\x9b-sh"
#define EXE_CLEAN "?[2J?]2;PWN???\?-sh"
#define EXE_COMM_CLEAN "?[2J?]2;PWN???"	/* BEL, C1, a cut character */

/*
 * Fail unless s (what says what) is valid UTF-8 with no control character
 * but newline and tab, no C1 control, no bidi embedding, override or
 * isolate.  Decoded here, not with pyrospy's own code.
 */
static void assert_clean(const char *what, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	for (size_t i = 0, k; i < n; i += k) {
		unsigned int c = p[i];
		const char *bad = NULL;

		k = 1;
		if (c >= 0x80) {
			k = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 0;
			c &= k == 4 ? 0x07 : k == 3 ? 0x0f : 0x1f;
			for (size_t j = 1; k && j < k; j++) {
				if (i + j >= n || (p[i + j] & 0xc0) != 0x80)
					k = 0;
				else
					c = c << 6 | (p[i + j] & 0x3f);
			}
			if (!k) {
				bad = "a byte of no UTF-8 character";
				k = 1;
			}
		}
		if (bad)
			;
		else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
			bad = "a C0 control";
		else if (c >= 0x80 && c <= 0x9f)
			bad = "a C1 control";
		else if ((c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069))
			bad = "a bidi control";
		if (bad) {
			/* shown escaped: the test's own output goes to a terminal too */
			char ctx[40 * 4 + 1];
			size_t o = 0;

			for (size_t j = i; j < n && j < i + 40; j++)
				o += (size_t)snprintf(ctx + o, sizeof(ctx) - o,
						      p[j] >= 0x20 && p[j] < 0x7f ? "%c" : "\\x%02x",
						      p[j]);
			cr_assert_fail("%s holds %s (U+%04X) at byte %zu: %s...", what, bad, c, i,
				       ctx);
		}
	}
}

/* Run pyrospy with args; its stdout and stderr must be clean. */
static int run_clean(const char *what, const char *const *args, char **out, char **err)
{
	char label[128];
	int st = test_pyrospy(args, out, err);

	snprintf(label, sizeof(label), "%s: stdout", what);
	assert_clean(label, *out);
	snprintf(label, sizeof(label), "%s: stderr", what);
	assert_clean(label, *err);
	return st;
}

/*
 * dump --json of process pidbuf: clean, and read by a real JSON parser
 * (Python's), whose frames hold the cleaned evil name and café_日本 whole.
 */
static void json_names(const char *pidbuf, const char *lang, const char *want)
{
	const char *args[] = { "dump", "--json", pidbuf, NULL };
	char path[] = "/tmp/pyrospy-json-XXXXXX", cmd[512], *out, *err, *names = NULL;
	int st, fd = -1;

	/* a sample may catch the loop between two calls: a few tries */
	for (int tries = 0; tries < 5; tries++) {
		st = run_clean("dump --json", args, &out, &err);
		cr_assert_eq(st, 0, "%s: exit %d: %s", lang, st, err);
		fd = mkstemp(path);
		cr_assert_geq(fd, 0);
		cr_assert_eq(write(fd, out, strlen(out)), (ssize_t)strlen(out));
		close(fd);
		snprintf(cmd, sizeof(cmd),
			 "PYTHONIOENCODING=utf-8 python3 -c 'import json, sys\n"
			 "d = json.load(open(sys.argv[1], encoding=\"utf-8\"))\n"
			 "for p in d[\"processes\"]:\n"
			 "  for t in p[\"threads\"]:\n"
			 "    print(t.get(\"name\", \"\"))\n"
			 "    for f in t[\"frames\"]: print(f[\"name\"], f.get(\"file\"), f.get(\"line\"))\n"
			 "' %s", path);
		free(names);
		names = test_run(cmd, &st);
		unlink(path);
		cr_assert_eq(st, 0, "%s: the JSON does not parse: %s\n%s", lang, names, out);
		free(out);
		free(err);
		if (strstr(names, want))
			break;
	}
	cr_assert(strstr(names, want), "%s: no '%s' in %s", lang, want, names);
	cr_assert(strstr(names, CAFE), "%s: " CAFE " lost: %s", lang, names);
	free(names);
}

static pid_t start(const struct interp *in, const char *bin, const char *script,
		   const char *arg, char *pidbuf, size_t cap)
{
	const char *args[] = { AS_NOBODY, bin, test_target_path(script), arg, NULL };
	char ready[64];
	pid_t pid;

	cr_assert_eq(geteuid(), 0, "run as root: the targets run as nobody");
	pid = test_start(in, args, ready, sizeof(ready));
	snprintf(pidbuf, cap, "%d", (int)pid);
	return pid;
}

/* Remove every copy of pyrospy's own "\e[H\e[2J" (top's redraw). */
static void drop_redraws(char *s)
{
	static const char redraw[] = "\033[H\033[2J";
	char *p;

	while ((p = strstr(s, redraw)))
		memmove(p, p + sizeof(redraw) - 1, strlen(p + sizeof(redraw) - 1) + 1);
}

Test(hostile_names, python, .timeout = 60)
{
	char pidbuf[32], head[128], *out, *err;
	pid_t pid = start(&nobody_python, "/usr/bin/python3.11", "hostile_names.py", NULL, pidbuf,
			  sizeof(pidbuf));
	const char *dump[] = { "dump", "--pid", pidbuf, NULL };
	const char *summary[] = { "record", "--pid", pidbuf, "-d", "2", "-f", "summary", "-o", "-",
				  NULL };
	const char *top[] = { "top", "--pid", pidbuf, "-d", "2", NULL };
	static const char *const formats[] = { "folded", "speedscope", "flamegraph" };
	int st;

	/* a sample may catch the loop between two calls: a few tries */
	for (int tries = 0;; tries++) {
		st = run_clean("dump", dump, &out, &err);
		cr_assert_eq(st, 0, "exit %d: %s", st, err);
		if (strstr(out, "func (") || tries == 4)
			break;
		free(out);
		free(err);
	}
	snprintf(head, sizeof(head), "Process %s (" COMM_CLEAN ", Python 3.11", pidbuf);
	cr_assert(strstr(out, head), "dump: no '%s' in\n%s", head, out);
	cr_assert(strstr(out, "    " EVIL_CLEAN "func (" EVIL_CLEAN "file.py:2)"), "dump:\n%s", out);
	cr_assert(strstr(out, "    " CAFE " ("), "dump: " CAFE " lost:\n%s", out);
	free(out);
	free(err);

	json_names(pidbuf, "Python", EVIL_CLEAN "func " EVIL_CLEAN "file.py 2");

	st = run_clean("record -f summary", summary, &out, &err);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	/* ';' is ':' in the text formats */
	cr_assert(strstr(out, "evil?x?func (?[2J?]2:PWN??31m?evil?x?file.py:2)"), "summary:\n%s",
		  out);
	cr_assert(strstr(out, CAFE " ("), "summary: " CAFE " lost:\n%s", out);
	free(out);
	free(err);

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		const char *args[] = { "record", "--pid", pidbuf, "-d", "1", "-f", formats[i], "-o",
				       "-", NULL };

		st = run_clean(formats[i], args, &out, &err);
		cr_assert_eq(st, 0, "%s: exit %d: %s", formats[i], st, err);
		cr_assert(strstr(out, "evil?x?func"), "%s:\n%s", formats[i], out);
		cr_assert(strstr(out, CAFE), "%s: " CAFE " lost", formats[i]);
		free(out);
		free(err);
	}

	st = test_pyrospy(top, &out, &err);
	drop_redraws(out);
	assert_clean("top: stdout", out);
	assert_clean("top: stderr", err);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert(strstr(out, "evil?x?func"), "top:\n%s", out);
	cr_assert(strstr(out, CAFE), "top: " CAFE " lost:\n%s", out);
	free(out);
	free(err);
	test_stop(pid);
}

/* Ruby: a thread's name too. */
Test(hostile_names, ruby, .timeout = 60)
{
	char pidbuf[32], head[128], *out, *err;
	pid_t pid = start(&nobody_ruby, "/usr/bin/ruby3.1", "hostile_names.rb", NULL, pidbuf,
			  sizeof(pidbuf));
	const char *dump[] = { "dump", "--pid", pidbuf, NULL };
	const char *summary[] = { "record", "--pid", pidbuf, "-d", "2", "-f", "summary", "-o", "-",
				  NULL };
	int st;

	for (int tries = 0;; tries++) {
		st = run_clean("dump", dump, &out, &err);
		cr_assert_eq(st, 0, "exit %d: %s", st, err);
		if (strstr(out, "meth (") || tries == 4)
			break;
		free(out);
		free(err);
	}
	snprintf(head, sizeof(head), "Process %s (" COMM_CLEAN ", Ruby 3.1", pidbuf);
	cr_assert(strstr(out, head), "dump: no '%s' in\n%s", head, out);
	cr_assert(strstr(out, " \"" EVIL_CLEAN "thread\" ("), "dump:\n%s", out);
	cr_assert(strstr(out, "Object#x?31m?evil?x?meth (" EVIL_CLEAN "file.rb:2)"), "dump:\n%s",
		  out);
	cr_assert(strstr(out, "Object#" CAFE " ("), "dump: " CAFE " lost:\n%s", out);
	free(out);
	free(err);

	json_names(pidbuf, "Ruby", "Object#x?31m?evil?x?meth " EVIL_CLEAN "file.rb 2");

	st = run_clean("record -f summary", summary, &out, &err);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert(strstr(out, "Object#x?31m?evil?x?meth ("), "summary:\n%s", out);
	cr_assert(strstr(out, "Object#" CAFE), "summary: " CAFE " lost:\n%s", out);
	free(out);
	free(err);
	test_stop(pid);
}

static char shell_dir[64];

/* A copy of dash in a new directory of /tmp, named EXE_NAME; path in path. */
static void hostile_shell(char *path, size_t cap)
{
	char cmd[2048];

	snprintf(shell_dir, sizeof(shell_dir), "/tmp/pyrospy-hostile-%d", (int)getpid());
	snprintf(path, cap, "%s/%s", shell_dir, EXE_NAME);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -m 755 '%s' && cp /usr/bin/dash '%s' && "
		 "chmod 755 '%s'", shell_dir, shell_dir, path, path);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* .fini: the directory goes, the test passed or not. */
static void remove_shell(void)
{
	char cmd[300];

	if (!*shell_dir)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", shell_dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", shell_dir);
}

/* A process that is no interpreter: its name and path in the error, cleaned. */
Test(hostile_names, not_an_interpreter, .timeout = 30, .fini = remove_shell)
{
	static const struct interp sh = { NULL, "setpriv", 0, 0, 0 };
	char path[256], pidbuf[32], ready[64], want[512], *out, *err;
	const char *args[] = { AS_NOBODY, path, "-c", "echo ready; while :; do sleep 1; done",
			       NULL };
	const char *record[] = { "record", "--pid", pidbuf, "-d", "1", NULL };
	const char *dump[] = { "dump", "--pid", pidbuf, NULL };
	pid_t pid;
	int st;

	cr_assert_eq(geteuid(), 0, "run as root: the targets run as nobody");
	hostile_shell(path, sizeof(path));
	pid = test_start(&sh, args, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(want, sizeof(want), "process %s ('" EXE_COMM_CLEAN "', %s/" EXE_CLEAN
		 ") is not a Ruby or Python process", pidbuf, shell_dir);
	st = run_clean("record", record, &out, &err);
	cr_assert_eq(st, EXIT_NOTINTERP, "exit %d: %s", st, err);
	cr_assert(strstr(err, want), "no '%s' in\n%s", want, err);
	free(out);
	free(err);
	st = run_clean("dump", dump, &out, &err);
	cr_assert_eq(st, EXIT_NOTINTERP, "exit %d: %s", st, err);
	cr_assert(strstr(err, want), "no '%s' in\n%s", want, err);
	free(out);
	free(err);
	test_stop(pid);
}

/* An interpreter that exec()s that program: the status message names it cleaned. */
Test(hostile_names, exec_away, .timeout = 30, .fini = remove_shell)
{
	char path[256], pidbuf[32], want[128], *out, *err;
	const char *record[] = { "record", "--pid", pidbuf, "-d", "10", "-f", "folded", "-o", "-",
				 NULL };
	pid_t pid;
	int st;

	hostile_shell(path, sizeof(path));
	pid = start(&nobody_python, "/usr/bin/python3.11", "hostile_exec.py", path, pidbuf,
		    sizeof(pidbuf));
	st = run_clean("record", record, &out, &err);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	snprintf(want, sizeof(want), "process %s exec()'d '" EXE_COMM_CLEAN "'", pidbuf);
	cr_assert(strstr(err, want), "no '%s' in\n%s", want, err);
	free(out);
	free(err);
	test_stop(pid);
}
