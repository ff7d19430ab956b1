/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "python/pyvm.h"

/*
 * CPython 3.13, x86-64 Linux, default (GIL) build.
 *
 * Where the numbers come from: offsetof()/sizeof() compiled by
 * scripts/pyvm-offsets against Debian's libpython3.13-dev 3.13.5-2+deb13u5
 * headers in the trixie chroot:
 *   scripts/pyvm-offsets /var/cache/pyrospy/chroots/trixie 3.13
 * Every number below is that program's output, unedited.
 * Versus Appendix A (3.13.0 headers): identical for every field here; only
 * sizes this table does not carry differ (sizeof(_PyRuntimeState) 283376
 * vs 283320, sizeof(PyInterpreterState) 194976 vs 194968).
 * .shim_owner: FRAME_OWNED_BY_CSTACK (3) in 3.13's enum _frameowner.
 * .tstate.status: offsetof(PyThreadState, _status); in 3.13 the bitfield
 *   has holds_gil at bit 5 (checked by setting it in a zeroed struct, and
 *   live: 0x03b for a thread spinning with the GIL, 0x00b for a sleeper).
 * Verified live (python3.13 in the trixie chroot): the 584-byte
 * _Py_DebugOffsets at the start of _PyRuntime is byte-for-byte the one
 * these headers produce, and its entries equal every offset here
 * (pyvm_debug_3_13 in debug_offsets_3_13.c); interpreters.head ->
 * threads.head -> tstate->interp points back for both threads; frame chain
 * and code names decode; interp->ceval.gil == &interp->_gil.
 *
 * .code.firsttraceable (offsetof _co_firsttraceable) was added later from
 * the same program run against the same headers.
 * .frames, .lines, .lasti_units and .stackref_tagged are not offsets: they
 * say how this version is walked (see src/pyvm.h) and were set from the
 * version's documented behaviour (research notes, sections 3-4).
 */
/*
 * .call_ops (pyvm.h): from Debian's 3.13 headers (opcode_ids.h) and the
 * interpreter's own _opcode_metadata._specializations (the same in the
 * free-threaded build).  3.13 sets instr_ptr as an instruction starts and
 * an instruction that runs a Python frame in the same loop leaves it
 * there: CALL and its family (any of them falls back to CALL), CALL_KW,
 * CALL_FUNCTION_EX, BINARY_SUBSCR_GETITEM, LOAD_ATTR_PROPERTY,
 * LOAD_ATTR_GETATTRIBUTE_OVERRIDDEN, FOR_ITER_GEN, SEND and SEND_GEN (with
 * their families) and the instrumented CALL, CALL_KW, CALL_FUNCTION_EX and
 * FOR_ITER.  EXIT_INIT_CHECK is where _Py_InitCleanup, the frame
 * CALL_ALLOC_AND_ENTER_INIT puts under __init__, waits.  INSTRUMENTED_LINE,
 * INSTRUMENTED_INSTRUCTION and ENTER_EXECUTOR keep the instruction they
 * replace elsewhere.
 */
static const uint8_t call_ops[256] = {
	/* CALL and its specialisations */
	[53] = 1, [162] = 1, [163] = 1, [164] = 1, [165] = 1, [166] = 1, [167] = 1, [168] = 1,
	[169] = 1, [170] = 1, [171] = 1, [172] = 1, [173] = 1, [174] = 1, [175] = 1,
	[176] = 1, [177] = 1, [178] = 1, [179] = 1, [180] = 1, [181] = 1,
	/* CALL_KW, CALL_FUNCTION_EX */
	[57] = 1, [54] = 1,
	/* BINARY_SUBSCR and its specialisations */
	[5] = 1, [157] = 1, [158] = 1, [159] = 1, [160] = 1, [161] = 1,
	/* LOAD_ATTR and its specialisations */
	[82] = 1, [191] = 1, [192] = 1, [193] = 1, [194] = 1, [195] = 1, [196] = 1, [197] = 1,
	[198] = 1, [199] = 1, [200] = 1, [201] = 1, [202] = 1,
	/* FOR_ITER and its specialisations */
	[72] = 1, [187] = 1, [188] = 1, [189] = 1, [190] = 1,
	/* SEND, SEND_GEN */
	[104] = 1, [208] = 1,
	/* INSTRUMENTED_FOR_ITER, _CALL, _CALL_KW, _CALL_FUNCTION_EX */
	[243] = 1, [244] = 1, [245] = 1, [246] = 1,
	/* EXIT_INIT_CHECK */
	[13] = 1,
	/* ENTER_EXECUTOR, INSTRUMENTED_INSTRUCTION, INSTRUMENTED_LINE */
	[70] = PYVM_CALLOP_ANY, [247] = PYVM_CALLOP_ANY, [254] = PYVM_CALLOP_ANY,
};

const struct pyvm_layout pyvm_python_3_13 = {
	.minor = 13,
	.frames = PYVM_IFRAME,
	.lines = PYVM_LOCATIONS,
	.lasti_units = 0,
	.stackref_tagged = 0,
	.call_ops = call_ops,
	.shim_owner = 3,	/* FRAME_OWNED_BY_CSTACK */
	.runtime = {
		.interpreters_head = 632,
		.tstate_current = PYVM_NONE,
		.gil_locked = PYVM_NONE,
		.gil_last_holder = PYVM_NONE,
		.gc_collecting = PYVM_NONE,
	},
	.interp = {
		.next = 7264,
		.threads_head = 7344,
		.id = 7272,
		.ceval_gil = 16,
		.modules = 7656,
		.gc_collecting = 7600,
		.func_version = 17000,
		/* scripts/pyvm-offsets' trailing comment against Debian's 3.13 headers, and 194968 from pyenv's 3.13.0 (the same offset) */
		.func_version_sizes = { 194976, 194968 },
		/*
		 * offsetof() and sizeof() against the free-threaded build's
		 * own tree (scripts/build-python-ft, Debian's 3.13 source)
		 * with Py_BUILD_CORE, as for _co_firsttraceable (pyvm.c)
		 */
		.func_version_ft = 20092,
		.func_version_ft_size = 215616,
	},
	.gil = {
		.locked = 16,
		.last_holder = 8,
	},
	.tstate = {
		.size = 304,
		.next = 8,
		.interp = 16,
		.frame = 72,
		.cframe_current_frame = PYVM_NONE,
		.thread_id = 152,
		.native_thread_id = 160,
		.datastack_chunk = 232,
		.status = 32,
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
		.size = 208,
		.filename = 112,
		.name = 120,
		.qualname = 128,
		.firstlineno = 68,
		.linetable = 136,
		.code = 200,
		.firsttraceable = 184,
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
