/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

/*
 * pyrospy report reading pprof profiles: pyrospy's own (-f pprof) of a
 * real run gives back the profile the raw recording of the same run
 * gives, tags and threads too, on every interpreter of the matrix; and
 * the CPU profile of a Go program, re-encoded by `go tool pprof -proto',
 * gives the samples `go tool pprof' itself counts, in all, by label
 * (--tag against -tagfocus) and by function (against -focus).
 */

struct files {
	char dir[64], raw[96], pb[96];
};

static void files_make(struct files *f)
{
	snprintf(f->dir, sizeof(f->dir), "/tmp/pyrospy-rpprof-XXXXXX");
	cr_assert_not_null(mkdtemp(f->dir));
	snprintf(f->raw, sizeof(f->raw), "%s/rec.raw", f->dir);
	snprintf(f->pb, sizeof(f->pb), "%s/rec.pb.gz", f->dir);
}

static void files_remove(const struct files *f)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	cr_assert_eq(system(cmd), 0);
}

static int by_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of s sorted (a pprof profile keeps no order of stacks); in place. */
static char *sorted(char *s)
{
	size_t n = 0, a = 64, len = strlen(s);
	char **line = malloc(a * sizeof(*line)), *out = malloc(len + 2), *o = out;

	for (char *p = strtok(s, "\n"); p; p = strtok(NULL, "\n")) {
		if (n == a)
			line = realloc(line, (a *= 2) * sizeof(*line));
		line[n++] = p;
	}
	qsort(line, n, sizeof(*line), by_line);
	*o = '\0';
	for (size_t i = 0; i < n; i++)
		o += sprintf(o, "%s\n", line[i]);
	free(line);
	free(s);
	return out;
}

/* `report in extra... -f folded', its lines sorted. */
static char *folded(const char *in, const char *const *extra)
{
	const char *args[16] = { "report", in, "-f", "folded", "-o", "-" };
	char *out, *err;
	size_t n = 6;
	int st;

	for (; extra && *extra; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "report %s failed (%d): %s", in, st, err);
	free(err);
	return sorted(out);
}

static void own(const struct interp *in, const char *script)
{
	struct files f;
	const char *extra[] = { "-d", "3", "-r", "100", "-f", "pprof", "--raw", NULL, NULL };
	const char *threads[] = { "--threads", NULL };
	const char *car[] = { "--tag", "vehicle=car", NULL };
	const char *notcar[] = { "--tag", "vehicle!=car", NULL };
	const char *const *filters[] = { NULL, threads, car, notcar };
	char *err, *a, *b;
	int st;

	files_make(&f);
	extra[7] = f.raw;
	test_use_helpers(in);
	st = test_record_to(in, script, extra, f.pb, &err);
	cr_assert_eq(st, 0, "%s: record failed (%d): %s", in->bin, st, err);
	cr_assert(strstr(err, "wrote pprof profile"), "%s: %s", in->bin, err);
	free(err);
	for (size_t i = 0; i < sizeof(filters) / sizeof(filters[0]); i++) {
		a = folded(f.raw, filters[i]);
		b = folded(f.pb, filters[i]);
		cr_assert_gt(test_folded_count(a, ""), 50, "%s: %s", in->bin, a);
		cr_assert_str_eq(b, a, "%s: report of the pprof profile differs from the "
				 "recording's (filter %zu)", in->bin, i);
		if (filters[i] == car) {
			cr_assert_gt(test_folded_count(b, test_func(in, "order_car")), 0, "%s", in->bin);
			cr_assert_eq(test_folded_count(b, test_func(in, "order_bike")), 0, "%s",
				     in->bin);
		}
		if (filters[i] == threads)
			cr_assert(strstr(b, "thread ("), "%s: no thread from the labels", in->bin);
		free(a);
		free(b);
	}
	/* a profile of sums has no times */
	{
		const char *args[] = { "report", f.pb, "--from", "1", NULL };
		char *out;

		st = test_pyrospy(args, &out, &err);
		cr_assert_eq(st, 2, "%s: --from on a pprof profile: exit %d: %s", in->bin, st, err);
		free(out);
		free(err);
	}
	files_remove(&f);
}

ParameterizedTestParameters(report_pprof, own_python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

ParameterizedTest(size_t *i, report_pprof, own_python, .timeout = 60)
{
	own(&test_pythons[*i], "rideshare.py");
}

ParameterizedTestParameters(report_pprof, own_ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, report_pprof, own_ruby, .timeout = 60)
{
	own(&test_rubies[*i], "rideshare.rb");
}

/* The samples `go tool pprof -raw ARGS' counts. */
static unsigned long go_count(const struct files *f, const char *args)
{
	char cmd[1024], *raw;
	const char *p, *end;
	unsigned long all = 0;
	int st;

	snprintf(cmd, sizeof(cmd), "cd %s && HOME=%s PPROF_TMPDIR=%s GOTOOLCHAIN=local "
		 "go tool pprof -raw %s go.pb.gz 2>&1", f->dir, f->dir, f->dir, args);
	raw = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: %s", cmd, raw);
	p = strstr(raw, "\nSamples:\n");
	end = strstr(raw, "\nLocations\n");
	cr_assert(p && end, "%s", raw);
	for (; p < end; p += strcspn(p, "\n"), p += *p == '\n') {
		unsigned long count, cpu;
		int off = 0;

		/* "         14  140000000: 1 2 3 4 5 6 " */
		if (sscanf(p, " %lu %lu: %n", &count, &cpu, &off) == 2 && off)
			all += count;
	}
	free(raw);
	return all;
}

Test(report_pprof, go, .timeout = 120)
{
	struct files f;
	char cmd[1024], pb[128], *out;
	const char *car[] = { "--tag", "vehicle=car", NULL };
	const char *bike[] = { "--tag", "vehicle=bike", NULL };
	unsigned long n, go_all, go_car, go_bike, go_spin;
	int st;

	files_make(&f);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && export HOME=%s GOCACHE=%s/cache GO111MODULE=off GOTOOLCHAIN=local "
		 "GOFLAGS= && go build -o gowork " SRCDIR "/tests/targets/gowork.go && "
		 "./gowork cpu.pprof && go tool pprof -proto gowork cpu.pprof >go.pb.gz 2>&1",
		 f.dir, f.dir, f.dir);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: %s", cmd, out);
	free(out);
	snprintf(pb, sizeof(pb), "%s/go.pb.gz", f.dir);

	go_all = go_count(&f, "");
	go_car = go_count(&f, "-tagfocus=vehicle=car");
	go_bike = go_count(&f, "-tagfocus=vehicle=bike");
	go_spin = go_count(&f, "-focus='^main\\.spin$'");
	cr_assert(go_car > 0 && go_bike > 0, "car %lu, bike %lu of %lu", go_car, go_bike, go_all);

	out = folded(pb, NULL);
	n = test_folded_count(out, "");
	cr_log_info("go: %lu samples (go tool pprof: %lu; car %lu, bike %lu, main.spin %lu)", n,
		    go_all, go_car, go_bike, go_spin);
	cr_assert_eq(n, go_all, "%s", out);
	cr_assert_eq(test_folded_count(out, ";main.spin ("), go_spin, "%s", out);
	cr_assert(strstr(out, "main.car (") && strstr(out, "/gowork.go:"), "%s", out);
	free(out);

	out = folded(pb, car);
	cr_assert_eq(test_folded_count(out, ""), go_car, "%s", out);
	cr_assert_eq(test_folded_count(out, "{vehicle=car};"), go_car, "%s", out);
	cr_assert_eq(test_folded_count(out, "main.bike ("), 0, "%s", out);
	free(out);
	out = folded(pb, bike);
	cr_assert_eq(test_folded_count(out, ""), go_bike, "%s", out);
	cr_assert_eq(test_folded_count(out, "main.car ("), 0, "%s", out);
	free(out);
	files_remove(&f);
}

/* Damaged pprof files: one line, a hint, exit status 7; never a crash. */
Test(report_pprof, refuses_damaged)
{
	static const unsigned char gz_garbage[] = {
		/* a gzip member of "\x0a\xff\xff\xff\xff\x0f" (a length past the end) */
		0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0xe3, 0xfa,
		0x0f, 0x04, 0xfc, 0x00, 0xb6, 0x97, 0x3b, 0xb9, 0x06, 0x00, 0x00, 0x00,
	};
	const char *path = "/tmp/pyrospy-rpprof-bad.pb.gz";
	const char *args[] = { "report", path, "-f", "folded", NULL };
	char *out, *err;
	FILE *f;
	int st;

	for (int k = 0; k < 2; k++) {
		f = fopen(path, "wb");
		cr_assert_not_null(f);
		/* k 0: a gzip stream cut short; k 1: a whole stream of no profile */
		fwrite(gz_garbage, 1, k ? sizeof(gz_garbage) : 12, f);
		fclose(f);
		st = test_pyrospy(args, &out, &err);
		cr_assert_eq(st, 7, "case %d: exit %d: %s", k, st, err);
		cr_assert(!strncmp(err, "pyrospy: error: cannot read '", 29) &&
			  strstr(err, "as a pprof profile") && strstr(err, "\nhint: "), "%s", err);
		cr_assert_str_eq(out, "");
		free(out);
		free(err);
	}
	unlink(path);
}
