/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/shortpath.h"
#include "util/xalloc.h"

#define APPDIRS_MAX	16	/* app directories looked for (one per process) */
#define ROUNDS_MAX	64	/* of making colliding short forms whole again */

struct shortpath {
	const char **full;	/* the profile's strings, borrowed */
	uint32_t *off;		/* short form: full[i] + off[i] */
	uint32_t n;
	uint32_t *hash;		/* open addressing: index + 1, 0 empty */
	uint32_t hcap;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* The slot of full in sp's table: its own, or the empty one where it goes. */
static uint32_t *slot(const struct shortpath *sp, const char *full)
{
	uint32_t j = (uint32_t)hash_str(full) & (sp->hcap - 1);

	for (;; j = (j + 1) & (sp->hcap - 1))
		if (!sp->hash[j] || !strcmp(sp->full[sp->hash[j] - 1], full))
			return &sp->hash[j];
}

/* Whether s starts with digits and dots (a version: "3.1.0") ending in '/': its length. */
static size_t version_dir(const char *s)
{
	size_t n = strspn(s, "0123456789.");

	return n && s[n] == '/' ? n + 1 : 0;
}

/* The longest prefix of f that the pattern rules (shortpath.h) take away. */
static size_t rule_prefix(const char *f)
{
	size_t best = 0;

	for (const char *s = strchr(f, '/'); s; s = strchr(s + 1, '/')) {
		size_t at = (size_t)(s - f) + 1, n;	/* just after this slash */

		/* .../lib/python3.X/ (3.13t: free-threaded), then its package dirs */
		if (!strncmp(s, "/lib/python3.", 13) && (n = strspn(s + 13, "0123456789"))) {
			const char *e = s + 13 + n;

			if (*e == 't' || *e == 'd')
				e++;
			if (*e == '/') {
				size_t p = (size_t)(e + 1 - f);

				if (!strncmp(e + 1, "site-packages/", 14) ||
				    !strncmp(e + 1, "dist-packages/", 14))
					p += 14;
				else if (!strncmp(e + 1, "lib-dynload/", 12))
					p += 12;
				if (p > best)
					best = p;
			}
		}
		if ((!strncmp(s, "/site-packages/", 15) || !strncmp(s, "/dist-packages/", 15)) &&
		    at + 14 > best)
			best = at + 14;
		/* .../gems/NAME-VERSION/...: the gem's own directory is kept */
		if (!strncmp(s, "/gems/", 6)) {
			const char *g = s + 6;
			size_t len = strcspn(g, "/");

			if (g[len] == '/' && memchr(g, '-', len) && *g != '-' && at + 5 > best)
				best = at + 5;
		}
		/* .../lib/ruby/[vendor_ruby/|site_ruby/][X.Y.Z/] */
		if (!strncmp(s, "/lib/ruby/", 10)) {
			size_t p = at + 9;

			if (!strncmp(f + p, "vendor_ruby/", 12) || !strncmp(f + p, "site_ruby/", 10))
				p += f[p] == 'v' ? 12 : 10;
			p += version_dir(f + p);
			if (p > best)
				best = p;
		}
	}
	return best;
}

/* The outermost code frames' files of "<module>" and "<main>": their directories. */
static uint32_t app_dirs(const struct profile *p, const char **dir, size_t *len)
{
	uint32_t n = 0;

	for (uint32_t i = 1; i < p->nnode && n < APPDIRS_MAX; i++) {
		const struct profile_frame *f = &p->frame[p->node[i].frame];
		uint32_t up = p->node[i].parent;
		const char *name, *file, *slash;
		uint32_t k;

		if (f->kind != PROFILE_CODE ||
		    (up && p->frame[p->node[up].frame].kind != PROFILE_TAGS &&
		     p->frame[p->node[up].frame].kind != PROFILE_THREAD))
			continue;
		name = profile_str(p, f->name);
		if (strcmp(name, "<module>") && strcmp(name, "<main>"))
			continue;
		file = profile_str(p, f->file);
		slash = strrchr(file, '/');
		/* a script in / would take the slash of every other path */
		if (*file == '<' || !slash || slash == file)
			continue;
		for (k = 0; k < n && (len[k] != (size_t)(slash + 1 - file) ||
				      strncmp(dir[k], file, len[k])); k++)
			;
		if (k == n) {
			dir[n] = file;
			len[n++] = (size_t)(slash + 1 - file);
		}
	}
	return n;
}

/*
 * With no "<module>" or "<main>" frame (the main thread was never sampled:
 * it waited for its workers all along), the app's directory is the one the
 * files that no rule shortens have in common: the threads' own code, below
 * the library's thread start.  "/" (files from all over) is none.
 */
static uint32_t app_dir_common(const struct profile *p, const char **dir, size_t *len)
{
	const char *first = NULL;
	size_t n = 0;

	for (uint32_t i = 0; i < p->nframe; i++) {
		const char *f;
		size_t k;

		if (p->frame[i].kind != PROFILE_CODE)
			continue;
		f = profile_str(p, p->frame[i].file);
		if (*f != '/' || rule_prefix(f))
			continue;
		if (!first) {
			first = f;
			n = strlen(f);
		}
		for (k = 0; k < n && f[k] == first[k]; k++)
			;
		n = k;
	}
	while (n && first[n - 1] != '/')
		n--;
	if (n <= 1)
		return 0;
	dir[0] = first;
	len[0] = n;
	return 1;
}

static const struct shortpath *sort_sp;

static int by_short(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return strcmp(sort_sp->full[x] + sort_sp->off[x], sort_sp->full[y] + sort_sp->off[y]);
}

/*
 * Files whose short forms are equal keep their whole paths; that may make
 * a whole path equal to another's short form, so again, until none are
 * (a few rounds at most; past ROUNDS_MAX, every path is whole: distinct).
 */
static void make_exact(struct shortpath *sp)
{
	uint32_t *order = xmalloc((sp->n ? sp->n : 1) * sizeof(*order));
	int changed = 1;

	for (unsigned int round = 0; changed; round++) {
		changed = 0;
		for (uint32_t i = 0; i < sp->n; i++)
			order[i] = i;
		sort_sp = sp;
		qsort(order, sp->n, sizeof(*order), by_short);
		for (uint32_t i = 0; i + 1 < sp->n; i++) {
			uint32_t a = order[i], b = order[i + 1];

			if (by_short(&a, &b))
				continue;
			if (sp->off[a] || sp->off[b])
				changed = 1;
			sp->off[a] = sp->off[b] = 0;
		}
		if (changed && round + 1 >= ROUNDS_MAX) {
			memset(sp->off, 0, sp->n * sizeof(*sp->off));
			break;
		}
	}
	free(order);
}

struct shortpath *shortpath_new(const struct profile *p)
{
	struct shortpath *sp = xcalloc(1, sizeof(*sp));
	const char *dir[APPDIRS_MAX];
	size_t len[APPDIRS_MAX];
	uint32_t ndir = app_dirs(p, dir, len);

	if (!ndir)
		ndir = app_dir_common(p, dir, len);

	sp->hcap = 64;
	while (sp->hcap < 2 * (uint64_t)p->nframe + 2)
		sp->hcap *= 2;
	sp->hash = xcalloc(sp->hcap, sizeof(*sp->hash));
	sp->full = xmalloc((p->nframe ? p->nframe : 1) * sizeof(*sp->full));
	sp->off = xmalloc((p->nframe ? p->nframe : 1) * sizeof(*sp->off));
	for (uint32_t i = 0; i < p->nframe; i++) {
		const char *f = profile_str(p, p->frame[i].file);
		uint32_t *e;
		size_t best;

		/* every file, the ones kept whole too: a short form may equal them */
		if (p->frame[i].kind != PROFILE_CODE)
			continue;
		e = slot(sp, f);
		if (*e)
			continue;
		best = *f == '<' ? 0 : rule_prefix(f);
		for (uint32_t k = 0; k < ndir && *f != '<'; k++)
			if (len[k] > best && !strncmp(f, dir[k], len[k]))
				best = len[k];
		if (!f[best] || best > UINT32_MAX)
			best = 0;
		sp->full[sp->n] = f;
		sp->off[sp->n] = (uint32_t)best;
		*e = ++sp->n;
	}
	make_exact(sp);
	return sp;
}

const char *shortpath_get(const struct shortpath *sp, const char *file)
{
	uint32_t id;

	if (!sp || !sp->n)
		return file;
	id = *slot(sp, file);
	return id ? sp->full[id - 1] + sp->off[id - 1] : file;
}

void shortpath_free(struct shortpath *sp)
{
	if (!sp)
		return;
	free(sp->full);
	free(sp->off);
	free(sp->hash);
	free(sp);
}
