/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PYLOCALS_H
#define PYROSPY_PYLOCALS_H

#include <stddef.h>
#include <stdint.h>

#include "python/pyobj.h"

struct rmem;
struct target;
struct pyvm_layout;

/*
 * A Python frame's local variables as text, for dump --locals: one line
 * "name: type = repr" each, in the order the code object declares them.
 * Reprs are short and bounded: None, True, False; an int in decimal up to
 * PYLOCALS_INT_DIGITS digits, else "<int, N digits>"; a float as Python's
 * repr() writes it; a str or bytes as repr() of its first
 * PYLOCALS_STR_MAX characters (then "..."); "<list, len N>" for list,
 * tuple, dict, set and frozenset; "<Type object>" for the rest.  A value
 * that cannot be read or does not hold together is "<?>".
 *
 *   <= 3.10  f_localsplus[0 .. co_nlocals), named by co_varnames
 *   3.11+    localsplus[0 .. len(co_localsplusnames)), those whose
 *            co_localspluskinds say CO_FAST_LOCAL and neither cell, free
 *            nor hidden; 3.14+ entries are tagged _PyStackRefs
 *
 * Cells and free variables (locals a closure captured) and unbound locals
 * are not shown.
 */
#define PYLOCALS_MAX		256	/* locals of one frame shown */
#define PYLOCALS_STR_MAX	64	/* characters of a str or bytes shown */
#define PYLOCALS_INT_DIGITS	100	/* decimal digits of an int shown */
/* bytes of the longest repr: every character escaped as \UXXXXXXXX, b'', ... */
#define PYLOCALS_REPR_MAX	(PYLOCALS_STR_MAX * 10 + 16)

struct pylocals {
	struct pyobj obj;
	char **text;		/* this sample's, freed by pylocals_begin() */
	size_t ntext, cap;
};

/* mem, lay and t must outlive pl. */
void pylocals_init(struct pylocals *pl, struct rmem *mem, const struct pyvm_layout *lay,
		   struct target *t);
void pylocals_release(struct pylocals *pl);

/* Forget the texts of the last sample. */
void pylocals_begin(struct pylocals *pl);

/*
 * The locals of the frame at `frame' running the code object at `code',
 * as lines ending in '\n'; NULL if it has none or they cannot be read.
 * Valid until the next pylocals_begin().
 */
const char *pylocals_frame(struct pylocals *pl, uint64_t frame, uint64_t code);

/*
 * The repr of the object at addr, into out (cap bytes, at least
 * PYLOCALS_REPR_MAX), and its type's name into type (tcap bytes); "<?>"
 * when unreadable.
 */
void pylocals_repr(struct pylocals *pl, uint64_t addr, char *out, size_t cap, char *type,
		   size_t tcap);

#endif
