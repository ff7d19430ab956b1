/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "output/outfile.h"
#include "util/xalloc.h"

/* As many links as the kernel follows in one path (MAXSYMLINKS). */
#define MAX_LINKS 40
#define TMP_TRIES 100

/*
 * Where the walk of a path the user gave ended: the directory and the last
 * component, as it is now.
 */
struct walk {
	int dirfd;			/* O_PATH */
	char name[NAME_MAX + 1];
	struct stat st;			/* lstat() of it; st_mode 0 if absent */
	int magic;			/* a /proc link: the kernel follows it */
	char where[PATH_MAX];		/* the directory as walked, for messages */
};

/*
 * May a link (or a FIFO, a device) in directory dir, owned as lnk is, be
 * followed (opened)?  Who made a link chose where it points, and could
 * have made it only by writing the directory.  The rule of
 * fs.protected_symlinks (the follower's own links, and those of the
 * directory's owner) applies to every directory someone other than the
 * invoking user and root can write, not only to sticky world-writable
 * ones; and the directory's owner counts only if it is root, since in the
 * target's own directory that owner is the attacker.
 */
static int entry_trusted(const struct stat *dir, const struct stat *lnk)
{
	uid_t me = geteuid();

	if (lnk->st_uid == me)
		return 1;
	if (lnk->st_uid == 0 && dir->st_uid == 0)
		return 1;
	return (dir->st_uid == me || dir->st_uid == 0) && !(dir->st_mode & (S_IWGRP | S_IWOTH));
}

static void where_add(char *where, const char *comp)
{
	size_t len = strlen(where);

	snprintf(where + len, PATH_MAX - len, "%s%s", len && where[len - 1] != '/' ? "/" : "",
		 comp);
}

static int reopen_root(int *fd, char *where)
{
	int nfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (nfd < 0)
		return -1;
	close(*fd);
	*fd = nfd;
	strcpy(where, "/");
	return 0;
}

/*
 * Resolve path one component at a time from the current or root
 * directory, each opened with O_PATH|O_NOFOLLOW so that what is checked is
 * what is used.  A link is followed only by entry_trusted(), by reading it
 * and going on with its text; a link on /proc (/proc/self, /proc/self/fd/1
 * behind /dev/stdout) points at an open file rather than a path, so the
 * kernel follows it, one component only.
 */
static enum perr walk_path(struct outfile *of, const char *path, struct walk *w)
{
	char *rest = xmalloc(PATH_MAX), *next = xmalloc(PATH_MAX), *p;
	unsigned int links = 0;
	enum perr ret = PERR_IO;
	int fd = -1, lfd = -1;

	w->dirfd = -1;
	w->magic = 0;
	if (!*path) {
		errno = ENOENT;
		goto out;
	}
	if (strlen(path) >= PATH_MAX) {
		errno = ENAMETOOLONG;
		goto out;
	}
	strcpy(rest, path);
	strcpy(w->where, *path == '/' ? "/" : "");
	fd = open(*path == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		goto out;
	for (p = rest;;) {
		char *comp, *end;
		struct stat st, dst;
		struct statfs sfs;
		ssize_t n;
		int last;

		while (*p == '/')
			p++;
		comp = p;
		if (!*comp) {		/* "/", "dir/" */
			errno = EISDIR;
			goto out;
		}
		end = strchr(comp, '/');
		last = !end;
		if (end) {
			*end = '\0';
			p = end + 1;
		} else {
			p = comp + strlen(comp);
		}
		if (strlen(comp) > NAME_MAX) {
			errno = ENAMETOOLONG;
			goto out;
		}
		if (last && (!strcmp(comp, ".") || !strcmp(comp, ".."))) {
			errno = EISDIR;
			goto out;
		}
		if (!strcmp(comp, "."))
			continue;
		if (last)
			strcpy(w->name, comp);
		lfd = openat(fd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (lfd < 0 && !(last && errno == ENOENT))
			goto out;
		if (lfd < 0) {
			memset(&w->st, 0, sizeof(w->st));
			break;
		}
		if (fstat(lfd, &st))
			goto out;
		if (!S_ISLNK(st.st_mode)) {
			if (last) {
				w->st = st;
				break;
			}
			if (!S_ISDIR(st.st_mode)) {
				errno = ENOTDIR;
				goto out;
			}
			close(fd);
			fd = lfd;
			lfd = -1;
			where_add(w->where, comp);
			continue;
		}
		if (fstat(fd, &dst) || fstatfs(fd, &sfs))
			goto out;
		if (!entry_trusted(&dst, &st)) {
			where_add(w->where, comp);
			of->bad = xstrdup(w->where);
			of->bad_uid = st.st_uid;
			of->bad_mode = st.st_mode;
			ret = PERR_UNSAFE;
			goto out;
		}
		if (++links > MAX_LINKS) {
			errno = ELOOP;
			goto out;
		}
		if (sfs.f_type == PROC_SUPER_MAGIC) {
			int nfd;

			if (last) {
				w->magic = 1;
				break;
			}
			nfd = openat(fd, comp, O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (nfd < 0)
				goto out;
			close(fd);
			fd = nfd;
			where_add(w->where, comp);
			close(lfd);
			lfd = -1;
			continue;
		}
		n = readlinkat(lfd, "", next, PATH_MAX);
		if (n < 0)
			goto out;
		if (n == 0 || (size_t)n + 1 + strlen(p) >= PATH_MAX) {
			errno = n ? ENAMETOOLONG : ENOENT;
			goto out;
		}
		next[n] = '\0';
		if (!last)
			snprintf(next + n, (size_t)(PATH_MAX - n), "/%s", p);
		close(lfd);
		lfd = -1;
		/* the link's text, then what followed it, from the link's directory */
		p = rest;
		rest = next;
		next = p;
		p = rest;
		if (*rest == '/' && reopen_root(&fd, w->where))
			goto out;
	}
	ret = PERR_OK;
out:
	if (lfd >= 0)
		close(lfd);
	if (ret == PERR_OK) {
		w->dirfd = fd;
	} else if (fd >= 0) {
		int e = errno;

		close(fd);
		errno = e;
	}
	free(rest);
	free(next);
	return ret;
}

/* len characters a name may hold, unpredictable to whoever watches the directory. */
static void random_suffix(char *buf, size_t len)
{
	static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	static unsigned int counter;
	unsigned char r[16];

	if (len > sizeof(r))
		len = sizeof(r);
	if (getrandom(r, len, GRND_NONBLOCK) != (ssize_t)len) {
		struct timespec ts;
		uint64_t x;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		x = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^
		    (++counter * 0x9e3779b97f4a7c15ull);
		for (size_t i = 0; i < len; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			r[i] = (unsigned char)(x >> 56);
		}
	}
	for (size_t i = 0; i < len; i++)
		buf[i] = set[r[i] % (sizeof(set) - 1)];
	buf[len] = '\0';
}

/*
 * A new file next to base in of->dirfd, with the mode fopen() would give
 * (0666 less the umask).  O_EXCL|O_NOFOLLOW: a name planted in advance is
 * skipped, never opened.
 */
static enum perr tmp_create(struct outfile *of, const char *base)
{
	for (int i = 0; i < TMP_TRIES; i++) {
		char rnd[8];
		int fd, e;

		random_suffix(rnd, 6);
		of->tmp = xstrfmt(".%.200s.pyrospy-%s", base, rnd);
		fd = openat(of->dirfd, of->tmp,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0666);
		if (fd >= 0) {
			of->f = fdopen(fd, "w");
			if (of->f)
				return PERR_OK;
			e = errno;
			unlinkat(of->dirfd, of->tmp, 0);
			close(fd);
			errno = e;
		}
		e = errno;
		FREE_AND_NULL(of->tmp);
		errno = e;
		if (e != EEXIST)
			return PERR_IO;
	}
	errno = EEXIST;
	return PERR_IO;
}

/*
 * A device, a FIFO or one of pyrospy's own files behind a /proc link is
 * written where it is: renaming over it would replace /dev/null or the
 * FIFO, and there is nothing to rename over /dev/stdout.  A file reached
 * through /proc that is regular (stdout redirected to a file) is appended
 * to, as the shell opened it, never truncated.
 */
static enum perr direct_open(struct outfile *of, const struct walk *w)
{
	struct stat st;
	int fd, e;

	fd = openat(w->dirfd, w->name,
		    O_WRONLY | O_NOCTTY | O_CLOEXEC | (w->magic ? O_APPEND : O_NOFOLLOW));
	if (fd < 0)
		return PERR_IO;
	if (fstat(fd, &st))
		goto fail;
	/* swapped for something else since it was looked at */
	if (!w->magic && (st.st_dev != w->st.st_dev || st.st_ino != w->st.st_ino)) {
		errno = EAGAIN;
		goto fail;
	}
	of->f = fdopen(fd, "w");
	if (of->f)
		return PERR_OK;
fail:
	e = errno;
	close(fd);
	errno = e;
	return PERR_IO;
}

enum perr outfile_open(struct outfile *of, const char *path)
{
	struct walk *w;
	struct stat dst;
	enum perr ret;
	uid_t me = geteuid();

	memset(of, 0, sizeof(*of));
	of->dirfd = -1;
	of->path = xstrdup(path);
	if (!strcmp(path, "-")) {
		of->f = stdout;
		return PERR_OK;
	}
	w = xmalloc(sizeof(*w));
	ret = walk_path(of, path, w);
	if (ret)
		goto out;
	of->dirfd = w->dirfd;
	of->name = xstrdup(w->name);
	ret = PERR_IO;
	if (fstat(of->dirfd, &dst))
		goto out;
	if (w->magic) {
		ret = direct_open(of, w);
		goto out;
	}
	if (S_ISDIR(w->st.st_mode)) {
		errno = EISDIR;
		goto out;
	}
	if (w->st.st_mode && !S_ISREG(w->st.st_mode)) {
		/* another user's FIFO where others write would hang pyrospy */
		if (!entry_trusted(&dst, &w->st)) {
			of->bad = xstrdup(path);
			of->bad_uid = w->st.st_uid;
			of->bad_mode = w->st.st_mode;
			ret = PERR_UNSAFE;
			goto out;
		}
		ret = direct_open(of, w);
		goto out;
	}
	/*
	 * rename() in a sticky directory replaces only a file of the caller
	 * or of the directory's owner (or with CAP_FOWNER: root is assumed to
	 * have it, else the rename says so).  Say it now, not after sampling.
	 */
	if (w->st.st_mode && (dst.st_mode & S_ISVTX) && me != 0 && w->st.st_uid != me &&
	    dst.st_uid != me) {
		of->bad = xstrdup(path);
		of->bad_uid = w->st.st_uid;
		of->bad_mode = w->st.st_mode;
		errno = EPERM;
		ret = PERR_PERM;
		goto out;
	}
	ret = tmp_create(of, w->name);
out:
	free(w);
	return ret;
}

enum perr outfile_open_input(struct outfile *of, const char *path)
{
	struct walk *w;
	struct stat st;
	enum perr ret;
	int fd = -1, e;

	memset(of, 0, sizeof(*of));
	of->dirfd = -1;
	of->path = xstrdup(path);
	w = xmalloc(sizeof(*w));
	ret = walk_path(of, path, w);
	if (ret)
		goto out;
	of->dirfd = w->dirfd;
	of->name = xstrdup(w->name);
	ret = PERR_IO;
	if (!w->magic && !w->st.st_mode) {
		errno = ENOENT;
		goto out;
	}
	if (!w->magic && S_ISDIR(w->st.st_mode)) {
		errno = EISDIR;
		goto out;
	}
	/* a FIFO nobody writes would hang the read; a device is no profile */
	if (!w->magic && !S_ISREG(w->st.st_mode)) {
		st = w->st;
		goto irregular;
	}
	/* O_NONBLOCK: a FIFO swapped in (or behind /proc) does not block the open */
	fd = openat(w->dirfd, w->name,
		    O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (w->magic ? 0 : O_NOFOLLOW));
	if (fd < 0 || fstat(fd, &st))
		goto out;
	if (!S_ISREG(st.st_mode))
		goto irregular;
	/* swapped for something else since it was looked at */
	if (!w->magic && (st.st_dev != w->st.st_dev || st.st_ino != w->st.st_ino)) {
		errno = EAGAIN;
		goto out;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK))
		goto out;
	of->f = fdopen(fd, "rb");
	if (of->f) {
		fd = -1;
		ret = PERR_OK;
	}
	goto out;
irregular:
	of->bad = xstrdup(path);
	of->bad_uid = st.st_uid;
	of->bad_mode = st.st_mode;
	ret = PERR_UNSAFE;
out:
	e = errno;
	if (fd >= 0)
		close(fd);
	free(w);
	errno = e;
	return ret;
}

enum perr outfile_open_new(struct outfile *of, const char *stem, const char *ext)
{
	memset(of, 0, sizeof(*of));
	of->dirfd = -1;
	of->exclusive = 1;
	of->name = xstrdup(stem);
	of->ext = xstrdup(ext);
	of->path = xstrfmt("%s.%s", stem, ext);
	if (!*stem || strchr(of->path, '/')) {
		errno = EINVAL;
		return PERR_IO;
	}
	of->dirfd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (of->dirfd < 0)
		return PERR_IO;
	return tmp_create(of, of->path);
}

void outfile_set_stem(struct outfile *of, const char *stem)
{
	if (!of->exclusive || !of->tmp || !*stem || strchr(stem, '/'))
		return;
	free(of->name);
	free(of->path);
	of->name = xstrdup(stem);
	of->path = xstrfmt("%s.%s", stem, of->ext);
}

/*
 * The temporary file becomes name unless name exists (EEXIST), whatever it
 * is: a planted link is left alone, never followed nor replaced.
 */
static int place_new(struct outfile *of, const char *name)
{
	if (!renameat2(of->dirfd, of->tmp, of->dirfd, name, RENAME_NOREPLACE))
		return 0;
	/* no RENAME_NOREPLACE (NFS, an old seccomp filter): link() never replaces either */
	if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP && errno != EPERM)
		return -1;
	if (linkat(of->dirfd, of->tmp, of->dirfd, name, 0))
		return -1;
	unlinkat(of->dirfd, of->tmp, 0);
	return 0;
}

/* Flush f, and with a temporary file get it on disk; -1 with errno set. */
static int flush_file(struct outfile *of)
{
	if (fflush(of->f) == EOF)
		return -1;
	if (ferror(of->f)) {
		errno = EIO;
		return -1;
	}
	/* on disk before it replaces anything: a crash leaves the old file or the new */
	if (of->tmp && fsync(fileno(of->f)) && errno != EINVAL)
		return -1;
	return 0;
}

/* Move the temporary file, complete or open, into place. */
static enum perr place(struct outfile *of)
{
	int e;

	if (!of->tmp)
		return PERR_OK;
	if (of->exclusive) {
		for (unsigned int i = 0; i < OUTFILE_MAX_NAMES; i++) {
			char *name = i ? xstrfmt("%s-%u.%s", of->name, i, of->ext) :
					 xstrfmt("%s.%s", of->name, of->ext);

			if (!place_new(of, name)) {
				free(of->path);
				of->path = name;
				FREE_AND_NULL(of->tmp);
				return PERR_OK;
			}
			e = errno;
			free(name);
			if (e != EEXIST) {
				errno = e;
				return PERR_IO;
			}
		}
		errno = EEXIST;
		return PERR_IO;
	}
	/* rename() never follows a link at the new name: it replaces it */
	if (renameat(of->dirfd, of->tmp, of->dirfd, of->name))
		return errno == EPERM || errno == EACCES ? PERR_PERM : PERR_IO;
	FREE_AND_NULL(of->tmp);
	return PERR_OK;
}

enum perr outfile_commit(struct outfile *of)
{
	FILE *f = of->f;
	int failed, e = 0;

	if (!f) {
		errno = EBADF;
		return PERR_IO;
	}
	if (f == stdout)
		return fflush(stdout) == EOF || ferror(stdout) ? PERR_IO : PERR_OK;
	failed = flush_file(of) != 0;
	if (failed)
		e = errno;
	of->f = NULL;
	if (fclose(f) == EOF && !failed) {
		e = errno;
		failed = 1;
	}
	if (failed) {
		errno = e;
		return PERR_IO;
	}
	return place(of);
}

enum perr outfile_place(struct outfile *of)
{
	if (!of->f) {
		errno = EBADF;
		return PERR_IO;
	}
	if (of->f == stdout || !of->tmp)
		return fflush(of->f) == EOF || ferror(of->f) ? PERR_IO : PERR_OK;
	if (flush_file(of))
		return PERR_IO;
	return place(of);
}

void outfile_close(struct outfile *of)
{
	int e = errno;

	if (of->f && of->f != stdout)
		fclose(of->f);
	of->f = NULL;
	if (of->tmp && of->dirfd >= 0)
		unlinkat(of->dirfd, of->tmp, 0);
	if (of->dirfd >= 0)
		close(of->dirfd);
	of->dirfd = -1;
	FREE_AND_NULL(of->tmp);
	FREE_AND_NULL(of->name);
	FREE_AND_NULL(of->ext);
	FREE_AND_NULL(of->path);
	FREE_AND_NULL(of->bad);
	errno = e;
}
