/* SPDX-License-Identifier: MIT */
/*
 * Not an interpreter: a process whose symbols claim an interpreter version
 * pyrospy does not support, to test that it says so.  Built as
 * fake-python37 and fake-ruby25.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#ifdef FAKE_PY37
unsigned char _PyRuntime[4096];
const uint32_t Py_Version = 0x030700f0;
#else
const char ruby_version[] = "2.5.9";
#endif

int main(void)
{
	puts("ready");
	fflush(stdout);
	for (;;)
		pause();
}
