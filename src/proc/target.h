/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_TARGET_H
#define PYROSPY_TARGET_H

#include <stdint.h>
#include <sys/types.h>

#include "proc/elfsym.h"
#include "util/perr.h"
#include "proc/procmaps.h"
#include "proc/procmem.h"

enum target_lang {
	TARGET_UNKNOWN,
	TARGET_PYTHON,
	TARGET_RUBY,
};

/*
 * One ELF object mapped in the target (the executable or an interpreter
 * library).  `path' is as /proc/PID/maps shows it; `open_path' says how
 * the mapped file was reached (/proc/PID/map_files/..., /proc/PID/exe,
 * /proc/PID/root/PATH or PATH: see mapfile.h).
 */
struct target_object {
	char *path;
	char *open_path;
	uint64_t bias;		/* runtime address = link-time vaddr + bias */
	struct elfsym elf;
	int open;
};

/*
 * A process being profiled: what it is, where its interpreter lives, and
 * a handle for reading its memory.  Filled by target_open(); everything is
 * owned by the struct and freed by target_close().
 */
struct target {
	pid_t pid;
	uint64_t start;		/* field 22 of /proc/PID/stat: with the pid, which process */
	enum target_lang lang;
	unsigned int major, minor, patch;
	char version[32];	/* as the interpreter spells it: "3.11.2", "3.4.1", "3.13.5t" */
	int free_threaded;	/* a CPython 3.13+ built with --disable-gil: no GIL */
	char comm[64];		/* /proc/PID/comm, sanitized (utf8.h): fit to print */
	char *exe_path;		/* readlink /proc/PID/exe, raw: sanitize to print */
	struct procmaps maps;
	struct procmem mem;
	struct target_object exe;
	struct target_object lib;	/* libpython / libruby, if mapped */
	struct target_object *interp;	/* the object holding the runtime (exe or lib) */
	uint64_t image[3];	/* which program image was opened: see target_execd() */
	/*
	 * The first mapped file target_open() would not read (mapfile.h,
	 * elfsym.h), as maps names it, and why; NULL when none was.
	 */
	char *refused;
	const char *refused_why;
};

/*
 * A target is a process, not a number.  target_open() holds the process
 * then on pid (t->mem: a pidfd, else its start time) before it reads
 * anything of it, and says PERR_EXITED if that process ended before it was
 * done: what it read may be of another.  Every later look at the process
 * (target_execd(), target_reopen(), procmem_alive(&t->mem)) is of the
 * process held; a new process on the pid is never followed.
 */

/*
 * Open process pid: read its maps, find the interpreter, its version and
 * the object that holds its runtime.  Never executes anything of the
 * target's and never stops it.
 *
 * Errors: PERR_NOPROC (no such pid), PERR_EXITED (gone or a zombie),
 * PERR_PERM (maps or memory unreadable: see target_perm_cause()),
 * PERR_NOTINTERP (t->comm and t->exe_path say what it is instead),
 * PERR_UNSUPPORTED (t->lang and t->version say which interpreter),
 * PERR_REFUSED (no interpreter found, and a mapped file was refused:
 * t->refused).  A refusal may also come with PERR_OK (a decoy refused,
 * the interpreter found elsewhere): the caller should say so.
 * On error t is still safe to pass to target_close().
 */
enum perr target_open(struct target *t, pid_t pid);
void target_close(struct target *t);

/*
 * Hold the process now on pid in pm (procmem_init()'d for pid): a pidfd,
 * else its start time, into *start if not NULL.  PERR_NOPROC when there is
 * none.  target_release() closes it.
 */
enum perr target_hold(struct procmem *pm, pid_t pid, uint64_t *start);
void target_release(struct procmem *pm);

/*
 * Has the process held exec()'d since target_open()?  Everything read of it
 * would be stale: target_reopen() it.  0 when it has not, or is gone (a
 * new process on the pid is no exec), or the kernel does not say.  Reads
 * /proc/PID/stat and polls the pidfd: four system calls.
 */
int target_execd(struct target *t);

/*
 * Open the same process again after an exec(): as target_open(), of the
 * process held, never of another on its pid (PERR_EXITED then).
 */
enum perr target_reopen(struct target *t);

/* The process held is gone, a zombie, or exiting (see target_exiting()). */
int target_ended(struct target *t);

/*
 * Is process pid gone, a zombie, or on its way out (in exit(), its memory
 * already torn down)?  Then a failed read of it means it ended, not that
 * something is wrong.  Reads /proc/PID/stat.
 */
int target_exiting(pid_t pid);

/* Re-read /proc/PID/maps (after the target mapped or unmapped memory). */
enum perr target_refresh_maps(struct target *t);

/*
 * Runtime address of a symbol of the interpreter object (the library
 * first, then the executable).  PERR_NOTFOUND if neither defines it.  A
 * TLS symbol yields its offset in the TLS block, with *tls set.
 */
enum perr target_symbol(struct target *t, const char *name, uint64_t *addr, int *tls);

/* Runtime address and size of a named section of the interpreter object. */
enum perr target_section(struct target *t, const char *name, uint64_t *addr, uint64_t *size);

/*
 * A named section of another ELF object the target maps: the first whose
 * file name starts with prefix ("_asyncio."), opened as the interpreter's
 * own is (mapfile.h).  PERR_NOTFOUND when none is mapped or it has no such
 * section.
 */
enum perr target_object_section(struct target *t, const char *prefix, const char *name,
				uint64_t *addr, uint64_t *size);

/* Why reading pid was refused, for the hint the CLI prints. */
enum target_perm_cause {
	TARGET_PERM_UNKNOWN,
	TARGET_PERM_OTHER_USER,	/* the target runs as another user and we are not root */
	TARGET_PERM_YAMA,	/* kernel.yama.ptrace_scope forbids it */
	TARGET_PERM_NOCAP,	/* root without CAP_SYS_PTRACE: a container default */
	TARGET_PERM_ROOT,	/* root with CAP_SYS_PTRACE, refused all the same */
};
enum target_perm_cause target_perm_cause(pid_t pid);

/* "Python" / "Ruby" / "unknown" */
const char *target_lang_name(enum target_lang lang);

/*
 * Kernel thread ids of the process (/proc/PID/task), in *tids (caller
 * frees).  Returns the count, or -1 with errno set.
 */
int target_tasks(pid_t pid, pid_t **tids);

#endif
