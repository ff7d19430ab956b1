/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PYREADER_H
#define PYROSPY_PYREADER_H

#include <stdint.h>

#include "perr.h"
#include "stack.h"

struct target;
struct pyreader;

/* What to keep of each sample. */
struct reader_opts {
	int idle;		/* keep threads that are not running */
	int gil_only;		/* keep only the thread holding the GIL/GVL */
};

/* Counters a reader keeps; the CLI reports them. */
struct reader_stats {
	uint64_t samples;	/* calls to *_sample */
	uint64_t stacks;	/* thread stacks delivered */
	uint64_t dropped;	/* thread stacks given up as inconsistent */
	uint64_t retries;	/* stacks read again after a torn read */
	uint64_t bad_frames;	/* frames that failed validation */
	uint64_t cache_misses;	/* code objects read */
};

typedef void (*reader_cb)(void *arg, const struct stack *st);

/*
 * Prepare to read the Python stacks of target t (already opened and found
 * to be Python 3.8-3.15).  PERR_STARTUP if the runtime is not initialised
 * yet (retry later), PERR_UNSUPPORTED if no layout fits.  The reader
 * borrows t, which must outlive it.
 */
enum perr pyreader_new(struct target *t, const struct reader_opts *opts,
		       struct pyreader **out);
void pyreader_free(struct pyreader *pr);

/*
 * Take one sample: call cb once for every thread kept by the options,
 * with a stack valid only during the call.  Returns PERR_EXITED or
 * PERR_PERM when the target is gone or unreadable (stop sampling); other
 * failures are counted in the stats and the sample goes on.
 */
enum perr pyreader_sample(struct pyreader *pr, reader_cb cb, void *arg);

const struct reader_stats *pyreader_stats(const struct pyreader *pr);

/* One line on the layout in use, for -v ("3.13.1, offsets from target"). */
const char *pyreader_describe(const struct pyreader *pr);

#endif
