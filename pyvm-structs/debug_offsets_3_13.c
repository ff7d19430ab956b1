/* SPDX-License-Identifier: MIT */
#include "config.h"
#include "python/pyvm.h"

/*
 * Layout of CPython 3.13's _Py_DebugOffsets (internal/pycore_runtime.h):
 * each member is offsetof(_Py_DebugOffsets, group.field) of the entry
 * pyvm.h names, .size is sizeof(_Py_DebugOffsets), .<group>_size the
 * offset of that group's own `size' entry.
 *
 * Compiled by scripts/pyvm-offsets against Debian's libpython3.13-dev
 * 3.13.5-2+deb13u5 headers in the trixie chroot
 * (scripts/pyvm-offsets /var/cache/pyrospy/chroots/trixie 3.13), and
 * unchanged from the 3.13.0 headers (pyenv).  Every field pyvm.h names
 * exists in 3.13's table.
 *
 * Checked on a live python3.13 (3.13.5): cookie "xdebugpy", version
 * 0x30d05f0, free_threaded 0; the values read at these offsets equal the
 * offsetof()s in python_3_13.c (41/41), and the whole 584-byte image equals
 * the one the headers' _PyRuntimeState_INIT produces.
 */
const struct pyvm_debug_layout pyvm_debug_3_13 = {
	.minor = 13,
	.size = 584,
	.runtime_size = 24,
	.runtime_interpreters_head = 40,
	.interp_size = 48,
	.interp_next = 64,
	.interp_threads_head = 72,
	.interp_id = 56,
	.interp_ceval_gil = 112,
	.interp_gil_locked = 136,
	.interp_gil_holder = 144,
	.interp_gil_runtime_state = 120,
	.interp_modules = 88,
	.interp_gc = 80,
	.gc_size = 568,
	.gc_collecting = 576,
	.tstate_size = 152,
	.tstate_next = 168,
	.tstate_interp = 176,
	.tstate_current_frame = 184,
	.tstate_thread_id = 192,
	.tstate_native_thread_id = 200,
	.tstate_datastack_chunk = 208,
	.tstate_status = 216,
	.frame_size = 224,
	.frame_previous = 232,
	.frame_executable = 240,
	.frame_instr_ptr = 248,
	.frame_localsplus = 256,
	.frame_owner = 264,
	.frame_tlbc_index = PYVM_NONE,
	.code_size = 272,
	.code_filename = 280,
	.code_name = 288,
	.code_qualname = 296,
	.code_linetable = 304,
	.code_firstlineno = 312,
	.code_adaptive = 344,
	.code_tlbc = PYVM_NONE,
	.pyobject_size = 352,
	.pyobject_ob_type = 360,
	.unicode_size = 536,
	.unicode_state = 544,
	.unicode_length = 552,
	.unicode_ascii_size = 560,
	.bytes_size = 512,
	.bytes_ob_size = 520,
	.bytes_ob_sval = 528,
};
