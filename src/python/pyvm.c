/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "python/pyvm.h"
#include "util/xalloc.h"

/* pyvm-structs/python_3_X.c and debug_offsets_3_X.c */
extern const struct pyvm_layout pyvm_python_3_8, pyvm_python_3_9, pyvm_python_3_10,
	pyvm_python_3_11, pyvm_python_3_12, pyvm_python_3_13, pyvm_python_3_14,
	pyvm_python_3_15;
extern const struct pyvm_debug_layout pyvm_debug_3_13, pyvm_debug_3_14, pyvm_debug_3_15;

static const struct pyvm_layout *const layouts[] = {
	&pyvm_python_3_8, &pyvm_python_3_9, &pyvm_python_3_10, &pyvm_python_3_11,
	&pyvm_python_3_12, &pyvm_python_3_13, &pyvm_python_3_14, &pyvm_python_3_15,
};

static const struct pyvm_debug_layout *const debug_layouts[] = {
	&pyvm_debug_3_13, &pyvm_debug_3_14, &pyvm_debug_3_15,
};

const struct pyvm_layout *pyvm_find(unsigned int minor)
{
	for (size_t i = 0; i < ARRAY_SIZE(layouts); i++)
		if (layouts[i]->minor == minor)
			return layouts[i];
	return NULL;
}

void pyvm_versions(char *buf, size_t cap)
{
	size_t len = 0;

	if (cap)
		buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(layouts) && len < cap; i++) {
		int n = snprintf(buf + len, cap - len, "%s3.%u", i ? " " : "", layouts[i]->minor);

		if (n < 0)
			break;
		len += (size_t)n;
	}
}

const struct pyvm_debug_layout *pyvm_debug_find(unsigned int minor)
{
	for (size_t i = 0; i < ARRAY_SIZE(debug_layouts); i++)
		if (debug_layouts[i]->minor == minor)
			return debug_layouts[i];
	return NULL;
}

struct debug_image {
	const unsigned char *buf;
	size_t len;
	int bad;
	unsigned int mismatch;
};

static uint64_t img_u64(struct debug_image *im, uint32_t off)
{
	uint64_t v;

	if (off == PYVM_NONE || off > im->len || im->len - off < sizeof(v)) {
		im->bad = 1;
		return 0;
	}
	memcpy(&v, im->buf + off, sizeof(v));
	return v;
}

/*
 * Take field `off' of a group whose size is at `size_off', check it lies
 * inside the group (need bytes of it), and store it in *dst, counting a
 * disagreement with the shipped value.  A field the layout lacks
 * (PYVM_NONE) keeps the shipped value.
 */
static void take(struct debug_image *im, uint32_t *dst, uint32_t size_off, uint32_t off,
		 uint32_t need)
{
	uint64_t size, v;

	if (off == PYVM_NONE)
		return;
	size = img_u64(im, size_off);
	v = img_u64(im, off);
	if (im->bad)
		return;
	if (size == 0 || size > (1u << 24) || v > size || size - v < need) {
		im->bad = 1;
		return;
	}
	if (*dst != (uint32_t)v)
		im->mismatch++;
	*dst = (uint32_t)v;
}

int pyvm_from_debug(struct pyvm_layout *out, const struct pyvm_layout *base,
		    const struct pyvm_debug_layout *dl, const void *buf, size_t len,
		    unsigned int *mismatch)
{
	struct debug_image im = { .buf = buf, .len = len };
	uint64_t tsize, fsize, csize, ft;
	uint32_t ascii_size;

	*out = *base;
	if (len < 24 || memcmp(buf, "xdebugpy", 8))
		return -1;
	ft = img_u64(&im, 16);
	if (ft > 1)
		return -1;
	out->free_threaded = (int)ft;
	take(&im, &out->runtime.interpreters_head, dl->runtime_size,
	     dl->runtime_interpreters_head, 8);
	take(&im, &out->interp.next, dl->interp_size, dl->interp_next, 8);
	take(&im, &out->interp.threads_head, dl->interp_size, dl->interp_threads_head, 8);
	take(&im, &out->interp.id, dl->interp_size, dl->interp_id, 8);
	take(&im, &out->interp.ceval_gil, dl->interp_size, dl->interp_ceval_gil, 8);
	take(&im, &out->interp.modules, dl->interp_size, dl->interp_modules, 8);
	if (!im.bad) {
		/* the counter's place is known for the sizes it was found in only */
		uint64_t isize = img_u64(&im, dl->interp_size);

		if (ft)
			out->interp.func_version = isize && isize == base->interp.func_version_ft_size ?
							   base->interp.func_version_ft : 0;
		else if (!isize || (isize != base->interp.func_version_sizes[0] &&
				    isize != base->interp.func_version_sizes[1]))
			out->interp.func_version = 0;
		if ((uint64_t)out->interp.func_version + 4 > isize)
			out->interp.func_version = 0;
	}
	if (dl->interp_gc != PYVM_NONE) {
		/* gc.collecting, inside the gc state embedded in the interpreter's */
		uint32_t gc = 0, in_gc = 0;
		unsigned int was = im.mismatch;	/* the sum is compared, not its parts */

		take(&im, &gc, dl->interp_size, dl->interp_gc, 0);
		take(&im, &in_gc, dl->gc_size, dl->gc_collecting, 4);
		im.mismatch = was;
		if (!im.bad && (uint64_t)gc + in_gc + 4 > img_u64(&im, dl->interp_size))
			im.bad = 1;	/* not inside the interpreter's state */
		if (!im.bad && out->interp.gc_collecting != PYVM_NONE &&
		    out->interp.gc_collecting != gc + in_gc)
			im.mismatch++;
		out->interp.gc_collecting = gc + in_gc;
	}
	if (dl->interp_gil_runtime_state != PYVM_NONE) {
		uint64_t gil = img_u64(&im, dl->interp_gil_runtime_state);
		uint64_t locked = img_u64(&im, dl->interp_gil_locked);
		uint64_t holder = img_u64(&im, dl->interp_gil_holder);

		if (!im.bad && locked >= gil && holder >= gil &&
		    locked - gil < 256 && holder - gil < 256) {
			im.mismatch += out->gil.locked != locked - gil;
			im.mismatch += out->gil.last_holder != holder - gil;
			out->gil.locked = (uint32_t)(locked - gil);
			out->gil.last_holder = (uint32_t)(holder - gil);
		} else {
			im.bad = 1;
		}
	}
	tsize = img_u64(&im, dl->tstate_size);
	if (!im.bad && tsize > 0 && tsize < 65536)
		out->tstate.size = (uint32_t)tsize;
	take(&im, &out->tstate.next, dl->tstate_size, dl->tstate_next, 8);
	take(&im, &out->tstate.interp, dl->tstate_size, dl->tstate_interp, 8);
	take(&im, &out->tstate.frame, dl->tstate_size, dl->tstate_current_frame, 8);
	take(&im, &out->tstate.thread_id, dl->tstate_size, dl->tstate_thread_id, 8);
	take(&im, &out->tstate.native_thread_id, dl->tstate_size, dl->tstate_native_thread_id, 8);
	/* datastack_top follows datastack_chunk: need 16 bytes */
	take(&im, &out->tstate.datastack_chunk, dl->tstate_size, dl->tstate_datastack_chunk, 16);
	take(&im, &out->tstate.status, dl->tstate_size, dl->tstate_status, 4);
	if (dl->tstate_last_profiled) {
		/* the shipped layout has the pair adjacent, or none */
		uint32_t seq = out->tstate.last_profiled ? out->tstate.last_profiled + 8 : 0;

		take(&im, &out->tstate.last_profiled, dl->tstate_size, dl->tstate_last_profiled, 16);
		take(&im, &seq, dl->tstate_size, dl->tstate_last_profiled_seq, 8);
		if (seq != out->tstate.last_profiled + 8)
			out->tstate.last_profiled = 0;	/* not the pair pyreader.c reads */
	}
	fsize = img_u64(&im, dl->frame_size);
	if (!im.bad && fsize > 0 && fsize < 4096)
		out->frame.size = (uint32_t)fsize;
	take(&im, &out->frame.back, dl->frame_size, dl->frame_previous, 8);
	take(&im, &out->frame.code, dl->frame_size, dl->frame_executable, 8);
	take(&im, &out->frame.instr, dl->frame_size, dl->frame_instr_ptr, 8);
	take(&im, &out->frame.owner, dl->frame_size, dl->frame_owner, 1);
	/* localsplus is a trailing array: it may sit at the struct's end */
	take(&im, &out->frame.localsplus, dl->frame_size, dl->frame_localsplus, 0);
	csize = img_u64(&im, dl->code_size);
	if (!im.bad && csize > 0 && csize < 4096)
		out->code.size = (uint32_t)csize;
	take(&im, &out->code.filename, dl->code_size, dl->code_filename, 8);
	take(&im, &out->code.name, dl->code_size, dl->code_name, 8);
	take(&im, &out->code.qualname, dl->code_size, dl->code_qualname, 8);
	take(&im, &out->code.linetable, dl->code_size, dl->code_linetable, 8);
	take(&im, &out->code.firstlineno, dl->code_size, dl->code_firstlineno, 4);
	take(&im, &out->code.code, dl->code_size, dl->code_adaptive, 0);
	take(&im, &out->ob_type, dl->pyobject_size, dl->pyobject_ob_type, 8);
	take(&im, &out->unicode.state, dl->unicode_size, dl->unicode_state, 4);
	take(&im, &out->unicode.length, dl->unicode_size, dl->unicode_length, 8);
	ascii_size = out->unicode.ascii_size;
	take(&im, &out->unicode.ascii_size, dl->unicode_size, dl->unicode_ascii_size, 0);
	/* PyCompactUnicodeObject is PyASCIIObject and two words, in every build */
	out->unicode.compact_size += out->unicode.ascii_size - ascii_size;
	if (ft) {
		/*
		 * The header (ob_type its last word) is 32 bytes, or this
		 * is no build we know; there is no GIL to hold.
		 */
		if (out->ob_type != 24)
			im.bad = 1;
		out->head_extra = 16;
		out->interp.ceval_gil = PYVM_NONE;
		out->unicode.state_shift = base->minor >= 14 ? 6 : 0;
		take(&im, &out->frame.tlbc_index, dl->frame_size, dl->frame_tlbc_index, 4);
		take(&im, &out->code.tlbc, dl->code_size, dl->code_tlbc, 8);
		/*
		 * _co_firsttraceable, which the debug offsets do not give,
		 * is behind the header's extra words only: 200 in 3.13t, 208
		 * in 3.14t and 3.15t (offsetof() against Debian's headers
		 * compiled with Py_GIL_DISABLED; co_tlbc comes after it).
		 */
		if (out->code.firsttraceable != PYVM_NONE)
			out->code.firsttraceable += out->head_extra;
	}
	if (out->code.firsttraceable != PYVM_NONE &&
	    (uint64_t)out->code.firsttraceable + 4 > out->code.size)
		im.bad = 1;
	take(&im, &out->bytes.ob_size, dl->bytes_size, dl->bytes_ob_size, 8);
	take(&im, &out->bytes.ob_sval, dl->bytes_size, dl->bytes_ob_sval, 0);
	if (mismatch)
		*mismatch = im.mismatch;
	return im.bad ? -1 : 0;
}
