/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "ruby/rbreader_impl.h"

size_t rbr_slot(uint64_t addr, size_t cap)
{
	return (size_t)((addr >> 3) * 0x9E3779B97F4A7C15ull >> 40) & (cap - 1);
}

void *rbr_table_slot(void *base, size_t esize, size_t cap, uint64_t addr, int *found)
{
	size_t i = rbr_slot(addr, cap);

	for (size_t n = 0; n < cap; n++, i = (i + 1) & (cap - 1)) {
		uint64_t *key = (uint64_t *)((char *)base + i * esize);

		if (*key == addr || !*key) {
			*found = *key == addr;
			return key;
		}
	}
	return NULL;
}

/*
 * <= 3.0: the kernel tid from glibc's struct pthread, at an offset found
 * from every thread's struct (pthtid.h; see pyreader.c), or the one
 * thread's that pthtid_pick() knows anyway.
 */
static pid_t pthread_tid(struct rbreader *rr, uint64_t pthread)
{
	int32_t tid;

	if (!rbr_is_obj(pthread))
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

		if (!rbr_is_obj(node) || rd(rr, addr, th, L->thread.size))
			goto out;
		node = get_u64(th, L->thread.list_node);
		pthread = get_u64(th, L->thread.thread_id);
		if (rbr_is_obj(pthread) && !rd(rr, pthread, words[n], sizeof(words[n])) && !n++)
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
		if (!rbr_is_obj(nt) || rd(rr, nt + L->thread.nt_tid, &tid, sizeof(tid)))
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
	if (!rbr_is_obj(vm) || rd_u64(rr, vm + L->vm.main_thread, &main_thread))
		return PERR_CORRUPT;
	if (!main_thread)
		return PERR_STARTUP;
	if (L->vm.main_ractor != RUBYVM_NONE) {
		if (rd_u64(rr, vm + L->vm.main_ractor, &ractor) || !rbr_is_obj(ractor) ||
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

			if (last < 1000 || last > 50000000 || !rbr_is_obj(ids))
				continue;
			/* 4.0 keeps no str_sym table: one check fewer */
			if (L->symbols.str_sym != RUBYVM_NONE &&
			    !rbr_is_obj(get_u64(buf, (uint32_t)(off + L->symbols.str_sym))))
				continue;
			if (rbr_array_at(rr, ids, last / L->symbols.unit, &v) || !rbr_is_obj(v) ||
			    !rbr_array_at(rr, ids, last / L->symbols.unit + 2, &v))
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
	if (iseqs || mes)
		rr->kept_gen++;		/* the names kept stacks point at are freed */
	for (size_t i = 0; iseqs && i < ISEQ_CACHE; i++)
		rbr_iseq_release(&rr->iseqs[i]);
	for (size_t i = 0; mes && i < ME_CACHE; i++)
		rbr_me_release(&rr->mes[i]);
	if (iseqs)
		rr->niseqs = 0;
	if (mes)
		rr->nmes = 0;
}

/* Between samples: empty a cache that fills up (see rbr_table_slot()). */
static void caches_trim(struct rbreader *rr)
{
	caches_clear(rr, rr->niseqs >= ISEQ_CACHE * 3 / 4, rr->nmes >= ME_CACHE * 3 / 4);
}

/* vm_ptr: where the rb_vm_t pointer is, or NULL to find it in t's ELF */
static const char *locals_id_name(void *arg, uint64_t id)
{
	return rbr_id_name(arg, id);
}

static const char *locals_class_path(void *arg, uint64_t klass)
{
	return rbr_class_path(arg, klass);
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
	/* rbr_validate() compares these words of the first three; rbr_frames_guessed()
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
	rr->pm_ent = xmalloc(STORAGE_MAX * 24);
	rr->pm_ent0 = xmalloc(STORAGE_MAX * 24);
	rr->waiters = xcalloc(THREAD_MAX, sizeof(*rr->waiters));
	if (opts->reuse && !opts->locals) {
		rr->kept_cap = 64;
		rr->kept = xcalloc(rr->kept_cap, sizeof(*rr->kept));
		rr->defer = xcalloc(THREAD_MAX, sizeof(*rr->defer));
	}
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
	    rd_u64(rr, vm + L->vm.objspace, &rr->objspace) || !rbr_is_obj(rr->objspace))
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
	free(rr->pm_ent);
	free(rr->pm_ent0);
	rbr_tagsets_clear(rr);
	if (rr->flocals)
		rblocals_release(&rr->locals);
	free(rr->fep);
	free(rr->fq);
	free(rr->flocals);
	for (size_t i = 0; i < rr->nrtags; i++)
		free(rr->rtags[i]);
	free(rr->rtags);
	free(rr->waiters);
	for (size_t i = 0; i < rr->kept_cap; i++)
		free(rr->kept[i].frame);
	free(rr->kept);
	free(rr->defer);
	free(rr->pre);
	free(rr->pre_iov);
	free(rr->pre_ord);
	free(rr->pre_rank);
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
 * checked again by rbr_validate() when used, and a rbr_walk that finds anything
 * stale forgets all of it.
 */
static void objs_reset(struct rbreader *rr)
{
	memset(rr->objs, 0, OBJ_CACHE * sizeof(*rr->objs));
}

/*
 * dump --locals: each shown Ruby frame's locals, from the environment and
 * iseq the rbr_walk found it at.  Read after the rbr_walk: a value the program
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
		if (rr->nwaiters == THREAD_MAX || !rbr_is_obj(node) || node < L->thread.gvl_node)
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

/*
 * Reuse (issue 38): a thread that has not run since its stack was read
 * still has that stack, and proving it costs one read of its run counts
 * (taskstat_run()) where reading it again costs several.  Each thread's
 * last read is kept by its rb_thread_t, with its EC and tid to tell a new
 * thread at the same address: the counts read before its state, the
 * state, and, when that state was not 'R', the frames the walk after it
 * found.  The frames' names point into the iseq and method entry caches:
 * valid while kept_gen, bumped whenever an entry is freed, is the same.
 */

/* Thread th's slot, made if make and there is room; NULL if none. */
static struct rbkept *kept_get(struct rbreader *rr, uint64_t th, int make)
{
	struct rbkept *k;
	int found;

	k = rbr_table_slot(rr->kept, sizeof(*k), rr->kept_cap, th, &found);
	if (!k || found)
		return k;
	/* no growing during a sample: rr->defer points into the table */
	if (!make || 2 * (rr->nkept + 1) > rr->kept_cap)
		return NULL;
	memset(k, 0, sizeof(*k));
	k->th = th;
	rr->nkept++;
	return k;
}

/*
 * Where thread_tid() reads a thread's tid: at this offset in the struct
 * its rb_thread_t points at (its native thread, 3.3+; its pthread, <= 3.0
 * once the offset is known); -1 if it reads nothing.
 */
static int64_t tid_read_off(const struct rbreader *rr)
{
	const struct rubyvm_layout *L = rr->L;

	if (L->thread.tid != RUBYVM_NONE)
		return -1;
	if (L->thread.nt != RUBYVM_NONE)
		return L->thread.nt_tid;
	return rr->pthread_tid_off;
}

static int pre_cmp(const void *a, const void *b)
{
	const struct rbpre *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * At the start of a sample, after kept_sweep(): the structs of the
 * threads the last sample met, and their native threads' tids, in one
 * scatter read (IOV_MAX ranges a syscall), not one read or two each as
 * the list is walked.  Of one moment, as the windows rmem_begin() reads
 * again are.  Not for a few threads, whose structs those windows hold:
 * there it would be a read more.
 */
static void kept_prefetch(struct rbreader *rr)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t last = rr->stats.samples - 1;
	int64_t tid_off = tid_read_off(rr);
	size_t n = 0, niov = 0, done = 0;

	if (rr->kept_met < PREFETCH_MIN)
		return;
	for (size_t i = 0; i < rr->kept_cap; i++)
		n += rr->kept[i].th && rr->kept[i].seen == last;
	if (n > THREAD_MAX)
		n = THREAD_MAX;
	if (!n)
		return;
	if (n > rr->pre_cap) {
		free(rr->pre);
		free(rr->pre_iov);
		free(rr->pre_ord);
		free(rr->pre_rank);
		rr->pre = xreallocarray(NULL, n, L->thread.size);
		rr->pre_iov = xreallocarray(NULL, 6 * n, sizeof(*rr->pre_iov));
		rr->pre_ord = xreallocarray(NULL, 3 * n, sizeof(*rr->pre_ord));
		rr->pre_rank = xreallocarray(NULL, 3 * n, sizeof(*rr->pre_rank));
		rr->pre_cap = n;
	}
	n = 0;
	for (size_t i = 0; i < rr->kept_cap; i++) {
		struct rbkept *k = &rr->kept[i];

		if (!k->th || k->seen != last)
			continue;
		if (n == rr->pre_cap) {
			k->pre_niv = 0;	/* past THREAD_MAX: read as the list is walked */
			continue;
		}
		k->pre_i = (uint32_t)n;
		k->pre_iv = (uint32_t)niov;
		rr->pre_iov[niov++] = (struct procmem_iov){ k->th, rr->pre + n * L->thread.size,
							    L->thread.size };
		k->pre_tid = tid_off >= 0 && rbr_is_obj(k->tid_src);
		if (k->pre_tid)
			rr->pre_iov[niov++] = (struct procmem_iov){ k->tid_src + (uint64_t)tid_off,
								    &k->src_tid, sizeof(k->src_tid) };
		/* where its tags are, for a stack that may be reused (kept_tags()) */
		k->pre_tags = rr->tag_sets && k->depth && rbr_is_obj(k->ec) &&
			      L->ec.local_storage + 8 <= L->ec.size;
		if (k->pre_tags)
			rr->pre_iov[niov++] = (struct procmem_iov){ k->ec + L->ec.local_storage,
								    &k->pre_tbl, sizeof(k->pre_tbl) };
		k->pre_niv = (uint32_t)niov - k->pre_iv;
		/* only where the maps have them now, as rmem_read() checks */
		for (uint32_t j = k->pre_iv; j < niov && k->pre_niv; j++)
			if (!rmem_mapped(&rr->mem, rr->pre_iov[j].addr, rr->pre_iov[j].len))
				k->pre_niv = 0;
		if (!k->pre_niv) {
			niov = k->pre_iv;
			continue;
		}
		n++;
	}
	/*
	 * In address order: pieces a page or less apart are one range to the
	 * kernel, which pins each range's pages apart (procmem_readv()).
	 */
	for (size_t i = 0; i < niov; i++)
		rr->pre_ord[i] = (struct rbpre){ rr->pre_iov[i].addr, i };
	qsort(rr->pre_ord, niov, sizeof(*rr->pre_ord), pre_cmp);
	for (size_t i = 0; i < niov; i++) {
		rr->pre_iov[3 * rr->pre_cap + i] = rr->pre_iov[rr->pre_ord[i].i];
		rr->pre_rank[rr->pre_ord[i].i] = (uint32_t)i;
	}
	procmem_readv(&rr->t->mem, rr->pre_iov + 3 * rr->pre_cap, niov, &done);
	for (size_t i = 0; i < rr->kept_cap; i++) {
		struct rbkept *k = &rr->kept[i];

		int ok = k->th && k->seen == last && k->pre_niv;

		for (uint32_t j = 0; ok && j < k->pre_niv; j++)
			ok = rr->pre_rank[k->pre_iv + j] < done;
		if (ok)
			k->pre = rr->stats.samples;
	}
}

/* Forget k's frames. */
static void kept_drop(struct rbreader *rr, struct rbkept *k)
{
	rr->kept_frames -= k->depth;
	FREE_AND_NULL(k->frame);
	k->depth = 0;
}

/*
 * At the start of a sample: forget the threads the last one did not meet
 * (ended) once they are half the table, and grow it for those it did.
 */
static void kept_sweep(struct rbreader *rr)
{
	uint64_t last = rr->stats.samples - 1;
	size_t cap = rr->kept_cap, ocap = rr->kept_cap, n = 0;
	int sweep = rr->nkept > 2 * rr->kept_met + 16;
	struct rbkept *old = rr->kept;

	for (size_t i = 0; i < ocap; i++)
		n += old[i].th && (!sweep || old[i].seen == last);
	while (cap < 2 * KEPT_MAX && cap < 4 * (n > rr->kept_met ? n : rr->kept_met))
		cap *= 2;
	if (!sweep && cap == ocap)
		return;
	rr->kept = xcalloc(cap, sizeof(*rr->kept));
	rr->kept_cap = cap;
	rr->nkept = 0;
	for (size_t i = 0; i < ocap; i++) {
		struct rbkept *k;
		int found;

		if (!old[i].th)
			continue;
		if (sweep && old[i].seen != last) {
			kept_drop(rr, &old[i]);
			continue;
		}
		k = rbr_table_slot(rr->kept, sizeof(*k), cap, old[i].th, &found);
		*k = old[i];
		rr->nkept++;
	}
	free(old);
}

/* Keep st's frames in k, if within KEPT_FRAMES_MAX. */
static void kept_keep(struct rbreader *rr, struct rbkept *k, const struct stack *st)
{
	kept_drop(rr, k);
	if (!st->depth || rr->kept_frames + st->depth > KEPT_FRAMES_MAX)
		return;
	k->frame = xreallocarray(NULL, st->depth, sizeof(*k->frame));
	memcpy(k->frame, st->frame, st->depth * sizeof(*k->frame));
	k->depth = st->depth;
	k->truncated = st->truncated;
	k->gen = rr->kept_gen;
	k->serial = stack_kept_serial();
	rr->kept_frames += k->depth;
}

static void thread_name(struct rbreader *rr, struct stack *st, uint64_t name)
{
	const char *s;

	if (name != rr->L->qnil && !rbr_read_string(rr, name, &s)) {
		snprintf(rr->thread_name, sizeof(rr->thread_name), "%s", s);
		st->thread_name = rr->thread_name;
	}
}

/* Put a frame named name on top of st's, as what the thread does now. */
static void frame_on_top(struct rbreader *rr, struct stack *st, const char *name)
{
	if (rr->flocals) {
		memmove(rr->flocals + 1, rr->flocals, st->depth * sizeof(*rr->flocals));
		rr->flocals[0] = NULL;
	}
	memmove(st->frame + 1, st->frame, st->depth * sizeof(st->frame[0]));
	st->frame[0] = (struct stack_frame){ name, "", 0 };
	st->depth++;
}

/* Hand on a stack, with the tags of the thread last walked or loaded. */
static void stack_emit(struct rbreader *rr, struct stack *st, reader_cb cb, void *arg)
{
	rr->stats.stacks++;
	st->tags = rbr_tags_of(rr);
	st->ractor = rr->ractor_id;
	if (rr->ractor_id && st->tags != tags_unknown)
		st->tags = ractor_tags(rr, st->tags);
	cb(arg, st);
}

/*
 * One thread, read now: fill st's header, decide whether to keep it,
 * rbr_walk it.  run: its run counts if just read, else NULL.
 */
static enum perr sample_thread(struct rbreader *rr, const struct rbthread *t,
			       const struct taskstat_run *run, int in_gc, struct stack *st,
			       reader_cb cb, void *arg)
{
	struct rbkept *k = t->k;
	struct taskstat_run was = { 0, 0 };
	enum perr err = PERR_OK;
	char state = 0;
	int have_was = 0, exact = 0;

	memset(st, 0, offsetof(struct stack, frame));
	st->pid = rr->t->pid;
	st->thread_id = t->th;
	st->tid = t->tid;
	st->holds_gil = t->holds_gil;
	st->gvl_wait = t->gvl_wait;
	/*
	 * The proof for a later sample, in this order: its run counts, its
	 * state, its frames (taskstat_run()).  Not for the GVL owner, which
	 * is never reused, nor for a thread last seen 'R' (the spinning main
	 * thread): the state alone, as without reuse.
	 */
	if (k && t->tid > 0 && t->holds_gil != 1 && k->state != 'R') {
		if (run)
			was = *run;
		have_was = run || !taskstat_run(&rr->ts, t->tid, &was);
	}
	if (t->tid > 0) {
		state = taskstat_state(&rr->ts, t->tid);
		st->idle = state ? state != 'R' : -1;
	} else {
		st->idle = -1;
	}
	if (k) {
		/* the thread is there and its counts are not: none are kept */
		if (!have_was && state && t->tid > 0 && t->holds_gil != 1 && k->state != 'R')
			rr->kept_off = 1;
		kept_drop(rr, k);
		k->ec = t->ec;
		k->tid = t->tid;
		k->state = state;
		k->have_was = have_was;
		k->was = was;
	}
	/* with --gvl-wait, a thread queued for the GVL is kept, asleep as it is */
	if ((rr->opts.gil_only && st->holds_gil != 1) ||
	    (!rr->opts.idle && st->idle == 1 && !(rr->opts.gvl_wait && st->gvl_wait == 1)))
		return PERR_OK;
	thread_name(rr, st, t->name);
	for (int tries = 0; tries < WALK_TRIES; tries++) {
		int stale;

		if (tries) {
			rr->stats.retries++;
			rmem_reset(&rr->mem);
			objs_reset(rr);
		}
		err = rbr_walk(rr, t->ec, st, tries < WALK_TRIES - 1);
		if (perr_is_fatal(err))
			return err;
		/*
		 * Check the cached entries the rbr_walk used even when it failed:
		 * a stale one (an iseq collected and another put in its place)
		 * may be why, and would fail every try.
		 */
		stale = rbr_validate(rr);
		if (stale)
			rr->kept_gen++;		/* names freed: kept frames may point at them */
		if (!stale && !err) {
			exact = tries < WALK_TRIES - 1;
			break;
		}
		if (!err)
			err = PERR_CORRUPT;	/* a stale cache entry: rbr_walk again */
	}
	if (k && exact && have_was && state && state != 'R') {
		kept_keep(rr, k, st);
		if (k->depth)
			st->kept = k->serial;	/* unless a frame goes on top, below */
	}
	if (!err && rr->flocals)
		locals_fill(rr, st);
	/* the VM is collecting garbage, on this thread: say so, on top */
	if (!err && in_gc && st->depth < STACK_MAX_DEPTH) {
		frame_on_top(rr, st, "(garbage collection)");
		st->kept = 0;
	}
	/* what it does: wait to take the GVL, on top of where it stopped */
	if (!err && rr->opts.gvl_wait && st->gvl_wait == 1 && st->depth &&
	    st->depth < STACK_MAX_DEPTH) {
		frame_on_top(rr, st, "(waiting for GVL)");
		st->kept = 0;
	}
	if (err)
		rr->stats.dropped++;
	else if (st->depth)
		stack_emit(rr, st, cb, arg);
	return PERR_OK;
}

/*
 * The tags of a thread whose stack is reused, read now from its fiber's
 * table as rbr_walk() reads them with the frames: -1 if its EC cannot be
 * read.
 */
static int kept_tags(struct rbreader *rr, const struct rbthread *t)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t ec = t->ec, tbl;
	struct ecguess *g = &rr->guess[rbr_slot(ec, GUESS_SLOTS)];

	rr->ec_storage = 0;
	rr->ec_val_ok = 0;
	rr->ec_val_torn = 0;
	rr->pm_ok = rr->pm_torn = 0;	/* the process-wide set of the sample's start */
	rr->ec_store = NULL;
	if (!rr->tag_sets || L->ec.local_storage + 8 > L->ec.size)
		return 0;
	/* prefetched at the start of this sample, with the threads */
	if (t->k->pre == rr->stats.samples && t->k->pre_tags && t->k->ec == ec)
		tbl = t->k->pre_tbl;
	else if (rd_u64(rr, ec + L->ec.local_storage, &tbl))
		return -1;
	rr->ec_storage = tbl;
	if (!rbr_is_obj(tbl))
		return 0;
	rr->ec_store = g->ec == ec ? &g->store : NULL;
	rbr_storage_get(rr, tbl, rr->ec_store, rr->ec_val);
	rr->ec_val_ok = 1;
	return 0;
}

/*
 * A thread met with a kept read that may prove it has not run: leave it
 * for after the others (sample_kept()).  Not the GVL owner, not one seen
 * 'R' or without counts; one without frames only where a thread that has
 * not run is left out (CPU mode; with --gvl-wait, not queued for the GVL).
 */
static int kept_defers(const struct rbreader *rr, const struct rbthread *t)
{
	const struct rbkept *k = t->k;

	if (!k || t->tid <= 0 || k->ec != t->ec || k->tid != t->tid || t->holds_gil == 1 ||
	    !k->have_was || !k->state || k->state == 'R')
		return 0;
	return k->depth || (!rr->opts.idle && !(rr->opts.gvl_wait && t->gvl_wait == 1));
}

/*
 * A deferred thread: its tags read now, then its run counts.  The same as
 * when it was read: it has not run since, its stack is the one kept, and
 * it is asleep (in CPU mode, left out with no more read); else read it now.
 * Its name, tags, GVL state and queue are this sample's.
 */
static enum perr sample_kept(struct rbreader *rr, const struct rbthread *t, struct stack *st,
			     reader_cb cb, void *arg)
{
	struct rbkept *k = t->k;
	struct taskstat_run now;
	int show = rr->opts.idle || (rr->opts.gvl_wait && t->gvl_wait == 1);

	if (show && (!k->depth || k->gen != rr->kept_gen || kept_tags(rr, t)))
		return sample_thread(rr, t, NULL, 0, st, cb, arg);
	if (taskstat_run(&rr->ts, t->tid, &now))
		return sample_thread(rr, t, NULL, 0, st, cb, arg);
	if (taskstat_ran(&k->was, &now))
		return sample_thread(rr, t, &now, 0, st, cb, arg);
	if (!show)
		return PERR_OK;
	memset(st, 0, offsetof(struct stack, frame));
	st->pid = rr->t->pid;
	st->thread_id = t->th;
	st->tid = t->tid;
	st->holds_gil = t->holds_gil;
	st->gvl_wait = t->gvl_wait;
	st->idle = 1;
	thread_name(rr, st, t->name);
	memcpy(st->frame, k->frame, k->depth * sizeof(*k->frame));
	st->depth = k->depth;
	st->truncated = k->truncated;
	st->kept = k->serial;
	if (rr->opts.gvl_wait && st->gvl_wait == 1 && st->depth < STACK_MAX_DEPTH) {
		frame_on_top(rr, st, "(waiting for GVL)");
		st->kept = 0;
	}
	rr->stats.reused++;
	stack_emit(rr, st, cb, arg);
	return PERR_OK;
}

/*
 * A thread of the list: read now, or deferred to after the others (into
 * rr->defer) when its kept read may prove it has not run.
 */
static enum perr thread_meet(struct rbreader *rr, uint64_t addr, const unsigned char *th,
			     int pre, uint64_t gvl_owner, int in_gc, struct stack *st, reader_cb cb,
			     void *arg)
{
	const struct rubyvm_layout *L = rr->L;
	unsigned int status = th[L->thread.status] >> L->thread.status_shift & 3;
	struct rbthread t = { .th = addr, .ec = get_u64(th, L->thread.ec),
			      .name = get_u64(th, L->thread.name) };
	int64_t tid_off = tid_read_off(rr);
	uint64_t src = tid_off < 0 ? 0 :
		       get_u64(th, L->thread.nt != RUBYVM_NONE ? L->thread.nt : L->thread.thread_id);
	struct rbkept *k;
	pid_t tid;

	if (status == 3 || !rbr_is_obj(t.ec))
		return PERR_OK;		/* killed, or not started */
	k = rr->kept && !rr->kept_off ? kept_get(rr, addr, 1) : NULL;
	/* the tid, prefetched with the thread if read from the same struct */
	if (pre && k && k->pre_tid && k->tid_src == src && k->src_tid > 0)
		tid = k->src_tid;
	else
		tid = thread_tid(rr, th);
	if (k && tid_off >= 0) {
		k->tid_src = src;
		k->src_tid = tid;
	}
	t.tid = tid > 0 ? taskstat_host_tid(&rr->ts, tid) : 0;
	t.holds_gil = gvl_owner ? gvl_owner == addr : -1;
	t.gvl_wait = gvl_waiting(rr, addr);
	if (rr->opts.gil_only && t.holds_gil != 1)
		return PERR_OK;
	if (rr->kept && !rr->kept_off) {
		rr->kept_met++;
		t.k = k;
		if (t.k)
			t.k->seen = rr->stats.samples;
		if (kept_defers(rr, &t) && rr->ndefer < THREAD_MAX) {
			rr->defer[rr->ndefer++] = t;
			return PERR_OK;
		}
	}
	return sample_thread(rr, &t, NULL, in_gc, st, cb, arg);
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
				!rd(rr, rr->main_store.tbl, rr->main_hdr, rbr_storage_hdr_len(rr)) &&
				!rd(rr, rr->main_store.at, rr->store_buf,
				    (size_t)(rr->main_store.n * rbr_storage_esize(rr)));
		rbr_tags_begin(rr, main_thread);
		if (L->thread.tid == RUBYVM_NONE && L->thread.nt == RUBYVM_NONE &&
		    rr->pthread_tid_off < 0)
			pthread_discover(rr, head, node);
	}
	rr->ractor_id = is_main ? 0 : id;
	rr->ndefer = 0;
	gvl_waiters(rr, base, base != rr->vm);
	for (uint64_t prev = head; node != head && n < THREAD_MAX; n++) {
		uint64_t addr = node - L->thread.list_node;
		struct rbkept *pre;
		int seen = 0;

		pre = !restarted && rr->kept && !rr->kept_off && rbr_is_obj(node) ?
			      kept_get(rr, addr, 0) : NULL;
		if (pre && pre->pre != rr->stats.samples)
			pre = NULL;
		rr->mem.fresh = !!restarted;
		if (pre)
			memcpy(th, rr->pre + (size_t)pre->pre_i * L->thread.size, L->thread.size);
		err = pre ? PERR_OK : rbr_is_obj(node) ? rd(rr, addr, th, L->thread.size) :
							 PERR_CORRUPT;
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
		err = thread_meet(rr, addr, th, !!pre, gvl_owner, gc && addr == gvl_owner, &st,
				  cb, arg);
		if (err)
			return err;
	}
	/*
	 * Those that may not have run, last: the others' walks may free
	 * names their frames point at (kept_gen), and their counts are read
	 * after their tags, both this sample.
	 */
	for (size_t i = 0; i < rr->ndefer; i++)
		if ((err = sample_kept(rr, &rr->defer[i], &st, cb, arg)))
			return err;
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
	 * name, are never found: no tags, --tag's in their place.  So each
	 * of the first SYMBOLS_EAGER samples looks: a look at attach that
	 * missed it (early in the program's start, or as it adds symbols)
	 * would cost the tags of every sample up to the SYMBOLS_RETRY-th.
	 * That is the likely cause, not reproduced, of packages/gem_install's
	 * first 94 samples of a run untagged (1 run in 15-75 beside load).
	 * A look reads the interpreter's writable data: then ever further
	 * apart, for a build where it is never found.
	 */
	if (!rr->symbols &&
	    (rr->stats.samples <= SYMBOLS_EAGER || rr->stats.samples >= rr->symbols_next)) {
		if (rr->stats.samples >= rr->symbols_next) {
			rr->symbols_gap *= 2;
			rr->symbols_next = rr->stats.samples + rr->symbols_gap;
		}
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
	if (rr->kept && !rr->kept_off) {
		kept_sweep(rr);
		kept_prefetch(rr);
		rr->kept_met = 0;
	}
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
		if (!rbr_is_obj(node) || (err = rd_u64(rr, node, &node))) {
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
