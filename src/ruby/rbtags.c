/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "ruby/rbreader_impl.h"

/*
 * The tags a program sets with taglibs/ruby/pyrospy.rb, read from its
 * thread storage (rbreader_impl.h).
 */

/*
 * Where an execution context's frames and environments were last time:
 * the next sample reads them all, with the EC itself, in one scatter read.
 */
/* --- tags: what the program marks with taglibs/ruby/pyrospy.rb --- */

static void storage_match(struct rbreader *rr, uint64_t key, uint64_t v, uint64_t val[TAG_VARS])
{
	const struct rubyvm_layout *L = rr->L;

	for (int i = 0; i < TAG_VARS; i++) {
		const char *name;

		if (rr->tag_key[i] == key) {
			val[i] = v;
			return;
		}
		if (rr->tag_key[i])
			continue;
		/* 2.7 keys by ID, later versions by the ID's serial */
		name = rbr_id_name(rr, L->version < 30000 ? key : key << L->id_scope_shift);
		if (name && !strcmp(name, tag_names[i])) {
			rr->tag_key[i] = key;
			val[i] = v;
			return;
		}
	}
}

/* From a table's header: where its entries are, how many, and their size. */
static int storage_layout(struct rbreader *rr, const unsigned char *hdr, uint64_t *at,
			  uint64_t *n, uint64_t *esize)
{
	if (rr->L->version < 30000) {
		/* st_table: entries_start@32, entries_bound@40, entries@48 */
		uint64_t start = get_u64(hdr, 32), bound = get_u64(hdr, 40);

		if (bound < start || bound - start > STORAGE_MAX)
			return -1;
		*n = bound - start;
		*at = get_u64(hdr, 48) + 24 * start;
		*esize = 24;
	} else {
		/* rb_id_table: int capa@0, num@4, used@8, items@16 */
		uint32_t capa = get_u32(hdr, 0), num = get_u32(hdr, 4);

		if (!capa || capa > STORAGE_MAX || num > capa)
			return -1;
		*n = capa;
		*at = get_u64(hdr, 16);
		*esize = 16;
	}
	return *n && rbr_is_obj(*at) ? 0 : -1;
}

static void storage_scan(struct rbreader *rr, const unsigned char *ent, uint64_t n,
			 uint64_t esize, uint64_t val[TAG_VARS])
{
	for (uint64_t i = 0; i < n; i++) {
		const unsigned char *e = ent + i * esize;

		if (esize == 24 && get_u64(e, 0) != UINT64_MAX)	/* else deleted */
			storage_match(rr, get_u64(e, 8), get_u64(e, 16), val);
		else if (esize == 16 && get_u32(e, 0))	/* else empty */
			storage_match(rr, get_u32(e, 0), get_u64(e, 8), val);
	}
}

size_t rbr_storage_hdr_len(const struct rbreader *rr)
{
	return rr->L->version < 30000 ? 56 : 24;
}

uint64_t rbr_storage_esize(const struct rbreader *rr)
{
	return rr->L->version < 30000 ? 24 : 16;
}

/*
 * Values from a header and entries read where c says: 0 if the header
 * still puts them there.
 */
int rbr_storage_check(struct rbreader *rr, const struct rbstore *c, const unsigned char *hdr,
			 const unsigned char *ent, uint64_t val[TAG_VARS])
{
	uint64_t at, n, esize;

	if (storage_layout(rr, hdr, &at, &n, &esize) || at != c->at || n != c->n)
		return -1;
	storage_scan(rr, ent, n, esize, val);
	return 0;
}

/*
 * The values of our four fiber-local variables in the local storage
 * table tbl (an st_table keyed by ID on 2.7, an rb_id_table keyed by the
 * ID's serial later); 0 for those absent.  With c, one scatter read of
 * the header and of the entries where c last saw them, when they are
 * still there; else two reads, remembered in c.
 */
void rbr_storage_get(struct rbreader *rr, uint64_t tbl, struct rbstore *c,
			uint64_t val[TAG_VARS])
{
	unsigned char hdr[STORE_HDR], *ent = rr->store_buf;
	uint64_t at, n, esize = rbr_storage_esize(rr);
	size_t hlen = rbr_storage_hdr_len(rr);

	memset(val, 0, TAG_VARS * sizeof(*val));
	if (!rbr_is_obj(tbl))
		return;
	if (c && c->tbl == tbl && c->n) {
		struct procmem_iov iov[2] = {
			{ tbl, hdr, hlen }, { c->at, ent, (size_t)(c->n * esize) },
		};
		size_t done;

		procmem_readv(&rr->t->mem, iov, 2, &done);
		if (done == 2 && !rbr_storage_check(rr, c, hdr, ent, val))
			return;
	}
	if (!rd(rr, tbl, hdr, hlen) && !storage_layout(rr, hdr, &at, &n, &esize) &&
	    !rd(rr, at, ent, (size_t)(n * esize))) {
		storage_scan(rr, ent, n, esize, val);
		if (c)
			*c = (struct rbstore){ tbl, at, n };
	}
}

/*
 * A set id's value, or -1 if v is no Fixnum that can be one: below
 * TAGSET_MAX (an older helper), or with gens, gen * TAGSET_MAX + rbr_slot.
 */
static int64_t fixnum(const struct rbreader *rr, uint64_t v)
{
	uint64_t max = rr->tag_gens ? (uint64_t)TAG_ID_MAX : TAGSET_MAX;

	return (v & 1) && (v >> 1) < max ? (int64_t)(v >> 1) : -1;
}

void rbr_tagsets_clear(struct rbreader *rr)
{
	for (size_t i = 0; i < rr->ntagsets; i++)
		free(rr->tagsets[i]);
	FREE_AND_NULL(rr->tagsets);
	FREE_AND_NULL(rr->tagids);
	rr->ntagsets = 0;
	for (size_t i = 0; i < ARRAY_SIZE(rr->merged); i++)
		FREE_AND_NULL(rr->merged[i].tags);
}

/* The clean tag set of registry id, read from the registry when first met. */
static const char *tagset(struct rbreader *rr, int64_t id)
{
	uint64_t str, gen;
	size_t len, rbr_slot;
	char *raw, *tags = NULL;

	if (id <= 0 || !rr->tag_sets)
		return NULL;
	/* with gens, a rbr_slot holds the set of one id after another */
	rbr_slot = rr->tag_gens ? (size_t)(id % TAGSET_MAX) : (size_t)id;
	if (rbr_slot >= rr->ntagsets) {
		size_t n = rbr_slot + 1;

		rr->tagsets = xreallocarray(rr->tagsets, n, sizeof(*rr->tagsets));
		memset(rr->tagsets + rr->ntagsets, 0, (n - rr->ntagsets) * sizeof(*rr->tagsets));
		rr->tagids = xreallocarray(rr->tagids, n, sizeof(*rr->tagids));
		memset(rr->tagids + rr->ntagsets, 0, (n - rr->ntagsets) * sizeof(*rr->tagids));
		rr->ntagsets = n;
	}
	if (rr->tagsets[rbr_slot] && rr->tagids[rbr_slot] == id)
		return rr->tagsets[rbr_slot];
	raw = xmalloc(TAGS_MAX_SET + 1);
	/*
	 * With gens: the rbr_slot's String, then its id, which must still be
	 * ours (pyrospy.rb writes the id before the String).  The fiber had
	 * the id, so the set was there before these reads; the same id after
	 * them: nothing replaced it in between.  Each read is made now, in
	 * this order (not from a window read before the fiber's id).
	 */
	rr->mem.fresh = !!rr->tag_gens;
	if (!rbr_array_at(rr, rr->tag_sets, (uint64_t)rbr_slot, &str) &&
	    !rbr_read_string_raw(rr, str, raw, TAGS_MAX_SET + 1, &len) &&
	    (!rr->tag_gens ||
	     (!rbr_array_at(rr, rr->tag_gens, (uint64_t)rbr_slot, &gen) && gen == ((uint64_t)id << 1 | 1))))
		tags = tags_from_app(raw, len);
	rr->mem.fresh = 0;
	free(raw);
	if (!tags)
		return NULL;
	free(rr->tagsets[rbr_slot]);
	rr->tagsets[rbr_slot] = tags;
	rr->tagids[rbr_slot] = id;
	return tags;
}

/*
 * The set of id, NULL for none, or tags_unknown when the program has one
 * (a positive id) that cannot be read: its place holds another id now
 * (replaced as it was read, or an id the program made up:
 * tests/targets/taghostile.rb), or the read failed.  Such a sample goes
 * without any tag, --tag's too: which keys the program's set had, that
 * would win over them, is not known.
 */
static const char *tagset_known(struct rbreader *rr, int64_t id)
{
	const char *tags = tagset(rr, id);

	if (tags || id <= 0 || !rr->tag_sets)
		return tags;
	rr->stats.tags_dropped++;
	return tags_unknown;
}

/*
 * At the start of a sample: the process-wide set and the registry, from
 * the main thread's fiber-local variables (read with the thread list, in
 * the sample's replayed windows).  Where the table is, is looked up every
 * sample until the registry is found (a sample taken before must be one
 * whose threads had no tags), and for the first TAG_EAGER, then every
 * TAG_SEARCH (the main fiber may change).
 */
void rbr_tags_begin(struct rbreader *rr, uint64_t main_thread)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t ec, tbl, *val = rr->main_val;

	rr->tag_process = -1;
	memset(val, 0, TAG_VARS * sizeof(*val));
	if (rr->stats.samples <= TAG_EAGER || rr->stats.samples >= rr->tag_next || !rr->tag_sets) {
		rr->tag_next = rr->stats.samples + TAG_SEARCH;
		if (rbr_is_obj(main_thread) && !rd_u64(rr, main_thread + L->thread.ec, &ec) &&
		    rbr_is_obj(ec) && !rd_u64(rr, ec + L->ec.local_storage, &tbl) &&
		    tbl != rr->main_store.tbl)
			rr->main_store = (struct rbstore){ rbr_is_obj(tbl) ? tbl : 0, 0, 0 };
	}
	if (!rr->main_store.tbl)
		return;
	if (!rr->main_read ||
	    rbr_storage_check(rr, &rr->main_store, rr->main_hdr, rr->store_buf, val))
		rbr_storage_get(rr, rr->main_store.tbl, &rr->main_store, val);
	if (val[TAG_SETS] != rr->tag_sets || val[TAG_GENS] != rr->tag_gens) {
		/* a new registry (or none): what we read of the old one is void */
		rbr_tagsets_clear(rr);
		rr->tag_sets = rbr_is_obj(val[TAG_SETS]) ? val[TAG_SETS] : 0;
		rr->tag_gens = rr->tag_sets && rbr_is_obj(val[TAG_GENS]) ? val[TAG_GENS] : 0;
	}
	rr->tag_process = fixnum(rr, val[TAG_PROCESS]);
}

/*
 * The process-wide set as of the frames just walked: from the main
 * thread's table read with them (the main thread's own, or beside another
 * thread's), else as of the sample's start (a stack reused, whose frames
 * held from before it until after its tags were read).
 */
static int64_t process_set(struct rbreader *rr)
{
	if (rr->ec_val_ok && rr->ec_storage && rr->ec_storage == rr->main_store.tbl)
		return fixnum(rr, rr->ec_val[TAG_PROCESS]);
	if (rr->pm_ok)
		return fixnum(rr, rr->pm_val[TAG_PROCESS]);
	return rr->tag_process;
}

/* The tags of the thread whose EC was just walked. */
const char *rbr_tags_of(struct rbreader *rr)
{
	uint64_t val[TAG_VARS];
	int64_t id, process;
	struct rbmerged *m;
	const char *a, *b;

	if (rr->tag_sets && rr->pm_torn) {
		rr->stats.tags_dropped++;	/* changed while the frames were read */
		return tags_unknown;
	}
	process = process_set(rr);
	if (!rr->tag_sets || !rr->ec_storage)
		return tagset_known(rr, process);
	if (rr->ec_val_torn) {
		rr->stats.tags_dropped++;	/* changed while its frames were read */
		return tags_unknown;
	}
	if (rr->ec_val_ok)
		memcpy(val, rr->ec_val, sizeof(val));
	else if (rr->ec_storage == rr->main_store.tbl)
		memcpy(val, rr->main_val, sizeof(val));
	else
		rbr_storage_get(rr, rr->ec_storage, rr->ec_store, val);
	/* where to read it with the frames next time */
	if (rr->ec_store && rr->ec_store->tbl != rr->ec_storage) {
		if (rr->ec_storage == rr->main_store.tbl)
			*rr->ec_store = rr->main_store;
		else
			rr->ec_store->tbl = rr->ec_store->n = 0;
	}
	id = fixnum(rr, val[TAG_THREAD]);
	a = tagset_known(rr, id);
	b = tagset_known(rr, process);
	if (a == tags_unknown || b == tags_unknown || !a || !b)
		return a == tags_unknown || b == tags_unknown ? tags_unknown : a ? a : b;
	m = &rr->merged[(uint64_t)(id * 31 + process) & (ARRAY_SIZE(rr->merged) - 1)];
	if (m->tags && m->thread == id && m->process == process)
		return m->tags;
	free(m->tags);
	m->thread = id;
	m->process = process;
	m->tags = tags_merge(a, b);
	return m->tags;
}
