/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PROMTEXT_H
#define PYROSPY_PROMTEXT_H

#include <stddef.h>
#include <stdint.h>

/*
 * The Prometheus text exposition format, version 0.0.4: a family's
 * "# HELP" and "# TYPE" lines, then its samples, "name{label="value"} v".
 * Names are the caller's (constants); a label value may hold anything
 * and is cut, made valid UTF-8 without control characters (utf8.h:
 * a newline becomes '?'), then escaped (\\ and \").
 */

#define PROMTEXT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define PROMTEXT_MAX_VALUE 256	/* bytes of a label value, before escaping */

struct promtext {
	char *s;	/* NUL-terminated */
	size_t len, cap;
};

void promtext_init(struct promtext *pt);
void promtext_release(struct promtext *pt);

/* The HELP (escaped: \\ and \n) and TYPE ("counter", "gauge") lines of name. */
void promtext_family(struct promtext *pt, const char *name, const char *type, const char *help);

/* A sample of name; label NULL for none, else label="value". */
void promtext_u64(struct promtext *pt, const char *name, const char *label, const char *value,
		  uint64_t v);
void promtext_f64(struct promtext *pt, const char *name, const char *label, const char *value,
		  double v);

#endif
