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
 * Every ractor's threads: tests/targets/ractors.rb runs two ractors
 * besides the main one, each spinning in a method of its own
 * (ractor_spin_one, ractor_spin_two).  Their stacks must show in dump,
 * each in a thread of its own that says its ractor's number, and in
 * record, under a ractor=N tag (a pprof label).  Ractors exist from 3.0.
 */

static size_t rubies_with_ractors(size_t *idx)
{
	size_t n = 0;

	for (size_t i = 0; i < test_nrubies && n < 64; i++)
		if (test_rubies[i].major >= 3)
			idx[n++] = i;
	return n;
}

ParameterizedTestParameters(ractors, dump)
{
	static size_t idx[64];
	size_t n = rubies_with_ractors(idx);

	return cr_make_param_array(size_t, idx, n);
}

/* The ractor number of the dump thread whose stack has method; 0 if none. */
static unsigned int ractor_of(const char *out, const char *method, int *tid)
{
	const char *m = strstr(out, method), *t = NULL;
	unsigned int r = 0;

	if (!m)
		return 0;
	for (const char *p = out; (p = strstr(p, "\nThread ")) && p < m; p++)
		t = p;
	cr_assert_not_null(t, "no thread before %s in:\n%s", method, out);
	if (sscanf(t, "\nThread %d (ractor %u,", tid, &r) != 2)
		return 0;
	return r;
}

ParameterizedTest(size_t *i, ractors, dump, .timeout = 60)
{
	const struct interp *in = &test_rubies[*i];
	const char *sargs[] = { test_target_for(in, "ractors.rb"), NULL };
	char ready[256], pidbuf[32], *out, *err;
	const char *args[] = { "dump", "--pid", pidbuf, NULL };
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	unsigned int r1, r2;
	int st, t1 = 0, t2 = 0;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_not_null(strstr(out, "\n    Object#ractor_spin_one ("), "%s: no ractor one:\n%s",
			   in->bin, out);
	cr_assert_not_null(strstr(out, "\n    Object#ractor_spin_two ("), "%s: no ractor two:\n%s",
			   in->bin, out);
	cr_assert_not_null(strstr(out, "\n    Kernel#sleep ("), "%s: no main thread:\n%s", in->bin,
			   out);
	r1 = ractor_of(out, "Object#ractor_spin_one", &t1);
	r2 = ractor_of(out, "Object#ractor_spin_two", &t2);
	/* the main ractor is 1; the others count up from 2 */
	cr_assert(r1 >= 2 && r2 >= 2 && r1 != r2, "%s: ractors %u and %u:\n%s", in->bin, r1, r2,
		  out);
	cr_assert(t1 > 0 && t2 > 0 && t1 != t2 && t1 != pid && t2 != pid,
		  "%s: thread ids %d and %d (main %d):\n%s", in->bin, t1, t2, (int)pid, out);
	free(out);
	free(err);
}

ParameterizedTestParameters(ractors, record)
{
	static size_t idx[64];
	size_t n = rubies_with_ractors(idx);

	return cr_make_param_array(size_t, idx, n);
}

/* record: each ractor's stacks under its ractor=N tag; a pprof label "ractor". */
ParameterizedTest(size_t *i, ractors, record, .timeout = 90)
{
	const struct interp *in = &test_rubies[*i];
	const char *sargs[] = { test_target_for(in, "ractors.rb"), NULL };
	char ready[256], pidbuf[32], dir[64], pb[128], cmd[1024], json[65536], *out, *err;
	const char *args[] = { "record", "--pid", pidbuf, "-d", "2", "-f", "folded", "-o", "-",
			       "--raw", NULL, NULL };
	const char *conv[] = { "report", NULL, "-f", "pprof", "-o", pb, NULL };
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	unsigned long one = 0, two = 0, untagged = 0;
	char raw[128];
	size_t len;
	FILE *p;
	int st;

	snprintf(dir, sizeof(dir), "/tmp/pyrospy-ractors-XXXXXX");
	cr_assert(mkdtemp(dir), "mkdtemp");
	snprintf(raw, sizeof(raw), "%s/rec.raw", dir);
	snprintf(pb, sizeof(pb), "%s/rec.pb.gz", dir);
	args[10] = raw;
	conv[1] = raw;
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
		char *sp = strrchr(l, ' ');
		unsigned long n = sp ? strtoul(sp + 1, NULL, 10) : 0;

		if (strstr(l, "Object#ractor_spin_one (") || strstr(l, "Object#ractor_spin_two (")) {
			if (strncmp(l, "{ractor=", 8) || l[8] < '2' || l[8] > '9')
				untagged += n;
			else if (strstr(l, "ractor_spin_one"))
				one += n;
			else
				two += n;
		}
	}
	cr_assert(one >= 50 && two >= 50 && !untagged,
		  "%s: samples of ractor one %lu, two %lu, without their tag %lu", in->bin, one,
		  two, untagged);
	free(out);
	free(err);
	/* the same samples as pprof, read by a real consumer: a "ractor" label */
	st = test_pyrospy(conv, &out, &err);
	cr_assert_eq(st, 0, "%s: report: exit %d: %s", in->bin, st, err);
	free(out);
	free(err);
	snprintf(cmd, sizeof(cmd), "node '%s/tests/consumers/decode-pprof.js' '%s' 2>&1", SRCDIR,
		 pb);
	p = popen(cmd, "r");
	cr_assert(p, "cannot run node");
	len = fread(json, 1, sizeof(json) - 1, p);
	json[len] = '\0';
	cr_assert_eq(pclose(p), 0, "decode-pprof.js: %s", json);
	cr_assert_not_null(strstr(json, "\"label_keys\":["), "%s", json);
	cr_assert_not_null(strstr(strstr(json, "\"label_keys\":["), "\"ractor\""),
			   "%s: no ractor label: %s", in->bin, json);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}
