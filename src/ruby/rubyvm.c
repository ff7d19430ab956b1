/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "ruby/rubyvm.h"
#include "util/xalloc.h"

const char rubyvm_supported[] = "2.7 to 4.0";

/* Newest first: the first table at or below a version is its layout. */
static const struct rubyvm_layout *const layouts[] = {
	&rubyvm_ruby_4_0_6, &rubyvm_ruby_4_0, &rubyvm_ruby_3_4, &rubyvm_ruby_3_3,
	&rubyvm_ruby_3_2, &rubyvm_ruby_3_1, &rubyvm_ruby_3_0, &rubyvm_ruby_2_7,
};

const struct rubyvm_layout *rubyvm_find(unsigned int version)
{
	unsigned int minor = version / 100;

	/* a newer minor than we know has unknown layouts: refuse it */
	if (minor > layouts[0]->version / 100)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(layouts); i++)
		if (layouts[i]->version <= version && layouts[i]->version / 100 == minor)
			return layouts[i];
	return NULL;
}

void rubyvm_versions(char *buf, size_t cap)
{
	unsigned int last = 0;
	size_t len = 0;

	if (cap)
		buf[0] = '\0';
	/* layouts[] is newest first; a minor may have several (4.0, 4.0.6) */
	for (size_t i = ARRAY_SIZE(layouts); i-- > 0 && len < cap;) {
		unsigned int minor = layouts[i]->version / 100;
		int n;

		if (minor == last)
			continue;
		last = minor;
		n = snprintf(buf + len, cap - len, "%s%u.%u", len ? " " : "", minor / 100,
			     minor % 100);
		if (n < 0)
			break;
		len += (size_t)n;
	}
}

int rubyvm_layout(unsigned int version, struct rubyvm_layout *out)
{
	const struct rubyvm_layout *L = rubyvm_find(version);

	if (!L)
		return -1;
	*out = *L;
	for (size_t i = 0; i < rubyvm_npatches; i++) {
		const struct rubyvm_patch *p = &rubyvm_patches[i];

		if (version >= p->from && version <= p->to &&
		    p->field + sizeof(uint32_t) <= sizeof(*out))
			memcpy((char *)out + p->field, &p->value, sizeof(p->value));
	}
	return 0;
}
