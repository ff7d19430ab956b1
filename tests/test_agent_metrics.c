/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <string.h>

#include "cmd/agent_metrics.h"
#include "util/perr.h"

/*
 * The reason label of /metrics (src/cmd/agent_metrics.c): every reason
 * the sampler and the agent give is one of a fixed set, and anything else
 * (a process's name, were one ever passed) is "other".
 */
Test(agent_metrics, reasons_bounded)
{
	static const char *const set[] = {
		"self", "own_child", "not_matched", "excluded", "gone", "maps_too_big",
		"out_of_memory", "io_error", "exited", "permission", "bad_address", "short_read",
		"not_interpreter", "unsupported", "not_found", "inconsistent", "too_big",
		"not_initialised", "unsafe_path", "refused", "other",
	};

	cr_assert_str_eq(agent_metrics_reason("pyrospy itself"), "self");
	cr_assert_str_eq(agent_metrics_reason("excluded by --exclude"), "excluded");
	cr_assert_str_eq(agent_metrics_reason(perr_str(PERR_EXITED)), "exited");
	cr_assert_str_eq(agent_metrics_reason(perr_str(PERR_NOTINTERP)), "not_interpreter");
	cr_assert_str_eq(agent_metrics_reason(perr_str(PERR_NOPROC)), "gone");
	cr_assert_str_eq(agent_metrics_reason(perr_str(PERR_OK)), "other");
	cr_assert_str_eq(agent_metrics_reason("python3\"} 1\nevil{"), "other");
	cr_assert_str_eq(agent_metrics_reason(NULL), "other");
	for (int e = 0; e <= PERR__COUNT; e++) {
		const char *l = agent_metrics_reason(perr_str((enum perr)e));
		size_t k = 0;

		while (k < sizeof(set) / sizeof(set[0]) && strcmp(set[k], l))
			k++;
		cr_assert_lt(k, sizeof(set) / sizeof(set[0]), "perr %d: label %s", e, l);
	}
}
