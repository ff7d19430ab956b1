/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "profile/profile.h"
#include "proc/ptree.h"
#include "sample/reader.h"
#include "sample/sampler.h"
#include "stack/tags.h"
#include "proc/target.h"
#include "util/xalloc.h"

#define NSEC 1000000000ll
#define STARTUP_WAIT_NS (10 * NSEC)	/* for an interpreter still starting */
#define OWED_NS (NSEC / 50)		/* ticks made up for, at most: 20 ms of them */
#define CHILDREN_NS (NSEC / 100)	/* --subprocesses: children looked for this often */
#define CHILDREN_MAX 256		/* children of one process listed per look */
#define CHILDREN_LOOKS 16		/* of them not sampled already, looked at (newest first) */
#define CHILDREN_OPENS 4		/* and opened, of all the processes, per look */
#define CHILDREN_YOUNG_NS (NSEC / 2)	/* one no interpreter at birth, looked at again */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NSEC + ts.tv_nsec;
}

static double wall_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

struct adder {
	struct profile *p;
	const struct sampler_opts *opts;
	struct target *t;	/* whose stacks these are */
	char *last, *merged;	/* the program's last tag set, and it with --tag */
	int64_t when;		/* the tick's Unix time in ns, for opts->sample */
};

/* The stack's tags under the command line's (the program's win). */
static const char *with_cli_tags(struct adder *a, const char *tags)
{
	if (tags == tags_unknown)
		return NULL;	/* the program's were not read: --tag's may be wrong */
	if (!a->opts->tags || !*a->opts->tags)
		return tags;
	if (!tags || !*tags)
		return a->opts->tags;
	if (!a->last || strcmp(a->last, tags)) {
		free(a->last);
		free(a->merged);
		a->last = xstrdup(tags);
		a->merged = tags_merge(tags, a->opts->tags);
	}
	return a->merged;
}

static void add_stack(void *arg, const struct stack *st)
{
	struct adder *a = arg;
	const char *tags;

	/*
	 * The stack was read of a pid: only while the process held is still
	 * alive is that pid its, and the stack its.  A process gone may
	 * already have a successor on the pid, another user's.
	 */
	if (a->t && !procmem_alive(&a->t->mem))
		return;
	tags = with_cli_tags(a, st->tags);
	if (a->opts->count_only)
		a->p->total++;
	else
		profile_add(a->p, tags, st, 1);
	if (a->opts->add)
		a->opts->add(a->opts->arg, tags, st);
	if (a->opts->sample)
		a->opts->sample(a->opts->sample_arg, a->when, tags, st);
}

/*
 * One process being sampled.  Slot 0 is the caller's target (or empty when
 * it is not an interpreter and only its subprocesses are profiled); with
 * --subprocesses, descendants found to be interpreters get slots of their
 * own.
 */
struct slot {
	struct target own;
	struct target *t;
	struct reader *r;
	int64_t since;		/* first seen, for an interpreter still starting */
	int64_t failing;	/* when making a reader first failed, 0: it has not */
	int done;
	enum perr end;		/* why it is done */
	int told;		/* opts->event() was told it is forgotten */
	unsigned int execs;	/* exec()s seen */
	struct reader_stats before;	/* of the readers of earlier images */
	uint64_t reads_before, ranges_before;
};

/*
 * A descendant that was no interpreter when looked at, and its executable;
 * looked at again until `until' (one found at birth may be an interpreter
 * whose loader has not mapped its library yet).
 */
struct tried {
	pid_t pid;
	char exe[256];
	int64_t until;
	int64_t again;	/* 0, or when a process want() put off is looked at again */
};

struct run {
	const struct sampler_opts *opts;
	struct sampler_result *res;
	struct slot **slot;		/* each allocated alone: readers point into it */
	size_t nslot, aslot;
	struct tried *tried;
	size_t ntried, atried;
	struct procmem root;	/* --subprocesses: the process whose tree it is */
	struct slot gone;	/* what the slots retire() let go had counted */
	int64_t start;
	double cpu0;
};

static struct slot *slot_add(struct run *run, struct target *t)
{
	struct slot *sl;

	if (run->nslot == run->aslot) {
		run->aslot = run->aslot ? run->aslot * 2 : 8;
		run->slot = xreallocarray(run->slot, run->aslot, sizeof(*run->slot));
	}
	sl = xcalloc(1, sizeof(*sl));
	run->slot[run->nslot++] = sl;
	sl->t = t ? t : &sl->own;
	sl->since = now_ns();
	return sl;
}

/* What the readers and clock say so far, for the caller's once-a-second look. */
static void progress(struct run *run)
{
	struct sampler_result *res = run->res;

	res->elapsed = (double)(now_ns() - run->start) / NSEC;
	res->cpu = cpu_seconds() - run->cpu0;
	res->stacks = res->dropped = res->retries = res->reads = res->ranges = res->tags_dropped = 0;
	res->unqualified = res->anchored = res->reused = 0;
	for (size_t i = 0; i < run->nslot; i++) {
		const struct slot *sl = run->slot[i];

		res->stacks += sl->before.stacks;
		res->dropped += sl->before.dropped;
		res->retries += sl->before.retries;
		res->tags_dropped += sl->before.tags_dropped;
		res->unqualified += sl->before.unqualified;
		res->anchored += sl->before.anchored;
		res->reused += sl->before.reused;
		if (sl->r) {
			res->stacks += reader_stats(sl->r)->stacks;
			res->dropped += reader_stats(sl->r)->dropped;
			res->retries += reader_stats(sl->r)->retries;
			res->tags_dropped += reader_stats(sl->r)->tags_dropped;
			res->unqualified += reader_stats(sl->r)->unqualified;
			res->anchored += reader_stats(sl->r)->anchored;
			res->reused += reader_stats(sl->r)->reused;
		}
		res->reads += sl->reads_before + sl->t->mem.calls;
		res->ranges += sl->ranges_before + sl->t->mem.ranges;
	}
	res->stacks += run->gone.before.stacks;
	res->dropped += run->gone.before.dropped;
	res->retries += run->gone.before.retries;
	res->tags_dropped += run->gone.before.tags_dropped;
	res->unqualified += run->gone.before.unqualified;
	res->anchored += run->gone.before.anchored;
	res->reused += run->gone.before.reused;
	res->reads += run->gone.reads_before;
	res->ranges += run->gone.ranges_before;
}

/*
 * --subprocesses: the slots of subprocesses that ended and are gone are let
 * go, their counts kept (a server that forks a child a request would
 * otherwise keep a reader and the maps of each, found at every tick); none
 * of them hides a new process on its pid (known()).  Slot 0 stays.  So
 * are the descendants that were no interpreter and are gone: their pids
 * would be looked at afresh anyway, and the list would grow with each.
 */
static void retire(struct run *run)
{
	size_t first = run->opts->fleet ? 0 : 1, k = first;

	for (size_t i = first; i < run->nslot; i++) {
		struct slot *sl = run->slot[i];
		struct reader_stats *b = &run->gone.before;

		if (sl->done && !sl->told && run->opts->event) {
			sl->told = 1;
			run->opts->event(run->opts->arg, SAMPLER_FORGOTTEN, sl->t->pid, sl->t,
					 perr_str(sl->end));
		}
		if (!sl->done || sl->t != &sl->own || procmem_alive(&sl->own.mem)) {
			run->slot[k++] = sl;
			continue;
		}
		b->stacks += sl->before.stacks;
		b->dropped += sl->before.dropped;
		b->retries += sl->before.retries;
		b->tags_dropped += sl->before.tags_dropped;
		b->unqualified += sl->before.unqualified;
		b->anchored += sl->before.anchored;
		b->reused += sl->before.reused;
		if (sl->r) {
			b->stacks += reader_stats(sl->r)->stacks;
			b->dropped += reader_stats(sl->r)->dropped;
			b->retries += reader_stats(sl->r)->retries;
			b->tags_dropped += reader_stats(sl->r)->tags_dropped;
			b->unqualified += reader_stats(sl->r)->unqualified;
			b->anchored += reader_stats(sl->r)->anchored;
			b->reused += reader_stats(sl->r)->reused;
		}
		run->gone.reads_before += sl->reads_before + sl->own.mem.calls;
		run->gone.ranges_before += sl->ranges_before + sl->own.mem.ranges;
		reader_free(sl->r);
		target_close(&sl->own);
		free(sl);
	}
	if (run->nslot > first)
		run->nslot = k;
	/* and the pids looked at that are free again (signal 0 sends nothing) */
	k = 0;
	for (size_t i = 0; i < run->ntried; i++)
		if (!kill(run->tried[i].pid, 0) || errno != ESRCH)
			run->tried[k++] = run->tried[i];
	run->ntried = k;
}

/* The target of /proc/PID/exe, "" when it cannot be read. */
static void exe_of(pid_t pid, char *exe, size_t cap)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, cap - 1);
	exe[n > 0 ? n : 0] = '\0';
}

/* pid's entry in the list of processes looked at and left, or NULL */
static struct tried *tried_of(struct run *run, pid_t pid)
{
	for (size_t i = 0; i < run->ntried; i++)
		if (run->tried[i].pid == pid)
			return &run->tried[i];
	return NULL;
}

static int known(struct run *run, pid_t pid)
{
	const struct tried *tr;
	char exe[256];

	/* a slot's process ended: a new one on its pid is another process */
	for (size_t i = 0; i < run->nslot; i++)
		if (run->slot[i]->t->pid == pid &&
		    (!run->slot[i]->done || procmem_alive(&run->slot[i]->t->mem)))
			return 1;
	exe_of(pid, exe, sizeof(exe));
	/* a shell that became python by exec() is worth another look */
	tr = tried_of(run, pid);
	return tr && !strcmp(tr->exe, exe) && (!tr->until || now_ns() >= tr->until) &&
	       (!tr->again || now_ns() < tr->again);
}

/*
 * until: 0, or when a process just born stops being looked at again.
 * Returns 1 when pid is new to the list or runs another image, else 0.
 */
static int forget_tried(struct run *run, pid_t pid, const char *exe, int64_t until)
{
	for (size_t i = 0; i < run->ntried; i++) {
		if (run->tried[i].pid == pid) {
			int other = strcmp(run->tried[i].exe, exe) != 0;

			/* another image: a window of its own */
			if (other)
				run->tried[i].until = until;
			run->tried[i].again = 0;
			snprintf(run->tried[i].exe, sizeof(run->tried[i].exe), "%s", exe);
			return other;
		}
	}
	if (run->ntried == run->atried) {
		run->atried = run->atried ? run->atried * 2 : 16;
		run->tried = xreallocarray(run->tried, run->atried, sizeof(*run->tried));
	}
	run->tried[run->ntried].pid = pid;
	run->tried[run->ntried].until = until;
	run->tried[run->ntried].again = 0;
	snprintf(run->tried[run->ntried].exe, sizeof(run->tried[0].exe), "%s", exe);
	run->ntried++;
	return 1;
}

static void event(struct run *run, enum sampler_event ev, pid_t pid, struct target *t,
		  const char *why)
{
	if (run->opts->event)
		run->opts->event(run->opts->arg, ev, pid, t, why);
}

/*
 * t, opened from pids (a snapshot), is of the tree still: the root itself
 * (both held alive: one process), or a process whose parent, read while t
 * is held, is the root or one of pids.
 */
static int in_tree(struct run *run, const pid_t *pids, int n, struct target *t)
{
	pid_t ppid = t->pid == run->opts->root ? 0 : ptree_parent(t->pid);

	if (t->pid == run->opts->root)
		return procmem_alive(&t->mem) && procmem_alive(&run->root);
	if (!procmem_alive(&t->mem) || ppid <= 0)
		return 0;
	if (ppid == run->opts->root)
		return procmem_alive(&run->root);
	for (int i = 0; i < n; i++)
		if (pids[i] == ppid)
			return 1;
	return 0;
}

/*
 * Open pid, a descendant found, and give it a slot if it is an interpreter
 * and of the tree still: listed of parent (held), when parent is given,
 * else as in_tree() says of the snapshot pids.
 */
static void consider(struct run *run, pid_t pid, const pid_t *pids, int n,
		     struct procmem *parent, int64_t until)
{
	struct slot *sl;
	enum perr err;
	const char *why = NULL;
	struct tried *tr;
	int w;

	if (run->opts->want && (w = run->opts->want(run->opts->arg, pid, &why)) != SAMPLER_WANT) {
		char exe[256];
		int new;

		exe_of(pid, exe, sizeof(exe));
		new = forget_tried(run, pid, exe, 0);
		/* put off: said once, looked at again in a while */
		if (w == SAMPLER_WANT_LATER)
			tried_of(run, pid)->again = now_ns() + SAMPLER_AGAIN_NS;
		if (new)
			event(run, SAMPLER_SKIPPED, pid, NULL, why);
		return;
	}
	/* one put off before: its next reason (or none) is said as for a new one */
	tr = tried_of(run, pid);
	if (tr && tr->again)
		*tr = run->tried[--run->ntried];
	/* opened in place: the target points into itself */
	sl = slot_add(run, NULL);
	err = target_open(&sl->own, pid);
	/*
	 * The process opened is the one listed if, held, its parent is
	 * still one of the tree (a pid listed and reused in between has
	 * another parent, the one that started it).
	 */
	if (!err && parent && (!procmem_alive(&sl->own.mem) || ptree_parent(pid) != parent->pid ||
			       !procmem_alive(parent)))
		err = PERR_EXITED;
	else if (!err && !parent && !in_tree(run, pids, n, &sl->own))
		err = PERR_EXITED;
	if (sl->own.refused && run->opts->announce && err)
		fprintf(stderr, "pyrospy: not profiling subprocess %d ('%s'): refused to read "
			"'%s': %s\n", (int)pid, sl->own.comm, sl->own.refused,
			sl->own.refused_why);
	else if (sl->own.refused && run->opts->announce)
		fprintf(stderr, "pyrospy: warning: refused to read '%s' of subprocess %d "
			"('%s'): %s\n", sl->own.refused, (int)pid, sl->own.comm,
			sl->own.refused_why);
	if (!err) {
		if (run->opts->announce)
			fprintf(stderr, "pyrospy: profiling subprocess %d (%s %s, %s)\n",
				(int)sl->own.pid, target_lang_name(sl->own.lang),
				sl->own.version, sl->own.comm);
		event(run, SAMPLER_FOUND, pid, &sl->own, NULL);
		return;
	}
	/* maps past their bounds (procmaps.h): said once, not read every tick */
	if (err == PERR_TOOBIG && !sl->own.maps.nr) {
		char exe[256];

		if (run->opts->announce)
			fprintf(stderr, "pyrospy: not profiling subprocess %d ('%s'): its "
				"memory maps are past pyrospy's bounds\n", (int)pid, sl->own.comm);
		exe_of(pid, exe, sizeof(exe));
		if (forget_tried(run, pid, exe, 0))
			event(run, SAMPLER_SKIPPED, pid, NULL, "its memory maps are past pyrospy's bounds");
	}
	if ((err == PERR_NOTINTERP || err == PERR_UNSUPPORTED || err == PERR_PERM ||
	     err == PERR_REFUSED) &&
	    forget_tried(run, pid, sl->own.exe_path ? sl->own.exe_path : "", until))
		event(run, SAMPLER_SKIPPED, pid, NULL, perr_str(err));
	else if (err == PERR_EXITED || err == PERR_NOPROC)
		event(run, SAMPLER_SKIPPED, pid, NULL, "gone");
	target_close(&sl->own);
	free(sl);
	run->nslot--;
}

/* --subprocesses: give every new interpreter among the descendants a slot. */
static void discover(struct run *run)
{
	pid_t *pids;
	int n;

	retire(run);
	n = ptree_descendants(run->opts->root, &pids);
	/*
	 * The root alive after the list was made: the pids whose parent was
	 * its pid were its descendants (a new process on its pid has others).
	 */
	if (n >= 0 && !procmem_alive(&run->root)) {
		free(pids);
		return;
	}
	/* root itself too: a shell may have exec()'d an interpreter */
	if (n >= 0) {
		pids = xreallocarray(pids, (size_t)n + 1, sizeof(*pids));
		pids[n++] = run->opts->root;
	}
	for (int i = 0; i < n; i++)
		if (!known(run, pids[i]))
			consider(run, pids[i], pids, n, NULL,
				 run->opts->fleet ? now_ns() + CHILDREN_YOUNG_NS : 0);
	if (n > 0)
		free(pids);
}

/* Is pid that of one of the first nslot slots, sampled still? */
static int held(struct run *run, size_t nslot, pid_t pid)
{
	for (size_t i = 0; i < nslot; i++)
		if (!run->slot[i]->done && run->slot[i]->t->pid == pid)
			return 1;
	return 0;
}

/*
 * --subprocesses, every tick (every CHILDREN_NS at most): the children of
 * the processes held, the root and every interpreter sampled, from
 * /proc/PID/task/TID/children, so that a fork or a spawn is sampled from
 * the next tick on, not from the next scan of /proc (once a second, which
 * still finds the rest: the children of a process that is no interpreter,
 * of threads past the first PTREE_TASKS, past the bounds below).  A small
 * read per thread of each process held, not one per process of the
 * machine; of each, CHILDREN_LOOKS new children looked at, and of all,
 * CHILDREN_OPENS opened: a target that forks without end costs no more.
 */
static void discover_children(struct run *run)
{
	pid_t kids[CHILDREN_MAX];
	size_t nheld = run->nslot;	/* the slots added here are new children */
	int opens = 0;

	for (size_t h = 0; h <= nheld && opens < CHILDREN_OPENS; h++) {
		struct procmem *parent = h == nheld ? &run->root : &run->slot[h]->t->mem;
		int n, looks = 0;

		if (h < nheld && run->slot[h]->done)
			continue;
		if (h == nheld && held(run, nheld, parent->pid))
			continue;	/* the root is sampled: looked at already */
		if (!procmem_alive(parent))
			continue;
		n = ptree_children(parent->pid, kids, CHILDREN_MAX);
		/* the kernel lists children oldest first: the new ones are last */
		for (int i = n - 1; i >= 0 && looks < CHILDREN_LOOKS && opens < CHILDREN_OPENS; i--) {
			if (held(run, run->nslot, kids[i]))
				continue;
			looks++;
			if (known(run, kids[i]))
				continue;
			/* a zombie is no process to read: it waits for its parent */
			if (target_exiting(kids[i])) {
				forget_tried(run, kids[i], "", 0);
				continue;
			}
			opens++;
			consider(run, kids[i], NULL, 0, parent, now_ns() + CHILDREN_YOUNG_NS);
		}
	}
}

/*
 * The slot's process exec()'d: what we know of it is stale.  Open it again:
 * an interpreter is sampled on (a reader is made for it at the next tick),
 * anything else ends the slot.
 */
static void reopen(struct run *run, struct slot *sl)
{
	pid_t pid = sl->t->pid;
	enum perr err;

	if (sl->r) {
		const struct reader_stats *s = reader_stats(sl->r);

		sl->before.stacks += s->stacks;
		sl->before.dropped += s->dropped;
		sl->before.retries += s->retries;
		sl->before.tags_dropped += s->tags_dropped;
		sl->before.unqualified += s->unqualified;
		sl->before.anchored += s->anchored;
		sl->before.reused += s->reused;
		reader_free(sl->r);
		sl->r = NULL;
	}
	sl->reads_before += sl->t->mem.calls;
	sl->ranges_before += sl->t->mem.ranges;
	sl->execs++;
	run->res->execs++;
	err = target_reopen(sl->t);
	sl->since = now_ns();
	snprintf(run->res->exec_comm, sizeof(run->res->exec_comm), "%s", sl->t->comm);
	if (!err) {
		if (run->opts->announce)
			fprintf(stderr, "pyrospy: process %d exec()'d %s %s (%s): sampling on\n",
				(int)pid, target_lang_name(sl->t->lang), sl->t->version,
				sl->t->comm);
		/* a new image: new environment, new labels */
		event(run, SAMPLER_FOUND, pid, sl->t, NULL);
		return;
	}
	sl->done = 1;
	sl->end = err == PERR_NOPROC ? PERR_EXITED : err;
}

/*
 * Sample one slot.  A reader is made when the interpreter is ready; a slot
 * whose process is gone or unreadable is done.  A sample that fails, or
 * drops stacks and keeps none, may mean the process exec()'d another
 * program: that is looked at then (not for an idle one: no stack, none
 * dropped), and once a second by the caller.
 */
static void sample_slot(struct run *run, struct slot *sl, struct adder *adder)
{
	enum perr err = PERR_STARTUP;
	uint64_t stacks = sl->r ? reader_stats(sl->r)->stacks : 0;
	uint64_t dropped = sl->r ? reader_stats(sl->r)->dropped : 0;

	/* gone: its pid may be another's already, not to be read at all */
	if (!procmem_alive(&sl->t->mem)) {
		sl->done = 1;
		sl->end = PERR_EXITED;
		return;
	}
	if (!sl->r) {
		err = reader_new(sl->t, &run->opts->reader, &sl->r);
		if (sl->r && sl == run->slot[0])
			snprintf(run->res->describe, sizeof(run->res->describe), "%s",
				 reader_describe(sl->r));
	}
	adder->t = sl->t;
	if (sl->r)
		err = reader_sample(sl->r, add_stack, adder);
	if (!procmem_alive(&sl->t->mem)) {
		/* what it read after this was no longer its (add_stack() kept none) */
		sl->done = 1;
		sl->end = PERR_EXITED;
		return;
	}
	if (((err && err != PERR_STARTUP) ||
	     (sl->r && reader_stats(sl->r)->stacks == stacks &&
	      reader_stats(sl->r)->dropped > dropped)) &&
	    target_execd(sl->t)) {
		reopen(run, sl);
		return;
	}
	if (err == PERR_STARTUP) {
		/* exec mode attaches before the runtime exists */
		if (now_ns() - sl->since > STARTUP_WAIT_NS && !run->opts->child) {
			sl->done = 1;
			sl->end = err;
		}
	} else if (err) {
		/* a process on its way out fails reads any way it likes */
		int gone = err == PERR_NOPROC || target_ended(sl->t);
		int64_t now = now_ns();

		/*
		 * An interpreter that is starting or tearing itself down
		 * (Ruby frees its VM before the process exits) reads as
		 * garbage for a moment: try again for a while before saying so.
		 */
		if (!gone && !sl->r && !perr_is_fatal(err)) {
			if (!sl->failing)
				sl->failing = now;
			if (now - sl->failing <= STARTUP_WAIT_NS / 10)
				return;
		}
		sl->done = 1;
		sl->end = gone ? PERR_EXITED : err;
	}
}

/*
 * A random offset in [-period/2, period/2): ticks at exactly the period
 * fall into lock-step with periodic work (a loop whose cycle divides the
 * period) and measure the wrong share of it; random spacing with the same
 * mean keeps the rate and removes the bias.  xorshift64: no need for more.
 */
static int64_t jitter(uint64_t *rng, int64_t period)
{
	uint64_t x = *rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*rng = x;
	return period > 1 ? (int64_t)(x % (uint64_t)period) - period / 2 : 0;
}

/* A random point in (0, period]: where a tick made up for is taken. */
static int64_t anywhere(uint64_t *rng, int64_t period)
{
	return jitter(rng, period) + period / 2 + 1;
}

/*
 * opts->pace() asked for another rate: the schedule starts again at its
 * spacing from now, and the ticks owed at the old one are not made up for
 * at the new (they would be samples of the new rate's count taken at the
 * old's).
 */
static void retune(const struct sampler_opts *opts, int64_t *period, int64_t *ideal,
		   uint64_t *owed, uint64_t *owed_max, uint64_t *rng)
{
	unsigned int rate = opts->pace(opts->arg);

	if (!rate || rate > opts->rate || NSEC / rate == *period)
		return;
	*period = NSEC / rate;
	*owed = 0;
	*owed_max = (uint64_t)(OWED_NS / *period) + 1;
	*ideal = now_ns() + *period + jitter(rng, *period);
}

/* exec mode: has our child exited?  (its status stays for the caller) */
static int child_gone(pid_t child)
{
	siginfo_t si;

	if (!child)
		return 0;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)child, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
		return errno == ECHILD;
	return si.si_pid == child;
}

/*
 * Once a second: processes that exec'd opened again, new ones found (with
 * a root), the progress line, the caller's tick; nonzero: stop.
 */
static int each_second(struct run *run, const struct profile *p)
{
	const struct sampler_opts *opts = run->opts;

	for (size_t i = 0; i < run->nslot; i++)
		if (!run->slot[i]->done && target_execd(run->slot[i]->t))
			reopen(run, run->slot[i]);
	if (opts->root)
		discover(run);
	progress(run);
	return opts->tick && opts->tick(opts->arg, p, run->res);
}

/* Not gone, and not a zombie: a parent that does not reap keeps those. */
static int alive(struct procmem *pm)
{
	pid_t pid = pm->pid;
	int exiting = pid > 0 ? target_exiting(pid) : 1;

	return pid > 0 && procmem_alive(pm) && !exiting;
}

enum perr sampler_run(struct target *t, struct profile *p, const struct sampler_opts *opts,
		      struct sampler_result *res, volatile sig_atomic_t *stop)
{
	int64_t period = NSEC / opts->rate, next, ideal, end = 0, second, children;
	uint64_t owed = 0, owed_max = (uint64_t)(OWED_NS / period) + 1;
	struct adder adder = { p, opts, NULL, NULL, NULL, 0 };
	struct run run = { .opts = opts, .res = res };
	uint64_t rng;
	int64_t wall0;
	enum perr err = PERR_OK;
	int quit = 0;

	memset(res, 0, sizeof(*res));
	if (t)
		slot_add(&run, t);
	run.cpu0 = cpu_seconds();
	/* wake when asked, not up to 50 us later (the default slack) */
	prctl(PR_SET_TIMERSLACK, 1ul, 0, 0, 0);
	run.start = next = ideal = second = children = now_ns();
	rng = (uint64_t)run.start * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() ^ 1;
	res->start = wall_seconds();
	wall0 = (int64_t)(res->start * 1e9);
	if (opts->duration > 0)
		end = run.start + (int64_t)(opts->duration * NSEC);
	if (opts->root) {
		procmem_init(&run.root, opts->root);
		/* gone already: alive() says so, discover() finds nothing */
		if (target_hold(&run.root, opts->root, NULL))
			run.root.gone = 1;
		discover(&run);
	}
	while (!*stop) {
		struct timespec ts;
		int64_t now;
		int live = 0, ready = 0;

		if (opts->sample)
			adder.when = wall0 + (now_ns() - run.start);
		for (size_t i = 0; i < run.nslot; i++) {
			if (!run.slot[i]->done)
				sample_slot(&run, run.slot[i], &adder);
			live += !run.slot[i]->done;
			ready += run.slot[i]->r != NULL;
		}
		/* ticks spent waiting for an interpreter to start are not samples */
		res->ticks += ready > 0;
		/* the first slot failing before any sample is the caller's error */
		if (t && run.slot[0]->done && !opts->root && !run.slot[0]->r &&
		    !run.slot[0]->execs && run.slot[0]->end != PERR_STARTUP &&
		    run.slot[0]->end != PERR_EXITED) {
			err = run.slot[0]->end;
			break;
		}
		if (!opts->root && t && run.slot[0]->done) {
			res->end = run.slot[0]->end;
			break;
		}
		if (opts->root && !live && !alive(&run.root)) {
			res->end = PERR_EXITED;
			break;
		}
		if (child_gone(opts->child) && (!opts->root || !live)) {
			res->end = PERR_EXITED;
			break;
		}
		if (next >= ideal)	/* this was a tick of the schedule, not one made up */
			ideal += period + jitter(&rng, period);
		if (opts->pace)
			retune(opts, &period, &ideal, &owed, &owed_max, &rng);
		now = now_ns();
		if (end && now >= end)
			break;
		if (now - second >= NSEC) {
			second = now;
			if (each_second(&run, p))
				break;
			now = children = now_ns();
		} else if (opts->root && now - children >= CHILDREN_NS) {
			children = now;
			discover_children(&run);
			now = now_ns();
		}
		if (now > ideal + period) {
			/*
			 * Fell behind (we were not scheduled): the schedule
			 * starts again one spacing from now, rather than take
			 * the missed ticks back to back (samples of the same
			 * instant).  They are owed, up to OWED_NS of them, and
			 * made up for between the ticks of the schedule, each
			 * at a random point of the period after the last
			 * sample: the rate is kept, and no sample's time
			 * depends on what the program does.
			 */
			uint64_t missed = (uint64_t)((now - ideal) / period);

			res->late++;
			owed = owed + missed < owed_max ? owed + missed : owed_max;
			ideal = now + period + jitter(&rng, period);
		}
		next = ideal;
		if (owed) {
			int64_t extra = now + anywhere(&rng, period);

			if (extra < ideal) {
				next = extra;
				owed--;
			}
		}
		/*
		 * Finding processes (the agent, --subprocesses) keeps its
		 * second at any rate: at 1 Hz, ticks up to 1.5 s apart, a new
		 * process waited for the second tick after it (2.5 s).
		 */
		for (;;) {
			int64_t wake = next;

			if (opts->root && second + NSEC < wake)
				wake = second + NSEC;
			ts.tv_sec = wake / NSEC;
			ts.tv_nsec = wake % NSEC;
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR &&
			       !*stop)
				;
			if (wake == next || *stop)
				break;
			second = children = now_ns();
			if ((quit = each_second(&run, p)))
				break;
		}
		if (quit)
			break;
	}
	progress(&run);
	for (size_t i = 0; i < run.nslot; i++) {
		reader_free(run.slot[i]->r);
		if (run.slot[i]->t == &run.slot[i]->own)
			target_close(&run.slot[i]->own);
		free(run.slot[i]);
	}
	free(run.slot);
	free(run.tried);
	target_release(&run.root);
	free(adder.last);
	free(adder.merged);
	return err;
}
