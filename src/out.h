/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_OUT_H
#define PYROSPY_OUT_H

#include <stdio.h>

struct profile;

/* What a writer may say about the run, besides the samples. */
struct out_meta {
	const char *title;	/* command or "pid N" */
	double duration;	/* seconds */
	unsigned int rate;	/* samples per second asked */
};

/*
 * One output format.  write() emits the whole profile to f and returns 0,
 * or -1 with errno set when writing failed.  Adding a format is adding one
 * file with one of these and a line in out.c.
 */
struct out_ops {
	const char *name;	/* --format value */
	const char *ext;	/* default file extension */
	int (*write)(FILE *f, const struct profile *p, const struct out_meta *meta);
};

extern const struct out_ops out_folded;

/* The format named name, or NULL. */
const struct out_ops *out_find(const char *name);

/* "folded" ... for messages */
const char *out_names(void);

/*
 * Write s to f with every character that could break a line-oriented
 * format replaced: ';' becomes ':', control characters '?'.
 */
int out_put_sanitized(FILE *f, const char *s);

#endif
