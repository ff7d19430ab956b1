/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc/elfsym.h"
#include "util/xalloc.h"

/*
 * The file is a target's, and the target may have written it: nothing it
 * says is believed before it is checked.  elfsym_open_fd() reads the ELF
 * header, then the counts (e_shnum, or section 0 for more than 65279
 * sections; e_phnum, or section 0 for PN_XNUM), checks them against the
 * caps and the tables against the file's size, and only then reads the
 * program and section headers (at most 14 KB and 64 KB).  Each section
 * it will use is checked there too, so that a lookup later has nothing
 * left to doubt but the bytes of the tables themselves.
 */

static const Elf64_Phdr *phdr(const struct elfsym *es, size_t i)
{
	return (const Elf64_Phdr *)es->phdr + i;
}

static const Elf64_Shdr *shdr(const struct elfsym *es, size_t i)
{
	return (const Elf64_Shdr *)es->shdr + i;
}

/* [off, off+len) lies in the file. */
static int in_file(const struct elfsym *es, uint64_t off, uint64_t len)
{
	return off <= es->file_size && len <= es->file_size - off;
}

/*
 * Exactly len bytes at off.  A file shorter than at open (truncated under
 * us) is PERR_CORRUPT.
 */
static enum perr read_at(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return PERR_IO;
		if (n == 0)
			return PERR_CORRUPT;
		got += (size_t)n;
	}
	return PERR_OK;
}

/* A section's bytes into a new buffer; its size was capped at open. */
static void *read_section(const struct elfsym *es, size_t i)
{
	const Elf64_Shdr *sh = shdr(es, i);
	void *buf = xmalloc(sh->sh_size ? (size_t)sh->sh_size : 1);

	if (read_at(es->fd, buf, (size_t)sh->sh_size, sh->sh_offset)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* A string table's last byte is NUL: no name runs past its end. */
static int strtab_ends(const struct elfsym *es, size_t i)
{
	const Elf64_Shdr *sh = shdr(es, i);
	char c;

	return sh->sh_size && !read_at(es->fd, &c, 1, sh->sh_offset + sh->sh_size - 1) && !c;
}

static enum perr check_phdrs(struct elfsym *es)
{
	int have_load = 0;

	for (size_t i = 0; i < es->phnum; i++) {
		const Elf64_Phdr *ph = phdr(es, i);

		if (ph->p_type == PT_LOAD) {
			if (!in_file(es, ph->p_offset, ph->p_filesz))
				return PERR_CORRUPT;
			if (!have_load) {
				uint64_t align = ph->p_align > 1 ? ph->p_align : 1;

				if (align & (align - 1))
					return PERR_CORRUPT;
				es->base_vaddr = ph->p_vaddr & ~(align - 1);
				have_load = 1;
			}
		} else if (ph->p_type == PT_TLS) {
			es->tls_vaddr = ph->p_vaddr;
			es->tls_memsz = ph->p_memsz;
			es->tls_align = ph->p_align;
		}
	}
	return have_load ? PERR_OK : PERR_CORRUPT;
}

/* A string table linked from a table of section i, within max bytes. */
static enum perr check_link(const struct elfsym *es, size_t i, uint64_t max)
{
	const Elf64_Shdr *sh = shdr(es, i);

	if (sh->sh_link == 0 || sh->sh_link >= es->shnum ||
	    shdr(es, sh->sh_link)->sh_type != SHT_STRTAB)
		return PERR_CORRUPT;
	return shdr(es, sh->sh_link)->sh_size > max ? PERR_TOOBIG : PERR_OK;
}

/*
 * Every section with bytes in the file lies in it; the first .dynsym,
 * .symtab and .dynamic (there is one of each in a real file; others are
 * never read) have entries of their type's size, within the caps, and a
 * string table within its cap.
 */
static enum perr check_shdrs(struct elfsym *es)
{
	enum perr err;

	for (size_t i = 1; i < es->shnum; i++) {
		const Elf64_Shdr *sh = shdr(es, i);
		size_t *slot = NULL;
		uint64_t entsize = 0, max = 0;

		if (sh->sh_type != SHT_NOBITS && !in_file(es, sh->sh_offset, sh->sh_size))
			return PERR_CORRUPT;
		switch (sh->sh_type) {
		case SHT_DYNSYM:
			slot = &es->dynsym;
			entsize = sizeof(Elf64_Sym);
			max = ELFSYM_MAX_SYMS;
			break;
		case SHT_SYMTAB:
			slot = &es->symtab;
			entsize = sizeof(Elf64_Sym);
			max = ELFSYM_MAX_SYMS;
			es->has_symtab = 1;
			break;
		case SHT_DYNAMIC:
			slot = &es->dynamic;
			entsize = sizeof(Elf64_Dyn);
			max = ELFSYM_MAX_DYNAMIC;
			break;
		default:
			continue;
		}
		if (*slot)
			continue;
		if (sh->sh_entsize != entsize || sh->sh_size % entsize)
			return PERR_CORRUPT;
		if (sh->sh_size / entsize > max)
			return PERR_TOOBIG;
		if ((err = check_link(es, i, ELFSYM_MAX_STRTAB)))
			return err;
		*slot = i;
	}
	if (es->shstrndx) {
		const Elf64_Shdr *sh = shdr(es, es->shstrndx);

		if (sh->sh_type != SHT_STRTAB)
			es->shstrndx = 0;
		else if (sh->sh_size > ELFSYM_MAX_SHSTRTAB)
			return PERR_TOOBIG;
	}
	return PERR_OK;
}

enum perr elfsym_open_fd(struct elfsym *es, int fd)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh0;
	struct stat st;
	uint64_t shnum, phnum;
	enum perr err = PERR_CORRUPT;

	memset(es, 0, sizeof(*es));
	es->fd = fd;
	if (fstat(fd, &st) < 0) {
		err = PERR_IO;
		goto fail;
	}
	if (!S_ISREG(st.st_mode))
		goto fail;
	if ((uint64_t)st.st_size > ELFSYM_MAX_FILE) {
		err = PERR_TOOBIG;
		goto fail;
	}
	es->file_size = (uint64_t)st.st_size;
	if (!in_file(es, 0, sizeof(eh)) || (err = read_at(fd, &eh, sizeof(eh), 0)))
		goto fail;
	err = PERR_CORRUPT;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64)
		goto fail;

	/* the counts that do not fit the ELF header are in section header 0 */
	memset(&sh0, 0, sizeof(sh0));
	shnum = 0;
	if (eh.e_shoff) {
		if (eh.e_shentsize != sizeof(Elf64_Shdr) || !in_file(es, eh.e_shoff, sizeof(sh0)) ||
		    (err = read_at(fd, &sh0, sizeof(sh0), eh.e_shoff)))
			goto fail;
		shnum = eh.e_shnum ? eh.e_shnum : sh0.sh_size;
	}
	phnum = eh.e_phnum == PN_XNUM ? sh0.sh_info : eh.e_phnum;
	if (shnum > ELFSYM_MAX_SHNUM || phnum > ELFSYM_MAX_PHNUM) {
		err = PERR_TOOBIG;
		goto fail;
	}
	err = PERR_CORRUPT;
	if (!phnum || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    !in_file(es, eh.e_phoff, phnum * sizeof(Elf64_Phdr)) ||
	    !in_file(es, eh.e_shoff, shnum * sizeof(Elf64_Shdr)))
		goto fail;

	es->phnum = (size_t)phnum;
	es->phdr = xmalloc(es->phnum * sizeof(Elf64_Phdr));
	if ((err = read_at(fd, es->phdr, es->phnum * sizeof(Elf64_Phdr), eh.e_phoff)))
		goto fail;
	es->shnum = (size_t)shnum;
	if (shnum) {
		es->shdr = xmalloc(es->shnum * sizeof(Elf64_Shdr));
		if ((err = read_at(fd, es->shdr, es->shnum * sizeof(Elf64_Shdr), eh.e_shoff)))
			goto fail;
	}
	es->shstrndx = eh.e_shstrndx == SHN_XINDEX ? sh0.sh_link : eh.e_shstrndx;
	if (es->shstrndx >= es->shnum)
		es->shstrndx = 0;
	if ((err = check_phdrs(es)) || (err = check_shdrs(es)))
		goto fail;
	return PERR_OK;
fail:
	elfsym_close(es);
	return err;
}

enum perr elfsym_open(struct elfsym *es, const char *path)
{
	int fd;

	memset(es, 0, sizeof(*es));
	es->fd = -1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT ? PERR_NOTFOUND : perr_from_errno(errno);
	return elfsym_open_fd(es, fd);
}

static void table_release(struct elfsym_table *t)
{
	FREE_AND_NULL(t->sym);
	FREE_AND_NULL(t->str);
	t->nsym = t->nstr = 0;
}

void elfsym_close(struct elfsym *es)
{
	for (size_t i = 0; i < ARRAY_SIZE(es->tab); i++)
		table_release(&es->tab[i]);
	FREE_AND_NULL(es->phdr);
	FREE_AND_NULL(es->shdr);
	FREE_AND_NULL(es->shstr);
	FREE_AND_NULL(es->soname);
	if (es->fd >= 0)
		close(es->fd);
	es->fd = -1;
	es->phnum = es->shnum = 0;
	es->dynsym = es->symtab = es->dynamic = es->shstrndx = 0;
}

/*
 * Read symbol table section i and its strings into t.  The strings are
 * checked to end in NUL first (one byte), so that a table whose names
 * would run on to its end is refused before anything is read.
 */
static int table_load(struct elfsym *es, size_t i, struct elfsym_table *t)
{
	const Elf64_Shdr *sh = shdr(es, i);

	if (!strtab_ends(es, sh->sh_link))
		return -1;
	t->sym = read_section(es, i);
	t->str = read_section(es, sh->sh_link);
	if (!t->sym || !t->str) {
		table_release(t);
		return -1;
	}
	t->nsym = (size_t)(sh->sh_size / sizeof(Elf64_Sym));
	t->nstr = (size_t)shdr(es, sh->sh_link)->sh_size;
	/* rewritten since the check? */
	if (t->str[t->nstr - 1]) {
		table_release(t);
		return -1;
	}
	return 0;
}

static enum elfsym_type sym_type(unsigned char info)
{
	switch (ELF64_ST_TYPE(info)) {
	case STT_OBJECT:
		return ELFSYM_OBJECT;
	case STT_FUNC:
	case STT_GNU_IFUNC:
		return ELFSYM_FUNC;
	case STT_TLS:
		return ELFSYM_TLS;
	default:
		return ELFSYM_OTHER;
	}
}

static enum perr lookup_in(struct elfsym *es, size_t which, size_t i, const char *name,
			   struct elfsym_sym *out)
{
	struct elfsym_table *t = &es->tab[which];
	enum perr err = PERR_NOTFOUND;
	const Elf64_Sym *sym;

	if (!i || t->bad)
		return PERR_NOTFOUND;
	if (!t->sym && table_load(es, i, t)) {
		t->bad = 1;
		return PERR_NOTFOUND;
	}
	sym = t->sym;
	for (size_t k = 0; k < t->nsym; k++) {
		if (sym[k].st_shndx == SHN_UNDEF || sym[k].st_name >= t->nstr ||
		    strcmp(t->str + sym[k].st_name, name))
			continue;
		out->value = sym[k].st_value;
		out->size = sym[k].st_size;
		out->type = sym_type(sym[k].st_info);
		err = PERR_OK;
		break;
	}
	if (t->nsym * sizeof(Elf64_Sym) + t->nstr > ELFSYM_CACHE)
		table_release(t);
	return err;
}

enum perr elfsym_lookup(struct elfsym *es, const char *name, struct elfsym_sym *sym)
{
	if (!es->shdr)
		return PERR_NOTFOUND;
	if (!lookup_in(es, 0, es->dynsym, name, sym))
		return PERR_OK;
	return lookup_in(es, 1, es->symtab, name, sym);
}

enum perr elfsym_section(struct elfsym *es, const char *name, uint64_t *addr, uint64_t *size)
{
	if (!es->shstrndx)
		return PERR_NOTFOUND;
	if (!es->shstr) {
		if (!strtab_ends(es, es->shstrndx) || !(es->shstr = read_section(es, es->shstrndx)))
			return PERR_NOTFOUND;
		es->nshstr = (size_t)shdr(es, es->shstrndx)->sh_size;
		if (es->shstr[es->nshstr - 1]) {
			FREE_AND_NULL(es->shstr);
			return PERR_NOTFOUND;
		}
	}
	for (size_t i = 1; i < es->shnum; i++) {
		const Elf64_Shdr *sh = shdr(es, i);

		if (sh->sh_name < es->nshstr && !strcmp(es->shstr + sh->sh_name, name)) {
			*addr = sh->sh_addr;
			*size = sh->sh_size;
			return PERR_OK;
		}
	}
	return PERR_NOTFOUND;
}

enum perr elfsym_read(struct elfsym *es, uint64_t vaddr, void *buf, size_t len)
{
	for (size_t i = 0; i < es->phnum; i++) {
		const Elf64_Phdr *ph = phdr(es, i);
		uint64_t off, infile;

		if (ph->p_type != PT_LOAD)
			continue;
		if (vaddr < ph->p_vaddr || vaddr - ph->p_vaddr >= ph->p_memsz ||
		    len > ph->p_memsz - (vaddr - ph->p_vaddr))
			continue;
		off = vaddr - ph->p_vaddr;
		/* the part backed by the file; the rest is .bss */
		infile = off < ph->p_filesz ? ph->p_filesz - off : 0;
		if (infile > len)
			infile = len;
		memset(buf, 0, len);
		if (!infile)
			return PERR_OK;
		/* in the file: checked at open */
		return read_at(es->fd, buf, (size_t)infile, ph->p_offset + off) ? PERR_CORRUPT :
										  PERR_OK;
	}
	return PERR_NOTFOUND;
}

/* DT_SONAME's string: read alone, not its whole table. */
static char *read_soname(struct elfsym *es)
{
	const Elf64_Shdr *sh = shdr(es, es->dynamic), *str = shdr(es, sh->sh_link);
	Elf64_Dyn *dyn = read_section(es, es->dynamic);
	size_t n = (size_t)(sh->sh_size / sizeof(Elf64_Dyn));
	char buf[ELFSYM_MAX_SONAME], *name = NULL;

	if (!dyn)
		return NULL;
	for (size_t i = 0; i < n && dyn[i].d_tag != DT_NULL; i++) {
		uint64_t off = dyn[i].d_un.d_val, len;

		if (dyn[i].d_tag != DT_SONAME)
			continue;
		if (off >= str->sh_size)
			break;
		len = str->sh_size - off < sizeof(buf) ? str->sh_size - off : sizeof(buf);
		if (!read_at(es->fd, buf, (size_t)len, str->sh_offset + off) &&
		    memchr(buf, '\0', (size_t)len))
			name = xstrdup(buf);
		break;
	}
	free(dyn);
	return name;
}

const char *elfsym_soname(struct elfsym *es)
{
	if (!es->soname_done && es->dynamic) {
		es->soname = read_soname(es);
		es->soname_done = 1;
	}
	return es->soname;
}
