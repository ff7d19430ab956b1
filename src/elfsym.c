/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsym.h"

#define ELF_OF(es) ((Elf *)(es)->elf)

enum perr elfsym_open(struct elfsym *es, const char *path)
{
	GElf_Ehdr ehdr;
	struct stat st;
	size_t phnum;
	Elf *elf;
	int have_load = 0;

	memset(es, 0, sizeof(*es));
	es->fd = -1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return PERR_IO;
	es->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (es->fd < 0)
		return errno == ENOENT ? PERR_NOTFOUND : perr_from_errno(errno);
	if (fstat(es->fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto corrupt;
	es->file_size = (uint64_t)st.st_size;
	/* ELF_C_READ_MMAP: libelf checks every table against the file size */
	elf = elf_begin(es->fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		goto corrupt;
	es->elf = elf;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr))
		goto corrupt;
	if (ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_machine != EM_X86_64)
		goto corrupt;
	if (elf_getphdrnum(elf, &phnum) != 0 || phnum == 0)
		goto corrupt;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			goto corrupt;
		if (ph.p_type == PT_LOAD && !have_load) {
			uint64_t align = ph.p_align > 1 ? ph.p_align : 1;

			if (align & (align - 1))
				goto corrupt;
			es->base_vaddr = ph.p_vaddr & ~(align - 1);
			have_load = 1;
		} else if (ph.p_type == PT_TLS) {
			es->tls_vaddr = ph.p_vaddr;
			es->tls_memsz = ph.p_memsz;
			es->tls_align = ph.p_align;
		}
	}
	if (!have_load)
		goto corrupt;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			es->has_symtab = 1;
	}
	return PERR_OK;
corrupt:
	elfsym_close(es);
	return PERR_CORRUPT;
}

void elfsym_close(struct elfsym *es)
{
	if (es->elf)
		elf_end(ELF_OF(es));
	if (es->fd >= 0)
		close(es->fd);
	es->elf = NULL;
	es->fd = -1;
}

static enum perr lookup_in(Elf *elf, Elf64_Word type, const char *name,
			   struct elfsym_sym *out)
{
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		n = data->d_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym s;
			const char *sname;

			if (!gelf_getsym(data, (int)i, &s) || s.st_shndx == SHN_UNDEF)
				continue;
			sname = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!sname || strcmp(sname, name))
				continue;
			out->value = s.st_value;
			out->size = s.st_size;
			switch (GELF_ST_TYPE(s.st_info)) {
			case STT_OBJECT:
				out->type = ELFSYM_OBJECT;
				break;
			case STT_FUNC:
			case STT_GNU_IFUNC:
				out->type = ELFSYM_FUNC;
				break;
			case STT_TLS:
				out->type = ELFSYM_TLS;
				break;
			default:
				out->type = ELFSYM_OTHER;
			}
			return PERR_OK;
		}
	}
	return PERR_NOTFOUND;
}

enum perr elfsym_lookup(struct elfsym *es, const char *name, struct elfsym_sym *sym)
{
	if (!es->elf)
		return PERR_NOTFOUND;
	if (!lookup_in(ELF_OF(es), SHT_DYNSYM, name, sym))
		return PERR_OK;
	return lookup_in(ELF_OF(es), SHT_SYMTAB, name, sym);
}

enum perr elfsym_section(struct elfsym *es, const char *name, uint64_t *addr, uint64_t *size)
{
	size_t shstrndx;

	if (!es->elf || elf_getshdrstrndx(ELF_OF(es), &shstrndx) != 0)
		return PERR_NOTFOUND;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(ELF_OF(es), scn));) {
		GElf_Shdr sh;
		const char *sname;

		if (!gelf_getshdr(scn, &sh))
			continue;
		sname = elf_strptr(ELF_OF(es), shstrndx, sh.sh_name);
		if (sname && !strcmp(sname, name)) {
			*addr = sh.sh_addr;
			*size = sh.sh_size;
			return PERR_OK;
		}
	}
	return PERR_NOTFOUND;
}

enum perr elfsym_read(struct elfsym *es, uint64_t vaddr, void *buf, size_t len)
{
	size_t phnum;

	if (!es->elf || elf_getphdrnum(ELF_OF(es), &phnum) != 0)
		return PERR_NOTFOUND;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		uint64_t off, infile;
		ssize_t n;

		if (!gelf_getphdr(ELF_OF(es), (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr < ph.p_vaddr || vaddr - ph.p_vaddr >= ph.p_memsz ||
		    len > ph.p_memsz - (vaddr - ph.p_vaddr))
			continue;
		off = vaddr - ph.p_vaddr;
		/* the part backed by the file; the rest is .bss */
		infile = off < ph.p_filesz ? ph.p_filesz - off : 0;
		if (infile > len)
			infile = len;
		memset(buf, 0, len);
		if (!infile)
			return PERR_OK;
		if (ph.p_offset > es->file_size ||
		    off + infile > es->file_size - ph.p_offset)
			return PERR_CORRUPT;
		n = pread(es->fd, buf, infile, (off_t)(ph.p_offset + off));
		return n == (ssize_t)infile ? PERR_OK : PERR_CORRUPT;
	}
	return PERR_NOTFOUND;
}

const char *elfsym_soname(struct elfsym *es)
{
	if (!es->elf)
		return NULL;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(ELF_OF(es), scn));) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		for (size_t i = 0; i < data->d_size / sh.sh_entsize; i++) {
			GElf_Dyn d;

			if (gelf_getdyn(data, (int)i, &d) && d.d_tag == DT_SONAME)
				return elf_strptr(ELF_OF(es), sh.sh_link, d.d_un.d_val);
		}
	}
	return NULL;
}
