/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fuzz.h"
#include "profile/pprofread.h"
#include "util/utf8.h"

/*
 * The pprof reader (src/pprofread.c) on fuzzed bytes: whatever the
 * bytes, it returns a status, says why when it refuses, and hands out
 * samples whose every string is clean text (what report passes on to the
 * output formats) and whose depth is within its cap.  An input whose
 * first byte is even is the protobuf, gzipped here (so that the fuzzer
 * works on the profile, not on deflate); odd, the file as it is.
 */
static void check(const char *s)
{
	if (!s || !utf8_clean(s, strlen(s)))
		abort();
}

static int visit(void *arg, const struct folded_line *l)
{
	(void)arg;
	if (l->depth > FOLDEDREAD_MAX_DEPTH)
		abort();
	if (l->tags)
		check(l->tags);
	if (l->thread)
		check(l->thread);
	if (l->thread_name)
		check(l->thread_name);
	for (uint32_t i = 0; i < l->depth; i++) {
		check(l->frame[i].name);
		check(l->frame[i].file);
		if (l->frame[i].line < 0)
			abort();
	}
	return 0;
}

/* data gzipped into *out (malloc'd): its length. */
static size_t gzip(const uint8_t *data, size_t size, unsigned char **out)
{
	z_stream zs;
	size_t cap = size + size / 8 + 64;

	memset(&zs, 0, sizeof(zs));
	*out = malloc(cap);
	if (!*out || deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		abort();
	zs.next_in = (unsigned char *)data;
	zs.avail_in = (uInt)size;
	zs.next_out = *out;
	zs.avail_out = (uInt)cap;
	if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
		abort();
	cap = zs.total_out;
	deflateEnd(&zs);
	return cap;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *gz = NULL;
	char why[160];
	enum perr err;
	size_t len;
	FILE *f;

	if (!size)
		return 0;
	if (data[0] & 1) {
		len = size - 1;
		f = len ? fmemopen((void *)(data + 1), len, "rb") : NULL;
		if (!len)
			return 0;
	} else {
		len = gzip(data + 1, size - 1, &gz);
		f = fmemopen(gz, len, "rb");
	}
	if (!f)
		abort();
	why[0] = '\0';
	err = pprofread_run(f, visit, NULL, why, sizeof(why));
	if (err != PERR_OK && err != PERR_CORRUPT && err != PERR_TOOBIG)
		abort();
	if (err && !why[0])
		abort();
	fclose(f);
	free(gz);
	return 0;
}
