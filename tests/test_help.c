/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"

extern char **environ;

/*
 * Help held to the truth, read from the outside: the commands are those
 * `pyrospy --help` lists, each command's options those its help lists,
 * the other options those the man page documents.  Nothing here reads
 * pyrospy's option tables.
 */

#define MAX_CMDS 16
#define MAX_OPTS 96

struct opt {
	char name[40];		/* "rate" */
	char meta[24];		/* "HZ", "" for a flag */
	char text[512];		/* what the help says of it, its lines joined */
};

struct cmd {
	char name[16];
	char *help;		/* pyrospy help NAME */
	struct opt opts[MAX_OPTS];
	size_t nopts;
};

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = malloc(1 << 20);
	size_t len;

	cr_assert_not_null(f, "%s", path);
	len = fread(buf, 1, (1 << 20) - 1, f);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

static const struct opt *find_opt(const struct opt *o, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(o[i].name, name))
			return &o[i];
	return NULL;
}

/*
 * The options of a help text: an entry starts "  -r, --rate HZ ..." or
 * "      --idle ...", its text from column 25 (or on the next line when
 * the name is longer), and goes on in lines indented 25 columns.
 */
static size_t parse_help(const char *help, struct opt *opts, size_t cap)
{
	size_t n = 0;
	struct opt *cur = NULL;

	for (const char *l = help; *l; ) {
		size_t len = strcspn(l, "\n");
		const char *dd;

		if ((!strncmp(l, "  -", 3) || !strncmp(l, "      --", 8)) &&
		    (dd = strstr(l, "--")) && dd < l + len && dd[2] != ' ') {
			size_t head = len > 24 && l[24] == ' ' ? 24 : len;
			size_t nlen = strcspn(dd + 2, " \n");

			cr_assert_lt(n, cap);
			cur = &opts[n++];
			memset(cur, 0, sizeof(*cur));
			snprintf(cur->name, sizeof(cur->name), "%.*s", (int)nlen, dd + 2);
			if (dd[2 + nlen] == ' ' && dd + 3 + nlen < l + head)
				snprintf(cur->meta, sizeof(cur->meta), "%.*s",
					 (int)strcspn(dd + 3 + nlen, " \n"), dd + 3 + nlen);
			if (head < len)
				snprintf(cur->text, sizeof(cur->text), "%.*s", (int)(len - 25),
					 l + 25);
		} else if (cur && len > 25 && strspn(l, " ") == 25) {
			size_t t = strlen(cur->text);

			snprintf(cur->text + t, sizeof(cur->text) - t, "%s%.*s", t ? " " : "",
				 (int)(len - 25), l + 25);
		} else {
			cur = NULL;
		}
		l += len + (l[len] == '\n');
	}
	return n;
}

/* The commands `pyrospy --help` lists: "  record     profile ..." under "commands:" */
static size_t list_commands(struct cmd *cmds)
{
	const char *args[] = { "--help", NULL };
	char *out, *err;
	const char *l;
	size_t n = 0;

	cr_assert_eq(test_pyrospy(args, &out, &err), 0, "%s", err);
	l = strstr(out, "\ncommands:\n");
	cr_assert_not_null(l, "%s", out);
	for (l += 11; !strncmp(l, "  ", 2) && l[2] != ' '; l += strcspn(l, "\n") + 1) {
		cr_assert_lt(n, MAX_CMDS);
		snprintf(cmds[n].name, sizeof(cmds[n].name), "%.*s", (int)strcspn(l + 2, " "),
			 l + 2);
		n++;
	}
	cr_assert_geq(n, 8, "%s", out);
	free(out);
	free(err);
	return n;
}

/*
 * The options the man page documents: each "\-\-name" on the heading
 * line of a tagged paragraph (.TP), in any section.
 */
static size_t man_options(const char *page, struct opt *opts, size_t cap)
{
	size_t n = 0;

	for (const char *p = page; (p = strstr(p, "\n.TP\n")); ) {
		const char *l = p + 5, *end = l + strcspn(l, "\n");

		for (const char *q = l; (q = strstr(q, "\\-\\-")) && q < end; ) {
			char name[40];
			size_t k = 0;

			q += 4;
			while (k < sizeof(name) - 1 && (islower((unsigned char)*q) ||
							 !strncmp(q, "\\-", 2))) {
				name[k++] = *q == '\\' ? '-' : *q;
				q += *q == '\\' ? 2 : 1;
			}
			name[k] = '\0';
			if (k && !find_opt(opts, n, name)) {
				cr_assert_lt(n, cap);
				memset(&opts[n], 0, sizeof(opts[n]));
				snprintf(opts[n++].name, sizeof(opts[n].name), "%s", name);
			}
		}
		p = end;
	}
	return n;
}

/*
 * A value each kind of argument takes (by the name the help gives it),
 * harmless and valid: the probe is about the option, not its value.
 */
static const char *value_for(const char *meta)
{
	static const struct {
		const char *meta, *value;
	} values[] = {
		{ "PID", "1" }, { "PATTERN", "nosuch" }, { "SECS", "1" }, { "HZ", "10" },
		{ "FMT", "folded" }, { "FILE", "/dev/null" }, { "ADDR:PORT", "127.0.0.1:0" },
		{ "NAME", "localhost" }, { "KEY=VALUE", "k=v" }, { "D", "up" },
		{ "SIZE", "64M" }, { "URL", "http://127.0.0.1:1" }, { "P", "ingest" },
		{ "F", "folded" }, { "TOKEN", "t" }, { "U:P", "u:p" }, { "ID", "t" },
		{ "'K:", "X-A: b" }, { "WHEN", "1" }, { "TID|NAME", "1" },
		{ "RE", "nosuch" }, { "PERCENT", "50" },
	};

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		if (!strcmp(meta, values[i].meta))
			return values[i].value;
	cr_assert_fail("no value for an argument named %s: add one here", meta);
	return NULL;
}

struct probe {
	const struct cmd *cmd;
	const char *opt;
	int listed;
	const char *argv[8];
	pid_t pid;
	int out, err, status;
};

static char *read_fd(int fd)
{
	char *buf = malloc(65536);
	ssize_t n = pread(fd, buf, 65535, 0);

	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return buf;
}

/* Run the probes, 8 at a time (each ends at once: a help or a refusal). */
static void run_probes(struct probe *pr, size_t n)
{
	const char *bin = getenv("PYROSPY");

	cr_assert_not_null(bin, "PYROSPY is not set");
	for (size_t i = 0; i < n; i += 8) {
		size_t m = n - i < 8 ? n - i : 8;

		for (size_t j = i; j < i + m; j++) {
			posix_spawn_file_actions_t fa;

			pr[j].argv[0] = bin;
			pr[j].out = memfd_create("out", 0);
			pr[j].err = memfd_create("err", 0);
			cr_assert(pr[j].out >= 0 && pr[j].err >= 0);
			posix_spawn_file_actions_init(&fa);
			posix_spawn_file_actions_adddup2(&fa, pr[j].out, 1);
			posix_spawn_file_actions_adddup2(&fa, pr[j].err, 2);
			cr_assert_eq(posix_spawn(&pr[j].pid, bin, &fa, NULL,
						 (char *const *)pr[j].argv, environ), 0);
			posix_spawn_file_actions_destroy(&fa);
		}
		for (size_t j = i; j < i + m; j++)
			cr_assert_eq(waitpid(pr[j].pid, &pr[j].status, 0), pr[j].pid);
	}
}

/*
 * Options that take a value and need not say a default: they name
 * something that is absent unless given.
 */
static const char *const no_default[] = {
	"pid", "pid-of",	/* the target: one of them (or a command) is needed */
	"raw",			/* a second output, written only when asked */
	"server",		/* no upload without it */
	"auth-token-file", "basic-auth-file",	/* --auth-token's and --basic-auth's say it */
	"tag", "header", "allow-host", "thread", "base", "new",	/* repeatable: each adds one */
};

/* s is one line, the last */
static int last_line(const char *s)
{
	const char *nl = strchr(s, '\n');

	return nl && !nl[1];
}

/*
 * The refusals of MESSAGES, one error line and a hint: "unknown option
 * '--x'", or "option --rate (-r) does not apply to top".
 */
static int refused(const char *err, const char *opt, const char *cmd)
{
	char unknown[96], other[96];
	const char *rest;

	snprintf(unknown, sizeof(unknown), "pyrospy: error: unknown option '--%s'\nhint: ", opt);
	if (!strncmp(err, unknown, strlen(unknown)))
		return last_line(err + strlen(unknown));
	snprintf(other, sizeof(other), "pyrospy: error: option --%s", opt);
	if (strncmp(err, other, strlen(other)))
		return 0;
	rest = err + strlen(other);
	if (!strncmp(rest, " (-", 3) && rest[4] == ')')
		rest += 5;
	snprintf(other, sizeof(other), " does not apply to %s\nhint: ", cmd);
	return !strncmp(rest, other, strlen(other)) && last_line(rest + strlen(other));
}

Test(help, every_option_of_every_command, .timeout = 120)
{
	static struct cmd cmds[MAX_CMDS];
	static struct opt all[2 * MAX_OPTS], man[MAX_OPTS];
	static struct probe pr[MAX_CMDS * 2 * MAX_OPTS];
	size_t ncmds = list_commands(cmds), nall = 0, nman, npr = 0;
	char path[4096], *page;

	snprintf(path, sizeof(path), "%s/man/pyrospy.1", SRCDIR);
	page = slurp(path);
	nman = man_options(page, man, MAX_OPTS);
	cr_assert_geq(nman, 40, "man page options: %zu", nman);
	for (size_t c = 0; c < ncmds; c++) {
		const char *h[] = { "help", cmds[c].name, NULL }, *h2[] = { cmds[c].name, "--help",
									    NULL };
		char *err, *out2;

		cr_assert_eq(test_pyrospy(h, &cmds[c].help, &err), 0, "help %s: %s", cmds[c].name,
			     err);
		free(err);
		cmds[c].nopts = parse_help(cmds[c].help, cmds[c].opts, MAX_OPTS);
		/* pyrospy CMD --help is pyrospy help CMD */
		cr_expect_eq(test_pyrospy(h2, &out2, &err), 0, "%s --help: %s", cmds[c].name, err);
		cr_expect_str_eq(out2, cmds[c].help, "%s --help differs from help %s",
				 cmds[c].name, cmds[c].name);
		free(out2);
		free(err);
		for (size_t i = 0; i < cmds[c].nopts; i++) {
			const struct opt *o = &cmds[c].opts[i];
			int exempt = 0;

			if (!find_opt(all, nall, o->name))
				all[nall++] = *o;
			/* every option a help lists is documented in the man page */
			cr_expect_not_null(find_opt(man, nman, o->name),
					   "help %s lists --%s, which man/pyrospy.1 does not "
					   "document (no .TP entry)", cmds[c].name, o->name);
			for (size_t k = 0; k < sizeof(no_default) / sizeof(no_default[0]); k++)
				exempt |= !strcmp(o->name, no_default[k]);
			if (o->meta[0] && !exempt)
				cr_expect_not_null(strstr(o->text, "default"),
						   "help %s: --%s %s says no default: %s",
						   cmds[c].name, o->name, o->meta, o->text);
		}
	}
	/* every option the man page documents is some command's */
	for (size_t i = 0; i < nman; i++) {
		cr_expect_not_null(find_opt(all, nall, man[i].name),
				   "man/pyrospy.1 documents --%s, which no command's help lists",
				   man[i].name);
		if (!find_opt(all, nall, man[i].name))
			all[nall++] = man[i];
	}
	/*
	 * Every command, every option: CMD --OPT [VALUE] --help shows the
	 * help when CMD takes --OPT, and is refused at --OPT when not.
	 */
	for (size_t c = 0; c < ncmds; c++)
		for (size_t i = 0; i < nall; i++) {
			const struct opt *mine = find_opt(cmds[c].opts, cmds[c].nopts, all[i].name);
			const char *meta = mine ? mine->meta : all[i].meta;
			struct probe *p = &pr[npr++];
			size_t a = 1;
			static char flag[MAX_CMDS * 2 * MAX_OPTS][48];

			p->cmd = &cmds[c];
			p->opt = all[i].name;
			p->listed = mine != NULL;
			snprintf(flag[npr - 1], sizeof(flag[0]), "--%s", all[i].name);
			p->argv[a++] = cmds[c].name;
			p->argv[a++] = flag[npr - 1];
			if (meta[0])
				p->argv[a++] = value_for(meta);
			p->argv[a++] = "--help";
			p->argv[a] = NULL;
		}
	run_probes(pr, npr);
	for (size_t i = 0; i < npr; i++) {
		struct probe *p = &pr[i];
		char *out = read_fd(p->out), *err = read_fd(p->err);
		int st = WIFEXITED(p->status) ? WEXITSTATUS(p->status) : 128 + WTERMSIG(p->status);

		/* --help itself: every command shows its help */
		if (p->listed || !strcmp(p->opt, "help")) {
			cr_expect_eq(st, 0, "%s lists --%s, but '%s --%s ... --help' is refused "
				     "(status %d): %s", p->cmd->name, p->opt, p->cmd->name, p->opt,
				     st, err);
			/* --version shows the version, the others go on to --help */
			cr_expect(!strcmp(p->opt, "version") || !strcmp(out, p->cmd->help),
				  "%s --%s ... --help: not the help:\n%s%s", p->cmd->name, p->opt,
				  out, err);
		} else {
			cr_expect(st == 2 && refused(err, p->opt, p->cmd->name),
				  "help %s does not list --%s, but it is not refused as the man "
				  "page says (status %d): %s%s", p->cmd->name, p->opt, st, err,
				  st ? "" : "(accepted)");
		}
		free(out);
		free(err);
	}
	cr_log_info("%zu commands, %zu options, %zu probes", ncmds, nall, npr);
	free(page);
	for (size_t c = 0; c < ncmds; c++)
		free(cmds[c].help);
}

/*
 * a and b are the same line but for numbers (pids, versions, line
 * numbers, counts): a run of digits and dots in a stands for any in b.
 */
static int same_but_numbers(const char *a, const char *b, size_t na, size_t nb)
{
	const char *ea = a + na, *eb = b + nb;

	while (a < ea && b < eb) {
		if (isdigit((unsigned char)*a)) {
			if (!isdigit((unsigned char)*b))
				return 0;
			while (a < ea && (isdigit((unsigned char)*a) || *a == '.'))
				a++;
			while (b < eb && (isdigit((unsigned char)*b) || *b == '.'))
				b++;
			continue;
		}
		if (*a++ != *b++)
			return 0;
	}
	return a == ea && b == eb;
}

/*
 * The README's example output, between "<!-- example: ... -->" and
 * "<!-- /example -->": "$ COMMAND", then the first lines COMMAND prints
 * ("..." for the rest), 4 spaces in.  This test runs COMMAND as the
 * README says, in the source tree, with the host's python3 (3.11) and
 * this build's pyrospy, and compares each line but for its numbers; the
 * README stays under 80 lines.
 */
Test(readme, example_output, .timeout = 60)
{
	static const char command[] = "python3 examples/shop.py & sleep 1; pyrospy dump $!";
	char path[4096], cmd[8192], *readme, *out, *bin, *start, *end;
	const char *l, *o;
	size_t lines = 0, shown = 0;
	int st;

	snprintf(path, sizeof(path), "%s/README.md", SRCDIR);
	readme = test_slurp(path);
	for (l = readme; *l; l++)
		lines += *l == '\n';
	cr_expect_lt(lines, 80, "README.md has %zu lines", lines);
	start = strstr(readme, "\n<!-- example: ");
	cr_assert_not_null(start, "README.md has no <!-- example: ... --> block");
	start = strchr(start + 1, '\n') + 1;
	end = strstr(start, "<!-- /example -->\n");
	cr_assert_not_null(end, "README.md: the example block has no <!-- /example -->");
	*end = '\0';
	cr_assert(!strncmp(start, "    $ ", 6) && !strncmp(start + 6, command, strlen(command)) &&
		  start[6 + strlen(command)] == '\n',
		  "the README's example runs '%.*s', not this test's '%s'",
		  (int)strcspn(start, "\n"), start, command);
	bin = strdup(getenv("PYROSPY"));
	*strrchr(bin, '/') = '\0';
	/* the README's command, then wait for shop.py's 5 s */
	snprintf(cmd, sizeof(cmd), "cd '%s' && PATH='%s':/usr/bin:/bin; %s; wait", SRCDIR, bin,
		 command);
	out = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: status %d\n%s", cmd, st, out);
	o = out;
	for (l = start + strcspn(start, "\n") + 1; *l; l += strcspn(l, "\n") + 1) {
		size_t n = strcspn(l, "\n"), no = strcspn(o, "\n");

		cr_assert(n == 0 || !strncmp(l, "    ", 4), "README example: not 4 spaces in: %.*s",
			  (int)n, l);
		/* "...", at any indent: the rest is not shown */
		if (n == strspn(l, " ") + 3 && !strncmp(l + n - 3, "...", 3))
			break;
		cr_assert(*o, "README example line '%.*s': the output has ended:\n%s", (int)n, l,
			  out);
		cr_assert(same_but_numbers(n ? l + 4 : l, o, n ? n - 4 : 0, no),
			  "README example line %zu:\n  '%.*s'\nbut '%s' prints\n  '%.*s'\n"
			  "whole output:\n%s", shown + 1, n ? (int)n - 4 : 0, l + (n ? 4 : 0), command,
			  (int)no, o, out);
		o += no + (o[no] == '\n');
		shown++;
	}
	cr_assert_geq(shown, 3, "the README's example shows %zu lines", shown);
	free(bin);
	free(out);
	free(readme);
}
