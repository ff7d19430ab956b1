/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "output/out.h"
#include "util/pb.h"
#include "profile/pprof.h"
#include "profile/profile.h"

/*
 * pprof's profile.proto, gzipped as the format requires: the whole
 * profile as src/pprof.c builds it, one sample per stack of the trie.
 */
static int pprof_write(FILE *f, const struct profile *p, const struct out_meta *meta)
{
	struct pprof *w = pprof_new(p, meta->rate ? 1000000000u / meta->rate : 0);
	struct pb out = { 0 };
	int ret = -1;

	profile_stacks(p, pprof_add, w);
	if (pprof_finish(w, meta->start > 0 ? (int64_t)(meta->start * 1e9) : 0,
			 meta->duration > 0 ? (int64_t)(meta->duration * 1e9) : 0, &out, NULL)) {
		errno = EIO;
		goto out;
	}
	errno = 0;
	if (fwrite(out.buf, 1, out.len, f) != out.len) {
		if (!errno)
			errno = EIO;
		goto out;
	}
	ret = 0;
out:
	pb_release(&out);
	pprof_free(w);
	return ret;
}

const struct out_ops out_pprof = {
	.name = "pprof",
	.ext = "pb.gz",
	.write = pprof_write,
};
