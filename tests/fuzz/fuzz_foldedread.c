/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/foldedread.h"
#include "fuzz.h"
#include "util/utf8.h"

/*
 * The folded profile reader (src/foldedread.c) on fuzzed text: whatever
 * the bytes, it returns a status, says why when it refuses, and hands out
 * lines whose every string is clean text (what report passes on to the
 * output formats) and whose depth is within its cap.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[160];
	enum perr err;
	FILE *f;

	if (!size)
		return 0;
	f = fmemopen((void *)data, size, "rb");
	if (!f)
		abort();
	err = foldedread_run(f, visit, NULL, why, sizeof(why));
	if (err != PERR_OK && err != PERR_CORRUPT && err != PERR_TOOBIG)
		abort();
	if (err && !why[0])
		abort();
	fclose(f);
	return 0;
}
