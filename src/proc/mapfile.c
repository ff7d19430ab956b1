/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#ifdef HAVE_LINUX_OPENAT2_H
#include <linux/openat2.h>
#endif

#include "proc/mapfile.h"

/* How a file is opened for reading, once it is known to be the right one. */
#define READ_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

/* The first bytes compared when maps and fstat() disagree (overlayfs). */
#define CONTENT_CHECK 4096
#define OVERLAYFS_MAGIC 0x794c7630	/* linux/magic.h OVERLAYFS_SUPER_MAGIC */

const char *mapfile_refusal_str(enum mapfile_refusal why)
{
	switch (why) {
	case MAPFILE_FIFO:
		return "a FIFO, not the file the process mapped";
	case MAPFILE_DEVICE:
		return "a device, not the file the process mapped";
	case MAPFILE_NOT_REGULAR:
		return "not a regular file";
	case MAPFILE_OTHER_FILE:
		return "another file than the one the process mapped";
	case MAPFILE_LINK:
		return "a symbolic link where the mapped file was";
	default:
		return "refused";
	}
}

static int sys_openat2(int dirfd, const char *path, unsigned long long resolve)
{
#if defined(HAVE_LINUX_OPENAT2_H) && defined(SYS_openat2)
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = resolve };

	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
#else
	(void)dirfd;
	(void)path;
	(void)resolve;
	errno = ENOSYS;
	return -1;
#endif
}

/*
 * The walk, for kernels without openat2() (before 5.6) and for seccomp
 * filters that refuse it: one component at a time, each opened O_PATH |
 * O_NOFOLLOW from the directory before it, which is held open, so that
 * nothing renamed meanwhile can move us out of dirfd.  A link is read and
 * its target walked in its place: from dirfd when absolute (in root), with
 * ".." never going above dirfd (MAPFILE_NO_LINKS: EXDEV, as openat2()).
 * A magic link (/proc/N/root, /proc/N/fd/M) is read as text like any
 * other link: the walk never jumps where it points.
 */
static int walk(int dirfd, const char *path, enum mapfile_resolve how)
{
	int stack[MAPFILE_MAX_DEPTH + 1];
	size_t depth = 0;
	char rest[PATH_MAX], next[PATH_MAX], link[PATH_MAX];
	const char *p;
	int links = 0, fd = -1, saved;

	if (strlen(path) >= sizeof(rest)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(rest, path);
	stack[0] = openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (stack[0] < 0)
		return -1;
	p = rest;
	for (;;) {
		const char *end;
		char name[NAME_MAX + 1];
		struct stat st;
		size_t len;
		ssize_t n;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchrnul(p, '/');
		len = (size_t)(end - p);
		if (len > NAME_MAX) {
			errno = ENAMETOOLONG;
			goto fail;
		}
		memcpy(name, p, len);
		name[len] = '\0';
		p = end;
		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			if (depth)
				close(stack[depth--]);
			else if (how == MAPFILE_NO_LINKS) {
				errno = EXDEV;	/* as RESOLVE_BENEATH */
				goto fail;
			}
			continue;
		}
		fd = openat(stack[depth], name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0)
			goto fail;
		if (S_ISLNK(st.st_mode)) {
			if (how != MAPFILE_IN_ROOT || ++links > MAPFILE_MAX_LINKS) {
				errno = ELOOP;
				goto fail;
			}
			n = readlinkat(fd, "", link, sizeof(link));
			close(fd);
			fd = -1;
			if (n <= 0 || (size_t)n >= sizeof(link)) {
				errno = n < 0 ? errno : n ? ENAMETOOLONG : ENOENT;
				goto fail;
			}
			link[n] = '\0';
			if ((size_t)snprintf(next, sizeof(next), "%s/%s", link, p) >= sizeof(next)) {
				errno = ENAMETOOLONG;
				goto fail;
			}
			strcpy(rest, next);
			p = rest;
			if (*link == '/')
				while (depth)
					close(stack[depth--]);
			continue;
		}
		while (*p == '/')
			p++;
		if (!*p) {
			/* the last component: the caller looks at what it is */
			while (depth)
				close(stack[depth--]);
			close(stack[0]);
			return fd;
		}
		if (!S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			goto fail;
		}
		if (depth == MAPFILE_MAX_DEPTH) {
			errno = ENAMETOOLONG;
			goto fail;
		}
		stack[++depth] = fd;
		fd = -1;
	}
	/* the path named dirfd itself, or what ".." left of it */
	fd = stack[depth];
	for (size_t i = 0; i < depth; i++)
		close(stack[i]);
	return fd;
fail:
	saved = errno;
	if (fd >= 0)
		close(fd);
	while (depth)
		close(stack[depth--]);
	close(stack[0]);
	errno = saved;
	return -1;
}

int mapfile_resolve(int dirfd, const char *path, enum mapfile_resolve how, int use_walk)
{
#ifdef HAVE_LINUX_OPENAT2_H
	unsigned long long resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	const char *rel = path;
	int fd = -1;

	/* beneath dirfd, an absolute path too, as in the walk */
	if (how == MAPFILE_NO_LINKS) {
		resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
		while (*rel == '/')
			rel++;
		if (!*rel)
			rel = ".";
	}
	for (int tries = 0; !use_walk && tries < 4; tries++) {
		fd = sys_openat2(dirfd, rel, resolve);
		/* EAGAIN: a rename raced the walk of ".."; ENOSYS, EPERM: no openat2 */
		if (fd >= 0 || (errno != EAGAIN && errno != ENOSYS && errno != EPERM))
			return fd;
		if (errno != EAGAIN)
			break;
	}
#else
	(void)sys_openat2;
#endif
	return walk(dirfd, path, how);
}

/* The first bytes of the file are what the target has mapped at m->start. */
static int same_content(int fd, const struct procmap *m, struct procmem *mem)
{
	unsigned char mine[CONTENT_CHECK], theirs[CONTENT_CHECK];
	size_t len = m->end - m->start < sizeof(mine) ? (size_t)(m->end - m->start) : sizeof(mine);
	ssize_t n;

	if (!len || !(m->perms & PROCMAP_R))
		return 0;
	n = pread(fd, mine, len, (off_t)m->offset);
	if (n != (ssize_t)len)
		return 0;
	return !procmem_read(mem, m->start, theirs, len) && !memcmp(mine, theirs, len);
}

/*
 * One candidate, an O_PATH descriptor (or -1 with errno): PERR_OK with
 * mf->fd open for reading, PERR_REFUSED with the reason kept in mf unless
 * one is there already, PERR_NOTFOUND, or PERR_PERM.
 */
static enum perr try_candidate(struct mapfile *mf, int pathfd, const struct procmap *m,
			       struct procmem *mem)
{
	enum mapfile_refusal why = MAPFILE_NONE;
	char self[64];
	struct stat st;
	struct statfs sfs;
	int fd = -1, same, overlay;

	if (pathfd < 0) {
		if (errno == ELOOP || errno == EXDEV)
			why = MAPFILE_LINK;
		else
			return errno == EACCES || errno == EPERM ? PERR_PERM : PERR_NOTFOUND;
		goto refuse;
	}
	if (fstat(pathfd, &st) < 0) {
		close(pathfd);
		return PERR_NOTFOUND;
	}
	if (S_ISFIFO(st.st_mode))
		why = MAPFILE_FIFO;
	else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
		why = MAPFILE_DEVICE;
	else if (!S_ISREG(st.st_mode))
		why = MAPFILE_NOT_REGULAR;
	if (why != MAPFILE_NONE) {
		close(pathfd);
		goto refuse;
	}
	same = (uint64_t)st.st_ino == m->inode && major(st.st_dev) == m->dev_major &&
	       minor(st.st_dev) == m->dev_minor;
	/*
	 * On overlayfs maps may show the numbers of the layer's file and
	 * fstat() the overlay's: there, and only there, the content decides.
	 * Anywhere else another file is refused without being opened.
	 */
	overlay = fstatfs(pathfd, &sfs) == 0 && sfs.f_type == OVERLAYFS_MAGIC;
	if (!same && !overlay) {
		close(pathfd);
		why = MAPFILE_OTHER_FILE;
		goto refuse;
	}
	/* a regular file: opening it for reading cannot block or act */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pathfd);
	fd = open(self, READ_FLAGS);
	close(pathfd);
	if (fd < 0)
		return PERR_NOTFOUND;
	if (!same && !same_content(fd, m, mem)) {
		close(fd);
		why = MAPFILE_OTHER_FILE;
		goto refuse;
	}
	mf->fd = fd;
	return PERR_OK;
refuse:
	if (mf->refused == MAPFILE_NONE)
		mf->refused = why;
	return PERR_REFUSED;
}

enum perr mapfile_open(struct mapfile *mf, pid_t pid, const struct procmap *m, int exe,
		       struct procmem *mem)
{
	const char *path = procmaps_file(m);
	int refused = 0, perm = 0, dirfd;
	char proc[64];
	enum perr err;

	mf->fd = -1;
	mf->refused = MAPFILE_NONE;

	snprintf(mf->how, sizeof(mf->how), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid,
		 m->start, m->end);
	err = try_candidate(mf, open(mf->how, O_PATH | O_CLOEXEC), m, mem);
	if (!err)
		return PERR_OK;
	/* PERR_PERM there only says we lack CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE */
	refused |= err == PERR_REFUSED;

	if (exe) {
		snprintf(mf->how, sizeof(mf->how), "/proc/%d/exe", (int)pid);
		err = try_candidate(mf, open(mf->how, O_PATH | O_CLOEXEC), m, mem);
		if (!err)
			return PERR_OK;
		refused |= err == PERR_REFUSED;
		perm |= err == PERR_PERM;
	} else if (path) {
		snprintf(proc, sizeof(proc), "/proc/%d/root", (int)pid);
		dirfd = open(proc, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dirfd < 0) {
			perm |= errno == EACCES || errno == EPERM;
		} else {
			snprintf(mf->how, sizeof(mf->how), "%s%s", proc, path);
			err = try_candidate(mf, mapfile_resolve(dirfd, path, MAPFILE_IN_ROOT, 0), m,
					    mem);
			close(dirfd);
			if (!err)
				return PERR_OK;
			refused |= err == PERR_REFUSED;
		}
		/* a chrooted target: maps shows our paths, which have no link */
		dirfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dirfd >= 0) {
			snprintf(mf->how, sizeof(mf->how), "%s", path);
			err = try_candidate(mf, mapfile_resolve(dirfd, path, MAPFILE_NO_LINKS, 0), m,
					    mem);
			close(dirfd);
			if (!err)
				return PERR_OK;
			refused |= err == PERR_REFUSED;
		}
	}
	mf->how[0] = '\0';
	return refused ? PERR_REFUSED : perm ? PERR_PERM : PERR_NOTFOUND;
}
