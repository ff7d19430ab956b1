/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>

#include "fuzz.h"
#include "fuzz_target.h"
#include "python/pyreader.h"

/*
 * The Python stack reader against fuzzed remote memory: a fake process
 * (fuzz_target.h) whose _PyRuntime is where the input says, sampled a
 * few times so that the code object cache is used as well as filled.
 * Every frame's locals are read too (dump --locals).
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_input in;
	struct target t;
	struct reader_opts opts = { 0 };
	struct pyreader *pr;
	unsigned long stacks = 0;

	if (fuzz_input_parse(&in, data, size))
		return 0;
	fuzz_target_init(&t, &in);
	t.lang = TARGET_PYTHON;
	t.major = 3;
	t.minor = fuzz_py_minor(in.layout);
	t.patch = 0;
	snprintf(t.version, sizeof(t.version), "3.%u.0", t.minor);
	opts.idle = !!(in.flags & FUZZ_IDLE);
	opts.gil_only = !!(in.flags & FUZZ_GIL);
	opts.locals = 1;
	if (pyreader_new_at(&t, &opts, in.runtime, &pr) == PERR_OK) {
		for (unsigned int i = 0; i < FUZZ_SAMPLES(in.flags); i++)
			if (pyreader_sample(pr, fuzz_check_stack, &stacks) == PERR_EXITED)
				break;
		pyreader_describe(pr);
		pyreader_stats(pr);
		pyreader_free(pr);
	}
	fuzz_target_release(&t);
	return 0;
}
