/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PTREE_H
#define PYROSPY_PTREE_H

#include <sys/types.h>

/*
 * The descendants of root (children, their children, ...), from the
 * parent pids in /proc/N/stat: into *pids (caller frees), returning how
 * many, or -1 with errno set.  A snapshot: processes come and go.
 */
int ptree_descendants(pid_t root, pid_t **pids);

/*
 * The children of pid's threads (/proc/pid/task/TID/children, of its first
 * PTREE_TASKS threads, each file's first 4 KiB), up to cap of them into
 * pids: what a scan of /proc finds, at the cost of one small read per
 * thread.  Returns how many, or -1 with errno set (ENOENT: gone, or a
 * kernel without CONFIG_PROC_CHILDREN).  Pids, not processes: the caller
 * holds pid and checks that each child it opens is still pid's.
 */
#define PTREE_TASKS 64
int ptree_children(pid_t pid, pid_t *pids, size_t cap);

/*
 * pid's command line (/proc/pid/cmdline, its first cap - 1 bytes, the
 * arguments' NULs as spaces) into buf, sanitized (utf8_sanitize(): valid
 * UTF-8, no control or bidi character): the target's, so fit to show
 * only once cleaned.  Returns its length, 0 for none (a kernel thread, a
 * process gone), or -1 with errno set.
 */
#define PTREE_CMDLINE 4096
ssize_t ptree_cmdline(pid_t pid, char *buf, size_t cap);

/* The parent of pid (/proc/pid/stat, field 4), or -1. */
pid_t ptree_parent(pid_t pid);

/*
 * The process whose name (/proc/N/comm) or command line matches the
 * extended regular expression pattern, other than ourselves; the oldest
 * one (fewest jiffies since boot) when several match, which is the
 * master of a forking server.  Returns its pid, 0 if none matches, or -1
 * with errno set (EINVAL for a bad pattern).  *nmatch gets how many did.
 */
pid_t ptree_find(const char *pattern, unsigned int *nmatch);

#endif
