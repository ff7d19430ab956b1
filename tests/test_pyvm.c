/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "python/pyvm.h"

Test(pyvm, every_supported_minor_has_a_layout)
{
	for (unsigned int m = PYVM_MIN_MINOR; m <= PYVM_MAX_MINOR; m++) {
		const struct pyvm_layout *l = pyvm_find(m);

		cr_assert_not_null(l, "3.%u has no layout", m);
		cr_assert_eq(l->minor, m);
		cr_assert_lt(l->tstate.next, l->tstate.size);
		cr_assert_lt(l->code.filename, l->code.size);
		cr_assert_lt(l->code.name, l->code.size);
		if (m >= 13)
			cr_assert_not_null(pyvm_debug_find(m), "3.%u has no debug layout", m);
	}
	cr_assert_null(pyvm_find(7));
	cr_assert_null(pyvm_find(16));
}

/* Build a _Py_DebugOffsets image that agrees with the shipped table. */
static unsigned char *image_for(unsigned int minor, const struct pyvm_debug_layout **dlp)
{
	const struct pyvm_layout *l = pyvm_find(minor);
	const struct pyvm_debug_layout *dl = pyvm_debug_find(minor);
	unsigned char *img = calloc(1, dl->size);
	uint64_t v;

#define PUT(off, val) do { if ((off) != PYVM_NONE) { v = (val); memcpy(img + (off), &v, 8); } } while (0)
	memcpy(img, "xdebugpy", 8);
	PUT(dl->runtime_size, 100000);
	PUT(dl->runtime_interpreters_head, l->runtime.interpreters_head);
	/* an interpreter state of the size the code counter's place was found in */
	PUT(dl->interp_size, l->interp.func_version_sizes[0] ? l->interp.func_version_sizes[0] : 100000);
	PUT(dl->interp_next, l->interp.next);
	PUT(dl->interp_threads_head, l->interp.threads_head);
	PUT(dl->interp_id, l->interp.id);
	PUT(dl->interp_ceval_gil, l->interp.ceval_gil);
	PUT(dl->interp_modules, l->interp.modules);
	PUT(dl->interp_gc, l->interp.gc_collecting - 8);	/* gc.collecting, 8 bytes in */
	PUT(dl->gc_size, 600);
	PUT(dl->gc_collecting, 8);
	PUT(dl->interp_gil_runtime_state, 5000);
	PUT(dl->interp_gil_locked, 5000 + l->gil.locked);
	PUT(dl->interp_gil_holder, 5000 + l->gil.last_holder);
	PUT(dl->tstate_size, l->tstate.size);
	PUT(dl->tstate_next, l->tstate.next);
	PUT(dl->tstate_interp, l->tstate.interp);
	PUT(dl->tstate_current_frame, l->tstate.frame);
	PUT(dl->tstate_thread_id, l->tstate.thread_id);
	PUT(dl->tstate_native_thread_id, l->tstate.native_thread_id);
	PUT(dl->tstate_datastack_chunk, l->tstate.datastack_chunk);
	PUT(dl->tstate_status, l->tstate.status);
	if (dl->tstate_last_profiled) {		/* 3.15+; 0 (the cookie) where none */
		PUT(dl->tstate_last_profiled, l->tstate.last_profiled);
		PUT(dl->tstate_last_profiled_seq, l->tstate.last_profiled + 8);
	}
	PUT(dl->frame_size, l->frame.size);
	PUT(dl->frame_previous, l->frame.back);
	PUT(dl->frame_executable, l->frame.code);
	PUT(dl->frame_instr_ptr, l->frame.instr);
	PUT(dl->frame_localsplus, l->frame.localsplus);
	PUT(dl->frame_owner, l->frame.owner);
	PUT(dl->code_size, l->code.size);
	PUT(dl->code_filename, l->code.filename);
	PUT(dl->code_name, l->code.name);
	PUT(dl->code_qualname, l->code.qualname);
	PUT(dl->code_linetable, l->code.linetable);
	PUT(dl->code_firstlineno, l->code.firstlineno);
	PUT(dl->code_adaptive, l->code.code);
	PUT(dl->pyobject_size, 16);
	PUT(dl->pyobject_ob_type, l->ob_type);
	PUT(dl->unicode_size, l->unicode.compact_size);
	PUT(dl->unicode_state, l->unicode.state);
	PUT(dl->unicode_length, l->unicode.length);
	PUT(dl->unicode_ascii_size, l->unicode.ascii_size);
	PUT(dl->bytes_size, 40);
	PUT(dl->bytes_ob_size, l->bytes.ob_size);
	PUT(dl->bytes_ob_sval, l->bytes.ob_sval);
#undef PUT
	*dlp = dl;
	return img;
}

Test(pyvm, debug_offsets_roundtrip_and_reject)
{
	for (unsigned int m = 13; m <= PYVM_MAX_MINOR; m++) {
		const struct pyvm_debug_layout *dl;
		unsigned char *img = image_for(m, &dl);
		struct pyvm_layout out;
		unsigned int mismatch = 99;
		uint64_t big = 1ull << 40;

		cr_assert_eq(pyvm_from_debug(&out, pyvm_find(m), dl, img, dl->size, &mismatch), 0);
		cr_assert_eq(mismatch, 0, "3.%u: %u fields differ", m, mismatch);
		cr_assert_eq(memcmp(&out, pyvm_find(m), sizeof(out)), 0);

		/* last_profiled_frame and its _seq, the next word: 3.15+ only */
		cr_assert_eq(out.tstate.last_profiled, m >= 15 ? 88u : 0u, "3.%u", m);
		if (dl->tstate_last_profiled) {
			uint64_t apart = out.tstate.last_profiled + 16;

			/* not the pair pyreader.c reads: none, and the rest as it was */
			memcpy(img + dl->tstate_last_profiled_seq, &apart, 8);
			cr_assert_eq(pyvm_from_debug(&out, pyvm_find(m), dl, img, dl->size, NULL), 0);
			cr_assert_eq(out.tstate.last_profiled, 0);
			cr_assert_eq(out.tstate.frame, pyvm_find(m)->tstate.frame);
			apart -= 8;
			memcpy(img + dl->tstate_last_profiled_seq, &apart, 8);
		}

		/*
		 * The code counter (pyvm.h, func_version) is known for the
		 * interpreter sizes it was found in only: another build's
		 * state may hold something else there.
		 */
		cr_assert_neq(out.interp.func_version, 0, "3.%u", m);
		{
			uint64_t other = 100000;

			memcpy(img + dl->interp_size, &other, 8);
			cr_assert_eq(pyvm_from_debug(&out, pyvm_find(m), dl, img, dl->size, NULL), 0);
			cr_assert_eq(out.interp.func_version, 0, "3.%u", m);
			cr_assert_eq(out.interp.threads_head, pyvm_find(m)->interp.threads_head);
		}

		/* an offset beyond its group's size is refused */
		memcpy(img + dl->gc_collecting, &big, 8);
		cr_assert_eq(pyvm_from_debug(&out, pyvm_find(m), dl, img, dl->size, NULL), -1);
		memcpy(img + dl->tstate_next, &big, 8);
		cr_assert_eq(pyvm_from_debug(&out, pyvm_find(m), dl, img, dl->size, NULL), -1);
		/* a bad cookie or a short image too */
		cr_assert_eq(pyvm_from_debug(&out, pyvm_find(m), dl, img, 16, NULL), -1);
		img[0] = 'X';
		cr_assert_eq(pyvm_from_debug(&out, pyvm_find(m), dl, img, dl->size, NULL), -1);
		free(img);
	}
}

/*
 * A free-threaded build's table (free_threaded 1 at 16): 32-byte object
 * header, no GIL, str state bits moved on 3.14+, thread-local bytecode
 * offsets taken; one whose header is not 32 bytes, or a free_threaded
 * that is neither 0 nor 1, is refused.
 */
Test(pyvm, debug_offsets_free_threaded)
{
	for (unsigned int m = 13; m <= PYVM_MAX_MINOR; m++) {
		const struct pyvm_debug_layout *dl;
		const struct pyvm_layout *base = pyvm_find(m);
		unsigned char *img = image_for(m, &dl);
		struct pyvm_layout out;
		uint64_t v;

		v = 1;
		memcpy(img + 16, &v, 8);
		v = 24;
		memcpy(img + dl->pyobject_ob_type, &v, 8);
		v = 32;
		memcpy(img + dl->pyobject_size, &v, 8);
		v = base->unicode.ascii_size + 16;
		memcpy(img + dl->unicode_ascii_size, &v, 8);
		if (dl->frame_tlbc_index != PYVM_NONE) {
			v = base->frame.localsplus - 8;
			memcpy(img + dl->frame_tlbc_index, &v, 8);
			v = base->code.code - 8;
			memcpy(img + dl->code_tlbc, &v, 8);
		}
		cr_assert_eq(pyvm_from_debug(&out, base, dl, img, dl->size, NULL), 0, "3.%u", m);
		cr_assert(out.free_threaded);
		cr_assert_eq(out.head_extra, 16);
		cr_assert_eq(PYVM_OFF(&out, 16), 32);
		cr_assert_eq(out.ob_type, 24);
		cr_assert_eq(out.interp.ceval_gil, PYVM_NONE, "3.%u: a GIL to look at", m);
		cr_assert_eq(out.unicode.compact_size, base->unicode.compact_size + 16);
		cr_assert_eq(out.unicode.state_shift, m >= 14 ? 6u : 0u, "3.%u", m);
		/* the GIL build's code counter is not the free-threaded one's */
		cr_assert_eq(out.interp.func_version, 0, "3.%u", m);
		if (base->interp.func_version_ft_size) {
			v = base->interp.func_version_ft_size;
			memcpy(img + dl->interp_size, &v, 8);
			cr_assert_eq(pyvm_from_debug(&out, base, dl, img, dl->size, NULL), 0);
			cr_assert_eq(out.interp.func_version, base->interp.func_version_ft, "3.%u", m);
		}
		if (m >= 14) {
			cr_assert_eq(out.frame.tlbc_index, base->frame.localsplus - 8);
			cr_assert_eq(out.code.tlbc, base->code.code - 8);
		} else {
			cr_assert_eq(out.frame.tlbc_index, 0);
			cr_assert_eq(out.code.tlbc, 0);
		}

		/* a header of another size: no build we know */
		v = 8;
		memcpy(img + dl->pyobject_ob_type, &v, 8);
		cr_assert_eq(pyvm_from_debug(&out, base, dl, img, dl->size, NULL), -1, "3.%u", m);
		v = 24;
		memcpy(img + dl->pyobject_ob_type, &v, 8);
		v = 2;
		memcpy(img + 16, &v, 8);
		cr_assert_eq(pyvm_from_debug(&out, base, dl, img, dl->size, NULL), -1, "3.%u", m);
		free(img);
	}
}
