/* SPDX-License-Identifier: MIT */
#include "config.h"

#define ZLIB_CONST
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "util/pb.h"
#include "util/xalloc.h"

void pb_reserve(struct pb *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 256;

	while (cap - b->len < n)
		cap *= 2;
	if (cap != b->cap) {
		b->buf = xrealloc(b->buf, cap);
		b->cap = cap;
	}
}

void pb_release(struct pb *b)
{
	free(b->buf);
	memset(b, 0, sizeof(*b));
}

/* v as a varint into out (10 bytes at most); returns its length. */
static size_t varint_put(unsigned char *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (unsigned char)v;
	return n;
}

void pb_varint(struct pb *b, uint64_t v)
{
	pb_reserve(b, 10);
	b->len += varint_put(b->buf + b->len, v);
}

void pb_key(struct pb *b, uint32_t field, enum pb_wire wire)
{
	pb_varint(b, (uint64_t)field << 3 | wire);
}

void pb_int(struct pb *b, uint32_t field, int64_t v)
{
	if (!v)
		return;
	pb_key(b, field, PB_VARINT);
	pb_varint(b, (uint64_t)v);
}

void pb_fixed64(struct pb *b, uint32_t field, uint64_t v)
{
	if (!v)
		return;
	pb_key(b, field, PB_I64);
	pb_reserve(b, 8);
	for (int i = 0; i < 8; i++)
		b->buf[b->len++] = (unsigned char)(v >> (8 * i));
}

void pb_bytes(struct pb *b, uint32_t field, const void *data, size_t len)
{
	pb_key(b, field, PB_LEN);
	pb_varint(b, len);
	pb_reserve(b, len);
	if (len)
		memcpy(b->buf + b->len, data, len);
	b->len += len;
}

void pb_str(struct pb *b, uint32_t field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

/*
 * One byte is kept for the length; pb_close() moves the body along in
 * the rare case it took 128 bytes or more and so needs a longer varint.
 */
size_t pb_open(struct pb *b, uint32_t field)
{
	pb_key(b, field, PB_LEN);
	pb_reserve(b, 1);
	b->len++;
	return b->len;
}

void pb_close(struct pb *b, size_t start)
{
	size_t body = b->len - start, n;
	unsigned char len[10];

	n = varint_put(len, body);
	if (n > 1) {
		pb_reserve(b, n - 1);
		memmove(b->buf + start + n - 1, b->buf + start, body);
		b->len += n - 1;
	}
	memcpy(b->buf + start - 1, len, n);
}

#define GZIP_CHUNK (64u * 1024)

/* Deflate len bytes of in into out; flush is Z_NO_FLUSH or Z_FINISH. */
static int gzip_feed(z_stream *z, struct pb *out, const unsigned char *in, size_t len, int flush)
{
	do {
		/* avail_in is an unsigned int: feed a huge section in parts */
		uInt n = len > (1u << 30) ? 1u << 30 : (uInt)len;
		int f = n == len ? flush : Z_NO_FLUSH, ret;

		z->next_in = in;
		z->avail_in = n;
		do {
			pb_reserve(out, GZIP_CHUNK);
			z->next_out = out->buf + out->len;
			z->avail_out = GZIP_CHUNK;
			ret = deflate(z, f);
			if (ret == Z_STREAM_ERROR)
				return -1;
			out->len += GZIP_CHUNK - z->avail_out;
		} while (z->avail_out == 0);
		if (f == Z_FINISH && ret != Z_STREAM_END)
			return -1;
		in += n;
		len -= n;
	} while (len);
	return 0;
}

int pb_gzip(const struct pb *const *parts, size_t n, struct pb *out)
{
	z_stream z;
	int ret = 0;

	memset(&z, 0, sizeof(z));
	/* windowBits 15 + 16 asks zlib for a gzip header and trailer */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -1;
	for (size_t i = 0; i < n && !ret; i++)
		ret = gzip_feed(&z, out, parts[i]->buf, parts[i]->len,
				i + 1 == n ? Z_FINISH : Z_NO_FLUSH);
	deflateEnd(&z);
	return ret;
}

int pb_get_varint(struct pb_cur *c, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned int shift = 0; shift < 64; shift += 7) {
		unsigned char b;

		if (c->p >= c->end)
			return -1;
		b = *c->p++;
		/* the tenth byte holds the top bit alone */
		if (shift == 63 && b > 1)
			return -1;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

int pb_next(struct pb_cur *c, uint32_t *field, enum pb_wire *wire, uint64_t *v,
	    struct pb_cur *sub)
{
	uint64_t key, n;
	size_t width;

	if (c->p >= c->end)
		return 1;
	if (pb_get_varint(c, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX)
		return -1;
	*field = (uint32_t)(key >> 3);
	*v = 0;
	switch (key & 7) {
	case PB_VARINT:
		*wire = PB_VARINT;
		return pb_get_varint(c, v);
	case PB_LEN:
		*wire = PB_LEN;
		if (pb_get_varint(c, &n))
			return -1;
		if (n > (uint64_t)(c->end - c->p)) {
			if (!c->clip)
				return -1;
			n = (uint64_t)(c->end - c->p);
		}
		sub->p = c->p;
		sub->end = c->p + n;
		sub->clip = c->clip;
		c->p += n;
		return 0;
	case PB_I64:
	case PB_I32:
		*wire = (enum pb_wire)(key & 7);
		width = *wire == PB_I64 ? 8 : 4;
		if ((size_t)(c->end - c->p) < width)
			return -1;
		for (size_t i = 0; i < width; i++)
			*v |= (uint64_t)c->p[i] << (8 * i);
		c->p += width;
		return 0;
	default:
		return -1;	/* groups (3, 4) are long gone; 6 and 7 never were */
	}
}
