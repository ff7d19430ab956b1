/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_REPORT_H
#define PYROSPY_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct profile;

/*
 * pyrospy report IN [options]: a raw recording (-f raw) written again in
 * any format, with only the samples the filters keep.  argv[0] is
 * "report".  Returns the exit status (common.h), having said what went wrong.
 */
int report_main(int argc, char **argv);

/* Its help text (pyrospy help report). */
extern const char report_usage[];

#define REPORT_MAX_TAGS		32
#define REPORT_MAX_THREADS	16

struct report_tag {
	const char *key;
	size_t klen;
	const char *value;
	int negate;		/* KEY!=VALUE */
};

/* The samples a report keeps (its --from ... --gil); strings stay the caller's. */
struct report_filter {
	double from, until;	/* seconds into the recording; until < 0: none */
	/*
	 * Or wall times: Unix times, or with *_tod seconds after a local
	 * midnight (HH:MM:SS), the one nearest the recording's start; < 0: none
	 */
	double from_at, until_at;
	int from_tod, until_tod;
	pid_t pid;		/* 0: all */
	const char *thread[REPORT_MAX_THREADS];
	unsigned int nthread;
	struct report_tag tag[REPORT_MAX_TAGS];
	unsigned int ntag;
	int idle, gil;
};

/* No filter: every sample of a busy thread. */
void report_filter_init(struct report_filter *f);

/*
 * Add the tag filter arg ("KEY=VALUE" or "KEY!=VALUE", kept by pointer):
 * 0, or 1 when there are REPORT_MAX_TAGS already, 2 when arg is neither.
 */
int report_filter_tag(struct report_filter *f, const char *arg);

/* Seconds into a recording ("60", "0.5"): 1 and *out, or 0 when s is none. */
int report_seconds(const char *s, double *out);

/*
 * Set f's start (until unset) or end (set) from s: seconds into the
 * recording, or a wall time, "2026-11-24T05:58:00Z" (ISO 8601, a zone of
 * Z or +HH:MM, local time without) or "05:58:00" (local time of day, the
 * one within 12 hours of the start).  1, or 0 when s is none of those.
 */
int report_filter_time(struct report_filter *f, const char *s, int until);

/* Whether f has a bound by time (relative or wall). */
int report_filter_timed(const struct report_filter *f);

/* What report_load() read. */
struct report_input {
	uint64_t samples, kept;		/* read, kept by the filter */
	unsigned int rate;		/* Hz asked (0 for a folded profile) */
	double duration;		/* seconds, 0 for a folded profile */
};

/*
 * Read the raw recording or folded profile at path into p (initialised
 * by the caller; by function when function is set), keeping what f
 * selects, as report does.  Says on stderr what went wrong (cmd names
 * the command for the hint) and returns the exit status: EXIT_OK,
 * EXIT_FAIL (cannot read), EXIT_USAGE (a filter a folded profile cannot
 * answer), EXIT_BADFILE (no recording, or damaged).
 */
int report_load(const char *path, const struct report_filter *f, int function,
		struct profile *p, struct report_input *info, const char *cmd);

#endif
