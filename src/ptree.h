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

#endif
