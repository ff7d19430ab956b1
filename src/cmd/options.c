/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cmd/common.h"
#include "cmd/completion.h"
#include "cmd/options.h"
#include "cmd/serve.h"
#include "cmd/taglibs.h"
#include "output/out.h"
#include "python/pyvm.h"
#include "ruby/rubyvm.h"
#include "stack/tags.h"
#include "upload/ingest.h"
#include "util/xalloc.h"

#define MAX_RATE 10000

void cli_print_version(void)
{
	static const char built_in[] = "built in (written to a private temporary directory by exec)";
	const char *h = taglibs_installed();
	struct taglibs t = { .own_python = 0 };
	char py[256], rb[256];

	/* from the layout tables: what this binary reads, not what it was meant to */
	pyvm_versions(py, sizeof(py));
	rubyvm_versions(rb, sizeof(rb));
	printf("pyrospy %s\npython: %s\nruby: %s\n", PACKAGE_VERSION, py, rb);
	taglibs_packaged(&t);
	if (!t.own_python && !t.own_ruby)
		printf("tag helpers: %s\n", h ? h : built_in);
	else	/* installed by pip or gem: the program imports the package's own */
		printf("python helpers: %s\nruby helpers: %s\n",
		       t.own_python ? "the wheel's (import pyrospy)" : h ? h : built_in,
		       t.own_ruby ? "the gem's (require \"pyrospy\")" : h ? h : built_in);
}

void cli_note(const struct cli_opts *o, const char *fmt, ...)
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

/*
 * Each command's help: its usage, what it does, then the options of
 * usage_options[] that apply to it (opt_cmds()), then examples.
 */
struct cmd_help {
	const char *name, *usage, *examples;
};

static const struct cmd_help cmd_helps[] = {
	{ "record",
	  "usage: pyrospy record --pid PID [options]\n"
	  "       pyrospy record [options] -- COMMAND [ARGS...]   (as exec)\n"
	  "\n"
	  "Sample a running Ruby or Python process until the duration passes, it\n"
	  "exits, or Ctrl-C; then write the profile.  One number after the options\n"
	  "is the pid.\n",
	  "  pyrospy record --pid 1234 -d 30 -o profile.svg\n"
	  "  pyrospy record --pid-of gunicorn --threads -o web.svg\n"
	  "  pyrospy record -o app.svg -- python3 app.py\n"
	  "  pyrospy record --pid 1234 --server http://pyroscope:4040 --app-name shop\n" },
	{ "exec",
	  "usage: pyrospy exec [options] -- COMMAND [ARGS...]\n"
	  "\n"
	  "Run COMMAND, profile it as record does, and exit with its status.\n",
	  "  pyrospy exec -o app.svg -- python3 app.py\n"
	  "  pyrospy exec -d 60 --subprocesses -o web.svg -- bundle exec puma\n"
	  "  sudo pyrospy exec --user www-data -- ruby worker.rb\n" },
	{ "dump",
	  "usage: pyrospy dump --pid PID|--pid-of PATTERN [options]\n"
	  "\n"
	  "Print every thread's stack once, innermost frame first, with its thread id,\n"
	  "name, whether it holds the GIL/GVL and whether it is running or idle.\n",
	  "  pyrospy dump 1234\n"
	  "  pyrospy dump --pid-of celery --subprocesses\n"
	  "  pyrospy dump --pid 1234 --tasks\n" },
	{ "top",
	  "usage: pyrospy top --pid PID|--pid-of PATTERN [options]\n"
	  "\n"
	  "A live table of the functions taking the most samples, by self and total,\n"
	  "refreshed every second; q or Ctrl-C quits.\n",
	  "  pyrospy top 1234\n"
	  "  pyrospy top --pid-of sidekiq --idle\n" },
	{ "serve",
	  "usage: pyrospy serve --pid PID|--pid-of PATTERN [options]\n"
	  "\n"
	  "Sample the process for as long as it runs, and answer scrapers over HTTP as\n"
	  "Go programs do: GET /debug/pprof/profile?seconds=N is a gzipped pprof of the\n"
	  "next N seconds (1 to 300, default 30).  The address it listens on is said\n"
	  "on stderr.\n",
	  "  pyrospy serve --pid 1234 --listen 127.0.0.1:6060\n"
	  "  go tool pprof http://127.0.0.1:6060/debug/pprof/profile?seconds=10\n" },
	{ "agent",
	  "usage: pyrospy agent --server URL [options]\n"
	  "\n"
	  "Profile every Ruby and Python process of the host, those in containers\n"
	  "too, as they come and go, and stream each to the server every 10 s as\n"
	  "series of its own, labelled service_name, pid, container_id and more.  Runs\n"
	  "until SIGINT or SIGTERM; -v says each process found, skipped and forgotten.\n"
	  "--listen ADDR:PORT serves its metrics (Prometheus) and /healthz.\n",
	  "  pyrospy agent --server http://pyroscope:4040\n"
	  "  pyrospy agent --server http://pyroscope:4040 --listen 127.0.0.1:9464\n"
	  "  pyrospy agent --server http://otel:4318 --protocol otlp --exclude '^/opt/'\n" },
};

static const char usage_options[] =
	"\n"
	"options:\n"
	"  -p, --pid PID          the process (or: one number after the options)\n"
	"      --pid-of PATTERN   the oldest process whose name or command line matches\n"
	"  -d, --duration SECS    stop after SECS seconds (default: at Ctrl-C or exit)\n"
	"  -r, --rate HZ          samples per second, 1 to 10000 (default: 100)\n"
	"  -f, --format FMT       flamegraph (default), folded (default for -o -),\n"
	"                         speedscope, pprof, summary, raw (every sample; also\n"
	"                         for -o FILE.raw; see pyrospy report), chrome (a\n"
	"                         trace of every thread's stack over time), html (a\n"
	"                         report to open in a browser)\n"
	"  -o, --output FILE      write the profile to FILE, - for stdout\n"
	"                         (default: pyrospy-PID-DATE.EXT, here), in the\n"
	"                         format its name says unless -f is given: .html\n"
	"                         .svg .txt .folded .json .pb.gz .pprof .raw\n"
	"      --raw FILE         also write every sample to FILE, a raw recording\n"
	"      --listen ADDR:PORT where to answer (default: 127.0.0.1:6060;\n"
	"                         0.0.0.0:PORT for every interface, PORT 0 for any);\n"
	"                         agent: serve /metrics and /healthz there (default:\n"
	"                         none)\n"
	"      --allow-host NAME  also answer requests whose Host is NAME\n"
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
	"      --full-paths       whole file paths in flamegraph, summary, top and dump,\n"
	"                         not the short forms (json/encoder.py; see pyrospy(1))\n"
	"      --flame-direction D\n"
	"                         flamegraph: down (default: the root at the top, its\n"
	"                         callees under it) or up (the root at the bottom)\n"
	"      --max-memory SIZE  the most a profile's names and stacks may hold, 1M to\n"
	"                         64G (default: 256M); past it, new stacks are counted\n"
	"                         in [other] frames; agent: its memory as a whole\n"
	"      --subprocesses     also profile the Ruby and Python processes it starts\n"
	"      --match RE         agent: only the processes whose executable, command\n"
	"                         line or cgroup the extended regular expression RE\n"
	"                         matches (default: every one)\n"
	"      --exclude RE       agent: not those RE matches so (default: none)\n"
	"      --max-cpu PERCENT  agent: the most of one core it may use, 0.1 to 100\n"
	"                         (default: 1); past it, every process is sampled\n"
	"                         at a lower rate, down to 1 Hz\n"
	"      --user NAME        as root: run the command as user NAME\n"
	"                         (by default: the user who ran sudo, else root)\n"
	"      --as-root          as root: run the command as root, under sudo too\n"
	"      --locals           under each Python or Ruby frame, its local variables:\n"
	"                         name: type = short repr\n"
	"      --tasks            the asyncio tasks instead (Python 3.8+), each\n"
	"                         with its name, state and the coroutines where it\n"
	"                         waits, under each task awaiting it\n"
	"      --json             one JSON document: each process, its threads and\n"
	"                         their frames (see pyrospy(1), dump)\n"

	"  -q, --quiet            print nothing but errors\n"
	"  -v, --verbose          say more (repeat for more)\n"
	"  -h, --help             show this help\n"
	"  -V, --version          show the version\n"
	"\n"
	"streaming to a Pyroscope server (every 10 s; no file unless -o is given):\n"
	"      --server URL       the server's base URL, e.g. http://pyroscope:4040\n"
	"      --app-name NAME    the application's name (NAME.cpu on the server; no\n"
	"                         default: --server needs it)\n"
	"      --protocol P       ingest (default: POST /ingest, any Pyroscope), push\n"
	"                         (Grafana Pyroscope's push API, gzipped pprof) or\n"
	"                         otlp (OpenTelemetry profiles, /v1development/profiles)\n"
	"      --ingest-format F  folded (default), trie (smaller uploads) or pprof\n"
	"      --auth-token TOKEN bearer token (default: $PYROSPY_AUTH_TOKEN); shown\n"
	"                         by ps: rather the variable or --auth-token-file\n"
	"      --auth-token-file FILE\n"
	"                         the bearer token: the first line of FILE\n"
	"      --basic-auth U:P   basic authentication (default: $PYROSPY_BASIC_AUTH);\n"
	"                         shown by ps: rather the variable or --basic-auth-file\n"
	"      --basic-auth-file FILE\n"
	"                         basic authentication: USER:PASSWORD, FILE's first line\n"
	"      --tenant-id ID     X-Scope-OrgID (default: $PYROSPY_TENANT_ID, else none)\n"
	"      --header 'K: V'    an extra HTTP header (repeatable; $PYROSPY_HEADERS)\n"
	"      --cacert FILE      CA certificates to verify the server with (default:\n"
	"                         the system's, those libcurl is built to use)\n"
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
	{ "agent", "every Ruby and Python process, streamed: pyrospy agent --server URL", NULL },
	{ "report", "a raw recording in any format, filtered: pyrospy report rec.raw", NULL },
	{ "diff", "two profiles compared: pyrospy diff old.raw new.raw",
	  NULL },
	{ "help", "show help for a command: pyrospy help record",
	  "record exec dump top serve agent report diff completion" },
	{ "completion", "a shell's completion script: pyrospy completion bash (or zsh)",
	  "bash zsh" },
};

static const char usage_completion[] =
	"usage: pyrospy completion bash|zsh\n"
	"\n"
	"Print the shell's completion script for pyrospy's commands and options:\n"
	"  eval \"$(pyrospy completion bash)\"    in ~/.bashrc\n"
	"  pyrospy completion zsh > ~/.zfunc/_pyrospy    with ~/.zfunc on $fpath\n";

int cli_parse_uint(const char *s, unsigned long max, unsigned long *out)
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
	if (!cli_parse_uint(num, max >> shift, &v) || ((size_t)v << shift) < min)
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

/* --max-cpu: 0.1 to 100 */
static int parse_percent(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || end == s || !(v >= 0.1) || v > 100)
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
	OPT_USER, OPT_AS_ROOT, OPT_AUTH_TOKEN_FILE, OPT_BASIC_AUTH_FILE, OPT_JSON, OPT_FULL_PATHS,
	OPT_FLAME_DIRECTION, OPT_MATCH, OPT_EXCLUDE, OPT_MAX_CPU,
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
	{ "full-paths", no_argument, NULL, OPT_FULL_PATHS },
	{ "flame-direction", required_argument, NULL, OPT_FLAME_DIRECTION },
	{ "subprocesses", no_argument, NULL, OPT_SUBPROCESSES },
	{ "match", required_argument, NULL, OPT_MATCH },
	{ "exclude", required_argument, NULL, OPT_EXCLUDE },
	{ "max-cpu", required_argument, NULL, OPT_MAX_CPU },
	{ "locals", no_argument, NULL, OPT_LOCALS },
	{ "tasks", no_argument, NULL, OPT_TASKS },
	{ "json", no_argument, NULL, OPT_JSON },
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
#define CMD_AGENT	32u
#define CMD_ALL		(CMD_RECORD | CMD_EXEC | CMD_DUMP | CMD_TOP | CMD_SERVE | CMD_AGENT)
#define CMD_UPLOAD	(CMD_RECORD | CMD_EXEC | CMD_AGENT)

static unsigned int cmd_bit(const char *cmd)
{
	return !strcmp(cmd, "exec") ? CMD_EXEC : !strcmp(cmd, "dump") ? CMD_DUMP :
	       !strcmp(cmd, "top") ? CMD_TOP : !strcmp(cmd, "serve") ? CMD_SERVE :
	       !strcmp(cmd, "agent") ? CMD_AGENT : CMD_RECORD;
}

static unsigned int opt_cmds(int c)
{
	switch (c) {
	case 'p': case OPT_PID_OF:
		return CMD_RECORD | CMD_DUMP | CMD_TOP | CMD_SERVE;	/* exec says why not itself */
	case 'd': case OPT_GIL: case OPT_GVL_WAIT: case OPT_ASYNC: case OPT_READ_ONLY:
		return CMD_RECORD | CMD_EXEC | CMD_TOP | CMD_SERVE;
	case 'r': case OPT_IDLE:
		return CMD_RECORD | CMD_EXEC | CMD_TOP | CMD_SERVE | CMD_AGENT;
	case OPT_MATCH: case OPT_EXCLUDE: case OPT_MAX_CPU:
		return CMD_AGENT;
	/* streaming: the agent's way out */
	case OPT_SERVER: case OPT_TAG: case OPT_AUTH_TOKEN: case OPT_BASIC_AUTH:
	case OPT_AUTH_TOKEN_FILE: case OPT_BASIC_AUTH_FILE: case OPT_TENANT_ID: case OPT_HEADER:
	case OPT_INSECURE: case OPT_CACERT: case OPT_INGEST_FORMAT: case OPT_PROTOCOL:
		return CMD_UPLOAD;
	case OPT_SUBPROCESSES:
		return CMD_RECORD | CMD_EXEC | CMD_DUMP | CMD_SERVE;
	case OPT_LOCALS: case OPT_TASKS: case OPT_JSON:
		return CMD_DUMP;
	case OPT_LISTEN: case OPT_ALLOW_HOST:
		return CMD_SERVE | CMD_AGENT;	/* the agent's: /metrics and /healthz */
	case OPT_USER: case OPT_AS_ROOT:
		return CMD_EXEC;
	case OPT_MAX_MEMORY:
		return CMD_RECORD | CMD_EXEC | CMD_TOP | CMD_SERVE | CMD_AGENT;
	case OPT_FULL_PATHS:
		return CMD_RECORD | CMD_EXEC | CMD_DUMP | CMD_TOP;
	case 'q': case 'v': case 'h': case 'V': case OPT_NO_GC:
		return CMD_ALL;
	default:	/* what shapes a profile file or an upload */
		return CMD_RECORD | CMD_EXEC;
	}
}

void cli_usage(FILE *f)
{
	fputs("usage: pyrospy <command> [options]\n\ncommands:\n", f);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fputs("\n'pyrospy help COMMAND' shows a command's options and examples;\n"
	      "pyrospy(1) has everything else.\n", f);
}

static int opt_val(const char *name, size_t n)
{
	for (const struct option *lo = long_opts; lo->name; lo++)
		if (strlen(lo->name) == n && !strncmp(lo->name, name, n))
			return lo->val;
	return 0;
}

/*
 * usage_options[] as far as it applies to the commands of mask: an entry
 * is its first line ("  -r, --rate HZ ..." or "      --idle ...") and the
 * lines under it, indented further; a heading ("options:") is written
 * only above an entry written.
 */
static void print_options(FILE *f, unsigned int mask)
{
	const char *p = usage_options, *heading = NULL;
	int keep = 0;

	while (*p) {
		const char *end = strchr(p, '\n'), *dd;
		size_t len = end ? (size_t)(end - p + 1) : strlen(p);

		if (!strncmp(p, "  -", 3) || !strncmp(p, "      --", 8)) {
			dd = strstr(p, "--");
			keep = dd && dd < p + len &&
			       (opt_cmds(opt_val(dd + 2, strcspn(dd + 2, " \n"))) & mask);
			if (keep && heading) {
				fputs("\n", f);
				fwrite(heading, 1, strcspn(heading, "\n") + 1, f);
				heading = NULL;
			}
		} else if (*p != ' ') {
			keep = 0;
			heading = *p != '\n' ? p : heading;
		}
		if (keep)
			fwrite(p, 1, len, f);
		p += len;
	}
}

/* The help of one command. */
void cli_print_usage(const char *cmd)
{
	if (!strcmp(cmd, "completion")) {
		fputs(usage_completion, stdout);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(cmd_helps); i++) {
		if (strcmp(cmd, cmd_helps[i].name))
			continue;
		fputs(cmd_helps[i].usage, stdout);
		/* record -- COMMAND is exec: record takes exec's options too */
		print_options(stdout, cmd_bit(cmd) | (!strcmp(cmd, "record") ? CMD_EXEC : 0u));
		printf("\nexamples:\n%s\nSee pyrospy(1) for everything else.\n",
		       cmd_helps[i].examples);
		return;
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
	if (strcmp(o->cmd, "record") && strcmp(o->cmd, "exec") && strcmp(o->cmd, "agent"))
		return cli_usage_error(o->cmd, "--server works with record, exec and agent");
	/* the agent's series are named after each process (FLEET): this name is unused */
	if (!strcmp(o->cmd, "agent"))
		o->up.app_name = "pyrospy";
	if (!o->up.app_name)
		return cli_usage_error(o->cmd, "--server needs --app-name NAME");
	ingest_env(&o->up);
	if (ingest_check(&o->up, err, sizeof(err)))
		return cli_usage_error(o->cmd, "%s", err);
	warn_argv_secrets(argv_token, argv_basic, o->headers);
	return -1;
}

/* The names of the options of the commands of mask, for cli_unknown_option() */
static const char *const *allowed_names(unsigned int mask, const char **names)
{
	size_t n = 0;

	for (const struct option *lo = long_opts; lo->name; lo++)
		if (opt_cmds(lo->val) & mask)
			names[n++] = lo->name;
	names[n] = NULL;
	return names;
}

/* A word that can only be a pid: digits, as many as a pid has at most. */
static int is_pid_word(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return n > 0 && n <= 10 && !s[n];
}

/* Returns -1 to go on, or an exit status. */
int cli_parse_opts(struct cli_opts *o, int argc, char **argv)
{
	int c;

	optind = 0;	/* 0: glibc starts over, with this call's ordering ('-') */
	opterr = 0;
	/*
	 * record -- COMMAND is exec (py-spy's and rbspy's habit): until the
	 * command is seen, record takes exec's options too, and the first
	 * of them that record alone would refuse is kept to refuse later.
	 */
	unsigned int allowed = cmd_bit(o->cmd) | (!strcmp(o->cmd, "record") ? CMD_EXEC : 0u);
	int exec_only = 0, bare = 0, idx = -1;
	char name[64];

	/*
	 * '-': the words that are no option come in order (code 1), so that
	 * one pid among the options (dump 1234 --tasks) is taken, and the
	 * first other word starts the command, whose own options are its.
	 */
	while ((c = getopt_long(argc, argv, "-:p:d:r:f:o:qvhV", long_opts, &idx)) != -1) {
		const char *names[ARRAY_SIZE(long_opts)], *abbr;
		unsigned long v;
		int ret;

		if (c == 1) {
			/* dump PID (py-spy's and rbspy's habit): one number is --pid */
			if (strcmp(o->cmd, "exec") && is_pid_word(optarg) && !bare) {
				if (o->pid || o->pid_of)
					return cli_usage_error(o->cmd, "give the pid once: '%s' "
							       "after --pid %d", optarg, (int)o->pid);
				if (!cli_parse_uint(optarg, INT_MAX, &v) || v == 0)
					return cli_usage_error(o->cmd, "invalid pid '%s'", optarg);
				o->pid = (pid_t)v;
				bare = 1;
				continue;
			}
			optind--;	/* the command, or a word to refuse, starts here */
			break;
		}
		/* --thread is report's, not an abbreviation of --threads */
		if (c != ':' && c != '?' &&
		    (abbr = cli_abbreviated(long_opts, idx, argv, optind, optarg)))
			return cli_unknown_option(o->cmd, abbr, allowed_names(allowed, names));
		idx = -1;
		if (c == 'p' && bare)
			return cli_usage_error(o->cmd, "give the pid once: --pid %s after %d", optarg,
					       (int)o->pid);
		if (c != ':' && c != '?' && !(opt_cmds(c) & allowed))
			return cli_usage_error(o->cmd, "option %s does not apply to %s",
					   opt_name(c, name, sizeof(name)), o->cmd);
		if (c != ':' && c != '?' && !(opt_cmds(c) & cmd_bit(o->cmd)) && !exec_only)
			exec_only = c;
		switch (c) {
		case 'p':
			if (!cli_parse_uint(optarg, INT_MAX, &v) || v == 0)
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
			if (!cli_parse_uint(optarg, MAX_RATE, &v) || v == 0)
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
		case OPT_FULL_PATHS:
			o->full_paths = 1;
			break;
		case OPT_FUNCTION:
			o->function = 1;
			break;
		case OPT_FLAME_DIRECTION:
			if ((ret = cli_flame_direction(o->cmd, optarg, &o->flame_up)) >= 0)
				return ret;
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
		case OPT_MATCH:
			o->match = optarg;
			break;
		case OPT_EXCLUDE:
			o->exclude = optarg;
			break;
		case OPT_MAX_CPU:
			if (!parse_percent(optarg, &o->max_cpu))
				return cli_usage_error(
						o->cmd, "invalid --max-cpu '%s': want 0.1 to 100 (percent "
						"of one core)", optarg);
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
		case OPT_JSON:
			o->json = 1;
			break;
		case OPT_ASYNC:
			o->async_tasks = 1;
			break;
		case OPT_LISTEN: {
			char host[256], port[16];

			if (httpd_parse_listen(optarg, host, sizeof(host), port, sizeof(port)))
				return cli_usage_error(
						o->cmd, "invalid --listen '%s': want ADDR:PORT, e.g. "
						"127.0.0.1:6060, 0.0.0.0:6060 or [::1]:6060", optarg);
			o->listen = optarg;
			break;
		}
		case OPT_ALLOW_HOST:
			if (!httpd_host_name_ok(optarg))
				return cli_usage_error(o->cmd, "invalid --allow-host '%s': want a "
						       "host name or an IP address without port, "
						       "e.g. profiler.internal", optarg);
			if (o->nallow_host == HTTPD_MAX_ALLOW_HOSTS)
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
			else if (!strcmp(optarg, "otlp"))
				o->up.protocol = INGEST_PROTOCOL_OTLP;
			else
				return cli_usage_error(
						o->cmd, "unknown protocol '%s': want ingest, push or "
						"otlp", optarg);
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'v':
			o->verbose++;
			break;
		case 'h':
			cli_print_usage(o->cmd);
			return EXIT_OK;
		case 'V':
			cli_print_version();
			return EXIT_OK;
		case ':':
			return cli_usage_error(
					o->cmd, "option '%s' needs a value", argv[optind - 1]);
		default:
			if (optopt)
				return cli_usage_error(o->cmd, "unknown option '-%c'", optopt);
			return cli_unknown_option(o->cmd, argv[optind - 1],
						  allowed_names(allowed, names));
		}
	}
	/* the format from -o's name, before anything is sampled or run */
	if (o->output && !o->format) {
		const struct out_ops *ops = cli_output_format(NULL, o->output, "flamegraph");

		if (!ops)
			return EXIT_USAGE;
		o->format = ops->name;
	}
	if (o->raw && (!strcmp(o->raw, o->output ? o->output : "") ||
		       (o->format && out_find(o->format)->open)))
		return cli_usage_error(
				o->cmd, "--raw FILE is a raw recording besides another output: "
				"give -o another file and format");
	if (!strcmp(o->cmd, "record") && optind < argc) {
		if (o->pid || o->pid_of)
			return cli_usage_error(o->cmd, "give --pid (or --pid-of) or a command to run, "
					       "not both: '%s' follows the options", argv[optind]);
		o->cmd = "exec";
	}
	if (exec_only && strcmp(o->cmd, "exec"))
		return cli_usage_error(o->cmd, "option %s applies to a command run by pyrospy: "
				       "record [options] -- COMMAND",
				       opt_name(exec_only, name, sizeof(name)));
	if (!strcmp(o->cmd, "exec")) {
		if (optind >= argc)
			return cli_usage_error(o->cmd, "no command to run");
		if (o->pid || o->pid_of)
			return cli_usage_error(o->cmd, "--pid and --pid-of cannot be used with exec");
		o->argv = argv + optind;
		if (o->user && o->as_root)
			return cli_usage_error(o->cmd, "give --user or --as-root, not both");
	} else if (!strcmp(o->cmd, "agent")) {
		if (optind < argc)
			return cli_usage_error(o->cmd, "unexpected argument '%s'", argv[optind]);
		if (o->pid)
			return cli_usage_error(o->cmd, "the agent profiles every process: no pid");
		if (!o->up.server)
			return cli_usage_error(o->cmd, "agent needs --server URL");
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
int cli_completion(int argc, char **argv)
{
	static struct completion_opt opts[ARRAY_SIZE(long_opts)];
	static char helps[ARRAY_SIZE(long_opts)][128], formats[128];
	struct completion c = {
		.cmds = commands, .ncmds = ARRAY_SIZE(commands), .opts = opts,
		.exec_cmd = "exec", .top_words = "-h --help -V --version",
	};

	/* no option but --help: the others are refused, not taken for a shell */
	for (int i = 0; i < argc; i++) {
		static const char *const none[] = { "help", NULL };

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage_completion, stdout);
			return EXIT_OK;
		}
		if (argv[i][0] == '-')
			return cli_unknown_option("completion", argv[i], none);
	}
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
		/* record -- COMMAND is exec: record takes exec's options too */
		if (co->cmds & CMD_EXEC)
			co->cmds |= CMD_RECORD;
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
			co->words = "ingest push otlp";
		} else if (lo->val == OPT_FLAME_DIRECTION) {
			co->arg = COMPLETION_WORDS;
			co->words = "down up";
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
