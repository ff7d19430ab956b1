/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "output/out.h"
#include "profile/profile.h"
#include "profile/shortpath.h"
#include "util/xalloc.h"

static const struct out_ops *const formats[] = {
	&out_flamegraph, &out_folded, &out_speedscope, &out_pprof, &out_summary, &out_raw,
	&out_chrome, &out_html,
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
	return "flamegraph, folded, speedscope, pprof, summary, raw, chrome, html";
}

/*
 * The formats a file's name selects, by name so that a format not built
 * in (yet) is an unknown extension.  The first suffix that matches wins:
 * one that ends with another comes before it ("x.speedscope.json" before
 * ".json").  listed: named by out_exts() (the others are the names
 * pyrospy gives files itself).
 */
static const struct out_ext {
	const char *suffix, *format;
	int listed;
} exts[] = {
	{ ".speedscope.json", "speedscope", 0 },
	{ ".trace.json", "chrome", 0 },
	{ ".summary.txt", "summary", 0 },
	{ ".html", "html", 1 },
	{ ".svg", "flamegraph", 1 },
	{ ".txt", "folded", 1 },
	{ ".folded", "folded", 1 },
	{ ".json", "speedscope", 1 },
	{ ".pb.gz", "pprof", 1 },
	{ ".pprof", "pprof", 1 },
	{ ".raw", "raw", 1 },
};

const struct out_ops *out_by_ext(const char *path)
{
	size_t n = strlen(path);

	for (size_t i = 0; i < ARRAY_SIZE(exts); i++) {
		size_t len = strlen(exts[i].suffix);

		/* a name, not only an extension: ".svg" is a hidden file named so */
		if (n > len && path[n - len - 1] != '/' &&
		    !strcasecmp(path + n - len, exts[i].suffix))
			return out_find(exts[i].format);
	}
	return NULL;
}

const char *out_exts(void)
{
	static char list[128];

	if (!*list)
		for (size_t i = 0; i < ARRAY_SIZE(exts); i++)
			if (exts[i].listed && out_find(exts[i].format))
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
					 *list ? " " : "", exts[i].suffix);
	return list;
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

const char *out_frame_text(const struct profile *p, uint32_t frame, char *buf, size_t cap)
{
	return out_frame_label(p, frame, NULL, buf, cap);
}

const char *out_frame_label(const struct profile *p, uint32_t frame, const struct shortpath *sp,
			    char *buf, size_t cap)
{
	const struct profile_frame *f = &p->frame[frame];
	const char *name = profile_str(p, f->name);
	const char *file = shortpath_get(sp, profile_str(p, f->file));

	if (f->kind == PROFILE_TAGS)
		snprintf(buf, cap, "{%s}", name);
	else if (!*file)
		snprintf(buf, cap, "%s", name);
	else if (f->line > 0)
		snprintf(buf, cap, "%s (%s:%d)", name, file, f->line);
	else
		snprintf(buf, cap, "%s (%s)", name, file);
	return buf;
}

int out_put_escaped(FILE *f, const char *s, int xml)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int r;

		if (xml && c == '<')
			r = fputs("&lt;", f);
		else if (xml && c == '>')
			r = fputs("&gt;", f);
		else if (xml && c == '&')
			r = fputs("&amp;", f);
		else if (xml && c == '"')
			r = fputs("&quot;", f);
		else if (xml && c < 0x20)
			r = putc('?', f);
		else if (!xml && (c == '"' || c == '\\'))
			r = fprintf(f, "\\%c", c);
		else if (!xml && c < 0x20)
			r = fprintf(f, "\\u%04x", c);
		else
			r = putc(c, f);
		if (r < 0)
			return -1;
	}
	return 0;
}
