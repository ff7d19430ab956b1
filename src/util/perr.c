/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>

#include "util/perr.h"

static const char *const perr_strings[PERR__COUNT] = {
	[PERR_OK] = "success",
	[PERR_NOMEM] = "out of memory",
	[PERR_IO] = "input/output error",
	[PERR_NOPROC] = "no such process",
	[PERR_EXITED] = "process exited",
	[PERR_PERM] = "permission denied",
	[PERR_FAULT] = "bad remote address",
	[PERR_SHORT] = "short remote read",
	[PERR_NOTINTERP] = "not a Ruby or Python process",
	[PERR_UNSUPPORTED] = "interpreter version not supported",
	[PERR_NOTFOUND] = "not found",
	[PERR_CORRUPT] = "inconsistent data",
	[PERR_TOOBIG] = "value too large",
	[PERR_STARTUP] = "interpreter not initialised yet",
	[PERR_UNSAFE] = "unsafe path refused",
	[PERR_REFUSED] = "file refused",
};

const char *perr_str(enum perr err)
{
	if ((unsigned)err >= PERR__COUNT)
		return "unknown error";
	return perr_strings[err];
}

enum perr perr_from_errno(int errnum)
{
	switch (errnum) {
	case 0:
		return PERR_OK;
	case ESRCH:
		return PERR_EXITED;
	case ENOENT:
		return PERR_NOPROC;
	case EPERM:
	case EACCES:
		return PERR_PERM;
	case EFAULT:
		return PERR_FAULT;
	case ENOMEM:
		/* process_vm_readv: ENOMEM is "cannot allocate iovec", rare */
		return PERR_NOMEM;
	default:
		return PERR_IO;
	}
}

int perr_is_fatal(enum perr err)
{
	return err == PERR_EXITED || err == PERR_NOPROC || err == PERR_PERM;
}
