/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_target.h"
#include "stack/tags.h"
#include "util/utf8.h"

/* Every Ruby layout table and every patch-release override (rubyvm-structs/). */
static const unsigned int rb_versions[][3] = {
	{ 2, 7, 0 }, { 3, 0, 0 }, { 3, 1, 0 }, { 3, 1, 5 }, { 3, 2, 0 }, { 3, 2, 3 },
	{ 3, 2, 4 }, { 3, 3, 0 }, { 3, 4, 0 }, { 4, 0, 0 }, { 4, 0, 6 },
};
#define RB_NVERSIONS (sizeof(rb_versions) / sizeof(rb_versions[0]))

int fuzz_input_parse(struct fuzz_input *in, const uint8_t *data, size_t size)
{
	uint32_t off;

	if (size < FUZZ_HDR)
		return -1;
	in->layout = data[0];
	in->flags = data[1];
	off = (uint32_t)data[2] | (uint32_t)data[3] << 8 | (uint32_t)data[4] << 16 |
	      (uint32_t)data[5] << 24;
	in->runtime = FUZZ_BASE + off;
	in->image = data + FUZZ_HDR;
	in->len = size - FUZZ_HDR;
	return 0;
}

unsigned int fuzz_py_minor(unsigned int layout)
{
	return 8 + layout % 8;		/* 3.8 to 3.15 */
}

unsigned int fuzz_py_layout(unsigned int minor)
{
	return (minor - 8) % 8;
}

void fuzz_rb_version(unsigned int layout, unsigned int *major, unsigned int *minor,
		     unsigned int *patch)
{
	const unsigned int *v = rb_versions[layout % RB_NVERSIONS];

	*major = v[0];
	*minor = v[1];
	*patch = v[2];
}

unsigned int fuzz_rb_layout(unsigned int major, unsigned int minor, unsigned int patch)
{
	unsigned int best = 0, want = major * 10000 + minor * 100 + patch;

	for (unsigned int i = 0; i < RB_NVERSIONS; i++) {
		const unsigned int *v = rb_versions[i];

		if (v[0] * 10000 + v[1] * 100 + v[2] <= want)
			best = i;
	}
	return best;
}

void fuzz_target_init(struct target *t, const struct fuzz_input *in)
{
	char line[128];
	int n;

	memset(t, 0, sizeof(*t));
	t->pid = FUZZ_PID;
	snprintf(t->comm, sizeof(t->comm), "fuzz");
	n = snprintf(line, sizeof(line), "%" PRIx64 "-%" PRIx64 " rw-p 00000000 00:00 0 %s\n",
		     FUZZ_BASE, FUZZ_BASE + in->len, FUZZ_PATH);
	/* an empty image has no map at all: every read faults */
	if (in->len && procmaps_parse(&t->maps, line, (size_t)n))
		abort();
	procmem_init_buffer(&t->mem, FUZZ_BASE, in->image, in->len);
	/* the interpreter object: named like the map, no ELF file open */
	t->exe.path = strdup(FUZZ_PATH);
	if (!t->exe.path)
		abort();
	t->interp = &t->exe;
}

void fuzz_target_release(struct target *t)
{
	procmaps_release(&t->maps);
	free(t->exe.path);
	memset(t, 0, sizeof(*t));
}

static void check_string(const char *s)
{
	size_t n;

	if (!s)
		abort();
	n = strlen(s);
	if (n > 1u << 16 || !utf8_valid(s, n))
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			abort();
}

/* A frame's locals (pylocals.h): clean lines, each ending in '\n'. */
static void check_lines(const char *s)
{
	char line[4096];

	if (!*s)
		abort();
	while (*s) {
		size_t n = strcspn(s, "\n");

		if (!s[n] || n >= sizeof(line))
			abort();
		memcpy(line, s, n);
		line[n] = '\0';
		check_string(line);
		s += n + 1;
	}
}

void fuzz_check_tags(const char *s)
{
	char prev[TAGS_MAX_KEY + 1] = "";
	unsigned int n = 0;

	if (!*s)
		return;
	for (;;) {
		const char *eq = strchr(s, '='), *end = strchr(s, ',');
		char key[TAGS_MAX_KEY + 1], *v;
		size_t kn;

		if (!end)
			end = s + strlen(s);
		if (!eq || eq > end || ++n > TAGS_MAX)
			abort();
		kn = (size_t)(eq - s);
		if (tags_key_problem(s, kn))
			abort();
		memcpy(key, s, kn);
		key[kn] = '\0';
		if (strcmp(prev, key) >= 0)	/* sorted, each key once */
			abort();
		memcpy(prev, key, kn + 1);
		v = strndup(eq + 1, (size_t)(end - eq - 1));
		if (!v)
			abort();
		if (tags_value_problem(v))
			abort();
		free(v);
		if (!*end)
			return;
		s = end + 1;
	}
}

void fuzz_check_stack(void *arg, const struct stack *st)
{
	unsigned long *stacks = arg;

	if (st->depth > STACK_MAX_DEPTH)
		abort();
	if (st->thread_name)
		check_string(st->thread_name);
	if (st->tags)
		fuzz_check_tags(st->tags);
	for (unsigned int i = 0; i < st->depth; i++) {
		check_string(st->frame[i].name);
		check_string(st->frame[i].file);
		if (st->locals && st->locals[i])
			check_lines(st->locals[i]);
	}
	(*stacks)++;
	if (getenv("FUZZ_VERBOSE")) {	/* to see what a seed reaches */
		fprintf(stderr, "stack of %u frames%s {%s}:", st->depth,
			st->truncated ? " (truncated)" : "", st->tags ? st->tags : "");
		for (unsigned int i = 0; i < st->depth; i++)
			fprintf(stderr, " %s (%s:%d)%s%s", st->frame[i].name, st->frame[i].file,
				st->frame[i].line, st->locals && st->locals[i] ? " locals:\n" : "",
				st->locals && st->locals[i] ? st->locals[i] : "");
		fprintf(stderr, "\n");
	}
}
