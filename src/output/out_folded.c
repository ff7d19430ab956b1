/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <inttypes.h>

#include "output/out.h"
#include "profile/profile.h"

/*
 * Brendan Gregg's collapsed stacks, one line per distinct stack, root
 * first:
 *
 *   <module> (app.py:12);foo (app.py:6);work (app.py:3) 742
 *
 * A frame is "function (file:line)", or "function (file)" when the line is
 * unknown or lines are off.  Pseudo-frames ("thread (1234)") have no file.
 * Tag sets are not shown; with meta->threads each stack starts with its
 * thread.
 */
static int folded_line(void *arg, const struct profile *p, const uint32_t *frames, uint32_t depth,
		       uint64_t count)
{
	FILE *f = arg;
	char buf[8192];

	for (uint32_t d = 0; d < depth; d++) {
		if (d && putc(';', f) == EOF)
			return -1;
		if (out_put_sanitized(f, out_frame_text(p, frames[d], buf, sizeof(buf))))
			return -1;
	}
	return fprintf(f, " %" PRIu64 "\n", count) < 0 ? -1 : 0;
}

static int folded_write(FILE *f, const struct profile *p, const struct out_meta *meta)
{
	struct profile view;
	int ret;

	profile_project(p, OUT_KEEP(meta), &view);
	ret = profile_stacks(&view, folded_line, f);
	profile_release(&view);
	return ret;
}

const struct out_ops out_folded = {
	.name = "folded",
	.ext = "txt",
	.write = folded_write,
};
