/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "cmd/taglibs.h"

/* A TMPDIR of the test's own, so that what is left behind can be seen. */
static char tmp[64];

static void make_tmp(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/pyrospy-test-helpers.XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
	cr_assert_eq(setenv("TMPDIR", tmp, 1), 0);
}

static void remove_tmp(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	cr_assert_eq(system(cmd), 0);
}

static int entries(const char *dir)
{
	char cmd[128], *out;
	int status, n = 0;

	snprintf(cmd, sizeof(cmd), "ls -A '%s'", dir);
	out = test_run(cmd, &status);
	for (char *p = out; *p; p++)
		n += *p == '\n';
	free(out);
	return n;
}

/*
 * Every helper of the sources (the .py of taglibs/python, the .rb of
 * taglibs/ruby and its subdirectories: ruby/pyroscope/otel.rb) is written
 * out byte for byte, in a new directory of TMPDIR that only its owner may
 * enter; release removes it.
 */
Test(taglibs, extract_is_the_sources, .init = make_tmp, .fini = remove_tmp)
{
	static const char *const patterns[] = { SRCDIR "/taglibs/python/*.py",
						SRCDIR "/taglibs/ruby/*.rb",
						SRCDIR "/taglibs/ruby/*/*.rb" };
	struct taglibs h;
	struct stat st;
	size_t srclen = strlen(SRCDIR "/taglibs/"), nfiles = 0, nembedded = 0;

	cr_assert_eq(taglibs_extract(&h), PERR_OK, "%s", strerror(errno));
	cr_assert(h.owned);
	cr_assert_eq(strncmp(h.dir, tmp, strlen(tmp)), 0, "%s is not in TMPDIR %s", h.dir, tmp);
	cr_assert_eq(lstat(h.dir, &st), 0);
	cr_assert(S_ISDIR(st.st_mode));
	cr_assert_eq(st.st_mode & 0777, 0700, "mode %o", st.st_mode & 0777);
	cr_assert_eq(st.st_uid, geteuid());
	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		glob_t g;

		cr_assert_eq(glob(patterns[i], 0, NULL, &g), 0, "%s", patterns[i]);
		for (size_t j = 0; j < g.gl_pathc; j++) {
			char copy[PATH_MAX + 64], *want, *got;

			snprintf(copy, sizeof(copy), "%s/%s", h.dir, g.gl_pathv[j] + srclen);
			cr_assert_eq(access(copy, R_OK), 0, "%s is not in the binary", g.gl_pathv[j]);
			want = test_slurp(g.gl_pathv[j]);
			got = test_slurp(copy);
			cr_assert_str_eq(got, want, "%s differs from %s", copy, g.gl_pathv[j]);
			free(want);
			free(got);
			nfiles++;
		}
		globfree(&g);
	}
	for (const struct taglibs_file *f = taglibs_files; f->name; f++)
		nembedded++;
	cr_assert_eq(nembedded, nfiles, "%zu helpers in the binary, %zu in the sources",
		     nembedded, nfiles);
	taglibs_release(&h);
	cr_assert_eq(h.dir[0], '\0');
	cr_assert_eq(entries(tmp), 0, "release left something in %s", tmp);
}

/*
 * Release removes what the interpreter added (__pycache__) and links
 * planted in the copy, never what they point to.
 */
Test(taglibs, release_follows_no_link, .init = make_tmp, .fini = remove_tmp)
{
	struct taglibs h;
	char path[PATH_MAX + 64], victim[128], cmd[PATH_MAX * 6 + 256];

	snprintf(victim, sizeof(victim), "%s/victim", tmp);
	cr_assert_eq(mkdir(victim, 0700), 0);
	snprintf(path, sizeof(path), "%s/file", victim);
	fclose(fopen(path, "w"));
	cr_assert_eq(taglibs_extract(&h), PERR_OK);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/python/__pycache__/deeper' && "
		 "touch '%s/python/__pycache__/pyrospy.cpython-311.pyc' && "
		 "ln -s '%s' '%s/python/__pycache__/dirlink' && "
		 "ln -s '%s/file' '%s/ruby/filelink'",
		 h.dir, h.dir, victim, h.dir, victim, h.dir);
	cr_assert_eq(system(cmd), 0);
	taglibs_release(&h);
	cr_assert_eq(entries(tmp), 1, "release left something in %s", tmp);
	cr_assert_eq(access(path, F_OK), 0, "release removed %s through a link", path);
}

/* A TMPDIR that cannot be written: an error, and nothing made elsewhere. */
Test(taglibs, unwritable_tmpdir, .init = make_tmp, .fini = remove_tmp)
{
	struct taglibs h;
	char missing[128];

	snprintf(missing, sizeof(missing), "%s/missing", tmp);
	cr_assert_eq(setenv("TMPDIR", missing, 1), 0);
	cr_assert_eq(taglibs_extract(&h), PERR_IO);
	cr_assert_eq(errno, ENOENT, "%s", strerror(errno));
	cr_assert_eq(h.dir[0], '\0');
	cr_assert_not(h.owned);
	taglibs_release(&h);
	cr_assert_eq(entries(tmp), 0);
}

/*
 * exec --user (or under sudo): the private copy is shared for reading
 * with the user the command runs as, who still cannot write into it; a
 * link planted in it is not followed.
 */
Test(taglibs, share_lets_others_read_not_write, .init = make_tmp, .fini = remove_tmp)
{
	struct taglibs h;
	struct stat st;
	char victim[128], cmd[PATH_MAX * 3 + 256], *out;
	int status;

	cr_assert_eq(chmod(tmp, 0755), 0);
	snprintf(victim, sizeof(victim), "%s/victim", tmp);
	fclose(fopen(victim, "w"));
	cr_assert_eq(chmod(victim, 0600), 0);
	cr_assert_eq(taglibs_extract(&h), PERR_OK);
	snprintf(cmd, sizeof(cmd), "ln -s '%s' '%s/ruby/filelink'", victim, h.dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(taglibs_share(&h), PERR_OK, "%s", strerror(errno));
	snprintf(cmd, sizeof(cmd),
		 "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "
		 "\"cat '%s/python/pyrospy.py' '%s/ruby/pyrospy.rb' >/dev/null && echo read; "
		 "touch '%s/python/planted' 2>/dev/null || echo unwritable\"",
		 h.dir, h.dir, h.dir);
	out = test_run(cmd, &status);
	cr_assert_str_eq(out, "read\nunwritable\n");
	free(out);
	cr_assert_eq(stat(h.dir, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0755);
	cr_assert_eq(st.st_uid, geteuid());
	cr_assert_eq(stat(victim, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0600, "the link was followed");
	taglibs_release(&h);
}
