/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "ruby/rbreader_impl.h"

/*
 * A thread's control frames: finding them, the walk, and what makes a
 * frame one the thread had (rbreader_impl.h).
 */

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
	/* the outermost rbr_slot is a dummy frame */
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
int rbr_frames_guessed(struct rbreader *rr, struct ecguess *g, unsigned char *hdr,
			  struct frames *fr)
{
	const struct rubyvm_layout *L = rr->L;
	struct procmem_iov iov[13];
	unsigned char again[256];
	uint64_t end, lo, hi, cfp0, off, env_lo, env_hi;
	size_t done, len, niov, hlen, elen, plen, b;
	int tags, ptags;

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
	hlen = rbr_storage_hdr_len(rr);
	elen = (size_t)(g->store.n * rbr_storage_esize(rr));
	/*
	 * And so the process-wide set, in the main thread's table, for any
	 * other thread: read once at the sample's start, it was paired with
	 * frames read later, after the program had set another (7 to 12
	 * stacks a run under load: tests/targets/proctags.rb).
	 */
	ptags = rr->tag_sets && rr->main_store.tbl && rr->main_store.n &&
		rr->main_store.n <= STORAGE_MAX && g->store.tbl != rr->main_store.tbl;
	plen = ptags ? (size_t)(rr->main_store.n * rbr_storage_esize(rr)) : 0;
	b = 0;
	if (tags) {
		iov[b++] = (struct procmem_iov){ g->store.tbl, rr->ec_hdr0, hlen };
		iov[b++] = (struct procmem_iov){ g->store.at, rr->ec_ent0, elen };
	}
	if (ptags) {
		iov[b++] = (struct procmem_iov){ rr->main_store.tbl, rr->pm_hdr0, hlen };
		iov[b++] = (struct procmem_iov){ rr->main_store.at, rr->pm_ent0, plen };
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
	if (ptags) {
		iov[niov++] = (struct procmem_iov){ rr->main_store.tbl, rr->pm_hdr, hlen };
		iov[niov++] = (struct procmem_iov){ rr->main_store.at, rr->pm_ent, plen };
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
	rr->pm_ok = rr->pm_torn = 0;
	if (ptags) {
		/* not read whole, changed meanwhile, or moved: not known for these frames */
		rr->pm_torn = done != niov || memcmp(rr->pm_hdr0, rr->pm_hdr, hlen) ||
			      memcmp(rr->pm_ent0, rr->pm_ent, plen) ||
			      rbr_storage_check(rr, &rr->main_store, rr->pm_hdr, rr->pm_ent,
						rr->pm_val);
		rr->pm_ok = !rr->pm_torn;
	}
	if (tags && done == niov && get_u64(hdr, L->ec.local_storage) == g->store.tbl) {
		if (memcmp(rr->ec_hdr0, rr->ec_hdr, hlen) || memcmp(rr->ec_ent0, rr->ec_ent, elen))
			rr->ec_val_torn = 1;
		else
			rr->ec_val_ok = !rbr_storage_check(rr, &g->store, rr->ec_hdr, rr->ec_ent,
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
	struct ecguess *g = &rr->guess[rbr_slot(ec, GUESS_SLOTS)];
	unsigned char hdr[256];
	enum perr err;

	if (L->ec.size > sizeof(hdr))
		return PERR_UNSUPPORTED;
	rr->ec_storage = 0;
	rr->ec_val_ok = 0;
	rr->ec_val_torn = 0;
	rr->pm_ok = rr->pm_torn = 0;
	rr->ec_store = NULL;
	if (g->ec != ec)
		g->store.tbl = g->store.n = 0;
	if (!(g->ec == ec && rbr_frames_guessed(rr, g, hdr, fr))) {
		if ((err = frames_probe(rr, ec, g, fr)) || !fr->n || fr->truncated)
			return err;	/* idle, or too deep to read twice: take the plain read */
		if (!rbr_frames_guessed(rr, g, hdr, fr))
			return PERR_CORRUPT;
	}
	if (L->ec.local_storage + 8 <= L->ec.size)
		rr->ec_storage = get_u64(hdr, L->ec.local_storage);
	if (rr->tag_sets && rbr_is_obj(rr->ec_storage) && !rr->ec_val_ok) {
		uint64_t val[TAG_VARS];

		/*
		 * The fiber's variables were not in that read (a table new to
		 * us, or moved): read apart, they would be of another moment
		 * than the frames, a span later at times.  Learn where they
		 * are, and read the frames again, with them.
		 */
		rbr_storage_get(rr, rr->ec_storage, &g->store, val);
		if (g->store.n && !rbr_frames_guessed(rr, g, hdr, fr))
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
 * the rbr_slot while its caller ran on: then the caller is on its loop
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
 * rbr_slot: by this call, by an earlier call of the same code, or by other
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
	return rbr_iseq_line(q, pos ? pos - 1 : 0);
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
enum perr rbr_walk(struct rbreader *rr, uint64_t ec, struct stack *st, int strict)
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

		if (!rbr_is_obj(ep) || rd_u64(rr, ep, &magic))
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
			meaddr = rbr_frame_method_entry(rr, ep);
			me = meaddr ? rbr_me_get(rr, meaddr, &fresh) : NULL;
			if (!me || !me->cfunc)
				continue;
			if (!fresh)
				rbr_check_add(rr, 1, me);
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
		q = rbr_iseq_get(rr, iseq, &fresh);
		if (!q) {
			rr->stats.bad_frames++;
			return PERR_CORRUPT;
		}
		if (!fresh)
			rbr_check_add(rr, 0, q);
		callee_q = q;
		/*
		 * Ruby 3.4 shows a rescue or ensure clause's frame as the
		 * code it belongs to and hides the next outer Ruby frame, that
		 * code's own (vm_backtrace.c: is_rescue_or_ensure_frame());
		 * older Rubies show both ("rescue in f", "f").  Shown the 3.4
		 * way.
		 */
		if (skip) {
			skip = rbr_iseq_is_clause(q);
			continue;
		}
		skip = rbr_iseq_is_clause(q);
		named = rbr_iseq_named_by(rr, q);
		meaddr = rbr_frame_method_entry(rr, ep);
		if (meaddr) {
			me = rbr_me_get(rr, meaddr, &fresh);
			if (me && !fresh)
				rbr_check_add(rr, 1, me);
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
		sf->name = rbr_iseq_name(named, me);
		sf->file = q->path;
		/*
		 * The innermost frame running YJIT's code (its jit_return set:
		 * YJIT writes it on every frame it pushes or enters, the
		 * interpreter clears it) has no line pyrospy can know: YJIT
		 * saves a frame's pc only where its code leaves machine code (a
		 * call, an allocation, a side exit: jit_save_pc() in
		 * yjit/src/codegen.rs), so the pc there is the last one saved,
		 * by this frame or by an earlier one in its rbr_slot, not where it
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
			sf->line = rbr_iseq_line(q, (pc - q->encoded) / 8 ? (pc - q->encoded) / 8 - 1 : 0);
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
