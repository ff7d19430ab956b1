/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "python/pyvm.h"

/*
 * CPython 3.11, x86-64 Linux, default (GIL) build.
 *
 * Where the numbers come from: offsetof()/sizeof() compiled by
 * scripts/pyvm-offsets against Debian's libpython3.11-dev 3.11.2-6+deb12u9
 * headers on the host:
 *   scripts/pyvm-offsets / 3.11
 * Every number below is that program's output, unedited.
 * Versus Appendix A (3.11.7 headers): identical for every field.
 * Verified live (/usr/bin/python3.11): interpreters.head -> threads.head ->
 * tstate->interp points back, for both threads; cframe->current_frame
 * chain and code names decode; ceval.gil locked/last_holder and
 * gilstate.tstate_current read right.
 *
 * .code.firsttraceable (offsetof _co_firsttraceable) was added later from
 * the same program run against the same headers.
 * .frame.is_entry (offsetof(_PyInterpreterFrame, is_entry), 68, next to
 * owner at 69) was added later, compiled against the same headers.
 * .frames, .lines, .lasti_units and .stackref_tagged are not offsets: they
 * say how this version is walked (see src/pyvm.h) and were set from the
 * version's documented behaviour (research notes, sections 3-4).
 */
/*
 * .call_ops (pyvm.h): from Debian's 3.11 headers (opcode.h) and the
 * interpreter's own opcode._specializations.  CALL pushes a Python
 * function's frame (and so does any of its specialisations, which fall
 * back to it), BINARY_SUBSCR_GETITEM a __getitem__'s; both then leave
 * prev_instr on their last inline cache entry (JUMPBY(INLINE_CACHE_ENTRIES_*);
 * frame->prev_instr = next_instr - 1 in ceval.c): 4 of each.  SEND,
 * FOR_ITER and CALL_FUNCTION_EX reach Python code through C on 3.11 (an
 * entry frame, is_entry).
 */
static const uint8_t call_ops[256] = {
	/* CALL, CALL_ADAPTIVE, CALL_PY_EXACT_ARGS, CALL_PY_WITH_DEFAULTS: 4 caches */
	[171] = 5, [22] = 5, [23] = 5, [24] = 5,
	/* BINARY_SUBSCR and its specialisations (BINARY_SUBSCR_GETITEM, 19): 4 caches */
	[25] = 5, [17] = 5, [18] = 5, [19] = 5, [20] = 5, [21] = 5,
};

const struct pyvm_layout pyvm_python_3_11 = {
	.minor = 11,
	.frames = PYVM_CFRAME,
	.lines = PYVM_LOCATIONS,
	.lasti_units = 0,
	.stackref_tagged = 0,
	.call_ops = call_ops,
	.shim_owner = PYVM_NONE,
	.runtime = {
		.interpreters_head = 40,
		.tstate_current = 576,
		.gil_locked = 376,
		.gil_last_holder = 368,
		.gc_collecting = PYVM_NONE,
	},
	.interp = {
		.next = 0,
		.threads_head = 16,
		.id = 48,
		.ceval_gil = PYVM_NONE,
		.modules = 888,
		.gc_collecting = 848,
	},
	.gil = {
		.locked = 16,
		.last_holder = 8,
	},
	.tstate = {
		.size = 360,
		.next = 8,
		.interp = 16,
		.frame = 56,
		.cframe_current_frame = 8,
		.thread_id = 152,
		.native_thread_id = 160,
		.datastack_chunk = 296,
		.status = PYVM_NONE,
	},
	.frame = {
		.size = 80,
		.back = 48,
		.code = 32,
		.lasti = PYVM_NONE,
		.instr = 56,
		.owner = 69,
		.is_entry = 68,
		.localsplus = 72,
	},
	.code = {
		.size = 192,
		.filename = 112,
		.name = 120,
		.qualname = 128,
		.firstlineno = 72,
		.linetable = 136,
		.code = 184,
		.firsttraceable = 168,
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
