/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/promtext.h"
#include "util/utf8.h"
#include "util/xalloc.h"

void promtext_init(struct promtext *pt)
{
	pt->cap = 4096;
	pt->s = xmalloc(pt->cap);
	pt->s[0] = '\0';
	pt->len = 0;
}

void promtext_release(struct promtext *pt)
{
	free(pt->s);
	pt->s = NULL;
	pt->len = pt->cap = 0;
}

static void put(struct promtext *pt, const char *s, size_t n)
{
	if (pt->len + n + 1 > pt->cap) {
		while (pt->len + n + 1 > pt->cap)
			pt->cap *= 2;
		pt->s = xrealloc(pt->s, pt->cap);
	}
	memcpy(pt->s + pt->len, s, n);
	pt->len += n;
	pt->s[pt->len] = '\0';
}

static void puts_(struct promtext *pt, const char *s)
{
	put(pt, s, strlen(s));
}

/* s with backslash and newline escaped, and with quote too when in a label value */
static void escaped(struct promtext *pt, const char *s, int quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			puts_(pt, "\\\\");
		else if (*s == '\n')
			puts_(pt, "\\n");
		else if (*s == '"' && quote)
			puts_(pt, "\\\"");
		else
			put(pt, s, 1);
	}
}

void promtext_family(struct promtext *pt, const char *name, const char *type, const char *help)
{
	puts_(pt, "# HELP ");
	puts_(pt, name);
	puts_(pt, " ");
	escaped(pt, help, 0);
	puts_(pt, "\n# TYPE ");
	puts_(pt, name);
	puts_(pt, " ");
	puts_(pt, type);
	puts_(pt, "\n");
}

static void series(struct promtext *pt, const char *name, const char *label, const char *value)
{
	puts_(pt, name);
	if (label) {
		/* sanitized: never longer, no control characters left (a newline is '?') */
		char clean[PROMTEXT_MAX_VALUE + 1];
		size_t n = strlen(value);

		if (n > PROMTEXT_MAX_VALUE)
			n = PROMTEXT_MAX_VALUE;
		utf8_sanitize(clean, sizeof(clean), value, n);
		puts_(pt, "{");
		puts_(pt, label);
		puts_(pt, "=\"");
		escaped(pt, clean, 1);
		puts_(pt, "\"}");
	}
	puts_(pt, " ");
}

void promtext_u64(struct promtext *pt, const char *name, const char *label, const char *value,
		  uint64_t v)
{
	char num[32];

	series(pt, name, label, value);
	snprintf(num, sizeof(num), "%" PRIu64 "\n", v);
	puts_(pt, num);
}

void promtext_f64(struct promtext *pt, const char *name, const char *label, const char *value,
		  double v)
{
	char num[64];

	series(pt, name, label, value);
	if (isnan(v))
		snprintf(num, sizeof(num), "NaN\n");
	else if (isinf(v))
		snprintf(num, sizeof(num), v > 0 ? "+Inf\n" : "-Inf\n");
	else
		snprintf(num, sizeof(num), "%.17g\n", v);
	puts_(pt, num);
}
