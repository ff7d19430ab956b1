/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PROFILE_H
#define PYROSPY_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct stack;

/*
 * Aggregated samples: a trie of frames.  Frames (function, file, line) and
 * their strings are interned, and a sample adds its weight along one path,
 * so memory grows with the number of distinct stacks, never with the
 * number of samples.
 *
 *   node 0 (root)
 *     tag set      "" or "route=/cart,vehicle=car"     PROFILE_TAGS
 *       thread     "thread (4242)"                     PROFILE_THREAD
 *         <module> (app.py:20)                         PROFILE_CODE
 *           foo (app.py:8)
 *             work (app.py:4)      self 75
 *
 * Writers that show neither tags nor threads use profile_project() to
 * merge those levels away first.
 */
enum profile_kind {
	PROFILE_CODE,		/* a function of the program */
	PROFILE_TAGS,		/* a tag set, "k=v,k=v" sorted; "" for none */
	PROFILE_THREAD,		/* "thread (TID)" or "thread (TID): name", after
				 * "pid N: " with show_pid */
	PROFILE_MARK,		/* "[truncated]", "(garbage collection)" */
};

struct profile_frame {
	uint32_t name, file;	/* string ids; file "" when none */
	int line;		/* 0 when unknown or lines are off */
	uint32_t kind;		/* enum profile_kind */
};

struct profile_node {
	uint32_t frame;		/* frame id; unused for the root */
	uint32_t parent;	/* node id (the root is its own parent) */
	uint32_t child, last;	/* first and last child, 0 for none */
	uint32_t sibling;	/* next sibling, 0 for none */
	uint32_t depth;		/* 0 root, 1 tag set, 2 thread, 3 outermost code */
	uint64_t self;		/* samples that ended here */
	uint64_t total;		/* samples here or below */
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
	/* the trie: node[0] is the root */
	struct profile_node *node;
	uint32_t nnode, anode;
	uint32_t *node_hash;	/* (parent, frame) -> node id */
	uint32_t node_hcap;
	/* frames by the addresses of their strings (profile.c: seen()) */
	struct profile_seen *seen;
	uint32_t seen_size;
	uint64_t total;		/* = node[0].total */
	size_t bytes;		/* held: what profile_footprint() counts */
	uint64_t other;		/* samples counted in [other] frames */
	/* threads by (pid with show_pid, tid): the thread frame each had last */
	struct profile_thread *thr;
	uint32_t thr_cap, nthr;
	int renamed;		/* a thread had more than one thread frame */
	/* stacks a reader kept (stack.kept): their leaf under their thread's node */
	struct profile_kept *kept;
	/* options */
	int no_lines;		/* aggregate by function: line 0 */
	int show_pid;		/* name threads "pid N: thread (TID)" */
	size_t max_bytes;	/* profile_add()'s bound, 0 for none */
};

/*
 * --max-memory: the default bound of a profile built from samples.  256
 * MiB hold about 4 million trie nodes (40 bytes each and their hash slots)
 * with their names: a week of a busy server, whose distinct stacks number
 * in the tens or hundreds of thousands, fits many times over.
 */
#define PROFILE_MAX_MEMORY	(256u << 20)

void profile_init(struct profile *p);
void profile_release(struct profile *p);

/*
 * Add one sample of st (leaf-first frames) with the given weight, under
 * tag set tags ("k=v,k=v" sorted, NULL or "" for none).  Returns the
 * leaf's node id (an [other] node's, see below).
 *
 * With max_bytes set, a sample that needs new strings, frames or nodes
 * that would take the profile past it is counted instead in an "[other]"
 * frame (PROFILE_MARK) under its thread's node, or its tag set's, or the
 * root, whichever exists and has room (the first such sample always goes
 * to the root's), and in p->other.  Checked before anything is allocated,
 * with room kept for the [other] frame: the profile never holds more than
 * max_bytes.  The other functions below do not check it.
 */
uint32_t profile_add(struct profile *p, const char *tags, const struct stack *st, uint64_t weight);

/*
 * Add weight along a path of frame ids, outermost first: the first must
 * be a PROFILE_TAGS frame and the second a PROFILE_THREAD frame, unless
 * the profile was projected without them.  Returns the leaf's node id.
 */
uint32_t profile_add_path(struct profile *p, const uint32_t *frames, uint32_t n, uint64_t weight);

/*
 * The child of node parent for frame, made (last of its siblings, with no
 * samples) if new: its node id.  A caller that adds samples to it keeps
 * the totals of the nodes above it right itself.
 */
uint32_t profile_child(struct profile *p, uint32_t parent, uint32_t frame);

/*
 * The thread tid of process pid (in Python's interpreter interp, 0 the
 * main one) had thread frame `frame' (made by
 * profile_add()) in its latest sample: for a caller that adds that sample
 * by profile_child() and its own counts (report's).
 */
void profile_thread_note(struct profile *p, pid_t pid, pid_t tid, uint64_t interp,
			 uint32_t frame);

/*
 * One thread, one root: the thread frame that the thread of thread frame
 * `frame' (made by profile_add()) had last, the one whose name it had last;
 * frame itself when it had no other (or is no thread frame).  Projections
 * put all of a thread's stacks under that one frame.
 */
uint32_t profile_thread_last(const struct profile *p, uint32_t frame);

/* Intern a frame (for hand-built profiles and projections). */
uint32_t profile_frame(struct profile *p, enum profile_kind kind, const char *name,
		       const char *file, int line);

const char *profile_str(const struct profile *p, uint32_t id);

/* Intern a string: its id, the same for equal strings, made if new. */
uint32_t profile_str_id(struct profile *p, const char *s);

#define PROFILE_KEEP_TAGS	1u
#define PROFILE_KEEP_THREADS	2u
#define PROFILE_DROP_LINES	4u	/* merge a function's lines: line 0 */

/*
 * Copy src into dst (initialised here) keeping only the levels in keep:
 * without PROFILE_KEEP_THREADS, the stacks of all threads merge; without
 * PROFILE_KEEP_TAGS, those of all tag sets.  dst's nodes then start at the
 * first level kept.  Stacks without tags get no tag frame, so that a
 * program that sets none looks the same either way.  With
 * PROFILE_DROP_LINES, a function's lines merge (as --function has them).
 */
void profile_project(const struct profile *src, unsigned int keep, struct profile *dst);

/*
 * The same for the stacks of the tag sets of src (unprojected, or
 * projected with PROFILE_KEEP_TAGS) that hold the pair tag ("key=value")
 * only, their tag sets merged away: the profile of one tag's samples.
 */
void profile_project_tag(const struct profile *src, unsigned int keep, const char *tag,
			 struct profile *dst);

/*
 * Call fn once for every node with samples that ended there, in trie order
 * (depth first, children in the order first seen), with the path of frame
 * ids from below the root down to it.  Stops early, returning fn's value,
 * when fn returns non-zero.
 */
typedef int (*profile_stack_fn)(void *arg, const struct profile *p, const uint32_t *frames,
				uint32_t depth, uint64_t count);
int profile_stacks(const struct profile *p, profile_stack_fn fn, void *arg);

/* The same for the subtree below node top only, paths starting below it. */
int profile_stacks_below(const struct profile *p, uint32_t top, profile_stack_fn fn, void *arg);

/* Bytes of memory the profile holds (for tests of its bound). */
size_t profile_footprint(const struct profile *p);

#endif
