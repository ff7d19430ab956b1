/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "proc/procmem.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif
#define PROCMEM_BATCH 1024	/* iovs per syscall (UIO_MAXIOV), stack arrays below */
#define PROCMEM_GAP 4096	/* at most this far apart, pieces are read as one */

void procmem_init(struct procmem *pm, pid_t pid)
{
	memset(pm, 0, sizeof(*pm));
	pm->pid = pid;
	pm->pidfd = -1;
}

void procmem_hold(struct procmem *pm, int pidfd, uint64_t start)
{
	pm->pidfd = pidfd;
	pm->start = start;
	pm->held = 1;
}

int procmem_stat(pid_t pid, char *state, const unsigned int *want, uint64_t *out, size_t n)
{
	char path[64], buf[2048], *p, *end;
	unsigned int field;
	size_t k = 0;
	ssize_t len;
	int fd;

	memset(out, 0, n * sizeof(*out));
	*state = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = '\0';
	/* the command name may hold anything: fields start after its last ')' */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return 0;
	*state = p[2];
	for (p += 3, field = 4; k < n && *p; field++, p = end) {
		uint64_t v;

		while (*p == ' ')
			p++;
		v = strtoull(p, &end, 10);
		if (end == p)
			break;
		if (field == want[k])
			out[k++] = v;
	}
	return 1;
}

/*
 * No pidfd: the process on pid is the one held while it has the start
 * time it had (field 22 of /proc/PID/stat, in clock ticks since boot) and
 * is neither a zombie nor dead.  Weaker than a pidfd: two processes
 * started on one pid within a tick look the same.
 */
static int stat_alive(pid_t pid, uint64_t start)
{
	static const unsigned int want[] = { 22 };
	uint64_t v;
	char state;

	if (!procmem_stat(pid, &state, want, &v, 1))
		return 0;
	return state != 'Z' && state != 'X' && state != 'x' && v == start;
}

int procmem_alive(struct procmem *pm)
{
	int saved = errno;

	if (pm->gone)
		return 0;
	if (pm->buf || !pm->held)
		return 1;
	if (pm->pidfd >= 0) {
		/* readable: the process exited (a zombie counts: its memory is gone) */
		struct pollfd pfd = { .fd = pm->pidfd, .events = POLLIN };
		int n;

		while ((n = poll(&pfd, 1, 0)) < 0 && errno == EINTR)
			;
		if (n != 0)
			pm->gone = 1;
	} else if (!stat_alive(pm->pid, pm->start)) {
		pm->gone = 1;
	}
	errno = saved;
	return !pm->gone;
}

void procmem_init_buffer(struct procmem *pm, uint64_t base, const void *buf, size_t len)
{
	memset(pm, 0, sizeof(*pm));
	pm->pidfd = -1;
	pm->buf = buf;
	pm->base = base;
	pm->len = len;
}

static enum perr buffer_read(struct procmem *pm, uint64_t addr, void *buf, size_t len,
			     size_t *got)
{
	uint64_t off;

	*got = 0;
	if (addr < pm->base || addr - pm->base >= pm->len)
		return len ? PERR_FAULT : PERR_OK;
	off = addr - pm->base;
	*got = len < pm->len - off ? len : (size_t)(pm->len - off);
	memcpy(buf, pm->buf + off, *got);
	return *got == len ? PERR_OK : PERR_SHORT;
}

/* errno after a failed process_vm_readv, in the project's terms */
static enum perr readv_errno(int errnum)
{
	if (errnum == ESRCH)
		return PERR_EXITED;
	return perr_from_errno(errnum);
}

enum perr procmem_write(struct procmem *pm, uint64_t addr, const void *buf, size_t len)
{
	struct iovec local = { (void *)(uintptr_t)buf, len }, remote = { (void *)addr, len };
	ssize_t put;

	int errnum;

	if (pm->buf)
		return PERR_PERM;
	/*
	 * Never into another process on the pid: the word written is an
	 * address of the held process's, at an address of its.  Checked
	 * again after, so that a write that may have raced with the pid's
	 * reuse is the last one.
	 */
	if (!procmem_alive(pm))
		return PERR_EXITED;
	put = process_vm_writev(pm->pid, &local, 1, &remote, 1, 0);
	errnum = errno;
	if (!procmem_alive(pm))
		return PERR_EXITED;
	if (put < 0)
		return readv_errno(errnum);
	return (size_t)put == len ? PERR_OK : PERR_SHORT;
}

enum perr procmem_read(struct procmem *pm, uint64_t addr, void *buf, size_t len)
{
	struct procmem_iov iov = { .addr = addr, .buf = buf, .len = len };

	return procmem_readv(pm, &iov, 1, NULL);
}

/*
 * Two pieces read as one remote range: b starts at or after a ends (end),
 * and the bytes between them lie in pages a or b touches, so that the
 * range faults only where a or b would.  The kernel pins the pages of each
 * remote iov apart (a lock and a look-up of the mapping each): a stack's
 * frames, a hundred bytes apart, cost one pin a page this way, not one a
 * frame.
 */
static int joinable(uint64_t end, const struct procmem_iov *a, const struct procmem_iov *b)
{
	return a->len && b->len && b->addr >= end && b->addr - end < PROCMEM_GAP &&
	       (b->addr / PROCMEM_GAP) - ((end - 1) / PROCMEM_GAP) <= 1;
}

/*
 * process_vm_readv() stops at the first remote page it cannot read and
 * returns the bytes copied so far, so a partial count tells us which iov
 * broke.  Pieces in ascending order a few bytes apart are read as one
 * remote range (joinable()), the bytes between them into a sink.
 */
enum perr procmem_readv(struct procmem *pm, const struct procmem_iov *iov,
			size_t nr, size_t *done)
{
	struct iovec local[PROCMEM_BATCH], remote[PROCMEM_BATCH];
	size_t gap[PROCMEM_BATCH];	/* bytes skipped before each piece of the batch */
	unsigned char sink[PROCMEM_GAP];
	size_t i = 0;
	enum perr err = PERR_OK;

	if (pm->gone) {
		if (done)
			*done = 0;
		return PERR_EXITED;	/* the pid may be another process's by now */
	}
	while (i < nr) {
		size_t first = i, nl = 0, nrem = 0, want = 0, total = 0, k;
		uint64_t end = 0;
		ssize_t got;

		if (pm->buf) {
			size_t g;

			pm->calls++;
			pm->ranges++;
			pm->bytes += iov[i].len;
			err = buffer_read(pm, iov[i].addr, iov[i].buf, iov[i].len, &g);
			if (err) {
				memset((char *)iov[i].buf + g, 0, iov[i].len - g);
				pm->faults++;
				break;
			}
			i++;
			continue;
		}
		while (i < nr && i - first < PROCMEM_BATCH && nl + 2 <= PROCMEM_BATCH) {
			size_t g = 0;

			if (nrem && joinable(end, &iov[i - 1], &iov[i])) {
				g = (size_t)(iov[i].addr - end);
				if (g)
					local[nl++] = (struct iovec){ sink, g };
				remote[nrem - 1].iov_len += g + iov[i].len;
			} else {
				if (nrem == PROCMEM_BATCH)
					break;
				remote[nrem++] = (struct iovec){ (void *)(uintptr_t)iov[i].addr,
								 iov[i].len };
			}
			local[nl++] = (struct iovec){ iov[i].buf, iov[i].len };
			gap[i - first] = g;
			end = iov[i].addr + iov[i].len;
			want += iov[i].len;
			total += g + iov[i].len;
			i++;
		}
		pm->calls++;
		pm->ranges += nrem;
		pm->bytes += want;
		got = process_vm_readv(pm->pid, local, nl, remote, nrem, 0);
		if (got < 0) {
			pm->faults++;
			err = readv_errno(errno);
			if (err == PERR_EXITED && pm->held)
				pm->gone = 1;	/* no process on the pid: ours was reaped */
			i = first;
			break;
		}
		if ((size_t)got == total)
			continue;
		/* Partial: find the iov that broke and report it. */
		pm->faults++;
		for (k = first; k < i; k++) {
			size_t l = iov[k].len;

			if ((size_t)got < gap[k - first] + l) {
				/* stopped in the bytes before it: it got none */
				size_t have = (size_t)got > gap[k - first] ?
					      (size_t)got - gap[k - first] : 0;

				memset((char *)iov[k].buf + have, 0, l - have);
				err = have ? PERR_SHORT : PERR_FAULT;
				break;
			}
			got -= (ssize_t)(gap[k - first] + l);
		}
		i = k;
		break;
	}
	if (done)
		*done = i;
	return err;
}
