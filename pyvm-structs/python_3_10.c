/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "python/pyvm.h"

/*
 * CPython 3.10, x86-64 Linux, default (GIL) build.
 *
 * Where the numbers come from: Appendix A of
 * shared/research/cpython-internals.md, i.e. offsetof()/sizeof() compiled
 * from the CPython 3.10.13 headers (a pyenv build; there is no Debian 3.10
 * here).  Every offset below that Appendix A lists is taken from it:
 * _PyRuntime.interpreters.head/gilstate.tstate_current/ceval.gil.*,
 * interp.*, tstate.*, frame.*, code.*, unicode.*, bytes.*.
 * .gil.locked/.last_holder are Appendix A's `_PyRuntime.ceval.gil.locked' and
 *   `.last_holder' minus `_PyRuntime.ceval.gil (struct)' (368-352,
 *   360-352).
 * Not in Appendix A: .frame.localsplus (offsetof(PyFrameObject,
 *   f_localsplus); f_localsplus is the last member, = sizeof - 8) and
 *   .ob_type (offsetof(PyObject, ob_type)).
 *
 * All of it (Appendix A's values and the ones it lacks) was recompiled with
 *   scripts/pyvm-offsets /root/.pyenv/versions/3.10.13 3.10
 * against those same 3.10.13 headers (pyenv install on the build machine):
 * identical, field for field, and checked live on a 3.10.13 process
 * (interpreters.head -> threads.head -> tstate->interp back-pointer, frame
 * chain and code names decoded, GIL locked/last_holder read).
 *
 * .frame.state: offsetof() compiled against the pyenv 3.10 headers
 *   (session 6); .frame.state_running is
 *   not an offset: see its comment.
 * .frames, .lines, .lasti_units and .stackref_tagged are not offsets: they
 * say how this version is walked (see src/pyvm.h) and were set from the
 * version's documented behaviour (research notes, sections 3-4).
 */
const struct pyvm_layout pyvm_python_3_10 = {
	.minor = 10,
	.frames = PYVM_FRAMEOBJ,
	.lines = PYVM_LINETABLE,
	.lasti_units = 1,
	.stackref_tagged = 0,
	.shim_owner = PYVM_NONE,
	.runtime = {
		.interpreters_head = 32,
		.tstate_current = 568,
		.gil_locked = 368,
		.gil_last_holder = 360,
		.gc_collecting = PYVM_NONE,
	},
	.interp = {
		.next = 0,
		.threads_head = 8,
		.id = 24,
		.ceval_gil = PYVM_NONE,
		.modules = 856,
		.gc_collecting = 816,
	},
	.gil = {
		.locked = 16,
		.last_holder = 8,
	},
	.tstate = {
		.size = 280,
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
		.size = 360,
		.back = 24,
		.code = 32,
		.lasti = 96,
		.instr = PYVM_NONE,
		.owner = PYVM_NONE,
		.is_entry = PYVM_NONE,
		.localsplus = 352,
		.state = 108,		/* offsetof(PyFrameObject, f_state) */
		/* f_state is FRAME_EXECUTING (0) or, while an exception looks for a handler, FRAME_UNWINDING (2) (Include/cpython/frameobject.h) */
		.state_running = 1u << (0 + 2) | 1u << (2 + 2),
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
