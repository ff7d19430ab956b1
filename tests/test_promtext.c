/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "util/promtext.h"

/* The Prometheus text format of the agent's /metrics (src/util/promtext.c). */

Test(promtext, family_and_samples)
{
	struct promtext pt;

	promtext_init(&pt);
	promtext_family(&pt, "pyrospy_ticks_total", "counter", "ticks\ntaken \\ here");
	promtext_u64(&pt, "pyrospy_ticks_total", NULL, NULL, 18446744073709551615ull);
	promtext_u64(&pt, "pyrospy_ticks_total", "reason", "gone", 0);
	promtext_f64(&pt, "process_cpu_seconds_total", NULL, NULL, 0.25);
	promtext_f64(&pt, "x", NULL, NULL, NAN);
	promtext_f64(&pt, "x", NULL, NULL, -INFINITY);
	cr_assert_str_eq(pt.s, "# HELP pyrospy_ticks_total ticks\\ntaken \\\\ here\n"
			       "# TYPE pyrospy_ticks_total counter\n"
			       "pyrospy_ticks_total 18446744073709551615\n"
			       "pyrospy_ticks_total{reason=\"gone\"} 0\n"
			       "process_cpu_seconds_total 0.25\n"
			       "x NaN\n"
			       "x -Inf\n");
	cr_assert_eq(pt.len, strlen(pt.s));
	promtext_release(&pt);
}

/* A hostile label value: quotes and backslashes escaped, no raw newline, bytes made UTF-8, cut. */
Test(promtext, label_value_escaped)
{
	struct promtext pt;
	char big[1000];

	promtext_init(&pt);
	promtext_u64(&pt, "m", "reason", "a\"b\\c\nd\xff}", 1);
	cr_assert_str_eq(pt.s, "m{reason=\"a\\\"b\\\\c?d?}\"} 1\n");
	promtext_release(&pt);

	memset(big, 'v', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	promtext_init(&pt);
	promtext_u64(&pt, "m", "l", big, 2);
	cr_assert_eq(pt.len, strlen("m{l=\"\"} 2\n") + PROMTEXT_MAX_VALUE);
	promtext_release(&pt);
}

/* Grows past its first buffer whole. */
Test(promtext, grows)
{
	struct promtext pt;

	promtext_init(&pt);
	for (int i = 0; i < 2000; i++)
		promtext_u64(&pt, "pyrospy_samples_total", "reason", "unlabelled", (uint64_t)i);
	cr_assert_eq(pt.len, strlen(pt.s));
	cr_assert(strstr(pt.s, "pyrospy_samples_total{reason=\"unlabelled\"} 1999\n"));
	promtext_release(&pt);
}
