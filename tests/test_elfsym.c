/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsym.h"

#define PY311 "/usr/bin/python3.11"
#define RUBY31 "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"

int elfsym_test_marker(void);
int elfsym_test_marker(void)
{
	return 42;
}

Test(elfsym, python_exe)
{
	struct elfsym es;
	struct elfsym_sym s;
	uint64_t addr, size;
	uint32_t hex;

	cr_assert_eq(elfsym_open(&es, PY311), PERR_OK);
	cr_assert_eq(elfsym_lookup(&es, "_PyRuntime", &s), PERR_OK);
	cr_assert_eq(s.type, ELFSYM_OBJECT);
	cr_assert_eq(elfsym_section(&es, ".PyRuntime", &addr, &size), PERR_OK);
	cr_assert_eq(addr, s.value, "_PyRuntime opens the .PyRuntime section");
	cr_assert_eq(elfsym_lookup(&es, "Py_Version", &s), PERR_OK);
	cr_assert_eq(elfsym_read(&es, s.value, &hex, sizeof(hex)), PERR_OK);
	cr_assert_eq(hex >> 16, 0x030b, "Py_Version says 3.11, got %#x", hex);
	cr_assert_eq(elfsym_lookup(&es, "no_such_symbol_here", &s), PERR_NOTFOUND);
	cr_assert_eq(elfsym_section(&es, ".nope", &addr, &size), PERR_NOTFOUND);
	elfsym_close(&es);
}

static char own_ruby_version[16];

static void ask_ruby_version(void)
{
	FILE *f = popen("ruby3.1 -e 'print RUBY_VERSION'", "r");

	cr_assert_not_null(f, "cannot run ruby3.1");
	cr_assert_not_null(fgets(own_ruby_version, sizeof(own_ruby_version), f));
	cr_assert_eq(pclose(f), 0, "ruby3.1 -e 'print RUBY_VERSION' failed");
}

Test(elfsym, ruby_library_and_tls, .init = ask_ruby_version)
{
	struct elfsym es;
	struct elfsym_sym s;
	char ver[16] = { 0 };

	cr_assert_eq(elfsym_open(&es, RUBY31), PERR_OK);
	cr_assert_not(es.has_symtab, "Debian strips libruby");
	cr_assert_str_eq(elfsym_soname(&es), "libruby-3.1.so.3.1");
	cr_assert_eq(elfsym_lookup(&es, "ruby_version", &s), PERR_OK);
	cr_assert_eq(elfsym_read(&es, s.value, ver, sizeof(ver) - 1), PERR_OK);
	/* The patch release moves with the distribution: ask the interpreter. */
	cr_assert_str_eq(ver, own_ruby_version, "libruby says %s, ruby3.1 says %s", ver,
			 own_ruby_version);
	cr_assert_eq(elfsym_lookup(&es, "ruby_current_ec", &s), PERR_OK);
	cr_assert_eq(s.type, ELFSYM_TLS);
	cr_assert_lt(s.value, es.tls_memsz, "a TLS symbol is an offset in the TLS block");
	cr_assert_eq(elfsym_lookup(&es, "ruby_current_vm_ptr", &s), PERR_OK);
	cr_assert_eq(s.type, ELFSYM_OBJECT);
	elfsym_close(&es);
}

Test(elfsym, symtab_of_unstripped_binary)
{
	struct elfsym es;
	struct elfsym_sym s;

	cr_assert_eq(elfsym_open(&es, "/proc/self/exe"), PERR_OK);
	cr_assert_eq(elfsym_lookup(&es, "elfsym_test_marker", &s), PERR_OK);
	cr_assert_eq(s.type, ELFSYM_FUNC);
	elfsym_close(&es);
}

Test(elfsym, not_elf)
{
	struct elfsym es;

	cr_assert_eq(elfsym_open(&es, "/etc/passwd"), PERR_CORRUPT);
	cr_assert_eq(elfsym_open(&es, "/nonexistent/file"), PERR_NOTFOUND);
	cr_assert_eq(elfsym_open(&es, "/proc"), PERR_CORRUPT);
}

/* Copy the first n bytes of src to a temp file. */
static char *truncated_copy(const char *src, size_t n, int scribble)
{
	static char path[64];
	char *buf = malloc(n ? n : 1);
	int in = open(src, O_RDONLY), out;
	ssize_t got;

	cr_assert(in >= 0);
	got = read(in, buf, n);
	cr_assert_eq(got, (ssize_t)n);
	close(in);
	if (scribble) {
		/* garble the section header table offset and count */
		srand((unsigned int)scribble);
		for (size_t i = 0x28; i < 0x40 && i < n; i++)
			buf[i] = (char)rand();
	}
	strcpy(path, "/tmp/pyrospy-elf-XXXXXX");
	out = mkstemp(path);
	cr_assert(out >= 0);
	cr_assert_eq(write(out, buf, n), (ssize_t)n);
	close(out);
	free(buf);
	return path;
}

/* Truncated or garbled ELF files give an error or a clean miss, never a crash. */
Test(elfsym, truncated_and_corrupt)
{
	struct stat st;
	size_t sizes[] = { 0, 4, 63, 64, 200, 4096, 65536, 1 << 20, 0, 0 };

	cr_assert_eq(stat(RUBY31, &st), 0);
	sizes[8] = (size_t)st.st_size / 2;
	sizes[9] = (size_t)st.st_size - 1;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (int scribble = 0; scribble < 4; scribble++) {
			char *path = truncated_copy(RUBY31, sizes[i], scribble);
			struct elfsym es;
			struct elfsym_sym s;
			uint64_t a, z;
			char buf[16];

			if (elfsym_open(&es, path) == PERR_OK) {
				if (elfsym_lookup(&es, "ruby_version", &s) == PERR_OK)
					(void)elfsym_read(&es, s.value, buf, sizeof(buf));
				(void)elfsym_section(&es, ".data", &a, &z);
				(void)elfsym_soname(&es);
				elfsym_close(&es);
			}
			unlink(path);
		}
	}
}
