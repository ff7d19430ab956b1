/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile/pprofread.h"
#include "util/utf8.h"
#include "util/xalloc.h"

/*
 * The fields of profile.proto read (the rest are skipped):
 *
 *   Profile   1 sample_type (ValueType: 1 type)   2 sample   4 location
 *             5 function   6 string_table   14 default_sample_type
 *   Sample    1 location_id (leaf first)   2 value   3 label
 *   Label     1 key   2 str   (3 num: a number, not a tag)
 *   Location  1 id   3 address   4 line (Line: 1 function_id, 2 line)
 *   Function  1 id   2 name   3 system_name   4 filename
 *
 * A first pass notes where each sample, location, function and string
 * is; the samples are then read one by one, their ids looked up in the
 * functions and locations sorted by id.  Repeated scalars may come
 * packed or not: both are read.
 *
 * What the file may cost is capped before it is spent: the inflated bytes
 * (PPROFREAD_MAX_BYTES), the entries kept of the first pass
 * (PPROFREAD_MAX_ENTRIES, at most 32 bytes each; a string is made in
 * place in the inflated bytes, over its own key and length, so it costs
 * only its pointer), the samples (PPROFREAD_MAX_SAMPLES, 4 bytes each:
 * where they start), and the frames the samples expand to, since a
 * location of many lines may be named by many samples of a few bytes
 * (PPROFREAD_FRAMES_PER_BYTE of the inflated bytes, and 2^20 more).
 */

struct pbr {
	const unsigned char *p, *end;
};

struct pbf {
	uint32_t num;
	unsigned int wire;
	uint64_t v;		/* a varint's value, a body's length */
	struct pbr body;	/* wire 2 */
};

struct pfn {
	uint64_t id, name, sysname, file;
};

struct ploc {
	uint64_t id, addr;
	struct pbr body;
};

struct pr {
	unsigned char *buf;	/* the inflated profile; strings are made in it */
	char *scratch;		/* a string being made */
	char **str;
	size_t nstr, astr;
	struct pfn *fn;
	size_t nfn, afn;
	struct ploc *loc;
	size_t nloc, aloc;
	uint32_t *sample;	/* where each sample's field starts in buf */
	size_t nsample, asample;
	size_t frames;		/* frames the samples may still expand to */
	uint64_t *stype;
	size_t nstype, astype;
	uint64_t deftype;
	char *why;
	size_t cap;
	/* per sample */
	uint64_t *ids;
	struct folded_frame *frame;
	char (*addr)[24];
	char *tags, *thread;
	size_t atags, athread;
};

static enum perr pr_fail(struct pr *r, enum perr err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum perr pr_fail(struct pr *r, enum perr err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->why, r->cap, fmt, ap);
	va_end(ap);
	return err;
}

/* One more entry of the first pass, or PERR_TOOBIG. */
static enum perr pr_entry(struct pr *r)
{
	if (r->nstr + r->nfn + r->nloc + r->nstype < PPROFREAD_MAX_ENTRIES)
		return PERR_OK;
	return pr_fail(r, PERR_TOOBIG, "over %u strings, functions, locations and sample types",
		       PPROFREAD_MAX_ENTRIES);
}

static void *grow(void *a, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return a;
	*cap = *cap ? *cap * 2 : 64;
	return xreallocarray(a, *cap, size);
}

static int pbr_varint(struct pbr *r, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned int shift = 0; shift < 64; shift += 7) {
		unsigned char b;

		if (r->p == r->end)
			return -1;
		b = *r->p++;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* The next field of r into f: 1, 0 at the end, -1 when malformed. */
static int pbr_field(struct pbr *r, struct pbf *f)
{
	uint64_t key;

	if (r->p == r->end)
		return 0;
	if (pbr_varint(r, &key) || !(key >> 3) || (key >> 3) > UINT32_MAX)
		return -1;
	f->num = (uint32_t)(key >> 3);
	f->wire = (unsigned int)(key & 7);
	switch (f->wire) {
	case 0:
		return pbr_varint(r, &f->v) ? -1 : 1;
	case 1:
		if (r->end - r->p < 8)
			return -1;
		r->p += 8;
		return 1;
	case 5:
		if (r->end - r->p < 4)
			return -1;
		r->p += 4;
		return 1;
	case 2:
		if (pbr_varint(r, &f->v) || f->v > (uint64_t)(r->end - r->p))
			return -1;
		f->body.p = r->p;
		f->body.end = r->p + f->v;
		r->p += f->v;
		return 1;
	}
	return -1;
}

/*
 * The values of a repeated varint field, packed or not: fn gets each;
 * -1 when malformed or fn says stop with -1.
 */
static int pbf_each(const struct pbf *f, int (*fn)(void *, uint64_t), void *arg)
{
	struct pbr b = f->body;
	uint64_t v;

	if (f->wire == 0)
		return fn(arg, f->v);
	if (f->wire != 2)
		return -1;
	while (b.p < b.end)
		if (pbr_varint(&b, &v) || fn(arg, v))
			return -1;
	return 0;
}

/* A varint field's value; *ok cleared when the field is no varint. */
static uint64_t pbf_u(const struct pbf *f, int *ok)
{
	if (f->wire != 0)
		*ok = 0;
	return f->v;
}

static int by_fn_id(const void *a, const void *b)
{
	uint64_t x = ((const struct pfn *)a)->id, y = ((const struct pfn *)b)->id;

	return x < y ? -1 : x > y;
}

static int by_loc_id(const void *a, const void *b)
{
	uint64_t x = ((const struct ploc *)a)->id, y = ((const struct ploc *)b)->id;

	return x < y ? -1 : x > y;
}

static enum perr read_function(struct pr *r, struct pbr b)
{
	struct pfn *fn;
	struct pbf f;
	int got, ok = 1;

	if (pr_entry(r))
		return PERR_TOOBIG;
	r->fn = grow(r->fn, &r->afn, r->nfn, sizeof(*r->fn));
	fn = &r->fn[r->nfn++];
	memset(fn, 0, sizeof(*fn));
	while ((got = pbr_field(&b, &f)) > 0) {
		switch (f.num) {
		case 1: fn->id = pbf_u(&f, &ok); break;
		case 2: fn->name = pbf_u(&f, &ok); break;
		case 3: fn->sysname = pbf_u(&f, &ok); break;
		case 4: fn->file = pbf_u(&f, &ok); break;
		}
	}
	if (got < 0 || !ok || !fn->id)
		return pr_fail(r, PERR_CORRUPT, "function %zu is malformed", r->nfn);
	return PERR_OK;
}

static enum perr read_location(struct pr *r, struct pbr b)
{
	struct ploc *l;
	struct pbf f;
	int got, ok = 1;

	if (pr_entry(r))
		return PERR_TOOBIG;
	r->loc = grow(r->loc, &r->aloc, r->nloc, sizeof(*r->loc));
	l = &r->loc[r->nloc++];
	memset(l, 0, sizeof(*l));
	l->body = b;
	while ((got = pbr_field(&b, &f)) > 0) {
		if (f.num == 1)
			l->id = pbf_u(&f, &ok);
		else if (f.num == 3)
			l->addr = pbf_u(&f, &ok);
	}
	if (got < 0 || !ok || !l->id)
		return pr_fail(r, PERR_CORRUPT, "location %zu is malformed", r->nloc);
	return PERR_OK;
}

/* The first pass: where everything is. */
static enum perr pr_index(struct pr *r, struct pbr top)
{
	struct pbf f;
	enum perr err;
	size_t n;
	char *s;
	const unsigned char *start = top.p;
	int got, ok = 1;

	for (; (got = pbr_field(&top, &f)) > 0; start = top.p) {
		switch (f.num) {
		case 1:	/* sample_type: its type's string */
		{
			struct pbr b = f.body;
			struct pbf g;
			uint64_t type = 0;
			int in;

			if (f.wire != 2)
				return pr_fail(r, PERR_CORRUPT, "a sample type is malformed");
			while ((in = pbr_field(&b, &g)) > 0)
				if (g.num == 1)
					type = pbf_u(&g, &ok);
			if (in < 0)
				return pr_fail(r, PERR_CORRUPT, "a sample type is malformed");
			if (pr_entry(r))
				return PERR_TOOBIG;
			r->stype = grow(r->stype, &r->astype, r->nstype, sizeof(*r->stype));
			r->stype[r->nstype++] = type;
			break;
		}
		case 2:
			if (f.wire != 2)
				return pr_fail(r, PERR_CORRUPT, "a sample is malformed");
			if (r->nsample == PPROFREAD_MAX_SAMPLES)
				return pr_fail(r, PERR_TOOBIG, "over %u samples", PPROFREAD_MAX_SAMPLES);
			r->sample = grow(r->sample, &r->asample, r->nsample, sizeof(*r->sample));
			r->sample[r->nsample++] = (uint32_t)(start - r->buf);
			break;
		case 4:
			if (f.wire != 2)
				return pr_fail(r, PERR_CORRUPT, "a location is malformed");
			err = read_location(r, f.body);
			if (err)
				return err;
			break;
		case 5:
			if (f.wire != 2)
				return pr_fail(r, PERR_CORRUPT, "a function is malformed");
			err = read_function(r, f.body);
			if (err)
				return err;
			break;
		case 6:
			if (f.wire != 2 || f.v > 65536)
				return pr_fail(r, PERR_CORRUPT, "string %zu is malformed or over 64 KiB",
					       r->nstr);
			if (pr_entry(r))
				return PERR_TOOBIG;
			r->str = grow(r->str, &r->astr, r->nstr, sizeof(*r->str));
			/*
			 * Made one byte before its bytes, over its length (read, and at
			 * least one byte), its NUL where its last byte was: it is never
			 * longer than them.
			 */
			s = (char *)r->buf + (f.body.p - r->buf) - 1;
			n = utf8_sanitize(r->scratch, f.v + 1, f.body.p, f.v);
			memcpy(s, r->scratch, n + 1);
			r->str[r->nstr++] = s;
			break;
		case 14:
			r->deftype = pbf_u(&f, &ok);
			break;
		}
		if (!ok)
			return pr_fail(r, PERR_CORRUPT, "field %" PRIu32 " has the wrong type", f.num);
	}
	if (got < 0)
		return pr_fail(r, PERR_CORRUPT, "not a pprof profile (profile.proto): a field is "
			       "malformed");
	if (!r->nstr || *r->str[0])
		return pr_fail(r, PERR_CORRUPT, "its string table does not start with \"\"");
	if (r->nfn)
		qsort(r->fn, r->nfn, sizeof(*r->fn), by_fn_id);
	if (r->nloc)
		qsort(r->loc, r->nloc, sizeof(*r->loc), by_loc_id);
	for (size_t i = 0; i < r->nfn; i++)
		if ((i && r->fn[i].id == r->fn[i - 1].id) || r->fn[i].name >= r->nstr ||
		    r->fn[i].sysname >= r->nstr || r->fn[i].file >= r->nstr)
			return pr_fail(r, PERR_CORRUPT, "function %" PRIu64 " is defined twice or "
				       "names a string that is not there", r->fn[i].id);
	for (size_t i = 1; i < r->nloc; i++)
		if (r->loc[i].id == r->loc[i - 1].id)
			return pr_fail(r, PERR_CORRUPT, "location %" PRIu64 " is defined twice",
				       r->loc[i].id);
	return PERR_OK;
}

/* The index of the "samples" value, or -1. */
static long pr_value(const struct pr *r)
{
	for (size_t i = 0; i < r->nstype; i++)
		if (r->stype[i] < r->nstr && !strcmp(r->str[r->stype[i]], "samples"))
			return (long)i;
	return -1;
}

static const struct pfn *find_fn(const struct pr *r, uint64_t id)
{
	struct pfn key = { .id = id };

	return r->nfn ? bsearch(&key, r->fn, r->nfn, sizeof(*r->fn), by_fn_id) : NULL;
}

static const struct ploc *find_loc(const struct pr *r, uint64_t id)
{
	struct ploc key = { .id = id };

	return r->nloc ? bsearch(&key, r->loc, r->nloc, sizeof(*r->loc), by_loc_id) : NULL;
}

struct collect {
	uint64_t *v;
	size_t n, cap;
	long want;		/* for values: the index kept */
	uint64_t kept;
};

static int collect_id(void *arg, uint64_t v)
{
	struct collect *c = arg;

	if (c->n == c->cap)
		return -1;
	c->v[c->n++] = v;
	return 0;
}

static int collect_value(void *arg, uint64_t v)
{
	struct collect *c = arg;

	if ((long)c->n++ == c->want)
		c->kept = v;
	return 0;
}

/* Append "s" (len bytes) to *buf at *len, growing it. */
static void append(char **buf, size_t *cap, size_t *len, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		*cap = (*len + n + 1) * 2;
		*buf = xrealloc(*buf, *cap);
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
}

struct label {
	const char *key, *value;
};

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct label *)a)->key, ((const struct label *)b)->key);
}

#define PPROFREAD_MAX_LABELS 64

/* A location's frames, innermost first, at frames[*n...]. */
static enum perr loc_frames(struct pr *r, const struct ploc *l, size_t *n)
{
	struct pbr b = l->body;
	struct pbf f;
	size_t first = *n;
	int got;

	while ((got = pbr_field(&b, &f)) > 0) {
		struct pbr lb = f.body;
		struct pbf g;
		uint64_t fid = 0;
		int64_t line = 0;
		const struct pfn *fn;
		int in, ok = 1;

		if (f.num != 4)
			continue;
		if (f.wire != 2)
			return pr_fail(r, PERR_CORRUPT, "location %" PRIu64 " is malformed", l->id);
		while ((in = pbr_field(&lb, &g)) > 0) {
			if (g.num == 1)
				fid = pbf_u(&g, &ok);
			else if (g.num == 2)
				line = (int64_t)pbf_u(&g, &ok);
		}
		fn = find_fn(r, fid);
		if (in < 0 || !ok || !fn)
			return pr_fail(r, PERR_CORRUPT, "location %" PRIu64 " names function %" PRIu64
				       " that is not there", l->id, fid);
		if (*n == FOLDEDREAD_MAX_DEPTH)
			return pr_fail(r, PERR_TOOBIG, "a stack deeper than %u frames",
				       FOLDEDREAD_MAX_DEPTH);
		if (!r->frames--)
			goto spent;
		r->frame[*n].name = *r->str[fn->name] ? r->str[fn->name] :
				    *r->str[fn->sysname] ? r->str[fn->sysname] : "(unknown)";
		r->frame[*n].file = r->str[fn->file];
		r->frame[*n].line = line > 0 && line <= INT_MAX ? (int)line : 0;
		(*n)++;
	}
	if (got < 0)
		return pr_fail(r, PERR_CORRUPT, "location %" PRIu64 " is malformed", l->id);
	if (*n == first) {
		/* no symbols: the address, as pprof shows it */
		if (*n == FOLDEDREAD_MAX_DEPTH)
			return pr_fail(r, PERR_TOOBIG, "a stack deeper than %u frames",
				       FOLDEDREAD_MAX_DEPTH);
		if (!r->frames--)
			goto spent;
		snprintf(r->addr[*n], sizeof(r->addr[*n]), "0x%" PRIx64, l->addr);
		r->frame[*n].name = r->addr[*n];
		r->frame[*n].file = "";
		r->frame[*n].line = 0;
		(*n)++;
	}
	return PERR_OK;
spent:
	r->frames = 0;
	return pr_fail(r, PERR_TOOBIG, "its samples expand to over %u frames a byte of it",
		       PPROFREAD_FRAMES_PER_BYTE);
}

static enum perr pr_sample(struct pr *r, struct pbr b, size_t i, long vi, foldedread_fn fn,
			   void *arg, int *stop)
{
	struct pbf f;
	struct collect ids = { r->ids, 0, FOLDEDREAD_MAX_DEPTH, 0, 0 };
	struct collect val = { NULL, 0, 0, vi, 0 };
	struct label lab[PPROFREAD_MAX_LABELS];
	struct folded_line l;
	size_t nlab = 0, n = 0, tlen = 0;
	const char *thread = NULL;
	enum perr err;
	int got;

	while ((got = pbr_field(&b, &f)) > 0) {
		if (f.num == 1 && pbf_each(&f, collect_id, &ids))
			return pr_fail(r, ids.n == ids.cap ? PERR_TOOBIG : PERR_CORRUPT,
				       "sample %zu: malformed or deeper than %u locations", i + 1,
				       FOLDEDREAD_MAX_DEPTH);
		if (f.num == 2 && pbf_each(&f, collect_value, &val))
			return pr_fail(r, PERR_CORRUPT, "sample %zu: malformed values", i + 1);
		if (f.num == 3) {
			struct pbr lb = f.body;
			struct pbf g;
			uint64_t key = 0, str = 0;
			int in = 0, ok = f.wire == 2;

			while (ok && (in = pbr_field(&lb, &g)) > 0) {
				if (g.num == 1)
					key = pbf_u(&g, &ok);
				else if (g.num == 2)
					str = pbf_u(&g, &ok);
			}
			if (!ok || in < 0 || key >= r->nstr || str >= r->nstr)
				return pr_fail(r, PERR_CORRUPT, "sample %zu: a malformed label", i + 1);
			/* numbers are no tags; a key or value the tag set cannot hold is left */
			if (!str || !*r->str[key] || strpbrk(r->str[key], "=,") ||
			    strchr(r->str[str], ','))
				continue;
			if (!strcmp(r->str[key], "thread")) {
				thread = r->str[str];
				continue;
			}
			if (nlab == PPROFREAD_MAX_LABELS)
				return pr_fail(r, PERR_TOOBIG, "sample %zu: over %d labels", i + 1,
					       PPROFREAD_MAX_LABELS);
			lab[nlab].key = r->str[key];
			lab[nlab++].value = r->str[str];
		}
	}
	if (got < 0)
		return pr_fail(r, PERR_CORRUPT, "sample %zu is malformed", i + 1);
	if (val.n != r->nstype)
		return pr_fail(r, PERR_CORRUPT, "sample %zu has %zu values for %zu sample types",
			       i + 1, val.n, r->nstype);
	if (!val.kept)
		return PERR_OK;
	if (val.kept > INT64_MAX)
		return pr_fail(r, PERR_CORRUPT, "sample %zu: a negative count", i + 1);
	for (size_t k = 0; k < ids.n; k++) {
		const struct ploc *loc = find_loc(r, ids.v[k]);

		if (!loc)
			return pr_fail(r, PERR_CORRUPT, "sample %zu names location %" PRIu64
				       " that is not there", i + 1, ids.v[k]);
		err = loc_frames(r, loc, &n);
		if (err)
			return err;
	}
	/* leaf first to root first */
	for (size_t a = 0, z = n; a + 1 < z; a++, z--) {
		struct folded_frame t = r->frame[a];

		r->frame[a] = r->frame[z - 1];
		r->frame[z - 1] = t;
	}
	if (nlab)
		qsort(lab, nlab, sizeof(*lab), by_key);
	if (r->tags)
		r->tags[0] = '\0';
	for (size_t k = 0; k < nlab; k++) {
		if (k && !strcmp(lab[k].key, lab[k - 1].key))
			continue;
		if (tlen)
			append(&r->tags, &r->atags, &tlen, ",", 1);
		append(&r->tags, &r->atags, &tlen, lab[k].key, strlen(lab[k].key));
		append(&r->tags, &r->atags, &tlen, "=", 1);
		append(&r->tags, &r->atags, &tlen, lab[k].value, strlen(lab[k].value));
	}
	memset(&l, 0, sizeof(l));
	l.tags = tlen ? r->tags : NULL;
	if (thread) {
		size_t tl = 0;

		append(&r->thread, &r->athread, &tl, thread, strlen(thread));
		if (!foldedread_thread(r->thread, &l))
			l.thread = r->thread;
	}
	l.depth = (uint32_t)n;
	l.frame = r->frame;
	l.count = val.kept;
	*stop = fn(arg, &l);
	return PERR_OK;
}

int pprofread_is(const unsigned char *head, size_t n)
{
	return n >= 2 && head[0] == 0x1f && head[1] == 0x8b;
}

/* f's bytes, inflated: PERR_OK and *out, *len (caller frees). */
static enum perr pr_inflate(struct pr *r, FILE *f, unsigned char **out, size_t *len)
{
	unsigned char in[65536];
	size_t cap = 1 << 16, n;
	z_stream zs;
	int zr = Z_OK;
	enum perr err = PERR_OK;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return pr_fail(r, PERR_NOMEM, "zlib: %s", zs.msg ? zs.msg : "no memory");
	*out = xmalloc(cap);
	*len = 0;
	while (zr != Z_STREAM_END && (n = fread(in, 1, sizeof(in), f)) > 0) {
		zs.next_in = in;
		zs.avail_in = (uInt)n;
		do {
			if (*len == cap) {
				if (cap >= PPROFREAD_MAX_BYTES) {
					err = pr_fail(r, PERR_TOOBIG, "over %u MiB once inflated",
						      PPROFREAD_MAX_BYTES >> 20);
					goto out;
				}
				cap *= 2;
				*out = xrealloc(*out, cap);
			}
			zs.next_out = *out + *len;
			zs.avail_out = (uInt)(cap - *len);
			zr = inflate(&zs, Z_NO_FLUSH);
			*len = cap - zs.avail_out;
			if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
				err = pr_fail(r, PERR_CORRUPT, "its gzip stream is damaged: %s",
					      zs.msg ? zs.msg : "inflate failed");
				goto out;
			}
		} while (zr != Z_STREAM_END && (zs.avail_in || !zs.avail_out));
	}
	if (ferror(f))
		err = pr_fail(r, PERR_IO, "%s", strerror(errno));
	else if (zr != Z_STREAM_END)
		err = pr_fail(r, PERR_CORRUPT, "its gzip stream is cut short");
out:
	inflateEnd(&zs);
	return err;
}

enum perr pprofread_run(FILE *f, foldedread_fn fn, void *arg, char *why, size_t cap)
{
	struct pr r;
	unsigned char *buf = NULL;
	struct pbr top;
	struct pbf fld;
	size_t len = 0;
	long vi;
	enum perr err;
	int stop = 0;

	memset(&r, 0, sizeof(r));
	r.why = why;
	r.cap = cap;
	err = pr_inflate(&r, f, &buf, &len);
	if (err)
		goto out;
	r.buf = buf;
	r.scratch = xmalloc(65536 + 1);
	r.frames = len * PPROFREAD_FRAMES_PER_BYTE + (1u << 20);
	err = pr_index(&r, (struct pbr){ buf, buf + len });
	if (err)
		goto out;
	vi = pr_value(&r);
	if (vi < 0) {
		err = pr_fail(&r, PERR_CORRUPT, "it has no \"samples\" sample type (not a CPU "
			      "profile): nothing to count");
		goto out;
	}
	r.ids = xmalloc(FOLDEDREAD_MAX_DEPTH * sizeof(*r.ids));
	r.frame = xmalloc(FOLDEDREAD_MAX_DEPTH * sizeof(*r.frame));
	r.addr = xmalloc(FOLDEDREAD_MAX_DEPTH * sizeof(*r.addr));
	for (size_t i = 0; i < r.nsample && !stop && !err; i++) {
		top = (struct pbr){ buf + r.sample[i], buf + len };
		pbr_field(&top, &fld);
		err = pr_sample(&r, fld.body, i, vi, fn, arg, &stop);
	}
out:
	free(r.scratch);
	free(r.str);
	free(r.fn);
	free(r.loc);
	free(r.sample);
	free(r.stype);
	free(r.ids);
	free(r.frame);
	free(r.addr);
	free(r.tags);
	free(r.thread);
	free(buf);
	return err;
}
