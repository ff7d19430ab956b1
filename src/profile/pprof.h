/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PPROF_H
#define PYROSPY_PPROF_H

#include <stddef.h>
#include <stdint.h>

struct pb;
struct profile;

/*
 * A pprof profile (github.com/google/pprof, proto/profile.proto) built
 * from the stacks of one struct profile, for the pprof writer and the
 * uploaders alike:
 *
 *   w = pprof_new(p, period);
 *   profile_stacks(p, pprof_add, w);      (or pprof_add() per stack)
 *   pprof_finish(w, start, duration, &out);   gzipped into out
 *   pprof_free(w);
 *
 * Sample types are samples/count and cpu/nanoseconds (count * period);
 * a tag set or thread level on a stack's path becomes sample labels.
 */
struct pprof;

/* period: nanoseconds between samples (0 when unknown). */
struct pprof *pprof_new(const struct profile *p, uint64_t period);

/*
 * One sample of count for the stack frames[0..depth) of p (root first,
 * as profile_stacks() gives it).  Always returns 0.
 */
int pprof_add(void *w, const struct profile *p, const uint32_t *frames, uint32_t depth,
	      uint64_t count);

/* Samples added so far, and the size of the profile so far, uncompressed. */
uint32_t pprof_samples(const struct pprof *w);
size_t pprof_size(const struct pprof *w);

/*
 * Close the profile (time_nanos and duration_nanos left out when 0) and
 * append it, gzipped, to out.  0, or -1 when zlib fails.  *raw, if not
 * NULL, gets its size uncompressed.
 */
int pprof_finish(struct pprof *w, int64_t time_nanos, int64_t duration_nanos, struct pb *out,
		 size_t *raw);

void pprof_free(struct pprof *w);

#endif
