/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "fuzz.h"
#include "profile/raw.h"
#include "profile/rawread.h"
#include "stack/stack.h"

/*
 * The raw recording's reader (src/rawread.c) on fuzzed files: whatever
 * the bytes, it returns a status, says why when it refuses, hands out
 * only stacks whose every string is there (each is read here, so the
 * sanitizers see a bad pointer) and whose times never go back.  An input
 * that does not start with the magic is taken as the records of blocks
 * (cut at each "\n--\n"), and made a file with valid block headers and
 * checksums: the checksum would stop nearly every mutation before the
 * records are parsed.
 */
struct check {
	int64_t last;
	size_t bytes;
};

static int visit(void *arg, int64_t when_ns, const char *tags, const struct stack *st)
{
	struct check *c = arg;

	if (when_ns < c->last || st->depth > STACK_MAX_DEPTH)
		abort();
	c->last = when_ns;
	c->bytes += tags ? strlen(tags) : 0;
	c->bytes += st->thread_name ? strlen(st->thread_name) : 0;
	for (unsigned int i = 0; i < st->depth; i++)
		c->bytes += strlen(st->frame[i].name) + strlen(st->frame[i].file);
	return 0;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* records (n bytes) as a file of blocks, malloc'd into *out */
static size_t wrap(const uint8_t *data, size_t n, unsigned char **out)
{
	size_t cap = RAW_MAGIC_LEN + 1 + 2 * (n + 64) + compressBound((uLong)n), len = 0;
	unsigned char *buf = malloc(cap);

	if (!buf)
		abort();
	memcpy(buf, RAW_MAGIC, RAW_MAGIC_LEN);
	buf[RAW_MAGIC_LEN] = RAW_VERSION;
	len = RAW_MAGIC_LEN + 1;
	while (n) {
		const uint8_t *sep = memmem(data, n, "\n--\n", 4);
		size_t piece = sep ? (size_t)(sep - data) : n;
		uLongf zlen = compressBound((uLong)piece);

		if (piece && piece <= RAW_MAX_BLOCK) {
			if (compress(buf + len + RAW_BLOCK_HEADER, &zlen, data, (uLong)piece) != Z_OK)
				abort();
			put_le32(buf + len, (uint32_t)zlen);
			put_le32(buf + len + 4, (uint32_t)piece);
			put_le32(buf + len + 8, (uint32_t)crc32(0L, buf + len + RAW_BLOCK_HEADER,
								 (uInt)zlen));
			len += RAW_BLOCK_HEADER + zlen;
		}
		piece += sep ? 4 : 0;
		data += piece;
		n -= piece;
	}
	*out = buf;
	return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct check c = { 0, 0 };
	unsigned char *wrapped = NULL;
	struct rawread r;
	enum perr err;
	FILE *f;

	if (!size)
		return 0;
	if (size < RAW_MAGIC_LEN || memcmp(data, RAW_MAGIC, RAW_MAGIC_LEN)) {
		size = wrap(data, size, &wrapped);
		data = wrapped;
	}
	f = fmemopen((void *)data, size, "rb");
	if (!f)
		abort();
	c.last = INT64_MIN;
	err = rawread_run(&r, f, visit, &c);
	if (err != PERR_OK && err != PERR_CORRUPT && err != PERR_TOOBIG)
		abort();
	if ((err || r.torn) && !r.why[0])
		abort();
	rawread_release(&r);
	fclose(f);
	free(wrapped);
	return 0;
}
