/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/common.h"
#include "cmd/options.h"
#include "cmd/record.h"
#include "cmd/session.h"
#include "output/out.h"
#include "output/outfile.h"
#include "profile/profile.h"
#include "proc/procmem.h"
#include "proc/ptree.h"
#include "proc/target.h"
#include "sample/sampler.h"
#include "stack/stack.h"
#include "upload/ingest.h"
#include "util/utf8.h"

/* The format asked for, by -f or by -o's name (cli_parse_opts()), or by default. */
static const struct out_ops *output_format(const struct cli_opts *o)
{
	return out_find(o->format ? o->format : "flamegraph");
}

static void output_stem(char *name, size_t cap, pid_t pid)
{
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	snprintf(name, cap, "pyrospy-%d-%04d%02d%02d-%02d%02d%02d", (int)pid,
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
		 tm.tm_sec);
}

/*
 * What was profiled, for the writers' header: exec's command as given, or
 * the target's command line (hostile: bounded and sanitized by
 * ptree_cmdline(); kept only if the process held is still alive after the
 * read, so that it is its own, not a new process's on the pid), and its
 * interpreter.  The title stays "pid N": a
 * command line is the target's to choose, paths and all, and the html
 * report's heading is the command when there is one.
 */
struct target_facts {
	char command[PTREE_CMDLINE];
	char interp[64];
	char title[64];
};

static void target_facts(const struct cli_opts *o, struct target *t, pid_t pid,
			 struct target_facts *tf)
{
	memset(tf, 0, sizeof(*tf));
	if (o->argv && o->argv[0]) {
		char raw[PTREE_CMDLINE];
		size_t n = 0;

		for (char **a = o->argv; *a && n < sizeof(raw) - 1; a++)
			n += (size_t)snprintf(raw + n, sizeof(raw) - n, "%s%s", a == o->argv ? "" : " ",
					      *a);
		if (n > sizeof(raw) - 1)
			n = sizeof(raw) - 1;
		utf8_sanitize(tf->command, sizeof(tf->command), raw, n);
	} else if (ptree_cmdline(pid, tf->command, sizeof(tf->command)) >= 0 && t &&
		   !procmem_alive(&t->mem)) {
		/* gone as it was read: the pid may be another process's now */
		*tf->command = '\0';
	}
	if (t)
		snprintf(tf->interp, sizeof(tf->interp), "%s %s", target_lang_name(t->lang),
			 t->version);
	snprintf(tf->title, sizeof(tf->title), "pid %d", (int)pid);
}

static void target_meta(const struct target_facts *tf, pid_t pid, struct out_meta *meta)
{
	meta->title = tf->title;
	meta->command = *tf->command ? tf->command : NULL;
	meta->interp = *tf->interp ? tf->interp : NULL;
	meta->pid = (int)pid;
}

static int write_profile(const struct cli_opts *o, struct outfile *of, const struct profile *p,
			 const struct sampler_result *res, pid_t pid,
			 const struct target_facts *tf)
{
	const struct out_ops *ops = output_format(o);
	struct out_meta meta;
	char name[96];
	int ret;

	memset(&meta, 0, sizeof(meta));
	target_meta(tf, pid, &meta);
	meta.ticks = res->ticks;
	meta.late = res->late;
	meta.dropped = res->dropped;
	meta.tags_dropped = res->tags_dropped;
	meta.duration = res->elapsed;
	meta.rate = o->rate;
	meta.start = res->start;
	meta.threads = o->threads;
	meta.full_paths = o->full_paths;
	meta.no_tags = o->no_tags;
	meta.flame_up = o->flame_up;
	output_stem(name, sizeof(name), pid);
	outfile_set_stem(of, name);
	if (ops->write(of->f, p, &meta)) {
		ret = cli_output_failed(of);
		goto out;
	}
	ret = cli_output_commit(of, 0);
	if (ret == EXIT_OK && strcmp(of->path, "-"))
		cli_note(o, "wrote %s profile to '%s' (%llu samples)", ops->name, of->path,
			 (unsigned long long)p->total);
out:
	outfile_close(of);
	return ret;
}

/*
 * A streaming format (raw, chrome): the file is put in place before
 * sampling starts, and every sample goes to it as it comes, so that what
 * was flushed stays readable whatever happens to pyrospy.
 */
struct stream {
	const struct out_ops *ops;
	struct out_stream *s;
	struct outfile *of;	/* cli_outputs' stream */
};

static void stream_sample(void *arg, int64_t when_ns, const char *tags, const struct stack *st)
{
	struct stream *sm = arg;

	/* a failure sticks in the writer and is reported at the end */
	sm->ops->sample(sm->s, when_ns, tags, st);
}

static int stream_open(const struct cli_opts *o, struct stream *sm, pid_t pid,
		       const struct target_facts *tf)
{
	struct out_meta meta;
	struct timespec ts;
	char name[96];
	int ret;

	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&meta, 0, sizeof(meta));
	target_meta(tf, pid, &meta);
	meta.rate = o->rate;
	meta.start = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	output_stem(name, sizeof(name), pid);
	outfile_set_stem(sm->of, name);
	sm->s = sm->ops->open(sm->of->f, &meta, (o->idle ? OUT_KEPT_IDLE : 0u) |
						 (o->gil ? OUT_KEPT_GIL : 0u) |
						 (o->subprocesses ? OUT_KEPT_PIDS : 0u));
	if (!sm->s)
		return cli_output_failed(sm->of);
	ret = cli_output_commit(sm->of, 1);
	if (ret != EXIT_OK) {
		sm->ops->close(sm->s);
		sm->s = NULL;
	}
	return ret;
}

static int stream_close(const struct cli_opts *o, struct stream *sm, uint64_t samples)
{
	int ret = EXIT_OK;

	if (sm->s && sm->ops->close(sm->s))
		ret = cli_output_failed(sm->of);
	sm->s = NULL;
	if (ret == EXIT_OK && sm->of->f)
		ret = cli_output_commit(sm->of, 0);
	if (ret == EXIT_OK && strcmp(sm->of->path, "-"))
		cli_note(o, "wrote %s %s to '%s' (%llu samples)", sm->ops->name,
			 sm->ops == &out_raw ? "recording" : "trace", sm->of->path,
			 (unsigned long long)samples);
	outfile_close(sm->of);
	return ret;
}

/*
 * What happens besides sampling while recording: the live status line on a
 * terminal, and with --server the current 10 s window, handed to the
 * uploader when the wall clock crosses into the next one.
 */
struct recording {
	int live;
	struct ingest *in;
	struct profile window;
	time_t from;
	int no_lines, show_pid;
	size_t max_bytes;
	uint64_t other;		/* of the windows uploaded */
};

static void window_reset(struct recording *rec)
{
	rec->other += rec->window.other;
	profile_release(&rec->window);
	profile_init(&rec->window);
	rec->window.no_lines = rec->no_lines;
	rec->window.max_bytes = rec->max_bytes;
	rec->window.show_pid = rec->show_pid;
}

/* Hand the window over if now is past it. */
static void window_rotate(struct recording *rec, time_t now)
{
	time_t at = ingest_align(now);

	if (at == rec->from)
		return;
	ingest_window(rec->in, &rec->window, rec->from, rec->from + INGEST_WINDOW);
	window_reset(rec);
	rec->from = at;
}

static void recording_add(void *arg, const char *tags, const struct stack *st)
{
	struct recording *rec = arg;

	window_rotate(rec, time(NULL));
	profile_add(&rec->window, tags, st, 1);
}

static int recording_tick(void *arg, const struct profile *p, const struct sampler_result *res)
{
	struct recording *rec = arg;
	struct ingest_stats is;

	if (rec->in)
		window_rotate(rec, time(NULL));
	if (!rec->live)
		return 0;
	fprintf(stderr, "\r\033[Kpyrospy: %.0f s, %llu ticks (%.0f Hz), %llu samples, %llu dropped, "
		"%llu late", res->elapsed, (unsigned long long)res->ticks,
		res->elapsed > 0 ? (double)res->ticks / res->elapsed : 0.0,
		(unsigned long long)p->total, (unsigned long long)res->dropped,
		(unsigned long long)res->late);
	if (rec->in) {
		ingest_stats(rec->in, &is);
		fprintf(stderr, "; uploaded %llu windows, %u requests waiting%s%s",
			(unsigned long long)is.delivered, is.pending, *is.last_error ? ": " : "",
			is.last_error);
	}
	return 0;
}

/*
 * The last line: what was taken, in the words of the status line, and
 * what was lost and why; not with -q.
 */
static void closing_counts(const struct cli_opts *o, const struct sampler_result *res)
{
	if (o->quiet || !res->ticks)
		return;
	fprintf(stderr, "pyrospy: %.1f s, %llu ticks (%.1f Hz of %u asked", res->elapsed,
		(unsigned long long)res->ticks,
		res->elapsed > 0 ? (double)res->ticks / res->elapsed : 0.0, o->rate);
	if (res->late)
		fprintf(stderr, ", %llu late", (unsigned long long)res->late);
	fprintf(stderr, "), %llu samples", (unsigned long long)res->stacks);
	if (res->dropped)
		fprintf(stderr, ", %llu dropped (changed under every read)",
			(unsigned long long)res->dropped);
	if (res->tags_dropped)
		fprintf(stderr, ", %llu without their tags (the tags changed under the read)",
			(unsigned long long)res->tags_dropped);
	fputc('\n', stderr);
}

/* Whether the output is a streaming format's file, given every sample. */
static int stream_output(const struct cli_opts *o)
{
	return output_format(o)->open && (!o->up.server || o->output);
}

int cli_outputs_open(const struct cli_opts *o, struct cli_outputs *out)
{
	const struct out_ops *ops = output_format(o);
	int ret = EXIT_OK;
	char name[96];

	memset(out, 0, sizeof(*out));
	out->stream.dirfd = out->profile.dirfd = -1;
	/* a name pyrospy chooses is only a stem here (outfile_set_stem()): exec's pid is to come */
	output_stem(name, sizeof(name), o->pid);
	if (stream_output(o) || o->raw)
		ret = cli_output_open(&out->stream, stream_output(o) ? o->output : o->raw, name,
				      ops->ext);
	/* streaming to a server: a file only when asked for */
	if (ret == EXIT_OK && !stream_output(o) && (!o->up.server || o->output))
		ret = cli_output_open(&out->profile, o->output, name, ops->ext);
	return ret;
}

void cli_outputs_close(struct cli_outputs *out)
{
	outfile_close(&out->stream);
	outfile_close(&out->profile);
}

int cli_profile_target(struct cli_opts *o, struct cli_outputs *out, struct target *t, pid_t pid,
		       pid_t child, enum ended *why)
{
	struct recording rec = {
		/* not under exec: the command writes to the same terminal */
		.live = !o->quiet && isatty(STDERR_FILENO) && strcmp(o->cmd, "exec"),
		.no_lines = o->function,
		.show_pid = o->subprocesses,
		.max_bytes = o->max_memory,
	};
	/*
	 * Every sample to a streaming writer: the output itself (-f raw or
	 * chrome; a file only when asked for while streaming to a server), or
	 * a raw recording besides it (--raw FILE).
	 */
	struct stream sm = { .ops = output_format(o)->open ? output_format(o) : &out_raw,
			     .of = &out->stream };
	int raw_out = stream_output(o);
	int streaming = raw_out || o->raw;
	struct sampler_opts so = {
		.rate = o->rate,
		.duration = o->duration,
		.reader = { .idle = o->idle, .gil_only = o->gil, .gvl_wait = o->gvl_wait,
			    .no_gc = o->no_gc, .async_tasks = o->async_tasks,
			    .anchor = !o->read_only, .reuse = 1 },
		.child = child,
		.root = o->subprocesses ? pid : 0,
		.announce = !o->quiet,
		.verbose = o->verbose,
		.tags = o->tagset,
		.add = o->up.server ? recording_add : NULL,
		/* streaming for days: the whole run's profile only for a file */
		.count_only = (o->up.server && !o->output) || raw_out,
		.tick = rec.live || o->up.server ? recording_tick : NULL,
		.arg = &rec,
		.sample = streaming ? stream_sample : NULL,
		.sample_arg = &sm,
	};
	struct sampler_result res;
	struct target_facts tf;
	struct profile p;
	enum perr err;
	int ret = cli_gil_refused(o, t), up;

	if (ret != EXIT_OK)
		return ret;
	target_facts(o, t, pid, &tf);
	if (streaming) {
		ret = stream_open(o, &sm, pid, &tf);
		if (ret != EXIT_OK)
			return ret;
	}
	if (o->up.server) {
		o->up.spy_name = !t ? "pyrospy" : t->lang == TARGET_RUBY ? "pyrospy-ruby" :
								     "pyrospy-python";
		/* the OpenTelemetry names: sys.implementation.name, RUBY_ENGINE */
		o->up.runtime_name = !t ? NULL : t->lang == TARGET_RUBY ? "ruby" : "cpython";
		o->up.runtime_version = t ? t->version : NULL;
		/* otlp's process.pid and process.executable.name */
		o->up.pid = pid;
		o->up.exe_name = t ? t->exe_path : NULL;
		o->up.log = stderr;
		rec.in = ingest_start(&o->up);
		if (!rec.in) {
			if (streaming)
				stream_close(o, &sm, 0);
			return EXIT_FAIL;	/* it said why, and what to do */
		}
		window_reset(&rec);
		rec.from = ingest_align(time(NULL));
	}

	if (t)
		cli_warn_refused(t);
	if (t)
		cli_note(o, "profiling process %d (%s %s)%s at %u Hz%s", (int)pid,
			 target_lang_name(t->lang), t->version,
			 o->subprocesses ? " and its subprocesses" : "", o->rate,
			 o->duration > 0 ? "" : ", Ctrl-C to stop");
	else
		cli_note(o, "profiling the Ruby and Python subprocesses of process %d at %u Hz%s",
			 (int)pid, o->rate, o->duration > 0 ? "" : ", Ctrl-C to stop");
	profile_init(&p);
	p.no_lines = o->function;
	p.show_pid = o->subprocesses;
	p.max_bytes = o->max_memory;
	err = sampler_run(t, &p, &so, &res, &cli_stop_flag);
	if (rec.live)
		fputs("\r\033[K", stderr);
	if (rec.in) {
		/* the partial window too, then what is spooled, bounded in time */
		ingest_window(rec.in, &rec.window, rec.from, rec.from + INGEST_WINDOW);
		rec.other += rec.window.other;
		profile_release(&rec.window);
		up = ingest_stop(rec.in);
		if (up < 0)
			ret = EXIT_FAIL;
		else if (!up)
			cli_note(o, "uploaded every window to %s", o->up.server);
	}
	if (err) {
		if (streaming)
			stream_close(o, &sm, p.total);
		profile_release(&p);
		return t ? cli_report_target(t, err) : EXIT_FAIL;
	}
	if (o->verbose)
		fprintf(stderr, "pyrospy: %s\n", res.describe);
	/* even with -q: the profile is not what it would have been */
	if (p.other || rec.other)
		fprintf(stderr, "pyrospy: warning: the profile reached --max-memory %zu MiB: %llu "
			"samples of new stacks are counted in [other] frames\n", o->max_memory >> 20,
			(unsigned long long)(p.other > rec.other ? p.other : rec.other));
	if (o->verbose)
		fprintf(stderr,
			"pyrospy: %llu ticks in %.1f s (%.0f Hz), %llu samples, %llu dropped, "
			"%llu torn reads retried, %llu late, %.1f reads and %.0f us CPU per "
			"tick\n",
			(unsigned long long)res.ticks, res.elapsed,
			res.elapsed > 0 ? (double)res.ticks / res.elapsed : 0.0,
			(unsigned long long)res.stacks, (unsigned long long)res.dropped,
			(unsigned long long)res.retries, (unsigned long long)res.late,
			res.ticks ? (double)res.reads / (double)res.ticks : 0.0,
			res.ticks ? res.cpu * 1e6 / (double)res.ticks : 0.0);
	if (o->verbose && res.ticks)
		fprintf(stderr, "pyrospy: %.1f ranges of the target's memory read per tick\n",
			(double)res.ranges / (double)res.ticks);
	if (o->verbose && res.tags_dropped)
		fprintf(stderr, "pyrospy: tags dropped %llu times (changed under the read, or a "
			"set not readable)\n", (unsigned long long)res.tags_dropped);
	if (o->verbose && res.anchored)
		fprintf(stderr, "pyrospy: %llu stacks read only above the frame CPython keeps for "
			"profilers (last_profiled_frame)\n", (unsigned long long)res.anchored);
	if (o->verbose && res.reused)
		fprintf(stderr, "pyrospy: %llu stacks of threads that had not run since their last "
			"read reused\n", (unsigned long long)res.reused);
	if (o->verbose && res.unqualified)
		fprintf(stderr, "pyrospy: %llu Ruby method names shown without their class "
			"(it could not be read)\n", (unsigned long long)res.unqualified);
	*why = res.end == PERR_OK ? ENDED_BY_US : res.end == PERR_EXITED ? ENDED_EXITED :
	       res.execs ? ENDED_EXEC_AWAY : ENDED_EARLY;
	if (*why == ENDED_EXEC_AWAY)
		cli_note(o, "process %d exec()'d '%s', which cannot be profiled (%s); writing what was "
			 "sampled", (int)pid, res.exec_comm, perr_str(res.end));
	else if (res.end == PERR_EXITED && !child)
		cli_note(o, "process %d exited; writing what was sampled", (int)pid);
	else if (res.end == PERR_STARTUP)
		cli_note(o, "process %d never finished starting its interpreter", (int)pid);
	else if (*why == ENDED_EARLY)
		cli_note(o, "sampling stopped early: %s", perr_str(res.end));
	if (!p.total)
		cli_note(o, "no samples collected%s", o->idle ? "" : " (every thread idle? try --idle)");
	if (streaming) {
		int wret = stream_close(o, &sm, p.total);

		if (wret != EXIT_OK)
			ret = wret;
	}
	/* streaming: a file only when asked for */
	if (!raw_out && (!o->up.server || o->output)) {
		int wret = write_profile(o, &out->profile, &p, &res, pid, &tf);

		if (wret != EXIT_OK)
			ret = wret;
	}
	closing_counts(o, &res);
	profile_release(&p);
	return ret;
}

int cli_record(struct cli_opts *o)
{
	struct cli_outputs out;
	struct target t;
	enum perr err;
	enum ended why;
	int ret;

	cli_install_signals();
	ret = cli_outputs_open(o, &out);
	if (ret != EXIT_OK) {
		cli_outputs_close(&out);
		return ret;
	}
	err = target_open(&t, o->pid);
	if (!err)
		ret = cli_profile_target(o, &out, &t, o->pid, 0, &why);
	else if (o->subprocesses && (err == PERR_NOTINTERP || err == PERR_UNSUPPORTED))
		ret = cli_profile_target(o, &out, NULL, o->pid, 0, &why);
	else
		ret = cli_report_target(&t, err);
	target_close(&t);
	cli_outputs_close(&out);
	return ret;
}
