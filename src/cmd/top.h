/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_TOP_H
#define PYROSPY_TOP_H

#include "cmd/options.h"

/* pyrospy top: the exit status. */
int cli_top(struct cli_opts *o);

#endif
