/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_EXEC_H
#define PYROSPY_EXEC_H

#include "cmd/options.h"

/*
 * pyrospy exec: run o->argv (as the user chosen) with the tag helpers on
 * its paths, and profile it; the command's own exit status when profiling
 * worked, else pyrospy's.
 */
int cli_exec(struct cli_opts *o);

#endif
