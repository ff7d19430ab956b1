/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <string.h>

#include "proc/kubepod.h"

static int is_hex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Is s[0..36) a uid grouped 8-4-4-4-12 by sep? */
static int uid_ok(const char *s, char sep)
{
	for (int i = 0; i < KUBEPOD_UID_LEN; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != sep : !is_hex((unsigned char)s[i]))
			return 0;
	}
	return 1;
}

/* The uid of one line (n bytes, no newline) into uid; 1 if it has one. */
static int line_uid(const char *s, size_t n, char uid[KUBEPOD_UID_LEN + 1])
{
	const char *kube = memmem(s, n, "kubepods", 8);

	if (!kube)
		return 0;
	for (const char *p = kube + 8; (p = memmem(p, n - (size_t)(p - s), "pod", 3)); p += 3) {
		const char *u = p + 3, *end = u + KUBEPOD_UID_LEN;
		size_t rest;

		/* "pod" begins a component: after '/' or the slice's '-' */
		if (p[-1] != '/' && p[-1] != '-')
			continue;
		if ((size_t)(end - s) > n)
			return 0;
		if (!uid_ok(u, '-') && !uid_ok(u, '_'))
			continue;
		rest = n - (size_t)(end - s);
		if (rest && *end != '/' && !(rest >= 6 && !memcmp(end, ".slice", 6) &&
					      (rest == 6 || end[6] == '/')))
			continue;
		memcpy(uid, u, KUBEPOD_UID_LEN);
		for (int i = 8; i <= 23; i += 5)
			uid[i] = '-';
		uid[KUBEPOD_UID_LEN] = '\0';
		return 1;
	}
	return 0;
}

int kubepod_uid(const char *cgroup, size_t n, char out[KUBEPOD_UID_LEN + 1])
{
	char uid[KUBEPOD_UID_LEN + 1];
	int found = 0;

	for (size_t i = 0; i < n;) {
		const char *nl = memchr(cgroup + i, '\n', n - i);
		size_t len = nl ? (size_t)(nl - (cgroup + i)) : n - i;

		if (line_uid(cgroup + i, len, uid)) {
			if (found && strcmp(uid, out))
				return 0;	/* two pods: neither is sure */
			memcpy(out, uid, sizeof(uid));
			found = 1;
		}
		i += len + 1;
	}
	return found;
}
