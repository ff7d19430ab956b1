/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PYVM_H
#define PYROSPY_PYVM_H

#include <stddef.h>
#include <stdint.h>

/*
 * Where CPython keeps what a stack walk needs, for one layout (x86-64,
 * default GIL build).  The numbers live in pyvm-structs/, one file per
 * layout change; pyvm.c picks one by minor version.  From 3.13 on the
 * target publishes its own offsets (_Py_DebugOffsets at the start of
 * _PyRuntime) and pyvm_from_debug() overrides the shipped table with them.
 *
 *   _PyRuntime
 *     .interpreters.head --> PyInterpreterState --next--> ...
 *                              .threads.head --> PyThreadState --next--> ...
 *                                                  .frame / .cframe / .current_frame
 *                                                     |
 *   frame (PyFrameObject <= 3.10, _PyInterpreterFrame 3.11+)  --back/previous--> ...
 *     .code --> PyCodeObject { co_filename, co_name, co_qualname,
 *                              co_firstlineno, co_linetable, code }
 *
 * An offset of PYVM_NONE means "this version has no such field".
 */
#define PYVM_NONE UINT32_MAX
#define PYVM_CALLOP_ANY	0xff

enum pyvm_frames {
	PYVM_FRAMEOBJ,		/* 3.8-3.10: PyFrameObject chain, f_lasti */
	PYVM_CFRAME,		/* 3.11-3.12: tstate->cframe->current_frame, prev_instr */
	PYVM_IFRAME,		/* 3.13+: tstate->current_frame, instr_ptr */
};

enum pyvm_lines {
	PYVM_LNOTAB,		/* 3.8-3.9: co_lnotab, byte offsets */
	PYVM_LINETABLE,		/* 3.10: PEP 626 ranges, byte offsets */
	PYVM_LOCATIONS,		/* 3.11+: location table, code units */
};

struct pyvm_layout {
	unsigned int minor;		/* 3.minor */
	enum pyvm_frames frames;
	enum pyvm_lines lines;
	int lasti_units;		/* f_lasti counts 2-byte units (3.10) */
	int stackref_tagged;		/* 3.14+: mask low 2 bits of f_executable */
	/*
	 * Free-threaded builds (--disable-gil, 3.13+), known only from the
	 * target's _Py_DebugOffsets: no GIL; the object header is 32 bytes
	 * (ob_tid, flags, mutex, gc bits, ob_ref_local, ob_ref_shared,
	 * ob_type), so every field after it sits head_extra (16) bytes
	 * further than in the GIL build; 3.14+ keeps str's `interned' in a
	 * whole byte, which moves the other state bits up by state_shift (6).
	 */
	int free_threaded;
	uint32_t head_extra;
	uint32_t shim_owner;		/* frames with owner >= this are shims; NONE: no shims */
	/*
	 * 3.11-3.13: the instructions from which a frame runs a Python
	 * function's frame in the same run of the interpreter loop (no entry
	 * frame between them): call_ops[opcode] is 1 + the code units from
	 * the instruction to where its frame's instruction pointer stays while
	 * the callee runs (its inline cache entries on 3.11 and 3.12, none on
	 * 3.13), PYVM_CALLOP_ANY for an opcode that stands in for another
	 * (instrumentation, a trace), 0 for any other.  A whole family of
	 * specialised instructions is listed when one of them calls: the
	 * bytecode pyrospy keeps was read once, and may have been specialised
	 * since.  NULL: not checked (see pyreader.c, caller_calls()).
	 */
	const uint8_t *call_ops;

	struct {
		uint32_t interpreters_head;
		uint32_t tstate_current;	/* gilstate.tstate_current (<= 3.11) */
		uint32_t gil_locked;		/* ceval.gil.locked (<= 3.11) */
		uint32_t gil_last_holder;	/* ceval.gil.last_holder (<= 3.11) */
		uint32_t gc_collecting;		/* gc.collecting, an int (3.8) */
	} runtime;
	struct {
		uint32_t next;
		uint32_t threads_head;
		uint32_t id;
		uint32_t ceval_gil;		/* 3.12+: pointer to struct _gil_runtime_state */
		uint32_t modules;		/* sys.modules dict */
		uint32_t gc_collecting;		/* gc.collecting, an int (3.9+) */
		/*
		 * 3.13+: func_state.next_version, the uint32 every new code
		 * object takes its co_version from and counts on (0: once
		 * exhausted); 0 here: not known.  Only for an interpreter
		 * state of one of the sizes it was found in (the debug
		 * offsets give the size; the counter's place they do not).
		 */
		uint32_t func_version;
		uint32_t func_version_sizes[2];
		uint32_t func_version_ft, func_version_ft_size;	/* the same, free-threaded */
	} interp;
	struct {
		uint32_t locked;		/* offsets inside struct _gil_runtime_state */
		uint32_t last_holder;
	} gil;
	struct {
		uint32_t size;
		uint32_t next;
		uint32_t interp;
		uint32_t frame;			/* frame, cframe or current_frame */
		uint32_t cframe_current_frame;	/* inside _PyCFrame (3.11-3.12) */
		uint32_t thread_id;		/* pthread_t */
		uint32_t native_thread_id;	/* kernel tid, 3.11+ */
		uint32_t datastack_chunk;	/* 3.11+ */
		uint32_t status;		/* 3.13+: _status bitfield; bit 5 is holds_gil in 3.13 only */
		/*
		 * 3.15+: last_profiled_frame, its _seq the next word (pyreader.c,
		 * the anchor); 0: none (offset 0 is `prev')
		 */
		uint32_t last_profiled;
	} tstate;
	struct {
		uint32_t size;
		uint32_t back;			/* f_back / previous */
		uint32_t code;			/* f_code / f_executable */
		uint32_t lasti;			/* int f_lasti (<= 3.10) */
		uint32_t instr;			/* prev_instr / instr_ptr (3.11+) */
		uint32_t owner;			/* char owner (3.11+) */
		uint32_t is_entry;		/* bool is_entry (3.11 only): run from C */
		uint32_t localsplus;
		uint32_t tlbc_index;		/* 3.14+ free-threaded: int32 index of the
						   thread's bytecode copy; 0: none */
		/*
		 * <= 3.10: char f_executing (3.8, 3.9) or f_state (3.10),
		 * and the values it has on a frame of a thread's stack, as
		 * a mask: bit (value + 2) set for each.  A frame freed or
		 * put on a free list says otherwise.
		 */
		uint32_t state;
		uint32_t state_running;
	} frame;
	struct {
		uint32_t size;
		uint32_t filename;
		uint32_t name;
		uint32_t qualname;		/* 3.11+ */
		uint32_t firstlineno;
		uint32_t linetable;		/* co_lnotab / co_linetable */
		uint32_t code;			/* co_code bytes (<= 3.10) or co_code_adaptive */
		uint32_t tlbc;			/* 3.14+ free-threaded: _PyCodeArray *co_tlbc
						   {size; entries[]}; 0: none */
		/*
		 * 3.11+: int _co_firsttraceable, the index of the first code
		 * unit a traceback shows the frame at (its RESUME); a frame
		 * not past it is incomplete (_PyFrame_IsIncomplete()) and
		 * CPython shows it nowhere.  PYVM_NONE: none (<= 3.10).
		 */
		uint32_t firsttraceable;
	} code;
	struct {
		uint32_t ascii_size;		/* sizeof(PyASCIIObject) */
		uint32_t compact_size;		/* sizeof(PyCompactUnicodeObject) */
		uint32_t length;
		uint32_t state;
		uint32_t state_shift;		/* kind at bit 2 + shift, compact 5, ascii 6 */
	} unicode;
	struct {
		uint32_t ob_size;
		uint32_t ob_sval;
	} bytes;
	uint32_t ob_type;
};

/*
 * Where each field sits inside _Py_DebugOffsets (3.13+), for one layout of
 * that struct.  The struct does not describe itself and changed between
 * 3.13 and 3.14, so it is data like the rest.  The cookie is at 0, the
 * version (PY_VERSION_HEX) at 8, free_threaded at 16.  frame_tlbc_index
 * and code_tlbc are PYVM_NONE before 3.14 (0 would be read as an offset).
 */
struct pyvm_debug_layout {
	unsigned int minor;
	uint32_t size;				/* bytes to read from _PyRuntime */
	uint32_t runtime_size, runtime_interpreters_head;
	uint32_t interp_size, interp_next, interp_threads_head, interp_id,
		 interp_ceval_gil, interp_gil_locked, interp_gil_holder,
		 interp_gil_runtime_state, interp_modules, interp_gc;
	uint32_t gc_size, gc_collecting;
	uint32_t tstate_size, tstate_next, tstate_interp, tstate_current_frame,
		 tstate_thread_id, tstate_native_thread_id, tstate_datastack_chunk,
		 tstate_status;
	uint32_t tstate_last_profiled, tstate_last_profiled_seq;	/* 3.15+; else 0 */
	uint32_t frame_size, frame_previous, frame_executable, frame_instr_ptr,
		 frame_localsplus, frame_owner, frame_tlbc_index;
	uint32_t code_size, code_filename, code_name, code_qualname, code_linetable,
		 code_firstlineno, code_adaptive, code_tlbc;
	uint32_t pyobject_size, pyobject_ob_type;
	uint32_t unicode_size, unicode_state, unicode_length, unicode_ascii_size;
	uint32_t bytes_size, bytes_ob_size, bytes_ob_sval;
};

/*
 * Offset off of an object's field as the GIL build has it (16: the first
 * word after the header), in layout L's build.
 */
#define PYVM_OFF(L, off) ((off) + (L)->head_extra)

#define PYVM_MIN_MINOR 8
#define PYVM_MAX_MINOR 15

/* The shipped layout for 3.minor, or NULL if unsupported. */
const struct pyvm_layout *pyvm_find(unsigned int minor);

/*
 * The versions that have a layout, "3.8 3.9 ..." (for --version), into
 * buf of cap bytes, cut short if it does not fit.
 */
void pyvm_versions(char *buf, size_t cap);

/* The _Py_DebugOffsets layout for 3.minor (13+), or NULL. */
const struct pyvm_debug_layout *pyvm_debug_find(unsigned int minor);

/*
 * Fill *out from a _Py_DebugOffsets image (buf, len bytes, as read from
 * the target) described by dl, starting from the shipped layout `base'
 * for what the table does not carry.  Every offset is checked against the
 * size its own group declares; returns 0 on success, -1 if the image is
 * inconsistent (then *out is unspecified).  *mismatch counts the fields
 * where the target disagreed with the shipped table.
 */
int pyvm_from_debug(struct pyvm_layout *out, const struct pyvm_layout *base,
		    const struct pyvm_debug_layout *dl, const void *buf, size_t len,
		    unsigned int *mismatch);

#endif
