/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_KUBEPOD_H
#define PYROSPY_KUBEPOD_H

#include <stddef.h>

#define KUBEPOD_UID_LEN 36	/* 8-4-4-4-12 */

/*
 * The Kubernetes pod uid of a process from its /proc/PID/cgroup text
 * (n bytes, untrusted), as the kubelet names a pod's cgroup:
 *
 *   systemd driver   .../kubepods-burstable-pod<8_4_4_4_12>.slice/...
 *                    .../kubepods-pod<8_4_4_4_12>.slice/...
 *   cgroupfs driver  /kubepods/besteffort/pod<8-4-4-4-12>/...
 *                    /kubepods/pod<8-4-4-4-12>/...
 *
 * Only a component "pod" + 32 lowercase hex digits grouped 8-4-4-4-12 by
 * one separator throughout ('-' or '_'), after a "kubepods" component on
 * the same line and ending the component ('/', ".slice", the line's end).
 * Every line that has one must name the same pod.  1 with the uid in out
 * in its 8-4-4-4-12 form with '-', else 0.
 */
int kubepod_uid(const char *cgroup, size_t n, char out[KUBEPOD_UID_LEN + 1]);

#endif
