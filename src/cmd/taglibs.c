/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/taglibs.h"
#include "util/xalloc.h"

/* Deeper than this, removal stops: the copy holds two levels and __pycache__. */
#define MAX_DEPTH 16

const char *taglibs_installed(void)
{
#ifdef PYROSPY_PORTABLE
	/* one file is the whole tool: never mix in another version's helpers */
	return NULL;
#else
	static const char *const dirs[] = { PKGDATADIR, HELPERS_SRCDIR };
	char path[PATH_MAX];

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(path, sizeof(path), "%s/python/pyrospy.py", dirs[i]);
		if (!access(path, R_OK))
			return dirs[i];
	}
	return NULL;
#endif
}

/*
 * The helpers of the package that installed this binary, if any.  A path
 * with glob characters in it matches nothing, and the extracted helpers
 * are used: the same files, from another place.
 */
void taglibs_packaged(struct taglibs *h)
{
	char exe[PATH_MAX], path[PATH_MAX + 64], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	glob_t g;

	if (n <= 0)
		return;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = '\0';
	snprintf(path, sizeof(path), "%s/../lib/python3*/site-packages/pyrospy.py", exe);
	if (!glob(path, GLOB_NOSORT, NULL, &g)) {
		h->own_python = 1;
		globfree(&g);
	}
	snprintf(path, sizeof(path), "%s/../lib/pyrospy.rb", exe);
	h->own_ruby = !access(path, R_OK);
}

enum perr taglibs_init(struct taglibs *h)
{
	const char *dir = taglibs_installed();

	h->dir[0] = '\0';
	h->owned = 0;
	h->own_python = 0;
	h->own_ruby = 0;
	taglibs_packaged(h);
	if (!dir)
		return taglibs_extract(h);
	snprintf(h->dir, sizeof(h->dir), "%s", dir);
	return PERR_OK;
}

static int write_all(int fd, const unsigned char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One helper, and the directories it sits in, inside the private dirfd. */
static int write_helper(int dirfd, const struct taglibs_file *f)
{
	int fd, ret;

	for (const char *slash = strchr(f->name, '/'); slash; slash = strchr(slash + 1, '/')) {
		char sub[64];

		if ((size_t)(slash - f->name) >= sizeof(sub)) {
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(sub, f->name, (size_t)(slash - f->name));
		sub[slash - f->name] = '\0';
		if (mkdirat(dirfd, sub, 0700) < 0 && errno != EEXIST)
			return -1;
	}
	fd = openat(dirfd, f->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	ret = write_all(fd, f->data, f->len);
	if (close(fd) < 0)
		ret = -1;
	return ret;
}

enum perr taglibs_extract(struct taglibs *h)
{
	const char *tmp = getenv("TMPDIR");
	struct stat st;
	int dirfd = -1, saved;
	size_t n;

	h->dir[0] = '\0';
	h->owned = 0;
	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	n = (size_t)snprintf(h->dir, sizeof(h->dir), "%s/pyrospy-helpers.XXXXXX", tmp);
	if (n >= sizeof(h->dir)) {
		h->dir[0] = '\0';
		errno = ENAMETOOLONG;
		return PERR_IO;
	}
	/* mkdir() with a fresh random name until one is new: never an existing directory */
	if (!mkdtemp(h->dir)) {
		h->dir[0] = '\0';
		return PERR_IO;
	}
	h->owned = 1;
	dirfd = open(h->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0)
		goto fail;
	/* still the one made above, should TMPDIR let others rename entries */
	if (fstat(dirfd, &st) < 0)
		goto fail;
	if (st.st_uid != geteuid() || (st.st_mode & 077)) {
		errno = EPERM;
		goto fail;
	}
	for (const struct taglibs_file *f = taglibs_files; f->name; f++)
		if (write_helper(dirfd, f) < 0)
			goto fail;
	close(dirfd);
	return PERR_OK;
fail:
	saved = errno;
	if (dirfd >= 0)
		close(dirfd);
	taglibs_release(h);
	errno = saved;
	return PERR_IO;
}

/* Make the directory open as fd (which this closes), and all in it, readable by all. */
static int share_dir(int fd, int depth)
{
	DIR *d;
	struct dirent *e;
	int ret = 0;

	if (fchmod(fd, 0755) < 0 || !(d = fdopendir(fd))) {
		close(fd);
		return -1;
	}
	while ((e = readdir(d)) && !ret) {
		struct stat st;
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		/* no link is followed: a link in the copy is no helper of ours */
		sub = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (sub < 0 && errno == ELOOP)
			continue;
		if (sub < 0 || fstat(sub, &st) < 0) {
			ret = -1;
		} else if (S_ISDIR(st.st_mode) && depth < MAX_DEPTH) {
			ret = share_dir(sub, depth + 1);
			sub = -1;
		} else if (S_ISREG(st.st_mode)) {
			ret = fchmod(sub, 0644);
		}
		if (sub >= 0)
			close(sub);
	}
	closedir(d);
	return ret;
}

enum perr taglibs_share(const struct taglibs *h)
{
	int fd;

	if (!h->owned || !h->dir[0])
		return PERR_OK;
	fd = open(h->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || share_dir(fd, 0) < 0)
		return PERR_IO;
	return PERR_OK;
}

/* Empty the directory open as fd (which this closes); links are removed, not followed. */
static void empty_dir(int fd, int depth)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;

	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d))) {
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!unlinkat(dirfd(d), e->d_name, 0) || errno != EISDIR || depth >= MAX_DEPTH)
			continue;
		sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		empty_dir(sub, depth + 1);
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

void taglibs_release(struct taglibs *h)
{
	if (h->owned && h->dir[0]) {
		int fd = open(h->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (fd >= 0)
			empty_dir(fd, 0);
		rmdir(h->dir);
	}
	h->dir[0] = '\0';
	h->owned = 0;
}
