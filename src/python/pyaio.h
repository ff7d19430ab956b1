/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PYAIO_H
#define PYROSPY_PYAIO_H

#include <stddef.h>
#include <stdint.h>

#include "util/perr.h"

struct pyobj;
struct rmem;
struct target;

/*
 * asyncio's layouts, for the two readers of tasks: dump --tasks
 * (pytasks.c) and record --async (pyasync.c).  CPython 3.14+ publishes
 * where its tasks are; 3.8-3.13's are shipped (pyvm-structs/asyncio_tasks.c).
 */

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
	PYAIO_A_TASK_SIZE, PYAIO_A_TASK_NAME, PYAIO_A_TASK_AWAITED_BY, PYAIO_A_TASK_IS_TASK,
	PYAIO_A_TASK_AB_IS_SET, PYAIO_A_TASK_CORO, PYAIO_A_TASK_NODE, PYAIO_A_INTERP_SIZE,
	PYAIO_A_INTERP_HEAD, PYAIO_A_TS_SIZE, PYAIO_A_TS_LOOP, PYAIO_A_TS_TASK,
	PYAIO_A_TS_HEAD
};

struct pyaio_published {
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
struct pyaio_registry {
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
uint32_t pyaio_task_len(const struct pyaio_registry *O);

/* The registry layout of t's version and build, or NULL: none is known. */
const struct pyaio_registry *pyaio_registry_for(const struct target *t);

extern const struct pyaio_published pyaio_published[];
extern const size_t pyaio_npublished;
extern const struct pyaio_registry pyaio_registry[];
extern const size_t pyaio_nregistry;

/*
 * The layout of t's tasks: 3.8-3.13's shipped registry in *old, or for
 * 3.14+ (*old NULL) what the target publishes in *out, checked: every
 * offset inside its struct, the generic ones in _Py_DebugOffsets (at
 * runtime) against the shipped values; *state_known when the task's
 * offsets are the shipped ones (else fut_state is not trusted).
 * PERR_NOTFOUND when asyncio is not loaded; *why says what else failed.
 */
enum perr pyaio_layout(struct rmem *mem, struct target *t, uint64_t runtime,
		       const struct pyaio_registry **old, struct pyaio_published *out,
		       int *state_known, const char **why);

/*
 * A task's name (a str, or 3.12+ an int N that asyncio shows as
 * "Task-N") into buf, cap bytes (at least PYAIO_NAME_CAP), cut at
 * PYAIO_NAME_CP code points.
 */
#define PYAIO_NAME_CP	256
#define PYAIO_NAME_CAP	(PYAIO_NAME_CP * 4 + 8)
enum perr pyaio_task_name(struct pyobj *o, unsigned int minor, uint64_t obj, char *buf,
			  size_t cap);

#endif
