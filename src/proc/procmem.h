/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PROCMEM_H
#define PYROSPY_PROCMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/perr.h"

/*
 * Reads of another process's memory with process_vm_readv(2): no ptrace,
 * the target is never stopped.  Every call is counted so that a sampler
 * can report reads per sample.
 *
 * A procmem may instead be backed by a local buffer (procmem_init_buffer):
 * the fuzz targets and unit tests give the readers fake "remote memory"
 * that way, through the same code path the real reads take.
 */
struct procmem {
	pid_t pid;
	/*
	 * Which process pid is: a pidfd (pidfd_open(2)) when the kernel has
	 * them, else -1 and its start time (field 22 of /proc/PID/stat).  Set
	 * by target_open(); 0 and 0 (before procmem_hold()): any process.
	 */
	int pidfd;
	int held;		/* pidfd or start is set: procmem_alive() checks it */
	uint64_t start;
	int gone;		/* seen gone once: every read and write fails from then on */
	/* buffer backend: remote addresses [base, base+len) map to buf */
	const unsigned char *buf;
	uint64_t base;
	size_t len;
	/* counters */
	uint64_t calls;		/* syscalls (or buffer reads) made */
	uint64_t ranges;	/* remote ranges they read (see procmem_readv()) */
	uint64_t bytes;		/* bytes asked for */
	uint64_t faults;	/* reads that failed */
};

/* One piece of a scatter read: len bytes at remote addr into local buf. */
struct procmem_iov {
	uint64_t addr;
	void *buf;
	size_t len;
};

void procmem_init(struct procmem *pm, pid_t pid);

/*
 * Hold the process now on pm->pid: pidfd, or -1 where the kernel has no
 * pidfd_open(2), then start is what procmem_alive() compares.  The pidfd
 * is the caller's (target.c) to close.
 */
void procmem_hold(struct procmem *pm, int pidfd, uint64_t start);

/*
 * Is the process held still running (not exited, not a zombie)?  While it
 * is, no other process can have its pid, so what was read of pm->pid
 * before this returned 1 was read of it.  Once it says 0 it always does,
 * and every read and write fails with PERR_EXITED.  A pidfd costs one
 * poll(2); without one, /proc/PID/stat is read (start time, state).  1 for
 * a buffer-backed or unheld procmem.
 */
int procmem_alive(struct procmem *pm);
void procmem_init_buffer(struct procmem *pm, uint64_t base, const void *buf, size_t len);

/*
 * Fields of /proc/PID/stat: its state letter in *state and, for each of
 * the n field numbers want[] (ascending, from 4 on, as proc(5) numbers
 * them), its value in out[] (0 where the line ends before it).  0 when
 * the file cannot be read (the process is gone), else 1.
 */
int procmem_stat(pid_t pid, char *state, const unsigned int *want, uint64_t *out, size_t n);

/*
 * Read len bytes at remote addr.  PERR_OK only when every byte arrived;
 * PERR_SHORT if the read stopped partway (the rest of buf is zeroed),
 * PERR_FAULT if nothing at addr is mapped, PERR_EXITED if the process is
 * gone, PERR_PERM if we may not read it.
 */
enum perr procmem_read(struct procmem *pm, uint64_t addr, void *buf, size_t len);

/*
 * Scatter read: fill every iov in as few syscalls as the kernel allows
 * (IOV_MAX pieces per call).  Pieces in ascending order, each starting at
 * most a page after the last one ends, are read as one remote range (the
 * kernel pins each range's pages apart, at a cost per range): put the
 * pieces of one region in address order.  *done, if not NULL, receives the number of
 * leading iovs that were filled completely; the status is that of the
 * first incomplete one.  An iov past *done has unspecified contents.
 */
enum perr procmem_readv(struct procmem *pm, const struct procmem_iov *iov,
			size_t nr, size_t *done);

/*
 * Write len bytes at remote addr with process_vm_writev(2): all of them, or
 * an error as procmem_read's (PERR_SHORT for part of them).  The one write
 * pyrospy makes is CPython 3.15's last_profiled_frame (pyreader.c), a word
 * the interpreter keeps for out-of-process profilers.  A buffer-backed
 * procmem is read-only: PERR_PERM.  A held process is checked alive right
 * before and right after the write (PERR_EXITED: not written, or gone as
 * it was); process_vm_writev(2) takes a pid, not a pidfd, so the only
 * window left is between the first check and the system call.
 */
enum perr procmem_write(struct procmem *pm, uint64_t addr, const void *buf, size_t len);

/* Convenience for pointer-sized reads. */
static inline enum perr procmem_read_u64(struct procmem *pm, uint64_t addr, uint64_t *out)
{
	return procmem_read(pm, addr, out, sizeof(*out));
}

#endif
