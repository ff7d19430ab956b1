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
