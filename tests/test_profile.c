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

static void make_stack(int variant)
{
	memset(&st, 0, sizeof(st));
	st.tid = 7;
	st.depth = 3;
	st.frame[2] = (struct stack_frame){ "<module>", "app.py", 20 };
	st.frame[1] = (struct stack_frame){ variant ? "bar" : "foo", "app.py", variant ? 12 : 8 };
	st.frame[0] = (struct stack_frame){ "work", "app.py", 4 };
}

static char *folded_meta(const struct profile *p, int threads, int no_tags)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct out_meta meta = { .title = "test", .duration = 1.0, .rate = 100, .threads = threads,
				 .no_tags = no_tags };

	cr_assert_eq(out_folded.write(f, p, &meta), 0);
	fclose(f);
	return buf;
}

static char *folded(const struct profile *p)
{
	return folded_meta(p, 0, 0);
}

Test(profile, aggregates_and_writes_folded)
{
	struct profile p;
	char *s;

	profile_init(&p);
	for (int i = 0; i < 75; i++) {
		make_stack(0);
		profile_add(&p, NULL, &st, 1);
	}
	for (int i = 0; i < 25; i++) {
		make_stack(1);
		profile_add(&p, NULL, &st, 1);
	}
	/* root, tag set, thread, <module>, foo, work, bar, work */
	cr_assert_eq(p.nnode, 8);
	cr_assert_eq(p.total, 100);
	cr_assert_eq(p.node[0].total, 100);
	s = folded(&p);
	cr_assert_str_eq(s, "<module> (app.py:20);foo (app.py:8);work (app.py:4) 75\n"
			    "<module> (app.py:20);bar (app.py:12);work (app.py:4) 25\n");
	free(s);
	profile_release(&p);
}

/* The trie's size after ten times more samples of the same stacks is unchanged. */
Test(profile, memory_bounded_by_distinct_stacks)
{
	struct profile p;
	uint32_t nstr, nframe, nnode;
	size_t bytes;

	profile_init(&p);
	for (int i = 0; i < 1000; i++) {
		make_stack(i % 50);
		st.frame[0].line = 100 + i % 50;	/* 50 distinct stacks */
		profile_add(&p, NULL, &st, 1);
	}
	nstr = p.nstr;
	nframe = p.nframe;
	nnode = p.nnode;
	bytes = profile_footprint(&p);
	for (int i = 0; i < 10000; i++) {
		make_stack(i % 50);
		st.frame[0].line = 100 + i % 50;
		profile_add(&p, NULL, &st, 1);
	}
	cr_assert_eq(p.nstr, nstr);
	cr_assert_eq(p.nframe, nframe);
	cr_assert_eq(p.nnode, nnode);
	cr_assert_eq(profile_footprint(&p), bytes, "no growth for 10x the samples");
	cr_assert_eq(p.total, 11000);
	profile_release(&p);
}

Test(profile, hostile_names_cannot_break_lines)
{
	struct profile p;
	char *s;

	profile_init(&p);
	memset(&st, 0, sizeof(st));
	st.depth = 1;
	st.frame[0] = (struct stack_frame){ "a;b\nc 99", "x;y\r.py", 3 };
	profile_add(&p, NULL, &st, 2);
	s = folded(&p);
	cr_assert_str_eq(s, "a:b?c 99 (x:y?.py:3) 2\n");
	free(s);
	profile_release(&p);
}

Test(profile, thread_root_and_function_mode)
{
	struct profile p;
	char *s;

	profile_init(&p);
	p.no_lines = 1;
	make_stack(0);
	profile_add(&p, NULL, &st, 1);
	st.frame[0].line = 5;	/* another line of the same function merges */
	profile_add(&p, NULL, &st, 1);
	s = folded_meta(&p, 1, 0);
	cr_assert_str_eq(s, "thread (7);<module> (app.py);foo (app.py);work (app.py) 2\n");
	free(s);
	profile_release(&p);
}

/*
 * Threads and tag sets are levels of the trie; a projection merges them.
 * Folded output shows a tag set as a {k=v} frame at the root, and the
 * stacks without tags as they are, unless --no-tags.
 */
Test(profile, projection_merges_threads_and_tags)
{
	struct profile p, q;
	char *s;

	profile_init(&p);
	make_stack(0);
	profile_add(&p, "route=/a", &st, 3);
	st.tid = 8;
	profile_add(&p, "route=/b", &st, 4);
	make_stack(1);
	profile_add(&p, NULL, &st, 5);
	cr_assert_eq(p.total, 12);
	s = folded_meta(&p, 1, 1);
	cr_assert_str_eq(s, "thread (7);<module> (app.py:20);foo (app.py:8);work (app.py:4) 3\n"
			    "thread (7);<module> (app.py:20);bar (app.py:12);work (app.py:4) 5\n"
			    "thread (8);<module> (app.py:20);foo (app.py:8);work (app.py:4) 4\n");
	free(s);
	s = folded_meta(&p, 0, 1);
	cr_assert_str_eq(s, "<module> (app.py:20);foo (app.py:8);work (app.py:4) 7\n"
			    "<module> (app.py:20);bar (app.py:12);work (app.py:4) 5\n");
	free(s);
	s = folded_meta(&p, 1, 0);
	cr_assert_str_eq(s, "{route=/a};thread (7);<module> (app.py:20);foo (app.py:8);"
			    "work (app.py:4) 3\n"
			    "{route=/b};thread (8);<module> (app.py:20);foo (app.py:8);"
			    "work (app.py:4) 4\n"
			    "thread (7);<module> (app.py:20);bar (app.py:12);work (app.py:4) 5\n");
	free(s);
	s = folded(&p);
	cr_assert_str_eq(s, "{route=/a};<module> (app.py:20);foo (app.py:8);work (app.py:4) 3\n"
			    "{route=/b};<module> (app.py:20);foo (app.py:8);work (app.py:4) 4\n"
			    "<module> (app.py:20);bar (app.py:12);work (app.py:4) 5\n");
	free(s);
	profile_project(&p, PROFILE_KEEP_TAGS, &q);
	cr_assert_eq(q.total, 12);
	cr_assert_str_eq(profile_str(&q, q.frame[q.node[q.node[0].child].frame].name), "route=/a");
	profile_release(&q);
	profile_release(&p);
}

/*
 * A thread running code in a Python subinterpreter has a thread state in
 * each interpreter, each its own root: " [interpreter N]" after the tid of
 * the subinterpreter's.  A thread renamed in one interpreter is one root
 * there, named as it was last, and leaves the other's root as it is.
 */
Test(profile, subinterpreter_thread_is_its_own_root)
{
	struct profile p;
	char *s;

	profile_init(&p);
	for (int i = 0; i < 2; i++) {
		make_stack(0);
		st.thread_name = "runner";
		profile_add(&p, NULL, &st, 1);
		make_stack(1);
		st.interp = 1;
		st.thread_name = i ? "subloop" : "Dummy-1";
		profile_add(&p, NULL, &st, 2);
	}
	s = folded_meta(&p, 1, 0);
	cr_assert_str_eq(s, "thread (7): runner;<module> (app.py:20);foo (app.py:8);"
			    "work (app.py:4) 2\n"
			    "thread (7) [interpreter 1]: subloop;<module> (app.py:20);bar (app.py:12);"
			    "work (app.py:4) 4\n");
	free(s);
	profile_release(&p);
}

/*
 * Frames are found by the addresses of their strings, but an address is
 * only a hint: the same buffer holding another name (a reader that freed
 * a string and put another there, or one buffer reused for each thread's
 * name) is another frame, and the same name at another address is the
 * same frame.
 */
Test(profile, same_address_other_string_is_another_frame)
{
	struct profile p;
	char name[32], file[32], copy[32];
	uint32_t a, b, c, d;

	profile_init(&p);
	strcpy(name, "Shop.checkout");
	strcpy(file, "shop.py");
	a = profile_frame(&p, PROFILE_CODE, name, file, 10);
	cr_assert_eq(profile_frame(&p, PROFILE_CODE, name, file, 10), a);
	strcpy(name, "Shop.refund");
	b = profile_frame(&p, PROFILE_CODE, name, file, 10);
	cr_assert_neq(a, b);
	cr_assert_str_eq(profile_str(&p, p.frame[b].name), "Shop.refund");
	strcpy(file, "cart.py");
	c = profile_frame(&p, PROFILE_CODE, name, file, 10);
	cr_assert_neq(b, c);
	cr_assert_str_eq(profile_str(&p, p.frame[c].file), "cart.py");
	strcpy(copy, "Shop.refund");
	d = profile_frame(&p, PROFILE_CODE, copy, file, 10);
	cr_assert_eq(c, d);
	cr_assert_neq(profile_frame(&p, PROFILE_CODE, copy, file, 11), d);
	profile_release(&p);
}

/*
 * A reader's kept stack (stack.kept) is added where it ended before, but
 * only under the same tag set and thread: the profile is the one the same
 * stacks without .kept make.
 */
Test(profile, kept_stacks_add_as_fresh_ones)
{
	static const char *tags[] = { "a=1", "a=2", NULL };
	struct profile a, b;
	char *fa, *fb;

	profile_init(&a);
	profile_init(&b);
	for (int i = 0; i < 60; i++) {
		make_stack(i % 3 == 0);
		st.tid = 7 + i % 2;
		st.thread_name = i % 5 ? "worker" : "renamed";
		st.kept = 1 + (uint64_t)(i % 3 == 0);	/* two stacks, each its own value */
		profile_add(&a, tags[i % 3], &st, 1);
		st.kept = 0;
		profile_add(&b, tags[i % 3], &st, 1);
	}
	cr_assert_eq(a.total, 60);
	fa = folded_meta(&a, 1, 0);
	fb = folded_meta(&b, 1, 0);
	cr_assert_str_eq(fa, fb);
	cr_assert_eq(a.nnode, b.nnode);
	free(fa);
	free(fb);
	profile_release(&a);
	profile_release(&b);
}

/*
 * A kept stack counted in an [other] frame (no room for its path) goes
 * where the same stack without .kept goes, sample after sample.
 */
Test(profile, kept_stack_counted_in_other_stays_there)
{
	for (unsigned int depth = 1; depth <= 40; depth += 39) {
		struct profile p, q;
		char *s, *t;

		profile_init(&p);
		profile_init(&q);
		p.max_bytes = q.max_bytes = profile_footprint(&p) + 2048;
		for (int i = 0; i < 40; i++) {
			make_stack(0);
			for (unsigned int d = 0; d < depth; d++)
				st.frame[d] = (struct stack_frame){ "deep", "app.py", (int)d + 1 };
			st.depth = depth;
			st.tid = 7 + i % 3;
			st.kept = 99 + (uint64_t)(i % 3);
			profile_add(&p, NULL, &st, 1);
			st.kept = 0;
			profile_add(&q, NULL, &st, 1);
		}
		s = folded_meta(&p, 1, 0);
		t = folded_meta(&q, 1, 0);
		cr_assert(strstr(s, "[other]"), "%s", s);
		cr_assert_str_eq(s, t);
		free(s);
		free(t);
		profile_release(&p);
		profile_release(&q);
	}
}
