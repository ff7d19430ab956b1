/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/common.h"
#include "cmd/dump.h"
#include "cmd/dump_json.h"
#include "cmd/options.h"
#include "cmd/session.h"
#include "proc/ptree.h"
#include "proc/target.h"
#include "profile/profile.h"
#include "profile/shortpath.h"
#include "python/pytasks.h"
#include "sample/reader.h"
#include "stack/stack.h"
#include "util/utf8.h"
#include "util/xalloc.h"

struct dump {
	const char *lang;
	unsigned int threads;
	FILE *f;		/* the threads, printed after the header */
	pid_t *tids;		/* the threads the interpreter showed */
	size_t ntid, atid;
	int json;		/* --json: dump_json.h */
	unsigned long more;	/* threads with no frames not listed */
	struct profile prof;	/* the stacks again: their files' short forms */
};

/*
 * In d->f, a file is "\001ID\002", its string id in d->prof: printed by
 * dump_print() once every stack is known, as a short path (the app's
 * directory is that of the main thread's outermost frame).  No control
 * character reaches a name (util/utf8.h), so none is taken for one.
 */
#define FILE_START '\001'
#define FILE_END '\002'

static void dump_print(const char *text, const struct profile *p, const struct shortpath *sp)
{
	for (;;) {
		size_t n = strcspn(text, "\001");
		char *end;
		unsigned long id;

		fwrite(text, 1, n, stdout);
		if (!text[n])
			return;
		id = strtoul(text + n + 1, &end, 10);
		fputs(shortpath_get(sp, profile_str(p, (uint32_t)id)), stdout);
		text = *end == FILE_END ? end + 1 : end;
	}
}

#define DUMP_OTHERS_MAX	4096	/* threads with no interpreter frames listed, at most */

/* A frame's locals (pylocals.h: lines of "name: type = repr"), indented under it. */
static void dump_locals(FILE *f, const char *text)
{
	while (*text) {
		size_t n = strcspn(text, "\n");

		fprintf(f, "        %.*s\n", (int)n, text);
		text += n + (text[n] == '\n');
	}
}

static void dump_thread(void *arg, const struct stack *st)
{
	struct dump *d = arg;

	d->threads++;
	if (d->ntid == d->atid) {
		d->atid = d->atid ? d->atid * 2 : 64;
		d->tids = xreallocarray(d->tids, d->atid, sizeof(*d->tids));
	}
	d->tids[d->ntid++] = st->tid;
	if (d->json) {
		dump_json_thread(d->f, d->threads == 1, d->lang, st);
		return;
	}
	fprintf(d->f, "\nThread %d", (int)st->tid);
	if (st->thread_name)
		fprintf(d->f, " \"%s\"", st->thread_name);
	if (st->ractor)
		fprintf(d->f, " (ractor %u,", st->ractor);
	else if (st->interp)
		fprintf(d->f, " (interpreter %" PRIu64 ",", st->interp);
	fprintf(d->f, "%s%s%s)\n", st->ractor || st->interp ? " " : " (",
		st->gvl_wait == 1 ? "waiting for the GVL" : st->idle == 1 ? "idle" :
		st->idle == 0 ? "running" : "state unknown",
	       st->holds_gil == 1 ? !strcmp(d->lang, "Ruby") ? ", holds the GVL" :
							       ", holds the GIL" : "");
	if (st->truncated)
		fprintf(d->f, "    [truncated: the outermost frames are not shown]\n");
	else if (!st->depth)
		fprintf(d->f, "    no %s frames\n", d->lang);
	profile_add(&d->prof, NULL, st, 1);
	for (unsigned int i = 0; i < st->depth; i++) {
		const struct stack_frame *f = &st->frame[i];
		uint32_t file = *f->file ? profile_str_id(&d->prof, f->file) : 0;

		if (!*f->file)
			fprintf(d->f, "    %s\n", f->name);
		else if (f->line > 0)
			fprintf(d->f, "    %s (%c%" PRIu32 "%c:%d)\n", f->name, FILE_START, file,
				FILE_END, f->line);
		else
			fprintf(d->f, "    %s (%c%" PRIu32 "%c)\n", f->name, FILE_START, file,
				FILE_END);
		if (st->locals && st->locals[i])
			dump_locals(d->f, st->locals[i]);
	}
}

/*
 * /proc/PID/task/TID/FILE, at most cap - 1 bytes of it, into buf: its
 * length, -1 if it cannot be read (the thread is gone).
 */
static ssize_t dump_task_file(pid_t pid, const char *tid, const char *file, char *buf,
			      size_t cap)
{
	char path[96];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%.16s/%s", (int)pid, tid, file);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/*
 * Every thread of the kernel's that the interpreter did not show (a C
 * thread of an extension, one not yet or no longer the interpreter's):
 * its tid, its kernel name when it is not the process's, its state, and
 * that it has no frames of the language.  DUMP_OTHERS_MAX of them at most;
 * a thread gone meanwhile is passed over.
 */
static void dump_others(struct dump *d, const struct target *t)
{
	char path[48], stat[1024], comm[32], name[64];
	unsigned long more = 0;
	unsigned int shown = 0;
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)t->pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((de = readdir(dir))) {
		char *end, *state;
		long tid = strtol(de->d_name, &end, 10);
		size_t i;
		ssize_t n;

		if (*end || tid <= 0 || tid > INT_MAX)
			continue;
		for (i = 0; i < d->ntid && d->tids[i] != (pid_t)tid; i++)
			;
		if (i < d->ntid)
			continue;
		if (shown >= DUMP_OTHERS_MAX) {
			more++;
			continue;
		}
		/* the state follows the name in parentheses, which may hold any byte */
		if (dump_task_file(t->pid, de->d_name, "stat", stat, sizeof(stat)) < 0 ||
		    !(state = strrchr(stat, ')')) || state[1] != ' ' || !state[2])
			continue;
		n = dump_task_file(t->pid, de->d_name, "comm", comm, 17);
		if (n > 0 && comm[n - 1] == '\n')
			comm[--n] = '\0';
		name[0] = '\0';
		if (n > 0)
			utf8_sanitize(name, sizeof(name), comm, (size_t)n);
		if (!strcmp(name, t->comm))
			name[0] = '\0';	/* inherited: the process's */
		shown++;
		d->threads++;
		if (d->json) {
			dump_json_other(d->f, d->threads == 1, tid, name, state[2] == 'R');
			continue;
		}
		fprintf(d->f, "\nThread %ld%s%s%s (%s)\n    no %s frames\n", tid,
			*name ? " \"[" : "", name, *name ? "]\"" : "",
			state[2] == 'R' ? "running" : "idle", d->lang);
	}
	closedir(dir);
	d->more = more;
	if (more && !d->json)
		fprintf(d->f, "\n(%lu more threads with no %s frames not listed)\n", more, d->lang);
}

/*
 * dump --tasks: the asyncio tasks of process t (pytasks.h) as a tree, after
 * the header; a version or a program with nothing to read says so in one
 * line, never with an empty tree (a subprocess of --subprocesses with none
 * is passed over in silence, as one that is no interpreter is).
 */
static int dump_tasks(struct cli_opts *o, struct target *t, struct reader *r, int *any)
{
	int child = o->subprocesses && t->pid != o->pid;
	struct pyreader *pr = reader_python(r);
	const char *why = NULL;
	unsigned int n = 0;
	char *text = NULL;
	size_t len = 0;
	enum perr err;
	FILE *f;

	if (!pr && child)
		return EXIT_OK;
	if (!pr) {
		cli_error("process %d is %s %s: --tasks reads Python's asyncio tasks", (int)t->pid,
			  target_lang_name(t->lang), t->version);
		cli_hint("leave out --tasks to see its threads");
		return EXIT_UNSUPPORTED;
	}
	f = open_memstream(&text, &len);
	if (!f) {
		cli_error("out of memory");
		return EXIT_FAIL;
	}
	err = pytasks_dump(pr, t, f, o->json, &n, &why);
	fputc('\0', f);
	fclose(f);
	if (child && (err == PERR_UNSUPPORTED || err == PERR_NOTFOUND)) {
		free(text);
		return EXIT_OK;
	}
	if (err == PERR_UNSUPPORTED || err == PERR_NOTFOUND || (err && why)) {
		cli_error("cannot show the asyncio tasks of process %d (Python %s): %s", (int)t->pid,
			  t->version, why ? why : perr_str(err));
		if (err == PERR_NOTFOUND)
			cli_hint("a program that uses asyncio imports it; this one has no tasks");
		else if (err == PERR_UNSUPPORTED)
			cli_hint("leave out --tasks to see its threads");
		else
			cli_hint("try again");
		free(text);
		return err == PERR_UNSUPPORTED ? EXIT_UNSUPPORTED : EXIT_FAIL;
	}
	if (err) {
		free(text);
		return cli_report_target(t, err);
	}
	if (o->json) {
		if (!*any)
			fputs("{\"processes\": [", stdout);
		dump_json_tasks(stdout, !*any, t, n, text);
	} else {
		printf("%sProcess %d (%s, %s %s): %u asyncio task%s\n%s", *any ? "\n" : "",
		       (int)t->pid, t->comm, target_lang_name(t->lang), t->version, n,
		       n == 1 ? "" : "s", text);
	}
	*any = 1;
	if (o->verbose)
		fprintf(stderr, "pyrospy: %s; %llu reads\n", reader_describe(r),
			(unsigned long long)t->mem.calls);
	free(text);
	return EXIT_OK;
}

/*
 * dump: one sample of every thread, idle ones too, printed as text.  An
 * interpreter still starting gets a few tries.
 */
/*
 * Dump process pid.  With --subprocesses, one that is no interpreter (or
 * is gone) is passed over in silence; *dumped says whether pid was dumped,
 * and *any whether one was before (then a blank line comes first).
 */
static int dump_one(struct cli_opts *o, pid_t pid, int *any, int *dumped)
{
	struct reader_opts ro = { .idle = 1, .locals = o->locals, .no_gc = o->no_gc };
	struct dump d = { .json = o->json };
	struct reader *r = NULL;
	struct target t;
	char *text = NULL;
	size_t len = 0;
	enum perr err = PERR_STARTUP;
	int ret = EXIT_OK, torn = 0;

	*dumped = 0;
	err = target_open(&t, pid);
	if (err && o->subprocesses && (err == PERR_NOTINTERP || err == PERR_EXITED ||
				       (err == PERR_NOPROC && pid != o->pid))) {
		target_close(&t);
		return EXIT_OK;
	}
	if (err) {
		ret = cli_report_target(&t, err);
		target_close(&t);
		return ret;
	}
	cli_warn_refused(&t);
	d.lang = target_lang_name(t.lang);
	profile_init(&d.prof);
	d.f = open_memstream(&text, &len);
	if (!d.f) {
		profile_release(&d.prof);
		target_close(&t);
		cli_error("out of memory");
		return EXIT_FAIL;
	}
	/*
	 * Until the interpreter has started, and until a sample drops no
	 * thread: a stack read across a change is read again, never shown
	 * and never left out (the reader itself tries a few times at once).
	 */
	for (int tries = 0; tries < 50; tries++) {
		struct timespec ts = { 0, (tries < 10 ? 1 : 20) * 1000 * 1000 };
		uint64_t dropped = r ? reader_stats(r)->dropped : 0;

		rewind(d.f);
		d.threads = 0;
		d.ntid = 0;
		if (!r)
			err = reader_new(&t, &ro, &r);
		if (r && o->tasks)
			break;	/* started: dump_tasks() reads the rest */
		if (r)
			err = reader_sample(r, dump_thread, &d);
		torn = !err && reader_stats(r)->dropped > dropped;
		if (err != PERR_STARTUP && !torn)
			break;
		if (err == PERR_STARTUP) {
			reader_free(r);
			r = NULL;
		}
		nanosleep(&ts, NULL);
	}
	if (!err && !torn && !o->tasks)
		dump_others(&d, &t);
	fputc('\0', d.f);
	fclose(d.f);
	free(d.tids);
	/* what was read of its pid was its only if it is still there */
	if (!err && !procmem_alive(&t.mem))
		err = PERR_EXITED;
	if (!err && o->tasks) {
		ret = dump_tasks(o, &t, r, any);
		*dumped = ret == EXIT_OK;
	} else if (!err && torn) {
		cli_error("the stacks of process %d changed under every read (50 tries)", (int)pid);
		cli_hint("try again; a program that returns and calls faster than it can be read "
		     "shows this now and then");
		ret = EXIT_FAIL;
	} else if (!err && o->json) {
		if (!*any)
			fputs("{\"processes\": [", stdout);
		dump_json_process(stdout, !*any, &t, text, d.more);
		*dumped = *any = 1;
	} else if (!err) {
		struct shortpath *sp = o->full_paths ? NULL : shortpath_new(&d.prof);

		printf("%sProcess %d (%s, %s %s): %u thread%s\n", *any ? "\n" : "",
		       (int)t.pid, t.comm, d.lang, t.version, d.threads, d.threads == 1 ? "" : "s");
		dump_print(text, &d.prof, sp);
		shortpath_free(sp);
		*dumped = *any = 1;
		if (o->verbose)
			fprintf(stderr, "pyrospy: %s; %llu reads\n", reader_describe(r),
				(unsigned long long)t.mem.calls);
	} else if (err == PERR_STARTUP) {
		cli_error("process %d never finished starting its interpreter", (int)pid);
		cli_hint("try again once the program has started");
		ret = EXIT_FAIL;
	} else {
		ret = cli_report_target(&t, err);
	}
	free(text);
	profile_release(&d.prof);
	reader_free(r);
	target_close(&t);
	return ret;
}

/*
 * dump: the process; with --subprocesses its descendants too, each that is
 * an interpreter, one after the other (the root need not be one).
 */
int cli_dump(struct cli_opts *o)
{
	pid_t *kids = NULL;
	int n, ret, kret, dumped, any = 0;

	ret = dump_one(o, o->pid, &any, &dumped);
	if (!o->subprocesses || ret != EXIT_OK) {
		if (any && o->json)
			fputs("\n]}\n", stdout);
		return ret;	/* gone, not allowed: its children will not be better */
	}
	n = ptree_descendants(o->pid, &kids);
	for (int i = 0; i < n; i++) {
		kret = dump_one(o, kids[i], &any, &dumped);
		if (kret != EXIT_OK)
			ret = kret;
	}
	free(kids);
	if (any && o->json)
		fputs("\n]}\n", stdout);
	if (!any) {
		cli_error("neither process %d nor its subprocesses are Ruby or Python processes",
		      (int)o->pid);
		cli_hint("give the pid of a ruby or python3 process, or of the shell or server that "
		     "starts them");
		ret = EXIT_NOTINTERP;
	}
	return ret;
}
