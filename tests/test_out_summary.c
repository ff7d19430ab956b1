/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/out.h"
#include "profile/profile.h"
#include "stack/stack.h"

static struct stack st;

/* names root first; a frame's line is its depth, or 7 for "rec" */
static void add(struct profile *p, const char *const *names, unsigned int depth, uint64_t n)
{
	memset(&st, 0, sizeof(st));
	st.tid = 1;
	st.depth = depth;
	for (unsigned int i = 0; i < depth; i++)
		st.frame[depth - 1 - i] = (struct stack_frame){
			names[i], "app.py", strcmp(names[i], "rec") ? (int)i + 1 : 7
		};
	profile_add(p, NULL, &st, n);
}

static char *write(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct out_meta meta = { .title = "pid 42", .duration = 2.0, .rate = 100 };

	cr_assert_eq(out_summary.write(f, p, &meta), 0);
	fclose(f);
	return buf;
}

/*
 * The header says what record knew: the interpreter, pid and time range,
 * the command line, then the ticks, late ones and drops in the words of the closing line.
 */
Test(summary, header_facts)
{
	const char *a[] = { "main", "work" };
	struct out_meta meta = { .title = "pid 4242", .duration = 2.0, .rate = 100,
				 .command = "python3 app.py",
				 .interp = "Python 3.11.2", .pid = 4242, .start = 1700000000.5,
				 .ticks = 203, .late = 3, .dropped = 2, .tags_dropped = 1 };
	static const char want[] =
		"pid 4242: 201 samples in 2.0 s at 100 Hz\n"
		"Python 3.11.2, pid 4242, 2023-11-14 22:13:20 to 22:13:22 UTC\n"
		"command: python3 app.py\n"
		"203 ticks (101.5 Hz of 100 asked, 3 late), 201 samples, 2 dropped (changed under "
		"every read), 1 without their tags (the tags changed under the read)\n\n"
		"  %self";
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct profile p;

	profile_init(&p);
	add(&p, a, 2, 201);
	cr_assert_eq(out_summary.write(f, &p, &meta), 0);
	fclose(f);
	cr_assert(!strncmp(buf, want, strlen(want)), "%s", buf);
	free(buf);
	profile_release(&p);
}

/* Self and total per function, sorted by self; recursion counted once. */
Test(summary, golden)
{
	const char *a[] = { "main", "foo", "work" };
	const char *b[] = { "main", "bar", "work" };
	const char *r[] = { "main", "rec", "rec" };
	struct profile p;
	char *s;

	profile_init(&p);
	add(&p, a, 3, 60);
	add(&p, b, 3, 20);
	add(&p, r, 3, 20);
	s = write(&p);
	cr_assert_str_eq(s,
		"pid 42: 100 samples in 2.0 s at 100 Hz\n\n"
		"  %self  %total   samples  function\n"
		"   80.0    80.0        80  work (app.py:3)\n"
		"   20.0    20.0        20  rec (app.py:7)\n"
		"    0.0   100.0         0  main (app.py:1)\n"
		"    0.0    60.0         0  foo (app.py:2)\n"
		"    0.0    20.0         0  bar (app.py:2)\n");
	free(s);
	profile_release(&p);
}
