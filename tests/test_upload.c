/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "proc/target.h"

/*
 * Streaming to a Pyroscope server, end to end: pyrospy records a real
 * interpreter and uploads every 10 s to tests/receiver.py, which checks
 * each request the way the servers do and logs the accepted ones.  The
 * profile pyrospy also writes (-o, folded) is the reference.
 */
struct window {
	long from, until;
	unsigned long samples, foo, bar;
	int tagged;
};

struct upload {
	struct window w[64];
	int n;
	unsigned long total, foo, bar;
};

/* Sum a "stacks" object of the receiver's JSON line: {"a;b": n, ...}. */
static void count_stacks(const char *json, struct window *w)
{
	const char *p = strstr(json, "\"stacks\": {");

	cr_assert_not_null(p, "no stacks in %s", json);
	for (p += 11; *p && *p != '}';) {
		const char *key = strchr(p, '"'), *end, *colon;
		unsigned long n;

		if (!key)
			break;
		for (end = key + 1; *end && *end != '"'; end++)
			if (*end == '\\' && end[1])
				end++;
		colon = strchr(end, ':');
		n = strtoul(colon + 1, (char **)&p, 10);
		w->samples += n;
		/* "foo (" in Python, "Object#foo (" in Ruby */
		if (memmem(key, (size_t)(end - key), ";foo (", 6) ||
		    memmem(key, (size_t)(end - key), "#foo (", 6))
			w->foo += n;
		if (memmem(key, (size_t)(end - key), ";bar (", 6) ||
		    memmem(key, (size_t)(end - key), "#bar (", 6))
			w->bar += n;
	}
}

static void read_log(const char *log, struct upload *up)
{
	FILE *f = fopen(log, "r");
	char *line = NULL;
	size_t cap = 0;

	memset(up, 0, sizeof(*up));
	cr_assert_not_null(f, "the receiver logged nothing");
	while (getline(&line, &cap, f) > 0 && up->n < 64) {
		struct window *w = &up->w[up->n++];
		const char *p;

		p = strstr(line, "\"from\": ");
		cr_assert_not_null(p, "%s", line);
		w->from = strtol(p + 8, NULL, 10);
		p = strstr(line, "\"until\": ");
		cr_assert_not_null(p, "%s", line);
		w->until = strtol(p + 9, NULL, 10);
		/* the tag: in the name of /ingest, a label of the push series */
		w->tagged = strstr(line, "\"tags\": {\"env\": \"ci\"}") != NULL;
		count_stacks(line, w);
		up->total += w->samples;
		up->foo += w->foo;
		up->bar += w->bar;
	}
	free(line);
	fclose(f);
}

/* The windows: aligned, 10 s, in order, none twice, all tagged. */
static void check_windows(const struct upload *up)
{
	for (int i = 0; i < up->n; i++) {
		cr_assert_eq(up->w[i].from % 10, 0, "window %d from %ld", i, up->w[i].from);
		cr_assert_eq(up->w[i].until, up->w[i].from + 10);
		cr_assert(up->w[i].tagged, "window %d without env=ci", i);
		if (i)
			cr_assert_gt(up->w[i].from, up->w[i - 1].from,
				     "window %d (%ld) after %ld: out of order or twice", i,
				     up->w[i].from, up->w[i - 1].from);
	}
}

/*
 * Run pyrospy on the seed workload of in (NULL: the host's Python) for
 * secs, streaming to port over protocol ("ingest", "push", or "pprof"
 * for /ingest with --ingest-format pprof), folded copy in file.
 */
static int record_with(const struct interp *in, const char *port, const char *secs,
		       const char *file, const char *const *wrap, const char *protocol, char **err)
{
	const char *sargs[] = { NULL, NULL };
	char ready[64], pidbuf[32], url[64], *out;
	/* "pprof": /ingest with --ingest-format pprof */
	int pprof = !strcmp(protocol, "pprof");
	const char *args[] = { "record", "--pid", pidbuf, "-d", secs, "-f", "folded", "-o", file,
			       "--server", url, "--app-name", "seed", "--tag", "env=ci",
			       "--protocol", pprof ? "ingest" : protocol,
			       pprof ? "--ingest-format" : NULL, "pprof", NULL };
	pid_t pid;

	in = in ? in : &test_pythons[1];
	sargs[0] = test_target_for(in, in->lang == TARGET_RUBY ? "seed.rb" : "seed.py");
	pid = test_start(in, sargs, ready, sizeof(ready));
	int st;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(url, sizeof(url), "http://127.0.0.1:%s", port);
	st = wrap ? test_pyrospy_wrapped(wrap, args, &out, err) : test_pyrospy(args, &out, err);
	test_stop(pid);
	free(out);
	return st;
}

static int record(const char *port, const char *secs, const char *file, const char *const *wrap,
		  const char *protocol, char **err)
{
	return record_with(NULL, port, secs, file, wrap, protocol, err);
}

static void paths(char *log, char *file, size_t cap)
{
	snprintf(log, cap, "/tmp/pyrospy-upload-%d.log", (int)getpid());
	snprintf(file, cap, "/tmp/pyrospy-upload-%d.txt", (int)getpid());
	unlink(log);
	unlink(file);
}

/*
 * 30 s at 100 Hz: 3 windows (one more at an edge), each accepted, in
 * order, none twice, totals equal to the samples taken, the 75/25 split
 * intact, the tag in the name; rx_opt makes the receiver misbehave first.
 * (60 s and 6 windows until the CI run had to make room: three windows
 * show the order and the sequence as well.)
 */
static void thirty_seconds(const char *rx_opt, const char *protocol)
{
	char log[64], file[64], port[32], *err;
	struct upload up;
	pid_t rx;
	int st;

	paths(log, file, sizeof(log));
	rx = test_receiver(log, rx_opt, port, sizeof(port));
	st = record(port, "30", file, NULL, protocol, &err);
	test_stop(rx);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	read_log(log, &up);
	cr_assert(up.n >= 3 && up.n <= 4, "%d windows: %s", up.n, err);
	check_windows(&up);
	cr_assert_eq(up.total, test_folded_file_total(file), "uploaded %lu samples, took %lu", up.total,
		     test_folded_file_total(file));
	cr_assert_gt(up.total, 2700, "%lu samples in 30 s", up.total);
	cr_assert(up.foo * 100 >= (up.foo + up.bar) * 71 && up.foo * 100 <= (up.foo + up.bar) * 79,
		  "foo %lu bar %lu", up.foo, up.bar);
	free(err);
	unlink(log);
	unlink(file);
}

Test(upload, thirty_seconds_three_windows, .timeout = 90)
{
	thirty_seconds(NULL, "ingest");
}

Test(upload, push_thirty_seconds_three_windows, .timeout = 90)
{
	thirty_seconds(NULL, "push");
}

/* The server refuses connections for the first 15 s (a window and more): nothing is lost. */
Test(upload, refused_then_delivered_in_order, .timeout = 90)
{
	thirty_seconds("--refuse-first=15", "ingest");
}

Test(upload, push_refused_then_delivered_in_order, .timeout = 90)
{
	thirty_seconds("--refuse-first=15", "push");
}

/*
 * Recording ends mid-window (wrap ends it within 4 s of secs): the partial
 * window arrives before pyrospy exits, every sample of it (more than
 * least), and pyrospy says why it stopped (say, if not NULL).
 */
static void partial_window(const char *const *wrap, const char *secs, unsigned long least,
			   const char *say, const char *protocol)
{
	char log[64], file[64], port[32], *err;
	struct upload up;
	pid_t rx;
	int st;

	paths(log, file, sizeof(log));
	rx = test_receiver(log, NULL, port, sizeof(port));
	st = record(port, secs, file, wrap, protocol, &err);
	test_stop(rx);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	if (say)
		cr_assert_not_null(strstr(err, say), "%s", err);
	read_log(log, &up);
	cr_assert(up.n >= 1 && up.n <= 2, "%d windows: %s", up.n, err);
	check_windows(&up);
	cr_assert_eq(up.total, test_folded_file_total(file), "uploaded %lu samples, took %lu", up.total,
		     test_folded_file_total(file));
	cr_assert_gt(up.total, least);
	free(err);
	unlink(log);
	unlink(file);
}

/* SIGTERM mid-window. */
Test(upload, sigterm_sends_the_partial_window, .timeout = 60)
{
	const char *wrap[] = { "timeout", "--preserve-status", "-s", "TERM", "4", NULL };

	partial_window(wrap, "100", 300, NULL, "ingest");
}

Test(upload, push_sigterm_sends_the_partial_window, .timeout = 60)
{
	const char *wrap[] = { "timeout", "--preserve-status", "-s", "TERM", "4", NULL };

	partial_window(wrap, "100", 300, NULL, "push");
}

Test(upload, pprof_sigterm_sends_the_partial_window, .timeout = 60)
{
	const char *wrap[] = { "timeout", "--preserve-status", "-s", "TERM", "4", NULL };

	partial_window(wrap, "100", 300, NULL, "pprof");
}

/* The target killed mid-window. */
Test(upload, target_killed_partial_window_sent, .timeout = 60)
{
	/* "$@" is PYROSPY record --pid PID ...: $4 is the target */
	const char *wrap[] = { "sh", "-c", "(sleep 3; kill -9 $4) & exec \"$@\"", "sh", NULL };

	partial_window(wrap, "30", 200, "exited; writing what was sampled", "ingest");
}

Test(upload, push_target_killed_partial_window_sent, .timeout = 60)
{
	const char *wrap[] = { "sh", "-c", "(sleep 3; kill -9 $4) & exec \"$@\"", "sh", NULL };

	partial_window(wrap, "30", 200, "exited; writing what was sampled", "push");
}

/*
 * The push API from every Python and Ruby of the matrix: every sample
 * arrives, in series labelled with the runtime the server would show, the
 * 75/25 split intact.  Index i: the Pythons, then the Rubies.
 */
static const struct interp *push_interp(size_t i)
{
	return i < test_npythons ? &test_pythons[i] : &test_rubies[i - test_npythons];
}

ParameterizedTestParameters(upload, push_runtimes)
{
	size_t n = test_npythons + test_nrubies;

	return cr_make_param_array(size_t, (void *)test_indexes(n), n);
}

ParameterizedTest(size_t *i, upload, push_runtimes, .timeout = 60)
{
	const struct interp *in = push_interp(*i);
	const char *wrap[] = { "timeout", "--preserve-status", "-s", "TERM", "6", NULL };
	char log[64], file[64], port[32], want[96], *err, *all;
	struct upload up;
	pid_t rx;
	int st;

	paths(log, file, sizeof(log));
	rx = test_receiver(log, NULL, port, sizeof(port));
	st = record_with(in, port, "100", file, wrap, "push", &err);
	test_stop(rx);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	read_log(log, &up);
	cr_assert(up.n >= 1 && up.n <= 2, "%s: %d windows: %s", in->bin, up.n, err);
	check_windows(&up);
	cr_assert_eq(up.total, test_folded_file_total(file), "%s: uploaded %lu samples, took %lu", in->bin,
		     up.total, test_folded_file_total(file));
	cr_assert_gt(up.total, 300, "%s: %lu samples", in->bin, up.total);
	cr_assert(up.foo * 100 >= (up.foo + up.bar) * 65 && up.foo * 100 <= (up.foo + up.bar) * 85,
		  "%s: foo %lu bar %lu", in->bin, up.foo, up.bar);
	all = test_slurp(log);
	/* the version as pyrospy knows it: 3.9 on Python 3.9, 3.11.2 where it reads the patch level */
	snprintf(want, sizeof(want), "\"runtime\": [\"%s\", \"%u.%u",
		 in->lang == TARGET_RUBY ? "ruby" : "cpython", in->major, in->minor);
	const char *got = strstr(all, want);

	cr_assert(got && (got[strlen(want)] == '"' || got[strlen(want)] == '.'), "%s: no %s in %s",
		  in->bin, want, all);
	free(all);
	free(err);
	unlink(log);
	unlink(file);
}

/* A bad app name or tag key is refused at once, with exit status 2. */
Test(upload, bad_names_refused_at_startup)
{
	const char *bad[][4] = {
		{ "--app-name", "my app{x}", "--tag", "env=ci" },
		{ "--app-name", "shop", "--tag", "1bad=x" },
		{ "--app-name", "shop", "--tag", "service_name=x" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *args[] = { "record", "--pid", "1", "--server", "http://127.0.0.1:9",
				       bad[i][0], bad[i][1], bad[i][2], bad[i][3], NULL };
		char *out, *err;

		cr_assert_eq(test_pyrospy(args, &out, &err), 2, "%s %s: %s", bad[i][1], bad[i][3],
			     err);
		cr_assert_not_null(strstr(err, "hint: "), "%s", err);
		free(out);
		free(err);
	}
}

/*
 * libcurl is loaded only for uploads: with it unloadable (every copy the
 * dynamic loader could find covered by /dev/null, in a mount namespace of
 * its own), a profile is still written, and --server fails at once with
 * status 1, saying what is missing and how to install it.
 */
Test(upload, without_libcurl_only_uploads_fail, .timeout = 60)
{
	const struct interp *py = NULL;
	char ready[64], cmd[2048], file[64], *out, *ok, *failed;
	pid_t pid;
	int st;

	for (size_t i = 0; i < test_npythons && !py; i++)
		if (!test_pythons[i].root)
			py = &test_pythons[i];
	cr_assert_not_null(py, "no host Python in the test matrix");
	const char *args[] = { test_target_path("seed.py"), NULL };
	pid = test_start(py, args, ready, sizeof(ready));
	snprintf(file, sizeof(file), "/tmp/pyrospy-nocurl-%d.txt", (int)getpid());
	snprintf(cmd, sizeof(cmd),
		 "unshare -m sh -c 'for f in /lib/*/libcurl*.so.4 /usr/lib/*/libcurl*.so.4 "
		 "/usr/local/lib/libcurl*.so.4; do [ -e \"$f\" ] && mount --bind /dev/null \"$f\"; "
		 "done; %s record --pid %d -d 1 -f folded -o %s 2>&1; echo \"status $?\"; "
		 "%s record --pid %d -d 1 -o /dev/null --server http://127.0.0.1:9 "
		 "--app-name nocurl 2>&1; "
		 "echo \"status $?\"'",
		 getenv("PYROSPY"), (int)pid, file, getenv("PYROSPY"), (int)pid);
	out = test_run(cmd, &st);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s", out);
	ok = strstr(out, "wrote folded profile");
	failed = strstr(out, "error: cannot load libcurl, which uploads need: ");
	cr_assert(ok && failed && ok < failed, "%s", out);
	cr_assert_not_null(strstr(ok, "status 0\n"), "%s", out);
	cr_assert_not_null(strstr(failed, "\nhint: install it"), "%s", out);
	cr_assert_not_null(strstr(failed, "status 1\n"), "%s", out);
	free(out);
	unlink(file);
}

/* "sk-Qx7Qx7...", len bytes: a token no message holds by chance. */
static char *odd_token(size_t len)
{
	char *t = malloc(len + 1);

	cr_assert_not_null(t);
	memcpy(t, "sk-", 3);
	for (size_t i = 3; i < len; i++)
		t[i] = "Qx7"[(i - 3) % 3];
	t[len] = '\0';
	return t;
}

static void assert_no_token(const char *what, const char *s)
{
	cr_assert_null(strstr(s, "sk-"), "%s: %s", what, s);
	cr_assert_null(strstr(s, "Qx"), "%s: %s", what, s);
	cr_assert_null(strstr(s, "x7"), "%s: %s", what, s);
}

/*
 * A server that quotes the Authorization header it refuses, token and all
 * (300 bytes, past the 200 of a message pyrospy repeats): pyrospy says it
 * refused, and not one byte of the token.
 */
Test(upload, echoed_token_not_said, .timeout = 60)
{
	char log[64], file[64], port[32], url[64], pidbuf[32], ready[64], *out, *err;
	char *tok = odd_token(303);
	const char *sargs[] = { test_target_path("seed.py"), NULL };
	const char *args[] = { "record", "--pid", pidbuf, "-d", "2", "--server", url, "--app-name",
			       "seed", "--auth-token", tok, NULL };
	pid_t rx, pid;
	int st;

	paths(log, file, sizeof(log));
	rx = test_receiver(log, "--echo-auth", port, sizeof(port));
	pid = test_start(&test_pythons[1], sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(url, sizeof(url), "http://127.0.0.1:%s", port);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	test_stop(rx);
	cr_assert_eq(st, 1, "exit %d: %s", st, err);
	cr_assert(strstr(err, "HTTP 401: invalid credentials: 'Authorization: Bearer ***'"), "%s",
		  err);
	assert_no_token("stderr", err);
	assert_no_token("stdout", out);
	free(out);
	free(err);
	free(tok);
	unlink(log);
}

/*
 * A malformed --header, or line of $PYROSPY_HEADERS, may be a key where
 * its value should be: the error says which one it is, not what it holds.
 */
Test(upload, malformed_header_not_echoed)
{
	char *tok = odd_token(40), *bad = malloc(80), *out, *err;
	const char *args[] = { "record", "--pid", "1", "--server", "http://127.0.0.1:9",
			       "--app-name", "shop", "--header", "X-Fine: 1", "--header", bad, NULL };
	const char *env_args[] = { "record", "--pid", "1", "--server", "http://127.0.0.1:9",
				   "--app-name", "shop", NULL };
	int st;

	snprintf(bad, 80, "Authorization Bearer %s", tok);
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 2, "exit %d: %s", st, err);
	cr_assert(strstr(err, "error: invalid header (--header number 2): expected 'NAME: VALUE'"),
		  "%s", err);
	cr_assert(strstr(err, "\nhint: "), "%s", err);
	assert_no_token("stderr", err);
	cr_assert_null(strstr(err, "Bearer"), "%s", err);
	free(out);
	free(err);

	cr_assert_eq(setenv("PYROSPY_HEADERS", bad, 1), 0);
	st = test_pyrospy(env_args, &out, &err);
	unsetenv("PYROSPY_HEADERS");
	cr_assert_eq(st, 2, "exit %d: %s", st, err);
	cr_assert(strstr(err, "error: invalid header (header 1 of $PYROSPY_HEADERS)"), "%s", err);
	assert_no_token("stderr", err);
	cr_assert_null(strstr(err, "Bearer"), "%s", err);
	free(out);
	free(err);
	free(bad);
	free(tok);
}

/*
 * exec: what the command sees of pyrospy's secret variables (their names,
 * and how many variables hold "Qx7"), then 30 s of work.
 */
static const char exec_probe[] =
	"import os, time\n"
	"names = ('PYROSPY_AUTH_TOKEN', 'PYROSPY_BASIC_AUTH', 'PYROSPY_HEADERS', "
	"'PYROSPY_TENANT_ID')\n"
	"print('seen: [%s] leaked: %d' % (','.join(k for k in names if k in os.environ),\n"
	"      sum('Qx7' in v for v in os.environ.values())), flush=True)\n"
	"end = time.monotonic() + 30\n"
	"while time.monotonic() < end:\n"
	"    pass\n";

/*
 * pyrospy exec with the three secret variables set: the profiled command
 * sees none of them (the tenant ID, no secret, it sees), and the uploads
 * still carry the token and the header.
 */
Test(upload, exec_child_gets_no_secret, .timeout = 60)
{
	static const struct interp rx_py = { NULL, "/usr/bin/python3.11", 0, 3, 11 };
	char log[64], file[64], port[32], url[64], cmd[128], hdr[64], *out, *err;
	char *tok = odd_token(32);
	/* only requests with the token are accepted */
	const char *rx_args[] = { SRCDIR "/tests/receiver.py", "--port", "0", "--log", log,
				  "--require-token", tok, NULL };
	const char *stream[] = { "exec", "-d", "2", "--server", url, "--app-name", "seed", "--",
				 "/usr/bin/python3.11", "-c", exec_probe, NULL };
	const char *plain[] = { "exec", "-d", "1", "-f", "folded", "-o", file, "--",
				"/usr/bin/python3.11", "-c", exec_probe, NULL };
	struct upload up;
	pid_t rx;
	int st;

	paths(log, file, sizeof(log));
	snprintf(hdr, sizeof(hdr), "X-Api-Key: k3y-%s", tok);
	cr_assert_eq(setenv("PYROSPY_AUTH_TOKEN", tok, 1), 0);
	cr_assert_eq(setenv("PYROSPY_HEADERS", hdr, 1), 0);
	cr_assert_eq(setenv("PYROSPY_TENANT_ID", "team-a", 1), 0);
	/* a token and basic auth both set would be refused: this one without --server */
	cr_assert_eq(setenv("PYROSPY_BASIC_AUTH", "user:pw-Qx7Qx7", 1), 0);
	st = test_pyrospy(plain, &out, &err);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert(strstr(out, "seen: [PYROSPY_TENANT_ID] leaked: 0\n"), "%s", out);
	free(out);
	free(err);
	unsetenv("PYROSPY_BASIC_AUTH");

	rx = test_start(&rx_py, rx_args, port, sizeof(port));
	snprintf(url, sizeof(url), "http://127.0.0.1:%s", port);
	st = test_pyrospy(stream, &out, &err);
	test_stop(rx);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert(strstr(out, "seen: [PYROSPY_TENANT_ID] leaked: 0\n"), "%s", out);
	read_log(log, &up);
	cr_assert_geq(up.n, 1, "nothing uploaded: %s", err);
	cr_assert_gt(up.total, 50, "%lu samples uploaded: %s", up.total, err);
	free(out);
	free(err);
	snprintf(cmd, sizeof(cmd), "cat '%s'", log);
	out = test_run(cmd, &st);
	cr_assert(strstr(out, "\"x-api-key\": \"k3y-sk-Qx7"), "%s", out);
	cr_assert(strstr(out, "\"tenant\": \"team-a\""), "%s", out);
	free(out);
	free(tok);
	unlink(log);
	unlink(file);
}

/* A secret file at path holding text, with mode. */
static void secret_file(const char *path, const char *text, mode_t mode)
{
	FILE *f;

	unlink(path);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fputs(text, f) >= 0 && fclose(f) == 0, 1);
	cr_assert_eq(chmod(path, mode), 0);
}

/*
 * --auth-token-file and --basic-auth-file: the secret reaches the server
 * (the receiver takes only requests with the token), from the first line
 * of the file without its line end, and the command line holds only the
 * file's name; a file only root reads draws no warning.
 */
Test(upload, secret_files_reach_the_server, .timeout = 60)
{
	static const struct interp rx_py = { NULL, "/usr/bin/python3.11", 0, 3, 11 };
	char log[64], file[64], port[32], url[64], secret[64], line[128], *out, *err;
	char *tok = odd_token(40);
	const char *rx_args[] = { SRCDIR "/tests/receiver.py", "--port", "0", "--log", log,
				  "--require-token", tok, NULL };
	const char *rx_basic[] = { SRCDIR "/tests/receiver.py", "--port", "0", "--log", log, NULL };
	const char *token_args[] = { "exec", "-d", "2", "--server", url, "--app-name", "seed",
				     "--auth-token-file", secret, "--", "/usr/bin/python3.11", "-c",
				     exec_probe, NULL };
	const char *basic_args[] = { "exec", "-d", "2", "--server", url, "--app-name", "seed",
				     "--basic-auth-file", secret, "--", "/usr/bin/python3.11", "-c",
				     exec_probe, NULL };
	struct upload up;
	pid_t rx;
	int st;

	paths(log, file, sizeof(log));
	snprintf(secret, sizeof(secret), "/tmp/pyrospy-upload-secret-%d", (int)getpid());
	snprintf(line, sizeof(line), "%s\nnot the token\n", tok);
	secret_file(secret, line, 0600);
	rx = test_start(&rx_py, rx_args, port, sizeof(port));
	snprintf(url, sizeof(url), "http://127.0.0.1:%s", port);
	st = test_pyrospy(token_args, &out, &err);
	test_stop(rx);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert_null(strstr(err, "warning"), "%s", err);
	read_log(log, &up);
	cr_assert_geq(up.n, 1, "nothing accepted with the token of the file: %s", err);
	cr_assert_gt(up.total, 50, "%lu samples uploaded: %s", up.total, err);
	free(out);
	free(err);
	unlink(log);

	/* CRLF, as an editor elsewhere may write it; group-readable is no one's business */
	secret_file(secret, "ci-user:pw-Qx7Qx7Qx7\r\n", 0640);
	rx = test_start(&rx_py, rx_basic, port, sizeof(port));
	snprintf(url, sizeof(url), "http://127.0.0.1:%s", port);
	st = test_pyrospy(basic_args, &out, &err);
	test_stop(rx);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert_null(strstr(err, "warning"), "%s", err);
	free(out);
	free(err);
	out = test_slurp(log);
	cr_assert(strstr(out, "\"password\": \"pw-Qx7Qx7Qx7\""), "%s", out);
	cr_assert(strstr(out, "\"user\": \"ci-user\""), "%s", out);
	free(out);
	free(tok);
	unlink(log);
	unlink(secret);
}

/*
 * A secret given as an argument is in /proc/PID/cmdline for every user:
 * one warning line each (even with -q) naming the variable and the file
 * option, never the secret; none for the environment or a file; a file
 * every user may read is said.  (The target is this test, no interpreter:
 * pyrospy stops right after the checks, status 5.)
 */
Test(upload, secret_on_command_line_warned)
{
	char pid[32], secret[64], *out, *err;
	char *tok = odd_token(24);
	char hdr[64], basic[64];
	const char *warn_token = "pyrospy: warning: --auth-token on the command line is shown to "
				 "every user by ps: give it in $PYROSPY_AUTH_TOKEN or "
				 "--auth-token-file FILE\n";
	const char *warn_basic = "pyrospy: warning: --basic-auth on the command line is shown to "
				 "every user by ps: give it in $PYROSPY_BASIC_AUTH or "
				 "--basic-auth-file FILE\n";
	const char *warn_hdr = "pyrospy: warning: --header 'Authorization' on the command line is "
			       "shown to every user by ps: give it in $PYROSPY_HEADERS\n";
	const char *base[] = { "record", "-q", "--pid", pid, "--server", "http://127.0.0.1:9",
			       "--app-name", "shop" };
	struct {
		const char *opts[6];
		const char *env;	/* NAME=VALUE, or NULL */
		const char *warned;	/* the whole of the warnings */
	} cases[] = {
		{ { "--auth-token", tok }, NULL, NULL },
		{ { "--basic-auth", basic }, NULL, NULL },
		{ { "--header", hdr, "--header", "X-Team: a" }, NULL, NULL },
		{ { NULL }, "PYROSPY_AUTH_TOKEN", "" },
		{ { "--auth-token-file", secret }, NULL, "" },
	};

	cases[0].warned = warn_token;
	cases[1].warned = warn_basic;
	cases[2].warned = warn_hdr;
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", tok);
	snprintf(basic, sizeof(basic), "u:%s", tok);
	snprintf(secret, sizeof(secret), "/tmp/pyrospy-upload-secret-%d", (int)getpid());
	secret_file(secret, tok, 0600);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[16];
		size_t n = 0;
		int st;
		char *warnings;

		for (; n < sizeof(base) / sizeof(base[0]); n++)
			args[n] = base[n];
		for (size_t j = 0; cases[i].opts[j]; j++)
			args[n++] = cases[i].opts[j];
		args[n] = NULL;
		if (cases[i].env)
			cr_assert_eq(setenv(cases[i].env, tok, 1), 0);
		st = test_pyrospy(args, &out, &err);
		if (cases[i].env)
			unsetenv(cases[i].env);
		cr_assert_eq(st, 5, "case %zu: exit %d: %s", i, st, err);
		assert_no_token("stderr", err);
		/* the warnings come before the error about the target */
		warnings = strndup(err, (size_t)(strstr(err, "pyrospy: error: ") - err));
		cr_assert_str_eq(warnings, cases[i].warned, "case %zu", i);
		free(warnings);
		free(out);
		free(err);
	}

	/* a file every user may read */
	{
		const char *args[] = { "record", "-q", "--pid", pid, "--server", "http://127.0.0.1:9",
				       "--app-name", "shop", "--auth-token-file", secret, NULL };
		char want[256];

		cr_assert_eq(chmod(secret, 0644), 0);
		snprintf(want, sizeof(want), "pyrospy: warning: every user may read '%s' "
			 "(--auth-token-file): chmod o-r it\npyrospy: error: ", secret);
		cr_assert_eq(test_pyrospy(args, &out, &err), 5, "%s", err);
		cr_assert(!strncmp(err, want, strlen(want)), "%s", err);
		free(out);
		free(err);
	}
	unlink(secret);
	free(tok);
}

/*
 * Secret files that are none: a FIFO (read without waiting for a writer),
 * a directory, a device, more than 4 KiB (or 64 GiB, sparse), a missing
 * file, and a file with the option too.  One error and its hint each,
 * status 2, at once.
 */
Test(upload, secret_file_refused, .timeout = 20)
{
	char fifo[64], big[64], sparse[64], missing[64], *out, *err, *text;
	struct {
		const char *path, *opt2, *error;
	} cases[] = {
		{ fifo, NULL, "is not a regular file" },
		{ "/tmp", NULL, "is not a regular file" },
		{ "/dev/zero", NULL, "is not a regular file" },
		{ big, NULL, "holds more than 4096 bytes" },
		/* 64 GiB of nothing: its size is refused, nothing read */
		{ sparse, NULL, "holds more than 4096 bytes" },
		{ missing, NULL, "No such file or directory" },
		{ big, "--auth-token", "give --auth-token or --auth-token-file, not both" },
	};

	snprintf(fifo, sizeof(fifo), "/tmp/pyrospy-upload-fifo-%d", (int)getpid());
	snprintf(big, sizeof(big), "/tmp/pyrospy-upload-big-%d", (int)getpid());
	snprintf(sparse, sizeof(sparse), "/tmp/pyrospy-upload-sparse-%d", (int)getpid());
	snprintf(missing, sizeof(missing), "/tmp/pyrospy-upload-missing-%d", (int)getpid());
	secret_file(sparse, "", 0600);
	cr_assert_eq(truncate(sparse, 64LL << 30), 0);
	unlink(fifo);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	text = malloc(5000);
	memset(text, 'k', 4999);
	text[4999] = '\0';
	secret_file(big, text, 0600);
	free(text);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[] = { "record", "--pid", "1", "--server", "http://127.0.0.1:9",
				       "--app-name", "shop", "--auth-token-file", cases[i].path,
				       cases[i].opt2, "x", NULL };
		const char *nl;
		int st = test_pyrospy(args, &out, &err);

		cr_assert_eq(st, 2, "case %zu: exit %d: %s", i, st, err);
		cr_assert(!strncmp(err, "pyrospy: error: ", 16), "case %zu: %s", i, err);
		cr_assert(strstr(err, cases[i].error), "case %zu: %s", i, err);
		nl = strchr(err, '\n');
		cr_assert(nl && !strncmp(nl + 1, "hint: ", 6) && !strchr(nl + 1, '\n')[1],
			  "case %zu: not one error and one hint: %s", i, err);
		free(out);
		free(err);
	}
	unlink(fifo);
	unlink(big);
	unlink(sparse);
}
