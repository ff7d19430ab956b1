/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#include "helpers.h"
#include "proc/target.h"

/*
 * Every interpreter of the matrix, started for real (most in a chroot, so
 * its files are reached through /proc/PID/root), is identified by host
 * pid with the right language and version, and its key symbols resolve.
 */
static void check(const struct interp *in, const char *script)
{
	const char *args[] = { test_target_for(in, script), NULL };
	char ready[128], want[64];
	struct target t;
	uint64_t addr, size;
	int tls;
	pid_t pid = test_start(in, args, ready, sizeof(ready));
	enum perr err = target_open(&t, pid);

	cr_assert_eq(err, PERR_OK, "%s: %s", in->bin, perr_str(err));
	cr_assert_eq(t.lang, in->lang);
	cr_assert_eq(t.major, in->major);
	cr_assert_eq(t.minor, in->minor);
	/* "ready 3.11.2": the interpreter's own word for its version */
	snprintf(want, sizeof(want), "ready %s", t.version);
	if (strchr(strchr(t.version, '.') + 1, '.'))
		cr_assert_str_eq(ready, want, "%s", in->bin);
	else	/* 3.9 is known by name only: "3.9" */
		cr_assert(!strncmp(ready, want, strlen(want)) && ready[strlen(want)] == '.',
			  "%s: '%s' vs '%s'", in->bin, ready, want);
	if (in->lang == TARGET_PYTHON) {
		cr_assert_eq(target_symbol(&t, "_PyRuntime", &addr, &tls), PERR_OK);
		cr_assert(procmaps_readable(&t.maps, addr, 64), "_PyRuntime is mapped");
		cr_assert_eq(target_symbol(&t, "PyCode_Type", &addr, &tls), PERR_OK);
		if (in->minor >= 10)
			cr_assert_eq(target_section(&t, ".PyRuntime", &addr, &size), PERR_OK);
	} else {
		cr_assert_eq(target_symbol(&t, "ruby_version", &addr, &tls), PERR_OK);
		cr_assert(procmaps_readable(&t.maps, addr, 4));
		if (in->minor <= 1 && in->major == 3) {
			cr_assert_eq(target_symbol(&t, "ruby_current_ec", &addr, &tls), PERR_OK);
			cr_assert(tls, "ruby_current_ec is a TLS symbol in 3.1");
		}
		if (in->major == 2 || in->minor <= 1)
			cr_assert_eq(target_symbol(&t, "ruby_current_vm_ptr", &addr, &tls), PERR_OK);
	}
	/* The process layer reads the (chrooted) target by its host pid. */
	{
		uint64_t word;
		const struct procmap *m = procmaps_object(&t.maps, t.interp->path);

		cr_assert_not_null(m);
		cr_assert_eq(procmem_read(&t.mem, m->start, &word, sizeof(word)), PERR_OK);
		cr_assert_eq(memcmp(&word, "\177ELF", 4), 0, "the ELF header, read remotely");
	}
	target_close(&t);
	test_stop(pid);
}

ParameterizedTestParameters(target, python)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_npythons), test_npythons);
}

ParameterizedTest(size_t *i, target, python, .timeout = 60)
{
	check(&test_pythons[*i], "version.py");
}

ParameterizedTestParameters(target, ruby)
{
	return cr_make_param_array(size_t, (void *)test_indexes(test_nrubies), test_nrubies);
}

ParameterizedTest(size_t *i, target, ruby, .timeout = 60)
{
	check(&test_rubies[*i], "version.rb");
}
