/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_RAWREAD_H
#define PYROSPY_RAWREAD_H

#include <stdint.h>
#include <stdio.h>

#include "perr.h"

struct stack;

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

/* Free what rawread_run() kept.  Safe to call twice. */
void rawread_release(struct rawread *r);

#endif
