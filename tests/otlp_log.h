/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_TESTS_OTLP_LOG_H
#define PYROSPY_TESTS_OTLP_LOG_H

#include <stddef.h>

/*
 * What tests/otlp-receiver accepted, from its JSON lines log: one line per
 * request, one per sample (its stack "func (file:line)" root first, value,
 * attributes, link).  For test_otlp.c and test_agent.c.
 */
struct otlp_sample {
	char stack[8192];
	unsigned long value;
	char attrs[2048];
	char span[17], trace[33];	/* "" without a link */
	long tid;			/* its thread.id attribute, 0 without */
	char service[136];		/* its resource's service.name */
};

struct otlp_log {
	struct otlp_sample *s;
	size_t n;
	int requests;
	unsigned long total;
	char first_request[4096];
};

/* The string value after key ("\"stack\": \"") up to its closing quote, into out. */
int otlp_json_str(const char *line, const char *key, char *out, size_t cap);

/* The receiver's log at path, into l (free l->s). */
void otlp_log_read(const char *path, struct otlp_log *l);

/* "unit_T_I" of a stack (the frame named so), into out; 0 if it has one. */
int otlp_unit_of(const char *stack, char *out, size_t cap);

#endif
