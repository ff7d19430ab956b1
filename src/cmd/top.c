/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cmd/common.h"
#include "cmd/options.h"
#include "cmd/session.h"
#include "cmd/top.h"
#include "output/out.h"
#include "profile/profile.h"
#include "proc/target.h"
#include "sample/sampler.h"

struct top {
	const struct target *t;
	int full_paths;			/* --full-paths */
	int tty;			/* stdin is a terminal in raw mode */
	int screen;			/* stdout is a terminal: redraw in place */
	int by_total, paused, by_line, help;
};

/* A line of the header, cut to width columns (it is ASCII but the version). */
static void header_line(unsigned int width, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	printf("%.*s\n", (int)(strlen(buf) < width ? strlen(buf) : width), buf);
}

/*
 * Redraw the table, on a terminal in place and cut to its size; to a
 * file or pipe, a plain table a second (no terminal codes), 20 rows.
 * Keys typed since the last time: q quits, s and t sort by self or total,
 * space pauses the drawing (sampling goes on).
 */
static int top_tick(void *arg, const struct profile *p, const struct sampler_result *res)
{
	struct top *top = arg;
	struct winsize ws;
	struct out_table tab = { .max_rows = 20, .mark = 1 };
	unsigned int rows = 24, cols = 80;
	char c;

	int was = top->paused;

	while (top->tty && read(STDIN_FILENO, &c, 1) == 1) {
		if (c == 'q' || c == 'Q')
			return 1;
		if (c == 's' || c == 't')
			top->by_total = c == 't';
		else if (c == 'l')
			top->by_line = !top->by_line;
		else if (c == '?')
			top->help = !top->help;
		else if (c == ' ')
			top->paused = !top->paused;
	}
	/* paused: the table stays as it was, with the key to go on */
	if (top->paused && was)
		return 0;
	if (top->screen && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
		if (ws.ws_row > 6)
			rows = ws.ws_row;
		if (ws.ws_col > 30)
			cols = ws.ws_col;
	}
	tab.by_total = top->by_total;
	tab.by_function = !top->by_line;
	tab.full_paths = top->full_paths;
	if (top->screen) {
		tab.max_rows = rows - 4;
		tab.width = cols;
		fputs("\033[H\033[2J", stdout);
	}
	header_line(top->screen ? cols : 512, "pyrospy top: pid %d, %s %s: %.0f s, %llu samples, "
		    "%.0f Hz, %llu dropped", (int)top->t->pid, target_lang_name(top->t->lang),
		    top->t->version, res->elapsed, (unsigned long long)p->total,
		    res->elapsed > 0 ? (double)res->ticks / res->elapsed : 0.0,
		    (unsigned long long)res->dropped);
	if (top->tty && top->help) {
		header_line(cols, "q     quit (Ctrl-C too)");
		header_line(cols, "s, t  sort by %%self, by %%total (marked *)");
		header_line(cols, "l     lines: one row per line, or per function (now: %s)",
			    top->by_line ? "lines" : "functions");
		header_line(cols, "space pause the drawing (sampling goes on), and go on");
		header_line(cols, "?     this help, and back to the table");
		fflush(stdout);
		return 0;
	}
	if (top->tty)
		header_line(cols, "q quit  s/t sort self/total  l %s  space %s  ? help",
			    top->by_line ? "functions" : "lines", top->paused ? "go on" : "pause");
	else
		putchar('\n');
	out_summary_table(stdout, p, &tab);
	if (!top->screen)
		putchar('\n');
	fflush(stdout);
	return 0;
}

/* top: sample until q, Ctrl-C or the duration, redrawing every second. */
int cli_top(struct cli_opts *o)
{
	struct termios saved, raw;
	struct target t;
	struct top top = { .t = &t, .full_paths = o->full_paths, .screen = isatty(STDOUT_FILENO) };
	struct sampler_opts so = {
		.rate = o->rate,
		.duration = o->duration,
		.reader = { .idle = o->idle, .gil_only = o->gil, .gvl_wait = o->gvl_wait,
			    .no_gc = o->no_gc, .async_tasks = o->async_tasks,
			    .anchor = !o->read_only, .reuse = 1 },
		.tick = top_tick,
		.arg = &top,
	};
	struct sampler_result res;
	struct profile p;
	enum perr err;

	cli_install_signals();
	err = target_open(&t, o->pid);
	if (err || cli_gil_refused(o, &t)) {
		int ret = err ? cli_report_target(&t, err) : EXIT_UNSUPPORTED;

		target_close(&t);
		return ret;
	}
	cli_warn_refused(&t);
	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0) {
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		top.tty = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
	}
	profile_init(&p);
	/* lines kept: the table merges them by function unless l asks for lines */
	p.max_bytes = o->max_memory;
	err = sampler_run(&t, &p, &so, &res, &cli_stop_flag);
	if (top.tty)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved);
	profile_release(&p);
	if (err) {
		int ret = cli_report_target(&t, err);

		target_close(&t);
		return ret;
	}
	target_close(&t);
	return EXIT_OK;
}
