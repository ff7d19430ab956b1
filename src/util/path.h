/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PATH_H
#define PYROSPY_PATH_H

/*
 * A source file's path as a person and a tool should see it: lexically
 * normalised, as Python's os.path.normpath does, without ever asking a
 * file system (the target's is hostile, and a recording's may be gone).
 * Empty and "." components and repeated slashes go, and "dir/.." goes
 * with its dir: "/srv/app/build/../x.py" is "/srv/app/x.py", "./lib/x.rb"
 * is "lib/x.rb".  ".." at the start of a relative path stays (nothing
 * lexical can say what it names), and "/.." is "/".  A pseudo file
 * ("<frozen importlib._bootstrap>", "<internal:kernel>", "<string>"),
 * one that starts with '<', is no path and stays as it is.
 */

/* Whether path is already as path_normalize() would make it. */
int path_is_normal(const char *path);

/*
 * Normalise path in place (it never grows): returns path.  A relative
 * path that normalises to nothing becomes ".".
 */
char *path_normalize(char *path);

/* Whether path, normalised, is relative and starts with "..". */
int path_goes_up(const char *path);

#endif
