/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/ptree.h"

/* A child that waits to be killed (or for its thread to end, or 30 s). */
static pid_t child(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(30);
		pause();
		_exit(0);
	}
	cr_assert_gt(pid, 0);
	return pid;
}

struct forker {
	int wake[2];
	pid_t pid;
};

/* A thread that forks, then stays until woken: its children are its own. */
static void *fork_and_wait(void *arg)
{
	struct forker *f = arg;
	char c;

	f->pid = child();
	while (read(f->wake[0], &c, 1) < 0)
		;
	return NULL;
}

static int has(const pid_t *pids, int n, pid_t pid)
{
	for (int i = 0; i < n; i++)
		if (pids[i] == pid)
			return 1;
	return 0;
}

/*
 * The children of the main thread and of another thread are both listed
 * (each thread has a list of its own), the cap is kept, and none is left
 * once they are reaped.
 */
Test(ptree, children_of_every_thread)
{
	struct forker f = { .pid = 0 };
	pid_t pids[8], a = child();
	pthread_t th;
	int n;

	cr_assert_eq(pipe(f.wake), 0);
	cr_assert_eq(pthread_create(&th, NULL, fork_and_wait, &f), 0);
	while (!__atomic_load_n(&f.pid, __ATOMIC_SEQ_CST))
		usleep(1000);
	n = ptree_children(getpid(), pids, 8);
	cr_assert_eq(n, 2, "%d children", n);
	cr_assert(has(pids, n, a) && has(pids, n, f.pid), "%d %d not both listed", (int)a,
		  (int)f.pid);
	cr_assert_eq(ptree_children(getpid(), pids, 1), 1);
	cr_assert_eq(ptree_children(a, pids, 8), 0);
	kill(a, SIGKILL);
	kill(f.pid, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(f.pid, NULL, 0);
	cr_assert_eq(write(f.wake[1], "x", 1), 1);
	pthread_join(th, NULL);
	cr_assert_eq(ptree_children(getpid(), pids, 8), 0);
	cr_assert_eq(ptree_children(0x7ffffff0, pids, 8), -1);
}
