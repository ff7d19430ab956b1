/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_CLI_H
#define PYROSPY_CLI_H

/* The whole program: parse argv, run a subcommand, return the exit status. */
int cli_main(int argc, char **argv);

#endif
