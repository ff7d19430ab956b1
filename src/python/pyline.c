/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "python/pyline.h"

/* A line summed from untrusted deltas, or -1 when no int holds it. */
static int line_or_none(int64_t line)
{
	return line < INT32_MIN || line > INT32_MAX ? -1 : (int)line;
}

int pyline_lnotab(const uint8_t *tab, size_t len, int firstlineno, int64_t lasti)
{
	int64_t addr = 0;
	int64_t line = firstlineno;	/* wide: the deltas may push an int past its range */

	if (lasti < 0)
		return firstlineno;
	for (size_t i = 0; i + 1 < len; i += 2) {
		addr += tab[i];
		if (addr > lasti)
			break;
		line += (int8_t)tab[i + 1];
	}
	return line_or_none(line);
}

int pyline_linetable(const uint8_t *tab, size_t len, int firstlineno, int64_t addr)
{
	int64_t end = 0;
	int64_t line = firstlineno;

	for (size_t i = 0; i + 1 < len; i += 2) {
		int64_t start = end;
		int8_t delta = (int8_t)tab[i + 1];

		end += tab[i];
		if (delta != -128)
			line += delta;
		if (start <= addr && addr < end)
			return delta == -128 ? -1 : line_or_none(line);
	}
	return -1;
}

/* 6-bit chunks, least significant first, bit 6 = more follow */
static int varint(const uint8_t *tab, size_t len, size_t *i, uint32_t *out)
{
	uint32_t v = 0;
	unsigned int shift = 0;

	for (;;) {
		uint8_t b;

		if (*i >= len || shift > 30)
			return 0;
		b = tab[(*i)++];
		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	*out = v;
	return 1;
}

static int svarint(const uint8_t *tab, size_t len, size_t *i, int32_t *out)
{
	uint32_t v;

	if (!varint(tab, len, i, &v))
		return 0;
	*out = (v & 1) ? -(int32_t)(v >> 1) : (int32_t)(v >> 1);
	return 1;
}

int pyline_locations(const uint8_t *tab, size_t len, int firstlineno, int64_t unit)
{
	int64_t pc = 0;
	int64_t line = firstlineno;
	size_t i = 0;

	while (i < len) {
		uint8_t b = tab[i++];
		int n = (b & 7) + 1, code = (b >> 3) & 15;
		int64_t cur;
		uint32_t skip;
		int32_t d;

		if (!(b & 0x80))
			return -1;	/* not an entry header: corrupt */
		switch (code) {
		case 15:
			cur = -1;
			break;
		case 14:
			if (!svarint(tab, len, &i, &d))
				return -1;
			line += d;
			cur = line;
			if (!varint(tab, len, &i, &skip) || !varint(tab, len, &i, &skip) ||
			    !varint(tab, len, &i, &skip))
				return -1;
			break;
		case 13:
			if (!svarint(tab, len, &i, &d))
				return -1;
			line += d;
			cur = line;
			break;
		case 10:
		case 11:
		case 12:
			line += code - 10;
			cur = line;
			i += 2;
			break;
		default:
			cur = line;
			i += 1;
		}
		if (pc <= unit && unit < pc + n)
			return cur < 0 || cur > INT32_MAX ? -1 : (int)cur;
		pc += n;
	}
	return -1;
}
