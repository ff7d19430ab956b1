/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PROCMAPS_H
#define PYROSPY_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/perr.h"

enum procmap_perm {
	PROCMAP_R = 1 << 0,
	PROCMAP_W = 1 << 1,
	PROCMAP_X = 1 << 2,
	PROCMAP_P = 1 << 3,	/* private (copy on write), else shared */
};

/*
 * One line of /proc/PID/maps.  path is NULL for anonymous maps, and the
 * kernel's text otherwise ("[heap]", "/usr/lib/..."), without a trailing
 * " (deleted)", which sets `deleted' instead.  Paths are as the target
 * sees them: relative to its root, not ours.
 */
struct procmap {
	uint64_t start, end;	/* [start, end) */
	uint64_t offset;	/* file offset of start */
	uint64_t inode;
	unsigned int dev_major, dev_minor;
	unsigned int perms;	/* enum procmap_perm */
	int deleted;
	const char *path;	/* NULL when anonymous; one of procmaps' paths */
};

/*
 * All maps of one process, sorted by start address (the kernel's order).
 * A path is kept once however many maps name it: a process mapping one
 * 4000-byte path 60000 times costs 60000 struct procmap and one copy of
 * the path, not 240 MB.
 *
 *   map[0] .path ---.
 *   map[1] .path ---+--> path[0] "/usr/lib/libx.so"
 *   map[2] .path = NULL (anonymous)
 */
struct procmaps {
	struct procmap *map;
	size_t nr, alloc;
	char **path;		/* the distinct paths, owned */
	uint32_t npath, apath;
	uint32_t *path_hash;	/* open addressing: index + 1, 0 empty */
	uint32_t path_hcap;
	size_t held;		/* bytes of all the above (PROCMAPS_MAX_HELD) */
};

/*
 * Caps on what a hostile or broken maps file may make us hold, checked
 * before each allocation.  The text is read 64 KiB at a time, never held
 * whole: its cost is CPU, O(bytes) to read and hash (mostly the kernel's,
 * to print it: about 10 ms a MB), capped by PROCMAPS_MAX_BYTES: 256
 * bytes a line at the kernel's default most maps (65530).  What is kept
 * is O(maps + distinct path bytes), capped per process by
 * PROCMAPS_MAX_HELD and, over every struct procmaps alive in pyrospy at
 * once (all the targets of --subprocesses, serve,
 * top), by PROCMAPS_MAX_TOTAL: a process that would pass either is not
 * read (PERR_TOOBIG) and the others are not disturbed.
 */
#define PROCMAPS_MAX_MAPS	(1u << 20)	/* kernel default max is 65530 */
#define PROCMAPS_MAX_LINE	8192		/* longer lines are truncated */
#define PROCMAPS_MAX_BYTES	(16u << 20)	/* of text read */
#define PROCMAPS_MAX_HELD	(16u << 20)	/* kept for one process */
#define PROCMAPS_MAX_TOTAL	(64u << 20)	/* kept for all of them */

/*
 * Read /proc/PID/maps into *maps (which is overwritten; call
 * procmaps_release() on the old contents first if it held any).  Returns
 * PERR_NOPROC if the process does not exist, PERR_PERM when we may not
 * read it, PERR_TOOBIG when it exceeds the caps above.
 */
enum perr procmaps_read(struct procmaps *maps, pid_t pid);

/*
 * Read the maps of pid again into *maps, replacing what it held only on
 * success: what the old ones hold is not counted against
 * PROCMAPS_MAX_TOTAL for the new ones.
 */
enum perr procmaps_refresh(struct procmaps *maps, pid_t pid);

/*
 * The same, into fresh (the caller's to release), leaving was as it is:
 * for a caller that must check something before it replaces was.
 */
enum perr procmaps_reread(struct procmaps *fresh, pid_t pid, const struct procmaps *was);

/* Bytes held by all struct procmaps alive (PROCMAPS_MAX_TOTAL). */
size_t procmaps_total_held(void);

/*
 * Parse maps text from a buffer of `len' bytes (need not be NUL
 * terminated).  Malformed lines are skipped; PERR_CORRUPT is returned only
 * when no line at all could be parsed from non-empty input, PERR_TOOBIG
 * past the caps above.  On error *maps holds nothing.
 */
enum perr procmaps_parse(struct procmaps *maps, const char *buf, size_t len);

void procmaps_release(struct procmaps *maps);

/* The map containing addr, or NULL. */
const struct procmap *procmaps_find(const struct procmaps *maps, uint64_t addr);

/*
 * True when [addr, addr+len) lies entirely in readable maps (contiguous
 * maps may be crossed).  The cheap guard before following a pointer read
 * from the target.
 */
int procmaps_readable(const struct procmaps *maps, uint64_t addr, uint64_t len);

/*
 * The mapping of `path' with file offset 0: the one that places the ELF
 * header, from which the load bias is computed.  Not "the first
 * executable map": a library may re-map a page of itself elsewhere.
 */
const struct procmap *procmaps_object(const struct procmaps *maps, const char *path);

/*
 * The path of the file m maps, when it may be looked for by name: a map
 * of an inode, named by an absolute path shorter than PROCMAPS_MAX_PATH.
 * NULL for anonymous maps, "[heap]" and the like, and paths longer than
 * the kernel prints (a copy cut to fit a buffer would name another file).
 */
#define PROCMAPS_MAX_PATH	4096	/* PATH_MAX, with its NUL */
const char *procmaps_file(const struct procmap *m);

#endif
