/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "profile/foldedread.h"
#include "util/utf8.h"
#include "util/xalloc.h"

struct fr {
	char *line, *clean;	/* as read, and sanitized */
	size_t cap;
	struct folded_frame *frame;
	uint64_t lineno;
	char *why;
	size_t whycap;
};

static enum perr bad(struct fr *r, enum perr err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static enum perr bad(struct fr *r, enum perr err, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(r->why, r->whycap, "line %llu: ", (unsigned long long)r->lineno);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < r->whycap)
		vsnprintf(r->why + n, r->whycap - (size_t)n, fmt, ap);
	va_end(ap);
	return err;
}

/* One line into r->line, without its newline: its length, -1 at EOF, -2 too long. */
static ssize_t read_line(struct fr *r, FILE *f)
{
	size_t n = 0;
	int c;

	while ((c = getc(f)) != EOF && c != '\n') {
		if (n + 1 >= FOLDEDREAD_MAX_LINE)
			return -2;
		if (n + 1 >= r->cap) {
			r->cap = r->cap ? r->cap * 2 : 4096;
			r->line = xrealloc(r->line, r->cap);
		}
		r->line[n++] = (char)c;
	}
	if (c == EOF && !n)
		return -1;
	if (!r->cap) {
		r->cap = 4096;
		r->line = xmalloc(r->cap);
	}
	r->line[n] = '\0';
	return (ssize_t)n;
}

static int all_digits(const char *s, size_t n)
{
	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/*
 * "[pid N: ]thread (TID)[ [interpreter N]][: NAME]": fills l, or returns 0
 * when s is none.  Digits are few enough to fit (checked), so strtol
 * cannot overflow.
 */
static int thread_frame(char *s, struct folded_line *l)
{
	char *p = s, *close, *end;
	long pid = 0, tid;

	if (!strncmp(p, "pid ", 4)) {
		size_t n = strspn(p + 4, "0123456789");

		if (!n || n > 9 || strncmp(p + 4 + n, ": ", 2))
			return 0;
		pid = strtol(p + 4, NULL, 10);
		p += 4 + n + 2;
	}
	if (strncmp(p, "thread (", 8))
		return 0;
	close = strchr(p + 8, ')');
	if (!close || !all_digits(p + 8, (size_t)(close - p - 8)) || close - p - 8 > 9)
		return 0;
	end = close + 1;
	if (!strncmp(end, " [interpreter ", 14)) {
		/* a Python subinterpreter's thread state (up to 20 digits) */
		size_t n = strspn(end + 14, "0123456789");

		if (!n || n > 20 || end[14 + n] != ']')
			return 0;
		end += 14 + n + 1;
	}
	if (*end && strncmp(end, ": ", 2))
		return 0;
	tid = strtol(p + 8, NULL, 10);
	l->thread = s;
	l->pid = (pid_t)pid;
	l->tid = (pid_t)tid;
	l->thread_name = *end ? end + 2 : NULL;
	return 1;
}

int foldedread_thread(char *s, struct folded_line *l)
{
	return thread_frame(s, l);
}

/*
 * "name (file:line)", "name (file)" or "name" into f; s is cut in place.
 * The last " (" starts the location: names hold parentheses ("block (2
 * levels) in <main>"), and out_frame_text() gives back the same text.
 */
static void code_frame(char *s, struct folded_frame *f)
{
	size_t n = strlen(s);
	char *open = NULL, *colon;

	f->name = s;
	f->file = "";
	f->line = 0;
	for (char *p = s; (p = strstr(p, " (")); p++)
		open = p;
	if (!open || n < 2 || s[n - 1] != ')' || open == s || open + 2 == s + n - 1)
		return;
	s[n - 1] = '\0';
	*open = '\0';
	f->file = open + 2;
	colon = strrchr(open + 2, ':');
	if (colon && all_digits(colon + 1, strlen(colon + 1)) && strlen(colon + 1) <= 9 &&
	    colon > open + 2) {
		*colon = '\0';
		f->line = atoi(colon + 1);
	}
}

static enum perr one_line(struct fr *r, size_t len, foldedread_fn fn, void *arg, int *stop)
{
	struct folded_line l;
	char *sp, *p, *end;
	uint32_t n = 0;

	memset(&l, 0, sizeof(l));
	while (len && r->line[len - 1] == '\r')
		len--;
	utf8_sanitize(r->clean, len + 1, r->line, len);
	len = strlen(r->clean);
	if (!len)
		return PERR_OK;
	sp = strrchr(r->clean, ' ');
	if (!sp || sp == r->clean || !all_digits(sp + 1, strlen(sp + 1)) || strlen(sp + 1) > 15)
		return bad(r, PERR_CORRUPT, "no count at its end");
	l.count = strtoull(sp + 1, NULL, 10);
	*sp = '\0';
	for (p = r->clean; p; p = end) {
		end = strchr(p, ';');
		if (end)
			*end++ = '\0';
		if (!*p)
			return bad(r, PERR_CORRUPT, "an empty frame");
		if (n == 0 && !l.tags && *p == '{' && p[strlen(p) - 1] == '}') {
			p[strlen(p) - 1] = '\0';
			l.tags = p + 1;
			continue;
		}
		if (n == 0 && !l.thread && thread_frame(p, &l))
			continue;
		if (n == FOLDEDREAD_MAX_DEPTH)
			return bad(r, PERR_TOOBIG, "more than %u frames", FOLDEDREAD_MAX_DEPTH);
		code_frame(p, &r->frame[n++]);
	}
	l.depth = n;
	l.frame = r->frame;
	if (fn(arg, &l))
		*stop = 1;
	return PERR_OK;
}

enum perr foldedread_run(FILE *f, foldedread_fn fn, void *arg, char *why, size_t cap)
{
	struct fr r = { .why = why, .whycap = cap };
	enum perr err = PERR_OK;
	int stop = 0;

	*why = '\0';
	r.frame = xcalloc(FOLDEDREAD_MAX_DEPTH, sizeof(*r.frame));
	while (!stop && !err) {
		ssize_t len;

		r.lineno++;
		len = read_line(&r, f);
		if (len == -1)
			break;
		if (len == -2) {
			err = bad(&r, PERR_TOOBIG, "longer than %u bytes", FOLDEDREAD_MAX_LINE);
			break;
		}
		r.clean = xrealloc(r.clean, (size_t)len + 1);
		err = one_line(&r, (size_t)len, fn, arg, &stop);
	}
	if (!err && ferror(f)) {
		snprintf(why, cap, "%s", strerror(errno));
		err = PERR_IO;
	}
	free(r.line);
	free(r.clean);
	free(r.frame);
	return err;
}
