/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_INGEST_FORMAT_H
#define PYROSPY_INGEST_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "upload/ingest_wire.h"
#include "util/pb.h"
#include "profile/profile.h"

/*
 * Inside the uploader: one wire format is one encoder behind struct
 * ingest_format_ops, the transport (src/ingest_upload.c) knows none of
 * them.  ingest_encode() splits a window into groups, one per tag set,
 * and hands them to the encoder of o, which makes requests of them:
 *
 *   window --ingest_encode()--> groups --ops->encode()--> requests --> spool
 *
 *   folded, trie   /ingest?name=app.cpu{tags}   one request per group
 *   pprof          /ingest?name=app             one per window, tags as labels
 *   push           /push.v1.PusherService/Push  one per window, a series per group
 *   otlp           /v1development/profiles      one per window, a sample per stack
 *
 * Adding a format is adding one encoder file and a line in ingest.c.
 */

struct ingest_tag {
	char *key, *value;
};

struct ingest_group {
	char *name;			/* "app.cpu{k=v,...}": what tells groups apart */
	char *service;			/* o->per_process: its app name; NULL: o's */
	struct ingest_tag *tags;	/* its tags (--tag and the program's), by key */
	size_t ntags;
	/*
	 * Its stacks, threads merged, root first: code and pseudo-frames
	 * only.  For text formats a frame is its sanitized text (the name;
	 * no file, no line) and a stack fits INGEST_MAX_LINE; for the others
	 * frames are as sampled, names cut to INGEST_MAX_FRAME bytes.  Both
	 * keep INGEST_MAX_DEPTH frames at most, a "[truncated]" mark first.
	 * With ops->threads (not text), each stack has its thread's frame
	 * (PROFILE_THREAD: the name the thread had last, sanitized) before
	 * them, when the window had one.
	 */
	struct profile prof;
};

struct ingest_format_ops {
	const char *name;		/* "folded", "trie", "pprof", "push" */
	const char *path;		/* appended to the server's URL */
	const char *const *headers;	/* "K: V" the body needs, NULL-terminated */
	int text;			/* groups of text frames */
	int threads;			/* stacks keep their thread frame first (see below) */
	const char *not_found;		/* the hint when the server has no such path (404) */
	/* Requests for the groups of one window, appended at tail; returns the new tail. */
	struct ingest_req **(*encode)(const struct ingest_opts *o, const struct ingest_group *g,
				      size_t ng, time_t from, time_t until, struct ingest_req **tail);
	/*
	 * NULL, or: does the answer to a request the server took (len bytes
	 * of body, cut when more came) say it rejected part of it?  1 with
	 * the count in *rejected and its words (raw) in msg, 0 if not.
	 */
	int (*partial)(const char *body, size_t len, int cut, uint64_t *rejected, char *msg,
		       size_t cap);
};

extern const struct ingest_format_ops ingest_folded, ingest_trie, ingest_pprof, ingest_push,
	ingest_otlp;


#define INGEST_MARK_TRUNCATED "[truncated]"


/*
 * A group's stacks as gzipped pprofs (src/pprof.c) for the window [from,
 * until), each of at most INGEST_MAX_STACKS samples and well under
 * INGEST_MAX_PROFILE bytes uncompressed.  p may have a tag set level (its
 * tags become sample labels).  Returns how many, in *out (caller frees
 * each .gz with pb_release() and the array).
 */
struct ingest_chunk {
	struct pb gz;
	size_t raw;		/* bytes uncompressed */
	unsigned int stacks;	/* samples of the pprof */
	uint64_t samples;	/* their counts added up */
};

size_t ingest_pprof_chunks(const struct ingest_opts *o, const struct profile *p, time_t from,
			   time_t until, struct ingest_chunk **out);

/*
 * Add src's stacks to dst under a tag set frame "k=v,k=v" (tags; "": no
 * labels), for ingest_pprof_chunks() to make sample labels of.  Stacks are
 * at most INGEST_MAX_DEPTH deep (an ingest_group's are).
 */
void ingest_profile_under(struct profile *dst, const char *tags, const struct profile *src);



#endif
