/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PB_H
#define PYROSPY_PB_H

#include <stddef.h>
#include <stdint.h>

/*
 * The least of a protobuf writer that pprof and Pyroscope's push API
 * need: varints, length-delimited fields, nested messages and packed
 * repeated varints, appended to a growing buffer.  Zero scalars are left
 * out, as proto3 reads an absent field as zero.  And the least of a
 * reader, for a server's answer.
 */
enum pb_wire {
	PB_VARINT = 0,
	PB_I64 = 1,
	PB_LEN = 2,
	PB_I32 = 5,		/* read only */
};

struct pb {
	unsigned char *buf;
	size_t len, cap;
};

/* Room for n more bytes. */
void pb_reserve(struct pb *b, size_t n);
void pb_release(struct pb *b);

void pb_varint(struct pb *b, uint64_t v);
void pb_key(struct pb *b, uint32_t field, enum pb_wire wire);

/* An int64 or uint64 field, left out when 0 (negatives take ten bytes). */
void pb_int(struct pb *b, uint32_t field, int64_t v);

/* A fixed64 field (OpenTelemetry's timestamps), left out when 0. */
void pb_fixed64(struct pb *b, uint32_t field, uint64_t v);

/* A bytes or string field (written even when empty). */
void pb_bytes(struct pb *b, uint32_t field, const void *data, size_t len);
void pb_str(struct pb *b, uint32_t field, const char *s);

/*
 * A nested message or a packed list: pb_open() writes the key and returns
 * where the body starts; pb_close() writes the body's length in front of
 * it once known.
 */
size_t pb_open(struct pb *b, uint32_t field);
void pb_close(struct pb *b, size_t start);

/*
 * The concatenation of n buffers deflated as one gzip member, appended to
 * out.  0, or -1 when zlib fails.
 */
int pb_gzip(const struct pb *const *parts, size_t n, struct pb *out);

/*
 * Reading what another program wrote (a server's answer, a raw file):
 * untrusted bytes between p and end.  pb_get_varint() takes one varint
 * (ten bytes at most, the tenth 0 or 1).  pb_next() takes one field: its
 * number, its wire type and, for a varint, I64 or I32 field, its value in
 * *v, for a length-delimited one its bytes in *sub.  0 at a field, 1 at
 * the end, -1 when malformed (field 0, a group, a length past the end
 * unless clip).
 */
struct pb_cur {
	const unsigned char *p, *end;
	int clip;	/* the bytes are the start of longer ones, cut: a length
			   past the end runs to it (and so for its fields) */
};

int pb_get_varint(struct pb_cur *c, uint64_t *out);
int pb_next(struct pb_cur *c, uint32_t *field, enum pb_wire *wire, uint64_t *v,
	    struct pb_cur *sub);

#endif
