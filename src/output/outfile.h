/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_OUTFILE_H
#define PYROSPY_OUTFILE_H

#include <stdio.h>
#include <sys/types.h>

#include "util/perr.h"

/*
 * The file a profile is written to, created so that a directory another
 * user can write (the target's own, where pyrospy is often started as
 * root) cannot send the write elsewhere:
 *
 *   - a name pyrospy chose (outfile_open_new) is never an existing file:
 *     the profile takes NAME.EXT, else NAME-1.EXT ... NAME-99.EXT, the
 *     first that is free when it is complete;
 *   - a name the user gave (outfile_open) is resolved one component at a
 *     time, and a symbolic link is followed (a FIFO or a device opened)
 *     only if it is the invoking user's, root's in a root-owned directory,
 *     or sits in a directory no one but the invoking user and root can
 *     write;
 *   - a regular file (or a new one) is written to a temporary file next to
 *     it and renamed into place by outfile_commit(): until then the old
 *     file is whole, and a failure leaves no half profile behind;
 *   - anything else (a character device, a FIFO, /dev/stdout) is written
 *     directly; "-" is stdout.
 */
struct outfile {
	FILE *f;		/* where to write, after a successful open */
	char *path;		/* the file, as the messages should name it */
	/* why an open failed with PERR_UNSAFE or PERR_PERM */
	char *bad;		/* the link refused, the file that cannot be replaced */
	uid_t bad_uid;		/* its owner */
	mode_t bad_mode;	/* its type (S_IFLNK ...) */
	/* private */
	int dirfd;		/* O_PATH: the directory of the file */
	char *name;		/* the file's name in dirfd; the stem when exclusive */
	char *ext;		/* exclusive: the extension */
	char *tmp;		/* the temporary file in dirfd, NULL if written directly */
	int exclusive;		/* never replace: take the next free name */
};

/* How many names outfile_open_new() tries: NAME, NAME-1 ... */
#define OUTFILE_MAX_NAMES 100

/*
 * Open path for writing, as described above.  Returns PERR_OK with of->f
 * set; PERR_UNSAFE when a link on the way may not be followed, or the
 * FIFO or device at path not opened (of->bad, bad_uid and bad_mode say
 * which); PERR_PERM when path is another user's file
 * in a sticky directory, which only its owner may replace (of->bad,
 * of->bad_uid); PERR_IO with errno set otherwise.  Call outfile_close()
 * in every case.
 */
enum perr outfile_open(struct outfile *of, const char *path);

/*
 * Open path for reading (report's and diff's inputs, --cacert), found as
 * outfile_open() finds a file: a link in a directory another user can
 * write is followed only if trusted.  Only a regular file is opened, and
 * with O_NONBLOCK, so that a FIFO or device (planted, or swapped in) can
 * neither block nor be read.  Returns PERR_OK with of->f set; PERR_UNSAFE
 * when a link may not be followed or path is no regular file (of->bad,
 * bad_uid and bad_mode say which: S_ISLNK for a link, else the file's
 * type); PERR_IO with errno set otherwise.  Call outfile_close() in every
 * case.
 */
enum perr outfile_open_input(struct outfile *of, const char *path);

/*
 * Open a file in the current directory whose name pyrospy chose,
 * STEM.EXT or the first free of STEM-1.EXT ... (see OUTFILE_MAX_NAMES).
 * Returns PERR_OK or PERR_IO with errno set.  of->path is STEM.EXT until
 * outfile_commit() has chosen.
 */
enum perr outfile_open_new(struct outfile *of, const char *stem, const char *ext);

/*
 * A file of outfile_open_new() not yet in place takes stem instead (it is
 * opened before what its name says is known: exec's pid, the time it is
 * written).  Nothing for any other file.
 */
void outfile_set_stem(struct outfile *of, const char *stem);

/*
 * The profile is complete: flush it, and move the temporary file into
 * place.  Returns PERR_OK, with of->path the file written; PERR_IO with
 * errno set when writing failed, or when every name was taken (EEXIST);
 * PERR_PERM with errno set when the file could not be replaced.  On
 * failure the old file, if any, is untouched.
 */
enum perr outfile_commit(struct outfile *of);

/*
 * For a file written as it goes (a raw recording): flush what is written
 * and move the temporary file into place as outfile_commit() does, but
 * keep it open: what follows is written to it in place, and
 * outfile_commit() then only flushes and closes it.  Returns as
 * outfile_commit() does.
 */
enum perr outfile_place(struct outfile *of);

/*
 * Close what is open and free everything; a temporary file not yet
 * committed is removed.  Safe after a failed open, and to call twice.
 */
void outfile_close(struct outfile *of);

#endif
