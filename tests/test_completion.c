/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

/*
 * The completion scripts against what pyrospy says and does: the options
 * of --help, each offered for exactly the commands that accept it (asked
 * of pyrospy itself: `pyrospy CMD --OPT x' says "does not apply" or not),
 * the commands of --help, and the values its errors list.
 */

#define MAX_WORDS 128

struct words {
	char *w[MAX_WORDS];
	size_t n;
};

static void words_add(struct words *s, const char *w, size_t len)
{
	cr_assert_lt(s->n, MAX_WORDS);
	s->w[s->n] = strndup(w, len);
	cr_assert_not_null(s->w[s->n]);
	s->n++;
}

static void words_free(struct words *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->w[i]);
	s->n = 0;
}

static int words_has(const struct words *s, const char *w)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->w[i], w))
			return 1;
	return 0;
}

/* The lines of out, one word each, as a set. */
static void words_of_lines(struct words *s, const char *out)
{
	for (const char *p = out; *p;) {
		size_t len = strcspn(p, "\n");

		if (len && !words_has(s, p))
			words_add(s, p, len);
		p += len + (p[len] == '\n');
	}
}

static void same_words(const char *what, const struct words *got, const struct words *want)
{
	for (size_t i = 0; i < want->n; i++)
		cr_assert(words_has(got, want->w[i]), "%s: '%s' is not offered", what, want->w[i]);
	for (size_t i = 0; i < got->n; i++)
		cr_assert(words_has(want, got->w[i]), "%s: '%s' is offered, but not accepted", what,
			  got->w[i]);
}

static char *pyrospy_out(const char *const *args, char **err)
{
	char *out;

	test_pyrospy(args, &out, err);
	return out;
}

/* "--name" and "-x" of every option line of --help */
static void help_options(struct words *longs, struct words *shorts)
{
	static const char *const cmds[] = { "record", "exec", "dump", "top", "serve" };

	/* every command's help lists its own options: all of them, once */
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *args[] = { "help", cmds[i], NULL };
		char *err, *out = pyrospy_out(args, &err);

		for (const char *p = out; *p; p += strcspn(p, "\n"), p += *p == '\n') {
			const char *l;
			char w[64];

			if (!strncmp(p, "  -", 3) && p[4] == ',') {
				snprintf(w, sizeof(w), "%.2s", p + 2);
				if (!words_has(shorts, w))
					words_add(shorts, p + 2, 2);
			} else if (strncmp(p, "      --", 8)) {
				continue;
			}
			l = strstr(p, "--");
			cr_assert(l && l < p + 8, "%.60s", p);
			snprintf(w, sizeof(w), "%.*s", (int)strcspn(l, " \n"), l);
			if (!words_has(longs, w))
				words_add(longs, l, strcspn(l, " \n"));
		}
		free(out);
		free(err);
	}
	cr_assert_gt(longs->n, 20, "%zu options in the commands' help", longs->n);
}

/* The options (long, or short when shorts) that `pyrospy cmd' accepts. */
static void accepted(const char *cmd, int shorts, struct words *s)
{
	struct words longs = { 0 }, sh = { 0 };
	struct words *from;

	help_options(&longs, &sh);
	from = shorts ? &sh : &longs;
	for (size_t i = 0; i < from->n; i++) {
		const char *args[] = { cmd, from->w[i], "x", NULL };
		char *err, *out = pyrospy_out(args, &err);

		if (!strstr(err, "does not apply to"))
			words_add(s, from->w[i], strlen(from->w[i]));
		free(out);
		free(err);
	}
	words_free(&longs);
	words_free(&sh);
}

/* The script for shell, in a file of the test's own. */
static const char *script(const char *shell, char *path, size_t cap)
{
	const char *args[] = { "completion", shell, NULL };
	char *err, *out;
	FILE *f;

	snprintf(path, cap, "/tmp/pyrospy-test-completion-%d.%s", (int)getpid(), shell);
	cr_assert_eq(test_pyrospy(args, &out, &err), 0, "%s", err);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(out, f);
	cr_assert_eq(fclose(f), 0);
	free(out);
	free(err);
	return path;
}

/* What bash offers for the words "pyrospy LINE" (the last one being typed). */
static void bash_offers(const char *file, const char *line, struct words *s)
{
	char cmd[2048], *out;
	int status;

	snprintf(cmd, sizeof(cmd),
		 "bash --norc -c 'source %s; COMP_WORDS=(pyrospy %s); "
		 "COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _pyrospy; "
		 "printf \"%%s\\n\" \"${COMPREPLY[@]}\"'", file, line);
	out = test_run(cmd, &status);
	cr_assert_eq(status, 0, "%s", cmd);
	words_of_lines(s, out);
	free(out);
}

/*
 * What zsh's script hands _arguments for "pyrospy CMD -": the options of
 * its specs ("--pid=[...]:pid:_pids" is --pid), or with cmd NULL the
 * commands it describes.
 */
static void zsh_offers(const char *file, const char *cmd, struct words *s)
{
	char sh[2048], line[64], *out;
	int status;

	snprintf(line, sizeof(line), "%s", cmd ? cmd : "\"\"");
	if (cmd)
		snprintf(line, sizeof(line), "%s -", cmd);
	snprintf(sh, sizeof(sh),
		 "zsh -fc '_arguments() { print -rl -- \"$@\" }; "
		 "_describe() { print -rl -- \"${(@P)${@[-1]}}\" }; compadd() { }; "
		 "words=(pyrospy %s); CURRENT=${#words}; "
		 "eval \"_pyrospy() { $(<%s) }\"; _pyrospy'",
		 line, file);
	out = test_run(sh, &status);
	cr_assert_eq(status, 0, "%s:\n%s", sh, out);
	for (const char *p = out, *specs = NULL; *p; p += strcspn(p, "\n"), p += *p == '\n') {
		if (!cmd) {
			/* "record:profile a running process" */
			words_add(s, p, strcspn(p, ":\n"));
			continue;
		}
		if (!specs) {
			if (!strncmp(p, ":\n", 2))
				specs = p;	/* what precedes is _arguments' own options */
			continue;
		}
		if (*p == '-')
			words_add(s, p, strcspn(p, "+=[\n"));
	}
	free(out);
}

Test(completion, options_per_command, .timeout = 120)
{
	static const char *const cmds[] = { "record", "exec", "dump", "top", "serve" };
	char bash[128], zsh[128];

	script("bash", bash, sizeof(bash));
	script("zsh", zsh, sizeof(zsh));
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct words want = { 0 }, all = { 0 }, got = { 0 }, zgot = { 0 };
		char line[64], what[64];

		accepted(cmds[i], 0, &want);
		accepted(cmds[i], 1, &all);
		cr_assert_gt(want.n, 3, "%s accepts %zu options", cmds[i], want.n);
		for (size_t j = 0; j < want.n; j++)
			words_add(&all, want.w[j], strlen(want.w[j]));
		snprintf(line, sizeof(line), "%s -", cmds[i]);
		bash_offers(bash, line, &got);
		snprintf(what, sizeof(what), "bash, %s", cmds[i]);
		same_words(what, &got, &all);
		zsh_offers(zsh, cmds[i], &zgot);
		snprintf(what, sizeof(what), "zsh, %s", cmds[i]);
		same_words(what, &zgot, &all);
		words_free(&want);
		words_free(&all);
		words_free(&got);
		words_free(&zgot);
	}
	unlink(bash);
	unlink(zsh);
}

/* The values of "...: want a, b or c" that pyrospy's error for args lists. */
static void values_of(const char *const *args, struct words *want)
{
	char *err, *out = pyrospy_out(args, &err);
	const char *p = strstr(err, "want ");

	cr_assert_not_null(p, "%s", err);
	for (p += 5; *p && *p != '\n';) {
		size_t len = strcspn(p, ", \n");

		if (len != 2 || strncmp(p, "or", 2))
			words_add(want, p, len);
		p += len;
		p += strspn(p, ", ");
	}
	free(out);
	free(err);
}

/*
 * The commands --help lists, into both word lists.  (gcc 12 at -O1 sees p,
 * into out, as used after free(out): a false -Wdangling-pointer.)
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
static void help_commands(const char *const *help, struct words *a, struct words *b)
{
	char *err, *out = pyrospy_out(help, &err);
	const char *p = strstr(out, "commands:\n");

	cr_assert_not_null(p, "%s", out);
	for (p += 10; !strncmp(p, "  ", 2) && p[2] != ' '; p += strcspn(p, "\n") + 1) {
		words_add(a, p + 2, strcspn(p + 2, " \n"));
		words_add(b, p + 2, strcspn(p + 2, " \n"));
	}
	cr_assert_geq(a->n, 5, "%s", out);
	free(out);
	free(err);
}
#pragma GCC diagnostic pop

/* The commands of --help, and the values pyrospy's own errors list. */
Test(completion, commands_and_values, .timeout = 60)
{
	const char *help[] = { "--help", NULL };
	const char *badfmt[] = { "record", "-p", "1", "-f", "bogus", NULL };
	const char *badingest[] = { "record", "-p", "1", "--ingest-format", "bogus", NULL };
	const char *badprotocol[] = { "record", "-p", "1", "--protocol", "bogus", NULL };
	struct words want = { 0 }, got = { 0 }, zgot = { 0 }, zwant = { 0 };
	char bash[128], zsh[128], *out, *err, *p;

	script("bash", bash, sizeof(bash));
	script("zsh", zsh, sizeof(zsh));
	help_commands(help, &want, &zwant);
	for (const char *const *t = (const char *const[]){ "-h", "--help", "-V", "--version", NULL };
	     *t; t++)
		words_add(&want, *t, strlen(*t));
	bash_offers(bash, "\"\"", &got);
	same_words("bash, commands", &got, &want);
	zsh_offers(zsh, NULL, &zgot);
	same_words("zsh, commands", &zgot, &zwant);
	words_free(&want);
	words_free(&got);

	/* "unknown format 'bogus': want one of a, b, c" */
	out = pyrospy_out(badfmt, &err);
	p = strstr(err, "want one of ");
	cr_assert_not_null(p, "%s", err);
	for (p += 12; *p && *p != '\n'; p += strspn(p, ", ")) {
		words_add(&want, p, strcspn(p, ", \n"));
		p += strcspn(p, ", \n");
	}
	free(out);
	free(err);
	bash_offers(bash, "record -f \"\"", &got);
	same_words("bash, --format", &got, &want);
	words_free(&want);
	words_free(&got);

	/* "unknown ingest format 'bogus': want folded, trie or pprof" */
	values_of(badingest, &want);
	bash_offers(bash, "record --ingest-format \"\"", &got);
	same_words("bash, --ingest-format", &got, &want);
	words_free(&want);
	words_free(&got);
	/* "unknown protocol 'bogus': want ingest, push or otlp" */
	values_of(badprotocol, &want);
	bash_offers(bash, "record --protocol \"\"", &got);
	same_words("bash, --protocol", &got, &want);
	words_free(&want);
	words_free(&got);
	words_free(&zgot);
	words_free(&zwant);
	unlink(bash);
	unlink(zsh);
}
