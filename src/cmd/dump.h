/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_DUMP_H
#define PYROSPY_DUMP_H

#include "cmd/options.h"

/* pyrospy dump: every thread's stack (or asyncio task) once; the exit status. */
int cli_dump(struct cli_opts *o);

#endif
