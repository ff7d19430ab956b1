/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>

#include "python/pyreader.h"
#include "ruby/rbreader.h"
#include "sample/reader.h"
#include "proc/target.h"
#include "util/xalloc.h"

struct reader {
	enum target_lang lang;
	union {
		struct pyreader *py;
		struct rbreader *rb;
	} u;
};

enum perr reader_new(struct target *t, const struct reader_opts *opts, struct reader **out)
{
	struct reader *r = xcalloc(1, sizeof(*r));
	enum perr err;

	r->lang = t->lang;
	switch (t->lang) {
	case TARGET_PYTHON:
		err = pyreader_new(t, opts, &r->u.py);
		break;
	case TARGET_RUBY:
		err = rbreader_new(t, opts, &r->u.rb);
		break;
	default:
		err = PERR_NOTINTERP;
	}
	if (err) {
		free(r);
		return err;
	}
	*out = r;
	return PERR_OK;
}

void reader_free(struct reader *r)
{
	if (!r)
		return;
	if (r->lang == TARGET_PYTHON)
		pyreader_free(r->u.py);
	else
		rbreader_free(r->u.rb);
	free(r);
}

enum perr reader_sample(struct reader *r, reader_cb cb, void *arg)
{
	if (r->lang == TARGET_PYTHON)
		return pyreader_sample(r->u.py, cb, arg);
	return rbreader_sample(r->u.rb, cb, arg);
}

const struct reader_stats *reader_stats(const struct reader *r)
{
	return r->lang == TARGET_PYTHON ? pyreader_stats(r->u.py) : rbreader_stats(r->u.rb);
}

const char *reader_describe(const struct reader *r)
{
	return r->lang == TARGET_PYTHON ? pyreader_describe(r->u.py) : rbreader_describe(r->u.rb);
}

struct pyreader *reader_python(struct reader *r)
{
	return r->lang == TARGET_PYTHON ? r->u.py : NULL;
}
