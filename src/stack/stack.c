/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "stack/stack.h"

uint64_t stack_kept_serial(void)
{
	static uint64_t next;

	/* serve's sampler and its server are threads of one process */
	return __atomic_add_fetch(&next, 1, __ATOMIC_RELAXED);
}
