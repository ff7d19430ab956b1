/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>

#include "proc/pthtid.h"
#include "proc/target.h"
#include "proc/taskstat.h"

#define PID_MAX_LIMIT 4194304	/* the kernel's largest pid_max on 64-bit */

static int is_task(pid_t id, const pid_t *tids, size_t ntids)
{
	for (size_t i = 0; i < ntids; i++)
		if (tids[i] == id)
			return 1;
	return 0;
}

/*
 * Word i of every thread is an id of a task of the process, and no two
 * are the same (strict); or, for a process forked from C with its parent's
 * thread list (uWSGI: see pyreader.c), word i of every thread could be a
 * tid or is 0 (glibc clears the tid of the threads a child does not
 * have), no two tids are the same, and one at least is a task of the
 * process.
 */
static int fits(const int32_t (*words)[PTHTID_WORDS], size_t n, size_t i, const pid_t *tids,
		size_t ntids, int strict)
{
	int tasks = 0;

	for (size_t k = 0; k < n; k++) {
		int32_t v = words[k][i];

		if (v < 0 || v > PID_MAX_LIMIT || (v == 0 && strict))
			return 0;
		if (v == 0)
			continue;
		if (is_task(v, tids, ntids))
			tasks++;
		else if (strict)
			return 0;
		for (size_t j = 0; j < k; j++)
			if (words[j][i] == v)
				return 0;
	}
	return tasks > 0;
}

int64_t pthtid_pick(const int32_t (*words)[PTHTID_WORDS], size_t n, const pid_t *tids,
		    size_t ntids, pid_t *only)
{
	*only = 0;
	for (int strict = 1; strict >= 0; strict--) {
		int64_t off = -1;
		int found = 0, agree = 1;

		for (size_t i = 0; i < PTHTID_WORDS && n; i++) {
			if (!fits(words, n, i, tids, ntids, strict))
				continue;
			if (found++ && words[0][i] != words[0][off / 4])
				agree = 0;
			off = (int64_t)(i * sizeof(int32_t));
		}
		if (found == 1)
			return off;
		if (found > 1) {
			/* two offsets fit: take neither, but one thread's id they agree on */
			if (n == 1 && agree)
				*only = words[0][off / 4];
			return -1;
		}
	}
	return -1;
}

int pthtid_ns_tasks(pid_t pid, pid_t **tids)
{
	int n = target_tasks(pid, tids);

	for (int i = 0; i < n; i++)
		(*tids)[i] = taskstat_nspid(pid, (*tids)[i]);
	return n;
}
