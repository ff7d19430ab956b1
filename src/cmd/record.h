/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_RECORD_H
#define PYROSPY_RECORD_H

#include <sys/types.h>

#include "cmd/options.h"
#include "proc/target.h"

/* pyrospy record: the exit status. */
int cli_record(struct cli_opts *o);

/*
 * Sample and write the profile.  t is the target, or NULL with
 * --subprocesses when pid is no interpreter itself (its descendants are
 * found as they come).  *why says what ended the sampling.
 */
enum ended {
	ENDED_BY_US,		/* the duration, a signal, q */
	ENDED_EXITED,		/* the target exited (or is exiting) */
	ENDED_EXEC_AWAY,	/* it exec()'d a program that cannot be profiled */
	ENDED_EARLY,		/* sampling failed while the target may run on */
};
int cli_profile_target(struct cli_opts *o, struct target *t, pid_t pid, pid_t child,
		       enum ended *why);

#endif
