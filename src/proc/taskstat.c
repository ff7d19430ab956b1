/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/target.h"
#include "proc/taskstat.h"
#include "util/xalloc.h"

#define TASKSTAT_MAX 4096	/* open files kept, at most */
#define TASKSTAT_SWEEP 64	/* a table this small is never swept */

struct taskstat_entry {
	pid_t tid;		/* host tid */
	pid_t ns_tid;		/* tid in the target's namespace */
	int fd;			/* /proc/PID/task/TID/stat */
};

static int same_pid_ns(pid_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	if (stat("/proc/self/ns/pid", &a) < 0 || stat(path, &b) < 0)
		return 1;
	return a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

void taskstat_init(struct taskstat *ts, pid_t pid)
{
	memset(ts, 0, sizeof(*ts));
	ts->pid = pid;
	ts->same_ns = same_pid_ns(pid);
	ts->sweep_at = TASKSTAT_SWEEP;
}

void taskstat_release(struct taskstat *ts)
{
	for (size_t i = 0; i < ts->nr; i++)
		if (ts->ent[i].fd >= 0)
			close(ts->ent[i].fd);
	FREE_AND_NULL(ts->ent);
	ts->nr = ts->alloc = 0;
}

static void drop(struct taskstat *ts, size_t i)
{
	if (ts->ent[i].fd >= 0)
		close(ts->ent[i].fd);
	ts->ent[i] = ts->ent[--ts->nr];
}

/* The innermost id on the NSpid line of a task's status. */
pid_t taskstat_nspid(pid_t pid, pid_t tid)
{
	char path[96], line[256];
	pid_t last = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "NSpid:", 6)) {
			char *p = line + 6, *end;

			for (;;) {
				long v = strtol(p, &end, 10);

				if (end == p)
					break;
				last = (pid_t)v;
				p = end;
			}
			break;
		}
	}
	fclose(f);
	return last;
}

static struct taskstat_entry *find(struct taskstat *ts, pid_t tid, int by_ns)
{
	for (size_t i = 0; i < ts->nr; i++)
		if ((by_ns ? ts->ent[i].ns_tid : ts->ent[i].tid) == tid)
			return &ts->ent[i];
	return NULL;
}

/*
 * Close the files of threads that have ended (a read of one fails).  Run
 * when the table has doubled since the last sweep, so that a target that
 * starts and ends threads all the time costs O(1) reads per new thread and
 * keeps at most twice its live threads open, never ever more.
 */
static void sweep(struct taskstat *ts)
{
	char c;

	for (size_t i = 0; i < ts->nr;) {
		if (ts->ent[i].fd < 0 || pread(ts->ent[i].fd, &c, 1, 0) <= 0)
			drop(ts, i);
		else
			i++;
	}
	ts->sweep_at = ts->nr * 2 > TASKSTAT_SWEEP ? ts->nr * 2 : TASKSTAT_SWEEP;
}

static struct taskstat_entry *add(struct taskstat *ts, pid_t tid, pid_t ns_tid)
{
	char path[96];
	struct taskstat_entry *e;

	if (ts->nr >= ts->sweep_at)
		sweep(ts);
	if (ts->nr >= TASKSTAT_MAX)
		drop(ts, 0);
	if (ts->nr == ts->alloc) {
		ts->alloc = ts->alloc ? ts->alloc * 2 : 16;
		ts->ent = xreallocarray(ts->ent, ts->alloc, sizeof(*ts->ent));
	}
	e = &ts->ent[ts->nr++];
	e->tid = tid;
	e->ns_tid = ns_tid;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)ts->pid, (int)tid);
	e->fd = open(path, O_RDONLY | O_CLOEXEC);
	return e;
}

pid_t taskstat_host_tid(struct taskstat *ts, pid_t ns_tid)
{
	struct taskstat_entry *e;
	pid_t *tids;
	int n;

	if (ts->same_ns || ns_tid <= 0)
		return ns_tid;
	e = find(ts, ns_tid, 1);
	if (e)
		return e->tid;
	/* A thread we have not seen: map every task once more. */
	n = target_tasks(ts->pid, &tids);
	for (int i = 0; i < n; i++) {
		if (find(ts, tids[i], 0))
			continue;
		add(ts, tids[i], taskstat_nspid(ts->pid, tids[i]));
	}
	if (n >= 0)
		free(tids);
	e = find(ts, ns_tid, 1);
	return e ? e->tid : 0;
}

char taskstat_state(struct taskstat *ts, pid_t tid)
{
	struct taskstat_entry *e = find(ts, tid, 0);
	char buf[512], *p;
	ssize_t n;

	if (!e)
		e = add(ts, tid, ts->same_ns ? tid : 0);
	if (e->fd < 0) {
		drop(ts, (size_t)(e - ts->ent));
		return 0;
	}
	n = pread(e->fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0) {
		drop(ts, (size_t)(e - ts->ent));
		return 0;
	}
	buf[n] = '\0';
	/* "tid (comm) S ..." - comm may hold spaces and parens: use the last ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return 0;
	return p[2];
}
