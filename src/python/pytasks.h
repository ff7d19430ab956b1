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
 */
enum perr pytasks_dump(struct pyreader *pr, struct target *t, FILE *f, unsigned int *ntasks,
		       const char **why);

/*
 * For record --async (pyasync.h): the asyncio layout of the process pr
 * reads, 3.14+ only (what the target publishes, equal to the shipped
 * table), in *out.  PERR_NOTFOUND while asyncio is not imported (try
 * again later); PERR_UNSUPPORTED and *why otherwise.
 */
struct pytasks_published;
enum perr pytasks_layout(struct pyreader *pr, struct target *t, struct pytasks_published *out,
			 const char **why);

/*
 * A task's name (a str, or 3.12+ an int N that asyncio shows as
 * "Task-N") into buf, cap bytes (at least 1032), cut at 256 code points.
 */
struct pyobj;
enum perr pytasks_name(struct pyobj *o, unsigned int minor, uint64_t obj, char *buf, size_t cap);

/*
 * Where the tasks are, as data (pyvm-structs/asyncio_tasks.c, where each
 * number comes from).  3.14+: the 13 uint64_t of the target's
 * _Py_AsyncioModuleDebugOffsets as shipped (aio[]: task object size,
 * task_name, task_awaited_by, task_is_task, task_awaited_by_is_set,
 * task_coro, task_node; interpreter size, asyncio_tasks_head; thread state
 * size, asyncio_running_loop, asyncio_running_task, asyncio_tasks_head),
 * what they do not say, and where in _Py_DebugOffsets (pos_*) the generic
 * offsets used are, with their shipped values.
 */
/* The 13 offsets of aio[], in order. */
enum {
	PYTASKS_A_TASK_SIZE, PYTASKS_A_TASK_NAME, PYTASKS_A_TASK_AWAITED_BY, PYTASKS_A_TASK_IS_TASK,
	PYTASKS_A_TASK_AB_IS_SET, PYTASKS_A_TASK_CORO, PYTASKS_A_TASK_NODE, PYTASKS_A_INTERP_SIZE,
	PYTASKS_A_INTERP_HEAD, PYTASKS_A_TS_SIZE, PYTASKS_A_TS_LOOP, PYTASKS_A_TS_TASK,
	PYTASKS_A_TS_HEAD
};

struct pytasks_published {
	unsigned int minor;
	uint64_t aio[13];
	uint32_t state;			/* fut_state in TaskObj */
	int await_slot;			/* the awaited object: stackpointer[-await_slot] */
	int8_t yield_from, cleared;	/* gi_frame_state: FRAME_SUSPENDED_YIELD_FROM, FRAME_CLEARED */
	uint32_t dbg_size;		/* bytes of _Py_DebugOffsets to read */
	uint32_t pos_gi_iframe, pos_gi_frame_state, pos_stackpointer,
		 pos_set_used, pos_set_table, pos_set_mask, pos_llist_next;
	uint64_t gi_iframe, gi_frame_state, stackpointer, set_used, set_table, set_mask,
		 llist_next;
};

/* 3.8-3.13: asyncio's own registry and the C tasks in it. */
struct pytasks_registry {
	unsigned int minor;
	int free_threaded;		/* of a --disable-gil build: its objects' fields
					   sit 16 bytes further (pyvm.h, head_extra) */
	const char *registry;		/* the WeakSet in asyncio.tasks */
	uint32_t state, fut_waiter, coro, name;	/* in TaskObj */
	uint32_t gi_frame;		/* 3.8-3.10: PyFrameObject *gi_frame; else PYVM_NONE */
	uint32_t gi_iframe, gi_frame_state;	/* 3.11+: the frame inside the coroutine */
	int8_t cleared;			/* FRAME_CLEARED */
	int8_t yield_from;		/* 3.13: FRAME_SUSPENDED_YIELD_FROM, else 0 */
	uint32_t frame_lasti;		/* 3.8-3.10: f_lasti in PyFrameObject */
	uint32_t stacktop;		/* 3.8, 3.9: f_stacktop (a pointer); 3.10:
					   f_stackdepth (an int); 3.11+: stacktop (int) */
	uint32_t valuestack;		/* 3.10: f_valuestack (the stack is
					   f_valuestack[0 .. f_stackdepth)); else 0 */
	uint8_t opcode, quick;		/* 3.8-3.10: YIELD_FROM; 3.11: RESUME and
					   RESUME_QUICK; 3.12: RESUME, INSTRUMENTED_RESUME */
	/* record --async (pyasync.c): who a task's done callbacks wake */
	uint32_t fut_callback0, fut_callbacks;	/* in FutureObj */
	uint32_t func_closure;		/* in PyFunctionObject */
	const char *wakeup;		/* the type of a task's wakeup callback, by name:
					   TaskWakeupMethWrapper (ww_task), else a builtin
					   task_wakeup (m_self) */
	uint32_t wakeup_task;		/* where the task it wakes is */
};

/*
 * Bytes of a C task to read for every TaskObj and FutureObj field above:
 * no more, since the page after the object may not be mapped.
 */
uint32_t pytasks_task_len(const struct pytasks_registry *O);

/* The registry layout of t's version and build, or NULL: none is known. */
const struct pytasks_registry *pytasks_registry_for(const struct target *t);

extern const struct pytasks_published pytasks_published[];
extern const size_t pytasks_npublished;
extern const struct pytasks_registry pytasks_registry[];
extern const size_t pytasks_nregistry;

#endif
