/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

/*
 * dump --locals on Ruby against what the program itself says of its
 * locals: tests/targets/locals.rb sleeps in hold() holding arguments
 * (plain, optional, rest, keyword, keyword rest), nil, booleans, fixnums,
 * bignums (short and long), flonums and heap floats, static and dynamic
 * Symbols, Strings (embedded and not, escapes, UTF-8 cut at 64 bytes,
 * binary), Arrays and Hashes (small and large), an instance, a String
 * subclass and a class, and reports each one's class and inspect
 * (bounded as pyrospy(1) says) from binding.local_variables.
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

ParameterizedTestParameters(rblocals, dump)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, rblocals, dump, .timeout = 60)
{
	const struct interp *in = &test_rubies[*i];
	const char *sargs[] = { test_target_for(in, "locals.rb"), NULL };
	char ready[16384], pidbuf[32], name[128], type[128], repr[512], want[1024], *out, *err;
	char *hold, *end;
	const char *args[] = { "dump", "--pid", pidbuf, "--locals", NULL };
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	const char *p;
	int st, n = 0, shown = 0;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	/* without --locals, none */
	args[3] = NULL;
	st = test_pyrospy(args, &out, &err);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_not_null(strstr(out, "\n    Object#hold ("), "%s: %s", in->bin, out);
	cr_assert_null(strstr(out, "\n        "), "%s: locals without --locals:\n%s", in->bin, out);
	free(out);
	free(err);
	args[3] = "--locals";
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	/* hold()'s frame: its line, then its locals, up to the next frame */
	hold = strstr(out, "\n    Object#hold (");
	cr_assert_not_null(hold, "%s: no hold() frame in:\n%s", in->bin, out);
	end = strstr(hold + 1, "\n    <main> (");
	cr_assert_not_null(end, "%s: no <main> frame after hold() in:\n%s", in->bin, out);
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
	cr_assert_geq(n, 35, "%s: the target reported %d locals", in->bin, n);
	/* nothing more: the VM's hidden locals are left out, as Ruby leaves them */
	for (p = hold; (p = strstr(p, "\n        ")); p++)
		shown++;
	cr_assert_eq(shown, n, "%s: %d locals shown, the program has %d:\n%s", in->bin, shown, n,
		     hold);
	/* the block above it has none of its own (its outer ones are hold()'s) */
	*hold = '\0';
	p = strstr(out, "\n    block in Object#hold (");
	cr_assert_not_null(p, "%s: no block in hold() in:\n%s", in->bin, out);
	p = strchr(p + 1, '\n');
	cr_assert(p && strncmp(p, "\n        ", 9), "%s: locals under the block:\n%s", in->bin,
		  out);
	free(out);
	free(err);
}
