/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cmd/common.h"
#include "cmd/options.h"
#include "cmd/session.h"
#include "proc/ptree.h"
#include "python/pyasync.h"
#include "proc/target.h"
#include "util/utf8.h"

volatile sig_atomic_t cli_stop_flag;
volatile sig_atomic_t cli_child_pid;

/*
 * --pid-of: the oldest process whose name or command line matches, e.g.
 * the master of a server in a sidecar that does not know its pid.
 */
int cli_resolve_pid_of(struct cli_opts *o)
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
		cli_note(o, "%u processes match '%s': taking the oldest, %d", n, o->pid_of, (int)pid);
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
void cli_warn_refused(const struct target *t)
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
int cli_gil_refused(const struct cli_opts *o, const struct target *t)
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
int cli_report_target(const struct target *t, enum perr err)
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
	cli_stop_flag = 1;
	if (cli_child_pid > 0)
		kill((pid_t)cli_child_pid, sig);
}

void cli_install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}
