/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PYREADER_IMPL_H
#define PYROSPY_PYREADER_IMPL_H

/*
 * The CPython reader's own state and what its files (pyreader.c,
 * pycode.c, pywalk.c, pytags.c) share; nothing else includes it.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "python/pyasync.h"
#include "python/pyline.h"
#include "python/pylocals.h"
#include "python/pyobj.h"
#include "python/pyreader.h"
#include "proc/pthtid.h"
#include "python/pythread.h"
#include "python/pyvm.h"
#include "proc/rmem.h"
#include "proc/target.h"
#include "stack/tags.h"
#include "proc/taskstat.h"
#include "util/utf8.h"
#include "util/xalloc.h"
/*
 * Reading CPython stacks from outside.  The cost of a sample is the number
 * of process_vm_readv calls, so:
 *
 *  - remote memory is read through a per-sample window cache: a read
 *    fetches the page(s) around what was asked and later reads inside a
 *    window cost nothing.  On 3.11+ the thread's whole data stack chunk,
 *    where its frames live, becomes one window;
 *  - code objects are decoded once and cached by address, with their
 *    names and line table, so a steady-state frame costs no read at all.
 *
 * Nothing read is trusted: every pointer is checked against the target's
 * maps before it is followed, every length is capped, every chain is
 * bounded, and a thread whose stack does not hold together is read again
 * once and then dropped (and counted).
 */

#define CHUNK_MAX	(1u << 20)	/* bytes of a data stack chunk read at once */
#define WALK_MAX	(1u << 16)	/* frames walked to find a stack's root */
#define WALK_TRIES	32		/* reads of a torn stack before it is dropped */
#define VERIFY_MAX	8192		/* frames a pyr_walk checks were still there */
#define STR_MAX		4096u		/* code points */
#define TABLE_MAX	(1u << 20)	/* line table bytes */
#define OPS_MAX		(1u << 20)	/* bytecode bytes whose opcodes are kept (3.11-3.13) */
#define CALLOP_BACK	10		/* code units from a call to where its frame waits, + 1 */
#define INTERP_MAX	64
#define THREAD_MAX	4096
#define CODE_CACHE	4096		/* entries, power of two */
/*
 * Bytes the cached code objects may hold (names and line tables), so
 * that 4096 of a hostile target's 1 MiB line tables are not 4 GiB of ours;
 * a quarter is kept free for one sample's misses, as of the entries.
 */
#define CODE_CACHE_BYTES	(64u << 20)
#define DICT_MAX	65536		/* entries of a dict we look through */
#define TAGSET_MAX	8192		/* tag sets in the program's registry */
#define TAGSET_CACHE	16384		/* entries, power of two */
#define TAG_IMPORTING	1000		/* samples the helper's import may take */
#define TAG_TABLE_MAX	(3 * 4096)	/* bytes of the thread table read with frames
					   (rmem: a window's most; ~400 threads) */
#define TAG_FAILS	4		/* table reads failing in a row: look for it again */
/*
 * Reclaims of tag sets (pyrospy.py's _pyrospy_epoch) within which a str
 * found at an address is still the one cached there: half of the helper's
 * _QUARANTINE, once for the cache entry's age, once for this sample's read,
 * less one: the helper counts a reclaim before the str of _QUARANTINE
 * reclaims ago may go, so at 1024 reclaims it may be gone.
 */
#define TAG_EPOCH_FRESH	511
#define TAGSET_UNREAD	1		/* a set the thread has, not read (no str is at 1) */

#define NAMEOBJ		128	/* bytes of a name's str object kept to compare */
#define VERIFY_GAP	512	/* bytes between frames pyr_verify() reads in one range */
#define VERIFY_SPAN	4096	/* bytes of such a range, at most */
#define VERIFY_SPAN_CALLS 65536	/* the same where callers are checked (L->call_ops) */
#define ANCHORS		512	/* threads with an anchor (3.15+), a power of two */
#define ANCHOR_PROBE	8	/* slots looked at for one */
#define REANCHOR	16	/* frames walked above an anchor: write a new one */

struct pycode {
	uint64_t addr;		/* 0: empty slot */
	char *name;
	char *file;
	int firstlineno;
	uint8_t *table;
	size_t table_len;
	uint64_t code_start;	/* first byte of the bytecode */
	uint64_t code_bytes;
	int64_t firsttraceable;	/* 3.11+: _co_firsttraceable, in code units; -1: none */
	uint8_t *ops;		/* 3.11-3.13: each code unit's opcode byte as first read
				   (pyr_caller_calls()); NULL: none kept */
	uint64_t print[4];	/* what it was made from: see pyr_code_print() */
	/*
	 * 3.12+: the code counter (pyvm.h, func_version; 3.12's own symbol) read
	 * before it was last found as print and nameobj say, in the
	 * generation codever_gen of pyreader; see pyr_verify()
	 */
	uint32_t ver;
	uint64_t ver_gen;
	unsigned char nameobj[NAMEOBJ];	/* its name's str object, as it was */
	size_t namelen;			/* how much of it: never past its end */
	/* the last two lines looked up: where a frame is, it usually stays */
	uint64_t memo_at[2];
	int memo_line[2];
	unsigned int memo_n, memo_next;
};

/* A frame as the pyr_walk read it, to be read again (see pyr_verify()). */
struct pyvisit {
	uint64_t addr, back, code, at;
	struct pycode *c;	/* its code object as cached, NULL: a shim */
	int line;		/* the line shown for it (0: a shim, or not shown) */
	int owned;		/* 3.11+: owned by its thread (FRAME_OWNED_BY_THREAD) */
	int hidden;		/* incomplete (pyr_frame_incomplete()): walked, not shown */
	int entered;		/* 3.11+: run from C (an entry frame, or is_entry on 3.11):
				   its caller may be at any instruction */
	int proven;		/* pyr_verify(): its code object not read again, the
				   code counter unchanged since it was (3.13+) */
};

/*
 * 3.15+: a thread's anchor (anchor_register()): the frame pyrospy wrote
 * as its last_profiled_frame, the _seq read right after, and the frames
 * below it then, down to the thread's outermost one.
 */
struct pyanchor {
	uint64_t tstate;	/* 0: empty slot */
	uint64_t ident[2];	/* its thread_id and native_thread_id: a thread
				   state made again at its address is another's */
	uint64_t gen;		/* pr->anchor_gen when made: its code pointers' */
	uint64_t frame, seq;
	struct pyvisit *below;	/* frame's caller first */
	size_t n, cap;
	size_t nowned;		/* how many of below[] from the first are owned */
	uint64_t root;
};

/*
 * A thread as last read, and its stack while it has not run since
 * (pyreader.c, kept_*): the kernel's proof (taskstat_run()) is read
 * before its state, the state before its frames.
 */
struct pykept {
	uint64_t tstate;	/* 0: empty slot */
	uint64_t ident[2];	/* its thread_id and native_thread_id as read */
	pid_t tid;		/* host tid */
	uint64_t seen;		/* pr->stats.samples when last met */
	uint64_t gen;		/* pr->anchor_gen when its frames were read: their names' */
	struct taskstat_run run;	/* read before state, if has_run */
	int has_run;
	char state;		/* 'R', 'S' (any other: not running), 0 unknown */
	int walked;		/* frames[] is its stack as read after run */
	uint64_t serial;	/* stack.kept of frames[] */
	int truncated;
	unsigned int depth, cap;
	struct stack_frame *frames;
};

#define KEPT		(2 * THREAD_MAX)	/* slots, a power of two */
#define KEPT_PROBE	8
#define KEPT_BYTES	(16u << 20)	/* their frames, all told: a thousand threads
					   30 frames deep are 720 KiB */

/* <= 3.10: a thread state, and the outermost frame of its thread's stack. */
struct pyroot {
	uint64_t tstate, root;
};

#define ROOTS		(2 * THREAD_MAX)	/* slots, a power of two */

struct pyreader {
	struct target *t;
	struct reader_opts opts;
	struct pyvm_layout lay;
	struct taskstat ts;
	struct reader_stats stats;
	uint64_t runtime;
	uint64_t code_type, unicode_type, bytes_type;	/* 0 if unknown */
	struct rmem mem;
	struct pycode *cache;
	size_t cache_nr;
	size_t cache_bytes;	/* what the cached entries hold: see CODE_CACHE_BYTES */
	/* <= 3.10: offset of the kernel tid in glibc's struct pthread */
	int64_t pthread_tid_off;
	/*
	 * 3.12+, one interpreter: where its code counter is (0: not used),
	 * its value at the last pyr_verify() and the generation of the
	 * code objects' ver (bumped when another interpreter is seen)
	 */
	uint64_t codever_at;
	uint64_t codever_sym;		/* 3.12: the counter's own address, 0: not found */
	uint32_t codever_last;
	uint64_t codever_gen;
	/* the kernel name of thread comm_tid, from its state's read (thread_state()) */
	pid_t comm_tid;
	char comm[TASKSTAT_COMM_MAX];
	size_t comm_nc;
	pid_t sole_tid;			/* until it is found: the one thread's, */
	uint64_t sole_pthread;		/* whose struct pthread is here */
	/* tags: see taglibs/python/pyrospy.py */
	uint64_t dict_type, list_type;
	uint64_t tag_dict, tag_list;	/* _pyrospy_tags, _pyrospy_sets; 0: not found */
	uint64_t tag_epoch_at;		/* _pyrospy_epoch's word; 0: append-only sets */
	uint64_t tag_epoch;		/* its value when last read */
	uint64_t tag_epoch_a;		/* and as of this sample's start */
	int tag_epoch_pre;		/* read it as each sample starts (tags_epoch_ok()) */
	uint64_t tag_serial;		/* of the last set decoded */
	unsigned int tag_fails;		/* table reads failed in a row */
	int tags_torn;			/* this sample's table read was torn */
	uint64_t tag_seen[2];		/* sys.modules' keys and size when last searched */
	uint64_t tag_keys, tag_keys_len;	/* the dict's keys object last time */
	unsigned int tags_importing;	/* samples since the module was seen without its table */
	struct pytagset {
		uint64_t addr;		/* a str of the registry; 0: empty slot */
		char *tags;		/* clean tag set */
		uint64_t e0;		/* the epoch it was read at (reclaiming helper) */
		uint64_t serial;	/* unique to this decoding, for merged[] */
	} *tagsets;
	size_t ntagsets;
	struct pytagent {
		uint64_t ident, set;
	} *tagent;			/* this sample's thread -> set, by ident */
	size_t ntagent, tagent_cap;
	uint64_t tag_process;		/* this sample's process-wide set, 0: none */
	struct pymerged {
		uint64_t thread, process;	/* the two sets' serials */
		char *tags;
	} merged[64];
	struct pydent *dent;		/* pyr_dict_read()'s entries, reused */
	int dict_torn;			/* its last read: fewer entries than ma_used */
	unsigned char *draw;		/* and its raw table */
	size_t dent_cap;
	struct pyvisit *visit;		/* the frames of this pyr_walk */
	struct pyanchor *anchors;	/* 3.15+, with opts.anchor: ANCHORS slots */
	uint64_t anchor_gen;		/* pyr_cache_clear()s so far */
	int anchor_off;			/* a write failed: none written from then on */
	int anchored;			/* this pyr_walk stopped at an anchor, */
	struct pyanchor *anchor_at;	/* this one, */
	size_t anchor_from;		/* its frames from below[this] on spliced */
	int anchor_check;		/* pyr_verify() reads the pair: 1 must be _want, 2 its frame */
	uint64_t anchor_want[2], anchor_got[2];	/* last_profiled_frame, _seq */
	uint64_t walk_root;		/* its outermost frame */
	struct pyroot *roots;		/* <= 3.10: each thread's outermost frame */
	struct pykept *kept;		/* KEPT slots, made at the first sample */
	size_t kept_bytes;		/* their frames[] */
	struct pykept **later;		/* this interpreter's threads to reuse, if they did not run */
	size_t nlater;
	/*
	 * The thread states of the last sample's interpreter, in list order
	 * (tlist_interp's), read again in one scatter read at the next
	 * (tlist_read()); tbuf holds tlist_ok of them, each tstate.size bytes.
	 */
	uint64_t *tlist, *tlist_new, tlist_interp;
	size_t tlist_n, tlist_new_n, tlist_ok;
	unsigned char *tbuf;
	struct procmem_iov *tiov;	/* its scatter read, as many */
	size_t tbuf_cap;
	/*
	 * <= 3.10: the tag table (dict header, keys object) as read in
	 * pyr_verify()'s read, with the frames; whether it was, and whether the
	 * thread's innermost frame was the pyr_walk's then
	 */
	unsigned char *snap;
	size_t snap_cap;
	uint64_t snap_dict, snap_keys, snap_keys_len;	/* what snap holds: see snap_iov() */
	int snap_ok, snap_use, snap_only, top_same;
	uint64_t seq_use;		/* 3.11+: the read of the frames, the table's */
	/* 3.11+: the table's regions as read before the frames, in that read */
	unsigned char *pre;
	size_t pre_cap;
	uint64_t pre_at[2], pre_len[2];
	unsigned int pre_n;
	size_t nvisit, visit_cap;
	unsigned char *vbuf;		/* and pyr_verify()'s copy of them */
	size_t *voff;			/* each frame's place in vbuf */
	unsigned char *cbuf;		/* and of their code objects */
	unsigned char *nbuf;		/* and of their names */
	struct procmem_iov *viov;	/* pyr_verify()'s scatter read */
	size_t vcap;			/* frames the four buffers above hold */
	struct pythread names;		/* threads' names (pythread.h) */
	struct pylocals locals;		/* frames' locals, with opts.locals */
	struct pyasync *aio;		/* asyncio tasks, with opts.async_tasks */
	struct stack_frame chain[PYASYNC_DEPTH];	/* and a running task's chain */
	const char **flocals;		/* and per frame of a stack, STACK_MAX_DEPTH */
	char describe[160];
	char strbuf[STR_MAX * 4 + 1];
	char tagbuf[TAGS_MAX_SET * 4 + 1];
};

/*
 * A str object as UTF-8 in out (cap bytes).  Control characters become
 * '?'; lone surrogates and out-of-range code points fail the read: they
 * mean we are not looking at a real identifier or path.  A str longer than
 * max code points fails, or with cut, is cut there.
 */
#define STR_CUT		1	/* a longer str is cut at max, not refused */
#define STR_LENIENT	2	/* lone surrogates and the like become '?' (tag sets) */

/* One entry of a dict: hash (0 when the table keeps none), key, value. */
struct pydent {
	uint64_t hash, key, value;
};

/* The registry's items, read at most once a sample (NULL if unreadable). */
struct pylisted {
	int read;
	uint64_t *items, n;
};

enum perr pyr_read_str_into(struct pyreader *pr, uint64_t addr, uint64_t max, int how,
			       char *out, size_t cap);
enum perr pyr_read_str(struct pyreader *pr, uint64_t addr, const char **out);
void pyr_cache_clear(struct pyreader *pr);
void pyr_code_print(const struct pyvm_layout *L, const unsigned char *hdr, uint64_t out[4]);
struct pycode *pyr_code_get(struct pyreader *pr, uint64_t addr);
int pyr_frame_incomplete(const struct pyvm_layout *L, const struct pycode *c,
			    const unsigned char *fr, uint64_t at);
int pyr_code_line(const struct pyreader *pr, struct pycode *c, int64_t lasti, uint64_t instr);
enum perr pyr_tlbc_base(struct pyreader *pr, const struct pycode *c, const unsigned char *fr,
			   uint64_t instr, uint64_t *base);
void pyr_chunk_load(struct pyreader *pr, const unsigned char *ts);
int pyr_caller_calls(const struct pyvm_layout *L, const struct pyvisit *v,
			const struct pyvisit *callee);
enum perr pyr_verify(struct pyreader *pr, size_t flen, uint64_t tstate, uint64_t top_at);
enum perr pyr_walk(struct pyreader *pr, uint64_t tstate, const unsigned char *ts,
		      struct stack *st);
enum perr pyr_snap_read(struct pyreader *pr, uint64_t addr, void *out, size_t len);
enum perr pyr_dict_read(struct pyreader *pr, uint64_t dict, size_t max,
			   struct pydent **out, size_t *nout);
void pyr_tags_search(struct pyreader *pr, uint64_t interp);
void pyr_tags_now(struct pyreader *pr, uint64_t interp);
const char *pyr_tags_of(struct pyreader *pr, uint64_t ident);
int pyr_tags_verified(struct pyreader *pr, uint64_t interp, struct stack *st, int again);

static inline enum perr rd(struct pyreader *pr, uint64_t addr, void *out, size_t len)
{
	if (pr->snap_only)
		return pyr_snap_read(pr, addr, out, len);
	return rmem_read(&pr->mem, addr, out, len);
}

static inline enum perr rd_u64(struct pyreader *pr, uint64_t addr, uint64_t *v)
{
	return rmem_u64(&pr->mem, addr, v);
}

#endif
