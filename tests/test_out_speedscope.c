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

static void add(struct profile *p, int tid, const char *leaf, int line, uint64_t n)
{
	memset(&st, 0, sizeof(st));
	st.tid = tid;
	st.depth = 2;
	st.frame[1] = (struct stack_frame){ "<main>", "app.rb", 9 };
	st.frame[0] = (struct stack_frame){ leaf, "app.rb", line };
	profile_add(p, tid == 2 ? "k=v" : NULL, &st, n);
}

static char *write(const struct profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct out_meta meta = { .title = "pid 42", .duration = 2.0, .rate = 100 };

	cr_assert_eq(out_speedscope.write(f, p, &meta), 0);
	fclose(f);
	return buf;
}

/*
 * Frames once, one sampled profile per thread (and tag set: "thread (2)
 * {k=v}"), weights in nanoseconds.
 */
Test(speedscope, golden)
{
	struct profile p;
	char *s;

	profile_init(&p);
	add(&p, 1, "Shop#price", 3, 5);
	add(&p, 2, "Shop#price", 3, 2);
	add(&p, 1, "work", 7, 1);
	s = write(&p);
	cr_assert_str_eq(s,
		"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
		"\"exporter\":\"pyrospy " PACKAGE_VERSION "\",\"name\":\"pid 42\","
		"\"activeProfileIndex\":0,\"shared\":{\"frames\":["
		"{\"name\":\"<main>\",\"file\":\"app.rb\",\"line\":9},"
		"{\"name\":\"Shop#price\",\"file\":\"app.rb\",\"line\":3},"
		"{\"name\":\"work\",\"file\":\"app.rb\",\"line\":7}]},\"profiles\":["
		"{\"type\":\"sampled\",\"name\":\"thread (1)\",\"unit\":\"nanoseconds\","
		"\"startValue\":0,\"samples\":[[0,1],[0,2]],\"weights\":[50000000,10000000],"
		"\"endValue\":60000000},"
		"{\"type\":\"sampled\",\"name\":\"thread (2) {k=v}\",\"unit\":\"nanoseconds\","
		"\"startValue\":0,\"samples\":[[0,1]],\"weights\":[20000000],"
		"\"endValue\":20000000}]}\n");
	free(s);
	profile_release(&p);
}

/* Names are escaped as JSON strings: quotes, backslashes, control characters. */
Test(speedscope, hostile_names)
{
	struct profile p;
	char *s;

	profile_init(&p);
	add(&p, 1, "a\"b\\c\x01</script>", 1, 1);
	s = write(&p);
	cr_assert_not_null(strstr(s, "{\"name\":\"a\\\"b\\\\c\\u0001</script>\",\"file\""), "%s", s);
	free(s);
	profile_release(&p);
}

Test(speedscope, empty_profile_is_valid_json)
{
	struct profile p;
	char *s;

	profile_init(&p);
	s = write(&p);
	cr_assert_not_null(strstr(s, "\"frames\":[]},\"profiles\":[]}"), "%s", s);
	free(s);
	profile_release(&p);
}
