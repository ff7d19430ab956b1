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
	int sfd;		/* and its schedstat, -1 until asked for */
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
	for (size_t i = 0; i < ts->nr; i++) {
		if (ts->ent[i].fd >= 0)
			close(ts->ent[i].fd);
		if (ts->ent[i].sfd >= 0)
			close(ts->ent[i].sfd);
	}
	FREE_AND_NULL(ts->ent);
	FREE_AND_NULL(ts->hash);
	ts->nr = ts->alloc = ts->hcap = 0;
}

static size_t slot_of(pid_t tid, size_t cap)
{
	return (size_t)(((uint64_t)(uint32_t)tid * 0x9E3779B97F4A7C15ull) >> 40) & (cap - 1);
}

static void hash_put(struct taskstat *ts, size_t i)
{
	uint32_t *h[2] = { ts->hash, ts->hash + ts->hcap };
	pid_t key[2] = { ts->ent[i].tid, ts->ent[i].ns_tid };

	for (int k = 0; k < 2; k++) {
		size_t s = slot_of(key[k], ts->hcap);

		if (key[k] <= 0)
			continue;
		while (h[k][s])
			s = (s + 1) & (ts->hcap - 1);
		h[k][s] = (uint32_t)i + 1;
	}
}

/* (Re)build the index: after a drop moved an entry, or the table grew. */
static void hash_build(struct taskstat *ts)
{
	size_t cap = 64;

	while (cap <= 2 * ts->alloc)
		cap *= 2;
	if (cap != ts->hcap) {
		free(ts->hash);
		ts->hash = xcalloc(2 * cap, sizeof(*ts->hash));
		ts->hcap = cap;
	} else {
		memset(ts->hash, 0, 2 * cap * sizeof(*ts->hash));
	}
	for (size_t i = 0; i < ts->nr; i++)
		hash_put(ts, i);
}

static void drop(struct taskstat *ts, size_t i)
{
	if (ts->ent[i].fd >= 0)
		close(ts->ent[i].fd);
	if (ts->ent[i].sfd >= 0)
		close(ts->ent[i].sfd);
	ts->ent[i] = ts->ent[--ts->nr];
	ts->hcap = 0;	/* an entry moved: build the index again when next asked */
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
	const uint32_t *h;
	size_t s;

	if (tid <= 0)
		return NULL;
	if (!ts->hcap)
		hash_build(ts);
	h = ts->hash + (by_ns ? ts->hcap : 0);
	for (s = slot_of(tid, ts->hcap); h[s]; s = (s + 1) & (ts->hcap - 1)) {
		struct taskstat_entry *e = &ts->ent[h[s] - 1];

		if ((by_ns ? e->ns_tid : e->tid) == tid)
			return e;
	}
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
		ts->hcap = 0;
	}
	e = &ts->ent[ts->nr++];
	e->tid = tid;
	e->ns_tid = ns_tid;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)ts->pid, (int)tid);
	e->fd = open(path, O_RDONLY | O_CLOEXEC);
	e->sfd = -1;
	if (ts->hcap)
		hash_put(ts, ts->nr - 1);
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

char taskstat_state_comm(struct taskstat *ts, pid_t tid, char *comm, size_t *nc)
{
	struct taskstat_entry *e = find(ts, tid, 0);
	char buf[512], *p, *open;
	ssize_t n;

	if (nc)
		*nc = SIZE_MAX;
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
	open = strchr(buf, '(');
	if (!p || !open || open > p || p[1] != ' ' || !p[2])
		return 0;
	/* the kernel's name unescaped, as /proc/PID/task/TID/comm has it */
	if (comm && nc && (size_t)(p - open - 1) <= TASKSTAT_COMM_MAX) {
		*nc = (size_t)(p - open - 1);
		memcpy(comm, open + 1, *nc);
	}
	return p[2];
}

char taskstat_state(struct taskstat *ts, pid_t tid)
{
	return taskstat_state_comm(ts, tid, NULL, NULL);
}

int taskstat_run(struct taskstat *ts, pid_t tid, struct taskstat_run *run)
{
	struct taskstat_entry *e = find(ts, tid, 0);
	char buf[128], *p, *end;
	unsigned long long v[3];
	ssize_t n;

	if (!e)
		e = add(ts, tid, ts->same_ns ? tid : 0);
	if (e->sfd < 0) {
		char path[96];

		snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)ts->pid, (int)tid);
		e->sfd = open(path, O_RDONLY | O_CLOEXEC);
		if (e->sfd < 0)
			return -1;
	}
	n = pread(e->sfd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* "run-ns wait-ns count\n" */
	p = buf;
	for (int k = 0; k < 3; k++) {
		errno = 0;
		v[k] = strtoull(p, &end, 10);
		if (end == p || errno || (*end != ' ' && *end != '\n'))
			return -1;
		p = end;
	}
	if (!v[0] || !v[2])
		return -1;	/* not kept: no proof of anything */
	run->ns = v[0];
	run->count = v[2];
	return 0;
}
