/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

/*
 * Targets that die, stop or go very deep while being profiled: pyrospy
 * neither crashes nor hangs, writes what it sampled, and says what
 * happened.
 */

/* record the target for secs while `act' (a shell command on $0, the pid) runs beside */
static int record_while(const struct interp *in, const char *script, const char *act,
			const char *secs, char **out, char **err)
{
	const char *sargs[] = { test_target_for(in, script), NULL };
	char ready[64], pidbuf[32], cmd[512];
	const char *wrap[] = { "sh", "-c", cmd, pidbuf, NULL };
	const char *args[] = { "record", "--pid", pidbuf, "-d", secs, "-f", "folded", "-o", "-",
			       NULL };
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int st;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	/* sh runs the action in the background and becomes pyrospy */
	snprintf(cmd, sizeof(cmd), "(%s) & exec \"$@\"", act);
	st = test_pyrospy_wrapped(wrap, args, out, err);
	test_stop(pid);
	return st;
}

static void killed(const struct interp *in, const char *script, const char *leaf)
{
	char *out, *err;
	int st = record_while(in, script, "sleep 1.5; kill -9 $0", "20", &out, &err);

	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_not_null(strstr(err, "exited; writing what was sampled"), "%s: %s", in->bin, err);
	cr_assert_gt(test_folded_count(out, leaf), 50, "%s: profile so far lost:\n%s", in->bin,
		     out);
	free(out);
	free(err);
}

Test(dying, python_killed_mid_profile, .timeout = 60)
{
	killed(&test_pythons[1], "seed.py", "work (");
}

Test(dying, ruby_killed_mid_profile, .timeout = 60)
{
	killed(&test_rubies[1], "seed.rb", "Object#work (");
}

/* SIGSTOP then SIGCONT: sampling goes on and ends on time. */
static void stopped(const struct interp *in, const char *script, const char *leaf)
{
	char *out, *err;
	int st = record_while(in, script, "sleep 1; kill -STOP $0; sleep 1; kill -CONT $0", "3",
			      &out, &err);

	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_gt(test_folded_count(out, leaf), 50, "%s:\n%s\n%s", in->bin, out, err);
	free(out);
	free(err);
}

Test(dying, python_stopped_and_continued, .timeout = 60)
{
	stopped(&test_pythons[1], "seed.py", "work (");
}

Test(dying, ruby_stopped_and_continued, .timeout = 60)
{
	stopped(&test_rubies[1], "seed.rb", "Object#work (");
}

/* 10 000 frames: the leaf-most 4096 are kept, under a [truncated] mark. */
Test(dying, python_ten_thousand_deep, .timeout = 60)
{
	const char *extra[] = { "-r", "50", "-d", "2", NULL };
	const char *path;
	char *out = test_profile(&test_pythons[1], "deep.py", extra, &path);

	cr_assert_gt(test_folded_count(out, "[truncated];rec ("), 10, "%.2000s", out);
	cr_assert_gt(test_folded_count(out, ";spin ("), 10, "%.2000s", out);
	free(out);
}
