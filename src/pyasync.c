/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "procmem.h"
#include "pyasync.h"
#include "pyobj.h"
#include "pyreader.h"
#include "pytasks.h"
#include "pyvm.h"
#include "rmem.h"
#include "target.h"
#include "xalloc.h"

/*
 * record --async (pyasync.h).  Where things are comes from pytasks.c
 * (the target's AsyncioDebug offsets, checked against the shipped table);
 * every word read is checked before it is followed: a task must say it is
 * one (task_is_task), a chain is bounded and may not loop, a set of
 * awaiters is bounded.
 */

#define NAME_BUF	1100		/* "<task> " and a name of 256 code points */
#define SET_MAX		(1u << 16)	/* slots of an awaited-by set */

struct pyasync {
	struct pyreader *pr;
	struct target *t;
	struct rmem *mem;
	struct pyobj obj;
	int ready;			/* 1: layout known; -1: never will be */
	uint64_t next_look;		/* sample count of the next look for asyncio */
	struct pytasks_published T;
	char shown[PYASYNC_DEPTH][NAME_BUF];	/* the names of the last chain */
};

enum perr pyasync_supported(const struct target *t, const char **why)
{
	if (t->lang != TARGET_PYTHON) {
		*why = "it reads the asyncio tasks of Python";
		return PERR_UNSUPPORTED;
	}
	if (t->free_threaded) {
		*why = "it reads the asyncio tasks of GIL builds only, not of a free-threaded one";
		return PERR_UNSUPPORTED;
	}
	if (t->major != 3 || (t->minor != 14 && t->minor != 15)) {
		*why = "it reads the running task of CPython 3.14 and 3.15 only";
		return PERR_UNSUPPORTED;
	}
	return PERR_OK;
}

struct pyasync *pyasync_new(struct pyreader *pr, struct target *t)
{
	struct pyasync *a = xcalloc(1, sizeof(*a));
	const char *why;

	a->pr = pr;
	a->t = t;
	a->mem = pyreader_mem(pr);
	if (pyasync_supported(t, &why))
		a->ready = -1;
	else
		pyobj_init(&a->obj, a->mem, pyreader_layout(pr), t);
	return a;
}

void pyasync_free(struct pyasync *a)
{
	if (!a)
		return;
	free(a);
}

/* The layout, once asyncio is imported (looked for every PYASYNC_RETRY samples). */
static int ready(struct pyasync *a, uint64_t samples)
{
	const char *why;
	enum perr err;

	if (a->ready || samples < a->next_look)
		return a->ready == 1;
	a->next_look = samples + PYASYNC_RETRY;
	err = pytasks_layout(a->pr, a->t, &a->T, &why);
	if (!err)
		a->ready = 1;
	else if (err == PERR_UNSUPPORTED)
		a->ready = -1;
	return a->ready == 1;
}

uint64_t pyasync_running(struct pyasync *a, uint64_t tstate, int fresh, int *loop,
			 uint64_t samples)
{
	uint64_t w[2];
	uint64_t at;

	if (loop)
		*loop = 0;
	if (!ready(a, samples))
		return 0;
	/* asyncio_running_loop, then asyncio_running_task right after it */
	at = tstate + a->T.aio[PYTASKS_A_TS_LOOP];
	if (a->T.aio[PYTASKS_A_TS_TASK] != a->T.aio[PYTASKS_A_TS_LOOP] + 8)
		return 0;
	if (fresh ? procmem_read(&a->t->mem, at, w, sizeof(w)) : rmem_read(a->mem, at, w, sizeof(w)))
		return 0;
	if (loop)
		*loop = w[0] != 0;
	return w[0] ? w[1] & ~(uint64_t)3 : 0;
}

/* The one task of an awaited-by set, 0 if it holds several (*n: how many). */
static enum perr set_sole(struct pyasync *a, uint64_t set, uint64_t *sole, uint64_t *n)
{
	const struct pytasks_published *T = &a->T;
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

enum perr pyasync_chain(struct pyasync *a, uint64_t task, struct stack_frame *out,
			unsigned int max, unsigned int *n, uint64_t *coro_frame)
{
	const struct pytasks_published *T = &a->T;
	uint64_t seen[PYASYNC_DEPTH];
	unsigned char tb[4096];
	unsigned int k = 0;

	*n = 0;
	*coro_frame = 0;
	if (a->ready != 1 || T->aio[PYTASKS_A_TASK_SIZE] > sizeof(tb))
		return PERR_UNSUPPORTED;
	while (task && k < max && k < PYASYNC_DEPTH) {
		uint64_t ab, more = 0;
		char name[NAME_BUF - 8];

		for (unsigned int i = 0; i < k; i++)
			if (seen[i] == task)
				return PERR_CORRUPT;	/* a cycle: no program has one */
		seen[k] = task;
		if (rmem_read(a->mem, task, tb, T->aio[PYTASKS_A_TASK_SIZE]) ||
		    tb[T->aio[PYTASKS_A_TASK_IS_TASK]] != 1)
			return PERR_CORRUPT;
		if (!k) {
			uint64_t coro = get_u64(tb, (uint32_t)T->aio[PYTASKS_A_TASK_CORO]);

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
		if (pytasks_name(&a->obj, a->t->minor,
				 get_u64(tb, (uint32_t)T->aio[PYTASKS_A_TASK_NAME]), name, sizeof(name)))
			return PERR_CORRUPT;
		snprintf(a->shown[k], NAME_BUF, "<task> %s", name);
		out[k] = (struct stack_frame){ a->shown[k], "", 0 };
		k++;
		ab = get_u64(tb, (uint32_t)T->aio[PYTASKS_A_TASK_AWAITED_BY]) & ~(uint64_t)3;
		if (ab && tb[T->aio[PYTASKS_A_TASK_AB_IS_SET]]) {
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
