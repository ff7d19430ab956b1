/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PYTHREAD_H
#define PYROSPY_PYTHREAD_H

#include <stdint.h>
#include <sys/types.h>

#include "python/pyobj.h"

struct rmem;
struct target;
struct pyvm_layout;

/*
 * The names of a Python program's threads: threading.Thread.name, read
 * from outside (sys.modules["threading"]._active maps each thread's ident
 * to its Thread, whose _name is an instance attribute), and the name the
 * kernel knows the thread by (/proc/PID/task/TID/comm) when it says
 * something else: "worker-3", "worker-3 [wk3]", "[wk3]" for a thread
 * threading does not know.  The OS name is left out when it is the start
 * of the Python name (3.14+ sets it from Thread.name, cut at 15 bytes) or
 * the process's own (what every thread inherits, and the main thread's).
 *
 * Each interpreter (the main one and each subinterpreter, 3.12+) has a
 * threading module of its own, and a thread running code in a
 * subinterpreter has a thread state in each: a thread state's name is
 * read from its own interpreter's threading._active (none if that
 * interpreter has not imported threading), searched for in each
 * interpreter apart, so that one without threading never holds up
 * another's search.
 *
 * Names are cached per thread (interpreter, ident and tid) and read
 * again after PYTHREAD_REFRESH samples and up to half as many more (by
 * thread, so that the threads of a large process do not all read theirs
 * in the same sample), so a renamed thread shows its new name within that
 * many samples; a failed read keeps the name last read.
 */
#define PYTHREAD_REFRESH	100	/* samples between two reads of a thread's name, at least */
#define PYTHREAD_NAME_MAX	128	/* code points of a Python name kept */

#define PYTHREAD_INTERPS	64	/* interpreters whose threading is kept (INTERP_MAX) */

struct pythread_ent {
	uint64_t interp_id;	/* PyInterpreterState.id of the thread state */
	uint64_t ident;		/* pthread_t; 0 with tid 0: empty slot */
	pid_t tid;		/* host tid */
	uint64_t read_at;	/* sample count of the last read */
	char *name;		/* NULL: none */
};

/* One interpreter's threading._active, and the search for it. */
struct pythread_interp {
	uint64_t addr;		/* PyInterpreterState; 0: empty slot */
	uint64_t id;		/* its id (an address may be reused by a later one) */
	uint64_t used_at;	/* sample count of its last use */
	uint64_t active;	/* threading._active, 0: not found */
	uint64_t search_at;	/* sample count of the next search for it */
	uint64_t seen[2];	/* sys.modules' keys and size when last searched */
};

struct pythread {
	struct pyobj obj;
	pid_t pid;		/* host pid, for /proc */
	struct pythread_interp interp[PYTHREAD_INTERPS];
	struct pythread_ent *ent;	/* open addressing, PYTHREAD_SLOTS */
	unsigned int nent;
	char proc[16];		/* /proc/PID/comm as of sample proc_at - 1 */
	size_t proc_nc;
	uint64_t proc_at;
};

/* mem, lay and t must outlive tn. */
void pythread_init(struct pythread *tn, struct rmem *mem, const struct pyvm_layout *lay,
		   struct target *t);
void pythread_release(struct pythread *tn);

/*
 * The name of the thread ident (tid on the host, 0 if unknown) in the
 * interpreter at interp (its id interp_id, 0 the main one's), as of
 * sample number `sample'; NULL if it has none there.  Valid until the
 * next call.  comm: the thread's kernel name (nc bytes, its comm file's)
 * when the caller has just read it (taskstat_state_comm()), else NULL.
 */
const char *pythread_name(struct pythread *tn, uint64_t interp, uint64_t interp_id,
			  uint64_t ident, pid_t tid, const char *comm, size_t nc,
			  uint64_t sample);

#endif
