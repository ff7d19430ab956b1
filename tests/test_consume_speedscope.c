/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

/*
 * A real profile written as speedscope JSON validates against the schema
 * shipped in the speedscope npm package (with ajv), one profile per
 * thread, and its weights add up to the samples pyrospy took.
 */
static void check(const struct interp *in, const char *script, const char *fn)
{
	const char *extra[] = { "-r", "100", "-d", "2", "-f", "speedscope", NULL };
	char file[64], cmd[512], want[128], *err, *out;
	unsigned long samples = 0;
	int st;

	snprintf(file, sizeof(file), "/tmp/pyrospy-test-%d.json", (int)getpid());
	st = test_record_to(in, script, extra, file, &err);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_not_null(strstr(err, "wrote speedscope profile"), "%s", err);
	samples = test_samples_written(err);
	snprintf(cmd, sizeof(cmd), "cd %s && node validate-speedscope.js %s", TEST_CONSUMERS,
		 file);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: not valid: %s", in->bin, out);
	cr_assert_not_null(strstr(out, "\"valid\":true"), "%s", out);
	cr_assert_not_null(strstr(out, "\"profiles\":[\"thread ("), "%s", out);
	snprintf(want, sizeof(want), "\"%s\"", fn);
	cr_assert_not_null(strstr(out, want), "%s: no %s in %s", in->bin, fn, out);
	snprintf(want, sizeof(want), "\"weights\":%lu0000000,", samples);
	cr_assert(samples > 150 && strstr(out, want), "%s: %lu samples, %s", in->bin, samples, out);
	unlink(file);
	free(out);
	free(err);
}

Test(consume_speedscope, python_validates, .timeout = 120)
{
	check(&test_pythons[1], "seed.py", "work");
}

Test(consume_speedscope, ruby_validates, .timeout = 120)
{
	check(&test_rubies[1], "seed.rb", "Object#work");
}
