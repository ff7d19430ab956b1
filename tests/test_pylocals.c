/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

/*
 * dump --locals against what the program itself says of its locals:
 * tests/targets/locals.py sleeps in hold() holding None, bools, small and
 * large ints, floats, str and bytes (short, long, with quotes, escapes and
 * non-ASCII), containers and an instance, and reports each one's type and
 * repr() (bounded as pyrospy(1) says).
 */

static void unhex(const char *s, size_t n, char *out, size_t cap)
{
	size_t i;

	cr_assert(n % 2 == 0 && n / 2 < cap, "bad hex %.*s", (int)n, s);
	for (i = 0; i < n / 2; i++) {
		unsigned int b;

		cr_assert(sscanf(s + 2 * i, "%2x", &b) == 1);
		out[i] = (char)b;
	}
	out[i] = '\0';
}

ParameterizedTestParameters(pylocals, dump)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons_any),
				   test_npythons_any);
}

ParameterizedTest(size_t *i, pylocals, dump, .timeout = 60)
{
	const struct interp *in = test_python_any(*i);
	const char *sargs[] = { test_target_for(in, "locals.py"), NULL };
	char ready[16384], pidbuf[32], name[128], type[128], repr[512], want[1024], *out, *err;
	char *hold, *end;
	const char *args[] = { "dump", "--pid", pidbuf, "--locals", NULL };
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	const char *p;
	int st, n = 0;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	/* hold()'s frame: its line, then its locals, up to the next frame */
	hold = strstr(out, "\n    hold (");
	cr_assert_not_null(hold, "%s: no hold() frame in:\n%s", in->bin, out);
	end = strstr(hold + 1, "\n    <module> (");
	cr_assert_not_null(end, "%s: no <module> frame after hold() in:\n%s", in->bin, out);
	end[1] = '\0';
	p = strchr(ready, '\t');
	cr_assert_not_null(p, "ready line: %s", ready);
	for (p++; *p && *p != '\n'; n++) {
		const char *c1 = strchr(p, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *q;

		cr_assert(c1 && c2, "ready line: %s", ready);
		q = c2 + strcspn(c2, "\t\n");
		unhex(p, (size_t)(c1 - p), name, sizeof(name));
		unhex(c1 + 1, (size_t)(c2 - c1 - 1), type, sizeof(type));
		unhex(c2 + 1, (size_t)(q - c2 - 1), repr, sizeof(repr));
		cr_assert(snprintf(want, sizeof(want), "\n        %s: %s = %s\n", name, type,
				   repr) < (int)sizeof(want));
		cr_assert_not_null(strstr(hold, want), "%s: no '%s' under hold() in:\n%s", in->bin,
				   want + 1, hold);
		p = *q == '\t' ? q + 1 : q;
	}
	cr_assert_geq(n, 25, "%s: the target reported %d locals", in->bin, n);
	/* locals are shown under frames only: the <module> frame has none */
	cr_assert_null(strstr(end + 2, "\n        "), "%s: locals at module level:\n%s", in->bin,
		       end + 2);
	free(out);
	free(err);
}

/* Without --locals, dump shows none. */
Test(pylocals, off_by_default, .timeout = 60)
{
	const struct interp *in = &test_pythons[1];
	const char *sargs[] = { test_target_for(in, "locals.py"), NULL };
	char ready[16384], pidbuf[32], *out, *err;
	const char *args[] = { "dump", "--pid", pidbuf, NULL };
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int st;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_not_null(strstr(out, "\n    hold ("), "%s", out);
	cr_assert_null(strstr(out, "\n        "), "locals without --locals:\n%s", out);
	free(out);
	free(err);
}
