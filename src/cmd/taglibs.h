/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_TAGLIBS_H
#define PYROSPY_TAGLIBS_H

#include <limits.h>
#include <stddef.h>

#include "util/perr.h"

/*
 * The tag helpers (src/python, src/ruby) that pyrospy exec puts on the
 * command's PYTHONPATH and RUBYLIB, so that `import pyrospy' and
 * `require "pyrospy"' work with nothing installed.
 *
 * The binary carries them (taglibs_files[], generated from the sources by
 * scripts/embed-taglibs), so that one file is the whole tool.  A build
 * found on disk is used as it is (installed, or the sources of a pyrospy
 * run from its build tree); the portable build, and any build that finds
 * none, writes its own copy to a private temporary directory.
 */
struct taglibs_file {
	const char *name;		/* "python/pyrospy.py" */
	const unsigned char *data;
	size_t len;
};

/* Every helper, ended by a NULL name. */
extern const struct taglibs_file taglibs_files[];

struct taglibs {
	char dir[PATH_MAX];	/* holds python/ and ruby/; "" when there is none */
	int owned;		/* dir is a private copy: taglibs_release() removes it */
	int own_python;		/* the wheel or gem of this binary has its own: */
	int own_ruby;		/* exec leaves dir/python or dir/ruby off the paths */
};

/*
 * Where the helpers are on disk without writing anything: the directory,
 * or NULL when pyrospy would write its own copy (always, for the portable
 * build).  For --version.
 */
const char *taglibs_installed(void);

/*
 * Set h->own_python and h->own_ruby (below) from where this binary is;
 * nothing else of h.  For taglibs_init() and --version.
 */
void taglibs_packaged(struct taglibs *h);

/*
 * Fill h with a directory holding the helpers: taglibs_installed(), else
 * a private copy (taglibs_extract()).  On error h->dir is "" and errno
 * says why.  own_python is set when the binary was installed by pip with
 * the pyrospy module (BIN/../lib/python3.X/site-packages/pyrospy.py, a venv,
 * --user or --prefix), own_ruby when by gem (GEM/libexec/pyrospy beside
 * GEM/lib/pyrospy.rb): the program imports the copy it declared.
 */
enum perr taglibs_init(struct taglibs *h);

/*
 * Write the embedded helpers to a new directory made by mkdtemp() in
 * $TMPDIR (if an absolute path) or /tmp: mode 0700, files created
 * exclusively inside it, so that nobody else can read, replace or
 * redirect them.  PERR_IO with errno on failure, nothing left behind.
 */
enum perr taglibs_extract(struct taglibs *h);

/*
 * Let every user read the private copy, for a command run as another user
 * than pyrospy (exec --user): directories 0755, files 0644, still owned by
 * pyrospy's user, so that no one else can replace or add a file.  Nothing
 * for a directory found on disk.  PERR_IO with errno on failure.
 */
enum perr taglibs_share(const struct taglibs *h);

/*
 * Remove the private copy and everything in it (the interpreter may have
 * added __pycache__), never following a link out of it.  Nothing for a
 * directory found on disk.  h is empty afterwards.
 */
void taglibs_release(struct taglibs *h);

#endif
