/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>

#include "fuzz.h"
#include "fuzz_target.h"
#include "ruby/rbreader.h"

/*
 * The Ruby stack reader against fuzzed remote memory: a fake process
 * (fuzz_target.h) whose rb_vm_t pointer is where the input says, sampled
 * a few times so that the iseq and method entry caches and the frame
 * guesses are used as well as filled.  Every frame's locals are read too
 * (dump --locals).
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in;
	struct target t;
	struct reader_opts opts = { 0 };
	struct rbreader *rr;
	unsigned long stacks = 0;

	if (fuzz_input_parse(&in, data, size))
		return 0;
	fuzz_target_init(&t, &in);
	t.lang = TARGET_RUBY;
	fuzz_rb_version(in.layout, &t.major, &t.minor, &t.patch);
	snprintf(t.version, sizeof(t.version), "%u.%u.%u", t.major, t.minor, t.patch);
	opts.idle = !!(in.flags & FUZZ_IDLE);
	opts.gil_only = !!(in.flags & FUZZ_GIL);
	opts.locals = 1;
	if (rbreader_new_at(&t, &opts, in.runtime, &rr) == PERR_OK) {
		for (unsigned int i = 0; i < FUZZ_SAMPLES(in.flags); i++)
			if (rbreader_sample(rr, fuzz_check_stack, &stacks) == PERR_EXITED)
				break;
		rbreader_describe(rr);
		rbreader_stats(rr);
		rbreader_free(rr);
	}
	fuzz_target_release(&t);
	return 0;
}
