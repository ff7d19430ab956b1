/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "python/pyvm.h"
#include "ruby/rubyvm.h"

/* The value of "key: ..." in out, as a " v1 v2 ... " string (caller frees). */
static char *line_of(const char *out, const char *key)
{
	char want[32], *v;
	const char *p;
	size_t len;

	snprintf(want, sizeof(want), "\n%s: ", key);
	p = strstr(out, want);
	cr_assert_not_null(p, "no '%s:' line in:\n%s", key, out);
	p += strlen(want);
	len = strcspn(p, "\n");
	v = malloc(len + 3);
	cr_assert_not_null(v);
	snprintf(v, len + 3, " %.*s ", (int)len, p);
	return v;
}

static int lists(const char *line, unsigned int major, unsigned int minor)
{
	char v[32];

	snprintf(v, sizeof(v), " %u.%u ", major, minor);
	return strstr(line, v) != NULL;
}

/*
 * pyrospy --version names exactly the Python and Ruby versions it has a
 * layout for, and so every interpreter of the test matrix.
 */
Test(version, names_the_interpreters)
{
	const char *args[] = { "--version", NULL };
	char *out, *err, *py, *rb;

	cr_assert_eq(test_pyrospy(args, &out, &err), 0, "%s", err);
	cr_assert_eq(strncmp(out, "pyrospy " PACKAGE_VERSION "\n", strlen(PACKAGE_VERSION) + 9), 0,
		     "%s", out);
	py = line_of(out, "python");
	rb = line_of(out, "ruby");
	for (unsigned int minor = 0; minor < 40; minor++)
		cr_assert_eq(lists(py, 3, minor), pyvm_find(minor) != NULL,
			     "3.%u: layout %s, --version says:%s", minor,
			     pyvm_find(minor) ? "known" : "unknown", py);
	for (unsigned int major = 1; major < 6; major++)
		for (unsigned int minor = 0; minor < 10; minor++) {
			int known = rubyvm_find(RUBYVM_VERSION(major, minor, 99)) != NULL;

			cr_assert_eq(lists(rb, major, minor), known,
				     "%u.%u: layout %s, --version says:%s", major, minor,
				     known ? "known" : "unknown", rb);
		}
	for (size_t i = 0; i < test_npythons; i++)
		cr_assert(lists(py, test_pythons[i].major, test_pythons[i].minor), "%s:%s",
			  test_pythons[i].bin, py);
	for (size_t i = 0; i < test_nrubies; i++)
		cr_assert(lists(rb, test_rubies[i].major, test_rubies[i].minor), "%s:%s",
			  test_rubies[i].bin, rb);
	free(py);
	free(rb);
	free(out);
	free(err);
}
