/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "python/pyreader_impl.h"

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
static char state_comm(struct pyreader *pr, pid_t tid)
{
	char state = taskstat_state_comm(&pr->ts, tid, pr->comm, &pr->comm_nc);

	pr->comm_tid = state && pr->comm_nc != SIZE_MAX ? tid : 0;
	return state;
}

static int thread_state(struct pyreader *pr, uint64_t head, struct stack *st)
{
	char state = st->tid > 0 ? state_comm(pr, st->tid) : 0;

	if (!state && (st->tid <= 0 || is_task(pr, st->tid) == 0)) {
		if (pr->lay.tstate.native_thread_id != PYVM_NONE) {
			if (pr->pthread_tid_off < 0)
				pthread_discover(pr, head);
			st->tid = taskstat_host_tid(&pr->ts, pthread_tid(pr, st->thread_id));
			state = st->tid > 0 ? state_comm(pr, st->tid) : 0;
		}
		if (!state && pr->pthread_tid_off >= 0 && (st->tid <= 0 || is_task(pr, st->tid) == 0))
			return 1;
	}
	st->idle = state ? state != 'R' : -1;
	return 0;
}

/*
 * dump --locals: each shown frame's locals, from the frames the pyr_walk
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
 * flag was set before the pyr_walk (was) and still is after it, so that the
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
 * --async: the chain of the task the thread was running before the pyr_walk
 * (task, 0 for none; n frames in pr->chain, read then too), as "<task>
 * NAME" frames right over the task's own coroutine frame (coro_frame),
 * the outermost frame the task runs.  1: after the pyr_walk the thread's
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
	pr->codever_gen = 1;	/* a code object's ver_gen 0: never proven */
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
	/*
	 * 3.12's code counter is a global of its own (pyvm.h, func_version;
	 * 3.13+ keep it in the interpreter's state), a local symbol: only
	 * in a build that keeps its symbol table (pyenv's, not Debian's)
	 */
	if (pr->lay.minor == 12 && !pr->lay.free_threaded &&
	    (target_symbol(t, "_Py_next_func_version", &pr->codever_sym, &tls) || tls))
		pr->codever_sym = 0;
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
	pyr_cache_clear(pr);
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
	for (size_t i = 0; pr->kept && i < KEPT; i++)
		free(pr->kept[i].frames);
	free(pr->kept);
	free(pr->later);
	free(pr->tlist);
	free(pr->tlist_new);
	free(pr->tbuf);
	free(pr->tiov);
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

/*
 * Threads that did not run since their last read keep their stack: a
 * waiting thread of a thousand costs one pread() a tick (taskstat_run()),
 * not its frames' reads and their checks.  The proof is the kernel's, not
 * the frames': a thread that woke, ran and went back to waiting at the
 * same depth in another function has the same frame pointer, and a run
 * count that moved.  Not with --async or --locals (what they show is
 * read apart), and never for the thread holding the GIL.
 */
static struct pykept *kept_slot(struct pyreader *pr, uint64_t tstate, const uint64_t ident[2],
				pid_t tid)
{
	size_t h = (size_t)((tstate >> 4) * 0x9E3779B97F4A7C15ull >> 40) & (KEPT - 1);
	struct pykept *free_slot = NULL;

	if (!pr->opts.reuse || pr->aio || pr->flocals || tid <= 0)
		return NULL;
	if (!pr->kept)
		pr->kept = xcalloc(KEPT, sizeof(*pr->kept));
	for (unsigned int i = 0; i < KEPT_PROBE; i++) {
		struct pykept *k = &pr->kept[(h + i) & (KEPT - 1)];

		if (k->tstate == tstate) {
			if (k->ident[0] != ident[0] || k->ident[1] != ident[1] || k->tid != tid) {
				k->state = 0;	/* another thread's state, made at its address */
				k->has_run = k->walked = 0;
				k->ident[0] = ident[0];
				k->ident[1] = ident[1];
				k->tid = tid;
			}
			k->seen = pr->stats.samples;
			return k;
		}
		/* a thread state not met last sample nor this one is gone */
		if (!free_slot && (!k->tstate || k->seen + 1 < pr->stats.samples))
			free_slot = k;
	}
	if (!free_slot)
		return NULL;
	free_slot->tstate = tstate;
	free_slot->ident[0] = ident[0];
	free_slot->ident[1] = ident[1];
	free_slot->tid = tid;
	free_slot->seen = pr->stats.samples;
	free_slot->state = 0;
	free_slot->has_run = free_slot->walked = 0;
	return free_slot;
}

/* Is k's stack (with --idle; without, its being idle) to be shown again, if it did not run? */
static int kept_usable(const struct pyreader *pr, const struct pykept *k, const struct stack *st)
{
	if (!k || !k->has_run || !k->state || k->state == 'R' || st->holds_gil == 1)
		return 0;
	return !pr->opts.idle || (k->walked && k->gen == pr->anchor_gen);
}

static void kept_store(struct pyreader *pr, struct pykept *k, const struct stack *st)
{
	if (k->cap < st->depth) {
		size_t cap = st->depth < 16 ? 16 : st->depth;

		pr->kept_bytes -= k->cap * sizeof(*k->frames);
		free(k->frames);
		k->frames = NULL;
		k->cap = 0;
		if (pr->kept_bytes + cap * sizeof(*k->frames) > KEPT_BYTES)
			return;		/* read afresh each tick, as without */
		k->frames = xcalloc(cap, sizeof(*k->frames));
		k->cap = (unsigned int)cap;
		pr->kept_bytes += cap * sizeof(*k->frames);
	}
	memcpy(k->frames, st->frame, st->depth * sizeof(*k->frames));
	k->depth = st->depth;
	k->truncated = st->truncated;
	k->gen = pr->anchor_gen;
	k->walked = 1;
	k->serial = stack_kept_serial();
}

/*
 * The last sample's thread states of interp, read in one scatter read:
 * a thousand threads' states are a thousand pages, which the windows of
 * rmem (RMEM_WINDOWS) cannot all hold.  Each is used only where the list
 * still has it (tlist_ts()).
 */
static void tlist_read(struct pyreader *pr, uint64_t interp)
{
	size_t size = pr->lay.tstate.size, n = pr->tlist_n;
	struct procmem_iov *iov;

	pr->tlist_ok = 0;
	pr->tlist_new_n = 0;
	if (pr->tlist_interp != interp || n < RMEM_WINDOWS / 2)
		return;
	if (pr->tbuf_cap < n * size) {
		free(pr->tbuf);
		free(pr->tiov);
		pr->tbuf_cap = n * size;
		pr->tbuf = xmalloc(pr->tbuf_cap);
		pr->tiov = xcalloc(n, sizeof(*pr->tiov));
	}
	iov = pr->tiov;
	/* up to the first the maps do not have now, as rmem_read() checks */
	for (size_t i = 0; i < n; i++) {
		if (!rmem_mapped(&pr->mem, pr->tlist[i], size)) {
			n = i;
			break;
		}
		iov[i] = (struct procmem_iov){ pr->tlist[i], pr->tbuf + i * size, size };
	}
	if (n)
		procmem_readv(&pr->t->mem, iov, n, &pr->tlist_ok);
}

/* Thread state tstate, the i-th of the list, into ts. */
static enum perr tlist_ts(struct pyreader *pr, uint64_t interp, size_t i, uint64_t tstate,
			  unsigned char *ts)
{
	size_t size = pr->lay.tstate.size;
	enum perr err;

	if (i < pr->tlist_ok && pr->tlist[i] == tstate)
		memcpy(ts, pr->tbuf + i * size, size);
	else if ((err = rd(pr, tstate, ts, size)))
		return err;
	if (!pr->tlist_new)
		pr->tlist_new = xcalloc(THREAD_MAX, sizeof(*pr->tlist_new));
	if (!pr->tlist_new_n)
		pr->tlist_interp = interp;
	if (pr->tlist_new_n < THREAD_MAX)
		pr->tlist_new[pr->tlist_new_n++] = tstate;
	return PERR_OK;
}

/* This sample's list is the next one's. */
static void tlist_next(struct pyreader *pr)
{
	uint64_t *t = pr->tlist;

	pr->tlist = pr->tlist_new;
	pr->tlist_n = pr->tlist_new_n;
	pr->tlist_new = t;
	pr->tlist_new_n = 0;
	pr->tlist_ok = 0;
}

/* What a sample's threads of one interpreter share. */
struct pyinterp {
	uint64_t interp, interp_id, head, holder, gc_at;
	int32_t collecting;
};

/*
 * Read one thread's stack (its thread state in ts) and hand it to cb.
 * k: its kept slot, or NULL.
 */
static enum perr thread_read(struct pyreader *pr, const struct pyinterp *pi, uint64_t tstate,
			     unsigned char *ts, struct stack *st, struct pykept *k, reader_cb cb,
			     void *arg)
{
	const struct pyvm_layout *L = &pr->lay;
	uint64_t task = 0, coro_frame = 0;
	unsigned int nchain = 0;
	struct taskstat_run run;
	int tries, loop = 0, has_run = 0, tagged = 0;
	enum perr err;

	/* first the proof, then the state, then the frames: see taskstat_run() */
	if (k && k->state && k->state != 'R' && st->holds_gil != 1)
		has_run = !taskstat_run(&pr->ts, st->tid, &run);
	if (thread_state(pr, pi->head, st))
		return PERR_OK;		/* a thread of the parent: not this process's */
	if (k) {
		k->state = st->idle == 1 ? 'S' : st->idle == 0 ? 'R' : 0;
		k->has_run = has_run;
		k->walked = 0;
		if (has_run)
			k->run = run;
	}
	if ((pr->opts.gil_only && st->holds_gil != 1) || (!pr->opts.idle && st->idle == 1))
		return PERR_OK;
	if (pr->aio)
		task = pyasync_running(pr->aio, tstate, st->thread_id, 0, &loop, pr->stats.samples);
	if (task && pyasync_chain(pr->aio, task, pr->chain, PYASYNC_DEPTH, &nchain, &coro_frame))
		nchain = 0;
	for (tries = 0; tries < WALK_TRIES; tries++) {
		if (tries) {
			/*
			 * Frames moved under the pyr_walk, or its tags were
			 * not of its moment: read again where it went, at
			 * one instant (one scatter read), the thread state
			 * with it.
			 */
			rmem_begin(&pr->mem, 1);
			pr->stats.retries++;
			if (rd(pr, tstate, ts, L->tstate.size) ||
			    get_u64(ts, L->tstate.interp) != pi->interp) {
				/* after a pyr_walk read again for its tags too:
				 * not shown, with tags of no moment */
				err = PERR_CORRUPT;
				break;
			}
		}
		err = pyr_walk(pr, tstate, ts, st);
		/* no Python frames: nothing to show, no tags */
		if (perr_is_fatal(err) ||
		    (!err && (!st->depth ||
			      (tagged = pyr_tags_verified(pr, pi->interp, st,
							  tries + 1 < WALK_TRIES)) <= 0)))
			break;
	}
	if (err && perr_is_fatal(err))
		return err;
	if (err || tagged < 0) {
		pr->stats.dropped++;
		return PERR_OK;
	}
	if (!st->depth)
		return PERR_OK;
	pr->stats.stacks++;
	/* the kernel's name as of the state's read, when that was this thread's */
	st->thread_name = pythread_name(&pr->names, pi->interp, pi->interp_id, st->thread_id,
					st->tid, pr->comm_tid == st->tid ? pr->comm : NULL,
					pr->comm_nc, pr->stats.samples);
	if (pr->flocals)
		locals_fill(pr, st);
	if ((pr->aio && task_frames(pr, tstate, task, nchain, coro_frame, loop, st)) ||
	    gc_leaf(pr, pi->gc_at, pi->collecting, st)) {
		pr->stats.stacks--;
		pr->stats.dropped++;
		return PERR_OK;
	}
	if (k && has_run && st->idle == 1) {
		kept_store(pr, k, st);
		if (k->walked)
			st->kept = k->serial;
	}
	cb(arg, st);
	return PERR_OK;
}

/* A thread state's header fields into st; 0 if it is not of pi's interpreter. */
static int thread_head(struct pyreader *pr, const struct pyinterp *pi, uint64_t tstate,
		       const unsigned char *ts, struct stack *st, uint64_t ident[2])
{
	const struct pyvm_layout *L = &pr->lay;
	pid_t tid;

	if (get_u64(ts, L->tstate.interp) != pi->interp)
		return 0;
	memset(st, 0, offsetof(struct stack, frame));
	st->pid = pr->t->pid;
	st->thread_id = get_u64(ts, L->tstate.thread_id);
	st->interp = pi->interp_id;
	st->tags = pyr_tags_of(pr, st->thread_id);
	if (L->tstate.native_thread_id != PYVM_NONE)
		tid = (pid_t)get_u64(ts, L->tstate.native_thread_id);
	else
		tid = pthread_tid(pr, st->thread_id);
	st->tid = taskstat_host_tid(&pr->ts, tid);
	st->holds_gil = pi->holder ? pi->holder == tstate : -1;
	ident[0] = st->thread_id;
	ident[1] = (uint64_t)tid;
	return 1;
}

/*
 * The threads put off: the tags as they are now, then each one's proof.
 * Not run since its stack was read: it is still its stack, and so at the
 * instant of the tags' read, which came after.  Run: read it now.
 */
static enum perr threads_later(struct pyreader *pr, const struct pyinterp *pi,
			       unsigned char *ts, struct stack *st, reader_cb cb, void *arg)
{
	const struct pyvm_layout *L = &pr->lay;
	struct taskstat_run now;
	enum perr err;
	int tags = 0;

	for (size_t i = 0; i < pr->nlater; i++) {
		struct pykept *k = pr->later[i];
		uint64_t ident[2];

		if (pr->opts.idle && !tags) {
			if (pr->tag_dict)
				pyr_tags_now(pr, pi->interp);
			tags = 1;
		}
		if (!taskstat_run(&pr->ts, k->tid, &now) && !taskstat_ran(&k->run, &now)) {
			if (!pr->opts.idle)
				continue;	/* asleep since it was seen asleep */
			memset(st, 0, offsetof(struct stack, frame));
			st->pid = pr->t->pid;
			st->thread_id = k->ident[0];
			st->interp = pi->interp_id;
			st->tid = k->tid;
			st->holds_gil = pi->holder ? 0 : -1;
			st->idle = 1;
			st->tags = pyr_tags_of(pr, st->thread_id);
			if (pr->tag_dict && st->tags == tags_unknown)
				pr->stats.tags_dropped++;	/* torn, as pyr_tags_verified() counts */
			st->depth = k->depth;
			st->truncated = k->truncated;
			st->kept = k->serial;
			memcpy(st->frame, k->frames, k->depth * sizeof(st->frame[0]));
			st->thread_name = pythread_name(&pr->names, pi->interp, pi->interp_id,
							st->thread_id, st->tid, NULL, 0,
							pr->stats.samples);
			pr->stats.stacks++;
			pr->stats.reused++;
			cb(arg, st);
			continue;
		}
		/* it ran, or cannot be told: read it as it is now */
		rmem_begin(&pr->mem, 1);
		if ((err = rd(pr, k->tstate, ts, L->tstate.size))) {
			if (perr_is_fatal(err))
				return err;
			pr->stats.dropped++;
			continue;
		}
		if (!thread_head(pr, pi, k->tstate, ts, st, ident) || ident[0] != k->ident[0] ||
		    ident[1] != k->ident[1])
			continue;	/* ended meanwhile: not a thread of this instant */
		if ((err = thread_read(pr, pi, k->tstate, ts, st, k, cb, arg)))
			return err;
	}
	pr->nlater = 0;
	return PERR_OK;
}

enum perr pyreader_sample(struct pyreader *pr, reader_cb cb, void *arg)
{
	const struct pyvm_layout *L = &pr->lay;
	static struct stack st;		/* large: keep it off the stack */
	unsigned char ts[4096];
	uint64_t interp;
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
		pyr_cache_clear(pr);
	if (L->tstate.size > sizeof(ts))
		return PERR_UNSUPPORTED;
	err = rd_u64(pr, pr->runtime + L->runtime.interpreters_head, &interp);
	if (err)
		return perr_is_fatal(err) ? err : PERR_OK;
	if (!interp)
		return PERR_STARTUP;
	for (; interp && ninterp < INTERP_MAX; ninterp++) {
		unsigned char gilp[8] = { 0 };
		struct pyinterp pi = { .interp = interp };
		uint64_t next, tstate;
		unsigned int nthreads = 0;

		pi.gc_at = gc_flag_at(pr, interp);
		if ((err = rd_u64(pr, interp + L->interp.next, &next)) ||
		    (err = rd_u64(pr, interp + L->interp.threads_head, &pi.head)))
			return perr_is_fatal(err) ? err : PERR_OK;
		/*
		 * The main interpreter's id is 0: read only when there are
		 * subinterpreters (3.12+), whose threads' names are their own
		 * and whose stacks say which interpreter they are of.
		 */
		if ((next || ninterp) && L->interp.id != PYVM_NONE &&
		    (err = rd_u64(pr, interp + L->interp.id, &pi.interp_id)))
			return perr_is_fatal(err) ? err : PERR_OK;
		/*
		 * The code counter proves a cached code object unchanged for
		 * one interpreter only (pyr_verify()): with another, what was
		 * proven by it is forgotten.
		 */
		if (!ninterp && !next && (L->interp.func_version || pr->codever_sym)) {
			pr->codever_at = L->interp.func_version ? interp + L->interp.func_version :
								  pr->codever_sym;
		} else {
			pr->codever_at = 0;
			pr->codever_gen++;
		}
		if (L->interp.ceval_gil != PYVM_NONE)
			rd(pr, interp + L->interp.ceval_gil, gilp, sizeof(gilp));
		pi.holder = gil_holder(pr, gilp);
		if (pi.gc_at && rd(pr, pi.gc_at, &pi.collecting, sizeof(pi.collecting)))
			pi.gc_at = 0;
		/* read with each thread's frames (3.11+), or around its pyr_walk */
		pr->ntagent = 0;
		pr->tag_process = 0;
		pr->tags_torn = 0;
		if (!pr->tag_dict)
			pyr_tags_search(pr, interp);
		if (L->tstate.native_thread_id == PYVM_NONE && pr->pthread_tid_off < 0)
			pthread_discover(pr, pi.head);
		pr->nlater = 0;
		/* the first interpreter's: the one with threads, bar embedding apps */
		if (!ninterp)
			tlist_read(pr, interp);
		for (tstate = pi.head; tstate && nthreads < THREAD_MAX; nthreads++) {
			uint64_t tnext, ident[2];
			struct pykept *k;

			if ((err = !ninterp ? tlist_ts(pr, interp, nthreads, tstate, ts) :
					      rd(pr, tstate, ts, L->tstate.size))) {
				if (perr_is_fatal(err))
					return err;
				pr->stats.dropped++;
				break;
			}
			if (!thread_head(pr, &pi, tstate, ts, &st, ident)) {
				pr->stats.dropped++;	/* torn: the list changed under us */
				break;
			}
			tnext = get_u64(ts, L->tstate.next);
			if (pr->opts.gil_only && st.holds_gil != 1) {
				tstate = tnext;
				continue;
			}
			k = kept_slot(pr, tstate, ident, st.tid);
			if (kept_usable(pr, k, &st)) {
				if (!pr->later)
					pr->later = xcalloc(THREAD_MAX, sizeof(*pr->later));
				pr->later[pr->nlater++] = k;	/* after the others */
			} else if ((err = thread_read(pr, &pi, tstate, ts, &st, k, cb, arg))) {
				return err;
			}
			tstate = tnext;
		}
		if (!ninterp)
			tlist_next(pr);
		if (pr->nlater && (err = threads_later(pr, &pi, ts, &st, cb, arg)))
			return err;
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
	enum perr err = pyr_dict_read(pr, dict, max, &e, &got);

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
		pyr_cache_clear(pr);
	c = pyr_code_get(pr, code);
	if (!c)
		return PERR_CORRUPT;
	*name = c->name;
	*file = c->file;
	*line = pyr_code_line(pr, c, lasti, instr);
	return PERR_OK;
}
