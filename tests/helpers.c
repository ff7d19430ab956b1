/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "helpers.h"
#include "proc/target.h"
#include "util/path.h"

const struct interp test_pythons[] = {
	{ "bullseye", "python3.9", TARGET_PYTHON, 3, 9 },
	{ NULL, "/usr/bin/python3.11", TARGET_PYTHON, 3, 11 },
	{ "trixie", "python3.13", TARGET_PYTHON, 3, 13 },
	{ "sid", "python3.14", TARGET_PYTHON, 3, 14 },
	{ "sid", "python3.15", TARGET_PYTHON, 3, 15 },
};
const size_t test_npythons = sizeof(test_pythons) / sizeof(test_pythons[0]);

/* Free-threaded builds (--disable-gil) of Debian's source, by scripts/build-python-ft. */
const struct interp test_pythons_ft[] = {
	{ "trixie-ft", "/opt/pyft/python3.13/python", TARGET_PYTHON, 3, 13 },
};
const size_t test_npythons_ft = sizeof(test_pythons_ft) / sizeof(test_pythons_ft[0]);

const struct interp *test_python_any(size_t i)
{
	return i < test_npythons ? &test_pythons[i] : &test_pythons_ft[i - test_npythons];
}

const struct interp test_rubies[] = {
	{ "bullseye", "ruby2.7", TARGET_RUBY, 2, 7 },
	{ NULL, "/usr/bin/ruby3.1", TARGET_RUBY, 3, 1 },
	{ "trixie", "ruby3.3", TARGET_RUBY, 3, 3 },
	{ "sid", "ruby3.4", TARGET_RUBY, 3, 4 },
	/* Debian's ruby3.4 rebuilt with YJIT, run with it on (root_envs) */
	{ "sid-yjit", "ruby3.4", TARGET_RUBY, 3, 4 },
};
const size_t test_nrubies = sizeof(test_rubies) / sizeof(test_rubies[0]);

/*
 * Roots whose interpreters run with an environment of their own.  The
 * YJIT root's Ruby runs with YJIT on and compiles every method and block
 * at its first call, so that what the tests profile is JIT code from the
 * start.
 */
static const struct {
	const char *root;
	const char *env[3];
} root_envs[] = {
	{ "sid-yjit", { "RUBY_YJIT_ENABLE=1", "RUBYOPT=--yjit-call-threshold=1", NULL } },
};

const char *const *test_env(const struct interp *in)
{
	for (size_t i = 0; in->root && i < sizeof(root_envs) / sizeof(root_envs[0]); i++)
		if (!strcmp(in->root, root_envs[i].root))
			return root_envs[i].env;
	return NULL;
}

const char *test_chroots(void)
{
	const char *d = getenv("PYROSPY_CHROOTS");

	return d && *d ? d : "/var/cache/pyrospy/chroots";
}

const char *test_target_path(const char *name)
{
	static char buf[4][1024];
	static int n;
	char *b = buf[n++ % 4];

	/*
	 * Normalised as pyrospy shows paths (util/path.h): an out-of-tree
	 * build's SRCDIR is "BUILD/..", and the stacks a test expects name
	 * the file as pyrospy does
	 */
	snprintf(b, 1024, "%s/tests/targets/%s", SRCDIR, name);
	return path_normalize(b);
}

/* Copy a target script into the chroot's /tmp so the interpreter can open it. */
const char *test_func(const struct interp *in, const char *name)
{
	static char buf[4][128];
	static int k;
	char *b = buf[k++ % 4];

	snprintf(b, 128, "%s%s", in->lang == TARGET_RUBY ? "Object#" : "", name);
	return b;
}

/*
 * The files of src (a file, or a directory's files) into dst, each
 * replaced whole (a copy beside it, renamed over it) and only when it
 * differs: tests that run at once start interpreters of the same root on
 * the same script, and a cp that truncates it as one starts leaves that
 * one an empty script, which runs and exits 0 (CI: "python3.14 did not
 * start (status 0)").
 */
int test_copy_into(const char *src, const char *dst)
{
	char cmd[8192];
	int n;

	n = snprintf(cmd, sizeof(cmd),
		 "set -e; put() { mkdir -p \"$(dirname \"$2\")\"; cmp -s \"$1\" \"$2\" || "
		 "{ cp \"$1\" \"$2.$$\" && mv -f \"$2.$$\" \"$2\"; }; }; "
		 "if [ -d '%s' ]; then cd '%s'; find . -type f | while read -r f; do "
		 "put \"$f\" '%s'/\"$f\"; done; else put '%s' '%s'; fi",
		 src, src, dst, src, dst);
	if (n < 0 || (size_t)n >= sizeof(cmd))
		return -1;
	return system(cmd);
}

const char *test_target_for(const struct interp *in, const char *name)
{
	static char buf[4][1024];
	static int n;
	char *b = buf[n++ % 4], dst[1024];

	if (!in->root)
		return test_target_path(name);
	snprintf(dst, sizeof(dst), "%s/%s/tmp/%s", test_chroots(), in->root, name);
	cr_assert_eq(test_copy_into(test_target_path(name), dst), 0,
		     "cannot copy %s into chroot %s", name, in->root);
	snprintf(b, 1024, "/tmp/%s", name);
	return b;
}

pid_t test_spawn(const struct interp *in, const char *const *args, FILE **out)
{
	char root[1024];
	const char *argv[32];
	int fds[2], n = 0;
	pid_t pid;

	if (in->root) {
		struct stat st;

		snprintf(root, sizeof(root), "%s/%s", test_chroots(), in->root);
		cr_assert(stat(root, &st) == 0,
			  "chroot %s missing: run scripts/provision-chroots", root);
		argv[n++] = "chroot";
		argv[n++] = root;
	}
	argv[n++] = in->bin;
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	cr_assert(pipe(fds) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		/* a group of its own, so that test_stop() ends its children too */
		setpgid(0, 0);
		/* and dies with the test, should an assertion end it first */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		for (const char *const *e = test_env(in); e && *e; e++)
			putenv((char *)*e);
		/* chroot(8) execs the interpreter: the pid stays the same */
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	*out = fdopen(fds[0], "r");
	cr_assert(*out);
	return pid;
}

void test_ready(pid_t pid, const struct interp *in, FILE *out, char *ready, size_t cap)
{
	if (!fgets(ready, (int)cap, out)) {
		int status;

		waitpid(pid, &status, 0);
		cr_assert_fail("%s did not start (status %d)", in->bin, status);
	}
	ready[strcspn(ready, "\n")] = '\0';
	/* keep the pipe open in a leaked FILE: closing it would SIGPIPE the target */
}

pid_t test_start(const struct interp *in, const char *const *args, char *ready, size_t cap)
{
	FILE *f;
	pid_t pid = test_spawn(in, args, &f);

	test_ready(pid, in, f, ready, cap);
	return pid;
}

void test_stop(pid_t pid)
{
	int status;

	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

static char *slurp_fd(int fd)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;

	while ((n = read(fd, buf + len, cap - len - 1)) > 0 || (n < 0 && errno == EINTR)) {
		if (n < 0)
			continue;
		len += (size_t)n;
		if (cap - len < 2) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
	}
	buf[len] = '\0';
	return buf;
}

int test_pyrospy(const char *const *args, char **out, char **err)
{
	return test_pyrospy_wrapped(NULL, args, out, err);
}

int test_pyrospy_wrapped(const char *const *wrap, const char *const *args, char **out,
			 char **err)
{
	const char *bin = getenv("PYROSPY");
	char path[1024], errpath[] = "/tmp/pyrospy-test-err-XXXXXX";
	const char *argv[64];
	int fds[2], efd, status, n = 0;
	pid_t pid;

	if (!bin) {
		snprintf(path, sizeof(path), "%s/pyrospy", BUILDDIR);
		bin = path;
	}
	for (int i = 0; wrap && wrap[i] && n < 16; i++)
		argv[n++] = wrap[i];
	argv[n++] = bin;
	for (int i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	efd = mkstemp(errpath);
	cr_assert(efd >= 0);
	unlink(errpath);
	cr_assert(pipe(fds) == 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(efd, 2);
		close(fds[0]);
		close(fds[1]);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	*out = slurp_fd(fds[0]);
	close(fds[0]);
	waitpid(pid, &status, 0);
	lseek(efd, 0, SEEK_SET);
	*err = slurp_fd(efd);
	close(efd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static unsigned long folded_count(const char *folded, const char *needle, int leaf)
{
	unsigned long total = 0;
	const char *line = folded;
	size_t nlen = strlen(needle);

	while (*line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *sp = NULL;

		for (size_t i = len; i-- > 0;)
			if (line[i] == ' ') {
				sp = line + i;
				break;
			}
		if (sp) {
			char *stack = strndup(line, (size_t)(sp - line));
			size_t slen = (size_t)(sp - line);

			if (leaf ? slen >= nlen && !strcmp(stack + slen - nlen, needle)
				 : strstr(stack, needle) != NULL)
				total += strtoul(sp + 1, NULL, 10);
			free(stack);
		}
		line = nl ? nl + 1 : line + len;
	}
	return total;
}

unsigned long test_folded_count(const char *folded, const char *needle)
{
	return folded_count(folded, needle, 0);
}

unsigned long test_folded_count_leaf(const char *folded, const char *needle)
{
	return folded_count(folded, needle, 1);
}

size_t *test_indexes(size_t n)
{
	size_t *v = cr_malloc(sizeof(size_t) * n);

	for (size_t i = 0; i < n; i++)
		v[i] = i;
	return v;
}

char *test_profile(const struct interp *in, const char *script, const char *const *extra,
		   const char **path)
{
	const char *sargs[] = { test_target_for(in, script), NULL };
	const char *args[24] = { "record", "--pid" };
	char ready[64], pidbuf[32], *out, *err;
	int n = 2, st;
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));

	*path = sargs[0];
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	args[n++] = pidbuf;
	args[n++] = "-o";
	args[n++] = "-";
	for (int i = 0; extra[i] && n < 22; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	st = test_pyrospy(args, &out, &err);
	test_stop(pid);
	cr_assert_eq(st, 0, "%s: exit %d: %s", in->bin, st, err);
	cr_assert_leq(test_dropped_share(err), 0.01, "%s: dropped samples: %s", in->bin, err);
	free(err);
	return out;
}

double test_dropped_share(const char *err)
{
	const char *p = strstr(err, " dropped (changed under every read)");
	unsigned long samples, dropped;

	if (!p)
		return 0.0;
	/* "..., S samples, D dropped (...)" */
	while (p > err && p[-1] != ' ')
		p--;
	dropped = strtoul(p, NULL, 10);
	p -= strlen(" samples, ");
	cr_assert(p > err && !strncmp(p, " samples, ", 10), "no closing counts in %s", err);
	while (p > err && p[-1] != ' ')
		p--;
	samples = strtoul(p, NULL, 10);
	return samples + dropped ? (double)dropped / (double)(samples + dropped) : 0.0;
}


int test_thread_of(const char *folded, const char *needle, char *tid, size_t cap)
{
	const char *p = strstr(folded, needle), *line, *end;

	if (!p)
		return 0;
	for (line = p; line > folded && line[-1] != '\n'; line--)
		;
	end = strchr(line, ')');
	if (strncmp(line, "thread (", 8) || !end || end > p)
		return 0;
	snprintf(tid, cap, "%.*s", (int)(end - line + 1), line);
	return 1;
}

int test_record_pid(pid_t pid, const char *file, const char *const *extra, char **err)
{
	const char *args[24] = { "record", "--pid" };
	char pidbuf[32], *out;
	int n = 2, st;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	args[n++] = pidbuf;
	args[n++] = "-o";
	args[n++] = file;
	for (int i = 0; extra[i] && n < 22; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	st = test_pyrospy(args, &out, err);
	free(out);
	return st;
}

int test_record_to(const struct interp *in, const char *script, const char *const *extra,
		   const char *file, char **err)
{
	const char *sargs[] = { test_target_for(in, script), NULL };
	char ready[64];
	pid_t pid = test_start(in, sargs, ready, sizeof(ready));
	int st = test_record_pid(pid, file, extra, err);

	test_stop(pid);
	return st;
}

char *test_slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long len;

	cr_assert(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = malloc((size_t)len + 1);
	cr_assert(buf);
	cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
	buf[len] = '\0';
	fclose(f);
	return buf;
}

void test_sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert_lt(n, (int)sizeof(cmd), "command too long: %.80s...", cmd);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

char *test_run(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	cr_assert_not_null(p, "cannot run %s", cmd);
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap);
			cr_assert_not_null(buf);
		}
		n = fread(buf + len, 1, cap - len - 1, p);
		len += n;
	} while (n);
	buf[len] = '\0';
	*status = pclose(p);
	return buf;
}

unsigned long test_samples_written(const char *err)
{
	const char *end = strstr(err, " samples)"), *p = end;

	if (!end)
		return 0;
	while (p > err && p[-1] != '(')
		p--;
	return strtoul(p, NULL, 10);
}

void test_busy_threads_apart(const char *folded, const char *bin, const char *prefix)
{
	char tids[4][32];

	for (int k = 0; k < 4; k++) {
		char fn[64];

		snprintf(fn, sizeof(fn), "%sbusy%d (", prefix, k);
		cr_assert_geq(test_folded_count(folded, fn), 3, "%s: %s missing:\n%s", bin, fn,
			      folded);
		cr_assert(test_thread_of(folded, fn, tids[k], sizeof(tids[k])),
			  "%s: %s has no thread", bin, fn);
		for (int j = 0; j < k; j++)
			cr_assert_str_neq(tids[j], tids[k], "%s: busy%d and busy%d share %s", bin, j,
					  k, tids[k]);
	}
}

pid_t test_receiver(const char *log, const char *extra, char *port, size_t cap)
{
	static const struct interp py = { NULL, "/usr/bin/python3.11", 0, 3, 11 };
	const char *args[8] = { SRCDIR "/tests/receiver.py", "--port", "0", "--log", log };
	int n = 5;

	if (extra) {	/* "--opt" is "--opt 30"; "--opt=V" as it is */
		args[n++] = extra;
		if (!strchr(extra, '='))
			args[n++] = "30";
	}
	args[n] = NULL;
	return test_start(&py, args, port, cap);
}

void test_use_helpers(const struct interp *in)
{
	const char *lang = in->lang == TARGET_PYTHON ? "python" : "ruby";
	const char *var = in->lang == TARGET_PYTHON ? "PYTHONPATH" : "RUBYLIB";
	char dir[1024], src[1024], dst[1024];

	if (!in->root) {
		snprintf(dir, sizeof(dir), "%s/taglibs/%s", SRCDIR, lang);
	} else {
		snprintf(src, sizeof(src), "%s/taglibs/%s", SRCDIR, lang);
		snprintf(dst, sizeof(dst), "%s/%s/tmp", test_chroots(), in->root);
		cr_assert_eq(test_copy_into(src, dst), 0, "cannot copy the %s helpers into chroot %s",
			     lang, in->root);
		snprintf(dir, sizeof(dir), "/tmp");
	}
	cr_assert_eq(setenv(var, dir, 1), 0);
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
	int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);

	return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/*
 * Just enough PNG for Chromium's screenshots: 8-bit RGB or RGBA, not
 * interlaced.  The IDAT chunks joined are one zlib stream of scanlines,
 * each behind a filter byte that must be undone to see the colours.
 */
static void png_decode(const char *path, struct test_pixels *px)
{
	FILE *f = fopen(path, "rb");
	unsigned char *png, *z = NULL, *raw, *prev;
	size_t zlen = 0, len, stride;
	uLongf rawlen;
	long flen;

	cr_assert(f, "no screenshot %s", path);
	fseek(f, 0, SEEK_END);
	flen = ftell(f);
	rewind(f);
	cr_assert(flen > 33, "screenshot too short");
	png = malloc((size_t)flen);
	cr_assert_eq(fread(png, 1, (size_t)flen, f), (size_t)flen);
	fclose(f);
	len = (size_t)flen;
	cr_assert(!memcmp(png, "\x89PNG\r\n\x1a\n", 8), "not a PNG");
	for (size_t off = 8; off + 12 <= len;) {
		uint32_t clen = be32(png + off);
		const unsigned char *type = png + off + 4, *data = png + off + 8;

		cr_assert(clen <= len - off - 12, "truncated chunk");
		if (!memcmp(type, "IHDR", 4)) {
			px->w = be32(data);
			px->h = be32(data + 4);
			cr_assert_eq(data[8], 8, "bit depth %d", data[8]);
			cr_assert(data[9] == 2 || data[9] == 6, "colour type %d", data[9]);
			cr_assert_eq(data[12], 0, "interlaced");
			px->bpp = data[9] == 6 ? 4 : 3;
		} else if (!memcmp(type, "IDAT", 4)) {
			z = realloc(z, zlen + clen);
			memcpy(z + zlen, data, clen);
			zlen += clen;
		}
		off += 12 + clen;
	}
	cr_assert(px->w && px->h && px->w < 10000 && px->h < 10000 && z, "bad PNG");
	stride = (size_t)px->w * px->bpp;
	rawlen = (uLongf)((stride + 1) * px->h);
	raw = malloc(rawlen);
	cr_assert_eq(uncompress(raw, &rawlen, z, zlen), Z_OK, "cannot inflate IDAT");
	cr_assert_eq(rawlen, (stride + 1) * px->h);
	px->rgb = malloc(stride * px->h);
	prev = calloc(1, stride);
	for (uint32_t y = 0; y < px->h; y++) {
		unsigned char *in = raw + y * (stride + 1), *out = px->rgb + y * stride;

		for (size_t i = 0; i < stride; i++) {
			int a = i >= px->bpp ? out[i - px->bpp] : 0, b = prev[i];
			int c = i >= px->bpp ? prev[i - px->bpp] : 0, v = in[1 + i];

			switch (in[0]) {
			case 0: break;
			case 1: v += a; break;
			case 2: v += b; break;
			case 3: v += (a + b) / 2; break;
			case 4: v += paeth(a, b, c); break;
			default: cr_assert_fail("filter %d", in[0]);
			}
			out[i] = (unsigned char)v;
		}
		memcpy(prev, out, stride);
	}
	free(prev);
	free(raw);
	free(z);
	free(png);
}

void test_screenshot(const char *svg, const char *png, struct test_pixels *px)
{
	char dir[] = "/tmp/pyrospy-chromium-XXXXXX", cmd[4096];
	int st;

	cr_assert(mkdtemp(dir));
	unlink(png);
	/* its own profile directory: another chromium may be running */
	snprintf(cmd, sizeof(cmd),
		 "timeout 90 chromium --headless --no-sandbox --disable-gpu --user-data-dir=%s "
		 "--screenshot=%s --window-size=1200,800 file://%s >/dev/null 2>&1",
		 dir, png, svg);
	st = system(cmd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(st, 0, "chromium failed (status %d): is /usr/bin/chromium installed?", st);
	png_decode(png, px);
	cr_assert_eq(px->w, 1200);
}

void test_svg_onload(const char *svg, const char *out, const char *js)
{
	static const char init[] = "onload=\"init(evt)\"";
	char *s = test_slurp(svg), *at = strstr(s, init);
	FILE *f = fopen(out, "w");

	cr_assert(at, "%s: no onload handler", svg);
	cr_assert(f, "cannot create %s", out);
	fwrite(s, 1, (size_t)(at - s), f);
	fputs("onload=\"init(evt);", f);
	for (const char *c = js; *c; c++) {
		switch (*c) {
		case '\'': fputs("&apos;", f); break;
		case '"': fputs("&quot;", f); break;
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		default: putc(*c, f);
		}
	}
	fputs(at + strlen(init) - 1, f);
	cr_assert_eq(fclose(f), 0);
	free(s);
}

char *test_dom(const char *svg)
{
	char dir[] = "/tmp/pyrospy-chromium-XXXXXX", cmd[4096], *dom;
	int st;

	cr_assert(mkdtemp(dir));
	/* its own profile directory: another chromium may be running */
	snprintf(cmd, sizeof(cmd),
		 "timeout 90 chromium --headless --no-sandbox --disable-gpu --user-data-dir=%s "
		 "--dump-dom file://%s 2>/dev/null", dir, svg);
	dom = test_run(cmd, &st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	cr_assert_eq(st, 0, "chromium failed (status %d): is /usr/bin/chromium installed?", st);
	return dom;
}

pid_t test_first_child(pid_t pid)
{
	char path[64];
	FILE *f;
	int got, child;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	f = fopen(path, "r");
	cr_assert_not_null(f, "cannot open %s", path);
	got = fscanf(f, "%d", &child);
	fclose(f);
	cr_assert_eq(got, 1, "%d has no child", (int)pid);
	return (pid_t)child;
}

unsigned long test_folded_file_total(const char *file)
{
	FILE *f = fopen(file, "r");
	char line[16384];
	unsigned long total = 0;

	cr_assert_not_null(f, "no %s", file);
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' ');

		if (sp)
			total += strtoul(sp + 1, NULL, 10);
	}
	fclose(f);
	return total;
}

int test_interp_argv(const struct interp *in, const char *script, const char **args, int n)
{
	static char root[1024];

	if (in->root) {
		snprintf(root, sizeof(root), "%s/%s", test_chroots(), in->root);
		args[n++] = "chroot";
		args[n++] = root;
	}
	args[n++] = in->bin;
	args[n++] = script;
	return n;
}

unsigned long test_folded_count2(const char *folded, const char *a, const char *b)
{
	unsigned long total = 0;

	for (const char *line = folded; *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[8192];

		if (len < sizeof(buf)) {
			const char *sp;

			memcpy(buf, line, len);
			buf[len] = '\0';
			sp = strrchr(buf, ' ');
			if (sp && strstr(buf, a) && (!b || strstr(buf, b)))
				total += strtoul(sp + 1, NULL, 10);
		}
		line += len + (end ? 1 : 0);
	}
	return total;
}

int test_connect(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { 15, 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "connect: %s",
		     strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

void test_send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		cr_assert_gt(n, 0, "send: %s", strerror(errno));
		buf += n;
		len -= (size_t)n;
	}
}

/* The whole response on fd, until the server hangs up (15 s at most); closes fd. */
char *test_read_all(int fd, size_t *len)
{
	size_t cap = 1 << 16;
	char *buf = malloc(cap);
	ssize_t n;

	*len = 0;
	while ((n = recv(fd, buf + *len, cap - 1 - *len, 0)) > 0) {
		*len += (size_t)n;
		if (cap - 1 - *len < 4096)
			buf = realloc(buf, cap *= 2);
	}
	cr_assert_eq(n, 0, "no end of the response in 15 s (%s): %.*s", strerror(errno),
		     (int)*len, buf);
	buf[*len] = '\0';
	close(fd);
	return buf;
}
