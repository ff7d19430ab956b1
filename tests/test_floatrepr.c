/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/floatrepr.h"

#define NVALUES 4000

/* Doubles of every kind: specials, boundaries of fixed notation, round and random bits. */
static size_t values(double *v)
{
	static const double fixed[] = {
		0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1.5, 100.0, 1e-4, 9.999e-5, 1e-5, 1e15,
		9999999999999998.0, 1e16, 1e17, 123456789012345678.0, 1e22, 1e-300, 5e-324,
		1.7976931348623157e308, 2.2250738585072014e-308, 0.30000000000000004,
	};
	size_t n = 0;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		v[n++] = fixed[i];
	v[n++] = NAN;
	v[n++] = INFINITY;
	v[n++] = -INFINITY;
	for (double p = 1e-20; p < 1e21; p *= 10, n++)
		v[n] = p * (n & 1 ? -3.25 : 7.0);
	while (n < NVALUES) {
		uint64_t bits;
		double d;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		/* half with the exponent near 0 (fixed notation), half anywhere */
		bits = n & 1 ? x : (x & 0x800fffffffffffffull) | (uint64_t)(1023 - 20 + x % 60) << 52;
		memcpy(&d, &bits, sizeof(d));
		if (isnan(d))
			continue;
		v[n++] = d;
	}
	return n;
}

/* The interpreter's own spelling of each value, one a line, read from a pipe. */
static void compare_with(const char *cmd, enum float_style style)
{
	static double v[NVALUES];
	char in[] = "/tmp/pyrospy-floatrepr-XXXXXX", line[128], mine[64];
	size_t n = values(v), i = 0;
	char run[256];
	FILE *f, *p;
	int fd;

	fd = mkstemp(in);
	cr_assert(fd >= 0);
	f = fdopen(fd, "w");
	for (size_t k = 0; k < n; k++) {
		uint64_t bits;

		memcpy(&bits, &v[k], sizeof(bits));
		fprintf(f, "%016" PRIx64 "\n", bits);
	}
	fclose(f);
	snprintf(run, sizeof(run), "%s < %s", cmd, in);
	p = popen(run, "r");
	cr_assert(p);
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		cr_assert(i < n);
		float_repr(v[i], style, mine, sizeof(mine));
		cr_expect_str_eq(mine, line, "value %zu: %s, the interpreter says %s", i, mine, line);
		i++;
	}
	cr_assert_eq(pclose(p), 0);
	unlink(in);
	cr_assert_eq(i, n, "%zu of %zu values read back", i, n);
}

Test(floatrepr, python_repr)
{
	compare_with("python3 -c 'import sys, struct\n"
		     "for l in sys.stdin: print(repr(struct.unpack(\"<d\", bytes.fromhex(l.strip())[::-1])[0]))'",
		     FLOAT_PYTHON);
}

Test(floatrepr, ruby_inspect)
{
	compare_with("ruby -e 'STDIN.each_line { |l| puts [l.strip].pack(\"H*\").reverse.unpack1(\"E\").inspect }'",
		     FLOAT_RUBY);
}
