/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "proc/elfsym.h"
#include "fuzz.h"

/*
 * elfsym on a fuzzed ELF file: the input is written to a memfd and opened
 * by descriptor, as target.c opens what a target mapped, and every query
 * target.c and the readers make is asked of it.
 *
 * The caps are on what a file claims, and a hostile file claims tables
 * far larger than itself, held up by holes: the two bytes of e_ident
 * padding at EI_PAD (9 and 10, zero in real files) extend the memfd with
 * a hole of that many MiB, up to 1023 (over ELFSYM_MAX_FILE).  Whatever
 * opens stays within the caps; -malloc_limit_mb (scripts/fuzz) and
 * -timeout catch a cost that does not.
 */
static const char *const names[] = {
	"_PyRuntime", "Py_Version", "PyCode_Type", "ruby_version",
	"ruby_current_vm_ptr", "ruby_vm_at_exit", "ruby_global_symbols", "tls",
};

static const char *const sections[] = { ".PyRuntime", ".got", ".data", ".dynsym" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfsym es;
	char buf[64];
	uint64_t addr, len, hole = 0;
	int fd;

	fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	if (size > EI_PAD + 1)
		hole = ((uint64_t)data[EI_PAD] | (uint64_t)(data[EI_PAD + 1] & 3) << 8) << 20;
	if (hole && ftruncate(fd, (off_t)(size + hole)) < 0) {
		close(fd);
		return 0;
	}
	if (elfsym_open_fd(&es, fd) == PERR_OK) {
		if (es.file_size > ELFSYM_MAX_FILE || es.phnum > ELFSYM_MAX_PHNUM ||
		    es.shnum > ELFSYM_MAX_SHNUM || !es.phnum)
			abort();
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
		if (elfsym_soname(&es) && strlen(elfsym_soname(&es)) >= ELFSYM_MAX_SONAME)
			abort();
	}
	/* open or not, es owns fd now */
	elfsym_close(&es);
	return 0;
}
