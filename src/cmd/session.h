/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_SESSION_H
#define PYROSPY_SESSION_H

#include <signal.h>

#include "cmd/options.h"
#include "proc/target.h"

/*
 * What the commands that read a process (record, exec, dump, top, serve)
 * share: finding it, saying why it cannot be read, and the signals that
 * end their sampling.
 */

/* Set by SIGINT and SIGTERM once cli_install_signals() ran: stop sampling. */
extern volatile sig_atomic_t cli_stop_flag;
/* exec's command while it runs (0: none): the signal is passed on to it. */
extern volatile sig_atomic_t cli_child_pid;

void cli_install_signals(void);

/* --pid-of into o->pid: -1 to go on, or an exit status (it said why). */
int cli_resolve_pid_of(struct cli_opts *o);
/* The file target_open() refused though it found t: a warning line. */
void cli_warn_refused(const struct target *t);
/* --gil or --async where t cannot honour them: EXIT_UNSUPPORTED (said why), or EXIT_OK. */
int cli_gil_refused(const struct cli_opts *o, const struct target *t);
/* Why t could not be opened or read (err): a message, a hint and the exit status. */
int cli_report_target(const struct target *t, enum perr err);

#endif
