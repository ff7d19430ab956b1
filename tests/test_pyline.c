/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "python/pyline.h"

Test(pyline, lnotab_by_hand)
{
	/* line 10 at 0, +2 bytes -> line 11, +4 bytes -> line 9 (negative delta) */
	const uint8_t tab[] = { 2, 1, 4, (uint8_t)-2 };

	cr_assert_eq(pyline_lnotab(tab, 4, 10, 0), 10);
	cr_assert_eq(pyline_lnotab(tab, 4, 10, 2), 11);
	cr_assert_eq(pyline_lnotab(tab, 4, 10, 5), 11);
	cr_assert_eq(pyline_lnotab(tab, 4, 10, 6), 9);
	cr_assert_eq(pyline_lnotab(tab, 3, 10, 100), 11, "odd length: last half pair ignored");
	cr_assert_eq(pyline_lnotab(NULL, 0, 7, 100), 7);
}

Test(pyline, linetable_no_line_keeps_range)
{
	/* [0,4) line 1, [4,6) no line, [6,10) line 3 */
	const uint8_t tab[] = { 4, 1, 2, 0x80, 4, 2 };

	cr_assert_eq(pyline_linetable(tab, 6, 0, 0), 1);
	cr_assert_eq(pyline_linetable(tab, 6, 0, 4), -1);
	cr_assert_eq(pyline_linetable(tab, 6, 0, 6), 3, "the no-line range still has a length");
	cr_assert_eq(pyline_linetable(tab, 6, 0, 10), -1);
}

Test(pyline, locations_hostile)
{
	uint8_t tab[256];

	/* varint that never ends */
	memset(tab, 0xff, sizeof(tab));
	tab[0] = 0x80 | 13 << 3;
	cr_assert_eq(pyline_locations(tab, sizeof(tab), 1, 5), -1);
	/* not an entry header */
	tab[0] = 0x01;
	cr_assert_eq(pyline_locations(tab, 1, 1, 0), -1);
	/* a long form cut short */
	tab[0] = 0x80 | 14 << 3;
	cr_assert_eq(pyline_locations(tab, 1, 1, 0), -1);
	cr_assert_eq(pyline_locations(NULL, 0, 1, 0), -1);
}

static uint8_t *unhex(const char *s, size_t *len)
{
	size_t n = strlen(s) / 2;
	uint8_t *b = malloc(n + 1);

	if (!strcmp(s, "-"))
		n = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned int v;

		sscanf(s + 2 * i, "%2x", &v);
		b[i] = (uint8_t)v;
	}
	*len = n;
	return b;
}

/*
 * The decoders against CPython's own mapping, offset by offset, over whole
 * stdlib modules, on every Python of the test matrix.
 */
ParameterizedTestParameters(pyline, matches_cpython)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

ParameterizedTest(size_t *idx, pyline, matches_cpython, .timeout = 120)
{
	const struct interp *in = &test_pythons[*idx];
	const char *script = test_target_for(in, "linetable.py");
	char cmd[2048], line[1 << 16];
	unsigned long checked = 0, wrong = 0, codes = 0;
	uint8_t *tab = NULL;
	size_t tablen = 0;
	int first = 0;
	char kind[16] = "";
	FILE *f;

	if (in->root)
		snprintf(cmd, sizeof(cmd), "chroot %s/%s %s %s", test_chroots(), in->root, in->bin,
			 script);
	else
		snprintf(cmd, sizeof(cmd), "%s %s", in->bin, script);
	f = popen(cmd, "r");
	cr_assert(f);
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == 'C') {
			char hex[sizeof(line)];

			free(tab);
			cr_assert_eq(sscanf(line, "C %d %s %15s", &first, hex, kind), 3);
			tab = unhex(hex, &tablen);
			codes++;
		} else if (line[0] == 'O') {
			long off;
			int want, got;

			cr_assert_eq(sscanf(line, "O %ld %d", &off, &want), 2);
			if (!strcmp(kind, "lnotab"))
				got = pyline_lnotab(tab, tablen, first, off);
			else if (!strcmp(kind, "linetable"))
				got = pyline_linetable(tab, tablen, first, off);
			else
				got = pyline_locations(tab, tablen, first, off / 2);
			checked++;
			if (got != want && wrong++ < 5)
				cr_log_error("%s: offset %ld: want line %d, got %d", in->bin, off,
					     want, got);
		}
	}
	free(tab);
	cr_assert_eq(pclose(f), 0, "%s failed", cmd);
	cr_assert_gt(codes, 100, "%s: only %lu code objects", in->bin, codes);
	cr_assert_gt(checked, 10000);
	cr_assert_eq(wrong, 0, "%s: %lu of %lu offsets wrong", in->bin, wrong, checked);
}
