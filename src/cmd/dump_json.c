/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <inttypes.h>
#include <string.h>

#include "cmd/dump_json.h"
#include "proc/target.h"
#include "stack/stack.h"
#include "util/utf8.h"

/* "s", escaped: s is valid UTF-8, as the readers and dump's sanitizing make it */
static void str(FILE *f, const char *s)
{
	utf8_put_json(f, s);
}

/* dump's --locals text of a frame: one string a line */
static void locals(FILE *f, const char *text)
{
	fputs(", \"locals\": [", f);
	for (int first = 1; *text; first = 0) {
		size_t n = strcspn(text, "\n");
		char line[4096];

		snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1),
			 text);
		fputs(first ? "" : ", ", f);
		str(f, line);
		text += n + (text[n] == '\n');
	}
	putc(']', f);
}

void dump_json_thread(FILE *f, int first, const char *lang, const struct stack *st)
{
	fprintf(f, "%s\n    {\"tid\": %d", first ? "" : ",", (int)st->tid);
	if (st->thread_name) {
		fputs(", \"name\": ", f);
		str(f, st->thread_name);
	}
	if (st->ractor)
		fprintf(f, ", \"ractor\": %u", st->ractor);
	else if (st->interp)
		fprintf(f, ", \"interpreter\": %" PRIu64, st->interp);
	fprintf(f, ", \"state\": \"%s\"",
		st->gvl_wait == 1 ? "waiting for the GVL" : st->idle == 1 ? "idle" :
		st->idle == 0 ? "running" : "unknown");
	if (st->holds_gil >= 0)
		fprintf(f, ", \"%s\": %s", !strcmp(lang, "Ruby") ? "holds_gvl" : "holds_gil",
			st->holds_gil == 1 ? "true" : "false");
	if (st->truncated)
		fputs(", \"truncated\": true", f);
	fputs(", \"frames\": [", f);
	for (unsigned int i = 0; i < st->depth; i++) {
		const struct stack_frame *fr = &st->frame[i];

		fputs(i ? ",\n      {\"name\": " : "\n      {\"name\": ", f);
		str(f, fr->name);
		if (*fr->file) {
			fputs(", \"file\": ", f);
			str(f, fr->file);
		}
		if (*fr->file && fr->line > 0)
			fprintf(f, ", \"line\": %d", fr->line);
		if (st->locals && st->locals[i])
			locals(f, st->locals[i]);
		putc('}', f);
	}
	fputs("]}", f);
}

void dump_json_other(FILE *f, int first, long tid, const char *name, int running)
{
	fprintf(f, "%s\n    {\"tid\": %ld", first ? "" : ",", tid);
	if (*name) {
		fputs(", \"kernel_name\": ", f);
		str(f, name);
	}
	fprintf(f, ", \"state\": \"%s\", \"frames\": []}", running ? "running" : "idle");
}

/* {"pid": N, "name": ..., "language": ..., "version": ... (left open) */
static void process_head(FILE *f, int first, const struct target *t)
{
	fprintf(f, "%s\n  {\"pid\": %d, \"name\": ", first ? "" : ",", (int)t->pid);
	str(f, t->comm);
	fprintf(f, ", \"language\": \"%s\", \"version\": ", target_lang_name(t->lang));
	str(f, t->version);
}

void dump_json_tasks(FILE *f, int first, const struct target *t, unsigned int ntasks,
		     const char *members)
{
	process_head(f, first, t);
	fprintf(f, ", \"tasks\": %u, %s}", ntasks, members);
}

void dump_json_process(FILE *f, int first, const struct target *t, const char *threads,
		       unsigned long not_listed)
{
	process_head(f, first, t);
	if (not_listed)
		fprintf(f, ", \"threads_not_listed\": %lu", not_listed);
	fprintf(f, ", \"threads\": [%s]}", threads);
}
