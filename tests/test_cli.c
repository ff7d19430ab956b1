/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

/* One line "pyrospy: error: ..." then one "hint: ..." line, and nothing else. */
static void assert_error_hint(const char *err, const char *what)
{
	const char *nl = strchr(err, '\n');

	cr_assert(!strncmp(err, "pyrospy: error: ", 16), "%s: stderr is '%s'", what, err);
	cr_assert_not_null(nl, "%s", what);
	cr_assert(!strncmp(nl + 1, "hint: ", 6), "%s: no hint in '%s'", what, err);
	nl = strchr(nl + 1, '\n');
	cr_assert(nl && nl[1] == '\0', "%s: more than two lines: '%s'", what, err);
}

struct bad_case {
	const char *args[12];
};

Test(cli, bad_options_exit_2)
{
	static const struct bad_case cases[] = {
		{ { "record", "--pid", "1", "--rate", "0", NULL } },
		{ { "record", "--pid", "1", "--rate", "abc", NULL } },
		{ { "record", "--pid", "1", "--rate", "100000", NULL } },
		{ { "record", "--pid", "1", "--duration", "-1", NULL } },
		{ { "record", "--pid", "1", "--duration", "nan", NULL } },
		{ { "record", "--pid", "1", "--format", "nope", NULL } },
		{ { "record", "--pid", "x1", NULL } },
		{ { "record", "--pid", "-5", NULL } },
		{ { "record", NULL } },
		{ { "record", "--pid", NULL } },
		{ { "record", "--pid", "1", "--bogus", NULL } },
		{ { "record", "--pid", "1", "extra", NULL } },
		{ { "exec", NULL } },
		{ { "exec", "--", NULL } },
		{ { "frobnicate", NULL } },
		{ { "record", "--pid", "1", "--protocol", "grpc", NULL } },
		{ { "record", "--pid", "1", "--ingest-format", "json", NULL } },
		{ { "record", "--pid", "1", "--server", "http://h:1", "--app-name", "a", "--protocol",
		    "push", "--ingest-format", "trie", NULL } },
		{ { "record", "--pid", "1", "--server", "http://h:1", "--app-name", "a", "--protocol",
		    "otlp", "--ingest-format", "pprof", NULL } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out, *err;
		int st = test_pyrospy(cases[i].args, &out, &err);

		cr_assert_eq(st, 2, "case %zu (%s %s): exit %d, stderr '%s'", i, cases[i].args[0],
			     cases[i].args[1] ? cases[i].args[1] : "", st, err);
		assert_error_hint(err, cases[i].args[0]);
		free(out);
		free(err);
	}
}

Test(cli, help_and_version)
{
	const char *v[] = { "--version", NULL };
	const char *h[] = { "help", "record", NULL };
	char *out, *err;

	cr_assert_eq(test_pyrospy(v, &out, &err), 0);
	cr_assert(!strncmp(out, "pyrospy ", 8));
	free(out);
	free(err);
	cr_assert_eq(test_pyrospy(h, &out, &err), 0);
	cr_assert_not_null(strstr(out, "--rate"));
	free(out);
	free(err);
	/* help dump: the asyncio tasks and the frames' variables */
	h[1] = "dump";
	cr_assert_eq(test_pyrospy(h, &out, &err), 0);
	cr_assert(strstr(out, "\n      --tasks ") && strstr(out, "\n      --locals "), "%s", out);
	free(out);
	free(err);
}

/* Every long option any command's help lists is documented in the man page. */
Test(cli, man_page_lists_every_option)
{
	static const char *const cmds[] = { "record", "exec", "dump", "top", "serve", "report",
					    "diff" };
	const char *h[] = { "help", NULL, NULL };
	char *out, *err, man[4096], *page;
	size_t len;
	FILE *f;
	const char *p;

	snprintf(man, sizeof(man), "%s/man/pyrospy.1", SRCDIR);
	f = fopen(man, "r");
	cr_assert_not_null(f);
	page = malloc(1 << 20);
	len = fread(page, 1, (1 << 20) - 1, f);
	page[len] = '\0';
	fclose(f);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
	h[1] = cmds[i];
	cr_assert_eq(test_pyrospy(h, &out, &err), 0);
	for (p = out; (p = strstr(p, "--")); ) {
		char opt[64], want[80];
		size_t n = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");

		if (n == 0 || n > 40) {
			p += 2;
			continue;
		}
		snprintf(opt, sizeof(opt), "%.*s", (int)n, p + 2);
		/* man pages escape dashes: \-\-rate */
		snprintf(want, sizeof(want), "\\-\\-%s", opt);
		for (char *c = want + 4; *c; c++)
			if (*c == '-') {
				memmove(c + 1, c, strlen(c) + 1);
				*c = '\\';
				c++;
			}
		cr_assert_not_null(strstr(page, want), "--%s is not in man/pyrospy.1", opt);
		p += 2 + n;
	}
	free(out);
	free(err);
	}
	free(page);
}
