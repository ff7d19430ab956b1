/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc/procmem.h"
#include "python/pyasync.h"
#include "python/pyobj.h"
#include "python/pyaio.h"
#include "python/pyvm.h"
#include "proc/rmem.h"
#include "proc/target.h"
#include "util/xalloc.h"

/*
 * record --async (pyasync.h).  Where things are comes from pytasks.c
 * (the target's AsyncioDebug offsets, checked against the shipped table);
 * every word read is checked before it is followed: a task must say it is
 * one (task_is_task), a chain is bounded and may not loop, a set of
 * awaiters is bounded.
 */

#define NAME_BUF	1100		/* "<task> " and a name of 256 code points */
#define SET_MAX		(1u << 16)	/* slots of an awaited-by set */
#define LOOPS_MAX	64		/* running loops (_current_tasks entries) */
#define CALLBACKS_MAX	16		/* a task's done callbacks looked at */
#define CLOSURE_MAX	16		/* cells of gather's _done_callback */

struct pyasync {
	struct pyasync_host host;	/* of the Python reader (pyasync.h) */
	struct target *t;
	struct rmem *mem;
	struct pyobj obj;
	int ready;			/* 1: layout known; -1: never will be */
	uint64_t next_look;		/* sample count of the next look for asyncio */
	uint64_t gap;			/* samples between looks: 1, 2, 4... */
	struct pyaio_published T;	/* 3.14+ */
	const struct pyaio_registry *old;	/* or 3.9-3.13 */
	uint64_t current;		/* asyncio.tasks._current_tasks (3.9-3.13) */
	uint64_t loop;			/* and the loop old_running() found last */
	struct rmem fresh;		/* what the process holds now, apart from the */
	struct pyobj fobj;		/* sample's windows (which stay for the next) */
	uint64_t task_type, wrapper_type, gfut_type, group_type;	/* by name, once seen */
	uint64_t cfunc_type, method_type, func_type, cell_type;	/* symbols; 0: unknown */
	char shown[PYASYNC_DEPTH][NAME_BUF];	/* the names of the last chain */
};

enum perr pyasync_supported(const struct target *t, const char **why)
{
	if (t->lang != TARGET_PYTHON) {
		*why = "it reads the asyncio tasks of Python";
		return PERR_UNSUPPORTED;
	}
	if (t->free_threaded && !pyaio_registry_for(t)) {
		*why = "it reads the asyncio tasks of a free-threaded CPython 3.13 only, "
		       "not of a later one";
		return PERR_UNSUPPORTED;
	}
	if (t->major != 3 || t->minor < 8 || t->minor > 15) {
		*why = "it reads the running task of CPython 3.8 to 3.15 only";
		return PERR_UNSUPPORTED;
	}
	return PERR_OK;
}

struct pyasync *pyasync_new(const struct pyasync_host *h, struct target *t)
{
	struct pyasync *a = xcalloc(1, sizeof(*a));
	const char *why;

	a->host = *h;
	a->t = t;
	a->mem = h->mem;
	int tls;

	if (pyasync_supported(t, &why)) {
		a->ready = -1;
		return a;
	}
	pyobj_init(&a->obj, a->mem, h->lay, t);
	rmem_init(&a->fresh, t);
	pyobj_init(&a->fobj, &a->fresh, h->lay, t);
	a->old = pyaio_registry_for(t);
	if (target_symbol(t, "PyCFunction_Type", &a->cfunc_type, &tls))
		a->cfunc_type = 0;
	if (target_symbol(t, "PyMethod_Type", &a->method_type, &tls))
		a->method_type = 0;
	if (target_symbol(t, "PyFunction_Type", &a->func_type, &tls))
		a->func_type = 0;
	if (target_symbol(t, "PyCell_Type", &a->cell_type, &tls))
		a->cell_type = 0;
	return a;
}

void pyasync_free(struct pyasync *a)
{
	if (!a)
		return;
	if (a->ready != -1)
		rmem_release(&a->fresh);
	free(a);
}

/* Is module name in sys.modules?  Its address, else 0. */
static uint64_t imported(struct pyasync *a, const char *name)
{
	const struct pyvm_layout *L = a->host.lay;
	uint64_t interp, mod;

	if (rmem_u64(a->mem, a->host.runtime + L->runtime.interpreters_head, &interp) ||
	    !interp || pyobj_module(&a->obj, interp, name, &mod))
		return 0;
	return mod;
}

/*
 * The asyncio layout of a 3.14+ target, in a->T: what it publishes, equal
 * to the shipped table.  PERR_NOTFOUND while asyncio is not imported (try
 * again later); PERR_UNSUPPORTED and *why otherwise.
 */
static enum perr published_layout(struct pyasync *a, const char **why)
{
	const struct pyaio_registry *old;
	int known;
	enum perr err;

	*why = NULL;
	err = pyaio_layout(a->mem, a->t, a->host.runtime, &old, &a->T, &known,
			   why);
	if (err)
		return err;
	if (old) {
		*why = "no AsyncioDebug offsets before CPython 3.14";
		return PERR_UNSUPPORTED;
	}
	if (!known) {
		*why = "its AsyncioDebug offsets differ from the ones pyrospy knows";
		return PERR_UNSUPPORTED;
	}
	return PERR_OK;
}

/*
 * The layout, once asyncio is imported: looked for after 1, 2, 4...
 * samples, at most PYASYNC_RETRY apart, so that a program started by
 * exec, which imports asyncio a few samples in, has its tasks from then on.
 */
static int ready(struct pyasync *a, uint64_t samples)
{
	const char *why;
	enum perr err;

	if (a->ready == -1 || samples < a->next_look || (a->ready && !a->old))
		return a->ready == 1;
	if (!a->ready) {
		a->gap = a->gap ? a->gap * 2 : 1;
		if (a->gap > PYASYNC_RETRY)
			a->gap = PYASYNC_RETRY;
	}
	a->next_look = samples + a->gap;
	if (a->old) {
		uint64_t mod, md_dict, current;

		/*
		 * asyncio.tasks._current_tasks: the task each running loop
		 * runs.  asyncio.tasks first binds a dict of its own, then
		 * _asyncio's in its place, and then _c_enter_task: only
		 * then is it the one.  Looked up again now and then all the
		 * same (a module reloaded).
		 */
		if ((mod = imported(a, "asyncio.tasks")) &&
		    !rmem_u64(a->mem, mod + PYVM_OFF(a->obj.lay, 16), &md_dict) &&
		    !pyobj_dict_get(&a->obj, md_dict, "_c_enter_task", &current) &&
		    !pyobj_dict_get(&a->obj, md_dict, "_current_tasks", &current)) {
			a->current = current;
			a->ready = 1;
		}
		if (a->ready)
			a->next_look = samples + PYASYNC_RELOOK;
		return a->ready == 1;
	}
	/*
	 * 3.14+: the AsyncioDebug section, of the executable or of the
	 * _asyncio extension module.  A module loaded since the maps were
	 * read is not in them: read them again once it is imported.
	 */
	err = published_layout(a, &why);
	if (err == PERR_NOTFOUND && imported(a, "_asyncio") && !target_refresh_maps(a->t))
		err = published_layout(a, &why);
	if (!err)
		a->ready = 1;
	else if (err == PERR_UNSUPPORTED)
		a->ready = -1;
	return a->ready == 1;
}

/* Is obj of the type called name (tp_name, at 24 of the type)?  *cache: the type, once seen. */
static int type_named(struct pyasync *a, uint64_t obj, const char *name, uint64_t *cache)
{
	size_t len = strlen(name) + 1;
	char buf[32];
	uint64_t type, tp_name;

	if (rmem_u64(a->mem, obj + a->host.lay->ob_type, &type) || !type)
		return 0;
	if (*cache)
		return type == *cache;
	if (len > sizeof(buf) || rmem_u64(a->mem, type + PYVM_OFF(a->obj.lay, 24), &tp_name) ||
	    rmem_read(a->mem, tp_name, buf, len) || memcmp(buf, name, len))
		return 0;
	*cache = type;
	return 1;
}

static uint64_t type_of(struct pyasync *a, uint64_t obj)
{
	uint64_t type = 0;

	if (rmem_u64(a->mem, obj + a->host.lay->ob_type, &type))
		return 0;
	return type;
}

/* An int object's value (3.9-3.11: ob_size digits; 3.12+: lv_tag), up to 64 bits. */
static enum perr int_value(struct pyasync *a, uint64_t obj, uint64_t *v)
{
	const struct pyvm_layout *L = a->obj.lay;
	unsigned char b[56];
	uint64_t n;

	*v = 0;
	if (rmem_read(a->mem, obj, b, PYVM_OFF(L, 40)))
		return PERR_CORRUPT;
	if (a->t->minor >= 12) {
		uint64_t tag = get_u64(b, PYVM_OFF(L, 16));

		if ((tag & 3) == 2)
			return PERR_CORRUPT;	/* negative */
		n = tag >> 3;
	} else {
		int64_t size = (int64_t)get_u64(b, PYVM_OFF(L, 16));

		if (size < 0)
			return PERR_CORRUPT;
		n = (uint64_t)size;
	}
	if (n > 3)
		return PERR_CORRUPT;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t d = get_u32(b, PYVM_OFF(L, (uint32_t)(24 + 4 * i)));

		if (d >> 30 || (i == 2 && d >> 4))
			return PERR_CORRUPT;
		*v |= d << (30 * i);
	}
	return PERR_OK;
}

uint64_t pyasync_loop_thread(struct pyasync *a, uint64_t loop)
{
	uint64_t tid_obj, tid, type;
	int kind;

	if (a->ready == -1 || pyobj_attr(&a->obj, loop, "_thread_id", &tid_obj) ||
	    pyobj_type(&a->obj, tid_obj, &type, &kind) || kind != PYOBJ_INT ||
	    int_value(a, tid_obj, &tid))
		return 0;
	return tid;
}

/*
 * 3.9-3.13: the task _current_tasks holds for the loop whose _thread_id
 * (set by run_forever()) is the thread's pthread id; *loop: one is there.
 */
static uint64_t old_running(struct pyasync *a, uint64_t thread_id, int *loop)
{
	uint64_t key[LOOPS_MAX], value[LOOPS_MAX];
	size_t n;

	a->loop = 0;
	if (a->host.dict(a->host.ctx, a->current, LOOPS_MAX, key, value, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (pyasync_loop_thread(a, key[i]) != thread_id)
			continue;
		*loop = 1;
		a->loop = key[i];
		return value[i];
	}
	return 0;
}

/* What a C task's fields say (3.9-3.13); PERR_CORRUPT if obj is no C task. */
static enum perr old_task(struct pyasync *a, uint64_t obj, unsigned char *tb, size_t cap)
{
	uint32_t need = pyaio_task_len(a->old);

	if (need > cap || !obj || !type_named(a, obj, "_asyncio.Task", &a->task_type) ||
	    rmem_read(a->mem, obj, tb, need))
		return PERR_CORRUPT;
	return PERR_OK;
}

/* Does the C task at p await what is at fut (its fut_waiter)? */
static int awaits(struct pyasync *a, uint64_t p, uint64_t fut)
{
	unsigned char pb[256];

	return !old_task(a, p, pb, sizeof(pb)) && get_u64(pb, a->old->fut_waiter) == fut;
}

/* The task a task-wakeup callback wakes (3.9 TaskWakeupMethWrapper, 3.11+ task_wakeup). */
static uint64_t wakes(struct pyasync *a, uint64_t cb)
{
	const struct pyaio_registry *O = a->old;
	uint64_t p = 0, ml, ml_name;
	char name[12];

	if (O->wakeup) {
		if (type_named(a, cb, O->wakeup, &a->wrapper_type))
			rmem_u64(a->mem, cb + O->wakeup_task, &p);
		return p;
	}
	/* a builtin function: its PyMethodDef (ml_name first) at 16 */
	if (!a->cfunc_type || type_of(a, cb) != a->cfunc_type ||
	    rmem_u64(a->mem, cb + PYVM_OFF(a->obj.lay, 16), &ml) || rmem_u64(a->mem, ml, &ml_name) ||
	    rmem_read(a->mem, ml_name, name, sizeof(name)) || memcmp(name, "task_wakeup", 12) ||
	    rmem_u64(a->mem, cb + O->wakeup_task, &p))
		return 0;
	return p;
}

/*
 * The task awaiting child through its done callback cb, 0 if cb is none
 * of asyncio's: a task awaiting it (checked: the task's fut_waiter is the
 * child), gather()'s (the task awaiting the gathering future, checked the
 * same way) or a TaskGroup's (its parent task, as 3.14 records it).
 */
static uint64_t parent_by(struct pyasync *a, uint64_t cb, uint64_t child)
{
	const struct pyvm_layout *L = a->obj.lay;
	uint64_t p, type = type_of(a, cb);

	if ((p = wakes(a, cb)))
		return awaits(a, p, child) ? p : 0;
	if (a->func_type && type == a->func_type) {
		/* gather()'s _done_callback: `outer' is a cell of its closure */
		uint64_t closure, n, cell, outer, cb0;

		if (rmem_u64(a->mem, cb + a->old->func_closure, &closure) || !closure ||
		    rmem_u64(a->mem, closure + PYVM_OFF(L, 16), &n) || n > CLOSURE_MAX)
			return 0;
		for (uint64_t i = 0; i < n; i++) {
			if (rmem_u64(a->mem, closure + PYVM_OFF(L, 24) + 8 * i, &cell) || !cell ||
			    !a->cell_type || type_of(a, cell) != a->cell_type ||
			    rmem_u64(a->mem, cell + PYVM_OFF(L, 16), &outer) || !outer ||
			    !type_named(a, outer, "_GatheringFuture", &a->gfut_type))
				continue;
			if (rmem_u64(a->mem, outer + a->old->fut_callback0, &cb0) ||
			    !(p = wakes(a, cb0)))
				return 0;
			return awaits(a, p, outer) ? p : 0;
		}
		return 0;
	}
	if (a->method_type && type == a->method_type) {
		/* TaskGroup._on_task_done: the group's _parent_task (im_self at 24) */
		uint64_t group;
		unsigned char pb[256];

		if (rmem_u64(a->mem, cb + PYVM_OFF(L, 24), &group) || !group ||
		    !type_named(a, group, "TaskGroup", &a->group_type) ||
		    pyobj_attr(&a->obj, group, "_parent_task", &p) || old_task(a, p, pb, sizeof(pb)))
			return 0;
		return p;
	}
	return 0;
}

/* The tasks awaiting the task whose fields are tb, each once, into out (at most max): how many. */
static unsigned int old_parents(struct pyasync *a, uint64_t task, const unsigned char *tb,
				uint64_t *out, unsigned int max)
{
	const struct pyvm_layout *L = a->obj.lay;
	uint64_t cb[CALLBACKS_MAX], list, size, items;
	unsigned int ncb = 0, n = 0;

	if ((cb[0] = get_u64(tb, a->old->fut_callback0)))
		ncb++;
	/* PyListObject: ob_size at 16, ob_item at 24; each item a (callback, context) tuple */
	list = get_u64(tb, a->old->fut_callbacks);
	if (list && !rmem_u64(a->mem, list + PYVM_OFF(L, 16), &size) && size < (1u << 20) &&
	    !rmem_u64(a->mem, list + PYVM_OFF(L, 24), &items))
		for (uint64_t i = 0; i < size && ncb < CALLBACKS_MAX; i++) {
			uint64_t tup;

			if (!rmem_u64(a->mem, items + 8 * i, &tup) &&
			    !rmem_u64(a->mem, tup + PYVM_OFF(L, 24), &cb[ncb]))
				ncb++;
		}
	for (unsigned int i = 0; i < ncb && n < max; i++) {
		uint64_t p = parent_by(a, cb[i], task);
		unsigned int j = 0;

		while (j < n && out[j] != p)
			j++;
		if (p && j == n)
			out[n++] = p;
	}
	return n;
}

unsigned int pyasync_awaiters(struct pyasync *a, uint64_t task, uint64_t *out, unsigned int max)
{
	unsigned char tb[256];

	if (a->ready == -1 || !a->old || old_task(a, task, tb, sizeof(tb)))
		return 0;
	return old_parents(a, task, tb, out, max);
}

uint64_t pyasync_running(struct pyasync *a, uint64_t tstate, uint64_t thread_id, int fresh,
			 int *loop, uint64_t samples)
{
	uint64_t w[2];
	uint64_t at;
	int dummy;

	if (!loop)
		loop = &dummy;
	*loop = 0;
	if (!ready(a, samples))
		return 0;
	if (a->old && fresh) {
		/*
		 * The task _current_tasks now holds for the loop found before:
		 * its key's hash is the loop's address, rotated by 4 bits
		 * (_Py_HashPointer).
		 */
		uint64_t now = 0, h = a->loop >> 4 | a->loop << 60;

		if (!a->loop)
			return 0;
		rmem_begin(&a->fresh, 1);	/* one read: where it read last time */
		if (pyobj_dict_get_hash(&a->fobj, a->current, h, &now))
			return 0;
		*loop = 1;
		return now;
	}
	if (a->old)
		return old_running(a, thread_id, loop);
	/* asyncio_running_loop, then asyncio_running_task right after it */
	at = tstate + a->T.aio[PYAIO_A_TS_LOOP];
	if (a->T.aio[PYAIO_A_TS_TASK] != a->T.aio[PYAIO_A_TS_LOOP] + 8)
		return 0;
	if (fresh)
		rmem_begin(&a->fresh, 1);	/* one read: where it read last time */
	if (rmem_read(fresh ? &a->fresh : a->mem, at, w, sizeof(w)))
		return 0;
	*loop = w[0] != 0;
	return w[0] ? w[1] & ~(uint64_t)3 : 0;
}

/* The one task of an awaited-by set, 0 if it holds several (*n: how many). */
static enum perr set_sole(struct pyasync *a, uint64_t set, uint64_t *sole, uint64_t *n)
{
	const struct pyaio_published *T = &a->T;
	unsigned char s[64], *tab;
	uint64_t used, mask, table;
	enum perr err = PERR_CORRUPT;

	*sole = 0;
	if (rmem_read(a->mem, set, s, sizeof(s)))
		return PERR_CORRUPT;
	used = get_u64(s, (uint32_t)T->set_used);
	mask = get_u64(s, (uint32_t)T->set_mask);
	table = get_u64(s, (uint32_t)T->set_table);
	if (mask >= SET_MAX || ((mask + 1) & mask) || used > mask + 1)
		return PERR_CORRUPT;
	*n = used;
	if (used != 1)
		return PERR_OK;
	tab = xmalloc((mask + 1) * 16);
	if (!rmem_read(a->mem, table, tab, (mask + 1) * 16)) {
		for (uint64_t i = 0; i <= mask; i++) {
			uint64_t key = get_u64(tab, (uint32_t)(i * 16));

			if (!key || (int64_t)get_u64(tab, (uint32_t)(i * 16 + 8)) == -1)
				continue;	/* empty, or a dummy left by a removal */
			if (*sole) {
				*sole = 0;	/* a second one: changed while read */
				break;
			}
			*sole = key;
		}
		err = *sole ? PERR_OK : PERR_CORRUPT;
	}
	free(tab);
	return err;
}

/* 3.9-3.13: pyasync_chain() from the tasks' fields and done callbacks. */
static enum perr old_chain(struct pyasync *a, uint64_t task, struct stack_frame *out,
			   unsigned int max, unsigned int *n, uint64_t *coro_frame)
{
	const struct pyaio_registry *O = a->old;
	uint64_t seen[PYASYNC_DEPTH];
	unsigned char tb[256];
	unsigned int k = 0;

	while (task && k < max && k < PYASYNC_DEPTH) {
		uint64_t parent[CALLBACKS_MAX];
		unsigned int more;
		char name[NAME_BUF - 8];

		for (unsigned int i = 0; i < k; i++)
			if (seen[i] == task)
				return PERR_CORRUPT;	/* a cycle: no program has one */
		seen[k] = task;
		if (old_task(a, task, tb, sizeof(tb)) || get_i32(tb, O->state) != 0)
			return PERR_CORRUPT;	/* no task, or not pending */
		if (!k) {
			uint64_t coro = get_u64(tb, O->coro), frame;

			if (!coro)
				return PERR_CORRUPT;
			if (O->gi_frame != PYVM_NONE) {
				if (rmem_u64(a->mem, coro + O->gi_frame, &frame) || !frame)
					return PERR_CORRUPT;
				*coro_frame = frame;
			} else {
				*coro_frame = coro + O->gi_iframe;
			}
		}
		if (pyaio_task_name(&a->obj, a->t->minor, get_u64(tb, O->name), name, sizeof(name)))
			return PERR_CORRUPT;
		snprintf(a->shown[k], NAME_BUF, "<task> %s", name);
		out[k] = (struct stack_frame){ a->shown[k], "", 0 };
		k++;
		more = old_parents(a, task, tb, parent, CALLBACKS_MAX);
		if (more > 1) {
			if (k < max && k < PYASYNC_DEPTH) {
				snprintf(a->shown[k], NAME_BUF, "<awaited by %u tasks>", more);
				out[k] = (struct stack_frame){ a->shown[k], "", 0 };
				k++;
			}
			break;
		}
		task = more ? parent[0] : 0;
	}
	*n = k;
	return PERR_OK;
}

enum perr pyasync_chain(struct pyasync *a, uint64_t task, struct stack_frame *out,
			unsigned int max, unsigned int *n, uint64_t *coro_frame)
{
	const struct pyaio_published *T = &a->T;
	uint64_t seen[PYASYNC_DEPTH];
	unsigned char tb[4096];
	unsigned int k = 0;

	*n = 0;
	*coro_frame = 0;
	if (a->ready == 1 && a->old)
		return old_chain(a, task, out, max, n, coro_frame);
	if (a->ready != 1 || T->aio[PYAIO_A_TASK_SIZE] > sizeof(tb))
		return PERR_UNSUPPORTED;
	while (task && k < max && k < PYASYNC_DEPTH) {
		uint64_t ab, more = 0;
		char name[NAME_BUF - 8];

		for (unsigned int i = 0; i < k; i++)
			if (seen[i] == task)
				return PERR_CORRUPT;	/* a cycle: no program has one */
		seen[k] = task;
		if (rmem_read(a->mem, task, tb, T->aio[PYAIO_A_TASK_SIZE]) ||
		    tb[T->aio[PYAIO_A_TASK_IS_TASK]] != 1)
			return PERR_CORRUPT;
		if (!k) {
			uint64_t coro = get_u64(tb, (uint32_t)T->aio[PYAIO_A_TASK_CORO]);

			if (!coro)
				return PERR_CORRUPT;
			*coro_frame = coro + T->gi_iframe;
		}
		/*
		 * Decoded anew each time, from the sample's window cache: a
		 * cache by task and name object would show a finished task's
		 * name for a new one that got both addresses (seen: short-1
		 * shown for short-2).
		 */
		if (pyaio_task_name(&a->obj, a->t->minor,
				 get_u64(tb, (uint32_t)T->aio[PYAIO_A_TASK_NAME]), name, sizeof(name)))
			return PERR_CORRUPT;
		snprintf(a->shown[k], NAME_BUF, "<task> %s", name);
		out[k] = (struct stack_frame){ a->shown[k], "", 0 };
		k++;
		ab = get_u64(tb, (uint32_t)T->aio[PYAIO_A_TASK_AWAITED_BY]) & ~(uint64_t)3;
		if (ab && tb[T->aio[PYAIO_A_TASK_AB_IS_SET]]) {
			if (set_sole(a, ab, &ab, &more))
				return PERR_CORRUPT;
			if (more > 1 && k < max && k < PYASYNC_DEPTH) {
				snprintf(a->shown[k], NAME_BUF, "<awaited by %llu tasks>",
					 (unsigned long long)more);
				out[k] = (struct stack_frame){ a->shown[k], "", 0 };
				k++;
			}
		}
		task = ab;
	}
	*n = k;
	return PERR_OK;
}

int pyasync_chain_same(struct pyasync *a, uint64_t task, unsigned int n)
{
	char before[PYASYNC_DEPTH][NAME_BUF];
	struct stack_frame out[PYASYNC_DEPTH];
	struct rmem *mem = a->mem;
	struct pyobj obj = a->obj;
	unsigned int again = 0;
	uint64_t coro_frame;
	enum perr err;
	int same;

	if (a->ready != 1 || n > PYASYNC_DEPTH)
		return 0;
	memcpy(before, a->shown, n * sizeof(before[0]));
	/* the chain read again through the fresh windows: what is there now */
	a->mem = &a->fresh;
	a->obj = a->fobj;
	err = pyasync_chain(a, task, out, PYASYNC_DEPTH, &again, &coro_frame);
	a->fobj = a->obj;	/* with the types it learned */
	a->mem = mem;
	a->obj = obj;
	same = !err && again == n;
	for (unsigned int i = 0; same && i < n; i++)
		same = !strcmp(before[i], a->shown[i]);
	/* the caller's frames point at a->shown: the names it was given */
	memcpy(a->shown, before, n * sizeof(before[0]));
	return same;
}
