/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PERR_H
#define PYROSPY_PERR_H

/*
 * Status codes returned by every layer below the CLI.  0 is success; the
 * rest say what went wrong in terms a caller can act on.  Low layers never
 * print: the CLI turns a code into a message, a hint and an exit status
 * (see cmd/session.c and EXIT STATUS in man/pyrospy.1).
 */
enum perr {
	PERR_OK = 0,
	PERR_NOMEM,		/* allocation failed */
	PERR_IO,		/* a local file could not be read */
	PERR_NOPROC,		/* no such process (never existed, or reaped) */
	PERR_EXITED,		/* the process went away while we used it */
	PERR_PERM,		/* not allowed to read the process */
	PERR_FAULT,		/* remote address not mapped: transient or garbage */
	PERR_SHORT,		/* remote read returned fewer bytes than asked */
	PERR_NOTINTERP,		/* not a Ruby or Python process */
	PERR_UNSUPPORTED,	/* an interpreter, but a version we cannot read */
	PERR_NOTFOUND,		/* symbol, section or map not found */
	PERR_CORRUPT,		/* data read (ELF, maps, remote) fails validation */
	PERR_TOOBIG,		/* a length exceeds its cap */
	PERR_STARTUP,		/* interpreter runtime not initialised yet */
	PERR_UNSAFE,		/* a local path another user could redirect: refused */
	PERR_REFUSED,		/* a file of the target is not the one it mapped */
	PERR__COUNT
};

/* A short, lowercase description of the code ("no such process"). */
const char *perr_str(enum perr err);

/*
 * Map an errno from a syscall on the target (process_vm_readv, open of a
 * /proc file) to a project code.
 */
enum perr perr_from_errno(int errnum);

/*
 * True for codes that say the process is gone or unreadable for good:
 * sampling should stop rather than count a dropped sample.
 */
int perr_is_fatal(enum perr err);

#endif
