/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PYTASKS_H
#define PYROSPY_PYTASKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/perr.h"

struct pyreader;
struct target;

/*
 * Every asyncio task of a Python process, read from outside, for dump
 * --tasks: its name, state, the coroutine stack where it is suspended and
 * the tasks awaiting it, printed as one tree per thread (the tasks nobody
 * awaits at the top, each awaited task under each task awaiting it).
 *
 * CPython 3.14+ (what `python -m asyncio pstree' reads): the _asyncio
 * module publishes where things are (_Py_AsyncioModuleDebugOffsets, in an
 * "AsyncioDebug" ELF section of _asyncio*.so, or of the interpreter when
 * _asyncio is built in), checked against the table shipped here:
 *
 *   PyThreadState + asyncio_tasks_head: llist of the thread's pending
 *   tasks; PyInterpreterState + asyncio_tasks_head: those of ended threads
 *     TaskObj: task_node (in that list), task_name (str, or int N: "Task-N"),
 *     task_coro, task_awaited_by (one task, or a set when
 *     task_awaited_by_is_set), fut_state
 *   coroutine: gi_frame_state, gi_iframe (the frame, owned by it); when
 *   suspended in an await, the awaited object is the frame's top stack
 *   item (3.14) or the one below it (3.15), followed while it is a
 *   coroutine of the same type
 *
 * CPython 3.8-3.13: the C tasks in asyncio's own registry (what
 * all_tasks() reads), with shipped offsets; see pytasks.c.
 *
 * Everything is read twice: tasks, awaiters or frames that changed in
 * between (a task finished while read) are read again, up to
 * PYTASKS_TRIES times, and never shown torn.  When none of those reads
 * agreed, what the last two agreed on is shown (from the tasks at the top,
 * down through those that stayed the same), saying how many were left out.
 */
#define PYTASKS_MAX	100000	/* tasks read */
#define PYTASKS_DEPTH	256	/* coroutines of one task's await chain */
#define PYTASKS_TRIES	50
#define PYTASKS_LINES	1000000	/* task lines of the printed tree */

/*
 * Print the tasks of the process pr reads to f, and their number in
 * *ntasks.  PERR_UNSUPPORTED for a Python without a task registry this
 * can read (*why says which); PERR_NOTFOUND when the program has not
 * imported asyncio (nothing to show); PERR_CORRUPT when every read was
 * torn or what was read does not hold together (*why says which).
 * With json, the members "task_groups" (and "not_shown", "cut") of a JSON
 * object instead (dump --json; its schema: docs/dump-json.schema.json).
 */
enum perr pytasks_dump(struct pyreader *pr, struct target *t, FILE *f, int json,
		       unsigned int *ntasks, const char **why);

#endif
