/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "proc/target.h"

/*
 * Issue 16, item 1: root runs pyrospy from the directory of the process it
 * profiles, which belongs to that process's (hostile) user.  That user
 * plants links at the names pyrospy will write, pointing at files of
 * root's.  Nothing of root's may be created or truncated.
 */

#define NOBODY 65534
#define PLANT_SECONDS 180	/* the default names of the next 3 minutes */

/* The target runs as nobody: setpriv execs Python, the pid stays. */
static const struct interp python_as_nobody = { NULL, "setpriv", TARGET_PYTHON, 3, 11 };

static struct {
	char home[64];		/* nobody's, where pyrospy runs */
	char vault[64];		/* root's: the victims */
	char victim_new[128];	/* absent: must not be created */
	char victim_old[128];	/* present: must not be truncated */
	pid_t target;
	char pid[16];
} att;

static void attack_setup(void)
{
	const char *args[] = { "--reuid=nobody", "--regid=nogroup", "--clear-groups",
			       "/usr/bin/python3.11", test_target_path("seed.py"), NULL };
	char ready[64];
	FILE *f;

	cr_assert_eq(geteuid(), 0, "this test runs as root, like CI");
	snprintf(att.home, sizeof(att.home), "/tmp/pyrospy-home-XXXXXX");
	snprintf(att.vault, sizeof(att.vault), "/tmp/pyrospy-vault-XXXXXX");
	cr_assert_not_null(mkdtemp(att.home));
	cr_assert_not_null(mkdtemp(att.vault));
	cr_assert_eq(chown(att.home, NOBODY, NOBODY), 0);
	cr_assert_eq(chmod(att.home, 0755), 0);
	snprintf(att.victim_new, sizeof(att.victim_new), "%s/new", att.vault);
	snprintf(att.victim_old, sizeof(att.victim_old), "%s/old", att.vault);
	f = fopen(att.victim_old, "w");
	cr_assert_not_null(f);
	fputs("precious", f);
	cr_assert_eq(fclose(f), 0);
	att.target = test_start(&python_as_nobody, args, ready, sizeof(ready));
	cr_assert_str_eq(ready, "ready");
	snprintf(att.pid, sizeof(att.pid), "%d", (int)att.target);
}

static void attack_teardown(void)
{
	char cmd[256];

	if (att.target > 0)
		test_stop(att.target);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", att.home, att.vault);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(outfile_attack, .init = attack_setup, .fini = attack_teardown, .timeout = 60);

/*
 * As nobody, in its directory: a link at explicit, and at every default
 * name pyrospy may choose in the next minutes, NAME.svg to the absent
 * victim and NAME-1.svg to the present one.
 */
static void plant(const char *explicit)
{
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		time_t now = time(NULL);
		char stem[96], name[128];

		if (setresgid(NOBODY, NOBODY, NOBODY) ||
		    setresuid(NOBODY, NOBODY, NOBODY) || chdir(att.home))
			_exit(10);
		if (explicit && symlink(att.victim_old, explicit))
			_exit(11);
		for (time_t t = now - 2; t < now + PLANT_SECONDS; t++) {
			struct tm tm;

			localtime_r(&t, &tm);
			snprintf(stem, sizeof(stem), "pyrospy-%s-%04d%02d%02d-%02d%02d%02d",
				 att.pid, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
				 tm.tm_hour, tm.tm_min, tm.tm_sec);
			snprintf(name, sizeof(name), "%s.svg", stem);
			if (symlink(att.victim_new, name))
				_exit(12);
			snprintf(name, sizeof(name), "%s-1.svg", stem);
			if (symlink(att.victim_old, name))
				_exit(13);
		}
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "planting failed: %d", status);
}

/* pyrospy record --pid TARGET -d 1 extra..., run from nobody's directory. */
static int record_in_home(const char *const *extra, char **err)
{
	const char *wrap[] = { "sh", "-c", "cd \"$0\" && exec \"$@\"", att.home, NULL };
	const char *args[12] = { "record", "--pid", att.pid, "-d", "1" };
	char *out;
	int n = 5, st;

	for (int i = 0; extra[i] && n < 11; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	st = test_pyrospy_wrapped(wrap, args, &out, err);
	free(out);
	return st;
}

static void assert_victims_untouched(void)
{
	struct stat st;
	char buf[64] = "";
	FILE *f;

	cr_assert(lstat(att.victim_new, &st) && errno == ENOENT, "%s was created",
		  att.victim_new);
	f = fopen(att.victim_old, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	cr_assert_str_eq(buf, "precious", "%s was overwritten", att.victim_old);
}

/* The regular files in nobody's directory: what pyrospy wrote. */
static int regular_files(char *name, size_t cap)
{
	DIR *d = opendir(att.home);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		struct stat st;
		char path[512];

		snprintf(path, sizeof(path), "%s/%s", att.home, e->d_name);
		if (!lstat(path, &st) && S_ISREG(st.st_mode)) {
			snprintf(name, cap, "%s", e->d_name);
			n++;
		}
	}
	closedir(d);
	return n;
}

Test(outfile_attack, default_name_takes_a_free_one)
{
	const char *extra[] = { NULL };
	char *err, name[256], want[64], path[512], head[64] = "";
	struct stat st;
	FILE *f;

	plant(NULL);
	cr_assert_eq(record_in_home(extra, &err), 0, "stderr: %s", err);
	assert_victims_untouched();
	cr_assert_eq(regular_files(name, sizeof(name)), 1, "stderr: %s", err);
	snprintf(want, sizeof(want), "pyrospy-%s-", att.pid);
	cr_assert(!strncmp(name, want, strlen(want)), "wrote %s", name);
	cr_assert_not_null(strstr(name, "-2.svg"), "wrote %s", name);
	cr_assert_not_null(strstr(err, name), "does not say where: %s", err);
	snprintf(path, sizeof(path), "%s/%s", att.home, name);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_uid, 0);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(head, sizeof(head), f));
	fclose(f);
	cr_assert(!strncmp(head, "<?xml", 5), "not a flame graph: %s", head);
	free(err);
}

Test(outfile_attack, explicit_link_refused)
{
	const char *extra[] = { "-q", "-o", "profile.svg", NULL };
	char *err, name[256], *nl;

	plant("profile.svg");
	cr_assert_eq(record_in_home(extra, &err), 1, "stderr: %s", err);
	assert_victims_untouched();
	cr_assert(!strncmp(err, "pyrospy: error: refused to follow symlink 'profile.svg'", 55),
		  "stderr: %s", err);
	cr_assert_not_null(strstr(err, "uid 65534"), "stderr: %s", err);
	nl = strchr(err, '\n');
	cr_assert(nl && !strncmp(nl + 1, "hint: ", 6), "no hint: %s", err);
	nl = strchr(nl + 1, '\n');
	cr_assert(nl && nl[1] == '\0', "more than two lines: %s", err);
	cr_assert_eq(regular_files(name, sizeof(name)), 0, "wrote %s", name);
	free(err);
}
