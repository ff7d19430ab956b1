/* SPDX-License-Identifier: MIT */
#include "config.h"

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
#define VERIFY_MAX	8192		/* frames a walk checks were still there */
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
#define VERIFY_GAP	512	/* bytes between frames verify() reads in one range */
#define VERIFY_SPAN	4096	/* bytes of such a range, at most */
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
				   (caller_calls()); NULL: none kept */
	uint64_t print[4];	/* what it was made from: see code_print() */
	unsigned char nameobj[NAMEOBJ];	/* its name's str object, as it was */
	size_t namelen;			/* how much of it: never past its end */
	/* the last two lines looked up: where a frame is, it usually stays */
	uint64_t memo_at[2];
	int memo_line[2];
	unsigned int memo_n, memo_next;
};

/* A frame as the walk read it, to be read again (see verify()). */
struct pyvisit {
	uint64_t addr, back, code, at;
	struct pycode *c;	/* its code object as cached, NULL: a shim */
	int line;		/* the line shown for it (0: a shim, or not shown) */
	int owned;		/* 3.11+: owned by its thread (FRAME_OWNED_BY_THREAD) */
	int hidden;		/* incomplete (frame_incomplete()): walked, not shown */
	int entered;		/* 3.11+: run from C (an entry frame, or is_entry on 3.11):
				   its caller may be at any instruction */
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
	pid_t sole_tid;			/* until it is found: the one thread's, */
	uint64_t sole_pthread;		/* whose struct pthread is here */
	/* tags: see src/python/pyrospy.py */
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
	struct pydent *dent;		/* dict_read()'s entries, reused */
	int dict_torn;			/* its last read: fewer entries than ma_used */
	unsigned char *draw;		/* and its raw table */
	size_t dent_cap;
	struct pyvisit *visit;		/* the frames of this walk */
	struct pyanchor *anchors;	/* 3.15+, with opts.anchor: ANCHORS slots */
	uint64_t anchor_gen;		/* cache_clear()s so far */
	int anchor_off;			/* a write failed: none written from then on */
	int anchored;			/* this walk stopped at an anchor, */
	struct pyanchor *anchor_at;	/* this one, */
	size_t anchor_from;		/* its frames from below[this] on spliced */
	int anchor_check;		/* verify() reads the pair: 1 must be _want, 2 its frame */
	uint64_t anchor_want[2], anchor_got[2];	/* last_profiled_frame, _seq */
	uint64_t walk_root;		/* its outermost frame */
	struct pyroot *roots;		/* <= 3.10: each thread's outermost frame */
	/*
	 * <= 3.10: the tag table (dict header, keys object) as read in
	 * verify()'s read, with the frames; whether it was, and whether the
	 * thread's innermost frame was the walk's then
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
	unsigned char *vbuf;		/* and verify()'s copy of them */
	size_t *voff;			/* each frame's place in vbuf */
	unsigned char *cbuf;		/* and of their code objects */
	unsigned char *nbuf;		/* and of their names */
	struct procmem_iov *viov;	/* verify()'s scatter read */
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

static enum perr snap_read(struct pyreader *pr, uint64_t addr, void *out, size_t len);

static enum perr rd(struct pyreader *pr, uint64_t addr, void *out, size_t len)
{
	if (pr->snap_only)
		return snap_read(pr, addr, out, len);
	return rmem_read(&pr->mem, addr, out, len);
}

static enum perr rd_u64(struct pyreader *pr, uint64_t addr, uint64_t *v)
{
	return rmem_u64(&pr->mem, addr, v);
}

/*
 * A str object as UTF-8 in out (cap bytes).  Control characters become
 * '?'; lone surrogates and out-of-range code points fail the read: they
 * mean we are not looking at a real identifier or path.  A str longer than
 * max code points fails, or with cut, is cut there.
 */
#define STR_CUT		1	/* a longer str is cut at max, not refused */
#define STR_LENIENT	2	/* lone surrogates and the like become '?' (tag sets) */

static enum perr read_str_into(struct pyreader *pr, uint64_t addr, uint64_t max, int how,
			       char *out, size_t cap)
{
	int cut;

	return pyobj_str_at(&pr->mem, &pr->lay, pr->unicode_type, addr, (size_t)max,
			    how & STR_LENIENT, out, cap, (how & STR_CUT) ? &cut : NULL);
}

static enum perr read_str(struct pyreader *pr, uint64_t addr, const char **out)
{
	enum perr err = read_str_into(pr, addr, STR_MAX, 0, pr->strbuf, sizeof(pr->strbuf));

	if (!err)
		*out = pr->strbuf;
	return err;
}

/*
 * A name or path, in a malloc'd string: one longer than STR_MAX code
 * points is cut there and marked, never a reason to drop its frame.
 */
static enum perr dup_name(struct pyreader *pr, uint64_t addr, char **out)
{
	const char *s;
	enum perr err = read_str(pr, addr, &s);

	if (err == PERR_TOOBIG) {
		err = read_str_into(pr, addr, STR_MAX, STR_CUT, pr->strbuf, sizeof(pr->strbuf));
		if (!err) {
			*out = xstrfmt("%s%s", pr->strbuf, STACK_CUT_MARK);
			return PERR_OK;
		}
	}
	if (!err)
		*out = xstrdup(s);
	return err;
}

/* A bytes object's contents, malloc'd, in *out. */
static enum perr read_bytes(struct pyreader *pr, uint64_t addr, uint8_t **out, size_t *outlen)
{
	const struct pyvm_layout *L = &pr->lay;
	unsigned char hdr[48];
	uint64_t len;
	enum perr err;

	if (!addr || (addr & 7))
		return PERR_CORRUPT;
	if ((err = rd(pr, addr, hdr, L->bytes.ob_sval)))
		return err;
	if (pr->bytes_type && get_u64(hdr, L->ob_type) != pr->bytes_type)
		return PERR_CORRUPT;
	len = get_u64(hdr, L->bytes.ob_size);
	if (len > TABLE_MAX)
		return PERR_TOOBIG;
	*out = xmalloc(len ? (size_t)len : 1);
	*outlen = (size_t)len;
	if ((err = rd(pr, addr + L->bytes.ob_sval, *out, (size_t)len))) {
		FREE_AND_NULL(*out);
		return err;
	}
	return PERR_OK;
}

static void code_release(struct pycode *c)
{
	free(c->name);
	free(c->file);
	free(c->table);
	free(c->ops);
	memset(c, 0, sizeof(*c));
}

static void cache_clear(struct pyreader *pr)
{
	for (size_t i = 0; i < CODE_CACHE; i++)
		if (pr->cache[i].addr)
			code_release(&pr->cache[i]);
	pr->cache_nr = 0;
	pr->cache_bytes = 0;
	pr->anchor_gen++;	/* the anchors' code pointers are void */
}

static size_t cache_slot(uint64_t addr)
{
	return (size_t)((addr >> 4) * 0x9E3779B97F4A7C15ull >> 52) & (CODE_CACHE - 1);
}

/*
 * What a cached code object was made from: its type, first line, and the
 * addresses of its name, file and line table.  The allocator may put a new
 * code object where a freed one was (code built at run time: exec,
 * templates, code.replace()); a frame of it must not be named after the
 * old one, so verify() compares these with the object as it is now.
 */
static void code_print(const struct pyvm_layout *L, const unsigned char *hdr, uint64_t out[4])
{
	out[0] = get_u64(hdr, L->ob_type) ^ (uint64_t)(uint32_t)get_i32(hdr, L->code.firstlineno);
	out[1] = get_u64(hdr, L->code.qualname != PYVM_NONE ? L->code.qualname : L->code.name);
	out[2] = get_u64(hdr, L->code.filename);
	out[3] = get_u64(hdr, L->code.linetable);
}

/* Bytes of the compact str object in hdr, at most NAMEOBJ; 0 if not one. */
static size_t str_object_len(const struct pyvm_layout *L, const unsigned char *hdr)
{
	uint64_t len = get_u64(hdr, L->unicode.length), end;
	uint32_t state;

	memcpy(&state, hdr + L->unicode.state, sizeof(state));
	state >>= L->unicode.state_shift;
	if (!(state >> 5 & 1) || len >> 40)
		return 0;	/* not compact: the read of the name said so already */
	end = ((state >> 6 & 1) ? L->unicode.ascii_size : L->unicode.compact_size) +
	      (len + 1) * (state >> 2 & 7);
	return end < NAMEOBJ ? (size_t)end : NAMEOBJ;
}

/* Read and decode the code object at addr; NULL if it does not hold together. */
static struct pycode *code_get(struct pyreader *pr, uint64_t addr)
{
	const struct pyvm_layout *L = &pr->lay;
	unsigned char hdr[512], strhdr[128];
	struct pycode c = { 0 }, *slot;
	uint64_t name_ptr;
	size_t i;

	if (!addr || (addr & 7))
		return NULL;
	/*
	 * Never evict here: the frames already walked this sample point at
	 * cached names.  pyreader_sample() empties a filling cache between
	 * samples, so a quarter of it is always free for one sample's misses.
	 */
	for (i = cache_slot(addr);; i = (i + 1) & (CODE_CACHE - 1)) {
		if (pr->cache[i].addr == addr)
			return &pr->cache[i];
		if (!pr->cache[i].addr)
			break;
	}
	if (pr->cache_nr >= CODE_CACHE - 1 || pr->cache_bytes >= CODE_CACHE_BYTES)
		return NULL;	/* one sample met a thousand new code objects */
	pr->stats.cache_misses++;
	if (L->code.size > sizeof(hdr) || rd(pr, addr, hdr, L->code.size))
		return NULL;
	if (pr->code_type && get_u64(hdr, L->ob_type) != pr->code_type)
		return NULL;
	c.addr = addr;
	code_print(L, hdr, c.print);
	if (L->unicode.compact_size + 8 > sizeof(strhdr) ||
	    rd(pr, c.print[1], strhdr, L->unicode.compact_size + 8))
		return NULL;
	c.namelen = str_object_len(L, strhdr);
	if (!c.namelen || rd(pr, c.print[1], c.nameobj, c.namelen))
		return NULL;
	c.firstlineno = get_i32(hdr, L->code.firstlineno);
	if (c.firstlineno < 0)
		return NULL;
	if (dup_name(pr, get_u64(hdr, L->code.filename), &c.file))
		return NULL;
	name_ptr = get_u64(hdr, L->code.qualname != PYVM_NONE ? L->code.qualname : L->code.name);
	if (dup_name(pr, name_ptr, &c.name))
		goto bad;
	if (read_bytes(pr, get_u64(hdr, L->code.linetable), &c.table, &c.table_len))
		goto bad;
	if (L->frames == PYVM_FRAMEOBJ) {
		/* co_code is a bytes object: only its length is needed */
		uint64_t bytes = get_u64(hdr, L->code.code);
		unsigned char bh[32];

		if (rd(pr, bytes, bh, sizeof(bh)))
			goto bad;
		c.code_start = bytes + L->bytes.ob_sval;
		c.code_bytes = get_u64(bh, L->bytes.ob_size);
	} else {
		/* PyVarObject: ob_size (after the header) counts 2-byte code units */
		c.code_start = addr + L->code.code;
		c.code_bytes = get_u64(hdr, PYVM_OFF(L, 16)) * 2;
	}
	if (c.code_bytes > (64u << 20))
		goto bad;
	c.firsttraceable = -1;
	if (L->code.firsttraceable != PYVM_NONE) {
		int32_t ft = get_i32(hdr, L->code.firsttraceable);

		/*
		 * RESUME's index; past the end in a shim (3.13+'s
		 * _Py_InitCleanup says 4 of its 3 code units): never complete
		 */
		if (ft < 0)
			goto bad;
		c.firsttraceable = ft;
	}
	if (L->call_ops && c.code_bytes && c.code_bytes <= OPS_MAX) {
		/* the opcode bytes, for caller_calls(); a code unit is opcode, oparg */
		size_t n = (size_t)c.code_bytes / 2;
		uint8_t *units = xmalloc(2 * n);

		if (rd(pr, c.code_start, units, 2 * n)) {
			free(units);
			goto bad;
		}
		for (size_t k = 0; k < n; k++)
			units[k] = units[2 * k];
		c.ops = xrealloc(units, n);
	}
	slot = &pr->cache[i];
	*slot = c;
	pr->cache_nr++;
	pr->cache_bytes += c.table_len + strlen(c.name) + strlen(c.file) + sizeof(c) +
			   (c.ops ? (size_t)c.code_bytes / 2 : 0);
	return slot;
bad:
	code_release(&c);
	return NULL;
}

/*
 * 3.11+: has the frame not reached its code's first traceable instruction
 * (its RESUME)?  CPython shows such a frame nowhere (_PyFrame_IsIncomplete():
 * tracebacks, sys._getframe(), its own profiler): a function's frame in
 * the instant before its RESUME runs, and the shim frame 3.13+ runs
 * __init__ under once `A(...)' is specialised (_Py_InitCleanup, named and
 * filed `__init__', whose code has no RESUME at all).  A generator's frame
 * is never incomplete.  at is the instruction in the code object's own
 * copy (prev_instr on 3.11 and 3.12, instr_ptr on 3.13+).
 */
static int frame_incomplete(const struct pyvm_layout *L, const struct pycode *c,
			    const unsigned char *fr, uint64_t at)
{
	if (c->firsttraceable < 0 || L->frame.owner == PYVM_NONE || fr[L->frame.owner] == 1)
		return 0;	/* 1: FRAME_OWNED_BY_GENERATOR, 3.11 to 3.15 */
	return at < c->code_start + 2 * (uint64_t)c->firsttraceable;
}

static int code_line(const struct pyreader *pr, struct pycode *c, int64_t lasti, uint64_t instr)
{
	/* lasti (<= 3.10) or the instruction's address (3.11+): either places it */
	uint64_t at = pr->lay.lines == PYVM_LOCATIONS ? instr : (uint64_t)lasti;
	int line;

	for (unsigned int i = 0; i < c->memo_n; i++)
		if (c->memo_at[i] == at)
			return c->memo_line[i];
	switch (pr->lay.lines) {
	case PYVM_LNOTAB:
		line = pyline_lnotab(c->table, c->table_len, c->firstlineno, lasti);
		break;
	case PYVM_LINETABLE:
		line = pyline_linetable(c->table, c->table_len, c->firstlineno,
					pr->lay.lasti_units ? lasti * 2 : lasti);
		break;
	default:
		if (instr < c->code_start || instr - c->code_start >= c->code_bytes)
			line = c->firstlineno;	/* not started yet, or torn */
		else
			line = pyline_locations(c->table, c->table_len, c->firstlineno,
						(int64_t)((instr - c->code_start) / 2));
	}
	/*
	 * No line (-1), or a module's first instruction, which CPython 3.11+
	 * numbers 0 (its RESUME, so that line 1 raises a line event): the
	 * code's first line, where a function's RESUME is too.
	 */
	if (line <= 0)
		line = c->firstlineno;
	c->memo_at[c->memo_next] = at;
	c->memo_line[c->memo_next] = line;
	c->memo_next ^= 1;
	if (c->memo_n < 2)
		c->memo_n++;
	return line;
}

/*
 * 3.14+ free-threaded: a thread runs its own copy of a code object's
 * bytecode once it specializes it, entry tlbc_index of the code's
 * _PyCodeArray co_tlbc {Py_ssize_t size; char *entries[size]}; entry 0 is
 * the code object's own.  Where the frame fr's copy starts, in *base;
 * PERR_CORRUPT if the array does not have it, or instr is not in it.
 */
static enum perr tlbc_base(struct pyreader *pr, const struct pycode *c, const unsigned char *fr,
			   uint64_t instr, uint64_t *base)
{
	const struct pyvm_layout *L = &pr->lay;
	int32_t idx;
	uint64_t arr, size;
	enum perr err;

	*base = c->code_start;
	if (!L->code.tlbc || !L->frame.tlbc_index)
		return PERR_OK;
	idx = get_i32(fr, L->frame.tlbc_index);
	if (!idx)
		return PERR_OK;
	if (idx < 0 || idx > 65536)
		return PERR_CORRUPT;
	if ((err = rd_u64(pr, c->addr + L->code.tlbc, &arr)) || (err = rd_u64(pr, arr, &size)))
		return err;
	if ((uint64_t)idx >= size || size > 65536 ||
	    (err = rd_u64(pr, arr + 8 + 8 * (uint64_t)idx, base)))
		return err ? err : PERR_CORRUPT;
	if (!*base || instr < *base || instr - *base >= c->code_bytes)
		return PERR_CORRUPT;	/* the thread's copy is not where it runs */
	return PERR_OK;
}

/*
 * Make the thread's data stack chunk (3.11+) one window: its frames are
 * contiguous there, so the whole walk usually costs this single read.
 */
static void chunk_load(struct pyreader *pr, const unsigned char *ts)
{
	const struct pyvm_layout *L = &pr->lay;
	uint64_t chunk, top, start;
	size_t len;

	pr->pre_n = 0;
	if (L->tstate.datastack_chunk == PYVM_NONE)
		return;
	chunk = get_u64(ts, L->tstate.datastack_chunk);
	top = get_u64(ts, L->tstate.datastack_chunk + 8);
	if (!chunk || top <= chunk || top - chunk > (64u << 20))
		return;
	start = top - chunk > CHUNK_MAX ? top - CHUNK_MAX : chunk;
	len = (size_t)(top - start);
	if (pr->tag_dict) {
		/*
		 * the tag table in the same read, before and after the
		 * frames: the thread's tags as of its frames (tags_verified())
		 */
		size_t tlen[2] = { 48, (size_t)pr->tag_keys_len };

		pr->pre_at[0] = pr->tag_dict;
		pr->pre_at[1] = pr->tag_keys;
		pr->pre_len[0] = tlen[0];
		pr->pre_len[1] = tlen[1];
		pr->pre_n = pr->tag_keys ? 2 : 1;
		if (tlen[0] + tlen[1] > pr->pre_cap) {
			pr->pre_cap = tlen[0] + tlen[1];
			pr->pre = xrealloc(pr->pre, pr->pre_cap);
		}
		rmem_load_big_with(&pr->mem, start, len, pr->pre_at, tlen, pr->pre_n, pr->pre);
	} else {
		rmem_load_big(&pr->mem, start, len);
	}
}

/*
 * <= 3.10: is the frame object in fr one of a thread's running frames?  A
 * frame that returned is freed to its code object's zombie slot or to the
 * free list (refcount 0, not executing), where walking on from it reads a
 * chain that never was: recycled frames linked by f_back, or a cycle.
 */
static int frameobj_running(const struct pyvm_layout *L, const unsigned char *fr)
{
	int64_t refcnt = (int64_t)get_u64(fr, 0);
	int state = (signed char)fr[L->frame.state];

	if (refcnt <= 0 || refcnt > (1ll << 40))
		return 0;
	return !L->frame.state_running ||
	       (state >= -2 && state <= 29 && (L->frame.state_running >> (state + 2) & 1));
}

/* Where this version's frame says what it runs and where. */
static uint64_t frame_at(const struct pyvm_layout *L, const unsigned char *fr)
{
	return L->frames == PYVM_FRAMEOBJ ? (uint64_t)get_u32(fr, L->frame.lasti) :
					    get_u64(fr, L->frame.instr);
}

static void visit_add(struct pyreader *pr, uint64_t addr, const unsigned char *fr)
{
	const struct pyvm_layout *L = &pr->lay;

	if (pr->nvisit == VERIFY_MAX)
		return;		/* deeper than shown: the walk found the root */
	if (pr->nvisit == pr->visit_cap) {
		pr->visit_cap = pr->visit_cap ? pr->visit_cap * 2 : 64;
		pr->visit = xreallocarray(pr->visit, pr->visit_cap, sizeof(*pr->visit));
	}
	pr->visit[pr->nvisit++] = (struct pyvisit){ addr, get_u64(fr, L->frame.back),
						    get_u64(fr, L->frame.code), frame_at(L, fr),
						    NULL, 0,
						    L->frame.owner != PYVM_NONE && !fr[L->frame.owner], 0,
						    (L->shim_owner != PYVM_NONE &&
						     fr[L->frame.owner] >= L->shim_owner) ||
						    (L->frame.is_entry != PYVM_NONE &&
						     fr[L->frame.is_entry]) };
}

/*
 * 3.11-3.13: is the frame v, whose callee is `callee', at an instruction
 * that runs a Python frame (L->call_ops)?  While its callee lives a
 * caller stays where it called from; a caller read anywhere else (on the
 * line before its call, say) was read before it called, or after its
 * callee returned, with a callee frame that was another moment's: freed
 * frames keep their bytes, and a frame pushed again at the same address
 * with the same code and caller reads the same.  That holds whenever the
 * reads were made and in whatever order: no re-read can tell a frame from
 * its copy pushed later in the same place, but none is needed to see that
 * a frame is not at a call.  A callee run from C (an entry frame between
 * them, or is_entry) may have been called from any instruction: not
 * judged.  A code object too large for its opcodes to be kept (OPS_MAX)
 * is not judged either.
 */
static int caller_calls(const struct pyvm_layout *L, const struct pyvisit *v,
			const struct pyvisit *callee)
{
	const struct pycode *c = v->c;
	uint64_t idx;

	if (!L->call_ops || !c || callee->entered || !c->ops)
		return 1;
	if (v->at < c->code_start || v->at - c->code_start >= c->code_bytes || (v->at & 1))
		return 0;	/* not started (3.11, 3.12: prev_instr before the first) */
	idx = (v->at - c->code_start) / 2;
	/*
	 * the instruction is `back' units before where the pointer stays (its
	 * cache entries on 3.11 and 3.12, at most 9), as its opcode says
	 */
	for (uint64_t back = 0; back <= idx && back < CALLOP_BACK; back++) {
		uint8_t op = L->call_ops[c->ops[idx - back]];

		if (op == PYVM_CALLOP_ANY || op == back + 1)
			return 1;
	}
	return 0;
}

/*
 * A walk reads frames one after the other, from windows fetched at the
 * start of the sample or later, while the program goes on calling and
 * returning: the frames it put together may never have been on the stack
 * at once (a caller read while it was still the innermost frame, on a line
 * before its call; a frame freed and reused).  So every frame the walk
 * used is read again, fresh, in one scatter read.  A frame's line changes
 * only while it is the innermost one, and it is not while its callee
 * lives: when the innermost frame the walk read is still there (same code,
 * same caller, running) and every other frame is as the walk read it,
 * each caller kept its line from the moment the innermost frame was read
 * to now, so the stack shown is the one the thread had at that moment.
 * Otherwise the walk is torn.  flen bytes of each frame are read again.
 */
/*
 * Is the str object now (bytes read again) the name it was?  A code object
 * built by code.replace(co_name=...) shares everything with the last one
 * but its name, and that str may take the freed one's place too: compare
 * its length, kind and characters (not its refcount, nor its hash, which
 * is set when first needed).
 */
static int same_name(const struct pyvm_layout *L, const unsigned char *was,
		     const unsigned char *now)
{
	uint64_t len = get_u64(was, L->unicode.length);
	uint32_t state;
	size_t data, n;

	memcpy(&state, was + L->unicode.state, sizeof(state));
	state >>= L->unicode.state_shift;
	data = (state >> 6 & 1) ? L->unicode.ascii_size : L->unicode.compact_size;
	if (memcmp(was + L->unicode.length, now + L->unicode.length, 8) ||
	    memcmp(was + L->unicode.state, now + L->unicode.state, 4) || data >= NAMEOBJ)
		return 0;
	n = len * (state >> 2 & 7) < NAMEOBJ - data ? (size_t)(len * (state >> 2 & 7)) :
						      NAMEOBJ - data;
	return !memcmp(was + data, now + data, n);	/* within what both read */
}

static struct pyroot *root_slot(struct pyreader *pr, uint64_t tstate)
{
	size_t i = (size_t)((tstate >> 4) * 0x9E3779B97F4A7C15ull >> 40) & (ROOTS - 1);

	if (!pr->roots)
		pr->roots = xcalloc(ROOTS, sizeof(*pr->roots));
	for (size_t k = 0; k < ROOTS; k++, i = (i + 1) & (ROOTS - 1))
		if (pr->roots[i].tstate == tstate || !pr->roots[i].tstate)
			return &pr->roots[i];
	memset(pr->roots, 0, ROOTS * sizeof(*pr->roots));	/* full: start over */
	return root_slot(pr, tstate);
}

/*
 * <= 3.10: are the frames walked from the thread's frame pointer (read
 * earlier) still its own?  A frame object that returned goes to its code
 * object's spare slot or a free list, and another thread calling that code
 * takes it: the walk then read the other thread's stack (a sample of one
 * thread in a unit of the other, with its own tags: CI, 3.9).  Its
 * running frames from the innermost one read to the thread's outermost
 * one, read again as one (verify()), are its own when its frame pointer
 * still names that innermost one, or when they end in the outermost frame
 * seen last time it did.
 */
static int frames_owned(struct pyreader *pr, uint64_t tstate, uint64_t top, uint64_t now_top)
{
	struct pyroot *r = root_slot(pr, tstate);

	if (now_top == top) {
		*r = (struct pyroot){ tstate, pr->walk_root };
		return 1;
	}
	return r->tstate == tstate && r->root == pr->walk_root;
}

/*
 * <= 3.10: the tag table (where it was last time) into verify()'s read,
 * right after the innermost frame: the thread's tags as of that frame
 * (tags_verified()).  Read last, after the outer frames, it was of a
 * later moment: a unit's frames came with the gap's tags (3.9, pyrospy
 * descheduled at random moments).  The iovs added, 0 or 2.
 */
static size_t snap_iov(struct pyreader *pr, struct procmem_iov *iov)
{
	if (pr->lay.frames != PYVM_FRAMEOBJ || !pr->tag_dict || !pr->tag_keys)
		return 0;
	if (48 + pr->tag_keys_len > pr->snap_cap) {
		pr->snap_cap = 48 + (size_t)pr->tag_keys_len;
		pr->snap = xrealloc(pr->snap, pr->snap_cap);
	}
	iov[0] = (struct procmem_iov){ pr->tag_dict, pr->snap, 48 };
	iov[1] = (struct procmem_iov){ pr->tag_keys, pr->snap + 48, (size_t)pr->tag_keys_len };
	/* snap_read() answers from these, not from tag_keys_len, which may grow since */
	pr->snap_dict = pr->tag_dict;
	pr->snap_keys = pr->tag_keys;
	pr->snap_keys_len = pr->tag_keys_len;
	pr->snap_ok = 1;
	return 2;
}

static enum perr verify(struct pyreader *pr, size_t flen, uint64_t tstate, uint64_t top_at)
{
	const struct pyvm_layout *L = &pr->lay;
	uint64_t now_top = 0, top = pr->nvisit ? pr->visit[0].addr : 0;
	size_t n = 0, cap = pr->visit_cap ? pr->visit_cap : 1, clen = L->code.size, used = 0, live;
	int ranges = L->frames != PYVM_FRAMEOBJ && (L->minor >= 14 || L->call_ops);
	enum perr err;

	if (cap > pr->vcap) {	/* grown with the walk's frames, not every sample */
		pr->vbuf = xreallocarray(pr->vbuf, cap, flen + VERIFY_GAP);
		pr->voff = xreallocarray(pr->voff, cap, sizeof(*pr->voff));
		pr->cbuf = xreallocarray(pr->cbuf, cap, clen);
		pr->nbuf = xreallocarray(pr->nbuf, cap, NAMEOBJ);
		pr->viov = xreallocarray(pr->viov, 3 * cap + 4, sizeof(*pr->viov));
		pr->vcap = cap;
	}
	/*
	 * 3.11+: frames live in the data stack, deeper ones higher; the
	 * thread's innermost frame now below the one read means that one was
	 * popped (a freed frame's bytes stay the same).  <= 3.10: see
	 * frames_owned().
	 */
	if (top_at)
		pr->viov[n++] = (struct procmem_iov){ top_at, &now_top, sizeof(now_top) };
	/*
	 * A walk that stopped at an anchor: the pair first, in one range with
	 * the frame pointer next to it.  Still as the walk found it, it says
	 * the frame the walk stopped at (stop, its last) has not returned
	 * since the anchor was written, up to this read, which comes after
	 * the walk's: the frames below it held then.  The frames above it
	 * are checked below as any walk's.
	 */
	if (pr->anchor_check == 1)
		pr->viov[n++] = (struct procmem_iov){ tstate + L->tstate.last_profiled,
						      pr->anchor_got, sizeof(pr->anchor_got) };
	/*
	 * The frames innermost first, as the walk read them, the innermost
	 * right after the innermost frame pointer (and the pair, when
	 * anchored).  (Outermost first, their
	 * order in a data stack, procmem_readv() would read them as one range,
	 * for a third less CPU a sample; but then 5-13 callers in 10 000 off
	 * their call line came through on 3.11 and 3.13 in exact/fast_recursion,
	 * none this way.)  A caller next below its callee in the data stack
	 * is read in one range with it, up to a page of them at once, the
	 * ranges still innermost first: the kernel pins pages for each range
	 * anew, and a range a frame cost a third of a 50-deep sample's CPU.
	 * On 3.11-3.13, read in ranges, 5 to 32 callers in 10 000 off their
	 * call line came through (0 on 3.14 and 3.15 in 6 runs): those
	 * versions store a frame's instruction pointer at every instruction,
	 * so a frame pushed again reads on its lines before its call, and
	 * the same again when read again at the same point of the next
	 * call.  caller_calls() rules such a caller out however the reads
	 * are ordered, so 3.11-3.13 read in ranges too.
	 */
	pr->snap_ok = pr->top_same = 0;
	/*
	 * That frame, live all along, keeps its caller and its code object
	 * (which cannot have been freed and reused): neither is read again.
	 * Alone, it is the innermost: nothing else of it is compared.
	 */
	live = pr->anchor_check == 1 ? pr->nvisit - 1 : SIZE_MAX;
	for (size_t i = 0; i < pr->nvisit && !(i == live && !i);) {
		uint64_t lo = pr->visit[i].addr, hi = lo + flen;
		size_t j = i + 1;

		while (ranges && j < pr->nvisit && pr->visit[j].addr + flen <= lo &&
		       lo - (pr->visit[j].addr + flen) <= VERIFY_GAP &&
		       hi - pr->visit[j].addr <= VERIFY_SPAN)
			lo = pr->visit[j++].addr;
		pr->viov[n++] = (struct procmem_iov){ lo, pr->vbuf + used, (size_t)(hi - lo) };
		for (size_t k = i; k < j; k++)
			pr->voff[k] = used + (size_t)(pr->visit[k].addr - lo);
		used += (size_t)(hi - lo);
		if (!i)
			n += snap_iov(pr, pr->viov + n);
		i = j;
	}
	/* each code object once in a row: a recursion repeats it */
	for (size_t i = 0; i < pr->nvisit; i++) {
		const struct pyvisit *v = &pr->visit[i];

		if (v->c && i != live && (!i || pr->visit[i - 1].c != v->c)) {
			pr->viov[n++] = (struct procmem_iov){ v->c->addr, pr->cbuf + i * clen, clen };
			pr->viov[n++] = (struct procmem_iov){ v->c->print[1], pr->nbuf + i * NAMEOBJ,
							      v->c->namelen };
		}
	}
	if (pr->anchor_check == 2)
		pr->viov[n++] = (struct procmem_iov){ tstate + L->tstate.last_profiled,
						      pr->anchor_got, sizeof(pr->anchor_got) };
	if (n && (err = procmem_readv(&pr->t->mem, pr->viov, n, NULL))) {
		pr->snap_ok = 0;
		return perr_is_fatal(err) ? err : PERR_CORRUPT;
	}
	/* the anchor as when the walk began: no frame below it has changed since */
	if ((pr->anchor_check == 1 &&
	     memcmp(pr->anchor_got, pr->anchor_want, sizeof(pr->anchor_got))) ||
	    (pr->anchor_check == 2 && pr->anchor_got[0] != pr->anchor_want[0]))
		return PERR_CORRUPT;
	for (size_t k = 0; k < pr->nvisit && !(k == live && !k); k++) {
		const struct pyvisit *v = &pr->visit[k];
		const unsigned char *fr = pr->vbuf + pr->voff[k];
		uint64_t print[4];

		if (get_u64(fr, L->frame.back) != v->back || get_u64(fr, L->frame.code) != v->code ||
		    (k && frame_at(L, fr) != v->at) ||
		    (L->frames == PYVM_FRAMEOBJ && !frameobj_running(L, fr)))
			return PERR_CORRUPT;
		if (k && !caller_calls(L, v, &pr->visit[k - 1])) {
			pr->stats.bad_frames++;
			return PERR_CORRUPT;	/* a caller not at a call: torn */
		}
		if (!v->c || k == live || (k && pr->visit[k - 1].c == v->c))
			continue;
		code_print(L, pr->cbuf + k * clen, print);
		if (memcmp(print, v->c->print, sizeof(print)) ||
		    !same_name(L, v->c->nameobj, pr->nbuf + k * NAMEOBJ)) {
			/* another code object where a cached one was: forget them all */
			pr->stats.cache_stale++;
			cache_clear(pr);
			return PERR_CORRUPT;
		}
	}
	if (top_at && L->frames == PYVM_FRAMEOBJ) {
		pr->top_same = top && now_top == top;
		return !top || frames_owned(pr, tstate, top, now_top) ? PERR_OK : PERR_CORRUPT;
	}
	if (top_at && now_top < top && top - now_top < CHUNK_MAX)
		return PERR_CORRUPT;
	return PERR_OK;
}

/*
 * CPython 3.15+ keeps, per thread, a frame an out-of-process profiler
 * named (last_profiled_frame) and a count (_seq): when that frame returns,
 * the interpreter names its caller instead and counts one
 * (_PyThreadState_UpdateLastProfiledFrame, pycore_interpframe.h).  So
 * while the word still names a frame pyrospy wrote there, or its k-th
 * caller with the count k further, that frame has not returned since,
 * and no frame below it can have changed: a caller stands still while
 * its callee lives.  A walk then stops at that frame and takes the ones
 * below it from the anchor, and verify() reads again only the frames it
 * walked, with the pair (still as the walk found it, or the stack is
 * read again).
 *
 * The anchor is written after a whole walk has been verified: the
 * innermost of the thread's own frames goes into last_profiled_frame (see
 * anchor_match() for why not a generator's or an entry frame), and every
 * frame is read again with the pair (anchor_register()).  A frame that
 * returned before the write lands is not counted by the interpreter; it
 * is caught there, as verify() catches any frame that moved.  Another
 * profiler writing the word (CPython's own) makes it name a frame of its
 * choosing: not the one expected, so the stack is read whole.
 */
static int anchoring(const struct pyreader *pr)
{
	/* not with --locals or --async: they look for frames in the walk's */
	return pr->opts.anchor && pr->lay.tstate.last_profiled && !pr->anchor_off &&
	       !pr->flocals && !pr->aio && pr->lay.frames == PYVM_IFRAME;
}

/* The thread's anchor slot: its own, else (make) a free one, else NULL. */
static struct pyanchor *anchor_slot(struct pyreader *pr, uint64_t tstate, int make)
{
	size_t i = (size_t)((tstate >> 4) * 0x9E3779B97F4A7C15ull >> 40) & (ANCHORS - 1);
	struct pyanchor *free_slot = NULL;

	if (!pr->anchors) {
		if (!make)
			return NULL;
		pr->anchors = xcalloc(ANCHORS, sizeof(*pr->anchors));
	}
	for (size_t k = 0; k < ANCHOR_PROBE; k++, i = (i + 1) & (ANCHORS - 1)) {
		struct pyanchor *a = &pr->anchors[i];

		if (a->tstate == tstate)
			return a;
		if (!free_slot && (!a->tstate || a->gen != pr->anchor_gen))
			free_slot = a;
	}
	if (!make)
		return NULL;
	/* full: the first one looked at gives way */
	return free_slot ? free_slot : &pr->anchors[(size_t)((tstate >> 4) *
				0x9E3779B97F4A7C15ull >> 40) & (ANCHORS - 1)];
}

/* A thread's two ids, as its state ts says. */
static void thread_ident(const struct pyvm_layout *L, const unsigned char *ts, uint64_t id[2])
{
	id[0] = get_u64(ts, L->tstate.thread_id);
	id[1] = L->tstate.native_thread_id != PYVM_NONE ? get_u64(ts, L->tstate.native_thread_id) : 0;
}

/*
 * The thread's anchor, if the pair in its state ts says it still holds:
 * *stop, the frame the walk stops at (the anchor's frame or its k-th
 * caller), *from, the first of the anchor's frames below it.
 */
static struct pyanchor *anchor_match(struct pyreader *pr, uint64_t tstate,
				     const unsigned char *ts, uint64_t *stop, size_t *from)
{
	const struct pyvm_layout *L = &pr->lay;
	struct pyanchor *an = anchor_slot(pr, tstate, 0);
	uint64_t at, seq, k, id[2];

	if (!an || an->tstate != tstate || an->gen != pr->anchor_gen ||
	    L->tstate.last_profiled + 16 > L->tstate.size)
		return NULL;
	thread_ident(L, ts, id);
	if (memcmp(id, an->ident, sizeof(id)))
		return NULL;
	at = get_u64(ts, L->tstate.last_profiled);
	seq = get_u64(ts, L->tstate.last_profiled + 8);
	k = seq - an->seq;
	/*
	 * k of its frames returned: the word names the k-th's caller.  Each
	 * step is a return the interpreter counted only if the frames were
	 * its thread's own: a generator's frame leaves the stack when it
	 * yields, and an entry frame when C returns, without a count.
	 */
	if (seq < an->seq || k >= an->n || k > an->nowned ||
	    at != (k ? an->below[k - 1].addr : an->frame))
		return NULL;
	*stop = at;
	*from = (size_t)k;
	pr->anchor_want[0] = at;
	pr->anchor_want[1] = seq;
	return an;
}

/*
 * The anchor's frames from below[from] on onto st, if the walk's frame
 * at the stop calls the first of them (back): its stack is then whole.
 */
static int anchor_splice(struct pyreader *pr, struct pyanchor *an, size_t from, uint64_t back,
			 struct stack *st)
{
	if (back != an->below[from].addr)
		return 0;
	for (size_t j = from; j < an->n; j++) {
		const struct pyvisit *v = &an->below[j];

		if (!v->c || v->hidden)
			continue;	/* a shim or an incomplete frame: no frame of st */
		if (st->depth == STACK_MAX_DEPTH) {
			st->truncated = 1;
			break;
		}
		st->frame[st->depth++] = (struct stack_frame){ v->c->name, v->c->file, v->line };
	}
	pr->walk_root = an->root;
	pr->anchored = 1;
	pr->anchor_at = an;
	pr->anchor_from = from;
	return 1;
}

static enum perr verify(struct pyreader *pr, size_t flen, uint64_t tstate, uint64_t top_at);

/*
 * After a verified walk: write its innermost frame as the thread's
 * anchor, read every frame again with the pair (the frame must still be
 * there, as walked, and the word must name it), and keep what lies below.
 * A walk that stopped at an anchor has its frames below it added first.
 */
static void anchor_register(struct pyreader *pr, uint64_t tstate, const unsigned char *ts,
			    size_t flen, uint64_t top_at)
{
	const struct pyvm_layout *L = &pr->lay;
	struct pyanchor *an, *was = pr->anchored ? pr->anchor_at : NULL;
	uint64_t frame;
	size_t n, top;

	if (was) {
		n = pr->nvisit + was->n - pr->anchor_from;
		if (n > VERIFY_MAX)
			return;
		if (n > pr->visit_cap) {
			pr->visit_cap = n;
			pr->visit = xreallocarray(pr->visit, pr->visit_cap, sizeof(*pr->visit));
		}
		memcpy(pr->visit + pr->nvisit, was->below + pr->anchor_from,
		       (was->n - pr->anchor_from) * sizeof(*pr->visit));
		pr->nvisit = n;
	}
	if (pr->nvisit >= VERIFY_MAX)
		return;		/* not every frame visited */
	/* the innermost of the thread's own frames (see anchor_match()) */
	for (top = 0; top < pr->nvisit && !pr->visit[top].owned; top++)
		;
	if (top + 1 >= pr->nvisit)
		return;		/* none, or nothing below it */
	frame = pr->visit[top].addr;
	switch (procmem_write(&pr->t->mem, tstate + L->tstate.last_profiled, &frame, sizeof(frame))) {
	case PERR_OK:
		break;
	case PERR_PERM:
		pr->anchor_off = 1;	/* not allowed here: read every frame */
		return;
	default:
		return;		/* the thread or process going: another sample tries */
	}
	pr->anchor_check = 2;
	pr->anchor_want[0] = frame;
	if (verify(pr, flen, tstate, top_at)) {
		pr->anchor_check = 0;
		return;		/* moved already: another sample writes one */
	}
	pr->anchor_check = 0;
	an = anchor_slot(pr, tstate, 1);
	n = pr->nvisit - top - 1;
	if (n > an->cap) {
		an->cap = n;
		an->below = xreallocarray(an->below, an->cap, sizeof(*an->below));
	}
	memcpy(an->below, pr->visit + top + 1, n * sizeof(*an->below));
	an->n = n;
	for (an->nowned = 0; an->nowned < n && an->below[an->nowned].owned; an->nowned++)
		;
	an->tstate = tstate;
	thread_ident(L, ts, an->ident);
	an->gen = pr->anchor_gen;
	an->frame = frame;
	an->seq = pr->anchor_got[1];
	an->root = pr->visit[pr->nvisit - 1].addr;
}

/*
 * Walk one thread's frames into st.  PERR_CORRUPT on a torn or bad chain:
 * a stack is shown only when the walk reached the thread's root (a frame
 * with no caller), through frames that each held together.  Past
 * STACK_MAX_DEPTH frames are walked, not kept, to find that root.
 */
static enum perr walk(struct pyreader *pr, uint64_t tstate, const unsigned char *ts,
		      struct stack *st)
{
	const struct pyvm_layout *L = &pr->lay;
	unsigned char fr[512];
	uint64_t frame, frame_addr = 0, tortoise = 0, top_at = 0, stop = 0;
	unsigned int steps = 0, power = 1;
	struct pyanchor *an = NULL;
	size_t flen, from = 0;
	enum perr err;

	st->depth = 0;
	st->truncated = 0;
	pr->nvisit = 0;
	pr->anchored = 0;
	if (anchoring(pr))
		an = anchor_match(pr, tstate, ts, &stop, &from);
	frame = get_u64(ts, L->tstate.frame);
	pr->walk_root = 0;
	if (L->frames == PYVM_IFRAME || L->frames == PYVM_FRAMEOBJ)
		top_at = tstate + L->tstate.frame;
	if (L->frames == PYVM_CFRAME && frame) {
		top_at = frame + L->tstate.cframe_current_frame;
		if ((err = rd_u64(pr, top_at, &frame)))
			return err;
	}
	if (L->frames != PYVM_FRAMEOBJ)
		chunk_load(pr, ts);
	flen = L->frames == PYVM_FRAMEOBJ ? L->frame.lasti + 4 : L->frame.size;
	if (L->frame.state_running && L->frame.state >= flen)
		flen = L->frame.state + 1;
	if (flen > sizeof(fr))
		return PERR_CORRUPT;
	while (frame) {
		uint64_t code, back, instr = 0, base = 0;
		int64_t lasti = -1;
		struct pycode *c;

		if (an && frame_addr == stop) {
			if (anchor_splice(pr, an, from, frame, st))
				break;
			an = NULL;	/* not what it was: walk on to the root */
		}
		/* a cycle (Brent's: the tortoise jumps to the hare), or not a frame */
		if (frame == tortoise || ++steps > WALK_MAX || (frame & 7))
			return PERR_CORRUPT;
		if (steps == power) {
			tortoise = frame;
			power *= 2;
		}
		if ((err = rd(pr, frame, fr, flen)))
			return err;
		if (L->frames == PYVM_FRAMEOBJ && !frameobj_running(L, fr)) {
			pr->stats.bad_frames++;
			return PERR_CORRUPT;
		}
		code = get_u64(fr, L->frame.code);
		if (L->stackref_tagged)
			code &= ~(uint64_t)3;
		back = get_u64(fr, L->frame.back);
		visit_add(pr, frame, fr);
		frame_addr = frame;
		pr->walk_root = frame;
		frame = back;
		if (L->shim_owner != PYVM_NONE && fr[L->frame.owner] >= L->shim_owner)
			continue;	/* entry frame of the C stack: not Python code */
		if (L->frames == PYVM_FRAMEOBJ)
			lasti = get_i32(fr, L->frame.lasti);
		else
			instr = get_u64(fr, L->frame.instr);
		c = code_get(pr, code);
		if (!c) {
			pr->stats.bad_frames++;
			return PERR_CORRUPT;
		}
		if (pr->nvisit && pr->visit[pr->nvisit - 1].addr == frame_addr)
			pr->visit[pr->nvisit - 1].c = c;
		if (st->depth == STACK_MAX_DEPTH) {
			st->truncated = 1;	/* keep the innermost frames, find the root */
			continue;
		}
		if (tlbc_base(pr, c, fr, instr, &base)) {
			pr->stats.bad_frames++;
			return PERR_CORRUPT;
		}
		/* the same instruction in the code object's own copy */
		instr = instr - base + c->code_start;
		if (L->frames != PYVM_FRAMEOBJ && frame_incomplete(L, c, fr, instr)) {
			if (pr->nvisit && pr->visit[pr->nvisit - 1].addr == frame_addr)
				pr->visit[pr->nvisit - 1].hidden = 1;
			continue;
		}
		st->frame[st->depth].name = c->name;
		st->frame[st->depth].file = c->file;
		st->frame[st->depth].line = code_line(pr, c, lasti, instr);
		if (pr->nvisit && pr->visit[pr->nvisit - 1].addr == frame_addr)
			pr->visit[pr->nvisit - 1].line = st->frame[st->depth].line;
		st->depth++;
	}
	pr->anchor_check = pr->anchored;
	err = verify(pr, flen, tstate, top_at);
	pr->anchor_check = 0;
	if (err)
		return err;
	if (pr->anchored)
		pr->stats.anchored++;
	if (pr->top_same && st->depth && pr->visit[0].c) {
		/* <= 3.10: the innermost line as of verify()'s read, the tags' */
		struct pycode *c = pr->visit[0].c;

		st->frame[0].line = code_line(pr, c, get_i32(pr->vbuf + pr->voff[0], L->frame.lasti),
					      0);
	}
	if (anchoring(pr) && !st->truncated && (!pr->anchored || pr->nvisit >= REANCHOR))
		anchor_register(pr, tstate, ts, flen, top_at);
	return PERR_OK;
}

/*
 * <= 3.10 records only the pthread_t.  glibc's struct pthread holds the
 * kernel tid at a fixed offset: find it once, from every thread's struct
 * (pthtid.h), and reuse it.  Until it is found, a thread has no tid, but
 * for the one thread of a process whose id pthtid_pick() knows anyway.
 */
static pid_t pthread_tid(struct pyreader *pr, uint64_t pthread)
{
	int32_t tid;

	if (!pthread || (pthread & 7))
		return 0;
	if (pr->pthread_tid_off < 0)
		return pthread == pr->sole_pthread ? pr->sole_tid : 0;
	if (rd(pr, pthread + (uint64_t)pr->pthread_tid_off, &tid, sizeof(tid)) || tid <= 0)
		return 0;
	return tid;
}

/* Find the tid offset from the structs of all threads, before the first is named. */
static void pthread_discover(struct pyreader *pr, uint64_t head)
{
	const struct pyvm_layout *L = &pr->lay;
	int32_t (*words)[PTHTID_WORDS] = xmalloc(PTHTID_THREADS * sizeof(*words));
	uint64_t tstate = head, id, first = 0;
	pid_t *tids;
	size_t n = 0;
	int ntids;

	pr->sole_tid = 0;
	for (unsigned int k = 0; tstate && k < THREAD_MAX && n < PTHTID_THREADS; k++) {
		if (rd_u64(pr, tstate + L->tstate.thread_id, &id))
			goto out;
		if (id && !(id & 7) && !rd(pr, id, words[n], sizeof(words[n])) && !n++)
			first = id;
		if (rd_u64(pr, tstate + L->tstate.next, &tstate))
			goto out;
	}
	ntids = pthtid_ns_tasks(pr->t->pid, &tids);
	if (ntids < 0)
		goto out;
	pr->pthread_tid_off = pthtid_pick((const int32_t (*)[PTHTID_WORDS])words, n, tids,
					  (size_t)ntids, &pr->sole_tid);
	pr->sole_pthread = first;
	free(tids);
out:
	free(words);
}

/* Is tid (host) a thread of the process?  -1: the kernel does not say. */
static int is_task(struct pyreader *pr, pid_t tid)
{
	pid_t *tids;
	int n = target_tasks(pr->t->pid, &tids), found = 0;

	if (n < 0)
		return -1;
	for (int i = 0; i < n && !found; i++)
		found = tids[i] == tid;
	free(tids);
	return found;
}

/*
 * st's idle state from its thread's; 1 if the thread is not one of this
 * process.  A fork() from C that runs none of Python's hooks (uWSGI's
 * workers) leaves the child the parent's thread states: the forking
 * thread's with the parent's native id, the others' for threads the child
 * does not have.  glibc's struct pthread of the forking thread has the
 * child's id: ask it, as on <= 3.10; a thread found by neither is none of
 * this process's.
 */
static int thread_state(struct pyreader *pr, uint64_t head, struct stack *st)
{
	char state = st->tid > 0 ? taskstat_state(&pr->ts, st->tid) : 0;

	if (!state && (st->tid <= 0 || is_task(pr, st->tid) == 0)) {
		if (pr->lay.tstate.native_thread_id != PYVM_NONE) {
			if (pr->pthread_tid_off < 0)
				pthread_discover(pr, head);
			st->tid = taskstat_host_tid(&pr->ts, pthread_tid(pr, st->thread_id));
			state = st->tid > 0 ? taskstat_state(&pr->ts, st->tid) : 0;
		}
		if (!state && pr->pthread_tid_off >= 0 && (st->tid <= 0 || is_task(pr, st->tid) == 0))
			return 1;
	}
	st->idle = state ? state != 'R' : -1;
	return 0;
}

/*
 * dump --locals: each shown frame's locals, from the frames the walk
 * visited (a shim has no code and no frame of st).
 */
static void locals_fill(struct pyreader *pr, struct stack *st)
{
	unsigned int d = 0;

	for (size_t i = 0; i < pr->nvisit && d < st->depth; i++)
		if (pr->visit[i].c && !pr->visit[i].hidden)
			pr->flocals[d++] = pylocals_frame(&pr->locals, pr->visit[i].addr,
							  pr->visit[i].c->addr);
	while (d < st->depth)
		pr->flocals[d++] = NULL;
	st->locals = pr->flocals;
}

/*
 * Where the interpreter says its cyclic garbage collector is running (an
 * int, per interpreter from 3.9, process-wide in 3.8), 0 where unknown.
 */
static uint64_t gc_flag_at(const struct pyreader *pr, uint64_t interp)
{
	const struct pyvm_layout *L = &pr->lay;

	if (pr->opts.no_gc)
		return 0;
	if (L->interp.gc_collecting != PYVM_NONE)
		return interp + L->interp.gc_collecting;
	if (L->runtime.gc_collecting != PYVM_NONE)
		return pr->runtime + L->runtime.gc_collecting;
	return 0;
}

/*
 * The collector runs on the thread holding the GIL, inside whatever that
 * thread was doing: "(garbage collection)" on top of its stack when the
 * flag was set before the walk (was) and still is after it, so that the
 * stack read is one the program had while collecting.  1: it stopped in
 * between, and the stack cannot be said to be either: drop it.
 */
static int gc_leaf(struct pyreader *pr, uint64_t at, int32_t was, struct stack *st)
{
	int32_t now = 0;

	if (!at || was != 1 || st->holds_gil != 1)
		return 0;
	if (procmem_read(&pr->t->mem, at, &now, sizeof(now)) || now != 1)
		return 1;
	if (st->depth == STACK_MAX_DEPTH)
		return 0;	/* cut: its innermost frames are not all there */
	memmove(st->frame + 1, st->frame, st->depth * sizeof(st->frame[0]));
	st->frame[0] = (struct stack_frame){ "(garbage collection)", "", 0 };
	if (st->locals) {
		memmove(pr->flocals + 1, pr->flocals, st->depth * sizeof(pr->flocals[0]));
		pr->flocals[0] = NULL;
	}
	st->depth++;
	return 0;
}

/*
 * --async: the chain of the task the thread was running before the walk
 * (task, 0 for none; n frames in pr->chain, read then too), as "<task>
 * NAME" frames right over the task's own coroutine frame (coro_frame),
 * the outermost frame the task runs.  1: after the walk the thread's
 * running task is another one, or one of another name (read from the
 * process, not the sample's cache), so the stack cannot be said to be
 * the task's: drop it.  A task whose coroutine frame is not on the stack
 * (its step is in C code) gets no frames: the stack stays as read.
 */
static int task_frames(struct pyreader *pr, uint64_t tstate, uint64_t task, unsigned int n,
		       uint64_t coro_frame, int loop, struct stack *st)
{
	unsigned int d = 0;
	size_t i;

	if (!loop)
		return 0;	/* no event loop in this thread: nothing can change */
	if (pyasync_running(pr->aio, tstate, st->thread_id, 1, NULL, pr->stats.samples) != task ||
	    (n && !pyasync_chain_same(pr->aio, task, n)))
		return 1;	/* the caller counts it as dropped */
	if (!n)
		return 0;
	for (i = 0; i < pr->nvisit; i++) {
		if (pr->visit[i].addr == coro_frame)
			break;
		if (pr->visit[i].c && !pr->visit[i].hidden)
			d++;
	}
	if (i == pr->nvisit || !pr->visit[i].c || d >= st->depth ||
	    st->depth + n > STACK_MAX_DEPTH)
		return 0;
	/* frames 0..d are the task's; its chain goes right over them */
	memmove(st->frame + d + 1 + n, st->frame + d + 1, (st->depth - d - 1) * sizeof(st->frame[0]));
	memcpy(st->frame + d + 1, pr->chain, n * sizeof(st->frame[0]));
	if (st->locals) {
		memmove(pr->flocals + d + 1 + n, pr->flocals + d + 1,
			(st->depth - d - 1) * sizeof(pr->flocals[0]));
		memset(pr->flocals + d + 1, 0, n * sizeof(pr->flocals[0]));
	}
	st->depth += n;
	return 0;
}

/* runtime: the address of _PyRuntime, or NULL to look it up in t's ELF */
static enum perr pyreader_setup(struct target *t, const struct reader_opts *opts,
				const uint64_t *runtime, struct pyreader **out)
{
	const struct pyvm_layout *base = pyvm_find(t->minor);
	struct pyreader *pr;
	uint64_t size;
	int tls;

	if (!base)
		return PERR_UNSUPPORTED;
	pr = xcalloc(1, sizeof(*pr));
	pr->t = t;
	pr->opts = *opts;
	pr->lay = *base;
	pr->pthread_tid_off = -1;
	pr->cache = xcalloc(CODE_CACHE, sizeof(*pr->cache));
	taskstat_init(&pr->ts, t->pid);
	rmem_init(&pr->mem, t);
	if (runtime) {
		pr->runtime = *runtime;
	} else if (target_symbol(t, "_PyRuntime", &pr->runtime, &tls) &&
		   target_section(t, ".PyRuntime", &pr->runtime, &size)) {
		pyreader_free(pr);
		return PERR_NOTFOUND;
	}
	if (target_symbol(t, "PyCode_Type", &pr->code_type, &tls))
		pr->code_type = 0;
	if (target_symbol(t, "PyUnicode_Type", &pr->unicode_type, &tls))
		pr->unicode_type = 0;
	if (target_symbol(t, "PyBytes_Type", &pr->bytes_type, &tls))
		pr->bytes_type = 0;
	if (target_symbol(t, "PyDict_Type", &pr->dict_type, &tls))
		pr->dict_type = 0;
	if (target_symbol(t, "PyList_Type", &pr->list_type, &tls))
		pr->list_type = 0;
	pr->tagsets = xcalloc(TAGSET_CACHE, sizeof(*pr->tagsets));
	snprintf(pr->describe, sizeof(pr->describe), "Python %s, shipped offsets for 3.%u",
		 t->version, base->minor);

	/* 3.13+: the target's own offsets win over the shipped table. */
	if (t->minor >= 13) {
		const struct pyvm_debug_layout *dl = pyvm_debug_find(t->minor);
		unsigned char *img;
		unsigned int mismatch = 0;

		int ok = 0;

		if (dl) {
			img = xmalloc(dl->size);
			ok = !procmem_read(&t->mem, pr->runtime, img, dl->size) &&
			     !pyvm_from_debug(&pr->lay, base, dl, img, dl->size, &mismatch);
			if (ok)
				snprintf(pr->describe, sizeof(pr->describe),
					 "Python %s, offsets from the target's _Py_DebugOffsets "
					 "(%u differ from the shipped table)%s", t->version,
					 mismatch, pr->lay.free_threaded ? ", free-threaded" : "");
			else
				pr->lay = *base;
			free(img);
		}
		/*
		 * A free-threaded build read with a GIL build's table would
		 * find nothing, silently: refuse it.  And --gil would keep
		 * nothing: it has no GIL (the CLI says so first).
		 */
		if ((t->free_threaded && (!ok || !pr->lay.free_threaded)) ||
		    (pr->lay.free_threaded && opts->gil_only)) {
			pyreader_free(pr);
			return PERR_UNSUPPORTED;
		}
	}
	/* with the layout settled: they keep what it says (a free-threaded build) */
	pythread_init(&pr->names, &pr->mem, &pr->lay, t);
	if (opts->async_tasks) {
		struct pyasync_host h;

		pyreader_async_host(pr, &h);
		pr->aio = pyasync_new(&h, t);
	}
	if (opts->locals) {
		pylocals_init(&pr->locals, &pr->mem, &pr->lay, t);
		pr->flocals = xcalloc(STACK_MAX_DEPTH, sizeof(*pr->flocals));
	}
	*out = pr;
	return PERR_OK;
}

enum perr pyreader_new(struct target *t, const struct reader_opts *opts,
		       struct pyreader **out)
{
	return pyreader_setup(t, opts, NULL, out);
}

enum perr pyreader_new_at(struct target *t, const struct reader_opts *opts, uint64_t runtime,
			  struct pyreader **out)
{
	return pyreader_setup(t, opts, &runtime, out);
}

void pyreader_free(struct pyreader *pr)
{
	if (!pr)
		return;
	cache_clear(pr);
	free(pr->cache);
	for (size_t i = 0; i < TAGSET_CACHE; i++)
		free(pr->tagsets[i].tags);
	free(pr->tagsets);
	free(pr->tagent);
	free(pr->visit);
	for (size_t i = 0; pr->anchors && i < ANCHORS; i++)
		free(pr->anchors[i].below);
	free(pr->anchors);
	free(pr->roots);
	free(pr->snap);
	free(pr->pre);
	free(pr->vbuf);
	free(pr->voff);
	free(pr->cbuf);
	free(pr->nbuf);
	free(pr->viov);
	free(pr->dent);
	free(pr->draw);
	for (size_t i = 0; i < ARRAY_SIZE(pr->merged); i++)
		free(pr->merged[i].tags);
	pythread_release(&pr->names);
	pyasync_free(pr->aio);
	if (pr->flocals)
		pylocals_release(&pr->locals);
	free(pr->flocals);
	rmem_release(&pr->mem);
	taskstat_release(&pr->ts);
	free(pr);
}

const struct reader_stats *pyreader_stats(const struct pyreader *pr)
{
	return &pr->stats;
}

const char *pyreader_describe(const struct pyreader *pr)
{
	return pr->describe;
}

/* --- tags: what the program marks with src/python/pyrospy.py --- */

/* From the tag table as verify() read it; PERR_CORRUPT outside it. */
static enum perr snap_read(struct pyreader *pr, uint64_t addr, void *out, size_t len)
{
	const uint64_t at[2] = { pr->snap_dict, pr->snap_keys };
	const size_t n[2] = { 48, (size_t)pr->snap_keys_len }, off[2] = { 0, 48 };

	for (int i = 0; i < 2; i++)
		if (addr >= at[i] && addr - at[i] <= n[i] && len <= n[i] - (addr - at[i])) {
			memcpy(out, pr->snap + off[i] + (addr - at[i]), len);
			return PERR_OK;
		}
	return PERR_CORRUPT;	/* moved or grown since: not of that moment */
}

/* One entry of a dict: hash (0 when the table keeps none), key, value. */
struct pydent {
	uint64_t hash, key, value;
};

/*
 * The live entries of a dict with a combined table, at most max, into
 * *out (pr's buffer: valid until the next call).  The table is checked the
 * way a resize in the middle of our read would show: sizes in range,
 * entries inside it.
 */
static enum perr dict_read(struct pyreader *pr, uint64_t dict, size_t max,
			   struct pydent **out, size_t *nout)
{
	unsigned char d[64], k[40], *raw;
	uint64_t keys, nent, start, esize, size, used;
	int hashed = 1;
	enum perr err;

	*out = NULL;
	*nout = 0;
	pr->dict_torn = 0;
	if (!dict || (dict & 7))
		return PERR_CORRUPT;
	/* PyDictObject: ma_keys at 32, ma_values at 40 (GIL build) */
	if ((err = rd(pr, dict, d, PYVM_OFF(&pr->lay, 48))))
		return err;
	if ((pr->dict_type && get_u64(d, pr->lay.ob_type) != pr->dict_type) ||
	    get_u64(d, PYVM_OFF(&pr->lay, 40)))
		return PERR_CORRUPT;	/* not a dict, or a split table */
	/*
	 * ma_used, the items it holds: the entries read must be that many.
	 * Read apart, the header and its entries may be of two moments (a
	 * resize between them, the old keys freed and taken by a new dict):
	 * the tag table then lacked a thread that always had its set, and
	 * that sample went untagged (tags/held_python, 3.9: 1 in 3000).
	 */
	used = get_u64(d, PYVM_OFF(&pr->lay, 16));
	keys = get_u64(d, PYVM_OFF(&pr->lay, 32));
	if (!keys || (keys & 7) || (err = rd(pr, keys, k, sizeof(k))))
		return err ? err : PERR_CORRUPT;
	if (pr->lay.minor <= 10) {
		unsigned int w;

		size = get_u64(k, 8);
		nent = get_u64(k, 32);
		if (size < 8 || (size & (size - 1)) || size > (1u << 26))
			return PERR_CORRUPT;
		w = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		start = keys + 40 + size * w;
		esize = 24;
	} else {
		unsigned int log2 = k[8], log2i = k[9], kind = k[10];

		nent = get_u64(k, 24);
		if (log2 < 3 || log2 > 26 || log2i < log2 || log2i > log2 + 3 || kind > 2)
			return PERR_CORRUPT;
		size = 1ull << log2;
		start = keys + 32 + (1ull << log2i);
		hashed = kind == 0;
		esize = hashed ? 24 : 16;
	}
	if (nent > size)
		return PERR_CORRUPT;
	if (nent > max)
		return PERR_TOOBIG;
	if (dict == pr->tag_dict) {
		/*
		 * where to read it with the frames next time, with room for one
		 * more; a table too big for that (the program's sizes: bounded)
		 * is not read with them, and its threads' tags are not known
		 */
		pr->tag_keys = keys;
		pr->tag_keys_len = start + (nent + 1) * esize - keys;
		if (pr->tag_keys_len > TAG_TABLE_MAX)
			pr->tag_keys = pr->tag_keys_len = 0;
	}
	if (!nent) {
		pr->dict_torn = !!used;
		return used ? PERR_CORRUPT : PERR_OK;
	}
	if (nent > pr->dent_cap) {
		pr->dent_cap = (size_t)nent;
		pr->dent = xreallocarray(pr->dent, pr->dent_cap, sizeof(*pr->dent));
		pr->draw = xreallocarray(pr->draw, pr->dent_cap, 24);
	}
	raw = pr->draw;
	if ((err = rd(pr, start, raw, (size_t)(nent * esize))))
		return err;
	*out = pr->dent;
	for (uint64_t i = 0; i < nent; i++) {
		const unsigned char *e = raw + i * esize;
		struct pydent *o = &(*out)[*nout];

		o->hash = hashed ? get_u64(e, 0) : 0;
		o->key = get_u64(e, hashed ? 8 : 0);
		o->value = get_u64(e, hashed ? 16 : 8);
		if (o->key && o->value)	/* deleted: key NULL, or value NULL (<= 3.10) */
			(*nout)++;
	}
	if (*nout != used) {
		*nout = 0;
		pr->dict_torn = 1;
		return PERR_CORRUPT;
	}
	return PERR_OK;
}

/* The value of the str key `name' in dict into *v, 0 if absent. */
static enum perr dict_find(struct pyreader *pr, uint64_t dict, const char *name, uint64_t *v)
{
	struct pydent *e;
	size_t n;
	enum perr err;

	*v = 0;
	if ((err = dict_read(pr, dict, DICT_MAX, &e, &n)))
		return err;
	for (size_t i = 0; i < n && !*v; i++) {
		const char *key;

		if (!read_str(pr, e[i].key, &key) && !strcmp(key, name))
			*v = e[i].value;
	}
	return PERR_OK;
}

/* The value of the str key `name' in dict, 0 if absent or unreadable. */
static uint64_t dict_get(struct pyreader *pr, uint64_t dict, const char *name)
{
	uint64_t v;

	return dict_find(pr, dict, name, &v) ? 0 : v;
}

static void tagsets_clear(struct pyreader *pr)
{
	for (size_t i = 0; i < TAGSET_CACHE; i++)
		free(pr->tagsets[i].tags);
	memset(pr->tagsets, 0, TAGSET_CACHE * sizeof(*pr->tagsets));
	pr->ntagsets = 0;
}

/*
 * The word of pyrospy.py's _pyrospy_epoch, an array('Q') of one item (its
 * buffer never moves: the helper never resizes it), and its value now.
 */
static void epoch_find(struct pyreader *pr, uint64_t arr)
{
	unsigned char hdr[64];
	uint64_t at, e;

	/* arrayobject: ob_size at 16, ob_item at 24 (GIL build) */
	if (!arr || (arr & 7) || rd(pr, arr, hdr, PYVM_OFF(&pr->lay, 32)) ||
	    get_u64(hdr, PYVM_OFF(&pr->lay, 16)) != 1)
		return;
	at = get_u64(hdr, PYVM_OFF(&pr->lay, 24));
	if (!at || (at & 7) || procmem_read(&pr->t->mem, at, &e, sizeof(e)))
		return;
	if (at != pr->tag_epoch_at)
		tagsets_clear(pr);	/* another registry: its addresses mean other sets */
	pr->tag_epoch_at = at;
	pr->tag_epoch = pr->tag_epoch_a = e;
}

/*
 * Find the helper's module in sys.modules, at every sample until it is
 * found: a look costs two words (sys.modules' size and keys, in the
 * sample's windows) while sys.modules is the same, and a sample taken
 * before the helper was found must be one whose threads had no tags.
 * The module is there before its body has run (an import under way):
 * until its table is there too, the samples' tags are not known
 * (pr->tags_importing): the body may finish, and a thread set its tags,
 * before the thread is read.
 */
static void tags_search(struct pyreader *pr, uint64_t interp)
{
	const struct pyvm_layout *L = &pr->lay;
	uint64_t modules, used, keys, mod, md_dict;
	enum perr err;

	if (L->interp.modules == PYVM_NONE)
		return;
	/* PyDictObject: ma_used at 16, ma_keys at 32 (GIL build) */
	if (rd_u64(pr, interp + L->interp.modules, &modules) || !modules ||
	    rd_u64(pr, modules + PYVM_OFF(L, 16), &used) ||
	    rd_u64(pr, modules + PYVM_OFF(L, 32), &keys) ||
	    (keys == pr->tag_seen[0] && used == pr->tag_seen[1] && !pr->tags_importing))
		return;
	/*
	 * sys.modules as seen is remembered only once it was read whole: a
	 * read torn by an import (exec: the program importing at start) was
	 * taken for "no helper", and with sys.modules still from then on,
	 * the table was never looked for again (span/churn_python, 3.15:
	 * every sample of a run without its tags).
	 */
	err = dict_find(pr, modules, "pyrospy", &mod);
	if (err && err != PERR_TOOBIG)
		return;
	pr->tag_seen[0] = keys;
	pr->tag_seen[1] = used;
	pr->tags_importing = 0;
	/* PyModuleObject: md_dict right after the object header */
	if (!mod || rd_u64(pr, mod + PYVM_OFF(L, 16), &md_dict))
		return;
	pr->tag_dict = dict_get(pr, md_dict, "_pyrospy_tags");
	pr->tag_list = dict_get(pr, md_dict, "_pyrospy_sets");
	pr->tag_epoch_at = 0;
	if (pr->tag_dict && !pr->tag_list)
		epoch_find(pr, dict_get(pr, md_dict, "_pyrospy_epoch"));
	pr->tag_fails = 0;
	if (!pr->tag_dict || (!pr->tag_list && !pr->tag_epoch_at)) {
		/* in sys.modules before its body has run: look again next sample */
		pr->tag_dict = pr->tag_list = pr->tag_epoch_at = 0;
		if (pr->tags_importing++ >= TAG_IMPORTING)
			pr->tags_importing = 0;	/* a module of that name, no helper */
	}
}

static struct pytagset *tagset_slot(struct pyreader *pr, uint64_t addr)
{
	size_t i = (size_t)((addr >> 3) * 0x9E3779B97F4A7C15ull >> 40) & (TAGSET_CACHE - 1);

	while (pr->tagsets[i].addr && pr->tagsets[i].addr != addr)
		i = (i + 1) & (TAGSET_CACHE - 1);
	return &pr->tagsets[i];
}

/*
 * A helper that reclaims sets: the str at addr is one the table held in
 * this sample, and stays the same str while _pyrospy_epoch moves by less
 * than the helper's _QUARANTINE; the cache entry is used while it is at
 * most TAG_EPOCH_FRESH reclaims old, and tags_load() checks that this
 * sample's reads took fewer than TAG_EPOCH_FRESH more (else it drops the
 * tags, and the entries read).
 */
static const char *tagset_get_epoch(struct pyreader *pr, struct pytagset *ts, uint64_t addr)
{
	if (ts->addr && pr->tag_epoch_a - ts->e0 <= TAG_EPOCH_FRESH)
		return ts->tags;
	enum perr err;
	int fresh;

	if (!ts->addr && pr->ntagsets >= TAGSET_CACHE / 2)
		return NULL;
	/* read now, not from a window that may be older than the table */
	fresh = pr->mem.fresh;
	pr->mem.fresh = 1;
	err = read_str_into(pr, addr, TAGS_MAX_SET, STR_CUT | STR_LENIENT, pr->tagbuf,
			    sizeof(pr->tagbuf));
	pr->mem.fresh = fresh;
	if (err)
		return NULL;
	if (ts->addr)
		free(ts->tags);
	else
		pr->ntagsets++;
	ts->addr = addr;
	ts->tags = tags_from_app(pr->tagbuf, strlen(pr->tagbuf));
	ts->e0 = pr->tag_epoch_a;
	ts->serial = ++pr->tag_serial;
	return ts->tags;
}

/*
 * After the sets of a sample were read: with a reclaiming helper, were
 * they read within TAG_EPOCH_FRESH reclaims of the sample's start?  The
 * word is read again (not from a window: after everything else).
 */
static int tags_epoch_ok(struct pyreader *pr)
{
	uint64_t e = UINT64_MAX;

	if (!pr->tag_epoch_at)
		return 1;
	if (procmem_read(&pr->t->mem, pr->tag_epoch_at, &e, sizeof(e)) ||
	    e < pr->tag_epoch_a || e - pr->tag_epoch_a > TAG_EPOCH_FRESH) {
		/* what was read this sample may be of a str freed since */
		tagsets_clear(pr);
		/*
		 * The next sample counts from now, and every sample from its
		 * own start on (pyreader_sample()): the program reclaims
		 * faster than we sample, and counting from the last sample's
		 * end would drop every sample's tags from here on.
		 */
		if (e >= pr->tag_epoch_a && e != UINT64_MAX)
			pr->tag_epoch = e;
		pr->tag_epoch_pre = 1;
		return 0;
	}
	pr->tag_epoch = e;
	return 1;
}

/* The registry's items, read at most once a sample (NULL if unreadable). */
struct pylisted {
	int read;
	uint64_t *items, n;
};

/*
 * The tag set of the registry's str at addr.  Only a str the registry
 * holds is read (the registry keeps it alive, so its address means the
 * same for good); the registry is read again at most once a sample.
 */
static const char *tagset_get(struct pyreader *pr, uint64_t addr, struct pylisted *l)
{
	struct pytagset *ts = tagset_slot(pr, addr);
	unsigned char hdr[56];

	if (pr->tag_epoch_at)
		return tagset_get_epoch(pr, ts, addr);
	if (ts->addr)
		return ts->tags;
	if (pr->ntagsets >= TAGSET_CACHE / 2)
		return NULL;
	if (!l->read) {
		l->read = 1;
		/* PyListObject: ob_size at 16, ob_item at 24 (GIL build) */
		if (rd(pr, pr->tag_list, hdr, PYVM_OFF(&pr->lay, 40)) ||
		    (pr->list_type && get_u64(hdr, pr->lay.ob_type) != pr->list_type))
			return NULL;
		l->n = get_u64(hdr, PYVM_OFF(&pr->lay, 16));
		if (l->n > TAGSET_MAX)
			l->n = TAGSET_MAX;
		l->items = xmalloc((size_t)(l->n ? l->n : 1) * 8);
		if (rd(pr, get_u64(hdr, PYVM_OFF(&pr->lay, 24)), l->items, (size_t)l->n * 8))
			l->n = 0;
	}
	for (uint64_t i = 0; i < l->n; i++) {
		if (l->items[i] != addr)
			continue;
		if (read_str_into(pr, addr, TAGS_MAX_SET, STR_CUT | STR_LENIENT, pr->tagbuf,
				  sizeof(pr->tagbuf)))
			return NULL;
		ts->addr = addr;
		ts->tags = tags_from_app(pr->tagbuf, strlen(pr->tagbuf));
		ts->serial = ++pr->tag_serial;
		pr->ntagsets++;
		return ts->tags;
	}
	return NULL;
}

static int tagent_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct pytagent *)a)->ident, y = ((const struct pytagent *)b)->ident;

	return (x > y) - (x < y);
}

/* Read which tag set is in force where, for this sample. */
static void tags_load(struct pyreader *pr, uint64_t interp)
{
	struct pylisted listed = { 0, NULL, 0 };
	struct pydent *e;
	size_t n;
	enum perr err;

	pr->ntagent = 0;
	pr->tag_process = 0;
	pr->tags_torn = 0;
	if (!pr->tag_dict)
		tags_search(pr, interp);
	if (!pr->tag_dict)
		return;
	if (pr->tag_epoch_at && pr->ntagsets >= TAGSET_CACHE / 2 - THREAD_MAX)
		tagsets_clear(pr);	/* addresses come and go: start over */
	/* the table alone, not the sets, as read with the frames */
	pr->snap_only = pr->snap_use;
	pr->mem.only_seq = pr->seq_use;
	err = dict_read(pr, pr->tag_dict, THREAD_MAX, &e, &n);
	pr->snap_only = 0;
	pr->mem.only_seq = 0;
	if (err) {
		/*
		 * Torn (written as we read): this sample goes without tags,
		 * the next reads the table again.  Failing again and again,
		 * it is gone (the module reloaded?): look for it again.
		 */
		pr->stats.tags_dropped++;
		pr->tags_torn = 1;
		/* fewer entries than it holds: changed as read, not gone */
		if (!pr->dict_torn && ++pr->tag_fails >= TAG_FAILS) {
			pr->tag_dict = pr->tag_list = pr->tag_keys = pr->tag_epoch_at = 0;
			pr->tag_seen[0] = pr->tag_seen[1] = 0;
		}
		return;
	}
	pr->tag_fails = 0;
	if (n > pr->tagent_cap) {
		pr->tagent_cap = n;
		pr->tagent = xreallocarray(pr->tagent, n, sizeof(*pr->tagent));
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t set = e[i].value;

		if (!tagset_get(pr, set, &listed)) {
			set = TAGSET_UNREAD;	/* the thread has one: its samples get none */
			pr->stats.tags_dropped++;
		}
		if (!e[i].hash)
			pr->tag_process = set;
		else
			pr->tagent[pr->ntagent++] = (struct pytagent){ e[i].hash, set };
	}
	free(listed.items);
	if ((pr->ntagent || pr->tag_process) && !tags_epoch_ok(pr)) {
		pr->ntagent = 0;
		pr->tag_process = 0;
		pr->stats.tags_dropped++;
		pr->tags_torn = 1;
	}
	if (pr->ntagent > 1)	/* none: tagent may be NULL, which qsort() may not see */
		qsort(pr->tagent, pr->ntagent, sizeof(*pr->tagent), tagent_cmp);
}

/* The set (its str's address) in force on the thread ident, 0 for none. */
static uint64_t tagset_of(struct pyreader *pr, uint64_t ident)
{
	struct pytagent key = { ident, 0 }, *hit = NULL;

	if (pr->ntagent)
		hit = bsearch(&key, pr->tagent, pr->ntagent, sizeof(key), tagent_cmp);
	return hit ? hit->set : 0;
}

/* The tags of the thread whose pthread_t is ident, NULL for none. */
static const char *tags_of(struct pyreader *pr, uint64_t ident)
{
	uint64_t set = tagset_of(pr, ident);
	struct pymerged *m;
	struct pytagset *ta, *tb;
	const char *a, *b;

	if (pr->tags_torn || set == TAGSET_UNREAD || pr->tag_process == TAGSET_UNREAD ||
	    (!pr->tag_dict && pr->tags_importing))
		return tags_unknown;
	if (!set || !pr->tag_process)
		return set ? tagset_slot(pr, set)->tags :
		       pr->tag_process ? tagset_slot(pr, pr->tag_process)->tags : NULL;
	/* both: the thread's win */
	ta = tagset_slot(pr, set);
	tb = tagset_slot(pr, pr->tag_process);
	m = &pr->merged[(ta->serial ^ tb->serial * 3) & (ARRAY_SIZE(pr->merged) - 1)];
	if (m->tags && m->thread == ta->serial && m->process == tb->serial)
		return m->tags;
	a = ta->tags;
	b = tb->tags;
	free(m->tags);
	m->thread = ta->serial;
	m->process = tb->serial;
	m->tags = tags_merge(a, b);
	return m->tags;
}

/*
 * 3.11+: did the table hold the same before and after the thread's frames
 * were read (chunk_load())?  A span begun or ended while the chunk was
 * copied showed a gap's frames with the span's tags (3.13 under
 * tests/stopgo and CI's load, the table read right after the chunk).
 */
static int table_held(struct pyreader *pr)
{
	unsigned char buf[256];
	size_t off = 0;
	int same = 1;

	pr->mem.only_seq = pr->mem.big.seq;
	for (unsigned int i = 0; i < pr->pre_n && same; i++) {
		for (uint64_t o = 0; o < pr->pre_len[i] && same; o += sizeof(buf)) {
			size_t n = pr->pre_len[i] - o < sizeof(buf) ? (size_t)(pr->pre_len[i] - o) :
								       sizeof(buf);

			same = !rd(pr, pr->pre_at[i] + o, buf, n) &&
			       !memcmp(buf, pr->pre + off + o, n);
		}
		off += pr->pre_len[i];
	}
	pr->mem.only_seq = 0;
	return same;
}

/*
 * The thread's tags from the table as read in one read with its frames:
 * 3.11+, with its data stack chunk (chunk_load()), from the windows of
 * that read only (another window may hold the table too, filled later:
 * 3.15 under tests/stopgo showed a unit's frames with the gap's tags),
 * and only when it held the same before the chunk (table_held());
 * <= 3.10, by verify(), when the thread's innermost frame was still the
 * walk's then (the stack shown is the one of that moment, the innermost
 * line too).  Otherwise, unless the table, read now, has neither the
 * thread nor the process (entries only come, never go, while a thread
 * lives), 1 when again is set: the caller reads the thread again, the
 * table with it where it is now (the first sample knew no place for it,
 * or it moved, or it changed during the read: deb-check's one sample in
 * 200 without the app's tags, CI, 3.13); else they are not known
 * (counted).  Read before and after the walk
 * instead, as <= 3.10 did, the table showed the same set both times
 * when a span had begun and ended in between (pyrospy descheduled: CI,
 * 3.9), and the unit's samples got the gap's tags.
 */
static int tags_verified(struct pyreader *pr, uint64_t interp, struct stack *st, int again)
{
	uint64_t dropped = pr->stats.tags_dropped;
	int old = pr->lay.frames == PYVM_FRAMEOBJ;

	if (!pr->tag_dict) {
		st->tags = tags_of(pr, st->thread_id);
		return 0;
	}
	if (old ? pr->snap_ok && pr->top_same : pr->mem.big.len > 0 && pr->pre_n && table_held(pr)) {
		pr->snap_use = old;
		pr->seq_use = old ? 0 : pr->mem.big.seq;
		tags_load(pr, interp);
		pr->snap_use = 0;
		pr->seq_use = 0;
		if (!pr->tags_torn) {
			st->tags = tags_of(pr, st->thread_id);
			return 0;
		}
	}
	/* where the table is now, for the next read */
	pr->mem.fresh = 1;
	tags_load(pr, interp);
	pr->mem.fresh = 0;
	pr->stats.tags_dropped = dropped;
	if (!pr->tags_torn && !tagset_of(pr, st->thread_id) && !pr->tag_process) {
		st->tags = NULL;
		return 0;
	}
	if (again && pr->tag_dict)
		return 1;
	st->tags = tags_unknown;
	pr->stats.tags_dropped++;
	return 0;
}

/* Which tstate holds the GIL (0 if none or unknown). */
static uint64_t gil_holder(struct pyreader *pr, const unsigned char *interp)
{
	const struct pyvm_layout *L = &pr->lay;
	uint64_t gil, holder = 0;
	int32_t locked = 0;

	if (L->runtime.tstate_current != PYVM_NONE) {
		if (rd_u64(pr, pr->runtime + L->runtime.tstate_current, &holder))
			return 0;
		return holder;
	}
	if (L->interp.ceval_gil == PYVM_NONE)
		return 0;
	gil = get_u64(interp, 0);
	if (!gil || rd(pr, gil + L->gil.locked, &locked, sizeof(locked)) ||
	    rd_u64(pr, gil + L->gil.last_holder, &holder))
		return 0;
	return locked ? holder : 0;
}

enum perr pyreader_sample(struct pyreader *pr, reader_cb cb, void *arg)
{
	const struct pyvm_layout *L = &pr->lay;
	static struct stack st;		/* large: keep it off the stack */
	unsigned char ts[4096];
	uint64_t interp, head;
	unsigned int ninterp = 0;
	enum perr err;

	pr->stats.samples++;
	pr->tag_epoch_a = pr->tag_epoch;
	if (pr->tag_epoch_at && pr->tag_epoch_pre) {
		uint64_t e;

		/* before anything of this sample is read: a bound below all of it */
		if (!procmem_read(&pr->t->mem, pr->tag_epoch_at, &e, sizeof(e)) &&
		    e >= pr->tag_epoch)
			pr->tag_epoch_a = pr->tag_epoch = e;
	}
	/* where everything was last time, in one read (rmem.h) */
	rmem_begin(&pr->mem, 1);
	if (pr->flocals)
		pylocals_begin(&pr->locals);
	if (pr->cache_nr >= CODE_CACHE * 3 / 4 || pr->cache_bytes >= CODE_CACHE_BYTES / 4 * 3)
		cache_clear(pr);
	if (L->tstate.size > sizeof(ts))
		return PERR_UNSUPPORTED;
	err = rd_u64(pr, pr->runtime + L->runtime.interpreters_head, &interp);
	if (err)
		return perr_is_fatal(err) ? err : PERR_OK;
	if (!interp)
		return PERR_STARTUP;
	for (; interp && ninterp < INTERP_MAX; ninterp++) {
		unsigned char gilp[8] = { 0 };
		uint64_t next, tstate, holder, gc_at = gc_flag_at(pr, interp), interp_id = 0;
		unsigned int nthreads = 0;
		int32_t collecting = 0;

		if ((err = rd_u64(pr, interp + L->interp.next, &next)) ||
		    (err = rd_u64(pr, interp + L->interp.threads_head, &head)))
			return perr_is_fatal(err) ? err : PERR_OK;
		/*
		 * The main interpreter's id is 0: read only when there are
		 * subinterpreters (3.12+), whose threads' names are their own
		 * and whose stacks say which interpreter they are of.
		 */
		if ((next || ninterp) && L->interp.id != PYVM_NONE &&
		    (err = rd_u64(pr, interp + L->interp.id, &interp_id)))
			return perr_is_fatal(err) ? err : PERR_OK;
		if (L->interp.ceval_gil != PYVM_NONE)
			rd(pr, interp + L->interp.ceval_gil, gilp, sizeof(gilp));
		holder = gil_holder(pr, gilp);
		if (gc_at && rd(pr, gc_at, &collecting, sizeof(collecting)))
			gc_at = 0;
		/* read with each thread's frames (3.11+), or around its walk */
		pr->ntagent = 0;
		pr->tag_process = 0;
		pr->tags_torn = 0;
		if (!pr->tag_dict)
			tags_search(pr, interp);
		if (L->tstate.native_thread_id == PYVM_NONE && pr->pthread_tid_off < 0)
			pthread_discover(pr, head);
		for (tstate = head; tstate && nthreads < THREAD_MAX; nthreads++) {
			uint64_t tnext, task = 0, coro_frame = 0;
			unsigned int nchain = 0;
			pid_t tid;
			int tries, loop = 0;

			if ((err = rd(pr, tstate, ts, L->tstate.size))) {
				if (perr_is_fatal(err))
					return err;
				pr->stats.dropped++;
				break;
			}
			if (get_u64(ts, L->tstate.interp) != interp) {
				pr->stats.dropped++;	/* torn: the list changed under us */
				break;
			}
			tnext = get_u64(ts, L->tstate.next);
			memset(&st, 0, offsetof(struct stack, frame));
			st.pid = pr->t->pid;
			st.thread_id = get_u64(ts, L->tstate.thread_id);
			st.interp = interp_id;
			st.tags = tags_of(pr, st.thread_id);
			if (L->tstate.native_thread_id != PYVM_NONE)
				tid = (pid_t)get_u64(ts, L->tstate.native_thread_id);
			else
				tid = pthread_tid(pr, st.thread_id);
			st.tid = taskstat_host_tid(&pr->ts, tid);
			st.holds_gil = holder ? holder == tstate : -1;
			if (thread_state(pr, head, &st)) {
				tstate = tnext;	/* a thread of the parent: not this process's */
				continue;
			}
			if ((pr->opts.gil_only && st.holds_gil != 1) ||
			    (!pr->opts.idle && st.idle == 1)) {
				tstate = tnext;
				continue;
			}
			if (pr->aio)
				task = pyasync_running(pr->aio, tstate, st.thread_id, 0, &loop,
						       pr->stats.samples);
			if (task && pyasync_chain(pr->aio, task, pr->chain, PYASYNC_DEPTH, &nchain,
						  &coro_frame))
				nchain = 0;
			for (tries = 0; tries < WALK_TRIES; tries++) {
				if (tries) {
					/*
					 * Frames moved under the walk, or its tags
					 * were not of its moment: read again where
					 * it went, at one instant (one scatter
					 * read), the thread state with it.
					 */
					rmem_begin(&pr->mem, 1);
					pr->stats.retries++;
					if (rd(pr, tstate, ts, L->tstate.size) ||
					    get_u64(ts, L->tstate.interp) != interp) {
						/* after a walk read again for its tags
						 * too: not shown, with tags of no moment */
						err = PERR_CORRUPT;
						break;
					}
				}
				err = walk(pr, tstate, ts, &st);
				/* no Python frames: nothing to show, no tags */
				if (perr_is_fatal(err) ||
				    (!err && (!st.depth ||
					      !tags_verified(pr, interp, &st, tries + 1 < WALK_TRIES))))
					break;
			}
			if (err && perr_is_fatal(err))
				return err;
			if (err) {
				pr->stats.dropped++;
			} else if (st.depth) {
				pr->stats.stacks++;
				st.thread_name = pythread_name(&pr->names, interp, interp_id,
							       st.thread_id, st.tid,
							       pr->stats.samples);
				if (pr->flocals)
					locals_fill(pr, &st);
				if ((pr->aio &&
				     task_frames(pr, tstate, task, nchain, coro_frame, loop, &st)) ||
				    gc_leaf(pr, gc_at, collecting, &st)) {
					pr->stats.stacks--;
					pr->stats.dropped++;
				} else {
					cb(arg, &st);
				}
			}
			tstate = tnext;
		}
		interp = next;
	}
	return PERR_OK;
}

struct rmem *pyreader_mem(struct pyreader *pr)
{
	return &pr->mem;
}

pid_t pyreader_thread_tid(struct pyreader *pr, uint64_t ident)
{
	const struct pyvm_layout *L = &pr->lay;
	uint64_t interp, head, tstate, id, native;

	if (!ident || rd_u64(pr, pr->runtime + L->runtime.interpreters_head, &interp) || !interp ||
	    rd_u64(pr, interp + L->interp.threads_head, &head))
		return 0;
	tstate = head;
	for (unsigned int k = 0; tstate && k < THREAD_MAX; k++) {
		if (rd_u64(pr, tstate + L->tstate.thread_id, &id))
			return 0;
		if (id == ident) {
			if (L->tstate.native_thread_id != PYVM_NONE)
				return rd_u64(pr, tstate + L->tstate.native_thread_id, &native) ? 0 :
				       taskstat_host_tid(&pr->ts, (pid_t)native);
			if (pr->pthread_tid_off < 0)
				pthread_discover(pr, head);
			return taskstat_host_tid(&pr->ts, pthread_tid(pr, ident));
		}
		if (rd_u64(pr, tstate + L->tstate.next, &tstate))
			return 0;
	}
	return 0;
}

const struct pyvm_layout *pyreader_layout(const struct pyreader *pr)
{
	return &pr->lay;
}

uint64_t pyreader_runtime(const struct pyreader *pr)
{
	return pr->runtime;
}

/* A dict's live entries, for the asyncio reader (pyasync_host). */
static enum perr host_dict(void *ctx, uint64_t dict, size_t max, uint64_t *key, uint64_t *value,
			   size_t *n)
{
	struct pyreader *pr = ctx;
	struct pydent *e;
	size_t got;
	enum perr err = dict_read(pr, dict, max, &e, &got);

	*n = 0;
	if (err)
		return err;
	for (size_t i = 0; i < got; i++) {
		key[i] = e[i].key;
		value[i] = e[i].value;
	}
	*n = got;
	return PERR_OK;
}

void pyreader_async_host(struct pyreader *pr, struct pyasync_host *h)
{
	h->mem = &pr->mem;
	h->lay = &pr->lay;
	h->runtime = pr->runtime;
	h->ctx = pr;
	h->dict = host_dict;
}

enum perr pyreader_code(struct pyreader *pr, uint64_t code, int64_t lasti, uint64_t instr,
			const char **name, const char **file, int *line)
{
	struct pycode *c;

	if (pr->cache_nr >= CODE_CACHE * 3 / 4 || pr->cache_bytes >= CODE_CACHE_BYTES / 4 * 3)
		cache_clear(pr);
	c = code_get(pr, code);
	if (!c)
		return PERR_CORRUPT;
	*name = c->name;
	*file = c->file;
	*line = code_line(pr, c, lasti, instr);
	return PERR_OK;
}
