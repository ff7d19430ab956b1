/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/mapfile.h"

/*
 * A directory standing for a target's root, with the links a hostile
 * target would plant in it:
 *
 *   root/etc/target          a file
 *   root/etc/hostname        a file the host has too (/etc/hostname)
 *   root/lib/rel -> ../etc/target
 *   root/abs -> /etc/hostname        in root: root/etc/hostname
 *   root/up -> ../../../../../../etc/passwd   in root: root/etc/passwd (none)
 *   root/loop1 <-> root/loop2
 *   root/chain0 -> chain1 -> ... -> chain41 -> etc/target  (one link too many)
 *   root/fifo                a FIFO nobody writes to
 */
static char root[64];
static int rootfd = -1;

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static void link_at(const char *target, const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	cr_assert_eq(symlink(target, path), 0, "%s: %s", path, strerror(errno));
}

static void tree_setup(void)
{
	char path[256];

	strcpy(root, "/tmp/pyrospy-mapfile-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/etc", root);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/lib", root);
	cr_assert_eq(mkdir(path, 0755), 0);
	put("etc/target", "target");
	put("etc/hostname", "inside");
	link_at("../etc/target", "lib/rel");
	link_at("/etc/hostname", "abs");
	link_at("../../../../../../etc/passwd", "up");
	link_at("loop2", "loop1");
	link_at("loop1", "loop2");
	for (int i = 0; i <= MAPFILE_MAX_LINKS; i++) {
		char name[32], next[32];

		snprintf(name, sizeof(name), "chain%d", i);
		if (i == MAPFILE_MAX_LINKS)
			snprintf(next, sizeof(next), "etc/target");
		else
			snprintf(next, sizeof(next), "chain%d", i + 1);
		link_at(next, name);
	}
	snprintf(path, sizeof(path), "%s/fifo", root);
	cr_assert_eq(mkfifo(path, 0600), 0);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	cr_assert(rootfd >= 0);
}

static void tree_teardown(void)
{
	char cmd[128];

	close(rootfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		cr_log_warn("cannot remove %s", root);
}

TestSuite(mapfile, .init = tree_setup, .fini = tree_teardown, .timeout = 20);

static ino_t ino_of(const char *rel)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	cr_assert_eq(lstat(path, &st), 0, "%s", path);
	return st.st_ino;
}

/* path resolves (openat2, then the walk) to root/want, or fails with err. */
static void expect(const char *path, enum mapfile_resolve how, const char *want, int err)
{
	for (int walk = 0; walk < 2; walk++) {
		const char *mode = walk ? "walk" : "openat2";
		struct stat st;
		int fd;

		errno = 0;
		fd = mapfile_resolve(rootfd, path, how, walk);
		if (!want) {
			cr_assert_lt(fd, 0, "%s (%s): resolved, should not", path, mode);
			cr_assert_eq(errno, err, "%s (%s): %s, want %s", path, mode, strerror(errno),
				     strerror(err));
			continue;
		}
		cr_assert_geq(fd, 0, "%s (%s): %s", path, mode, strerror(errno));
		cr_assert_eq(fstat(fd, &st), 0);
		cr_assert_eq(st.st_ino, ino_of(want), "%s (%s): not %s", path, mode, want);
		close(fd);
	}
}

Test(mapfile, links_resolve_inside_the_root)
{
	expect("/etc/target", MAPFILE_IN_ROOT, "etc/target", 0);
	expect("lib/rel", MAPFILE_IN_ROOT, "etc/target", 0);
	expect("/lib/../lib/./rel", MAPFILE_IN_ROOT, "etc/target", 0);
	/* an absolute link is the root's file, never the host's */
	expect("/abs", MAPFILE_IN_ROOT, "etc/hostname", 0);
	/* ".." stops at the root: root/etc/passwd, which is not there */
	expect("/up", MAPFILE_IN_ROOT, NULL, ENOENT);
	expect("/../../../../etc/target", MAPFILE_IN_ROOT, "etc/target", 0);
	expect("/loop1", MAPFILE_IN_ROOT, NULL, ELOOP);
	expect("/chain1", MAPFILE_IN_ROOT, "etc/target", 0);
	expect("/chain0", MAPFILE_IN_ROOT, NULL, ELOOP);
	expect("/etc/target/x", MAPFILE_IN_ROOT, NULL, ENOTDIR);
}

Test(mapfile, no_links_refuses_every_link)
{
	expect("/etc/target", MAPFILE_NO_LINKS, "etc/target", 0);
	expect("lib/rel", MAPFILE_NO_LINKS, NULL, ELOOP);
	expect("/abs", MAPFILE_NO_LINKS, NULL, ELOOP);
	expect("/../etc/target", MAPFILE_NO_LINKS, NULL, EXDEV);
}

/* A FIFO is looked at (O_PATH), never opened: this returns at once. */
Test(mapfile, fifo_does_not_block)
{
	struct stat st;

	for (int walk = 0; walk < 2; walk++) {
		int fd = mapfile_resolve(rootfd, "/fifo", MAPFILE_IN_ROOT, walk);

		cr_assert_geq(fd, 0);
		cr_assert_eq(fstat(fd, &st), 0);
		cr_assert(S_ISFIFO(st.st_mode));
		close(fd);
	}
}

/* Our own map of a file, as /proc/self/maps shows it. */
static const struct procmap *own_map(struct procmaps *maps, const void *addr)
{
	const struct procmap *m;

	cr_assert_eq(procmaps_read(maps, getpid()), PERR_OK);
	m = procmaps_find(maps, (uint64_t)(uintptr_t)addr);
	cr_assert_not_null(m);
	return m;
}

/*
 * A mapped file deleted and replaced by a FIFO: what is opened is the
 * mapped file itself (through map_files, as root), or nothing; never the
 * FIFO, and never a hang.
 */
Test(mapfile, mapped_file_replaced_by_a_fifo)
{
	char path[256];
	struct procmaps maps;
	struct procmem mem;
	struct mapfile mf;
	struct stat before, after;
	enum perr err;
	void *p;
	int fd;

	snprintf(path, sizeof(path), "%s/etc/target", root);
	fd = open(path, O_RDONLY);
	cr_assert(fd >= 0);
	cr_assert_eq(fstat(fd, &before), 0);
	p = mmap(NULL, 6, PROT_READ, MAP_PRIVATE, fd, 0);
	cr_assert_neq(p, MAP_FAILED);
	close(fd);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(mkfifo(path, 0600), 0);
	procmem_init(&mem, getpid());
	err = mapfile_open(&mf, getpid(), own_map(&maps, p), 0, &mem);
	if (geteuid() == 0) {
		cr_assert_eq(err, PERR_OK, "%s", perr_str(err));
		cr_assert_eq(fstat(mf.fd, &after), 0);
		cr_assert_eq(after.st_ino, before.st_ino, "the mapped file, not the FIFO");
		cr_assert(strstr(mf.how, "/map_files/"), "%s", mf.how);
		close(mf.fd);
	} else {
		cr_assert_eq(err, PERR_REFUSED, "%s", perr_str(err));
		cr_assert_eq(mf.refused, MAPFILE_FIFO);
	}
	procmaps_release(&maps);
	munmap(p, 6);
}
