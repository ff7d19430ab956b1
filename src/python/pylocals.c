/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/floatrepr.h"
#include "python/pylocals.h"
#include "python/pyvm.h"
#include "proc/rmem.h"
#include "stack/stack.h"
#include "util/utf8.h"
#include "util/xalloc.h"

/*
 * Code object fields the stack walk does not need, measured on the real
 * interpreters (ctypes.string_at(id(f.__code__), ...) of a function with
 * known locals: the word equal to id(co.co_varnames), the tuple whose
 * items are the locals' names, the bytes of their kinds) on Debian 3.9.2,
 * 3.11.2, 3.13.5, 3.14.10, 3.15.2 and pyenv 3.8.18, 3.9.18, 3.10.13,
 * 3.12.1, 3.13.0:
 *   <= 3.10  int co_nlocals at 28, PyObject *co_varnames at 72
 *   3.11+    co_localsplusnames at 96, co_localspluskinds at 104
 * and a tuple's items start at 24, at 32 from 3.14 on (its cached ob_hash
 * comes first: measured on 3.14.10 and 3.15.2).
 */
#define CO_NLOCALS_OLD		28
#define CO_VARNAMES_OLD		72
#define CO_LOCALSPLUSNAMES	96
#define CO_LOCALSPLUSKINDS	104
#define CO_FAST_HIDDEN		0x10	/* 3.12+: a comprehension's, inlined */
#define CO_FAST_LOCAL		0x20
#define CO_FAST_CELL		0x40
#define CO_FAST_FREE		0x80
#define LIMBS_MAX		1024	/* 30-bit digits of an int converted exactly */
#define NAME_MAX_CP		64	/* code points of a local's name shown */

void pylocals_init(struct pylocals *pl, struct rmem *mem, const struct pyvm_layout *lay,
		   struct target *t)
{
	memset(pl, 0, sizeof(*pl));
	pyobj_init(&pl->obj, mem, lay, t);
}

void pylocals_begin(struct pylocals *pl)
{
	for (size_t i = 0; i < pl->ntext; i++)
		free(pl->text[i]);
	pl->ntext = 0;
}

void pylocals_release(struct pylocals *pl)
{
	pylocals_begin(pl);
	free(pl->text);
	pl->text = NULL;
	pl->cap = 0;
}

static enum perr rd(struct pylocals *pl, uint64_t addr, void *out, size_t len)
{
	if (!addr)
		return PERR_CORRUPT;
	return rmem_read(pl->obj.mem, addr, out, len);
}

static uint32_t tuple_items(const struct pylocals *pl)
{
	return PYVM_OFF(pl->obj.lay, pl->obj.minor >= 14 ? 32u : 24u);
}

/* The C string tp_name of the type at type, sanitized, into out. */
static int type_name(struct pylocals *pl, uint64_t type, char *out, size_t cap)
{
	unsigned char raw[64];
	uint64_t name;
	size_t n;

	if (rmem_u64(pl->obj.mem, type + PYVM_OFF(pl->obj.lay, 24), &name) || !name)
		return -1;
	/* a short name may end near the end of its mapping: read less then */
	for (n = sizeof(raw); n >= 8 && rd(pl, name, raw, n); n /= 2)
		;
	if (n < 8)
		return -1;
	n = strnlen((const char *)raw, n);
	if (!n)
		return -1;
	utf8_sanitize(out, cap, raw, n);
	return 0;
}

/* A str or bytes quote, as repr() picks it: ' unless the text has ' and no ". */
static char quote_for(const uint32_t *cp, size_t n)
{
	int sq = 0, dq = 0;

	for (size_t i = 0; i < n; i++) {
		sq |= cp[i] == '\'';
		dq |= cp[i] == '"';
	}
	return sq && !dq ? '"' : '\'';
}

/* Characters repr() escapes beyond ASCII (str.isprintable() is false), roughly. */
static int unprintable(uint32_t c)
{
	return (c >= 0x80 && c <= 0xa0) || c == 0xad || c == 0x1680 || c == 0x180e ||
	       (c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f) ||
	       (c >= 0x205f && c <= 0x206f) || c == 0x3000 || (c >= 0xd800 && c <= 0xf8ff) ||
	       c == 0xfeff || (c >= 0xfff9 && c <= 0xfffb) || c >= 0xf0000;
}

static size_t put_utf8(char *o, uint32_t c)
{
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xc0 | c >> 6);
		o[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xe0 | c >> 12);
		o[1] = (char)(0x80 | (c >> 6 & 0x3f));
		o[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | c >> 18);
	o[1] = (char)(0x80 | (c >> 12 & 0x3f));
	o[2] = (char)(0x80 | (c >> 6 & 0x3f));
	o[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/*
 * repr() of n code points (bytes with is_bytes: b'...'), then "..." when
 * the object had more; out must hold 10 * n + 8 bytes.
 */
static void quote(const uint32_t *cp, size_t n, int is_bytes, int more, char *out)
{
	char q = quote_for(cp, n), *o = out;

	if (is_bytes)
		*o++ = 'b';
	*o++ = q;
	for (size_t i = 0; i < n; i++) {
		uint32_t c = cp[i];

		if (c == (uint32_t)q || c == '\\')
			o += sprintf(o, "\\%c", (char)c);
		else if (c == '\t')
			o += sprintf(o, "\\t");
		else if (c == '\n')
			o += sprintf(o, "\\n");
		else if (c == '\r')
			o += sprintf(o, "\\r");
		else if (c < 0x20 || c == 0x7f || (is_bytes && c >= 0x80))
			o += sprintf(o, "\\x%02x", (unsigned int)c);
		else if (c < 0x7f)
			*o++ = (char)c;
		else if (unprintable(c))
			o += sprintf(o, c <= 0xff ? "\\x%02x" : c <= 0xffff ? "\\u%04x" : "\\U%08x",
				     (unsigned int)c);
		else
			o += put_utf8(o, c);
	}
	*o++ = q;
	if (more)
		o += sprintf(o, "...");
	*o = '\0';
}

static int repr_str(struct pylocals *pl, uint64_t addr, char *out)
{
	const struct pyvm_layout *L = pl->obj.lay;
	unsigned char hdr[128], raw[PYLOCALS_STR_MAX * 4];
	uint32_t cp[PYLOCALS_STR_MAX], state;
	uint64_t len, data;
	unsigned int kind, ascii;
	size_t n;

	if (L->unicode.compact_size + 8 > sizeof(hdr) ||
	    rd(pl, addr, hdr, L->unicode.compact_size + 8))
		return -1;
	len = get_u64(hdr, L->unicode.length);
	memcpy(&state, hdr + L->unicode.state, sizeof(state));
	state >>= L->unicode.state_shift;
	kind = state >> 2 & 7;
	ascii = state >> 6 & 1;
	if ((kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1) || len >> 62)
		return -1;
	if (state >> 5 & 1)
		data = addr + (ascii ? L->unicode.ascii_size : L->unicode.compact_size);
	else
		data = get_u64(hdr, L->unicode.compact_size);
	n = len < PYLOCALS_STR_MAX ? (size_t)len : PYLOCALS_STR_MAX;
	if (n && rd(pl, data, raw, n * kind))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (kind == 1)
			cp[i] = raw[i];
		else if (kind == 2)
			cp[i] = (uint32_t)(raw[2 * i] | raw[2 * i + 1] << 8);
		else
			cp[i] = get_u32(raw, (uint32_t)(4 * i));
		if (cp[i] > 0x10ffff || (ascii && cp[i] > 0x7f))
			return -1;
	}
	quote(cp, n, 0, len > n, out);
	return 0;
}

static int repr_bytes(struct pylocals *pl, uint64_t addr, char *out)
{
	const struct pyvm_layout *L = pl->obj.lay;
	unsigned char raw[PYLOCALS_STR_MAX];
	uint32_t cp[PYLOCALS_STR_MAX];
	uint64_t len;
	size_t n;

	if (rmem_u64(pl->obj.mem, addr + L->bytes.ob_size, &len) || len >> 62)
		return -1;
	n = len < PYLOCALS_STR_MAX ? (size_t)len : PYLOCALS_STR_MAX;
	if (n && rd(pl, addr + L->bytes.ob_sval, raw, n))
		return -1;
	for (size_t i = 0; i < n; i++)
		cp[i] = raw[i];
	quote(cp, n, 1, len > n, out);
	return 0;
}

/*
 * An int: 3.8-3.11 ob_size (its sign the int's) then 30-bit digits;
 * 3.12+ lv_tag (digits << 3 | sign: 0 positive, 1 zero, 2 negative).
 */
static int repr_int(struct pylocals *pl, uint64_t addr, char *out, size_t cap)
{
	uint64_t tag, n, nchunks = 0, *chunk = NULL;
	uint32_t *digit = NULL;
	int neg, ret = -1;
	size_t o, ndigits;

	if (rmem_u64(pl->obj.mem, addr + PYVM_OFF(pl->obj.lay, 16), &tag))
		return -1;
	if (pl->obj.minor <= 11) {
		neg = (int64_t)tag < 0;
		n = neg ? -tag : tag;
	} else {
		if ((tag & 3) == 3)
			return -1;
		neg = (tag & 3) == 2;
		n = tag >> 3;
		if ((tag & 3) == 1 && n)
			return -1;
	}
	if (n >> 40)
		return -1;
	if (n > LIMBS_MAX) {
		/* the decimal digits of a 30 * n bit number, about */
		snprintf(out, cap, "<int, about %" PRIu64 " digits>",
			 (uint64_t)((double)n * 30 * 0.30103) + 1);
		return 0;
	}
	if (!n) {
		snprintf(out, cap, "0");
		return 0;
	}
	digit = xmalloc((size_t)n * 4);
	chunk = xmalloc(((size_t)n * 30 / 29 + 2) * sizeof(*chunk));
	if (rd(pl, addr + PYVM_OFF(pl->obj.lay, 24), digit, (size_t)n * 4))
		goto out;
	/* base 2^30 to base 10^9, most significant digit first */
	for (uint64_t i = n; i-- > 0;) {
		uint64_t carry = digit[i];

		if (carry >> 30)
			goto out;
		for (uint64_t j = 0; j < nchunks; j++) {
			uint64_t v = (chunk[j] << 30) + carry;

			chunk[j] = v % 1000000000u;
			carry = v / 1000000000u;
		}
		while (carry) {
			chunk[nchunks++] = carry % 1000000000u;
			carry /= 1000000000u;
		}
	}
	if (!nchunks || !chunk[nchunks - 1])
		goto out;	/* a leading zero digit: not a normalized int */
	ndigits = (size_t)(nchunks - 1) * 9 + (size_t)snprintf(NULL, 0, "%" PRIu64,
							       chunk[nchunks - 1]);
	if (ndigits > PYLOCALS_INT_DIGITS || ndigits + 2 > cap) {
		snprintf(out, cap, "<int, %zu digits>", ndigits);
	} else {
		o = (size_t)snprintf(out, cap, "%s%" PRIu64, neg ? "-" : "", chunk[nchunks - 1]);
		for (uint64_t j = nchunks - 1; j-- > 0;)
			o += (size_t)snprintf(out + o, cap - o, "%09" PRIu64, chunk[j]);
	}
	ret = 0;
out:
	free(digit);
	free(chunk);
	return ret;
}

void pylocals_repr(struct pylocals *pl, uint64_t addr, char *out, size_t cap, char *type,
		   size_t tcap)
{
	static const char *const names[PYOBJ_NKINDS] = {
		[PYOBJ_STR] = "str", [PYOBJ_BYTES] = "bytes", [PYOBJ_INT] = "int",
		[PYOBJ_BOOL] = "bool", [PYOBJ_FLOAT] = "float", [PYOBJ_LIST] = "list",
		[PYOBJ_TUPLE] = "tuple", [PYOBJ_DICT] = "dict", [PYOBJ_SET] = "set",
		[PYOBJ_FROZENSET] = "frozenset", [PYOBJ_NONETYPE] = "NoneType",
		[PYOBJ_MODULE] = "module",
	};
	const struct pyobj *o = &pl->obj;
	uint64_t t, len;
	double d;
	int kind, bad = 0;

	snprintf(out, cap, "<?>");
	snprintf(type, tcap, "?");
	if (cap < PYLOCALS_REPR_MAX)
		return;
	if (o->none && addr == o->none) {
		snprintf(out, cap, "None");
		snprintf(type, tcap, "NoneType");
		return;
	}
	if ((o->yes && addr == o->yes) || (o->no && addr == o->no)) {
		snprintf(out, cap, addr == o->yes ? "True" : "False");
		snprintf(type, tcap, "bool");
		return;
	}
	if (pyobj_type(&pl->obj, addr, &t, &kind))
		return;
	if (kind >= 0)
		snprintf(type, tcap, "%s", names[kind]);
	else if (type_name(pl, t, type, tcap))
		return;
	switch (kind) {
	case PYOBJ_STR:
		bad = repr_str(pl, addr, out);
		break;
	case PYOBJ_BYTES:
		bad = repr_bytes(pl, addr, out);
		break;
	case PYOBJ_INT:
		bad = repr_int(pl, addr, out, cap);
		break;
	case PYOBJ_FLOAT:
		bad = rd(pl, addr + PYVM_OFF(pl->obj.lay, 16), &d, sizeof(d)) != PERR_OK;
		if (!bad)
			float_repr(d, FLOAT_PYTHON, out, cap);
		break;
	case PYOBJ_LIST:
	case PYOBJ_TUPLE:
	case PYOBJ_DICT:	/* ob_size, or ma_used: at 16 */
	case PYOBJ_SET:
	case PYOBJ_FROZENSET:	/* fill at 16, used at 24 */
		bad = rmem_u64(pl->obj.mem,
			       addr + PYVM_OFF(pl->obj.lay, kind == PYOBJ_SET ||
							    kind == PYOBJ_FROZENSET ? 24 : 16),
			       &len) != PERR_OK || len >> 40;
		if (!bad)
			snprintf(out, cap, "<%s, len %" PRIu64 ">", names[kind], len);
		break;
	default:
		snprintf(out, cap, "<%s object>", type);
	}
	if (bad)
		snprintf(out, cap, "<?>");
}

static void text_add(struct pylocals *pl, char *s)
{
	if (pl->ntext == pl->cap) {
		pl->cap = pl->cap ? pl->cap * 2 : 64;
		pl->text = xreallocarray(pl->text, pl->cap, sizeof(*pl->text));
	}
	pl->text[pl->ntext++] = s;
}

const char *pylocals_frame(struct pylocals *pl, uint64_t frame, uint64_t code)
{
	const struct pyvm_layout *L = pl->obj.lay;
	unsigned char co[112 + 16], kinds[PYLOCALS_MAX];	/* + a free-threaded header */
	uint64_t names, n, count, slots[PYLOCALS_MAX], items[PYLOCALS_MAX], t;
	char *text = NULL, name[NAME_MAX_CP * 4 + 1], repr[PYLOCALS_REPR_MAX];
	char type[256];
	size_t len = 0, cap = 0;
	int kind, cut;

	if (rd(pl, code, co, PYVM_OFF(L, 112)))
		return NULL;
	names = get_u64(co, PYVM_OFF(L, pl->obj.minor <= 10 ? CO_VARNAMES_OLD :
							      CO_LOCALSPLUSNAMES));
	if (pyobj_type(&pl->obj, names, &t, &kind) ||
	    (pl->obj.type[PYOBJ_TUPLE] && kind != PYOBJ_TUPLE) ||
	    rmem_u64(pl->obj.mem, names + PYVM_OFF(L, 16), &n) || n >> 31)
		return NULL;
	count = n;
	if (pl->obj.minor <= 10) {
		int32_t nlocals = get_i32(co, PYVM_OFF(L, CO_NLOCALS_OLD));

		if (nlocals < 0)
			return NULL;
		if ((uint64_t)nlocals < count)
			count = (uint64_t)nlocals;
	}
	if (count > PYLOCALS_MAX)
		count = PYLOCALS_MAX;
	if (!count)
		return NULL;
	memset(kinds, CO_FAST_LOCAL, sizeof(kinds));
	if (pl->obj.minor >= 11) {
		uint64_t kb = get_u64(co, PYVM_OFF(L, CO_LOCALSPLUSKINDS)), kn;

		if (pyobj_type(&pl->obj, kb, &t, &kind) ||
		    (pl->obj.type[PYOBJ_BYTES] && kind != PYOBJ_BYTES) ||
		    rmem_u64(pl->obj.mem, kb + L->bytes.ob_size, &kn) || kn != n ||
		    rd(pl, kb + L->bytes.ob_sval, kinds, (size_t)count))
			return NULL;
	}
	if (rd(pl, names + tuple_items(pl), items, (size_t)count * 8) ||
	    rd(pl, frame + L->frame.localsplus, slots, (size_t)count * 8))
		return NULL;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t v = slots[i];
		int w;

		if (!(kinds[i] & CO_FAST_LOCAL) ||
		    (kinds[i] & (CO_FAST_CELL | CO_FAST_FREE | CO_FAST_HIDDEN)))
			continue;
		if (L->stackref_tagged) {
			if ((v & 3) == 3)
				v = 0;	/* a tagged int: the interpreter's own, not a local */
			v &= ~(uint64_t)3;
		}
		if (!v)
			continue;	/* unbound */
		if (pyobj_str(&pl->obj, items[i], NAME_MAX_CP, name, sizeof(name), &cut))
			snprintf(name, sizeof(name), "<?>");
		pylocals_repr(pl, v, repr, sizeof(repr), type, sizeof(type));
		w = snprintf(NULL, 0, "%s%s: %s = %s\n", name, cut ? STACK_CUT_MARK : "", type,
			     repr);
		if (len + (size_t)w + 1 > cap) {
			cap = (len + (size_t)w + 1) * 2;
			text = xrealloc(text, cap);
		}
		len += (size_t)snprintf(text + len, cap - len, "%s%s: %s = %s\n", name,
					cut ? STACK_CUT_MARK : "", type, repr);
	}
	if (text)
		text_add(pl, text);
	return text;
}
