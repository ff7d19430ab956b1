/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_RECORD_H
#define PYROSPY_RECORD_H

#include <sys/types.h>

#include "cmd/options.h"
#include "output/outfile.h"
#include "proc/target.h"

/* pyrospy record: the exit status. */
int cli_record(struct cli_opts *o);

/*
 * The files a recording writes, opened before the target is sampled (and
 * before exec starts its command), so that one that cannot be written is
 * said at once, not after the samples were taken: stream, a streaming
 * format's output (-f raw, chrome) or --raw's recording, and profile, the
 * profile written at the end.  Each is a temporary file next to its name
 * until it is put in place (outfile.h); f NULL: none.  A name pyrospy
 * chooses takes the target's pid and the time when it is put in place.
 * cli_outputs_open() returns EXIT_OK, or the exit status (it said why);
 * cli_outputs_close() in every case.
 */
struct cli_outputs {
	struct outfile stream, profile;
};
int cli_outputs_open(const struct cli_opts *o, struct cli_outputs *out);
void cli_outputs_close(struct cli_outputs *out);

/*
 * Sample and write the profile to out (opened).  t is the target, or NULL with
 * --subprocesses when pid is no interpreter itself (its descendants are
 * found as they come).  *why says what ended the sampling.
 */
enum ended {
	ENDED_BY_US,		/* the duration, a signal, q */
	ENDED_EXITED,		/* the target exited (or is exiting) */
	ENDED_EXEC_AWAY,	/* it exec()'d a program that cannot be profiled */
	ENDED_EARLY,		/* sampling failed while the target may run on */
};
int cli_profile_target(struct cli_opts *o, struct cli_outputs *out, struct target *t, pid_t pid,
		       pid_t child, enum ended *why);

#endif
