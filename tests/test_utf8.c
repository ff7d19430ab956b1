/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "util/utf8.h"

Test(utf8, latin1_ucs2_ucs4)
{
	char out[64];
	const unsigned char latin1[] = { 'c', 'a', 'f', 0xe9 };
	const uint16_t ucs2[] = { 0x3042, 'x' };
	const uint32_t ucs4[] = { 0x1f600 };

	cr_assert_eq(utf8_from_ucs(out, sizeof(out), latin1, 4, 1, 0), 5);
	cr_assert_str_eq(out, "caf\xc3\xa9");
	cr_assert_eq(utf8_from_ucs(out, sizeof(out), ucs2, 2, 2, 0), 4);
	cr_assert_str_eq(out, "\xe3\x81\x82x");
	cr_assert_eq(utf8_from_ucs(out, sizeof(out), ucs4, 1, 4, 0), 4);
	cr_assert_str_eq(out, "\xf0\x9f\x98\x80");
	cr_assert(utf8_valid(out, strlen(out)));
}

Test(utf8, rejects_what_no_string_holds)
{
	char out[64];
	const uint16_t surrogate[] = { 0xd800 };
	const uint32_t big[] = { 0x110000 };
	const unsigned char high[] = { 0x80 };
	const unsigned char ctl[] = { 'a', '\n', ';' };

	cr_assert_eq(utf8_from_ucs(out, sizeof(out), surrogate, 1, 2, 0), -1);
	cr_assert_eq(utf8_from_ucs(out, sizeof(out), big, 1, 4, 0), -1);
	cr_assert_eq(utf8_from_ucs(out, sizeof(out), high, 1, 1, 1), -1);
	cr_assert_eq(utf8_from_ucs(out, 3, "abcd", 4, 1, 1), -1, "too small");
	cr_assert_eq(utf8_from_ucs(out, sizeof(out), ctl, 3, 1, 1), 3);
	cr_assert_str_eq(out, "a?;");
	cr_assert_not(utf8_valid("\xc0\x80", 2), "overlong");
	cr_assert_not(utf8_valid("\xed\xa0\x80", 3), "surrogate");
	cr_assert_not(utf8_valid("\xe3\x81", 2), "cut short");
}

Test(utf8, sanitize_keeps_text_and_replaces_the_rest)
{
	char out[16];

	cr_assert_eq(utf8_sanitize(out, sizeof(out), "caf\xc3\xa9", 5), 5);
	cr_assert_str_eq(out, "caf\xc3\xa9");
	/* a stray continuation byte, a truncated sequence, a newline, a DEL */
	cr_assert_eq(utf8_sanitize(out, sizeof(out), "a\x80" "b\xe3\x81\n\x7f", 7), 7);
	cr_assert_str_eq(out, "a?b??\?\?");
	/* never split a character, always terminate */
	cr_assert_eq(utf8_sanitize(out, 5, "abc\xe3\x81\x82", 6), 3);
	cr_assert_str_eq(out, "abc");
	cr_assert_eq(utf8_sanitize(out, 1, "abc", 3), 0);
	cr_assert_str_eq(out, "");
	cr_assert(utf8_valid(out, strlen(out)));
}

/* What a terminal would act on, in every form it can come in. */
Test(utf8, sanitize_replaces_what_acts)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		/* clear the screen, set the title, ring */
		{ "\x1b[2J\x1b]2;PWN\x07", "?[2J?]2;PWN?" },
		/* C1: U+009B is CSI in one character, U+0085 NEL, U+009D OSC */
		{ "a\xc2\x9b" "2Jb", "a?2Jb" },
		{ "\xc2\x80\xc2\x85\xc2\x9d\xc2\x9f", "????" },
		/* an 8-bit CSI byte alone is no UTF-8: a '?' all the same */
		{ "\x9b" "2J", "?2J" },
		/* bidi overrides and embeddings U+202A..U+202E, isolates U+2066..U+2069 */
		{ "\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad\xe2\x80\xae", "?????" },
		{ "x\xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9y", "x????y" },
		/* their neighbours are text: NBSP, U+2029, U+202F, U+2065, U+206A */
		{ "\xc2\xa0\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa",
		  "\xc2\xa0\xe2\x80\xa9\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa" },
		/* names that are not English survive whole */
		{ "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80",
		  "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80" },
	};
	char out[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = strlen(cases[i].in), k = utf8_sanitize(out, sizeof(out), cases[i].in, n);

		cr_assert_str_eq(out, cases[i].out, "case %zu", i);
		cr_assert_eq(k, strlen(cases[i].out), "case %zu", i);
		cr_assert_leq(k, n, "never longer than what it cleans");
		cr_assert(utf8_clean(out, k), "case %zu", i);
		cr_assert_eq(utf8_clean(cases[i].in, n), !strcmp(cases[i].in, cases[i].out),
			     "case %zu", i);
	}
}

/* Names decoded from a Python string follow the same rule. */
Test(utf8, from_ucs_replaces_what_acts)
{
	char out[64];
	const unsigned char latin1[] = { 0x1b, '[', 0x9b, 0x85, 'c', 0xe9 };
	const uint16_t ucs2[] = { 0x202e, 0x65e5, 0x2066, 0x672c, 0x2069, 0x009b, 0x00a0 };
	const uint32_t ucs4[] = { 0x2068, 0x1f600, 0x202a };
	const uint16_t tags[] = { 'k', 0x1f, 'v', 0x1e, 0x202e, 0x9b };

	cr_assert_eq(utf8_from_ucs(out, sizeof(out), latin1, 6, 1, 0), 7);
	cr_assert_str_eq(out, "?[??c\xc3\xa9");
	cr_assert_gt(utf8_from_ucs(out, sizeof(out), ucs2, 7, 2, 0), 0);
	cr_assert_str_eq(out, "?\xe6\x97\xa5?\xe6\x9c\xac??\xc2\xa0");
	cr_assert_gt(utf8_from_ucs(out, sizeof(out), ucs4, 3, 4, 0), 0);
	cr_assert_str_eq(out, "?\xf0\x9f\x98\x80?");
	/* tag sets keep their separators, not the rest */
	cr_assert_eq(utf8_from_ucs_lenient(out, sizeof(out), tags, 6, 2, 0), 6);
	cr_assert_str_eq(out, "k\x1fv\x1e??");
}
