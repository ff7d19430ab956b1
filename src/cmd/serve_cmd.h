/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_SERVE_CMD_H
#define PYROSPY_SERVE_CMD_H

#include "cmd/options.h"

/*
 * pyrospy serve: the command line handed to serve_run() (serve.h), which
 * cannot take it itself: options.h includes serve.h for its limits.
 */
int cli_serve(struct cli_opts *o);

#endif
