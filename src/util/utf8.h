/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_UTF8_H
#define PYROSPY_UTF8_H

#include <stddef.h>
#include <stdio.h>

/*
 * Text from a target (names of functions, files, threads, the process;
 * tag values) and from a server is untrusted: before it reaches a
 * terminal, a log, a profile or a request it goes through this file's
 * one rule.  Each code point that acts instead of showing -- C0 and C1
 * controls (U+0000 to U+001F, U+007F to U+009F) and the bidi embeddings,
 * overrides and isolates (U+202A to U+202E, U+2066 to U+2069) -- becomes
 * one '?', and so does each byte that is no part of well-formed UTF-8.
 * Everything else (accented letters, CJK, emoji) is kept as it is.
 */

/*
 * Encode len code points stored `kind' bytes each (1 Latin-1, 2 UCS-2,
 * 4 UCS-4, little endian: CPython's PEP 393 layouts) as NUL-terminated
 * UTF-8 in out (cap bytes, at least 4*len+1 to be sure it fits).  ascii
 * says the data claims to be 7-bit.  Control and bidi characters become
 * '?' (the rule above).
 * Returns the bytes written, or -1 for data no real string holds
 * (surrogates, values past U+10FFFF, 8-bit bytes claimed ASCII) or when
 * out is too small.
 */
int utf8_from_ucs(char *out, size_t cap, const void *data, size_t len, unsigned int kind,
		  int ascii);

/*
 * The same for text from a program's tag sets: lone surrogates become '?'
 * rather than fail, and the separators U+001E and U+001F are kept.
 */
int utf8_from_ucs_lenient(char *out, size_t cap, const void *data, size_t len,
			  unsigned int kind, int ascii);

/* Is s (n bytes) well-formed UTF-8?  (no overlongs, no surrogates) */
int utf8_valid(const char *s, size_t n);

/* Is s (n bytes) well-formed UTF-8 that utf8_sanitize() leaves as it is? */
int utf8_clean(const char *s, size_t n);

/*
 * The sanitizer: copy len bytes of what should be UTF-8 into out (cap
 * bytes, always NUL-terminated), replacing each byte that is not part of a
 * well-formed sequence, and each control or bidi character, with '?' (the
 * rule above).  The result is never longer than the input.  Stops early
 * rather than split a character when out is full.  Returns the bytes
 * written.
 */
size_t utf8_sanitize(char *out, size_t cap, const void *data, size_t len);

/*
 * s as a JSON string, quotes included: '"' and '\\' escaped, control
 * characters as \\u00XX.  s is valid UTF-8 (sanitized).  0, or -1 when
 * writing failed.
 */
int utf8_put_json(FILE *f, const char *s);

#endif
