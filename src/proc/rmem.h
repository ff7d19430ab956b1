/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_RMEM_H
#define PYROSPY_RMEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/perr.h"

struct target;

/*
 * The target's memory as a stack reader sees it during one sample: reads
 * go through a small cache of windows, so that a read fetches the pages
 * around what was asked and later reads nearby cost no syscall.  One
 * extra "big" window holds a region the reader knows it will walk (a
 * Python data stack chunk, a Ruby VM stack).  rmem_reset() forgets all of
 * it: memory read in an earlier sample is stale.
 *
 * Every read is checked against the target's maps first (refreshed at most
 * once a sample when something looks newly mapped), so a garbage pointer
 * costs no syscall and never faults.
 */
#define RMEM_WINDOWS	32
#define RMEM_PAGE	4096u
#define RMEM_BIG_SLACK	2048u	/* bytes a replayed big window may grow by */
#define RMEM_MARGIN	256u	/* kept around what a replayed window had read */

struct rmem_win {
	uint64_t addr;
	size_t len;
	unsigned char *buf;
	size_t cap;
	int used;		/* read from during this sample */
	uint64_t lo, hi;	/* what was read of it, if used */
	uint64_t seq;		/* the read of the target that filled it */
};

struct rmem {
	struct target *t;
	struct rmem_win win[RMEM_WINDOWS];
	unsigned int next;
	struct rmem_win big;
	size_t big_want;	/* of the big window, what the reader asked for */
	int maps_refreshed;
	/* where the windows were at the end of the last sample */
	uint64_t last_addr[RMEM_WINDOWS + 1];
	size_t last_len[RMEM_WINDOWS + 1];
	unsigned int nlast;
	int fresh;		/* set: reads bypass the windows (see below) */
	uint64_t only_seq;	/* set: reads only from the windows of that read */
	uint64_t seq;		/* reads of the target that filled windows, so far */
};

void rmem_init(struct rmem *m, struct target *t);
void rmem_release(struct rmem *m);
void rmem_reset(struct rmem *m);

/*
 * Start a sample: forget what was read (as rmem_reset()), remembering
 * where the windows were, and with replay fetch those same regions again
 * in one scatter read.  A reader whose structures stay where they were
 * (the usual case: the same thread states, frames and tables, sample after
 * sample) then finds everything it reads in the windows, in one syscall,
 * and everything read at one instant.
 */
void rmem_begin(struct rmem *m, int replay);

/* Is [addr, addr+len) readable according to the target's maps? */
int rmem_mapped(struct rmem *m, uint64_t addr, uint64_t len);

/*
 * Read len bytes at addr into out.  With m->fresh set, each read is a
 * read of its own, made when called (neither served from nor kept in a
 * window): for a reader that needs its reads in order after something it
 * read earlier (a reused tag set: pyreader.c, rbreader.c).  With
 * m->only_seq set, a read is served only by a window filled by that read
 * of the target (a window's seq), PERR_CORRUPT if none holds it: for what
 * must be of the same moment as a region read with it (the tag table
 * prefetched with a stack, rmem_load_big_with()), not from another window
 * that holds it too, read later.
 */
enum perr rmem_read(struct rmem *m, uint64_t addr, void *out, size_t len);

/*
 * Fetch the windows rmem_read() would fetch for [addr[i], addr[i]+len[i])
 * in one scatter read, for a reader that knows where it will look (each
 * at most three pages; at most half the windows).  A region that cannot be
 * read is simply not cached: a later rmem_read() of it says why.
 */
void rmem_prefetch(struct rmem *m, const uint64_t *addr, const size_t *len, unsigned int n);

/*
 * Make [addr, addr+len) the big window and prefetch the regions x as
 * above, all in one scatter read, the regions x also into pre (the sum of
 * xlen bytes) first: where x held the same before and after the big
 * window (pre against the windows of that read, m->only_seq), it held
 * that while the big window was read.  Always a read of its own: a big
 * window replayed at the start of the sample, with x, was once taken as
 * read with x, and x came from another read, or changed in between.
 */
enum perr rmem_load_big_with(struct rmem *m, uint64_t addr, size_t len, const uint64_t *xaddr,
			     const size_t *xlen, unsigned int n, unsigned char *pre);

/* Make [addr, addr+len) the big window (one read).  */
enum perr rmem_load_big(struct rmem *m, uint64_t addr, size_t len);

/*
 * Make [addr, addr+len) the big window and return its buffer, for the
 * caller to fill (in a scatter read of its own).  If that read fails the
 * caller must set m->big.len = 0.
 */
unsigned char *rmem_big_prepare(struct rmem *m, uint64_t addr, size_t len);

static inline enum perr rmem_u64(struct rmem *m, uint64_t addr, uint64_t *v)
{
	return rmem_read(m, addr, v, sizeof(*v));
}

static inline uint64_t get_u64(const unsigned char *b, uint32_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static inline uint32_t get_u32(const unsigned char *b, uint32_t off)
{
	uint32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static inline int32_t get_i32(const unsigned char *b, uint32_t off)
{
	int32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

#endif
