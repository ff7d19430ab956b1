/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <inttypes.h>

#include "out.h"
#include "profile.h"

/*
 * Brendan Gregg's collapsed stacks, one line per distinct stack, root
 * first:
 *
 *   <module> (app.py:12);foo (app.py:6);work (app.py:3) 742
 *
 * A frame is "function (file:line)", or "function (file)" when the line is
 * unknown or lines are off.  Pseudo-frames ("thread (1234)") have no file.
 */
static int folded_write(FILE *f, const struct profile *p, const struct out_meta *meta)
{
	for (uint32_t i = 0; i < p->nstack; i++) {
		const struct profile_stack *s = &p->stack[i];

		for (uint32_t d = 0; d < s->depth; d++) {
			const struct profile_frame *fr = &p->frame[s->frames[d]];
			const char *file = profile_str(p, fr->file);

			if (d && putc(';', f) == EOF)
				return -1;
			if (out_put_sanitized(f, profile_str(p, fr->name)))
				return -1;
			if (!*file)
				continue;
			if (fputs(" (", f) == EOF || out_put_sanitized(f, file))
				return -1;
			if (fr->line > 0 ? fprintf(f, ":%d)", fr->line) < 0 : putc(')', f) == EOF)
				return -1;
		}
		if (fprintf(f, " %" PRIu64 "\n", s->count) < 0)
			return -1;
	}
	return 0;
}

const struct out_ops out_folded = {
	.name = "folded",
	.ext = "txt",
	.write = folded_write,
};
