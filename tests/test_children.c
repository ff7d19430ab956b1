/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "proc/target.h"

/*
 * --subprocesses: a child is found at the tick after it appears, not at
 * the next scan of /proc (once a second), so a child that lives a second
 * is sampled for its whole life.
 */

#define CHILDREN 4		/* the targets start four */

/*
 * The children target (a fork, then an interpreter it spawns, twice),
 * recorded at 100 Hz: each child's 1.0 s in child_work (wall time: a
 * child waiting its turn for a CPU is runnable, and sampled) has at least
 * 80 samples.  The scan once a second found each 0 to 1 s late: at most
 * one of four children started 1.2 s apart was found within 0.2 s.
 */
static void children(const struct interp *in)
{
	const char *sargs[] = { test_target_for(in, in->lang == TARGET_RUBY ? "children.rb" :
						"children.py"), NULL };
	const char *args[] = { "record", "--pid", NULL, "--subprocesses", "--threads", "-r", "100",
			       "-d", "30", "-f", "folded", "-o", "-", NULL };
	char ready[64], pidbuf[32], needle[64], *out, *err, *line, *save;
	int pids[16], npids = 0, st;
	unsigned long counts[16] = { 0 };
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	args[2] = pidbuf;
	snprintf(needle, sizeof(needle), ";%s (", test_func(in, "child_work"));
	/* ends when the target has started its last child and it is done */
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');
		int who, k = 0;

		if (sscanf(line, "pid %d:", &who) != 1 || !strstr(line, needle) || !sp)
			continue;
		while (k < npids && pids[k] != who)
			k++;
		if (k == 16)
			continue;
		if (k == npids)
			pids[npids++] = who;
		counts[k] += strtoul(sp + 1, NULL, 10);
	}
	cr_assert_eq(npids, CHILDREN, "%s: %d children in child_work:\n%s", in->bin, npids, err);
	for (int k = 0; k < npids; k++)
		cr_expect_geq(counts[k], 80, "%s: child %d (%d of %d): %lu samples in child_work",
			      in->bin, pids[k], k + 1, npids, counts[k]);
	free(out);
	free(err);
}

/* the host's, and two of the chroots' */
Test(children, python311_found_at_the_next_tick, .timeout = 60)
{
	children(&test_pythons[1]);
}

Test(children, python313_found_at_the_next_tick, .timeout = 60)
{
	children(&test_pythons[2]);
}

Test(children, python314_found_at_the_next_tick, .timeout = 60)
{
	children(&test_pythons[3]);
}

Test(children, ruby31_found_at_the_next_tick, .timeout = 60)
{
	children(&test_rubies[1]);
}

Test(children, ruby33_found_at_the_next_tick, .timeout = 60)
{
	children(&test_rubies[2]);
}
