/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/common.h"
#include "cmd/exec.h"
#include "cmd/options.h"
#include "cmd/record.h"
#include "cmd/session.h"
#include "cmd/taglibs.h"
#include "proc/target.h"
#include "upload/ingest.h"
#include "util/xalloc.h"

/* Put dir first on the search path in environment variable var. */
static void path_prepend(const char *var, const char *dir)
{
	const char *old = getenv(var);
	char *v = old && *old ? xstrfmt("%s:%s", dir, old) : xstrfmt("%s", dir);

	setenv(var, v, 1);
	free(v);
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
	cli_note(o, "'%s' (pid %d) is still running 5 s after SIGTERM: sending SIGKILL", o->argv[0],
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

	return v && cli_parse_uint(v, (unsigned int)-2, id);
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
	cli_note(o, "running '%s' as uid %lu%s%s%s, who ran sudo (--as-root keeps root)", o->argv[0],
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
 * exec: start the command as u, with the tag helpers of h on its paths,
 * and wait until it has become an interpreter (it may still be a shell or
 * the dynamic loader for a while).
 */
static int exec_command(struct cli_opts *o, struct cli_outputs *out, const struct exec_user *u,
			const struct taglibs *h)
{
	struct target t;
	enum perr err = PERR_NOTINTERP;
	enum ended why = ENDED_EARLY;
	int status, ret, stopped = 0, execfail[2];
	/* why the child did not run the command: { 0 exec() or 1 becoming u, errno } */
	int why_not[2] = { 0, 0 };
	ssize_t n;
	pid_t pid;

	cli_install_signals();
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
		if (h->dir[0]) {
			/* import pyrospy / require "pyrospy" work with nothing installed */
			char *py = xstrfmt("%s/python", h->dir), *rb = xstrfmt("%s/ruby", h->dir);

			if (!h->own_python)
				path_prepend("PYTHONPATH", py);
			if (!h->own_ruby)
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
	cli_child_pid = pid;
	close(execfail[1]);
	while ((n = read(execfail[0], why_not, sizeof(why_not))) < 0 && errno == EINTR)
		;
	close(execfail[0]);
	if (n == (ssize_t)sizeof(why_not)) {
		int errnum = why_not[1];

		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		cli_child_pid = 0;
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
	for (int tries = 0; tries < 500 && !cli_stop_flag && !o->subprocesses; tries++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		target_close(&t);
		err = target_open(&t, pid);
		/*
		 * mid-exec() anything may fail once: only these are final (an
		 * interpreter pyrospy cannot read is one already)
		 */
		if (err == PERR_OK || err == PERR_PERM || err == PERR_UNSUPPORTED)
			break;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			cli_child_pid = 0;
			target_close(&t);
			/* not pyrospy's failure: the command's status says how it went */
			cli_note(o, "'%s' ended before pyrospy could find an interpreter in it; nothing "
				 "was sampled", o->argv[0]);
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
		nanosleep(&ts, NULL);
	}
	if (o->subprocesses)
		ret = cli_profile_target(o, out, NULL, pid, pid, &why);
	else if (err)
		ret = cli_report_target(&t, err);
	else
		ret = cli_profile_target(o, out, &t, pid, pid, &why);
	target_close(&t);
	/*
	 * The profile is written.  When the duration passed (or sampling
	 * failed within one) the command still runs: it was started to be
	 * profiled, so stop it rather than wait for it or leave it behind.
	 * Otherwise it ended, or is ending (exited but not yet reaped), or
	 * became another program, or got our signal too: wait, and its status
	 * is ours.
	 */
	if (ret != EXIT_OK && !cli_stop_flag && waitpid(pid, &status, WNOHANG) == 0) {
		/* it cannot be profiled: waiting for it would profile nothing */
		cli_note(o, "stopping '%s' (pid %d) with SIGTERM: it cannot be profiled", o->argv[0],
			 (int)pid);
		stop_child(o, pid, &status);
		stopped = 1;
	} else if (ret == EXIT_OK && !cli_stop_flag && o->duration > 0 &&
	    (why == ENDED_BY_US || why == ENDED_EARLY) && waitpid(pid, &status, WNOHANG) == 0) {
		cli_note(o, "%s: stopping '%s' (pid %d) with SIGTERM",
			 why == ENDED_BY_US ? "duration reached" : "sampling stopped", o->argv[0],
			 (int)pid);
		stop_child(o, pid, &status);
		stopped = 1;
	} else {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	cli_child_pid = 0;
	if (ret != EXIT_OK || stopped)
		return ret;	/* stopped by us: its status says nothing */
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * exec, with the tag helpers in a private directory for as long as it
 * runs, and the output opened before the command starts (close-on-exec)
 */
int cli_exec(struct cli_opts *o)
{
	struct cli_outputs out;
	struct exec_user u;
	struct taglibs h;
	int ret;

	ret = exec_user_resolve(o, &u);
	if (ret >= 0)
		return ret;
	ret = cli_outputs_open(o, &out);
	if (ret != EXIT_OK) {
		cli_outputs_close(&out);
		exec_user_release(&u);
		return ret;
	}
	/* not fatal: a command that does not use tags profiles as well without them */
	if (taglibs_init(&h) != PERR_OK)
		cli_note(o, "warning: cannot write the tag helpers to a temporary directory (%s): "
			 "'import pyrospy' and 'require \"pyrospy\"' will fail in '%s'; set TMPDIR "
			 "to a writable directory", strerror(errno), o->argv[0]);
	/* root's private copy: the command's user reads it, and only root writes it */
	else if (u.drop && taglibs_share(&h) != PERR_OK)
		cli_note(o, "warning: cannot let uid %d read the tag helpers (%s): 'import pyrospy' "
			 "and 'require \"pyrospy\"' will fail in '%s'", (int)u.uid, strerror(errno),
			 o->argv[0]);
	ret = exec_command(o, &out, &u, &h);
	taglibs_release(&h);
	exec_user_release(&u);
	cli_outputs_close(&out);
	return ret;
}
