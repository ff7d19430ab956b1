/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "python/pyline.h"

/*
 * The three CPython line-table decoders on a fuzzed table.  Input:
 *
 *   [firstlineno s32][instruction s64][table ...]
 *
 * The table is copied to a buffer of exactly its length so that ASan
 * catches a decoder reading one byte past it.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int32_t first;
	int64_t at;
	uint8_t *tab;
	size_t len;

	if (size < 12)
		return 0;
	memcpy(&first, data, sizeof(first));
	memcpy(&at, data + 4, sizeof(at));
	len = size - 12;
	tab = malloc(len ? len : 1);
	if (!tab)
		return 0;
	memcpy(tab, data + 12, len);

	pyline_lnotab(tab, len, first, at);
	pyline_linetable(tab, len, first, at);
	pyline_locations(tab, len, first, at);
	/* a real table with a small offset, as a reader asks it */
	pyline_lnotab(tab, len, first, at & 0xffff);
	pyline_linetable(tab, len, first, at & 0xffff);
	pyline_locations(tab, len, first, at & 0xffff);
	free(tab);
	return 0;
}
