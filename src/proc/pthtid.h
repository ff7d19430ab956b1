/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PTHTID_H
#define PYROSPY_PTHTID_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Where glibc keeps a thread's kernel tid in its struct pthread, found
 * from the target's own threads rather than assumed: Python <= 3.10 and
 * Ruby <= 3.0 store only the pthread_t, whose struct holds the tid as the
 * target's PID namespace knows it.
 *
 * A word of the struct is the tid if, at its offset, the struct of every
 * thread looked at holds a different id of a task of the process (or, in
 * a child forked with its parent's thread list, a different possible tid
 * or 0, one at least of a task).  The process's own id alone is not enough: in
 * a container the application is often pid 1, and 1 is what other words
 * hold too (multiple_threads).
 */
#define PTHTID_WORDS 256	/* int32 words of struct pthread searched */
#define PTHTID_THREADS 64	/* threads looked at, at most */

/*
 * The byte offset of the tid: words[k] holds the first PTHTID_WORDS words
 * of thread k's struct pthread (n threads), tids the ids of the process's
 * tasks in its own PID namespace (ntids).  -1 if no offset fits, or more
 * than one does (the caller asks again later): then, if there is one
 * thread and every offset that fits holds the same id (pid 1, alone, with
 * another word that is 1), that is its tid, in *only (else 0).
 */
int64_t pthtid_pick(const int32_t (*words)[PTHTID_WORDS], size_t n, const pid_t *tids,
		    size_t ntids, pid_t *only);

/*
 * The ids of the tasks of pid in its own PID namespace (NSpid), in *tids
 * (caller frees).  Returns the count, or -1.
 */
int pthtid_ns_tasks(pid_t pid, pid_t **tids);

#endif
