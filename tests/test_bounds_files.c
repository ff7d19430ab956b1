/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "helpers.h"
#include "util/pb.h"

/*
 * Issue 33, items 2, 4, 5 and 9: the files pyrospy report and diff read
 * are the attacker's.  Each is made here, owned by nobody in a directory
 * of nobody's, and read by root's pyrospy, whose peak RSS and CPU time
 * come from wait4().  The bounds hold for the sanitizer build (about 2-3
 * times the memory of a plain one) and the plain one, and sit well below
 * what the code before the fix took:
 *
 *   - a 65 KB gzipped pprof profile of 32 Mi empty strings: 1.38 GB
 *     (plain build; more with the sanitizers), now refused at 4 Mi;
 *   - a pprof profile whose one location has 4000 lines, named by 60000
 *     samples of a few bytes: 2.4e8 frames, now refused at 8 a byte;
 *   - a 7 KB raw recording of 149796 samples of one 4096-deep stack (and
 *     of its parent, in turns): 12.2 s of CPU, now one walk a stack;
 *   - a FIFO given to report hung it for ever; a link of nobody's to a
 *     root-only file was followed; counts that add up past 2^64 wrapped.
 */
#define LIMIT 30	/* seconds before a hung pyrospy is killed */

static char dir[64];		/* the attacker's directory, nobody's */
static char secret_dir[64];	/* root-only */

static void files_setup(void)
{
	cr_assert_eq(geteuid(), 0, "these tests attack root's pyrospy: run them as root");
	strcpy(dir, "/tmp/pyrospy-bounds-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	test_sh("chmod 755 '%s' && chown nobody:nogroup '%s'", dir, dir);
	strcpy(secret_dir, "/tmp/pyrospy-secret-XXXXXX");
	cr_assert_not_null(mkdtemp(secret_dir));
}

static void files_teardown(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", dir, secret_dir);
	if (system(cmd))
		cr_log_warn("cannot remove %s", dir);
}

/* suite bounds is test_bounds_mem.c's too: each test of it here says its own */
TestSuite(files, .init = files_setup, .fini = files_teardown, .timeout = 60);

/* dir/name, written with n bytes of data and given to nobody. */
static const char *plant(const char *name, const void *data, size_t n)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fwrite(data, 1, n, f), n);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(chown(path, 65534, 65534), 0);
	return path;
}

/* All of fd from its start (caller frees). */
static char *slurp(int fd)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t n;

	lseek(fd, 0, SEEK_SET);
	while (buf && (n = read(fd, buf + len, cap - len - 1)) > 0) {
		len += (size_t)n;
		if (cap - len < 2)
			buf = realloc(buf, cap *= 2);
	}
	cr_assert_not_null(buf);
	buf[len] = '\0';
	return buf;
}

struct run {
	int status;		/* exit status, 128 + signal, or -1 timed out */
	double cpu;		/* user + system seconds */
	double rss;		/* peak, MiB */
	double seconds;
	char *out, *err;
};

/* pyrospy ARGS as root, with its rusage; killed after LIMIT seconds. */
static struct run run(const char *const *args)
{
	const char *bin = getenv("PYROSPY");
	const char *argv[32];
	char opath[] = "/tmp/pyrospy-bounds-out-XXXXXX", epath[] = "/tmp/pyrospy-bounds-err-XXXXXX";
	struct run r = { 0 };
	struct timespec t0, t1;
	struct rusage ru;
	int n = 0, ofd, efd, st;
	pid_t pid;

	argv[n++] = bin ? bin : BUILDDIR "/pyrospy";
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	ofd = mkstemp(opath);
	efd = mkstemp(epath);
	cr_assert(ofd >= 0 && efd >= 0);
	unlink(opath);
	unlink(epath);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		dup2(ofd, 1);
		dup2(efd, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	for (;;) {
		pid_t got = wait4(pid, &st, WNOHANG, &ru);

		cr_assert(got >= 0);
		if (got == pid)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (t1.tv_sec - t0.tv_sec > LIMIT && r.status != -1) {
			kill(pid, SIGKILL);
			r.status = -1;
		}
		usleep(10000);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r.seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (r.status != -1)
		r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r.cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		(double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	r.rss = (double)ru.ru_maxrss / 1024;
	r.out = slurp(ofd);
	r.err = slurp(efd);
	close(ofd);
	close(efd);
	cr_log_info("%s %s: exit %d, %.2f s CPU, %.0f MiB RSS, %.2f s", args[0], args[1], r.status,
		    r.cpu, r.rss, r.seconds);
	return r;
}

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

/* One "pyrospy: error: " line and its hint, nothing else. */
static void assert_one_error(const struct run *r, const char *what)
{
	const char *hint = strstr(r->err, "\nhint: ");

	cr_assert(!strncmp(r->err, "pyrospy: error: ", 16) && strstr(r->err, what) && hint &&
		  !strchr(hint + 1, '\n')[1], "want one error with '%s' and a hint, got:\n%s", what,
		  r->err);
}

/* Deflate n copies of the len bytes of unit into a gzip member (caller frees). */
static unsigned char *gzip_repeat(const void *head, size_t hlen, const void *unit, size_t len,
				  size_t n, const void *tail, size_t tlen, size_t *out)
{
	size_t cap = 1 << 20;
	unsigned char *buf = malloc(cap), *chunk;
	size_t per = (1u << 16) / len ? (1u << 16) / len : 1, done = 0;
	z_stream z;

	memset(&z, 0, sizeof(z));
	cr_assert(buf);
	cr_assert_eq(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
	chunk = malloc(per * len);
	for (size_t i = 0; i < per; i++)
		memcpy(chunk + i * len, unit, len);
	z.next_out = buf;
	z.avail_out = (uInt)cap;
	z.next_in = (unsigned char *)head;
	z.avail_in = (uInt)hlen;
	cr_assert_eq(deflate(&z, Z_NO_FLUSH), Z_OK);
	while (done < n) {
		size_t k = n - done < per ? n - done : per;

		z.next_in = chunk;
		z.avail_in = (uInt)(k * len);
		cr_assert_eq(deflate(&z, Z_NO_FLUSH), Z_OK);
		cr_assert(z.avail_out > 0, "the bomb does not fit its buffer");
		done += k;
	}
	z.next_in = (unsigned char *)tail;
	z.avail_in = (uInt)tlen;
	cr_assert_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
	*out = cap - z.avail_out;
	deflateEnd(&z);
	free(chunk);
	return buf;
}

/*
 * Issue 33 item 2: the string table of a pprof profile is free to grow:
 * each empty string is two bytes inflated, and cost 40 of memory.  The
 * profile is refused once it holds over 2^22 entries, with the 64 MiB it
 * inflates to and the strings made in place: a few hundred MiB at most,
 * for report and for diff, which reads two.
 */
Test(bounds, pprof_string_bomb, .init = files_setup, .fini = files_teardown, .timeout = 120)
{
	static const unsigned char empty[] = { 0x32, 0x00 };	/* string_table: "" */
	size_t n;
	unsigned char *gz = gzip_repeat(NULL, 0, empty, sizeof(empty), 32u << 20, NULL, 0, &n);
	const char *path = plant("bomb.pb.gz", gz, n);
	char in[128], out[128];
	struct run r;

	free(gz);
	cr_assert_lt(n, 100000, "the bomb is %zu bytes", n);
	snprintf(in, sizeof(in), "%s", path);
	snprintf(out, sizeof(out), "%s/out.svg", secret_dir);
	r = run((const char *const[]){ "report", in, "-f", "folded", "-o", out, NULL });
	cr_assert_lt(r.rss, 600, "report of the bomb: %.0f MiB RSS", r.rss);
	cr_assert_lt(r.cpu, 8, "report of the bomb: %.2f s CPU", r.cpu);
	cr_assert_eq(r.status, 7, "exit %d: %s", r.status, r.err);
	assert_one_error(&r, "over 4194304 strings");
	run_free(&r);
	r = run((const char *const[]){ "diff", in, in, "-o", out, NULL });
	cr_assert_lt(r.rss, 600, "diff of the bomb: %.0f MiB RSS", r.rss);
	cr_assert_lt(r.cpu, 8, "diff of the bomb: %.2f s CPU", r.cpu);
	cr_assert_eq(r.status, 7, "exit %d: %s", r.status, r.err);
	assert_one_error(&r, "over 4194304 strings");
	run_free(&r);
}

/* A pprof profile: its body in b, gzipped into dir/name. */
static const char *plant_pprof(const char *name, const struct pb *b)
{
	struct pb gz = { 0 };
	const struct pb *parts[] = { b };
	const char *path;

	cr_assert_eq(pb_gzip(parts, 1, &gz), 0);
	path = plant(name, gz.buf, gz.len);
	pb_release(&gz);
	return path;
}

/* The head of a profile: strings "", "samples", "count", "f", "f.go"; function 1. */
static void pprof_head(struct pb *b)
{
	static const char *const str[] = { "", "samples", "count", "f", "f.go" };
	size_t m;

	m = pb_open(b, 1);
	pb_int(b, 1, 1);
	pb_int(b, 2, 2);
	pb_close(b, m);
	for (size_t i = 0; i < sizeof(str) / sizeof(*str); i++)
		pb_str(b, 6, str[i]);
	m = pb_open(b, 5);
	pb_int(b, 1, 1);
	pb_int(b, 2, 3);
	pb_int(b, 4, 4);
	pb_close(b, m);
}

/* A sample of location 1, of value v. */
static void pprof_sample(struct pb *b, uint64_t v)
{
	size_t m = pb_open(b, 2);

	pb_int(b, 1, 1);
	pb_int(b, 2, (int64_t)v);
	pb_close(b, m);
}

/*
 * A location of many lines (inlined functions, as far as the format
 * says) named by many samples: each sample of 6 bytes expands to 4000
 * frames.  The samples may expand to 8 frames a byte of the profile
 * (and 2^20 more): past that it is refused, in a fraction of a second.
 */
Test(bounds, pprof_location_lines, .init = files_setup, .fini = files_teardown, .timeout = 120)
{
	struct pb b = { 0 };
	size_t m;
	char in[128], out[128];
	struct run r;

	pprof_head(&b);
	m = pb_open(&b, 4);
	pb_int(&b, 1, 1);
	for (int i = 0; i < 4000; i++) {
		size_t l = pb_open(&b, 4);

		pb_int(&b, 1, 1);
		pb_int(&b, 2, i + 1);
		pb_close(&b, l);
	}
	pb_close(&b, m);
	for (int i = 0; i < 60000; i++)
		pprof_sample(&b, 1);
	snprintf(in, sizeof(in), "%s", plant_pprof("lines.pb.gz", &b));
	pb_release(&b);
	snprintf(out, sizeof(out), "%s/out.folded", secret_dir);
	r = run((const char *const[]){ "report", in, "-f", "folded", "-o", out, NULL });
	cr_assert_lt(r.cpu, 3, "report: %.2f s CPU", r.cpu);
	cr_assert_lt(r.rss, 300, "report: %.0f MiB RSS", r.rss);
	cr_assert_eq(r.status, 7, "exit %d: %s", r.status, r.err);
	assert_one_error(&r, "frames a byte");
	run_free(&r);
}

/* Raw records, appended to a growing buffer. */
struct recs {
	unsigned char *buf;
	size_t len, cap;
};

static void rec_byte(struct recs *r, unsigned char c)
{
	if (r->len == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 4096;
		r->buf = realloc(r->buf, r->cap);
		cr_assert(r->buf);
	}
	r->buf[r->len++] = c;
}

static void rec_varint(struct recs *r, uint64_t v)
{
	while (v >= 0x80) {
		rec_byte(r, (unsigned char)(v | 0x80));
		v >>= 7;
	}
	rec_byte(r, (unsigned char)v);
}

static void rec_str(struct recs *r, const char *s)
{
	rec_byte(r, 'S');
	rec_varint(r, strlen(s));
	while (*s)
		rec_byte(r, (unsigned char)*s++);
}

static void le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* A raw recording of the records in r[0 .. n - 1], a block each, as dir/name. */
static const char *plant_raw(const char *name, const struct recs *r, size_t n)
{
	size_t len = 9;
	unsigned char *file;
	const char *path;

	for (size_t i = 0; i < n; i++)
		len += 12 + compressBound(r[i].len);
	file = malloc(len);
	cr_assert_not_null(file);
	memcpy(file, "PYSPYRAW\x01", 9);
	len = 9;
	for (size_t i = 0; i < n; i++) {
		uLongf zlen = compressBound(r[i].len);

		cr_assert(r[i].len <= (1u << 20));
		cr_assert_eq(compress2(file + len + 12, &zlen, r[i].buf, r[i].len, 9), Z_OK);
		le32(file + len, (uint32_t)zlen);
		le32(file + len + 4, (uint32_t)r[i].len);
		le32(file + len + 8, (uint32_t)crc32(0L, file + len + 12, (uInt)zlen));
		len += 12 + zlen;
	}
	path = plant(name, file, len);
	free(file);
	return path;
}

/*
 * Issue 33 item 4: a raw recording's samples name stack nodes, and a node
 * may be 4096 frames deep: 149796 samples of 6 bytes (7 KB compressed)
 * made report walk 6e8 frames, 12 s of CPU.  A stack is now walked once,
 * when first seen; a sample of it after that costs the same at any depth.
 * Samples of the deep node and of its parent take turns, so that no
 * cache of the last stack alone would do.  The profile is whole.
 */
Test(bounds, raw_deep_samples, .init = files_setup, .fini = files_teardown, .timeout = 120)
{
	struct recs block[2] = { { 0 }, { 0 } }, *rec = block;
	const uint32_t depth = 4096, samples = 149796;
	char in[128], out[128], line[64];
	struct run r;
	char *folded;
	unsigned long leaf = 0, parent = 0;

	rec_byte(rec, 'M');
	rec_varint(rec, 1700000000000000ull);
	rec_varint(rec, 100);
	rec_varint(rec, 0);
	rec_varint(rec, 0);
	rec_str(rec, "deep");
	rec_str(rec, "deep.py");
	rec_byte(rec, 'F');
	rec_varint(rec, 0);
	rec_varint(rec, 1);
	rec_varint(rec, 2);
	for (uint32_t i = 0; i < depth; i++) {
		rec_byte(rec, 'K');
		rec_varint(rec, i);
		rec_varint(rec, 0);
	}
	rec_byte(rec, 'T');
	rec_varint(rec, 4242);
	rec_varint(rec, 4242);
	rec_varint(rec, 1);
	rec_varint(rec, 0);
	for (uint32_t i = 0; i < samples; i++) {
		/* a block holds 1 MiB of records */
		if (i == samples / 2)
			rec++;
		rec_byte(rec, 'P');
		rec_varint(rec, i ? 0 : 10);
		rec_varint(rec, 0);
		rec_varint(rec, i % 2 ? depth - 1 : depth);
		rec_varint(rec, 0);
		rec_byte(rec, 0);
	}
	rec_byte(rec, 'E');
	rec_varint(rec, samples);
	rec_varint(rec, 10);
	snprintf(in, sizeof(in), "%s", plant_raw("deep.raw", block, 2));
	free(block[0].buf);
	free(block[1].buf);
	snprintf(out, sizeof(out), "%s/out.folded", secret_dir);
	r = run((const char *const[]){ "report", in, "-f", "folded", "-o", out, NULL });
	cr_assert_lt(r.cpu, 4, "report of %u samples %u deep: %.2f s CPU", samples, depth, r.cpu);
	cr_assert_lt(r.rss, 300, "report: %.0f MiB RSS", r.rss);
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	folded = test_slurp(out);
	cr_assert_not_null(folded);
	/* two stacks, "deep (deep.py:1);deep (deep.py:1);..." 4096 and 4095 frames deep */
	for (const char *p = folded; *p;) {
		const char *nl = strchr(p, '\n'), *sp;
		size_t frames = 1;

		cr_assert_not_null(nl);
		for (const char *q = p; q < nl; q++)
			frames += *q == ';';
		sp = memrchr(p, ' ', (size_t)(nl - p));
		cr_assert_not_null(sp);
		snprintf(line, sizeof(line), "%.*s", (int)(nl - sp - 1), sp + 1);
		if (frames == depth)
			leaf += strtoul(line, NULL, 10);
		else if (frames == depth - 1)
			parent += strtoul(line, NULL, 10);
		else
			cr_assert_fail("a stack of %zu frames", frames);
		p = nl + 1;
	}
	cr_assert_eq(leaf, samples / 2, "%lu samples of the deep stack", leaf);
	cr_assert_eq(parent, samples / 2, "%lu samples of its parent", parent);
	free(folded);
	run_free(&r);
}

/*
 * Issue 33 item 5: an input planted where others write.  A FIFO made by
 * nobody is refused at once (open() would wait for a writer for ever),
 * without being opened.
 */
Test(files, fifo_input)
{
	char path[128], out[128];
	struct run r;

	snprintf(path, sizeof(path), "%s/profile.folded", dir);
	test_sh("setpriv --reuid=nobody --regid=nogroup --clear-groups mkfifo '%s'", path);
	snprintf(out, sizeof(out), "%s/out.svg", secret_dir);
	r = run((const char *const[]){ "report", path, "-o", out, NULL });
	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	assert_one_error(&r, "it is a FIFO, not a regular file");
	cr_assert_lt(r.seconds, 10);
	run_free(&r);
	r = run((const char *const[]){ "diff", path, path, "-o", out, NULL });
	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	assert_one_error(&r, "it is a FIFO, not a regular file");
	run_free(&r);
}

/*
 * A link of nobody's, in nobody's directory, to a root-only file that
 * reads as a folded profile: followed, its frames would end up in a
 * flame graph root writes 0644.  Refused, as for an output file.
 */
Test(files, symlink_input)
{
	char secret[128], link[128], out[128];
	struct run r;

	snprintf(secret, sizeof(secret), "%s/shadow.folded", secret_dir);
	test_sh("printf 'root_password_hash;x 5\\n' > '%s' && chmod 600 '%s'", secret, secret);
	snprintf(link, sizeof(link), "%s/profile.folded", dir);
	test_sh("setpriv --reuid=nobody --regid=nogroup --clear-groups ln -s '%s' '%s'", secret, link);
	snprintf(out, sizeof(out), "%s/out.svg", secret_dir);
	r = run((const char *const[]){ "report", link, "-o", out, NULL });
	cr_assert_eq(r.status, 1, "exit %d: %s", r.status, r.err);
	assert_one_error(&r, "refused to follow symlink");
	cr_assert(access(out, F_OK) != 0, "report wrote %s", out);
	run_free(&r);
	/* root's own link there is followed */
	test_sh("rm '%s' && ln -s '%s' '%s'", link, secret, link);
	r = run((const char *const[]){ "report", link, "-o", out, NULL });
	cr_assert_eq(r.status, 0, "exit %d: %s", r.status, r.err);
	run_free(&r);
}

/*
 * Issue 33 item 9: counts are summed, and a sum that wraps lies.  Two
 * samples of 2^63 - 2 gave a profile of 2^64 - 4 samples; the profile is
 * refused.  So is a folded profile whose lines do the same.
 */
Test(files, pprof_count_wrap)
{
	struct pb b = { 0 };
	size_t m;
	char in[128], out[128];
	struct run r;

	pprof_head(&b);
	m = pb_open(&b, 4);
	pb_int(&b, 1, 1);
	pb_close(&b, m);
	pprof_sample(&b, INT64_MAX - 1);
	pprof_sample(&b, INT64_MAX - 1);
	snprintf(in, sizeof(in), "%s", plant_pprof("wrap.pb.gz", &b));
	pb_release(&b);
	snprintf(out, sizeof(out), "%s/out.folded", secret_dir);
	r = run((const char *const[]){ "report", in, "-f", "folded", "-o", out, NULL });
	cr_assert_eq(r.status, 7, "exit %d: %s", r.status, r.err);
	assert_one_error(&r, "its counts add up to over 2^63 - 1");
	run_free(&r);
}

Test(files, folded_count_wrap)
{
	char *text = malloc(21 * 10000 + 1), *p = text, in[128], out[128];
	struct run r;

	/* 10000 lines of 999999999999999: about 2^63 + 8e17 */
	for (int i = 0; i < 10000; i++)
		p += sprintf(p, "a;b 999999999999999\n");
	snprintf(in, sizeof(in), "%s", plant("wrap.folded", text, (size_t)(p - text)));
	free(text);
	snprintf(out, sizeof(out), "%s/out.folded", secret_dir);
	r = run((const char *const[]){ "report", in, "-f", "folded", "-o", out, NULL });
	cr_assert_eq(r.status, 7, "exit %d: %s", r.status, r.err);
	assert_one_error(&r, "its counts add up to over 2^63 - 1");
	run_free(&r);
}

/*
 * --cacert is a file named for reading too: a FIFO of nobody's (curl
 * would block on it at the first upload) and nobody's link are refused
 * before anything starts, with the usage error of a CA file that cannot
 * be read.
 */
Test(files, cacert_fifo_and_link)
{
	char fifo[128], link[128];
	const char *const cmd[] = { "exec", "--server", "https://127.0.0.1:9", "--app-name", "a",
				    "--cacert", NULL, "-d", "1", "-o", "/dev/null", "--",
				    "/usr/bin/python3.11", "-c", "pass", NULL };
	const char *args[16];
	struct run r;

	memcpy(args, cmd, sizeof(cmd));
	snprintf(fifo, sizeof(fifo), "%s/ca.pem", dir);
	test_sh("setpriv --reuid=nobody --regid=nogroup --clear-groups mkfifo '%s'", fifo);
	args[6] = fifo;
	r = run(args);
	cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "refused to read CA file") && strstr(r.err, "no regular file"),
		  "%s", r.err);
	run_free(&r);
	snprintf(link, sizeof(link), "%s/ca-link.pem", dir);
	test_sh("setpriv --reuid=nobody --regid=nogroup --clear-groups ln -s /etc/ssl/certs/ca-certificates.crt '%s'",
	   link);
	args[6] = link;
	r = run(args);
	cr_assert_eq(r.status, 2, "exit %d: %s", r.status, r.err);
	cr_assert(strstr(r.err, "refused to read CA file") && strstr(r.err, "another user's"),
		  "%s", r.err);
	run_free(&r);
}
