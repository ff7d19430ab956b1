/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pthtid.h"
#include "rblocals.h"
#include "rbreader.h"
#include "rmem.h"
#include "rubyvm.h"
#include "target.h"
#include "tags.h"
#include "taskstat.h"
#include "utf8.h"
#include "xalloc.h"

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
 * entry a walk used is checked again, all in one scatter read, before the
 * stack is handed on; a walk that used a stale entry is done again.
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
#define VALIDATE_MAX	256
#define WALK_TRIES	8		/* reads of a torn stack before it is dropped */
#define LIST_TRIES	4		/* walks of a thread list changed under us */
#define GUESS_SLOTS	256
#define RACTOR_MAX	1024		/* ractors sampled */

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
	uint64_t want[4];		/* expected (see validate()) */
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
	/* tags: see src/ruby/pyrospy.rb */
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
	uint64_t tag_key[TAG_VARS];	/* keys of the four variables, 0: not seen */
	uint64_t tag_sets;		/* the registry Array, 0: not found */
	uint64_t tag_gens;		/* its ids Array; 0: ids mean the same for good */
	uint64_t tag_next;		/* sample count of the next look for it */
	char **tagsets;			/* id (slot with gens) -> clean tag set */
	int64_t *tagids;		/* with gens: the id each slot's set was read for */
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
};

static size_t slot(uint64_t addr, size_t cap)
{
	return (size_t)((addr >> 3) * 0x9E3779B97F4A7C15ull >> 40) & (cap - 1);
}

/*
 * The iseq and method entry caches use open addressing on the address,
 * which is each entry's first member.  Nothing is evicted during a sample
 * (the stacks walked so far point at cached names): entries that turn out
 * stale become tombstones, and a cache three quarters full is emptied
 * between samples.
 */
#define TOMBSTONE 1

static void *table_slot(void *base, size_t esize, size_t cap, uint64_t addr, int *found)
{
	size_t i = slot(addr, cap);

	for (size_t n = 0; n < cap; n++, i = (i + 1) & (cap - 1)) {
		uint64_t *key = (uint64_t *)((char *)base + i * esize);

		if (*key == addr || !*key) {
			*found = *key == addr;
			return key;
		}
	}
	return NULL;
}

static enum perr rd(struct rbreader *rr, uint64_t addr, void *out, size_t len)
{
	return rmem_read(&rr->mem, addr, out, len);
}

static enum perr rd_u64(struct rbreader *rr, uint64_t addr, uint64_t *v)
{
	return rmem_u64(&rr->mem, addr, v);
}

/* A heap object's address: aligned, not an immediate, not NULL. */
static int is_obj(uint64_t v)
{
	return v && !(v & 7);
}

static enum perr obj_flags(struct rbreader *rr, uint64_t v, uint64_t *flags)
{
	if (!is_obj(v))
		return PERR_CORRUPT;
	return rd_u64(rr, v, flags);
}

/* A String's bytes as they are (at most cap - 1), NUL-terminated. */
static enum perr read_string_raw(struct rbreader *rr, uint64_t v, char *out, size_t cap,
				 size_t *outlen)
{
	const struct rubyvm_layout *L = rr->L;
	unsigned char hdr[40];
	uint64_t flags, len, ptr;
	enum perr err;

	if (!is_obj(v) || (err = rd(rr, v, hdr, sizeof(hdr))))
		return is_obj(v) ? err : PERR_CORRUPT;
	flags = get_u64(hdr, 0);
	if ((flags & T_MASK) != T_STRING)
		return PERR_CORRUPT;
	if (!(flags & L->string.noembed)) {
		if (L->string.embed_len == RUBYVM_NONE)
			len = flags >> L->string.embed_len_shift & L->string.embed_len_mask;
		else
			len = get_u64(hdr, L->string.embed_len);
		ptr = v + L->string.embed_ptr;
	} else {
		len = get_u64(hdr, L->string.heap_len);
		ptr = get_u64(hdr, L->string.heap_ptr);
	}
	if (len >= cap)
		len = cap - 1;	/* too long: keep the start */
	if ((err = rd(rr, ptr, out, (size_t)len)))
		return err;
	out[len] = '\0';
	*outlen = (size_t)len;
	return PERR_OK;
}

/*
 * A String's bytes, sanitized to UTF-8, in rr->strbuf; one longer than
 * STR_MAX bytes is cut there and marked.
 */
static enum perr read_string(struct rbreader *rr, uint64_t v, const char **out)
{
	char raw[STR_MAX + 2];
	size_t len;
	enum perr err = read_string_raw(rr, v, raw, sizeof(raw), &len);

	if (err)
		return err;
	if (len > STR_MAX) {
		/* cut where a UTF-8 character starts, then mark it */
		len = STR_MAX;
		while (len > 0 && ((unsigned char)raw[len] & 0xc0) == 0x80)
			len--;
		utf8_sanitize(rr->strbuf, sizeof(rr->strbuf) - sizeof(STACK_CUT_MARK), raw, len);
		strcat(rr->strbuf, STACK_CUT_MARK);
	} else {
		utf8_sanitize(rr->strbuf, sizeof(rr->strbuf), raw, len);
	}
	*out = rr->strbuf;
	return PERR_OK;
}

static enum perr dup_string(struct rbreader *rr, uint64_t v, char **out)
{
	const char *s;
	enum perr err = read_string(rr, v, &s);

	if (!err)
		*out = xstrdup(s);
	return err;
}

/* Element i of an Array. */
static enum perr array_at(struct rbreader *rr, uint64_t v, uint64_t i, uint64_t *out)
{
	const struct rubyvm_layout *L = rr->L;
	unsigned char hdr[40];
	uint64_t flags, len, ptr;
	enum perr err;

	if (!is_obj(v))
		return PERR_CORRUPT;
	if ((err = rd(rr, v, hdr, sizeof(hdr))))
		return err;
	flags = get_u64(hdr, 0);
	if ((flags & T_MASK) != T_ARRAY)
		return PERR_CORRUPT;
	if (flags & L->array.embed) {
		len = flags >> L->array.embed_len_shift & L->array.embed_len_mask;
		ptr = v + L->array.embed_ptr;
	} else {
		len = get_u64(hdr, L->array.heap_len);
		ptr = get_u64(hdr, L->array.heap_ptr);
	}
	if (i >= len)
		return PERR_CORRUPT;
	return rd_u64(rr, ptr + 8 * i, out);
}

/* The name of a Symbol ID, through the global symbol table; NULL if unknown. */
static const char *id_name(struct rbreader *rr, uint64_t id)
{
	const struct rubyvm_layout *L = rr->L;
	struct rbid *e;
	uint64_t serial, chunk, str;
	const char *s;

	if (!rr->symbols || !id)
		return NULL;
	e = &rr->ids[slot(id, ID_CACHE)];
	if (e->id == id)
		return e->name;
	serial = id > L->last_op_id ? id >> L->id_scope_shift : id;
	if (serial > rr->last_id) {
		uint32_t last;

		/* new symbols since we looked */
		if (rd(rr, rr->symbols + L->symbols.last_id, &last, sizeof(last)) || serial > last)
			return NULL;
		rr->last_id = last;
	}
	if (rd_u64(rr, rr->symbols + L->symbols.ids, &chunk) ||
	    array_at(rr, chunk, serial / L->symbols.unit, &chunk) ||
	    array_at(rr, chunk, serial % L->symbols.unit * L->symbols.entry_size, &str) ||
	    read_string(rr, str, &s))
		return NULL;
	free(e->name);
	e->id = id;
	e->name = xstrdup(s);
	return e->name;
}

/*
 * Find the value of the ivar called `name' in an st_table keyed by ID
 * (the iv_tbl of a class before 3.2).  0 if absent.
 */
static uint64_t st_ivar(struct rbreader *rr, uint64_t tbl, const char *name)
{
	unsigned char hdr[56], ent[24 * 16];
	uint64_t start, bound, entries;

	if (!is_obj(tbl) || rd(rr, tbl, hdr, sizeof(hdr)))
		return 0;
	start = get_u64(hdr, 32);
	bound = get_u64(hdr, 40);
	entries = get_u64(hdr, 48);
	if (bound < start || bound - start > 64 || !is_obj(entries))
		return 0;
	for (uint64_t i = start; i < bound; i += 16) {
		uint64_t n = bound - i < 16 ? bound - i : 16;

		if (rd(rr, entries + 24 * i, ent, (size_t)(24 * n)))
			return 0;
		for (uint64_t j = 0; j < n; j++) {
			const char *key;

			if (get_u64(ent, (uint32_t)(24 * j)) == UINT64_MAX)
				continue;	/* deleted */
			key = id_name(rr, get_u64(ent, (uint32_t)(24 * j + 8)));
			if (key && !strcmp(key, name))
				return get_u64(ent, (uint32_t)(24 * j + 16));
		}
	}
	return 0;
}

/*
 * Ruby 3.2: where the ivar called `name' is in the ivar array of a class
 * or module whose flags are `flags': its shape (the flags' top bits) and
 * the shapes up to the root each name the ivar they added.  1 if found
 * (*index set), 0 if the class has no such ivar, -1 if the shapes could
 * not be read or do not hold together.
 */
static int shape_ivar_index(struct rbreader *rr, uint64_t flags, const char *name,
			    uint32_t *index)
{
	const struct rubyvm_layout *L = rr->L;
	unsigned char sh[64];
	uint64_t list;
	uint32_t id = (uint32_t)(flags >> L->shape.id_shift), next, iv_count = 0;

	if (L->shape.size > sizeof(sh) || !rr->vm || rd_u64(rr, rr->vm + L->shape.list, &list) ||
	    !is_obj(list) || rd(rr, rr->vm + L->shape.next_id, &next, sizeof(next)))
		return -1;
	for (int depth = 0; depth < SHAPE_DEPTH_MAX; depth++) {
		uint32_t parent, niv;
		const char *edge;

		if (id >= next || rd(rr, list + (uint64_t)id * L->shape.size, sh, L->shape.size))
			return -1;
		parent = get_u32(sh, L->shape.parent_id);
		niv = get_u32(sh, L->shape.next_iv_index);
		if (depth == 0)
			iv_count = niv;	/* ivars the class has */
		if (parent == UINT32_MAX)
			return 0;	/* the root: no such ivar */
		if (sh[L->shape.type] == L->shape.type_ivar) {
			if (!niv || niv > iv_count)
				return -1;
			edge = id_name(rr, get_u64(sh, L->shape.edge_name));
			if (!edge)
				return -1;
			if (!strcmp(edge, name)) {
				*index = niv - 1;
				return 1;
			}
		}
		id = parent;
	}
	return -1;	/* deeper than any class we expect: not followed */
}

/*
 * The ivar `name' of a class or module (3.2), found through its shape:
 * 1 with *value (and its shape and index), 0 if it has none, -1 if it could
 * not be read.  The shape and the ivar array are read again after the
 * value: a class that gained an ivar meanwhile (a new shape, perhaps a
 * new array) is not trusted.
 */
static int shape_ivar(struct rbreader *rr, uint64_t klass, uint64_t ext, const char *name,
		      uint64_t *value, uint32_t *shape_id, uint32_t *index)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t flags, again, ivs, ivs_again;
	int found;

	if (obj_flags(rr, klass, &flags))
		return -1;
	found = shape_ivar_index(rr, flags, name, index);
	if (found <= 0)
		return found;
	if (rd_u64(rr, ext + L->klass.iv_ptr, &ivs) || !is_obj(ivs) ||
	    rd_u64(rr, ivs + 8 * (uint64_t)*index, value) ||
	    obj_flags(rr, klass, &again) || again != flags ||
	    rd_u64(rr, ext + L->klass.iv_ptr, &ivs_again) || ivs_again != ivs)
		return -1;
	*shape_id = (uint32_t)(flags >> L->shape.id_shift);
	return 1;
}

/*
 * A cached 3.2 class path is still the class's: same shape, same String
 * at the same index, with the same bytes (a class freed and another made
 * at its address would differ in one of them).
 */
static int shape_path_holds(struct rbreader *rr, const struct rbclass *e, uint64_t ext)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t flags, ivs, v;
	const char *s;

	if (obj_flags(rr, e->addr, &flags) || (uint32_t)(flags >> L->shape.id_shift) != e->shape_id)
		return 0;
	if (!e->value)
		return 1;	/* same shape, which has no path: still anonymous */
	if (rd_u64(rr, ext + L->klass.iv_ptr, &ivs) || !is_obj(ivs) ||
	    rd_u64(rr, ivs + 8 * (uint64_t)e->index, &v) || v != e->value)
		return 0;
	if (read_string(rr, v, &s))
		return 0;
	return e->path ? !strcmp(s, e->path) : s[0] == '#';
}

/* The classext of a class, 0 if unreadable. */
static uint64_t class_ext(struct rbreader *rr, uint64_t klass)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t ext;

	if (L->klass.ext_embedded != RUBYVM_NONE)
		return klass + L->klass.ext_embedded;
	if (rd_u64(rr, klass + L->klass.ext_ptr, &ext) || !is_obj(ext))
		return 0;
	return ext;
}

/* A class's permanent path ("Shop", "A::B"); NULL if anonymous or unknown. */
static const char *class_path(struct rbreader *rr, uint64_t klass)
{
	const struct rubyvm_layout *L = rr->L;
	struct rbclass *e = &rr->classes[slot(klass, OBJ_CACHE)];
	uint64_t ext, path = 0;
	uint32_t shape_id = 0, index = 0;
	int found;
	char *s = NULL;

	/*
	 * Read again every time but on 3.2, where a hit is checked (a class
	 * is freed and another made at its address: the cache alone would
	 * give the new class the old one's name).  Only a method entry read
	 * for the first time asks.
	 */
	ext = class_ext(rr, klass);
	if (e->addr == klass) {
		if (L->klass.classpath_kind == RUBYVM_CLASSPATH_SHAPE && ext &&
		    shape_path_holds(rr, e, ext))
			return e->path;
		e->addr = 0;	/* another class now, or it changed: read it again */
	}
	if (!ext) {
		rr->stats.unqualified++;
		return NULL;
	}
	switch (L->klass.classpath_kind) {
	case RUBYVM_CLASSPATH_FIELD:
		if (rd_u64(rr, ext + L->klass.classpath, &path))
			return NULL;
		break;
	case RUBYVM_CLASSPATH_IVAR:
		if (!rd_u64(rr, ext + L->klass.iv_tbl, &path))
			path = st_ivar(rr, path, "__classpath__");
		break;
	case RUBYVM_CLASSPATH_SHAPE:
		found = shape_ivar(rr, klass, ext, "__classpath__", &path, &shape_id, &index);
		if (found < 0) {
			rr->stats.unqualified++;	/* not cached: read again next time */
			return NULL;
		}
		if (!found) {
			uint64_t flags;

			if (obj_flags(rr, klass, &flags)) {
				rr->stats.unqualified++;
				return NULL;
			}
			shape_id = (uint32_t)(flags >> L->shape.id_shift);
			path = 0;
		}
		break;
	}
	if (path && dup_string(rr, path, &s)) {
		s = NULL;
		if (L->klass.classpath_kind == RUBYVM_CLASSPATH_SHAPE) {
			rr->stats.unqualified++;	/* an ivar "__classpath__" is a String */
			return NULL;
		}
	}
	if (s && s[0] == '#') {
		FREE_AND_NULL(s);	/* "#<Class:0x...>": not permanent */
	}
	free(e->path);
	e->addr = klass;
	e->path = s;
	e->shape_id = shape_id;
	e->index = index;
	e->value = path;
	return s;
}

/* "Shop#" or "Shop." for methods owned by klass; "" when it has no name. */
static char *method_prefix(struct rbreader *rr, uint64_t owner)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t flags, attached = 0, ext, tbl;
	const char *path;
	unsigned int type;

	if (obj_flags(rr, owner, &flags))
		return xstrdup("");
	type = flags & T_MASK;
	if (type != T_CLASS && type != T_MODULE && type != T_ICLASS)
		return xstrdup("");
	if (!(flags & L->fl_singleton)) {
		path = class_path(rr, owner);
		return path ? xstrfmt("%s#", path) : xstrdup("");
	}
	ext = class_ext(rr, owner);
	if (!ext)
		return xstrdup("");
	if (L->klass.attached_object != RUBYVM_NONE)
		rd_u64(rr, ext + L->klass.attached_object, &attached);
	else if (L->klass.iv_tbl != RUBYVM_NONE && !rd_u64(rr, ext + L->klass.iv_tbl, &tbl))
		attached = st_ivar(rr, tbl, "__attached__");
	else if (L->klass.classpath_kind == RUBYVM_CLASSPATH_SHAPE) {
		uint32_t shape_id, index;

		/* a singleton class's only ivar; it never changes */
		if (shape_ivar(rr, owner, ext, "__attached__", &attached, &shape_id, &index) < 0)
			rr->stats.unqualified++;
	}
	if (obj_flags(rr, attached, &flags))
		return xstrdup("");
	type = flags & T_MASK;
	if (type != T_CLASS && type != T_MODULE)
		return xstrdup("");
	path = class_path(rr, attached);
	return path ? xstrfmt("%s.", path) : xstrdup("");
}

static void me_release(struct rbme *m)
{
	free(m->prefix);
	free(m->name);
	memset(m, 0, sizeof(*m));
}

/* The method entry at addr, decoded and cached; NULL if it is none. */
static struct rbme *me_get(struct rbreader *rr, uint64_t addr, int *fresh)
{
	const struct rubyvm_layout *L = rr->L;
	struct rbme *e, m = { 0 };
	unsigned char cme[64];
	uint32_t dw;
	uint64_t id;
	unsigned int type;
	const char *name;
	int found;

	*fresh = 0;
	e = table_slot(rr->mes, sizeof(*e), ME_CACHE, addr, &found);
	if (e && found)
		return e;
	if (!e || rr->nmes >= ME_CACHE - 1)
		return NULL;
	if (L->cme.owner + 8 > sizeof(cme) || rd(rr, addr, cme, L->cme.owner + 8))
		return NULL;
	m.addr = addr;
	m.def = get_u64(cme, L->cme.def);
	m.owner = get_u64(cme, L->cme.owner);
	m.called_id = get_u64(cme, L->cme.called_id);
	if (!is_obj(m.def) || rd(rr, m.def, &dw, sizeof(dw)) ||
	    rd_u64(rr, m.def + L->def.original_id, &id) ||
	    rd_u64(rr, m.def + L->def.method_serial, &m.serial))
		return NULL;
	type = dw >> L->def.type_shift & ((1u << L->def.type_bits) - 1);
	m.cfunc = type == L->method_type_cfunc;
	m.prefix = method_prefix(rr, m.owner);
	if (m.cfunc) {
		name = id_name(rr, id);
		m.name = xstrfmt("%s%s", m.prefix, name ? name : "(unknown cfunc)");
	}
	*e = m;
	rr->nmes++;
	*fresh = 1;
	return e;
}

/*
 * What an ep[-2] word holds: a method entry (returned), a cref (0), or an
 * svar holding either.  Mirrors Ruby's check_method_entry().
 */
static uint64_t check_method_entry(struct rbreader *rr, uint64_t v, int can_be_svar)
{
	const struct rubyvm_layout *L = rr->L;
	struct rbobj *o;
	unsigned int it;

	if (!is_obj(v))
		return 0;
	o = &rr->objs[slot(v, OBJ_CACHE)];
	if (o->addr != v) {
		unsigned char hdr[16];

		if (rd(rr, v, hdr, sizeof(hdr)))
			return 0;
		o->addr = v;
		o->flags = get_u64(hdr, 0);
		o->inner = get_u64(hdr, 8);
	}
	if ((o->flags & T_MASK) != T_IMEMO)
		return 0;
	it = IMEMO_TYPE(o->flags);
	if (it == L->imemo_ment)
		return v;
	if (it == L->imemo_svar && can_be_svar)
		return check_method_entry(rr, o->inner, 0);
	return 0;
}

/*
 * The method entry a frame runs under, as Ruby's rb_vm_frame_method_entry()
 * finds it: ep[-2] of each environment out to the method's own.
 */
static uint64_t frame_method_entry(struct rbreader *rr, uint64_t ep)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t w[3], me;

	for (int depth = 0; depth < 256; depth++) {
		if (!is_obj(ep) || rd(rr, ep - 16, w, sizeof(w)))
			return 0;
		if (w[2] & L->env.flag_local)
			return check_method_entry(rr, w[0], 1);
		if ((me = check_method_entry(rr, w[0], 0)))
			return me;
		ep = w[1] & ~(uint64_t)L->env.prev_ep_mask;
	}
	return 0;
}

static void iseq_release(struct rbiseq *q)
{
	free(q->label);
	free(q->base_label);
	free(q->path);
	free(q->lines);
	free(q->succ);
	for (size_t i = 0; i < q->nnames; i++)
		free(q->names[i].name);
	free(q->names);
	memset(q, 0, sizeof(*q));
}

/* Path of an iseq: pathobj is a String or [path, realpath]; Ruby shows path. */
static enum perr iseq_path(struct rbreader *rr, uint64_t pathobj, char **out)
{
	uint64_t flags, path;

	if (obj_flags(rr, pathobj, &flags))
		return PERR_CORRUPT;
	if ((flags & T_MASK) == T_ARRAY) {
		if (array_at(rr, pathobj, 0, &path))
			return PERR_CORRUPT;
		pathobj = path;
	}
	return dup_string(rr, pathobj, out);
}

/* Read the line table: insns_info line numbers and the succinct index. */
static enum perr iseq_lines(struct rbreader *rr, struct rbiseq *q, const unsigned char *body)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t info = get_u64(body, L->iseq.insns_info_body);
	uint64_t succ = get_u64(body, L->iseq.succ_index_table);
	uint32_t n = get_u32(body, L->iseq.insns_info_size), esz = L->iseq.insn_info_size;
	unsigned char *raw;

	if (n > (1u << 20) || q->size > (1u << 24))
		return PERR_CORRUPT;
	q->ninfo = n;
	if (!n)
		return PERR_OK;
	raw = xmalloc((size_t)n * esz);
	if (rd(rr, info, raw, (size_t)n * esz)) {
		free(raw);
		return PERR_CORRUPT;
	}
	q->lines = xmalloc(n * sizeof(*q->lines));
	for (uint32_t i = 0; i < n; i++)
		q->lines[i] = get_i32(raw, i * esz + L->iseq.insn_info_line_no);
	free(raw);
	if (n > 1) {
		/* 6 words of immediate ranks, then 80-byte blocks of 512 bits */
		uint64_t blocks = q->size > 54 ? (q->size - 54 + 511) / 512 : 0;

		q->succ_len = (size_t)(48 + blocks * 80);
		q->succ = xmalloc(q->succ_len);
		if (rd(rr, succ, q->succ, q->succ_len))
			return PERR_CORRUPT;
	}
	return PERR_OK;
}

/* The line of the instruction at pos, as Ruby's rb_iseq_line_no(). */
static int iseq_line(const struct rbiseq *q, uint64_t pos)
{
	uint64_t idx;

	if (!q->ninfo)
		return 0;
	if (q->ninfo == 1)
		return q->lines[0];
	if (pos < 54) {
		idx = get_u64(q->succ, (uint32_t)(pos / 9 * 8)) >> (pos % 9 * 7) & 0x7f;
	} else {
		uint64_t bi = (pos - 54) / 512, bbi = (pos - 54) % 512, sbi = bbi / 64;
		uint64_t off = 48 + bi * 80, small = 0, bits;

		if (off + 80 > q->succ_len)
			return 0;
		if (sbi)
			small = get_u64(q->succ, (uint32_t)(off + 8)) >> ((sbi - 1) * 9) & 0x1ff;
		bits = get_u64(q->succ, (uint32_t)(off + 16 + sbi * 8)) << (63 - bbi % 64);
		idx = get_u32(q->succ, (uint32_t)off) + small + (uint64_t)__builtin_popcountll(bits);
	}
	if (idx < 1 || idx > q->ninfo)
		return 0;
	return q->lines[idx - 1];
}

/* The iseq at addr, decoded and cached; NULL if it does not hold together. */
/*
 * What an iseq's body held when it was cached: its label, path and code.
 * A method compiled at run time (eval, templates) and collected leaves its
 * iseq's slot and body to the next one, which the GC and malloc may put at
 * the same addresses; its frames must not be named after the old one.
 */
static void iseq_print(const struct rubyvm_layout *L, const unsigned char *body,
		       uint64_t out[4])
{
	out[0] = get_u64(body, L->iseq.label) ^ get_u64(body, L->iseq.base_label) * 3;
	out[1] = get_u64(body, L->iseq.pathobj);
	out[2] = get_u64(body, L->iseq.iseq_encoded);
	out[3] = (uint64_t)get_u32(body, L->iseq.iseq_size) << 32 ^
		 (L->iseq.first_lineno_fixnum ? get_u64(body, L->iseq.first_lineno) :
						(uint64_t)get_u32(body, L->iseq.first_lineno));
}

static struct rbiseq *iseq_get(struct rbreader *rr, uint64_t addr, int *fresh)
{
	const struct rubyvm_layout *L = rr->L;
	struct rbiseq *e, q = { 0 };
	unsigned char hdr[24], body[512];
	uint64_t lineno;
	int found;

	*fresh = 0;
	e = table_slot(rr->iseqs, sizeof(*e), ISEQ_CACHE, addr, &found);
	if (e && found)
		return e;
	if (!e || rr->niseqs >= ISEQ_CACHE - 1)
		return NULL;
	rr->stats.cache_misses++;
	if (!is_obj(addr) || L->iseq.size > sizeof(body) || rd(rr, addr, hdr, sizeof(hdr)))
		return NULL;
	if ((get_u64(hdr, 0) & T_MASK) != T_IMEMO || IMEMO_TYPE(get_u64(hdr, 0)) != IMEMO_ISEQ)
		return NULL;
	q.addr = addr;
	q.body = get_u64(hdr, L->iseq.body);
	if (!is_obj(q.body) || rd(rr, q.body, body, L->iseq.size))
		return NULL;
	q.encoded = get_u64(body, L->iseq.iseq_encoded);
	q.size = get_u32(body, L->iseq.iseq_size);
	q.type = get_u32(body, L->iseq.type);
	if (L->iseq.parent_iseq != RUBYVM_NONE)
		q.parent = get_u64(body, L->iseq.parent_iseq);
	iseq_print(L, body, q.print);
	if (L->iseq.call_data != RUBYVM_NONE) {
		uint64_t n = get_u32(body, L->iseq.ci_size), kw = 0;

		if (L->iseq.ci_kw_size != RUBYVM_NONE)
			kw = get_u32(body, L->iseq.ci_kw_size);
		q.cd = get_u64(body, L->iseq.call_data);
		q.cd_kw = q.cd + n * L->iseq.call_data_size;
		q.cd_end = q.cd_kw + kw * L->iseq.kw_call_data_size;
		if (q.cd_end < q.cd)
			q.cd = q.cd_kw = q.cd_end = 0;	/* not call data: never matches */
	}
	if (L->iseq.local_table_size != RUBYVM_NONE)
		q.locals = get_u32(body, L->iseq.local_table_size);
	if (L->iseq.local_table != RUBYVM_NONE)
		q.local_table = get_u64(body, L->iseq.local_table);
	if (L->iseq.first_lineno_fixnum) {
		lineno = get_u64(body, L->iseq.first_lineno);
		q.first_lineno = (lineno & 1) ? (int)((int64_t)lineno >> 1) : 0;
	} else {
		q.first_lineno = get_i32(body, L->iseq.first_lineno);
	}
	if (dup_string(rr, get_u64(body, L->iseq.label), &q.label) ||
	    dup_string(rr, get_u64(body, L->iseq.base_label), &q.base_label) ||
	    iseq_path(rr, get_u64(body, L->iseq.pathobj), &q.path) || iseq_lines(rr, &q, body)) {
		iseq_release(&q);
		return NULL;
	}
	*e = q;
	rr->niseqs++;
	*fresh = 1;
	return e;
}

/*
 * The frame's name as Ruby 3.4 labels it: the label with its method part
 * qualified by the method's owner ("block in Shop#checkout").  Built once
 * per (iseq, method entry).
 */
static const char *iseq_name(struct rbiseq *q, const struct rbme *me)
{
	struct rbname *n;
	size_t ll, bl;

	if (!me || !*me->prefix || q->base_label[0] == '<')
		return q->label;
	/*
	 * One name per method definition: a method entry freed with its
	 * class and made again at its address for a new class (same iseq,
	 * since Class.new { def price... } compiles price once) is another.
	 */
	for (size_t i = 0; i < q->nnames; i++)
		if (q->names[i].me == me->addr && q->names[i].serial == me->serial)
			return q->names[i].name;
	if (q->nnames == 64)
		return q->label;	/* a block run under that many methods: keep it plain */
	q->names = xreallocarray(q->names, q->nnames + 1, sizeof(*q->names));
	n = &q->names[q->nnames++];
	n->me = me->addr;
	n->serial = me->serial;
	ll = strlen(q->label);
	bl = strlen(q->base_label);
	if (bl <= ll && !strcmp(q->label + ll - bl, q->base_label))
		n->name = xstrfmt("%.*s%s%s", (int)(ll - bl), q->label, me->prefix, q->base_label);
	else
		n->name = xstrdup(q->label);
	return n->name;
}

static void check_add(struct rbreader *rr, int kind, void *entry);

/* Code of a rescue or ensure clause: its frame stands for its method's. */
static int iseq_is_clause(const struct rbiseq *q)
{
	return q->type == ISEQ_TYPE_RESCUE || q->type == ISEQ_TYPE_ENSURE;
}

/*
 * The iseq whose label names q's frame.  Ruby 3.4 (vm_backtrace.c,
 * calculate_iseq_label()) names rescue, ensure and eval code after the
 * code it is in, its parent_iseq: "Shop#checkout", not "rescue in
 * checkout"; and eval code has no name of its own from 3.4 on
 * ("<compiled>").  Older Rubies label eval code with its parent's label
 * and the clauses "rescue in " + it, so the parent's label is right on
 * every version.  q itself when the parent cannot be read.
 */
static struct rbiseq *iseq_named_by(struct rbreader *rr, struct rbiseq *q)
{
	for (int depth = 0; depth < 16; depth++) {
		struct rbiseq *p;
		int fresh;

		if (!iseq_is_clause(q) && q->type != ISEQ_TYPE_EVAL)
			return q;
		if (!q->parent || !(p = iseq_get(rr, q->parent, &fresh)))
			return q;
		if (!fresh)
			check_add(rr, 0, p);
		q = p;
	}
	return q;
}

static void check_add(struct rbreader *rr, int kind, void *entry)
{
	struct check *c;

	for (size_t i = 0; i < rr->nchecks; i++)
		if (rr->checks[i].entry == entry)
			return;
	if (rr->nchecks == VALIDATE_MAX)
		return;
	c = &rr->checks[rr->nchecks++];
	c->kind = kind;
	c->entry = entry;
	if (kind == 0) {
		const struct rbiseq *q = entry;

		c->addr = q->addr;
		c->want[0] = q->body;
	} else {
		const struct rbme *m = entry;

		c->addr = m->addr;
		c->want[0] = m->def;
		c->want[1] = m->owner;
		c->want[2] = m->called_id;
		c->want[3] = m->serial;
	}
}

/*
 * Check in one scatter read that every cached entry the walk used still
 * describes what is at its address.  Drops the stale ones; returns how
 * many there were.
 */
static int validate(struct rbreader *rr)
{
	const struct rubyvm_layout *L = rr->L;
	struct procmem_iov iov[2 * VALIDATE_MAX];
	size_t done = 0, n = 0, at[VALIDATE_MAX];
	int stale = 0;

	if (!rr->nchecks)
		return 0;
	for (size_t i = 0; i < rr->nchecks; i++) {
		struct check *c = &rr->checks[i];

		at[i] = n;
		iov[n++] = (struct procmem_iov){ c->addr, c->got, sizeof(c->got) };
		if (c->kind == 0)	/* and its body, which may be another's now */
			iov[n++] = (struct procmem_iov){ c->want[0], c->body, L->iseq.size };
		else	/* and its definition's serial, which a new one does not share */
			iov[n++] = (struct procmem_iov){ c->want[0] + L->def.method_serial, &c->serial,
							 sizeof(c->serial) };
	}
	procmem_readv(&rr->t->mem, iov, n, &done);
	for (size_t i = 0; i < rr->nchecks; i++) {
		struct check *c = &rr->checks[i];
		uint64_t f = c->got[0], print[4];
		int ok = at[i] < done && (f & T_MASK) == T_IMEMO;

		if (ok && c->kind == 0) {
			ok = at[i] + 1 < done && IMEMO_TYPE(f) == IMEMO_ISEQ &&
			     c->got[L->iseq.body / 8] == c->want[0];
			if (ok) {
				iseq_print(L, c->body, print);
				ok = !memcmp(print, ((const struct rbiseq *)c->entry)->print,
					     sizeof(print));
			}
		} else if (ok)
			/*
			 * The same def, owner and name, and the def's serial:
			 * a method entry freed with its class and made again
			 * at the same address for another class's method may
			 * have them all at the same addresses (the new class
			 * where the old one was, the new def where the old
			 * def was), but a def made anew has a new serial
			 * (Ruby counts them, rb_method_definition_create()).
			 */
			ok = IMEMO_TYPE(f) == L->imemo_ment && L->cme.owner < sizeof(c->got) &&
			     L->cme.called_id < sizeof(c->got) && at[i] + 1 < done &&
			     c->got[L->cme.def / 8] == c->want[0] &&
			     c->got[L->cme.owner / 8] == c->want[1] &&
			     c->got[L->cme.called_id / 8] == c->want[2] && c->serial == c->want[3];
		if (ok)
			continue;
		stale++;
		if (c->kind == 0)
			iseq_release(c->entry);
		else
			me_release(c->entry);
		*(uint64_t *)c->entry = TOMBSTONE;	/* first member: the address */
	}
	rr->nchecks = 0;
	return stale;
}

/*
 * Where an execution context's frames and environments were last time:
 * the next sample reads them all, with the EC itself, in one scatter read.
 */
/* --- tags: what the program marks with src/ruby/pyrospy.rb --- */

#define TAG_THREAD	0		/* Thread.current[:__pyrospy_tags__] */
#define TAG_PROCESS	1		/* Thread.main[:__pyrospy_process__] */
#define TAG_SETS	2		/* Thread.main[:__pyrospy_sets__] */
#define TAG_GENS	3		/* Thread.main[:__pyrospy_gens__] */
#define TAG_EAGER	100		/* samples at the start that all look */
#define TAG_SEARCH	25		/* samples between looks for the registry */
#define TAGSET_MAX	8192		/* slots of the registry */
#define TAG_ID_MAX	(1ll << 52)	/* ids (gen * TAGSET_MAX + slot) beyond: garbage */
static const char *const tag_names[TAG_VARS] = {
	"__pyrospy_tags__", "__pyrospy_process__", "__pyrospy_sets__", "__pyrospy_gens__",
};

static void storage_match(struct rbreader *rr, uint64_t key, uint64_t v, uint64_t val[TAG_VARS])
{
	const struct rubyvm_layout *L = rr->L;

	for (int i = 0; i < TAG_VARS; i++) {
		const char *name;

		if (rr->tag_key[i] == key) {
			val[i] = v;
			return;
		}
		if (rr->tag_key[i])
			continue;
		/* 2.7 keys by ID, later versions by the ID's serial */
		name = id_name(rr, L->version < 30000 ? key : key << L->id_scope_shift);
		if (name && !strcmp(name, tag_names[i])) {
			rr->tag_key[i] = key;
			val[i] = v;
			return;
		}
	}
}


/* From a table's header: where its entries are, how many, and their size. */
static int storage_layout(struct rbreader *rr, const unsigned char *hdr, uint64_t *at,
			  uint64_t *n, uint64_t *esize)
{
	if (rr->L->version < 30000) {
		/* st_table: entries_start@32, entries_bound@40, entries@48 */
		uint64_t start = get_u64(hdr, 32), bound = get_u64(hdr, 40);

		if (bound < start || bound - start > STORAGE_MAX)
			return -1;
		*n = bound - start;
		*at = get_u64(hdr, 48) + 24 * start;
		*esize = 24;
	} else {
		/* rb_id_table: int capa@0, num@4, used@8, items@16 */
		uint32_t capa = get_u32(hdr, 0), num = get_u32(hdr, 4);

		if (!capa || capa > STORAGE_MAX || num > capa)
			return -1;
		*n = capa;
		*at = get_u64(hdr, 16);
		*esize = 16;
	}
	return *n && is_obj(*at) ? 0 : -1;
}

static void storage_scan(struct rbreader *rr, const unsigned char *ent, uint64_t n,
			 uint64_t esize, uint64_t val[TAG_VARS])
{
	for (uint64_t i = 0; i < n; i++) {
		const unsigned char *e = ent + i * esize;

		if (esize == 24 && get_u64(e, 0) != UINT64_MAX)	/* else deleted */
			storage_match(rr, get_u64(e, 8), get_u64(e, 16), val);
		else if (esize == 16 && get_u32(e, 0))	/* else empty */
			storage_match(rr, get_u32(e, 0), get_u64(e, 8), val);
	}
}

static size_t storage_hdr_len(const struct rbreader *rr)
{
	return rr->L->version < 30000 ? 56 : 24;
}

static uint64_t storage_esize(const struct rbreader *rr)
{
	return rr->L->version < 30000 ? 24 : 16;
}

/*
 * Values from a header and entries read where c says: 0 if the header
 * still puts them there.
 */
static int storage_check(struct rbreader *rr, const struct rbstore *c, const unsigned char *hdr,
			 const unsigned char *ent, uint64_t val[TAG_VARS])
{
	uint64_t at, n, esize;

	if (storage_layout(rr, hdr, &at, &n, &esize) || at != c->at || n != c->n)
		return -1;
	storage_scan(rr, ent, n, esize, val);
	return 0;
}

/*
 * The values of our four fiber-local variables in the local storage
 * table tbl (an st_table keyed by ID on 2.7, an rb_id_table keyed by the
 * ID's serial later); 0 for those absent.  With c, one scatter read of
 * the header and of the entries where c last saw them, when they are
 * still there; else two reads, remembered in c.
 */
static void storage_get(struct rbreader *rr, uint64_t tbl, struct rbstore *c,
			uint64_t val[TAG_VARS])
{
	unsigned char hdr[STORE_HDR], *ent = rr->store_buf;
	uint64_t at, n, esize = storage_esize(rr);
	size_t hlen = storage_hdr_len(rr);

	memset(val, 0, TAG_VARS * sizeof(*val));
	if (!is_obj(tbl))
		return;
	if (c && c->tbl == tbl && c->n) {
		struct procmem_iov iov[2] = {
			{ tbl, hdr, hlen }, { c->at, ent, (size_t)(c->n * esize) },
		};
		size_t done;

		procmem_readv(&rr->t->mem, iov, 2, &done);
		if (done == 2 && !storage_check(rr, c, hdr, ent, val))
			return;
	}
	if (!rd(rr, tbl, hdr, hlen) && !storage_layout(rr, hdr, &at, &n, &esize) &&
	    !rd(rr, at, ent, (size_t)(n * esize))) {
		storage_scan(rr, ent, n, esize, val);
		if (c)
			*c = (struct rbstore){ tbl, at, n };
	}
}

/*
 * A set id's value, or -1 if v is no Fixnum that can be one: below
 * TAGSET_MAX (an older helper), or with gens, gen * TAGSET_MAX + slot.
 */
static int64_t fixnum(const struct rbreader *rr, uint64_t v)
{
	uint64_t max = rr->tag_gens ? (uint64_t)TAG_ID_MAX : TAGSET_MAX;

	return (v & 1) && (v >> 1) < max ? (int64_t)(v >> 1) : -1;
}

static void tagsets_clear(struct rbreader *rr)
{
	for (size_t i = 0; i < rr->ntagsets; i++)
		free(rr->tagsets[i]);
	FREE_AND_NULL(rr->tagsets);
	FREE_AND_NULL(rr->tagids);
	rr->ntagsets = 0;
	for (size_t i = 0; i < ARRAY_SIZE(rr->merged); i++)
		FREE_AND_NULL(rr->merged[i].tags);
}

/* The clean tag set of registry id, read from the registry when first met. */
static const char *tagset(struct rbreader *rr, int64_t id)
{
	uint64_t str, gen;
	size_t len, slot;
	char *raw, *tags = NULL;

	if (id <= 0 || !rr->tag_sets)
		return NULL;
	/* with gens, a slot holds the set of one id after another */
	slot = rr->tag_gens ? (size_t)(id % TAGSET_MAX) : (size_t)id;
	if (slot >= rr->ntagsets) {
		size_t n = slot + 1;

		rr->tagsets = xreallocarray(rr->tagsets, n, sizeof(*rr->tagsets));
		memset(rr->tagsets + rr->ntagsets, 0, (n - rr->ntagsets) * sizeof(*rr->tagsets));
		rr->tagids = xreallocarray(rr->tagids, n, sizeof(*rr->tagids));
		memset(rr->tagids + rr->ntagsets, 0, (n - rr->ntagsets) * sizeof(*rr->tagids));
		rr->ntagsets = n;
	}
	if (rr->tagsets[slot] && rr->tagids[slot] == id)
		return rr->tagsets[slot];
	raw = xmalloc(TAGS_MAX_SET + 1);
	/*
	 * With gens: the slot's String, then its id, which must still be
	 * ours (pyrospy.rb writes the id before the String).  The fiber had
	 * the id, so the set was there before these reads; the same id after
	 * them: nothing replaced it in between.  Each read is made now, in
	 * this order (not from a window read before the fiber's id).
	 */
	rr->mem.fresh = !!rr->tag_gens;
	if (!array_at(rr, rr->tag_sets, (uint64_t)slot, &str) &&
	    !read_string_raw(rr, str, raw, TAGS_MAX_SET + 1, &len) &&
	    (!rr->tag_gens ||
	     (!array_at(rr, rr->tag_gens, (uint64_t)slot, &gen) && gen == ((uint64_t)id << 1 | 1))))
		tags = tags_from_app(raw, len);
	rr->mem.fresh = 0;
	free(raw);
	if (!tags)
		return NULL;
	free(rr->tagsets[slot]);
	rr->tagsets[slot] = tags;
	rr->tagids[slot] = id;
	return tags;
}

/*
 * The set of id, NULL for none, or tags_unknown when the program has one
 * (a positive id) that cannot be read: its place holds another id now
 * (replaced as it was read, or an id the program made up:
 * tests/targets/taghostile.rb), or the read failed.  Such a sample goes
 * without any tag, --tag's too: which keys the program's set had, that
 * would win over them, is not known.
 */
static const char *tagset_known(struct rbreader *rr, int64_t id)
{
	const char *tags = tagset(rr, id);

	if (tags || id <= 0 || !rr->tag_sets)
		return tags;
	rr->stats.tags_dropped++;
	return tags_unknown;
}

/*
 * At the start of a sample: the process-wide set and the registry, from
 * the main thread's fiber-local variables (read with the thread list, in
 * the sample's replayed windows).  Where the table is, is looked up every
 * sample until the registry is found (a sample taken before must be one
 * whose threads had no tags), and for the first TAG_EAGER, then every
 * TAG_SEARCH (the main fiber may change).
 */
static void tags_begin(struct rbreader *rr, uint64_t main_thread)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t ec, tbl, *val = rr->main_val;

	rr->tag_process = -1;
	memset(val, 0, TAG_VARS * sizeof(*val));
	if (rr->stats.samples <= TAG_EAGER || rr->stats.samples >= rr->tag_next || !rr->tag_sets) {
		rr->tag_next = rr->stats.samples + TAG_SEARCH;
		if (is_obj(main_thread) && !rd_u64(rr, main_thread + L->thread.ec, &ec) &&
		    is_obj(ec) && !rd_u64(rr, ec + L->ec.local_storage, &tbl) &&
		    tbl != rr->main_store.tbl)
			rr->main_store = (struct rbstore){ is_obj(tbl) ? tbl : 0, 0, 0 };
	}
	if (!rr->main_store.tbl)
		return;
	if (!rr->main_read ||
	    storage_check(rr, &rr->main_store, rr->main_hdr, rr->store_buf, val))
		storage_get(rr, rr->main_store.tbl, &rr->main_store, val);
	if (val[TAG_SETS] != rr->tag_sets || val[TAG_GENS] != rr->tag_gens) {
		/* a new registry (or none): what we read of the old one is void */
		tagsets_clear(rr);
		rr->tag_sets = is_obj(val[TAG_SETS]) ? val[TAG_SETS] : 0;
		rr->tag_gens = rr->tag_sets && is_obj(val[TAG_GENS]) ? val[TAG_GENS] : 0;
	}
	rr->tag_process = fixnum(rr, val[TAG_PROCESS]);
}

/* The tags of the thread whose EC was just walked. */
static const char *tags_of(struct rbreader *rr)
{
	uint64_t val[TAG_VARS];
	int64_t id;
	struct rbmerged *m;
	const char *a, *b;

	if (!rr->tag_sets || !rr->ec_storage)
		return tagset_known(rr, rr->tag_process);
	if (rr->ec_val_torn) {
		rr->stats.tags_dropped++;	/* changed while its frames were read */
		return tags_unknown;
	}
	if (rr->ec_val_ok)
		memcpy(val, rr->ec_val, sizeof(val));
	else if (rr->ec_storage == rr->main_store.tbl)
		memcpy(val, rr->main_val, sizeof(val));
	else
		storage_get(rr, rr->ec_storage, rr->ec_store, val);
	/* where to read it with the frames next time */
	if (rr->ec_store && rr->ec_store->tbl != rr->ec_storage) {
		if (rr->ec_storage == rr->main_store.tbl)
			*rr->ec_store = rr->main_store;
		else
			rr->ec_store->tbl = rr->ec_store->n = 0;
	}
	id = fixnum(rr, val[TAG_THREAD]);
	a = tagset_known(rr, id);
	b = tagset_known(rr, rr->tag_process);
	if (a == tags_unknown || b == tags_unknown || !a || !b)
		return a == tags_unknown || b == tags_unknown ? tags_unknown : a ? a : b;
	m = &rr->merged[(uint64_t)(id * 31 + rr->tag_process) & (ARRAY_SIZE(rr->merged) - 1)];
	if (m->tags && m->thread == id && m->process == rr->tag_process)
		return m->tags;
	free(m->tags);
	m->thread = id;
	m->process = rr->tag_process;
	m->tags = tags_merge(a, b);
	return m->tags;
}

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

/* Check the EC header and derive the frame count; PERR_OK with n = 0 if idle. */
static enum perr frames_from_ec(struct rbreader *rr, const unsigned char *hdr, struct frames *fr,
				uint64_t *end)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t vm_size = get_u64(hdr, L->ec.vm_stack_size);

	fr->vm_stack = get_u64(hdr, L->ec.vm_stack);
	fr->cfp = get_u64(hdr, L->ec.cfp);
	fr->n = 0;
	fr->truncated = 0;
	if (!fr->vm_stack)
		return PERR_OK;		/* not started, or finished */
	if ((fr->vm_stack & 7) || vm_size > (1u << 24) || (fr->cfp & 7))
		return PERR_CORRUPT;
	*end = fr->vm_stack + vm_size * 8;
	if (fr->cfp < fr->vm_stack || fr->cfp >= *end || (*end - fr->cfp) % L->cfp.size)
		return PERR_CORRUPT;
	/* the outermost slot is a dummy frame */
	fr->n = (*end - fr->cfp) / L->cfp.size - 1;
	return PERR_OK;
}

/* The span of VM stack holding the environments of fr's frames. */
static void env_span(struct rbreader *rr, const struct frames *fr, uint64_t *lo, uint64_t *hi)
{
	const struct rubyvm_layout *L = rr->L;

	*lo = UINT64_MAX;
	*hi = 0;
	for (uint64_t i = 0; i < fr->n; i++) {
		uint64_t ep = get_u64(fr->buf, (uint32_t)(i * L->cfp.size + L->cfp.ep));

		if (ep >= fr->vm_stack + 16 && ep < fr->cfp) {
			if (ep - 16 < *lo)
				*lo = ep - 16;
			if (ep + 8 > *hi)
				*hi = ep + 8;
		}
	}
}

static void cfps_fit(struct rbreader *rr, size_t len)
{
	if (rr->cfps_cap < len) {
		rr->cfps_cap = len;
		rr->cfps = xrealloc(rr->cfps, len);
	}
}

/*
 * One scatter read of the EC, its frames, the environments and the frames
 * once more, where they were last time.  The target runs meanwhile, so the
 * read is good only if the second copy of the frames matches the first
 * (but for the running frame's pc and sp) and everything needed was
 * inside.  Returns 1 when it is.
 */
static int frames_guessed(struct rbreader *rr, struct ecguess *g, unsigned char *hdr,
			  struct frames *fr)
{
	const struct rubyvm_layout *L = rr->L;
	struct procmem_iov iov[9];
	unsigned char again[256];
	uint64_t end, lo, hi, cfp0, off, env_lo, env_hi;
	size_t done, len, niov, hlen, elen, b;
	int tags;

	cfp0 = g->cfp > g->vm_stack + GUESS_FRAMES * L->cfp.size ?
		       g->cfp - GUESS_FRAMES * L->cfp.size : g->vm_stack;
	lo = g->env_lo > g->vm_stack + GUESS_ENV ? g->env_lo - GUESS_ENV : g->vm_stack;
	hi = g->env_hi + GUESS_ENV < cfp0 ? g->env_hi + GUESS_ENV : cfp0;
	if (hi <= lo || hi - lo > ENV_SPAN_MAX || g->end - cfp0 > (uint64_t)FRAMES_MAX * L->cfp.size)
		return 0;
	len = (size_t)(g->end - cfp0);
	cfps_fit(rr, 2 * len);
	/*
	 * The thread's tags where they were, read before and after its
	 * frames (read once, after them, they may be of a later moment), and
	 * dropped for this sample when they changed in between.
	 */
	tags = rr->tag_sets && g->store.n;
	hlen = storage_hdr_len(rr);
	elen = (size_t)(g->store.n * storage_esize(rr));
	b = tags ? 2 : 0;
	if (tags) {
		iov[0] = (struct procmem_iov){ g->store.tbl, rr->ec_hdr0, hlen };
		iov[1] = (struct procmem_iov){ g->store.at, rr->ec_ent0, elen };
	}
	iov[b + 0] = (struct procmem_iov){ g->ec, hdr, L->ec.size };
	iov[b + 1] = (struct procmem_iov){ cfp0, rr->cfps, len };
	iov[b + 2] = (struct procmem_iov){ lo, rmem_big_prepare(&rr->mem, lo, (size_t)(hi - lo)),
					   (size_t)(hi - lo) };
	iov[b + 3] = (struct procmem_iov){ cfp0, rr->cfps + len, len };
	iov[b + 4] = (struct procmem_iov){ g->ec, again, L->ec.size };
	niov = b + 5;
	if (tags) {
		iov[niov++] = (struct procmem_iov){ g->store.tbl, rr->ec_hdr, hlen };
		iov[niov++] = (struct procmem_iov){ g->store.at, rr->ec_ent, elen };
	}
	procmem_readv(&rr->t->mem, iov, niov, &done);
	/*
	 * Nothing of an earlier try: its tags are of another moment.  Kept
	 * when a guess missed and the frames were found again, they put the
	 * span that had just ended on the code run after it (1 % of such
	 * samples on every Ruby, tests/targets/spanchurn.rb).
	 */
	rr->ec_val_ok = 0;
	rr->ec_val_torn = 0;
	if (tags && done == niov && get_u64(hdr, L->ec.local_storage) == g->store.tbl) {
		if (memcmp(rr->ec_hdr0, rr->ec_hdr, hlen) || memcmp(rr->ec_ent0, rr->ec_ent, elen))
			rr->ec_val_torn = 1;
		else
			rr->ec_val_ok = !storage_check(rr, &g->store, rr->ec_hdr, rr->ec_ent,
						       rr->ec_val);
	}
	if (done < b + 5 ||
	    frames_from_ec(rr, hdr, fr, &end) || !fr->n || fr->vm_stack != g->vm_stack ||
	    end != g->end || fr->cfp < cfp0)
		goto miss;
	/*
	 * Frames pushed and popped above the first read's innermost frame
	 * are fine (they existed when read); from there out, nothing may
	 * change.  The EC read again shallower than that: the frames between
	 * may have been copied after they returned, stale slots under a
	 * caller's next callee (labels/ruby: Pt.new;Quiet#loud;spin, without
	 * the Loud#loud between, 1 run in 5): read again.
	 */
	off = get_u64(again, L->ec.cfp);
	if (off < cfp0 || off >= end || (end - off) % L->cfp.size || off > fr->cfp)
		goto miss;
	off = fr->cfp - cfp0;
	if (len - off > 16 &&
	    memcmp(rr->cfps + off + 16, rr->cfps + len + off + 16, (size_t)(len - off - 16)))
		goto miss;
	off = fr->cfp - cfp0;
	fr->buf = rr->cfps + off;
	env_span(rr, fr, &env_lo, &env_hi);
	if (env_lo < lo || env_hi > hi)
		goto miss;
	g->cfp = fr->cfp;
	g->env_lo = env_lo;
	g->env_hi = env_hi;
	return 1;
miss:
	rr->mem.big.len = 0;
	return 0;
}

/* Learn where an EC's frames and environments are, with plain reads. */
static enum perr frames_probe(struct rbreader *rr, uint64_t ec, struct ecguess *g,
			      struct frames *fr)
{
	const struct rubyvm_layout *L = rr->L;
	unsigned char hdr[256];
	uint64_t end, lo, hi;
	struct rbstore store = g->ec == ec ? g->store : (struct rbstore){ 0, 0, 0 };
	enum perr err;

	g->ec = 0;
	if ((err = procmem_read(&rr->t->mem, ec, hdr, L->ec.size)) ||
	    (err = frames_from_ec(rr, hdr, fr, &end)))
		return err;
	if (!fr->n)
		return PERR_OK;
	if (fr->n > FRAMES_MAX) {
		fr->n = FRAMES_MAX;	/* the innermost ones */
		fr->truncated = 1;
	}
	cfps_fit(rr, (size_t)(fr->n * L->cfp.size));
	if ((err = procmem_read(&rr->t->mem, fr->cfp, rr->cfps, (size_t)(fr->n * L->cfp.size))))
		return err;
	fr->buf = rr->cfps;
	env_span(rr, fr, &lo, &hi);
	if (hi <= lo) {
		lo = fr->vm_stack;	/* no environment on the stack */
		hi = lo + 8;
	}
	*g = (struct ecguess){ .ec = ec, .vm_stack = fr->vm_stack, .end = end, .cfp = fr->cfp,
			       .env_lo = lo, .env_hi = hi, .store = store };
	return PERR_OK;
}

/*
 * Read the EC, its frames and their environments consistently: in one
 * scatter read where they were last sample, or, when that misses, after
 * finding out where they are now.  The fiber's tag variables come in
 * that read; `strict' unset (the last try), they may be left unknown.
 */
static enum perr load_frames(struct rbreader *rr, uint64_t ec, struct frames *fr, int strict)
{
	const struct rubyvm_layout *L = rr->L;
	struct ecguess *g = &rr->guess[slot(ec, GUESS_SLOTS)];
	unsigned char hdr[256];
	enum perr err;

	if (L->ec.size > sizeof(hdr))
		return PERR_UNSUPPORTED;
	rr->ec_storage = 0;
	rr->ec_val_ok = 0;
	rr->ec_val_torn = 0;
	rr->ec_store = NULL;
	if (g->ec != ec)
		g->store.tbl = g->store.n = 0;
	if (!(g->ec == ec && frames_guessed(rr, g, hdr, fr))) {
		if ((err = frames_probe(rr, ec, g, fr)) || !fr->n || fr->truncated)
			return err;	/* idle, or too deep to read twice: take the plain read */
		if (!frames_guessed(rr, g, hdr, fr))
			return PERR_CORRUPT;
	}
	if (L->ec.local_storage + 8 <= L->ec.size)
		rr->ec_storage = get_u64(hdr, L->ec.local_storage);
	if (rr->tag_sets && is_obj(rr->ec_storage) && !rr->ec_val_ok) {
		uint64_t val[TAG_VARS];

		/*
		 * The fiber's variables were not in that read (a table new to
		 * us, or moved): read apart, they would be of another moment
		 * than the frames, a span later at times.  Learn where they
		 * are, and read the frames again, with them.
		 */
		storage_get(rr, rr->ec_storage, &g->store, val);
		if (g->store.n && !frames_guessed(rr, g, hdr, fr))
			return PERR_CORRUPT;
		rr->ec_storage = get_u64(hdr, L->ec.local_storage);
		/*
		 * Not with them this time either (the table changed again):
		 * read apart, a unit's frames came with the gap's tags, and
		 * with --tag's defaults (span/churn_ruby_stopped).  Walk
		 * again; on the last try, no tags.
		 */
		if (g->store.n && !rr->ec_val_ok && !rr->ec_val_torn) {
			if (strict)
				return PERR_CORRUPT;
			rr->ec_val_torn = 1;
		}
	}
	rr->ec_store = &g->store;
	return PERR_OK;
}

/* Does v point at one of q's call data entries? */
static int is_call_data(const struct rubyvm_layout *L, const struct rbiseq *q, uint64_t v)
{
	if (v >= q->cd && v < q->cd_kw)
		return (v - q->cd) % L->iseq.call_data_size == 0;
	if (v >= q->cd_kw && v < q->cd_end)
		return (v - q->cd_kw) % L->iseq.kw_call_data_size == 0;
	return 0;
}

/*
 * Is pc just past a call?  A frame's pc is past its instruction's operands
 * while the frame it called runs, and every instruction that calls a
 * method or block in place (send, opt_send_without_block, invokesuper,
 * invokeblock, the opt_ arithmetic when redefined, 4.0's opt_new) has its
 * call data as its last operand or the one before.  A caller on any other
 * instruction was read after its callee returned, under the callee's stale
 * frame.  The code never changes under an iseq, so the answer is kept.
 * 1 yes, 0 no, -1 not known (no layout for it, or unreadable).
 */
static int sent_here(struct rbreader *rr, struct rbiseq *q, uint64_t pc)
{
	const struct rubyvm_layout *L = rr->L;
	unsigned char w[16];
	int ok;

	if (L->iseq.call_data == RUBYVM_NONE || !q->cd)
		return -1;
	for (unsigned int i = 0; i < q->sent_n; i++)
		if (q->sent_pc[i] == pc)
			return q->sent_ok[i];
	if (pc - q->encoded < sizeof(w))
		ok = 0;		/* no room for an instruction and its call data */
	else if (rd(rr, pc - sizeof(w), w, sizeof(w)))
		return -1;
	else
		ok = is_call_data(L, q, get_u64(w, 8)) || is_call_data(L, q, get_u64(w, 0));
	q->sent_pc[q->sent_next] = pc;
	q->sent_ok[q->sent_next] = (unsigned char)ok;
	q->sent_next = (q->sent_next + 1) % 4;
	if (q->sent_n < 4)
		q->sent_n++;
	return ok;
}

/*
 * Does the caller's sp fit the method it called (whose environment is
 * still on the VM stack: one a block captured has moved to the heap)?  A
 * send leaves its caller's sp on the callee's receiver, just below the
 * callee's locals (vm_insnhelper.c: cfp->sp = argv - 1), which lie below
 * its environment data: locals, then the method entry, the block handler
 * and the flags, where ep points.
 */
static int sp_fits(const struct rbiseq *callee, uint64_t callee_ep, uint64_t sp)
{
	return sp + 8 == callee_ep - 8 * (2 + (uint64_t)callee->locals);
}

/*
 * Does the caller's sp fit the block it yielded to?  invokeblock leaves
 * its caller's sp on the block's arguments, where the block's locals
 * begin (vm_insnhelper.c, vm_invoke_iseq_block(): SET_SP(rsp)); a block
 * called as a method (Proc#call, optimised into a send) has its receiver
 * below them, as a send does.
 */
static int block_sp_fits(const struct rbiseq *block, uint64_t block_ep, uint64_t sp)
{
	uint64_t base = block_ep - 8 * (2 + (uint64_t)block->locals);

	return base == sp || base == sp + 8;
}

/*
 * Is the frame with this environment magic a method's that its caller's
 * own send pushed?  Not when run from C (the FINISH flag: rb_funcall, a
 * trap handler, a finalizer, a TracePoint hook): the caller may be
 * anywhere.  Class bodies, rescue, ensure, eval and C frames are pushed
 * by other instructions or by C.
 *
 * Block frames are not checked.  A block run by an iterator that is Ruby
 * code (Integer#times from 3.3) lives about 100 ns an iteration, less
 * than between the reads of the current frame and of the frames: checked,
 * the block of `200_000.times { |i| x += i * i }' kept 17 to 39 of 600
 * samples (54 to 77 unchecked), and 1 in about 500 still had times off
 * its yield line (after opt_succ, whose call data and sp fit by chance).
 * Unchecked, about 40 % of such blocks' samples show the iterator on its
 * loop condition or increment instead of its yield (see the man page).
 */
static int pushed_by_send(uint64_t magic)
{
	return (magic & FRAME_MAGIC_MASK) == FRAME_MAGIC_METHOD && !(magic & FRAME_FLAG_FINISH);
}

/*
 * Is the frame above (the callee, innermost) a block at or past its final
 * leave, whose caller must then still be on its yield?  Such a block is
 * either running its leave (Ruby gives it its end line, and its caller is
 * past the invokeblock) or has returned, read as the stale frame left in
 * the slot while its caller ran on: then the caller is on its loop
 * condition or increment, and the block would get its end line for time
 * spent elsewhere.  Measured with a block of two lines under
 * Integer#times: the end line had 45 % (3.3) and 48 % (3.4) of the block's
 * samples against rb_profile_frames()'s 24 % and 27 %; now 27 % and 26 %.
 * The caller's pc alone does not tell: after opt_lt or opt_succ, which
 * carry call data too, it looks like a call, so where the block's
 * environment is on the VM stack the caller's sp must fit it as well.
 * Still, 0 to 1 in 100 samples of a two-line block under Integer#times
 * (3.3, 3.4, idle machine) show it returned (tests/test_rblines.c).
 * The only block frames checked: see above for why the others are not.
 */
static int block_returned(uint64_t magic, const struct rbiseq *q, int at_end)
{
	return q && at_end && (magic & FRAME_MAGIC_MASK) == FRAME_MAGIC_BLOCK &&
	       !(magic & FRAME_FLAG_FINISH);
}

/*
 * Ruby 4.0 with ZJIT on: the line of the innermost frame.  ZJIT writes a
 * frame's pc only where its code leaves JIT code (a non-leaf call, a call
 * that may allocate, a side exit: gen_prepare_non_leaf_call() and
 * gen_save_pc_for_gc() in zjit/src/codegen.rs), and pushes the frames it
 * calls without pc nor jit_return (gen_push_frame()).  So every outer
 * frame's pc is exact, and the innermost one's is the last pc saved in its
 * slot: by this call, by an earlier call of the same code, or by other
 * code.  A line of this code when the pc lies in it, else none (0): ZJIT
 * leaves no sign of which frame wrote the pc (rb_profile_frames() gives
 * such a frame line 0 too).
 */
static int zjit_line(const struct rbiseq *q, uint64_t pc)
{
	uint64_t pos;

	if (pc < q->encoded || (pc - q->encoded) / 8 > q->size || (pc - q->encoded) % 8)
		return 0;
	pos = (pc - q->encoded) / 8;
	return iseq_line(q, pos ? pos - 1 : 0);
}

/* Is ZJIT on in the target (4.0+)?  Read when a frame needs to know. */
static int zjit_on(struct rbreader *rr)
{
	uint64_t entry;

	return rr->zjit_entry && !rd_u64(rr, rr->zjit_entry, &entry) && entry;
}

/*
 * Walk one thread's control frames into st.  PERR_CORRUPT if torn: the
 * target pushes and pops frames while we read, so frames and environments
 * that do not fit together mean a read across a change.  With `strict'
 * unset (the last try), a frame whose pc lies outside its code is kept
 * with line 0 instead.
 */
static enum perr walk(struct rbreader *rr, uint64_t ec, struct stack *st, int strict)
{
	const struct rubyvm_layout *L = rr->L;
	struct frames fr;
	uint64_t prev_ep = UINT64_MAX, callee = 0;	/* the magic of the frame above */
	uint64_t callee_ep = 0;
	struct rbiseq *callee_q = NULL;		/* its iseq, if it runs Ruby code */
	int callee_end = 0;		/* it is innermost, interpreted, past its leave */
	unsigned int pending = 0;	/* cfunc frames waiting for their caller's line */
	int skip = 0;			/* the frame a clause belongs to: hidden */
	enum perr err;

	st->depth = 0;
	st->truncated = 0;
	rr->nchecks = 0;
	if ((err = load_frames(rr, ec, &fr, strict)))
		return err;
	st->truncated = fr.truncated;
	for (uint64_t i = 0; i < fr.n; i++) {
		const unsigned char *f = fr.buf + i * L->cfp.size;
		uint64_t pc = get_u64(f, L->cfp.pc), iseq = get_u64(f, L->cfp.iseq);
		uint64_t ep = get_u64(f, L->cfp.ep), magic, meaddr, above = callee;
		uint64_t above_ep = callee_ep;
		int above_end;
		struct stack_frame *sf;
		struct rbiseq *q, *named, *above_q = callee_q;
		struct rbme *me = NULL;
		int fresh;

		if (!is_obj(ep) || rd_u64(rr, ep, &magic))
			return PERR_CORRUPT;
		callee = magic;
		callee_ep = ep;
		callee_q = NULL;
		above_end = callee_end;
		callee_end = 0;
		if (ep >= fr.vm_stack && ep < fr.cfp) {
			/* environments on the stack lie deeper for outer frames */
			if (ep >= prev_ep)
				return PERR_CORRUPT;
			prev_ep = ep;
		}
		if (st->depth == STACK_MAX_DEPTH) {
			st->truncated = 1;
			break;
		}
		sf = &st->frame[st->depth];
		if ((magic & FRAME_MAGIC_MASK) == FRAME_MAGIC_CFUNC) {
			meaddr = frame_method_entry(rr, ep);
			me = meaddr ? me_get(rr, meaddr, &fresh) : NULL;
			if (!me || !me->cfunc)
				continue;
			if (!fresh)
				check_add(rr, 1, me);
			sf->name = me->name;
			sf->file = "(cfunc)";
			sf->line = 0;
			if (rr->fq)
				rr->fq[st->depth] = NULL;
			st->depth++;
			pending++;
			continue;
		}
		if ((magic & FRAME_FLAG_CFRAME) || !pc || !iseq)
			continue;	/* IFUNC, dummy: not Ruby code */
		q = iseq_get(rr, iseq, &fresh);
		if (!q) {
			rr->stats.bad_frames++;
			return PERR_CORRUPT;
		}
		if (!fresh)
			check_add(rr, 0, q);
		callee_q = q;
		/*
		 * Ruby 3.4 shows a rescue or ensure clause's frame as the
		 * code it belongs to and hides the next outer Ruby frame, that
		 * code's own (vm_backtrace.c: is_rescue_or_ensure_frame());
		 * older Rubies show both ("rescue in f", "f").  Shown the 3.4
		 * way.
		 */
		if (skip) {
			skip = iseq_is_clause(q);
			continue;
		}
		skip = iseq_is_clause(q);
		named = iseq_named_by(rr, q);
		meaddr = frame_method_entry(rr, ep);
		if (meaddr) {
			me = me_get(rr, meaddr, &fresh);
			if (me && !fresh)
				check_add(rr, 1, me);
		}
		/*
		 * A method's frame, or a block's in one, runs under a method
		 * entry: none found means the environment was read across a
		 * change, and the bare label would be a name Ruby never shows.
		 */
		if (!me && named->base_label[0] != '<') {
			rr->stats.bad_frames++;
			return PERR_CORRUPT;
		}
		sf->name = iseq_name(named, me);
		sf->file = q->path;
		/*
		 * The innermost frame running YJIT's code (its jit_return set:
		 * YJIT writes it on every frame it pushes or enters, the
		 * interpreter clears it) has no line pyrospy can know: YJIT
		 * saves a frame's pc only where its code leaves machine code (a
		 * call, an allocation, a side exit: jit_save_pc() in
		 * yjit/src/codegen.rs), so the pc there is the last one saved,
		 * by this frame or by an earlier one in its slot, not where it
		 * runs now (a loop's frame stays on the line before the loop).
		 * Left out (0), never guessed; every outer frame's pc was saved
		 * at its call and is exact.  Ruby's rb_profile_frames() gives 0.
		 */
		if (i == 0 && L->cfp.jit_return != RUBYVM_NONE && get_u64(f, L->cfp.jit_return))
			sf->line = 0;
		else if (i == 0 && rr->zjit_entry && zjit_on(rr))
			sf->line = zjit_line(q, pc);
		else if ((pc < q->encoded || (pc - q->encoded) / 8 > q->size) && strict)
			return PERR_CORRUPT;	/* pc of another iseq: torn */
		else if (st->depth && (pc - q->encoded) / 8 == q->size) {
			/*
			 * Past its final leave, with frames above it: a frame that
			 * returned, read with the stale ones it had called (the
			 * stack went down and up again between the reads).
			 */
			return PERR_CORRUPT;
		}
		else if (pc < q->encoded || (pc - q->encoded) / 8 > q->size)
			sf->line = 0;
		else if ((pushed_by_send(above) && above_q &&
			  (!sent_here(rr, q, pc) ||
			   (L->iseq.local_table_size != RUBYVM_NONE && above_ep >= fr.vm_stack &&
			    above_ep < fr.cfp &&
			    !sp_fits(above_q, above_ep, get_u64(f, L->cfp.sp))))) ||
			 (block_returned(above, above_q, above_end) &&
			  (!sent_here(rr, q, pc) ||
			   (L->iseq.local_table_size != RUBYVM_NONE && above_ep >= fr.vm_stack &&
			    above_ep < fr.cfp &&
			    !block_sp_fits(above_q, above_ep, get_u64(f, L->cfp.sp)))))) {
			/* the frame above returned: it and what it called are gone */
			rr->stats.bad_frames++;
			return PERR_CORRUPT;
		} else {
			sf->line = iseq_line(q, (pc - q->encoded) / 8 ? (pc - q->encoded) / 8 - 1 : 0);
			callee_end = i == 0 && (pc - q->encoded) / 8 + 1 >= q->size;
		}
		/* C functions show where their Ruby caller called them, as Ruby does */
		for (; pending; pending--) {
			st->frame[st->depth - pending].file = sf->file;
			st->frame[st->depth - pending].line = sf->line;
		}
		if (rr->fq) {
			rr->fq[st->depth] = q;
			rr->fep[st->depth] = ep;
		}
		st->depth++;
	}
	return PERR_OK;
}

/*
 * <= 3.0: the kernel tid from glibc's struct pthread, at an offset found
 * from every thread's struct (pthtid.h; see pyreader.c), or the one
 * thread's that pthtid_pick() knows anyway.
 */
static pid_t pthread_tid(struct rbreader *rr, uint64_t pthread)
{
	int32_t tid;

	if (!is_obj(pthread))
		return 0;
	if (rr->pthread_tid_off < 0)
		return pthread == rr->sole_pthread ? rr->sole_tid : 0;
	if (rd(rr, pthread + (uint64_t)rr->pthread_tid_off, &tid, sizeof(tid)) || tid <= 0)
		return 0;
	return tid;
}

/* Find the tid offset from the structs of the threads of the list at head. */
static void pthread_discover(struct rbreader *rr, uint64_t head, uint64_t node)
{
	const struct rubyvm_layout *L = rr->L;
	int32_t (*words)[PTHTID_WORDS] = xmalloc(PTHTID_THREADS * sizeof(*words));
	unsigned char th[2048];
	uint64_t first = 0;
	pid_t *tids;
	size_t n = 0;
	int ntids;

	rr->sole_tid = 0;
	for (unsigned int k = 0; node != head && k < THREAD_MAX && n < PTHTID_THREADS; k++) {
		uint64_t addr = node - L->thread.list_node, pthread;

		if (!is_obj(node) || rd(rr, addr, th, L->thread.size))
			goto out;
		node = get_u64(th, L->thread.list_node);
		pthread = get_u64(th, L->thread.thread_id);
		if (is_obj(pthread) && !rd(rr, pthread, words[n], sizeof(words[n])) && !n++)
			first = pthread;
	}
	ntids = pthtid_ns_tasks(rr->t->pid, &tids);
	if (ntids < 0)
		goto out;
	rr->pthread_tid_off = pthtid_pick((const int32_t (*)[PTHTID_WORDS])words, n, tids,
					  (size_t)ntids, &rr->sole_tid);
	rr->sole_pthread = first;
	free(tids);
out:
	free(words);
}

static pid_t thread_tid(struct rbreader *rr, const unsigned char *th)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t nt;
	int32_t tid;

	if (L->thread.tid != RUBYVM_NONE)
		return get_i32(th, L->thread.tid);
	if (L->thread.nt != RUBYVM_NONE) {
		nt = get_u64(th, L->thread.nt);
		if (!is_obj(nt) || rd(rr, nt + L->thread.nt_tid, &tid, sizeof(tid)))
			return 0;
		return tid;
	}
	return pthread_tid(rr, get_u64(th, L->thread.thread_id));
}

/*
 * Find rb_vm_t.  Exported as ruby_current_vm_ptr up to 3.2; from 3.3 on
 * the symbol is hidden, but ruby_vm_at_exit() (exported) loads it first
 * thing with a RIP-relative mov, directly or through the GOT.
 */
static uint64_t vm_ptr_addr(struct rbreader *rr)
{
	uint64_t addr, fn, got, got_size;
	unsigned char code[64];
	int tls;

	if (!target_symbol(rr->t, "ruby_current_vm_ptr", &addr, &tls) && !tls)
		return addr;
	if (target_symbol(rr->t, "ruby_vm_at_exit", &fn, &tls) || tls ||
	    rd(rr, fn, code, sizeof(code)))
		return 0;
	for (size_t i = 0; i + 7 <= sizeof(code); i++) {
		int32_t disp;

		/* REX.W (+R) 8B /r, mod 00 r/m 101: mov disp32(%rip), %reg */
		if ((code[i] != 0x48 && code[i] != 0x4c) || code[i + 1] != 0x8b ||
		    (code[i + 2] & 0xc7) != 0x05)
			continue;
		memcpy(&disp, code + i + 3, sizeof(disp));
		addr = fn + i + 7 + (uint64_t)(int64_t)disp;
		if (!target_section(rr->t, ".got", &got, &got_size) && addr >= got &&
		    addr < got + got_size && rd_u64(rr, addr, &addr))
			return 0;
		return addr;
	}
	return 0;
}

/* Does vm look like the VM: main thread and ractor pointing back? */
static enum perr vm_check(struct rbreader *rr, uint64_t vm)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t main_thread, ractor, back;

	if (!vm)
		return PERR_STARTUP;
	if (!is_obj(vm) || rd_u64(rr, vm + L->vm.main_thread, &main_thread))
		return PERR_CORRUPT;
	if (!main_thread)
		return PERR_STARTUP;
	if (L->vm.main_ractor != RUBYVM_NONE) {
		if (rd_u64(rr, vm + L->vm.main_ractor, &ractor) || !is_obj(ractor) ||
		    rd_u64(rr, ractor + L->ractor.threads_main, &back))
			return PERR_CORRUPT;
		return back == main_thread ? PERR_OK : PERR_CORRUPT;
	}
	if (rd_u64(rr, main_thread + L->thread.vm, &back))
		return PERR_CORRUPT;
	return back == vm ? PERR_OK : PERR_CORRUPT;
}

/*
 * Find ruby_global_symbols (for C function names): by symbol when the
 * build has it, else by its shape in the interpreter's writable data
 * (never exported by distribution builds): { last_id, str_sym, ids } with
 * ids an Array of last_id / unit + 1 chunks.
 */
static uint64_t find_symbols(struct rbreader *rr)
{
	const struct rubyvm_layout *L = rr->L;
	const struct procmaps *maps = &rr->t->maps;
	const char *path = rr->t->interp->path;
	uint64_t addr;
	int tls;

	if (!target_symbol(rr->t, "ruby_global_symbols", &addr, &tls) && !tls)
		return addr;
	for (size_t i = 0; i < maps->nr; i++) {
		const struct procmap *m = &maps->map[i];
		uint64_t start = m->start, stop = m->end;
		unsigned char *buf;

		if (!m->path || strcmp(m->path, path) || !(m->perms & PROCMAP_W))
			continue;
		/* the .bss tail is the anonymous map right after */
		if (i + 1 < maps->nr && !maps->map[i + 1].path && maps->map[i + 1].start == stop &&
		    (maps->map[i + 1].perms & PROCMAP_W))
			stop = maps->map[i + 1].end;
		if (stop - start > (16u << 20))
			continue;
		buf = xmalloc((size_t)(stop - start));
		if (procmem_read(&rr->t->mem, start, buf, (size_t)(stop - start))) {
			free(buf);
			continue;
		}
		for (uint64_t off = 0; off + L->symbols.ids + 8 <= stop - start; off += 8) {
			uint32_t last = get_u32(buf, (uint32_t)(off + L->symbols.last_id));
			uint64_t ids = get_u64(buf, (uint32_t)(off + L->symbols.ids)), v;

			if (last < 1000 || last > 50000000 || !is_obj(ids))
				continue;
			/* 4.0 keeps no str_sym table: one check fewer */
			if (L->symbols.str_sym != RUBYVM_NONE &&
			    !is_obj(get_u64(buf, (uint32_t)(off + L->symbols.str_sym))))
				continue;
			if (array_at(rr, ids, last / L->symbols.unit, &v) || !is_obj(v) ||
			    !array_at(rr, ids, last / L->symbols.unit + 2, &v))
				continue;
			free(buf);
			rr->last_id = last;
			return start + off;
		}
		free(buf);
	}
	return 0;
}

static void caches_clear(struct rbreader *rr, int iseqs, int mes)
{
	for (size_t i = 0; iseqs && i < ISEQ_CACHE; i++)
		iseq_release(&rr->iseqs[i]);
	for (size_t i = 0; mes && i < ME_CACHE; i++)
		me_release(&rr->mes[i]);
	if (iseqs)
		rr->niseqs = 0;
	if (mes)
		rr->nmes = 0;
}

/* Between samples: empty a cache that fills up (see table_slot()). */
static void caches_trim(struct rbreader *rr)
{
	caches_clear(rr, rr->niseqs >= ISEQ_CACHE * 3 / 4, rr->nmes >= ME_CACHE * 3 / 4);
}

/* vm_ptr: where the rb_vm_t pointer is, or NULL to find it in t's ELF */
static const char *locals_id_name(void *arg, uint64_t id)
{
	return id_name(arg, id);
}

static const char *locals_class_path(void *arg, uint64_t klass)
{
	return class_path(arg, klass);
}

static enum perr rbreader_setup(struct target *t, const struct reader_opts *opts,
				 const uint64_t *vm_ptr, struct rbreader **out)
{
	unsigned int version = RUBYVM_VERSION(t->major, t->minor, t->patch);
	struct rubyvm_layout lay;
	const struct rubyvm_layout *L = &lay;
	struct rbreader *rr;
	uint64_t ptr, vm = 0;
	int tls;
	enum perr err;

	if (rubyvm_layout(version, &lay))
		return PERR_UNSUPPORTED;
	/* validate() compares these words of the first three; frames_guessed()
	 * expects a frame to start with pc and sp */
	if (L->iseq.body > 16 || L->cme.def > 16 || L->cfp.pc != 0 || L->cfp.sp != 8)
		return PERR_UNSUPPORTED;
	rr = xcalloc(1, sizeof(*rr));
	rr->t = t;
	rr->opts = *opts;
	rr->lay = lay;
	rr->L = &rr->lay;
	rr->pthread_tid_off = -1;
	rmem_init(&rr->mem, t);
	taskstat_init(&rr->ts, t->pid);
	rr->iseqs = xcalloc(ISEQ_CACHE, sizeof(*rr->iseqs));
	rr->mes = xcalloc(ME_CACHE, sizeof(*rr->mes));
	rr->objs = xcalloc(OBJ_CACHE, sizeof(*rr->objs));
	rr->ids = xcalloc(ID_CACHE, sizeof(*rr->ids));
	rr->classes = xcalloc(OBJ_CACHE, sizeof(*rr->classes));
	rr->guess = xcalloc(GUESS_SLOTS, sizeof(*rr->guess));
	rr->store_buf = xmalloc(STORAGE_MAX * 24);
	rr->ec_ent = xmalloc(STORAGE_MAX * 24);
	rr->ec_ent0 = xmalloc(STORAGE_MAX * 24);
	rr->waiters = xcalloc(THREAD_MAX, sizeof(*rr->waiters));
	if (opts->locals) {
		struct rblocals_src src = { rr, locals_id_name, locals_class_path };

		rblocals_init(&rr->locals, &rr->mem, rr->L, &src);
		rr->fep = xcalloc(STACK_MAX_DEPTH, sizeof(*rr->fep));
		rr->fq = xcalloc(STACK_MAX_DEPTH, sizeof(*rr->fq));
		rr->flocals = xcalloc(STACK_MAX_DEPTH, sizeof(*rr->flocals));
	}

	ptr = vm_ptr ? *vm_ptr : vm_ptr_addr(rr);
	if (!ptr) {
		rbreader_free(rr);
		return PERR_NOTFOUND;
	}
	err = rd_u64(rr, ptr, &vm);
	if (!err)
		err = vm_check(rr, vm);
	if (err) {
		rbreader_free(rr);
		return err == PERR_CORRUPT ? PERR_STARTUP : err;
	}
	rr->vm = vm;
	/* neither the main ractor nor the object space ever moves */
	if (L->vm.main_ractor != RUBYVM_NONE && rd_u64(rr, vm + L->vm.main_ractor, &rr->ractor)) {
		rbreader_free(rr);
		return PERR_STARTUP;
	}
	if (L->vm.objspace == RUBYVM_NONE || L->gc.flags == RUBYVM_NONE ||
	    rd_u64(rr, vm + L->vm.objspace, &rr->objspace) || !is_obj(rr->objspace))
		rr->objspace = 0;
	rr->symbols = find_symbols(rr);
	rr->symbols_next = rr->symbols_gap = SYMBOLS_RETRY;
	if (rr->L->version >= RUBYVM_VERSION(4, 0, 0) &&
	    (target_symbol(rr->t, "rb_zjit_entry", &rr->zjit_entry, &tls) || tls))
		rr->zjit_entry = 0;
	snprintf(rr->describe, sizeof(rr->describe),
		 "Ruby %s, layout of %u.%u.%u, VM at 0x%" PRIx64 ", %s", t->version,
		 L->version / 10000, L->version / 100 % 100, L->version % 100, vm,
		 rr->symbols ? "symbol table found" : "no symbol table: C functions unnamed");
	*out = rr;
	return PERR_OK;
}

enum perr rbreader_new(struct target *t, const struct reader_opts *opts, struct rbreader **out)
{
	return rbreader_setup(t, opts, NULL, out);
}

enum perr rbreader_new_at(struct target *t, const struct reader_opts *opts, uint64_t vm_ptr,
			  struct rbreader **out)
{
	return rbreader_setup(t, opts, &vm_ptr, out);
}

static void tagsets_clear(struct rbreader *rr);

void rbreader_free(struct rbreader *rr)
{
	if (!rr)
		return;
	if (rr->iseqs && rr->mes)
		caches_clear(rr, 1, 1);
	if (rr->ids)
		for (size_t i = 0; i < ID_CACHE; i++)
			free(rr->ids[i].name);
	if (rr->classes)
		for (size_t i = 0; i < OBJ_CACHE; i++)
			free(rr->classes[i].path);
	free(rr->iseqs);
	free(rr->mes);
	free(rr->objs);
	free(rr->ids);
	free(rr->classes);
	free(rr->cfps);
	free(rr->guess);
	free(rr->store_buf);
	free(rr->ec_ent);
	free(rr->ec_ent0);
	tagsets_clear(rr);
	if (rr->flocals)
		rblocals_release(&rr->locals);
	free(rr->fep);
	free(rr->fq);
	free(rr->flocals);
	for (size_t i = 0; i < rr->nrtags; i++)
		free(rr->rtags[i]);
	free(rr->rtags);
	free(rr->waiters);
	rmem_release(&rr->mem);
	taskstat_release(&rr->ts);
	free(rr);
}

const struct reader_stats *rbreader_stats(const struct rbreader *rr)
{
	return &rr->stats;
}

const char *rbreader_describe(const struct rbreader *rr)
{
	return rr->describe;
}

/*
 * What ep[-2] words point at is cached across samples; method entries are
 * checked again by validate() when used, and a walk that finds anything
 * stale forgets all of it.
 */
static void objs_reset(struct rbreader *rr)
{
	memset(rr->objs, 0, OBJ_CACHE * sizeof(*rr->objs));
}

/*
 * dump --locals: each shown Ruby frame's locals, from the environment and
 * iseq the walk found it at.  Read after the walk: a value the program
 * changed since shows as it is now, or "<?>" if it no longer holds
 * together.
 */
static void locals_fill(struct rbreader *rr, struct stack *st)
{
	for (unsigned int i = 0; i < st->depth; i++) {
		const struct rbiseq *q = rr->fq[i];

		rr->flocals[i] = q && q->local_table ?
			rblocals_frame(&rr->locals, rr->fep[i], q->local_table, q->locals) : NULL;
	}
	st->locals = rr->flocals;
}

/* A thread's tags with ractor=N, N its ractor's number: valid for this sample. */
static const char *ractor_tags(struct rbreader *rr, const char *tags)
{
	char r[32];

	snprintf(r, sizeof(r), "ractor=%" PRIu32, rr->ractor_id);
	if (rr->nrtags == rr->rtags_cap) {
		rr->rtags_cap = rr->rtags_cap ? rr->rtags_cap * 2 : 16;
		rr->rtags = xreallocarray(rr->rtags, rr->rtags_cap, sizeof(*rr->rtags));
	}
	rr->rtags[rr->nrtags] = tags_merge(r, tags);
	return rr->rtags[rr->nrtags++];
}

/*
 * The threads queued for the GVL of the ractor (or VM) at base, into
 * rr->waiters: 2.7 and 3.1 queue a thread that wants the GVL while another
 * holds it on gvl.waitq, 3.2+ on sched.readyq, through a list node in the
 * thread (the GVL events of 3.2+, RUBY_INTERNAL_THREAD_EVENT_READY, fire
 * as a thread goes on it).  Not known if the list cannot be read whole.
 */
static void gvl_waiters(struct rbreader *rr, uint64_t base, int ractor)
{
	const struct rubyvm_layout *L = rr->L;
	uint32_t q = ractor ? L->ractor.gvl_waitq : L->vm.gvl_waitq;
	uint64_t head = base + q, node;

	rr->nwaiters = 0;
	rr->waiters_ok = 0;
	if (q == RUBYVM_NONE || L->thread.gvl_node == RUBYVM_NONE || rd_u64(rr, head, &node))
		return;
	for (; node != head; rr->nwaiters++) {
		if (rr->nwaiters == THREAD_MAX || !is_obj(node) || node < L->thread.gvl_node)
			return;
		rr->waiters[rr->nwaiters] = node - L->thread.gvl_node;
		if (rd_u64(rr, node, &node))
			return;
	}
	rr->waiters_ok = 1;
}

/* Is the thread at addr queued for the GVL: 1, 0, or -1 if not known. */
static int gvl_waiting(const struct rbreader *rr, uint64_t addr)
{
	if (!rr->waiters_ok)
		return -1;
	for (size_t i = 0; i < rr->nwaiters; i++)
		if (rr->waiters[i] == addr)
			return 1;
	return 0;
}

/* One thread: fill st's header, decide whether to keep it, walk it. */
static enum perr sample_thread(struct rbreader *rr, uint64_t th_addr, const unsigned char *th,
			       uint64_t gvl_owner, int in_gc, struct stack *st,
			       reader_cb cb, void *arg)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t ec = get_u64(th, L->thread.ec), name;
	unsigned int status = th[L->thread.status] >> L->thread.status_shift & 3;
	enum perr err = PERR_OK;
	const char *s;
	pid_t tid;

	if (status == 3 || !is_obj(ec))
		return PERR_OK;		/* killed, or not started */
	memset(st, 0, offsetof(struct stack, frame));
	st->pid = rr->t->pid;
	st->thread_id = th_addr;
	tid = thread_tid(rr, th);
	st->tid = tid > 0 ? taskstat_host_tid(&rr->ts, tid) : 0;
	st->holds_gil = gvl_owner ? gvl_owner == th_addr : -1;
	st->gvl_wait = gvl_waiting(rr, th_addr);
	if (st->tid > 0) {
		char state = taskstat_state(&rr->ts, st->tid);

		st->idle = state ? state != 'R' : -1;
	} else {
		st->idle = -1;
	}
	/* with --gvl-wait, a thread queued for the GVL is kept, asleep as it is */
	if ((rr->opts.gil_only && st->holds_gil != 1) ||
	    (!rr->opts.idle && st->idle == 1 && !(rr->opts.gvl_wait && st->gvl_wait == 1)))
		return PERR_OK;
	name = get_u64(th, L->thread.name);
	if (name != L->qnil && !read_string(rr, name, &s)) {
		snprintf(rr->thread_name, sizeof(rr->thread_name), "%s", s);
		st->thread_name = rr->thread_name;
	}
	for (int tries = 0; tries < WALK_TRIES; tries++) {
		if (tries) {
			rr->stats.retries++;
			rmem_reset(&rr->mem);
			objs_reset(rr);
		}
		err = walk(rr, ec, st, tries < WALK_TRIES - 1);
		if (perr_is_fatal(err))
			return err;
		/*
		 * Check the cached entries the walk used even when it failed:
		 * a stale one (an iseq collected and another put in its place)
		 * may be why, and would fail every try.
		 */
		if (!validate(rr) && !err)
			break;
		if (!err)
			err = PERR_CORRUPT;	/* a stale cache entry: walk again */
	}
	if (!err && rr->flocals)
		locals_fill(rr, st);
	if (!err && in_gc && st->depth < STACK_MAX_DEPTH) {
		/* the VM is collecting garbage, on this thread: say so, on top */
		if (rr->flocals) {
			memmove(rr->flocals + 1, rr->flocals, st->depth * sizeof(*rr->flocals));
			rr->flocals[0] = NULL;
		}
		memmove(st->frame + 1, st->frame, st->depth * sizeof(st->frame[0]));
		st->frame[0] = (struct stack_frame){ "(garbage collection)", "", 0 };
		st->depth++;
	}
	if (!err && rr->opts.gvl_wait && st->gvl_wait == 1 && st->depth &&
	    st->depth < STACK_MAX_DEPTH) {
		/* what it does: wait to take the GVL, on top of where it stopped */
		if (rr->flocals) {
			memmove(rr->flocals + 1, rr->flocals, st->depth * sizeof(*rr->flocals));
			rr->flocals[0] = NULL;
		}
		memmove(st->frame + 1, st->frame, st->depth * sizeof(st->frame[0]));
		st->frame[0] = (struct stack_frame){ "(waiting for GVL)", "", 0 };
		st->depth++;
	}
	if (err) {
		rr->stats.dropped++;
	} else if (st->depth) {
		rr->stats.stacks++;
		st->tags = tags_of(rr);
		st->ractor = rr->ractor_id;
		if (rr->ractor_id && st->tags != tags_unknown)
			st->tags = ractor_tags(rr, st->tags);
		cb(arg, st);
	}
	return PERR_OK;
}

/* Offsets of the thread list head, GVL owner and main thread in *base. */
static void list_fields(const struct rubyvm_layout *L, int ractor, uint32_t f[3])
{
	f[0] = ractor ? L->ractor.threads_set : L->vm.living_threads;
	f[1] = ractor ? L->ractor.gvl_owner : L->vm.gvl_owner;
	f[2] = ractor ? L->ractor.threads_main : L->vm.main_thread;
}

/*
 * The threads of one ractor (3.0+), or of the VM (2.7), at base; `id' the
 * ractor's number (0 on 2.7), `gc' whether its GVL owner collects garbage.
 */
static enum perr sample_threads(struct rbreader *rr, uint64_t base, uint32_t id, int gc,
				reader_cb cb, void *arg)
{
	const struct rubyvm_layout *L = rr->L;
	static struct stack st;		/* large: keep it off the stack */
	unsigned char th[2048], top[1024];
	uint64_t head, node, gvl_owner, main_thread;
	static uint64_t done[THREAD_MAX];	/* the threads sampled */
	uint32_t f[3], lo, hi;
	unsigned int n = 0, ndone = 0;
	int is_main = base == rr->vm || base == rr->ractor, restarted = 0;
	enum perr err;

	list_fields(L, base != rr->vm, f);
	lo = f[0] < f[1] ? f[0] : f[1];
	lo = lo < f[2] ? lo : f[2];
	hi = f[0] > f[1] ? f[0] : f[1];
	hi = (hi > f[2] ? hi : f[2]) + 8;
	if (L->thread.size > sizeof(th) || hi - lo > sizeof(top))
		return PERR_UNSUPPORTED;
	/*
	 * The list head, GVL owner and main thread, and the main thread's
	 * fiber-local variables: through the windows, which the sample's
	 * first read (rmem_begin) fetched where they were last time.
	 */
	if ((err = rd(rr, base + lo, top, hi - lo))) {
		if (!is_main && !perr_is_fatal(err))
			rr->stats.dropped++;	/* a ractor that ended as we read */
		return perr_is_fatal(err) ? err : PERR_OK;
	}
	head = base + f[0];
	node = get_u64(top, f[0] - lo);
	gvl_owner = get_u64(top, f[1] - lo);
	main_thread = get_u64(top, f[2] - lo);
	if (is_main) {
		rr->main_read = rr->tag_sets && rr->main_store.n &&
				!rd(rr, rr->main_store.tbl, rr->main_hdr, storage_hdr_len(rr)) &&
				!rd(rr, rr->main_store.at, rr->store_buf,
				    (size_t)(rr->main_store.n * storage_esize(rr)));
		tags_begin(rr, main_thread);
		if (L->thread.tid == RUBYVM_NONE && L->thread.nt == RUBYVM_NONE &&
		    rr->pthread_tid_off < 0)
			pthread_discover(rr, head, node);
	}
	rr->ractor_id = is_main ? 0 : id;
	gvl_waiters(rr, base, base != rr->vm);
	for (uint64_t prev = head; node != head && n < THREAD_MAX; n++) {
		uint64_t addr = node - L->thread.list_node;
		int seen = 0;

		rr->mem.fresh = !!restarted;
		err = is_obj(node) ? rd(rr, addr, th, L->thread.size) : PERR_CORRUPT;
		rr->mem.fresh = 0;
		if (err) {
			if (perr_is_fatal(err))
				return err;
			rr->stats.dropped++;	/* the list changed under us */
			break;
		}
		/*
		 * A node whose prev is not the one we came from is not in the
		 * list now (a thread that ended, its memory reused): followed,
		 * it led through made-up threads 16 bytes apart, each walked
		 * 8 times and dropped (tags/held_ruby: 1.5 % of samples).
		 * Start again from the head, read now, past the threads
		 * already taken (up to LIST_TRIES times).
		 */
		if (get_u64(th, L->thread.list_node + 8) != prev) {
			rr->mem.fresh = 1;
			err = restarted >= LIST_TRIES ? PERR_CORRUPT : rd_u64(rr, head, &node);
			rr->mem.fresh = 0;
			if (err) {
				if (perr_is_fatal(err))
					return err;
				rr->stats.dropped++;
				break;
			}
			restarted++;
			prev = head;
			n = 0;
			continue;
		}
		prev = node;
		node = get_u64(th, L->thread.list_node);
		if (!is_main && get_u64(th, L->thread.ractor) != base) {
			rr->stats.dropped++;	/* not this ractor's: it ended as we read */
			break;
		}
		for (unsigned int i = 0; restarted && i < ndone && !seen; i++)
			seen = done[i] == addr;
		if (seen)
			continue;
		if (ndone < THREAD_MAX)
			done[ndone++] = addr;
		err = sample_thread(rr, addr, th, gvl_owner, gc && addr == gvl_owner, &st, cb,
				    arg);
		if (err)
			return err;
	}
	return PERR_OK;
}

enum perr rbreader_sample(struct rbreader *rr, reader_cb cb, void *arg)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t head, node, nodes[RACTOR_MAX];
	uint32_t gcflags = 0, id;
	unsigned int n = 0;
	enum perr err;
	int gc;

	rr->stats.samples++;
	/*
	 * Set up early (exec: the VM and its main thread exist before
	 * Init_sym() has made the symbol table), or its maps not what they
	 * were: look again now and then.  Without it, C functions go
	 * unnamed, and the helper's fiber-local variables, looked up by
	 * name, are never found: no tags, --tag's in their place.  A look
	 * reads the interpreter's writable data: ever further apart, for a
	 * build where it is never found.
	 */
	if (!rr->symbols && rr->stats.samples >= rr->symbols_next) {
		rr->symbols_gap *= 2;
		rr->symbols_next = rr->stats.samples + rr->symbols_gap;
		target_refresh_maps(rr->t);
		rr->symbols = find_symbols(rr);
	}
	if (rr->flocals)
		rblocals_begin(&rr->locals);
	for (size_t i = 0; i < rr->nrtags; i++)
		free(rr->rtags[i]);
	rr->nrtags = 0;
	rmem_begin(&rr->mem, 1);	/* where everything was last time, in one read */
	caches_trim(rr);
	gc = !rr->opts.no_gc && rr->objspace &&
	     !rd(rr, rr->objspace + L->gc.flags, &gcflags, sizeof(gcflags)) &&
	     (gcflags >> L->gc.during_gc_bit & 1);
	if (!rr->ractor || L->vm.ractor_set == RUBYVM_NONE || L->ractor.vmlr_node == RUBYVM_NONE)
		return sample_threads(rr, rr->ractor ? rr->ractor : rr->vm, 1, gc, cb, arg);
	/*
	 * Every ractor, the main one first (the VM's list keeps them in the
	 * order they started).  Collected before any is sampled: a ractor
	 * that ends meanwhile is read as it was, or counted as dropped.
	 */
	head = rr->vm + L->vm.ractor_set;
	if ((err = rd_u64(rr, head, &node)))
		return perr_is_fatal(err) ? err : PERR_OK;
	for (; node != head && n < RACTOR_MAX; n++) {
		nodes[n] = node;
		if (!is_obj(node) || (err = rd_u64(rr, node, &node))) {
			if (perr_is_fatal(err))
				return err;
			n = 0;	/* the list changed under us: the main ractor only */
			rr->stats.dropped++;
			break;
		}
	}
	if (!n || nodes[0] - L->ractor.vmlr_node != rr->ractor)
		return sample_threads(rr, rr->ractor, 1, gc, cb, arg);
	for (unsigned int i = 0; i < n; i++) {
		uint64_t base = nodes[i] - L->ractor.vmlr_node;

		/*
		 * Garbage is collected with every other ractor stopped, on a
		 * thread we cannot tell from the GVL owners when there are
		 * several: then no thread gets the frame.
		 */
		if (i && rd(rr, base + L->ractor.id, &id, sizeof(id)))
			continue;
		if ((err = sample_threads(rr, base, i ? id : 1, gc && n == 1, cb, arg)))
			return err;
	}
	return PERR_OK;
}
