/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_CLI_H
#define PYROSPY_CLI_H

/*
 * Exit statuses (EXIT STATUS in man/pyrospy.1).  `exec' exits with the
 * command's own status when profiling worked.
 */
enum cli_exit {
	EXIT_OK = 0,
	EXIT_FAIL = 1,		/* runtime failure: output not writable, ... */
	EXIT_USAGE = 2,		/* bad option or value */
	EXIT_NOPROC = 3,	/* no such process, or it exited before attach */
	EXIT_PERM = 4,		/* not allowed to read the process */
	EXIT_NOTINTERP = 5,	/* not a Ruby or Python process */
	EXIT_UNSUPPORTED = 6,	/* interpreter version not supported */
};

/* The whole program: parse argv, run a subcommand, return the exit status. */
int cli_main(int argc, char **argv);

#endif
