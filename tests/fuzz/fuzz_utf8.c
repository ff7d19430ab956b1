/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "util/utf8.h"

/*
 * The string converters on fuzzed bytes.  Input: [mode u8][cap u16][data].
 * mode picks the PEP 393 kind (1, 2, 4, or a bad one) and the ascii flag;
 * cap is the output size, so the "out is too small" paths run too.  Output
 * is checked: what utf8_from_ucs and utf8_sanitize write must be valid
 * UTF-8 without control or bidi characters, and sanitizing it again must
 * change nothing.
 */
static void check_output(const char *out, size_t n)
{
	char again[1024];

	if (strlen(out) != n || !utf8_valid(out, n) || !utf8_clean(out, n))
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			abort();
	if (n < sizeof(again) &&
	    (utf8_sanitize(again, sizeof(again), out, n) != n || memcmp(again, out, n)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned int kinds[] = { 1, 2, 4, 3 };
	unsigned int kind, ascii;
	size_t cap, len, n;
	char *out;
	uint8_t *in;
	int r;

	if (size < 3)
		return 0;
	kind = kinds[data[0] & 3];
	ascii = data[0] >> 2 & 1;
	cap = (size_t)data[1] | (size_t)data[2] << 8;
	data += 3;
	size -= 3;
	in = malloc(size ? size : 1);
	out = malloc(cap ? cap : 1);
	if (!in || !out)
		goto out;
	memcpy(in, data, size);

	len = size / (kind == 3 ? 1 : kind);
	r = utf8_from_ucs(out, cap, in, len, kind, (int)ascii);
	if (r >= 0)
		check_output(out, (size_t)r);
	utf8_valid((const char *)in, size);
	n = utf8_sanitize(out, cap, in, size);
	if (cap) {
		if (n >= cap)
			abort();
		check_output(out, n);
	} else if (n) {
		abort();
	}
out:
	free(in);
	free(out);
	return 0;
}
