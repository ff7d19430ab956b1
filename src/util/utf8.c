/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "util/utf8.h"

/*
 * The one rule for text that comes from a target (or a server) and may
 * reach a terminal, a log or a profile: code points that act instead of
 * showing are replaced by '?'.
 *   - C0 controls and DEL: ESC starts terminal sequences, BEL, CR and LF
 *     forge or hide lines;
 *   - C1 controls, U+0080 to U+009F: U+009B is a one-character CSI and
 *     U+009D an OSC on terminals that take 8-bit controls;
 *   - bidi embeddings, overrides and isolates, U+202A to U+202E and U+2066
 *     to U+2069: they reorder the text that follows (CVE-2021-42574).
 * One '?' per code point: never longer than what it replaces, so a
 * buffer that held the text holds its clean form (a "\xNN" escape would
 * not), and names stay as recognisable as ps(1) shows them.
 */
static int unsafe(uint32_t c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) ||
	       (c >= 0x2066 && c <= 0x2069);
}

static int from_ucs(char *out, size_t cap, const void *data, size_t len, unsigned int kind,
		    int ascii, int lenient)
{
	const unsigned char *p = data;
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		uint32_t c;

		switch (kind) {
		case 1:
			c = p[i];
			break;
		case 2:
			c = (uint32_t)p[2 * i] | (uint32_t)p[2 * i + 1] << 8;
			break;
		case 4:
			memcpy(&c, p + 4 * i, 4);
			break;
		default:
			return -1;
		}
		if ((ascii && c > 0x7f) || c > 0x10ffff)
			return -1;
		if (c >= 0xd800 && c <= 0xdfff) {
			if (!lenient)
				return -1;
			c = '?';
		}
		if (unsafe(c) && !(lenient && (c == 0x1e || c == 0x1f)))
			c = '?';
		if (cap - o < 5)
			return -1;
		if (c < 0x80) {
			out[o++] = (char)c;
		} else if (c < 0x800) {
			out[o++] = (char)(0xc0 | c >> 6);
			out[o++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			out[o++] = (char)(0xe0 | c >> 12);
			out[o++] = (char)(0x80 | (c >> 6 & 0x3f));
			out[o++] = (char)(0x80 | (c & 0x3f));
		} else {
			out[o++] = (char)(0xf0 | c >> 18);
			out[o++] = (char)(0x80 | (c >> 12 & 0x3f));
			out[o++] = (char)(0x80 | (c >> 6 & 0x3f));
			out[o++] = (char)(0x80 | (c & 0x3f));
		}
	}
	if (o >= cap)
		return -1;
	out[o] = '\0';
	return (int)o;
}

int utf8_from_ucs(char *out, size_t cap, const void *data, size_t len, unsigned int kind,
		  int ascii)
{
	return from_ucs(out, cap, data, len, kind, ascii, 0);
}

int utf8_from_ucs_lenient(char *out, size_t cap, const void *data, size_t len,
			  unsigned int kind, int ascii)
{
	return from_ucs(out, cap, data, len, kind, ascii, 1);
}

/*
 * Length of the well-formed UTF-8 sequence at p (n bytes left), or 0; its
 * code point in *out.
 */
static size_t seq_len(const unsigned char *p, size_t n, uint32_t *out)
{
	unsigned char c = p[0];
	uint32_t cp;
	size_t k;

	*out = c;
	if (c < 0x80)
		return 1;
	else if ((c & 0xe0) == 0xc0)
		k = 1, cp = c & 0x1f;
	else if ((c & 0xf0) == 0xe0)
		k = 2, cp = c & 0x0f;
	else if ((c & 0xf8) == 0xf0)
		k = 3, cp = c & 0x07;
	else
		return 0;
	if (n <= k)
		return 0;
	for (size_t j = 1; j <= k; j++) {
		if ((p[j] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[j] & 0x3f);
	}
	if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*out = cp;
	return k + 1;
}

int utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;

	for (size_t i = 0, k; i < n; i += k)
		if (!(k = seq_len(p + i, n - i, &cp)))
			return 0;
	return 1;
}

int utf8_clean(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;

	for (size_t i = 0, k; i < n; i += k)
		if (!(k = seq_len(p + i, n - i, &cp)) || unsafe(cp))
			return 0;
	return 1;
}

size_t utf8_sanitize(char *out, size_t cap, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t o = 0, i = 0, k;
	uint32_t cp;

	if (!cap)
		return 0;
	while (i < len) {
		k = seq_len(p + i, len - i, &cp);
		if (o + (k && !unsafe(cp) ? k : 1) >= cap)
			break;
		if (!k) {
			out[o++] = '?';		/* a byte of no character */
			i++;
		} else if (unsafe(cp)) {
			out[o++] = '?';		/* a character that acts */
			i += k;
		} else {
			memcpy(out + o, p + i, k);
			o += k;
			i += k;
		}
	}
	out[o] = '\0';
	return o;
}

int utf8_put_json(FILE *f, const char *s)
{
	if (putc('"', f) == EOF)
		return -1;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int r;

		if (c == '"' || c == '\\')
			r = fprintf(f, "\\%c", c);
		else if (c < 0x20)
			r = fprintf(f, "\\u%04x", c);
		else
			r = putc(c, f);
		if (r < 0)
			return -1;
	}
	return putc('"', f) == EOF ? -1 : 0;
}
