/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elfsym.h"
#include "fuzz.h"

/*
 * elfsym on a fuzzed ELF file: the input is written to a memfd, opened
 * through /proc/self/fd as target.c opens an interpreter through
 * /proc/PID/root, and every query target.c and the readers make is asked
 * of it.
 */
static const char *const names[] = {
	"_PyRuntime", "Py_Version", "PyCode_Type", "ruby_version",
	"ruby_current_vm_ptr", "ruby_vm_at_exit", "ruby_global_symbols", "tls",
};

static const char *const sections[] = { ".PyRuntime", ".got", ".data", ".dynsym" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfsym es;
	char path[64], buf[64];
	uint64_t addr, len;
	int fd;

	fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (elfsym_open(&es, path) == PERR_OK) {
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			struct elfsym_sym sym;

			if (elfsym_lookup(&es, names[i], &sym))
				continue;
			elfsym_read(&es, sym.value, buf, sizeof(buf));
			elfsym_read(&es, sym.value, buf, 1);
		}
		for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
			if (!elfsym_section(&es, sections[i], &addr, &len))
				elfsym_read(&es, addr, buf, len < sizeof(buf) ? (size_t)len : sizeof(buf));
		elfsym_read(&es, es.base_vaddr, buf, sizeof(buf));
		elfsym_read(&es, es.tls_vaddr, buf, sizeof(buf));
		elfsym_read(&es, UINT64_MAX - 8, buf, sizeof(buf));
		elfsym_soname(&es);
		elfsym_close(&es);
	}
	close(fd);
	return 0;
}
