/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python/pyaio.h"
#include "python/pyobj.h"
#include "python/pyvm.h"
#include "proc/rmem.h"
#include "proc/target.h"
#include "util/xalloc.h"

/* asyncio's layouts (pyaio.h). */

const struct pyaio_registry *pyaio_registry_for(const struct target *t)
{
	for (size_t i = 0; i < pyaio_nregistry; i++)
		if (pyaio_registry[i].minor == t->minor &&
		    pyaio_registry[i].free_threaded == t->free_threaded)
			return &pyaio_registry[i];
	return NULL;
}

uint32_t pyaio_task_len(const struct pyaio_registry *O)
{
	uint32_t end[] = { O->state + 4,    O->fut_waiter + 8,    O->coro + 8,
			   O->name + 8,     O->fut_callback0 + 8, O->fut_callbacks + 8 };
	uint32_t need = 0;

	for (size_t i = 0; i < sizeof(end) / sizeof(end[0]); i++)
		if (end[i] > need)
			need = end[i];
	return need;
}

/*
 * The asyncio offsets the target publishes, checked: every offset inside
 * its struct, and the task's against the shipped table (else fut_state is
 * not trusted).  PERR_NOTFOUND when asyncio is not loaded.
 */
enum perr pyaio_layout(struct rmem *mem, struct target *t, uint64_t runtime,
		       const struct pyaio_registry **old, struct pyaio_published *out,
		       int *state_known, const char **why)
{
	const struct pyaio_published *ship = NULL;
	uint64_t addr, size, img[13];
	unsigned char *dbg;
	enum perr err;

	*state_known = 0;
	if ((*old = pyaio_registry_for(t))) {
		*state_known = 1;
		return PERR_OK;
	}
	if (t->free_threaded) {
		*why = "pyrospy reads the asyncio tasks of a free-threaded CPython 3.13 only, "
		       "not of a later one (its objects are laid out otherwise)";
		return PERR_UNSUPPORTED;
	}
	for (size_t i = 0; i < pyaio_npublished; i++)
		if (pyaio_published[i].minor == t->minor)
			ship = &pyaio_published[i];
	if (!ship) {
		*why = "pyrospy reads the asyncio tasks of CPython 3.8 to 3.15 only";
		return PERR_UNSUPPORTED;
	}
	*out = *ship;
	/* built in (3.15 Debian), else the _asyncio extension module once imported */
	err = target_section(t, ".AsyncioDebug", &addr, &size);
	if (err)
		err = target_object_section(t, "_asyncio.", ".AsyncioDebug", &addr, &size);
	if (err == PERR_NOTFOUND) {
		*why = "the program has not imported asyncio";
		return PERR_NOTFOUND;
	}
	if (err)
		return err;
	if (size < sizeof(img) || rmem_read(mem, addr, img, sizeof(img))) {
		*why = "its _asyncio module's AsyncioDebug section cannot be read";
		return PERR_CORRUPT;
	}
	if (img[PYAIO_A_TASK_SIZE] < 64 || img[PYAIO_A_TASK_SIZE] > 4096 ||
	    img[PYAIO_A_INTERP_SIZE] > (64u << 20) || img[PYAIO_A_TS_SIZE] > (1u << 20)) {
		*why = "its AsyncioDebug offsets do not hold together";
		return PERR_CORRUPT;
	}
	for (int i = PYAIO_A_TASK_NAME; i <= PYAIO_A_TASK_NODE; i++)
		if (img[i] + 8 > img[PYAIO_A_TASK_SIZE])
			goto bad;
	if (img[PYAIO_A_INTERP_HEAD] + 16 > img[PYAIO_A_INTERP_SIZE])
		goto bad;
	for (int i = PYAIO_A_TS_LOOP; i <= PYAIO_A_TS_HEAD; i++)
		if (img[i] + 8 > img[PYAIO_A_TS_SIZE])
			goto bad;
	*state_known = !memcmp(img, ship->aio, 7 * sizeof(uint64_t));
	memcpy(out->aio, img, sizeof(img));

	/* the generic part, from _Py_DebugOffsets, checked against the shipped values */
	dbg = xmalloc(ship->dbg_size);
	err = rmem_read(mem, runtime, dbg, ship->dbg_size);
	if (!err && (get_u64(dbg, ship->pos_gi_iframe) != ship->gi_iframe ||
		     get_u64(dbg, ship->pos_gi_frame_state) != ship->gi_frame_state ||
		     get_u64(dbg, ship->pos_stackpointer) != ship->stackpointer ||
		     get_u64(dbg, ship->pos_set_used) != ship->set_used ||
		     get_u64(dbg, ship->pos_set_table) != ship->set_table ||
		     get_u64(dbg, ship->pos_set_mask) != ship->set_mask ||
		     get_u64(dbg, ship->pos_llist_next) != ship->llist_next))
		err = PERR_UNSUPPORTED;
	free(dbg);
	if (err == PERR_UNSUPPORTED)
		*why = "its _Py_DebugOffsets differ from the layout pyrospy knows for this version";
	else if (err)
		*why = "its _Py_DebugOffsets cannot be read";
	return err;
bad:
	*why = "its AsyncioDebug offsets do not hold together";
	return PERR_CORRUPT;
}

enum perr pyaio_task_name(struct pyobj *o, unsigned int minor, uint64_t obj, char *buf,
			  size_t cap)
{
	unsigned char lv[48];
	uint64_t type;
	int kind, cut = 0;
	enum perr err;

	if (cap < PYAIO_NAME_CP * 4 + 8)
		return PERR_TOOBIG;
	if ((err = pyobj_type(o, obj, &type, &kind)))
		return err;
	if (kind == PYOBJ_STR) {
		if ((err = pyobj_str(o, obj, PYAIO_NAME_CP, buf, cap - 3, &cut)))
			return err;
		if (cut)
			strcat(buf, "...");
		return PERR_OK;
	}
	if (kind != PYOBJ_INT || minor < 12 || rmem_read(o->mem, obj, lv, PYVM_OFF(o->lay, 32)))
		return PERR_CORRUPT;
	/* 3.12+ compact int: lv_tag at 16 (digits << 3 | sign), 30-bit digits at 24 */
	{
		uint64_t tag = get_u64(lv, PYVM_OFF(o->lay, 16)), n = tag >> 3, v = 0;

		if ((tag & 3) == 2 || n > 2)
			return PERR_CORRUPT;	/* asyncio counts from 1 */
		if (n >= 1)
			v = get_u32(lv, PYVM_OFF(o->lay, 24));
		if (n == 2)
			v |= (uint64_t)get_u32(lv, PYVM_OFF(o->lay, 28)) << 30;
		snprintf(buf, cap, "Task-%llu", (unsigned long long)v);
	}
	return PERR_OK;
}
