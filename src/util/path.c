/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <string.h>

#include "util/path.h"

/* A component of len bytes at s: 1 for ".", 2 for "..", 0 for a name. */
static int dots(const char *s, size_t len)
{
	if (len == 1 && s[0] == '.')
		return 1;
	if (len == 2 && s[0] == '.' && s[1] == '.')
		return 2;
	return 0;
}

int path_is_normal(const char *path)
{
	const char *s = path;
	int names = 0;

	if (*path == '<' || !*path)
		return 1;
	if (!strcmp(path, "."))
		return 1;
	if (*s == '/')
		s++;
	for (;;) {
		size_t len = strcspn(s, "/");
		int d = dots(s, len);

		/* empty (a doubled or trailing slash), ".", "/.." or "name/.." */
		if (!len || d == 1 || (d == 2 && (*path == '/' || names)))
			return !len && !*s && s == path + (*path == '/');
		if (!d)
			names = 1;
		s += len;
		if (!*s)
			return 1;
		s++;
	}
}

char *path_normalize(char *path)
{
	size_t r = 0, w, base, comps = 0, ups = 0;

	if (path_is_normal(path))
		return path;
	base = w = (*path == '/');
	r = base;
	/*
	 * Components are copied down over what was dropped: the write index
	 * w never passes the read index r.  comps counts those written, ups
	 * the leading ".." among them (of a relative path).
	 */
	while (path[r]) {
		size_t len = strcspn(path + r, "/");
		int d = dots(path + r, len);

		if (!len || d == 1) {
			/* nothing */
		} else if (d == 2 && comps > ups) {
			while (w > base && path[w - 1] != '/')
				w--;
			if (w > base)
				w--;	/* the slash before it */
			comps--;
		} else if (d == 2 && base) {
			/* "/.." is "/" */
		} else {
			if (comps)
				path[w++] = '/';
			memmove(path + w, path + r, len);
			w += len;
			comps++;
			ups += d == 2;
		}
		r += len;
		if (path[r])
			r++;
	}
	if (!w)
		path[w++] = '.';
	path[w] = '\0';
	return path;
}

int path_goes_up(const char *path)
{
	return path[0] == '.' && path[1] == '.' && (!path[2] || path[2] == '/');
}
