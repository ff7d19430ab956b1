/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "python/pyreader_impl.h"
#include "util/path.h"

/*
 * Code objects, read once and cached by address: their names, files and
 * line tables, and the line of an instruction (pyreader_impl.h).
 */

enum perr pyr_read_str_into(struct pyreader *pr, uint64_t addr, uint64_t max, int how,
			       char *out, size_t cap)
{
	int cut;

	return pyobj_str_at(&pr->mem, &pr->lay, pr->unicode_type, addr, (size_t)max,
			    how & STR_LENIENT, out, cap, (how & STR_CUT) ? &cut : NULL);
}

enum perr pyr_read_str(struct pyreader *pr, uint64_t addr, const char **out)
{
	enum perr err = pyr_read_str_into(pr, addr, STR_MAX, 0, pr->strbuf, sizeof(pr->strbuf));

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
	enum perr err = pyr_read_str(pr, addr, &s);

	if (err == PERR_TOOBIG) {
		err = pyr_read_str_into(pr, addr, STR_MAX, STR_CUT, pr->strbuf, sizeof(pr->strbuf));
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

void pyr_cache_clear(struct pyreader *pr)
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
 * old one, so pyr_verify() compares these with the object as it is now.
 */
void pyr_code_print(const struct pyvm_layout *L, const unsigned char *hdr, uint64_t out[4])
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
struct pycode *pyr_code_get(struct pyreader *pr, uint64_t addr)
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
	pyr_code_print(L, hdr, c.print);
	if (L->unicode.compact_size + 8 > sizeof(strhdr) ||
	    rd(pr, c.print[1], strhdr, L->unicode.compact_size + 8))
		return NULL;
	c.namelen = str_object_len(L, strhdr);
	if (!c.namelen || rd(pr, c.print[1], c.nameobj, c.namelen))
		return NULL;
	c.firstlineno = get_i32(hdr, L->code.firstlineno);
	if (c.firstlineno < 0)
		return NULL;
	/* normalised once per code object, never per sample (util/path.h) */
	if (dup_name(pr, get_u64(hdr, L->code.filename), &c.file))
		return NULL;
	path_normalize(c.file);
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
		/* the opcode bytes, for pyr_caller_calls(); a code unit is opcode, oparg */
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
int pyr_frame_incomplete(const struct pyvm_layout *L, const struct pycode *c,
			    const unsigned char *fr, uint64_t at)
{
	if (c->firsttraceable < 0 || L->frame.owner == PYVM_NONE || fr[L->frame.owner] == 1)
		return 0;	/* 1: FRAME_OWNED_BY_GENERATOR, 3.11 to 3.15 */
	return at < c->code_start + 2 * (uint64_t)c->firsttraceable;
}

int pyr_code_line(const struct pyreader *pr, struct pycode *c, int64_t lasti, uint64_t instr)
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
enum perr pyr_tlbc_base(struct pyreader *pr, const struct pycode *c, const unsigned char *fr,
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
