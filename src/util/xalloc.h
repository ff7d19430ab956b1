/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_XALLOC_H
#define PYROSPY_XALLOC_H

#include <stddef.h>
#include <stdint.h>

/*
 * Allocation that cannot fail: on exhaustion the process prints one line
 * and exits with status 1.  A profiler has nothing useful to do without
 * memory, and removing the branch removes a class of error-path bugs.
 */
void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
void *xreallocarray(void *ptr, size_t nmemb, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a new string */
char *xstrfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define FREE_AND_NULL(p) do { free(p); (p) = NULL; } while (0)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Overflow-checked size arithmetic: return 0 and leave *out alone on overflow. */
static inline int st_add(size_t a, size_t b, size_t *out)
{
	if (a > SIZE_MAX - b)
		return 0;
	*out = a + b;
	return 1;
}

static inline int st_mult(size_t a, size_t b, size_t *out)
{
	if (a && b > SIZE_MAX / a)
		return 0;
	*out = a * b;
	return 1;
}

#endif
