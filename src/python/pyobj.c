/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "python/pyobj.h"
#include "python/pyvm.h"
#include "proc/rmem.h"
#include "proc/target.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#define ENTRIES_MAX	65536u	/* entries of a dict we look through */
#define KEY_MAX		256u	/* code points of a key we compare */

/* PyTypeObject: the same from 3.8 to 3.15 up to tp_dictoffset (Include/cpython/object.h) */
#define TP_NAME		24
#define TP_BASICSIZE	32
#define TP_FLAGS	168
#define TP_DICTOFFSET	288
#define TPF_INLINE_VALUES	(1ul << 2)	/* 3.13+ */
#define TPF_MANAGED_DICT	(1ul << 4)	/* 3.11+ */
#define TPF_HEAPTYPE		(1ul << 9)
#define MANAGED_DICT_OFF	24	/* below the object: 3 pointers (GIL builds) */
#define MANAGED_DICT_OFF_FT	8	/* 1 pointer: free-threaded builds have no GC header */
#define MANAGED_VALUES_OFF	32	/* 3.11 only: 4 pointers */

/*
 * PyHeapTypeObject.ht_cached_keys, the keys a heap type's instances share
 * (right after ht_qualname in every version).  Measured on the real
 * interpreters: the word after the second pointer to the type's own
 * __qualname__ str in ctypes.string_at(id(threading.Thread),
 * type.__basicsize__), on Debian 3.9.2, 3.11.7, 3.13.5, 3.14.10, 3.15.2
 * and pyenv 3.8.18, 3.10.13, 3.12.1, 3.13.0; each points at a keys object
 * of kind DICT_KEYS_SPLIT (2) on 3.11+.
 */
static const uint32_t ht_cached_keys[] = {
	[8] = 872, [9] = 864, [10] = 872, [11] = 872, [12] = 880,
	[13] = 880, [14] = 880, [15] = 888,
};

static enum perr rd(struct pyobj *o, uint64_t addr, void *out, size_t len)
{
	if (!addr)
		return PERR_CORRUPT;
	return rmem_read(o->mem, addr, out, len);
}

void pyobj_init(struct pyobj *o, struct rmem *mem, const struct pyvm_layout *lay,
		struct target *t)
{
	static const char *const sym[PYOBJ_NKINDS] = {
		[PYOBJ_STR] = "PyUnicode_Type", [PYOBJ_BYTES] = "PyBytes_Type",
		[PYOBJ_INT] = "PyLong_Type", [PYOBJ_BOOL] = "PyBool_Type",
		[PYOBJ_FLOAT] = "PyFloat_Type", [PYOBJ_LIST] = "PyList_Type",
		[PYOBJ_TUPLE] = "PyTuple_Type", [PYOBJ_DICT] = "PyDict_Type",
		[PYOBJ_SET] = "PySet_Type", [PYOBJ_FROZENSET] = "PyFrozenSet_Type",
		[PYOBJ_NONETYPE] = "_PyNone_Type", [PYOBJ_MODULE] = "PyModule_Type",
		[PYOBJ_TYPE] = "PyType_Type",
	};
	int tls;

	memset(o, 0, sizeof(*o));
	o->mem = mem;
	o->lay = lay;
	o->minor = lay->minor;
	/*
	 * Free-threaded: the 32-byte header's 16 more.  Measured the same way
	 * on Debian's 3.13.5 built with --disable-gil (896); 3.14t's 896 and
	 * 3.15t's 904 are offsetof() in Debian's 3.14.10 and 3.15.2 headers
	 * compiled with Py_GIL_DISABLED (the field precedes the build's own
	 * unique_id), not yet checked live.
	 */
	if (o->minor < ARRAY_SIZE(ht_cached_keys) && ht_cached_keys[o->minor])
		o->ht_cached_keys = ht_cached_keys[o->minor] + lay->head_extra;
	for (int k = 0; k < PYOBJ_NKINDS; k++)
		if (target_symbol(t, sym[k], &o->type[k], &tls))
			o->type[k] = 0;
	if (target_symbol(t, "_Py_NoneStruct", &o->none, &tls))
		o->none = 0;
	if (target_symbol(t, "_Py_TrueStruct", &o->yes, &tls))
		o->yes = 0;
	if (target_symbol(t, "_Py_FalseStruct", &o->no, &tls))
		o->no = 0;
}

enum perr pyobj_type(struct pyobj *o, uint64_t obj, uint64_t *type, int *kind)
{
	enum perr err;

	*kind = -1;
	if (!obj || (obj & 7))
		return PERR_CORRUPT;
	if ((err = rmem_u64(o->mem, obj + o->lay->ob_type, type)))
		return err;
	if (!*type || (*type & 7))
		return PERR_CORRUPT;
	for (int k = 0; k < PYOBJ_NKINDS; k++)
		if (o->type[k] && o->type[k] == *type)
			*kind = k;
	if (*kind < 0 && o->type[PYOBJ_TYPE]) {
		/* a type, or an instance of a metaclass (ABCMeta, EnumType) */
		uint64_t meta = *type;

		for (int up = 0; up < 2 && meta != o->type[PYOBJ_TYPE]; up++)
			if ((err = rmem_u64(o->mem, meta + o->lay->ob_type, &meta)) ||
			    !meta || (meta & 7))
				return err ? err : PERR_CORRUPT;
		if (meta != o->type[PYOBJ_TYPE])
			return PERR_CORRUPT;
	}
	return PERR_OK;
}

enum perr pyobj_str_at(struct rmem *mem, const struct pyvm_layout *L, uint64_t str_type,
		       uint64_t addr, size_t max, int lenient, char *out, size_t cap, int *cut)
{
	unsigned char hdr[128], *raw;
	uint32_t state;
	uint64_t len, data, nbytes;
	unsigned int kind, compact, ascii;
	enum perr err;

	if (cut)
		*cut = 0;
	if (!addr || (addr & 7) || L->unicode.compact_size + 8 > sizeof(hdr))
		return PERR_CORRUPT;
	if ((err = rmem_read(mem, addr, hdr, L->unicode.compact_size + 8)))
		return err;
	if (str_type && get_u64(hdr, L->ob_type) != str_type)
		return PERR_CORRUPT;
	len = get_u64(hdr, L->unicode.length);
	memcpy(&state, hdr + L->unicode.state, sizeof(state));
	state >>= L->unicode.state_shift;
	kind = state >> 2 & 7;
	compact = state >> 5 & 1;
	ascii = state >> 6 & 1;
	if ((kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1) || len >> 62)
		return PERR_CORRUPT;
	if (len > max) {
		if (!cut)
			return PERR_TOOBIG;
		*cut = 1;
		len = max;
	}
	if (compact)
		data = addr + (ascii ? L->unicode.ascii_size : L->unicode.compact_size);
	else
		data = get_u64(hdr, L->unicode.compact_size);
	nbytes = len * kind;
	raw = xmalloc(nbytes ? (size_t)nbytes : 1);
	err = rmem_read(mem, data, raw, (size_t)nbytes);
	if (!err && (lenient ? utf8_from_ucs_lenient : utf8_from_ucs)(out, cap, raw, (size_t)len,
								      kind, ascii) < 0)
		err = PERR_CORRUPT;
	free(raw);
	return err;
}

enum perr pyobj_str(struct pyobj *o, uint64_t addr, size_t max, char *out, size_t cap, int *cut)
{
	if (cut)
		*cut = 0;
	if (cap < 4 * max + 1)
		return PERR_CORRUPT;
	return pyobj_str_at(o->mem, o->lay, o->type[PYOBJ_STR], addr, max, 0, out, cap, cut);
}

/* A keys object's entries, as the version lays them out. */
struct pykeys {
	uint64_t start;		/* first entry */
	uint64_t n;		/* entries in use (dk_nentries) */
	uint32_t esize;		/* 24 with the hash, 16 without */
	int hashed;
};

static enum perr keys_read(struct pyobj *o, uint64_t keys, struct pykeys *k)
{
	unsigned char h[40];
	uint64_t size;
	enum perr err;

	if (!keys || (keys & 7))
		return PERR_CORRUPT;
	if ((err = rd(o, keys, h, sizeof(h))))
		return err;
	if (o->minor <= 10) {
		/* refcnt, dk_size, dk_lookup, dk_usable, dk_nentries; indices; entries */
		unsigned int w;

		size = get_u64(h, 8);
		k->n = get_u64(h, 32);
		if (size < 8 || (size & (size - 1)) || size > (1u << 26))
			return PERR_CORRUPT;
		w = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		k->start = keys + 40 + size * w;
		k->hashed = 1;
	} else {
		/* refcnt, log2 size, log2 index bytes, kind, version, usable, nentries */
		unsigned int log2 = h[8], log2i = h[9], kind = h[10];

		k->n = get_u64(h, 24);
		if (log2 < 3 || log2 > 26 || log2i < log2 || log2i > log2 + 3 || kind > 2)
			return PERR_CORRUPT;
		size = 1ull << log2;
		k->start = keys + 32 + (1ull << log2i);
		k->hashed = kind == 0;
	}
	k->esize = k->hashed ? 24 : 16;
	if (k->n > size)
		return PERR_CORRUPT;
	if (k->n > ENTRIES_MAX)
		return PERR_TOOBIG;
	return PERR_OK;
}

/*
 * Look key (a str) or hash (when key is NULL) up in the keys object;
 * values: 0 for a combined table, else the address of the split values
 * array (nvalues slots at most).
 */
static enum perr keys_find(struct pyobj *o, uint64_t keys, uint64_t values, uint64_t nvalues,
			   const char *key, uint64_t hash, uint64_t *val)
{
	struct pykeys k;
	unsigned char *raw = NULL;
	char buf[KEY_MAX * 4 + 1];
	enum perr err;

	if ((err = keys_read(o, keys, &k)))
		return err;
	if (!key && !k.hashed)
		return PERR_NOTFOUND;	/* str keys only: no int key there */
	if (!k.n)
		return PERR_NOTFOUND;
	raw = xmalloc((size_t)(k.n * k.esize));
	if ((err = rd(o, k.start, raw, (size_t)(k.n * k.esize))))
		goto out;
	err = PERR_NOTFOUND;
	for (uint64_t i = 0; i < k.n; i++) {
		const unsigned char *e = raw + i * k.esize;
		uint64_t ekey = get_u64(e, k.hashed ? 8 : 0), v = get_u64(e, k.hashed ? 16 : 8);

		if (!ekey)
			continue;	/* deleted */
		if (key) {
			if (pyobj_str(o, ekey, KEY_MAX, buf, sizeof(buf), NULL) || strcmp(buf, key))
				continue;
		} else if (get_u64(e, 0) != hash) {
			continue;
		}
		if (values) {
			if (i >= nvalues) {
				err = PERR_CORRUPT;
				goto out;
			}
			if ((err = rmem_u64(o->mem, values + i * 8, &v)))
				goto out;
		}
		if (!v)
			continue;	/* deleted (<= 3.10), or not set in this instance */
		*val = v;
		err = PERR_OK;
		goto out;
	}
out:
	free(raw);
	return err;
}

/*
 * A split table's values: where the pointers start and how many there
 * may be.  3.13+ puts {capacity, size, embedded, valid} first.
 */
static enum perr values_at(struct pyobj *o, uint64_t values, uint64_t *start, uint64_t *n)
{
	unsigned char h[8];
	enum perr err;

	if (!values || (values & 7))
		return PERR_CORRUPT;
	if (o->minor <= 12) {
		*start = values;
		*n = ENTRIES_MAX;
		return PERR_OK;
	}
	if ((err = rd(o, values, h, sizeof(h))))
		return err;
	if (!h[3] || h[1] > h[0])
		return PERR_NOTFOUND;	/* not valid: the dict holds them now */
	*start = values + 8;
	*n = h[1];
	return PERR_OK;
}

static enum perr dict_find(struct pyobj *o, uint64_t dict, const char *key, uint64_t hash,
			   uint64_t *val)
{
	const struct pyvm_layout *L = o->lay;
	unsigned char d[64];
	uint64_t values, start, n;
	enum perr err;

	/* PyDictObject: ma_keys at 32, ma_values at 40 (GIL build) */
	if (!dict || (dict & 7))
		return PERR_CORRUPT;
	if ((err = rd(o, dict, d, PYVM_OFF(L, 48))))
		return err;
	if (o->type[PYOBJ_DICT] && get_u64(d, L->ob_type) != o->type[PYOBJ_DICT])
		return PERR_CORRUPT;
	values = get_u64(d, PYVM_OFF(L, 40));
	if (!values)
		return keys_find(o, get_u64(d, PYVM_OFF(L, 32)), 0, 0, key, hash, val);
	if ((err = values_at(o, values, &start, &n)))
		return err == PERR_NOTFOUND ? PERR_CORRUPT : err;
	return keys_find(o, get_u64(d, PYVM_OFF(L, 32)), start, n, key, hash, val);
}

enum perr pyobj_dict_get(struct pyobj *o, uint64_t dict, const char *key, uint64_t *val)
{
	return dict_find(o, dict, key, 0, val);
}

enum perr pyobj_dict_get_hash(struct pyobj *o, uint64_t dict, uint64_t hash, uint64_t *val)
{
	return dict_find(o, dict, NULL, hash, val);
}

enum perr pyobj_attr(struct pyobj *o, uint64_t obj, const char *name, uint64_t *val)
{
	unsigned char t[TP_DICTOFFSET + 8 + 16];	/* room for a free-threaded header */
	uint64_t type, flags, dict, values, start, n, keys;
	int64_t dictoff;
	int kind;
	enum perr err;

	if ((err = pyobj_type(o, obj, &type, &kind)))
		return err;
	if ((err = rd(o, type, t, PYVM_OFF(o->lay, TP_DICTOFFSET + 8))))
		return err;
	flags = get_u64(t, PYVM_OFF(o->lay, TP_FLAGS));
	if (o->minor <= 10) {
		dictoff = (int64_t)get_u64(t, TP_DICTOFFSET);
		if (dictoff <= 0 || dictoff > 4096 || (dictoff & 7))
			return PERR_NOTFOUND;	/* none, or after a variable-size part */
		if ((err = rmem_u64(o->mem, obj + (uint64_t)dictoff, &dict)))
			return err;
		return dict ? pyobj_dict_get(o, dict, name, val) : PERR_NOTFOUND;
	}
	if (!(flags & TPF_MANAGED_DICT))
		return PERR_NOTFOUND;	/* a class with __slots__ or a C type */
	if ((err = rmem_u64(o->mem, obj - (o->lay->free_threaded ? MANAGED_DICT_OFF_FT :
								  MANAGED_DICT_OFF), &dict)))
		return err;
	values = 0;
	if (o->minor == 12 && (dict & 1)) {
		values = dict + 1;	/* _PyDictOrValues: values - 1, odd (measured on 3.12.1) */
		dict = 0;
	}
	if (dict)
		return pyobj_dict_get(o, dict, name, val);
	if (o->minor == 11) {
		if ((err = rmem_u64(o->mem, obj - MANAGED_VALUES_OFF, &values)))
			return err;
	} else if (o->minor >= 13) {
		uint64_t basic = get_u64(t, PYVM_OFF(o->lay, TP_BASICSIZE));

		if (!(flags & TPF_INLINE_VALUES) || basic < 16 || basic > 4096 || (basic & 7))
			return PERR_NOTFOUND;
		values = obj + basic;
	}
	if (!values)
		return PERR_NOTFOUND;
	if (!(flags & TPF_HEAPTYPE) || !o->ht_cached_keys)
		return PERR_NOTFOUND;
	if ((err = rmem_u64(o->mem, type + o->ht_cached_keys, &keys)))
		return err;
	if ((err = values_at(o, values, &start, &n)))
		return err;
	return keys_find(o, keys, start, n, name, 0, val);
}

enum perr pyobj_module(struct pyobj *o, uint64_t interp, const char *name, uint64_t *mod)
{
	uint64_t modules;
	enum perr err;

	if (o->lay->interp.modules == PYVM_NONE)
		return PERR_NOTFOUND;
	if ((err = rmem_u64(o->mem, interp + o->lay->interp.modules, &modules)))
		return err;
	return pyobj_dict_get(o, modules, name, mod);
}
