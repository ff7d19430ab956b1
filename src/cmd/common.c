/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/common.h"
#include "output/out.h"
#include "output/outfile.h"

void cli_error(const char *fmt, ...)
{
	va_list ap;

	fputs("pyrospy: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_hint(const char *fmt, ...)
{
	va_list ap;

	fputs("hint: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fputs("pyrospy: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cli_hint("see 'pyrospy help %s'", cmd ? cmd : "");
	return EXIT_USAGE;
}

/*
 * -f wins; then the name.  A stream has no name to go by: "-", and what
 * is no file (a device, a FIFO: /dev/null, /dev/stdout) get the folded
 * stacks.  A directory is let through, for the open to say what it is.
 */
const struct out_ops *cli_output_format(const char *format, const char *output,
					const char *fallback)
{
	const struct out_ops *ops;
	struct stat st;

	if (format)
		return out_find(format);
	if (!output)
		return out_find(fallback);
	ops = out_by_ext(output);
	if (ops)
		return ops;
	if (!strcmp(output, "-") || (!stat(output, &st) && !S_ISREG(st.st_mode)))
		return out_find(S_ISDIR(st.st_mode) ? fallback : "folded");
	cli_error("cannot tell the format of '%s' from its name", output);
	cli_hint("name it %s, or give -f FORMAT", out_exts());
	return NULL;
}

/*
 * Open the output: output as given, or STEM.EXT in the current directory.
 * On failure say why and return the exit status, else EXIT_OK.
 */
int cli_output_open(struct outfile *of, const char *output, const char *stem, const char *ext)
{
	enum perr err = output ? outfile_open(of, output) : outfile_open_new(of, stem, ext);

	if (err == PERR_UNSAFE) {
		cli_error("refused to %s '%s': it belongs to uid %u, in a directory others can write",
		      S_ISLNK(of->bad_mode) ? "follow symlink" : "open", of->bad,
		      (unsigned)of->bad_uid);
		cli_hint("another user's link or FIFO there may lead anywhere: give the real path, or "
		     "write to a directory of your own");
		return EXIT_FAIL;
	}
	if (err == PERR_PERM) {
		cli_error("cannot replace '%s': it belongs to uid %u, in a sticky directory", of->bad,
		      (unsigned)of->bad_uid);
		cli_hint("only its owner may replace it: remove it first, or choose another --output");
		return EXIT_FAIL;
	}
	if (err && !output) {
		cli_error("cannot create a profile in the current directory: %s", strerror(errno));
		cli_hint("run pyrospy where it may write, or name the file with --output");
		return EXIT_FAIL;
	}
	if (err && errno == EISDIR) {
		cli_error("cannot open '%s': it is a directory", of->path);
		cli_hint("name a file in it, e.g. --output %s%sprofile.%s", of->path,
			 of->path[strlen(of->path) - 1] == '/' ? "" : "/", ext);
		return EXIT_FAIL;
	}
	if (err) {
		cli_error("cannot open '%s': %s", of->path, strerror(errno));
		cli_hint("check the directory exists and is writable, or use --output -");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* A write to the output failed: say so and return the exit status. */
int cli_output_failed(const struct outfile *of)
{
	cli_error("cannot write '%s': %s", of->path, strerror(errno));
	cli_hint("check free space, or use --output -");
	return EXIT_FAIL;
}

/*
 * Finish the output (outfile_commit(), or outfile_place() when place is
 * set: in place, but still open); say why it failed and return the exit
 * status, else EXIT_OK.
 */
int cli_output_commit(struct outfile *of, int place)
{
	int chosen = of->exclusive;
	enum perr err = place ? outfile_place(of) : outfile_commit(of);

	if (err == PERR_PERM) {
		cli_error("cannot replace '%s': %s", of->path, strerror(errno));
		cli_hint("in a sticky directory only its owner may replace a file: remove it first, or "
		     "choose another --output");
		return EXIT_FAIL;
	}
	if (err && errno == EEXIST && chosen) {
		cli_error("cannot create '%s': it and the next %d names exist", of->path,
		      OUTFILE_MAX_NAMES - 1);
		cli_hint("remove old profiles, or name the file with --output");
		return EXIT_FAIL;
	}
	if (err)
		return cli_output_failed(of);
	return EXIT_OK;
}

/*
 * Edits from a to b (insert, delete, replace, or swap two neighbours:
 * recrod), capped at 3: enough to suggest a command.
 */
unsigned int cli_distance(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	unsigned int d[16][16];

	if (na > 15 || nb > 15)
		return 3;
	for (size_t i = 0; i <= na; i++)
		for (size_t j = 0; j <= nb; j++) {
			unsigned int v;

			if (!i || !j) {
				d[i][j] = (unsigned int)(i + j);
				continue;
			}
			v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[na][nb] < 3 ? d[na][nb] : 3;
}

int cli_unknown_option(const char *cmd, const char *arg, const char *const *names)
{
	char word[32];
	const char *best = NULL;
	unsigned int bestd = 3;

	/* --rat=50: the name, not the value */
	snprintf(word, sizeof(word), "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
	for (size_t i = 0; !strncmp(arg, "--", 2) && names[i]; i++) {
		unsigned int d = cli_distance(word, names[i]);

		if (d < bestd && d <= strlen(names[i]) / 3 + 1) {
			bestd = d;
			best = names[i];
		}
	}
	cli_error("unknown option '%s'", arg);
	if (best)
		cli_hint("did you mean --%s? see 'pyrospy help %s'", best, cmd);
	else
		cli_hint("see 'pyrospy help %s'", cmd);
	return EXIT_USAGE;
}

int cli_unknown_long_option(const char *cmd, const char *arg, const struct option *lo)
{
	const char *names[64];
	size_t n = 0;

	for (; lo->name && n + 1 < sizeof(names) / sizeof(names[0]); lo++)
		names[n++] = lo->name;
	names[n] = NULL;
	return cli_unknown_option(cmd, arg, names);
}

const char *cli_abbreviated(const struct option *opts, int idx, char **argv, int optind,
			    const char *optarg)
{
	const char *w;
	size_t n;

	if (idx < 0 || optind < 1)
		return NULL;
	/* --name=VALUE and --name are one word, --name VALUE two */
	w = argv[optind - 1];
	if (opts[idx].has_arg != no_argument && optarg == w && optind >= 2)
		w = argv[optind - 2];
	if (strncmp(w, "--", 2))
		return NULL;
	n = strcspn(w + 2, "=");
	return n == strlen(opts[idx].name) && !strncmp(w + 2, opts[idx].name, n) ? NULL : w;
}

int cli_flame_direction(const char *cmd, const char *arg, int *up)
{
	if (strcmp(arg, "up") && strcmp(arg, "down"))
		return cli_usage_error(cmd, "invalid --flame-direction '%s': want down (root at the "
				       "top) or up", arg);
	*up = !strcmp(arg, "up");
	return -1;
}
