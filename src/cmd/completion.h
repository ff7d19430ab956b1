/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_COMPLETION_H
#define PYROSPY_COMPLETION_H

#include <stddef.h>
#include <stdio.h>

/*
 * Shell completion scripts (pyrospy completion bash|zsh), written from
 * the tables the CLI parses and prints --help from (options.c), so that
 * what a shell offers is what pyrospy accepts.
 */

enum completion_arg {
	COMPLETION_NONE,	/* a flag */
	COMPLETION_TEXT,	/* a value nothing can be offered for */
	COMPLETION_PID,
	COMPLETION_FILE,
	COMPLETION_WORDS,	/* one of words */
};

struct completion_opt {
	const char *name;	/* long name, without "--" */
	int short_name;		/* 'p', or 0 */
	enum completion_arg arg;
	const char *words;	/* COMPLETION_WORDS: "folded trie" */
	const char *help;	/* one line; any characters (the writer filters them) */
	unsigned int cmds;	/* bit i: the option applies to cmds[i] */
};

struct completion_cmd {
	const char *name;
	const char *help;
	const char *words;	/* the words it takes instead of options, or NULL */
};

struct completion {
	const struct completion_cmd *cmds;	/* those taking options first, in bit order */
	size_t ncmds;
	const struct completion_opt *opts;
	size_t nopts;
	const char *exec_cmd;	/* the command whose "--" ends options ("exec") */
	const char *top_words;	/* what pyrospy takes instead of a command: "-h --help ..." */
};

/*
 * Write the completion script for shell ("bash" or "zsh") to f.  0, or
 * -1 with errno EINVAL for another shell, or the error of a failed write.
 */
int completion_write(FILE *f, const char *shell, const struct completion *c);

#endif
