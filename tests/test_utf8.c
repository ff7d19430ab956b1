/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "utf8.h"

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
