/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/floatrepr.h"
#include "ruby/rblocals.h"
#include "proc/rmem.h"
#include "ruby/rubyvm.h"
#include "util/utf8.h"
#include "util/xalloc.h"

/*
 * What does not change from 2.7 to 3.4 (read in the headers of Debian's
 * ruby2.7 2.7.4, ruby3.1 3.1.2, ruby3.3 3.3.8 and ruby3.4 3.4.5), so it is
 * no part of the layout tables:
 *   special constants  Qfalse 0, Qtrue 0x14 (Qnil and Qundef: the layout),
 *                      Fixnum v & 1, flonum (v & 3) == 2, static Symbol
 *                      (v & 0xff) == 0x0c with its ID in v >> 8
 *   ruby_value_type    T_OBJECT 1 ... T_SYMBOL 0x14 (below)
 *   struct RFloat      double at 16
 *   struct RSymbol     { RBasic; st_index_t hashval; VALUE fstr; ID id; }
 *   struct RBignum     BIGNUM_SIGN_BIT FL_USER1 (set: positive),
 *                      BIGNUM_EMBED_FLAG FL_USER2, its length in BDIGITs at
 *                      FL_USHIFT+3 (3 bits; 9 from 4.0, whose Bignums have
 *                      slots of any size: "Use VWA for bignum", upstream
 *                      b0c9286d98) and the digits at 16; else
 *                      size_t len at 16, BDIGIT *digits at 24; BDIGIT is a
 *                      32-bit unsigned int (SIZEOF_INT*2 <= SIZEOF_LONG_LONG)
 *   encoding index     (flags >> (FL_USHIFT+10)) & 127: 0 ASCII-8BIT,
 *                      1 UTF-8, 2 US-ASCII (encindex.h)
 *   IDs                a local variable's: > tLAST_OP_ID, scope bits
 *                      (id & 0x0e) ID_LOCAL 0 (symbol.h: is_local_id())
 */
#define QFALSE		0x00u
#define QTRUE		0x14u
#define T_MASK		0x1f
#define T_CLASS		0x02
#define T_MODULE	0x03
#define T_FLOAT		0x04
#define T_STRING	0x05
#define T_ARRAY		0x07
#define T_HASH		0x08
#define T_BIGNUM	0x0a
#define T_SYMBOL	0x14
#define T_ICLASS	0x1c
#define RSYMBOL_FSTR	24
#define BIGNUM_SIGN	(1ull << 13)
#define BIGNUM_EMBED	(1ull << 14)
#define BIGNUM_LEN_SHIFT 15
#define BIGNUM_LEN_MASK	7u
#define BIGNUM_LEN_MASK_4_0 0x1ffu
#define ENC_SHIFT	22
#define ENC_BINARY	0
#define ENC_UTF8	1
#define ENC_USASCII	2
#define ID_SCOPE_MASK	0x0eu
#define LIMBS_MAX	1024	/* 32-bit digits of an Integer converted exactly */

void rblocals_init(struct rblocals *rl, struct rmem *mem, const struct rubyvm_layout *L,
		   const struct rblocals_src *src)
{
	memset(rl, 0, sizeof(*rl));
	rl->mem = mem;
	rl->L = L;
	rl->src = *src;
}

void rblocals_begin(struct rblocals *rl)
{
	for (size_t i = 0; i < rl->ntext; i++)
		free(rl->text[i]);
	rl->ntext = 0;
}

void rblocals_release(struct rblocals *rl)
{
	rblocals_begin(rl);
	free(rl->text);
	rl->text = NULL;
	rl->cap = 0;
}

static int is_obj(uint64_t v)
{
	return v && !(v & 7);
}

static int rd(struct rblocals *rl, uint64_t addr, void *out, size_t len)
{
	return !is_obj(addr) || rmem_read(rl->mem, addr, out, len) != PERR_OK;
}

/* Bytes anywhere: a String's may start mid-buffer (a shared substring). */
static int rd_bytes(struct rblocals *rl, uint64_t addr, void *out, size_t len)
{
	return !addr || rmem_read(rl->mem, addr, out, len) != PERR_OK;
}

static int rd_u64(struct rblocals *rl, uint64_t addr, uint64_t *v)
{
	return rd(rl, addr, v, sizeof(*v));
}

/*
 * A String's first bytes (at most cap), its length and its flags; -1 if it
 * is no String or cannot be read.
 */
static int str_bytes(struct rblocals *rl, uint64_t v, unsigned char *out, size_t cap,
		     size_t *n, uint64_t *len, uint64_t *flags)
{
	const struct rubyvm_layout *L = rl->L;
	unsigned char hdr[40];
	uint64_t ptr;

	if (rd(rl, v, hdr, sizeof(hdr)))
		return -1;
	*flags = get_u64(hdr, 0);
	if ((*flags & T_MASK) != T_STRING)
		return -1;
	if (!(*flags & L->string.noembed)) {
		if (L->string.embed_len == RUBYVM_NONE)
			*len = *flags >> L->string.embed_len_shift & L->string.embed_len_mask;
		else
			*len = get_u64(hdr, L->string.embed_len);
		ptr = v + L->string.embed_ptr;
		/* an embedded String lies in its slot: no more than a page */
		if (*len > 4096)
			return -1;
	} else {
		*len = get_u64(hdr, L->string.heap_len);
		ptr = get_u64(hdr, L->string.heap_ptr);
	}
	if (*len >> 48)
		return -1;
	*n = *len < cap ? (size_t)*len : cap;
	if (*n && rd_bytes(rl, ptr, out, *n))
		return -1;
	return 0;
}

/* The length of the UTF-8 character at s (n bytes left), 0 if not well-formed. */
static size_t utf8_char(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t c;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		c = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		c = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/*
 * Characters String#inspect writes as they are, beyond ASCII; the rest as
 * \uXXXX.  Ruby prints every assigned character but controls and line and
 * paragraph separators; this also escapes the bidi controls and the
 * invisible formatting characters, which would act on a terminal.
 */
static int shown_as_is(uint32_t c)
{
	return !(c < 0xa0 || c == 0xad || c == 0x061c || (c >= 0x200b && c <= 0x200f) ||
		 (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x206f) ||
		 c == 0xfeff || (c >= 0xfff9 && c <= 0xfffb) || (c >= 0xe0000 && c <= 0xe007f));
}

/*
 * String#inspect of n bytes in encoding enc, then "..." with more; out
 * must hold 10 * n + 8 bytes.  An encoding other than UTF-8, US-ASCII and
 * ASCII-8BIT: -1.
 */
static int inspect_bytes(const unsigned char *s, size_t n, unsigned int enc, int more,
			 char *out)
{
	char *o = out;

	if (enc != ENC_UTF8 && enc != ENC_USASCII && enc != ENC_BINARY)
		return -1;
	*o++ = '"';
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		uint32_t cp;
		size_t len = enc == ENC_UTF8 ? utf8_char(s + i, n - i, &cp) : (c < 0x80);
		const char *esc = NULL;

		if (!len) {
			o += sprintf(o, "\\x%02X", c);	/* invalid in its encoding, or 8-bit */
			i++;
			continue;
		}
		if (len > 1) {
			if (shown_as_is(cp)) {
				memcpy(o, s + i, len);
				o += len;
			} else {
				o += sprintf(o, cp < 0x10000 ? "\\u%04X" : "\\u{%X}", (unsigned int)cp);
			}
			i += len;
			continue;
		}
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\f': esc = "\\f"; break;
		case '\v': esc = "\\v"; break;
		case '\b': esc = "\\b"; break;
		case '\a': esc = "\\a"; break;
		case 0x1b: esc = "\\e"; break;
		case '#':
			if (i + 1 < n && (s[i + 1] == '$' || s[i + 1] == '@' || s[i + 1] == '{'))
				esc = "\\#";
			break;
		}
		if (esc)
			o += sprintf(o, "%s", esc);
		else if (c >= 0x20 && c < 0x7f)
			*o++ = (char)c;
		else if (enc == ENC_UTF8)
			o += sprintf(o, "\\u%04X", c);
		else
			o += sprintf(o, "\\x%02X", c);
		i++;
	}
	*o++ = '"';
	if (more)
		o += sprintf(o, "...");
	*o = '\0';
	return 0;
}

static int repr_string(struct rblocals *rl, uint64_t v, char *out)
{
	unsigned char raw[RBLOCALS_STR_MAX + 1];
	uint64_t len, flags;
	size_t n;
	unsigned int enc;

	if (str_bytes(rl, v, raw, sizeof(raw), &n, &len, &flags))
		return -1;
	enc = (unsigned int)(flags >> ENC_SHIFT) & 127;
	if (len > RBLOCALS_STR_MAX) {
		/* cut where a character starts: raw[n] is the first byte left out */
		n = RBLOCALS_STR_MAX;
		while (enc == ENC_UTF8 && n > 0 && (raw[n] & 0xc0) == 0x80)
			n--;
	}
	return inspect_bytes(raw, n, enc, len > n, out);
}

/* Is name (n bytes) a symbol Symbol#inspect writes bare, :name? */
static int symbol_plain(const char *name, size_t n)
{
	static const char *const ops[] = {
		"+", "-", "*", "/", "%", "**", "==", "===", "!=", "=~", "!~", "!", "~", "+@",
		"-@", "[]", "[]=", "<<", ">>", "<", "<=", ">", ">=", "<=>", "&", "|", "^", "`",
	};
	size_t i = 0;

	for (size_t k = 0; k < ARRAY_SIZE(ops); k++)
		if (strlen(ops[k]) == n && !memcmp(ops[k], name, n))
			return 1;
	if (n && name[0] == '$')
		i = 1;
	else if (n > 1 && name[0] == '@' && name[1] == '@')
		i = 2;
	else if (n && name[0] == '@')
		i = 1;
	if (i == n || (name[i] >= '0' && name[i] <= '9'))
		return 0;
	for (; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c >= 0x80 || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		    (c >= 'A' && c <= 'Z'))
			continue;
		/* a method name may end in ?, ! or = */
		if (i == n - 1 && (c == '?' || c == '!' || c == '=') && name[0] != '@' &&
		    name[0] != '$')
			continue;
		return 0;
	}
	return 1;
}

static int repr_symbol_bytes(const unsigned char *s, size_t n, unsigned int enc, char *out)
{
	/* bare only when it prints as it is: 8-bit bytes of another encoding are escaped */
	if (n && n <= RBLOCALS_STR_MAX && symbol_plain((const char *)s, n) &&
	    utf8_clean((const char *)s, n) && (enc == ENC_UTF8 || utf8_valid((const char *)s, n))) {
		out[0] = ':';
		memcpy(out + 1, s, n);
		out[n + 1] = '\0';
		return 0;
	}
	out[0] = ':';
	return inspect_bytes(s, n, enc, 0, out + 1);
}

/* A dynamic Symbol: its name is the String fstr. */
static int repr_dsym(struct rblocals *rl, uint64_t v, char *out)
{
	unsigned char raw[RBLOCALS_STR_MAX];
	uint64_t fstr, len, flags;
	size_t n;

	if (rd_u64(rl, v + RSYMBOL_FSTR, &fstr) ||
	    str_bytes(rl, fstr, raw, sizeof(raw), &n, &len, &flags) || len > n)
		return -1;
	return repr_symbol_bytes(raw, n, (unsigned int)(flags >> ENC_SHIFT) & 127, out);
}

/* A static Symbol, by its ID's name (UTF-8 as the reader cleaned it). */
static int repr_ssym(struct rblocals *rl, uint64_t v, char *out)
{
	const char *name = rl->src.id_name(rl->src.arg, v >> 8);
	size_t n;

	if (!name || (n = strlen(name)) > RBLOCALS_STR_MAX)
		return -1;
	return repr_symbol_bytes((const unsigned char *)name, n, ENC_UTF8, out);
}

/* A flonum's double (rb_float_flonum_value()). */
static double flonum(uint64_t v)
{
	uint64_t b63 = v >> 63, t;
	double d;

	if (v == 0x8000000000000002ull)
		return 0.0;
	t = (2 - b63) | (v & ~(uint64_t)3);
	t = t >> 3 | t << 61;
	memcpy(&d, &t, sizeof(d));
	return d;
}

/* A Bignum in decimal, or its sign and number of digits when long. */
static int repr_bignum(struct rblocals *rl, uint64_t v, uint64_t flags, char *out, size_t cap)
{
	uint64_t n, ptr, nchunks = 0, *chunk = NULL;
	uint32_t *digit = NULL;
	int neg = !(flags & BIGNUM_SIGN), ret = -1;
	size_t o, ndigits;

	if (flags & BIGNUM_EMBED) {
		n = flags >> BIGNUM_LEN_SHIFT & (rl->L->version >= RUBYVM_VERSION(4, 0, 0) ?
						 BIGNUM_LEN_MASK_4_0 : BIGNUM_LEN_MASK);
		ptr = v + 16;
	} else if (rd_u64(rl, v + 16, &n) || rd_u64(rl, v + 24, &ptr)) {
		return -1;
	}
	if (!n || n >> 40)
		return -1;
	if (n > LIMBS_MAX) {
		snprintf(out, cap, "<%sInteger, about %" PRIu64 " digits>", neg ? "negative " : "",
			 (uint64_t)((double)n * 32 * 0.30103) + 1);
		return 0;
	}
	digit = xmalloc((size_t)n * 4);
	chunk = xmalloc(((size_t)n * 32 / 29 + 2) * sizeof(*chunk));
	if (rd(rl, ptr, digit, (size_t)n * 4))
		goto out;
	/* base 2^32 to base 10^9, most significant digit first */
	for (uint64_t i = n; i-- > 0;) {
		uint64_t carry = digit[i];

		for (uint64_t j = 0; j < nchunks; j++) {
			uint64_t w = (chunk[j] << 32) + carry;

			chunk[j] = w % 1000000000u;
			carry = w / 1000000000u;
		}
		while (carry) {
			chunk[nchunks++] = carry % 1000000000u;
			carry /= 1000000000u;
		}
	}
	if (!nchunks)
		goto out;
	ndigits = (size_t)(nchunks - 1) * 9 +
		  (size_t)snprintf(NULL, 0, "%" PRIu64, chunk[nchunks - 1]);
	if (ndigits > RBLOCALS_INT_DIGITS || ndigits + 2 > cap) {
		snprintf(out, cap, "<%sInteger, %zu digits>", neg ? "negative " : "", ndigits);
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

static int array_len(struct rblocals *rl, uint64_t v, uint64_t flags, uint64_t *len)
{
	const struct rubyvm_layout *L = rl->L;

	if (flags & L->array.embed) {
		*len = flags >> L->array.embed_len_shift & L->array.embed_len_mask;
		return 0;
	}
	return rd_u64(rl, v + L->array.heap_len, len) || *len >> 40;
}

static int hash_len(struct rblocals *rl, uint64_t v, uint64_t flags, uint64_t *len)
{
	const struct rubyvm_layout *L = rl->L;
	uint64_t st;

	if (L->hash.ar_size_shift == RUBYVM_NONE)
		return -1;
	if (!(flags & L->hash.st_flag)) {
		*len = flags >> L->hash.ar_size_shift & L->hash.ar_size_mask;
		return 0;
	}
	if (L->hash.st_ptr != RUBYVM_NONE) {
		if (rd_u64(rl, v + L->hash.st_ptr, &st))
			return -1;
	} else {
		st = v + L->hash.st_embedded;
	}
	return rd_u64(rl, st + L->hash.st_num_entries, len) || *len >> 40;
}

/*
 * The class an object shows (rb_obj_class()): its klass, past singleton
 * classes and included modules' iclasses.  0 if unreadable.
 */
static uint64_t real_class(struct rblocals *rl, uint64_t klass)
{
	const struct rubyvm_layout *L = rl->L;

	for (int i = 0; i < 16; i++) {
		uint64_t flags;

		if (rd_u64(rl, klass, &flags))
			return 0;
		if ((flags & T_MASK) == T_CLASS && !(flags & L->fl_singleton))
			return klass;
		if ((flags & T_MASK) != T_ICLASS && (flags & T_MASK) != T_CLASS)
			return 0;
		if (L->klass.super == RUBYVM_NONE || rd_u64(rl, klass + L->klass.super, &klass))
			return 0;
	}
	return 0;
}

void rblocals_repr(struct rblocals *rl, uint64_t v, char *out, size_t cap, char *type,
		   size_t tcap)
{
	const struct rubyvm_layout *L = rl->L;
	const char *name = NULL, *path;
	uint64_t flags, klass, len;
	int bad = 0;

	snprintf(out, cap, "<?>");
	snprintf(type, tcap, "?");
	if (cap < RBLOCALS_REPR_MAX)
		return;
	if (v == L->qnil || v == QTRUE || v == QFALSE) {
		snprintf(out, cap, "%s", v == L->qnil ? "nil" : v == QTRUE ? "true" : "false");
		snprintf(type, tcap, "%s", v == L->qnil ? "NilClass" :
					   v == QTRUE ? "TrueClass" : "FalseClass");
		return;
	}
	if (v & 1) {
		snprintf(out, cap, "%" PRId64, (int64_t)v >> 1);
		snprintf(type, tcap, "Integer");
		return;
	}
	if ((v & 3) == 2) {
		float_repr(flonum(v), FLOAT_RUBY, out, cap);
		snprintf(type, tcap, "Float");
		return;
	}
	if ((v & 0xff) == 0x0c) {
		if (!repr_ssym(rl, v, out))
			snprintf(type, tcap, "Symbol");
		else
			snprintf(out, cap, "<?>");
		return;
	}
	if (!is_obj(v) || v == L->qundef || rd_u64(rl, v, &flags) || rd_u64(rl, v + 8, &klass))
		return;
	switch (flags & T_MASK) {
	case T_FLOAT: {
		double d;

		if (rd(rl, v + 16, &d, sizeof(d)))
			return;
		float_repr(d, FLOAT_RUBY, out, cap);
		name = "Float";
		break;
	}
	case T_BIGNUM:
		bad = repr_bignum(rl, v, flags, out, cap);
		name = "Integer";
		break;
	case T_SYMBOL:
		bad = repr_dsym(rl, v, out);
		name = "Symbol";
		break;
	case T_STRING:
		bad = repr_string(rl, v, out);
		break;
	case T_ARRAY:
		bad = array_len(rl, v, flags, &len);
		if (!bad)
			snprintf(out, cap, "<Array, len %" PRIu64 ">", len);
		break;
	case T_HASH:
		bad = hash_len(rl, v, flags, &len);
		if (!bad)
			snprintf(out, cap, "<Hash, len %" PRIu64 ">", len);
		break;
	case T_CLASS:
	case T_MODULE:
		path = (flags & L->fl_singleton) ? NULL : rl->src.class_path(rl->src.arg, v);
		if (!path)
			return;
		snprintf(out, cap, "%s", path);
		name = (flags & T_MASK) == T_CLASS ? "Class" : "Module";
		break;
	default:
		/* no object a local holds: T_NONE, immediates' types, imemo, iclass, moved */
		if ((flags & T_MASK) == 0 || (flags & T_MASK) > 0x0f)
			return;
		break;
	}
	if (bad) {
		snprintf(out, cap, "<?>");
		return;
	}
	if (!name) {
		klass = real_class(rl, klass);
		name = klass ? rl->src.class_path(rl->src.arg, klass) : NULL;
		if (!name) {
			snprintf(out, cap, "<?>");
			return;
		}
		if ((flags & T_MASK) != T_STRING && (flags & T_MASK) != T_ARRAY &&
		    (flags & T_MASK) != T_HASH)
			snprintf(out, cap, "#<%s>", name);
	}
	snprintf(type, tcap, "%s", name);
}

static void text_add(struct rblocals *rl, char *s)
{
	if (rl->ntext == rl->cap) {
		rl->cap = rl->cap ? rl->cap * 2 : 64;
		rl->text = xreallocarray(rl->text, rl->cap, sizeof(*rl->text));
	}
	rl->text[rl->ntext++] = s;
}

const char *rblocals_frame(struct rblocals *rl, uint64_t ep, uint64_t local_table, uint32_t n)
{
	const struct rubyvm_layout *L = rl->L;
	uint64_t ids[RBLOCALS_MAX], vals[RBLOCALS_MAX];
	char *text = NULL, repr[RBLOCALS_REPR_MAX], type[256];
	size_t len = 0, cap = 0, count = n < RBLOCALS_MAX ? n : RBLOCALS_MAX;

	/* more locals than any real method has: a torn read */
	if (!count || n > 65535 || !is_obj(ep) || ep < 8 * ((uint64_t)n + 2) ||
	    rd(rl, local_table, ids, count * 8) ||
	    rd(rl, ep - 8 * ((uint64_t)n + 2), vals, count * 8))
		return NULL;
	for (size_t i = 0; i < count; i++) {
		const char *name;
		int w, nl;

		if (ids[i] <= L->last_op_id || (ids[i] & ID_SCOPE_MASK))
			continue;	/* hidden: not a local variable's name */
		name = rl->src.id_name(rl->src.arg, ids[i]);
		rblocals_repr(rl, vals[i], repr, sizeof(repr), type, sizeof(type));
		if (!name)
			name = "<?>";
		/* a long name: cut where a character starts */
		nl = (int)strnlen(name, RBLOCALS_NAME_MAX + 1);
		if (nl > RBLOCALS_NAME_MAX) {
			nl = RBLOCALS_NAME_MAX;
			while (nl > 0 && ((unsigned char)name[nl] & 0xc0) == 0x80)
				nl--;
		}
		w = snprintf(NULL, 0, "%.*s: %s = %s\n", nl, name, type, repr);
		if (len + (size_t)w + 1 > cap) {
			cap = (len + (size_t)w + 1) * 2;
			text = xrealloc(text, cap);
		}
		len += (size_t)snprintf(text + len, cap - len, "%.*s: %s = %s\n", nl, name,
					type, repr);
	}
	if (text)
		text_add(rl, text);
	return text;
}
