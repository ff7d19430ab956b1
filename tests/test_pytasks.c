/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "proc/target.h"

/*
 * dump --tasks against CPython's own reader of the same process: `pythonX
 * -m asyncio pstree PID' (3.14+, run in the target's chroot as root), for
 * tests/targets/asynctasks.py (gather, TaskGroup, nested tasks, an async
 * generator, an eager task factory, a task awaited by two others, a loop
 * in a second thread).  Both trees are cut into their root-to-leaf paths
 * ("T:task" and "C:function file:line" steps, outermost first), which must
 * be the same, path for path.  3.14's pstree walks the thread list from
 * the main thread on (interpreter threads_main, then next), so it misses
 * the tasks of threads started after it: there, pyrospy's tasks of the
 * other thread are checked to be there and left out of the comparison.
 */

/* The Python 3.minor of the matrix (the first listed: the default build). */
static const struct interp *py(unsigned int minor)
{
	for (size_t i = 0; i < test_npythons; i++)
		if (test_pythons[i].minor == minor)
			return &test_pythons[i];
	cr_assert_fail("no Python 3.%u in the test matrix", minor);
	return NULL;
}

/* The versions dump --tasks reads. */
static const unsigned int minors[] = { 9, 11, 13, 14, 15 };

/*
 * The pyenv builds every machine has, CI too (3.8, 3.10 and 3.12: no
 * Debian chroot of theirs), for the tasks tests only.
 */
static const struct interp pyenvs[] = {
	{ NULL, "/root/.pyenv/versions/3.8.18/bin/python3.8", TARGET_PYTHON, 3, 8 },
	{ NULL, "/root/.pyenv/versions/3.10.13/bin/python3.10", TARGET_PYTHON, 3, 10 },
	{ NULL, "/root/.pyenv/versions/3.12.1/bin/python3.12", TARGET_PYTHON, 3, 12 },
};

#define MAXPATHS	256
#define MAXDEPTH	64

/* Every string of one comparison, freed at once. */
static char pool[1 << 20];
static size_t pooled;

static char *pool_alloc(size_t n)
{
	char *p = pool + pooled;

	cr_assert_lt(pooled + n, sizeof(pool));
	pooled += n;
	memset(p, 0, n);
	return p;
}

struct paths {
	char *path[MAXPATHS];
	size_t n;
};

static void add_path(struct paths *ps, char *const *step, int n)
{
	size_t len = 1;
	char *p;

	for (int i = 0; i < n; i++)
		len += strlen(step[i]) + 3;
	p = pool_alloc(len);
	for (int i = 0; i < n; i++) {
		strcat(p, step[i]);
		if (i + 1 < n)
			strcat(p, " > ");
	}
	cr_assert_lt(ps->n, MAXPATHS);
	ps->path[ps->n++] = p;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * pstree's lines: ("│   " | "    ")* ("└── " | "├── ") label, a task's
 * label "(T) name", a coroutine's " function file:line".
 */
static void pstree_paths(char *text, struct paths *ps)
{
	char *step[MAXDEPTH];
	int depth = -1, last = -1;
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *p = line;
		int d = 0;

		for (;;) {
			if (!strncmp(p, "\xe2\x94\x82   ", 6))	/* "│   " */
				p += 6;
			else if (!strncmp(p, "    ", 4))
				p += 4;
			else
				break;
			d++;
		}
		cr_assert(!strncmp(p, "\xe2\x94\x94\xe2\x94\x80\xe2\x94\x80 ", 10) ||
			  !strncmp(p, "\xe2\x94\x9c\xe2\x94\x80\xe2\x94\x80 ", 10),
			  "pstree line: %s", line);
		p += 10;
		cr_assert_lt(d, MAXDEPTH);
		if (d <= last)
			add_path(ps, step, last + 1);	/* the one before was a leaf */
		if (!strncmp(p, "(T) ", 4)) {
			step[d] = pool_alloc(strlen(p) + 3);
			sprintf(step[d], "T:%s", p + 4);
		} else {
			cr_assert_eq(*p, ' ', "pstree line: %s", line);
			step[d] = pool_alloc(strlen(p) + 3);
			sprintf(step[d], "C:%s", p + 1);
		}
		last = d;
		depth = d;
	}
	if (last >= 0)
		add_path(ps, step, last + 1);
	(void)depth;
}

struct walk {
	char *task[MAXDEPTH], *frames[MAXDEPTH][32];
	int nframes[MAXDEPTH], depth, leaf, skip;
};

/* The path down to the task at w->depth, if it was a leaf (no task under it). */
static void emit(struct walk *w, struct paths *ps)
{
	char *steps[MAXDEPTH * 33];
	int n = 0;

	if (w->depth < 0 || !w->leaf || w->skip)
		return;
	for (int i = 0; i <= w->depth; i++) {
		steps[n++] = w->task[i];
		for (int j = w->nframes[i]; j-- > 0;)
			steps[n++] = w->frames[i][j];
	}
	add_path(ps, steps, n);
}

/*
 * pyrospy's: "Thread N: ..." headers, then tasks "  Task \"name\" (state)"
 * indented by 2 + 4 * depth, their frames "function (file:line)" 4 more,
 * innermost first.  The root tasks of threads other than keep_tid are
 * skipped (keep_tid 0: none is), and counted in *skipped.
 */
static void dump_paths(char *text, pid_t keep_tid, struct paths *ps, int *skipped)
{
	struct walk w = { .depth = -1 };
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int ind = (int)strspn(line, " ");
		const char *p = line + ind;

		if (!strncmp(line, "Thread ", 7) || !strncmp(line, "Tasks of", 8)) {
			emit(&w, ps);
			w.depth = -1;
			w.leaf = 0;
			w.skip = keep_tid && atoi(line + 7) != keep_tid;
		} else if (!strncmp(p, "Task \"", 6)) {
			int d = (ind - 2) / 4;
			const char *e = strrchr(p, '"');

			cr_assert(ind >= 2 && (ind - 2) % 4 == 0 && d < MAXDEPTH, "line: %s", line);
			if (d <= w.depth)
				emit(&w, ps);
			if (w.skip && d == 0)
				(*skipped)++;
			w.task[d] = pool_alloc(strlen(p) + 3);
			sprintf(w.task[d], "T:%.*s", (int)(e - p - 6), p + 6);
			w.nframes[d] = 0;
			w.depth = d;
			w.leaf = 1;
		} else if (w.depth >= 0 && ind == 2 + 4 * w.depth + 4) {
			/* "function (file:line)" -> "C:function file:line" */
			const char *open = strrchr(p, '(');
			char *s;

			cr_assert_not_null(open, "line: %s", line);
			cr_assert_lt(w.nframes[w.depth], 32);
			s = pool_alloc(strlen(p) + 3);
			sprintf(s, "C:%.*s %.*s", (int)(open - p - 1), p,
				(int)(strlen(open) - 2), open + 1);
			w.frames[w.depth][w.nframes[w.depth]++] = s;
		}
	}
	emit(&w, ps);
}

static void compare_with_pstree(const struct interp *in)
{
	char ready[256], pidbuf[32], cmd[512], *out, *err, *tree, *mine;
	const char *args[] = { "dump", "--tasks", "--pid", pidbuf, NULL };
	const char *sargs[] = { test_target_for(in, "asynctasks.py"), NULL };
	struct paths want = { 0 }, got = { 0 };
	int st, skipped = 0;
	pid_t pid;

	pooled = 0;
	pid = test_start(in, sargs, ready, sizeof(ready));
	cr_assert(!strncmp(ready, "ready", 5), "target: %s", ready);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	/*
	 * pstree reads /proc/PID/maps, whose paths are the target's files only
	 * from the chroot's own root in this mount namespace: /proc mounted
	 * there (provision-chroots unmounts it before it rebuilds a root)
	 */
	snprintf(cmd, sizeof(cmd),
		 "R=%s/%s; { mountpoint -q \"$R/proc\" || mount -t proc proc \"$R/proc\"; } && "
		 "chroot \"$R\" %s -m asyncio pstree %d",
		 test_chroots(), in->root, in->bin, (int)pid);
	tree = test_run(cmd, &st);
	cr_assert_eq(st, 0, "%s: exit %d", cmd, st);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: dump --tasks: exit %d: %s", in->bin, st, err);
	cr_log_info("%s", out);
	cr_assert(strstr(out, ": 17 asyncio tasks\n"), "%s: %s", in->bin, out);
	/* the task awaited by two shows under each; the other loop's tasks are there */
	cr_assert(strstr(out, "Task \"thread-idle\" (pending)"), "%s: %s", in->bin, out);
	pstree_paths(tree, &want);
	mine = strdup(out);
	dump_paths(mine, in->minor == 14 ? pid : 0, &got, &skipped);
	if (in->minor == 14)
		cr_assert_eq(skipped, 1, "%s: the other thread's root task: %s", in->bin, out);
	qsort(want.path, want.n, sizeof(char *), cmp_str);
	qsort(got.path, got.n, sizeof(char *), cmp_str);
	cr_assert_geq(want.n, 9, "%s: pstree: %zu paths", in->bin, want.n);
	for (size_t i = 0; i < want.n || i < got.n; i++)
		cr_assert(i < want.n && i < got.n && !strcmp(want.path[i], got.path[i]),
			  "%s: path %zu:\n  pstree:  %s\n  pyrospy: %s", in->bin, i,
			  i < want.n ? want.path[i] : "(none)", i < got.n ? got.path[i] : "(none)");
	free(mine);
	free(tree);
	free(out);
	free(err);
}

Test(pytasks, pstree_3_14, .timeout = 60)
{
	compare_with_pstree(py(14));
}

Test(pytasks, pstree_3_15, .timeout = 60)
{
	compare_with_pstree(py(15));
}

/*
 * Who awaits whom in dump --tasks: a task under another at one depth less
 * is awaited by it.  parent[i] of child[i], both names.
 */
struct links {
	const char *child[MAXPATHS], *parent[MAXPATHS];
	size_t n;
};

/* "<by:A,B>": the names awaiting name, sorted, each once (pool). */
static char *awaiters_of(const struct links *l, const char *name)
{
	const char *by[MAXPATHS];
	size_t n = 0, len = 8;
	char *out;

	for (size_t i = 0; i < l->n; i++) {
		size_t j = 0;

		if (strcmp(l->child[i], name))
			continue;
		while (j < n && strcmp(by[j], l->parent[i]))
			j++;
		if (j == n) {
			by[n++] = l->parent[i];
			len += strlen(l->parent[i]) + 1;
		}
	}
	qsort(by, n, sizeof(*by), cmp_str);
	out = pool_alloc(len);
	strcpy(out, "<by:");
	for (size_t i = 0; i < n; i++) {
		if (i)
			strcat(out, ",");
		strcat(out, by[i]);
	}
	strcat(out, ">");
	return out;
}

/*
 * 3.9, 3.11, 3.13: what the program's own asyncio.all_tasks() and
 * Task.get_stack() say (tests/targets/asynctasks.py writes it to a file
 * once every loop is idle), task for task: name, the tasks awaiting it
 * (as its own objects say: a task's _fut_waiter, gather()'s children, a
 * TaskGroup's tasks), the thread running its loop (dump's "Thread TID:"
 * over it), function, file, line.
 */
static void compare_with_own_view(const struct interp *in)
{
	char ready[256], pidbuf[32], inside[128], host[512], *out, *err, *want, *line, *save = NULL;
	const char *args[] = { "dump", "--tasks", "--pid", pidbuf, NULL };
	const char *sargs[] = { test_target_for(in, "asynctasks.py"), "0", inside, NULL };
	struct paths got = { 0 };
	static struct links links;
	const char *up[MAXDEPTH] = { NULL };
	char *task = NULL, thread[32] = "<thread:?>";
	int task_ind = 0;
	size_t len = 0;
	int st;
	pid_t pid;

	pooled = 0;
	snprintf(inside, sizeof(inside), "/tmp/pyrospy-tasks-%d.txt", (int)getpid());
	if (in->root)
		snprintf(host, sizeof(host), "%s/%s%s", test_chroots(), in->root, inside);
	else
		snprintf(host, sizeof(host), "%s", inside);
	unlink(host);
	pid = test_start(in, sargs, ready, sizeof(ready));
	for (int i = 0; i < 100 && access(host, F_OK); i++)
		usleep(50 * 1000);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	want = test_slurp(host);
	unlink(host);
	cr_assert_eq(st, 0, "%s: dump --tasks: exit %d: %s", in->bin, st, err);
	cr_log_info("%s", out);
	/*
	 * "  Task \"name\" (pending)" then its frames "function (file:line)",
	 * innermost first, 4 columns further in: one line per task, name,
	 * thread, then the frames outermost first.
	 */
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int ind = (int)strspn(line, " ");
		const char *p = line + ind;
		const char *open = strrchr(p, '('), *colon = strrchr(p, ':');
		char *s, *t;

		if (!strncmp(line, "Thread ", 7)) {
			snprintf(thread, sizeof(thread), "<thread:%d>", atoi(line + 7));
			continue;
		}
		if (!strncmp(line, "Tasks of", 8)) {
			snprintf(thread, sizeof(thread), "<thread:none>");
			continue;
		}
		if (!strncmp(p, "Task \"", 6)) {
			int d = (ind - 2) / 4;

			task = pool_alloc(strlen(p) + 8192);
			snprintf(task, strlen(p), "%.*s", (int)(strrchr(p, '"') - p - 6), p + 6);
			/* the thread right after the name: the frames go after it */
			strcat(task, "\t");
			strcat(task, thread);
			task_ind = ind;
			cr_assert_lt(got.n, MAXPATHS);
			cr_assert(d >= 0 && d < MAXDEPTH, "line: %s", line);
			got.path[got.n++] = task;
			up[d] = pool_alloc(strlen(task) + 1);
			snprintf((char *)up[d], strlen(task) + 1, "%.*s", (int)strcspn(task, "\t"), task);
			if (d > 0 && up[d - 1]) {
				cr_assert_lt(links.n, MAXPATHS);
				links.child[links.n] = up[d];
				links.parent[links.n++] = up[d - 1];
			}
			continue;
		}
		if (!task || ind != task_ind + 4 || !open || !colon || colon < open)
			continue;
		/* the frame goes between the name and thread and the frames already there */
		s = strchr(strchr(task, '\t') + 1, '\t');
		t = pool_alloc(strlen(task) + strlen(p) + 8);
		sprintf(t, "\t%.*s\t%.*s\t%.*s%s", (int)(open - p - 1), p, (int)(colon - open - 1),
			open + 1, (int)(strlen(colon) - 2), colon + 1, s ? s : "");
		cr_assert_lt(strlen(task) + strlen(t), strlen(task) + 8192 - 1);
		strcpy(s ? s : task + strlen(task), t);
	}
	/* the name, then who awaits it, then its thread and the frames */
	for (size_t i = 0; i < got.n; i++) {
		char *tab = strchr(got.path[i], '\t'), *by, *line2;

		cr_assert_not_null(tab);
		*tab = '\0';
		by = awaiters_of(&links, got.path[i]);
		line2 = pool_alloc(strlen(got.path[i]) + strlen(by) + strlen(tab + 1) + 4);
		sprintf(line2, "%s\t%s\t%s", got.path[i], by, tab + 1);
		got.path[i] = line2;
	}
	links.n = 0;
	qsort(got.path, got.n, sizeof(char *), cmp_str);
	/* a task awaited by two shows under each: once here, as in all_tasks() */
	{
		size_t j = 0;

		for (size_t i = 0; i < got.n; i++)
			if (!j || strcmp(got.path[i], got.path[j - 1]))
				got.path[j++] = got.path[i];
		got.n = j;
	}
	for (size_t i = 0; i < got.n; i++)
		len += strlen(got.path[i]) + 1;
	{
		char *mine = pool_alloc(len + 1);

		for (size_t i = 0; i < got.n; i++) {
			strcat(mine, got.path[i]);
			strcat(mine, "\n");
		}
		cr_assert_gt(got.n, 10, "%s: %s", in->bin, mine);
		cr_assert_str_eq(mine, want, "%s: pyrospy:\n%s\nthe program itself:\n%s", in->bin,
				 mine, want);
	}
	free(want);
	free(out);
	free(err);
}

Test(pytasks, own_view_3_9, .timeout = 60)
{
	compare_with_own_view(py(9));
}

Test(pytasks, own_view_3_11, .timeout = 60)
{
	compare_with_own_view(py(11));
}

Test(pytasks, own_view_3_13, .timeout = 60)
{
	compare_with_own_view(py(13));
}

/* pyenv's builds: the versions of no Debian chroot */
Test(pytasks, own_view_3_8, .timeout = 60)
{
	compare_with_own_view(&pyenvs[0]);
}

Test(pytasks, own_view_3_10, .timeout = 60)
{
	compare_with_own_view(&pyenvs[1]);
}

Test(pytasks, own_view_3_12, .timeout = 60)
{
	compare_with_own_view(&pyenvs[2]);
}

/* the free-threaded build: every object's fields 16 bytes further */
Test(pytasks, own_view_3_13t, .timeout = 60)
{
	compare_with_own_view(&test_pythons_ft[0]);
}

/*
 * Tasks finishing while read, on every Python of the matrix
 * (tests/targets/asyncchurn.py: 50 tasks started
 * at a time, each ending two awaits later, beside 20 idle ones): every
 * dump is a whole tree, or the part that stayed the same under two reads
 * with a line saying how many tasks it leaves out, or says it could not
 * get one; never a torn one.
 * Whole: the header counts the task lines; the 20 idle tasks are all
 * there, each waiting in Event.wait under idle; every other task is the
 * spawner, main's or a churn task, its frames the program's own (3.9's
 * asyncio.create_task() names a task after making it: for a moment it has
 * the default "Task-N").
 */
/* Does s start with one of the prefixes of the NULL-ended list? */
static int starts_any(const char *s, const char *const *prefix)
{
	for (; *prefix; prefix++)
		if (!strncmp(s, *prefix, strlen(*prefix)))
			return 1;
	return 0;
}

/*
 * One dump --tasks of a tree beside 20 idle tasks, checked: the header
 * counts the task lines; each task's name and each frame is one of the
 * program's (names, frames: prefixes); the 20 idle tasks are there, each
 * waiting in Event.wait under idle (3.9 names functions without their
 * class); a tree in part says how many it left out.  The tasks read and
 * the number left out (0: the tree is whole).
 */
static unsigned int check_tree(const struct interp *in, char *out, const char *const *names,
			       const char *const *frames, unsigned int *hidden)
{
	unsigned int n = 0, tasks = 0, idles = 0;
	char *line, *save = NULL, *prev = NULL;

	*hidden = 0;
	cr_assert(sscanf(out, "Process %*d (%*[^)]): %u asyncio task", &n) == 1, "%s", out);
	for (line = strtok_r(out, "\n", &save); line; prev = line, line = strtok_r(NULL, "\n", &save)) {
		const char *p = line + strspn(line, " ");
		char name[64] = "";

		if (!strncmp(line, "Process ", 8) || !strncmp(line, "Thread ", 7) ||
		    !strncmp(line, "Tasks of every thread: ", 23))
			continue;
		if (!strncmp(line, "[not shown: ", 12)) {
			cr_assert(sscanf(line, "[not shown: %u task", hidden) == 1 && *hidden > 0 &&
				  strstr(line, " that started, ended or changed under each of 50 reads,"
					 " and the tasks only they await]"), "%s: %s", in->bin, line);
			continue;
		}
		if (!strncmp(p, "Task \"", 6)) {
			tasks++;
			cr_assert(sscanf(p, "Task \"%63[^\"]\" (pending)", name) == 1 &&
				  starts_any(name, names), "%s: task line: %s", in->bin, line);
			continue;
		}
		cr_assert(starts_any(p, frames), "%s: frame line: %s", in->bin, line);
		if (!strncmp(p, "idle (", 6)) {
			cr_assert(prev && strstr(prev, "wait ("), "%s: %s", in->bin, line);
			cr_assert_eq(strspn(line, " "), 10, "%s: not under main: %s", in->bin, line);
			idles++;
		}
	}
	cr_assert_eq(tasks, n, "%s: %u task lines, header says %u", in->bin, tasks, n);
	cr_assert_eq(idles, 20, "%s: %u idle tasks", in->bin, idles);
	return n;
}

static void churn(const struct interp *in)
{
	char ready[256], pidbuf[32], *out, *err;
	const char *args[] = { "dump", "--tasks", "--pid", pidbuf, NULL };
	const char *sargs[] = { test_target_for(in, "asyncchurn.py"), NULL };
	static const char *const names[] = { "idle-", "churn-", "spawner", "Task-", NULL };
	static const char *const frames[] = { "churn (", "sleep (", "spawner (", "main (",
					      "Event.wait (", "wait (", "idle (", NULL };
	unsigned int whole = 0, partial = 0;
	pid_t pid;

	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	for (int run = 0; run < 30; run++) {
		unsigned int hidden;
		int st = test_pyrospy(args, &out, &err);

		if (st == 1 && strstr(err, "its tasks changed under every read")) {
			cr_assert_eq(*out, '\0', "%s: %s", in->bin, out);
			free(out);
			free(err);
			continue;
		}
		cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
		check_tree(in, out, names, frames, &hidden);
		if (hidden)
			partial++;
		else
			whole++;
		free(out);
		free(err);
	}
	test_stop(pid);
	cr_log_info("%s: %u whole trees, %u in part, of 30", in->bin, whole, partial);
	cr_assert_geq(whole + partial, 15, "%s: only %u dumps of 30 got a tree", in->bin,
		      whole + partial);
}

Test(pytasks, churn_3_9, .timeout = 120)
{
	churn(py(9));
}

Test(pytasks, churn_3_11, .timeout = 120)
{
	churn(py(11));
}

Test(pytasks, churn_3_13, .timeout = 120)
{
	churn(py(13));
}

Test(pytasks, churn_3_13t, .timeout = 120)
{
	churn(&test_pythons_ft[0]);
}

Test(pytasks, churn_3_14, .timeout = 120)
{
	churn(py(14));
}

Test(pytasks, churn_3_15, .timeout = 120)
{
	churn(py(15));
}

Test(pytasks, churn_pyenv, .timeout = 120)
{
	for (size_t i = 0; i < sizeof(pyenvs) / sizeof(pyenvs[0]); i++)
		churn(&pyenvs[i]);
}

/*
 * A loop that never rests: a task renames itself on every turn beside 20
 * idle ones (tests/targets/asyncrename.py), the target alone on one core
 * at a real-time priority, so that nothing else on the machine decides
 * whether it is running while pyrospy reads (the run of pytasks/churn_*
 * does: beside other work they read whole trees, alone on an idle machine
 * none).  Every dump answers: a whole tree, or what stayed the same under
 * two reads with a line saying how many tasks changed; never torn, never a
 * refusal.  The 20 idle tasks are always there, under main.
 */
static void renaming(const struct interp *in)
{
	char ready[256], pidbuf[32], *out, *err;
	const char *args[] = { "dump", "--tasks", "--pid", pidbuf, NULL };
	const char *sargs[] = { test_target_for(in, "asyncrename.py"), NULL };
	static const char *const names[] = { "idle-", "tick-", "Task-", NULL };
	static const char *const frames[] = { "ticker (", "sleep (", "main (", "Event.wait (",
					      "wait (", "idle (", NULL };
	struct sched_param rt = { .sched_priority = 1 }, normal = { 0 };
	unsigned int partial = 0, whole = 0;
	cpu_set_t one, mine, rest;
	pid_t pid;

	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	cr_assert_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
	CPU_ZERO(&one);
	CPU_ZERO(&rest);
	for (int c = 0, seen = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &mine) && !seen++)
			CPU_SET(c, &one);
		else if (CPU_ISSET(c, &mine))
			CPU_SET(c, &rest);
	cr_assert(CPU_COUNT(&rest) > 0, "needs two cores");
	cr_assert_eq(sched_setaffinity(pid, sizeof(one), &one), 0, "%s", strerror(errno));
	cr_assert_eq(sched_setscheduler(pid, SCHED_FIFO, &rt), 0, "%s", strerror(errno));
	cr_assert_eq(sched_setaffinity(0, sizeof(rest), &rest), 0);	/* pyrospy inherits it */
	for (int run = 0; run < 10; run++) {
		unsigned int n, hidden;
		int st = test_pyrospy(args, &out, &err);

		cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
		n = check_tree(in, out, names, frames, &hidden);
		cr_assert(hidden ? n == 21 : n == 22, "%s: %u tasks, %u not shown", in->bin, n, hidden);
		if (hidden)
			partial++;
		else
			whole++;
		free(out);
		free(err);
	}
	sched_setaffinity(0, sizeof(mine), &mine);
	sched_setscheduler(pid, SCHED_OTHER, &normal);
	test_stop(pid);
	cr_log_info("%s: %u whole trees, %u in part, of 10", in->bin, whole, partial);
	/* the real-time target ran through most reads: the path in part was taken */
	cr_assert_geq(partial, 1, "%s: no dump in part", in->bin);
}

Test(pytasks, renaming_3_11, .timeout = 60)
{
	renaming(py(11));
}

Test(pytasks, renaming_3_14, .timeout = 60)
{
	renaming(py(14));
}

Test(pytasks, renaming_pyenv_3_8, .timeout = 60)
{
	renaming(&pyenvs[0]);
}

/* status, stdout and stderr of dump --tasks on script run by in. */
static int dump_tasks_of(const struct interp *in, const char *script, char **out, char **err)
{
	char ready[256], pidbuf[32];
	const char *args[] = { "dump", "--tasks", "--pid", pidbuf, NULL };
	const char *sargs[] = { test_target_for(in, script), NULL };
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int st;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, out, err);
	test_stop(pid);
	return st;
}

/*
 * Nothing to show is said in one line, never as an empty tree: a program
 * that never imported asyncio (both readers: 3.11's registry, 3.14's
 * published offsets), and a Ruby process.
 */
Test(pytasks, nothing_to_show, .timeout = 60)
{
	const struct interp *in[2] = { py(11), py(14) };
	char *out, *err;
	int st;

	for (size_t i = 0; i < 2; i++) {
		st = dump_tasks_of(in[i], "noasyncio.py", &out, &err);
		cr_assert_eq(st, 1, "%s: exit %d: %s%s", in[i]->bin, st, out, err);
		cr_assert_eq(*out, '\0', "%s: %s", in[i]->bin, out);
		cr_assert(strstr(err, "the program has not imported asyncio\n"), "%s: %s",
			  in[i]->bin, err);
		free(out);
		free(err);
	}
	st = dump_tasks_of(&test_rubies[1], "deep.rb", &out, &err);
	cr_assert_eq(st, 6, "ruby: exit %d: %s%s", st, out, err);
	cr_assert_eq(*out, '\0', "ruby: %s", out);
	cr_assert(strstr(err, "--tasks reads Python's asyncio tasks"), "ruby: %s", err);
	free(out);
	free(err);
}

/*
 * 1000 idle tasks more (asynctasks.py 1000), on every Python of the
 * matrix: all of them, each waiting in idle.  (How long it takes is
 * measured by scripts/bench, not here.)
 */
Test(pytasks, thousand_tasks, .timeout = 120)
{
	for (size_t i = 0; i < sizeof(minors) / sizeof(minors[0]); i++) {
		const struct interp *in = py(minors[i]);
		const char *sargs[] = { test_target_for(in, "asynctasks.py"), "1000", NULL };
		const char *args[] = { "dump", "--tasks", "--pid", NULL, NULL };
		char ready[256], pidbuf[32], *out, *err, *p;
		unsigned int n = 0, idle = 0;
		pid_t pid;
		int st;

		pid = test_start(in, sargs, ready, sizeof(ready));
		snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
		args[3] = pidbuf;
		st = test_pyrospy(args, &out, &err);
		test_stop(pid);
		cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
		cr_assert(sscanf(out, "Process %*d (%*[^)]): %u asyncio task", &n) == 1, "%s", out);
		cr_assert_geq(n, 1012, "%s: %u tasks", in->bin, n);
		for (p = out; (p = strstr(p, "Task \"idle-")); p++) {
			/* its frames, before the next task: innermost first, idle last */
			const char *next = strstr(p + 1, "Task \""), *f = strstr(p, " idle (");

			cr_assert(f && (!next || f < next), "%s: %.200s", in->bin, p);
			idle++;
		}
		cr_assert_eq(idle, 1000, "%s: %u idle tasks", in->bin, idle);
		free(out);
		free(err);
	}
}

/*
 * --subprocesses: a shell whose children are a Python program without
 * asyncio and one with tasks: the tasks of the one, nothing of the other
 * (passed over in silence, as a child that is no interpreter is).
 */
Test(pytasks, subprocesses, .timeout = 60)
{
	const struct interp sh = { NULL, "sh", 0, 0, 0 };
	char cmd[2048], ready[256], pidbuf[32], *out, *err;
	const char *sargs[] = { "-c", cmd, NULL };
	const char *args[] = { "dump", "--tasks", "--subprocesses", "--pid", pidbuf, NULL };
	pid_t pid;
	int st;

	snprintf(cmd, sizeof(cmd), "%s %s >/dev/null & %s %s & wait", py(11)->bin,
		 test_target_path("noasyncio.py"), py(11)->bin,
		 test_target_path("asynctasks.py"));
	pid = test_start(&sh, sargs, ready, sizeof(ready));
	cr_assert(!strncmp(ready, "ready", 5), "%s", ready);
	usleep(300 * 1000);	/* noasyncio.py too */
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "exit %d: %s%s", st, out, err);
	cr_assert_eq(*err, '\0', "%s", err);
	cr_assert(strstr(out, ": 15 asyncio tasks\n"), "%s", out);
	cr_assert(strstr(out, "Task \"thread-idle\" (pending)"), "%s", out);
	cr_assert_null(strstr(out + 1, "\nProcess "), "%s", out);
	free(out);
	free(err);
}

/*
 * Hostile: awaited-by links that make cycles (tests/targets/asynccycle.py
 * writes them): every task is still shown, once at least, and the cycle
 * said, in bounded output.
 */
Test(pytasks, await_cycle, .timeout = 60)
{
	for (unsigned int minor = 14; minor <= 15; minor++) {
		char *out, *err;
		int st = dump_tasks_of(py(minor), "asynccycle.py", &out, &err);

		cr_assert_eq(st, 0, "%s: exit %d: %s", py(minor)->bin, st, err);
		cr_assert(strstr(out, ": 4 asyncio tasks\n"), "%s", out);
		cr_assert(strstr(out, "Task \"self\" (pending)"), "%s", out);
		cr_assert(strstr(out, "Task \"ping\" (pending)"), "%s", out);
		cr_assert(strstr(out, "Task \"pong\" (pending)"), "%s", out);
		cr_assert(strstr(out, "[awaits itself: a cycle]"), "%s", out);
		cr_assert_lt(strlen(out), 4096, "%s", out);
		free(out);
		free(err);
	}
}

/*
 * A linear chain of n tasks (tests/targets/asyncchain.py: "chain-n", the
 * main task, awaits "chain-n-1", ... down to "chain-1"), on every Python
 * of the matrix: a chain longer than the depth limit (64 tasks) is no
 * cycle.  The tree shows chain-n at the top and each next one a level
 * further in, each task once, none at the top but chain-n, no cycle mark,
 * and where it stops, one line saying how many tasks are left out and
 * why: with those shown, all n.
 */
static void long_chain(const struct interp *in, unsigned int n)
{
	char ready[256], pidbuf[32], count[16], *out, *err, *line, *save = NULL;
	const char *args[] = { "dump", "--tasks", "--pid", pidbuf, NULL };
	const char *sargs[] = { test_target_for(in, "asyncchain.py"), count, NULL };
	unsigned int tasks = 0, shown = 0, cuts = 0, left = 0, k, depth_limit = 0;
	unsigned char *seen = calloc(n + 1, 1);
	pid_t pid;
	int st;

	cr_assert_not_null(seen);
	snprintf(count, sizeof(count), "%u", n);
	pid = test_start(in, sargs, ready, sizeof(ready));
	cr_assert(!strncmp(ready, "ready", 5), "%s: target: %s", in->bin, ready);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert(sscanf(out, "Process %*d (%*[^)]): %u asyncio task", &tasks) == 1, "%s", out);
	cr_assert_eq(tasks, n, "%s: %u tasks, the chain has %u", in->bin, tasks, n);
	cr_assert_null(strstr(out, "a cycle"), "%s: a chain of %u called a cycle", in->bin, n);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int ind = (int)strspn(line, " ");
		const char *p = line + ind;

		if (!strncmp(p, "Task \"", 6)) {
			cr_assert(sscanf(p, "Task \"chain-%u\" (pending)", &k) == 1 && k >= 1 && k <= n,
				  "%s: task line: %s", in->bin, p);
			cr_assert(!seen[k], "%s: task chain-%u shown twice", in->bin, k);
			seen[k] = 1;
			/* chain-n at the top, each next one 4 columns further in */
			cr_assert_eq(ind, 2 + 4 * (int)(n - k), "%s: chain-%u at column %d",
				     in->bin, k, ind);
			shown++;
		} else if (!strncmp(p, "[... ", 5)) {
			cr_assert(sscanf(p, "[... %u more tasks it awaits not shown: depth limit %u]",
					 &left, &depth_limit) == 2, "%s: %s", in->bin, p);
			cuts++;
		}
	}
	cr_log_info("%s: chain of %u: %u shown, %u left out", in->bin, n, shown, left);
	cr_assert_eq(depth_limit, 64, "%s: depth limit %u", in->bin, depth_limit);
	cr_assert_eq(shown, 64, "%s: %u of %u tasks shown", in->bin, shown, n);
	cr_assert_eq(cuts, 1, "%s: %u cut lines", in->bin, cuts);
	cr_assert_eq(shown + left, n, "%s: %u shown and %u left out of %u", in->bin, shown, left, n);
	free(seen);
	free(out);
	free(err);
}

Test(pytasks, chain_of_70, .timeout = 60)
{
	for (size_t i = 0; i < sizeof(minors) / sizeof(minors[0]); i++)
		long_chain(py(minors[i]), 70);
	long_chain(&test_pythons_ft[0], 70);
	for (size_t i = 0; i < sizeof(pyenvs) / sizeof(pyenvs[0]); i++)
		long_chain(&pyenvs[i], 70);
}

Test(pytasks, chain_of_16385, .timeout = 120)
{
	for (size_t i = 0; i < sizeof(minors) / sizeof(minors[0]); i++)
		long_chain(py(minors[i]), 16385);
	long_chain(&test_pythons_ft[0], 16385);
	for (size_t i = 0; i < sizeof(pyenvs) / sizeof(pyenvs[0]); i++)
		long_chain(&pyenvs[i], 16385);
}

/*
 * dump --tasks PID by root, its stdout into *out (caller frees), its
 * status returned, its peak RSS (KB) and CPU time (s) from wait4().
 */
static int dump_measured(pid_t target, char **out, long *maxrss, double *cpu)
{
	const char *bin = getenv("PYROSPY");
	char pidbuf[32], opath[] = "/tmp/pyrospy-tasks-out-XXXXXX";
	struct rusage ru;
	int ofd, st;
	pid_t pid;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)target);
	ofd = mkstemp(opath);
	cr_assert_geq(ofd, 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(ofd, 1);
		execl(bin ? bin : BUILDDIR "/pyrospy", "pyrospy", "dump", "--tasks", "--pid", pidbuf,
		      (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(wait4(pid, &st, 0, &ru), pid);
	close(ofd);
	*out = test_slurp(opath);
	unlink(opath);
	*maxrss = ru.ru_maxrss;
	*cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Hostile, as the attacker makes it: a target of nobody's whose
 * awaited-by links (tests/targets/asyncladder.py) make a tree cut at the
 * depth limit 1024 times (a ladder of 10 rungs of two, 63 tasks down;
 * 9075 tasks with the main one),
 * each time above the same mesh of 30 layers of 300 tasks, each task
 * awaited by the 300 of the layer above (2.7 million links).  No cycle:
 * none is said (the code before called each path through the mesh a
 * cycle, 307200 times, in 1.37 GB and 3.5 s of CPU, sanitizer build).
 * Counting what each cut leaves out is capped: a few cuts say how many
 * (9000), the others only that they are cut; uncapped, the counts took
 * 5.3 s of CPU, capped 0.5 s (sanitizer build: 300 MB).
 */
Test(pytasks, cut_above_a_mesh, .timeout = 60)
{
	static const struct interp nobody = { "sid", "setpriv", TARGET_PYTHON, 3, 14 };
	const char *sargs[] = { "--reuid=nobody", "--regid=nogroup", "--clear-groups",
				"--pdeathsig=SIGKILL", py(14)->bin,
				test_target_for(py(14), "asyncladder.py"), "30", "300", NULL };
	unsigned int counted = 0, uncounted = 0, n = 0;
	char ready[256], *out, *p;
	long maxrss;
	double cpu;
	pid_t pid;
	int st;

	pid = test_start(&nobody, sargs, ready, sizeof(ready));
	cr_assert(!strncmp(ready, "ready", 5), "target: %s", ready);
	st = dump_measured(pid, &out, &maxrss, &cpu);
	test_stop(pid);
	cr_log_info("dump --tasks: %ld KB, %.2f s of CPU, %zu bytes", maxrss, cpu, strlen(out));
	cr_assert_eq(st, 0, "exit %d", st);
	cr_assert(sscanf(out, "Process %*d (%*[^)]): %u asyncio task", &n) == 1 && n == 9075,
		  "%.300s", out);
	cr_assert_null(strstr(out, "a cycle"), "a graph with no cycle called one");
	for (p = out; (p = strstr(p, "[... ")); p++)
		if (!strncmp(p, "[... 9000 more tasks it awaits not shown: depth limit 64]\n", 58))
			counted++;
		else if (!strncmp(p, "[... the tasks it awaits not shown: depth limit 64]\n", 52))
			uncounted++;
		else
			cr_assert_fail("cut line: %.80s", p);
	cr_log_info("%u cuts counted, %u not", counted, uncounted);
	cr_assert_eq(counted + uncounted, 1024, "%u cut lines", counted + uncounted);
	cr_assert(counted >= 1 && uncounted >= 1, "%u counted, %u not", counted, uncounted);
	cr_assert_lt(cpu, 2.5, "%.2f s of CPU", cpu);
	cr_assert_lt(maxrss, 800L * 1024, "%ld KB", maxrss);
	free(out);
}
