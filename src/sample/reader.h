/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_READER_H
#define PYROSPY_READER_H

#include "stack/reading.h"
#include "util/perr.h"

/*
 * The reader of a target, whichever its language: reader_new() picks
 * python/pyreader.c or ruby/rbreader.c for the target's language.
 */
struct target;
struct reader;

/*
 * A reader for target t, by its language.  PERR_STARTUP if the runtime is
 * not initialised yet (try again later); PERR_UNSUPPORTED if no layout
 * fits; PERR_NOTFOUND if the runtime cannot be found in it.  t must
 * outlive the reader.
 */
enum perr reader_new(struct target *t, const struct reader_opts *opts, struct reader **out);
void reader_free(struct reader *r);

/*
 * One sample: cb once for each thread the options keep, with a stack
 * valid only during the call.  PERR_EXITED or PERR_PERM mean stop; other
 * trouble is counted in the stats and the sample goes on.
 */
enum perr reader_sample(struct reader *r, reader_cb cb, void *arg);
const struct reader_stats *reader_stats(const struct reader *r);
const char *reader_describe(const struct reader *r);

/* The Python reader behind r, NULL for Ruby (for pytasks.c). */
struct pyreader;
struct pyreader *reader_python(struct reader *r);

#endif
