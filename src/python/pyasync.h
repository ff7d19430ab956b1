/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PYASYNC_H
#define PYROSPY_PYASYNC_H

#include <stddef.h>
#include <stdint.h>

#include "util/perr.h"
#include "stack/stack.h"

struct pyvm_layout;
struct rmem;
struct target;

/*
 * record --async: the asyncio task a thread is running, and the chain of
 * tasks awaiting it, as "<task> NAME" frames (pyreader.c puts them between
 * the event loop's frames and the task's own).
 *
 * CPython 3.14+: the thread state's asyncio_running_loop and
 * asyncio_running_task, and each task's task_awaited_by (one task, or a
 * set of them), where the target's AsyncioDebug section says (pytasks.h).
 * The chain stops at a task awaited by several tasks, with a frame
 * "<awaited by N tasks>" over it: any one of them would be a guess.
 *
 * Cheap per sample: the running task is one word of the thread state (in
 * the sample's window cache); each task of the chain is read again from
 * the sample's window cache (the same pages as last time: no system
 * call), its awaiter and name with it, before the walk of the stack, so
 * that nothing is shown from a task that is gone; after the walk the
 * running task and its name are read once more, from the process itself:
 * the stack is kept only when they are the same.
 */
#define PYASYNC_DEPTH	64	/* tasks of one chain */
#define PYASYNC_RETRY	64	/* samples between looks for asyncio, at most */
#define PYASYNC_RELOOK	500	/* and for a replaced _current_tasks (3.9-3.13) */

struct pyasync;

/*
 * Whether record --async can read target t (by language, build and
 * version, before any reader exists): PERR_OK, else PERR_UNSUPPORTED and
 * *why.
 */
enum perr pyasync_supported(const struct target *t, const char **why);

/*
 * What the asyncio reader needs of the Python reader it serves, handed
 * over at its start (pyreader_async_host()): the reader's view of the
 * target's memory, the layout, where the runtime is, and a reader of a
 * dict's live entries (a combined table, at most max: else PERR_TOOBIG).
 */
struct pyasync_host {
	struct rmem *mem;
	const struct pyvm_layout *lay;
	uint64_t runtime;
	void *ctx;
	enum perr (*dict)(void *ctx, uint64_t dict, size_t max, uint64_t *key, uint64_t *value,
			  size_t *n);
};

struct pyasync *pyasync_new(const struct pyasync_host *h, struct target *t);
void pyasync_free(struct pyasync *a);

/*
 * The task running on the thread whose state is at tstate and whose
 * pthread id is thread_id (0: none, no
 * loop runs there, or asyncio is not imported yet).  fresh: read from the
 * process now, not from the sample's window cache.  *loop is set when
 * the thread runs an event loop (loop may be NULL).  samples: the
 * reader's sample count (when to look for asyncio again).
 */
uint64_t pyasync_running(struct pyasync *a, uint64_t tstate, uint64_t thread_id, int fresh,
			 int *loop, uint64_t samples);

/*
 * The chain of task: "<task> NAME" for it and for each task awaiting
 * it, innermost first, into out (at most max), their number in *n; and
 * where the task's coroutine frame is (the frame the stack holds while
 * the task runs) in *coro_frame.  The names stay valid until the next
 * call.  PERR_CORRUPT when what was read does not hold together.
 */
enum perr pyasync_chain(struct pyasync *a, uint64_t task, struct stack_frame *out,
			unsigned int max, unsigned int *n, uint64_t *coro_frame);

/*
 * 3.9-3.13: the tasks awaiting task, found as for a chain (its done
 * callbacks: a task's wakeup, gather()'s, a TaskGroup's, each checked),
 * each once, into out (at most max); how many.  0 on other versions.
 */
unsigned int pyasync_awaiters(struct pyasync *a, uint64_t task, uint64_t *out, unsigned int max);

/*
 * 3.9-3.13: the pthread id of the thread running the event loop at loop
 * (its _thread_id, set while run_forever() runs), 0 if none runs it.
 */
uint64_t pyasync_loop_thread(struct pyasync *a, uint64_t loop);

/*
 * After pyasync_running() with fresh: is the chain of task, read from
 * the process now, the one pyasync_chain() gave before the walk (n
 * frames, the names of a->shown)?  A task that ends and a new one that
 * gets its address (a free list) between the two reads may have the same
 * name and another chain (CI, 3.11: a "handler-0" that was ending, and
 * so awaited by no task, shown over the next "handler-0"'s frames).
 * The frames of the chain stay the ones pyasync_chain() gave.
 */
int pyasync_chain_same(struct pyasync *a, uint64_t task, unsigned int n);

#endif
