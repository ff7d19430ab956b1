/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_STACK_H
#define PYROSPY_STACK_H

#include <stdint.h>
#include <sys/types.h>

/*
 * One thread's stack in one sample: what a reader hands the aggregator.
 * Frames are leaf first (index 0 is the executing function), as a walk
 * finds them.  Strings are borrowed from the reader's caches and stay valid
 * until the next sample; the aggregator copies what it keeps.
 */
struct stack_frame {
	const char *name;	/* "Shop.checkout", "<module>" */
	const char *file;	/* as the interpreter reports it */
	int line;		/* 0 when unknown */
};

#define STACK_MAX_DEPTH 4096	/* deeper stacks are cut, marked truncated */
/* ends a name or path that was longer than a reader keeps (4096) */
#define STACK_CUT_MARK "[...]"

struct stack {
	pid_t pid;		/* the process (as we see it) */
	pid_t tid;		/* kernel thread id, 0 if unknown */
	uint64_t thread_id;	/* interpreter's id (pthread_t, Ruby VALUE) */
	const char *thread_name;	/* NULL if none */
	const char *tags;	/* the program's tag set (src/tags.h), NULL if none */
	int holds_gil;		/* -1 unknown */
	int idle;		/* -1 unknown */
	int gvl_wait;		/* Ruby: queued to take the GVL; 0 no (or Python), -1 unknown */
	int truncated;		/* frames beyond STACK_MAX_DEPTH dropped */
	unsigned int ractor;	/* Ruby: the number of its ractor if not the main one, else 0 */
	uint64_t interp;	/* Python: the id of its interpreter if not the main one, else 0 */
	/*
	 * Not 0: depth, truncated and frame[] are, pointer for pointer, those
	 * of every other stack handed on with the same value (a stack a
	 * reader keeps and shows again while its thread does not run): an
	 * aggregator may find its path once (profile.c).  From
	 * stack_kept_serial().
	 */
	uint64_t kept;
	unsigned int depth;
	/* with reader_opts.locals: each frame's locals as text (NULL: none) */
	const char *const *locals;
	struct stack_frame frame[STACK_MAX_DEPTH];
};

/* A value for stack.kept no other stack of this process had. */
uint64_t stack_kept_serial(void);

#endif
