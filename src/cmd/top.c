/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
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
};

/* Redraw the table; a 'q' typed since the last time stops. */
static int top_tick(void *arg, const struct profile *p, const struct sampler_result *res)
{
	struct top *top = arg;
	struct winsize ws;
	unsigned int rows = 24;
	char c;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 6)
		rows = ws.ws_row;
	fputs("\033[H\033[2J", stdout);
	printf("pyrospy top: pid %d (%s %s)  %.0f s, %llu samples, %.0f Hz, %llu dropped"
	       "   q quits\n\n", (int)top->t->pid, target_lang_name(top->t->lang),
	       top->t->version, res->elapsed, (unsigned long long)p->total,
	       res->elapsed > 0 ? (double)res->ticks / res->elapsed : 0.0,
	       (unsigned long long)res->dropped);
	out_summary_rows(stdout, p, rows - 4, top->full_paths);
	fflush(stdout);
	while (top->tty && read(STDIN_FILENO, &c, 1) == 1)
		if (c == 'q' || c == 'Q')
			return 1;
	return 0;
}

/* top: sample until q, Ctrl-C or the duration, redrawing every second. */
int cli_top(struct cli_opts *o)
{
	struct termios saved, raw;
	struct target t;
	struct top top = { &t, o->full_paths, 0 };
	struct sampler_opts so = {
		.rate = o->rate,
		.duration = o->duration,
		.reader = { .idle = o->idle, .gil_only = o->gil, .gvl_wait = o->gvl_wait,
			    .no_gc = o->no_gc, .async_tasks = o->async_tasks,
			    .anchor = !o->read_only },
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
	p.no_lines = 1;		/* functions, as the table's title says */
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
