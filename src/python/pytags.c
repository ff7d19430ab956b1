/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "python/pyreader_impl.h"

/*
 * The tags a program sets with taglibs/python/pyrospy.py, read from its
 * registry and checked against the frames' read (pyreader_impl.h).
 */

/* --- tags: what the program marks with taglibs/python/pyrospy.py --- */

/* From the tag table as pyr_verify() read it; PERR_CORRUPT outside it. */
enum perr pyr_snap_read(struct pyreader *pr, uint64_t addr, void *out, size_t len)
{
	const uint64_t at[2] = { pr->snap_dict, pr->snap_keys };
	const size_t n[2] = { 48, (size_t)pr->snap_keys_len }, off[2] = { 0, 48 };

	for (int i = 0; i < 2; i++)
		if (addr >= at[i] && addr - at[i] <= n[i] && len <= n[i] - (addr - at[i])) {
			memcpy(out, pr->snap + off[i] + (addr - at[i]), len);
			return PERR_OK;
		}
	return PERR_CORRUPT;	/* moved or grown since: not of that moment */
}

/*
 * The live entries of a dict with a combined table, at most max, into
 * *out (pr's buffer: valid until the next call).  The table is checked the
 * way a resize in the middle of our read would show: sizes in range,
 * entries inside it.
 */
enum perr pyr_dict_read(struct pyreader *pr, uint64_t dict, size_t max,
			   struct pydent **out, size_t *nout)
{
	unsigned char d[64], k[40], *raw;
	uint64_t keys, nent, start, esize, size, used;
	int hashed = 1;
	enum perr err;

	*out = NULL;
	*nout = 0;
	pr->dict_torn = 0;
	if (!dict || (dict & 7))
		return PERR_CORRUPT;
	/* PyDictObject: ma_keys at 32, ma_values at 40 (GIL build) */
	if ((err = rd(pr, dict, d, PYVM_OFF(&pr->lay, 48))))
		return err;
	if ((pr->dict_type && get_u64(d, pr->lay.ob_type) != pr->dict_type) ||
	    get_u64(d, PYVM_OFF(&pr->lay, 40)))
		return PERR_CORRUPT;	/* not a dict, or a split table */
	/*
	 * ma_used, the items it holds: the entries read must be that many.
	 * Read apart, the header and its entries may be of two moments (a
	 * resize between them, the old keys freed and taken by a new dict):
	 * the tag table then lacked a thread that always had its set, and
	 * that sample went untagged (tags/held_python, 3.9: 1 in 3000).
	 */
	used = get_u64(d, PYVM_OFF(&pr->lay, 16));
	keys = get_u64(d, PYVM_OFF(&pr->lay, 32));
	if (!keys || (keys & 7) || (err = rd(pr, keys, k, sizeof(k))))
		return err ? err : PERR_CORRUPT;
	if (pr->lay.minor <= 10) {
		unsigned int w;

		size = get_u64(k, 8);
		nent = get_u64(k, 32);
		if (size < 8 || (size & (size - 1)) || size > (1u << 26))
			return PERR_CORRUPT;
		w = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		start = keys + 40 + size * w;
		esize = 24;
	} else {
		unsigned int log2 = k[8], log2i = k[9], kind = k[10];

		nent = get_u64(k, 24);
		if (log2 < 3 || log2 > 26 || log2i < log2 || log2i > log2 + 3 || kind > 2)
			return PERR_CORRUPT;
		size = 1ull << log2;
		start = keys + 32 + (1ull << log2i);
		hashed = kind == 0;
		esize = hashed ? 24 : 16;
	}
	if (nent > size)
		return PERR_CORRUPT;
	if (nent > max)
		return PERR_TOOBIG;
	if (dict == pr->tag_dict) {
		/*
		 * where to read it with the frames next time, with room for one
		 * more; a table too big for that (the program's sizes: bounded)
		 * is not read with them, and its threads' tags are not known
		 */
		pr->tag_keys = keys;
		pr->tag_keys_len = start + (nent + 1) * esize - keys;
		if (pr->tag_keys_len > TAG_TABLE_MAX)
			pr->tag_keys = pr->tag_keys_len = 0;
	}
	if (!nent) {
		pr->dict_torn = !!used;
		return used ? PERR_CORRUPT : PERR_OK;
	}
	if (nent > pr->dent_cap) {
		pr->dent_cap = (size_t)nent;
		pr->dent = xreallocarray(pr->dent, pr->dent_cap, sizeof(*pr->dent));
		pr->draw = xreallocarray(pr->draw, pr->dent_cap, 24);
	}
	raw = pr->draw;
	if ((err = rd(pr, start, raw, (size_t)(nent * esize))))
		return err;
	*out = pr->dent;
	for (uint64_t i = 0; i < nent; i++) {
		const unsigned char *e = raw + i * esize;
		struct pydent *o = &(*out)[*nout];

		o->hash = hashed ? get_u64(e, 0) : 0;
		o->key = get_u64(e, hashed ? 8 : 0);
		o->value = get_u64(e, hashed ? 16 : 8);
		if (o->key && o->value)	/* deleted: key NULL, or value NULL (<= 3.10) */
			(*nout)++;
	}
	if (*nout != used) {
		*nout = 0;
		pr->dict_torn = 1;
		return PERR_CORRUPT;
	}
	return PERR_OK;
}

/* The value of the str key `name' in dict into *v, 0 if absent. */
static enum perr dict_find(struct pyreader *pr, uint64_t dict, const char *name, uint64_t *v)
{
	struct pydent *e;
	size_t n;
	enum perr err;

	*v = 0;
	if ((err = pyr_dict_read(pr, dict, DICT_MAX, &e, &n)))
		return err;
	for (size_t i = 0; i < n && !*v; i++) {
		const char *key;

		if (!pyr_read_str(pr, e[i].key, &key) && !strcmp(key, name))
			*v = e[i].value;
	}
	return PERR_OK;
}

/* The value of the str key `name' in dict, 0 if absent or unreadable. */
static uint64_t dict_get(struct pyreader *pr, uint64_t dict, const char *name)
{
	uint64_t v;

	return dict_find(pr, dict, name, &v) ? 0 : v;
}

static void tagsets_clear(struct pyreader *pr)
{
	for (size_t i = 0; i < TAGSET_CACHE; i++)
		free(pr->tagsets[i].tags);
	memset(pr->tagsets, 0, TAGSET_CACHE * sizeof(*pr->tagsets));
	pr->ntagsets = 0;
}

/*
 * The word of pyrospy.py's _pyrospy_epoch, an array('Q') of one item (its
 * buffer never moves: the helper never resizes it), and its value now.
 */
static void epoch_find(struct pyreader *pr, uint64_t arr)
{
	unsigned char hdr[64];
	uint64_t at, e;

	/* arrayobject: ob_size at 16, ob_item at 24 (GIL build) */
	if (!arr || (arr & 7) || rd(pr, arr, hdr, PYVM_OFF(&pr->lay, 32)) ||
	    get_u64(hdr, PYVM_OFF(&pr->lay, 16)) != 1)
		return;
	at = get_u64(hdr, PYVM_OFF(&pr->lay, 24));
	if (!at || (at & 7) || procmem_read(&pr->t->mem, at, &e, sizeof(e)))
		return;
	if (at != pr->tag_epoch_at)
		tagsets_clear(pr);	/* another registry: its addresses mean other sets */
	pr->tag_epoch_at = at;
	pr->tag_epoch = pr->tag_epoch_a = e;
}

/*
 * Find the helper's module in sys.modules, at every sample until it is
 * found: a look costs two words (sys.modules' size and keys, in the
 * sample's windows) while sys.modules is the same, and a sample taken
 * before the helper was found must be one whose threads had no tags.
 * The module is there before its body has run (an import under way):
 * until its table is there too, the samples' tags are not known
 * (pr->tags_importing): the body may finish, and a thread set its tags,
 * before the thread is read.
 */
void pyr_tags_search(struct pyreader *pr, uint64_t interp)
{
	const struct pyvm_layout *L = &pr->lay;
	uint64_t modules, used, keys, mod, md_dict;
	enum perr err;

	if (L->interp.modules == PYVM_NONE)
		return;
	/* PyDictObject: ma_used at 16, ma_keys at 32 (GIL build) */
	if (rd_u64(pr, interp + L->interp.modules, &modules) || !modules ||
	    rd_u64(pr, modules + PYVM_OFF(L, 16), &used) ||
	    rd_u64(pr, modules + PYVM_OFF(L, 32), &keys) ||
	    (keys == pr->tag_seen[0] && used == pr->tag_seen[1] && !pr->tags_importing))
		return;
	/*
	 * sys.modules as seen is remembered only once it was read whole: a
	 * read torn by an import (exec: the program importing at start) was
	 * taken for "no helper", and with sys.modules still from then on,
	 * the table was never looked for again (span/churn_python, 3.15:
	 * every sample of a run without its tags).
	 */
	err = dict_find(pr, modules, "pyrospy", &mod);
	if (err && err != PERR_TOOBIG)
		return;
	pr->tag_seen[0] = keys;
	pr->tag_seen[1] = used;
	pr->tags_importing = 0;
	/* PyModuleObject: md_dict right after the object header */
	if (!mod || rd_u64(pr, mod + PYVM_OFF(L, 16), &md_dict))
		return;
	pr->tag_dict = dict_get(pr, md_dict, "_pyrospy_tags");
	pr->tag_list = dict_get(pr, md_dict, "_pyrospy_sets");
	pr->tag_epoch_at = 0;
	if (pr->tag_dict && !pr->tag_list)
		epoch_find(pr, dict_get(pr, md_dict, "_pyrospy_epoch"));
	pr->tag_fails = 0;
	if (!pr->tag_dict || (!pr->tag_list && !pr->tag_epoch_at)) {
		/* in sys.modules before its body has run: look again next sample */
		pr->tag_dict = pr->tag_list = pr->tag_epoch_at = 0;
		if (pr->tags_importing++ >= TAG_IMPORTING)
			pr->tags_importing = 0;	/* a module of that name, no helper */
	}
}

static struct pytagset *tagset_slot(struct pyreader *pr, uint64_t addr)
{
	size_t i = (size_t)((addr >> 3) * 0x9E3779B97F4A7C15ull >> 40) & (TAGSET_CACHE - 1);

	while (pr->tagsets[i].addr && pr->tagsets[i].addr != addr)
		i = (i + 1) & (TAGSET_CACHE - 1);
	return &pr->tagsets[i];
}

/*
 * A helper that reclaims sets: the str at addr is one the table held in
 * this sample, and stays the same str while _pyrospy_epoch moves by less
 * than the helper's _QUARANTINE; the cache entry is used while it is at
 * most TAG_EPOCH_FRESH reclaims old, and tags_load() checks that this
 * sample's reads took fewer than TAG_EPOCH_FRESH more (else it drops the
 * tags, and the entries read).
 */
static const char *tagset_get_epoch(struct pyreader *pr, struct pytagset *ts, uint64_t addr)
{
	if (ts->addr && pr->tag_epoch_a - ts->e0 <= TAG_EPOCH_FRESH)
		return ts->tags;
	enum perr err;
	int fresh;

	if (!ts->addr && pr->ntagsets >= TAGSET_CACHE / 2)
		return NULL;
	/* read now, not from a window that may be older than the table */
	fresh = pr->mem.fresh;
	pr->mem.fresh = 1;
	err = pyr_read_str_into(pr, addr, TAGS_MAX_SET, STR_CUT | STR_LENIENT, pr->tagbuf,
			    sizeof(pr->tagbuf));
	pr->mem.fresh = fresh;
	if (err)
		return NULL;
	if (ts->addr)
		free(ts->tags);
	else
		pr->ntagsets++;
	ts->addr = addr;
	ts->tags = tags_from_app(pr->tagbuf, strlen(pr->tagbuf));
	ts->e0 = pr->tag_epoch_a;
	ts->serial = ++pr->tag_serial;
	return ts->tags;
}

/*
 * After the sets of a sample were read: with a reclaiming helper, were
 * they read within TAG_EPOCH_FRESH reclaims of the sample's start?  The
 * word is read again (not from a window: after everything else).
 */
static int tags_epoch_ok(struct pyreader *pr)
{
	uint64_t e = UINT64_MAX;

	if (!pr->tag_epoch_at)
		return 1;
	if (procmem_read(&pr->t->mem, pr->tag_epoch_at, &e, sizeof(e)) ||
	    e < pr->tag_epoch_a || e - pr->tag_epoch_a > TAG_EPOCH_FRESH) {
		/* what was read this sample may be of a str freed since */
		tagsets_clear(pr);
		/*
		 * The next sample counts from now, and every sample from its
		 * own start on (pyreader_sample()): the program reclaims
		 * faster than we sample, and counting from the last sample's
		 * end would drop every sample's tags from here on.
		 */
		if (e >= pr->tag_epoch_a && e != UINT64_MAX)
			pr->tag_epoch = e;
		pr->tag_epoch_pre = 1;
		return 0;
	}
	pr->tag_epoch = e;
	return 1;
}

/*
 * The tag set of the registry's str at addr.  Only a str the registry
 * holds is read (the registry keeps it alive, so its address means the
 * same for good); the registry is read again at most once a sample.
 */
static const char *tagset_get(struct pyreader *pr, uint64_t addr, struct pylisted *l)
{
	struct pytagset *ts = tagset_slot(pr, addr);
	unsigned char hdr[56];

	if (pr->tag_epoch_at)
		return tagset_get_epoch(pr, ts, addr);
	if (ts->addr)
		return ts->tags;
	if (pr->ntagsets >= TAGSET_CACHE / 2)
		return NULL;
	if (!l->read) {
		l->read = 1;
		/* PyListObject: ob_size at 16, ob_item at 24 (GIL build) */
		if (rd(pr, pr->tag_list, hdr, PYVM_OFF(&pr->lay, 40)) ||
		    (pr->list_type && get_u64(hdr, pr->lay.ob_type) != pr->list_type))
			return NULL;
		l->n = get_u64(hdr, PYVM_OFF(&pr->lay, 16));
		if (l->n > TAGSET_MAX)
			l->n = TAGSET_MAX;
		l->items = xmalloc((size_t)(l->n ? l->n : 1) * 8);
		if (rd(pr, get_u64(hdr, PYVM_OFF(&pr->lay, 24)), l->items, (size_t)l->n * 8))
			l->n = 0;
	}
	for (uint64_t i = 0; i < l->n; i++) {
		if (l->items[i] != addr)
			continue;
		if (pyr_read_str_into(pr, addr, TAGS_MAX_SET, STR_CUT | STR_LENIENT, pr->tagbuf,
				  sizeof(pr->tagbuf)))
			return NULL;
		ts->addr = addr;
		ts->tags = tags_from_app(pr->tagbuf, strlen(pr->tagbuf));
		ts->serial = ++pr->tag_serial;
		pr->ntagsets++;
		return ts->tags;
	}
	return NULL;
}

static int tagent_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct pytagent *)a)->ident, y = ((const struct pytagent *)b)->ident;

	return (x > y) - (x < y);
}

/* Read which tag set is in force where, for this sample. */
static void tags_load(struct pyreader *pr, uint64_t interp)
{
	struct pylisted listed = { 0, NULL, 0 };
	struct pydent *e;
	size_t n;
	enum perr err;

	pr->ntagent = 0;
	pr->tag_process = 0;
	pr->tags_torn = 0;
	if (!pr->tag_dict)
		pyr_tags_search(pr, interp);
	if (!pr->tag_dict)
		return;
	if (pr->tag_epoch_at && pr->ntagsets >= TAGSET_CACHE / 2 - THREAD_MAX)
		tagsets_clear(pr);	/* addresses come and go: start over */
	/* the table alone, not the sets, as read with the frames */
	pr->snap_only = pr->snap_use;
	pr->mem.only_seq = pr->seq_use;
	err = pyr_dict_read(pr, pr->tag_dict, THREAD_MAX, &e, &n);
	pr->snap_only = 0;
	pr->mem.only_seq = 0;
	if (err) {
		/*
		 * Torn (written as we read): this sample goes without tags,
		 * the next reads the table again.  Failing again and again,
		 * it is gone (the module reloaded?): look for it again.
		 */
		pr->stats.tags_dropped++;
		pr->tags_torn = 1;
		/* fewer entries than it holds: changed as read, not gone */
		if (!pr->dict_torn && ++pr->tag_fails >= TAG_FAILS) {
			pr->tag_dict = pr->tag_list = pr->tag_keys = pr->tag_epoch_at = 0;
			pr->tag_seen[0] = pr->tag_seen[1] = 0;
		}
		return;
	}
	pr->tag_fails = 0;
	if (n > pr->tagent_cap) {
		pr->tagent_cap = n;
		pr->tagent = xreallocarray(pr->tagent, n, sizeof(*pr->tagent));
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t set = e[i].value;

		if (!tagset_get(pr, set, &listed)) {
			set = TAGSET_UNREAD;	/* the thread has one: its samples get none */
			pr->stats.tags_dropped++;
		}
		if (!e[i].hash)
			pr->tag_process = set;
		else
			pr->tagent[pr->ntagent++] = (struct pytagent){ e[i].hash, set };
	}
	free(listed.items);
	if ((pr->ntagent || pr->tag_process) && !tags_epoch_ok(pr)) {
		pr->ntagent = 0;
		pr->tag_process = 0;
		pr->stats.tags_dropped++;
		pr->tags_torn = 1;
	}
	if (pr->ntagent > 1)	/* none: tagent may be NULL, which qsort() may not see */
		qsort(pr->tagent, pr->ntagent, sizeof(*pr->tagent), tagent_cmp);
}

/* The set (its str's address) in force on the thread ident, 0 for none. */
static uint64_t tagset_of(struct pyreader *pr, uint64_t ident)
{
	struct pytagent key = { ident, 0 }, *hit = NULL;

	if (pr->ntagent)
		hit = bsearch(&key, pr->tagent, pr->ntagent, sizeof(key), tagent_cmp);
	return hit ? hit->set : 0;
}

/* The tags of the thread whose pthread_t is ident, NULL for none. */
const char *pyr_tags_of(struct pyreader *pr, uint64_t ident)
{
	uint64_t set = tagset_of(pr, ident);
	struct pymerged *m;
	struct pytagset *ta, *tb;
	const char *a, *b;

	if (pr->tags_torn || set == TAGSET_UNREAD || pr->tag_process == TAGSET_UNREAD ||
	    (!pr->tag_dict && pr->tags_importing))
		return tags_unknown;
	if (!set || !pr->tag_process)
		return set ? tagset_slot(pr, set)->tags :
		       pr->tag_process ? tagset_slot(pr, pr->tag_process)->tags : NULL;
	/* both: the thread's win */
	ta = tagset_slot(pr, set);
	tb = tagset_slot(pr, pr->tag_process);
	m = &pr->merged[(ta->serial ^ tb->serial * 3) & (ARRAY_SIZE(pr->merged) - 1)];
	if (m->tags && m->thread == ta->serial && m->process == tb->serial)
		return m->tags;
	a = ta->tags;
	b = tb->tags;
	free(m->tags);
	m->thread = ta->serial;
	m->process = tb->serial;
	m->tags = tags_merge(a, b);
	return m->tags;
}

/*
 * The table as it is now, read apart from any frames: for stacks reused
 * because their threads did not run since they were read (pyreader.c),
 * which are still theirs at this instant.  Torn: pr->tags_torn, not
 * counted here.
 */
void pyr_tags_now(struct pyreader *pr, uint64_t interp)
{
	uint64_t dropped = pr->stats.tags_dropped;

	pr->mem.fresh = 1;
	tags_load(pr, interp);
	pr->mem.fresh = 0;
	pr->stats.tags_dropped = dropped;
}

/*
 * 3.11+: did the table hold the same before and after the thread's frames
 * were read (pyr_chunk_load())?  A span begun or ended while the chunk was
 * copied showed a gap's frames with the span's tags (3.13 under
 * tests/stopgo and CI's load, the table read right after the chunk).
 */
static int table_held(struct pyreader *pr)
{
	unsigned char buf[256];
	size_t off = 0;
	int same = 1;

	pr->mem.only_seq = pr->mem.big.seq;
	for (unsigned int i = 0; i < pr->pre_n && same; i++) {
		for (uint64_t o = 0; o < pr->pre_len[i] && same; o += sizeof(buf)) {
			size_t n = pr->pre_len[i] - o < sizeof(buf) ? (size_t)(pr->pre_len[i] - o) :
								       sizeof(buf);

			same = !rd(pr, pr->pre_at[i] + o, buf, n) &&
			       !memcmp(buf, pr->pre + off + o, n);
		}
		off += pr->pre_len[i];
	}
	pr->mem.only_seq = 0;
	return same;
}

/*
 * The thread's tags from the table as read in one read with its frames:
 * 3.11+, with its data stack chunk (pyr_chunk_load()), from the windows of
 * that read only (another window may hold the table too, filled later:
 * 3.15 under tests/stopgo showed a unit's frames with the gap's tags),
 * and only when it held the same before the chunk (table_held());
 * <= 3.10, by pyr_verify(), when the thread's innermost frame was still the
 * pyr_walk's then (the stack shown is the one of that moment, the innermost
 * line too).  Otherwise, unless the table, read now, has neither the
 * thread nor the process (entries only come, never go, while a thread
 * lives), 1 when again is set: the caller reads the thread again, the
 * table with it where it is now (the first sample knew no place for it,
 * or it moved, or it changed during the read: deb-check's one sample in
 * 200 without the app's tags, CI, 3.13); else -1: the sample is
 * dropped (a sample without the tags its thread had is a label set it did
 * not have).  Free-threaded 3.13 showed why retrying alone is not enough:
 * a thread preempted inside dictresize() leaves the table's new keys with
 * no entries yet for as long as it stays off its CPU, every read of it
 * torn (tags/held_python: 2-5 samples in 6500 kept without their tags).
 * Only a table gone (looked for again) keeps the sample, tags not known
 * (counted).  Read before and after the pyr_walk
 * instead, as <= 3.10 did, the table showed the same set both times
 * when a span had begun and ended in between (pyrospy descheduled: CI,
 * 3.9), and the unit's samples got the gap's tags.
 */
int pyr_tags_verified(struct pyreader *pr, uint64_t interp, struct stack *st, int again)
{
	uint64_t dropped = pr->stats.tags_dropped;
	int old = pr->lay.frames == PYVM_FRAMEOBJ;

	if (!pr->tag_dict) {
		st->tags = pyr_tags_of(pr, st->thread_id);
		return 0;
	}
	if (old ? pr->snap_ok && pr->top_same : pr->mem.big.len > 0 && pr->pre_n && table_held(pr)) {
		pr->snap_use = old;
		pr->seq_use = old ? 0 : pr->mem.big.seq;
		tags_load(pr, interp);
		pr->snap_use = 0;
		pr->seq_use = 0;
		if (!pr->tags_torn) {
			st->tags = pyr_tags_of(pr, st->thread_id);
			return 0;
		}
	}
	/* where the table is now, for the next read */
	pr->mem.fresh = 1;
	tags_load(pr, interp);
	pr->mem.fresh = 0;
	pr->stats.tags_dropped = dropped;
	if (!pr->tags_torn && !tagset_of(pr, st->thread_id) && !pr->tag_process) {
		st->tags = NULL;
		return 0;
	}
	if (!pr->tag_dict) {
		st->tags = tags_unknown;	/* the table is gone: kept, counted */
		pr->stats.tags_dropped++;
		return 0;
	}
	return again ? 1 : -1;
}
