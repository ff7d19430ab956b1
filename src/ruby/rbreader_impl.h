/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_RBREADER_IMPL_H
#define PYROSPY_RBREADER_IMPL_H

/*
 * The CRuby reader's own state and what its files (rbreader.c, rbobj.c,
 * rbiseq.c, rbtags.c, rbwalk.c) share; nothing else includes it.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "proc/pthtid.h"
#include "ruby/rblocals.h"
#include "ruby/rbreader.h"
#include "proc/rmem.h"
#include "ruby/rubyvm.h"
#include "proc/target.h"
#include "stack/tags.h"
#include "proc/taskstat.h"
#include "util/utf8.h"
#include "util/xalloc.h"
/*
 * Reading CRuby stacks from outside.
 *
 * Threads come from the main ractor's thread list (3.0+) or the VM's
 * living_threads (2.7).  For each thread: its execution context, whose
 * control frames sit at the top of its VM stack, innermost first, and are
 * copied in one read; the environment words each frame points at (ep[0]
 * the frame's magic, ep[-1] the previous environment, ep[-2] its method
 * entry) are read from the used part of the VM stack in a second one.
 *
 * An iseq (Ruby code) frame's name, path and line table are read once and
 * cached by address, and so are method entries (for "Class#method" names)
 * and class paths.  Since GC may free or move any of them, every cache
 * entry a rbr_walk used is checked again, all in one scatter read, before the
 * stack is handed on; a rbr_walk that used a stale entry is done again.
 *
 * Lines come from the program counter through Ruby's own succinct index
 * table, as Ruby's backtraces do, not from the method's last line.
 */

#define STR_MAX		4096u		/* bytes of a name or path */
#define THREAD_MAX	4096
#define FRAMES_MAX	(1u << 16)	/* control frames read at once */
#define ENV_SPAN_MAX	(1u << 21)	/* bytes of VM stack read at once */
#define ISEQ_CACHE	4096		/* entries, powers of two */
#define ME_CACHE	2048
#define OBJ_CACHE	4096
#define ID_CACHE	2048
#define SYMBOLS_RETRY	100		/* samples to the first look again for the symbol table */
#define SYMBOLS_EAGER	100		/* samples at the start that each look for it */
#define VALIDATE_MAX	256
#define WALK_TRIES	8		/* reads of a torn stack before it is dropped */
#define LIST_TRIES	4		/* walks of a thread list changed under us */
#define GUESS_SLOTS	256
#define RACTOR_MAX	1024		/* ractors sampled */
#define KEPT_MAX	8192		/* threads whose stacks are kept (a power of two) */
#define KEPT_FRAMES_MAX	(1u << 18)	/* frames kept in all, 6 MiB */
#define PREFETCH_MIN	8		/* threads met, for their structs to be prefetched */

/* Frame magic in ep[0] (stable from 2.4 to 4.0). */
#define FRAME_MAGIC_MASK	0x7fff0001u
#define FRAME_MAGIC_CFUNC	0x55550001u
#define FRAME_FLAG_CFRAME	0x0080u
#define FRAME_MAGIC_METHOD	0x11110001u
#define FRAME_MAGIC_BLOCK	0x22220001u
#define FRAME_FLAG_FINISH	0x0020u

/* RBasic flags: the type in the low 5 bits. */
#define T_MASK		0x1f
#define T_CLASS		0x02
#define T_MODULE	0x03
#define T_STRING	0x05
#define T_ARRAY		0x07
#define T_IMEMO		0x1a
#define T_ICLASS	0x1c
#define IMEMO_TYPE(f)	((unsigned int)((f) >> 12) & 0x0f)
#define IMEMO_ISEQ	7

/* rb_iseq_constant_body.type (the same from 2.3 to 4.0) */
#define ISEQ_TYPE_RESCUE	4
#define ISEQ_TYPE_ENSURE	5
#define ISEQ_TYPE_EVAL		6

struct rbiseq {
	uint64_t addr;			/* 0: empty */
	uint64_t body;
	char *label;			/* "block in foo" */
	char *base_label;		/* "foo" */
	char *path;
	int first_lineno;
	uint32_t type;			/* ISEQ_TYPE_* */
	uint64_t parent;		/* parent_iseq, 0 if unknown */
	uint64_t encoded;		/* iseq_encoded */
	uint32_t size;			/* in VALUEs */
	uint64_t print[4];		/* what its body was: see iseq_print() */
	/* its call data: plain calls in [cd, cd_kw), 2.7's kwarg calls to cd_end */
	uint64_t cd, cd_kw, cd_end;
	uint32_t locals;		/* local_table_size */
	uint64_t local_table;		/* their names, 0 if unknown */
	/* caller pcs checked (see sent_here()), and what was found */
	uint64_t sent_pc[4];
	unsigned char sent_ok[4];
	unsigned int sent_n, sent_next;
	uint32_t ninfo;
	int *lines;			/* line of each insns_info entry */
	unsigned char *succ;		/* succinct index table */
	size_t succ_len;
	/* names built for this iseq, one per method entry it ran under */
	struct rbname {
		uint64_t me, serial;	/* the method entry, and its definition */
		char *name;
	} *names;
	size_t nnames;
};

struct rbme {
	uint64_t addr;			/* 0: empty */
	uint64_t def, owner, called_id;
	uint64_t serial;		/* its def's method_serial: one definition */
	int cfunc;
	char *prefix;			/* "Shop#" / "Shop." / "" */
	char *name;			/* cfunc: "Integer#times" */
};

/* What a method-entry-or-cref word points at. */
struct rbobj {
	uint64_t addr;
	uint64_t flags;
	uint64_t inner;			/* svar: its cref_or_me */
};

struct rbid {
	uint64_t id;
	char *name;
};

struct rbclass {
	uint64_t addr;
	char *path;			/* NULL: anonymous */
	/* CLASSPATH_SHAPE: what a hit checks is still there */
	uint32_t shape_id;		/* the class's shape when path was read */
	uint32_t index;			/* "__classpath__"'s ivar index in it */
	uint64_t value;			/* the path String, 0 if none */
};

/* Ivars of a class looked through on its shape's way to the root (3.2). */
#define SHAPE_DEPTH_MAX	256

struct check {
	uint64_t addr;
	uint64_t want[4];		/* expected (see rbr_validate()) */
	uint64_t serial;		/* a method entry's def's method_serial, read again */
	uint64_t got[5];		/* words 0..4 of the object */
	unsigned char body[512];	/* an iseq's body, read again */
	int kind;			/* 0 iseq, 1 method entry */
	void *entry;
};

/* Where a local storage table keeps its entries, as last seen. */
struct rbstore {
	uint64_t tbl;			/* the table; 0: nothing cached */
	uint64_t at, n;			/* its entries and how many to read */
};

#define STORE_HDR 56			/* bytes of a table header, at most */
#define TAG_VARS 4			/* fiber-local variables pyrospy.rb sets */
#define STORAGE_MAX	1024		/* fiber-local variables we look through */

struct rbreader {
	struct target *t;
	struct reader_opts opts;
	const struct rubyvm_layout *L;	/* &lay */
	struct rubyvm_layout lay;
	struct rmem mem;
	struct taskstat ts;
	struct reader_stats stats;
	uint64_t vm;
	uint64_t ractor;		/* the main ractor (3.0+), for good */
	uint64_t objspace;		/* rb_objspace_t *, 0 if unknown */
	uint64_t symbols;		/* &ruby_global_symbols, 0 if not found */
	uint64_t symbols_next;		/* while not found: the sample that looks again */
	uint64_t symbols_gap;		/* and the samples to the look after (doubling) */
	uint64_t zjit_entry;		/* &rb_zjit_entry (4.0+: set while ZJIT is on), or 0 */
	uint64_t last_id;
	int64_t pthread_tid_off;	/* <= 3.0: kernel tid inside struct pthread */
	pid_t sole_tid;			/* until it is found: the one thread's, */
	uint64_t sole_pthread;		/* whose struct pthread is here */
	struct rbiseq *iseqs;
	size_t niseqs;
	struct rbme *mes;
	size_t nmes;
	struct rbobj *objs;
	struct rbid *ids;
	struct rbclass *classes;
	size_t nclasses;
	struct check checks[VALIDATE_MAX];
	size_t nchecks;
	unsigned char *cfps;
	size_t cfps_cap;
	struct ecguess *guess;
	/* tags: see taglibs/ruby/pyrospy.rb */
	uint64_t ec_storage;		/* local_storage of the EC last loaded */
	struct rbstore main_store;	/* the main thread's table */
	uint64_t main_val[TAG_VARS];	/* its values this sample */
	unsigned char main_hdr[STORE_HDR];	/* read with the thread list */
	int main_read;			/* main_hdr and store_buf hold main's table */
	unsigned char *store_buf;	/* STORAGE_MAX entries */
	struct rbstore *ec_store;	/* the table cache of the EC last loaded */
	uint64_t ec_val[TAG_VARS];	/* its values, read with its frames... */
	int ec_val_ok;			/* ...when this is set */
	int ec_val_torn;		/* they changed while the frames were read */
	unsigned char ec_hdr[STORE_HDR], ec_hdr0[STORE_HDR];
	unsigned char *ec_ent, *ec_ent0;	/* STORAGE_MAX entries, after and before */
	/*
	 * The main thread's table (the process-wide set) read with another
	 * thread's frames the same way: its values in pm_val when pm_ok, or
	 * pm_torn when they changed meanwhile (rbr_frames_guessed())
	 */
	unsigned char pm_hdr[STORE_HDR], pm_hdr0[STORE_HDR];
	unsigned char *pm_ent, *pm_ent0;
	uint64_t pm_val[TAG_VARS];
	int pm_ok, pm_torn;
	uint64_t tag_key[TAG_VARS];	/* keys of the four variables, 0: not seen */
	uint64_t tag_sets;		/* the registry Array, 0: not found */
	uint64_t tag_gens;		/* its ids Array; 0: ids mean the same for good */
	uint64_t tag_next;		/* sample count of the next look for it */
	char **tagsets;			/* id (rbr_slot with gens) -> clean tag set */
	int64_t *tagids;		/* with gens: the id each rbr_slot's set was read for */
	size_t ntagsets;
	int64_t tag_process;		/* this sample's process-wide set, -1: none */
	struct rbmerged {
		int64_t thread, process;
		char *tags;
	} merged[64];
	char describe[200];
	char strbuf[STR_MAX + 1];
	char namebuf[3 * STR_MAX];
	char thread_name[256];
	/* dump --locals: each shown frame's environment and iseq, and its locals */
	struct rblocals locals;
	uint64_t *fep;
	struct rbiseq **fq;
	const char **flocals;
	/* the ractor whose threads are sampled, if not the main one (3.0+) */
	uint32_t ractor_id;
	char **rtags;			/* this sample's tag sets with ractor=N */
	size_t nrtags, rtags_cap;
	/* the threads of the ractor sampled that wait for its GVL (THREAD_MAX) */
	uint64_t *waiters;
	size_t nwaiters;
	int waiters_ok;			/* 0: not known */
	/* stacks of threads that had not run since, reused (sample_threads()) */
	struct rbkept *kept;		/* kept_cap slots, open addressing on th */
	size_t nkept, kept_cap;
	size_t kept_frames;		/* frames held by all of them */
	uint64_t kept_gen;		/* bumped when a cached name is freed */
	uint64_t kept_met;		/* threads met this sample */
	int kept_off;			/* the kernel keeps no run counts */
	struct rbthread *defer;		/* THREAD_MAX: threads of one ractor read last */
	size_t ndefer;
	unsigned char *pre;		/* the threads met last sample, read at once */
	struct procmem_iov *pre_iov;	/* 3 * pre_cap as made, then as read */
	struct rbpre {
		uint64_t addr;
		size_t i;		/* its iov as made */
	} *pre_ord;			/* the iovs by address */
	uint32_t *pre_rank;		/* where the iov made i-th is read */
	size_t pre_cap;			/* threads pre and pre_iov have room for */
};

/*
 * The iseq and method entry caches use open addressing on the address,
 * which is each entry's first member.  Nothing is evicted during a sample
 * (the stacks walked so far point at cached names): entries that turn out
 * stale become tombstones, and a cache three quarters full is emptied
 * between samples.
 */
#define TOMBSTONE 1

#define TAG_THREAD	0		/* Thread.current[:__pyrospy_tags__] */
#define TAG_PROCESS	1		/* Thread.main[:__pyrospy_process__] */
#define TAG_SETS	2		/* Thread.main[:__pyrospy_sets__] */
#define TAG_GENS	3		/* Thread.main[:__pyrospy_gens__] */
#define TAG_EAGER	100		/* samples at the start that all look */
#define TAG_SEARCH	25		/* samples between looks for the registry */
#define TAGSET_MAX	8192		/* slots of the registry */
#define TAG_ID_MAX	(1ll << 52)	/* ids (gen * TAGSET_MAX + rbr_slot) beyond: garbage */
static const char *const tag_names[TAG_VARS] = {
	"__pyrospy_tags__", "__pyrospy_process__", "__pyrospy_sets__", "__pyrospy_gens__",
};

/*
 * A thread's last read, kept to reuse its stack while it does not run
 * (see sample_threads()); one slot of rbreader.kept by rb_thread_t.
 */
struct rbkept {
	uint64_t th;			/* the rb_thread_t; 0: empty */
	uint64_t ec;			/* identity: its EC and host tid then */
	pid_t tid;
	uint64_t seen;			/* the sample that last met it */
	char state;			/* its state letter then; 0: not read */
	int have_was;			/* was: its run counts, read before the state */
	struct taskstat_run was;
	uint64_t gen;			/* rr->kept_gen when frame was read */
	struct stack_frame *frame;	/* its frames then, if state was not 'R' */
	unsigned int depth;		/* 0: none kept */
	int truncated;
	uint64_t serial;		/* stack.kept of frame[] */
	/* where the next sample prefetches it (kept_prefetch()) */
	uint64_t tid_src;		/* its native thread (3.3+) or pthread (<= 3.0) */
	int32_t src_tid;		/* then, and the tid read from it */
	uint64_t pre;			/* the sample that prefetched it, */
	uint32_t pre_i;			/* into rr->pre + pre_i * thread.size */
	uint32_t pre_iv;		/* its first iov and how many */
	uint32_t pre_niv;
	int pre_tid;			/* the second is its tid's */
	int pre_tags;			/* the last, its EC's local_storage, into: */
	uint64_t pre_tbl;
};

/* A thread the list names, before anything more is read of it. */
struct rbthread {
	uint64_t th, ec, name;
	pid_t tid;			/* host tid, 0 if unknown */
	int holds_gil, gvl_wait;
	struct rbkept *k;		/* its kept read, NULL if none */
};

struct ecguess {
	uint64_t ec;
	struct rbstore store;		/* its fiber-local variables' table */
	uint64_t vm_stack, end;		/* the VM stack */
	uint64_t cfp;			/* first control frame read */
	uint64_t env_lo, env_hi;	/* environments read */
};

#define GUESS_FRAMES	16		/* deeper than last time, still a hit */
#define GUESS_ENV	2048		/* bytes of slack around the environments */

struct frames {
	uint64_t vm_stack, cfp;
	uint64_t n;			/* control frames, innermost first */
	const unsigned char *buf;	/* their bytes */
	int truncated;			/* the outermost ones were left out */
};

size_t rbr_slot(uint64_t addr, size_t cap);
void *rbr_table_slot(void *base, size_t esize, size_t cap, uint64_t addr, int *found);
int rbr_is_obj(uint64_t v);
enum perr rbr_obj_flags(struct rbreader *rr, uint64_t v, uint64_t *flags);
enum perr rbr_read_string_raw(struct rbreader *rr, uint64_t v, char *out, size_t cap,
				 size_t *outlen);
enum perr rbr_read_string(struct rbreader *rr, uint64_t v, const char **out);
enum perr rbr_dup_string(struct rbreader *rr, uint64_t v, char **out);
enum perr rbr_array_at(struct rbreader *rr, uint64_t v, uint64_t i, uint64_t *out);
const char *rbr_id_name(struct rbreader *rr, uint64_t id);
const char *rbr_class_path(struct rbreader *rr, uint64_t klass);
void rbr_me_release(struct rbme *m);
struct rbme *rbr_me_get(struct rbreader *rr, uint64_t addr, int *fresh);
uint64_t rbr_frame_method_entry(struct rbreader *rr, uint64_t ep);
void rbr_iseq_release(struct rbiseq *q);
int rbr_iseq_line(const struct rbiseq *q, uint64_t pos);
struct rbiseq *rbr_iseq_get(struct rbreader *rr, uint64_t addr, int *fresh);
const char *rbr_iseq_name(struct rbiseq *q, const struct rbme *me);
int rbr_iseq_is_clause(const struct rbiseq *q);
struct rbiseq *rbr_iseq_named_by(struct rbreader *rr, struct rbiseq *q);
void rbr_check_add(struct rbreader *rr, int kind, void *entry);
int rbr_validate(struct rbreader *rr);
size_t rbr_storage_hdr_len(const struct rbreader *rr);
uint64_t rbr_storage_esize(const struct rbreader *rr);
int rbr_storage_check(struct rbreader *rr, const struct rbstore *c, const unsigned char *hdr,
			 const unsigned char *ent, uint64_t val[TAG_VARS]);
void rbr_storage_get(struct rbreader *rr, uint64_t tbl, struct rbstore *c,
			uint64_t val[TAG_VARS]);
void rbr_tagsets_clear(struct rbreader *rr);
void rbr_tags_begin(struct rbreader *rr, uint64_t main_thread);
const char *rbr_tags_of(struct rbreader *rr);
int rbr_frames_guessed(struct rbreader *rr, struct ecguess *g, unsigned char *hdr,
			  struct frames *fr);
enum perr rbr_walk(struct rbreader *rr, uint64_t ec, struct stack *st, int strict);

static inline enum perr rd(struct rbreader *rr, uint64_t addr, void *out, size_t len)
{
	return rmem_read(&rr->mem, addr, out, len);
}

static inline enum perr rd_u64(struct rbreader *rr, uint64_t addr, uint64_t *v)
{
	return rmem_u64(&rr->mem, addr, v);
}

#endif
