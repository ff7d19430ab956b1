/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_SAMPLER_H
#define PYROSPY_SAMPLER_H

#include <signal.h>
#include <stdint.h>

#include "util/perr.h"
#include "sample/reader.h"

struct target;
struct profile;
struct stack;
struct sampler_result;

/* What opts->event() is told of a process (the agent's -v and labels). */
enum sampler_event {
	SAMPLER_FOUND,		/* an interpreter, sampled from now on (t held, alive) */
	SAMPLER_SKIPPED,	/* looked at and left alone, once per image: why says why */
	SAMPLER_FORGOTTEN,	/* sampled no more (ended, or exec()'d away): why */
};

/* What opts->want() says of a process found. */
enum {
	SAMPLER_SKIP,		/* left alone until it exec()s */
	SAMPLER_WANT,		/* opened */
	SAMPLER_WANT_LATER,	/* left alone for now, asked again SAMPLER_AGAIN_NS later */
};

#define SAMPLER_AGAIN_NS 1000000000LL

struct sampler_opts {
	unsigned int rate;	/* Hz */
	double duration;	/* seconds, 0 = until stopped */
	struct reader_opts reader;
	pid_t child;		/* exec mode: stop when it exits */
	pid_t root;		/* --subprocesses: also sample its descendants */
	int announce;		/* say on stderr when a subprocess is found */
	int verbose;
	const char *tags;	/* --tag, a clean tag set (src/tags.h); NULL: none */
	/* optional: each stack also goes to add(arg, tags, st), tags as profiled */
	void (*add)(void *arg, const char *tags, const struct stack *st);
	int count_only;		/* only count stacks in the profile: add() has them */
	/*
	 * optional: every stack kept, as it comes, with the time of its tick
	 * (Unix nanoseconds: the wall clock at the start, then the monotonic
	 * clock) and its tags as profiled: for a writer that keeps every
	 * sample (out.h, out_raw.c).  Its own argument, sample_arg.
	 */
	void (*sample)(void *arg, int64_t when_ns, const char *tags, const struct stack *st);
	void *sample_arg;
	/*
	 * optional: called about once a second with the profile and the
	 * counts so far; a non-zero return stops sampling.
	 */
	int (*tick)(void *arg, const struct profile *p, const struct sampler_result *res);
	/*
	 * optional: called after every tick (its samples all handed to add()),
	 * the rate to tick at from now on, 1 to opts->rate Hz (0: as it is):
	 * what add() gets after it returns is sampled at that rate, what it
	 * got before at the one before (the agent's --max-cpu).
	 */
	unsigned int (*pace)(void *arg);
	void *arg;
	/*
	 * The agent: root is the host's init (1) and every process under it
	 * is looked at, the first slot as any other (let go when it ends),
	 * and one that is no interpreter at its first look is looked at
	 * again for half a second (a loader may not have mapped libruby yet).
	 */
	int fleet;
	/*
	 * optional, with root: whether pid, found, is to be opened at all:
	 * SAMPLER_WANT, else skipped and *why said once: SAMPLER_SKIP, not
	 * asked again until it exec()s; SAMPLER_WANT_LATER, asked again
	 * SAMPLER_AGAIN_NS later (and so on, said once, until it is wanted).
	 */
	int (*want)(void *arg, pid_t pid, const char **why);
	/*
	 * optional, with root: a process found, skipped or forgotten (see
	 * enum sampler_event), with arg.  t is the process held (FOUND) or
	 * NULL; a FORGOTTEN t is the same pointer as its FOUND's, no longer
	 * to be read.  why is a static string, or NULL for FOUND.
	 */
	void (*event)(void *arg, enum sampler_event ev, pid_t pid, struct target *t,
		      const char *why);
};

struct sampler_result {
	uint64_t ticks;		/* samples taken */
	uint64_t late;		/* ticks that came more than a period late */
	uint64_t stacks, dropped, retries;
	uint64_t tags_dropped;		/* samples that lost their tags to a torn read */
	uint64_t unqualified;	/* Ruby methods named without their class (unreadable) */
	uint64_t anchored;	/* Python 3.15+: stacks read only above their anchor */
	uint64_t reused;	/* stacks of threads that had not run since, reused */
	uint64_t reads;		/* process_vm_readv calls */
	uint64_t ranges;	/* remote ranges they read (pinned apart) */
	double elapsed;		/* seconds */
	double start;		/* Unix time sampling started */
	double cpu;		/* our user+sys seconds while sampling */
	enum perr end;		/* PERR_OK, or why sampling stopped early */
	uint64_t execs;		/* exec()s of sampled processes */
	char exec_comm[64];	/* the program the last one ran */
	char describe[256];
};

/*
 * Sample t at opts->rate into p until the duration passes, *stop becomes
 * non-zero (a signal), or the target goes away (res->end = PERR_EXITED,
 * which is not an error: the profile so far is kept).  A process that
 * exec()s is sampled on if it runs an interpreter again; else its end is
 * why not (PERR_NOTINTERP, ...), with res->execs set.  Returns an error
 * only when sampling could not start.  With opts->root, interpreters among
 * root's descendants are sampled too, found again every second, until
 * none is left and root has exited; t may then be NULL (root itself is no
 * interpreter).
 */
enum perr sampler_run(struct target *t, struct profile *p, const struct sampler_opts *opts,
		      struct sampler_result *res, volatile sig_atomic_t *stop);

#endif
