/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "otlp_log.h"
#include "proc/target.h"

/*
 * --protocol otlp end to end: pyrospy streams to tests/otlp-receiver, which
 * runs in the sid root, decodes every request with the official
 * opentelemetry-proto 1.11.0 definition (compiled there by protoc) and
 * refuses, with 400, one that breaks a rule of the proto or of the man page
 * (index 0 of each table, no string twice, references in range, time,
 * period, service.name...).  What it accepted it logs as JSON lines: one
 * per request, one per sample with its stack ("func (file:line)" root
 * first), value, attributes and link, which the tests hold against what
 * the app printed and pyrospy's own folded profile.
 */

static const struct interp rx_python = { "sid", "/usr/bin/python3", TARGET_PYTHON, 3, 0 };

struct rx {
	pid_t pid;
	char port[32], log[128], host_log[1280];
};

/* The receiver, answering answers ("500,garbage,...", "" for none) first. */
static void rx_start(struct rx *r, const char *answers)
{
	const char *args[] = { "/tmp/otlp-receiver", "--log", r->log, "--answers", answers, NULL };
	char dst[1280];
	static int n;

	snprintf(dst, sizeof(dst), "%s/sid/tmp/otlp-receiver", test_chroots());
	cr_assert_eq(test_copy_into(SRCDIR "/tests/otlp-receiver", dst), 0, "cannot copy %s", dst);
	snprintf(r->log, sizeof(r->log), "/tmp/pyrospy-otlp-%d-%d.jsonl", (int)getpid(), n++);
	snprintf(r->host_log, sizeof(r->host_log), "%s/sid%s", test_chroots(), r->log);
	unlink(r->host_log);
	r->pid = test_start(&rx_python, args, r->port, sizeof(r->port));
}

/* The 1-based number of the first line of file that starts with prefix (after blanks). */
static int line_of(const char *file, const char *prefix)
{
	FILE *f = fopen(file, "r");
	char line[1024];
	int n = 0;

	cr_assert_not_null(f, "no %s", file);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (!strncmp(line + strspn(line, " \t"), prefix, strlen(prefix))) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	cr_assert_fail("no line '%s' in %s", prefix, file);
	return 0;
}

struct root_span {
	char unit[32], span[17], trace[33];
	unsigned long samples;
};

/*
 * The traced app (tests/targets/span.py, .rb: two threads, 12 root spans
 * around unit_T_I, idle() between) under pyrospy exec --protocol otlp
 * --tag env=ci: every request passes the receiver, no sample is lost
 * (its total is the folded file's), every sample carries env=ci, a
 * sample in a unit links to that unit's root span (its span_id and
 * trace_id, as the app printed them), never another's, span_name stays an
 * attribute and span_id is no attribute any more (but where the trace id
 * is 0, span.rb's remote parent: no link then, span_id an attribute),
 * samples of idle() have no link (1 % at a span's edge may miss it or
 * keep it, as tests/span-check allows), every sample has its thread.id
 * (unit_0_* one, unit_1_* another), and the functions come with their
 * files and lines.
 */
static void tags_span(const struct interp *in)
{
	const char *name = in->lang == TARGET_RUBY ? "span.rb" : "span.py";
	char file[64], url[64], want[512], exe[64];
	const char *args[40] = { "exec", "-f", "folded", "-o", file, "--server", url,
				 "--protocol", "otlp", "--app-name", "span", "--tag", "env=ci",
				 "--" };
	struct root_span roots[16];
	size_t nroots = 0;
	unsigned long good = 0, missing = 0, wrong = 0, idle = 0, idle_linked = 0, lines = 0;
	unsigned long zero_trace = 0;
	long tids[2] = { 0, 0 };
	int n = 14, st, fd;
	char *out, *err, *save = NULL;
	struct otlp_log l;
	struct rx r;
	const char *script;

	rx_start(&r, "");
	script = test_target_for(in, name);
	snprintf(url, sizeof(url), "http://127.0.0.1:%s", r.port);
	snprintf(file, sizeof(file), "/tmp/pyrospy-otlp-folded-XXXXXX");
	cr_assert((fd = mkstemp(file)) >= 0);
	close(fd);
	test_use_helpers(in);
	n = test_interp_argv(in, script, args, n);
	args[n] = NULL;
	st = test_pyrospy(args, &out, &err);
	test_stop(r.pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_null(strstr(err, "refused"), "%s", err);

	for (char *ln = strtok_r(out, "\n", &save); ln && nroots < 16;
	     ln = strtok_r(NULL, "\n", &save)) {
		struct root_span *rs = &roots[nroots];

		if (sscanf(ln, "root %31s %16s %32s", rs->unit, rs->span, rs->trace) == 3) {
			rs->samples = 0;
			nroots++;
		}
	}
	cr_assert_eq(nroots, 12, "the app printed %zu root spans", nroots);

	otlp_log_read(r.host_log, &l);
	cr_log_info("%s: %d requests, %zu samples, %lu counts", in->bin, l.requests, l.n, l.total);
	cr_assert_geq(l.requests, 1);
	cr_assert_eq(l.total, test_folded_file_total(file), "%s: the receiver got %lu, pyrospy took %lu",
		     in->bin, l.total, test_folded_file_total(file));
	/* the resource: the process */
	cr_assert(strstr(l.first_request, "\"service.name\": \"span\""), "%s", l.first_request);
	cr_assert(strstr(l.first_request, "\"process.pid\": "), "%s", l.first_request);
	cr_assert(strstr(l.first_request, "\"host.name\": \""), "%s", l.first_request);
	snprintf(exe, sizeof(exe), "\"process.executable.name\": \"%s\"",
		 strrchr(in->bin, '/') ? strrchr(in->bin, '/') + 1 : in->bin);
	cr_assert(strstr(l.first_request, exe), "want %s: %s", exe, l.first_request);

	/* inner_work's one line, the one after its def, in the app's file */
	snprintf(want, sizeof(want), "%s (%s:%d);", test_func(in, "inner_work"), script,
		 line_of(test_target_path(name), "def inner_work") + 1);
	for (size_t i = 0; i < l.n; i++) {
		struct otlp_sample *s = &l.s[i];
		char unit[32];

		cr_assert(strstr(s->attrs, "\"env\": \"ci\""), "sample without env=ci: %s %s",
			  s->stack, s->attrs);
		cr_assert_gt(s->tid, 0, "sample without thread.id: %s %s", s->stack, s->attrs);
		if (strstr(s->stack, want))
			lines += s->value;
		if (otlp_unit_of(s->stack, unit, sizeof(unit))) {
			if (strstr(s->stack, in->lang == TARGET_RUBY ? "#idle (" : "idle (")) {
				idle += s->value;
				if (*s->span)
					idle_linked += s->value;
			}
			continue;
		}
		/* unit_T_I runs on worker thread T: one thread.id each, not the other's */
		if (!tids[unit[5] == '1'])
			tids[unit[5] == '1'] = s->tid;
		cr_assert_eq(s->tid, tids[unit[5] == '1'], "%s on threads %ld and %ld", unit,
			     s->tid, tids[unit[5] == '1']);
		for (size_t k = 0; k < nroots; k++) {
			char attr[64];

			if (strcmp(roots[k].unit, unit))
				continue;
			/*
			 * span.rb's remote parent of thread 0 has trace id 0,
			 * which OTLP calls invalid: no Link, span_id stays an
			 * attribute (man pyrospy)
			 */
			snprintf(attr, sizeof(attr), "\"span_id\": \"%s\"", roots[k].span);
			if (roots[k].trace[strspn(roots[k].trace, "0")] == '\0' && !*s->span &&
			    strstr(s->attrs, attr)) {
				good += s->value;
				roots[k].samples += s->value;
				zero_trace += s->value;
			} else if (!*s->span) {
				missing += s->value;
				cr_log_info("%lu samples of %s without a link: %s", s->value, unit,
					    s->attrs);
			} else if (strcmp(s->span, roots[k].span) || strcmp(s->trace, roots[k].trace)) {
				wrong += s->value;
				cr_log_info("%lu samples of %s linked to %s/%s, want %s/%s", s->value,
					    unit, s->trace, s->span, roots[k].trace, roots[k].span);
			} else {
				good += s->value;
				roots[k].samples += s->value;
				cr_assert(strstr(s->attrs, "\"span_name\": \"unit-of-work\""), "%s",
					  s->attrs);
				cr_assert_null(strstr(s->attrs, "\"span_id\""), "%s", s->attrs);
				cr_assert_null(strstr(s->attrs, "\"trace_id\""), "%s", s->attrs);
			}
		}
	}
	cr_log_info("%s: in spans %lu (%lu of trace id 0, unlinked; missing %lu, wrong %lu), "
		    "idle %lu (linked %lu), %lu at %s", in->bin, good, zero_trace, missing, wrong,
		    idle, idle_linked, lines, want);
	cr_assert_eq(wrong, 0, "%lu samples linked to another span", wrong);
	cr_assert_geq(good, 100, "only %lu samples linked to their span", good);
	for (size_t k = 0; k < nroots; k++)
		cr_assert_gt(roots[k].samples, 0, "no sample of %s linked to span %s",
			     roots[k].unit, roots[k].span);
	cr_assert_leq((missing + idle_linked) * 100, good > 100 ? good : 100,
		      "%lu at a span's edge without its link or with it after", missing + idle_linked);
	cr_assert_gt(idle, 0, "no sample of idle");
	cr_assert_neq(tids[0], tids[1], "both workers' units on thread %ld", tids[0]);
	cr_assert_geq(lines, 10, "%lu samples at %s", lines, want);

	free(l.s);
	free(out);
	free(err);
	unlink(file);
	unlink(r.host_log);
}

Test(otlp, python_tags_span, .timeout = 60)
{
	tags_span(&test_pythons[2]);	/* 3.13, trixie */
}

Test(otlp, ruby_tags_span, .timeout = 60)
{
	tags_span(&test_rubies[3]);	/* 3.4, sid */
}

/*
 * The seed workload on the host's Python for secs, recorded with -o file
 * and streamed to r; pyrospy's stderr in *err.
 */
static int seed_run(const struct rx *r, const char *secs, const char *file, char **err)
{
	static const struct interp *py = &test_pythons[1];
	const char *sargs[] = { test_target_for(py, "seed.py"), NULL };
	char ready[64], pidbuf[32], url[64], *out;
	const char *args[] = { "record", "--pid", pidbuf, "-d", secs, "-f", "folded", "-o", file,
			       "--server", url, "--app-name", "seed", "--protocol", "otlp", NULL };
	pid_t pid = test_start(py, sargs, ready, sizeof(ready));
	int st;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	snprintf(url, sizeof(url), "http://127.0.0.1:%s", r->port);
	st = test_pyrospy(args, &out, err);
	test_stop(pid);
	free(out);
	return st;
}

/*
 * A server that answers 500, then 502 with binary garbage, then takes a
 * request but answers 200 with garbage: pyrospy keeps the window, says
 * once that it retries (the server's message, nothing of the garbage),
 * then that the upload resumed; the receiver ends with every sample pyrospy
 * took, and exit 0.  A server that takes a request but says it rejected
 * part of it (OTLP's partial success): said once, not sent again.  A
 * server without the route (404): the window is dropped with the hint
 * that names the endpoint, exit 1.
 */
Test(otlp, server_errors, .timeout = 60)
{
	char file[64], *err;
	struct otlp_log l;
	struct rx r;
	int st, fd;

	snprintf(file, sizeof(file), "/tmp/pyrospy-otlp-folded-XXXXXX");
	cr_assert((fd = mkstemp(file)) >= 0);
	close(fd);
	rx_start(&r, "500,garbage,ok-garbage");
	st = seed_run(&r, "2", file, &err);
	test_stop(r.pid);
	cr_log_info("%s", err);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert(strstr(err, "pyrospy: warning: cannot upload to 'http://127.0.0.1:") &&
		  strstr(err, "': HTTP 500: receiver: injected failure; keeping the data and "
			 "retrying\n"), "%s", err);
	cr_assert(strstr(err, "' resumed after 2 failed attempts\n"), "%s", err);
	for (const char *p = err; *p; p++)
		cr_assert(*p == '\n' || ((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f),
			  "a byte 0x%02x of the server's garbage in: %s", (unsigned char)*p, err);
	otlp_log_read(r.host_log, &l);
	cr_assert_geq(l.requests, 1);
	cr_assert_gt(l.total, 50, "%lu samples", l.total);
	cr_assert_eq(l.total, test_folded_file_total(file), "the receiver got %lu, pyrospy took %lu",
		     l.total, test_folded_file_total(file));
	free(l.s);
	free(err);
	unlink(r.host_log);

	/*
	 * A partial success: taken, the server's count and reason said once,
	 * cleaned, and not sent again (one request at the receiver, exit 0)
	 */
	rx_start(&r, "partial");
	/* one window: a second that crossed a 10 s boundary was two, and two requests */
	while (time(NULL) % 10 < 1 || time(NULL) % 10 > 6)
		usleep(100000);
	st = seed_run(&r, "1", file, &err);
	test_stop(r.pid);
	cr_log_info("%s", err);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	cr_assert(strstr(err, "pyrospy: warning: server 'http://127.0.0.1:") &&
		  strstr(err, "' rejected 1 of the profiles of 'seed': receiver: ?[31mprofile 1 "
			 "rejected; not sending them again\n"), "%s", err);
	cr_assert(strstr(err, "', which rejected 1 of their profiles\n"), "%s", err);
	cr_assert_null(strstr(err, "uploaded every window"), "%s", err);
	otlp_log_read(r.host_log, &l);
	cr_assert_eq(l.requests, 1, "%d requests", l.requests);
	free(l.s);
	free(err);
	unlink(r.host_log);

	rx_start(&r, "404,404,404,404");
	st = seed_run(&r, "1", file, &err);
	test_stop(r.pid);
	cr_log_info("%s", err);
	cr_assert_eq(st, 1, "exit %d: %s", st, err);
	cr_assert(strstr(err, "' refused the profile of 'seed': HTTP 404: 404 page not found; "
			 "dropping it\nhint: the server has no OpenTelemetry profiles endpoint "
			 "(/v1development/profiles)"), "%s", err);
	free(err);
	unlink(r.host_log);
	unlink(file);
}

/* a copy of the host's Python under a name that would drive a terminal, and its name cleaned */
#define EVIL_EXE "\x1b[2J\x1b]2;PWN\x07\xc2\x9b\xe2\x80\xae\x9b-py"
#define EVIL_EXE_CLEAN "?[2J?]2;PWN???\?-py"
/* tests/targets/hostile_names.py's EVIL, cleaned (tests/test_hostile_names.c) */
#define EVIL_CLEAN "?[2J?]2;PWN??31m?evil?x?"
#define CAFE "caf\xc3\xa9_\xe6\x97\xa5\xe6\x9c\xac"

/*
 * A target of nobody's that names its function, its file and itself to
 * drive a terminal, run from nobody's copy of Python whose file name does
 * too: every request passes the receiver (no string of it with a control
 * or bidi character, nor invalid UTF-8), process.executable.name is the
 * name cleaned, the function and file come cleaned with their line, and
 * café_日本 whole.
 */
Test(otlp, hostile_names, .timeout = 60)
{
	static const struct interp nobody = { NULL, "setpriv", TARGET_PYTHON, 3, 11 };
	char dir[] = "/tmp/pyrospy-otlp-exe-XXXXXX", exe[128], cmd[512], ready[64], pidbuf[32];
	char url[64], want[256];
	const char *targs[] = { "--reuid=nobody", "--regid=nogroup", "--clear-groups",
				"--pdeathsig=SIGKILL", exe, test_target_path("hostile_names.py"),
				NULL };
	const char *args[] = { "record", "--pid", pidbuf, "-d", "2", "--server", url,
			       "--app-name", "hostile", "--protocol", "otlp", NULL };
	struct otlp_log l;
	unsigned long func = 0, cafe = 0;
	char *out, *err;
	struct rx r;
	pid_t pid;
	int st;

	cr_assert_eq(geteuid(), 0, "run as root: the target runs as nobody");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(exe, sizeof(exe), "%s/%s", dir, EVIL_EXE);
	snprintf(cmd, sizeof(cmd), "chown nobody:nogroup %s && setpriv --reuid=nobody "
		 "--regid=nogroup --clear-groups cp /usr/bin/python3.11 '%s'", dir, exe);
	free(test_run(cmd, &st));
	cr_assert_eq(st, 0, "%s", cmd);
	rx_start(&r, "");
	snprintf(url, sizeof(url), "http://127.0.0.1:%s", r.port);
	pid = test_start(&nobody, targs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	test_stop(r.pid);
	cr_assert_eq(st, 0, "exit %d: %s", st, err);
	otlp_log_read(r.host_log, &l);
	cr_assert(strstr(l.first_request, "\"process.executable.name\": \"" EVIL_EXE_CLEAN "\""),
		  "%s", l.first_request);
	snprintf(want, sizeof(want), EVIL_CLEAN "func (" EVIL_CLEAN "file.py:2)");
	for (size_t i = 0; i < l.n; i++) {
		if (strstr(l.s[i].stack, want))
			func += l.s[i].value;
		if (strstr(l.s[i].stack, CAFE " ("))
			cafe += l.s[i].value;
	}
	cr_log_info("%zu samples, %lu in %s, %lu in " CAFE, l.n, func, want, cafe);
	cr_assert_gt(func, 0, "no %s", want);
	cr_assert_geq(cafe, func);
	free(l.s);
	free(out);
	free(err);
	unlink(r.host_log);
	unlink(exe);
	rmdir(dir);
}
