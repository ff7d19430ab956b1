/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_PYREADER_H
#define PYROSPY_PYREADER_H

#include <stdint.h>

#include "util/perr.h"
#include "stack/reading.h"

struct target;
struct pyreader;


/*
 * Prepare to read the Python stacks of target t (already opened and found
 * to be Python 3.8-3.15).  PERR_STARTUP if the runtime is not initialised
 * yet (retry later), PERR_UNSUPPORTED if no layout fits.  The reader
 * borrows t, which must outlive it.
 */
enum perr pyreader_new(struct target *t, const struct reader_opts *opts,
		       struct pyreader **out);

/*
 * The same, with _PyRuntime already found at `runtime' (t's ELF objects
 * are not consulted for it): the seam the fuzz targets use to read a
 * fake process whose memory is a buffer.
 */
enum perr pyreader_new_at(struct target *t, const struct reader_opts *opts, uint64_t runtime,
			  struct pyreader **out);
void pyreader_free(struct pyreader *pr);

/*
 * Take one sample: call cb once for every thread kept by the options,
 * with a stack valid only during the call.  Returns PERR_EXITED or
 * PERR_PERM when the target is gone or unreadable (stop sampling); other
 * failures are counted in the stats and the sample goes on.
 */
enum perr pyreader_sample(struct pyreader *pr, reader_cb cb, void *arg);

const struct reader_stats *pyreader_stats(const struct pyreader *pr);

/* One line on the layout in use, for -v ("3.13.1, offsets from target"). */
const char *pyreader_describe(const struct pyreader *pr);

/*
 * What other readers of the same process (pytasks.c) share with this
 * one: its memory window cache, its layout (the target's own offsets on
 * 3.13+), where _PyRuntime is, and its code object cache.  Valid while pr
 * is.
 */
struct rmem;
struct pyvm_layout;
struct rmem *pyreader_mem(struct pyreader *pr);
const struct pyvm_layout *pyreader_layout(const struct pyreader *pr);
uint64_t pyreader_runtime(const struct pyreader *pr);

/*
 * Our tid of the thread of the main interpreter whose pthread id is ident
 * (threading.get_ident()), 0 if there is none.
 */
pid_t pyreader_thread_tid(struct pyreader *pr, uint64_t ident);

/* What the asyncio reader needs of pr (pyasync.h), for pyasync_new(). */
struct pyasync_host;
void pyreader_async_host(struct pyreader *pr, struct pyasync_host *h);

/*
 * The qualified name and file of the code object at code, and the line of
 * the instruction at f_lasti lasti (<= 3.10) or at address instr (3.11+);
 * valid until the reader's next call.  PERR_CORRUPT if it is no code
 * object.
 */
enum perr pyreader_code(struct pyreader *pr, uint64_t code, int64_t lasti, uint64_t instr,
			const char **name, const char **file, int *line);

#endif
