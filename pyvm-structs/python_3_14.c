/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "python/pyvm.h"

/*
 * CPython 3.14, x86-64 Linux, default (GIL) build.
 *
 * Where the numbers come from: offsetof()/sizeof() compiled by
 * scripts/pyvm-offsets against Debian's libpython3.14-dev 3.14.10-1 headers
 * in the sid chroot:
 *   scripts/pyvm-offsets /var/cache/pyrospy/chroots/sid 3.14
 * Every number below is that program's output, unedited.
 * Debian builds 3.14 with --enable-experimental-jit=yes-off, so its core is
 * compiled with -D_Py_JIT -D_Py_TIER2=3; scripts/pyvm-offsets takes those
 * from the build's sysconfigdata.  They change nothing in 3.14's structs.
 *
 * What 3.14's headers renamed or changed (checked in the headers):
 * - _PyInterpreterFrame.f_executable is now a _PyStackRef
 *   (union { uintptr_t bits; }), still at 0: mask the tag bits
 *   (Py_TAG_BITS is 3 in these GIL-build headers), hence .stackref_tagged.
 *   f_funcobj and localsplus[] are _PyStackRef too.  previous, instr_ptr
 *   and owner keep their names; sizeof is 88, owner 74, localsplus 80.
 * - enum _frameowner: FRAME_OWNED_BY_INTERPRETER = 3 (the entry frame),
 *   FRAME_OWNED_BY_CSTACK = 4; .shim_owner is FRAME_OWNED_BY_INTERPRETER.
 * - co_code_adaptive keeps its name (208); sizeof(PyCodeObject) 216.
 * - PyThreadState._status lost holds_gil: bits are initialized, bound,
 *   unbound, bound_gilstate, active, finalizing (bit 5!), cleared,
 *   finalized.  Whether a thread holds the GIL is now a separate
 *   `int holds_gil' at offset 36, which 3.14's _Py_DebugOffsets does not
 *   export.  .tstate.status is still offsetof(_status) (= the debug
 *   table's thread_state.status) but bit 5 of it no longer means
 *   holds_gil (live: 0x01b for a thread spinning with the GIL).
 * - current_frame, threads.head, imports.modules, ceval.gil unchanged in
 *   name; _PyRuntime.interpreters.head moved to 808.
 * Verified live (python3.14 in the sid chroot): the 760-byte
 * _Py_DebugOffsets in _PyRuntime is byte-for-byte the one these headers
 * produce and equals every offset here; interpreters.head ->
 * threads.head -> tstate->interp points back for both threads; frame chain
 * (f_executable & ~3) and code names decode, shims have owner 3;
 * interp->ceval.gil == &interp->_gil, locked/last_holder right.
 *
 * .code.firsttraceable (offsetof _co_firsttraceable) was added later from
 * the same program run against the same headers.
 * .frames, .lines, .lasti_units and .stackref_tagged are not offsets: they
 * say how this version is walked (see src/pyvm.h) and were set from the
 * version's documented behaviour (research notes, sections 3-4).
 */
const struct pyvm_layout pyvm_python_3_14 = {
	.minor = 14,
	.frames = PYVM_IFRAME,
	.lines = PYVM_LOCATIONS,
	.lasti_units = 0,
	.stackref_tagged = 1,
	.shim_owner = 3,	/* FRAME_OWNED_BY_INTERPRETER */
	.runtime = {
		.interpreters_head = 808,
		.tstate_current = PYVM_NONE,
		.gil_locked = PYVM_NONE,
		.gil_last_holder = PYVM_NONE,
		.gc_collecting = PYVM_NONE,
	},
	.interp = {
		.next = 7272,
		.threads_head = 7344,
		.id = 7280,
		.ceval_gil = 16,
		.modules = 7688,
		.gc_collecting = 7600,
		.func_version = 14256,
		/* scripts/pyvm-offsets' trailing comment against Debian's 3.14 headers */
		.func_version_sizes = { 225864, 0 },
	},
	.gil = {
		.locked = 16,
		.last_holder = 8,
	},
	.tstate = {
		.size = 832,
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
		.size = 88,
		.back = 8,
		.code = 0,
		.lasti = PYVM_NONE,
		.instr = 56,
		.owner = 74,
		.is_entry = PYVM_NONE,
		.localsplus = 80,
	},
	.code = {
		.size = 216,
		.filename = 112,
		.name = 120,
		.qualname = 128,
		.firstlineno = 68,
		.linetable = 136,
		.code = 208,
		.firsttraceable = 192,
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
