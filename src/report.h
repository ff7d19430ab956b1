/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_REPORT_H
#define PYROSPY_REPORT_H

/*
 * pyrospy report IN [options]: a raw recording (-f raw) written again in
 * any format, with only the samples the filters keep.  argv[0] is
 * "report".  Returns the exit status (cli.h), having said what went wrong.
 */
int report_main(int argc, char **argv);

/* Its help text (pyrospy help report). */
extern const char report_usage[];

#endif
