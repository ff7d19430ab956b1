/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "python/pyaio.h"
#include "python/pyvm.h"

/*
 * Where asyncio's tasks are, for dump --tasks and record --async (src/python/pyaio.h), x86-64
 * default (GIL) builds.
 *
 * 3.14 and 3.15: aio[] is the _Py_AsyncioModuleDebugOffsets the target
 * publishes (the AsyncioDebug ELF section of _asyncio, which pytasks.c
 * reads and checks against these), read from the .AsyncioDebug sections of
 * Debian's 3.14.10 _asyncio.cpython-314-x86_64-linux-gnu.so and of the
 * 3.15.2 python3.15 executable (_asyncio is built in there), sid chroot.
 * fut_state is not published: it is the int after task_awaited_by
 * (Modules/_asynciomodule.c, FutureObj_HEAD: fut_awaited_by, fut_state,
 * fut_is_task, fut_awaited_by_is_set), used only while the published task
 * offsets equal these.  The pos_* are where gen_object.gi_iframe,
 * gen_object.gi_frame_state, interpreter_frame.stackpointer,
 * set_object.used/table/mask and llist_node.next sit inside that
 * version's _Py_DebugOffsets (after the groups of
 * debug_offsets_3_1X.c: type, tuple, list, set, dict, float, long, bytes,
 * unicode, gc, gen_object, llist_node), and the values beside them the
 * ones read there on the live 3.14.10 and 3.15.2.  3.15 renumbered the
 * frame states (FRAME_SUSPENDED_YIELD_FROM -1 -> 2, FRAME_CLEARED 4 -> 5)
 * and keeps the awaited object one stack slot deeper (stackpointer[-2],
 * as Modules/_remote_debugging/asyncio.c reads it).
 */
const struct pyaio_published pyaio_published[] = {
	{
		.minor = 14,
		.aio = { 168, 136, 96, 108, 109, 128, 152, 225864, 10880, 936, 864, 872, 880 },
		.state = 104, .await_slot = 1, .yield_from = -1, .cleared = 4,
		.dbg_size = 760,
		.pos_gi_iframe = 680, .pos_gi_frame_state = 688, .pos_stackpointer = 296,
		.pos_set_used = 504, .pos_set_table = 512, .pos_set_mask = 520,
		.pos_llist_next = 696,
		.gi_iframe = 72, .gi_frame_state = 67, .stackpointer = 64,
		.set_used = 24, .set_table = 40, .set_mask = 32, .llist_next = 0,
	},
	{
		.minor = 15,
		.aio = { 168, 136, 96, 108, 109, 128, 152, 226240, 10856, 1104, 1024, 1032, 1048 },
		.state = 104, .await_slot = 2, .yield_from = 2, .cleared = 5,
		.dbg_size = 888,
		.pos_gi_iframe = 808, .pos_gi_frame_state = 816, .pos_stackpointer = 360,
		.pos_set_used = 600, .pos_set_table = 608, .pos_set_mask = 616,
		.pos_llist_next = 824,
		.gi_iframe = 72, .gi_frame_state = 67, .stackpointer = 64,
		.set_used = 24, .set_table = 40, .set_mask = 32, .llist_next = 0,
	},
};
const size_t pyaio_npublished = sizeof(pyaio_published) / sizeof(pyaio_published[0]);

/*
 * 3.8 to 3.13: nothing is published.  The C Task objects of _asyncio
 * are found in the registry asyncio.all_tasks() reads,
 * asyncio.tasks._all_tasks (3.9-3.11) or _scheduled_tasks (3.12+), a
 * WeakSet (its `data' set holds weakrefs, wr_object at 16), and from 3.12
 * the set _eager_tasks.  The TaskObj and coroutine offsets were found on
 * Debian's live 3.9.2 (bullseye), 3.11.2 (the bookworm host) and 3.13.5
 * (trixie) by matching what the program itself says: id() of a task's
 * coroutine, name and code object, fut_state of a pending and of a
 * finished task; they agree with Modules/_asynciomodule.c of each version
 * (task_fut_waiter, task_coro, task_name follow one another).  The frame
 * inside the coroutine: 3.9 gi_frame at 16 (a PyFrameObject: f_stacktop
 * 72, f_lasti 104); 3.11 gi_frame_state at 75 and the frame at 80, after
 * gi_code; 3.13 gi_frame_state at 67 and the frame at 72 (as 3.14's
 * debug offsets say of 3.14).  Whether the coroutine is suspended in an
 * await, as CPython's _PyGen_yf() decides it: 3.13 by gi_frame_state
 * (FRAME_SUSPENDED_YIELD_FROM, -1), 3.11 by the instruction after
 * prev_instr (RESUME, or RESUME_QUICK once warm, with oparg >= 2: 151 and
 * 150 in Debian's 3.11 opcode module), 3.9 by the one after f_lasti
 * (YIELD_FROM, 72); the awaited object is then the frame's top stack
 * item (localsplus[stacktop - 1], stacktop an int at 64 of the frame in
 * 3.11 and 3.13; f_stacktop[-1] in 3.9).
 *
 * 3.8, 3.10 and 3.12, the pyenv builds 3.8.18, 3.10.13 and 3.12.1 (what
 * pyenv installs, and CI has): the TaskObj offsets found the same way, by
 * the words of a live task equal to id() of its coroutine, name, loop
 * and _fut_waiter, and the int that is 0 in a pending task and 2 in a
 * finished one; they agree with FutureObj_HEAD and TaskObj in
 * Modules/_asynciomodule.c of each (3.8: seven pointers from fut_loop
 * to fut_source_tb, then fut_state; 3.10: nine, with fut_exception_tb
 * and fut_cancel_msg, and a 32-byte _PyErr_StackItem
 * fut_cancelled_exc_state before task_fut_waiter; 3.12: 3.11's).  3.8's frames
 * are 3.9's (PyFrameObject: f_stacktop 72, f_lasti 104, YIELD_FROM 72);
 * 3.10's PyFrameObject (Include/cpython/frameobject.h) keeps
 * f_valuestack at 64 and an int f_stackdepth at 80 in place of
 * f_stacktop, and f_lasti (at 96) counts 2-byte code units, as its
 * _PyGen_yf() reads them (the awaited object f_valuestack[f_stackdepth
 * - 1], when code[(f_lasti + 1) * 2] is YIELD_FROM, 72).  3.12's
 * coroutine is 3.13's (_PyGenObject_HEAD of its cpython/genobject.h:
 * gi_frame_state at 67, the frame at 72; FRAME_CLEARED 4, stacktop at 64
 * of the frame, pycore_frame.h) and its _PyGen_yf() 3.11's: the
 * instruction after prev_instr is RESUME (151) or INSTRUMENTED_RESUME
 * (240) with oparg >= 2 (its opcode module).  Each was checked by dump
 * --tasks giving what the program's own all_tasks() says
 * (tests/test_pytasks.c, own_view_3_8, own_view_3_10, own_view_3_12;
 * record --async: tests/test_asyncrec.c, chains_pyenv).
 *
 * For record --async, who a task's done callbacks wake: FutureObj_HEAD
 * (Modules/_asynciomodule.c) starts with fut_loop, fut_callback0,
 * fut_context0, fut_callbacks (a list of (callback, context) tuples)
 * after the object header, in all of them; a task awaiting another is woken
 * by a TaskWakeupMethWrapper (3.8 and 3.9: ww_task right after the
 * header) or a builtin function task_wakeup whose m_self is the task
 * (3.10 on: PyCFunctionObject m_ml 16, m_self 24), as the program's own
 * Task._callbacks shows on each live interpreter; gather()'s callback is
 * a Python function whose closure holds `outer': func_closure at 48 in
 * 3.8 and 3.9 (after func_code, func_globals, func_defaults,
 * func_kwdefaults), at 72 from 3.10 (3.10: func_builtins, func_name,
 * func_qualname come before func_code; 3.11 COMMON_FIELDS: globals,
 * builtins, name, qualname, code, defaults, kwdefaults, then closure),
 * Include/funcobject.h, and id() of a closure found there live.
 */
const struct pyaio_registry pyaio_registry[] = {
	{
		.minor = 8, .registry = "_all_tasks",
		.state = 72, .fut_waiter = 104, .coro = 112, .name = 120,
		.gi_frame = 16, .gi_iframe = PYVM_NONE, .gi_frame_state = PYVM_NONE,
		.frame_lasti = 104, .stacktop = 72, .opcode = 72, .quick = 72,
		.fut_callback0 = 24, .fut_callbacks = 40, .func_closure = 48,
		.wakeup = "TaskWakeupMethWrapper", .wakeup_task = 16,
	},
	{
		.minor = 9, .registry = "_all_tasks",
		.state = 80, .fut_waiter = 144, .coro = 152, .name = 160,
		.gi_frame = 16, .gi_iframe = PYVM_NONE, .gi_frame_state = PYVM_NONE,
		.frame_lasti = 104, .stacktop = 72, .opcode = 72, .quick = 72,
		.fut_callback0 = 24, .fut_callbacks = 40, .func_closure = 48,
		.wakeup = "TaskWakeupMethWrapper", .wakeup_task = 16,
	},
	{
		.minor = 10, .registry = "_all_tasks",
		.state = 88, .fut_waiter = 152, .coro = 160, .name = 168,
		.gi_frame = 16, .gi_iframe = PYVM_NONE, .gi_frame_state = PYVM_NONE,
		.frame_lasti = 96, .stacktop = 80, .valuestack = 64, .opcode = 72, .quick = 72,
		.fut_callback0 = 24, .fut_callbacks = 40, .func_closure = 72,
		.wakeup = NULL, .wakeup_task = 24,
	},
	{
		.minor = 11, .registry = "_all_tasks",
		.state = 88, .fut_waiter = 128, .coro = 136, .name = 144,
		.gi_frame = PYVM_NONE, .gi_iframe = 80, .gi_frame_state = 75, .cleared = 4,
		.frame_lasti = PYVM_NONE, .stacktop = 64, .opcode = 151, .quick = 150,
		.fut_callback0 = 24, .fut_callbacks = 40, .func_closure = 72,
		.wakeup = NULL, .wakeup_task = 24,
	},
	{
		.minor = 12, .registry = "_scheduled_tasks",
		.state = 88, .fut_waiter = 128, .coro = 136, .name = 144,
		.gi_frame = PYVM_NONE, .gi_iframe = 72, .gi_frame_state = 67, .cleared = 4,
		.frame_lasti = PYVM_NONE, .stacktop = 64, .opcode = 151, .quick = 240,
		.fut_callback0 = 24, .fut_callbacks = 40, .func_closure = 72,
		.wakeup = NULL, .wakeup_task = 24,
	},
	{
		.minor = 13, .registry = "_scheduled_tasks",
		.state = 96, .fut_waiter = 112, .coro = 120, .name = 128,
		.gi_frame = PYVM_NONE, .gi_iframe = 72, .gi_frame_state = 67, .cleared = 4,
		.yield_from = -1, .frame_lasti = PYVM_NONE, .stacktop = 64,
		.fut_callback0 = 24, .fut_callbacks = 40, .func_closure = 72,
		.wakeup = NULL, .wakeup_task = 24,
	},
	{
		/*
		 * Free-threaded 3.13t: 3.13's, each object's field 16 bytes
		 * further (the 32-byte header; the frame inside the coroutine
		 * is no object: stacktop stays).  Checked on Debian's 3.13.5
		 * built with --disable-gil (scripts/build-python-ft): dump
		 * --tasks gives what the program's own all_tasks() says, and
		 * --async the chains it builds (gather, TaskGroup callbacks).
		 */
		.minor = 13, .free_threaded = 1, .registry = "_scheduled_tasks",
		.state = 112, .fut_waiter = 128, .coro = 136, .name = 144,
		.gi_frame = PYVM_NONE, .gi_iframe = 88, .gi_frame_state = 83, .cleared = 4,
		.yield_from = -1, .frame_lasti = PYVM_NONE, .stacktop = 64,
		.fut_callback0 = 40, .fut_callbacks = 56, .func_closure = 88,
		.wakeup = NULL, .wakeup_task = 40,
	},
};
const size_t pyaio_nregistry = sizeof(pyaio_registry) / sizeof(pyaio_registry[0]);
