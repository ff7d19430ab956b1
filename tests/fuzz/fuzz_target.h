/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_FUZZ_TARGET_H
#define PYROSPY_FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "stack/stack.h"
#include "proc/target.h"

/*
 * A fake interpreter process for the reader fuzz targets: its memory is
 * one buffer at FUZZ_BASE (procmem_init_buffer), its maps one rw-p line
 * covering exactly that buffer, its ELF objects absent (the readers are
 * handed the runtime's address through pyreader_new_at/rbreader_new_at).
 * FUZZ_PID names no process (it is above any pid_max), so what the
 * readers ask of /proc finds nothing.
 *
 * A reader input is
 *
 *   [layout u8][flags u8][runtime offset u32 LE][memory image ...]
 *
 * layout picks the interpreter version (fuzz_py_version, fuzz_rb_version),
 * flags the reader options and the number of samples, and the runtime
 * offset where in the image _PyRuntime (Python) or the variable holding
 * the rb_vm_t pointer (Ruby) is.  snapshot.c writes such inputs from live
 * interpreters.
 */
#define FUZZ_BASE	((uint64_t)0x7f1000000000)
#define FUZZ_PID	0x7ffffff0
#define FUZZ_HDR	6
#define FUZZ_PATH	"/fuzz/interpreter"

#define FUZZ_IDLE	0x01	/* flags: reader_opts.idle */
#define FUZZ_GIL	0x02	/* flags: reader_opts.gil_only */
#define FUZZ_SAMPLES(f)	(1u + ((f) >> 2 & 3))

struct fuzz_input {
	unsigned int layout, flags;
	uint64_t runtime;		/* remote address */
	const uint8_t *image;
	size_t len;
};

/* Split an input; -1 if it is too short to be one. */
int fuzz_input_parse(struct fuzz_input *in, const uint8_t *data, size_t size);

/* 3.minor of a Python layout byte, and back. */
unsigned int fuzz_py_minor(unsigned int layout);
unsigned int fuzz_py_layout(unsigned int minor);

/* Ruby version of a layout byte; the layout byte for a version. */
void fuzz_rb_version(unsigned int layout, unsigned int *major, unsigned int *minor,
		     unsigned int *patch);
unsigned int fuzz_rb_layout(unsigned int major, unsigned int minor, unsigned int patch);

/* Fill t as the fake process of `in' (lang and version left to the caller). */
void fuzz_target_init(struct target *t, const struct fuzz_input *in);
void fuzz_target_release(struct target *t);

/*
 * A reader_cb that checks what a reader hands on: a sane depth, every
 * name and file present and valid UTF-8 without control characters, the
 * tags (if any) a clean tag set.
 * Aborts otherwise.  With FUZZ_VERBOSE set in the environment, prints
 * the stack.
 */
void fuzz_check_stack(void *arg, const struct stack *st);

/* Abort unless s is a clean tag set (src/tags.h): what the writers take as is. */
void fuzz_check_tags(const char *s);

#endif
