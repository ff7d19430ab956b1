/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc/procmaps.h"

static const char sample[] =
	"55d0c4a00000-55d0c4a2e000 r--p 00000000 fe:00 1192656                    /usr/bin/python3.11\n"
	"55d0c4a2e000-55d0c4d3a000 r-xp 0002e000 fe:00 1192656                    /usr/bin/python3.11\n"
	"55d0c5000000-55d0c5100000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
	"7f0000100000-7f0000200000 r-xp 00000000 08:01 42                         /tmp/lib with space.so (deleted)\n"
	"7f0000200000-7f0000201000 ---p 00000000 00:00 0\n"
	"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n";

Test(procmaps, parses_fields)
{
	struct procmaps m;

	cr_assert_eq(procmaps_parse(&m, sample, strlen(sample)), PERR_OK);
	cr_assert_eq(m.nr, 7);
	cr_assert_eq(m.map[0].start, 0x55d0c4a00000ull);
	cr_assert_eq(m.map[0].end, 0x55d0c4a2e000ull);
	cr_assert_eq(m.map[1].offset, 0x2e000);
	cr_assert_eq(m.map[1].perms, PROCMAP_R | PROCMAP_X | PROCMAP_P);
	cr_assert_eq(m.map[0].dev_major, 0xfe);
	cr_assert_eq(m.map[0].inode, 1192656);
	cr_assert_str_eq(m.map[0].path, "/usr/bin/python3.11");
	cr_assert_str_eq(m.map[2].path, "[heap]");
	cr_assert_null(m.map[3].path, "anonymous map with trailing space has no path");
	cr_assert_str_eq(m.map[4].path, "/tmp/lib with space.so");
	cr_assert(m.map[4].deleted);
	cr_assert_null(m.map[5].path);
	procmaps_release(&m);
}

Test(procmaps, find_and_readable)
{
	struct procmaps m;

	cr_assert_eq(procmaps_parse(&m, sample, strlen(sample)), PERR_OK);
	cr_assert_eq(procmaps_find(&m, 0x55d0c4a2e000ull), &m.map[1]);
	cr_assert_null(procmaps_find(&m, 0x55d0c4f00000ull));
	/* crossing two contiguous readable maps */
	cr_assert(procmaps_readable(&m, 0x55d0c4a2dff0ull, 0x20));
	/* running into a gap */
	cr_assert_not(procmaps_readable(&m, 0x55d0c4d39ff0ull, 0x20));
	/* a ---p guard page */
	cr_assert_not(procmaps_readable(&m, 0x7f0000200000ull, 8));
	/* wrap-around */
	cr_assert_not(procmaps_readable(&m, UINT64_MAX - 4, 8));
	cr_assert_eq(procmaps_object(&m, "/usr/bin/python3.11"), &m.map[0]);
	cr_assert_null(procmaps_object(&m, "/nope"));
	procmaps_release(&m);
}

Test(procmaps, hostile_lines)
{
	static const char bad[] =
		"zzzz-1000 r--p 0 0:0 0 x\n"			/* not hex */
		"2000-1000 r--p 00000000 00:00 0\n"		/* end < start */
		"11111111111111111-2 r--p 0 0:0 0\n"		/* 17 digits */
		"1000-2000 r--p 00000000 00:00 99999999999999999999999\n" /* inode overflow */
		"1000-2000 r\n"					/* cut short */
		"\n\n"
		"3000-4000 r--p 00000000 00:00 0 /ok\n";
	struct procmaps m;

	cr_assert_eq(procmaps_parse(&m, bad, sizeof(bad) - 1), PERR_OK);
	cr_assert_eq(m.nr, 1, "only the good line survives, got %zu", m.nr);
	cr_assert_str_eq(m.map[0].path, "/ok");
	procmaps_release(&m);

	cr_assert_eq(procmaps_parse(&m, "garbage\n", 8), PERR_CORRUPT);
	cr_assert_eq(procmaps_parse(&m, "", 0), PERR_OK);
	cr_assert_eq(m.nr, 0);
	procmaps_release(&m);
}

Test(procmaps, embedded_nul_and_unsorted)
{
	static const char nul[] = "1000-2000 r--p 00000000 00:00 0 /a\0b\n";
	static const char unsorted[] =
		"3000-4000 r--p 00000000 00:00 0\n"
		"1000-2000 r--p 00000000 00:00 0\n";
	struct procmaps m;

	cr_assert_eq(procmaps_parse(&m, nul, sizeof(nul) - 1), PERR_CORRUPT);
	cr_assert_eq(procmaps_parse(&m, unsorted, sizeof(unsorted) - 1), PERR_CORRUPT);
	cr_assert_null(m.map);
}

Test(procmaps, long_path_is_bounded)
{
	size_t n = 20000;
	char *buf = malloc(n + 100);
	struct procmaps m;
	int k = sprintf(buf, "1000-2000 r--p 00000000 00:00 0 /");

	memset(buf + k, 'a', n);
	buf[k + n] = '\n';
	cr_assert_eq(procmaps_parse(&m, buf, (size_t)k + n + 1), PERR_OK);
	cr_assert_eq(m.nr, 1);
	cr_assert_leq(strlen(m.map[0].path), PROCMAPS_MAX_LINE);
	procmaps_release(&m);
	free(buf);
}

Test(procmaps, very_many_maps)
{
	size_t n = 200000, len = 0;
	char *buf = malloc(n * 64);
	struct procmaps m;

	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(buf + len, "%zx-%zx rw-p 00000000 00:00 0\n",
				       0x10000 + i * 0x2000, 0x11000 + i * 0x2000);
	cr_assert_eq(procmaps_parse(&m, buf, len), PERR_OK);
	cr_assert_eq(m.nr, n);
	cr_assert_eq(procmaps_find(&m, 0x10000 + 12345 * 0x2000 + 5), &m.map[12345]);
	cr_assert_null(procmaps_find(&m, 0x11000 + 12345 * 0x2000 + 5));
	procmaps_release(&m);
	free(buf);
}

Test(procmaps, reads_self)
{
	struct procmaps m;
	static int here;

	cr_assert_eq(procmaps_read(&m, getpid()), PERR_OK);
	cr_assert_gt(m.nr, 5);
	cr_assert(procmaps_readable(&m, (uint64_t)(uintptr_t)&here, sizeof(here)));
	procmaps_release(&m);
	cr_assert_eq(procmaps_read(&m, 0x7ffffff0), PERR_NOPROC);
}

/* Only absolute paths of inodes, shorter than PATH_MAX, are offered for opening. */
Test(procmaps, file_paths_that_may_be_opened)
{
	static char text[8192];
	struct procmaps m;
	int n;

	n = snprintf(text, sizeof(text),
		     "1000-2000 r--p 00000000 fe:00 131 /tmp/x/libpython3.11.so.1.0 (deleted)\n"
		     "2000-3000 r--p 00000000 00:00 0 [heap]\n"
		     "3000-4000 r--p 00000000 fe:00 7 relative/libruby.so\n"
		     "4000-5000 r--p 00000000 fe:00 0 /no/inode\n"
		     "5000-6000 r--p 00000000 fe:00 9 /%04095d\n", 0);
	cr_assert_eq(procmaps_parse(&m, text, (size_t)n), PERR_OK);
	cr_assert_eq(m.nr, 5);
	cr_assert_str_eq(procmaps_file(&m.map[0]), "/tmp/x/libpython3.11.so.1.0");
	cr_assert_null(procmaps_file(&m.map[1]));
	cr_assert_null(procmaps_file(&m.map[2]));
	cr_assert_null(procmaps_file(&m.map[3]));
	cr_assert_eq(strlen(m.map[4].path), PROCMAPS_MAX_PATH, "a path of 4096 bytes is kept");
	cr_assert_null(procmaps_file(&m.map[4]), "but not offered: no file has such a name");
	procmaps_release(&m);
}
