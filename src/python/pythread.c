/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "python/pythread.h"
#include "python/pyvm.h"
#include "proc/rmem.h"
#include "stack/stack.h"
#include "proc/target.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#define PYTHREAD_SLOTS	8192	/* power of two, twice the threads a reader shows */
#define SEARCH_EVERY	25	/* samples between two searches for threading */
#define COMM_MAX	16	/* the kernel's TASK_COMM_LEN */

void pythread_init(struct pythread *tn, struct rmem *mem, const struct pyvm_layout *lay,
		   struct target *t)
{
	memset(tn, 0, sizeof(*tn));
	pyobj_init(&tn->obj, mem, lay, t);
	tn->pid = t->pid;
	tn->ent = xcalloc(PYTHREAD_SLOTS, sizeof(*tn->ent));
}

static void ents_clear(struct pythread *tn)
{
	for (size_t i = 0; i < PYTHREAD_SLOTS; i++)
		free(tn->ent[i].name);
	memset(tn->ent, 0, PYTHREAD_SLOTS * sizeof(*tn->ent));
	tn->nent = 0;
}

void pythread_release(struct pythread *tn)
{
	if (!tn->ent)
		return;
	ents_clear(tn);
	free(tn->ent);
	tn->ent = NULL;
}

/* The slot of (interp_id, ident, tid): its own, or the empty one where it goes. */
static struct pythread_ent *ent_slot(struct pythread *tn, uint64_t interp_id, uint64_t ident,
				     pid_t tid)
{
	uint64_t h = (ident ^ (uint64_t)(uint32_t)tid * 0x9E3779B97F4A7C15ull ^
		      interp_id * 0x94D049BB133111EBull) * 0xBF58476D1CE4E5B9ull;
	size_t i = (size_t)(h >> 40) & (PYTHREAD_SLOTS - 1);

	for (;; i = (i + 1) & (PYTHREAD_SLOTS - 1)) {
		struct pythread_ent *e = &tn->ent[i];

		if ((e->ident == ident && e->tid == tid && e->interp_id == interp_id &&
		     e->read_at) || !e->read_at)
			return e;
	}
}

/*
 * The state kept for the interpreter at addr (id id): its own, else an
 * empty slot, else the one used least recently, started again.  Slots
 * are never emptied, so none of addr's is past an empty one.
 */
static struct pythread_interp *interp_slot(struct pythread *tn, uint64_t addr, uint64_t id,
					   uint64_t sample)
{
	struct pythread_interp *pi = &tn->interp[0];

	for (size_t i = 0; i < PYTHREAD_INTERPS; i++) {
		struct pythread_interp *q = &tn->interp[i];

		if (q->addr == addr && q->id == id) {
			pi = q;
			break;
		}
		if (!q->addr) {
			pi = q;
			break;
		}
		if (q->used_at < pi->used_at)
			pi = q;
	}
	if (pi->addr != addr || pi->id != id) {
		memset(pi, 0, sizeof(*pi));
		pi->addr = addr;
		pi->id = id;
	}
	pi->used_at = sample;
	return pi;
}

/*
 * /proc/PID/task/TID/comm (or /proc/PID/comm with tid 0), raw bytes
 * without the newline, into out (COMM_MAX bytes); 0 if unreadable.
 */
static size_t comm_read(pid_t pid, pid_t tid, char *out)
{
	char path[64];
	ssize_t n;
	int fd;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, out, COMM_MAX);
	close(fd);
	if (n <= 0)
		return 0;
	if (out[n - 1] == '\n')
		n--;
	return (size_t)n;
}

/* Find pi's threading._active, at most once every SEARCH_EVERY samples. */
static void active_search(struct pythread *tn, struct pythread_interp *pi, uint64_t sample)
{
	const struct pyvm_layout *L = tn->obj.lay;
	uint64_t modules, used, keys, mod, md_dict, active;
	int kind;

	if (sample < pi->search_at || L->interp.modules == PYVM_NONE)
		return;
	pi->search_at = sample + SEARCH_EVERY;
	/* PyDictObject: ma_used at 16, ma_keys at 32; look again only when it changed */
	if (rmem_u64(tn->obj.mem, pi->addr + L->interp.modules, &modules) || !modules ||
	    rmem_u64(tn->obj.mem, modules + PYVM_OFF(L, 16), &used) ||
	    rmem_u64(tn->obj.mem, modules + PYVM_OFF(L, 32), &keys) ||
	    (keys == pi->seen[0] && used == pi->seen[1]))
		return;
	if (pyobj_dict_get(&tn->obj, modules, "threading", &mod) ||
	    pyobj_type(&tn->obj, mod, &md_dict, &kind) ||
	    (tn->obj.type[PYOBJ_MODULE] && kind != PYOBJ_MODULE) ||
	    /* PyModuleObject: md_dict right after the object header */
	    rmem_u64(tn->obj.mem, mod + PYVM_OFF(L, 16), &md_dict) ||
	    pyobj_dict_get(&tn->obj, md_dict, "_active", &active) ||
	    pyobj_type(&tn->obj, active, &keys, &kind) ||
	    (tn->obj.type[PYOBJ_DICT] && kind != PYOBJ_DICT)) {
		/* not imported yet, or its body not run yet: when sys.modules changes */
		pi->seen[0] = keys;
		pi->seen[1] = used;
		return;
	}
	pi->active = active;
}

/* Thread.name of the thread ident in pi, into out; 0 if none could be read. */
static int python_name(struct pythread *tn, struct pythread_interp *pi, uint64_t ident,
		       uint64_t sample, char *out, size_t cap)
{
	uint64_t thread, name;
	int cut;
	enum perr err;

	if (!pi->active)
		active_search(tn, pi, sample);
	if (!pi->active)
		return 0;
	err = pyobj_dict_get_hash(&tn->obj, pi->active, ident, &thread);
	if (err && err != PERR_NOTFOUND) {
		pi->active = 0;		/* replaced (threading reloaded?) or torn: look again */
		pi->seen[0] = pi->seen[1] = 0;
		pi->search_at = 0;
		return 0;
	}
	if (err || pyobj_attr(&tn->obj, thread, "_name", &name) ||
	    pyobj_str(&tn->obj, name, PYTHREAD_NAME_MAX, out, cap - sizeof(STACK_CUT_MARK), &cut))
		return 0;
	if (cut)
		strcat(out, STACK_CUT_MARK);
	return 1;
}

/*
 * Bytes of s (n) without a last character cut short: 3.14 sets the OS name
 * to the first 15 bytes of the Python name's UTF-8, even in mid-character.
 */
static size_t whole_chars(const char *s, size_t n)
{
	size_t i = n, need;

	while (i > 0 && n - i < 4 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (!i || !((unsigned char)s[i - 1] & 0x80))
		return n;
	need = ((unsigned char)s[i - 1] & 0xe0) == 0xc0 ? 2 :
	       ((unsigned char)s[i - 1] & 0xf0) == 0xe0 ? 3 : 4;
	return n - (i - 1) < need ? i - 1 : n;
}

/*
 * The process's name (/proc/PID/comm) as of sample number `sample': read
 * once a sample, not once a thread (a dump of 1000 threads read it 1000
 * times).  Its bytes into *out; their number.
 */
static size_t proc_comm(struct pythread *tn, uint64_t sample, const char **out)
{
	if (!tn->proc_at || tn->proc_at != sample + 1) {
		tn->proc_nc = comm_read(tn->pid, 0, tn->proc);
		tn->proc_at = sample + 1;
	}
	*out = tn->proc;
	return tn->proc_nc;
}

/*
 * Read the thread's names now: Python's, and the kernel's when it is
 * neither the start of Python's nor the process's name.  The kernel's is
 * known (kcomm, kn bytes) or read here (kcomm NULL).
 */
static char *name_read(struct pythread *tn, struct pythread_interp *pi, uint64_t ident,
		       pid_t tid, const char *kcomm, size_t kn, uint64_t sample)
{
	char py[PYTHREAD_NAME_MAX * 4 + 1 + sizeof(STACK_CUT_MARK)], comm[COMM_MAX];
	char clean[COMM_MAX * 3 + 1], head[COMM_MAX * 3 + 1];
	int has_py = python_name(tn, pi, ident, sample, py, sizeof(py));
	const char *proc;
	size_t nc = 0, np;

	if (tid > 0 && kcomm && kn <= COMM_MAX)
		memcpy(comm, kcomm, nc = kn);
	else if (tid > 0)
		nc = comm_read(tn->pid, tid, comm);
	if (nc) {
		np = proc_comm(tn, sample, &proc);
		/* compared as shown: sanitized, a last character cut short dropped */
		utf8_sanitize(head, sizeof(head), comm, whole_chars(comm, nc));
		if ((np == nc && !memcmp(proc, comm, nc)) ||
		    (has_py && !strncmp(py, head, strlen(head))))
			nc = 0;		/* inherited, or set from the Python name */
	}
	if (nc)
		utf8_sanitize(clean, sizeof(clean), comm, nc);
	if (has_py && nc)
		return xstrfmt("%s [%s]", py, clean);
	if (has_py)
		return xstrdup(py);
	if (nc)
		return xstrfmt("[%s]", clean);
	return NULL;
}

const char *pythread_name(struct pythread *tn, uint64_t interp, uint64_t interp_id,
			  uint64_t ident, pid_t tid, const char *comm, size_t nc, uint64_t sample)
{
	struct pythread_ent *e = ent_slot(tn, interp_id, ident, tid);
	uint64_t every = PYTHREAD_REFRESH + (uint64_t)(e - tn->ent) % (PYTHREAD_REFRESH / 2);
	char *name;

	if (e->read_at && sample - e->read_at < every && sample >= e->read_at)
		return e->name;
	if (!e->read_at) {
		if (tn->nent >= PYTHREAD_SLOTS / 2) {
			ents_clear(tn);		/* threads came and went: start again */
			e = ent_slot(tn, interp_id, ident, tid);
		}
		tn->nent++;
		e->interp_id = interp_id;
		e->ident = ident;
		e->tid = tid;
	}
	e->read_at = sample ? sample : 1;
	name = name_read(tn, interp_slot(tn, interp, interp_id, sample), ident, tid, comm, nc,
			 sample);
	if (name || !e->name) {		/* a failed read keeps the last name */
		free(e->name);
		e->name = name;
	}
	return e->name;
}
