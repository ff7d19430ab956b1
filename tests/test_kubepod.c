/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <string.h>

#include "proc/kubepod.h"

/* The pod uid of /proc/PID/cgroup (src/proc/kubepod.c): the kubelet's names, and what is not one. */

static int uid_of(const char *cgroup, char out[KUBEPOD_UID_LEN + 1])
{
	memset(out, 0, KUBEPOD_UID_LEN + 1);
	return kubepod_uid(cgroup, strlen(cgroup), out);
}

Test(kubepod, systemd_driver)
{
	char uid[KUBEPOD_UID_LEN + 1];

	cr_assert(uid_of("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
			 "0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice/cri-containerd-"
			 "6b5f2d0c0e4a9b1d7c3e5f8a2b4d6c8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c.scope\n",
			 uid));
	cr_assert_str_eq(uid, "0a1b2c3d-4e5f-6789-abcd-ef0123456789");
	/* guaranteed pods have no QoS slice */
	cr_assert(uid_of("0::/kubepods.slice/kubepods-pod11111111_2222_3333_4444_555555555555.slice",
			 uid));
	cr_assert_str_eq(uid, "11111111-2222-3333-4444-555555555555");
}

Test(kubepod, cgroupfs_driver_and_v1)
{
	char uid[KUBEPOD_UID_LEN + 1];

	cr_assert(uid_of("12:memory:/kubepods/besteffort/podaaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee/"
			 "0123\n11:cpu:/kubepods/besteffort/podaaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee/"
			 "0123\n0::/\n", uid));
	cr_assert_str_eq(uid, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
	cr_assert(uid_of("0::/kubepods/podaaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", uid));
	cr_assert_str_eq(uid, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
}

Test(kubepod, not_a_pod)
{
	char uid[KUBEPOD_UID_LEN + 1];

	/* no kubepods component */
	cr_assert(!uid_of("0::/system.slice/podaaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.slice", uid));
	/* kubepods after the pod, on another line */
	cr_assert(!uid_of("0::/podaaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee/x\n1:n:/kubepods", uid));
	/* upper case, mixed separators, short, long, a bad end, "pod" inside a word */
	cr_assert(!uid_of("0::/kubepods/podAAAAAAAA-bbbb-cccc-dddd-eeeeeeeeeeee", uid));
	cr_assert(!uid_of("0::/kubepods/podaaaaaaaa-bbbb_cccc-dddd-eeeeeeeeeeee", uid));
	cr_assert(!uid_of("0::/kubepods/podaaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeee", uid));
	cr_assert(!uid_of("0::/kubepods/podaaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeeee", uid));
	cr_assert(!uid_of("0::/kubepods/podaaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.scope", uid));
	cr_assert(!uid_of("0::/kubepods/xpodaaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", uid));
	cr_assert(!uid_of("0::/kubepods/podaaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee\"}", uid));
	/* cut by the read's bound in the middle */
	cr_assert(!uid_of("0::/kubepods/podaaaaaaaa-bbbb-cc", uid));
	cr_assert(!uid_of("", uid));
	/* two pods: neither */
	cr_assert(!uid_of("1:a:/kubepods/podaaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee\n"
			  "0::/kubepods/podbbbbbbbb-bbbb-cccc-dddd-eeeeeeeeeeee\n", uid));
}

/* A NUL or no newline at the end changes nothing; bytes past n are not read. */
Test(kubepod, bounded_by_n)
{
	static const char s[] = "0::/kubepods/podaaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee/x";
	char uid[KUBEPOD_UID_LEN + 1];

	cr_assert(!kubepod_uid(s, strlen("0::/kubepods/podaaaaaaaa-bbbb-cccc-dddd-eeee"), uid));
	cr_assert(kubepod_uid(s, strlen(s), uid));
}
