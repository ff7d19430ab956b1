/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_OUT_H
#define PYROSPY_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct profile;
struct shortpath;
struct stack;
struct out_stream;
struct out_compare;

/* What a writer may say about the run, besides the samples. */
struct out_meta {
	const char *title;	/* "pid N", or diff's inputs */
	/*
	 * What was profiled and what was lost, for a header; each unknown
	 * when NULL or 0 (a report of a recording that did not keep it).
	 * command is the target's (sanitized, at most 4 KiB): text, never markup.
	 */
	const char *interp;	/* "Python 3.11.2", "Ruby 3.3.0" */
	const char *command;	/* exec's command, or the target's command line */
	int pid;
	uint64_t ticks, late;	/* ticks taken, and those more than a period late */
	uint64_t dropped;	/* samples lost: changed under every read */
	uint64_t tags_dropped;	/* samples kept without their tags */
	double duration;	/* seconds */
	unsigned int rate;	/* samples per second asked */
	double start;		/* Unix time of the first sample */
	int threads;		/* keep each thread's stacks apart (--threads) */
	int no_tags;		/* merge the tag sets (--no-tags) */
	int full_paths;		/* whole paths where a person reads (--full-paths) */
	int flame_up;		/* flamegraph: root at the bottom (--flame-direction up) */
	const struct out_compare *compare;	/* html: open comparing (pyrospy diff) */
};

/*
 * The html report opens comparing two values of tag key: base (BASE,
 * shown as base_label) and next (NEW, new_label), as pyrospy diff asks
 * when the profile holds BASE's stacks under the tag set "key=base" and
 * NEW's under "key=next".
 */
struct out_compare {
	const char *key, *base, *next;
	const char *base_label, *new_label;
};

/* What sampling kept, for a streaming writer to say (out_ops.open) */
#define OUT_KEPT_IDLE	1u	/* idle threads (--idle) */
#define OUT_KEPT_GIL	2u	/* only the GIL/GVL holder (--gil) */
#define OUT_KEPT_PIDS	4u	/* threads named "pid N: thread ..." (--subprocesses) */

/* What a writer that shows tags and, if asked, threads keeps of a profile. */
#define OUT_KEEP(meta) (((meta)->threads ? PROFILE_KEEP_THREADS : 0u) | \
			((meta)->no_tags ? 0u : PROFILE_KEEP_TAGS))

/*
 * One output format.  write() emits the whole profile to f and returns 0,
 * or -1 with errno set when writing failed.  Adding a format is adding one
 * file with one of these and a line in out.c.
 *
 * A streaming format (raw) has no write(): it keeps every sample, so it is
 * given them as they come.  open() starts the file on f (f stays the
 * caller's; kept: OUT_KEPT_*) and returns the writer's state, or NULL with errno set;
 * sample() takes one thread's stack of one tick, with the tick's Unix
 * time in ns and the tags as profiled; close() writes what is left and
 * frees the state, 0 or -1 with errno set (sample() too: an error sticks,
 * and close() reports it again).
 */
struct out_ops {
	const char *name;	/* --format value */
	const char *ext;	/* default file extension */
	int (*write)(FILE *f, const struct profile *p, const struct out_meta *meta);
	struct out_stream *(*open)(FILE *f, const struct out_meta *meta, unsigned int kept);
	int (*sample)(struct out_stream *s, int64_t when_ns, const char *tags,
		      const struct stack *st);
	int (*close)(struct out_stream *s);
};

extern const struct out_ops out_folded, out_flamegraph, out_speedscope, out_pprof, out_summary;
extern const struct out_ops out_raw, out_chrome, out_html;
/* speedscope in time order, a streaming writer for report (not in out_find()) */
extern const struct out_ops out_timeline;

/*
 * A differential flame graph (pyrospy diff) of p, the union of BASE's and
 * NEW's stacks with neither tag sets nor threads: for every node of p,
 * base[] and next[] hold its total in each (node 0: all).  Widths come
 * from NEW, with the frames only in BASE added at BASE's share (the page
 * can hide them); colours from the change of share (absolute: of
 * samples).
 */
struct out_diff {
	const uint64_t *base, *next;
	uint64_t base_total, new_total;
	int absolute;
};

/*
 * One graph of a flame graph file: all samples (tag NULL), or only those
 * of one tag, which the tag bar's value tag ("key=value") shows instead.
 * p is the profile drawn, diff its counts in a diff (else NULL); samples
 * is the tag's share's numerator (NEW's in a diff), of v[0].samples.
 */
struct out_view {
	const char *tag;
	const struct profile *p;
	const struct out_diff *diff;
	uint64_t samples;
};

/*
 * A differential flame graph: v[0] of all samples, v[1..n-1] one tag
 * each, in the order out_tag_bar() gives.  0, or -1 with errno set when
 * writing failed.
 */
int out_flamegraph_diff(FILE *f, const struct out_view *v, size_t n,
			const struct out_meta *meta);

/* A pair of a tag bar: "key=value" (owned) and its samples. */
struct out_tag {
	char *kv;
	uint64_t samples;
};

/*
 * The pairs a flame graph's tag bar shows of the tag sets of the profiles
 * p[0..np-1] (with their tag sets, as sampled or read): by key, then most
 * samples first, as many as fit the bar; the samples are p[0]'s.  Returns
 * how many, *tags to free with out_tags_free().
 */
size_t out_tag_bar(const struct profile *const *p, size_t np, struct out_tag **tags);
void out_tags_free(struct out_tag *tags, size_t n);

/*
 * The format path's name ends with (".svg", ".pb.gz", ".raw" ..., the
 * longest that matches, in any case), or NULL.
 */
const struct out_ops *out_by_ext(const char *path);
/* The extensions out_by_ext() knows, for messages: ".svg .txt ..." */
const char *out_exts(void);

/*
 * The summary table's header and its first max_rows rows (for the live
 * top view too), with short paths unless full_paths.
 */
int out_summary_rows(FILE *f, const struct profile *p, unsigned int max_rows, int full_paths);

/*
 * The same table, as top draws it: max_rows rows sorted by self (or by
 * total), with mark the sorting column's title marked with '*', each row
 * cut to width columns (0: whole); by_function merges a function's lines.
 */
struct out_table {
	unsigned int max_rows, width;
	int by_total, mark, by_function;
	int full_paths;		/* whole paths, not short forms */
};
int out_summary_table(FILE *f, const struct profile *p, const struct out_table *t);

/* The format named name, or NULL. */
const struct out_ops *out_find(const char *name);

/* "folded" ... for messages */
const char *out_names(void);

/*
 * Write s to f with every character that could break a line-oriented
 * format replaced: ';' becomes ':', control characters '?'.
 */
int out_put_sanitized(FILE *f, const char *s);

/*
 * The text of a code frame as the text formats show it: "name (file:line)",
 * "name (file)" when the line is unknown, or "name" for pseudo-frames.
 * Into buf (cap bytes, truncated if need be); returns buf.
 */
const char *out_frame_text(const struct profile *p, uint32_t frame, char *buf, size_t cap);

/*
 * The same as a person reads it (flamegraph, summary, top): the file's
 * short form in sp (profile/shortpath.h), the whole path if sp is NULL.
 */
const char *out_frame_label(const struct profile *p, uint32_t frame, const struct shortpath *sp,
			    char *buf, size_t cap);

/*
 * Write s as the inside of a JSON string (or XML text when xml is set),
 * escaping what must be.  s is valid UTF-8 (the readers make it so).
 */
int out_put_escaped(FILE *f, const char *s, int xml);

#endif
