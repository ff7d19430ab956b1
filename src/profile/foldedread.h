/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_FOLDEDREAD_H
#define PYROSPY_FOLDEDREAD_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "util/perr.h"

/*
 * Reading a folded profile (pyrospy's -f folded, or any collapsed stacks),
 * an untrusted file, for pyrospy report: one callback a line.  A line is
 *
 *   [{k=v,...};][[pid N: ]thread (TID)[ [interpreter N]][: NAME];]frame;frame... COUNT
 *
 * root first, each frame "name (file:line)", "name (file)" or a bare
 * name (a pseudo-frame).  Text is made valid UTF-8 without control
 * characters; a line longer than FOLDEDREAD_MAX_LINE, deeper than
 * FOLDEDREAD_MAX_DEPTH or without a count is refused (PERR_CORRUPT or
 * PERR_TOOBIG, why says which line).
 */
#define FOLDEDREAD_MAX_LINE (4u << 20)
#define FOLDEDREAD_MAX_DEPTH 4100

struct folded_frame {
	const char *name, *file;	/* file "" for a pseudo-frame */
	int line;			/* 0 unknown */
};

struct folded_line {
	const char *tags;		/* "k=v,..." or NULL */
	const char *thread;		/* the thread frame as written, or NULL */
	pid_t pid, tid;			/* from it, 0 if none */
	const char *thread_name;	/* from it, NULL if none */
	uint32_t depth;
	const struct folded_frame *frame;	/* root first */
	uint64_t count;
};

/* fn gets each line, valid during the call; non-zero stops the read. */
typedef int (*foldedread_fn)(void *arg, const struct folded_line *l);

/*
 * A thread frame's text, "[pid N: ]thread (TID)[ [interpreter N]][: NAME]"
 * (N: a Python subinterpreter's id), into l's
 * thread, pid, tid and thread_name (pointing into s, cut in place);
 * 0 when s is none.
 */
int foldedread_thread(char *s, struct folded_line *l);

/* Read f to its end.  PERR_OK, PERR_IO (errno), PERR_CORRUPT, PERR_TOOBIG. */
enum perr foldedread_run(FILE *f, foldedread_fn fn, void *arg, char *why, size_t cap);

#endif
