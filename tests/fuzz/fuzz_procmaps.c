/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "proc/procmaps.h"

/*
 * procmaps_parse() on fuzzed text, then every query on what it kept.  The
 * text is copied to a buffer of exactly its length (no NUL after it).
 * Every map kept holds the bounds the readers rely on: sorted, disjoint,
 * and a path offered for opening (procmaps_file()) absolute, of an inode,
 * shorter than PATH_MAX.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procmaps maps;
	char *text = malloc(size ? size : 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	if (procmaps_parse(&maps, text, size) == PERR_OK) {
		for (size_t i = 0; i < maps.nr; i++) {
			const struct procmap *m = &maps.map[i];

			if (m->end < m->start)
				abort();
			if (i && m->start < maps.map[i - 1].end)
				abort();	/* promised sorted and disjoint */
			if (m->end > m->start && procmaps_find(&maps, m->start) != m)
				abort();
			procmaps_readable(&maps, m->start, m->end - m->start);
			procmaps_readable(&maps, m->end - 1, 2);
			procmaps_readable(&maps, m->start, UINT64_MAX);
			if (m->path)
				procmaps_object(&maps, m->path);
			/* what target.c and mapfile.c may look up by name */
			if (procmaps_file(m) && (procmaps_file(m) != m->path || *m->path != '/' ||
						 !m->inode ||
						 strlen(m->path) >= PROCMAPS_MAX_PATH))
				abort();
		}
		procmaps_find(&maps, 0);
		procmaps_find(&maps, UINT64_MAX);
		procmaps_readable(&maps, 0, 0);
		procmaps_object(&maps, "/usr/bin/python3");
		procmaps_release(&maps);
	}
	free(text);
	return 0;
}
