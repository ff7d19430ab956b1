/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/agent.h"
#include "cmd/cli.h"
#include "cmd/common.h"
#include "cmd/diff.h"
#include "cmd/dump.h"
#include "cmd/exec.h"
#include "cmd/options.h"
#include "cmd/record.h"
#include "cmd/report.h"
#include "cmd/serve_cmd.h"
#include "cmd/session.h"
#include "cmd/top.h"
#include "profile/profile.h"
#include "util/xalloc.h"

static const char *const commands[] = {
	"record", "exec", "dump", "top", "serve", "agent", "report", "diff", "completion", "help",
};

/*
 * The command word meant the command it begins (rec), is a typo of
 * (recrod), or is a peer's name for (rbspy's snapshot, py-spy's
 * attach-less run); NULL when nothing is close.
 */
static const char *suggest(const char *word)
{
	const char *best = NULL;
	unsigned int bestd = 3;
	size_t n = strlen(word), prefixed = 0;

	if (!strcmp(word, "snapshot"))
		return "dump";
	if (!strcmp(word, "run") || !strcmp(word, "attach"))
		return !strcmp(word, "run") ? "exec" : "record";
	for (size_t i = 0; n >= 2 && i < ARRAY_SIZE(commands); i++)
		if (!strncmp(commands[i], word, n)) {
			best = commands[i];
			prefixed++;
		}
	if (prefixed == 1)
		return best;
	best = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		unsigned int d = cli_distance(word, commands[i]);

		if (d < bestd && d < strlen(commands[i]) / 2 + 1) {
			bestd = d;
			best = commands[i];
		}
	}
	return best;
}

static int unknown_command(const char *word)
{
	const char *s = suggest(word);

	cli_error("unknown command '%s'", word);
	if (s)
		cli_hint("did you mean 'pyrospy %s'? see 'pyrospy help %s'", s, s);
	else
		cli_hint("commands are record, exec, dump, top, serve, agent, report, diff and "
			 "completion; see 'pyrospy --help'");
	return EXIT_USAGE;
}

/*
 * The first word picks what runs: help, --version and completion here,
 * every other command in a file of its own (record.c, exec.c, dump.c,
 * top.c, serve_cmd.c, agent.c, report.c, diff.c) after options.c parsed its options.
 */
int cli_main(int argc, char **argv)
{
	struct cli_opts o = {
		.rate = DEFAULT_RATE,
		.max_cpu = DEFAULT_MAX_CPU,
		.max_memory = PROFILE_MAX_MEMORY,
		.format = NULL,		/* flamegraph, or folded for -o - */
	};
	int ret;

	if (argc < 2) {
		cli_usage(stderr);
		return EXIT_USAGE;
	}
	o.cmd = argv[1];
	if (!strcmp(o.cmd, "-h") || !strcmp(o.cmd, "--help")) {
		cli_usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(o.cmd, "-V") || !strcmp(o.cmd, "--version")) {
		cli_print_version();
		return EXIT_OK;
	}
	if (!strcmp(o.cmd, "help")) {
		if (argc < 3 || !strcmp(argv[2], "help") || !strcmp(argv[2], "-h") ||
		    !strcmp(argv[2], "--help")) {
			cli_usage(stdout);
			return EXIT_OK;
		}
		/* help takes a command's name, and no option but --help */
		if (argv[2][0] == '-') {
			static const char *const none[] = { "help", NULL };

			return cli_unknown_option("help", argv[2], none);
		}
		if (!strcmp(argv[2], "report")) {
			fputs(report_usage, stdout);
			return EXIT_OK;
		}
		if (!strcmp(argv[2], "diff")) {
			fputs(diff_usage, stdout);
			return EXIT_OK;
		}
		if (!strcmp(argv[2], "record") || !strcmp(argv[2], "exec") ||
		    !strcmp(argv[2], "dump") || !strcmp(argv[2], "top") || !strcmp(argv[2], "serve") ||
		    !strcmp(argv[2], "agent") || !strcmp(argv[2], "completion")) {
			cli_print_usage(argv[2]);
			return EXIT_OK;
		}
		return unknown_command(argv[2]);
	}
	if (!strcmp(o.cmd, "completion"))
		return cli_completion(argc - 2, argv + 2);
	/* a command of its own, with its own options */
	if (!strcmp(o.cmd, "report"))
		return report_main(argc - 1, argv + 1);
	if (!strcmp(o.cmd, "diff"))
		return diff_main(argc - 1, argv + 1);
	if (strcmp(o.cmd, "record") && strcmp(o.cmd, "exec") && strcmp(o.cmd, "dump") &&
	    strcmp(o.cmd, "top") && strcmp(o.cmd, "serve") && strcmp(o.cmd, "agent")) {
		return unknown_command(o.cmd);
	}
	ret = cli_parse_opts(&o, argc - 1, argv + 1);
	if (ret < 0)
		ret = cli_resolve_pid_of(&o);
	if (ret < 0) {
		if (!strcmp(o.cmd, "dump"))
			ret = cli_dump(&o);
		else if (!strcmp(o.cmd, "top"))
			ret = cli_top(&o);
		else if (!strcmp(o.cmd, "serve"))
			ret = cli_serve(&o);
		else if (!strcmp(o.cmd, "agent"))
			ret = cli_agent(&o);
		else
			ret = !strcmp(o.cmd, "exec") ? cli_exec(&o) : cli_record(&o);
	}
	free(o.tagset);
	for (size_t i = 0; i < ARRAY_SIZE(o.file_secret); i++)
		if (o.file_secret[i]) {
			explicit_bzero(o.file_secret[i], strlen(o.file_secret[i]));
			free(o.file_secret[i]);
		}
	return ret;
}
