/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "python/pyreader_impl.h"

/*
 * A thread's frames: the walk, and the proof that what was read is one
 * stack the thread had (verify, the 3.15 anchor) (pyreader_impl.h).
 */

/*
 * Make the thread's data stack chunk (3.11+) one window: its frames are
 * contiguous there, so the whole pyr_walk usually costs this single read.
 */
void pyr_chunk_load(struct pyreader *pr, const unsigned char *ts)
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
		 * frames: the thread's tags as of its frames (pyr_tags_verified())
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
		return;		/* deeper than shown: the pyr_walk found the root */
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
						     fr[L->frame.is_entry]), 0 };
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
int pyr_caller_calls(const struct pyvm_layout *L, const struct pyvisit *v,
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
 * A pyr_walk reads frames one after the other, from windows fetched at the
 * start of the sample or later, while the program goes on calling and
 * returning: the frames it put together may never have been on the stack
 * at once (a caller read while it was still the innermost frame, on a line
 * before its call; a frame freed and reused).  So every frame the pyr_walk
 * used is read again, fresh, in one scatter read.  A frame's line changes
 * only while it is the innermost one, and it is not while its callee
 * lives: when the innermost frame the pyr_walk read is still there (same code,
 * same caller, running) and every other frame is as the pyr_walk read it,
 * each caller kept its line from the moment the innermost frame was read
 * to now, so the stack shown is the one the thread had at that moment.
 * Otherwise the pyr_walk is torn.  flen bytes of each frame are read again.
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
 * takes it: the pyr_walk then read the other thread's stack (a sample of one
 * thread in a unit of the other, with its own tags: CI, 3.9).  Its
 * running frames from the innermost one read to the thread's outermost
 * one, read again as one (pyr_verify()), are its own when its frame pointer
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
 * <= 3.10: the tag table (where it was last time) into pyr_verify()'s read,
 * right after the innermost frame: the thread's tags as of that frame
 * (pyr_tags_verified()).  Read last, after the outer frames, it was of a
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
	/* pyr_snap_read() answers from these, not from tag_keys_len, which may grow since */
	pr->snap_dict = pr->tag_dict;
	pr->snap_keys = pr->tag_keys;
	pr->snap_keys_len = pr->tag_keys_len;
	pr->snap_ok = 1;
	return 2;
}

/* The two ranges of visit i's code object and its name, into iov. */
static size_t code_iov(struct pyreader *pr, size_t i, struct procmem_iov *iov)
{
	const struct pycode *c = pr->visit[i].c;

	iov[0] = (struct procmem_iov){ c->addr, pr->cbuf + i * pr->lay.code.size, pr->lay.code.size };
	iov[1] = (struct procmem_iov){ c->print[1], pr->nbuf + i * NAMEOBJ, c->namelen };
	return 2;
}

/*
 * The code objects pyr_verify() took as proven, when the counter had
 * moved after all: read now, after it, and compared as the others.
 */
static enum perr code_again(struct pyreader *pr)
{
	size_t n = 0;

	for (size_t i = 0; i < pr->nvisit; i++)
		if (pr->visit[i].proven) {
			n += code_iov(pr, i, pr->viov + n);
			pr->visit[i].proven = 0;
		}
	return procmem_readv(&pr->t->mem, pr->viov, n, NULL);
}

/* Has the walk a code object to check (any but the anchor's live one)? */
static int any_code(const struct pyreader *pr, size_t live)
{
	for (size_t i = 0; i < pr->nvisit; i++)
		if (pr->visit[i].c && i != live)
			return 1;
	return 0;
}

enum perr pyr_verify(struct pyreader *pr, size_t flen, uint64_t tstate, uint64_t top_at)
{
	const struct pyvm_layout *L = &pr->lay;
	uint64_t now_top = 0, top = pr->nvisit ? pr->visit[0].addr : 0;
	size_t n = 0, cap = pr->visit_cap ? pr->visit_cap : 1, clen = L->code.size, used = 0, live;
	int ranges = L->frames != PYVM_FRAMEOBJ && (L->minor >= 14 || L->call_ops);
	int cv = pr->codever_at && L->frames != PYVM_FRAMEOBJ;
	uint32_t cv_now = 0;
	size_t nproven = 0;
	uint64_t span = L->call_ops ? VERIFY_SPAN_CALLS : VERIFY_SPAN;
	enum perr err;

	if (cap > pr->vcap) {	/* grown with the pyr_walk's frames, not every sample */
		pr->vbuf = xreallocarray(pr->vbuf, cap, flen + VERIFY_GAP);
		pr->voff = xreallocarray(pr->voff, cap, sizeof(*pr->voff));
		pr->cbuf = xreallocarray(pr->cbuf, cap, clen);
		pr->nbuf = xreallocarray(pr->nbuf, cap, NAMEOBJ);
		pr->viov = xreallocarray(pr->viov, 3 * cap + 5, sizeof(*pr->viov));
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
	 * A pyr_walk that stopped at an anchor: the pair first, in one range with
	 * the frame pointer next to it.  Still as the pyr_walk found it, it says
	 * the frame the pyr_walk stopped at (stop, its last) has not returned
	 * since the anchor was written, up to this read, which comes after
	 * the pyr_walk's: the frames below it held then.  The frames above it
	 * are checked below as any pyr_walk's.
	 */
	if (pr->anchor_check == 1)
		pr->viov[n++] = (struct procmem_iov){ tstate + L->tstate.last_profiled,
						      pr->anchor_got, sizeof(pr->anchor_got) };
	/*
	 * The frames innermost first, as the pyr_walk read them, the innermost
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
	 * call.  pyr_caller_calls() rules such a caller out however the reads
	 * are ordered, so 3.11-3.13 read in ranges too, and longer ones: up
	 * to 16 pages (VERIFY_SPAN_CALLS, what the kernel pins at once), so
	 * that 50 frames are one range, not two.
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
		       hi - pr->visit[j].addr <= span)
			lo = pr->visit[j++].addr;
		pr->viov[n++] = (struct procmem_iov){ lo, pr->vbuf + used, (size_t)(hi - lo) };
		for (size_t k = i; k < j; k++)
			pr->voff[k] = used + (size_t)(pr->visit[k].addr - lo);
		used += (size_t)(hi - lo);
		if (!i)
			n += snap_iov(pr, pr->viov + n);
		i = j;
	}
	/*
	 * 3.12+, one interpreter: the code counter, then each code object
	 * not read since it last changed.  Every new code object takes the
	 * counter's value and counts on (init_code(), Objects/codeobject.c):
	 * a cached one found as it was after the counter read c, with the
	 * counter still c after the frames were read again here, is still
	 * that object (another one in its place would have been made in
	 * between), and a live frame names it.  Those are not read again;
	 * when the counter moved, they are, after it (code_again()).
	 */
	cv = cv && any_code(pr, live);
	if (cv)
		pr->viov[n++] = (struct procmem_iov){ pr->codever_at, &cv_now, sizeof(cv_now) };
	/* each code object once in a row: a recursion repeats it */
	for (size_t i = 0; i < pr->nvisit; i++) {
		struct pyvisit *v = &pr->visit[i];

		v->proven = 0;
		if (v->c && i != live && (!i || pr->visit[i - 1].c != v->c)) {
			if (cv && pr->codever_last && v->c->ver_gen == pr->codever_gen &&
			    v->c->ver == pr->codever_last) {
				v->proven = 1;
				nproven++;
				continue;
			}
			n += code_iov(pr, i, pr->viov + n);
		}
	}
	if (pr->anchor_check == 2)
		pr->viov[n++] = (struct procmem_iov){ tstate + L->tstate.last_profiled,
						      pr->anchor_got, sizeof(pr->anchor_got) };
	if (n && (err = procmem_readv(&pr->t->mem, pr->viov, n, NULL))) {
		pr->snap_ok = 0;
		return perr_is_fatal(err) ? err : PERR_CORRUPT;
	}
	if (cv) {
		int moved = cv_now != pr->codever_last;

		pr->codever_last = cv_now;
		if (moved && nproven && (err = code_again(pr)))
			return perr_is_fatal(err) ? err : PERR_CORRUPT;
	}
	/* the anchor as when the pyr_walk began: no frame below it has changed since */
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
		if (k && !pyr_caller_calls(L, v, &pr->visit[k - 1])) {
			pr->stats.bad_frames++;
			return PERR_CORRUPT;	/* a caller not at a call: torn */
		}
		if (!v->c || k == live || (k && pr->visit[k - 1].c == v->c) || v->proven)
			continue;
		pyr_code_print(L, pr->cbuf + k * clen, print);
		if (memcmp(print, v->c->print, sizeof(print)) ||
		    !same_name(L, v->c->nameobj, pr->nbuf + k * NAMEOBJ)) {
			/* another code object where a cached one was: forget them all */
			pr->stats.cache_stale++;
			pyr_cache_clear(pr);
			return PERR_CORRUPT;
		}
	}
	if (top_at && L->frames == PYVM_FRAMEOBJ) {
		pr->top_same = top && now_top == top;
		return !top || frames_owned(pr, tstate, top, now_top) ? PERR_OK : PERR_CORRUPT;
	}
	if (top_at && now_top < top && top - now_top < CHUNK_MAX)
		return PERR_CORRUPT;
	/* read or proven after the counter read cv_now (0: it counts no more) */
	for (size_t k = 0; cv && k < pr->nvisit; k++) {
		struct pyvisit *v = &pr->visit[k];

		if (v->c && k != live && (!k || pr->visit[k - 1].c != v->c)) {
			v->c->ver = cv_now;
			v->c->ver_gen = cv_now ? pr->codever_gen : 0;
		}
	}
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
 * its callee lives.  A pyr_walk then stops at that frame and takes the ones
 * below it from the anchor, and pyr_verify() reads again only the frames it
 * walked, with the pair (still as the pyr_walk found it, or the stack is
 * read again).
 *
 * The anchor is written after a whole pyr_walk has been verified: the
 * innermost of the thread's own frames goes into last_profiled_frame (see
 * anchor_match() for why not a generator's or an entry frame), and every
 * frame is read again with the pair (anchor_register()).  A frame that
 * returned before the write lands is not counted by the interpreter; it
 * is caught there, as pyr_verify() catches any frame that moved.  Another
 * profiler writing the word (CPython's own) makes it name a frame of its
 * choosing: not the one expected, so the stack is read whole.
 */
static int anchoring(const struct pyreader *pr)
{
	/* not with --locals or --async: they look for frames in the pyr_walk's */
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
 * *stop, the frame the pyr_walk stops at (the anchor's frame or its k-th
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
 * The anchor's frames from below[from] on onto st, if the pyr_walk's frame
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

/*
 * After a verified pyr_walk: write its innermost frame as the thread's
 * anchor, read every frame again with the pair (the frame must still be
 * there, as walked, and the word must name it), and keep what lies below.
 * A pyr_walk that stopped at an anchor has its frames below it added first.
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
	if (pyr_verify(pr, flen, tstate, top_at)) {
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
 * a stack is shown only when the pyr_walk reached the thread's root (a frame
 * with no caller), through frames that each held together.  Past
 * STACK_MAX_DEPTH frames are walked, not kept, to find that root.
 */
enum perr pyr_walk(struct pyreader *pr, uint64_t tstate, const unsigned char *ts,
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
		pyr_chunk_load(pr, ts);
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
			an = NULL;	/* not what it was: pyr_walk on to the root */
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
		c = pyr_code_get(pr, code);
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
		if (pyr_tlbc_base(pr, c, fr, instr, &base)) {
			pr->stats.bad_frames++;
			return PERR_CORRUPT;
		}
		/* the same instruction in the code object's own copy */
		instr = instr - base + c->code_start;
		if (L->frames != PYVM_FRAMEOBJ && pyr_frame_incomplete(L, c, fr, instr)) {
			if (pr->nvisit && pr->visit[pr->nvisit - 1].addr == frame_addr)
				pr->visit[pr->nvisit - 1].hidden = 1;
			continue;
		}
		st->frame[st->depth].name = c->name;
		st->frame[st->depth].file = c->file;
		st->frame[st->depth].line = pyr_code_line(pr, c, lasti, instr);
		if (pr->nvisit && pr->visit[pr->nvisit - 1].addr == frame_addr)
			pr->visit[pr->nvisit - 1].line = st->frame[st->depth].line;
		st->depth++;
	}
	pr->anchor_check = pr->anchored;
	err = pyr_verify(pr, flen, tstate, top_at);
	pr->anchor_check = 0;
	if (err)
		return err;
	if (pr->anchored)
		pr->stats.anchored++;
	if (pr->top_same && st->depth && pr->visit[0].c) {
		/* <= 3.10: the innermost line as of pyr_verify()'s read, the tags' */
		struct pycode *c = pr->visit[0].c;

		st->frame[0].line = pyr_code_line(pr, c, get_i32(pr->vbuf + pr->voff[0], L->frame.lasti),
					      0);
	}
	if (anchoring(pr) && !st->truncated && (!pr->anchored || pr->nvisit >= REANCHOR))
		anchor_register(pr, tstate, ts, flen, top_at);
	return PERR_OK;
}
