/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PYOBJ_H
#define PYROSPY_PYOBJ_H

#include <stddef.h>
#include <stdint.h>

#include "util/perr.h"

struct rmem;
struct target;
struct pyvm_layout;

/*
 * Python objects of the target read from outside, one bounded read at a
 * time: str, dict lookups (combined and split tables), an instance's
 * attribute (its __dict__, a 3.11-3.12 managed dict or values, 3.13+
 * inline values).  Everything is untrusted: types are checked against the
 * interpreter's own type objects where their symbols are known, every
 * count is capped, and a failed check is PERR_CORRUPT, never a guess.
 *
 *   instance O of a heap type T (x86-64, GIL builds)
 *     <= 3.10  *(O + T.tp_dictoffset) -> dict (combined, or split: keys
 *              shared with T.ht_cached_keys, values in ma_values[])
 *     3.11     *(O - 24) -> dict, or NULL and *(O - 32) -> values[]
 *     3.12     *(O - 24): dict, or values[] - 1 (odd: tagged)
 *     3.13+    *(O - 24) -> dict, or NULL and inline values at
 *              O + T.tp_basicsize: {capacity, size, embedded, valid,
 *              pad[4], values[]}
 */
enum pyobj_kind {
	PYOBJ_STR,
	PYOBJ_BYTES,
	PYOBJ_INT,
	PYOBJ_BOOL,
	PYOBJ_FLOAT,
	PYOBJ_LIST,
	PYOBJ_TUPLE,
	PYOBJ_DICT,
	PYOBJ_SET,
	PYOBJ_FROZENSET,
	PYOBJ_NONETYPE,
	PYOBJ_MODULE,
	PYOBJ_TYPE,
	PYOBJ_NKINDS
};

struct pyobj {
	struct rmem *mem;		/* borrowed: the reader's */
	const struct pyvm_layout *lay;	/* borrowed */
	unsigned int minor;
	uint32_t ht_cached_keys;	/* in PyHeapTypeObject; 0: unknown */
	uint64_t type[PYOBJ_NKINDS];	/* type objects' addresses, 0: unknown */
	uint64_t none, yes, no;		/* Py_None, Py_True, Py_False; 0: unknown */
};

/* Find the type objects in t's symbols.  mem and lay must outlive o. */
void pyobj_init(struct pyobj *o, struct rmem *mem, const struct pyvm_layout *lay,
		struct target *t);

/*
 * The object's type (ob_type), and which known one it is (-1: none of
 * them).  A type none of the known ones must itself be a type: its type is
 * `type', or a metaclass whose type is (else PERR_CORRUPT).
 */
enum perr pyobj_type(struct pyobj *o, uint64_t obj, uint64_t *type, int *kind);

/*
 * The str at addr as sanitized UTF-8 (utf8.h) in out, cap bytes (at
 * least 4 * max + 1); PERR_CORRUPT for one no real str holds (a lone
 * surrogate).  A longer str is cut at max code points and *cut
 * set (cut may be NULL: then a longer str is PERR_TOOBIG).
 */
enum perr pyobj_str(struct pyobj *o, uint64_t addr, size_t max, char *out, size_t cap, int *cut);

/*
 * The same decoder, for a reader without a struct pyobj: str_type is
 * PyUnicode_Type's address (0: unknown, not checked); lenient turns lone
 * surrogates and the like into '?' rather than failing.
 */
enum perr pyobj_str_at(struct rmem *mem, const struct pyvm_layout *L, uint64_t str_type,
		       uint64_t addr, size_t max, int lenient, char *out, size_t cap, int *cut);

/* The value of the str key `key' in dict, in *val; PERR_NOTFOUND if absent. */
enum perr pyobj_dict_get(struct pyobj *o, uint64_t dict, const char *key, uint64_t *val);

/* The value whose key's stored hash is hash (int keys: the int), PERR_NOTFOUND if absent. */
enum perr pyobj_dict_get_hash(struct pyobj *o, uint64_t dict, uint64_t hash, uint64_t *val);

/* The instance attribute `name' of obj (from its __dict__ or inline values). */
enum perr pyobj_attr(struct pyobj *o, uint64_t obj, const char *name, uint64_t *val);

/* The module `name' of sys.modules, from the interpreter state at interp. */
enum perr pyobj_module(struct pyobj *o, uint64_t interp, const char *name, uint64_t *mod);

#endif
