/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <string.h>

#include "proc/pthtid.h"

/*
 * struct pthread as glibc 2.31 to 2.41 lay it out on x86-64, in the words
 * that matter: header.multiple_threads (word 6) is 1 in every thread of a
 * threaded process, tid at 0x2d0 (word 180).
 */
#define MULTIPLE_THREADS 6
#define TID 180

static int32_t words[4][PTHTID_WORDS];

static void fill(size_t n, const pid_t *tid, int32_t multiple)
{
	memset(words, 0, sizeof(words));
	for (size_t k = 0; k < n; k++) {
		words[k][MULTIPLE_THREADS] = multiple;
		words[k][TID] = tid[k];
		words[k][200] = 8 << 20;	/* stacksize: the same in every thread */
		words[k][201] = (int32_t)(0x7f000000 + k * 0x10000);	/* a pointer's half */
	}
}

/* pid 1 of a container: 1 is also multiple_threads; the other threads decide. */
Test(pthtid, pid_1_with_threads)
{
	pid_t tids[] = { 1, 7, 8 }, only;

	fill(3, tids, 1);
	cr_assert_eq(pthtid_pick(words, 3, tids, 3, &only), TID * 4);
}

/*
 * One thread of pid 1, and a 1 elsewhere in its struct: no offset, not a
 * guess; but its id is 1 either way.  Ruby's timer thread is a task too.
 */
Test(pthtid, pid_1_alone_is_ambiguous)
{
	pid_t tids[] = { 1, 9 }, only;

	fill(1, tids, 1);
	cr_assert_eq(pthtid_pick(words, 1, tids, 2, &only), -1);
	cr_assert_eq(only, 1);
	fill(1, tids, 0);
	cr_assert_eq(pthtid_pick(words, 1, tids, 2, &only), TID * 4);
	/* two offsets that disagree: no id at all */
	fill(1, tids, 9);
	cr_assert_eq(pthtid_pick(words, 1, tids, 2, &only), -1);
	cr_assert_eq(only, 0);
}

/* A process on the host: its pid appears once. */
Test(pthtid, host_pid)
{
	pid_t tids[] = { 41230, 41231 }, only;

	fill(2, tids, 1);
	cr_assert_eq(pthtid_pick(words, 2, tids, 2, &only), TID * 4);
}

/*
 * A child forked from C keeps its parent's thread list: the forking
 * thread's struct holds the child's tid, the others' 0 (glibc clears them
 * in the child) or, read before it does, the parent's threads'.
 */
Test(pthtid, forked_child_with_parent_threads)
{
	pid_t cleared[] = { 0, 0, 305 }, stale[] = { 300, 301, 305 }, tasks[] = { 305 }, only;

	fill(3, cleared, 1);
	cr_assert_eq(pthtid_pick(words, 3, tasks, 1, &only), TID * 4);
	fill(3, stale, 1);
	cr_assert_eq(pthtid_pick(words, 3, tasks, 1, &only), TID * 4);
}

/* Threads whose structs hold no task of the process at all: nothing fits. */
Test(pthtid, no_task)
{
	pid_t in_structs[] = { 300, 301 }, tasks[] = { 999 }, only;

	fill(2, in_structs, 1);
	cr_assert_eq(pthtid_pick(words, 2, tasks, 1, &only), -1);
	cr_assert_eq(pthtid_pick(words, 0, tasks, 1, &only), -1);
}
