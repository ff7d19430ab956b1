/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_SHORTPATH_H
#define PYROSPY_SHORTPATH_H

struct profile;
struct shortpath;

/*
 * Short paths for a person to read (svg, summary, top, dump, html): each
 * file of a profile's code frames (normalised: util/path.h) without the
 * directory it was found under, the longest of
 *
 *   - the app's directory: that of the file of an outermost "<module>"
 *     (Python's __main__ script) or "<main>" (Ruby's) frame
 *     /srv/shop/examples/shop.py               shop.py
 *     and when there is none (the main thread only waited), the directory
 *     that the files no rule below shortens have in common
 *   - Python's standard library, any prefix: .../lib/python3.X[t]/, and
 *     its lib-dynload/, site-packages/ or dist-packages/ below it
 *     /usr/lib/python3.11/json/encoder.py      json/encoder.py
 *   - any .../site-packages/ or .../dist-packages/
 *     /usr/lib/python3/dist-packages/yaml/__init__.py   yaml/__init__.py
 *   - a gem's directory: .../gems/ before a NAME-VERSION/ one
 *     /var/lib/gems/3.1.0/gems/rack-3.1.8/lib/rack/builder.rb
 *                                              rack-3.1.8/lib/rack/builder.rb
 *   - Ruby's library: .../lib/ruby/[vendor_ruby/|site_ruby/][X.Y.Z/]
 *     /usr/lib/ruby/3.1.0/set.rb               set.rb
 *
 * Pattern rules, not the target's sys.path or $LOAD_PATH: they need no
 * read of a hostile target (whose lists may lie, or be huge), they are
 * the same for every reader version, and they work on a profile read back
 * (report of a recording, folded or pprof file) as on one just sampled,
 * so both show the same text.
 *
 * A short form never makes two files look the same: files whose short
 * forms would be equal (or one's short form another's whole path) keep
 * their whole paths.  A pseudo file ("<string>", "<internal:kernel>")
 * and one with no directory stay as they are.
 */

/*
 * The short forms of every file of p's code frames.  sp borrows p's
 * strings: free it before p is released.
 */
struct shortpath *shortpath_new(const struct profile *p);

/*
 * file's short form, or file itself when it has none or is not one of
 * the profile's (also when sp is NULL: --full-paths).  The profile's
 * file strings, or those of a projection of it (profile_project()), are
 * looked for by their text.
 */
const char *shortpath_get(const struct shortpath *sp, const char *file);

void shortpath_free(struct shortpath *sp);

#endif
