/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_MAPFILE_H
#define PYROSPY_MAPFILE_H

#include <limits.h>
#include <sys/types.h>

#include "util/perr.h"
#include "proc/procmaps.h"
#include "proc/procmem.h"

/*
 * Opening the file behind a mapping of a target (its executable, its
 * libpython or libruby) without trusting the target's file system: the
 * target may have deleted the file and put a FIFO, a device or a symbolic
 * link where it was, or live in another mount namespace whose links must
 * not resolve in ours.  In order:
 *
 *   1. /proc/PID/map_files/START-END: the mapped inode itself (needs
 *      CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE);
 *   2. /proc/PID/exe for the executable; for a library its path inside
 *      the target's root (/proc/PID/root, openat2() RESOLVE_IN_ROOT |
 *      RESOLVE_NO_MAGICLINKS), then as a path of ours with no symbolic
 *      link at all (a chrooted target's maps show our paths).
 *
 * Each candidate is opened O_PATH first (an O_PATH open does not open a
 * FIFO or a device: no blocking, no side effect), and must be a regular
 * file whose device and inode are the map's; only then is it opened for
 * reading (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY).  Overlay file
 * systems may show other numbers in maps than fstat() does: a regular
 * file on overlayfs whose numbers differ is taken only when its first
 * page (up to 4 KiB) is byte for byte what the target has mapped at the
 * map's start, i.e. the target could have shown us those bytes anyway;
 * on any other file system it is refused unopened.
 */
enum mapfile_refusal {
	MAPFILE_NONE,
	MAPFILE_FIFO,		/* a FIFO where the mapped file was */
	MAPFILE_DEVICE,		/* a character or block device */
	MAPFILE_NOT_REGULAR,	/* a directory, a socket */
	MAPFILE_OTHER_FILE,	/* a regular file, but not the mapped one */
	MAPFILE_LINK,		/* a symbolic link where none may be */
};

struct mapfile {
	int fd;				/* open for reading; the caller closes it */
	char how[PATH_MAX + 64];	/* what was opened, for messages */
	enum mapfile_refusal refused;	/* the first refusal, if any */
};

/*
 * Open the file of map m of process pid (exe: m is the executable's).
 * mem reads the target (for the overlay case).  PERR_OK with mf->fd;
 * PERR_REFUSED when a candidate was there but refused (mf->refused says
 * why) and none was taken; PERR_PERM when /proc/PID refused us;
 * PERR_NOTFOUND otherwise (deleted, and no map_files).
 */
enum perr mapfile_open(struct mapfile *mf, pid_t pid, const struct procmap *m, int exe,
		       struct procmem *mem);

/* "a FIFO, not the file the process mapped" */
const char *mapfile_refusal_str(enum mapfile_refusal why);

/*
 * Resolve path under dirfd (an absolute path too) to an O_PATH
 * descriptor, as openat2() does with RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS (MAPFILE_IN_ROOT: symbolic links resolve inside
 * dirfd, ".." stops at it) or RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS
 * (MAPFILE_NO_LINKS: any link is ELOOP).  Uses openat2() unless walk is
 * set or the kernel or a seccomp filter refuses it, and otherwise a walk
 * of one component at a time with O_NOFOLLOW.  -1 with errno on failure.
 */
enum mapfile_resolve {
	MAPFILE_IN_ROOT,
	MAPFILE_NO_LINKS,
};
int mapfile_resolve(int dirfd, const char *path, enum mapfile_resolve how, int walk);

/* Caps of the walk: links followed, directories deep. */
#define MAPFILE_MAX_LINKS	40
#define MAPFILE_MAX_DEPTH	256

#endif
