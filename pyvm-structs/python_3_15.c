/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "python/pyvm.h"

/*
 * CPython 3.15, x86-64 Linux, default (GIL) build.
 *
 * Where the numbers come from: offsetof()/sizeof() compiled by
 * scripts/pyvm-offsets against Debian's libpython3.15-dev 3.15.2-1 headers
 * in the sid chroot:
 *   scripts/pyvm-offsets /var/cache/pyrospy/chroots/sid 3.15
 * Every number below is that program's output, unedited.
 * Debian builds 3.15 with --enable-experimental-jit=yes-off, so its core is
 * compiled with -D_Py_JIT -D_Py_TIER2=3 (taken by scripts/pyvm-offsets
 * from sysconfigdata).  `#if _Py_TIER2' adds a pointer to
 * _PyThreadStateImpl, so sizeof(PyInterpreterState) (226240) and
 * sizeof(_PyRuntimeState) (346568) are 8 bytes larger than the headers give
 * without the flag; no offset in this table depends on it.
 *
 * Changes from 3.14 (checked in the headers):
 * - PyThreadState gained base_frame, last_profiled_frame and
 *   last_profiled_frame_seq after current_frame: thread_id 176,
 *   native_thread_id 184, datastack_chunk 256, sizeof 888.
 * - PyInterpreterState: next 7264, id 7272, threads.head 7336,
 *   imports.modules 7592; _PyRuntime.interpreters.head 936.
 * - enum _frameowner lost FRAME_OWNED_BY_CSTACK; FRAME_OWNED_BY_INTERPRETER
 *   is still 3.  _PyInterpreterFrame and PyCodeObject are as in 3.14
 *   (f_executable a _PyStackRef, Py_TAG_BITS 3, co_code_adaptive 208).
 * - _status as in 3.14 (bit 5 = finalizing); holds_gil is an int at 36
 *   and 3.15's _Py_DebugOffsets now exports it (thread_state.holds_gil).
 * Verified live (python3.15 in the sid chroot): the 888-byte
 * _Py_DebugOffsets in _PyRuntime is byte-for-byte the one these headers
 * produce (with the flags above) and equals every offset here;
 * interpreters.head -> threads.head -> tstate->interp points back for
 * both threads; frame chain and code names decode (each thread's stack
 * now ends in two owner-3 frames: the entry frame and the thread's
 * base_frame); interp->ceval.gil == &interp->_gil.
 *
 * .code.firsttraceable (offsetof _co_firsttraceable) was added later from
 * the same program run against the same headers.
 * .frames, .lines, .lasti_units and .stackref_tagged are not offsets: they
 * say how this version is walked (see src/pyvm.h) and were set from the
 * version's documented behaviour (research notes, sections 3-4).
 */
const struct pyvm_layout pyvm_python_3_15 = {
	.minor = 15,
	.frames = PYVM_IFRAME,
	.lines = PYVM_LOCATIONS,
	.lasti_units = 0,
	.stackref_tagged = 1,
	.shim_owner = 3,	/* FRAME_OWNED_BY_INTERPRETER */
	.runtime = {
		.interpreters_head = 936,
		.tstate_current = PYVM_NONE,
		.gil_locked = PYVM_NONE,
		.gil_last_holder = PYVM_NONE,
		.gc_collecting = PYVM_NONE,
	},
	.interp = {
		.next = 7264,
		.threads_head = 7336,
		.id = 7272,
		.ceval_gil = 16,
		.modules = 7592,
		.gc_collecting = 7512,
		.func_version = 14264,
		/* scripts/pyvm-offsets' trailing comment against Debian's 3.15 headers */
		.func_version_sizes = { 226240, 0 },
	},
	.gil = {
		.locked = 16,
		.last_holder = 8,
	},
	.tstate = {
		.size = 888,
		.next = 8,
		.interp = 16,
		.frame = 72,
		.cframe_current_frame = PYVM_NONE,
		.thread_id = 176,
		.native_thread_id = 184,
		.datastack_chunk = 256,
		.status = 32,
		.last_profiled = 88,	/* and last_profiled_frame_seq at 96 */
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
