/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "python/pyaio.h"
#include "python/pyasync.h"
#include "python/pyobj.h"
#include "python/pyreader.h"
#include "python/pytasks.h"
#include "python/pyvm.h"
#include "proc/rmem.h"
#include "proc/target.h"
#include "util/utf8.h"
#include "util/xalloc.h"

/*
 * dump --tasks (pytasks.h).  The layouts are data, with where each number
 * comes from, in pyvm-structs/asyncio_tasks.c: 3.14+ from what the target
 * publishes (checked against the shipped table), 3.9-3.13 from asyncio's
 * own registry.  Everything read is checked (pointers against the maps by
 * rmem, counts capped, lists linked both ways, types by address) and read
 * twice; what does not hold together is read again or refused.
 */

#if PYTASKS_MAX != 100000
#error "the message of PERR_TOOBIG says 100000"
#endif

#define INTERP_MAX	64
#define THREAD_MAX	4096
#define SET_MAX		(1u << 16)	/* slots of an awaited-by set */
#define SET_TRIES	16		/* reads of a changing registry set */
#define AWAITERS_MAX	16		/* tasks awaiting one through callbacks (3.9-3.13) */
#define LOOPS_MAX	64		/* event loops told apart (3.9-3.13) */
#define FUT_LOOP	16		/* a FutureObj's fut_loop, right after its header */
#define TREE_DEPTH	64	/* tasks nested in the printed tree */
#define CUT_WORK	(16u << 20)	/* links followed to count what each cut leaves out */

#define OWNED_BY_GENERATOR		1
#define ASEND_GEN			16	/* PyAsyncGenASend.ags_gen */

struct tframe {
	char *name, *file;
	int line;
};

struct ptask {
	uint64_t addr;
	pid_t tid;			/* of the thread whose list holds it (3.9-3.13:
					   which runs its loop); 0: ended (none) */
	uint64_t loop;			/* its event loop (3.9-3.13) */
	char *name;
	int state;			/* 0 pending, 1 cancelled, 2 done, -1 unknown */
	struct tframe *frame;		/* innermost first */
	unsigned int nframe;
	uint64_t *awaiter;		/* tasks awaiting it */
	unsigned int nawaiter;
	int printing;			/* on the path being printed */
	int reached;			/* under a task at the top, shown or cut off */
};

struct tasks {
	struct pyreader *pr;
	struct target *t;
	struct rmem *mem;
	const struct pyvm_layout *L;
	struct pyaio_published T;		/* what the target says, checked (3.14+) */
	const struct pyaio_registry *old;	/* or this (3.9-3.13) */
	struct pyasync *aio;		/* and who awaits whom through callbacks */
	uint64_t task_type;		/* _asyncio.Task, once found (3.9-3.13) */
	int state_known;
	uint64_t coro_type, agen_type, asend_type;	/* 0: unknown */
	struct pyobj obj;
	struct ptask *task;
	size_t ntask, cap;
	struct taskref {
		uint64_t addr;
		size_t i;
	} *byaddr;			/* the tasks by address, once read */
	size_t *child, *first;		/* tasks awaited by task i: child[first[i] .. first[i+1]) */
	size_t printed;			/* task lines printed */
	int cut;			/* and the budget for them ran out */
	int json;			/* print JSON (pytasks_dump()) */
	size_t *queue;			/* of reach() and below(), one slot per task */
	uint32_t *seen, stamp;		/* below(): seen[i] == stamp, counted this time */
	size_t work;			/* links below() followed, up to CUT_WORK */
};

static enum perr rd(struct tasks *ts, uint64_t addr, void *out, size_t len)
{
	return rmem_read(ts->mem, addr, out, len);
}

static enum perr rd64(struct tasks *ts, uint64_t addr, uint64_t *v)
{
	return rmem_u64(ts->mem, addr, v);
}

static void task_release(struct ptask *k)
{
	for (unsigned int i = 0; i < k->nframe; i++) {
		free(k->frame[i].name);
		free(k->frame[i].file);
	}
	free(k->frame);
	free(k->awaiter);
	free(k->name);
	memset(k, 0, sizeof(*k));
}

static void tasks_clear(struct tasks *ts)
{
	for (size_t i = 0; i < ts->ntask; i++)
		task_release(&ts->task[i]);
	ts->ntask = 0;
}

/* A task's name, malloc'd. */
static enum perr load_layout(struct tasks *ts, const char **why)
{
	return pyaio_layout(ts->mem, ts->t, pyreader_runtime(ts->pr), &ts->old, &ts->T,
			    &ts->state_known, why);
}

static enum perr read_name(struct tasks *ts, uint64_t obj, char **out)
{
	char buf[PYAIO_NAME_CAP];
	enum perr err = pyaio_task_name(&ts->obj, ts->t->minor, obj, buf, sizeof(buf));

	if (!err)
		*out = xstrdup(buf);
	return err;
}

/* The coroutines of a task's await chain, outermost first in k->frame. */
static enum perr read_chain(struct tasks *ts, struct ptask *k, uint64_t coro)
{
	const struct pyaio_published *T = &ts->T;
	const struct pyvm_layout *L = ts->L;
	unsigned char g[512];
	uint64_t mask = L->stackref_tagged ? ~(uint64_t)3 : ~(uint64_t)0;
	size_t glen = T->gi_iframe + L->frame.size;
	unsigned int cap = 0;

	if (glen > sizeof(g) || L->frame.owner == PYVM_NONE)
		return PERR_UNSUPPORTED;

	while (coro && k->nframe < PYTASKS_DEPTH) {
		const unsigned char *fr = g + T->gi_iframe;
		const char *name, *file;
		uint64_t type, code, sp, awaited, atype;
		int8_t state;
		int line;

		if (rd(ts, coro, g, glen))
			return PERR_CORRUPT;
		state = (int8_t)g[T->gi_frame_state];
		if (state == T->cleared)
			break;
		type = get_u64(g, L->ob_type);
		if (fr[L->frame.owner] != OWNED_BY_GENERATOR)
			return PERR_CORRUPT;
		code = get_u64(fr, L->frame.code) & mask;
		if (pyreader_code(ts->pr, code, 0, get_u64(fr, L->frame.instr), &name, &file, &line))
			return PERR_CORRUPT;
		if (k->nframe == cap) {
			cap = cap ? cap * 2 : 4;
			k->frame = xrealloc(k->frame, cap * sizeof(*k->frame));
		}
		k->frame[k->nframe].name = xstrdup(name);
		k->frame[k->nframe].file = xstrdup(file);
		k->frame[k->nframe].line = line;
		k->nframe++;
		if (state != T->yield_from)
			break;
		sp = get_u64(fr, T->stackpointer) & ~(uint64_t)3;
		if (!sp || rd64(ts, sp - 8 * (uint64_t)T->await_slot, &awaited))
			break;
		awaited &= mask;
		/*
		 * Followed while it is a coroutine (or what this one is), or an
		 * async generator's __anext__() awaitable (async for), as CPython's
		 * own _remote_debugging does: not a future, an iterator.
		 */
		if (!awaited || rd64(ts, awaited + L->ob_type, &atype))
			break;
		if (ts->asend_type && atype == ts->asend_type) {
			if (rd64(ts, awaited + PYVM_OFF(L, ASEND_GEN), &awaited) || !awaited ||
			    rd64(ts, awaited + L->ob_type, &atype) || atype != ts->agen_type)
				break;
		} else if (atype != type && (!ts->coro_type || atype != ts->coro_type)) {
			break;
		}
		coro = awaited;
	}
	return PERR_OK;
}

/* The tasks awaiting k: one, or a set of them. */
static enum perr read_awaiters(struct tasks *ts, struct ptask *k, const unsigned char *tb)
{
	const struct pyaio_published *T = &ts->T;
	uint64_t ab = get_u64(tb, (uint32_t)T->aio[PYAIO_A_TASK_AWAITED_BY]) & ~(uint64_t)3;
	unsigned char set[64], *tab;
	uint64_t used, mask, table, n = 0;

	if (!ab)
		return PERR_OK;
	if (!tb[T->aio[PYAIO_A_TASK_AB_IS_SET]]) {
		k->awaiter = xmalloc(sizeof(*k->awaiter));
		k->awaiter[k->nawaiter++] = ab;
		return PERR_OK;
	}
	if (rd(ts, ab, set, sizeof(set)))
		return PERR_CORRUPT;
	used = get_u64(set, (uint32_t)T->set_used);
	mask = get_u64(set, (uint32_t)T->set_mask);
	table = get_u64(set, (uint32_t)T->set_table);
	if (mask >= SET_MAX || ((mask + 1) & mask) || used > mask + 1)
		return PERR_CORRUPT;
	tab = xmalloc((mask + 1) * 16);
	if (rd(ts, table, tab, (mask + 1) * 16)) {
		free(tab);
		return PERR_CORRUPT;
	}
	k->awaiter = xcalloc(used ? used : 1, sizeof(*k->awaiter));
	for (uint64_t i = 0; i <= mask; i++) {
		uint64_t key = get_u64(tab, (uint32_t)(i * 16));
		int64_t hash = (int64_t)get_u64(tab, (uint32_t)(i * 16 + 8));

		if (!key || hash == -1)
			continue;	/* empty, or a dummy left by a removal */
		if (n >= used)
			break;
		k->awaiter[n++] = key;
	}
	free(tab);
	if (n != used)
		return PERR_CORRUPT;	/* changed while read */
	k->nawaiter = (unsigned int)n;
	return PERR_OK;
}

static enum perr read_task(struct tasks *ts, uint64_t addr, pid_t tid)
{
	const struct pyaio_published *T = &ts->T;
	unsigned char tb[4096];
	struct ptask *k;
	enum perr err;

	if (ts->ntask >= PYTASKS_MAX)
		return PERR_TOOBIG;
	if (rd(ts, addr, tb, T->aio[PYAIO_A_TASK_SIZE]) || tb[T->aio[PYAIO_A_TASK_IS_TASK]] != 1)
		return PERR_CORRUPT;
	if (ts->ntask == ts->cap) {
		ts->cap = ts->cap ? ts->cap * 2 : 64;
		ts->task = xrealloc(ts->task, ts->cap * sizeof(*ts->task));
	}
	k = &ts->task[ts->ntask++];
	memset(k, 0, sizeof(*k));
	k->addr = addr;
	k->tid = tid;
	k->state = ts->state_known ? (int)get_i32(tb, T->state) : -1;
	if (k->state < -1 || k->state > 2)
		return PERR_CORRUPT;
	if ((err = read_name(ts, get_u64(tb, (uint32_t)T->aio[PYAIO_A_TASK_NAME]) & ~(uint64_t)3,
			     &k->name)) ||
	    (err = read_chain(ts, k, get_u64(tb, (uint32_t)T->aio[PYAIO_A_TASK_CORO]) & ~(uint64_t)3)) ||
	    (err = read_awaiters(ts, k, tb)))
		return err == PERR_UNSUPPORTED ? err : PERR_CORRUPT;
	return PERR_OK;
}

/*
 * The tasks of one list (a thread's or the interpreter's): a circular
 * llist whose head lives at `head'.  Each node's prev must point back.
 */
static enum perr read_list(struct tasks *ts, uint64_t head, pid_t tid, uint64_t *sig)
{
	uint64_t node, prev = head, back;
	size_t n = 0;
	enum perr err;

	if (rd64(ts, head + ts->T.llist_next, &node))
		return PERR_CORRUPT;
	while (node != head) {
		if (!node || ++n > PYTASKS_MAX || rd64(ts, node + 8, &back) || back != prev)
			return PERR_CORRUPT;
		if ((err = read_task(ts, node - ts->T.aio[PYAIO_A_TASK_NODE], tid)))
			return err;
		*sig = *sig * 1000003u ^ node;
		prev = node;
		if (rd64(ts, node + ts->T.llist_next, &node))
			return PERR_CORRUPT;
	}
	return PERR_OK;
}

static int taskref_cmp(const void *a, const void *b)
{
	const struct taskref *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Index the tasks by address, for find(). */
static void index_build(struct tasks *ts)
{
	free(ts->byaddr);
	ts->byaddr = xmalloc((ts->ntask + 1) * sizeof(*ts->byaddr));
	for (size_t i = 0; i < ts->ntask; i++) {
		ts->byaddr[i].addr = ts->task[i].addr;
		ts->byaddr[i].i = i;
	}
	qsort(ts->byaddr, ts->ntask, sizeof(*ts->byaddr), taskref_cmp);
}

/* The index of the task at addr (index_build() first), or SIZE_MAX. */
static size_t find(struct tasks *ts, uint64_t addr)
{
	size_t lo = 0, hi = ts->ntask;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t at = ts->byaddr[mid].addr;

		if (at == addr)
			return ts->byaddr[mid].i;
		if (at < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return SIZE_MAX;
}

/* Is obj an instance of _asyncio.Task (by its type's tp_name, at 24)? */
static int is_ctask(struct tasks *ts, uint64_t obj)
{
	char name[16];
	uint64_t type, tp_name;

	if (rd64(ts, obj + ts->L->ob_type, &type) || !type)
		return 0;
	if (type == ts->task_type)
		return 1;
	if (ts->task_type || rd64(ts, type + PYVM_OFF(ts->L, 24), &tp_name) ||
	    rd(ts, tp_name, name, 14))
		return 0;
	if (memcmp(name, "_asyncio.Task", 14))
		return 0;
	ts->task_type = type;
	return 1;
}

/* One coroutine's frame onto k, and what it awaits (0: nothing, or not known). */
static enum perr old_frame(struct tasks *ts, struct ptask *k, uint64_t coro, uint64_t *awaited,
			   unsigned int *cap)
{
	const struct pyaio_registry *O = ts->old;
	const struct pyvm_layout *L = ts->L;
	unsigned char g[256], fr[128];
	const char *name, *file;
	uint64_t code, instr = 0, top, bytes;
	int64_t lasti = 0;
	uint16_t unit = 0;
	uint8_t op = 0;
	int line;

	/* no more than the object holds: the next page may not be mapped */
	size_t glen = O->gi_frame != PYVM_NONE ? O->gi_frame + 8 : O->gi_iframe + L->frame.size;

	*awaited = 0;
	if (glen > sizeof(g) || (O->gi_frame_state != PYVM_NONE && O->gi_frame_state >= glen))
		return PERR_UNSUPPORTED;
	if (rd(ts, coro, g, glen))
		return PERR_CORRUPT;
	if (O->gi_frame != PYVM_NONE) {
		uint64_t frame = get_u64(g, O->gi_frame);

		if (!frame)
			return PERR_OK;	/* finished */
		if (L->frame.code + 8 > sizeof(fr) || O->frame_lasti + 4 > sizeof(fr) ||
		    O->stacktop + 8 > sizeof(fr) || rd(ts, frame, fr, O->frame_lasti + 4))
			return PERR_CORRUPT;
		code = get_u64(fr, L->frame.code);
		lasti = get_i32(fr, O->frame_lasti);
		top = get_u64(fr, O->stacktop);
		if (O->valuestack) {
			/* 3.10: f_valuestack + f_stackdepth, the top item's address */
			uint32_t depth = get_u32(fr, O->stacktop);

			top = depth >= 1 && depth < (1u << 20) ?
			      get_u64(fr, O->valuestack) + 8 * (uint64_t)depth : 0;
		}
	} else {
		const unsigned char *f = g + O->gi_iframe;
		int8_t state = (int8_t)g[O->gi_frame_state];

		if (state == O->cleared)
			return PERR_OK;
		if (O->stacktop + 4 > L->frame.size)
			return PERR_UNSUPPORTED;
		code = get_u64(f, L->frame.code);
		instr = get_u64(f, L->frame.instr);
		top = get_u32(f, O->stacktop);
		if (O->opcode ? rd(ts, instr + 2, &unit, 2) == PERR_OK &&
				((unit & 0xff) == O->opcode || (unit & 0xff) == O->quick) &&
				(unit >> 8) >= 2 :
				state == O->yield_from) {
			if (top >= 1 && top < (1u << 20))
				rd64(ts, coro + O->gi_iframe + L->frame.localsplus + (top - 1) * 8,
				     awaited);
		}
	}
	if (pyreader_code(ts->pr, code, lasti, instr, &name, &file, &line))
		return PERR_CORRUPT;
	if (k->nframe == *cap) {
		*cap = *cap ? *cap * 2 : 4;
		k->frame = xrealloc(k->frame, *cap * sizeof(*k->frame));
	}
	k->frame[k->nframe].name = xstrdup(name);
	k->frame[k->nframe].file = xstrdup(file);
	k->frame[k->nframe].line = line;
	k->nframe++;
	/*
	 * 3.8-3.10: the next instruction is YIELD_FROM, the awaited object
	 * the top of the stack (f_lasti counts 2-byte units in 3.10)
	 */
	if (O->gi_frame != PYVM_NONE && top && lasti >= 0 && lasti < (1 << 28) &&
	    !rd64(ts, code + L->code.code, &bytes) &&
	    !rd(ts, bytes + L->bytes.ob_sval + (uint64_t)lasti * (L->lasti_units ? 2 : 1) + 2,
		&op, 1) && op == O->opcode)
		rd64(ts, top - 8, awaited);
	return PERR_OK;
}

/* The coroutines of the chain from coro on, outermost first. */
static enum perr old_chain(struct tasks *ts, struct ptask *k, uint64_t coro)
{
	unsigned int cap = 0;
	enum perr err;

	if (!coro)
		return PERR_CORRUPT;
	while (coro && k->nframe < PYTASKS_DEPTH) {
		uint64_t awaited, type;

		if ((err = old_frame(ts, k, coro, &awaited, &cap)))
			return err;
		if (!awaited || !ts->coro_type || rd64(ts, awaited + ts->L->ob_type, &type) ||
		    type != ts->coro_type)
			break;
		coro = awaited;
	}
	return PERR_OK;
}

/* A task of 3.9-3.13: its state, name and coroutine chain. */
static enum perr read_old_task(struct tasks *ts, uint64_t addr)
{
	const struct pyaio_registry *O = ts->old;
	unsigned char tb[256];
	struct ptask *k;
	int32_t state;
	uint32_t need = pyaio_task_len(O);

	if (need > sizeof(tb))
		return PERR_UNSUPPORTED;
	if (rd(ts, addr, tb, need))
		return PERR_CORRUPT;
	state = get_i32(tb, O->state);
	if (state < 0 || state > 2)
		return PERR_CORRUPT;
	if (state != 0)
		return PERR_OK;	/* done or cancelled: all_tasks() leaves it out too */
	if (ts->ntask >= PYTASKS_MAX)
		return PERR_TOOBIG;
	if (ts->ntask == ts->cap) {
		ts->cap = ts->cap ? ts->cap * 2 : 64;
		ts->task = xrealloc(ts->task, ts->cap * sizeof(*ts->task));
	}
	k = &ts->task[ts->ntask++];
	memset(k, 0, sizeof(*k));
	k->addr = addr;
	k->state = 0;
	k->loop = get_u64(tb, PYVM_OFF(ts->L, FUT_LOOP));
	if (read_name(ts, get_u64(tb, O->name), &k->name))
		return PERR_CORRUPT;
	/* its own fut_waiter for now: read_registry() turns it round */
	k->awaiter = xmalloc(sizeof(*k->awaiter));
	k->awaiter[0] = get_u64(tb, O->fut_waiter);
	return old_chain(ts, k, get_u64(tb, O->coro));
}

/* The tasks in the set at set_addr (weak: each member a weakref to one). */
static int addr_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The tasks in the set at set_addr (weak: each member a weakref to one).
 * A set keeps its members in hash order, all over the heap: they are
 * read in address order, so that the reads of neighbours share pages.
 */
static enum perr read_set(struct tasks *ts, uint64_t set_addr, int weak, uint64_t *sig)
{
	const struct pyvm_layout *L = ts->L;
	unsigned char set[64], *tab = NULL;
	uint64_t used = 0, mask, table, n = 0, *obj = NULL;
	enum perr err = PERR_OK;
	int fresh = ts->mem->fresh;

	/*
	 * PySetObject: fill 16, used 24, mask 32, table 40 (3.8-3.13).  The
	 * header and the table are read afresh, one right after the other, as
	 * often as it takes them to agree (the count of members the header
	 * says is the count the table holds): a loop that makes and ends tasks
	 * all the time changes them every few microseconds.
	 */
	ts->mem->fresh = 1;
	for (int t = 0; t < SET_TRIES; t++) {
		if (rd(ts, set_addr, set, PYVM_OFF(L, 48))) {
			err = PERR_CORRUPT;
			break;
		}
		used = get_u64(set, PYVM_OFF(L, 24));
		mask = get_u64(set, PYVM_OFF(L, 32));
		table = get_u64(set, PYVM_OFF(L, 40));
		if (mask >= (1u << 20) || ((mask + 1) & mask) || used > mask + 1) {
			err = PERR_CORRUPT;
			break;
		}
		free(tab);
		free(obj);
		tab = xmalloc((mask + 1) * 16);
		obj = xmalloc((used + 1) * sizeof(*obj));
		n = 0;
		if (rd(ts, table, tab, (mask + 1) * 16)) {
			err = PERR_CORRUPT;
			continue;	/* freed by a resize in between */
		}
		for (uint64_t i = 0; i <= mask && n <= used; i++) {
			uint64_t key = get_u64(tab, (uint32_t)(i * 16));

			if (key && (int64_t)get_u64(tab, (uint32_t)(i * 16 + 8)) != -1 && n++ < used)
				obj[n - 1] = key;
		}
		err = n == used ? PERR_OK : PERR_CORRUPT;	/* changed while read */
		if (!err)
			break;
	}
	ts->mem->fresh = fresh;
	if (err)
		goto out;
	qsort(obj, n, sizeof(*obj), addr_cmp);
	for (uint64_t i = 0; weak && i < n; i++)
		if (rd64(ts, obj[i] + PYVM_OFF(L, 16), &obj[i])) {	/* wr_object */
			err = PERR_CORRUPT;
			goto out;
		}
	if (weak)
		qsort(obj, n, sizeof(*obj), addr_cmp);
	for (uint64_t i = 0; i < n && !err; i++) {
		if (!obj[i] || obj[i] == ts->obj.none || !is_ctask(ts, obj[i]))
			continue;	/* a dead weakref, or what is no C task */
		err = read_old_task(ts, obj[i]);
		*sig = *sig * 1000003u ^ obj[i];
	}
out:
	free(obj);
	free(tab);
	return err;
}

/* By thread, those of none last; then by address. */
static int by_thread(const void *x, const void *y)
{
	const struct ptask *a = x, *b = y;

	if (a->tid != b->tid)
		return !a->tid ? 1 : !b->tid ? -1 : a->tid < b->tid ? -1 : 1;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/*
 * 3.9-3.13: each task's thread, the one running its loop (the loop's
 * _thread_id, the thread with that pthread id); the tasks grouped by it.
 */
static void loop_threads(struct tasks *ts)
{
	uint64_t loop[LOOPS_MAX];
	pid_t tid[LOOPS_MAX];
	unsigned int nloop = 0;

	for (size_t i = 0; ts->aio && i < ts->ntask; i++) {
		struct ptask *k = &ts->task[i];
		unsigned int j = 0;

		while (j < nloop && loop[j] != k->loop)
			j++;
		if (j == nloop && nloop < LOOPS_MAX) {
			loop[nloop] = k->loop;
			tid[nloop++] = pyreader_thread_tid(ts->pr, pyasync_loop_thread(ts->aio, k->loop));
		}
		k->tid = j < nloop ? tid[j] : 0;
	}
	qsort(ts->task, ts->ntask, sizeof(*ts->task), by_thread);
}

/* 3.9-3.13: asyncio's registries, then who awaits whom (task_fut_waiter). */
static enum perr read_registry(struct tasks *ts, uint64_t *sig)
{
	const struct pyvm_layout *L = ts->L;
	uint64_t interp, mod, md_dict, weakset, data, eager, type;
	enum perr err;
	int kind;

	if (rd64(ts, pyreader_runtime(ts->pr) + L->runtime.interpreters_head, &interp) || !interp)
		return PERR_CORRUPT;
	err = pyobj_module(&ts->obj, interp, "asyncio.tasks", &mod);
	if (err == PERR_NOTFOUND)
		return PERR_NOTFOUND;
	if (err || pyobj_type(&ts->obj, mod, &type, &kind) || kind != PYOBJ_MODULE ||
	    rd64(ts, mod + PYVM_OFF(L, 16), &md_dict) ||
	    pyobj_dict_get(&ts->obj, md_dict, ts->old->registry, &weakset) ||
	    pyobj_attr(&ts->obj, weakset, "data", &data) ||
	    pyobj_type(&ts->obj, data, &type, &kind) || kind != PYOBJ_SET)
		return PERR_CORRUPT;
	if ((err = read_set(ts, data, 1, sig)))
		return err;
	if (ts->old->minor >= 12 && !pyobj_dict_get(&ts->obj, md_dict, "_eager_tasks", &eager) &&
	    !pyobj_type(&ts->obj, eager, &type, &kind) && kind == PYOBJ_SET &&
	    (err = read_set(ts, eager, 0, sig)))
		return err;
	/* k->awaiter[0] holds k's fut_waiter: turn it into "awaited by k" */
	for (size_t i = 0; i < ts->ntask; i++) {
		struct ptask *a = &ts->task[i];

		a->nawaiter = 0;
	}
	loop_threads(ts);
	index_build(ts);
	for (size_t i = 0; i < ts->ntask; i++) {
		struct ptask *a = &ts->task[i];
		size_t bi = find(ts, a->awaiter[0]);
		struct ptask *b = bi == SIZE_MAX ? NULL : &ts->task[bi];

		if (b && b != a) {
			b->awaiter = xrealloc(b->awaiter, (b->nawaiter + 2) * sizeof(uint64_t));
			/* keep slot 0 (b's own waiter) until every task is linked */
			b->awaiter[1 + b->nawaiter++] = a->addr;
		}
	}
	for (size_t i = 0; i < ts->ntask; i++) {
		struct ptask *a = &ts->task[i];

		memmove(a->awaiter, a->awaiter + 1, a->nawaiter * sizeof(uint64_t));
	}
	/* and those awaiting through gather() or a TaskGroup (done callbacks) */
	for (size_t i = 0; ts->aio && i < ts->ntask; i++) {
		struct ptask *a = &ts->task[i];
		uint64_t p[AWAITERS_MAX];
		unsigned int n = pyasync_awaiters(ts->aio, a->addr, p, AWAITERS_MAX);

		for (unsigned int j = 0; j < n; j++) {
			unsigned int k = 0;

			while (k < a->nawaiter && a->awaiter[k] != p[j])
				k++;
			if (k < a->nawaiter || p[j] == a->addr || find(ts, p[j]) == SIZE_MAX)
				continue;
			a->awaiter = xrealloc(a->awaiter, (a->nawaiter + 1) * sizeof(uint64_t));
			a->awaiter[a->nawaiter++] = p[j];
		}
	}
	return PERR_OK;
}

/* Every list of every interpreter; *sig sums up which tasks were seen where. */
static enum perr read_all(struct tasks *ts, uint64_t *sig)
{
	const struct pyvm_layout *L = ts->L;
	uint64_t interp, tstate, next;
	unsigned int ni = 0;
	enum perr err;

	tasks_clear(ts);
	rmem_begin(ts->mem, 0);
	*sig = 0;
	if (ts->old)
		return read_registry(ts, sig);
	if (rd64(ts, pyreader_runtime(ts->pr) + L->runtime.interpreters_head, &interp))
		return PERR_CORRUPT;
	for (; interp && ni < INTERP_MAX; ni++) {
		unsigned int nt = 0;

		if (rd64(ts, interp + L->interp.threads_head, &tstate))
			return PERR_CORRUPT;
		for (; tstate && nt < THREAD_MAX; nt++) {
			uint64_t tid = 0, back;

			if (rd64(ts, tstate + L->tstate.interp, &back) || back != interp ||
			    rd64(ts, tstate + L->tstate.native_thread_id, &tid))
				return PERR_CORRUPT;
			if ((err = read_list(ts, tstate + ts->T.aio[PYAIO_A_TS_HEAD], (pid_t)tid, sig)))
				return err;
			if (rd64(ts, tstate + L->tstate.next, &tstate))
				return PERR_CORRUPT;
		}
		if ((err = read_list(ts, interp + ts->T.aio[PYAIO_A_INTERP_HEAD], 0, sig)))
			return err;
		if (rd64(ts, interp + L->interp.next, &next))
			return PERR_CORRUPT;
		interp = next;
	}
	return PERR_OK;
}

static const char *state_str(int s)
{
	return s == 0 ? "pending" : s == 1 ? "cancelled" : s == 2 ? "done" : "state unknown";
}

/* Who awaits whom, as lists: the tasks awaited by each task. */
static void children_build(struct tasks *ts)
{
	size_t n = ts->ntask, *fill;

	index_build(ts);
	free(ts->first);
	free(ts->child);
	ts->first = xcalloc(n + 2, sizeof(*ts->first));
	for (size_t i = 0; i < n; i++)
		for (unsigned int j = 0; j < ts->task[i].nawaiter; j++) {
			size_t p = find(ts, ts->task[i].awaiter[j]);

			if (p != SIZE_MAX)
				ts->first[p + 2]++;
		}
	for (size_t i = 2; i < n + 2; i++)
		ts->first[i] += ts->first[i - 1];
	ts->child = xmalloc((ts->first[n + 1] + 1) * sizeof(*ts->child));
	fill = ts->first + 1;	/* fill[p] runs from first[p] to first[p + 1] */
	for (size_t i = 0; i < n; i++)
		for (unsigned int j = 0; j < ts->task[i].nawaiter; j++) {
			size_t p = find(ts, ts->task[i].awaiter[j]);

			if (p != SIZE_MAX)
				ts->child[fill[p]++] = i;
		}
}

/*
 * How many tasks k awaits, directly or not (k aside), each counted once:
 * what a cut at the depth limit leaves out.  A hostile graph could make
 * every cut walk all of it, so the links followed by every count together
 * are capped: 0 once they ran out (then the number is not said).
 */
static size_t below(struct tasks *ts, size_t ki)
{
	size_t n = 0, head = 0, tail = 0;

	ts->stamp++;
	ts->seen[ki] = ts->stamp;
	ts->queue[tail++] = ki;
	while (head < tail) {
		size_t i = ts->queue[head++];

		for (size_t c = ts->first[i]; c < ts->first[i + 1]; c++) {
			size_t j = ts->child[c];

			if (ts->work++ >= CUT_WORK)
				return 0;
			if (ts->seen[j] == ts->stamp)
				continue;
			ts->seen[j] = ts->stamp;
			ts->queue[tail++] = j;
			n++;
		}
	}
	return n;
}

/* Mark k and every task it awaits, directly or not, as placed in a tree. */
static void reach(struct tasks *ts, size_t ki)
{
	size_t head = 0, tail = 0;

	if (ts->task[ki].reached)
		return;
	ts->task[ki].reached = 1;
	ts->queue[tail++] = ki;
	while (head < tail) {
		size_t i = ts->queue[head++];

		for (size_t c = ts->first[i]; c < ts->first[i + 1]; c++) {
			size_t j = ts->child[c];

			if (!ts->task[j].reached) {
				ts->task[j].reached = 1;
				ts->queue[tail++] = j;
			}
		}
	}
}

/*
 * Task k and, under it, every task it awaits.  A task awaited by several
 * shows under each, so a hostile await graph could make the tree
 * exponential: the lines printed are capped (ts->cut).  A task already on
 * the path is a cycle; a path TREE_DEPTH tasks long is cut, saying how
 * many tasks it leaves out: a long chain is no cycle.
 */
static void print_task(struct tasks *ts, FILE *f, size_t ki, int depth)
{
	struct ptask *k = &ts->task[ki];
	int ind = 2 + 4 * depth;
	size_t n;

	if (ts->printed >= PYTASKS_LINES) {
		ts->cut = 1;
		return;
	}
	ts->printed++;
	fprintf(f, "%*sTask \"%s\" (%s)\n", ind, "", k->name, state_str(k->state));
	if (k->printing) {
		fprintf(f, "%*s[awaits itself: a cycle]\n", ind + 4, "");
		return;
	}
	for (unsigned int i = k->nframe; i-- > 0;)
		fprintf(f, "%*s%s (%s:%d)\n", ind + 4, "", k->frame[i].name, k->frame[i].file,
			k->frame[i].line);
	if (ts->first[ki] == ts->first[ki + 1])
		return;
	if (depth + 1 >= TREE_DEPTH) {
		if ((n = below(ts, ki)))
			fprintf(f, "%*s[... %zu more task%s it awaits not shown: depth limit %d]\n",
				ind + 4, "", n, n == 1 ? "" : "s", TREE_DEPTH);
		else
			fprintf(f, "%*s[... the tasks it awaits not shown: depth limit %d]\n",
				ind + 4, "", TREE_DEPTH);
		return;
	}
	k->printing = 1;
	for (size_t c = ts->first[ki]; c < ts->first[ki + 1]; c++)
		print_task(ts, f, ts->child[c], depth + 1);
	k->printing = 0;
}

/*
 * print_task() in JSON: {"name", "state", "frames", and "cycle": true, or
 * "awaits": [...] and, cut at the depth limit, "not_shown": N}; *first:
 * no comma before it.  The same budget of tasks printed.
 */
static void json_task(struct tasks *ts, FILE *f, size_t ki, int depth, int *first)
{
	struct ptask *k = &ts->task[ki];
	int sub = 1;

	if (ts->printed >= PYTASKS_LINES) {
		ts->cut = 1;
		return;
	}
	ts->printed++;
	fputs(*first ? "{\"name\": " : ", {\"name\": ", f);
	*first = 0;
	utf8_put_json(f, k->name);
	fprintf(f, ", \"state\": \"%s\", \"frames\": [", state_str(k->state));
	for (unsigned int i = k->nframe; i-- > 0;) {
		fputs(i + 1 == k->nframe ? "{\"name\": " : ", {\"name\": ", f);
		utf8_put_json(f, k->frame[i].name);
		if (*k->frame[i].file) {
			fputs(", \"file\": ", f);
			utf8_put_json(f, k->frame[i].file);
		}
		if (k->frame[i].line > 0)
			fprintf(f, ", \"line\": %d", k->frame[i].line);
		putc('}', f);
	}
	putc(']', f);
	if (k->printing) {
		fputs(", \"cycle\": true}", f);
		return;
	}
	if (ts->first[ki] != ts->first[ki + 1] && depth + 1 >= TREE_DEPTH) {
		size_t n = below(ts, ki);

		fprintf(f, ", \"not_shown\": %zu}", n ? n : 1);
		return;
	}
	fputs(", \"awaits\": [", f);
	k->printing = 1;
	for (size_t c = ts->first[ki]; c < ts->first[ki + 1]; c++)
		json_task(ts, f, ts->child[c], depth + 1, &sub);
	k->printing = 0;
	fputs("]}", f);
}

/* A task at the top: nobody awaits it, or only what is not a task. */
static int is_root(struct tasks *ts, const struct ptask *k)
{
	for (unsigned int j = 0; j < k->nawaiter; j++)
		if (find(ts, k->awaiter[j]) != SIZE_MAX)
			return 0;
	return 1;
}

/*
 * One tree per thread list: the tasks of one list are read one after the
 * other.  Every task under one at the top, in any list, is placed
 * (reached) before anything is printed, so that only the tasks of a cycle
 * nobody at the top awaits go to the top as well, never one that a cut at
 * the depth limit left out.
 */
static void print_tree(struct tasks *ts, FILE *f)
{
	children_build(ts);
	ts->queue = xmalloc((ts->ntask + 1) * sizeof(*ts->queue));
	ts->seen = xcalloc(ts->ntask + 1, sizeof(*ts->seen));
	for (size_t i = 0; i < ts->ntask; i++)
		if (is_root(ts, &ts->task[i]))
			reach(ts, i);
	for (size_t i = 0, end; i < ts->ntask; i = end) {
		pid_t tid = ts->task[i].tid;

		for (end = i; end < ts->ntask && ts->task[end].tid == tid; end++)
			;
		int first = 1;

		if (ts->json && tid)
			fprintf(f, "%s{\"thread\": %d, \"tasks\": [", i ? ", " : "", (int)tid);
		else if (ts->json)
			fprintf(f, "%s{\"no_thread\": \"%s\", \"tasks\": [", i ? ", " : "",
				ts->old ? "loops no thread runs" : "threads that ended");
		else if (tid)
			fprintf(f, "\nThread %d: %zu task%s\n", (int)tid, end - i,
				end - i == 1 ? "" : "s");
		else if (ts->old)
			fprintf(f, "\nTasks of loops no thread runs: %zu\n", end - i);
		else
			fprintf(f, "\nTasks of threads that ended: %zu\n", end - i);
		for (size_t j = i; j < end; j++)
			if (is_root(ts, &ts->task[j])) {
				if (ts->json)
					json_task(ts, f, j, 0, &first);
				else
					print_task(ts, f, j, 0);
			}
		/* only in a cycle of awaits (no real program has one): at the top too */
		for (size_t j = i; j < end; j++)
			if (!ts->task[j].reached) {
				if (ts->json)
					json_task(ts, f, j, 0, &first);
				else
					print_task(ts, f, j, 0);
				reach(ts, j);
			}
		if (ts->json)
			fputs("]}", f);
	}
	if (ts->json)
		fprintf(f, "]%s", ts->cut ? ", \"cut\": true" : "");
	else if (ts->cut)
		fprintf(f, "[cut: more than %u task lines, the same tasks under many others]\n",
			PYTASKS_LINES);
}

/* Did two reads of a task find the same name, awaiters and frames? */
static int same_task(const struct ptask *a, const struct ptask *b)
{
	if (a->addr != b->addr || a->tid != b->tid || a->state != b->state || strcmp(a->name, b->name) ||
	    a->nawaiter != b->nawaiter || a->nframe != b->nframe ||
	    (a->nawaiter && memcmp(a->awaiter, b->awaiter, a->nawaiter * sizeof(uint64_t))))
		return 0;
	for (unsigned int i = 0; i < a->nframe; i++)
		if (a->frame[i].line != b->frame[i].line || strcmp(a->frame[i].name, b->frame[i].name) ||
		    strcmp(a->frame[i].file, b->frame[i].file))
			return 0;
	return 1;
}

/*
 * Two reads that differ (tasks came, went or moved in between): what both
 * found the same is what the program had at the instant between them (each
 * task's first read came before it, its second after).  Kept in part: the
 * tasks at the top that nobody awaited in either read, and under them
 * every task they await that stayed the same, so that every line and every
 * link shown is one the program had; *hidden counts the tasks left out.
 */
static void keep_stable(struct tasks *ts, struct tasks *again, struct tasks *part, size_t *hidden)
{
	size_t n = ts->ntask, head = 0, tail = 0, shown = 0, all = n;
	unsigned char *stable = xcalloc(n + 1, 1), *show = xcalloc(n + 1, 1);
	size_t *queue = xmalloc((n + 1) * sizeof(*queue));

	index_build(again);
	children_build(ts);	/* indexes ts as well */
	for (size_t i = 0; i < again->ntask; i++)
		if (find(ts, again->task[i].addr) == SIZE_MAX)
			all++;
	for (size_t i = 0; i < n; i++) {
		size_t j = find(again, ts->task[i].addr);

		stable[i] = j != SIZE_MAX && same_task(&ts->task[i], &again->task[j]);
	}
	for (size_t i = 0; i < n; i++) {
		const struct ptask *k = &ts->task[i];
		int root = stable[i];

		for (unsigned int j = 0; root && j < k->nawaiter; j++)
			if (find(ts, k->awaiter[j]) != SIZE_MAX || find(again, k->awaiter[j]) != SIZE_MAX)
				root = 0;
		if (root) {
			show[i] = 1;
			queue[tail++] = i;
		}
	}
	while (head < tail) {
		size_t p = queue[head++];

		for (size_t c = ts->first[p]; c < ts->first[p + 1]; c++) {
			size_t i = ts->child[c];

			if (stable[i] && !show[i]) {
				show[i] = 1;
				queue[tail++] = i;
			}
		}
	}
	tasks_clear(part);
	for (size_t i = 0; i < n; i++) {
		if (!show[i]) {
			task_release(&ts->task[i]);
			continue;
		}
		if (part->ntask == part->cap) {
			part->cap = part->cap ? part->cap * 2 : 64;
			part->task = xrealloc(part->task, part->cap * sizeof(*part->task));
		}
		part->task[part->ntask++] = ts->task[i];
		shown++;
	}
	ts->ntask = 0;
	*hidden = all - shown;
	free(queue);
	free(show);
	free(stable);
}

enum perr pytasks_dump(struct pyreader *pr, struct target *t, FILE *f, int json,
		       unsigned int *ntasks, const char **why)
{
	struct tasks ts = { .pr = pr, .t = t, .json = json }, part;
	size_t hidden = 0;
	uint64_t sig = 0, sig2 = 0;
	enum perr err;
	int tries, tls;

	*why = NULL;
	ts.mem = pyreader_mem(pr);
	ts.L = pyreader_layout(pr);
	if ((err = load_layout(&ts, why)))
		return err;
	pyobj_init(&ts.obj, ts.mem, ts.L, t);
	if (ts.old) {
		struct pyasync_host h;

		pyreader_async_host(pr, &h);
		ts.aio = pyasync_new(&h, t);
	}
	if (target_symbol(t, "PyCoro_Type", &ts.coro_type, &tls))
		ts.coro_type = 0;
	if (target_symbol(t, "PyAsyncGen_Type", &ts.agen_type, &tls) ||
	    target_symbol(t, "_PyAsyncGenASend_Type", &ts.asend_type, &tls))
		ts.asend_type = 0;
	/*
	 * Read everything, then the lists again: the same tasks in the same
	 * places, else a task came or went meanwhile and all is read again.
	 * A loop that never rests may change under every read: then what the
	 * last two reads alike found the same is shown, and what not is said.
	 */
	part = ts;
	part.task = NULL;
	part.ntask = part.cap = 0;
	part.byaddr = NULL;
	part.first = part.child = NULL;
	part.queue = NULL;
	part.seen = NULL;
	for (tries = 0; tries < PYTASKS_TRIES; tries++) {
		struct timespec pause = { 0, 2 * 1000 * 1000 };

		err = read_all(&ts, &sig);
		if (err == PERR_OK) {
			struct tasks again = ts;

			again.task = NULL;
			again.ntask = again.cap = 0;
			again.byaddr = NULL;
			again.first = again.child = NULL;
			err = read_all(&again, &sig2);
			if (!err) {
				int whole = sig2 == sig && again.ntask == ts.ntask;

				for (size_t i = 0; whole && i < ts.ntask; i++)
					whole = same_task(&ts.task[i], &again.task[i]);
				if (!whole) {
					keep_stable(&ts, &again, &part, &hidden);
					err = PERR_CORRUPT;
				}
			}
			tasks_clear(&again);
			free(again.first);
			free(again.child);
			free(again.task);
			free(again.byaddr);
			if (!err)
				break;
		}
		if (err == PERR_UNSUPPORTED || err == PERR_TOOBIG || err == PERR_NOTFOUND ||
		    perr_is_fatal(err))
			break;
		nanosleep(&pause, NULL);
	}
	if (!err) {
		*ntasks = (unsigned int)ts.ntask;
		if (json)
			fputs("\"task_groups\": [", f);
		print_tree(&ts, f);
	} else if (!perr_is_fatal(err) && err != PERR_UNSUPPORTED && err != PERR_TOOBIG &&
		   err != PERR_NOTFOUND && (part.ntask || hidden)) {
		/* never one whole read: the last two that read alike in part */
		*ntasks = (unsigned int)part.ntask;
		if (json)
			fprintf(f, "\"not_shown\": %zu, \"task_groups\": [", hidden);
		else
			fprintf(f, "[not shown: %zu task%s that started, ended or changed under each "
				"of %d reads, and the tasks only they await]\n", hidden,
				hidden == 1 ? "" : "s", PYTASKS_TRIES);
		print_tree(&part, f);
		err = PERR_OK;
	} else if (err == PERR_TOOBIG) {
		*why = "it has more than 100000 asyncio tasks, more than pyrospy reads";
	} else if (err == PERR_NOTFOUND) {
		*why = "the program has not imported asyncio";
	} else if (err == PERR_UNSUPPORTED) {
		*why = "its coroutine frames have a layout pyrospy does not know";
	} else if (!perr_is_fatal(err)) {
		*why = "its tasks changed under every read";
		err = PERR_CORRUPT;
	}
	tasks_clear(&ts);
	tasks_clear(&part);
	free(part.task);
	free(part.byaddr);
	free(part.first);
	free(part.child);
	free(part.queue);
	free(part.seen);
	pyasync_free(ts.aio);
	free(ts.task);
	free(ts.byaddr);
	free(ts.first);
	free(ts.child);
	free(ts.queue);
	free(ts.seen);
	return err;
}
