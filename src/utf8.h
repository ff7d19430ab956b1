/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_UTF8_H
#define PYROSPY_UTF8_H

#include <stddef.h>

/*
 * Encode len code points stored `kind' bytes each (1 Latin-1, 2 UCS-2,
 * 4 UCS-4, little endian: CPython's PEP 393 layouts) as NUL-terminated
 * UTF-8 in out (cap bytes, at least 4*len+1 to be sure it fits).  ascii
 * says the data claims to be 7-bit.  Control characters become '?'.
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

/*
 * Copy len bytes of what should be UTF-8 into out (cap bytes, always
 * NUL-terminated), replacing each byte that is not part of a well-formed
 * sequence, and each control character, with '?'.  Stops early rather
 * than split a character when out is full.  Returns the bytes written.
 */
size_t utf8_sanitize(char *out, size_t cap, const void *data, size_t len);

#endif
