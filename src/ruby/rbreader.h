/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_RBREADER_H
#define PYROSPY_RBREADER_H

#include "util/perr.h"
#include "stack/reading.h"

struct target;
struct rbreader;

/*
 * Prepare to read the Ruby stacks of target t (opened and found to be
 * CRuby).  PERR_STARTUP if the VM does not exist yet, PERR_UNSUPPORTED if
 * no layout fits the version, PERR_NOTFOUND if the VM cannot be found.
 */
enum perr rbreader_new(struct target *t, const struct reader_opts *opts,
		       struct rbreader **out);

/*
 * The same, with the address of the variable holding the rb_vm_t pointer
 * (ruby_current_vm_ptr) already known: t's ELF objects are not consulted
 * for it.  The seam the fuzz targets use to read a fake process.
 */
enum perr rbreader_new_at(struct target *t, const struct reader_opts *opts, uint64_t vm_ptr,
			  struct rbreader **out);
void rbreader_free(struct rbreader *rr);
enum perr rbreader_sample(struct rbreader *rr, reader_cb cb, void *arg);
const struct reader_stats *rbreader_stats(const struct rbreader *rr);
const char *rbreader_describe(const struct rbreader *rr);

#endif
