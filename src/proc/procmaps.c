/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/procmaps.h"
#include "util/xalloc.h"

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

/* A parsed line; path points into the line, plen bytes, NULL when none. */
struct line {
	struct procmap m;
	const char *path;
	size_t plen;
};

static int parse_line(const char *s, const char *end, struct line *l)
{
	static const char deleted[] = " (deleted)";
	const size_t dlen = sizeof(deleted) - 1;
	struct procmap *m = &l->m;
	uint64_t maj, min;

	memset(l, 0, sizeof(*l));
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
	l->path = s;
	l->plen = (size_t)(end - s);
	return 1;
}

/* Bytes held by every struct procmaps alive: PROCMAPS_MAX_TOTAL. */
static _Atomic size_t total_held;

size_t procmaps_total_held(void)
{
	return total_held;
}

/*
 * The parse of one maps text, line after line.  credit: bytes of the
 * total that will be given back when these maps replace older ones.
 */
struct parser {
	struct procmaps *maps;
	size_t credit;
	size_t bad;
	enum perr err;
};

/* Whether bytes more may be held, checked before they are allocated. */
static int charge(struct parser *ps, size_t bytes)
{
	size_t held = ps->maps->held, others = total_held;

	others = others > ps->credit ? others - ps->credit : 0;
	if (bytes > PROCMAPS_MAX_HELD - held || held + bytes > PROCMAPS_MAX_TOTAL ||
	    others > PROCMAPS_MAX_TOTAL - held - bytes) {
		ps->err = PERR_TOOBIG;
		return 0;
	}
	ps->maps->held += bytes;
	return 1;
}

static uint64_t path_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	/* FNV-1a: the target chooses its paths, but only slows its own read */
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The one copy of path s (len bytes) these maps keep, made if new; NULL over a cap. */
static const char *intern(struct parser *ps, const char *s, size_t len)
{
	struct procmaps *maps = ps->maps;
	uint64_t h = path_hash(s, len);
	uint32_t j;

	/* load at most 1/2 */
	if (maps->npath + 1 > maps->path_hcap / 2) {
		uint32_t ncap = maps->path_hcap ? maps->path_hcap * 2 : 64;
		uint32_t *nt;

		if (!charge(ps, (size_t)(ncap - maps->path_hcap) * sizeof(*nt)))
			return NULL;
		nt = xcalloc(ncap, sizeof(*nt));
		for (uint32_t i = 0; i < maps->npath; i++) {
			const char *p = maps->path[i];

			for (j = (uint32_t)path_hash(p, strlen(p)) & (ncap - 1); nt[j];
			     j = (j + 1) & (ncap - 1))
				;
			nt[j] = i + 1;
		}
		free(maps->path_hash);
		maps->path_hash = nt;
		maps->path_hcap = ncap;
	}
	for (j = (uint32_t)h & (maps->path_hcap - 1); maps->path_hash[j];
	     j = (j + 1) & (maps->path_hcap - 1)) {
		const char *p = maps->path[maps->path_hash[j] - 1];

		if (!strncmp(p, s, len) && !p[len])
			return p;
	}
	if (maps->npath == maps->apath) {
		uint32_t na = maps->apath ? maps->apath * 2 : 16;

		if (!charge(ps, (size_t)(na - maps->apath) * sizeof(*maps->path)))
			return NULL;
		maps->path = xreallocarray(maps->path, na, sizeof(*maps->path));
		maps->apath = na;
	}
	if (!charge(ps, len + 1))
		return NULL;
	maps->path[maps->npath] = xstrndup(s, len);
	maps->path_hash[j] = ++maps->npath;
	return maps->path[maps->npath - 1];
}

/* One line, at most PROCMAPS_MAX_LINE bytes of it; 0 once a cap is passed. */
static int add_line(struct parser *ps, const char *p, const char *lend)
{
	struct procmaps *maps = ps->maps;
	struct line l;

	if (lend == p)
		return 1;
	if (memchr(p, '\0', (size_t)(lend - p)) || !parse_line(p, lend, &l)) {
		ps->bad++;
		return 1;
	}
	if (maps->nr >= PROCMAPS_MAX_MAPS) {
		ps->err = PERR_TOOBIG;
		return 0;
	}
	if (maps->nr == maps->alloc) {
		size_t na = maps->alloc ? maps->alloc * 2 : 64;

		if (na > PROCMAPS_MAX_MAPS)
			na = PROCMAPS_MAX_MAPS;
		if (!charge(ps, (na - maps->alloc) * sizeof(*maps->map)))
			return 0;
		maps->map = xreallocarray(maps->map, na, sizeof(*maps->map));
		maps->alloc = na;
	}
	if (l.path && !(l.m.path = intern(ps, l.path, l.plen)))
		return 0;
	maps->map[maps->nr++] = l.m;
	return 1;
}

static void parser_init(struct parser *ps, struct procmaps *maps, size_t credit)
{
	memset(maps, 0, sizeof(*maps));
	ps->maps = maps;
	ps->credit = credit;
	ps->bad = 0;
	ps->err = PERR_OK;
}

/* The end of the text: the maps are counted in the total, or released. */
static enum perr parser_finish(struct parser *ps)
{
	struct procmaps *maps = ps->maps;

	if (!ps->err && !maps->nr && ps->bad)
		ps->err = PERR_CORRUPT;
	/* The kernel prints maps sorted; a fixture or a race may not. */
	for (size_t i = 1; !ps->err && i < maps->nr; i++) {
		if (maps->map[i].start < maps->map[i - 1].end)
			ps->err = PERR_CORRUPT;
	}
	if (ps->err) {
		procmaps_release(maps);
		return ps->err;
	}
	total_held += maps->held;
	return PERR_OK;
}

enum perr procmaps_parse(struct procmaps *maps, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	struct parser ps;

	parser_init(&ps, maps, 0);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		if (!add_line(&ps, p, eol - p > PROCMAPS_MAX_LINE ? p + PROCMAPS_MAX_LINE : eol))
			break;
		p = nl ? nl + 1 : end;
	}
	return parser_finish(&ps);
}

#define READ_CHUNK 65536

static enum perr read_maps(struct procmaps *maps, pid_t pid, size_t credit)
{
	char path[64];
	char *buf;
	size_t have = 0, total = 0;
	int skip = 0;		/* in the rest of a line longer than PROCMAPS_MAX_LINE */
	struct parser ps;
	int fd;

	parser_init(&ps, maps, credit);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? PERR_NOPROC : perr_from_errno(errno);
	/* a line is parsed from one buffer: room for a chunk after the longest kept */
	buf = xmalloc(PROCMAPS_MAX_LINE + READ_CHUNK);
	for (;;) {
		const char *p, *end;
		ssize_t n = read(fd, buf + have, READ_CHUNK);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* ESRCH when the process died between open and read */
			ps.err = errno == ESRCH ? PERR_EXITED : perr_from_errno(errno);
			break;
		}
		if (n == 0) {
			if (have && !skip)
				add_line(&ps, buf, buf + have);
			/* A zombie or kernel thread has an empty maps file. */
			if (!total && !ps.err)
				ps.err = PERR_EXITED;
			break;
		}
		total += (size_t)n;
		if (total > PROCMAPS_MAX_BYTES) {
			ps.err = PERR_TOOBIG;
			break;
		}
		p = buf;
		end = buf + have + (size_t)n;
		for (const char *nl; (nl = memchr(p, '\n', (size_t)(end - p))); p = nl + 1) {
			if (skip)
				skip = 0;
			else if (!add_line(&ps, p, nl - p > PROCMAPS_MAX_LINE ?
						       p + PROCMAPS_MAX_LINE : nl))
				break;
		}
		if (ps.err)
			break;
		have = (size_t)(end - p);
		if (skip) {
			have = 0;
		} else if (have >= PROCMAPS_MAX_LINE) {
			/* cut, as procmaps_parse() cuts it; its rest is skipped */
			if (!add_line(&ps, p, p + PROCMAPS_MAX_LINE))
				break;
			skip = 1;
			have = 0;
		} else {
			memmove(buf, p, have);
		}
	}
	free(buf);
	close(fd);
	return parser_finish(&ps);
}

enum perr procmaps_read(struct procmaps *maps, pid_t pid)
{
	return read_maps(maps, pid, 0);
}

enum perr procmaps_reread(struct procmaps *fresh, pid_t pid, const struct procmaps *was)
{
	return read_maps(fresh, pid, was->held);
}

enum perr procmaps_refresh(struct procmaps *maps, pid_t pid)
{
	struct procmaps fresh;
	enum perr err = procmaps_reread(&fresh, pid, maps);

	if (err)
		return err;
	procmaps_release(maps);
	*maps = fresh;
	return PERR_OK;
}

void procmaps_release(struct procmaps *maps)
{
	for (uint32_t i = 0; i < maps->npath; i++)
		free(maps->path[i]);
	FREE_AND_NULL(maps->path);
	FREE_AND_NULL(maps->path_hash);
	FREE_AND_NULL(maps->map);
	total_held -= maps->held <= total_held ? maps->held : total_held;
	memset(maps, 0, sizeof(*maps));
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
