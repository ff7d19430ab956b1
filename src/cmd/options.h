/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_OPTIONS_H
#define PYROSPY_OPTIONS_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "cmd/httpd.h"
#include "cmd/serve.h"
#include "upload/ingest.h"

#define DEFAULT_RATE 100	/* -r HZ when not given */
#define DEFAULT_MAX_CPU 1.0	/* agent --max-cpu PERCENT: the eBPF profiler's published bound */

/*
 * The command line of record, exec, dump, top and serve, once parsed;
 * cli_main() owns it (and frees tagset and file_secret[]).
 */
struct cli_opts {
	const char *cmd;	/* subcommand */
	pid_t pid;
	const char *pid_of;	/* --pid-of PATTERN */
	const char *match, *exclude;	/* agent --match RE, --exclude RE */
	double max_cpu;		/* agent --max-cpu: percent of one core */
	double duration;
	unsigned int rate;
	const char *format;
	const char *output;
	const char *raw;	/* --raw FILE: a raw recording besides the profile */
	int idle, gil, gvl_wait, threads, function, subprocesses, no_tags, no_gc;
	int locals;		/* dump --locals */
	int tasks;		/* dump --tasks */
	int json;		/* dump --json */
	int async_tasks;	/* --async */
	int flame_up;		/* --flame-direction up */
	int read_only;		/* --read-only */
	int full_paths;		/* --full-paths: no short paths (shortpath.h) */
	size_t max_memory;	/* --max-memory: a profile's bound (profile.h) */
	const char *listen;	/* serve --listen ADDR:PORT */
	const char *allow_host[HTTPD_MAX_ALLOW_HOSTS];	/* serve --allow-host NAME */
	unsigned int nallow_host;
	char *tagset;		/* --tag as one clean tag set */
	/* streaming to a Pyroscope server */
	struct ingest_opts up;
	const char *tags[INGEST_MAX_TAGS + 1];
	const char *headers[33];
	unsigned int ntags, nheaders;
	int quiet, verbose;
	char **argv;		/* exec: the command */
	const char *user;	/* exec --user NAME */
	int as_root;		/* exec --as-root */
	const char *auth_token_file, *basic_auth_file;
	char *file_secret[2];	/* what they hold (auth_token, basic_auth), malloc'd */
};

/*
 * argv (argv[0] the command, o->cmd: record, exec, dump, top or serve)
 * into o, checked: -1 to go on, or the exit status (after --help or
 * --version, EXIT_OK; after an error, which it said).
 */
int cli_parse_opts(struct cli_opts *o, int argc, char **argv);

/* The help of every command and option (pyrospy --help), into f. */
void cli_usage(FILE *f);
/* The help of command cmd (record, exec, dump, top, serve, completion) on stdout. */
void cli_print_usage(const char *cmd);
/* pyrospy --version: what this binary reads, on stdout. */
void cli_print_version(void);
/* pyrospy completion bash|zsh (argv: the words after it): the exit status. */
int cli_completion(int argc, char **argv);

/* "pyrospy: ..." on stderr, unless --quiet. */
void cli_note(const struct cli_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A decimal number s, 0 to max, into *out: 1, or 0 if it is none. */
int cli_parse_uint(const char *s, unsigned long max, unsigned long *out);

#endif
