/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/agent.h"
#include "cmd/agent_metrics.h"
#include "cmd/common.h"
#include "cmd/options.h"
#include "cmd/session.h"
#include "profile/profile.h"
#include "proc/kubepod.h"
#include "proc/procmem.h"
#include "proc/ptree.h"
#include "proc/target.h"
#include "sample/budget.h"
#include "sample/sampler.h"
#include "stack/stack.h"
#include "stack/tags.h"
#include "upload/ingest.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#define CGROUP_MAX	4096	/* bytes of /proc/PID/cgroup read */
#define CMDLINE_RAW	4096	/* bytes of /proc/PID/cmdline read for a script's name */

/*
 * One process sampled, and its labels: a clean tag set
 * "container_id=...,host_name=H,k8s_pod_uid=...,pid=N,
 * process_executable_name=E,service_name=S" (keys sorted; container_id
 * and k8s_pod_uid where its cgroup has them), put under the program's
 * own tags (the labels win) on each of its samples.
 */
struct agent_proc {
	pid_t pid;
	const struct target *t;	/* the sampler's, to tell a pid's processes apart */
	char *labels;
	char *last, *merged;	/* the program's last tag set, and it under the labels */
};

struct agent {
	struct cli_opts *o;
	regex_t match, exclude;
	int has_match, has_exclude;
	pid_t self;
	struct agent_proc *p;
	size_t np, ap;
	char *environ;		/* AGENT_ENVIRON_MAX bytes, reused, wiped after each read */
	struct ingest *in;
	struct profile window;
	time_t from;
	unsigned int rate;	/* what the window's samples were asked at */
	uint64_t ticks;		/* of them, since */
	int64_t since;		/* the window's start, or the rate's (monotonic ns) */
	int64_t last;		/* the last tick's end */
	struct budget budget;	/* --max-cpu */
	int said_over;
	uint64_t unlabelled;	/* samples of a process not (or no longer) known */
	char host[AGENT_SERVICE_MAX + 1];	/* host_name: this host's name, cleaned */
	struct agent_metrics *metrics;	/* --listen; NULL: none */
};

/* At most cap - 1 bytes of path into buf; the bytes read, or -1. */
static ssize_t read_file(const char *path, char *buf, size_t cap)
{
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	if (fd < 0)
		return -1;
	while (n < cap - 1) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	return (ssize_t)n;
}

/* A hostile name (n bytes) as a service name: [A-Za-z0-9_.-], cut, into out. */
static void service_clean(const char *s, size_t n, char out[AGENT_SERVICE_MAX + 1])
{
	size_t k = 0;

	for (size_t i = 0; i < n && k < AGENT_SERVICE_MAX; i++) {
		unsigned char c = (unsigned char)s[i];

		out[k++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			   (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-' ? (char)c : '_';
	}
	out[k] = '\0';
}

/*
 * The service name from the environment: OTEL_SERVICE_NAME, else
 * PYROSCOPE_APPLICATION_NAME, from the first AGENT_ENVIRON_MAX bytes of
 * /proc/PID/environ.  Nothing else of it is kept, and the buffer is wiped.
 * 1 if found.
 */
static int service_from_environ(struct agent *ag, pid_t pid, char out[AGENT_SERVICE_MAX + 1])
{
	static const char otel[] = "OTEL_SERVICE_NAME=", pyro[] = "PYROSCOPE_APPLICATION_NAME=";
	char path[64];
	ssize_t n;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	n = read_file(path, ag->environ, AGENT_ENVIRON_MAX);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(ag->environ + i) + 1) {
		const char *e = ag->environ + i;

		if (!strncmp(e, otel, sizeof(otel) - 1) && e[sizeof(otel) - 1]) {
			service_clean(e + sizeof(otel) - 1, strlen(e + sizeof(otel) - 1), out);
			found = 2;	/* OTEL_SERVICE_NAME wins */
		} else if (found < 2 && !strncmp(e, pyro, sizeof(pyro) - 1) && e[sizeof(pyro) - 1]) {
			service_clean(e + sizeof(pyro) - 1, strlen(e + sizeof(pyro) - 1), out);
			found = 1;
		}
	}
	if (n > 0)
		explicit_bzero(ag->environ, (size_t)n);
	return found > 0;
}

/* The last path component of s (n bytes), without a .py or .rb ending. */
static void base_name(const char *s, size_t n, char out[AGENT_SERVICE_MAX + 1])
{
	const char *slash = memrchr(s, '/', n);

	if (slash) {
		n -= (size_t)(slash + 1 - s);
		s = slash + 1;
	}
	if (n > 3 && (!memcmp(s + n - 3, ".py", 3) || !memcmp(s + n - 3, ".rb", 3)))
		n -= 3;
	service_clean(s, n, out);
}

/*
 * Without the variables: the script the interpreter runs (its first
 * argument that is no option; -m's module), else the executable's name
 * (pid 0: only that, nothing read by pid).
 */
static void service_from_cmdline(pid_t pid, const struct target *t,
				 char out[AGENT_SERVICE_MAX + 1])
{
	char path[64], buf[CMDLINE_RAW];
	ssize_t n;

	*out = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	n = pid > 0 ? read_file(path, buf, sizeof(buf)) : -1;
	if (n > 0) {
		size_t i = strlen(buf) + 1;	/* past argv[0] */

		while ((ssize_t)i < n) {
			const char *a = buf + i;

			if (!strcmp(a, "-m") && (ssize_t)(i + 3) <= n) {
				a += 3;
				base_name(a, strlen(a), out);
				break;
			}
			if (!strcmp(a, "-c") || !strcmp(a, "-e") || !*a)
				break;
			if (*a != '-') {
				base_name(a, strlen(a), out);
				break;
			}
			i += strlen(a) + 1;
		}
	}
	if (!*out && t->exe_path)
		base_name(t->exe_path, strlen(t->exe_path), out);
	if (!*out)
		service_clean(t->comm, strlen(t->comm), out);
	if (!*out)
		snprintf(out, AGENT_SERVICE_MAX + 1, "unknown");
}

static int is_hex(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/*
 * A container's id from /proc/PID/cgroup: the last run of exactly 64
 * lowercase hex digits, as docker (/docker/ID, docker-ID.scope),
 * containerd (cri-containerd-ID.scope) and cri-o (crio-ID.scope) name
 * their cgroups.  1 if found.  *has_pod: whether it names a Kubernetes
 * pod too (kubepod.h), its uid in pod.
 */
static int container_id(pid_t pid, char out[65], char pod[KUBEPOD_UID_LEN + 1], int *has_pod)
{
	char path[64], buf[CGROUP_MAX];
	ssize_t n;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	n = read_file(path, buf, sizeof(buf));
	*has_pod = n > 0 && kubepod_uid(buf, (size_t)n, pod);
	for (ssize_t i = 0; i < n;) {
		ssize_t j = i;

		while (j < n && is_hex((unsigned char)buf[j]))
			j++;
		if (j - i == 64 && (!i || !isalnum((unsigned char)buf[i - 1])) &&
		    (j == n || !isalnum((unsigned char)buf[j]))) {
			memcpy(out, buf + i, 64);
			out[64] = '\0';
			found = 1;
		}
		i = j > i ? j : j + 1;
	}
	return found;
}

static struct agent_proc *proc_find(struct agent *ag, pid_t pid)
{
	for (size_t i = 0; i < ag->np; i++)
		if (ag->p[i].pid == pid)
			return &ag->p[i];
	return NULL;
}

static void proc_release(struct agent_proc *p)
{
	free(p->labels);
	free(p->last);
	free(p->merged);
}

/* The process's comm, sanitized, for -v; "" when gone. */
static void comm_of(pid_t pid, char *out, size_t cap)
{
	char path[64], raw[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	n = read_file(path, raw, sizeof(raw));
	if (n > 0 && raw[n - 1] == '\n')
		n--;
	utf8_sanitize(out, cap, raw, n > 0 ? (size_t)n : 0);
}

static void found(struct agent *ag, pid_t pid, struct target *t)
{
	char service[AGENT_SERVICE_MAX + 1], cid[65], pod[KUBEPOD_UID_LEN + 1],
	     exe[AGENT_SERVICE_MAX + 1] = "";
	int has_pod, from_env = service_from_environ(ag, pid, service);
	int has_cid = container_id(pid, cid, pod, &has_pod);
	struct agent_proc *p = proc_find(ag, pid);

	if (!from_env)
		service_from_cmdline(pid, t, service);
	/*
	 * All of it was read by pid: were the process held gone by now, the
	 * pid may be another's (another user's), and none of it is this one's.
	 * Alive after the reads, it was alive through them: the pid was its.
	 */
	if (!procmem_alive(&t->mem)) {
		from_env = has_cid = has_pod = 0;
		service_from_cmdline(0, t, service);
	}
	/* the executable held: the process's own whatever its pid is now */
	if (t->exe_path) {
		const char *slash = strrchr(t->exe_path, '/');

		service_clean(slash ? slash + 1 : t->exe_path,
			      strlen(slash ? slash + 1 : t->exe_path), exe);
	}
	if (!*exe)
		snprintf(exe, sizeof(exe), "unknown");
	if (p) {
		proc_release(p);
	} else {
		if (ag->np == ag->ap) {
			ag->ap = ag->ap ? ag->ap * 2 : 16;
			ag->p = xreallocarray(ag->p, ag->ap, sizeof(*ag->p));
		}
		p = &ag->p[ag->np++];
	}
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->t = t;
	p->labels = xstrfmt("%s%s%shost_name=%s,%s%s%spid=%d,process_executable_name=%s,"
			    "service_name=%s", has_cid ? "container_id=" : "", has_cid ? cid : "",
			    has_cid ? "," : "", ag->host, has_pod ? "k8s_pod_uid=" : "",
			    has_pod ? pod : "", has_pod ? "," : "", (int)pid, exe, service);
	if (ag->o->verbose)
		fprintf(stderr, "pyrospy: found process %d (%s %s, %s): service_name=%s%s%s%s%s\n",
			(int)pid, target_lang_name(t->lang), t->version, t->comm, service,
			has_cid ? " container_id=" : "", has_cid ? cid : "",
			has_pod ? " k8s_pod_uid=" : "", has_pod ? pod : "");
}

static void event(void *arg, enum sampler_event ev, pid_t pid, struct target *t,
		  const char *why)
{
	struct agent *ag = arg;
	struct agent_proc *p;
	char comm[64];

	agent_metrics_event(ag->metrics, ev, why);
	switch (ev) {
	case SAMPLER_FOUND:
		found(ag, pid, t);
		break;
	case SAMPLER_SKIPPED:
		if (ag->o->verbose) {
			comm_of(pid, comm, sizeof(comm));
			fprintf(stderr, "pyrospy: skipped process %d (%s): %s\n", (int)pid, comm, why);
		}
		break;
	case SAMPLER_FORGOTTEN:
		p = proc_find(ag, pid);
		/* a new process on its pid may have been found already */
		if (p && p->t == t) {
			proc_release(p);
			*p = ag->p[--ag->np];
		}
		if (ag->o->verbose)
			fprintf(stderr, "pyrospy: forgot process %d: %s\n", (int)pid, why);
		break;
	}
}

/* Does re match pid's executable, command line or cgroup? */
static int matches(const regex_t *re, const char *exe, const char *cmdline, const char *cgroup)
{
	return !regexec(re, exe, 0, NULL, 0) || !regexec(re, cmdline, 0, NULL, 0) ||
	       !regexec(re, cgroup, 0, NULL, 0);
}

/*
 * --max-memory, the agent's as a whole: a quarter for the window, a
 * quarter for the spool, and while its resident set is under the other
 * half, another process may be opened; else it is put off a second.
 */
static int room(struct agent *ag, const char **why)
{
	if (agent_rss_bytes() < ag->o->max_memory / 2)
		return SAMPLER_WANT;
	*why = AGENT_MEMORY_FULL;
	return SAMPLER_WANT_LATER;
}

static int want(void *arg, pid_t pid, const char **why)
{
	struct agent *ag = arg;
	char path[64], raw[CGROUP_MAX], exe[PTREE_CMDLINE], cmdline[PTREE_CMDLINE],
	     cgroup[CGROUP_MAX];
	ssize_t n;
	int m;

	if (pid == ag->self) {
		*why = "pyrospy itself";
		return SAMPLER_SKIP;
	}
	if (ptree_parent(pid) == ag->self) {
		*why = "a child of pyrospy's";
		return SAMPLER_SKIP;
	}
	if (!ag->has_match && !ag->has_exclude)
		return room(ag, why);
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, raw, sizeof(raw) - 1);
	utf8_sanitize(exe, sizeof(exe), raw, n > 0 ? (size_t)n : 0);
	if (ptree_cmdline(pid, cmdline, sizeof(cmdline)) < 0)
		*cmdline = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	n = read_file(path, raw, sizeof(raw));
	utf8_sanitize(cgroup, sizeof(cgroup), raw, n > 0 ? (size_t)n : 0);
	m = !ag->has_match || matches(&ag->match, exe, cmdline, cgroup);
	if (!m) {
		*why = "not matched by --match";
		return SAMPLER_SKIP;
	}
	if (ag->has_exclude && matches(&ag->exclude, exe, cmdline, cgroup)) {
		*why = "excluded by --exclude";
		return SAMPLER_SKIP;
	}
	return room(ag, why);
}

static void window_reset(struct agent *ag)
{
	profile_release(&ag->window);
	profile_init(&ag->window);
	ag->window.max_bytes = ag->o->max_memory / 4;	/* see room() */
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The window's samples so far, to the uploader at the rate they were
 * taken at: the one asked, or when the ticks fell behind it by more than
 * a fifth and 4 ticks (the agent not given the CPU, or busy opening the
 * processes it found; fewer are the ticks' random spacing), the rate
 * they kept, 1 Hz at least: each sample stands for the time the request
 * says.
 */
static void window_hand_over(struct agent *ag, int64_t now)
{
	double secs = ag->since ? (double)(now - ag->since) / 1e9 : 0,
	       asked = secs * ag->rate, kept = secs > 0 ? (double)ag->ticks / secs : 0;
	unsigned int rate = ag->ticks >= 0.8 * asked || asked - ag->ticks < 4 ? ag->rate :
			    kept < 1 ? 1 : (unsigned int)(kept + 0.5);

	ingest_window_at(ag->in, &ag->window, ag->from, ag->from + INGEST_WINDOW, rate);
	window_reset(ag);
	ag->ticks = 0;
	ag->since = now;
}

/* 1 when now is past the window: it is handed over, another begun */
static int window_rotate(struct agent *ag, time_t now)
{
	time_t at = ingest_align(now);

	if (at == ag->from)
		return 0;
	window_hand_over(ag, clock_ns(CLOCK_MONOTONIC));
	ag->from = at;
	return 1;
}

/* A sample: under its process's labels, into the window. */
static void add(void *arg, const char *tags, const struct stack *st)
{
	struct agent *ag = arg;
	struct agent_proc *p = proc_find(ag, st->pid);

	/* the window turns after a tick (pace()), never within one: its rate may change then */
	if (!p) {
		ag->unlabelled++;
		return;
	}
	if (!tags || !*tags) {
		profile_add(&ag->window, p->labels, st, 1);
		return;
	}
	if (!p->last || strcmp(p->last, tags)) {
		free(p->last);
		free(p->merged);
		p->last = xstrdup(tags);
		p->merged = tags_merge(p->labels, tags);
	}
	profile_add(&ag->window, p->merged, st, 1);
}

static int tick(void *arg, const struct profile *prof, const struct sampler_result *res)
{
	struct agent *ag = arg;

	(void)prof;	/* the window turns in pace(), after every tick */
	agent_metrics_tick(ag->metrics, res, ag->np, ag->unlabelled, ag->rate);
	return 0;
}

/*
 * --max-cpu, after every tick: the rate from the next tick on, raised only
 * at a window's start (or before its first sample), lowered at once.  The
 * window's samples so far are handed over at the rate they were taken at,
 * the rest of it goes at the new one (see ingest_window_at()).
 */
static unsigned int pace(void *arg)
{
	struct agent *ag = arg;
	int fresh;
	unsigned int was = ag->rate, rate;

	/* the first tick stands for the period before it, not for finding the processes */
	ag->last = clock_ns(CLOCK_MONOTONIC);
	if (!ag->since)
		ag->since = ag->last - 1000000000 / ag->rate;
	ag->ticks++;
	fresh = window_rotate(ag, time(NULL)) || !ag->window.total;
	rate = budget_pace(&ag->budget, clock_ns(CLOCK_MONOTONIC),
			   clock_ns(CLOCK_PROCESS_CPUTIME_ID), fresh);
	if (rate != was) {
		window_hand_over(ag, clock_ns(CLOCK_MONOTONIC));
		ag->rate = rate;
		if (ag->o->verbose)
			fprintf(stderr, "pyrospy: sampling %zu processes at %u Hz, was %u: the agent "
				"used %.2f%% of a core, %s --max-cpu %g\n", ag->np, rate, was,
				ag->budget.used * 100, rate < was ? "over" : "under",
				ag->budget.share * 100);
	}
	if (ag->budget.over && !ag->said_over && ag->o->verbose)
		fprintf(stderr, "pyrospy: over --max-cpu %g at %u Hz, the least a process is "
			"sampled at: the agent used %.2f%% of a core for %zu processes\n",
			ag->budget.share * 100, rate, ag->budget.used * 100, ag->np);
	ag->said_over = ag->budget.over;
	return rate;
}

static int compile(struct cli_opts *o, regex_t *re, const char *pattern, const char *opt)
{
	if (!regcomp(re, pattern, REG_EXTENDED | REG_NOSUB))
		return 0;
	return cli_usage_error(o->cmd, "invalid pattern '%s' for %s", pattern, opt);
}

/* host_name: this host's (the UTS namespace pyrospy runs in), cleaned as a service name */
static void agent_host_name(char out[AGENT_SERVICE_MAX + 1])
{
	char raw[256] = "";

	if (gethostname(raw, sizeof(raw) - 1))
		*raw = '\0';
	raw[sizeof(raw) - 1] = '\0';
	service_clean(raw, strlen(raw), out);
	if (!*out)
		snprintf(out, AGENT_SERVICE_MAX + 1, "unknown");
}

/* --listen: /metrics and /healthz served; the exit status */
static int agent_listen(struct cli_opts *o, struct agent *ag)
{
	struct httpd_opts ho = { .listen = o->listen, .allow_host = o->allow_host,
				 .nallow_host = o->nallow_host };
	int ret;

	ret = agent_metrics_start(&ag->metrics, &ho, ag->in);
	if (!ret)	/* even with --quiet: with port 0 nothing else says where */
		fprintf(stderr, "pyrospy: serving the agent's metrics at %s/metrics\n",
			agent_metrics_url(ag->metrics));
	return ret;
}

int cli_agent(struct cli_opts *o)
{
	struct agent ag = { .o = o, .self = getpid() };
	struct sampler_opts so = {
		.rate = o->rate,
		.reader = { .idle = o->idle, .no_gc = o->no_gc, .anchor = 1, .reuse = 1 },
		.root = 1,
		.fleet = 1,
		.verbose = o->verbose,
		.tags = o->tagset,
		.add = add,
		.count_only = 1,
		.tick = tick,
		.pace = pace,
		.arg = &ag,
		.want = want,
		.event = event,
	};
	struct sampler_result res;
	struct profile p;
	enum perr err;
	int ret = EXIT_OK, up;

	if (o->match && (ret = compile(o, &ag.match, o->match, "--match")))
		return ret;
	ag.has_match = o->match != NULL;
	if (o->exclude && (ret = compile(o, &ag.exclude, o->exclude, "--exclude"))) {
		if (ag.has_match)
			regfree(&ag.match);
		return ret;
	}
	ag.has_exclude = o->exclude != NULL;
	cli_install_signals();
	ag.environ = xmalloc(AGENT_ENVIRON_MAX);
	o->up.spy_name = "pyrospy";
	o->up.per_process = 1;
	o->up.spool_bytes = o->max_memory / 4;
	o->up.log = stderr;
	ag.in = ingest_start(&o->up);
	if (!ag.in) {
		ret = EXIT_FAIL;	/* it said why */
		goto out;
	}
	agent_host_name(ag.host);
	if (o->listen && (ret = agent_listen(o, &ag))) {
		ingest_stop(ag.in);
		goto out;
	}
	profile_init(&ag.window);
	window_reset(&ag);
	ag.from = ingest_align(time(NULL));
	ag.rate = o->rate;
	budget_init(&ag.budget, o->max_cpu / 100, o->rate, clock_ns(CLOCK_MONOTONIC),
		    clock_ns(CLOCK_PROCESS_CPUTIME_ID));
	cli_note(o, "profiling every Ruby and Python process at %u Hz at most, within %g%% of a "
		 "core, streaming to %s; Ctrl-C to stop", o->rate, o->max_cpu, o->up.server);
	profile_init(&p);
	err = sampler_run(NULL, &p, &so, &res, &cli_stop_flag);
	profile_release(&p);
	agent_metrics_stop(ag.metrics);
	/*
	 * the partial window too, up to its last tick (the sampler's end may
	 * take long on a busy host), then what is spooled, bounded in time
	 */
	window_hand_over(&ag, ag.last);
	profile_release(&ag.window);
	up = ingest_stop(ag.in);
	if (up < 0)
		ret = EXIT_FAIL;
	else if (!up)
		cli_note(o, "uploaded every window to %s", o->up.server);
	if (err) {
		cli_error("sampling stopped: %s", perr_str(err));
		ret = EXIT_FAIL;
	}
	if (o->verbose)
		fprintf(stderr, "pyrospy: %llu ticks in %.1f s, %llu samples, %.0f us CPU per tick\n",
			(unsigned long long)res.ticks, res.elapsed,
			(unsigned long long)res.stacks,
			res.ticks ? res.cpu * 1e6 / (double)res.ticks : 0.0);
	if (o->verbose)
		fprintf(stderr, "pyrospy: --max-cpu %g: %.2f%% of a core used, %u Hz at the end, "
			"lowered %llu and raised %llu times, %.1f s over it at %u Hz\n", o->max_cpu,
			res.elapsed > 0 ? res.cpu * 100 / res.elapsed : 0.0, ag.rate,
			(unsigned long long)ag.budget.lowered, (unsigned long long)ag.budget.raised,
			(double)ag.budget.over_ns / 1e9, BUDGET_FLOOR);
out:
	for (size_t i = 0; i < ag.np; i++)
		proc_release(&ag.p[i]);
	free(ag.p);
	free(ag.environ);
	if (ag.has_match)
		regfree(&ag.match);
	if (ag.has_exclude)
		regfree(&ag.exclude);
	return ret;
}
