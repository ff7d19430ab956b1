/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_target.h"
#include "python/pyreader.h"
#include "ruby/rbreader.h"
#include "proc/target.h"

/*
 * Write a reader fuzz input (fuzz_target.h) from a live interpreter:
 *
 *   snapshot PID OUT
 *
 * The target is stopped; the real reader is created and takes three
 * samples while every remote read is recorded; the pages those reads
 * touched are copied, laid end to end in one image and relocated: every
 * word that points into a copied page is rewritten to point at its copy
 * at FUZZ_BASE (pages that cannot be read are zeros).  Ranges the fuzz
 * target reads the same stacks (and tags) without are then left out.  The
 * result is what the reader saw, in the one buffer the fuzz targets give
 * it, so fuzzing starts deep inside a real stack.
 */
#define PAGE 4096u
/*
 * Ranges closer than this become one: pointers into one object keep
 * their distance (a Ruby VM stack's start, which no read touches, and its
 * frames at the far end; run Ruby with a small RUBY_THREAD_VM_STACK_SIZE).
 */
#define GAP (20u << 10)

struct range {
	uint64_t start, end;	/* [start, end): the real addresses */
	uint64_t off;		/* where the copy starts in the image */
	unsigned char *data;	/* the copy */
	int keep;		/* in the image */
};

static struct range *ranges;
static size_t nranges, aranges;
static int recording;

static void record(uint64_t addr, uint64_t len)
{
	if (!len)
		return;
	if (nranges == aranges) {
		aranges = aranges ? 2 * aranges : 256;
		ranges = realloc(ranges, aranges * sizeof(*ranges));
		if (!ranges)
			abort();
	}
	ranges[nranges].start = addr & ~(uint64_t)(PAGE - 1);
	ranges[nranges].end = (addr + len + PAGE - 1) & ~(uint64_t)(PAGE - 1);
	nranges++;
}

/* procmem.c's reads come here (this definition wins over libc's). */
ssize_t process_vm_readv(pid_t pid, const struct iovec *local, unsigned long liovcnt,
			 const struct iovec *remote, unsigned long riovcnt, unsigned long flags)
{
	ssize_t n = syscall(SYS_process_vm_readv, pid, local, liovcnt, remote, riovcnt, flags);
	size_t left = n > 0 ? (size_t)n : 0;

	for (unsigned long i = 0; recording && i < riovcnt && left; i++) {
		size_t l = remote[i].iov_len < left ? remote[i].iov_len : left;

		record((uint64_t)(uintptr_t)remote[i].iov_base, l);
		left -= l;
	}
	return n;
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void merge(void)
{
	size_t n = 0;

	qsort(ranges, nranges, sizeof(*ranges), cmp_range);
	for (size_t i = 0; i < nranges; i++) {
		if (n && ranges[i].start <= ranges[n - 1].end + GAP) {
			if (ranges[i].end > ranges[n - 1].end)
				ranges[n - 1].end = ranges[i].end;
		} else {
			ranges[n++] = ranges[i];
		}
	}
	nranges = n;
}

/*
 * One range a page, so that pages can be left out one by one (the image
 * is laid out, and pointers relocated, page by page).
 */
static void split(void)
{
	struct range *pages;
	size_t n = 0, k = 0;

	for (size_t i = 0; i < nranges; i++)
		n += (ranges[i].end - ranges[i].start) / PAGE;
	pages = calloc(n, sizeof(*pages));
	if (!pages)
		abort();
	for (size_t i = 0; i < nranges; i++)
		for (uint64_t a = ranges[i].start; a < ranges[i].end; a += PAGE)
			pages[k++] = (struct range){ .start = a, .end = a + PAGE };
	free(ranges);
	ranges = pages;
	nranges = aranges = n;
}

/* The kept range holding v (its end counts: a pointer one past a copy). */
static const struct range *holder(uint64_t v)
{
	size_t lo = 0, hi = nranges;

	while (lo < hi) {	/* the first range ending after v */
		size_t mid = lo + (hi - lo) / 2;

		if (ranges[mid].end <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < nranges && ranges[lo].keep && v >= ranges[lo].start)
		return &ranges[lo];
	if (lo && ranges[lo - 1].keep && v == ranges[lo - 1].end)
		return &ranges[lo - 1];
	return NULL;
}

/* The fuzz input of the kept ranges, relocated; its size in *size. */
static unsigned char *build(unsigned int layout, uint64_t runtime, size_t *size)
{
	const struct range *rt;
	unsigned char *buf, *img;
	uint64_t len = 0;

	for (size_t i = 0; i < nranges; i++) {
		ranges[i].off = len;
		if (ranges[i].keep)
			len += ranges[i].end - ranges[i].start;
	}
	buf = malloc(FUZZ_HDR + len);
	if (!buf)
		abort();
	img = buf + FUZZ_HDR;
	for (size_t i = 0; i < nranges; i++)
		if (ranges[i].keep)
			memcpy(img + ranges[i].off, ranges[i].data, ranges[i].end - ranges[i].start);
	for (uint64_t o = 0; o + 8 <= len; o += 8) {
		uint64_t v;
		const struct range *r;

		memcpy(&v, img + o, 8);
		if (v < PAGE || !(r = holder(v)))
			continue;
		v = FUZZ_BASE + r->off + (v - r->start);
		memcpy(img + o, &v, 8);
	}
	rt = holder(runtime);
	runtime = rt->off + (runtime - rt->start);
	buf[0] = (unsigned char)layout;
	buf[1] = FUZZ_IDLE | 2 << 2;	/* three samples, idle threads too */
	for (int i = 0; i < 4; i++)
		buf[2 + i] = (unsigned char)(runtime >> (8 * i));
	*size = FUZZ_HDR + (size_t)len;
	return buf;
}

struct sig {
	char *s;
	size_t len;
};

static void sig_stack(void *arg, const struct stack *st)
{
	struct sig *g = arg;

	for (unsigned int i = 0; i < st->depth; i++) {
		char line[8192];
		int n = snprintf(line, sizeof(line), "%s %s %d;", st->frame[i].name,
				 st->frame[i].file, st->frame[i].line);

		g->s = realloc(g->s, g->len + (size_t)n + 2);
		if (!g->s)
			abort();
		memcpy(g->s + g->len, line, (size_t)n);
		g->len += (size_t)n;
		g->s[g->len++] = '\n';
		g->s[g->len] = '\0';
	}
	/* the tags too: what the tag readers need stays in the image */
	if (st->tags) {
		size_t n = strlen(st->tags);

		g->s = realloc(g->s, g->len + n + 4);
		if (!g->s)
			abort();
		g->len += (size_t)sprintf(g->s + g->len, "{%s}\n", st->tags);
	}
}

/* What the fuzz target's reader reads from an input: every frame and tag set of every sample. */
static char *signature(const unsigned char *buf, size_t size, const struct target *real)
{
	struct reader_opts opts = { .idle = 1 };
	struct sig g = { NULL, 0 };
	struct fuzz_input in;
	struct target t;

	fuzz_input_parse(&in, buf, size);
	fuzz_target_init(&t, &in);
	t.lang = real->lang;
	t.major = real->major;
	t.minor = real->minor;
	t.patch = real->patch;
	if (t.lang == TARGET_PYTHON) {
		struct pyreader *pr;

		if (!pyreader_new_at(&t, &opts, in.runtime, &pr)) {
			for (unsigned int i = 0; i < FUZZ_SAMPLES(in.flags); i++)
				pyreader_sample(pr, sig_stack, &g);
			pyreader_free(pr);
		}
	} else {
		struct rbreader *rr;

		if (!rbreader_new_at(&t, &opts, in.runtime, &rr)) {
			for (unsigned int i = 0; i < FUZZ_SAMPLES(in.flags); i++)
				rbreader_sample(rr, sig_stack, &g);
			rbreader_free(rr);
		}
	}
	fuzz_target_release(&t);
	return g.s;
}


static void stop(pid_t pid)
{
	char path[64], buf[512], *p;

	kill(pid, SIGSTOP);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 200; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = '\0';
		p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'T')
			return;
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
}

static void print_stack(void *arg, const struct stack *st)
{
	fprintf(stderr, "snapshot: thread %d, %u frames:", (int)st->tid, st->depth);
	for (unsigned int i = 0; i < st->depth && i < 6; i++)
		fprintf(stderr, " %s", st->frame[i].name);
	fprintf(stderr, "\n");
}

/*
 * Where the rb_vm_t pointer is: ruby_current_vm_ptr, or (3.3+, hidden)
 * what ruby_vm_at_exit() loads first, as rbreader.c finds it.
 */
static uint64_t ruby_vm_ptr(struct target *t)
{
	uint64_t addr, fn, got, got_size;
	unsigned char code[64];
	int tls;

	if (!target_symbol(t, "ruby_current_vm_ptr", &addr, &tls) && !tls)
		return addr;
	if (target_symbol(t, "ruby_vm_at_exit", &fn, &tls) ||
	    procmem_read(&t->mem, fn, code, sizeof(code)))
		return 0;
	for (size_t i = 0; i + 7 <= sizeof(code); i++) {
		int32_t disp;

		if ((code[i] != 0x48 && code[i] != 0x4c) || code[i + 1] != 0x8b ||
		    (code[i + 2] & 0xc7) != 0x05)
			continue;
		memcpy(&disp, code + i + 3, sizeof(disp));
		addr = fn + i + 7 + (uint64_t)(int64_t)disp;
		if (!target_section(t, ".got", &got, &got_size) && addr >= got &&
		    addr < got + got_size && procmem_read_u64(&t->mem, addr, &addr))
			return 0;
		return addr;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct reader_opts opts = { .idle = 1 };
	struct target t;
	uint64_t runtime = 0, size;
	unsigned char *buf;
	char *want;
	unsigned int layout;
	size_t len, dropped = 0;
	pid_t pid;
	enum perr err;
	FILE *out;
	int tls;

	if (argc != 3) {
		fprintf(stderr, "usage: snapshot PID OUT\n");
		return 2;
	}
	pid = (pid_t)atoi(argv[1]);
	if ((err = target_open(&t, pid))) {
		fprintf(stderr, "snapshot: cannot open %d: %s\n", (int)pid, perr_str(err));
		return 1;
	}
	stop(pid);
	recording = 1;
	if (t.lang == TARGET_PYTHON) {
		struct pyreader *pr;

		if (target_symbol(&t, "_PyRuntime", &runtime, &tls))
			target_section(&t, ".PyRuntime", &runtime, &size);
		layout = fuzz_py_layout(t.minor);
		if (!(err = pyreader_new(&t, &opts, &pr))) {
			for (int i = 0; i < 3; i++)
				pyreader_sample(pr, print_stack, NULL);
			pyreader_free(pr);
		}
	} else {
		struct rbreader *rr;

		runtime = ruby_vm_ptr(&t);
		layout = fuzz_rb_layout(t.major, t.minor, t.patch);
		if (!(err = rbreader_new(&t, &opts, &rr))) {
			for (int i = 0; i < 3; i++)
				rbreader_sample(rr, print_stack, NULL);
			rbreader_free(rr);
		}
	}
	recording = 0;
	if (err || !runtime) {
		kill(pid, SIGCONT);
		fprintf(stderr, "snapshot: no reader for %d: %s\n", (int)pid, perr_str(err));
		return 1;
	}
	record(runtime, 8);
	merge();
	split();
	/* page by page: a page gone since it was read stays zero */
	for (size_t i = 0; i < nranges; i++) {
		ranges[i].data = calloc(1, ranges[i].end - ranges[i].start);
		if (!ranges[i].data)
			abort();
		ranges[i].keep = 1;
		for (uint64_t a = ranges[i].start; a < ranges[i].end; a += PAGE)
			procmem_read(&t.mem, a, ranges[i].data + (a - ranges[i].start), PAGE);
	}
	kill(pid, SIGCONT);

	/* Leave out every range the fuzz target's reader does without. */
	buf = build(layout, runtime, &len);
	want = signature(buf, len, &t);
	free(buf);
	if (!want) {
		fprintf(stderr, "snapshot: the fuzz target reads no stack from the image\n");
		return 1;
	}
	for (size_t i = 0; i < nranges; i++) {
		char *got;

		if (runtime >= ranges[i].start && runtime < ranges[i].end)
			continue;
		ranges[i].keep = 0;
		buf = build(layout, runtime, &len);
		got = signature(buf, len, &t);
		free(buf);
		if (!got || strcmp(got, want))
			ranges[i].keep = 1;
		else
			dropped++;
		free(got);
	}
	buf = build(layout, runtime, &len);
	out = fopen(argv[2], "wb");
	if (!out || fwrite(buf, 1, len, out) != len || fclose(out)) {
		fprintf(stderr, "snapshot: cannot write '%s': %s\n", argv[2], strerror(errno));
		return 1;
	}
	fprintf(stderr, "snapshot: %s %s: %zu of %zu pages, %zu bytes\n",
		target_lang_name(t.lang), t.version, nranges - dropped, nranges, len);
	for (size_t i = 0; i < nranges; i++)
		free(ranges[i].data);
	free(buf);
	free(want);
	free(ranges);
	target_close(&t);
	return 0;
}
