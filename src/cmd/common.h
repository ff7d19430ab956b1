/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_COMMON_H
#define PYROSPY_COMMON_H

/*
 * What every command shares, below them all: the exit statuses, the error
 * and hint lines, and the messages of an output file that cannot be
 * written.  It includes no other command's header.
 */

/*
 * Exit statuses (EXIT STATUS in man/pyrospy.1).  `exec' exits with the
 * command's own status when profiling worked.
 */
enum cli_exit {
	EXIT_OK = 0,
	EXIT_FAIL = 1,		/* runtime failure: output not writable, ... */
	EXIT_USAGE = 2,		/* bad option or value */
	EXIT_NOPROC = 3,	/* no such process, or it exited before attach */
	EXIT_PERM = 4,		/* not allowed to read the process */
	EXIT_NOTINTERP = 5,	/* not a Ruby or Python process */
	EXIT_UNSUPPORTED = 6,	/* interpreter version not supported */
	EXIT_BADFILE = 7,	/* report: the input is no recording, or is damaged */
};

/* "pyrospy: error: ..." and "hint: ..." lines on stderr (see STYLE.md). */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An error in how pyrospy was called, the hint 'see pyrospy help CMD': EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Edits from a to b (insert, delete, replace, swap two neighbours), at most 3. */
unsigned int cli_distance(const char *a, const char *b);

/*
 * The usage error for an unknown option arg of cmd, with the long option
 * of names (NULL-terminated, without "--") it most likely means.
 */
int cli_unknown_option(const char *cmd, const char *arg, const char *const *names);

struct option;

/* The same, with the long options of lo (getopt_long's, ended by a NULL name). */
int cli_unknown_long_option(const char *cmd, const char *arg, const struct option *lo);

/*
 * getopt_long() takes a long option's unique prefix (--thread for
 * --threads): after it returned opts[idx], the word given when that is
 * not the option's whole name, for cli_unknown_option(); else NULL.
 */
const char *cli_abbreviated(const struct option *opts, int idx, char **argv, int optind,
			    const char *optarg);

/* --flame-direction ARG of cmd into *up: -1, or the usage error's status. */
int cli_flame_direction(const char *cmd, const char *arg, int *up);

/*
 * The format of an output: -f's (format, NULL if not given), else the one
 * output's name says (out_by_ext()); folded for "-" or a stream (a device,
 * a FIFO); fallback (a format's name) for no output or a directory.  NULL
 * when output's name says none: it said why (EXIT_USAGE).
 */
struct out_ops;
const struct out_ops *cli_output_format(const char *format, const char *output,
					const char *fallback);

/*
 * Opening, failing to write and finishing an output file (outfile.h), each
 * saying on stderr what went wrong and returning the exit status (EXIT_OK
 * when nothing did).
 * output NULL: STEM.EXT in the current directory.  place: outfile_place().
 */
struct outfile;
int cli_output_open(struct outfile *of, const char *output, const char *stem, const char *ext);
int cli_output_failed(const struct outfile *of);
int cli_output_commit(struct outfile *of, int place);

#endif
