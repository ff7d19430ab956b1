/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_RAWREAD_H
#define PYROSPY_RAWREAD_H

#include <stdint.h>
#include <stdio.h>

#include "util/perr.h"

struct stack;
struct stack_frame;

/*
 * Reading a raw recording (raw.h, docs/raw-format.md), an untrusted file:
 * every count, length and reference is checked against the limits of
 * raw.h and what the file defined before, and the first thing wrong ends
 * the read with PERR_CORRUPT (or PERR_TOOBIG) and a reason in why.  A
 * file that merely stops early (a pyrospy killed while recording, a copy
 * cut short) is not wrong: its whole blocks are read, and torn says so.
 */
struct rawread {
	/* the recording, from its first block */
	double start;		/* Unix time sampling started */
	unsigned int rate;	/* Hz asked */
	unsigned int flags;	/* RAW_META_* */
	char title[256];
	/* after rawread_run() */
	uint64_t samples;	/* samples delivered */
	double duration;	/* seconds from start to the end (or last sample) */
	int torn;		/* the file ends before its end record */
	char why[160];		/* what is wrong, or where a torn file ends */
	/*
	 * During the callback: the sample's stack node, thread and tag set,
	 * as the file numbers them (tags: string + 1, 0 none).  Samples of
	 * equal numbers have equal stacks, threads and tag sets.
	 */
	uint32_t node, thread, tags;
	/* private */
	struct rawread_priv *priv;
};

/*
 * fn gets each sample in the file's order (which is time order): its Unix
 * time in ns, its tag set (NULL for none) and its stack, leaf first, both
 * valid during the call.  A non-zero return stops the read, and
 * rawread_run() returns PERR_OK.
 */
typedef int (*rawread_fn)(void *arg, int64_t when_ns, const char *tags, const struct stack *st);

/*
 * Read the recording in f from where it is to its end.  Returns PERR_OK
 * (torn set when it was cut short), PERR_IO with errno set when reading
 * failed, PERR_CORRUPT when it is not a raw recording or is damaged,
 * PERR_TOOBIG when it exceeds a limit: why says which.  Samples before
 * the damage have been delivered.
 */
enum perr rawread_run(struct rawread *r, FILE *f, rawread_fn fn, void *arg);

/*
 * The same, but st comes without its frames (depth 0), which a stack 4096
 * deep would cost each sample: fn asks for them with rawread_frames(), or
 * walks r->node with rawread_node().
 */
enum perr rawread_run_nodes(struct rawread *r, FILE *f, rawread_fn fn, void *arg);

/* During the callback: the sample's stack, with its frames. */
const struct stack *rawread_frames(const struct rawread *r);

/*
 * Stack node node's frame (its strings live until rawread_release()) into
 * *frame, and its parent node, 0 for the outermost frame.  node is one of
 * r->node's or its parents', and never 0 (the empty stack).
 */
uint32_t rawread_node(const struct rawread *r, uint32_t node, struct stack_frame *frame);

/* Free what rawread_run() kept.  Safe to call twice. */
void rawread_release(struct rawread *r);

#endif
