/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_TAGS_H
#define PYROSPY_TAGS_H

#include <stddef.h>

/*
 * Tag sets.  Inside pyrospy a tag set is one string "k=v,k=v" with the
 * keys sorted and unique, every key [A-Za-z_][A-Za-z0-9_]* and no value
 * holding ',', '}' or a control character: what the profile's tag level,
 * the writers and the Pyroscope name all take as they are.
 *
 * Tags come from two places: --tag on the command line (checked, refused
 * when wrong) and the profiled program's memory (untrusted: cleaned, never
 * refused; see tags_from_app()).
 */
#define TAGS_MAX	26	/* per set: the Pyroscope server's label budget */
#define TAGS_MAX_KEY	128	/* bytes */
#define TAGS_MAX_VALUE	1024	/* bytes */
#define TAGS_MAX_SET	(TAGS_MAX * (TAGS_MAX_KEY + TAGS_MAX_VALUE + 2))

/*
 * The helper libraries (taglibs/python/pyrospy.py, taglibs/ruby/pyrospy.rb) write
 * a tag set as key US value RS key US value..., so that a value may hold
 * any character without ending early.
 */
#define TAGS_US '\x1f'
#define TAGS_RS '\x1e'

int tags_is_key_char(int c);

/* Why key (n bytes) cannot be sent as it is, or NULL if it can. */
const char *tags_key_problem(const char *k, size_t n);

/* Why value v cannot be sent as it is, or NULL if it can. */
const char *tags_value_problem(const char *v);

/*
 * Check --tag KEY=VALUE options (NULL-terminated, may be NULL): -1 with a
 * one-line reason in err when one is wrong or given twice, else 0.
 */
int tags_check(const char *const *tags, char *err, size_t errlen);

/*
 * An untrusted key (n bytes) made usable into out (TAGS_MAX_KEY + 1
 * bytes): characters outside [A-Za-z0-9_] become '_', and a key that is
 * still unusable (empty, leading digit, reserved) gets a "tag_" prefix.
 * Returns its length.
 */
size_t tags_key_clean(const char *k, size_t n, char *out);

/*
 * An untrusted value (n bytes) made safe into out (TAGS_MAX_VALUE + 1
 * bytes): invalid UTF-8 and control characters become '?', ',' and '}'
 * '_', white space a Pyroscope server would trim is trimmed, and it is cut
 * to TAGS_MAX_VALUE bytes on a character boundary.  Returns its length;
 * 0 means the tag is to be left out.
 */
size_t tags_value_clean(const char *v, size_t n, char *out);

/*
 * A tag set as the helpers write it (n untrusted bytes, see TAGS_US) as a
 * clean tag set, malloc'd.  Keys and values are cleaned as above, a key
 * given twice keeps its last value, and past TAGS_MAX tags the rest are
 * left out.
 */
char *tags_from_app(const char *raw, size_t n);

/*
 * The clean tag sets hi and lo (either NULL or "") merged into one,
 * malloc'd: a key in both keeps hi's value.
 */
char *tags_merge(const char *hi, const char *lo);

/*
 * A sample's tags when they changed while it was read: empty, and told
 * apart from "none" by its address.  Such a sample goes without any tag,
 * --tag's too: the program's tags win over those, and which keys it had
 * is not known.
 */
extern const char tags_unknown[];

#endif
