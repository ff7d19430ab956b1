/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "python/pyvm.h"

/*
 * CPython 3.12, x86-64 Linux, default (GIL) build.
 *
 * Where the numbers come from: Appendix A of
 * shared/research/cpython-internals.md, i.e. offsetof()/sizeof() compiled
 * from the CPython 3.12.1 headers (a pyenv build; there is no Debian 3.12
 * here).  Every offset below that Appendix A lists is taken from it:
 * _PyRuntime.interpreters.head/gilstate.tstate_current/ceval.gil.*,
 * interp.*, tstate.*, frame.*, code.*, unicode.*, bytes.*.
 * .gil.locked/.last_holder: the struct _gil_runtime_state layout given below
 *   Appendix A ({interval 0; last_holder 8; locked 16}; also
 *   `interp._gil.locked' 1056 - `interp._gil.last_holder' 1048 + 8).
 * .shim_owner: FRAME_OWNED_BY_CSTACK (3) in 3.12's enum _frameowner.
 * Not in Appendix A: .ob_type (offsetof(PyObject, ob_type)).
 *
 * All of it (Appendix A's values and the ones it lacks) was recompiled with
 *   scripts/pyvm-offsets /root/.pyenv/versions/3.12.1 3.12
 * against those same 3.12.1 headers (pyenv install on the build machine):
 * identical, field for field, and checked live on a 3.12.1 process
 * (interpreters.head -> threads.head -> tstate->interp back-pointer, frame
 * chain and code names decoded, GIL locked/last_holder read).
 *
 * .code.firsttraceable (offsetof _co_firsttraceable) was added later from
 * the same program run against the same headers.
 * .frames, .lines, .lasti_units and .stackref_tagged are not offsets: they
 * say how this version is walked (see src/pyvm.h) and were set from the
 * version's documented behaviour (research notes, sections 3-4).
 */
/*
 * .call_ops (pyvm.h): from the 3.12.1 headers (opcode.h) and the
 * interpreter's own opcode._specializations.  An instruction that runs a
 * Python frame in the same loop ends with DISPATCH_INLINED(), which
 * leaves prev_instr on its last inline cache entry (next_instr - 1 after
 * SKIP_OVER(INLINE_CACHE_ENTRIES_*)): CALL and its family (3 caches; any
 * of them falls back to CALL), CALL_FUNCTION_EX (none), BINARY_SUBSCR_GETITEM
 * (1), LOAD_ATTR_PROPERTY and LOAD_ATTR_GETATTRIBUTE_OVERRIDDEN (9),
 * FOR_ITER_GEN (1), SEND and SEND_GEN (1), with their families, and the
 * instrumented CALL, CALL_FUNCTION_EX and FOR_ITER.  INSTRUMENTED_LINE and
 * INSTRUMENTED_INSTRUCTION keep the instruction they replace elsewhere.
 */
static const uint8_t call_ops[256] = {
	/* CALL and its specialisations: 3 caches */
	[171] = 4, [23] = 4, [24] = 4, [28] = 4, [29] = 4, [34] = 4, [38] = 4, [39] = 4,
	[40] = 4, [41] = 4, [42] = 4, [43] = 4, [44] = 4, [45] = 4, [46] = 4, [47] = 4,
	[48] = 4, [56] = 4,
	/* CALL_FUNCTION_EX */
	[142] = 1,
	/* BINARY_SUBSCR and its specialisations: 1 cache */
	[25] = 2, [19] = 2, [20] = 2, [21] = 2, [22] = 2,
	/* LOAD_ATTR and its specialisations: 9 caches */
	[106] = 10, [70] = 10, [72] = 10, [73] = 10, [76] = 10, [77] = 10, [78] = 10,
	[79] = 10, [80] = 10, [81] = 10, [82] = 10,
	/* FOR_ITER and its specialisations: 1 cache */
	[93] = 2, [62] = 2, [63] = 2, [64] = 2, [65] = 2,
	/* SEND, SEND_GEN: 1 cache */
	[123] = 2, [168] = 2,
	/* INSTRUMENTED_CALL, INSTRUMENTED_CALL_FUNCTION_EX, INSTRUMENTED_FOR_ITER */
	[241] = 4, [244] = 1, [248] = 2,
	/* INSTRUMENTED_INSTRUCTION, INSTRUMENTED_LINE */
	[253] = PYVM_CALLOP_ANY, [254] = PYVM_CALLOP_ANY,
};

const struct pyvm_layout pyvm_python_3_12 = {
	.minor = 12,
	.frames = PYVM_CFRAME,
	.lines = PYVM_LOCATIONS,
	.lasti_units = 0,
	.stackref_tagged = 0,
	.call_ops = call_ops,
	.shim_owner = 3,	/* FRAME_OWNED_BY_CSTACK */
	.runtime = {
		.interpreters_head = 40,
		.tstate_current = PYVM_NONE,
		.gil_locked = PYVM_NONE,
		.gil_last_holder = PYVM_NONE,
		.gc_collecting = PYVM_NONE,
	},
	.interp = {
		.next = 0,
		.threads_head = 72,
		.id = 8,
		.ceval_gil = 384,
		.modules = 944,
		.gc_collecting = 312,
	},
	.gil = {
		.locked = 16,
		.last_holder = 8,
	},
	.tstate = {
		.size = 288,
		.next = 8,
		.interp = 16,
		.frame = 56,
		.cframe_current_frame = 0,
		.thread_id = 136,
		.native_thread_id = 144,
		.datastack_chunk = 232,
		.status = PYVM_NONE,
	},
	.frame = {
		.size = 80,
		.back = 8,
		.code = 0,
		.lasti = PYVM_NONE,
		.instr = 56,
		.owner = 70,
		.is_entry = PYVM_NONE,
		.localsplus = 72,
	},
	.code = {
		.size = 200,
		.filename = 112,
		.name = 120,
		.qualname = 128,
		.firstlineno = 68,
		.linetable = 136,
		.code = 192,
		.firsttraceable = 176,
	},
	.unicode = {
		.ascii_size = 40,
		.compact_size = 56,
		.length = 16,
		.state = 32,
	},
	.bytes = {
		.ob_size = 16,
		.ob_sval = 32,
	},
	.ob_type = 8,
};
