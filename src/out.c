/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <string.h>

#include "out.h"
#include "xalloc.h"

static const struct out_ops *const formats[] = {
	&out_folded,
};

const struct out_ops *out_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++)
		if (!strcmp(formats[i]->name, name))
			return formats[i];
	return NULL;
}

const char *out_names(void)
{
	return "folded";
}

int out_put_sanitized(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == ';')
			c = ':';
		else if (c < 0x20 || c == 0x7f)
			c = '?';
		if (putc(c, f) == EOF)
			return -1;
	}
	return 0;
}
