/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proc/mapfile.h"
#include "proc/target.h"
#include "util/utf8.h"
#include "util/xalloc.h"

/* Interpreter versions pyrospy can read (see man/pyrospy.1). */
#define PY_MIN_MINOR 8
#define PY_MAX_MINOR 15

/* Maps named libpython* or libruby* tried, at most: a real process has one. */
#define MAX_LIB_TRIES 8

const char *target_lang_name(enum target_lang lang)
{
	switch (lang) {
	case TARGET_PYTHON:
		return "Python";
	case TARGET_RUBY:
		return "Ruby";
	default:
		return "unknown";
	}
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static void object_release(struct target_object *o)
{
	if (o->open)
		elfsym_close(&o->elf);
	FREE_AND_NULL(o->path);
	FREE_AND_NULL(o->open_path);
	o->open = 0;
}

/* Keep the first file refused, for the CLI to say which and why. */
static void refuse(struct target *t, const char *path, const char *why)
{
	if (t->refused)
		return;
	/* the path is the target's to choose: cleaned once, here, for every message */
	t->refused = xmalloc(strlen(path) + 1);
	utf8_sanitize(t->refused, strlen(path) + 1, path, strlen(path));
	t->refused_why = why;
}

/*
 * Open the ELF file behind map m: mapfile.c finds the very file the
 * target mapped, or refuses what stands in its place (a FIFO, a device, a
 * link, another file); elfsym.c refuses a file past its caps.
 */
static enum perr object_open(struct target *t, struct target_object *o,
			     const struct procmap *m, int exe)
{
	struct mapfile mf;
	enum perr err;

	o->path = xstrdup(m->path ? m->path : "");
	err = mapfile_open(&mf, t->pid, m, exe, &t->mem);
	if (err == PERR_REFUSED)
		refuse(t, o->path, mapfile_refusal_str(mf.refused));
	if (err)
		return err;
	err = elfsym_open_fd(&o->elf, mf.fd);
	if (err == PERR_TOOBIG)
		refuse(t, o->path, "an ELF file past pyrospy's limits");
	if (err)
		return err;
	o->open = 1;
	o->open_path = xstrdup(mf.how);
	if (m->start < o->elf.base_vaddr)
		return PERR_CORRUPT;
	o->bias = m->start - o->elf.base_vaddr;
	return PERR_OK;
}

static void read_comm(struct target *t)
{
	char path[64], raw[sizeof(t->comm)];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)t->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, raw, sizeof(raw) - 1);
	close(fd);
	if (n <= 0)
		return;
	if (raw[n - 1] == '\n')
		n--;	/* the kernel's; one inside the name is the process's own */
	/* the process names itself, and the name is printed: never raw */
	utf8_sanitize(t->comm, sizeof(t->comm), raw, (size_t)n);
}

/*
 * What /proc/PID/stat says of a process: its state letter and flags
 * (fields 3 and 9), its start time (field 22: which process, with the pid;
 * an exec() keeps it), and its image: where its code, stack and heap start
 * (fields 26, 28 and 47).  exec() makes a new image, and address space
 * layout randomisation new values.  0 when the process is gone (state 0),
 * zeros where the kernel hides them.
 */
struct pstat {
	char state;
	uint64_t flags;
	uint64_t start;
	uint64_t image[3];
};

#define PF_EXITING_FLAG 0x4	/* the kernel's PF_EXITING: in do_exit() */

static int read_stat(pid_t pid, struct pstat *ps)
{
	static const unsigned int want[] = { 9, 22, 26, 28, 47 };
	uint64_t v[ARRAY_SIZE(want)];

	memset(ps, 0, sizeof(*ps));
	if (!procmem_stat(pid, &ps->state, want, v, ARRAY_SIZE(want)))
		return 0;
	ps->flags = v[0];
	ps->start = v[1];
	memcpy(ps->image, v + 2, sizeof(ps->image));
	return 1;
}

int target_execd(struct target *t)
{
	struct pstat ps;

	/* alive after the read: what it read was of the process held */
	if (!read_stat(t->pid, &ps) || !procmem_alive(&t->mem) || ps.start != t->start ||
	    (!ps.image[0] && !ps.image[1] && !ps.image[2]))
		return 0;
	return memcmp(ps.image, t->image, sizeof(ps.image)) != 0;
}

int target_ended(struct target *t)
{
	int exiting = target_exiting(t->pid);

	return !procmem_alive(&t->mem) || exiting;
}

enum perr target_hold(struct procmem *pm, pid_t pid, uint64_t *start)
{
	struct pstat ps;
	int fd = -1;

#ifdef SYS_pidfd_open
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0 && errno == ESRCH)
		return PERR_NOPROC;
#endif
	/* no pidfd (Linux < 5.3, or a seccomp filter): the start time says which */
	if (!read_stat(pid, &ps) || !ps.state) {
		if (fd >= 0)
			close(fd);
		return PERR_NOPROC;
	}
	procmem_hold(pm, fd, ps.start);
	if (start)
		*start = ps.start;
	return PERR_OK;
}

void target_release(struct procmem *pm)
{
	if (pm->held && pm->pidfd >= 0)
		close(pm->pidfd);
	pm->pidfd = -1;
	pm->held = 0;
}

int target_exiting(pid_t pid)
{
	struct pstat ps;

	if (!read_stat(pid, &ps))
		return 1;
	return ps.state == 'Z' || ps.state == 'X' || ps.state == 'x' ||
	       (ps.flags & PF_EXITING_FLAG);
}

static char *read_exe(pid_t pid)
{
	char path[64], buf[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	if (n > 10 && !strcmp(buf + n - 10, " (deleted)"))
		buf[n - 10] = '\0';
	return xstrdup(buf);
}

static int parse_version(const char *s, unsigned int *maj, unsigned int *min, unsigned int *pat)
{
	unsigned long v[3] = { 0, 0, 0 };
	int i = 0;

	while (i < 3) {
		char *end;

		if (*s < '0' || *s > '9')
			break;
		errno = 0;
		v[i] = strtoul(s, &end, 10);
		if (errno || v[i] > 255)
			return 0;
		i++;
		s = end;
		if (*s != '.')
			break;
		s++;
	}
	if (i < 2)
		return 0;
	*maj = (unsigned int)v[0];
	*min = (unsigned int)v[1];
	*pat = (unsigned int)v[2];
	return 1;
}

/* The interpreter's object: the library if it defines sym, else the exe. */
static struct target_object *find_defining(struct target *t, const char *sym)
{
	struct elfsym_sym s;

	if (t->lib.open && !elfsym_lookup(&t->lib.elf, sym, &s))
		return &t->lib;
	if (t->exe.open && !elfsym_lookup(&t->exe.elf, sym, &s))
		return &t->exe;
	return NULL;
}

/*
 * <= 3.10 without a telling name (a copy made by venv --copies is named
 * python): PY_VERSION, "3.9.2", is a string of its own in .rodata, read
 * by Py_GetVersion().  Exactly one such string of a 3.8-3.10 must be
 * there; the rest of the version checks see to the others.
 */
#define RODATA_MAX	(16u << 20)

static int rodata_version(struct target_object *o, unsigned int *maj, unsigned int *min,
			  unsigned int *pat)
{
	uint64_t addr, size;
	unsigned char *buf;
	unsigned int found = 0, a, b, c;

	if (elfsym_section(&o->elf, ".rodata", &addr, &size) || !size || size > RODATA_MAX)
		return 0;
	buf = xmalloc((size_t)size + 1);
	if (elfsym_read(&o->elf, addr, buf, (size_t)size)) {
		free(buf);
		return 0;
	}
	buf[size] = '\0';
	for (size_t i = 0; i + 5 < size; i++) {
		const char *str = (const char *)buf + i;
		size_t n;

		if ((i && buf[i - 1]) || str[0] != '3' || str[1] != '.')
			continue;
		n = strlen(str);
		if (n > 12 || strspn(str, "0123456789.abcr+") != n ||
		    !parse_version(str, &a, &b, &c) || a != 3 || b < 8 || b > 10)
			continue;
		if (found && (b != *min || c != *pat))
			return free(buf), 0;	/* two versions: say none */
		*maj = a;
		*min = b;
		*pat = c;
		found = 1;
		i += n;
	}
	free(buf);
	return found;
}

static enum perr detect_python(struct target *t)
{
	struct target_object *o;
	struct elfsym_sym s;
	unsigned char hdr[24];
	uint64_t addr = 0, size;
	const char *name;

	o = find_defining(t, "_PyRuntime");
	if (o) {
		elfsym_lookup(&o->elf, "_PyRuntime", &s);
		addr = s.value + o->bias;
	} else if ((o = find_defining(t, "Py_InitModule4_64")) ||
		   (o = find_defining(t, "Py_InitModule4"))) {
		/*
		 * Python 2's module API, which Python 3 has not: said as Python
		 * 2, with the version its name gives (python2.7), else none.
		 */
		t->interp = o;
		t->lang = TARGET_PYTHON;
		name = base_name(o->path);
		name += starts_with(name, "libpython") ? strlen("libpython") :
			starts_with(name, "python") ? strlen("python") : 0;
		if (parse_version(name, &t->major, &t->minor, &t->patch) && t->major == 2)
			snprintf(t->version, sizeof(t->version), "%u.%u", t->major, t->minor);
		else
			snprintf(t->version, sizeof(t->version), "2");
		return PERR_UNSUPPORTED;
	} else {
		o = t->lib.open ? &t->lib : &t->exe;
		if (!o->open || elfsym_section(&o->elf, ".PyRuntime", &addr, &size))
			return PERR_NOTINTERP;
		addr += o->bias;
	}
	t->interp = o;
	t->lang = TARGET_PYTHON;

	/* 3.13+: the runtime describes itself, cookie first. */
	if (!procmem_read(&t->mem, addr, hdr, sizeof(hdr)) &&
	    !memcmp(hdr, "xdebugpy", 8)) {
		uint64_t hex;

		memcpy(&hex, hdr + 8, sizeof(hex));
		t->major = (unsigned int)(hex >> 24 & 0xff);
		t->minor = (unsigned int)(hex >> 16 & 0xff);
		t->patch = (unsigned int)(hex >> 8 & 0xff);
		/* _Py_DebugOffsets.free_threaded: 1 in a --disable-gil build */
		memcpy(&hex, hdr + 16, sizeof(hex));
		t->free_threaded = hex == 1;
		goto found;
	}
	/* 3.11+: Py_Version is PY_VERSION_HEX in read-only data. */
	if (!elfsym_lookup(&o->elf, "Py_Version", &s)) {
		uint32_t hex;

		if (!elfsym_read(&o->elf, s.value, &hex, sizeof(hex)) && hex >> 24 == 3) {
			t->major = hex >> 24 & 0xff;
			t->minor = hex >> 16 & 0xff;
			t->patch = hex >> 8 & 0xff;
			goto found;
		}
	}
	/* Older: the library or executable name, python3.X / libpython3.X. */
	name = base_name(o->path);
	if (starts_with(name, "libpython"))
		name += strlen("libpython");
	else if (starts_with(name, "python"))
		name += strlen("python");
	else
		name = "";
	if (!parse_version(name, &t->major, &t->minor, &t->patch) || !t->minor) {
		if (rodata_version(o, &t->major, &t->minor, &t->patch))
			goto found;
		return PERR_UNSUPPORTED;	/* a Python of unknown version */
	}
	snprintf(t->version, sizeof(t->version), "%u.%u", t->major, t->minor);
	goto check;
found:
	/* "t": how CPython names its free-threaded builds (python3.13t) */
	snprintf(t->version, sizeof(t->version), "%u.%u.%u%s", t->major, t->minor, t->patch,
		 t->free_threaded ? "t" : "");
check:
	if (t->major != 3 || t->minor < PY_MIN_MINOR || t->minor > PY_MAX_MINOR)
		return PERR_UNSUPPORTED;
	return PERR_OK;
}

static enum perr detect_ruby(struct target *t)
{
	struct target_object *o = find_defining(t, "ruby_version");
	struct elfsym_sym s;
	char buf[32];

	if (!o)
		return PERR_NOTINTERP;
	t->interp = o;
	t->lang = TARGET_RUBY;
	elfsym_lookup(&o->elf, "ruby_version", &s);
	memset(buf, 0, sizeof(buf));
	if (elfsym_read(&o->elf, s.value, buf, sizeof(buf) - 1) ||
	    !parse_version(buf, &t->major, &t->minor, &t->patch))
		return PERR_UNSUPPORTED;
	snprintf(t->version, sizeof(t->version), "%u.%u.%u", t->major, t->minor, t->patch);
	/* 2.7 to 4.0 */
	if (t->major * 100 + t->minor < 207 || t->major * 100 + t->minor > 400)
		return PERR_UNSUPPORTED;
	return PERR_OK;
}

/*
 * Open the process held in t->mem (target_open(), target_reopen()).  The
 * caller checks it is still alive after: only then was all this of it.
 */
static enum perr open_held(struct target *t)
{
	const struct procmap *m;
	pid_t pid = t->pid;
	struct pstat ps;
	enum perr err;

	/* first: an exec() during what follows shows as a change */
	if (!read_stat(pid, &ps))
		return PERR_EXITED;
	if (ps.start != t->start)
		return PERR_EXITED;	/* another process on the pid */
	memcpy(t->image, ps.image, sizeof(t->image));
	read_comm(t);
	err = procmaps_read(&t->maps, pid);
	if (err)
		return err;
	t->exe_path = read_exe(pid);
	if (!t->exe_path)
		return errno == ENOENT ? PERR_EXITED : perr_from_errno(errno);

	/* A zero-length remote read tells us whether memory is readable at all. */
	m = procmaps_object(&t->maps, t->exe_path);
	if (m) {
		err = object_open(t, &t->exe, m, 1);
		if (err && err != PERR_NOTFOUND && err != PERR_CORRUPT && err != PERR_REFUSED &&
		    err != PERR_TOOBIG)
			return err;
		if (err)
			object_release(&t->exe);
	}
	for (size_t i = 0, tries = 0; i < t->maps.nr && tries < MAX_LIB_TRIES; i++) {
		const char *name;

		m = &t->maps.map[i];
		if (!procmaps_file(m) || m->offset != 0)
			continue;
		name = base_name(m->path);
		if (!starts_with(name, "libpython") && !starts_with(name, "libruby"))
			continue;
		tries++;
		if (object_open(t, &t->lib, m, 0)) {
			object_release(&t->lib);
			continue;
		}
		break;
	}
	/* Probe readability once, so permission problems surface here. */
	{
		uint64_t word;

		m = t->maps.nr ? &t->maps.map[0] : NULL;
		if (m && (err = procmem_read(&t->mem, m->start, &word, sizeof(word))) &&
		    (err == PERR_PERM || err == PERR_EXITED))
			return err;
	}
	err = detect_python(t);
	if (err == PERR_NOTINTERP)
		err = detect_ruby(t);
	if (err == PERR_NOTINTERP)
		t->lang = TARGET_UNKNOWN;
	/* the interpreter may have been in what was refused */
	if (err == PERR_NOTINTERP && t->refused)
		err = PERR_REFUSED;
	return err;
}

enum perr target_open(struct target *t, pid_t pid)
{
	char path[64];
	struct stat st;
	enum perr err;

	memset(t, 0, sizeof(*t));
	t->pid = pid;
	procmem_init(&t->mem, pid);
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (pid <= 0 || stat(path, &st) < 0)
		return PERR_NOPROC;
	/* held first, checked last: everything between was read of this process */
	err = target_hold(&t->mem, pid, &t->start);
	if (err)
		return err;
	err = open_held(t);
	if (!procmem_alive(&t->mem))
		return PERR_EXITED;
	return err;
}

enum perr target_reopen(struct target *t)
{
	struct procmem was = t->mem;
	pid_t pid = t->pid;
	uint64_t start = t->start;
	enum perr err;

	if (!was.held || !procmem_alive(&was))
		return PERR_EXITED;
	t->mem.held = 0;	/* the pidfd goes on with the process */
	target_close(t);
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->start = start;
	procmem_init(&t->mem, pid);
	procmem_hold(&t->mem, was.pidfd, was.start);
	err = open_held(t);
	if (!procmem_alive(&t->mem))
		return PERR_EXITED;
	return err;
}

void target_close(struct target *t)
{
	target_release(&t->mem);
	object_release(&t->exe);
	object_release(&t->lib);
	procmaps_release(&t->maps);
	FREE_AND_NULL(t->exe_path);
	FREE_AND_NULL(t->refused);
	t->interp = NULL;
}

enum perr target_refresh_maps(struct target *t)
{
	struct procmaps fresh;
	enum perr err = procmaps_reread(&fresh, t->pid, &t->maps);

	if (err)
		return err;
	if (!procmem_alive(&t->mem)) {
		procmaps_release(&fresh);
		return PERR_EXITED;	/* the maps of another process */
	}
	procmaps_release(&t->maps);
	t->maps = fresh;
	return PERR_OK;
}

enum perr target_symbol(struct target *t, const char *name, uint64_t *addr, int *tls)
{
	struct target_object *objs[2] = { &t->lib, &t->exe };

	for (int i = 0; i < 2; i++) {
		struct elfsym_sym s;

		if (!objs[i]->open || elfsym_lookup(&objs[i]->elf, name, &s))
			continue;
		if (tls)
			*tls = s.type == ELFSYM_TLS;
		*addr = s.type == ELFSYM_TLS ? s.value : s.value + objs[i]->bias;
		return PERR_OK;
	}
	return PERR_NOTFOUND;
}

enum perr target_section(struct target *t, const char *name, uint64_t *addr, uint64_t *size)
{
	if (!t->interp || elfsym_section(&t->interp->elf, name, addr, size))
		return PERR_NOTFOUND;
	*addr += t->interp->bias;
	return PERR_OK;
}

enum perr target_object_section(struct target *t, const char *prefix, const char *name,
				uint64_t *addr, uint64_t *size)
{
	size_t plen = strlen(prefix);

	for (size_t i = 0; i < t->maps.nr; i++) {
		const struct procmap *m = &t->maps.map[i];
		const char *path = procmaps_file(m), *base;
		struct target_object o = { 0 };
		enum perr err;

		if (!path || m->offset != 0)
			continue;
		base = strrchr(path, '/');
		base = base ? base + 1 : path;
		if (strncmp(base, prefix, plen))
			continue;
		err = object_open(t, &o, m, 0);
		if (!err)
			err = elfsym_section(&o.elf, name, addr, size) ? PERR_NOTFOUND : PERR_OK;
		if (!err)
			*addr += o.bias;
		object_release(&o);
		return err;
	}
	return PERR_NOTFOUND;
}

static int status_field(pid_t pid, const char *key, char *out, size_t outlen)
{
	char path[64], line[512];
	size_t klen = strlen(key);
	FILE *f;
	int found = 0;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			const char *v = line + klen + 1;

			while (*v == ' ' || *v == '\t')
				v++;
			snprintf(out, outlen, "%s", v);
			out[strcspn(out, "\n")] = '\0';
			found = 1;
			break;
		}
	}
	fclose(f);
	return found;
}

enum target_perm_cause target_perm_cause(pid_t pid)
{
	char buf[128];
	unsigned long ruid, euid;
	unsigned long long cap;
	int scope = 0;
	FILE *f;

	/* Uid: real effective saved fs */
	if (status_field(pid, "Uid", buf, sizeof(buf)) &&
	    sscanf(buf, "%lu %lu", &ruid, &euid) == 2 && geteuid() != 0 &&
	    euid != geteuid())
		return TARGET_PERM_OTHER_USER;
	if (status_field(0, "CapEff", buf, sizeof(buf)) &&
	    sscanf(buf, "%llx", &cap) == 1 && geteuid() == 0 && !(cap & (1ull << 19)))
		return TARGET_PERM_NOCAP;
	f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
	if (scope >= 1)
		return TARGET_PERM_YAMA;
	if (geteuid() != 0)
		return TARGET_PERM_OTHER_USER;
	return TARGET_PERM_ROOT;
}

int target_tasks(pid_t pid, pid_t **tids)
{
	char path[64];
	struct dirent *de;
	size_t n = 0, alloc = 16;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	*tids = xmalloc(alloc * sizeof(**tids));
	while ((de = readdir(d))) {
		char *end;
		long v = strtol(de->d_name, &end, 10);

		if (*end || v <= 0 || v > INT_MAX)
			continue;
		if (n == alloc) {
			alloc *= 2;
			*tids = xreallocarray(*tids, alloc, sizeof(**tids));
		}
		(*tids)[n++] = (pid_t)v;
	}
	closedir(d);
	return (int)n;
}
