/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

/*
 * pprof output read by a real consumer: the pprof-format package (what
 * Datadog's Node.js profiler encodes and decodes with), run by
 * tests/consumers/decode-pprof.js.  node or the package missing fails
 * the test: run `npm ci' in tests/consumers.
 */

/*
 * Profile script under in for 3 s into file (fcap bytes), in a new
 * directory dir (cap bytes) the caller removes.  Returns the samples
 * pyrospy says it wrote.  --idle: a tick when the target waits for a core
 * (other tests run beside it) still counts, so the total tests the
 * writer, not the scheduler.
 */
static unsigned long long record_pprof(const struct interp *in, const char *script, char *dir,
				       size_t cap, char *file, size_t fcap)
{
	const char *sargs[] = { test_target_for(in, script), NULL };
	char ready[64], pidbuf[32], *out, *err;
	const char *args[] = { "record", "--pid", pidbuf, "-d", "3", "-r", "100", "--idle",
			       "-f", "pprof", "-o", file, NULL };
	const char *wrote;
	unsigned long long n;
	pid_t pid;
	int st;

	snprintf(dir, cap, "/tmp/pyrospy-pprof-XXXXXX");
	cr_assert(mkdtemp(dir), "mkdtemp");
	snprintf(file, fcap, "%s/profile.pb.gz", dir);
	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_leq(test_dropped_share(err), 0.01, "%s: dropped samples: %s", in->bin, err);
	wrote = strstr(err, "wrote pprof profile to");
	cr_assert(wrote, "%s: no 'wrote' note: %s", in->bin, err);
	wrote = strstr(wrote, "' (");
	cr_assert(wrote && sscanf(wrote, "' (%llu samples)", &n) == 1, "%s: %s", in->bin, err);
	free(out);
	free(err);
	return n;
}

/* node decode-pprof.js file: its output (caller frees) and exit status. */
static char *decode(const char *file, int *status)
{
	char cmd[2048], *buf = malloc(1 << 16);
	size_t len = 0, n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "node '%s/tests/consumers/decode-pprof.js' '%s' 2>&1", SRCDIR,
		 file);
	p = popen(cmd, "r");
	cr_assert(p, "cannot run node");
	while ((n = fread(buf + len, 1, (1 << 16) - 1 - len, p)) > 0)
		len += n;
	buf[len] = '\0';
	*status = pclose(p);
	return buf;
}

/* The number after "key": in json. */
static unsigned long long json_num(const char *json, const char *key)
{
	char want[64];
	const char *p;

	snprintf(want, sizeof(want), "\"%s\":", key);
	p = strstr(json, want);
	cr_assert(p, "no %s in %s", key, json);
	return strtoull(p + strlen(want), NULL, 10);
}

/* Whether the array "key":[...] of strings holds value. */
static int json_has(const char *json, const char *key, const char *value)
{
	char want[256];
	const char *p, *end;

	snprintf(want, sizeof(want), "\"%s\":[", key);
	p = strstr(json, want);
	cr_assert(p, "no %s in %s", key, json);
	end = strchr(p, ']');
	snprintf(want, sizeof(want), "\"%s\"", value);
	p = strstr(p, want);
	return p && p < end;
}

static void check_seed(const struct interp *in, const char *script, const char *work)
{
	char dir[64], file[128], rm[256], *json;
	unsigned long long wrote = record_pprof(in, script, dir, sizeof(dir), file, sizeof(file));
	unsigned long long samples;
	int st;

	json = decode(file, &st);
	snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
	cr_assert_eq(system(rm), 0);
	cr_assert_eq(st, 0, "node decode-pprof.js failed (status %d; node and pprof-format "
			    "are needed: npm ci in tests/consumers):\n%s", st, json);
	samples = json_num(json, "samples");
	cr_assert_geq(samples, 250, "%s: %llu samples in 3 s at 100 Hz: %s", in->bin, samples,
		      json);
	cr_assert_eq(samples, wrote, "%s: pyrospy wrote %llu samples, the file holds %llu",
		     in->bin, wrote, samples);
	cr_assert_eq(json_num(json, "period"), 10000000);
	cr_assert_eq(json_num(json, "cpu"), samples * 10000000, "%s: %s", in->bin, json);
	cr_assert_eq(json_num(json, "inconsistent"), 0, "%s: values[1] != values[0] * period",
		     in->bin);
	cr_assert_eq(json_num(json, "dangling"), 0, "%s: dangling location or function ids",
		     in->bin);
	cr_assert_eq(json_num(json, "unthreaded"), 0, "%s: samples without a thread label: %s",
		     in->bin, json);
	cr_assert(strstr(json, "\"string0\":\"\""), "%s: string_table[0] is not empty", in->bin);
	cr_assert(strstr(json, "\"period_type\":\"cpu/nanoseconds\""), "%s: %s", in->bin, json);
	cr_assert(strstr(json, "\"sample_types\":[\"samples/count\",\"cpu/nanoseconds\"]"),
		  "%s: %s", in->bin, json);
	cr_assert(json_has(json, "functions", work), "%s: no %s in %s", in->bin, work, json);
	cr_assert(json_has(json, "label_keys", "thread"), "%s: %s", in->bin, json);
	free(json);
}

Test(consume_pprof, python, .timeout = 120)
{
	check_seed(&test_pythons[1], "seed.py", "work");
}

Test(consume_pprof, ruby, .timeout = 120)
{
	check_seed(&test_rubies[1], "seed.rb", "Object#work");
}
