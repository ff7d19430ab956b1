/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PYLINE_H
#define PYROSPY_PYLINE_H

#include <stddef.h>
#include <stdint.h>

/*
 * CPython line tables, decoded the way CPython itself maps an instruction
 * to a line (range containment, not "first entry past the offset").  The
 * tables come from the target and are untrusted: every decoder stops at
 * len and never reads past it.  Each returns the line, or -1 when the
 * instruction has no line or lies outside the table.
 */

/* 3.8-3.9 co_lnotab: (addr_incr u8, line_incr s8) pairs; lasti in bytes. */
int pyline_lnotab(const uint8_t *tab, size_t len, int firstlineno, int64_t lasti);

/* 3.10 co_linetable (PEP 626): (length u8, line_delta s8) ranges; addr in bytes. */
int pyline_linetable(const uint8_t *tab, size_t len, int firstlineno, int64_t addr);

/* 3.11+ location table (Objects/locations.md); unit = index of the code unit. */
int pyline_locations(const uint8_t *tab, size_t len, int firstlineno, int64_t unit);

#endif
