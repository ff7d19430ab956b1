/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/floatrepr.h"

void float_repr(double v, enum float_style style, char *out, size_t cap)
{
	int ruby = style == FLOAT_RUBY;
	char buf[40], digits[20], *e;
	int prec, exp, nd = 0;

	if (isnan(v)) {
		snprintf(out, cap, "%s", ruby ? "NaN" : "nan");
		return;
	}
	if (isinf(v)) {
		snprintf(out, cap, "%s%s", v < 0 ? "-" : "", ruby ? "Infinity" : "inf");
		return;
	}
	for (prec = 1; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*e", prec - 1, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	/* buf: [-]d[.ddd]e[+-]xx */
	for (const char *p = buf; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9' && nd < (int)sizeof(digits) - 1)
			digits[nd++] = *p;
	digits[nd] = '\0';
	while (nd > 1 && digits[nd - 1] == '0')
		digits[--nd] = '\0';
	e = strchr(buf, 'e');
	exp = e ? atoi(e + 1) : 0;
	/*
	 * Fixed from 1e-4 on; up to 1e16 for Python's repr, while Ruby's
	 * flo_to_s (decpt = exp + 1) keeps digits after the point at any
	 * size but pads with zeros only up to DBL_DIG (15) digits.
	 */
	if (exp >= -4 && (ruby ? exp + 1 < nd || exp + 1 <= 15 : exp < 16)) {
		size_t o = (size_t)snprintf(out, cap, "%s", signbit(v) ? "-" : "");

		if (exp < 0) {
			o += (size_t)snprintf(out + o, cap - o, "0.");
			for (int i = -1; i > exp; i--)
				o += (size_t)snprintf(out + o, cap - o, "0");
			snprintf(out + o, cap - o, "%s", digits);
		} else if (nd <= exp + 1) {
			o += (size_t)snprintf(out + o, cap - o, "%s", digits);
			for (int i = nd; i <= exp; i++)
				o += (size_t)snprintf(out + o, cap - o, "0");
			snprintf(out + o, cap - o, ".0");
		} else {
			snprintf(out + o, cap - o, "%.*s.%s", exp + 1, digits, digits + exp + 1);
		}
		return;
	}
	/* Python drops a lone digit's point (1e+16); Ruby keeps one zero (1.0e+16) */
	snprintf(out, cap, "%s%c%s%se%c%02d", v < 0 ? "-" : "", digits[0],
		 nd > 1 || ruby ? "." : "", nd > 1 ? digits + 1 : ruby ? "0" : "",
		 exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
}
