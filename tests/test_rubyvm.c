/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>

#include "ruby/rubyvm.h"

/* Every minor from 2.7 to 4.0, any patch release; nothing outside. */
Test(rubyvm, every_supported_version_has_a_layout)
{
	static const unsigned int minors[][2] = {
		{ 2, 7 }, { 3, 0 }, { 3, 1 }, { 3, 2 }, { 3, 3 }, { 3, 4 }, { 4, 0 },
	};

	for (size_t i = 0; i < sizeof(minors) / sizeof(minors[0]); i++) {
		for (unsigned int patch = 0; patch < 30; patch++) {
			unsigned int v = RUBYVM_VERSION(minors[i][0], minors[i][1], patch);
			const struct rubyvm_layout *L = rubyvm_find(v);

			cr_assert_not_null(L, "no layout for %u.%u.%u", minors[i][0], minors[i][1],
					   patch);
			cr_assert_eq(L->version / 100, v / 100);
			cr_assert_leq(L->version, v);
			cr_assert_neq(L->cfp.size, RUBYVM_NONE);
			cr_assert_neq(L->iseq.body, RUBYVM_NONE);
		}
	}
	/* 4.0.6 changed the thread scheduler's size: its own table */
	cr_assert_eq(rubyvm_find(RUBYVM_VERSION(4, 0, 5))->version, RUBYVM_VERSION(4, 0, 0));
	cr_assert_eq(rubyvm_find(RUBYVM_VERSION(4, 0, 9))->version, RUBYVM_VERSION(4, 0, 6));
	cr_assert_null(rubyvm_find(RUBYVM_VERSION(2, 6, 10)));
	cr_assert_null(rubyvm_find(RUBYVM_VERSION(4, 1, 0)));
	cr_assert_null(rubyvm_find(RUBYVM_VERSION(1, 9, 3)));
}
