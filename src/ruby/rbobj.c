/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "ruby/rbreader_impl.h"

/*
 * Ruby objects as a stack needs them: strings, ids, ivars and shapes,
 * class paths and method entries (rbreader_impl.h).
 */

/* A heap object's address: aligned, not an immediate, not NULL. */
int rbr_is_obj(uint64_t v)
{
	return v && !(v & 7);
}

enum perr rbr_obj_flags(struct rbreader *rr, uint64_t v, uint64_t *flags)
{
	if (!rbr_is_obj(v))
		return PERR_CORRUPT;
	return rd_u64(rr, v, flags);
}

/* A String's bytes as they are (at most cap - 1), NUL-terminated. */
enum perr rbr_read_string_raw(struct rbreader *rr, uint64_t v, char *out, size_t cap,
				 size_t *outlen)
{
	const struct rubyvm_layout *L = rr->L;
	unsigned char hdr[40];
	uint64_t flags, len, ptr;
	enum perr err;

	if (!rbr_is_obj(v) || (err = rd(rr, v, hdr, sizeof(hdr))))
		return rbr_is_obj(v) ? err : PERR_CORRUPT;
	flags = get_u64(hdr, 0);
	if ((flags & T_MASK) != T_STRING)
		return PERR_CORRUPT;
	if (!(flags & L->string.noembed)) {
		if (L->string.embed_len == RUBYVM_NONE)
			len = flags >> L->string.embed_len_shift & L->string.embed_len_mask;
		else
			len = get_u64(hdr, L->string.embed_len);
		ptr = v + L->string.embed_ptr;
	} else {
		len = get_u64(hdr, L->string.heap_len);
		ptr = get_u64(hdr, L->string.heap_ptr);
	}
	if (len >= cap)
		len = cap - 1;	/* too long: keep the start */
	if ((err = rd(rr, ptr, out, (size_t)len)))
		return err;
	out[len] = '\0';
	*outlen = (size_t)len;
	return PERR_OK;
}

/*
 * A String's bytes, sanitized to UTF-8, in rr->strbuf; one longer than
 * STR_MAX bytes is cut there and marked.
 */
enum perr rbr_read_string(struct rbreader *rr, uint64_t v, const char **out)
{
	char raw[STR_MAX + 2];
	size_t len;
	enum perr err = rbr_read_string_raw(rr, v, raw, sizeof(raw), &len);

	if (err)
		return err;
	if (len > STR_MAX) {
		/* cut where a UTF-8 character starts, then mark it */
		len = STR_MAX;
		while (len > 0 && ((unsigned char)raw[len] & 0xc0) == 0x80)
			len--;
		utf8_sanitize(rr->strbuf, sizeof(rr->strbuf) - sizeof(STACK_CUT_MARK), raw, len);
		strcat(rr->strbuf, STACK_CUT_MARK);
	} else {
		utf8_sanitize(rr->strbuf, sizeof(rr->strbuf), raw, len);
	}
	*out = rr->strbuf;
	return PERR_OK;
}

enum perr rbr_dup_string(struct rbreader *rr, uint64_t v, char **out)
{
	const char *s;
	enum perr err = rbr_read_string(rr, v, &s);

	if (!err)
		*out = xstrdup(s);
	return err;
}

/* Element i of an Array. */
enum perr rbr_array_at(struct rbreader *rr, uint64_t v, uint64_t i, uint64_t *out)
{
	const struct rubyvm_layout *L = rr->L;
	unsigned char hdr[40];
	uint64_t flags, len, ptr;
	enum perr err;

	if (!rbr_is_obj(v))
		return PERR_CORRUPT;
	if ((err = rd(rr, v, hdr, sizeof(hdr))))
		return err;
	flags = get_u64(hdr, 0);
	if ((flags & T_MASK) != T_ARRAY)
		return PERR_CORRUPT;
	if (flags & L->array.embed) {
		len = flags >> L->array.embed_len_shift & L->array.embed_len_mask;
		ptr = v + L->array.embed_ptr;
	} else {
		len = get_u64(hdr, L->array.heap_len);
		ptr = get_u64(hdr, L->array.heap_ptr);
	}
	if (i >= len)
		return PERR_CORRUPT;
	return rd_u64(rr, ptr + 8 * i, out);
}

/* The name of a Symbol ID, through the global symbol table; NULL if unknown. */
const char *rbr_id_name(struct rbreader *rr, uint64_t id)
{
	const struct rubyvm_layout *L = rr->L;
	struct rbid *e;
	uint64_t serial, chunk, str;
	const char *s;

	if (!rr->symbols || !id)
		return NULL;
	e = &rr->ids[rbr_slot(id, ID_CACHE)];
	if (e->id == id)
		return e->name;
	serial = id > L->last_op_id ? id >> L->id_scope_shift : id;
	if (serial > rr->last_id) {
		uint32_t last;

		/* new symbols since we looked */
		if (rd(rr, rr->symbols + L->symbols.last_id, &last, sizeof(last)) || serial > last)
			return NULL;
		rr->last_id = last;
	}
	if (rd_u64(rr, rr->symbols + L->symbols.ids, &chunk) ||
	    rbr_array_at(rr, chunk, serial / L->symbols.unit, &chunk) ||
	    rbr_array_at(rr, chunk, serial % L->symbols.unit * L->symbols.entry_size, &str) ||
	    rbr_read_string(rr, str, &s))
		return NULL;
	free(e->name);
	e->id = id;
	e->name = xstrdup(s);
	return e->name;
}

/*
 * Find the value of the ivar called `name' in an st_table keyed by ID
 * (the iv_tbl of a class before 3.2).  0 if absent.
 */
static uint64_t st_ivar(struct rbreader *rr, uint64_t tbl, const char *name)
{
	unsigned char hdr[56], ent[24 * 16];
	uint64_t start, bound, entries;

	if (!rbr_is_obj(tbl) || rd(rr, tbl, hdr, sizeof(hdr)))
		return 0;
	start = get_u64(hdr, 32);
	bound = get_u64(hdr, 40);
	entries = get_u64(hdr, 48);
	if (bound < start || bound - start > 64 || !rbr_is_obj(entries))
		return 0;
	for (uint64_t i = start; i < bound; i += 16) {
		uint64_t n = bound - i < 16 ? bound - i : 16;

		if (rd(rr, entries + 24 * i, ent, (size_t)(24 * n)))
			return 0;
		for (uint64_t j = 0; j < n; j++) {
			const char *key;

			if (get_u64(ent, (uint32_t)(24 * j)) == UINT64_MAX)
				continue;	/* deleted */
			key = rbr_id_name(rr, get_u64(ent, (uint32_t)(24 * j + 8)));
			if (key && !strcmp(key, name))
				return get_u64(ent, (uint32_t)(24 * j + 16));
		}
	}
	return 0;
}

/*
 * Ruby 3.2: where the ivar called `name' is in the ivar array of a class
 * or module whose flags are `flags': its shape (the flags' top bits) and
 * the shapes up to the root each name the ivar they added.  1 if found
 * (*index set), 0 if the class has no such ivar, -1 if the shapes could
 * not be read or do not hold together.
 */
static int shape_ivar_index(struct rbreader *rr, uint64_t flags, const char *name,
			    uint32_t *index)
{
	const struct rubyvm_layout *L = rr->L;
	unsigned char sh[64];
	uint64_t list;
	uint32_t id = (uint32_t)(flags >> L->shape.id_shift), next, iv_count = 0;

	if (L->shape.size > sizeof(sh) || !rr->vm || rd_u64(rr, rr->vm + L->shape.list, &list) ||
	    !rbr_is_obj(list) || rd(rr, rr->vm + L->shape.next_id, &next, sizeof(next)))
		return -1;
	for (int depth = 0; depth < SHAPE_DEPTH_MAX; depth++) {
		uint32_t parent, niv;
		const char *edge;

		if (id >= next || rd(rr, list + (uint64_t)id * L->shape.size, sh, L->shape.size))
			return -1;
		parent = get_u32(sh, L->shape.parent_id);
		niv = get_u32(sh, L->shape.next_iv_index);
		if (depth == 0)
			iv_count = niv;	/* ivars the class has */
		if (parent == UINT32_MAX)
			return 0;	/* the root: no such ivar */
		if (sh[L->shape.type] == L->shape.type_ivar) {
			if (!niv || niv > iv_count)
				return -1;
			edge = rbr_id_name(rr, get_u64(sh, L->shape.edge_name));
			if (!edge)
				return -1;
			if (!strcmp(edge, name)) {
				*index = niv - 1;
				return 1;
			}
		}
		id = parent;
	}
	return -1;	/* deeper than any class we expect: not followed */
}

/*
 * The ivar `name' of a class or module (3.2), found through its shape:
 * 1 with *value (and its shape and index), 0 if it has none, -1 if it could
 * not be read.  The shape and the ivar array are read again after the
 * value: a class that gained an ivar meanwhile (a new shape, perhaps a
 * new array) is not trusted.
 */
static int shape_ivar(struct rbreader *rr, uint64_t klass, uint64_t ext, const char *name,
		      uint64_t *value, uint32_t *shape_id, uint32_t *index)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t flags, again, ivs, ivs_again;
	int found;

	if (rbr_obj_flags(rr, klass, &flags))
		return -1;
	found = shape_ivar_index(rr, flags, name, index);
	if (found <= 0)
		return found;
	if (rd_u64(rr, ext + L->klass.iv_ptr, &ivs) || !rbr_is_obj(ivs) ||
	    rd_u64(rr, ivs + 8 * (uint64_t)*index, value) ||
	    rbr_obj_flags(rr, klass, &again) || again != flags ||
	    rd_u64(rr, ext + L->klass.iv_ptr, &ivs_again) || ivs_again != ivs)
		return -1;
	*shape_id = (uint32_t)(flags >> L->shape.id_shift);
	return 1;
}

/*
 * A cached 3.2 class path is still the class's: same shape, same String
 * at the same index, with the same bytes (a class freed and another made
 * at its address would differ in one of them).
 */
static int shape_path_holds(struct rbreader *rr, const struct rbclass *e, uint64_t ext)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t flags, ivs, v;
	const char *s;

	if (rbr_obj_flags(rr, e->addr, &flags) || (uint32_t)(flags >> L->shape.id_shift) != e->shape_id)
		return 0;
	if (!e->value)
		return 1;	/* same shape, which has no path: still anonymous */
	if (rd_u64(rr, ext + L->klass.iv_ptr, &ivs) || !rbr_is_obj(ivs) ||
	    rd_u64(rr, ivs + 8 * (uint64_t)e->index, &v) || v != e->value)
		return 0;
	if (rbr_read_string(rr, v, &s))
		return 0;
	return e->path ? !strcmp(s, e->path) : s[0] == '#';
}

/* The classext of a class, 0 if unreadable. */
static uint64_t class_ext(struct rbreader *rr, uint64_t klass)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t ext;

	if (L->klass.ext_embedded != RUBYVM_NONE)
		return klass + L->klass.ext_embedded;
	if (rd_u64(rr, klass + L->klass.ext_ptr, &ext) || !rbr_is_obj(ext))
		return 0;
	return ext;
}

/* A class's permanent path ("Shop", "A::B"); NULL if anonymous or unknown. */
const char *rbr_class_path(struct rbreader *rr, uint64_t klass)
{
	const struct rubyvm_layout *L = rr->L;
	struct rbclass *e = &rr->classes[rbr_slot(klass, OBJ_CACHE)];
	uint64_t ext, path = 0;
	uint32_t shape_id = 0, index = 0;
	int found;
	char *s = NULL;

	/*
	 * Read again every time but on 3.2, where a hit is checked (a class
	 * is freed and another made at its address: the cache alone would
	 * give the new class the old one's name).  Only a method entry read
	 * for the first time asks.
	 */
	ext = class_ext(rr, klass);
	if (e->addr == klass) {
		if (L->klass.classpath_kind == RUBYVM_CLASSPATH_SHAPE && ext &&
		    shape_path_holds(rr, e, ext))
			return e->path;
		e->addr = 0;	/* another class now, or it changed: read it again */
	}
	if (!ext) {
		rr->stats.unqualified++;
		return NULL;
	}
	switch (L->klass.classpath_kind) {
	case RUBYVM_CLASSPATH_FIELD:
		if (rd_u64(rr, ext + L->klass.classpath, &path))
			return NULL;
		break;
	case RUBYVM_CLASSPATH_IVAR:
		if (!rd_u64(rr, ext + L->klass.iv_tbl, &path))
			path = st_ivar(rr, path, "__classpath__");
		break;
	case RUBYVM_CLASSPATH_SHAPE:
		found = shape_ivar(rr, klass, ext, "__classpath__", &path, &shape_id, &index);
		if (found < 0) {
			rr->stats.unqualified++;	/* not cached: read again next time */
			return NULL;
		}
		if (!found) {
			uint64_t flags;

			if (rbr_obj_flags(rr, klass, &flags)) {
				rr->stats.unqualified++;
				return NULL;
			}
			shape_id = (uint32_t)(flags >> L->shape.id_shift);
			path = 0;
		}
		break;
	}
	if (path && rbr_dup_string(rr, path, &s)) {
		s = NULL;
		if (L->klass.classpath_kind == RUBYVM_CLASSPATH_SHAPE) {
			rr->stats.unqualified++;	/* an ivar "__classpath__" is a String */
			return NULL;
		}
	}
	if (s && s[0] == '#') {
		FREE_AND_NULL(s);	/* "#<Class:0x...>": not permanent */
	}
	free(e->path);
	e->addr = klass;
	e->path = s;
	e->shape_id = shape_id;
	e->index = index;
	e->value = path;
	return s;
}

/* "Shop#" or "Shop." for methods owned by klass; "" when it has no name. */
static char *method_prefix(struct rbreader *rr, uint64_t owner)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t flags, attached = 0, ext, tbl;
	const char *path;
	unsigned int type;

	if (rbr_obj_flags(rr, owner, &flags))
		return xstrdup("");
	type = flags & T_MASK;
	if (type != T_CLASS && type != T_MODULE && type != T_ICLASS)
		return xstrdup("");
	if (!(flags & L->fl_singleton)) {
		path = rbr_class_path(rr, owner);
		return path ? xstrfmt("%s#", path) : xstrdup("");
	}
	ext = class_ext(rr, owner);
	if (!ext)
		return xstrdup("");
	if (L->klass.attached_object != RUBYVM_NONE)
		rd_u64(rr, ext + L->klass.attached_object, &attached);
	else if (L->klass.iv_tbl != RUBYVM_NONE && !rd_u64(rr, ext + L->klass.iv_tbl, &tbl))
		attached = st_ivar(rr, tbl, "__attached__");
	else if (L->klass.classpath_kind == RUBYVM_CLASSPATH_SHAPE) {
		uint32_t shape_id, index;

		/* a singleton class's only ivar; it never changes */
		if (shape_ivar(rr, owner, ext, "__attached__", &attached, &shape_id, &index) < 0)
			rr->stats.unqualified++;
	}
	if (rbr_obj_flags(rr, attached, &flags))
		return xstrdup("");
	type = flags & T_MASK;
	if (type != T_CLASS && type != T_MODULE)
		return xstrdup("");
	path = rbr_class_path(rr, attached);
	return path ? xstrfmt("%s.", path) : xstrdup("");
}

void rbr_me_release(struct rbme *m)
{
	free(m->prefix);
	free(m->name);
	memset(m, 0, sizeof(*m));
}

/* The method entry at addr, decoded and cached; NULL if it is none. */
struct rbme *rbr_me_get(struct rbreader *rr, uint64_t addr, int *fresh)
{
	const struct rubyvm_layout *L = rr->L;
	struct rbme *e, m = { 0 };
	unsigned char cme[64];
	uint32_t dw;
	uint64_t id;
	unsigned int type;
	const char *name;
	int found;

	*fresh = 0;
	e = rbr_table_slot(rr->mes, sizeof(*e), ME_CACHE, addr, &found);
	if (e && found)
		return e;
	if (!e || rr->nmes >= ME_CACHE - 1)
		return NULL;
	if (L->cme.owner + 8 > sizeof(cme) || rd(rr, addr, cme, L->cme.owner + 8))
		return NULL;
	m.addr = addr;
	m.def = get_u64(cme, L->cme.def);
	m.owner = get_u64(cme, L->cme.owner);
	m.called_id = get_u64(cme, L->cme.called_id);
	if (!rbr_is_obj(m.def) || rd(rr, m.def, &dw, sizeof(dw)) ||
	    rd_u64(rr, m.def + L->def.original_id, &id) ||
	    rd_u64(rr, m.def + L->def.method_serial, &m.serial))
		return NULL;
	type = dw >> L->def.type_shift & ((1u << L->def.type_bits) - 1);
	m.cfunc = type == L->method_type_cfunc;
	m.prefix = method_prefix(rr, m.owner);
	if (m.cfunc) {
		name = rbr_id_name(rr, id);
		m.name = xstrfmt("%s%s", m.prefix, name ? name : "(unknown cfunc)");
	}
	*e = m;
	rr->nmes++;
	*fresh = 1;
	return e;
}

/*
 * What an ep[-2] word holds: a method entry (returned), a cref (0), or an
 * svar holding either.  Mirrors Ruby's check_method_entry().
 */
static uint64_t check_method_entry(struct rbreader *rr, uint64_t v, int can_be_svar)
{
	const struct rubyvm_layout *L = rr->L;
	struct rbobj *o;
	unsigned int it;

	if (!rbr_is_obj(v))
		return 0;
	o = &rr->objs[rbr_slot(v, OBJ_CACHE)];
	if (o->addr != v) {
		unsigned char hdr[16];

		if (rd(rr, v, hdr, sizeof(hdr)))
			return 0;
		o->addr = v;
		o->flags = get_u64(hdr, 0);
		o->inner = get_u64(hdr, 8);
	}
	if ((o->flags & T_MASK) != T_IMEMO)
		return 0;
	it = IMEMO_TYPE(o->flags);
	if (it == L->imemo_ment)
		return v;
	if (it == L->imemo_svar && can_be_svar)
		return check_method_entry(rr, o->inner, 0);
	return 0;
}

/*
 * The method entry a frame runs under, as Ruby's rb_vm_frame_method_entry()
 * finds it: ep[-2] of each environment out to the method's own.
 */
uint64_t rbr_frame_method_entry(struct rbreader *rr, uint64_t ep)
{
	const struct rubyvm_layout *L = rr->L;
	uint64_t w[3], me;

	for (int depth = 0; depth < 256; depth++) {
		if (!rbr_is_obj(ep) || rd(rr, ep - 16, w, sizeof(w)))
			return 0;
		if (w[2] & L->env.flag_local)
			return check_method_entry(rr, w[0], 1);
		if ((me = check_method_entry(rr, w[0], 0)))
			return me;
		ep = w[1] & ~(uint64_t)L->env.prev_ep_mask;
	}
	return 0;
}
