/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "python/pyvm.h"

/*
 * Layout of CPython 3.15's _Py_DebugOffsets (internal/pycore_debug_offsets.h):
 * each member is offsetof(_Py_DebugOffsets, group.field) of the entry
 * pyvm.h names, .size is sizeof(_Py_DebugOffsets), .<group>_size the
 * offset of that group's own `size' entry.
 *
 * Compiled by scripts/pyvm-offsets against Debian's libpython3.15-dev
 * 3.15.2-1 headers in the sid chroot
 * (scripts/pyvm-offsets /var/cache/pyrospy/chroots/sid 3.15).
 * Differs from 3.14, so it has its own table: thread_state gained
 * base_frame, last_profiled_frame, last_profiled_frame_seq (after
 * current_frame) and holds_gil, gil_requested, current_exception,
 * exc_state (after status); a new err_stackitem group follows it;
 * type_object gained tp_basicsize, tp_dictoffset; new heap_type_object
 * group; unicode_object gained compactunicodeobject_size; gc gained frame,
 * generation_stats_size, generation_stats.  Everything from
 * thread_state.thread_id on therefore moved.  Every field pyvm.h names
 * exists.
 *
 * Checked on a live python3.15 (3.15.2): cookie "xdebugpy", version
 * 0x30f02f0, free_threaded 0; the values read at these offsets equal the
 * offsetof()s in python_3_15.c (41/41), and the whole 888-byte image
 * equals the headers' _Py_DebugOffsets_INIT compiled with the build's
 * -D_Py_JIT -D_Py_TIER2=3 (without them runtime_state.size and
 * interpreter_state.size come out 8 bytes short).
 */
const struct pyvm_debug_layout pyvm_debug_3_15 = {
	.minor = 15,
	.size = 888,
	.runtime_size = 24,
	.runtime_interpreters_head = 40,
	.interp_size = 48,
	.interp_next = 64,
	.interp_threads_head = 72,
	.interp_id = 56,
	.interp_ceval_gil = 120,
	.interp_gil_locked = 144,
	.interp_gil_holder = 152,
	.interp_gil_runtime_state = 128,
	.interp_modules = 96,
	.interp_gc = 88,
	.gc_size = 752,
	.gc_collecting = 760,
	.tstate_size = 176,
	.tstate_next = 192,
	.tstate_interp = 200,
	.tstate_current_frame = 208,
	.tstate_thread_id = 240,
	.tstate_native_thread_id = 248,
	.tstate_datastack_chunk = 256,
	.tstate_status = 264,
	.tstate_last_profiled = 224,
	.tstate_last_profiled_seq = 232,
	.frame_size = 312,
	.frame_previous = 320,
	.frame_executable = 328,
	.frame_instr_ptr = 336,
	.frame_localsplus = 344,
	.frame_owner = 352,
	.frame_tlbc_index = 368,	/* after stackpointer */
	.code_size = 376,
	.code_filename = 384,
	.code_name = 392,
	.code_qualname = 400,
	.code_linetable = 408,
	.code_firstlineno = 416,
	.code_adaptive = 448,
	.code_tlbc = 456,
	.pyobject_size = 464,
	.pyobject_ob_type = 472,
	.unicode_size = 712,
	.unicode_state = 720,
	.unicode_length = 728,
	.unicode_ascii_size = 736,
	.bytes_size = 688,
	.bytes_ob_size = 696,
	.bytes_ob_sval = 704,
};
