/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "fuzz_target.h"
#include "stack/tags.h"

/*
 * The cleaning of tags read from a program (src/tags.c) on fuzzed bytes:
 * the registry strings the helpers write (key US value RS ...), cut in two
 * at the first NUL byte (or taken whole), each made a tag set, then the
 * two merged; the whole input also as one key and one value.  Everything
 * that comes out must be a clean tag set (fuzz_check_tags).
 */
static void check_key(const uint8_t *data, size_t size)
{
	char out[TAGS_MAX_KEY + 1];
	size_t n = tags_key_clean((const char *)data, size, out);

	if (n > TAGS_MAX_KEY || strlen(out) != n || tags_key_problem(out, n))
		abort();
}

static void check_value(const uint8_t *data, size_t size)
{
	char out[TAGS_MAX_VALUE + 1];
	size_t n = tags_value_clean((const char *)data, size, out);

	if (n > TAGS_MAX_VALUE || strlen(out) != n || (n && tags_value_problem(out)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t a = nul ? (size_t)(nul - data) : size;
	char *hi, *lo, *m;

	check_key(data, size);
	check_value(data, size);
	hi = tags_from_app((const char *)data, a);
	lo = nul ? tags_from_app((const char *)nul + 1, size - a - 1) : NULL;
	if (!hi)
		abort();
	fuzz_check_tags(hi);
	if (lo)
		fuzz_check_tags(lo);
	m = tags_merge(hi, lo);
	if (!m)
		abort();
	fuzz_check_tags(m);
	free(hi);
	free(lo);
	free(m);
	return 0;
}
