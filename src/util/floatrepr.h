/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_FLOATREPR_H
#define PYROSPY_FLOATREPR_H

#include <stddef.h>

/* Whose spelling of a double: they differ only in names and exponent form. */
enum float_style {
	FLOAT_PYTHON,	/* repr(): nan, inf, 1e+16, 1.5e-05 */
	FLOAT_RUBY,	/* Float#inspect: NaN, Infinity, 1.0e+16, 1.5e-05 */
};

/*
 * The shortest digits that read back as v, laid out as the language's own
 * repr does: fixed notation from 1e-4 up to 1e16 (Python) or up to 1e15
 * and whatever has digits after the point (Ruby), else d.ddde+XX.
 * Writes at most cap bytes, NUL included (cap 32 holds every double).
 */
void float_repr(double v, enum float_style style, char *out, size_t cap);

#endif
