/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "helpers.h"
#include "proc/target.h"

/*
 * The raw recording, end to end on every interpreter of the matrix:
 * record --raw writes every sample besides the folded profile of the same
 * run, and pyrospy report of the recording gives that profile back
 * byte for byte; its filters keep what they say; its speedscope is in
 * time order (tests/consumers); a recorder killed with
 * SIGKILL leaves a file report reads, with a warning.
 */

struct files {
	char dir[64], folded[96], raw[96];
};

static void files_make(struct files *f)
{
	snprintf(f->dir, sizeof(f->dir), "/tmp/pyrospy-raw-XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->folded, sizeof(f->folded), "%s/direct.txt", f->dir);
	snprintf(f->raw, sizeof(f->raw), "%s/rec.raw", f->dir);
}

static void files_remove(const struct files *f)
{
	unlink(f->folded);
	unlink(f->raw);
	rmdir(f->dir);
}

/* pyrospy report RAW extra... -f folded -o -: its output; fails the test if it fails. */
static char *report(const char *raw, const char *const *extra, char **err_out)
{
	const char *args[24] = { "report", raw, "-f", "folded", "-o", "-" };
	char *out, *err;
	int n = 6, st;

	for (int i = 0; extra && extra[i] && n < 22; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "report %s failed (%d): %s", raw, st, err);
	if (err_out)
		*err_out = err;
	else
		free(err);
	return out;
}

static unsigned long total(const char *folded)
{
	return test_folded_count(folded, "");
}

/* Every line of folded holds needle (or, with none set, none holds it). */
static void every_line(const char *folded, const char *needle, int holds, const char *what)
{
	for (const char *line = folded; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		cr_assert_eq(memmem(line, len, needle, strlen(needle)) != NULL, holds,
			     "%s: '%s' %s in: %.*s", what, needle, holds ? "missing" : "found",
			     (int)len, line);
		line = end ? end + 1 : NULL;
	}
}

/*
 * The vehicles of rideshare's tag sets, in the order out names them:
 * car, bike, scooter, car, ... as the program takes them (a profile by
 * stack would name each tag set once).
 */
static void vehicles_in_time_order(const struct interp *in, const char *out)
{
	static const char *const cycle[] = { "car", "bike", "scooter" };
	unsigned int switches = 0, in_order = 0;
	int prev = -1;

	for (const char *p = out; (p = strstr(p, "vehicle=")); p += 8) {
		int v = -1;

		for (int i = 0; i < 3; i++)
			if (!strncmp(p + 8, cycle[i], strlen(cycle[i])) && p[8 + strlen(cycle[i])] == '}')
				v = i;
		cr_assert_geq(v, 0, "%s: %.40s", in->bin, p);
		if (prev >= 0 && v != prev) {
			switches++;
			in_order += v == (prev + 1) % 3;
		}
		prev = v;
	}
	/*
	 * 3 s of rounds of a few tenths of a second or less: many changes,
	 * mostly to the next vehicle (a phase shorter than a tick may be
	 * missed, and a change seen late).
	 */
	cr_assert_geq(switches, 6, "%s: %u changes of vehicle: %s", in->bin, switches, out);
	cr_assert_geq(in_order * 10, switches * 6, "%s: %u of %u changes in order: %s", in->bin,
		      in_order, switches, out);
}

/*
 * report -f chrome of the rideshare recording: every thread's frames nest
 * with times that never go back (tests/consumers/check-trace.js), in time
 * order, and Chrome DevTools' trace engine loads it: one thread, a span
 * for every frame begun.
 */
static void trace(const struct interp *in, const struct files *f)
{
	char json[128], cmd[512], want[64], *out, *err, *frames;
	const char *args[] = { "report", f->raw, "-f", "chrome", "-o", json, NULL };
	int st;

	snprintf(json, sizeof(json), "%s/rec.trace.json", f->dir);
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "%s: %s", in->bin, err);
	free(out);
	free(err);
	snprintf(cmd, sizeof(cmd), "cd %s && node check-trace.js %s", TEST_CONSUMERS, json);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: %.2000s", in->bin, out);
	cr_assert(strstr(out, "\"valid\":true"), "%s", out);
	vehicles_in_time_order(in, out);
	frames = strstr(out, "\"frames\":");
	cr_assert_not_null(frames, "%s", out);
	snprintf(want, sizeof(want), "\"entries\":%ld,", strtol(frames + 9, NULL, 10));
	free(out);
	snprintf(cmd, sizeof(cmd), "cd %s && node load-trace.mjs %s", TEST_CONSUMERS, json);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: %.2000s", in->bin, out);
	cr_assert(strstr(out, "\"name\":\"thread (") && strstr(out, want) && !strstr(out, "},{"),
		  "%s: want one thread, %s: %s", in->bin, want, out);
	free(out);
	unlink(json);
}

/*
 * report -f speedscope of the rideshare recording: valid for speedscope's
 * schema, one profile per thread whose samples are in time order, which
 * the vehicles show: car, bike, scooter, car, ... in the order the program
 * takes them (a profile by stack would give each tag set once).
 */
static void timeline(const struct interp *in, const struct files *f, unsigned long all)
{
	char json[128], cmd[512], *out;
	const char *args[] = { "report", f->raw, "-f", "speedscope", "-o", json, NULL };
	int st;
	char *err;

	snprintf(json, sizeof(json), "%s/timeline.speedscope.json", f->dir);
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "%s: %s", in->bin, err);
	free(out);
	free(err);
	snprintf(cmd, sizeof(cmd), "cd %s && node validate-speedscope.js %s", TEST_CONSUMERS, json);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: not valid: %s", in->bin, out);
	cr_assert(strstr(out, "\"valid\":true") && strstr(out, "\"profiles\":[\"thread ("), "%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "cd %s && node speedscope-order.js %s", TEST_CONSUMERS, json);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: %s", in->bin, out);
	/* one thread: its weights are every sample's period */
	snprintf(cmd, sizeof(cmd), "\"weights\":%lu0000000,", all);
	cr_assert(strstr(out, cmd), "%s: %lu samples: %.500s", in->bin, all, out);
	vehicles_in_time_order(in, out);
	free(out);
	unlink(json);
}

static void roundtrip(const struct interp *in, const char *script, int rideshare)
{
	struct files f;
	char *err, *direct, *out;
	const char *extra[] = { "-d", "3", "-r", "100", "-f", "folded", "--tag", "env=ci",
				"--raw", NULL, NULL };
	unsigned long all;
	int st;

	files_make(&f);
	extra[9] = f.raw;
	if (rideshare)
		test_use_helpers(in);
	st = test_record_to(in, script, extra, f.folded, &err);
	cr_assert_eq(st, 0, "%s: record failed (%d): %s", in->bin, st, err);
	cr_assert(strstr(err, "wrote raw recording"), "%s: %s", in->bin, err);
	free(err);
	direct = test_slurp(f.folded);
	all = total(direct);
	cr_assert_gt(all, 200, "%s: %lu samples in 3 s", in->bin, all);

	/* the same samples, the same profile */
	out = report(f.raw, NULL, NULL);
	cr_assert_str_eq(out, direct, "%s: the report of the recording differs from the profile "
			 "of the same run", in->bin);
	free(out);

	/* the folded profile read back by report is itself again */
	{
		const char *args[] = { "report", f.folded, "-f", "folded", "-o", "-", NULL };
		char *again, *e;

		st = test_pyrospy(args, &again, &e);
		cr_assert_eq(st, 0, "%s: %s", in->bin, e);
		cr_assert_str_eq(again, direct, "%s: report of the folded profile", in->bin);
		free(again);
		free(e);
	}

	/* a one-thread program: its thread (the main one: its tid is the pid) is all */
	{
		const char *threads[] = { "--threads", NULL };
		char tid[32], *one;
		const char *by_tid[] = { "--thread", tid, NULL };
		const char *by_pid[] = { "--pid", tid, NULL };
		const char *other[] = { "--thread", "1", NULL };
		const char *other_pid[] = { "--pid", "1", NULL };

		out = report(f.raw, threads, NULL);
		cr_assert(strstr(out, "thread ("), "%s: %.300s", in->bin, out);
		snprintf(tid, sizeof(tid), "%ld", strtol(strstr(out, "thread (") + 8, NULL, 10));
		free(out);
		one = report(f.raw, by_tid, NULL);
		cr_assert_str_eq(one, direct, "%s: --thread %s", in->bin, tid);
		free(one);
		one = report(f.raw, by_pid, NULL);
		cr_assert_str_eq(one, direct, "%s: --pid %s", in->bin, tid);
		free(one);
		one = report(f.raw, other, NULL);
		cr_assert_str_eq(one, "", "%s: --thread 1", in->bin);
		free(one);
		one = report(f.raw, other_pid, NULL);
		cr_assert_str_eq(one, "", "%s: --pid 1", in->bin);
		free(one);
	}

	/* one second of a one-thread program: about 100 samples */
	{
		const char *window[] = { "--from", "1", "--until", "2", NULL };
		unsigned long n;

		out = report(f.raw, window, NULL);
		n = total(out);
		cr_assert(n >= 50 && n <= 150, "%s: %lu samples from 1 s to 2 s", in->bin, n);
		free(out);
	}
	if (rideshare) {
		const char *car[] = { "--tag", "vehicle=car", NULL };
		const char *notcar[] = { "--tag", "vehicle!=car", "--tag", "env=ci", NULL };
		const char *nobody[] = { "--tag", "vehicle=car", "--tag", "vehicle=bike", NULL };
		unsigned long ncar, nnot, nenv;

		out = report(f.raw, car, NULL);
		ncar = total(out);
		cr_assert_eq(ncar, test_folded_count(direct, "vehicle=car}"), "%s", in->bin);
		cr_assert_gt(ncar, all / 3, "%s: %lu of %lu samples are car's", in->bin, ncar, all);
		every_line(out, "vehicle=car}", 1, in->bin);
		every_line(out, test_func(in, "order_bike"), 0, in->bin);
		every_line(out, test_func(in, "order_scooter"), 0, in->bin);
		/* a switch of tags between two reads may be seen: rarely */
		cr_assert_geq(test_folded_count(out, test_func(in, "order_car")) * 100, ncar * 95,
			      "%s: %.3000s", in->bin, out);
		free(out);

		/* the same filter on the folded profile of the same run */
		{
			char *from_folded = report(f.folded, car, NULL);

			out = report(f.raw, car, NULL);
			cr_assert_str_eq(from_folded, out, "%s: --tag vehicle=car, folded vs raw",
					 in->bin);
			free(from_folded);
			free(out);
		}

		/*
		 * every sample has env=ci but those whose tags changed as they
		 * were read (no tag at all, --tag's neither: rare)
		 */
		out = report(f.raw, notcar, NULL);
		nnot = total(out);
		nenv = test_folded_count(direct, "env=ci");
		cr_assert_geq(nenv * 100, all * 99, "%s: %lu of %lu samples with env=ci", in->bin,
			      nenv, all);
		cr_assert_eq(ncar + nnot, nenv, "%s: car %lu + not car %lu != %lu with env=ci",
			     in->bin, ncar, nnot, nenv);
		every_line(out, "vehicle=car}", 0, in->bin);
		free(out);

		out = report(f.raw, nobody, NULL);
		cr_assert_str_eq(out, "", "%s", in->bin);
		free(out);
		timeline(in, &f, all);
		trace(in, &f);
	}
	free(direct);
	files_remove(&f);
}

ParameterizedTestParameters(raw, roundtrip_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

ParameterizedTest(size_t *i, raw, roundtrip_python, .timeout = 90)
{
	roundtrip(&test_pythons[*i], "seed.py", 0);
	roundtrip(&test_pythons[*i], "rideshare.py", 1);
}

ParameterizedTestParameters(raw, roundtrip_ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, raw, roundtrip_ruby, .timeout = 90)
{
	roundtrip(&test_rubies[*i], "seed.rb", 0);
	roundtrip(&test_rubies[*i], "rideshare.rb", 1);
}

static const char *pyrospy_bin(void)
{
	const char *bin = getenv("PYROSPY");

	return bin ? bin : BUILDDIR "/pyrospy";
}

/*
 * SIGKILL after 2.5 s: no end record, maybe half a block; report reads
 * the whole blocks, about a second per block, and warns.
 */
static void killed(const struct interp *in, const char *script)
{
	const char *sargs[] = { test_target_for(in, script), NULL };
	struct timespec ts = { 2, 500 * 1000 * 1000 };
	char ready[64], pidbuf[32], *out, *err;
	struct files f;
	pid_t target, rec;
	int st;

	files_make(&f);
	target = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)target);
	rec = fork();
	cr_assert_geq(rec, 0);
	if (rec == 0) {
		execl(pyrospy_bin(), "pyrospy", "record", "-q", "--pid", pidbuf, "-o", f.raw,
		      (char *)NULL);
		_exit(127);
	}
	nanosleep(&ts, NULL);
	kill(rec, SIGKILL);
	waitpid(rec, &st, 0);
	test_stop(target);
	cr_assert(WIFSIGNALED(st), "%s: pyrospy ended before it was killed", in->bin);
	out = report(f.raw, NULL, &err);
	cr_assert(strstr(err, "warning: ") && strstr(err, "cut short"), "%s: %s", in->bin, err);
	cr_assert_geq(total(out), 100, "%s: %lu samples after 2.5 s: %s", in->bin, total(out),
		      err);
	free(out);
	free(err);
	files_remove(&f);
}

Test(raw, killed_recorder_python, .timeout = 30)
{
	killed(&test_pythons[1], "seed.py");
}

Test(raw, killed_recorder_ruby, .timeout = 30)
{
	killed(&test_rubies[1], "seed.rb");
}

/*
 * record -f chrome, written as it samples, of threads taking turns at the
 * GIL/GVL: every thread's frames nest, and Chrome's trace engine loads it
 * without a complaint, with the busy threads and their frames.
 */
static void live_trace(const struct interp *in, const char *script)
{
	char file[96], cmd[512], *out, *err;
	const char *extra[] = { "-d", "2", "-f", "chrome", NULL };
	int st;

	snprintf(file, sizeof(file), "/tmp/pyrospy-raw-%d.trace.json", (int)getpid());
	st = test_record_to(in, script, extra, file, &err);
	cr_assert_eq(st, 0, "%s: %s", in->bin, err);
	cr_assert(strstr(err, "wrote chrome trace"), "%s: %s", in->bin, err);
	free(err);
	snprintf(cmd, sizeof(cmd), "cd %s && node check-trace.js %s", TEST_CONSUMERS, file);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: %.2000s", in->bin, out);
	free(out);
	snprintf(cmd, sizeof(cmd), "cd %s && node load-trace.mjs %s", TEST_CONSUMERS, file);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: %.2000s", in->bin, out);
	{
		unsigned int threads = 0;

		for (const char *p = out; (p = strstr(p, "\"tid\":")); p++)
			threads++;
		cr_assert_geq(threads, 4, "%s: %s", in->bin, out);
	}
	free(out);
	out = test_slurp(file);
	for (int i = 0; i < 4; i++) {
		char busy[16];

		snprintf(busy, sizeof(busy), "busy%d", i);
		cr_assert(strstr(out, busy), "%s: no %s in the trace", in->bin, busy);
	}
	free(out);
	unlink(file);
}

Test(raw, live_chrome_trace_python, .timeout = 60)
{
	live_trace(&test_pythons[1], "threads.py");
}

Test(raw, live_chrome_trace_ruby, .timeout = 60)
{
	live_trace(&test_rubies[1], "threads.rb");
}

/* Not a recording, a damaged one, none at all: one line, a hint, a status. */
Test(raw, report_refuses_what_is_no_recording)
{
	const char *junk = "/tmp/pyrospy-raw-junk.raw";
	const char *args[] = { "report", junk, NULL };
	const char *none[] = { "report", "/nonexistent/rec.raw", NULL };
	const char *bad[] = { "report", SRCDIR "/tests/fixtures/rideshare-py311.raw",
			      "--until", "0", NULL };
	FILE *f = fopen(junk, "wb");
	char *out, *err;
	int st;

	cr_assert_not_null(f);
	fputs("PYSPYRAW\001\377\377\377\377garbage and more garbage", f);
	fclose(f);
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 7, "exit %d: %s", st, err);
	cr_assert(strstr(err, "error: cannot read") && strstr(err, "\nhint: "), "%s", err);
	cr_assert_str_eq(out, "");
	free(out);
	free(err);
	unlink(junk);
	st = test_pyrospy(none, &out, &err);
	cr_assert_eq(st, 1, "exit %d: %s", st, err);
	cr_assert(strstr(err, "error: cannot open") && strstr(err, "\nhint: "), "%s", err);
	free(out);
	free(err);
	st = test_pyrospy(bad, &out, &err);
	cr_assert_eq(st, 2, "exit %d: %s", st, err);
	free(out);
	free(err);
}

/*
 * The recording's start, read as docs/raw-format.md says: the first
 * block's first record, "M" and start_us.
 */
static double raw_start(const char *raw)
{
	unsigned char head[21], *z, out[64];
	uLongf outlen = sizeof(out);
	uint32_t zlen;
	uint64_t us = 0;
	FILE *f = fopen(raw, "rb");

	cr_assert_not_null(f);
	cr_assert_eq(fread(head, 1, sizeof(head), f), sizeof(head));
	cr_assert(!memcmp(head, "PYSPYRAW\001", 9));
	zlen = head[9] | head[10] << 8 | head[11] << 16 | (uint32_t)head[12] << 24;
	z = malloc(zlen);
	cr_assert_eq(fread(z, 1, zlen, f), zlen);
	fclose(f);
	/* the block holds more: a partial inflate of its start is enough */
	{
		z_stream zs;

		memset(&zs, 0, sizeof(zs));
		cr_assert_eq(inflateInit(&zs), Z_OK);
		zs.next_in = z;
		zs.avail_in = zlen;
		zs.next_out = out;
		zs.avail_out = sizeof(out);
		inflate(&zs, Z_SYNC_FLUSH);
		outlen = sizeof(out) - zs.avail_out;
		inflateEnd(&zs);
	}
	free(z);
	cr_assert(outlen > 2 && out[0] == 'M');
	for (unsigned int i = 1, shift = 0; i < outlen && shift < 64; i++, shift += 7) {
		us |= (uint64_t)(out[i] & 0x7f) << shift;
		if (!(out[i] & 0x80))
			break;
	}
	return (double)us / 1e6;
}

/* at as ISO 8601 in UTC ("Z"), or at the offset off seconds east (+HH:MM). */
static void iso(char *buf, size_t cap, double at, long off)
{
	time_t t = (time_t)at + off;
	struct tm tm;
	char day[32];

	gmtime_r(&t, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	if (off)
		snprintf(buf, cap, "%s.%06ld%c%02ld:%02ld", day, (long)((at - (double)(time_t)at) * 1e6),
			 off < 0 ? '-' : '+', labs(off) / 3600, labs(off) / 60 % 60);
	else
		snprintf(buf, cap, "%s.%06ldZ", day, (long)((at - (double)(time_t)at) * 1e6));
}

/* at as local time of day, HH:MM:SS.ffffff, in the time zone TZ says. */
static void tod(char *buf, size_t cap, double at)
{
	time_t t = (time_t)at;
	struct tm tm;
	char hms[16];

	localtime_r(&t, &tm);
	strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
	snprintf(buf, cap, "%s.%06ld", hms, (long)((at - (double)(time_t)at) * 1e6));
}

/*
 * --from and --until as wall times: the start of the recording plus 1 s
 * and 3 s, as ISO 8601 in UTC, at another offset, without a zone (local
 * time), and as a time of day (local: TZ 9 hours east of UTC) keep the
 * samples "--from 1 --until 3" keeps; a wall end before the start keeps
 * none; a time that is none is refused.
 */
Test(raw, wall_times, .timeout = 90)
{
	const struct interp *in = &test_pythons[1];
	struct files f;
	char *err, *want, *out, a[64], b[64];
	const char *extra[] = { "-d", "4", "-r", "100", NULL };
	const char *rel[] = { "--from", "1", "--until", "3", NULL };
	const char *wall[] = { "--from", a, "--until", b, NULL };
	const char *before[] = { "--until", a, NULL };
	double start;
	int st;

	files_make(&f);
	st = test_record_to(in, "seed.py", extra, f.raw, &err);
	cr_assert_eq(st, 0, "%s: record failed (%d): %s", in->bin, st, err);
	free(err);
	start = raw_start(f.raw);
	want = report(f.raw, rel, NULL);
	cr_assert_gt(total(want), 100, "%s: %lu samples from 1 s to 3 s", in->bin, total(want));

	iso(a, sizeof(a), start + 1, 0);
	iso(b, sizeof(b), start + 3, 0);
	out = report(f.raw, wall, NULL);
	cr_log_info("start %.6f: --from %s --until %s: %lu samples (relative: %lu)", start, a, b,
		    total(out), total(want));
	cr_assert_str_eq(out, want, "--from %s --until %s", a, b);
	free(out);

	iso(a, sizeof(a), start + 1, -(5 * 3600 + 30 * 60));
	iso(b, sizeof(b), start + 3, 2 * 3600);
	out = report(f.raw, wall, NULL);
	cr_assert_str_eq(out, want, "--from %s --until %s", a, b);
	free(out);

	setenv("TZ", "XST-9", 1);
	tzset();
	iso(a, sizeof(a), start + 1 + 9 * 3600, 0);
	iso(b, sizeof(b), start + 3 + 9 * 3600, 0);
	a[strlen(a) - 1] = b[strlen(b) - 1] = '\0';	/* local: no zone */
	out = report(f.raw, wall, NULL);
	cr_assert_str_eq(out, want, "TZ=XST-9 --from %s --until %s", a, b);
	free(out);
	tod(a, sizeof(a), start + 1);
	tod(b, sizeof(b), start + 3);
	out = report(f.raw, wall, NULL);
	cr_log_info("TZ=XST-9: --from %s --until %s: %lu samples", a, b, total(out));
	cr_assert_str_eq(out, want, "TZ=XST-9 --from %s --until %s", a, b);
	free(out);
	unsetenv("TZ");
	tzset();

	iso(a, sizeof(a), start - 60, 0);
	out = report(f.raw, before, NULL);
	cr_assert_str_eq(out, "", "--until %s, before the start", a);
	free(out);
	free(want);

	{
		const char *bad[][5] = {
			{ "report", f.raw, "--from", "25:00:00", NULL },
			{ "report", f.raw, "--until", "2026-13-01T00:00:00Z", NULL },
			{ "report", f.raw, "--until", "2026-11-01T00:00:00+0x:00", NULL },
			{ "report", f.raw, "--from", "12:00:00junk", NULL },
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			st = test_pyrospy(bad[i], &out, &err);
			cr_assert_eq(st, 2, "%s: exit %d: %s", bad[i][3], st, err);
			cr_assert(strstr(err, "HH:MM:SS") && strstr(err, "\nhint: "), "%s", err);
			free(out);
			free(err);
		}
	}
	files_remove(&f);
}

ParameterizedTestParameters(raw, subprocesses_threads)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

/*
 * A recording of two processes with their threads (record --subprocesses
 * --threads): report --threads of it gives the roots the recording's own
 * profile had, "pid N: thread (TID)", byte for byte.
 */
ParameterizedTest(size_t *i, raw, subprocesses_threads, .timeout = 60)
{
	const struct interp *in = &test_pythons[*i];
	const char *sargs[] = { test_target_for(in, "forks.py"), NULL };
	const char *threads[] = { "--threads", NULL };
	char ready[64], pidbuf[32], *out, *err, *direct;
	const char *args[] = { "record", "--pid", pidbuf, "--subprocesses", "--threads", "-r", "50",
			       "-d", "1", "-f", "folded", "-o", NULL, "--raw", NULL, NULL };
	struct files f;
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int st;

	files_make(&f);
	args[12] = f.folded;
	args[14] = f.raw;
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: record failed (%d): %s", in->bin, st, err);
	free(out);
	free(err);
	direct = test_slurp(f.folded);
	/* both processes, each thread named by its process */
	every_line(direct, "pid ", 1, in->bin);
	cr_assert(test_folded_count(direct, test_func(in, "in_child")) > 0 &&
		  test_folded_count(direct, test_func(in, "in_parent")) > 0, "%s: %s", in->bin,
		  direct);
	out = report(f.raw, threads, NULL);
	cr_assert_str_eq(out, direct, "%s: report --threads of the recording differs from its "
			 "profile", in->bin);
	free(out);
	free(direct);
	files_remove(&f);
}
