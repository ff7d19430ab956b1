/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/ptree.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#define PTREE_MAX (1u << 22)	/* more processes than pid_max allows */

struct proc {
	pid_t pid, ppid;
};

/* The parent of pid from /proc/pid/stat ("pid (comm) state ppid ..."), or -1. */
static pid_t parent_of(pid_t pid)
{
	char path[48], buf[512], *paren;
	ssize_t n;
	int fd, ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: the last ')' ends it */
	paren = strrchr(buf, ')');
	if (!paren || sscanf(paren + 1, " %*c %d", &ppid) != 1)
		return -1;
	return (pid_t)ppid;
}

pid_t ptree_parent(pid_t pid)
{
	return parent_of(pid);
}

/* Append the pids of /proc/pid/task/tid/children to pids (at most cap). */
static int task_children(pid_t pid, const char *tid, pid_t *pids, size_t *n, size_t cap)
{
	char path[80], buf[4096], *p, *end;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%s/children", (int)pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len < 0)
		return -1;
	buf[len] = '\0';
	/* "pid pid ... ": a number cut short at the end of buf is left */
	for (p = buf; *n < cap; p = end) {
		long child = strtol(p, &end, 10);

		if (end == p || (*end != ' ' && *end != '\n'))
			break;
		if (child > 0 && child <= INT32_MAX)
			pids[(*n)++] = (pid_t)child;
	}
	return 0;
}

int ptree_children(pid_t pid, pid_t *pids, size_t cap)
{
	char path[48], tid[16];
	size_t n = 0;
	unsigned int tasks = 1;
	struct dirent *de;
	struct stat sb;
	DIR *d;

	/* the main thread first: most programs fork from it */
	snprintf(tid, sizeof(tid), "%d", (int)pid);
	if (task_children(pid, tid, pids, &n, cap) < 0)
		return -1;
	/* the links of /proc/PID/task are 2 and one per thread: one, done */
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (stat(path, &sb) < 0 || sb.st_nlink <= 3)
		return (int)n;
	d = opendir(path);
	if (!d)
		return (int)n;
	while (tasks < PTREE_TASKS && n < cap && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9' || !strcmp(de->d_name, tid))
			continue;
		/* a thread gone meanwhile has no children left */
		task_children(pid, de->d_name, pids, &n, cap);
		tasks++;
	}
	closedir(d);
	return (int)n;
}

static void take(struct proc *all, size_t i, pid_t *out, size_t *nout)
{
	out[(*nout)++] = all[i].pid;
	all[i].pid = 0;		/* taken */
}

int ptree_descendants(pid_t root, pid_t **pids)
{
	struct proc *all = NULL;
	size_t nall = 0, aall = 0, nout = 0;
	pid_t *out;
	struct dirent *de;
	DIR *d = opendir("/proc");

	if (!d)
		return -1;
	while ((de = readdir(d)) && nall < PTREE_MAX) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		pid_t ppid;

		if (*end || pid <= 0 || pid == root)
			continue;
		ppid = parent_of((pid_t)pid);
		if (ppid <= 0)
			continue;
		if (nall == aall) {
			aall = aall ? aall * 2 : 256;
			all = xreallocarray(all, aall, sizeof(*all));
		}
		all[nall++] = (struct proc){ (pid_t)pid, ppid };
	}
	closedir(d);
	/* root's children, then the children of those, round by round */
	out = xmalloc((nall + 1) * sizeof(*out));
	for (size_t i = 0; i < nall; i++)
		if (all[i].ppid == root)
			take(all, i, out, &nout);
	for (size_t lo = 0, hi = nout; lo < hi; lo = hi, hi = nout)
		for (size_t i = 0; i < nall; i++)
			for (size_t j = lo; all[i].pid && j < hi; j++)
				if (all[i].ppid == out[j])
					take(all, i, out, &nout);
	free(all);
	*pids = out;
	return (int)nout;
}

/* Read a small /proc file into buf (NUL bytes become spaces); length or -1. */
static ssize_t proc_text(pid_t pid, const char *what, char *buf, size_t cap)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	for (ssize_t i = 0; i < n; i++)
		if (!buf[i] || buf[i] == '\n')
			buf[i] = ' ';
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	buf[n] = '\0';
	return n;
}

ssize_t ptree_cmdline(pid_t pid, char *buf, size_t cap)
{
	char raw[PTREE_CMDLINE];
	ssize_t n = proc_text(pid, "cmdline", raw, cap < sizeof(raw) ? cap : sizeof(raw));

	if (n < 0) {
		*buf = '\0';
		return -1;
	}
	return (ssize_t)utf8_sanitize(buf, cap, raw, (size_t)n);
}

/* Field 22 of /proc/pid/stat: start time in jiffies after boot. */
static unsigned long long start_time(pid_t pid)
{
	char buf[1024], *p;
	unsigned long long t = ~0ull;

	if (proc_text(pid, "stat", buf, sizeof(buf)) <= 0 || !(p = strrchr(buf, ')')))
		return t;
	/* after ')': state(3) ppid(4) ... starttime(22) */
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
			  "%*d %*d %llu", &t) != 1)
		return ~0ull;
	return t;
}

pid_t ptree_find(const char *pattern, unsigned int *nmatch)
{
	unsigned long long best_time = ~0ull;
	pid_t best = 0, self = getpid();
	struct dirent *de;
	regex_t re;
	DIR *d;

	*nmatch = 0;
	if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB)) {
		errno = EINVAL;
		return -1;
	}
	d = opendir("/proc");
	if (!d) {
		regfree(&re);
		return -1;
	}
	while ((de = readdir(d))) {
		char comm[64], cmdline[4096], *end;
		long pid = strtol(de->d_name, &end, 10);
		unsigned long long t;

		if (*end || pid <= 0 || pid == self)
			continue;
		if (proc_text((pid_t)pid, "comm", comm, sizeof(comm)) < 0)
			continue;
		if (proc_text((pid_t)pid, "cmdline", cmdline, sizeof(cmdline)) <= 0)
			continue;	/* a kernel thread, or gone */
		if (regexec(&re, comm, 0, NULL, 0) && regexec(&re, cmdline, 0, NULL, 0))
			continue;
		if (!strcmp(comm, "pyrospy"))
			continue;	/* another pyrospy, maybe looking for the same */
		(*nmatch)++;
		t = start_time((pid_t)pid);
		if (!best || t < best_time) {
			best = (pid_t)pid;
			best_time = t;
		}
	}
	closedir(d);
	regfree(&re);
	return best;
}
