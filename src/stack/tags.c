/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stack/tags.h"
#include "util/utf8.h"
#include "util/xalloc.h"

static int is_alnum(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The intersection of Grafana's [A-Za-z0-9_.] and the old server's [A-Za-z0-9_]. */
int tags_is_key_char(int c)
{
	return is_alnum(c) || c == '_';
}

/*
 * Keys the server treats specially: __name__ replaces the app name,
 * anything else starting with "__" is dropped by Grafana, profile_id makes
 * Grafana discard the profile, pyroscope_spy duplicates a label the server
 * adds (400), service_name and app_name change the series' identity,
 * and the process_runtime_ pair would duplicate the labels pyrospy's
 * pushes carry (400).
 */
static const char *const reserved_keys[] = {
	"profile_id", "pyroscope_spy", "service_name", "app_name", "process_runtime_name",
	"process_runtime_version",
};

const char *tags_key_problem(const char *k, size_t n)
{
	if (!n)
		return "a tag key is required";
	if (n > TAGS_MAX_KEY)
		return "longer than 128 bytes";
	if (k[0] >= '0' && k[0] <= '9')
		return "must not start with a digit";
	for (size_t i = 0; i < n; i++)
		if (!tags_is_key_char((unsigned char)k[i]))
			return "only letters, digits and '_' are allowed";
	if (n >= 2 && k[0] == '_' && k[1] == '_')
		return "keys starting with '__' are reserved by the server";
	for (size_t i = 0; i < ARRAY_SIZE(reserved_keys); i++)
		if (strlen(reserved_keys[i]) == n && !memcmp(reserved_keys[i], k, n))
			return "reserved by the server";
	return NULL;
}

/*
 * Length of the character at s (n bytes left) if it is white space as Go's
 * unicode.IsSpace sees it (what strings.TrimSpace trims on the server),
 * else 0.  s is valid UTF-8 without control characters.
 */
static size_t go_space(const unsigned char *s, size_t n)
{
	uint32_t c;
	size_t k;

	if (s[0] == ' ')
		return 1;
	if (s[0] < 0xc0)
		return 0;
	k = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	if (k > n)
		return 0;
	c = k == 2 ? s[0] & 0x1f : k == 3 ? s[0] & 0x0f : s[0] & 0x07;
	for (size_t i = 1; i < k; i++)
		c = c << 6 | (s[i] & 0x3f);
	if (c == 0x85 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
	    c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000)
		return k;
	return 0;
}

size_t tags_value_clean(const char *v, size_t n, char *out)
{
	size_t len = utf8_sanitize(out, TAGS_MAX_VALUE + 1, v, n), start = 0, k;

	for (size_t i = 0; i < len; i++)
		if (out[i] == ',' || out[i] == '}')
			out[i] = '_';
	while (start < len && (k = go_space((unsigned char *)out + start, len - start)))
		start += k;
	for (;;) {
		size_t last = len;

		while (last > start && ((unsigned char)out[last - 1] & 0xc0) == 0x80)
			last--;
		if (last <= start || !go_space((unsigned char *)out + last - 1, len - last + 1))
			break;
		len = last - 1;
	}
	memmove(out, out + start, len - start);
	out[len - start] = '\0';
	return len - start;
}

const char *tags_value_problem(const char *v)
{
	char san[TAGS_MAX_VALUE + 1];
	size_t n = strlen(v);

	if (!n)
		return "empty";
	if (n > TAGS_MAX_VALUE)
		return "longer than 1024 bytes";
	if (!utf8_valid(v, n))
		return "not valid UTF-8";
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c < 0x20 || c == 0x7f)
			return "holds a control character";
		if (c == ',' || c == '}')
			return "',' and '}' are not allowed";
	}
	if (!utf8_clean(v, n))
		return "holds a C1 control or bidi override character";
	/* what is left for the sanitizer to change is white space the server trims */
	if (tags_value_clean(v, n, san) != n || memcmp(san, v, n))
		return "starts or ends with white space";
	return NULL;
}


size_t tags_key_clean(const char *k, size_t kn, char *out)
{
	size_t n = 0;

	while (kn && *k == ' ')
		k++, kn--;
	while (kn && k[kn - 1] == ' ')
		kn--;
	for (size_t i = 0; i < kn && n < TAGS_MAX_KEY - 4; i++)
		out[n++] = tags_is_key_char((unsigned char)k[i]) ? k[i] : '_';
	if (tags_key_problem(out, n)) {
		memmove(out + 4, out, n);
		memcpy(out, "tag_", 4);
		n += 4;
	}
	out[n] = '\0';
	return n;
}

/* A tag set being built: clean keys and values, then sorted and joined. */
struct set {
	struct {
		char *key, *value;
	} t[TAGS_MAX];
	size_t n;
};

/* Add or replace a clean tag; past TAGS_MAX new keys are left out. */
static void set_put(struct set *s, const char *k, size_t kn, const char *v, size_t vn)
{
	for (size_t i = 0; i < s->n; i++) {
		if (strlen(s->t[i].key) != kn || memcmp(s->t[i].key, k, kn))
			continue;
		free(s->t[i].value);
		s->t[i].value = xstrndup(v, vn);
		return;
	}
	if (s->n == TAGS_MAX)
		return;
	s->t[s->n].key = xstrndup(k, kn);
	s->t[s->n].value = xstrndup(v, vn);
	s->n++;
}

static int pair_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *set_join(struct set *s)
{
	size_t len = 1, at = 0;
	char *out;

	if (s->n > 1)
		qsort(s->t, s->n, sizeof(s->t[0]), pair_cmp);
	for (size_t i = 0; i < s->n; i++)
		len += strlen(s->t[i].key) + strlen(s->t[i].value) + 2;
	out = xmalloc(len);
	for (size_t i = 0; i < s->n; i++) {
		at += (size_t)sprintf(out + at, "%s%s=%s", i ? "," : "", s->t[i].key,
				      s->t[i].value);
		free(s->t[i].key);
		free(s->t[i].value);
	}
	out[at] = '\0';
	return out;
}

char *tags_from_app(const char *raw, size_t n)
{
	struct set s = { .n = 0 };
	const char *p = raw, *end = raw + n;
	unsigned int pieces = 0;

	while (p < end && pieces++ < 4 * TAGS_MAX) {
		const char *rs = memchr(p, TAGS_RS, (size_t)(end - p)), *us;
		const char *stop = rs ? rs : end;

		us = memchr(p, TAGS_US, (size_t)(stop - p));
		if (us) {
			char key[TAGS_MAX_KEY + 1], *value = xmalloc(TAGS_MAX_VALUE + 1);
			size_t kn = tags_key_clean(p, (size_t)(us - p), key);
			size_t vn = tags_value_clean(us + 1, (size_t)(stop - us - 1), value);

			if (vn)
				set_put(&s, key, kn, value, vn);
			free(value);
		}
		p = stop + 1;
	}
	return set_join(&s);
}

/* Put the tags of clean set c into s. */
static void set_parse(struct set *s, const char *c)
{
	while (c && *c) {
		size_t n = strcspn(c, ","), k = strcspn(c, "=");

		if (k < n)
			set_put(s, c, k, c + k + 1, n - k - 1);
		c += n;
		if (*c)
			c++;
	}
}

const char tags_unknown[] = "";

char *tags_merge(const char *hi, const char *lo)
{
	struct set s = { .n = 0 };

	set_parse(&s, lo);
	set_parse(&s, hi);
	return set_join(&s);
}

static int __attribute__((format(printf, 3, 4))) fail(char *err, size_t errlen,
						      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

int tags_check(const char *const *tags, char *err, size_t errlen)
{
	size_t n = 0;

	for (const char *const *t = tags; t && *t; t++, n++) {
		const char *eq = strchr(*t, '='), *why;
		size_t kn;

		if (!eq)
			return fail(err, errlen, "invalid tag '%s': expected KEY=VALUE", *t);
		kn = (size_t)(eq - *t);
		why = tags_key_problem(*t, kn);
		if (why)
			return fail(err, errlen, "invalid tag key '%.*s': %s", (int)kn, *t, why);
		why = tags_value_problem(eq + 1);
		if (why)
			return fail(err, errlen, "invalid value of tag '%.*s': %s", (int)kn, *t, why);
		for (const char *const *u = tags; u != t; u++)
			if (!strncmp(*u, *t, kn + 1))
				return fail(err, errlen, "tag '%.*s' given twice", (int)kn, *t);
	}
	if (n > TAGS_MAX)
		return fail(err, errlen, "too many tags (%zu): the server allows %d", n,
			    TAGS_MAX);
	return 0;
}

