/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_ELFSYM_H
#define PYROSPY_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

#include "util/perr.h"

/*
 * Symbols and sections of one ELF file of a target (its executable, its
 * libpython or libruby), which may have been crafted against us.  Every
 * count and size the file claims is checked against the caps below, and
 * against the file's size, before anything is read; what is read is
 * read with pread() into bounded buffers of our own, so that a file
 * truncated or rewritten under us gives an error, not a SIGBUS.
 *
 * Addresses are link-time virtual addresses; add the load bias of the
 * mapping (target.c) to get the address in the running process.
 */

/* A symbol table and its strings, read on first use. */
struct elfsym_table {
	void *sym;		/* Elf64_Sym[nsym] */
	char *str;		/* NUL-terminated at str[nstr - 1] */
	size_t nsym, nstr;
	int bad;		/* unreadable: not tried again */
};

struct elfsym {
	int fd;
	uint64_t file_size;
	uint64_t base_vaddr;	/* first PT_LOAD p_vaddr, aligned down */
	int has_symtab;		/* a .symtab survives (not stripped) */
	uint64_t tls_vaddr, tls_memsz, tls_align;	/* PT_TLS, if any */
	/* read at open, within the caps: */
	void *phdr, *shdr;	/* Elf64_Phdr[phnum], Elf64_Shdr[shnum] */
	size_t phnum, shnum;
	size_t dynsym, symtab, dynamic, shstrndx;	/* section indexes, 0: none */
	struct elfsym_table tab[2];	/* .dynsym, .symtab */
	char *shstr;		/* section names, on first use */
	size_t nshstr;
	char *soname;
	int soname_done;
};

/*
 * Caps on what one ELF file may claim, checked before anything it claims
 * is read: past them elfsym_open() gives up with PERR_TOOBIG.  Measured
 * on every python*, libpython*, ruby* and libruby* of the host (Debian 12)
 * and of the test chroots (Debian 11, 13 and sid: Python 3.9 to 3.15,
 * Ruby 2.7 to 3.4), and on the unstripped python3.11d and the detached
 * symbols of python3.11 (python3.11-dbg):
 *
 *                      distribution builds    unstripped     cap
 *   file size          9.0 MB (python3.15)    24.3 MB        512 MiB
 *   program headers    15                     13             256
 *   section headers    35                     42             1024
 *   symbols, a table   2682 (.dynsym)         41733          262144 (6 MiB)
 *   strings, a table   50.9 KB (.dynstr)      621 KB         8 MiB
 *   section names      (.shstrtab) < 400 B                   64 KiB
 *   .dynamic entries   < 40                                  4096
 *
 * A crafted file within every cap costs at most one symbol table and its
 * strings in memory at a time (14 MiB); real interpreters, a few hundred
 * KB.
 */
#define ELFSYM_MAX_FILE		(512ull << 20)
#define ELFSYM_MAX_PHNUM	256
#define ELFSYM_MAX_SHNUM	1024
#define ELFSYM_MAX_SYMS		(1ull << 18)
#define ELFSYM_MAX_STRTAB	(8ull << 20)
#define ELFSYM_MAX_SHSTRTAB	(64u << 10)
#define ELFSYM_MAX_DYNAMIC	4096
#define ELFSYM_MAX_SONAME	256
#define ELFSYM_CACHE		(4u << 20)

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
 * program headers).  PERR_NOTFOUND if it does not exist, PERR_IO if it
 * cannot be opened, PERR_CORRUPT if it is not a usable ELF file or a table
 * lies past its end, PERR_TOOBIG past a cap.  Release with elfsym_close(),
 * also after an error.
 */
enum perr elfsym_open(struct elfsym *es, const char *path);

/*
 * The same on an open file descriptor, which becomes es's (closed by
 * elfsym_close(), and on error): how target.c opens what a target mapped.
 */
enum perr elfsym_open_fd(struct elfsym *es, int fd);
void elfsym_close(struct elfsym *es);

/*
 * Look a defined symbol up by name, in .dynsym first and then .symtab.
 * PERR_NOTFOUND if neither has it, or its table cannot be read.  A table
 * and its strings stay in memory up to ELFSYM_CACHE bytes; bigger ones
 * are read again at each lookup.
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
