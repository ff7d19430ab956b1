/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "python/pyvm.h"

/*
 * CPython 3.8, x86-64 Linux, default (GIL) build.
 *
 * Where the numbers come from: Appendix A of
 * shared/research/cpython-internals.md, i.e. offsetof()/sizeof() compiled
 * from the CPython 3.8.18 headers (a pyenv build; there is no Debian 3.8
 * here).  Every offset below that Appendix A lists is taken from it:
 * _PyRuntime.interpreters.head/gilstate.tstate_current/ceval.gil.*,
 * interp.*, tstate.*, frame.*, code.*, unicode.*, bytes.*.
 * .gil.locked/.last_holder are Appendix A's `_PyRuntime.ceval.gil.locked' and
 *   `.last_holder' minus `_PyRuntime.ceval.gil (struct)' (1168-1152,
 *   1160-1152).
 * Not in Appendix A: .frame.localsplus (offsetof(PyFrameObject,
 *   f_localsplus); f_localsplus is the last member, = sizeof - 8) and
 *   .ob_type (offsetof(PyObject, ob_type)).
 *
 * All of it (Appendix A's values and the ones it lacks) was recompiled with
 *   scripts/pyvm-offsets /root/.pyenv/versions/3.8.18 3.8
 * against those same 3.8.18 headers (pyenv install on the build machine):
 * identical, field for field, and checked live on a 3.8.18 process
 * (interpreters.head -> threads.head -> tstate->interp back-pointer, frame
 * chain and code names decoded, GIL locked/last_holder read).
 *
 * .frame.state: offsetof() compiled against the pyenv 3.8 headers
 *   (session 6); .frame.state_running is
 *   not an offset: see its comment.
 * .frames, .lines, .lasti_units and .stackref_tagged are not offsets: they
 * say how this version is walked (see src/pyvm.h) and were set from the
 * version's documented behaviour (research notes, sections 3-4).
 */
const struct pyvm_layout pyvm_python_3_8 = {
	.minor = 8,
	.frames = PYVM_FRAMEOBJ,
	.lines = PYVM_LNOTAB,
	.lasti_units = 0,
	.stackref_tagged = 0,
	.shim_owner = PYVM_NONE,
	.runtime = {
		.interpreters_head = 32,
		.tstate_current = 1368,
		.gil_locked = 1168,
		.gil_last_holder = 1160,
		.gc_collecting = 544,
	},
	.interp = {
		.next = 0,
		.threads_head = 8,
		.id = 16,
		.ceval_gil = PYVM_NONE,
		.modules = 56,
		.gc_collecting = PYVM_NONE,
	},
	.gil = {
		.locked = 16,
		.last_holder = 8,
	},
	.tstate = {
		.size = 264,
		.next = 8,
		.interp = 16,
		.frame = 24,
		.cframe_current_frame = PYVM_NONE,
		.thread_id = 176,
		.native_thread_id = PYVM_NONE,
		.datastack_chunk = PYVM_NONE,
		.status = PYVM_NONE,
	},
	.frame = {
		.size = 368,
		.back = 24,
		.code = 32,
		.lasti = 104,
		.instr = PYVM_NONE,
		.owner = PYVM_NONE,
		.is_entry = PYVM_NONE,
		.localsplus = 360,
		.state = 116,		/* offsetof(PyFrameObject, f_executing) */
		/* f_executing is 1 while the frame runs (Objects/frameobject.c, Python/ceval.c) */
		.state_running = 1u << (1 + 2),
	},
	.code = {
		.size = 176,
		.filename = 104,
		.name = 112,
		.qualname = PYVM_NONE,
		.firstlineno = 40,
		.linetable = 120,
		.code = 48,
		.firsttraceable = PYVM_NONE,
	},
	.unicode = {
		.ascii_size = 48,
		.compact_size = 72,
		.length = 16,
		.state = 32,
	},
	.bytes = {
		.ob_size = 16,
		.ob_sval = 32,
	},
	.ob_type = 8,
};
