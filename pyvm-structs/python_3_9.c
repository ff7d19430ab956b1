/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "python/pyvm.h"

/*
 * CPython 3.9, x86-64 Linux, default (GIL) build.
 *
 * Where the numbers come from: offsetof()/sizeof() compiled by
 * scripts/pyvm-offsets against Debian's libpython3.9-dev 3.9.2-1 headers
 * in the bullseye chroot:
 *   scripts/pyvm-offsets /var/cache/pyrospy/chroots/bullseye 3.9
 * Every number below is that program's output, unedited.
 * Versus Appendix A (3.9.18 headers): every field here is identical; only
 * sizeof(PyInterpreterState), which this table does not carry, differs
 * (5648 in 3.9.2, 5656 in 3.9.18).
 * Verified live (python3.9 in the bullseye chroot): interpreters.head ->
 * tstate_head -> tstate->interp points back, for both threads; frame chain
 * (f_back/f_code) and co_name/co_filename decode; ceval.gil locked and
 * last_holder read right for a sleeping and for a spinning thread.
 *
 * .frame.state: offsetof() compiled against the pyenv 3.9 headers
 *   (session 6); .frame.state_running is
 *   not an offset: see its comment.
 * .frames, .lines, .lasti_units and .stackref_tagged are not offsets: they
 * say how this version is walked (see src/pyvm.h) and were set from the
 * version's documented behaviour (research notes, sections 3-4).
 */
const struct pyvm_layout pyvm_python_3_9 = {
	.minor = 9,
	.frames = PYVM_FRAMEOBJ,
	.lines = PYVM_LNOTAB,
	.lasti_units = 0,
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
		/* f_executing is 1 while the frame runs (Python/ceval.c) */
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
