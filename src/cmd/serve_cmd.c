/* SPDX-License-Identifier: MIT */
#include "config.h"

#include "cmd/common.h"
#include "cmd/options.h"
#include "cmd/serve.h"
#include "cmd/serve_cmd.h"
#include "cmd/session.h"
#include "proc/target.h"

/* serve: the process (or its subprocesses) sampled, its stacks served over HTTP */
int cli_serve(struct cli_opts *o)
{
	struct serve_opts so = {
		.listen = o->listen,
		.allow_host = o->allow_host,
		.nallow_host = o->nallow_host,
		.rate = o->rate,
		.duration = o->duration,
		.max_memory = o->max_memory,
		.idle = o->idle,
		.gil = o->gil,
		.gvl_wait = o->gvl_wait,
		.no_gc = o->no_gc,
		.async_tasks = o->async_tasks,
		.read_only = o->read_only,
		.subprocesses = o->subprocesses,
		.quiet = o->quiet,
		.verbose = o->verbose,
	};
	struct target t;
	enum perr err;
	int ret;

	cli_install_signals();
	err = target_open(&t, o->pid);
	if (err && !(o->subprocesses && (err == PERR_NOTINTERP || err == PERR_UNSUPPORTED))) {
		ret = cli_report_target(&t, err);
		target_close(&t);
		return ret;
	}
	if (!err && cli_gil_refused(o, &t)) {
		target_close(&t);
		return EXIT_UNSUPPORTED;
	}
	if (!err)
		cli_warn_refused(&t);
	ret = serve_run(&so, err ? NULL : &t, o->pid, &cli_stop_flag, &err);
	if (err)
		ret = cli_report_target(&t, err);
	target_close(&t);
	return ret;
}
