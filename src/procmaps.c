/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procmaps.h"
#include "xalloc.h"

/*
 * A maps line:
 *
 *   7f3c1a000000-7f3c1a021000 r-xp 00001000 fd:01 1835028   /usr/lib/libx.so (deleted)
 *   start-end                 perm offset   dev   inode     path (optional)
 *
 * The reader never uses sscanf("%s"): every field is parsed by hand with a
 * bound, and a line is taken as at most PROCMAPS_MAX_LINE bytes.
 */

static int parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int n = 0;

	while (s < end && n < 17) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		v = v << 4 | (uint64_t)d;
		s++;
		n++;
	}
	if (n == 0 || n > 16)
		return 0;
	*p = s;
	*out = v;
	return 1;
}

static int parse_dec(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int n = 0;

	while (s < end && *s >= '0' && *s <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			return 0;
		v = v * 10 + (uint64_t)(*s - '0');
		s++;
		n++;
	}
	if (!n)
		return 0;
	*p = s;
	*out = v;
	return 1;
}

static int expect(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return 0;
	(*p)++;
	return 1;
}

static void skip_spaces(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
}

static int parse_line(const char *s, const char *end, struct procmap *m)
{
	static const char deleted[] = " (deleted)";
	const size_t dlen = sizeof(deleted) - 1;
	uint64_t maj, min;

	memset(m, 0, sizeof(*m));
	if (!parse_hex(&s, end, &m->start) || !expect(&s, end, '-') ||
	    !parse_hex(&s, end, &m->end) || !expect(&s, end, ' '))
		return 0;
	if (m->end < m->start || end - s < 4)
		return 0;
	if (s[0] == 'r')
		m->perms |= PROCMAP_R;
	if (s[1] == 'w')
		m->perms |= PROCMAP_W;
	if (s[2] == 'x')
		m->perms |= PROCMAP_X;
	if (s[3] == 'p')
		m->perms |= PROCMAP_P;
	s += 4;
	if (!expect(&s, end, ' ') || !parse_hex(&s, end, &m->offset) ||
	    !expect(&s, end, ' ') || !parse_hex(&s, end, &maj) ||
	    !expect(&s, end, ':') || !parse_hex(&s, end, &min) ||
	    !expect(&s, end, ' ') || !parse_dec(&s, end, &m->inode))
		return 0;
	if (maj > 0xfff || min > 0xfffff)
		return 0;
	m->dev_major = (unsigned int)maj;
	m->dev_minor = (unsigned int)min;
	skip_spaces(&s, end);
	if (s >= end)
		return 1;
	if ((size_t)(end - s) > dlen && !memcmp(end - dlen, deleted, dlen)) {
		m->deleted = 1;
		end -= dlen;
	}
	m->path = xstrndup(s, (size_t)(end - s));
	return 1;
}

enum perr procmaps_parse(struct procmaps *maps, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	size_t bad = 0;

	memset(maps, 0, sizeof(*maps));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		const char *lend = eol;
		struct procmap m;

		if (lend - p > PROCMAPS_MAX_LINE)
			lend = p + PROCMAPS_MAX_LINE;
		if (lend > p && memchr(p, '\0', (size_t)(lend - p)))
			bad++;
		else if (lend > p && parse_line(p, lend, &m)) {
			if (maps->nr >= PROCMAPS_MAX_MAPS) {
				free(m.path);
				procmaps_release(maps);
				return PERR_TOOBIG;
			}
			if (maps->nr == maps->alloc) {
				maps->alloc = maps->alloc ? maps->alloc * 2 : 64;
				maps->map = xreallocarray(maps->map, maps->alloc,
							  sizeof(*maps->map));
			}
			maps->map[maps->nr++] = m;
		} else if (lend > p) {
			bad++;
		}
		p = nl ? nl + 1 : end;
	}
	if (!maps->nr && bad)
		return PERR_CORRUPT;
	/* The kernel prints maps sorted; a fixture or a race may not. */
	for (size_t i = 1; i < maps->nr; i++) {
		if (maps->map[i].start < maps->map[i - 1].end) {
			procmaps_release(maps);
			return PERR_CORRUPT;
		}
	}
	return PERR_OK;
}

enum perr procmaps_read(struct procmaps *maps, pid_t pid)
{
	char path[64];
	char *buf = NULL;
	size_t len = 0, alloc = 0;
	enum perr err;
	int fd;

	memset(maps, 0, sizeof(*maps));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? PERR_NOPROC : perr_from_errno(errno);
	for (;;) {
		ssize_t n;

		if (alloc - len < 65536) {
			if (alloc >= PROCMAPS_MAX_BYTES) {
				err = PERR_TOOBIG;
				goto out;
			}
			alloc = alloc ? alloc * 2 : 65536;
			buf = xrealloc(buf, alloc);
		}
		n = read(fd, buf + len, alloc - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* ESRCH when the process died between open and read */
			err = errno == ESRCH ? PERR_EXITED : perr_from_errno(errno);
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	/* A zombie or kernel thread has an empty maps file. */
	err = len ? procmaps_parse(maps, buf, len) : PERR_EXITED;
out:
	free(buf);
	close(fd);
	return err;
}

void procmaps_release(struct procmaps *maps)
{
	for (size_t i = 0; i < maps->nr; i++)
		free(maps->map[i].path);
	FREE_AND_NULL(maps->map);
	maps->nr = maps->alloc = 0;
}

static size_t find_index(const struct procmaps *maps, uint64_t addr)
{
	size_t lo = 0, hi = maps->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < maps->map[mid].start)
			hi = mid;
		else if (addr >= maps->map[mid].end)
			lo = mid + 1;
		else
			return mid;
	}
	return SIZE_MAX;
}

const struct procmap *procmaps_find(const struct procmaps *maps, uint64_t addr)
{
	size_t i = find_index(maps, addr);

	return i == SIZE_MAX ? NULL : &maps->map[i];
}

int procmaps_readable(const struct procmaps *maps, uint64_t addr, uint64_t len)
{
	size_t i = find_index(maps, addr);
	uint64_t end;

	if (len == 0)
		return i != SIZE_MAX;
	if (addr > UINT64_MAX - len || i == SIZE_MAX)
		return 0;
	end = addr + len;
	for (;;) {
		const struct procmap *m = &maps->map[i];

		if (!(m->perms & PROCMAP_R))
			return 0;
		if (end <= m->end)
			return 1;
		if (++i >= maps->nr || maps->map[i].start != m->end)
			return 0;
	}
}

const struct procmap *procmaps_object(const struct procmaps *maps, const char *path)
{
	for (size_t i = 0; i < maps->nr; i++) {
		const struct procmap *m = &maps->map[i];

		if (m->offset == 0 && m->path && !strcmp(m->path, path))
			return m;
	}
	return NULL;
}

const char *procmaps_file(const struct procmap *m)
{
	if (!m->path || m->path[0] != '/' || !m->inode ||
	    strnlen(m->path, PROCMAPS_MAX_PATH) >= PROCMAPS_MAX_PATH)
		return NULL;
	return m->path;
}
