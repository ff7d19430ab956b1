/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"

/*
 * Frame labels against the interpreter's own: tests/targets/labels.rb
 * runs every kind of frame into a busy leaf, Object#spin, and writes each
 * stack spin() was called on as its backtrace labels it (3.4 style, see
 * the script).  Every sampled stack that ends in spin() must be one of
 * those, frame by frame; every one of those must be sampled.
 */

#define EXPECT_MAX 128

struct expect {
	char *stack[EXPECT_MAX];
	unsigned long seen[EXPECT_MAX];
	size_t n;
};

/*
 * The labels of a folded stack "name (file:line);..." root first, joined
 * by ';'.  A location is the last " (" of its frame: labels such as
 * "block (2 levels) in f" hold one too.
 */
static void labels_of(const char *stack, char *out, size_t cap)
{
	size_t o = 0;
	const char *p = stack;

	while (*p && o + 1 < cap) {
		const char *end = strchr(p, ';'), *loc = NULL;

		if (!end)
			end = p + strlen(p);
		for (const char *q = p; q + 1 < end; q++)
			if (q[0] == ' ' && q[1] == '(')
				loc = q;
		if (!loc)
			loc = end;
		if (o)
			out[o++] = ';';
		for (; p < loc && o + 1 < cap; p++)
			out[o++] = *p;
		p = *end ? end + 1 : end;
	}
	out[o] = '\0';
}

static void expect_read(struct expect *e, const char *path, const char *bin)
{
	char *buf = test_slurp(path), *save, *line;

	memset(e, 0, sizeof(*e));
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cr_assert(!strstr(line, "MISMATCH"), "%s: labels.rb's table of owners is wrong: %s",
			  bin, line);
		cr_assert_lt(e->n, EXPECT_MAX);
		e->stack[e->n++] = strdup(line);
	}
	free(buf);
	cr_assert_geq(e->n, 40, "%s: only %zu stacks recorded by labels.rb", bin, e->n);
}

ParameterizedTestParameters(labels, ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, labels, ruby, .timeout = 120)
{
	const struct interp *in = &test_rubies[*i];
	char dir[1024], hostdir[1024], path[1100], out[] = "/tmp/pyrospy-labels-out-XXXXXX";
	char ready[64], pidbuf[32], names[8192], cmd[1200], *o, *err, *folded, *save, *line;
	char *wrong = NULL;
	size_t wrong_len = 0;
	FILE *wf = open_memstream(&wrong, &wrong_len);
	const char *args[] = { test_target_for(in, "labels.rb"), dir, NULL };
	const char *rec[] = { "record", "--pid", pidbuf, "-f", "folded", "-o", out,
			      "-r", "200", "-d", "6", NULL };
	struct expect e;
	unsigned long spin = 0, bad = 0;
	pid_t pid;
	int st, fd;

	/* a directory for the script's files, in its chroot's /tmp */
	if (in->root)
		snprintf(hostdir, sizeof(hostdir), "%s/%s/tmp/pyrospy-labels-XXXXXX",
			 test_chroots(), in->root);
	else
		snprintf(hostdir, sizeof(hostdir), "/tmp/pyrospy-labels-XXXXXX");
	cr_assert(mkdtemp(hostdir), "cannot make %s", hostdir);
	snprintf(dir, sizeof(dir), "%s", in->root ? strstr(hostdir, "/tmp/pyrospy-labels-")
						  : hostdir);
	fd = mkstemp(out);
	cr_assert(fd >= 0);
	close(fd);

	pid = test_start(in, args, ready, sizeof(ready));
	cr_assert_str_eq(ready, "ready", "%s: %s", in->bin, ready);
	snprintf(path, sizeof(path), "%s/expect", hostdir);
	expect_read(&e, path, in->bin);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = test_pyrospy(rec, &o, &err);
	test_stop(pid);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", hostdir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	folded = test_slurp(out);
	unlink(out);

	for (line = strtok_r(folded, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');
		unsigned long count;
		size_t k;

		if (!sp)
			continue;
		*sp = '\0';
		count = strtoul(sp + 1, NULL, 10);
		labels_of(line, names, sizeof(names));
		if (strlen(names) < 12 || strcmp(names + strlen(names) - 12, ";Object#spin"))
			continue;
		spin += count;
		for (k = 0; k < e.n && strcmp(e.stack[k], names); k++)
			;
		if (k < e.n) {
			e.seen[k] += count;
			continue;
		}
		bad += count;
		fprintf(wf, "  %s (%lu)\n", names, count);
	}
	fclose(wf);
	cr_assert_gt(spin, 200, "%s: only %lu samples in spin()", in->bin, spin);
	cr_expect_eq(bad, 0, "%s: %lu of %lu samples in spin() on stacks Ruby does not show:\n%s",
		     in->bin, bad, spin, wrong);
	for (size_t k = 0; k < e.n; k++) {
		cr_expect_gt(e.seen[k], 0, "%s: never sampled: %s", in->bin, e.stack[k]);
		free(e.stack[k]);
	}
	free(wrong);
	free(folded);
	free(o);
	free(err);
}
