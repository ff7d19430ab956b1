/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "output/outfile.h"

#define NOBODY 65534

/* A fresh directory, removed when the test ends. */
static char dir[64];

static void dir_make(void)
{
	snprintf(dir, sizeof(dir), "/tmp/pyrospy-outfile-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0755), 0);
}

static void dir_remove(void)
{
	char cmd[128];

	if (!*dir)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(outfile, .init = dir_make, .fini = dir_remove);

static const char *in_dir(const char *name)
{
	static char buf[16][256];
	static int n;
	char *b = buf[n++ % 16];

	snprintf(b, 256, "%s/%s", dir, name);
	return b;
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/* The contents of path, "" if it cannot be read (caller frees). */
static char *get(const char *path)
{
	char *buf = calloc(1, 65536);
	FILE *f = fopen(path, "r");

	if (f) {
		size_t n = fread(buf, 1, 65535, f);

		buf[n] = '\0';
		fclose(f);
	}
	return buf;
}

static void assert_contents(const char *path, const char *want)
{
	char *got = get(path);

	cr_assert_str_eq(got, want, "%s", path);
	free(got);
}

static int exists(const char *path)
{
	struct stat st;

	return !lstat(path, &st);
}

/* Entries of directory d, but . and .. */
static int entries(const char *d)
{
	DIR *dp = opendir(d);
	struct dirent *e;
	int n = 0;

	cr_assert_not_null(dp, "%s", d);
	while ((e = readdir(dp)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(dp);
	return n;
}

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root, to own files as another user");
}

/* A link at path to target, owned by uid. */
static void plant_link(const char *target, const char *path, uid_t uid)
{
	cr_assert_eq(symlink(target, path), 0, "%s: %s", path, strerror(errno));
	if (uid != geteuid())
		cr_assert_eq(lchown(path, uid, uid), 0, "%s: %s", path, strerror(errno));
}

static void write_all(struct outfile *of, const char *text)
{
	cr_assert_geq(fputs(text, of->f), 0);
}

/*
 * A name pyrospy chose is never an existing file: another profile under
 * it is kept, a dangling link planted there is left alone (not followed
 * to create its target), and the profile takes the next free name.
 */
Test(outfile, default_name_taken_takes_the_next)
{
	struct outfile of;

	cr_assert_eq(chdir(dir), 0);
	put("pyrospy-1-X.svg", "earlier profile");
	plant_link(in_dir("victim"), "pyrospy-1-X-1.svg", geteuid());
	cr_assert_eq(outfile_open_new(&of, "pyrospy-1-X", "svg"), PERR_OK, "%s", strerror(errno));
	write_all(&of, "new profile");
	cr_assert_eq(outfile_commit(&of), PERR_OK, "%s", strerror(errno));
	cr_assert_str_eq(of.path, "pyrospy-1-X-2.svg");
	outfile_close(&of);
	assert_contents("pyrospy-1-X.svg", "earlier profile");
	assert_contents("pyrospy-1-X-2.svg", "new profile");
	cr_assert(!exists(in_dir("victim")), "the planted link was followed");
	cr_assert_eq(entries(dir), 3, "a temporary file is left");
}

Test(outfile, default_names_all_taken)
{
	struct outfile of;
	char name[64];

	cr_assert_eq(chdir(dir), 0);
	put("p.txt", "earlier");
	for (int i = 1; i < OUTFILE_MAX_NAMES; i++) {
		snprintf(name, sizeof(name), "p-%d.txt", i);
		plant_link(in_dir("victim"), name, geteuid());
	}
	cr_assert_eq(outfile_open_new(&of, "p", "txt"), PERR_OK);
	write_all(&of, "new");
	cr_assert_eq(outfile_commit(&of), PERR_IO);
	cr_assert_eq(errno, EEXIST);
	outfile_close(&of);
	assert_contents("p.txt", "earlier");
	cr_assert(!exists(in_dir("victim")));
	cr_assert_eq(entries(dir), OUTFILE_MAX_NAMES, "a temporary file is left");
}

/*
 * /tmp: another user's link in a sticky, world-writable directory is not
 * followed, whether it dangles (root would create its target) or not
 * (root would truncate it).  fs.protected_symlinks says the same, but is
 * often off.
 */
Test(outfile, other_users_link_in_sticky_dir_refused)
{
	struct outfile of;
	const char *sticky = in_dir("sticky");
	char link1[256], link2[256];

	need_root();
	cr_assert_eq(mkdir(sticky, 0777), 0);
	cr_assert_eq(chmod(sticky, 01777), 0);
	snprintf(link1, sizeof(link1), "%s/new.svg", sticky);
	snprintf(link2, sizeof(link2), "%s/old.svg", sticky);
	plant_link(in_dir("victim-new"), link1, NOBODY);
	put(in_dir("victim-old"), "precious");
	plant_link(in_dir("victim-old"), link2, NOBODY);

	cr_assert_eq(outfile_open(&of, link1), PERR_UNSAFE);
	cr_assert_str_eq(of.bad, link1);
	cr_assert_eq(of.bad_uid, NOBODY);
	cr_assert(S_ISLNK(of.bad_mode));
	outfile_close(&of);
	cr_assert_eq(outfile_open(&of, link2), PERR_UNSAFE);
	outfile_close(&of);
	cr_assert(!exists(in_dir("victim-new")));
	assert_contents(in_dir("victim-old"), "precious");
	cr_assert_eq(entries(sticky), 2, "a temporary file is left");
}

/*
 * The target's own directory (not sticky, owned by the attacker): its
 * owner's links are refused too, and so is a link as a directory on the
 * way (DIR/sub/out.svg with sub a link).
 */
Test(outfile, link_in_other_users_dir_refused)
{
	struct outfile of;
	const char *home = in_dir("home");
	char link[256], via[256];

	need_root();
	cr_assert_eq(mkdir(home, 0755), 0);
	cr_assert_eq(chown(home, NOBODY, NOBODY), 0);
	cr_assert_eq(mkdir(in_dir("etc"), 0755), 0);
	snprintf(link, sizeof(link), "%s/out.svg", home);
	plant_link(in_dir("victim"), link, NOBODY);
	snprintf(via, sizeof(via), "%s/sub", home);
	plant_link(in_dir("etc"), via, NOBODY);

	cr_assert_eq(outfile_open(&of, link), PERR_UNSAFE);
	outfile_close(&of);
	snprintf(via, sizeof(via), "%s/sub/out.svg", home);
	cr_assert_eq(outfile_open(&of, via), PERR_UNSAFE);
	cr_assert_str_eq(of.bad, in_dir("home/sub"));
	outfile_close(&of);
	cr_assert(!exists(in_dir("victim")));
	cr_assert_eq(entries(in_dir("etc")), 0);
}

/* The invoking user's own link is followed, even in a sticky directory. */
Test(outfile, own_link_followed)
{
	struct outfile of;
	const char *sticky = in_dir("sticky");
	char link[256];
	struct stat st;

	cr_assert_eq(mkdir(sticky, 0777), 0);
	cr_assert_eq(chmod(sticky, 01777), 0);
	snprintf(link, sizeof(link), "%s/out.svg", sticky);
	plant_link("../real.svg", link, geteuid());
	cr_assert_eq(outfile_open(&of, link), PERR_OK, "%d %s", of.bad_uid, strerror(errno));
	write_all(&of, "profile");
	cr_assert_eq(outfile_commit(&of), PERR_OK);
	outfile_close(&of);
	assert_contents(in_dir("real.svg"), "profile");
	cr_assert_eq(lstat(link, &st), 0);
	cr_assert(S_ISLNK(st.st_mode), "the link was replaced");
	cr_assert_eq(entries(dir), 2, "a temporary file is left");
}

/*
 * A failed write (here the file size limit, as a full disk would) leaves
 * the previous file whole and no temporary file behind, whether the
 * writer saw the error (then pyrospy closes without committing) or only
 * the final flush does.
 */
Test(outfile, write_failure_keeps_the_old_file)
{
	struct outfile of;
	const char *path = in_dir("prof.svg");
	struct rlimit rl = { 4096, 4096 };
	char chunk[1024];
	int failed = 0;

	memset(chunk, 'x', sizeof(chunk) - 1);
	chunk[sizeof(chunk) - 1] = '\0';
	put(path, "previous");
	signal(SIGXFSZ, SIG_IGN);
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	cr_assert_eq(outfile_open(&of, path), PERR_OK, "%s", strerror(errno));
	for (int i = 0; i < 64 && !failed; i++)
		failed = fputs(chunk, of.f) == EOF;
	cr_assert(failed, "the file size limit did not stop the writes");
	cr_assert_eq(errno, EFBIG, "%s", strerror(errno));
	outfile_close(&of);
	assert_contents(path, "previous");
	cr_assert_eq(entries(dir), 1, "a temporary file is left");

	/* less than stdio buffers, more than the limit: the flush fails */
	rl.rlim_cur = 1024;
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	cr_assert_eq(outfile_open(&of, path), PERR_OK, "%s", strerror(errno));
	cr_assert_eq(fwrite(chunk, 1, sizeof(chunk), of.f), sizeof(chunk));
	cr_assert_eq(fwrite(chunk, 1, sizeof(chunk), of.f), sizeof(chunk));
	cr_assert_eq(outfile_commit(&of), PERR_IO);
	outfile_close(&of);
	assert_contents(path, "previous");
	cr_assert_eq(entries(dir), 1, "a temporary file is left");
}

/* A regular file is replaced whole, not rewritten in place. */
Test(outfile, regular_file_replaced)
{
	struct outfile of;
	const char *path = in_dir("prof.svg");

	put(path, "a previous profile, longer than the new one");
	cr_assert_eq(outfile_open(&of, path), PERR_OK);
	assert_contents(path, "a previous profile, longer than the new one");
	write_all(&of, "new");
	cr_assert_eq(outfile_commit(&of), PERR_OK);
	cr_assert_str_eq(of.path, path);
	outfile_close(&of);
	assert_contents(path, "new");
	cr_assert_eq(entries(dir), 1);
}

/* A FIFO is written to, not renamed over. */
Test(outfile, fifo_written_directly)
{
	struct outfile of;
	const char *fifo = in_dir("fifo");
	struct stat st;
	int status;
	pid_t pid;

	cr_assert_eq(mkfifo(fifo, 0600), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char *got;

		alarm(10);	/* should the writer never come */
		got = get(fifo);

		_exit(strcmp(got, "through the fifo") ? 1 : 0);
	}
	cr_assert_eq(outfile_open(&of, fifo), PERR_OK, "%s", strerror(errno));
	write_all(&of, "through the fifo");
	cr_assert_eq(outfile_commit(&of), PERR_OK);
	outfile_close(&of);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the reader got something else");
	cr_assert_eq(lstat(fifo, &st), 0);
	cr_assert(S_ISFIFO(st.st_mode), "the FIFO was replaced");
	cr_assert_eq(entries(dir), 1, "a temporary file is left");
}

/* /dev/null, and a link to it: written to, still a device. */
Test(outfile, device_written_directly)
{
	struct outfile of;
	struct stat st;

	plant_link("/dev/null", in_dir("null"), geteuid());
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(outfile_open(&of, i ? in_dir("null") : "/dev/null"), PERR_OK, "%s",
			     strerror(errno));
		write_all(&of, "nothing");
		cr_assert_eq(outfile_commit(&of), PERR_OK);
		outfile_close(&of);
		cr_assert_eq(stat("/dev/null", &st), 0);
		cr_assert(S_ISCHR(st.st_mode));
	}
	cr_assert_eq(entries(dir), 1, "a temporary file is left");
}

/* /dev/stdout (a link to /proc/self/fd/1) and "-" are stdout. */
Test(outfile, stdout_written_directly)
{
	struct outfile of;
	const char *path = in_dir("stdout.txt");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	cr_assert_geq(fd, 0);
	fflush(stdout);
	cr_assert_eq(dup2(fd, 1), 1);
	close(fd);
	cr_assert_eq(outfile_open(&of, "-"), PERR_OK);
	cr_assert_eq(of.f, stdout);
	write_all(&of, "one ");
	cr_assert_eq(outfile_commit(&of), PERR_OK);
	outfile_close(&of);
	cr_assert_eq(outfile_open(&of, "/dev/stdout"), PERR_OK, "%s", strerror(errno));
	write_all(&of, "two");
	cr_assert_eq(outfile_commit(&of), PERR_OK);
	outfile_close(&of);
	assert_contents(path, "one two");
	cr_assert_eq(entries(dir), 1, "a temporary file is left");
}

/* Another user's FIFO where others write would hang pyrospy: refused. */
Test(outfile, other_users_fifo_refused)
{
	struct outfile of;
	const char *sticky = in_dir("sticky");
	char fifo[256];

	need_root();
	cr_assert_eq(mkdir(sticky, 0777), 0);
	cr_assert_eq(chmod(sticky, 01777), 0);
	snprintf(fifo, sizeof(fifo), "%s/fifo", sticky);
	cr_assert_eq(mkfifo(fifo, 0666), 0);
	cr_assert_eq(chown(fifo, NOBODY, NOBODY), 0);
	alarm(5);	/* the old way blocks in open() */
	cr_assert_eq(outfile_open(&of, fifo), PERR_UNSAFE);
	cr_assert(S_ISFIFO(of.bad_mode));
	outfile_close(&of);
}

/*
 * In a sticky directory only a file's owner (or the directory's) may
 * replace it: said before anything is written.
 */
Test(outfile, other_users_file_in_sticky_dir)
{
	const char *sticky = in_dir("sticky");
	char path[256];
	int status;
	pid_t pid;

	need_root();
	cr_assert_eq(mkdir(sticky, 0777), 0);
	cr_assert_eq(chmod(sticky, 01777), 0);
	snprintf(path, sizeof(path), "%s/root.svg", sticky);
	put(path, "root's");
	cr_assert_eq(chmod(path, 0666), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct outfile of;
		int ret;

		if (setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
			_exit(10);
		ret = outfile_open(&of, path);
		if (ret != PERR_PERM)
			_exit(11);
		if (strcmp(of.bad, path) || of.bad_uid != 0)
			_exit(12);
		outfile_close(&of);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
	assert_contents(path, "root's");
	cr_assert_eq(entries(sticky), 1, "a temporary file is left");
}
