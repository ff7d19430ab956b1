/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "completion.h"
#include "taglibs.h"
#include "xalloc.h"
#include "ingest.h"
#include "out.h"
#include "outfile.h"
#include "profile.h"
#include "ptree.h"
#include "pyasync.h"
#include "pytasks.h"
#include "pyvm.h"
#include "rubyvm.h"
#include "reader.h"
#include "diff.h"
#include "report.h"
#include "sampler.h"
#include "serve.h"
#include "tags.h"
#include "target.h"
#include "utf8.h"

#define DEFAULT_RATE 100
#define MAX_RATE 10000

struct cli_opts {
	const char *cmd;	/* subcommand */
	pid_t pid;
	const char *pid_of;	/* --pid-of PATTERN */
	double duration;
	unsigned int rate;
	const char *format;
	const char *output;
	const char *raw;	/* --raw FILE: a raw recording besides the profile */
	int idle, gil, gvl_wait, threads, function, subprocesses, no_tags, no_gc;
	int locals;		/* dump --locals */
	int tasks;		/* dump --tasks */
	int async_tasks;	/* --async */
	int read_only;		/* --read-only */
	size_t max_memory;	/* --max-memory: a profile's bound (profile.h) */
	const char *listen;	/* serve --listen ADDR:PORT */
	const char *allow_host[SERVE_MAX_ALLOW_HOSTS];	/* serve --allow-host NAME */
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

static volatile sig_atomic_t stop_flag;
static volatile sig_atomic_t child_pid;

static void print_version(void)
{
	const char *h = taglibs_installed();
	char py[256], rb[256];

	/* from the layout tables: what this binary reads, not what it was meant to */
	pyvm_versions(py, sizeof(py));
	rubyvm_versions(rb, sizeof(rb));
	printf("pyrospy %s\npython: %s\nruby: %s\ntag helpers: %s\n", PACKAGE_VERSION, py, rb,
	       h ? h : "built in (written to a private temporary directory by exec)");
}

/* Put dir first on the search path in environment variable var. */
static void path_prepend(const char *var, const char *dir)
{
	const char *old = getenv(var);
	char *v = old && *old ? xstrfmt("%s:%s", dir, old) : xstrfmt("%s", dir);

	setenv(var, v, 1);
	free(v);
}


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

static void __attribute__((format(printf, 2, 3))) note(const struct cli_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (o->quiet)
		return;
	fputs("pyrospy: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const char usage_record[] =
	"usage: pyrospy record --pid PID [options]\n";
static const char usage_exec[] =
	"usage: pyrospy exec [options] -- COMMAND [ARGS...]\n";
static const char usage_top[] =
	"usage: pyrospy top --pid PID|--pid-of PATTERN [-r HZ] [-d SECS] [--idle] [--gil]\n"
	"                   [--gvl-wait] [--no-gc] [--async] [--read-only] [--max-memory SIZE]\n"
	"\n"
	"A live table of the functions taking the most samples, by self and total,\n"
	"refreshed every second; q or Ctrl-C quits.\n";
static const char usage_serve[] =
	"usage: pyrospy serve --pid PID|--pid-of PATTERN [--listen ADDR:PORT]\n"
	"                     [--allow-host NAME]...\n"
	"                     [--subprocesses] [-r HZ] [-d SECS] [--idle] [--gil] [--gvl-wait]\n"
	"                     [--async] [--read-only] [--max-memory SIZE]\n"
	"\n"
	"Sample the process for as long as it runs, and answer scrapers over HTTP as\n"
	"Go programs do: GET /debug/pprof/profile?seconds=N is a gzipped pprof of the\n"
	"next N seconds (1 to 300, default 30), e.g.\n"
	"  go tool pprof http://127.0.0.1:6060/debug/pprof/profile?seconds=10\n"
	"The address it listens on is said on stderr.\n";
static const char usage_dump[] =
	"usage: pyrospy dump --pid PID|--pid-of PATTERN [--subprocesses] [--locals] [--tasks]\n"
	"                    [--no-gc] [-q] [-v]\n"
	"\n"
	"Print every thread's stack once, innermost frame first, with its thread id,\n"
	"name, whether it holds the GIL/GVL and whether it is running or idle.\n"
	"\n"
	"      --locals           under each Python or Ruby frame, its local variables:\n"
	"                         name: type = short repr\n"
	"      --tasks            the asyncio tasks instead (Python 3.8+):\n"
	"                         each with its name, state and the coroutines where\n"
	"                         it waits, under each task awaiting it\n"
	"      --no-gc            no (garbage collection) frame on the collecting thread\n";
static const char usage_options[] =
	"\n"
	"options:\n"
	"  -p, --pid PID          process to profile (record)\n"
	"      --pid-of PATTERN   the oldest process whose name or command line matches\n"
	"  -d, --duration SECS    stop after SECS seconds (default: until Ctrl-C or exit)\n"
	"  -r, --rate HZ          samples per second, 1 to 10000 (default: 100)\n"
	"  -f, --format FMT       flamegraph (default), folded (default for -o -),\n"
	"                         speedscope, pprof, summary, raw (every sample; also\n"
	"                         for -o FILE.raw; see pyrospy report), chrome (a\n"
	"                         trace of every thread's stack over time)\n"
	"  -o, --output FILE      write the profile to FILE, - for stdout\n"
	"                         (default: pyrospy-PID-DATE.EXT in the current directory)\n"
	"      --raw FILE         also write every sample to FILE, a raw recording\n"
	"      --listen ADDR:PORT serve: where to answer (default: 127.0.0.1:6060;\n"
	"                         0.0.0.0:PORT for every interface, PORT 0 for any)\n"
	"      --allow-host NAME  serve: also answer requests whose Host is NAME\n"
	"                         (repeatable; the address reached is always taken)\n"
	"      --idle             keep threads that are not running\n"
	"      --gil              keep only the thread holding the GIL/GVL\n"
	"      --gvl-wait         keep Ruby threads waiting to take the GVL, under a\n"
	"                         '(waiting for GVL)' leaf frame\n"
	"      --threads          put a 'thread (TID)' frame at the root of each stack\n"
	"      --tag KEY=VALUE    a tag for every sample (repeatable); the program's\n"
	"                         own tags (see pyrospy(1), TAGS) win over it\n"
	"      --no-tags          merge the tag sets: no {k=v} frame at the root\n"
	"      --no-gc            no (garbage collection) frame on the collecting thread\n"
	"      --async            Python 3.8+: the running asyncio task and\n"
	"                         the tasks awaiting it, as '<task> NAME' frames\n"
	"      --read-only        never write into the target (CPython 3.15+: no\n"
	"                         last_profiled_frame; every sample reads whole stacks)\n"
	"      --function         aggregate by function, dropping line numbers\n"
	"      --max-memory SIZE  the most a profile's names and stacks may hold, 1M to\n"
	"                         64G (default: 256M); past it, new stacks are counted\n"
	"                         in [other] frames\n"
	"      --subprocesses     also profile the Ruby and Python processes it starts\n"
	"      --user NAME        exec as root: run the command as user NAME\n"
	"                         (by default: the user who ran sudo, else root)\n"
	"      --as-root          exec as root: run the command as root, under sudo too\n"
	"      --locals           dump: each Python or Ruby frame's local variables\n"
	"      --tasks            dump: the asyncio tasks, as a tree\n"

	"  -q, --quiet            print nothing but errors\n"
	"  -v, --verbose          say more (repeat for more)\n"
	"  -h, --help             show this help\n"
	"  -V, --version          show the version\n"
	"\n"
	"streaming to a Pyroscope server (every 10 s; no file unless -o is given):\n"
	"      --server URL       the server's base URL, e.g. http://pyroscope:4040\n"
	"      --app-name NAME    the application's name (NAME.cpu on the server)\n"
	"      --protocol P       ingest (default: POST /ingest, any Pyroscope) or push\n"
	"                         (Grafana Pyroscope's push API, gzipped pprof)\n"
	"      --ingest-format F  folded (default), trie (smaller uploads) or pprof\n"
	"      --auth-token TOKEN bearer token, shown by ps: rather $PYROSPY_AUTH_TOKEN\n"
	"                         or --auth-token-file\n"
	"      --auth-token-file FILE\n"
	"                         the bearer token: the first line of FILE\n"
	"      --basic-auth U:P   basic authentication, shown by ps: rather\n"
	"                         $PYROSPY_BASIC_AUTH or --basic-auth-file\n"
	"      --basic-auth-file FILE\n"
	"                         basic authentication: USER:PASSWORD, FILE's first line\n"
	"      --tenant-id ID     X-Scope-OrgID ($PYROSPY_TENANT_ID)\n"
	"      --header 'K: V'    an extra HTTP header (repeatable; $PYROSPY_HEADERS)\n"
	"      --cacert FILE      CA certificates to verify the server with\n"
	"      --insecure         do not verify the server's TLS certificate\n";

/*
 * The commands: those taking options first, in the order of the CMD_ bits
 * below; the others take the words given.  --help and the shell
 * completion scripts are written from this table and long_opts[].
 */
static const struct completion_cmd commands[] = {
	{ "record", "profile a running process: pyrospy record --pid PID", NULL },
	{ "exec", "run a command and profile it: pyrospy exec -- python3 app.py", NULL },
	{ "dump", "print every thread's stack once: pyrospy dump --pid PID", NULL },
	{ "top", "a live table of the hottest functions: pyrospy top --pid PID", NULL },
	{ "serve", "a pprof endpoint to scrape: pyrospy serve --pid PID", NULL },
	{ "report", "a raw recording in any format, filtered: pyrospy report rec.raw", NULL },
	{ "diff", "a differential flame graph of two profiles: pyrospy diff old.raw new.raw",
	  NULL },
	{ "help", "show help for a command: pyrospy help record",
	  "record exec dump top serve report diff completion" },
	{ "completion", "a shell's completion script: pyrospy completion bash (or zsh)",
	  "bash zsh" },
};

static const char usage_completion[] =
	"usage: pyrospy completion bash|zsh\n"
	"\n"
	"Print the shell's completion script for pyrospy's commands and options:\n"
	"  eval \"$(pyrospy completion bash)\"    in ~/.bashrc\n"
	"  pyrospy completion zsh > ~/.zfunc/_pyrospy    with ~/.zfunc on $fpath\n";

static void usage(FILE *f)
{
	fputs("usage: pyrospy <command> [options]\n\ncommands:\n", f);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "%s\nSee pyrospy(1) for everything else.\n", usage_options);
}

/* The help of one command. */
static void print_usage(const char *cmd)
{
	if (!strcmp(cmd, "completion")) {
		fputs(usage_completion, stdout);
		return;
	}
	if (!strcmp(cmd, "dump") || !strcmp(cmd, "top")) {
		fputs(!strcmp(cmd, "dump") ? usage_dump : usage_top, stdout);
		return;
	}
	if (!strcmp(cmd, "serve")) {
		fputs(usage_serve, stdout);
		fputs(usage_options, stdout);
		return;
	}
	fputs(!strcmp(cmd, "exec") ? usage_exec : usage_record, stdout);
	fputs(usage_options, stdout);
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

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!*s || *s == '-' || *s == '+')
		return 0;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > max)
		return 0;
	*out = v;
	return 1;
}

/* "64M": a size in bytes, with K, M or G for KiB, MiB or GiB, within [min, max]. */
static int parse_size(const char *s, size_t min, size_t max, size_t *out)
{
	static const char units[] = "KMG";
	unsigned long v;
	const char *u;
	char num[32];
	size_t len = strlen(s), shift = 0;

	if (!len || len >= sizeof(num))
		return 0;
	u = strchr(units, s[len - 1] & ~0x20);
	if (s[len - 1] && u) {
		shift = 10 * (size_t)(u - units + 1);
		len--;
	}
	memcpy(num, s, len);
	num[len] = '\0';
	if (!parse_uint(num, max >> shift, &v) || ((size_t)v << shift) < min)
		return 0;
	*out = (size_t)v << shift;
	return 1;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || end == s || !(v > 0) || v > 1e9)
		return 0;
	*out = v;
	return 1;
}

enum {
	OPT_IDLE = 256, OPT_GIL, OPT_THREADS, OPT_NO_TAGS, OPT_FUNCTION, OPT_SUBPROCESSES, OPT_SERVER,
	OPT_APP_NAME, OPT_TAG, OPT_AUTH_TOKEN, OPT_BASIC_AUTH, OPT_TENANT_ID, OPT_HEADER,
	OPT_INSECURE, OPT_CACERT, OPT_INGEST_FORMAT, OPT_PID_OF, OPT_PROTOCOL, OPT_RAW, OPT_LOCALS,
	OPT_TASKS, OPT_LISTEN, OPT_NO_GC, OPT_GVL_WAIT, OPT_ASYNC, OPT_READ_ONLY, OPT_MAX_MEMORY,
	OPT_ALLOW_HOST,
	OPT_USER, OPT_AS_ROOT, OPT_AUTH_TOKEN_FILE, OPT_BASIC_AUTH_FILE,
};

static const struct option long_opts[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "pid-of", required_argument, NULL, OPT_PID_OF },
	{ "duration", required_argument, NULL, 'd' },
	{ "rate", required_argument, NULL, 'r' },
	{ "format", required_argument, NULL, 'f' },
	{ "output", required_argument, NULL, 'o' },
	{ "raw", required_argument, NULL, OPT_RAW },
	{ "idle", no_argument, NULL, OPT_IDLE },
	{ "gil", no_argument, NULL, OPT_GIL },
	{ "gvl-wait", no_argument, NULL, OPT_GVL_WAIT },
	{ "threads", no_argument, NULL, OPT_THREADS },
	{ "no-tags", no_argument, NULL, OPT_NO_TAGS },
	{ "no-gc", no_argument, NULL, OPT_NO_GC },
	{ "function", no_argument, NULL, OPT_FUNCTION },
	{ "subprocesses", no_argument, NULL, OPT_SUBPROCESSES },
	{ "locals", no_argument, NULL, OPT_LOCALS },
	{ "tasks", no_argument, NULL, OPT_TASKS },
	{ "async", no_argument, NULL, OPT_ASYNC },
	{ "read-only", no_argument, NULL, OPT_READ_ONLY },
	{ "max-memory", required_argument, NULL, OPT_MAX_MEMORY },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "allow-host", required_argument, NULL, OPT_ALLOW_HOST },
	{ "server", required_argument, NULL, OPT_SERVER },
	{ "app-name", required_argument, NULL, OPT_APP_NAME },
	{ "tag", required_argument, NULL, OPT_TAG },
	{ "auth-token", required_argument, NULL, OPT_AUTH_TOKEN },
	{ "basic-auth", required_argument, NULL, OPT_BASIC_AUTH },
	{ "auth-token-file", required_argument, NULL, OPT_AUTH_TOKEN_FILE },
	{ "basic-auth-file", required_argument, NULL, OPT_BASIC_AUTH_FILE },
	{ "tenant-id", required_argument, NULL, OPT_TENANT_ID },
	{ "header", required_argument, NULL, OPT_HEADER },
	{ "insecure", no_argument, NULL, OPT_INSECURE },
	{ "cacert", required_argument, NULL, OPT_CACERT },
	{ "ingest-format", required_argument, NULL, OPT_INGEST_FORMAT },
	{ "protocol", required_argument, NULL, OPT_PROTOCOL },
	{ "user", required_argument, NULL, OPT_USER },
	{ "as-root", no_argument, NULL, OPT_AS_ROOT },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/*
 * Which commands take an option: every option works in every command that
 * accepts it, and the others refuse it rather than ignore it.  Bit i is
 * commands[i] (the completion scripts rely on it).
 */
#define CMD_RECORD	1u
#define CMD_EXEC	2u
#define CMD_DUMP	4u
#define CMD_TOP		8u
#define CMD_SERVE	16u
#define CMD_ALL		(CMD_RECORD | CMD_EXEC | CMD_DUMP | CMD_TOP | CMD_SERVE)

static unsigned int cmd_bit(const char *cmd)
{
	return !strcmp(cmd, "exec") ? CMD_EXEC : !strcmp(cmd, "dump") ? CMD_DUMP :
	       !strcmp(cmd, "top") ? CMD_TOP : !strcmp(cmd, "serve") ? CMD_SERVE : CMD_RECORD;
}

static unsigned int opt_cmds(int c)
{
	switch (c) {
	case 'p': case OPT_PID_OF:
		return CMD_RECORD | CMD_DUMP | CMD_TOP | CMD_SERVE;	/* exec says why not itself */
	case 'd': case 'r': case OPT_IDLE: case OPT_GIL: case OPT_GVL_WAIT: case OPT_ASYNC:
	case OPT_READ_ONLY:
		return CMD_RECORD | CMD_EXEC | CMD_TOP | CMD_SERVE;
	case OPT_SUBPROCESSES:
		return CMD_RECORD | CMD_EXEC | CMD_DUMP | CMD_SERVE;
	case OPT_LOCALS: case OPT_TASKS:
		return CMD_DUMP;
	case OPT_LISTEN: case OPT_ALLOW_HOST:
		return CMD_SERVE;
	case OPT_USER: case OPT_AS_ROOT:
		return CMD_EXEC;
	case OPT_MAX_MEMORY:
		return CMD_RECORD | CMD_EXEC | CMD_TOP | CMD_SERVE;
	case 'q': case 'v': case 'h': case 'V': case OPT_NO_GC:
		return CMD_ALL;
	default:	/* what shapes a profile file or an upload */
		return CMD_RECORD | CMD_EXEC;
	}
}

/* "--rate (-r)" for messages */
static const char *opt_name(int c, char *buf, size_t cap)
{
	for (const struct option *lo = long_opts; lo->name; lo++) {
		if (lo->val != c)
			continue;
		if (c < 256)
			snprintf(buf, cap, "--%s (-%c)", lo->name, c);
		else
			snprintf(buf, cap, "--%s", lo->name);
		return buf;
	}
	snprintf(buf, cap, "-%c", c);
	return buf;
}

/*
 * --auth-token-file, --basic-auth-file (opt without "-file"): the secret
 * into *dst, unless the option itself gave one.  -1 to go on, or a status.
 */
static int read_secret_file(struct cli_opts *o, const char *opt, const char *path, int i,
			    const char **dst)
{
	char err[256];
	int others;

	if (!path)
		return -1;
	if (*dst)
		return cli_usage_error(o->cmd, "give --%s or --%s-file, not both", opt, opt);
	o->file_secret[i] = ingest_read_secret(path, &others, err, sizeof(err));
	if (!o->file_secret[i]) {
		cli_error("--%s-file: %s", opt, err);
		cli_hint("give a regular file of at most %d bytes, the secret on its first line",
			 INGEST_SECRET_FILE_MAX);
		return EXIT_USAGE;
	}
	/* a warning, not a refusal: secrets mounted by Kubernetes are 0644 by default */
	if (others)
		fprintf(stderr, "pyrospy: warning: every user may read '%s' (--%s-file): "
			"chmod o-r it\n", path, opt);
	*dst = o->file_secret[i];
	return -1;
}

/* A header whose value is likely a key: "Authorization", "X-Api-Key", "Cookie", ... */
static int header_is_secret(const char *h)
{
	static const char *const words[] = { "auth", "key", "token", "secret", "cookie",
					     "passw", "session", "credential" };
	size_t n = strcspn(h, ":");

	for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
		size_t w = strlen(words[i]);

		for (size_t j = 0; j + w <= n; j++)
			if (!strncasecmp(h + j, words[i], w))
				return 1;
	}
	return 0;
}

/*
 * Secrets given as arguments are in /proc/PID/cmdline for every local user
 * to read (ps): one line each, even with --quiet, naming the way out.
 */
static void warn_argv_secrets(int token, int basic, const char *const *headers)
{
	static const char what[] = "pyrospy: warning: %s on the command line is shown to every "
				   "user by ps: give it in %s%s%s\n";

	if (token)
		fprintf(stderr, what, "--auth-token", "$PYROSPY_AUTH_TOKEN", " or ",
			"--auth-token-file FILE");
	if (basic)
		fprintf(stderr, what, "--basic-auth", "$PYROSPY_BASIC_AUTH", " or ",
			"--basic-auth-file FILE");
	for (const char *const *h = headers; *h; h++) {
		char name[80];

		if (!header_is_secret(*h))
			continue;
		/* the name only, which ingest_check() found to be a token of letters */
		snprintf(name, sizeof(name), "--header '%.*s'", (int)strcspn(*h, ":"), *h);
		fprintf(stderr, what, name, "$PYROSPY_HEADERS", "", "");
	}
}

/* --server and friends: complete from the environment and check. */
static int check_upload(struct cli_opts *o)
{
	char err[256];
	int argv_token = o->up.auth_token != NULL, argv_basic = o->up.basic_auth != NULL, ret;

	ret = read_secret_file(o, "auth-token", o->auth_token_file, 0, &o->up.auth_token);
	if (ret < 0)
		ret = read_secret_file(o, "basic-auth", o->basic_auth_file, 1, &o->up.basic_auth);
	if (ret >= 0)
		return ret;
	o->tags[o->ntags] = NULL;
	o->headers[o->nheaders] = NULL;
	o->up.tags = o->tags;
	o->up.headers = o->headers;
	o->up.rate = o->rate;
	if (tags_check(o->tags, err, sizeof(err)))
		return cli_usage_error(o->cmd, "%s", err);
	for (unsigned int i = 0; i < o->ntags; i++) {
		const char *eq = strchr(o->tags[i], '=');
		char *one = xstrfmt("%.*s=%s", (int)(eq - o->tags[i]), o->tags[i], eq + 1);
		char *set = tags_merge(one, o->tagset);

		free(one);
		free(o->tagset);
		o->tagset = set;
	}
	if (!o->up.server) {
		if (o->up.app_name || o->up.auth_token || o->up.basic_auth ||
		    o->up.tenant_id || o->nheaders || o->up.insecure || o->up.cacert)
			return cli_usage_error(
					o->cmd, "--app-name and the auth options need --server URL");
		return -1;
	}
	if (strcmp(o->cmd, "record") && strcmp(o->cmd, "exec"))
		return cli_usage_error(o->cmd, "--server works with record and exec");
	if (!o->up.app_name)
		return cli_usage_error(o->cmd, "--server needs --app-name NAME");
	ingest_env(&o->up);
	if (ingest_check(&o->up, err, sizeof(err)))
		return cli_usage_error(o->cmd, "%s", err);
	warn_argv_secrets(argv_token, argv_basic, o->headers);
	return -1;
}

/* Returns -1 to go on, or an exit status. */
static int parse_opts(struct cli_opts *o, int argc, char **argv)
{
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:p:d:r:f:o:qvhV", long_opts, NULL)) != -1) {
		unsigned long v;
		char name[64];

		if (c != ':' && c != '?' && !(opt_cmds(c) & cmd_bit(o->cmd)))
			return cli_usage_error(o->cmd, "option %s does not apply to %s",
					   opt_name(c, name, sizeof(name)), o->cmd);
		switch (c) {
		case 'p':
			if (!parse_uint(optarg, INT_MAX, &v) || v == 0)
				return cli_usage_error(o->cmd, "invalid pid '%s'", optarg);
			o->pid = (pid_t)v;
			break;
		case 'd':
			if (!parse_seconds(optarg, &o->duration))
				return cli_usage_error(
						o->cmd, "invalid duration '%s': want seconds > 0",
						optarg);
			break;
		case 'r':
			if (!parse_uint(optarg, MAX_RATE, &v) || v == 0)
				return cli_usage_error(
						o->cmd, "invalid rate '%s': want 1 to %d samples per second",
						optarg, MAX_RATE);
			o->rate = (unsigned int)v;
			break;
		case 'f':
			if (!out_find(optarg))
				return cli_usage_error(
						o->cmd, "unknown format '%s': want one of %s",
						optarg, out_names());
			o->format = optarg;
			break;
		case 'o':
			if (!*optarg)
				return cli_usage_error(o->cmd, "empty output file name");
			o->output = optarg;
			break;
		case OPT_RAW:
			if (!*optarg)
				return cli_usage_error(o->cmd, "empty file name for --raw");
			o->raw = optarg;
			break;
		case OPT_IDLE:
			o->idle = 1;
			break;
		case OPT_GIL:
			o->gil = 1;
			break;
		case OPT_GVL_WAIT:
			o->gvl_wait = 1;
			break;
		case OPT_READ_ONLY:
			o->read_only = 1;
			break;
		case OPT_THREADS:
			o->threads = 1;
			break;
		case OPT_NO_TAGS:
			o->no_tags = 1;
			break;
		case OPT_NO_GC:
			o->no_gc = 1;
			break;
		case OPT_FUNCTION:
			o->function = 1;
			break;
		case OPT_MAX_MEMORY:
			if (!parse_size(optarg, (size_t)1 << 20, (size_t)64 << 30, &o->max_memory))
				return cli_usage_error(
						o->cmd, "invalid size '%s' for --max-memory: want 1M to 64G",
						optarg);
			break;
		case OPT_SUBPROCESSES:
			o->subprocesses = 1;
			break;
		case OPT_PID_OF:
			o->pid_of = optarg;
			break;
		case OPT_SERVER:
			o->up.server = optarg;
			break;
		case OPT_APP_NAME:
			o->up.app_name = optarg;
			break;
		case OPT_TAG:
			if (o->ntags == INGEST_MAX_TAGS)
				return cli_usage_error(o->cmd, "more than %d --tag options",
						   INGEST_MAX_TAGS);
			o->tags[o->ntags++] = optarg;
			break;
		case OPT_AUTH_TOKEN:
			o->up.auth_token = optarg;
			break;
		case OPT_BASIC_AUTH:
			o->up.basic_auth = optarg;
			break;
		case OPT_AUTH_TOKEN_FILE:
			o->auth_token_file = optarg;
			break;
		case OPT_BASIC_AUTH_FILE:
			o->basic_auth_file = optarg;
			break;
		case OPT_USER:
			if (!*optarg)
				return cli_usage_error(o->cmd, "empty user name for --user");
			o->user = optarg;
			break;
		case OPT_AS_ROOT:
			o->as_root = 1;
			break;
		case OPT_TENANT_ID:
			o->up.tenant_id = optarg;
			break;
		case OPT_HEADER:
			if (o->nheaders == ARRAY_SIZE(o->headers) - 1)
				return cli_usage_error(o->cmd, "too many --header options");
			o->headers[o->nheaders++] = optarg;
			break;
		case OPT_INSECURE:
			o->up.insecure = 1;
			break;
		case OPT_LOCALS:
			o->locals = 1;
			break;
		case OPT_TASKS:
			o->tasks = 1;
			break;
		case OPT_ASYNC:
			o->async_tasks = 1;
			break;
		case OPT_LISTEN: {
			char host[256], port[16];

			if (serve_parse_listen(optarg, host, sizeof(host), port, sizeof(port)))
				return cli_usage_error(
						o->cmd, "invalid --listen '%s': want ADDR:PORT, e.g. "
						"127.0.0.1:6060, 0.0.0.0:6060 or [::1]:6060", optarg);
			o->listen = optarg;
			break;
		}
		case OPT_ALLOW_HOST:
			if (!serve_host_name_ok(optarg))
				return cli_usage_error(o->cmd, "invalid --allow-host '%s': want a "
						       "host name or an IP address without port, "
						       "e.g. profiler.internal", optarg);
			if (o->nallow_host == SERVE_MAX_ALLOW_HOSTS)
				return cli_usage_error(o->cmd, "more than 16 --allow-host");
			o->allow_host[o->nallow_host++] = optarg;
			break;
		case OPT_CACERT:
			o->up.cacert = optarg;
			break;
		case OPT_INGEST_FORMAT:
			if (!strcmp(optarg, "folded"))
				o->up.format = INGEST_FORMAT_FOLDED;
			else if (!strcmp(optarg, "trie"))
				o->up.format = INGEST_FORMAT_TRIE;
			else if (!strcmp(optarg, "pprof"))
				o->up.format = INGEST_FORMAT_PPROF;
			else
				return cli_usage_error(
						o->cmd, "unknown ingest format '%s': want folded, trie "
						"or pprof", optarg);
			break;
		case OPT_PROTOCOL:
			if (!strcmp(optarg, "ingest"))
				o->up.protocol = INGEST_PROTOCOL_INGEST;
			else if (!strcmp(optarg, "push"))
				o->up.protocol = INGEST_PROTOCOL_PUSH;
			else
				return cli_usage_error(
						o->cmd, "unknown protocol '%s': want ingest or push",
						optarg);
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'v':
			o->verbose++;
			break;
		case 'h':
			print_usage(o->cmd);
			return EXIT_OK;
		case 'V':
			print_version();
			return EXIT_OK;
		case ':':
			return cli_usage_error(
					o->cmd, "option '%s' needs a value", argv[optind - 1]);
		default:
			if (optopt)
				return cli_usage_error(o->cmd, "unknown option '-%c'", optopt);
			return cli_usage_error(o->cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (o->raw && (!strcmp(o->raw, o->output ? o->output : "") ||
		       (o->format && out_find(o->format)->open) ||
		       (!o->format && o->output && out_by_ext(o->output))))
		return cli_usage_error(
				o->cmd, "--raw FILE is a raw recording besides another output: "
				"give -o another file and format");
	if (!strcmp(o->cmd, "exec")) {
		if (optind >= argc)
			return cli_usage_error(o->cmd, "no command to run");
		if (o->pid || o->pid_of)
			return cli_usage_error(o->cmd, "--pid and --pid-of cannot be used with exec");
		o->argv = argv + optind;
		if (o->user && o->as_root)
			return cli_usage_error(o->cmd, "give --user or --as-root, not both");
	} else {
		if (optind < argc)
			return cli_usage_error(o->cmd, "unexpected argument '%s'", argv[optind]);
		if (o->pid && o->pid_of)
			return cli_usage_error(o->cmd, "give --pid or --pid-of, not both");
		if (!o->pid && !o->pid_of)
			return cli_usage_error(
					o->cmd, "%s needs --pid PID (or --pid-of PATTERN)", o->cmd);
	}
	return check_upload(o);
}

/*
 * --pid-of: the oldest process whose name or command line matches, e.g.
 * the master of a server in a sidecar that does not know its pid.
 */
static int resolve_pid_of(struct cli_opts *o)
{
	unsigned int n;
	pid_t pid;

	if (!o->pid_of)
		return -1;
	pid = ptree_find(o->pid_of, &n);
	if (pid < 0 && errno == EINVAL)
		return cli_usage_error(o->cmd, "invalid pattern '%s' for --pid-of", o->pid_of);
	if (pid <= 0) {
		cli_error("no process matches '%s'", o->pid_of);
		cli_hint("check with: pgrep -a -f '%s'", o->pid_of);
		return EXIT_NOPROC;
	}
	if (n > 1)
		note(o, "%u processes match '%s': taking the oldest, %d", n, o->pid_of, (int)pid);
	o->pid = pid;
	return -1;
}

#define REFUSED_HINT "pyrospy reads only the files a process mapped; restart a process whose " \
	"files were replaced, or give pyrospy CAP_CHECKPOINT_RESTORE to read them through " \
	"/proc/PID/map_files (see SECURITY in pyrospy(1))"

/*
 * A file target_open() refused though the target was found (a decoy named
 * like an interpreter library): one line, even with --quiet.
 */
static void warn_refused(const struct target *t)
{
	if (t->refused)
		fprintf(stderr, "pyrospy: warning: refused to read '%s' of process %d ('%s'): %s\n",
			t->refused, (int)t->pid, t->comm, t->refused_why);
}

/*
 * --gil on a free-threaded CPython (3.13t+): there is no GIL to hold, so
 * the option would keep nothing.  EXIT_UNSUPPORTED with a message, or
 * EXIT_OK.  Likewise --async where it cannot be read (pyasync.h).
 */
static int gil_refused(const struct cli_opts *o, const struct target *t)
{
	const char *why;

	if (o->async_tasks && t && pyasync_supported(t, &why)) {
		/* the version says "t" itself when free-threaded */
		cli_error("--async: process %d is %s %s: %s", (int)t->pid,
			  target_lang_name(t->lang), t->version, why);
		cli_hint("leave out --async");
		return EXIT_UNSUPPORTED;
	}
	if (!o->gil || !t || !t->free_threaded)
		return EXIT_OK;
	cli_error("--gil: Python %s (process %d) is a free-threaded build: it has no GIL",
		  t->version, (int)t->pid);
	cli_hint("leave out --gil: without --idle only the threads the kernel shows running "
		 "are kept");
	return EXIT_UNSUPPORTED;
}

/* Turn a failure to open the target into a message, a hint and a status. */
static int report_target(const struct target *t, enum perr err)
{
	pid_t pid = t->pid;
	char exe[PATH_MAX];

	switch (err) {
	case PERR_NOPROC:
		cli_error("no such process %d", (int)pid);
		cli_hint("check the pid with 'ps -p %d', or use 'pyrospy exec -- COMMAND'", (int)pid);
		return EXIT_NOPROC;
	case PERR_EXITED:
		cli_error("process %d exited", (int)pid);
		cli_hint("the process ended (or is a zombie) before it could be read");
		return EXIT_NOPROC;
	case PERR_PERM:
		cli_error("permission denied reading process %d ('%s')", (int)pid, t->comm);
		switch (target_perm_cause(pid)) {
		case TARGET_PERM_OTHER_USER:
			cli_hint("the process belongs to another user: run pyrospy as that user or as root (sudo)");
			break;
		case TARGET_PERM_YAMA:
			cli_hint("kernel.yama.ptrace_scope forbids it: run as root, or 'sysctl kernel.yama.ptrace_scope=0'");
			break;
		case TARGET_PERM_ROOT:
			cli_hint("root with CAP_SYS_PTRACE was refused: the process holds capabilities "
				 "this one lacks, or a security module (SELinux, AppArmor, Landlock) "
				 "forbids reading it");
			break;
		case TARGET_PERM_NOCAP:
			cli_hint("CAP_SYS_PTRACE is missing (a container default): add it, e.g. 'docker run --cap-add SYS_PTRACE' or securityContext.capabilities.add: [SYS_PTRACE]");
			break;
		default:
			cli_hint("run as root, or as the process's owner with CAP_SYS_PTRACE");
		}
		return EXIT_PERM;
	case PERR_NOTINTERP:
		/* the path is the target's choice: printed sanitized, like its name */
		if (t->exe_path)
			utf8_sanitize(exe, sizeof(exe), t->exe_path, strlen(t->exe_path));
		cli_error("process %d ('%s', %s) is not a Ruby or Python process", (int)pid,
		      t->comm, t->exe_path ? exe : "unknown executable");
		cli_hint("give the pid of a ruby or python3 process (pgrep -a 'ruby|python')");
		return EXIT_NOTINTERP;
	case PERR_UNSUPPORTED:
		cli_error("%s %s is not supported (process %d)", target_lang_name(t->lang),
		      *t->version ? t->version : "of unknown version", (int)pid);
		if (t->free_threaded)
			cli_hint("a free-threaded build whose _Py_DebugOffsets pyrospy cannot "
				 "make sense of: see FREE-THREADED PYTHON in pyrospy(1)");
		else
			cli_hint("pyrospy reads Python 3.8 to 3.15 and Ruby 2.7 to 4.0");
		return EXIT_UNSUPPORTED;
	case PERR_REFUSED:
		cli_error("refused to read '%s' of process %d ('%s'): %s",
		      t->refused ? t->refused : "?", (int)pid, t->comm,
		      t->refused_why ? t->refused_why : "refused");
		cli_hint(REFUSED_HINT);
		return EXIT_FAIL;
	default:
		if (err == PERR_TOOBIG && !t->maps.nr) {
			cli_error("the memory maps of process %d ('%s') are past pyrospy's bounds",
				  (int)pid, t->comm);
			cli_hint("at most %u MiB of /proc/PID/maps, %u MiB kept of them, %u MiB for "
				 "all processes: see SECURITY in pyrospy(1)", PROCMAPS_MAX_BYTES >> 20,
				 PROCMAPS_MAX_HELD >> 20, PROCMAPS_MAX_TOTAL >> 20);
			return EXIT_FAIL;
		}
		cli_error("cannot read process %d: %s", (int)pid, perr_str(err));
		cli_hint("run with -v for details");
		return EXIT_FAIL;
	}
}

static void on_signal(int sig)
{
	stop_flag = 1;
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
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

/* The format asked for, by -f, by -o's extension, or by default. */
static const struct out_ops *output_format(const struct cli_opts *o)
{
	const struct out_ops *ops = o->format ? out_find(o->format) :
				    o->output ? out_by_ext(o->output) : NULL;

	if (ops)
		return ops;
	return out_find(o->output && !strcmp(o->output, "-") ? "folded" : "flamegraph");
}

static void output_stem(char *name, size_t cap, pid_t pid)
{
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	snprintf(name, cap, "pyrospy-%d-%04d%02d%02d-%02d%02d%02d", (int)pid,
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		 tm.tm_sec);
}

static int write_profile(const struct cli_opts *o, const struct profile *p,
			 const struct sampler_result *res, pid_t pid)
{
	const struct out_ops *ops = output_format(o);
	struct out_meta meta;
	struct outfile of;
	char title[64], name[96];
	int ret;

	snprintf(title, sizeof(title), "pid %d", (int)pid);
	memset(&meta, 0, sizeof(meta));
	meta.title = title;
	meta.duration = res->elapsed;
	meta.rate = o->rate;
	meta.start = res->start;
	meta.threads = o->threads;
	meta.no_tags = o->no_tags;
	output_stem(name, sizeof(name), pid);
	ret = cli_output_open(&of, o->output, name, ops->ext);
	if (ret != EXIT_OK)
		goto out;
	if (ops->write(of.f, p, &meta)) {
		ret = cli_output_failed(&of);
		goto out;
	}
	ret = cli_output_commit(&of, 0);
	if (ret == EXIT_OK && strcmp(of.path, "-"))
		note(o, "wrote %s profile to '%s' (%llu samples)", ops->name, of.path,
		     (unsigned long long)p->total);
out:
	outfile_close(&of);
	return ret;
}

/*
 * A streaming format (raw, chrome): the file is opened, and put in place, before
 * sampling starts, and every sample goes to it as it comes, so that what
 * was flushed stays readable whatever happens to pyrospy.
 */
struct stream {
	const struct out_ops *ops;
	struct out_stream *s;
	struct outfile of;
};

static void stream_sample(void *arg, int64_t when_ns, const char *tags, const struct stack *st)
{
	struct stream *sm = arg;

	/* a failure sticks in the writer and is reported at the end */
	sm->ops->sample(sm->s, when_ns, tags, st);
}

static int stream_open(const struct cli_opts *o, struct stream *sm, const char *path, pid_t pid)
{
	struct out_meta meta;
	struct timespec ts;
	char title[64], name[96];
	int ret;

	snprintf(title, sizeof(title), "pid %d", (int)pid);
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&meta, 0, sizeof(meta));
	meta.title = title;
	meta.rate = o->rate;
	meta.start = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	output_stem(name, sizeof(name), pid);
	ret = cli_output_open(&sm->of, path, name, sm->ops->ext);
	if (ret != EXIT_OK)
		return ret;
	sm->s = sm->ops->open(sm->of.f, &meta, (o->idle ? OUT_KEPT_IDLE : 0u) |
						 (o->gil ? OUT_KEPT_GIL : 0u) |
						 (o->subprocesses ? OUT_KEPT_PIDS : 0u));
	if (!sm->s)
		return cli_output_failed(&sm->of);
	ret = cli_output_commit(&sm->of, 1);
	if (ret != EXIT_OK) {
		sm->ops->close(sm->s);
		sm->s = NULL;
	}
	return ret;
}

static int stream_close(const struct cli_opts *o, struct stream *sm, uint64_t samples)
{
	int ret = EXIT_OK;

	if (sm->s && sm->ops->close(sm->s))
		ret = cli_output_failed(&sm->of);
	sm->s = NULL;
	if (ret == EXIT_OK && sm->of.f)
		ret = cli_output_commit(&sm->of, 0);
	if (ret == EXIT_OK && strcmp(sm->of.path, "-"))
		note(o, "wrote %s %s to '%s' (%llu samples)", sm->ops->name,
		     sm->ops == &out_raw ? "recording" : "trace", sm->of.path,
		     (unsigned long long)samples);
	outfile_close(&sm->of);
	return ret;
}

/*
 * What happens besides sampling while recording: the live status line on a
 * terminal, and with --server the current 10 s window, handed to the
 * uploader when the wall clock crosses into the next one.
 */
struct recording {
	int live;
	struct ingest *in;
	struct profile window;
	time_t from;
	int no_lines, show_pid;
	size_t max_bytes;
	uint64_t other;		/* of the windows uploaded */
};

static void window_reset(struct recording *rec)
{
	rec->other += rec->window.other;
	profile_release(&rec->window);
	profile_init(&rec->window);
	rec->window.no_lines = rec->no_lines;
	rec->window.max_bytes = rec->max_bytes;
	rec->window.show_pid = rec->show_pid;
}

/* Hand the window over if now is past it. */
static void window_rotate(struct recording *rec, time_t now)
{
	time_t at = ingest_align(now);

	if (at == rec->from)
		return;
	ingest_window(rec->in, &rec->window, rec->from, rec->from + INGEST_WINDOW);
	window_reset(rec);
	rec->from = at;
}

static void recording_add(void *arg, const char *tags, const struct stack *st)
{
	struct recording *rec = arg;

	window_rotate(rec, time(NULL));
	profile_add(&rec->window, tags, st, 1);
}

static int recording_tick(void *arg, const struct profile *p, const struct sampler_result *res)
{
	struct recording *rec = arg;
	struct ingest_stats is;

	if (rec->in)
		window_rotate(rec, time(NULL));
	if (!rec->live)
		return 0;
	fprintf(stderr, "\r\033[Kpyrospy: %.0f s, %llu samples (%.0f Hz), %llu stacks, %llu dropped, "
		"%llu late", res->elapsed, (unsigned long long)res->ticks,
		res->elapsed > 0 ? (double)res->ticks / res->elapsed : 0.0,
		(unsigned long long)p->total, (unsigned long long)res->dropped,
		(unsigned long long)res->late);
	if (rec->in) {
		ingest_stats(rec->in, &is);
		fprintf(stderr, "; uploaded %llu windows, %u requests waiting%s%s",
			(unsigned long long)is.delivered, is.pending, *is.last_error ? ": " : "",
			is.last_error);
	}
	return 0;
}

/*
 * Sample and write the profile.  t is the target, or NULL with
 * --subprocesses when pid is no interpreter itself (its descendants are
 * found as they come).  *why says what ended the sampling.
 */
enum ended {
	ENDED_BY_US,		/* the duration, a signal, q */
	ENDED_EXITED,		/* the target exited (or is exiting) */
	ENDED_EXEC_AWAY,	/* it exec()'d a program that cannot be profiled */
	ENDED_EARLY,		/* sampling failed while the target may run on */
};

static int profile_target(struct cli_opts *o, struct target *t, pid_t pid, pid_t child,
			  enum ended *why)
{
	struct recording rec = {
		.live = !o->quiet && isatty(STDERR_FILENO),
		.no_lines = o->function,
		.show_pid = o->subprocesses,
		.max_bytes = o->max_memory,
	};
	/*
	 * Every sample to a streaming writer: the output itself (-f raw or
	 * chrome; a file only when asked for while streaming to a server), or
	 * a raw recording besides it (--raw FILE).
	 */
	struct stream sm = { .ops = output_format(o)->open ? output_format(o) : &out_raw };
	int raw_out = output_format(o)->open && (!o->up.server || o->output);
	int streaming = raw_out || o->raw;
	struct sampler_opts so = {
		.rate = o->rate,
		.duration = o->duration,
		.reader = { .idle = o->idle, .gil_only = o->gil, .gvl_wait = o->gvl_wait,
			    .no_gc = o->no_gc, .async_tasks = o->async_tasks,
			    .anchor = !o->read_only },
		.child = child,
		.root = o->subprocesses ? pid : 0,
		.announce = !o->quiet,
		.verbose = o->verbose,
		.tags = o->tagset,
		.add = o->up.server ? recording_add : NULL,
		/* streaming for days: the whole run's profile only for a file */
		.count_only = (o->up.server && !o->output) || raw_out,
		.tick = rec.live || o->up.server ? recording_tick : NULL,
		.arg = &rec,
		.sample = streaming ? stream_sample : NULL,
		.sample_arg = &sm,
	};
	struct sampler_result res;
	struct profile p;
	enum perr err;
	int ret = gil_refused(o, t);

	if (ret != EXIT_OK)
		return ret;
	if (streaming) {
		ret = stream_open(o, &sm, raw_out ? o->output : o->raw, pid);
		if (ret != EXIT_OK) {
			outfile_close(&sm.of);
			return ret;
		}
	}
	if (o->up.server) {
		o->up.spy_name = !t ? "pyrospy" : t->lang == TARGET_RUBY ? "pyrospy-ruby" :
								     "pyrospy-python";
		/* the OpenTelemetry names: sys.implementation.name, RUBY_ENGINE */
		o->up.runtime_name = !t ? NULL : t->lang == TARGET_RUBY ? "ruby" : "cpython";
		o->up.runtime_version = t ? t->version : NULL;
		o->up.log = stderr;
		rec.in = ingest_start(&o->up);
		if (!rec.in) {
			if (streaming)
				stream_close(o, &sm, 0);
			return EXIT_FAIL;	/* it said why, and what to do */
		}
		window_reset(&rec);
		rec.from = ingest_align(time(NULL));
	}

	if (t)
		warn_refused(t);
	if (t)
		note(o, "profiling process %d (%s %s)%s at %u Hz%s", (int)pid,
		     target_lang_name(t->lang), t->version,
		     o->subprocesses ? " and its subprocesses" : "", o->rate,
		     o->duration > 0 ? "" : ", Ctrl-C to stop");
	else
		note(o, "profiling the Ruby and Python subprocesses of process %d at %u Hz%s",
		     (int)pid, o->rate, o->duration > 0 ? "" : ", Ctrl-C to stop");
	profile_init(&p);
	p.no_lines = o->function;
	p.show_pid = o->subprocesses;
	p.max_bytes = o->max_memory;
	err = sampler_run(t, &p, &so, &res, &stop_flag);
	if (rec.live)
		fputs("\r\033[K", stderr);
	if (rec.in) {
		/* the partial window too, then what is spooled, bounded in time */
		ingest_window(rec.in, &rec.window, rec.from, rec.from + INGEST_WINDOW);
		rec.other += rec.window.other;
		profile_release(&rec.window);
		if (ingest_stop(rec.in))
			ret = EXIT_FAIL;
		else
			note(o, "uploaded every window to %s", o->up.server);
	}
	if (err) {
		if (streaming)
			stream_close(o, &sm, p.total);
		profile_release(&p);
		return t ? report_target(t, err) : EXIT_FAIL;
	}
	if (o->verbose)
		fprintf(stderr, "pyrospy: %s\n", res.describe);
	/* even with -q: the profile is not what it would have been */
	if (p.other || rec.other)
		fprintf(stderr, "pyrospy: warning: the profile reached --max-memory %zu MiB: %llu "
			"samples of new stacks are counted in [other] frames\n", o->max_memory >> 20,
			(unsigned long long)(p.other > rec.other ? p.other : rec.other));
	if (o->verbose || (!o->quiet && res.dropped * 100 > res.stacks + res.dropped))
		fprintf(stderr,
			"pyrospy: %llu samples in %.1f s (%.0f Hz), %llu stacks, %llu dropped, "
			"%llu torn reads retried, %llu late, %.1f reads and %.0f us CPU per "
			"sample\n",
			(unsigned long long)res.ticks, res.elapsed,
			res.elapsed > 0 ? (double)res.ticks / res.elapsed : 0.0,
			(unsigned long long)res.stacks, (unsigned long long)res.dropped,
			(unsigned long long)res.retries, (unsigned long long)res.late,
			res.ticks ? (double)res.reads / (double)res.ticks : 0.0,
			res.ticks ? res.cpu * 1e6 / (double)res.ticks : 0.0);
	if (o->verbose && res.ticks)
		fprintf(stderr, "pyrospy: %.1f ranges of the target's memory read per sample\n",
			(double)res.ranges / (double)res.ticks);
	if (o->verbose && res.tags_dropped)
		fprintf(stderr, "pyrospy: tags dropped %llu times (changed under the read, or a "
			"set not readable)\n", (unsigned long long)res.tags_dropped);
	if (o->verbose && res.anchored)
		fprintf(stderr, "pyrospy: %llu stacks read only above the frame CPython keeps for "
			"profilers (last_profiled_frame)\n", (unsigned long long)res.anchored);
	if (o->verbose && res.unqualified)
		fprintf(stderr, "pyrospy: %llu Ruby method names shown without their class "
			"(it could not be read)\n", (unsigned long long)res.unqualified);
	*why = res.end == PERR_OK ? ENDED_BY_US : res.end == PERR_EXITED ? ENDED_EXITED :
	       res.execs ? ENDED_EXEC_AWAY : ENDED_EARLY;
	if (*why == ENDED_EXEC_AWAY)
		note(o, "process %d exec()'d '%s', which cannot be profiled (%s); writing what was "
		     "sampled", (int)pid, res.exec_comm, perr_str(res.end));
	else if (res.end == PERR_EXITED && !child)
		note(o, "process %d exited; writing what was sampled", (int)pid);
	else if (res.end == PERR_STARTUP)
		note(o, "process %d never finished starting its interpreter", (int)pid);
	else if (*why == ENDED_EARLY)
		note(o, "sampling stopped early: %s", perr_str(res.end));
	if (!p.total)
		note(o, "no samples collected%s", o->idle ? "" : " (every thread idle? try --idle)");
	if (streaming) {
		int wret = stream_close(o, &sm, p.total);

		if (wret != EXIT_OK)
			ret = wret;
	}
	/* streaming: a file only when asked for */
	if (!raw_out && (!o->up.server || o->output)) {
		int wret = write_profile(o, &p, &res, pid);

		if (wret != EXIT_OK)
			ret = wret;
	}
	profile_release(&p);
	return ret;
}

static int cmd_record(struct cli_opts *o)
{
	struct target t;
	enum perr err;
	enum ended why;
	int ret;

	install_signals();
	err = target_open(&t, o->pid);
	if (!err)
		ret = profile_target(o, &t, o->pid, 0, &why);
	else if (o->subprocesses && (err == PERR_NOTINTERP || err == PERR_UNSUPPORTED))
		ret = profile_target(o, NULL, o->pid, 0, &why);
	else
		ret = report_target(&t, err);
	target_close(&t);
	return ret;
}

/* SIGTERM, and SIGKILL if that has not ended it within 5 s. */
static void stop_child(const struct cli_opts *o, pid_t pid, int *status)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	kill(pid, SIGTERM);
	for (int i = 0; i < 250; i++) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return;
		nanosleep(&ts, NULL);
	}
	note(o, "'%s' (pid %d) is still running 5 s after SIGTERM: sending SIGKILL", o->argv[0],
	     (int)pid);
	kill(pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
}

/*
 * Whom exec runs the command as.  pyrospy itself keeps its rights (it
 * reads the command as root); the command gets those of the user chosen:
 *
 *   --as-root            root, as pyrospy
 *   --user NAME          NAME's uid, gid and groups; HOME, USER, LOGNAME
 *   root through sudo    $SUDO_UID's likewise ($SUDO_GID as its group)
 *   otherwise            pyrospy's own (a root shell's command stays root)
 */
struct exec_user {
	int drop;		/* change to uid, gid and groups before exec */
	uid_t uid;
	gid_t gid;
	gid_t *groups;		/* the supplementary groups, malloc'd */
	int ngroups;
	char *name, *home;	/* NULL: the environment is left as it is */
};

static void exec_user_release(struct exec_user *u)
{
	free(u->groups);
	free(u->name);
	free(u->home);
	memset(u, 0, sizeof(*u));
}

/* uid, and the rest from its passwd entry pw (NULL: none, gid alone). */
static void exec_user_set(struct exec_user *u, uid_t uid, gid_t gid, const struct passwd *pw)
{
	int n = 0;

	u->drop = 1;
	u->uid = uid;
	u->gid = gid;
	if (pw) {
		u->name = xstrfmt("%s", pw->pw_name);
		u->home = xstrfmt("%s", pw->pw_dir);
		/* asked for the count first; gid is always in the list */
		getgrouplist(pw->pw_name, gid, NULL, &n);
		if (n > 0) {
			u->groups = xreallocarray(NULL, (size_t)n, sizeof(*u->groups));
			if (getgrouplist(pw->pw_name, gid, u->groups, &n) < 0)
				n = 0;
		}
	}
	if (n <= 0) {
		free(u->groups);
		u->groups = xreallocarray(NULL, 1, sizeof(*u->groups));
		u->groups[0] = gid;
		n = 1;
	}
	u->ngroups = n;
}

/* A uid or gid of $SUDO_UID, $SUDO_GID: 0 if absent or not one. */
static int sudo_id(const char *var, unsigned long *id)
{
	const char *v = getenv(var);

	return v && parse_uint(v, (unsigned int)-2, id);
}

/* Whom exec runs its command as, before anything runs: -1, or a status. */
static int exec_user_resolve(const struct cli_opts *o, struct exec_user *u)
{
	unsigned long uid, gid = 0;
	struct passwd *pw;

	memset(u, 0, sizeof(*u));
	if (o->as_root)
		return -1;
	if (o->user) {
		errno = 0;
		pw = getpwnam(o->user);
		if (!pw) {
			cli_error("no user '%s'%s%s", o->user, errno ? ": " : "",
				  errno ? strerror(errno) : "");
			cli_hint("check the name with 'getent passwd %s', or leave out --user", o->user);
			return EXIT_USAGE;
		}
		if (pw->pw_uid == geteuid() && pw->pw_uid == getuid())
			return -1;	/* already */
		if (geteuid() != 0) {
			cli_error("--user '%s': pyrospy runs as uid %d, and only root may run a "
				  "command as another user", o->user, (int)geteuid());
			cli_hint("run pyrospy as root (sudo), or leave out --user");
			return EXIT_PERM;
		}
		exec_user_set(u, pw->pw_uid, pw->pw_gid, pw);
		return -1;
	}
	if (geteuid() != 0 || getuid() != 0 || !getenv("SUDO_UID"))
		return -1;
	/* run as root through sudo: back to the one who ran sudo */
	if (!sudo_id("SUDO_UID", &uid) || (getenv("SUDO_GID") && !sudo_id("SUDO_GID", &gid))) {
		cli_error("invalid $SUDO_UID or $SUDO_GID ('%.20s', '%.20s'): want a uid and a gid",
			  getenv("SUDO_UID"), getenv("SUDO_GID") ? getenv("SUDO_GID") : "");
		cli_hint("give --user NAME or --as-root, or unset SUDO_UID");
		return EXIT_USAGE;
	}
	if (uid == 0)
		return -1;
	pw = getpwuid((uid_t)uid);
	if (!getenv("SUDO_GID")) {
		if (!pw) {
			cli_error("$SUDO_UID %lu is no user's and $SUDO_GID is not set", uid);
			cli_hint("give --user NAME or --as-root, or set SUDO_GID");
			return EXIT_USAGE;
		}
		gid = pw->pw_gid;
	}
	exec_user_set(u, (uid_t)uid, (gid_t)gid, pw);
	note(o, "running '%s' as uid %lu%s%s%s, who ran sudo (--as-root keeps root)", o->argv[0],
	     uid, pw ? " ('" : "", pw ? pw->pw_name : "", pw ? "')" : "");
	return -1;
}

/* Close every descriptor from lo up to hi. */
static void close_fds(unsigned int lo, unsigned int hi)
{
	long max = sysconf(_SC_OPEN_MAX);

#ifdef SYS_close_range
	if (!syscall(SYS_close_range, lo, hi, 0))
		return;
#endif
	if (max < 0 || max > 65536)
		max = 65536;
	for (unsigned long fd = lo; fd <= hi && fd < (unsigned long)max; fd++)
		close((int)fd);
}

/*
 * In the child, before exec: become u, keeping no descriptor but 0, 1, 2
 * and keep (those of root's that pyrospy inherited are no business of
 * u's, as sudo closes them).  0, or -1 with errno (the child must not run
 * the command then).
 */
static int exec_user_become(const struct exec_user *u, int keep)
{
	if (!u->drop)
		return 0;
	if (keep > 3)
		close_fds(3, (unsigned int)keep - 1);
	close_fds((unsigned int)keep + 1, ~0u);
	/* groups first, while root may still change them; uid last */
	if (setgroups((size_t)u->ngroups, u->groups) < 0 || setgid(u->gid) < 0 ||
	    setuid(u->uid) < 0)
		return -1;
	/* no way back: a setuid() that left a saved root uid would fail here */
	if (setuid(0) == 0 || getegid() != u->gid || geteuid() != u->uid) {
		errno = EPERM;
		return -1;
	}
	if (u->name) {
		setenv("HOME", u->home, 1);
		setenv("USER", u->name, 1);
		setenv("LOGNAME", u->name, 1);
	}
	return 0;
}

/*
 * exec: start the command as u, with the tag helpers of dir on its paths,
 * and wait until it has become an interpreter (it may still be a shell or
 * the dynamic loader for a while).
 */
static int exec_command(struct cli_opts *o, const struct exec_user *u, const char *dir)
{
	struct target t;
	enum perr err = PERR_NOTINTERP;
	enum ended why = ENDED_EARLY;
	int status, ret, stopped = 0, execfail[2];
	/* why the child did not run the command: { 0 exec() or 1 becoming u, errno } */
	int why_not[2] = { 0, 0 };
	ssize_t n;
	pid_t pid;

	install_signals();
	/* the child's exec() failure comes back on a close-on-exec pipe */
	if (pipe2(execfail, O_CLOEXEC) < 0) {
		cli_error("cannot start '%s': %s", o->argv[0], strerror(errno));
		return EXIT_FAIL;
	}
	pid = fork();
	if (pid < 0) {
		cli_error("cannot start '%s': %s", o->argv[0], strerror(errno));
		close(execfail[0]);
		close(execfail[1]);
		return EXIT_FAIL;
	}
	if (pid == 0) {
		if (dir) {
			/* import pyrospy / require "pyrospy" work with nothing installed */
			char *py = xstrfmt("%s/python", dir), *rb = xstrfmt("%s/ruby", dir);

			path_prepend("PYTHONPATH", py);
			path_prepend("RUBYLIB", rb);
			free(py);
			free(rb);
		}
		close(execfail[0]);
		/* -o -: the profile has standard output to itself */
		if (((o->output && !strcmp(o->output, "-")) || (o->raw && !strcmp(o->raw, "-"))) &&
		    dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			_exit(126);
		/* the profiled program gets no key of pyrospy's server */
		ingest_env_unset_secrets();
		if (exec_user_become(u, execfail[1]) < 0) {
			why_not[0] = 1;
		} else {
			execvp(o->argv[0], o->argv);
		}
		why_not[1] = errno;
		if (write(execfail[1], why_not, sizeof(why_not)) < 0)
			_exit(126);
		_exit(why_not[0] ? 126 : 127);
	}
	child_pid = pid;
	close(execfail[1]);
	while ((n = read(execfail[0], why_not, sizeof(why_not))) < 0 && errno == EINTR)
		;
	close(execfail[0]);
	if (n == (ssize_t)sizeof(why_not)) {
		int errnum = why_not[1];

		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		child_pid = 0;
		if (why_not[0]) {
			cli_error("cannot run '%s' as uid %d: %s", o->argv[0], (int)u->uid,
				  strerror(errnum));
			cli_hint("give --as-root to keep root, or --user another user");
			return 126;
		}
		cli_error("cannot run '%s': %s", o->argv[0], strerror(errnum));
		cli_hint(errnum == ENOENT ? "check the command's name, or give its full path" :
		     "check the command may be run by this user");
		return errnum == ENOENT ? 127 : 126;	/* as a shell says */
	}
	memset(&t, 0, sizeof(t));
	/* --subprocesses: the command may be a shell; its tree is watched */
	for (int tries = 0; tries < 500 && !stop_flag && !o->subprocesses; tries++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		target_close(&t);
		err = target_open(&t, pid);
		/* mid-exec() anything may fail once: only these are final */
		if (err == PERR_OK || err == PERR_PERM)
			break;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			child_pid = 0;
			target_close(&t);
			/* not pyrospy's failure: the command's status says how it went */
			note(o, "'%s' ended before pyrospy could find an interpreter in it; nothing "
			     "was sampled", o->argv[0]);
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
		nanosleep(&ts, NULL);
	}
	if (o->subprocesses)
		ret = profile_target(o, NULL, pid, pid, &why);
	else if (err)
		ret = report_target(&t, err);
	else
		ret = profile_target(o, &t, pid, pid, &why);
	target_close(&t);
	/*
	 * The profile is written.  When the duration passed (or sampling
	 * failed within one) the command still runs: it was started to be
	 * profiled, so stop it rather than wait for it or leave it behind.
	 * Otherwise it ended, or is ending (exited but not yet reaped), or
	 * became another program, or got our signal too: wait, and its status
	 * is ours.
	 */
	if (ret == EXIT_OK && !stop_flag && o->duration > 0 &&
	    (why == ENDED_BY_US || why == ENDED_EARLY) && waitpid(pid, &status, WNOHANG) == 0) {
		note(o, "%s: stopping '%s' (pid %d) with SIGTERM",
		     why == ENDED_BY_US ? "duration reached" : "sampling stopped", o->argv[0],
		     (int)pid);
		stop_child(o, pid, &status);
		stopped = 1;
	} else {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	child_pid = 0;
	if (ret != EXIT_OK || stopped)
		return ret;	/* stopped by us: its status says nothing */
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* exec, with the tag helpers in a private directory for as long as it runs */
static int cmd_exec(struct cli_opts *o)
{
	struct exec_user u;
	struct taglibs h;
	int ret;

	ret = exec_user_resolve(o, &u);
	if (ret >= 0)
		return ret;
	/* not fatal: a command that does not use tags profiles as well without them */
	if (taglibs_init(&h) != PERR_OK)
		note(o, "warning: cannot write the tag helpers to a temporary directory (%s): "
		     "'import pyrospy' and 'require \"pyrospy\"' will fail in '%s'; set TMPDIR "
		     "to a writable directory", strerror(errno), o->argv[0]);
	/* root's private copy: the command's user reads it, and only root writes it */
	else if (u.drop && taglibs_share(&h) != PERR_OK)
		note(o, "warning: cannot let uid %d read the tag helpers (%s): 'import pyrospy' "
		     "and 'require \"pyrospy\"' will fail in '%s'", (int)u.uid, strerror(errno),
		     o->argv[0]);
	ret = exec_command(o, &u, h.dir[0] ? h.dir : NULL);
	taglibs_release(&h);
	exec_user_release(&u);
	return ret;
}

struct dump {
	const char *lang;
	unsigned int threads;
	FILE *f;		/* the threads, printed after the header */
	pid_t *tids;		/* the threads the interpreter showed */
	size_t ntid, atid;
};

#define DUMP_OTHERS_MAX	4096	/* threads with no interpreter frames listed, at most */

/* A frame's locals (pylocals.h: lines of "name: type = repr"), indented under it. */
static void dump_locals(FILE *f, const char *text)
{
	while (*text) {
		size_t n = strcspn(text, "\n");

		fprintf(f, "        %.*s\n", (int)n, text);
		text += n + (text[n] == '\n');
	}
}

static void dump_thread(void *arg, const struct stack *st)
{
	struct dump *d = arg;

	d->threads++;
	if (d->ntid == d->atid) {
		d->atid = d->atid ? d->atid * 2 : 64;
		d->tids = xreallocarray(d->tids, d->atid, sizeof(*d->tids));
	}
	d->tids[d->ntid++] = st->tid;
	fprintf(d->f, "\nThread %d", (int)st->tid);
	if (st->thread_name)
		fprintf(d->f, " \"%s\"", st->thread_name);
	if (st->ractor)
		fprintf(d->f, " (ractor %u,", st->ractor);
	else if (st->interp)
		fprintf(d->f, " (interpreter %" PRIu64 ",", st->interp);
	fprintf(d->f, "%s%s%s)\n", st->ractor || st->interp ? " " : " (",
		st->gvl_wait == 1 ? "waiting for the GVL" : st->idle == 1 ? "idle" :
		st->idle == 0 ? "running" : "state unknown",
	       st->holds_gil == 1 ? !strcmp(d->lang, "Ruby") ? ", holds the GVL" :
							       ", holds the GIL" : "");
	if (st->truncated)
		fprintf(d->f, "    [truncated: the outermost frames are not shown]\n");
	else if (!st->depth)
		fprintf(d->f, "    no %s frames\n", d->lang);
	for (unsigned int i = 0; i < st->depth; i++) {
		const struct stack_frame *f = &st->frame[i];

		if (!*f->file)
			fprintf(d->f, "    %s\n", f->name);
		else if (f->line > 0)
			fprintf(d->f, "    %s (%s:%d)\n", f->name, f->file, f->line);
		else
			fprintf(d->f, "    %s (%s)\n", f->name, f->file);
		if (st->locals && st->locals[i])
			dump_locals(d->f, st->locals[i]);
	}
}

/*
 * /proc/PID/task/TID/FILE, at most cap - 1 bytes of it, into buf: its
 * length, -1 if it cannot be read (the thread is gone).
 */
static ssize_t dump_task_file(pid_t pid, const char *tid, const char *file, char *buf,
			      size_t cap)
{
	char path[96];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%.16s/%s", (int)pid, tid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/*
 * Every thread of the kernel's that the interpreter did not show (a C
 * thread of an extension, one not yet or no longer the interpreter's):
 * its tid, its kernel name when it is not the process's, its state, and
 * that it has no frames of the language.  DUMP_OTHERS_MAX of them at most;
 * a thread gone meanwhile is passed over.
 */
static void dump_others(struct dump *d, const struct target *t)
{
	char path[48], stat[1024], comm[32], name[64];
	unsigned long more = 0;
	unsigned int shown = 0;
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		char *end, *state;
		long tid = strtol(de->d_name, &end, 10);
		size_t i;
		ssize_t n;

		if (*end || tid <= 0 || tid > INT_MAX)
			continue;
		for (i = 0; i < d->ntid && d->tids[i] != (pid_t)tid; i++)
			;
		if (i < d->ntid)
			continue;
		if (shown >= DUMP_OTHERS_MAX) {
			more++;
			continue;
		}
		/* the state follows the name in parentheses, which may hold any byte */
		if (dump_task_file(t->pid, de->d_name, "stat", stat, sizeof(stat)) < 0 ||
		    !(state = strrchr(stat, ')')) || state[1] != ' ' || !state[2])
			continue;
		n = dump_task_file(t->pid, de->d_name, "comm", comm, 17);
		if (n > 0 && comm[n - 1] == '\n')
			comm[--n] = '\0';
		name[0] = '\0';
		if (n > 0)
			utf8_sanitize(name, sizeof(name), comm, (size_t)n);
		if (!strcmp(name, t->comm))
			name[0] = '\0';	/* inherited: the process's */
		shown++;
		d->threads++;
		fprintf(d->f, "\nThread %ld%s%s%s (%s)\n    no %s frames\n", tid,
			*name ? " \"[" : "", name, *name ? "]\"" : "",
			state[2] == 'R' ? "running" : "idle", d->lang);
	}
	closedir(dir);
	if (more)
		fprintf(d->f, "\n(%lu more threads with no %s frames not listed)\n", more, d->lang);
}

/*
 * dump --tasks: the asyncio tasks of process t (pytasks.h) as a tree, after
 * the header; a version or a program with nothing to read says so in one
 * line, never with an empty tree (a subprocess of --subprocesses with none
 * is passed over in silence, as one that is no interpreter is).
 */
static int dump_tasks(struct cli_opts *o, struct target *t, struct reader *r, int *any)
{
	int child = o->subprocesses && t->pid != o->pid;
	struct pyreader *pr = reader_python(r);
	const char *why = NULL;
	unsigned int n = 0;
	char *text = NULL;
	size_t len = 0;
	enum perr err;
	FILE *f;

	if (!pr && child)
		return EXIT_OK;
	if (!pr) {
		cli_error("process %d is %s %s: --tasks reads Python's asyncio tasks", (int)t->pid,
			  target_lang_name(t->lang), t->version);
		cli_hint("leave out --tasks to see its threads");
		return EXIT_UNSUPPORTED;
	}
	f = open_memstream(&text, &len);
	if (!f) {
		cli_error("out of memory");
		return EXIT_FAIL;
	}
	err = pytasks_dump(pr, t, f, &n, &why);
	fputc('\0', f);
	fclose(f);
	if (child && (err == PERR_UNSUPPORTED || err == PERR_NOTFOUND)) {
		free(text);
		return EXIT_OK;
	}
	if (err == PERR_UNSUPPORTED || err == PERR_NOTFOUND || (err && why)) {
		cli_error("cannot show the asyncio tasks of process %d (Python %s): %s", (int)t->pid,
			  t->version, why ? why : perr_str(err));
		if (err == PERR_NOTFOUND)
			cli_hint("a program that uses asyncio imports it; this one has no tasks");
		else if (err == PERR_UNSUPPORTED)
			cli_hint("leave out --tasks to see its threads");
		else
			cli_hint("try again");
		free(text);
		return err == PERR_UNSUPPORTED ? EXIT_UNSUPPORTED : EXIT_FAIL;
	}
	if (err) {
		free(text);
		return report_target(t, err);
	}
	printf("%sProcess %d (%s, %s %s): %u asyncio task%s\n%s", *any ? "\n" : "", (int)t->pid,
	       t->comm, target_lang_name(t->lang), t->version, n, n == 1 ? "" : "s", text);
	*any = 1;
	if (o->verbose)
		fprintf(stderr, "pyrospy: %s; %llu reads\n", reader_describe(r),
			(unsigned long long)t->mem.calls);
	free(text);
	return EXIT_OK;
}

/*
 * dump: one sample of every thread, idle ones too, printed as text.  An
 * interpreter still starting gets a few tries.
 */
/*
 * Dump process pid.  With --subprocesses, one that is no interpreter (or
 * is gone) is passed over in silence; *dumped says whether pid was dumped,
 * and *any whether one was before (then a blank line comes first).
 */
static int dump_one(struct cli_opts *o, pid_t pid, int *any, int *dumped)
{
	struct reader_opts ro = { .idle = 1, .locals = o->locals, .no_gc = o->no_gc };
	struct dump d = { 0 };
	struct reader *r = NULL;
	struct target t;
	char *text = NULL;
	size_t len = 0;
	enum perr err = PERR_STARTUP;
	int ret = EXIT_OK, torn = 0;

	*dumped = 0;
	err = target_open(&t, pid);
	if (err && o->subprocesses && (err == PERR_NOTINTERP || err == PERR_EXITED ||
				       (err == PERR_NOPROC && pid != o->pid))) {
		target_close(&t);
		return EXIT_OK;
	}
	if (err) {
		ret = report_target(&t, err);
		target_close(&t);
		return ret;
	}
	warn_refused(&t);
	d.lang = target_lang_name(t.lang);
	d.f = open_memstream(&text, &len);
	if (!d.f) {
		target_close(&t);
		cli_error("out of memory");
		return EXIT_FAIL;
	}
	/*
	 * Until the interpreter has started, and until a sample drops no
	 * thread: a stack read across a change is read again, never shown
	 * and never left out (the reader itself tries a few times at once).
	 */
	for (int tries = 0; tries < 50; tries++) {
		struct timespec ts = { 0, (tries < 10 ? 1 : 20) * 1000 * 1000 };
		uint64_t dropped = r ? reader_stats(r)->dropped : 0;

		rewind(d.f);
		d.threads = 0;
		d.ntid = 0;
		if (!r)
			err = reader_new(&t, &ro, &r);
		if (r && o->tasks)
			break;	/* started: dump_tasks() reads the rest */
		if (r)
			err = reader_sample(r, dump_thread, &d);
		torn = !err && reader_stats(r)->dropped > dropped;
		if (err != PERR_STARTUP && !torn)
			break;
		if (err == PERR_STARTUP) {
			reader_free(r);
			r = NULL;
		}
		nanosleep(&ts, NULL);
	}
	if (!err && !torn && !o->tasks)
		dump_others(&d, &t);
	fputc('\0', d.f);
	fclose(d.f);
	free(d.tids);
	/* what was read of its pid was its only if it is still there */
	if (!err && !procmem_alive(&t.mem))
		err = PERR_EXITED;
	if (!err && o->tasks) {
		ret = dump_tasks(o, &t, r, any);
		*dumped = ret == EXIT_OK;
	} else if (!err && torn) {
		cli_error("the stacks of process %d changed under every read (50 tries)", (int)pid);
		cli_hint("try again; a program that returns and calls faster than it can be read "
		     "shows this now and then");
		ret = EXIT_FAIL;
	} else if (!err) {
		printf("%sProcess %d (%s, %s %s): %u thread%s\n%s", *any ? "\n" : "",
		       (int)t.pid, t.comm, d.lang, t.version, d.threads, d.threads == 1 ? "" : "s",
		       text);
		*dumped = *any = 1;
		if (o->verbose)
			fprintf(stderr, "pyrospy: %s; %llu reads\n", reader_describe(r),
				(unsigned long long)t.mem.calls);
	} else if (err == PERR_STARTUP) {
		cli_error("process %d never finished starting its interpreter", (int)pid);
		cli_hint("try again once the program has started");
		ret = EXIT_FAIL;
	} else {
		ret = report_target(&t, err);
	}
	free(text);
	reader_free(r);
	target_close(&t);
	return ret;
}

/*
 * dump: the process; with --subprocesses its descendants too, each that is
 * an interpreter, one after the other (the root need not be one).
 */
static int cmd_dump(struct cli_opts *o)
{
	pid_t *kids = NULL;
	int n, ret, kret, dumped, any = 0;

	ret = dump_one(o, o->pid, &any, &dumped);
	if (!o->subprocesses || ret != EXIT_OK)
		return ret;	/* gone, not allowed: its children will not be better */
	n = ptree_descendants(o->pid, &kids);
	for (int i = 0; i < n; i++) {
		kret = dump_one(o, kids[i], &any, &dumped);
		if (kret != EXIT_OK)
			ret = kret;
	}
	free(kids);
	if (!any) {
		cli_error("neither process %d nor its subprocesses are Ruby or Python processes",
		      (int)o->pid);
		cli_hint("give the pid of a ruby or python3 process, or of the shell or server that "
		     "starts them");
		ret = EXIT_NOTINTERP;
	}
	return ret;
}

struct top {
	const struct target *t;
	int tty;			/* stdin is a terminal in raw mode */
};

/* Redraw the table; a 'q' typed since the last time stops. */
static int top_tick(void *arg, const struct profile *p, const struct sampler_result *res)
{
	struct top *top = arg;
	struct winsize ws;
	unsigned int rows = 24;
	char c;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 6)
		rows = ws.ws_row;
	fputs("\033[H\033[2J", stdout);
	printf("pyrospy top: pid %d (%s %s)  %.0f s, %llu samples, %.0f Hz, %llu dropped"
	       "   q quits\n\n", (int)top->t->pid, target_lang_name(top->t->lang),
	       top->t->version, res->elapsed, (unsigned long long)p->total,
	       res->elapsed > 0 ? (double)res->ticks / res->elapsed : 0.0,
	       (unsigned long long)res->dropped);
	out_summary_rows(stdout, p, rows - 4);
	fflush(stdout);
	while (top->tty && read(STDIN_FILENO, &c, 1) == 1)
		if (c == 'q' || c == 'Q')
			return 1;
	return 0;
}

/* top: sample until q, Ctrl-C or the duration, redrawing every second. */
static int cmd_top(struct cli_opts *o)
{
	struct termios saved, raw;
	struct target t;
	struct top top = { &t, 0 };
	struct sampler_opts so = {
		.rate = o->rate,
		.duration = o->duration,
		.reader = { .idle = o->idle, .gil_only = o->gil, .gvl_wait = o->gvl_wait,
			    .no_gc = o->no_gc, .async_tasks = o->async_tasks,
			    .anchor = !o->read_only },
		.tick = top_tick,
		.arg = &top,
	};
	struct sampler_result res;
	struct profile p;
	enum perr err;

	install_signals();
	err = target_open(&t, o->pid);
	if (err || gil_refused(o, &t)) {
		int ret = err ? report_target(&t, err) : EXIT_UNSUPPORTED;

		target_close(&t);
		return ret;
	}
	warn_refused(&t);
	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0) {
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		top.tty = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
	}
	profile_init(&p);
	p.no_lines = 1;		/* functions, as the table's title says */
	p.max_bytes = o->max_memory;
	err = sampler_run(&t, &p, &so, &res, &stop_flag);
	if (top.tty)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	profile_release(&p);
	if (err) {
		int ret = report_target(&t, err);

		target_close(&t);
		return ret;
	}
	target_close(&t);
	return EXIT_OK;
}

/* serve: the process (or its subprocesses) sampled, its stacks served over HTTP */
static int cmd_serve(struct cli_opts *o)
{
	struct serve_opts so = {
		.listen = o->listen,
		.allow_host = o->allow_host,
		.nallow_host = o->nallow_host,
		.rate = o->rate,
		.duration = o->duration,
		.max_memory = o->max_memory,
		.idle = o->idle,
		.gil = o->gil,
		.gvl_wait = o->gvl_wait,
		.no_gc = o->no_gc,
		.async_tasks = o->async_tasks,
		.read_only = o->read_only,
		.subprocesses = o->subprocesses,
		.quiet = o->quiet,
		.verbose = o->verbose,
	};
	struct target t;
	enum perr err;
	int ret;

	install_signals();
	err = target_open(&t, o->pid);
	if (err && !(o->subprocesses && (err == PERR_NOTINTERP || err == PERR_UNSUPPORTED))) {
		ret = report_target(&t, err);
		target_close(&t);
		return ret;
	}
	if (!err && gil_refused(o, &t)) {
		target_close(&t);
		return EXIT_UNSUPPORTED;
	}
	if (!err)
		warn_refused(&t);
	ret = serve_run(&so, err ? NULL : &t, o->pid, &stop_flag, &err);
	if (err)
		ret = report_target(&t, err);
	target_close(&t);
	return ret;
}

/* The text of option name in --help (its first line), into buf; "" if none. */
static const char *opt_help(const char *name, char *buf, size_t cap)
{
	size_t nlen = strlen(name);

	buf[0] = '\0';
	for (const char *p = usage_options; (p = strstr(p, "--")); p += 2) {
		const char *line = p, *end;

		if (strncmp(p + 2, name, nlen) || (p[2 + nlen] != ' ' && p[2 + nlen] != '\n'))
			continue;
		while (line > usage_options && line[-1] != '\n')
			line--;
		end = strchr(p, '\n');
		/* "  -p, --pid PID          process to profile": the text is at column 25 */
		if (strncmp(line, "  -", 3) && strncmp(line, "      --", 8))
			continue;
		/* "      --auth-token-file FILE": a name too long has its text on the next line */
		if (end && end - line > 24 && line[24] != ' ') {
			line = end + 1;
			end = strchr(line, '\n');
		}
		if (end && end - line > 25)
			snprintf(buf, cap, "%.*s", (int)(end - line - 25), line + 25);
		break;
	}
	return buf;
}

/* pyrospy completion bash|zsh: from commands[], long_opts[] and opt_cmds() */
static int cmd_completion(int argc, char **argv)
{
	static struct completion_opt opts[ARRAY_SIZE(long_opts)];
	static char helps[ARRAY_SIZE(long_opts)][128], formats[128];
	struct completion c = {
		.cmds = commands, .ncmds = ARRAY_SIZE(commands), .opts = opts,
		.exec_cmd = "exec", .top_words = "-h --help -V --version",
	};

	if (argc != 1)
		return cli_usage_error("completion", "completion takes one shell: bash or zsh");
	/* out_names() is "a, b, c" */
	for (size_t i = 0, j = 0; out_names()[i] && j < sizeof(formats) - 1; i++)
		if (out_names()[i] != ',')
			formats[j++] = out_names()[i];
	for (const struct option *lo = long_opts; lo->name; lo++) {
		struct completion_opt *co = &opts[c.nopts];

		co->name = lo->name;
		co->short_name = lo->val < 256 ? lo->val : 0;
		co->help = opt_help(lo->name, helps[c.nopts], sizeof(helps[0]));
		co->cmds = opt_cmds(lo->val);
		co->arg = lo->has_arg == no_argument ? COMPLETION_NONE : COMPLETION_TEXT;
		if (lo->val == 'p') {
			co->arg = COMPLETION_PID;
		} else if (lo->val == 'o' || lo->val == OPT_CACERT || lo->val == OPT_RAW ||
			   lo->val == OPT_AUTH_TOKEN_FILE || lo->val == OPT_BASIC_AUTH_FILE) {
			co->arg = COMPLETION_FILE;
		} else if (lo->val == 'f') {
			co->arg = COMPLETION_WORDS;
			co->words = formats;
		} else if (lo->val == OPT_INGEST_FORMAT) {
			co->arg = COMPLETION_WORDS;
			co->words = "folded trie pprof";
		} else if (lo->val == OPT_PROTOCOL) {
			co->arg = COMPLETION_WORDS;
			co->words = "ingest push";
		}
		c.nopts++;
	}
	if (completion_write(stdout, argv[0], &c) < 0) {
		if (errno == EINVAL)
			return cli_usage_error("completion", "no completion for shell '%s': want bash or zsh",
					   argv[0]);
		cli_error("cannot write the completion script: %s", strerror(errno));
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

int cli_main(int argc, char **argv)
{
	struct cli_opts o = {
		.rate = DEFAULT_RATE,
		.max_memory = PROFILE_MAX_MEMORY,
		.format = NULL,		/* flamegraph, or folded for -o - */
	};
	int ret;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	o.cmd = argv[1];
	if (!strcmp(o.cmd, "-h") || !strcmp(o.cmd, "--help")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(o.cmd, "-V") || !strcmp(o.cmd, "--version")) {
		print_version();
		return EXIT_OK;
	}
	if (!strcmp(o.cmd, "help")) {
		if (argc < 3) {
			usage(stdout);
			return EXIT_OK;
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
		    !strcmp(argv[2], "completion")) {
			print_usage(argv[2]);
			return EXIT_OK;
		}
		return cli_usage_error(NULL, "unknown command '%s'", argv[2]);
	}
	if (!strcmp(o.cmd, "completion"))
		return cmd_completion(argc - 2, argv + 2);
	/* a command of its own, with its own options */
	if (!strcmp(o.cmd, "report"))
		return report_main(argc - 1, argv + 1);
	if (!strcmp(o.cmd, "diff"))
		return diff_main(argc - 1, argv + 1);
	if (strcmp(o.cmd, "record") && strcmp(o.cmd, "exec") && strcmp(o.cmd, "dump") &&
	    strcmp(o.cmd, "top") && strcmp(o.cmd, "serve")) {
		cli_error("unknown command '%s'", o.cmd);
		cli_hint("commands are record, exec, dump, top, serve, report, diff and completion; see "
			 "'pyrospy --help'");
		return EXIT_USAGE;
	}
	ret = parse_opts(&o, argc - 1, argv + 1);
	if (ret < 0)
		ret = resolve_pid_of(&o);
	if (ret < 0) {
		if (!strcmp(o.cmd, "dump"))
			ret = cmd_dump(&o);
		else if (!strcmp(o.cmd, "top"))
			ret = cmd_top(&o);
		else if (!strcmp(o.cmd, "serve"))
			ret = cmd_serve(&o);
		else
			ret = !strcmp(o.cmd, "exec") ? cmd_exec(&o) : cmd_record(&o);
	}
	free(o.tagset);
	for (size_t i = 0; i < ARRAY_SIZE(o.file_secret); i++)
		if (o.file_secret[i]) {
			explicit_bzero(o.file_secret[i], strlen(o.file_secret[i]));
			free(o.file_secret[i]);
		}
	return ret;
}
