/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PROFILE_H
#define PYROSPY_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct stack;

/*
 * Aggregated samples: every distinct stack once, with its count.  Frames
 * (function, file, line) are interned, so memory grows with the number of
 * distinct frames and stacks, never with the number of samples.
 *
 *   strings:  "work" "app.py" ...            interned once
 *   frames:   {name, file, line}             interned once, by id
 *   stacks:   [frame id, ..., frame id]      root first, with a count
 */
struct profile_frame {
	uint32_t name, file;	/* string ids */
	int line;
};

struct profile_stack {
	uint32_t *frames;	/* frame ids, root first */
	uint32_t depth;
	uint64_t count;
};

struct profile {
	/* strings */
	char **str;
	uint32_t nstr, astr;
	uint32_t *str_hash;	/* open addressing: id + 1, 0 empty */
	uint32_t str_hcap;
	/* frames */
	struct profile_frame *frame;
	uint32_t nframe, aframe;
	uint32_t *frame_hash;
	uint32_t frame_hcap;
	/* stacks */
	struct profile_stack *stack;
	uint32_t nstack, astack;
	uint32_t *stack_hash;
	uint32_t stack_hcap;
	uint64_t total;
	/* options */
	int threads;		/* add a "thread (TID)" root frame */
	int no_lines;		/* aggregate by function: line 0 */
};

void profile_init(struct profile *p);
void profile_release(struct profile *p);

/* Add one sample of st (leaf-first frames) with the given weight. */
void profile_add(struct profile *p, const struct stack *st, uint64_t weight);

const char *profile_str(const struct profile *p, uint32_t id);

#endif
