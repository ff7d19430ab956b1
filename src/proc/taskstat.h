/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_TASKSTAT_H
#define PYROSPY_TASKSTAT_H

#include <sys/types.h>

/*
 * Scheduler state of the target's threads, from /proc/PID/task/TID/stat.
 * Files are kept open and re-read with pread(), so checking a thread costs
 * one syscall per sample.  Thread ids are translated from the target's
 * PID namespace (the ids an interpreter records) to ours through the
 * NSpid lines of /proc/PID/task/TID/status.
 */
struct taskstat_entry;

struct taskstat {
	pid_t pid;
	int same_ns;		/* target shares our PID namespace */
	struct taskstat_entry *ent;
	size_t nr, alloc;
	size_t sweep_at;	/* close the files of ended threads at this size */
};

void taskstat_init(struct taskstat *ts, pid_t pid);
void taskstat_release(struct taskstat *ts);

/*
 * Host tid of the thread the target knows as ns_tid (identity when the
 * namespaces are the same), or 0 if none matches.
 */
pid_t taskstat_host_tid(struct taskstat *ts, pid_t ns_tid);

/*
 * State letter of host thread tid ('R' running or runnable, 'S', 'D', ...),
 * or 0 if the thread is gone.
 */
char taskstat_state(struct taskstat *ts, pid_t tid);

/* Thread tid of process pid as its own PID namespace knows it, or 0. */
pid_t taskstat_nspid(pid_t pid, pid_t tid);

#endif
