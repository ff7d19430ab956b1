/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/uio.h>

#include "procmem.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif
#define PROCMEM_BATCH 1024	/* iovs per syscall (UIO_MAXIOV), stack arrays below */

void procmem_init(struct procmem *pm, pid_t pid)
{
	memset(pm, 0, sizeof(*pm));
	pm->pid = pid;
}

void procmem_init_buffer(struct procmem *pm, uint64_t base, const void *buf, size_t len)
{
	memset(pm, 0, sizeof(*pm));
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

enum perr procmem_read(struct procmem *pm, uint64_t addr, void *buf, size_t len)
{
	struct procmem_iov iov = { .addr = addr, .buf = buf, .len = len };

	return procmem_readv(pm, &iov, 1, NULL);
}

/*
 * process_vm_readv() stops at the first remote iov it cannot read and
 * returns the bytes copied so far, so a partial count tells us which iov
 * broke.  We only ever pair local and remote iovs one to one.
 */
enum perr procmem_readv(struct procmem *pm, const struct procmem_iov *iov,
			size_t nr, size_t *done)
{
	struct iovec local[PROCMEM_BATCH], remote[PROCMEM_BATCH];
	size_t i = 0;
	enum perr err = PERR_OK;

	while (i < nr) {
		size_t n = nr - i < PROCMEM_BATCH ? nr - i : PROCMEM_BATCH;
		size_t want = 0, k;
		ssize_t got;

		if (pm->buf) {
			size_t g;

			pm->calls++;
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
		for (k = 0; k < n; k++) {
			local[k].iov_base = iov[i + k].buf;
			local[k].iov_len = iov[i + k].len;
			remote[k].iov_base = (void *)(uintptr_t)iov[i + k].addr;
			remote[k].iov_len = iov[i + k].len;
			want += iov[i + k].len;
		}
		pm->calls++;
		pm->bytes += want;
		got = process_vm_readv(pm->pid, local, n, remote, n, 0);
		if (got < 0) {
			pm->faults++;
			err = readv_errno(errno);
			break;
		}
		if ((size_t)got == want) {
			i += n;
			continue;
		}
		/* Partial: find the iov that broke and report it. */
		pm->faults++;
		for (k = 0; k < n; k++) {
			size_t l = iov[i + k].len;

			if ((size_t)got < l) {
				memset((char *)iov[i + k].buf + got, 0, l - (size_t)got);
				err = got ? PERR_SHORT : PERR_FAULT;
				break;
			}
			got -= (ssize_t)l;
		}
		i += k;
		break;
	}
	if (done)
		*done = i;
	return err;
}
