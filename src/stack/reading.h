/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_READING_H
#define PYROSPY_READING_H

#include <stdint.h>

#include "stack/stack.h"

/*
 * What the sampler asks of a language reader (python/pyreader.c,
 * ruby/rbreader.c) and what it gets back: the options, the counters and
 * the callback that receives each stack.  sample/reader.h picks the
 * reader for the target's language.
 */

/* What to keep of each sample. */
struct reader_opts {
	int idle;		/* keep threads that are not running */
	int gil_only;		/* keep only the thread holding the GIL/GVL */
	int locals;		/* each frame's local variables (pylocals.h, rblocals.h) */
	int gvl_wait;		/* Ruby: keep threads queued for the GVL, under a
				   "(waiting for GVL)" leaf frame */
	int no_gc;		/* no "(garbage collection)" leaf on the collecting thread */
	int async_tasks;	/* Python: the running asyncio task and those awaiting it,
				   as "<task> NAME" frames (pyasync.h) */
	int anchor;		/* CPython 3.15+: write each thread's last_profiled_frame
				   and read only the frames above it (pyreader.c) */
	int reuse;		/* a thread that had not run since its last read: its
				   stack of then (pyreader.c, rbreader.c); not for dump */
};

/* Counters a reader keeps; the CLI reports them. */
struct reader_stats {
	uint64_t samples;	/* calls to *_sample */
	uint64_t stacks;	/* thread stacks delivered */
	uint64_t dropped;	/* thread stacks given up as inconsistent */
	uint64_t retries;	/* stacks read again after a torn read */
	uint64_t bad_frames;	/* frames that failed validation */
	uint64_t cache_misses;	/* code objects read */
	uint64_t cache_stale;	/* cached code found replaced by other code */
	uint64_t tags_dropped;	/* samples whose tags were torn under the read */
	uint64_t unqualified;	/* Ruby: a method's class that could not be read */
	uint64_t anchored;	/* Python 3.15+: stacks whose callers below the anchor
				   were known unchanged, not read again */
	uint64_t reused;	/* stacks of threads that had not run since their last
				   read, reused */
};

typedef void (*reader_cb)(void *arg, const struct stack *st);

#endif
