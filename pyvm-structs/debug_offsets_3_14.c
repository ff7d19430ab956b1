/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "python/pyvm.h"

/*
 * Layout of CPython 3.14's _Py_DebugOffsets (moved to
 * internal/pycore_debug_offsets.h): each member is
 * offsetof(_Py_DebugOffsets, group.field) of the entry pyvm.h names, .size
 * is sizeof(_Py_DebugOffsets), .<group>_size the offset of that group's own
 * `size' entry.
 *
 * Compiled by scripts/pyvm-offsets against Debian's libpython3.14-dev
 * 3.14.10-1 headers in the sid chroot
 * (scripts/pyvm-offsets /var/cache/pyrospy/chroots/sid 3.14).
 * Differs from 3.13 from interpreter_state on: threads_main inserted after
 * threads_head, code_object_generation and tlbc_generation appended;
 * interpreter_frame gained stackpointer, tlbc_index; code_object co_tlbc;
 * new set_object, gen_object, llist_node, debugger_support groups.  Every
 * field pyvm.h names exists.  The table has no entry for
 * PyThreadState.holds_gil (offset 36), and thread_state.status points at
 * _status, whose bit 5 is no longer holds_gil in 3.14.
 *
 * Checked on a live python3.14 (3.14.10): cookie "xdebugpy", version
 * 0x30e0af0, free_threaded 0; the values read at these offsets equal the
 * offsetof()s in python_3_14.c (41/41), and the whole 760-byte image
 * equals the headers' _Py_DebugOffsets_INIT.
 */
const struct pyvm_debug_layout pyvm_debug_3_14 = {
	.minor = 14,
	.size = 760,
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
	.gc_size = 648,
	.gc_collecting = 656,
	.tstate_size = 176,
	.tstate_next = 192,
	.tstate_interp = 200,
	.tstate_current_frame = 208,
	.tstate_thread_id = 216,
	.tstate_native_thread_id = 224,
	.tstate_datastack_chunk = 232,
	.tstate_status = 240,
	.frame_size = 248,
	.frame_previous = 256,
	.frame_executable = 264,
	.frame_instr_ptr = 272,
	.frame_localsplus = 280,
	.frame_owner = 288,
	.frame_tlbc_index = 304,	/* after stackpointer */
	.code_size = 312,
	.code_filename = 320,
	.code_name = 328,
	.code_qualname = 336,
	.code_linetable = 344,
	.code_firstlineno = 352,
	.code_adaptive = 384,
	.code_tlbc = 392,
	.pyobject_size = 400,
	.pyobject_ob_type = 408,
	.unicode_size = 616,
	.unicode_state = 624,
	.unicode_length = 632,
	.unicode_ascii_size = 640,
	.bytes_size = 592,
	.bytes_ob_size = 600,
	.bytes_ob_sval = 608,
};
