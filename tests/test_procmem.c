/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/procmem.h"

/*
 * A forked child shares our address layout, so the addresses of these
 * buffers are valid in it; it changes their contents, then waits.
 */
static char region_a[64], region_b[4096];
static unsigned char *edge;	/* last 16 bytes of a page before a hole */

static pid_t start_child(void)
{
	int fds[2];
	pid_t pid;
	char c;

	edge = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert(edge != MAP_FAILED);
	munmap(edge + 4096, 4096);
	cr_assert(pipe(fds) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		/* a failed assertion ends the test without stop_child() */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		strcpy(region_a, "child region a");
		memset(region_b, 'b', sizeof(region_b));
		memset(edge, 'e', 4096);
		if (write(fds[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	cr_assert_eq(read(fds[0], &c, 1), 1);
	close(fds[0]);
	close(fds[1]);
	return pid;
}

static void stop_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(procmem, single_and_scatter)
{
	pid_t pid = start_child();
	struct procmem pm;
	char a[64], b[4096], e[8];
	struct procmem_iov iov[3] = {
		{ (uint64_t)(uintptr_t)region_a, a, sizeof(a) },
		{ (uint64_t)(uintptr_t)region_b, b, sizeof(b) },
		{ (uint64_t)(uintptr_t)edge + 100, e, sizeof(e) },
	};
	size_t done;

	procmem_init(&pm, pid);
	cr_assert_eq(procmem_read(&pm, (uint64_t)(uintptr_t)region_a, a, sizeof(a)), PERR_OK);
	cr_assert_str_eq(a, "child region a");
	cr_assert_str_neq(region_a, "child region a", "the parent's copy is untouched");
	memset(a, 0, sizeof(a));
	cr_assert_eq(procmem_readv(&pm, iov, 3, &done), PERR_OK);
	cr_assert_eq(done, 3);
	cr_assert_str_eq(a, "child region a");
	cr_assert_eq(b[4095], 'b');
	cr_assert_eq(memcmp(e, "eeeeeeee", 8), 0);
	cr_assert_eq(pm.calls, 2, "the scatter read is one syscall");
	stop_child(pid);
}

Test(procmem, short_read_and_fault)
{
	pid_t pid = start_child();
	struct procmem pm;
	char buf[64], a[16];
	struct procmem_iov iov[2] = {
		{ (uint64_t)(uintptr_t)region_a, a, sizeof(a) },
		{ (uint64_t)(uintptr_t)edge + 4096 - 16, buf, sizeof(buf) },
	};
	size_t done;

	procmem_init(&pm, pid);
	memset(buf, 'x', sizeof(buf));
	cr_assert_eq(procmem_read(&pm, (uint64_t)(uintptr_t)edge + 4096 - 16, buf, sizeof(buf)),
		     PERR_SHORT);
	cr_assert_eq(buf[15], 'e');
	cr_assert_eq(buf[16], 0, "the unread part is zeroed");
	cr_assert_eq(procmem_readv(&pm, iov, 2, &done), PERR_SHORT);
	cr_assert_eq(done, 1);
	cr_assert_eq(procmem_read(&pm, (uint64_t)(uintptr_t)edge + 4096, buf, 8), PERR_FAULT);
	cr_assert_eq(procmem_read(&pm, 8, buf, 8), PERR_FAULT);
	stop_child(pid);
}

Test(procmem, dead_process)
{
	pid_t pid = start_child();
	struct procmem pm;
	char a[8];

	stop_child(pid);
	procmem_init(&pm, pid);
	cr_assert_eq(procmem_read(&pm, (uint64_t)(uintptr_t)region_a, a, sizeof(a)), PERR_EXITED);
}

/* Field 22 of /proc/pid/stat, read here apart from pyrospy's code. */
static uint64_t start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long t = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	cr_assert(f);
	cr_assert(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')');
	cr_assert(p);
	/* the space before field k, k = 3 ... 22 */
	for (int field = 3; field <= 22; field++)
		p = strchr(p + 1, ' ');
	cr_assert(sscanf(p, " %llu", &t) == 1);
	return t;
}

/*
 * Held without a pidfd: the process on the pid is the one held while its
 * start time is the one given and it is no zombie.  Once it is not, no
 * read or write reaches the pid any more: not even a system call.
 */
Test(procmem, held_by_start_time)
{
	pid_t pid = start_child();
	uint64_t start = start_time(pid), calls;
	struct procmem pm, other;
	char a[16];

	procmem_init(&pm, pid);
	procmem_hold(&pm, -1, start);
	cr_assert(procmem_alive(&pm));
	cr_assert_eq(procmem_read(&pm, (uint64_t)(uintptr_t)region_a, a, sizeof(a)), PERR_OK);
	/* another start time: another process on the pid */
	procmem_init(&other, pid);
	procmem_hold(&other, -1, start + 1);
	cr_assert(!procmem_alive(&other));
	calls = other.calls;
	cr_assert_eq(procmem_read(&other, (uint64_t)(uintptr_t)region_a, a, sizeof(a)),
		     PERR_EXITED);
	cr_assert_eq(procmem_write(&other, (uint64_t)(uintptr_t)region_a, "x", 1), PERR_EXITED);
	cr_assert_eq(other.calls, calls, "a process seen gone is not read");
	/* a zombie keeps its pid, not its memory */
	kill(pid, SIGKILL);
	for (int i = 0; i < 1000 && procmem_alive(&pm); i++)
		usleep(1000);
	cr_assert(!procmem_alive(&pm), "a zombie taken for alive");
	cr_assert_eq(procmem_read(&pm, (uint64_t)(uintptr_t)region_a, a, sizeof(a)), PERR_EXITED);
	waitpid(pid, NULL, 0);
}

/* Held by pidfd: gone once the process exits, before it is reaped. */
Test(procmem, held_by_pidfd)
{
	pid_t pid = start_child();
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);
	struct pollfd pfd;
	struct procmem pm;
	char a[16];

	cr_assert(fd >= 0, "pidfd_open: Linux 5.3 or later");
	procmem_init(&pm, pid);
	procmem_hold(&pm, fd, start_time(pid));
	cr_assert(procmem_alive(&pm));
	cr_assert_eq(procmem_write(&pm, (uint64_t)(uintptr_t)region_a, "C", 1), PERR_OK);
	cr_assert_eq(procmem_read(&pm, (uint64_t)(uintptr_t)region_a, a, sizeof(a)), PERR_OK);
	cr_assert_str_eq(a, "Child region a");
	kill(pid, SIGKILL);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	cr_assert_eq(poll(&pfd, 1, 5000), 1);
	cr_assert(!procmem_alive(&pm));
	cr_assert_eq(procmem_write(&pm, (uint64_t)(uintptr_t)region_a, "x", 1), PERR_EXITED);
	waitpid(pid, NULL, 0);
	close(fd);
}

Test(procmem, buffer_backend)
{
	static const char mem[] = "0123456789";
	struct procmem pm;
	char out[8];

	procmem_init_buffer(&pm, 0x1000, mem, 10);
	cr_assert_eq(procmem_read(&pm, 0x1002, out, 4), PERR_OK);
	cr_assert_eq(memcmp(out, "2345", 4), 0);
	cr_assert_eq(procmem_read(&pm, 0x1008, out, 4), PERR_SHORT);
	cr_assert_eq(procmem_read(&pm, 0x2000, out, 4), PERR_FAULT);
	cr_assert_eq(procmem_read(&pm, 0xfff, out, 4), PERR_FAULT);
}

/*
 * Pieces in address order a few bytes apart are read as one remote range;
 * a piece in a page that is not mapped still fails alone, also when the
 * read stops in the bytes skipped before it.
 */
Test(procmem, nearby_pieces_one_range)
{
	pid_t pid = start_child();
	uint64_t base = (uint64_t)(uintptr_t)edge;
	struct procmem pm;
	struct procmem_iov iov[32];
	char buf[32][16];
	size_t done;

	procmem_init(&pm, pid);
	for (int i = 0; i < 32; i++)
		iov[i] = (struct procmem_iov){ base + 100 * (uint64_t)i, buf[i], 8 };
	cr_assert_eq(procmem_readv(&pm, iov, 32, &done), PERR_OK);
	cr_assert_eq(done, 32);
	for (int i = 0; i < 32; i++)
		cr_assert_eq(memcmp(buf[i], "eeeeeeee", 8), 0, "piece %d", i);
	cr_assert_eq(pm.calls, 1);
	cr_assert_eq(pm.ranges, 1, "32 pieces of one page: one range, not %llu",
		     (unsigned long long)pm.ranges);

	/* in the other order: each alone, the same bytes */
	pm.ranges = 0;
	for (int i = 0; i < 32; i++) {
		iov[i] = (struct procmem_iov){ base + 100 * (uint64_t)(31 - i), buf[i], 8 };
		memset(buf[i], 0, 8);
	}
	cr_assert_eq(procmem_readv(&pm, iov, 32, &done), PERR_OK);
	cr_assert_eq(done, 32);
	cr_assert_eq(memcmp(buf[31], "eeeeeeee", 8), 0);
	cr_assert_eq(pm.ranges, 32);

	/* the next piece in the hole after the page: it alone fails */
	memset(buf, 'x', sizeof(buf));
	iov[0] = (struct procmem_iov){ base + 4000, buf[0], 16 };
	iov[1] = (struct procmem_iov){ base + 4096 + 8, buf[1], 16 };
	cr_assert_eq(procmem_readv(&pm, iov, 2, &done), PERR_FAULT);
	cr_assert_eq(done, 1);
	cr_assert_eq(buf[0][15], 'e');
	cr_assert_eq(buf[1][0], 0, "the unread piece is zeroed");

	/* the read stops in the skipped bytes, themselves in the hole */
	memset(buf, 'x', sizeof(buf));
	iov[0] = (struct procmem_iov){ base + 4080, buf[0], 16 };
	iov[1] = (struct procmem_iov){ base + 4096 + 100, buf[1], 16 };
	cr_assert_eq(procmem_readv(&pm, iov, 2, &done), PERR_FAULT);
	cr_assert_eq(done, 1);
	cr_assert_eq(memcmp(buf[0], "eeeeeeeeeeeeeeee", 16), 0);
	cr_assert_eq(buf[1][15], 0);

	/* a piece that starts in the page and runs into the hole: short */
	iov[0] = (struct procmem_iov){ base + 16, buf[0], 8 };
	iov[1] = (struct procmem_iov){ base + 4090, buf[1], 16 };
	cr_assert_eq(procmem_readv(&pm, iov, 2, &done), PERR_SHORT);
	cr_assert_eq(done, 1);
	cr_assert_eq(buf[1][5], 'e');
	cr_assert_eq(buf[1][6], 0);
	stop_child(pid);
}
