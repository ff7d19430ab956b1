/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "ruby/rbreader_impl.h"
#include "util/path.h"

/*
 * Instruction sequences, read once and cached: paths, line tables and
 * names, and the checks of what the caches hold (rbreader_impl.h).
 */

void rbr_iseq_release(struct rbiseq *q)
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

/*
 * Path of an iseq: pathobj is a String or [path, realpath]; Ruby shows
 * path, normalised (util/path.h) once per iseq.  A relative path that
 * still starts with ".." names no file by itself: the realpath (absolute,
 * made by the target's Ruby) does, when the iseq has one.
 */
static enum perr iseq_path(struct rbreader *rr, uint64_t pathobj, char **out)
{
	uint64_t flags, path, real;
	char *rp;
	enum perr err;

	if (rbr_obj_flags(rr, pathobj, &flags))
		return PERR_CORRUPT;
	if ((flags & T_MASK) != T_ARRAY) {
		err = rbr_dup_string(rr, pathobj, out);
		if (!err)
			path_normalize(*out);
		return err;
	}
	if (rbr_array_at(rr, pathobj, 0, &path))
		return PERR_CORRUPT;
	err = rbr_dup_string(rr, path, out);
	if (err)
		return err;
	path_normalize(*out);
	if (!path_goes_up(*out) || rbr_array_at(rr, pathobj, 1, &real) ||
	    rbr_obj_flags(rr, real, &flags) || (flags & T_MASK) != T_STRING ||
	    rbr_dup_string(rr, real, &rp))
		return PERR_OK;
	if (*rp == '/') {
		free(*out);
		*out = path_normalize(rp);
	} else {
		free(rp);
	}
	return PERR_OK;
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
int rbr_iseq_line(const struct rbiseq *q, uint64_t pos)
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
 * iseq's rbr_slot and body to the next one, which the GC and malloc may put at
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

struct rbiseq *rbr_iseq_get(struct rbreader *rr, uint64_t addr, int *fresh)
{
	const struct rubyvm_layout *L = rr->L;
	struct rbiseq *e, q = { 0 };
	unsigned char hdr[24], body[512];
	uint64_t lineno;
	int found;

	*fresh = 0;
	e = rbr_table_slot(rr->iseqs, sizeof(*e), ISEQ_CACHE, addr, &found);
	if (e && found)
		return e;
	if (!e || rr->niseqs >= ISEQ_CACHE - 1)
		return NULL;
	rr->stats.cache_misses++;
	if (!rbr_is_obj(addr) || L->iseq.size > sizeof(body) || rd(rr, addr, hdr, sizeof(hdr)))
		return NULL;
	if ((get_u64(hdr, 0) & T_MASK) != T_IMEMO || IMEMO_TYPE(get_u64(hdr, 0)) != IMEMO_ISEQ)
		return NULL;
	q.addr = addr;
	q.body = get_u64(hdr, L->iseq.body);
	if (!rbr_is_obj(q.body) || rd(rr, q.body, body, L->iseq.size))
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
	if (rbr_dup_string(rr, get_u64(body, L->iseq.label), &q.label) ||
	    rbr_dup_string(rr, get_u64(body, L->iseq.base_label), &q.base_label) ||
	    iseq_path(rr, get_u64(body, L->iseq.pathobj), &q.path) || iseq_lines(rr, &q, body)) {
		rbr_iseq_release(&q);
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
const char *rbr_iseq_name(struct rbiseq *q, const struct rbme *me)
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

/* Code of a rescue or ensure clause: its frame stands for its method's. */
int rbr_iseq_is_clause(const struct rbiseq *q)
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
struct rbiseq *rbr_iseq_named_by(struct rbreader *rr, struct rbiseq *q)
{
	for (int depth = 0; depth < 16; depth++) {
		struct rbiseq *p;
		int fresh;

		if (!rbr_iseq_is_clause(q) && q->type != ISEQ_TYPE_EVAL)
			return q;
		if (!q->parent || !(p = rbr_iseq_get(rr, q->parent, &fresh)))
			return q;
		if (!fresh)
			rbr_check_add(rr, 0, p);
		q = p;
	}
	return q;
}

void rbr_check_add(struct rbreader *rr, int kind, void *entry)
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
 * Check in one scatter read that every cached entry the rbr_walk used still
 * describes what is at its address.  Drops the stale ones; returns how
 * many there were.
 */
int rbr_validate(struct rbreader *rr)
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
			rbr_iseq_release(c->entry);
		else
			rbr_me_release(c->entry);
		*(uint64_t *)c->entry = TOMBSTONE;	/* first member: the address */
	}
	rr->nchecks = 0;
	return stale;
}
