/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_TASKSTAT_H
#define PYROSPY_TASKSTAT_H

#include <stdint.h>
#include <sys/types.h>

/*
 * Scheduler state of the target's threads, from /proc/PID/task/TID/stat.
 * Files are kept open and re-read with pread(), so checking a thread costs
 * one syscall per sample, and are found through a hash of their tids.  Thread ids are translated from the target's
 * PID namespace (the ids an interpreter records) to ours through the
 * NSpid lines of /proc/PID/task/TID/status.
 */
struct taskstat_entry;

struct taskstat {
	pid_t pid;
	int same_ns;		/* target shares our PID namespace */
	struct taskstat_entry *ent;
	size_t nr, alloc;
	uint32_t *hash;		/* 2 * hcap slots: ent[] index + 1 by tid, then by ns_tid */
	size_t hcap;		/* a power of two, > 2 * alloc; 0: to be built */
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

#define TASKSTAT_COMM_MAX	15	/* the kernel's TASK_COMM_LEN less its NUL */

/*
 * The same, and from the same read the thread's kernel name (its comm
 * file's bytes, no newline) into comm (TASKSTAT_COMM_MAX bytes), its
 * length in *nc; *nc is SIZE_MAX when it is not known (the state 0).
 */
char taskstat_state_comm(struct taskstat *ts, pid_t tid, char *comm, size_t *nc);

/*
 * Whether a thread ran: its run time in ns and the number of times the
 * kernel put it on a CPU (/proc/PID/task/TID/schedstat).
 */
struct taskstat_run {
	uint64_t ns, count;
};

/*
 * Host thread tid's run counts into *run, read with one pread(); -1 if
 * the thread is gone or the kernel does not keep them (both 0).
 *
 * A thread's stack read after taskstat_run() gave *was and before its
 * state was seen not to be 'R' (taskstat_state()) is still its stack when
 * a later taskstat_run() gives the same counts: had it been on a CPU when
 * *was was read, it left the CPU before the state was read, and leaving a
 * CPU adds to its run time; had it not been, to run it must have been put
 * on one, which adds to the count.  See taskstat_ran().
 */
int taskstat_run(struct taskstat *ts, pid_t tid, struct taskstat_run *run);

/* 1 if the counts differ (the thread may have run), 0 if they are the same. */
static inline int taskstat_ran(const struct taskstat_run *was, const struct taskstat_run *now)
{
	return was->ns != now->ns || was->count != now->count;
}

/* Thread tid of process pid as its own PID namespace knows it, or 0. */
pid_t taskstat_nspid(pid_t pid, pid_t tid);

#endif
