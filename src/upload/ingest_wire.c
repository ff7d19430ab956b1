/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <string.h>

#include "upload/ingest_wire.h"
#include "util/xalloc.h"

/* The bits of text every wire format writes the same way (ingest_wire.h). */

static int is_alnum(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

void ingest_buf_add(struct ingest_buf *b, const void *data, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (b->len + n + 1 > cap)
			cap *= 2;
		b->s = xrealloc(b->s, cap);
		b->cap = cap;
	}
	memcpy(b->s + b->len, data, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void ingest_buf_str(struct ingest_buf *b, const char *s)
{
	ingest_buf_add(b, s, strlen(s));
}

char *ingest_service_name(const struct ingest_opts *o)
{
	size_t n = strlen(o->app_name);

	if (n >= 4 && !strcmp(o->app_name + n - 4, ".cpu"))
		n -= 4;
	return xstrndup(o->app_name, n);
}

char *ingest_urlencode(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	struct ingest_buf b = { 0 };

	ingest_buf_add(&b, "", 0);
	/*
	 * Everything but the unreserved set: Go drops a query pair holding a
	 * raw ';' and reads '+' as a space.
	 */
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[3] = { '%', hex[c >> 4], hex[c & 15] };

		if (is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
			ingest_buf_add(&b, s, 1);
		else
			ingest_buf_add(&b, esc, 3);
	}
	return b.s;
}
