/* SPDX-License-Identifier: MIT */
/*
 * Print the CPython layout numbers pyrospy needs (struct pyvm_layout and,
 * for 3.13+, struct pyvm_debug_layout in src/pyvm.h) as C designated
 * initializers, computed with offsetof()/sizeof() against one CPython
 * version's own headers.  Built and run by scripts/pyvm-offsets, which
 * passes the include paths and -DPy_BUILD_CORE; the version comes from the
 * headers themselves (patchlevel.h).
 *
 * The output depends only on the headers and the x86-64 SysV ABI, so it is
 * the same on every re-run.  Supported: 3.8 .. 3.15 (default GIL builds).
 */
#include <Python.h>

#if PY_MAJOR_VERSION != 3 || PY_MINOR_VERSION < 8 || PY_MINOR_VERSION > 15
#error "pyvm-offsets: unsupported CPython version"
#endif
#ifdef Py_GIL_DISABLED
#error "pyvm-offsets: free-threaded headers are not supported"
#endif
#ifdef Py_DEBUG
#error "pyvm-offsets: debug (Py_DEBUG) headers are not supported"
#endif

#define MINOR PY_MINOR_VERSION

#if MINOR <= 10
#include <frameobject.h>
#endif
#if MINOR == 8
#include "internal/pycore_pystate.h"	/* _PyRuntimeState, PyInterpreterState */
#else
#include "internal/pycore_runtime.h"	/* _PyRuntimeState (+ _Py_DebugOffsets in 3.13) */
#include "internal/pycore_interp.h"	/* PyInterpreterState */
#endif
#if MINOR <= 13
#include "internal/pycore_gil.h"	/* struct _gil_runtime_state */
#endif
#if MINOR >= 11
#include "internal/pycore_frame.h"	/* _PyInterpreterFrame, enum _frameowner */
#endif
#if MINOR >= 14
#include "internal/pycore_debug_offsets.h"	/* _Py_DebugOffsets */
#include "internal/pycore_interpframe_structs.h"
#include "internal/pycore_stackref.h"	/* Py_TAG_BITS */
#endif

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define NONE "PYVM_NONE"

static void num(const char *field, size_t v)
{
	printf("\t\t.%s = %zu,\n", field, v);
}

static void none(const char *field)
{
	printf("\t\t.%s = " NONE ",\n", field);
}

static void group(const char *name)
{
	printf("\t.%s = {\n", name);
}

static void end(void)
{
	printf("\t},\n");
}

#define OFF(field, type, member) num(field, offsetof(type, member))
#define SIZE(field, type) num(field, sizeof(type))

static void layout(void)
{
	printf("const struct pyvm_layout pyvm_python_3_%d = {\n", MINOR);
	printf("\t.minor = %d,\n", MINOR);
#if MINOR <= 10
	printf("\t.frames = PYVM_FRAMEOBJ,\n");
#elif MINOR <= 12
	printf("\t.frames = PYVM_CFRAME,\n");
#else
	printf("\t.frames = PYVM_IFRAME,\n");
#endif
#if MINOR <= 9
	printf("\t.lines = PYVM_LNOTAB,\n");
#elif MINOR == 10
	printf("\t.lines = PYVM_LINETABLE,\n");
#else
	printf("\t.lines = PYVM_LOCATIONS,\n");
#endif
	printf("\t.lasti_units = %d,\n", MINOR == 10);
	printf("\t.stackref_tagged = %d,\n", MINOR >= 14);
	/* First owner value that marks a shim/entry frame (from the headers'
	 * own enum _frameowner). */
#if MINOR <= 11
	printf("\t.shim_owner = " NONE ",\n");
#elif MINOR <= 13
	printf("\t.shim_owner = %d,\t/* FRAME_OWNED_BY_CSTACK */\n",
	       (int)FRAME_OWNED_BY_CSTACK);
#else
	printf("\t.shim_owner = %d,\t/* FRAME_OWNED_BY_INTERPRETER */\n",
	       (int)FRAME_OWNED_BY_INTERPRETER);
#endif

	group("runtime");
	OFF("interpreters_head", _PyRuntimeState, interpreters.head);
#if MINOR <= 11
	OFF("tstate_current", _PyRuntimeState, gilstate.tstate_current);
	OFF("gil_locked", _PyRuntimeState, ceval.gil.locked);
	OFF("gil_last_holder", _PyRuntimeState, ceval.gil.last_holder);
#else
	none("tstate_current");
	none("gil_locked");
	none("gil_last_holder");
#endif
#if MINOR == 8
	OFF("gc_collecting", _PyRuntimeState, gc.collecting);
#else
	none("gc_collecting");
#endif
	end();

	group("interp");
	OFF("next", PyInterpreterState, next);
#if MINOR <= 10
	OFF("threads_head", PyInterpreterState, tstate_head);
#else
	OFF("threads_head", PyInterpreterState, threads.head);
#endif
	OFF("id", PyInterpreterState, id);
#if MINOR >= 12
	OFF("ceval_gil", PyInterpreterState, ceval.gil);
	OFF("modules", PyInterpreterState, imports.modules);
#else
	none("ceval_gil");
	OFF("modules", PyInterpreterState, modules);
#endif
#if MINOR >= 9
	OFF("gc_collecting", PyInterpreterState, gc.collecting);
#else
	none("gc_collecting");
#endif
	end();

	group("gil");
	OFF("locked", struct _gil_runtime_state, locked);
	OFF("last_holder", struct _gil_runtime_state, last_holder);
	end();

	group("tstate");
	SIZE("size", PyThreadState);
	OFF("next", PyThreadState, next);
	OFF("interp", PyThreadState, interp);
#if MINOR <= 10
	OFF("frame", PyThreadState, frame);
	none("cframe_current_frame");
	OFF("thread_id", PyThreadState, thread_id);
	none("native_thread_id");
	none("datastack_chunk");
#else
# if MINOR <= 12
	OFF("frame", PyThreadState, cframe);
	OFF("cframe_current_frame", _PyCFrame, current_frame);
# else
	OFF("frame", PyThreadState, current_frame);
	none("cframe_current_frame");
# endif
	OFF("thread_id", PyThreadState, thread_id);
	OFF("native_thread_id", PyThreadState, native_thread_id);
	OFF("datastack_chunk", PyThreadState, datastack_chunk);
#endif
#if MINOR >= 13
	OFF("status", PyThreadState, _status);
#else
	none("status");
#endif
#if MINOR >= 15
	/* its _seq the next word: pyvm.c checks it in _Py_DebugOffsets */
	OFF("last_profiled", PyThreadState, last_profiled_frame);
#endif
	end();

	group("frame");
#if MINOR <= 10
	SIZE("size", PyFrameObject);
	OFF("back", PyFrameObject, f_back);
	OFF("code", PyFrameObject, f_code);
	OFF("lasti", PyFrameObject, f_lasti);
	none("instr");
	none("owner");
	OFF("localsplus", PyFrameObject, f_localsplus);
#else
	SIZE("size", _PyInterpreterFrame);
	OFF("back", _PyInterpreterFrame, previous);
# if MINOR <= 12
	OFF("code", _PyInterpreterFrame, f_code);
	none("lasti");
	OFF("instr", _PyInterpreterFrame, prev_instr);
# else
	OFF("code", _PyInterpreterFrame, f_executable);
	none("lasti");
	OFF("instr", _PyInterpreterFrame, instr_ptr);
# endif
	OFF("owner", _PyInterpreterFrame, owner);
	OFF("localsplus", _PyInterpreterFrame, localsplus);
#endif
	end();

	group("code");
	SIZE("size", PyCodeObject);
	OFF("filename", PyCodeObject, co_filename);
	OFF("name", PyCodeObject, co_name);
#if MINOR >= 11
	OFF("qualname", PyCodeObject, co_qualname);
#else
	none("qualname");
#endif
	OFF("firstlineno", PyCodeObject, co_firstlineno);
#if MINOR <= 9
	OFF("linetable", PyCodeObject, co_lnotab);
#else
	OFF("linetable", PyCodeObject, co_linetable);
#endif
#if MINOR <= 10
	OFF("code", PyCodeObject, co_code);
	none("firsttraceable");
#else
	OFF("code", PyCodeObject, co_code_adaptive);
	OFF("firsttraceable", PyCodeObject, _co_firsttraceable);
#endif
	end();

	group("unicode");
	SIZE("ascii_size", PyASCIIObject);
	SIZE("compact_size", PyCompactUnicodeObject);
	OFF("length", PyASCIIObject, length);
	OFF("state", PyASCIIObject, state);
	end();

	group("bytes");
	OFF("ob_size", PyBytesObject, ob_base.ob_size);
	OFF("ob_sval", PyBytesObject, ob_sval);
	end();

	printf("\t.ob_type = %zu,\n", offsetof(PyObject, ob_type));
	printf("};\n");
}

#if MINOR >= 13
#define DOFF(field, member) \
	printf("\t.%s = %zu,\n", field, offsetof(_Py_DebugOffsets, member))

static void debug_layout(void)
{
	printf("\nconst struct pyvm_debug_layout pyvm_debug_3_%d = {\n", MINOR);
	printf("\t.minor = %d,\n", MINOR);
	printf("\t.size = %zu,\n", sizeof(_Py_DebugOffsets));
	DOFF("runtime_size", runtime_state.size);
	DOFF("runtime_interpreters_head", runtime_state.interpreters_head);
	DOFF("interp_size", interpreter_state.size);
	DOFF("interp_next", interpreter_state.next);
	DOFF("interp_threads_head", interpreter_state.threads_head);
	DOFF("interp_id", interpreter_state.id);
	DOFF("interp_ceval_gil", interpreter_state.ceval_gil);
	DOFF("interp_gil_locked", interpreter_state.gil_runtime_state_locked);
	DOFF("interp_gil_holder", interpreter_state.gil_runtime_state_holder);
	DOFF("interp_gil_runtime_state", interpreter_state.gil_runtime_state);
	DOFF("interp_modules", interpreter_state.imports_modules);
	DOFF("interp_gc", interpreter_state.gc);
	DOFF("gc_size", gc.size);
	DOFF("gc_collecting", gc.collecting);
	DOFF("tstate_size", thread_state.size);
	DOFF("tstate_next", thread_state.next);
	DOFF("tstate_interp", thread_state.interp);
	DOFF("tstate_current_frame", thread_state.current_frame);
	DOFF("tstate_thread_id", thread_state.thread_id);
	DOFF("tstate_native_thread_id", thread_state.native_thread_id);
	DOFF("tstate_datastack_chunk", thread_state.datastack_chunk);
	DOFF("tstate_status", thread_state.status);
#if MINOR >= 15
	DOFF("tstate_last_profiled", thread_state.last_profiled_frame);
	DOFF("tstate_last_profiled_seq", thread_state.last_profiled_frame_seq);
#endif
	DOFF("frame_size", interpreter_frame.size);
	DOFF("frame_previous", interpreter_frame.previous);
	DOFF("frame_executable", interpreter_frame.executable);
	DOFF("frame_instr_ptr", interpreter_frame.instr_ptr);
	DOFF("frame_localsplus", interpreter_frame.localsplus);
	DOFF("frame_owner", interpreter_frame.owner);
	DOFF("code_size", code_object.size);
	DOFF("code_filename", code_object.filename);
	DOFF("code_name", code_object.name);
	DOFF("code_qualname", code_object.qualname);
	DOFF("code_linetable", code_object.linetable);
	DOFF("code_firstlineno", code_object.firstlineno);
	DOFF("code_adaptive", code_object.co_code_adaptive);
	DOFF("pyobject_size", pyobject.size);
	DOFF("pyobject_ob_type", pyobject.ob_type);
	DOFF("unicode_size", unicode_object.size);
	DOFF("unicode_state", unicode_object.state);
	DOFF("unicode_length", unicode_object.length);
	DOFF("unicode_ascii_size", unicode_object.asciiobject_size);
	DOFF("bytes_size", bytes_object.size);
	DOFF("bytes_ob_size", bytes_object.ob_size);
	DOFF("bytes_ob_sval", bytes_object.ob_sval);
	printf("};\n");
}
#endif

#if MINOR >= 13
/* Bit positions inside the _status bitfield: set one bit in a zeroed
 * PyThreadState and see which bit of the 32-bit word changed. */
static void set_finalizing(PyThreadState *t) { t->_status.finalizing = 1; }
#if MINOR == 13
static void set_holds_gil(PyThreadState *t) { t->_status.holds_gil = 1; }
#endif

static int status_bit(size_t off, void (*set)(PyThreadState *))
{
	PyThreadState t;
	uint32_t w;
	int b;

	memset(&t, 0, sizeof(t));
	set(&t);
	memcpy(&w, (char *)&t + off, sizeof(w));
	for (b = 0; b < 32; b++)
		if (w == (uint32_t)1 << b)
			return b;
	return -1;
}
#endif

/* Values pyvm.h does not carry, printed as a comment for cross-checks
 * (e.g. against Appendix A of the research notes). */
static void extras(void)
{
	printf("\n/* not in pyvm.h (for cross-checks):\n");
	printf(" *   sizeof(_PyRuntimeState)              %zu\n", sizeof(_PyRuntimeState));
	printf(" *   _PyRuntime.interpreters.main         %zu\n",
	       offsetof(_PyRuntimeState, interpreters.main));
	printf(" *   sizeof(PyInterpreterState)           %zu\n", sizeof(PyInterpreterState));
	printf(" *   sizeof(struct _gil_runtime_state)    %zu\n", sizeof(struct _gil_runtime_state));
#if MINOR >= 12
	printf(" *   interp._gil                          %zu\n",
	       offsetof(PyInterpreterState, _gil));
	printf(" *   interp.func_state.next_version       %zu\n",
	       offsetof(PyInterpreterState, func_state.next_version));
	printf(" *   code.co_version                      %zu\n",
	       offsetof(PyCodeObject, co_version));
#endif
#if MINOR <= 10
	printf(" *   frame.f_lineno                       %zu\n", offsetof(PyFrameObject, f_lineno));
#endif
	printf(" *   code.co_argcount                     %zu\n", offsetof(PyCodeObject, co_argcount));
	printf(" *   sizeof(PyObject)                     %zu\n", sizeof(PyObject));
	printf(" *   sizeof(PyUnicodeObject)              %zu\n", sizeof(PyUnicodeObject));
	printf(" *   sizeof(PyBytesObject)                %zu\n", sizeof(PyBytesObject));
#if MINOR >= 13
	printf(" *   _Py_DebugOffsets.version             %zu\n",
	       offsetof(_Py_DebugOffsets, version));
	printf(" *   _Py_DebugOffsets.free_threaded       %zu\n",
	       offsetof(_Py_DebugOffsets, free_threaded));
#endif
#if MINOR == 13
	printf(" *   PyThreadState._status.holds_gil      bit %d\n",
	       status_bit(offsetof(PyThreadState, _status), set_holds_gil));
#endif
#if MINOR >= 13
	printf(" *   PyThreadState._status.finalizing     bit %d\n",
	       status_bit(offsetof(PyThreadState, _status), set_finalizing));
#endif
#if MINOR >= 14
	printf(" *   PyThreadState.holds_gil (int)        %zu\n",
	       offsetof(PyThreadState, holds_gil));
	printf(" *   Py_TAG_BITS                          %lu\n", (unsigned long)Py_TAG_BITS);
#endif
#if MINOR >= 15
	printf(" *   _Py_DebugOffsets.thread_state.holds_gil %zu\n",
	       offsetof(_Py_DebugOffsets, thread_state.holds_gil));
#endif
	printf(" */\n");
}

int main(void)
{
	printf("/* pyvm-offsets: CPython %s headers, x86-64, default (GIL) build */\n",
	       PY_VERSION);
	layout();
#if MINOR >= 13
	debug_layout();
#endif
	extras();
	return 0;
}
