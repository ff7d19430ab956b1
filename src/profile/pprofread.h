/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PPROFREAD_H
#define PYROSPY_PPROFREAD_H

#include <stddef.h>
#include <stdio.h>

#include "profile/foldedread.h"
#include "util/perr.h"

/*
 * Reading a gzipped pprof profile (profile.proto: pyrospy's -f pprof, go
 * tool pprof -proto, Pyroscope's exports), an untrusted file, for pyrospy
 * report: one callback a sample, as a folded line would give it.  The
 * weight is the value of sample type "samples" (a CPU profile's count);
 * string labels become the tag set, but "thread", which pyrospy writes
 * its thread frame in.  A location's lines are its inlined functions,
 * innermost first, as the format says.  Text is made valid UTF-8 without
 * control characters.  Caps: PPROFREAD_MAX_BYTES inflated,
 * PPROFREAD_MAX_ENTRIES, PPROFREAD_MAX_SAMPLES, PPROFREAD_FRAMES_PER_BYTE, stacks of
 * FOLDEDREAD_MAX_DEPTH frames (PERR_TOOBIG); anything the format does
 * not allow, an id or string index that is not there: PERR_CORRUPT, why
 * says what.
 */
#define PPROFREAD_MAX_BYTES (256u << 20)
/* Strings, functions, locations and sample types in all (PERR_TOOBIG). */
#define PPROFREAD_MAX_ENTRIES (1u << 22)
/* Samples (PERR_TOOBIG). */
#define PPROFREAD_MAX_SAMPLES (1u << 24)
/* Frames the samples may expand to: this many a byte inflated, 2^20 more. */
#define PPROFREAD_FRAMES_PER_BYTE 8u

/* Whether a file starting with the n bytes head is one to read here (gzip). */
int pprofread_is(const unsigned char *head, size_t n);

/* Read f to its end.  PERR_OK, PERR_IO (errno), PERR_CORRUPT, PERR_TOOBIG. */
enum perr pprofread_run(FILE *f, foldedread_fn fn, void *arg, char *why, size_t cap);

#endif
