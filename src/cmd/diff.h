/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_DIFF_H
#define PYROSPY_DIFF_H

/*
 * pyrospy diff BASE NEW [options], or pyrospy diff IN --base ... --new
 * ...: a differential flame graph (or -f summary, a table) of what
 * changed from BASE to NEW, inputs as report reads them.  argv[0] is
 * "diff".  Returns the exit status (common.h), having said what went wrong.
 */
int diff_main(int argc, char **argv);

/* Its help text (pyrospy help diff). */
extern const char diff_usage[];

#endif
