/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_SAMPLER_H
#define PYROSPY_SAMPLER_H

#include <signal.h>
#include <stdint.h>

#include "perr.h"
#include "reader.h"

struct target;
struct profile;

struct sampler_opts {
	unsigned int rate;	/* Hz */
	double duration;	/* seconds, 0 = until stopped */
	struct reader_opts reader;
	pid_t child;		/* exec mode: stop when it exits */
	int verbose;
};

struct sampler_result {
	uint64_t ticks;		/* samples taken */
	uint64_t late;		/* ticks that came more than a period late */
	uint64_t stacks, dropped, retries;
	uint64_t reads;		/* process_vm_readv calls */
	double elapsed;		/* seconds */
	double cpu;		/* our user+sys seconds while sampling */
	enum perr end;		/* PERR_OK, or why sampling stopped early */
	char describe[256];
};

/*
 * Sample t at opts->rate into p until the duration passes, *stop becomes
 * non-zero (a signal), or the target goes away (res->end = PERR_EXITED,
 * which is not an error: the profile so far is kept).  Returns an error
 * only when sampling could not start.
 */
enum perr sampler_run(struct target *t, struct profile *p, const struct sampler_opts *opts,
		      struct sampler_result *res, volatile sig_atomic_t *stop);

#endif
