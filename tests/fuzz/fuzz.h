/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_FUZZ_H
#define PYROSPY_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/*
 * The entry point every fuzz target defines.  libFuzzer calls it with
 * generated inputs; replay.c (built with any compiler, -DFUZZ_REPLAY)
 * calls it with each file of a corpus or regression directory, so the
 * inputs that once crashed run in every make check.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
