/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp_log.h"

int otlp_json_str(const char *line, const char *key, char *out, size_t cap)
{
	const char *p = strstr(line, key), *e;

	out[0] = '\0';
	if (!p)
		return -1;
	p += strlen(key);
	for (e = p; *e && *e != '"'; e++)
		if (*e == '\\' && e[1])
			e++;
	snprintf(out, cap, "%.*s", (int)(e - p), p);
	return 0;
}

void otlp_log_read(const char *path, struct otlp_log *l)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0, a = 0;

	memset(l, 0, sizeof(*l));
	cr_assert_not_null(f, "the receiver accepted nothing (%s)", path);
	while (getline(&line, &cap, f) > 0) {
		struct otlp_sample *s;
		const char *p;

		if (strstr(line, "\"kind\": \"request\"")) {
			if (!l->requests++)
				snprintf(l->first_request, sizeof(l->first_request), "%s", line);
			continue;
		}
		if (l->n == a)
			l->s = realloc(l->s, (a = 2 * a + 64) * sizeof(*l->s));
		s = &l->s[l->n++];
		memset(s, 0, sizeof(*s));
		cr_assert_eq(otlp_json_str(line, "\"stack\": \"", s->stack, sizeof(s->stack)), 0, "%s", line);
		otlp_json_str(line, "\"service\": \"", s->service, sizeof(s->service));
		p = strstr(line, "\"value\": ");
		cr_assert_not_null(p, "%s", line);
		s->value = strtoul(p + 9, NULL, 10);
		p = strstr(line, "\"attrs\": {");
		cr_assert_not_null(p, "%s", line);
		snprintf(s->attrs, sizeof(s->attrs), "%.*s", (int)strcspn(p + 9, "}") + 1, p + 9);
		p = strstr(s->attrs, "\"thread.id\": ");
		s->tid = p ? strtol(p + 13, NULL, 10) : 0;
		if (!strstr(line, "\"link\": null")) {
			cr_assert_eq(otlp_json_str(line, "\"span_id\": \"", s->span, sizeof(s->span)), 0,
				     "%s", line);
			cr_assert_eq(otlp_json_str(line, "\"trace_id\": \"", s->trace, sizeof(s->trace)), 0,
				     "%s", line);
		}
		l->total += s->value;
	}
	free(line);
	fclose(f);
}

int otlp_unit_of(const char *stack, char *out, size_t cap)
{
	for (const char *p = stack; (p = strstr(p, "unit_")); p++) {
		size_t n = 5 + strspn(p + 5, "0123456789_");

		if (n > 7 && (p == stack || p[-1] == ';' || p[-1] == '#') && p[n] == ' ') {
			snprintf(out, cap, "%.*s", (int)n, p);
			return 0;
		}
	}
	return -1;
}

