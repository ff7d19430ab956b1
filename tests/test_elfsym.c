/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc/elfsym.h"

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

/*
 * Crafted files: a small valid ELF image (one PT_LOAD, .dynsym with
 * _PyRuntime and Py_Version, .dynstr, .shstrtab, .PyRuntime), then one
 * field at a time made to claim what a hostile target would claim.  The
 * files are sparse: what they claim costs nothing on disk, only to a
 * reader that believes it.
 *
 *   0x0000  ELF header, program headers
 *   0x0200  .dynsym (3 symbols)   0x0300  .dynstr   0x0400  .shstrtab
 *   0x0500  Py_Version            0x1000  section headers
 */
enum { SH_NULL, SH_DYNSYM, SH_DYNSTR, SH_SHSTRTAB, SH_PYRT, SH_N };

#define OFF_DYNSYM 0x200
#define OFF_DYNSTR 0x300
#define OFF_SHSTR 0x400
#define OFF_PYVER 0x500
#define OFF_SHDR 0x1000

static const char dynstr[] = "\0_PyRuntime\0Py_Version";
static const char shstr[] = "\0.dynsym\0.dynstr\0.shstrtab\0.PyRuntime";

static char crafted_dir[64];

static void crafted_setup(void)
{
	strcpy(crafted_dir, "/tmp/pyrospy-elfsym-XXXXXX");
	cr_assert_not_null(mkdtemp(crafted_dir));
}

static void crafted_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", crafted_dir);
	if (system(cmd))
		cr_log_warn("cannot remove %s", crafted_dir);
}

static void pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	cr_assert_eq(pwrite(fd, buf, len, off), (ssize_t)len);
}

static Elf64_Shdr section(Elf64_Word name, Elf64_Word type, uint64_t off, uint64_t size,
			  Elf64_Word link, uint64_t entsize)
{
	Elf64_Shdr sh = {
		.sh_name = name, .sh_type = type, .sh_offset = off, .sh_size = size,
		.sh_link = link, .sh_entsize = entsize, .sh_addralign = entsize ? 8 : 1,
	};

	return sh;
}

/* The valid image into a new file name under crafted_dir; its fd. */
static int crafted_base(const char *name, char *path, size_t cap)
{
	Elf64_Ehdr eh = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB,
			     EV_CURRENT },
		.e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
		.e_phoff = sizeof(Elf64_Ehdr), .e_shoff = OFF_SHDR,
		.e_ehsize = sizeof(Elf64_Ehdr), .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1,
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = SH_N, .e_shstrndx = SH_SHSTRTAB,
	};
	Elf64_Phdr ph = {
		.p_type = PT_LOAD, .p_flags = PF_R, .p_offset = 0, .p_vaddr = 0,
		.p_filesz = OFF_SHDR, .p_memsz = 0x2000, .p_align = 0x1000,
	};
	Elf64_Sym sym[3] = {
		{ 0 },
		{ .st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), .st_shndx = SH_PYRT,
		  .st_value = 0x1800, .st_size = 0x100 },
		{ .st_name = 12, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT), .st_shndx = SH_PYRT,
		  .st_value = OFF_PYVER, .st_size = 4 },
	};
	Elf64_Shdr sh[SH_N] = {
		[SH_DYNSYM] = section(1, SHT_DYNSYM, OFF_DYNSYM, sizeof(sym), SH_DYNSTR,
				      sizeof(Elf64_Sym)),
		[SH_DYNSTR] = section(9, SHT_STRTAB, OFF_DYNSTR, sizeof(dynstr), 0, 0),
		[SH_SHSTRTAB] = section(17, SHT_STRTAB, OFF_SHSTR, sizeof(shstr), 0, 0),
		[SH_PYRT] = section(27, SHT_PROGBITS, 0x1800, 0x100, 0, 0),
	};
	uint32_t version = 0x030b02f0;
	int fd;

	sh[SH_PYRT].sh_addr = 0x1800;
	sh[SH_PYRT].sh_type = SHT_NOBITS;
	snprintf(path, cap, "%s/%s", crafted_dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert(fd >= 0, "cannot create %s", path);
	pwrite_all(fd, &eh, sizeof(eh), 0);
	pwrite_all(fd, &ph, sizeof(ph), sizeof(eh));
	pwrite_all(fd, sym, sizeof(sym), OFF_DYNSYM);
	pwrite_all(fd, dynstr, sizeof(dynstr), OFF_DYNSTR);
	pwrite_all(fd, shstr, sizeof(shstr), OFF_SHSTR);
	pwrite_all(fd, &version, sizeof(version), OFF_PYVER);
	pwrite_all(fd, sh, sizeof(sh), OFF_SHDR);
	return fd;
}

/* Field-sized patches of the image: the ELF header and the section headers. */
#define EH_FIELD(fd, field, value)                                                       \
	do {                                                                             \
		__typeof__(((Elf64_Ehdr *)0)->field) v_ = (value);                        \
		pwrite_all(fd, &v_, sizeof(v_), offsetof(Elf64_Ehdr, field));             \
	} while (0)
#define SH_FIELD(fd, i, field, value)                                                    \
	do {                                                                             \
		__typeof__(((Elf64_Shdr *)0)->field) v_ = (value);                        \
		pwrite_all(fd, &v_, sizeof(v_),                                           \
			   OFF_SHDR + (i) * sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, field)); \
	} while (0)

static void extend(int fd, uint64_t size)
{
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
}

/*
 * What opening a file costs: time, and growth of the peak resident set.
 * Measured in a child of its own, so that the high-water mark of one case
 * (or of criterion) does not hide the next; a child still at it after
 * limit_ms is killed (it would have hung or swapped pyrospy).
 */
struct cost {
	int finished;
	enum perr open, lookup;
	double ms;
	long kb;
};

static long rss_kb(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "%ld %ld", &pages, &rss), 2);
	fclose(f);
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static struct cost measure(const char *path, int limit_ms)
{
	struct cost c = { 0 };
	struct timespec t0;
	struct rusage ru;
	struct pollfd pfd;
	long base = rss_kb();
	int p[2], status;
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		struct rusage r0, r1;
		struct elfsym es;
		struct elfsym_sym s;
		uint64_t a, z;

		close(p[0]);
		getrusage(RUSAGE_SELF, &r0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		c.open = elfsym_open(&es, path);
		c.lookup = PERR_NOTFOUND;
		if (!c.open) {
			c.lookup = elfsym_lookup(&es, "_PyRuntime", &s);
			(void)elfsym_lookup(&es, "no_such_symbol", &s);
			(void)elfsym_section(&es, ".PyRuntime", &a, &z);
			(void)elfsym_soname(&es);
			elfsym_close(&es);
		}
		c.ms = ms_since(&t0);
		getrusage(RUSAGE_SELF, &r1);
		c.kb = r1.ru_maxrss - r0.ru_maxrss;
		c.finished = 1;
		if (write(p[1], &c, sizeof(c)) != (ssize_t)sizeof(c))
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	pfd.fd = p[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, limit_ms) == 1 && read(p[0], &c, sizeof(c)) == (ssize_t)sizeof(c)) {
		wait4(pid, &status, 0, &ru);
	} else {
		kill(pid, SIGKILL);
		wait4(pid, &status, 0, &ru);
		c.finished = 0;
		c.ms = ms_since(&t0);
		c.kb = ru.ru_maxrss - base;
	}
	close(p[0]);
	return c;
}

/* Answered with `want' at open, in under 100 ms and 16 MB. */
static void assert_refused(const char *what, const char *path, enum perr want)
{
	struct cost c = measure(path, 5000);

	cr_log_info("%s: %s, %s, %.1f ms, %ld KB", what,
		    c.finished ? "finished" : "killed after", c.finished ? perr_str(c.open) : "-",
		    c.ms, c.kb);
	cr_assert(c.finished, "%s: still parsing after %.0f ms (%ld KB)", what, c.ms, c.kb);
	cr_assert_eq(c.open, want, "%s: open says '%s', want '%s'", what, perr_str(c.open),
		     perr_str(want));
	cr_assert_lt(c.ms, 100.0, "%s: %.1f ms", what, c.ms);
	cr_assert_lt(c.kb, 16 * 1024, "%s: %ld KB", what, c.kb);
}

TestSuite(elfsym_crafted, .init = crafted_setup, .fini = crafted_teardown, .timeout = 60);

Test(elfsym_crafted, valid_base)
{
	char path[128];
	struct elfsym es;
	struct elfsym_sym s;
	uint64_t a, z;
	uint32_t v;
	int fd = crafted_base("base.so", path, sizeof(path));

	close(fd);
	cr_assert_eq(elfsym_open(&es, path), PERR_OK);
	cr_assert_eq(elfsym_lookup(&es, "_PyRuntime", &s), PERR_OK);
	cr_assert_eq(s.value, 0x1800);
	cr_assert_eq(elfsym_lookup(&es, "Py_Version", &s), PERR_OK);
	cr_assert_eq(elfsym_read(&es, s.value, &v, sizeof(v)), PERR_OK);
	cr_assert_eq(v, 0x030b02f0);
	cr_assert_eq(elfsym_section(&es, ".PyRuntime", &a, &z), PERR_OK);
	cr_assert_eq(a, 0x1800);
	cr_assert_eq(elfsym_lookup(&es, "nothing", &s), PERR_NOTFOUND);
	elfsym_close(&es);
}

/* 1, 4 million and 65279 section headers: a table of 64, 256 and 4 MB, all holes. */
Test(elfsym_crafted, too_many_sections)
{
	static const uint64_t counts[] = { 1000000, 4000000, 0xfeff, ELFSYM_MAX_SHNUM + 1 };
	char path[128], what[64];

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		int fd = crafted_base("sections.so", path, sizeof(path));

		if (counts[i] < SHN_LORESERVE) {
			EH_FIELD(fd, e_shnum, (Elf64_Half)counts[i]);
		} else {
			/* the extended count lives in section header 0 */
			EH_FIELD(fd, e_shnum, 0);
			SH_FIELD(fd, 0, sh_size, counts[i]);
		}
		extend(fd, OFF_SHDR + counts[i] * sizeof(Elf64_Shdr));
		close(fd);
		snprintf(what, sizeof(what), "%" PRIu64 " section headers", counts[i]);
		assert_refused(what, path, PERR_TOOBIG);
	}
}

/* A million and 65534 program headers (PN_XNUM: the count in section 0). */
Test(elfsym_crafted, too_many_program_headers)
{
	static const uint64_t counts[] = { 1000000, 0xfffe, ELFSYM_MAX_PHNUM + 1 };
	char path[128], what[64];

	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		int fd = crafted_base("phdrs.so", path, sizeof(path));
		uint64_t phoff = 1 << 20;

		EH_FIELD(fd, e_phoff, phoff);
		if (counts[i] < PN_XNUM) {
			EH_FIELD(fd, e_phnum, (Elf64_Half)counts[i]);
		} else {
			EH_FIELD(fd, e_phnum, PN_XNUM);
			SH_FIELD(fd, 0, sh_info, (Elf64_Word)counts[i]);
		}
		extend(fd, phoff + counts[i] * sizeof(Elf64_Phdr));
		close(fd);
		snprintf(what, sizeof(what), "%" PRIu64 " program headers", counts[i]);
		assert_refused(what, path, PERR_TOOBIG);
	}
}

/*
 * A 1 GB symbol table (over the file size cap), one symbol over the cap
 * in a file that holds it, a string table one byte over its cap, and a
 * file over the size cap.
 */
Test(elfsym_crafted, huge_tables)
{
	const uint64_t far = 1 << 20, gb = (1 << 30) / sizeof(Elf64_Sym) * sizeof(Elf64_Sym);
	char path[128];
	int fd;

	fd = crafted_base("symtab-1g.so", path, sizeof(path));
	SH_FIELD(fd, SH_DYNSYM, sh_offset, far);
	SH_FIELD(fd, SH_DYNSYM, sh_size, gb);
	extend(fd, far + gb);
	close(fd);
	assert_refused("a 1 GB symbol table", path, PERR_TOOBIG);

	fd = crafted_base("symtab-cap.so", path, sizeof(path));
	SH_FIELD(fd, SH_DYNSYM, sh_offset, far);
	SH_FIELD(fd, SH_DYNSYM, sh_size, (ELFSYM_MAX_SYMS + 1) * sizeof(Elf64_Sym));
	extend(fd, far + (ELFSYM_MAX_SYMS + 1) * sizeof(Elf64_Sym));
	close(fd);
	assert_refused("a symbol over the cap", path, PERR_TOOBIG);

	fd = crafted_base("strtab-cap.so", path, sizeof(path));
	SH_FIELD(fd, SH_DYNSTR, sh_offset, far);
	SH_FIELD(fd, SH_DYNSTR, sh_size, ELFSYM_MAX_STRTAB + 1);
	extend(fd, far + ELFSYM_MAX_STRTAB + 1);
	close(fd);
	assert_refused("a string table over the cap", path, PERR_TOOBIG);

	fd = crafted_base("file-cap.so", path, sizeof(path));
	extend(fd, ELFSYM_MAX_FILE + 1);
	close(fd);
	assert_refused("a file over the size cap", path, PERR_TOOBIG);
}

/* Tables that lie (in part) past the end of the file. */
Test(elfsym_crafted, tables_past_end_of_file)
{
	static const struct {
		const char *what;
		int sh;		/* section to move, or -1 */
		int field;	/* 0: offset past the end, 1: size past the end */
	} cases[] = {
		{ "symbol table past the end", SH_DYNSYM, 0 },
		{ "symbol table running past the end", SH_DYNSYM, 1 },
		{ "string table past the end", SH_DYNSTR, 0 },
		{ "section names past the end", SH_SHSTRTAB, 1 },
		{ "section headers past the end", -1, 0 },
		{ "program headers past the end", -1, 1 },
		{ "a PT_LOAD past the end", -1, 2 },
	};
	const uint64_t end = OFF_SHDR + SH_N * sizeof(Elf64_Shdr);
	char path[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = crafted_base("past.so", path, sizeof(path));

		if (cases[i].sh >= 0 && cases[i].field == 0)
			SH_FIELD(fd, cases[i].sh, sh_offset, end + 4096);
		else if (cases[i].sh >= 0)
			SH_FIELD(fd, cases[i].sh, sh_size, end);
		else if (cases[i].field == 0)
			EH_FIELD(fd, e_shoff, end - sizeof(Elf64_Shdr));
		else if (cases[i].field == 1)
			EH_FIELD(fd, e_phoff, end - sizeof(Elf64_Phdr) / 2);
		else
			pwrite_all(fd, &end, sizeof(end),
				   sizeof(Elf64_Ehdr) + offsetof(Elf64_Phdr, p_offset));
		close(fd);
		assert_refused(cases[i].what, path, PERR_CORRUPT);
	}
}

/*
 * The largest tables the caps allow, with a string table that does not
 * end in NUL (each name looked up would be searched for to the end of the
 * table): a miss, at once.
 */
Test(elfsym_crafted, unterminated_strings)
{
	const uint64_t far = 1 << 20, nsym = ELFSYM_MAX_SYMS, nstr = ELFSYM_MAX_STRTAB;
	Elf64_Sym s = { .st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
			.st_shndx = SH_PYRT, .st_value = 0x1800 };
	char path[128];
	struct cost c;
	int fd = crafted_base("unterminated.so", path, sizeof(path));

	SH_FIELD(fd, SH_DYNSYM, sh_offset, far);
	SH_FIELD(fd, SH_DYNSYM, sh_size, nsym * sizeof(Elf64_Sym));
	SH_FIELD(fd, SH_DYNSTR, sh_offset, far + nsym * sizeof(Elf64_Sym));
	SH_FIELD(fd, SH_DYNSTR, sh_size, nstr);
	/* every symbol named by offset 1, in a table of 'x' with no NUL */
	{
		Elf64_Sym *syms = calloc(nsym, sizeof(*syms));
		char *x = malloc(nstr);

		cr_assert(syms && x);
		for (uint64_t i = 1; i < nsym; i++)
			syms[i] = s;
		memset(x, 'x', nstr);
		pwrite_all(fd, syms, nsym * sizeof(*syms), (off_t)far);
		pwrite_all(fd, x, nstr, (off_t)(far + nsym * sizeof(Elf64_Sym)));
		free(syms);
		free(x);
	}
	close(fd);
	c = measure(path, 5000);
	cr_log_info("unterminated strings: %s, %.1f ms, %ld KB",
		    c.finished ? perr_str(c.lookup) : "killed", c.ms, c.kb);
	cr_assert(c.finished, "still looking after %.0f ms", c.ms);
	cr_assert_eq(c.lookup, PERR_NOTFOUND);
	cr_assert_lt(c.ms, 100.0, "%.1f ms", c.ms);
	cr_assert_lt(c.kb, 16 * 1024, "%ld KB", c.kb);
}

/*
 * The most the caps let a file cost: a full symbol table and a full
 * string table, the symbol looked for last.  Found, in bounded time and
 * memory: measure() looks two names up, and each reads the tables (14
 * MiB) again, since they are over ELFSYM_CACHE; ASan's quarantine keeps
 * the first copy's pages until the second is read.
 */
Test(elfsym_crafted, largest_tables_within_caps)
{
	const uint64_t far = 1 << 20, nsym = ELFSYM_MAX_SYMS, nstr = ELFSYM_MAX_STRTAB;
	Elf64_Sym last = { .st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
			   .st_shndx = SH_PYRT, .st_value = 0x1800 };
	char path[128];
	struct cost c;
	int fd = crafted_base("largest.so", path, sizeof(path));

	SH_FIELD(fd, SH_DYNSYM, sh_offset, far);
	SH_FIELD(fd, SH_DYNSYM, sh_size, nsym * sizeof(Elf64_Sym));
	SH_FIELD(fd, SH_DYNSTR, sh_offset, far + nsym * sizeof(Elf64_Sym));
	SH_FIELD(fd, SH_DYNSTR, sh_size, nstr);
	pwrite_all(fd, &last, sizeof(last), (off_t)(far + (nsym - 1) * sizeof(Elf64_Sym)));
	pwrite_all(fd, dynstr, sizeof(dynstr), (off_t)(far + nsym * sizeof(Elf64_Sym)));
	extend(fd, far + nsym * sizeof(Elf64_Sym) + nstr);
	close(fd);
	c = measure(path, 5000);
	cr_log_info("largest tables: %s, %.1f ms, %ld KB", c.finished ? perr_str(c.lookup) : "killed",
		    c.ms, c.kb);
	cr_assert(c.finished, "still looking after %.0f ms", c.ms);
	cr_assert_eq(c.open, PERR_OK);
	cr_assert_eq(c.lookup, PERR_OK);
	cr_assert_lt(c.ms, 1000.0, "%.1f ms", c.ms);
	cr_assert_lt(c.kb, 40 * 1024, "%ld KB", c.kb);
}
