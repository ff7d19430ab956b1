/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/shortpath.h"
#include "util/path.h"

static void norm_is(const char *in, const char *want)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s", in);
	cr_assert_str_eq(path_normalize(buf), want, "%s", in);
	cr_assert_eq(path_is_normal(in), !strcmp(in, want), "%s", in);
	cr_assert(path_is_normal(buf), "%s", buf);
}

Test(path, normalises_as_normpath)
{
	norm_is("/srv/shop/pyrospy/build/../examples/shop.py", "/srv/shop/pyrospy/examples/shop.py");
	norm_is("./lib/x.rb", "lib/x.rb");
	norm_is("a/./b//c/", "a/b/c");
	norm_is("/a/b/.", "/a/b");
	norm_is("a/..", ".");
	norm_is("/..", "/");
	norm_is("/../a", "/a");
	norm_is("../../x", "../../x");
	norm_is("a/../../b", "../b");
	norm_is("a/b/../../..", "..");
	norm_is("/a/.../b", "/a/.../b");
	norm_is("/", "/");
	norm_is("", "");
	norm_is("x", "x");
	/* pseudo files are no paths */
	norm_is("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap>");
	norm_is("<internal:a/../b>", "<internal:a/../b>");
	cr_assert(path_goes_up("../x"));
	cr_assert(path_goes_up(".."));
	cr_assert(!path_goes_up("..x/y"));
	cr_assert(!path_goes_up("/a"));
}

/* A profile of one thread's stacks, outermost frame first: {name, file} pairs. */
static void add(struct profile *p, const char *const *fr, size_t n)
{
	uint32_t ids[16];

	ids[0] = profile_frame(p, PROFILE_TAGS, "", "", 0);
	ids[1] = profile_frame(p, PROFILE_THREAD, "thread (1)", "", 0);
	for (size_t i = 0; i < n; i++)
		ids[2 + i] = profile_frame(p, PROFILE_CODE, fr[2 * i], fr[2 * i + 1], 1);
	profile_add_path(p, ids, (uint32_t)n + 2, 1);
}

Test(shortpath, rules)
{
	static const char *const py[] = {
		"<module>", "/srv/shop/examples/shop.py",
		"run", "/srv/shop/examples/helpers.py",
		"dumps", "/usr/lib/python3.11/json/encoder.py",
		"load", "/usr/lib/python3/dist-packages/yaml/__init__.py",
		"x", "/root/.pyenv/versions/3.12.1/lib/python3.12/site-packages/flask/app.py",
		"y", "/opt/py/lib/python3.13t/lib-dynload/_json.so",
		"z", "<frozen importlib._bootstrap>",
		"b", "/var/lib/gems/3.1.0/gems/rack-3.1.8/lib/rack/builder.rb",
		"s", "/usr/lib/ruby/3.1.0/set.rb",
		"v", "/usr/lib/ruby/vendor_ruby/rubygems/x.rb",
		"n", "/elsewhere/thing.py",
	};
	static const char *const want[] = {
		"shop.py", "helpers.py", "json/encoder.py", "yaml/__init__.py", "flask/app.py",
		"_json.so", "<frozen importlib._bootstrap>", "rack-3.1.8/lib/rack/builder.rb",
		"set.rb", "rubygems/x.rb", "/elsewhere/thing.py",
	};
	struct profile p;
	struct shortpath *sp;

	profile_init(&p);
	add(&p, py, sizeof(py) / sizeof(py[0]) / 2);
	sp = shortpath_new(&p);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert_str_eq(shortpath_get(sp, py[2 * i + 1]), want[i]);
	cr_assert_str_eq(shortpath_get(sp, "/not/in/it.py"), "/not/in/it.py");
	cr_assert_str_eq(shortpath_get(NULL, py[1]), py[1]);
	shortpath_free(sp);
	profile_release(&p);
}

Test(shortpath, never_two_files_alike)
{
	/* the app's json/encoder.py, the stdlib's, and a relative one */
	static const char *const fr[] = {
		"<module>", "/srv/app/main.py",
		"a", "/srv/app/json/encoder.py",
		"b", "/usr/lib/python3.11/json/encoder.py",
		"c", "/usr/lib/python3.11/yaml/x.py",
		"d", "yaml/x.py",
		"e", "/usr/lib/python3.11/only.py",
	};
	struct profile p;
	struct shortpath *sp;

	profile_init(&p);
	add(&p, fr, sizeof(fr) / sizeof(fr[0]) / 2);
	sp = shortpath_new(&p);
	cr_assert_str_eq(shortpath_get(sp, fr[3]), fr[3]);
	cr_assert_str_eq(shortpath_get(sp, fr[5]), fr[5]);
	cr_assert_str_eq(shortpath_get(sp, fr[7]), fr[7]);
	cr_assert_str_eq(shortpath_get(sp, fr[9]), fr[9]);
	cr_assert_str_eq(shortpath_get(sp, fr[11]), "only.py");
	cr_assert_str_eq(shortpath_get(sp, fr[1]), "main.py");
	shortpath_free(sp);
	profile_release(&p);
}

Test(shortpath, script_in_root_takes_no_slash)
{
	static const char *const fr[] = {
		"<module>", "/app.py",
		"a", "/opt/x/y.py",
	};
	struct profile p;
	struct shortpath *sp;

	profile_init(&p);
	add(&p, fr, 2);
	sp = shortpath_new(&p);
	cr_assert_str_eq(shortpath_get(sp, fr[3]), "/opt/x/y.py");
	shortpath_free(sp);
	profile_release(&p);
}

Test(profile, normalises_files_read_back)
{
	struct profile p;
	uint32_t a, b;

	profile_init(&p);
	a = profile_frame(&p, PROFILE_CODE, "f", "/srv/x/build/../app.py", 3);
	b = profile_frame(&p, PROFILE_CODE, "f", "/srv/x/app.py", 3);
	cr_assert_eq(a, b);
	cr_assert_str_eq(profile_str(&p, p.frame[a].file), "/srv/x/app.py");
	/* names are no paths */
	a = profile_frame(&p, PROFILE_CODE, "a/../b", "x.py", 1);
	cr_assert_str_eq(profile_str(&p, p.frame[a].name), "a/../b");
	profile_release(&p);
}
