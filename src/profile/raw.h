/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_RAW_H
#define PYROSPY_RAW_H

/*
 * The raw recording (-f raw): every sample, with its time, thread, state,
 * tags and stack.  Its writer is out_raw.c, its reader rawread.c; the spec
 * is docs/raw-format.md.  In short:
 *
 *   file   = magic "PYSPYRAW" version(1 byte) block*
 *   block  = zlen(u32 LE) rawlen(u32 LE) crc32-of-zdata(u32 LE)
 *            zdata: zlib of rawlen bytes of whole records
 *   record = type(1 byte) fields (varints, LEB128; strings are a varint
 *            length and bytes)
 *
 * Strings, frames, stack nodes and threads are defined once, numbered
 * from 0 in the order defined, and referred to by number afterwards; a
 * stack is a node of a trie (parent node, frame), node 0 the empty stack.
 * Definitions hold across blocks.
 */
#define RAW_MAGIC "PYSPYRAW"
#define RAW_MAGIC_LEN 8
#define RAW_VERSION 1
#define RAW_BLOCK_HEADER 12

enum raw_record {
	RAW_META = 'M',		/* start_us rate flags title(string) */
	RAW_STRING = 'S',	/* string */
	RAW_FRAME = 'F',	/* name file line(zigzag) */
	RAW_NODE = 'K',		/* parent frame */
	RAW_THREAD = 'T',	/* pid tid thread_id name+1 (0: none) */
	RAW_SAMPLE = 'P',	/* dt_us thread node tags+1 state */
	RAW_END = 'E',		/* samples duration_us */
};

/* RAW_META flags: what the recording kept */
#define RAW_META_IDLE	1u	/* idle threads (--idle) */
#define RAW_META_GIL	2u	/* only the GIL/GVL holder (--gil) */
#define RAW_META_PIDS	4u	/* threads named by their process too (--subprocesses) */

/* RAW_SAMPLE state: holds_gil and idle as 0 unknown, 1 no, 2 yes */
#define RAW_STATE_GIL(s)	((s) & 3u)
#define RAW_STATE_IDLE(s)	(((s) >> 2) & 3u)
#define RAW_STATE_TRUNCATED	16u

/* Limits a reader holds a file to (a writer stays well within). */
#define RAW_MAX_BLOCK	(1u << 20)	/* bytes of records in a block */
#define RAW_MAX_STRING	65536u		/* bytes of one string */
#define RAW_MAX_STRBYTES (128u << 20)	/* bytes of all strings */
/*
 * Strings, frames or stack nodes; threads.  A record of a few bytes
 * deflates to almost nothing, so these bound what a small hostile file
 * makes a reader allocate (a few hundred MB at worst).
 */
#define RAW_MAX_ITEMS	(1u << 22)
#define RAW_MAX_THREADS	(1u << 20)

#endif
