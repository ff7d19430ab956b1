/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_ELFSYM_H
#define PYROSPY_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

#include "perr.h"

/*
 * Symbols and sections of one ELF file, read with libelf.  The file is
 * normally opened through /proc/PID/root/<path> or /proc/PID/exe so that
 * a target in another mount namespace resolves to its own files.
 *
 * Addresses are link-time virtual addresses; add the load bias of the
 * mapping (target.c) to get the address in the running process.
 */
struct elfsym {
	int fd;
	void *elf;		/* Elf *, opaque here to keep libelf.h out */
	uint64_t file_size;
	uint64_t base_vaddr;	/* first PT_LOAD p_vaddr, aligned down */
	int has_symtab;		/* a .symtab survives (not stripped) */
	uint64_t tls_vaddr, tls_memsz, tls_align;	/* PT_TLS, if any */
};

enum elfsym_type {
	ELFSYM_OTHER,
	ELFSYM_OBJECT,
	ELFSYM_FUNC,
	ELFSYM_TLS,	/* value is an offset inside the module's TLS block */
};

struct elfsym_sym {
	uint64_t value;
	uint64_t size;
	enum elfsym_type type;
};

/*
 * Open and check an ELF file (64-bit, this machine's architecture, with
 * program headers).  PERR_IO if it cannot be opened, PERR_CORRUPT if it is
 * not a usable ELF file.  Release with elfsym_close().
 */
enum perr elfsym_open(struct elfsym *es, const char *path);
void elfsym_close(struct elfsym *es);

/*
 * Look a defined symbol up by name, in .dynsym first and then .symtab.
 * PERR_NOTFOUND if neither has it.
 */
enum perr elfsym_lookup(struct elfsym *es, const char *name, struct elfsym_sym *sym);

/* Address and size of a named section (".PyRuntime").  PERR_NOTFOUND if absent. */
enum perr elfsym_section(struct elfsym *es, const char *name, uint64_t *addr, uint64_t *size);

/*
 * Copy len bytes of the file image at link-time vaddr: what the loader
 * maps there before the program runs (constant data such as ruby_version
 * or Py_Version).  Bytes of .bss read as zero.  PERR_NOTFOUND if no
 * PT_LOAD covers the range, PERR_CORRUPT if the file is shorter than its
 * headers claim.
 */
enum perr elfsym_read(struct elfsym *es, uint64_t vaddr, void *buf, size_t len);

/* The DT_SONAME of a shared object, or NULL.  Valid until elfsym_close(). */
const char *elfsym_soname(struct elfsym *es);

#endif
