/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/common.h"
#include "helpers.h"
#include "proc/procmaps.h"
#include "profile/profile.h"
#include "stack/stack.h"
#include "proc/target.h"

/*
 * What a hostile target may make pyrospy hold or spend, measured as the
 * attacker would have it: pyrospy runs as root, the target as nobody, and
 * pyrospy's peak RSS and CPU come from wait4().  The bounds hold for the
 * plain and the sanitizer build (which takes 2-3 times the memory) and
 * are far below what the code before them took (in each test's comment:
 * sanitizer build, plain build).
 */

static const struct interp nobody_python = { NULL, "setpriv", TARGET_PYTHON, 3, 11 };

/* setpriv, and the target dies with the test (a change of user clears it) */
#define AS_NOBODY "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--pdeathsig=SIGKILL"

struct cost {
	int status;		/* exit status, or 128 + signal */
	long kb;		/* peak RSS */
	double cpu;		/* user + system seconds */
	char *out, *err;	/* the caller frees */
};

static char *slurp_file(FILE *f)
{
	long len;
	char *s;

	fflush(f);
	len = ftell(f);
	cr_assert(len >= 0);
	s = malloc((size_t)len + 1);
	rewind(f);
	cr_assert_eq(fread(s, 1, (size_t)len, f), (size_t)len);
	s[len] = '\0';
	fclose(f);
	return s;
}

/* Run pyrospy with args: its status, output and cost. */
static struct cost measure(const char *const *args)
{
	const char *bin = getenv("PYROSPY");
	char path[1024];
	const char *argv[40];
	FILE *out = tmpfile(), *err = tmpfile();
	struct rusage ru;
	struct cost c;
	int n = 0, status;
	pid_t pid;

	cr_assert(out && err);
	if (!bin) {
		snprintf(path, sizeof(path), "%s/pyrospy", BUILDDIR);
		bin = path;
	}
	argv[n++] = bin;
	for (int i = 0; args[i] && n < 39; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		dup2(fileno(out), 1);
		dup2(fileno(err), 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0)
		cr_assert_eq(errno, EINTR);
	c.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	c.kb = ru.ru_maxrss;
	c.cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	c.out = slurp_file(out);
	c.err = slurp_file(err);
	return c;
}

static void cost_free(struct cost *c)
{
	free(c->out);
	free(c->err);
}

/* A fresh directory nobody may write in, for a target's files. */
static char *nobody_dir(void)
{
	char *dir = strdup("/tmp/pyrospy-bounds-XXXXXX");

	cr_assert(mkdtemp(dir));
	cr_assert_eq(chown(dir, 65534, 65534), 0, "chown nobody: %s", strerror(errno));
	return dir;
}

static void remove_dir(char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	free(dir);
}

/* Start tests/targets/script with args as nobody; its pid, also in pidbuf. */
static pid_t start(const char *script, const char *a1, const char *a2, const char *a3,
		   const char *a4, char *pidbuf, size_t cap)
{
	const char *args[] = { AS_NOBODY, "/usr/bin/python3.11", test_target_path(script), a1, a2,
			       a3, a4, NULL };
	char ready[64];
	pid_t pid;

	cr_assert_eq(geteuid(), 0, "run as root: the targets run as nobody");
	pid = test_start(&nobody_python, args, ready, sizeof(ready));
	cr_assert_str_eq(ready, "ready", "%s did not start: '%s'", script, ready);
	snprintf(pidbuf, cap, "%d", (int)pid);
	return pid;
}

static unsigned int count_lines(const char *s, const char *needle)
{
	unsigned int n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

TestSuite(bounds, .timeout = 60);

/*
 * The attack: 60000 maps of one 3984-character path, 243 MB of
 * /proc/PID/maps.  dump read it whole and kept every copy of the path:
 * 883 MB and 3.3 s of CPU (plain: 477 MB, 3.0 s).  Now the text is read
 * up to its 16 MiB bound and the process is refused, in one line: 11 MB,
 * 0.2 s (plain: 9 MB, 0.2 s).
 */
Test(bounds, maps_one_long_path_60000_times)
{
	char *dir = nobody_dir(), sub[256], pidbuf[32];
	pid_t pid;
	struct cost c;

	snprintf(sub, sizeof(sub), "%s/t", dir);
	pid = start("longmaps.py", sub, "60000", "1", NULL, pidbuf, sizeof(pidbuf));
	{
		const char *args[] = { "dump", "--pid", pidbuf, NULL };

		c = measure(args);
	}
	test_stop(pid);
	remove_dir(dir);
	cr_log_info("dump of 243 MB of maps: status %d, %ld KB, %.2f s CPU", c.status, c.kb,
		    c.cpu);
	cr_assert_eq(c.status, EXIT_FAIL, "status %d: %s", c.status, c.err);
	cr_assert(strstr(c.err, "pyrospy: error: the memory maps of process ") &&
		  strstr(c.err, "are past pyrospy's bounds\nhint: "), "%s", c.err);
	cr_assert_eq(count_lines(c.err, "\n"), 2, "one error and its hint: %s", c.err);
	cr_assert_lt(c.kb, 64 * 1024, "peak RSS %ld KB", c.kb);
	cr_assert_lt(c.cpu, 2.0, "%.2f s CPU", c.cpu);
	cost_free(&c);
}

/*
 * 34000 maps of one 400-character path, 16 MB of maps, just under the
 * bound: dumped, the path kept once.  The text held whole and 34000
 * copies of the path took 74 MB (plain: 33 MB); now 19 MB (plain: 10).
 * Judged over the dump of the same program with one such map: what the
 * sanitizers' runtime holds alone is not the same on every machine (the
 * one-map dump took 28 MB on one where the dump of 34000 took 34 MB, and
 * failed the old bound of 24; plain: 10 MB and 10 MB).
 */
Test(bounds, maps_one_path_kept_once)
{
	char *dir = nobody_dir(), sub[256], pidbuf[32];
	const char *args[] = { "dump", "--pid", pidbuf, NULL };
	pid_t pid;
	struct cost c, base;

	snprintf(sub, sizeof(sub), "%s/b", dir);
	pid = start("longmaps.py", sub, "1", "1", "400", pidbuf, sizeof(pidbuf));
	base = measure(args);
	test_stop(pid);
	cr_assert_eq(base.status, 0, "status %d: %s", base.status, base.err);
	snprintf(sub, sizeof(sub), "%s/t", dir);
	pid = start("longmaps.py", sub, "34000", "1", "400", pidbuf, sizeof(pidbuf));
	c = measure(args);
	test_stop(pid);
	remove_dir(dir);
	cr_log_info("dump of 16 MB of maps: status %d, %ld KB (one map: %ld KB), %.2f s CPU",
		    c.status, c.kb, base.kb, c.cpu);
	cr_assert_eq(c.status, 0, "status %d: %s", c.status, c.err);
	cr_assert(strstr(c.out, "main (") && strstr(c.out, "longmaps.py:"), "%s", c.out);
	cr_assert_lt(c.kb, base.kb + 14 * 1024, "peak RSS %ld KB, %ld KB with one map", c.kb,
		     base.kb);
	cr_assert_lt(c.cpu, 1.5, "%.2f s CPU", c.cpu);
	cost_free(&base);
	cost_free(&c);
}

/*
 * record --subprocesses of a process with six children of 243 MB of
 * maps each, five keeping 15.5 MB of distinct paths each, and one busy
 * child.  The six are refused by the bound on the text, the fifth of the
 * five by the bound on all processes' maps (64 MiB: four fit), each said
 * once, and the busy child is sampled on.  Before, the refused were read
 * again every second: 1 sample of the busy child, 2.6 GB and 21 s of CPU
 * (plain: 1.67 GB, 19 s); now 545 samples, 120 MB, 2.3 s (plain: 532,
 * 68 MB, 2.2 s).
 * Reading the maps once costs about 1.5 s of CPU; the samples are asked
 * for at least a tenth of the rate only, as a loaded machine (the test
 * suite's own) may not give pyrospy more.
 */
Test(bounds, maps_subprocesses, .timeout = 120)
{
	char *dir = nobody_dir(), pidbuf[32];
	pid_t pid = start("longmaps_family.py", dir, NULL, NULL, NULL, pidbuf, sizeof(pidbuf));
	const char *args[] = { "record", "--pid", pidbuf, "--subprocesses", "-d", "12", "-r", "100",
			       "--function", "-f", "folded", "-o", "-", NULL };
	struct cost c = measure(args);
	unsigned long busy;

	test_stop(pid);
	remove_dir(dir);
	busy = test_folded_count(c.out, "normal_work");
	cr_log_info("record --subprocesses, 12 s at 100 Hz: status %d, %ld KB, %.2f s CPU, "
		    "%lu samples of the busy child", c.status, c.kb, c.cpu, busy);
	cr_assert_eq(c.status, 0, "status %d: %s", c.status, c.err);
	cr_assert_eq(count_lines(c.err, "its memory maps are past pyrospy's bounds\n"), 7, "%s",
		     c.err);
	cr_assert_geq(busy, 12 * 100 / 10, "%lu samples of the busy child: %s", busy, c.err);
	cr_assert_lt(c.kb, 192 * 1024, "peak RSS %ld KB", c.kb);
	cr_assert_lt(c.cpu, 6.0, "%.2f s CPU", c.cpu);
	cost_free(&c);
}

/*
 * A profile past --max-memory: a target making a new stack every sample
 * for 10 s (script, sampled at rate Hz) ends with [other] frames and the
 * warning, and pyrospy stays under kb and 8 s of CPU.
 */
static void churn(const char *script, const char *rate, const char *max, long kb,
		  const char *before)
{
	char pidbuf[32];
	pid_t pid = start(script, NULL, NULL, NULL, NULL, pidbuf, sizeof(pidbuf));
	const char *args[] = { "record", "--pid", pidbuf, "-d", "10", "-r", rate, "--idle",
			       "--threads", "--max-memory", max, "-f", "folded", "-o", "-", NULL };
	struct cost c = measure(args);
	unsigned long other;

	test_stop(pid);
	other = test_folded_count(c.out, "[other]");
	cr_log_info("%s, --max-memory %s: status %d, %ld KB, %.2f s CPU, %lu samples in [other] "
		    "(before: %s)", script, max, c.status, c.kb, c.cpu, other, before);
	cr_assert_eq(c.status, 0, "status %d: %s", c.status, c.err);
	cr_assert_gt(other, 0, "no [other] frame: %s", c.err);
	cr_assert(strstr(c.err, "pyrospy: warning: the profile reached --max-memory "),
		  "%s", c.err);
	cr_assert_lt(c.kb, kb, "peak RSS %ld KB", c.kb);
	cr_assert_lt(c.cpu, 8.0, "%.2f s CPU", c.cpu);
	cost_free(&c);
}

/*
 * Threads named afresh with 4000 random characters, eight at a time, each
 * gone after a few ms: nearly every sample at 1000 Hz is of a thread (and
 * so a stack) not seen before.  Names are read again only every 100
 * samples of a thread and cut to 60 bytes, so the profile grows slowly
 * even unbounded (24 MB, plain 10 MB, in 10 s): here it fills 1M.
 */
Test(bounds, profile_thread_name_churn)
{
	churn("namechurn.py", "1000", "1M", 40 * 1024, "24 MB, plain 10 MB, unbounded");
}

/* Random recursion up to 4000 deep: a new stack every sample. */
Test(bounds, profile_deep_random_recursion)
{
	churn("deeprandom.py", "100", "2M", 64 * 1024, "217 MB, plain 182 MB, unbounded");
}

/*
 * serve: the profiles of the requests it answers at once share
 * --max-memory (each of at most 16 a sixteenth).  A request of 8 s of the
 * random recursion, under 16M, gets [other] frames, and serve stays small
 * (21 MB; with --max-memory 64G, 125 MB, as its window grew as record's).
 */
Test(bounds, serve_profile_share)
{
	char pidbuf[32], port[16], url[128], file[] = "/tmp/pyrospy-serve-bound-XXXXXX";
	pid_t pid = start("deeprandom.py", NULL, NULL, NULL, NULL, pidbuf, sizeof(pidbuf));
	char listen[64];
	const char *args[] = { "serve", "--pid", pidbuf, "--listen", listen, "-d", "11", "-r", "100",
			       "--idle", "--max-memory", "16M", NULL };
	struct cost c;
	pid_t fetch;
	int fd = mkstemp(file), st;
	unsigned long other;
	char *out;

	cr_assert_geq(fd, 0);
	close(fd);
	/* a port of its own: the fetcher must know it before serve says it */
	snprintf(port, sizeof(port), "%d", 20000 + (int)(getpid() % 20000));
	snprintf(listen, sizeof(listen), "127.0.0.1:%s", port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%s/debug/pprof/profile?seconds=8", port);
	fetch = fork();
	cr_assert_geq(fetch, 0);
	if (fetch == 0) {
		sleep(1);
		execlp("curl", "curl", "-sf", "--retry", "5", "--retry-connrefused", "-o", file, url,
		       (char *)NULL);
		_exit(127);
	}
	c = measure(args);
	cr_assert_eq(waitpid(fetch, &st, 0), fetch);
	test_stop(pid);
	cr_log_info("serve --max-memory 16M: status %d, %ld KB, %.2f s CPU", c.status, c.kb, c.cpu);
	cr_assert_eq(c.status, 0, "status %d: %s", c.status, c.err);
	cr_assert(WIFEXITED(st) && !WEXITSTATUS(st), "curl %s: %d", url, st);
	snprintf(url, sizeof(url), "zcat '%s' | grep -a -c '\\[other\\]'", file);
	out = test_run(url, &st);
	other = strtoul(out, NULL, 10);
	cr_assert_gt(other, 0, "no [other] frame in the served profile");
	cr_assert_lt(c.kb, 64 * 1024, "peak RSS %ld KB", c.kb);
	cr_assert_lt(c.cpu, 8.0, "%.2f s CPU", c.cpu);
	free(out);
	unlink(file);
	cost_free(&c);
}

/* --max-memory takes 1M to 64G, with K, M or G, and nothing else. */
Test(bounds, max_memory_values)
{
	static const char *const bad[] = { "0", "1023K", "65G", "12X", "-1M", "", "M", "1.5M" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		const char *args[] = { "record", "--pid", "1", "--max-memory", bad[i], NULL };
		char *out, *err;
		int st = test_pyrospy(args, &out, &err);

		cr_assert_eq(st, EXIT_USAGE, "--max-memory '%s': status %d", bad[i], st);
		cr_assert(strstr(err, "invalid size") && strstr(err, "want 1M to 64G"), "%s", err);
		free(out);
		free(err);
	}
}

/*
 * The bound itself, on the library: random stacks, names and threads
 * into a profile of 256 KiB.  It never holds more (its own count and
 * profile_footprint() agree), every sample is counted once, in its own
 * stack or in [other], and a stack seen before it filled keeps counting
 * in its own node.
 */
Test(bounds, profile_holds_at_most_max_bytes)
{
	static struct stack st;
	static char names[64][32];
	struct profile p;
	uint64_t seed = 42, added = 0, first;
	const size_t max = 256 << 10;

	for (size_t i = 0; i < 64; i++)
		snprintf(names[i], sizeof(names[i]), "func_%zu", i);
	profile_init(&p);
	p.max_bytes = max;
	st.pid = st.tid = 7;
	st.depth = 3;
	for (unsigned int i = 0; i < 3; i++)
		st.frame[i] = (struct stack_frame){ names[i], "app.py", (int)i + 1 };
	profile_add(&p, NULL, &st, 5);
	first = p.node[p.nnode - 1].self;
	cr_assert_eq(first, 5);
	for (int n = 0; n < 20000; n++) {
		char thread[32];

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		st.depth = 1 + (unsigned int)(seed >> 33) % 200;
		for (unsigned int i = 0; i < st.depth; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			st.frame[i] = (struct stack_frame){ names[(seed >> 40) % 64], "app.py",
							    (int)(seed >> 56) };
		}
		snprintf(thread, sizeof(thread), "t%d", n % 300);
		st.thread_name = thread;
		st.tid = 100 + n % 300;
		profile_add(&p, NULL, &st, 1);
		added++;
		cr_assert_leq(p.bytes, max, "%zu bytes after %d stacks", p.bytes, n);
	}
	cr_assert_eq(p.bytes, profile_footprint(&p));
	cr_assert_gt(p.other, 0);
	cr_assert_eq(p.total, added + 5);
	cr_assert_eq(p.node[0].total, p.total);
	/* the first stack again, after the profile filled: its own node */
	st.pid = st.tid = 7;
	st.thread_name = NULL;
	st.depth = 3;
	for (unsigned int i = 0; i < 3; i++)
		st.frame[i] = (struct stack_frame){ names[i], "app.py", (int)i + 1 };
	{
		uint64_t other = p.other;

		profile_add(&p, NULL, &st, 1);
		cr_assert_eq(p.other, other, "a stack seen before went to [other]");
	}
	cr_log_info("256 KiB profile: %u nodes, %llu of %llu samples in [other]", p.nnode,
		    (unsigned long long)p.other, (unsigned long long)p.total);
	profile_release(&p);
}

/*
 * The maps' bounds, on the library: one long path named by many maps is
 * kept once, distinct paths past what one process may keep are refused,
 * and what all keep comes back to what it was once released.
 */
Test(bounds, maps_paths_kept_once_and_counted)
{
	const size_t plen = 3900, lines = 4000, len = lines * (plen + 64);
	char *text = malloc(len), *path = malloc(plen + 1);
	size_t before = procmaps_total_held(), off = 0;
	struct procmaps m;

	memset(path, 'p', plen);
	path[0] = '/';
	path[plen] = '\0';
	for (size_t i = 0; i < lines; i++)
		off += (size_t)snprintf(text + off, len - off,
					"%zx-%zx r--s 00000000 fe:00 42 %s\n", 0x10000 + i * 0x2000,
					0x11000 + i * 0x2000, path);
	cr_assert_eq(procmaps_parse(&m, text, off), PERR_OK);
	cr_assert_eq(m.nr, lines);
	cr_assert_eq(m.npath, 1);
	cr_assert_eq(m.map[0].path, m.map[lines - 1].path, "two copies of one path");
	cr_assert_lt(m.held, lines * 64 + 2 * plen + 4096, "%zu bytes kept", m.held);
	cr_assert_eq(procmaps_total_held(), before + m.held);
	procmaps_release(&m);
	cr_assert_eq(procmaps_total_held(), before);

	/* 4000 distinct paths of 3900 bytes: 15.6 MB, under 16 MiB; 4400 are not */
	free(text);
	text = malloc(4400 * (plen + 64));
	off = 0;
	for (size_t i = 0; i < 4400; i++) {
		snprintf(path + 1, 9, "%08zu", i);
		path[9] = 'p';
		off += (size_t)snprintf(text + off, 4400 * (plen + 64) - off,
					"%zx-%zx r--s 00000000 fe:00 42 %s\n", 0x10000 + i * 0x2000,
					0x11000 + i * 0x2000, path);
	}
	cr_assert_eq(procmaps_parse(&m, text, off), PERR_TOOBIG);
	cr_assert_eq(m.nr, 0);
	cr_assert_eq(procmaps_total_held(), before);
	free(text);
	free(path);
}
