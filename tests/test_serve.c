/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "proc/target.h"

/*
 * pyrospy serve scraped as Go programs are: by Debian's `go tool pprof
 * -raw' (golang-go), which fetches /debug/pprof/profile?seconds=N and
 * prints the profile it decoded; the seed workload's 75/25 split must
 * come through.  And by hand, with requests a scraper would never send.
 */

struct server {
	pid_t pid;
	int err;		/* its stderr */
	char url[128];		/* http://127.0.0.1:PORT */
	int port;
};

/* Start `pyrospy serve --pid PID --listen LISTEN -r 100 --idle EXTRA...' and find its address. */
static void serve_start_with(const char *pid, const char *listen, const char *const *extra,
			     struct server *sv)
{
	const char *bin = getenv("PYROSPY");
	const char *argv[32] = { NULL, "serve", "--pid", pid, "--listen", listen, "-r", "100",
				 "--idle" };
	char path[1024], line[512];
	size_t len = 0;
	int fds[2], na = 9;

	if (!bin) {
		snprintf(path, sizeof(path), "%s/pyrospy", BUILDDIR);
		bin = path;
	}
	argv[0] = bin;
	for (; extra && *extra && na < 31; extra++)
		argv[na++] = *extra;
	cr_assert(pipe(fds) == 0);
	sv->pid = fork();
	cr_assert(sv->pid >= 0);
	if (sv->pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	sv->err = fds[0];
	/* "pyrospy: serving process N (...) at http://127.0.0.1:PORT/debug/pprof/" */
	for (;;) {
		struct pollfd p = { sv->err, POLLIN, 0 };
		const char *at, *end;
		ssize_t n;

		cr_assert_eq(poll(&p, 1, 20000), 1, "pyrospy serve said nothing in 20 s: %.*s",
			     (int)len, line);
		n = read(sv->err, line + len, sizeof(line) - 1 - len);
		cr_assert_gt(n, 0, "pyrospy serve ended: %.*s", (int)len, line);
		len += (size_t)n;
		line[len] = '\0';
		at = strstr(line, "http://");
		end = at ? strstr(at, "/debug/pprof/\n") : NULL;
		if (!end)
			continue;
		snprintf(sv->url, sizeof(sv->url), "%.*s", (int)(end - at), at);
		cr_assert_eq(sscanf(strrchr(sv->url, ':'), ":%d", &sv->port), 1, "%s", line);
		break;
	}
}

static void serve_start(const char *pid, struct server *sv)
{
	serve_start_with(pid, "127.0.0.1:0", NULL, sv);
}

/* SIGTERM: it must end at once, with status 0, having said nothing amiss. */
static void serve_stop(struct server *sv)
{
	char buf[65536];
	size_t len = 0;
	ssize_t n;
	int status;

	kill(sv->pid, SIGTERM);
	while ((n = read(sv->err, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(sv->err);
	cr_assert_eq(waitpid(sv->pid, &status, 0), sv->pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, buf);
	cr_assert(!strstr(buf, "error") && !strstr(buf, "ERROR"), "%s", buf);
}

/*
 * Samples of `go tool pprof -raw' output under a location named a, and
 * under one named b, and in all.
 */
static void count_raw(const char *raw, const char *a, const char *b, unsigned long *na,
		      unsigned long *nb, unsigned long *all)
{
	/* location id -> 1 for a, 2 for b */
	static char which[65536];
	const char *locs = strstr(raw, "\nLocations\n"), *p;

	cr_assert_not_null(locs, "no Locations in:\n%s", raw);
	memset(which, 0, sizeof(which));
	for (p = locs + 11; *p && strncmp(p, "Mappings", 8); p += strcspn(p, "\n"), p += *p == '\n') {
		unsigned int id;
		char name[256];
		int off = 0;

		/* "     1: 0x0 work /tmp/seed.py:5:0 s=0"; "M=1 " may come after the address */
		if (sscanf(p, " %u: %*s %n", &id, &off) != 1 || !off || id >= sizeof(which))
			continue;
		if (!strncmp(p + off, "M=", 2))
			off += (int)strcspn(p + off, " ") + 1;
		if (sscanf(p + off, "%255s", name) != 1)
			continue;
		which[id] = !strcmp(name, a) ? 1 : !strcmp(name, b) ? 2 : 0;
	}
	*na = *nb = *all = 0;
	p = strstr(raw, "\nSamples:\n");
	cr_assert_not_null(p, "no Samples in:\n%s", raw);
	for (p += 10; p < locs; p += strcspn(p, "\n"), p += *p == '\n') {
		unsigned long count, cpu;
		int off = 0, has = 0;

		/* "         75  750000000: 1 2 3 " */
		if (sscanf(p, " %lu %lu: %n", &count, &cpu, &off) != 2 || !off)
			continue;
		cr_assert_eq(cpu, count * 10000000, "%.80s", p);
		for (const char *q = p + off; *q && *q != '\n';) {
			char *end;
			unsigned long id = strtoul(q, &end, 10);

			if (end == q)
				break;
			if (id < sizeof(which))
				has |= which[id];
			q = end + strspn(end, " ");
		}
		*all += count;
		if (has & 1)
			*na += count;
		if (has & 2)
			*nb += count;
	}
}

/*
 * go tool pprof -raw URL/debug/pprof/profile?seconds=secs > out (caller
 * frees), the copy pprof saves of what it fetched in out.d.
 */
static char *go_pprof_cmd(const struct server *sv, const char *secs, const char *out)
{
	char *cmd = malloc(1024);

	snprintf(cmd, 1024,
		 "mkdir -p %s.d && cd %s.d && PPROF_TMPDIR=%s.d GOTOOLCHAIN=local go tool pprof "
		 "-raw '%s/debug/pprof/profile?seconds=%s' >%s 2>&1", out, out, out, sv->url, secs,
		 out);
	return cmd;
}

static void check_split(const struct interp *in, const char *raw, unsigned long least)
{
	unsigned long foo, bar, all;

	count_raw(raw, test_func(in, "foo"), test_func(in, "bar"), &foo, &bar, &all);
	cr_assert_geq(all, least, "%s: %lu samples:\n%s", in->bin, all, raw);
	cr_assert_leq(all, 400, "%s: %lu samples in 3 s at 100 Hz", in->bin, all);
	cr_assert_geq(foo + bar, all * 9 / 10, "%s: foo %lu, bar %lu of %lu", in->bin, foo, bar,
		      all);
	/* 75/25 within a few points */
	cr_assert(foo * 100 >= (foo + bar) * 65 && foo * 100 <= (foo + bar) * 85,
		  "%s: foo %lu, bar %lu: not 75/25", in->bin, foo, bar);
}

static const struct interp *serve_interps[] = {
	&test_pythons[1],	/* host python3.11 */
	&test_rubies[1],	/* host ruby3.1 */
	&test_pythons[2],	/* trixie python3.13 */
	&test_rubies[2],	/* trixie ruby3.3 */
};

ParameterizedTestParameters(serve, go_pprof_seed)
{
	return cr_make_param_array(size_t, test_indexes(4), 4);
}

/* Two go tool pprof at once, each its own 3 s of the seed. */
ParameterizedTest(size_t *i, serve, go_pprof_seed, .timeout = 90)
{
	const struct interp *in = serve_interps[*i];
	const char *sargs[] = { test_target_for(in, in->lang == TARGET_RUBY ? "seed.rb" : "seed.py"),
				NULL };
	char ready[64], pidbuf[32], out1[64], out2[64], sh[2400], *c1, *c2, *raw1, *raw2, *o;
	struct server sv;
	pid_t pid;
	int st;

	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	serve_start(pidbuf, &sv);
	snprintf(out1, sizeof(out1), "/tmp/pyrospy-serve-%d-1.txt", (int)getpid());
	snprintf(out2, sizeof(out2), "/tmp/pyrospy-serve-%d-2.txt", (int)getpid());
	c1 = go_pprof_cmd(&sv, "3", out1);
	c2 = go_pprof_cmd(&sv, "3", out2);
	snprintf(sh, sizeof(sh), "(%s) & (%s); s=$?; wait $! && exit $s", c1, c2);
	o = test_run(sh, &st);
	serve_stop(&sv);
	test_stop(pid);
	raw1 = test_slurp(out1);
	raw2 = test_slurp(out2);
	snprintf(sh, sizeof(sh), "rm -rf %s %s %s.d %s.d", out1, out2, out1, out2);
	cr_assert_eq(system(sh), 0);
	cr_assert_eq(st, 0, "go tool pprof failed (golang-go is needed): %s\n%s\n%s", o, raw1,
		     raw2);
	check_split(in, raw1, 200);
	check_split(in, raw2, 200);
	free(c1);
	free(c2);
	free(o);
	free(raw1);
	free(raw2);
}

/* Ask req; the response must have status and a body holding say. */
static void ask(const struct server *sv, const char *req, size_t rlen, const char *status,
		const char *say)
{
	int fd = test_connect(sv->port);
	char *resp, *body;
	size_t len;

	test_send_all(fd, req, rlen);
	resp = test_read_all(fd, &len);
	cr_assert(!strncmp(resp, status, strlen(status)), "want %s, got: %.200s", status, resp);
	body = strstr(resp, "\r\n\r\n");
	cr_assert(body && strstr(body, say), "want '%s' in: %s", say, resp);
	free(resp);
}

/* A profile request sent: the connection. */
static int profile_request(const struct server *sv, const char *secs)
{
	char req[128];
	int fd = test_connect(sv->port);
	int n = snprintf(req, sizeof(req), "GET /debug/pprof/profile?seconds=%s HTTP/1.1\r\n"
			 "Host: localhost\r\n\r\n", secs);

	test_send_all(fd, req, (size_t)n);
	return fd;
}

/* The response on fd is a gzipped profile. */
static void got_profile(int fd)
{
	size_t len;
	char *resp = test_read_all(fd, &len), *body = strstr(resp, "\r\n\r\n");

	cr_assert(!strncmp(resp, "HTTP/1.1 200 ", 13), "%.200s", resp);
	cr_assert(strstr(resp, "Content-Type: application/octet-stream\r\n"), "%.200s", resp);
	cr_assert(body && len - (size_t)(body + 4 - resp) > 20, "%.200s", resp);
	cr_assert(!memcmp(body + 4, "\x1f\x8b", 2), "not gzip: %.200s", resp);
	free(resp);
}

/*
 * What no scraper sends, each answered with a status and a one-line
 * reason, while the server goes on serving: bad seconds, a 9 KiB head, an
 * unknown path, another method, garbage, a client that never finishes its
 * head, a 17th profile at once.
 */
Test(serve, hostile_requests, .timeout = 90)
{
	const struct interp *in = &test_pythons[1];
	const char *sargs[] = { test_target_for(in, "seed.py"), NULL };
	char ready[64], pidbuf[32], *big, *resp;
	int slow, fds[16];
	struct server sv;
	size_t len;
	pid_t pid;

	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	serve_start(pidbuf, &sv);
	/* half a head, and then nothing: 408 after 5 s */
	slow = test_connect(sv.port);
	test_send_all(slow, "GET /debug/pprof/ HTTP/1.1\r\n", 28);

#define ASK(req, status, say) ask(&sv, req, sizeof(req) - 1, status, say)
#define LH "Host: localhost\r\n"
	ASK("GET /debug/pprof/profile?seconds=0 HTTP/1.1\r\n" LH "\r\n", "HTTP/1.1 400 ",
	    "seconds");
	ASK("GET /debug/pprof/profile?seconds=abc HTTP/1.1\r\n" LH "\r\n", "HTTP/1.1 400 ",
	    "seconds");
	ASK("GET /debug/pprof/profile?seconds=301 HTTP/1.1\r\n" LH "\r\n", "HTTP/1.1 400 ",
	    "seconds");
	ASK("GET /debug/pprof/profile?seconds=99999999999999999999 HTTP/1.1\r\n" LH "\r\n",
	    "HTTP/1.1 400 ", "seconds");
	ASK("GET /debug/pprof/profile?seconds=-1 HTTP/1.1\r\n" LH "\r\n", "HTTP/1.1 400 ",
	    "seconds");
	ASK("GET /nope HTTP/1.1\r\n" LH "\r\n", "HTTP/1.1 404 ", "no such page");
	ASK("GET /debug/pprof/heap HTTP/1.1\r\n" LH "\r\n", "HTTP/1.1 404 ", "no such page");
	ASK("POST /debug/pprof/profile HTTP/1.1\r\n" LH "Content-Length: 0\r\n\r\n",
	    "HTTP/1.1 405 ", "GET");
	ASK("\x01\x02\x03 garbage\r\n\r\n", "HTTP/1.1 400 ", "request line");
	ASK("GET /debug/pprof/ HTTP/9.9\r\n\r\n", "HTTP/1.1 400 ", "HTTP/1.1");
	ASK("GET /debug/pprof/ HTTP/1.1\r\nBad Header\r\n\r\n", "HTTP/1.1 400 ", "header");
	ASK("GET /debug/pprof/ HTTP/1.1\r\nX: a\x01z\r\n\r\n", "HTTP/1.1 400 ", "control");
	ASK("GET /debug/pprof/ HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", "HTTP/1.1 400 ",
	    "body");
	ASK("GET /debug/pprof/ HTTP/1.1\r\n" LH "\r\n", "HTTP/1.1 200 ", "profile?seconds=");
	/* a 9 KiB header */
	big = malloc(10000);
	len = (size_t)snprintf(big, 10000, "GET /debug/pprof/ HTTP/1.1\r\nX-Big: ");
	memset(big + len, 'a', 9 * 1024);
	len += 9 * 1024;
	len += (size_t)snprintf(big + len, 10000 - len, "\r\n\r\n");
	ask(&sv, big, len, "HTTP/1.1 400 ", "8192");
	free(big);
	/* 16 profiles at once are served, the 17th is told to come back; the index still is */
	for (int i = 0; i < 16; i++)
		fds[i] = profile_request(&sv, "2");
	ASK("GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\n" LH "\r\n", "HTTP/1.1 503 ",
	    "too many");
	ASK("GET /debug/pprof/ HTTP/1.1\r\n" LH "\r\n", "HTTP/1.1 200 ", "profile?seconds=");
	for (int i = 0; i < 16; i++)
		got_profile(fds[i]);
	/* and it still serves */
	got_profile(profile_request(&sv, "1"));
	resp = test_read_all(slow, &len);
	cr_assert(!strncmp(resp, "HTTP/1.1 408 ", 13), "%s", resp);
	free(resp);
	serve_stop(&sv);
	test_stop(pid);
}

/*
 * One scrape as a scraper makes it, reporting rather than asserting what
 * went wrong (the caller tries again): a whole gzipped profile is 1.
 */
static int try_profile(const struct server *sv, char *why, size_t cap)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)sv->port) };
	struct timeval tv = { 15, 0 };
	char req[160], *buf = malloc(1 << 20), *body;
	size_t len = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok = 0;

	cr_assert(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	n = snprintf(req, sizeof(req), "GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\n"
		     "Host: 127.0.0.1:%d\r\nUser-Agent: Go-http-client/1.1\r\n\r\n", sv->port);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		snprintf(why, cap, "connect: %s", strerror(errno));
	} else if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
		snprintf(why, cap, "send: %s", strerror(errno));
	} else {
		while (len < (1 << 20) - 1 && (n = recv(fd, buf + len, (1 << 20) - 1 - len, 0)) > 0)
			len += (size_t)n;
		buf[len] = '\0';
		body = strstr(buf, "\r\n\r\n");
		ok = n == 0 && !strncmp(buf, "HTTP/1.1 200 ", 13) && body &&
		     len > (size_t)(body + 4 - buf) + 20 && !memcmp(body + 4, "\x1f\x8b", 2);
		if (!ok)
			snprintf(why, cap, "%s after %zu bytes: %.60s", n ? strerror(errno) : "end",
				 len, buf);
	}
	close(fd);
	free(buf);
	return ok;
}

/*
 * A local user (nobody) holds 40 connections that send nothing, and opens
 * a new one for each that closes, more than the server's 32 slots: the
 * scraper's request must still be answered, within three tries.
 */
Test(serve, idle_flood, .timeout = 90)
{
	const struct interp *in = &test_pythons[1];
	const char *sargs[] = { test_target_for(in, "seed.py"), NULL };
	const struct interp as_nobody = { NULL, "setpriv", TARGET_PYTHON, 3, 11 };
	char ready[64], pidbuf[32], port[16], why[3][160] = { "", "", "" };
	const char *fargs[] = { "--reuid=nobody", "--regid=nogroup", "--clear-groups",
				"/usr/bin/python3.11", test_target_path("connflood.py"), port, "40",
				NULL };
	struct server sv;
	pid_t pid, flood;
	int tries = 0, ok = 0, status;

	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	serve_start(pidbuf, &sv);
	snprintf(port, sizeof(port), "%d", sv.port);
	flood = test_start(&as_nobody, fargs, ready, sizeof(ready));
	cr_assert_str_eq(ready, "ready");
	usleep(500 * 1000);
	while (tries < 3 && !ok)
		ok = try_profile(&sv, why[tries++], sizeof(why[0]));
	cr_assert_eq(waitpid(flood, &status, WNOHANG), 0, "the flood ended: status %d", status);
	test_stop(flood);
	cr_assert(ok, "no profile in 3 tries: %s; %s; %s", why[0], why[1], why[2]);
	serve_stop(&sv);
	test_stop(pid);
}

/* Ask for path with this Host header (none: NULL), in HTTP/1.version. */
static void ask_host(const struct server *sv, char version, const char *host, const char *status,
		     const char *say)
{
	char req[512];
	int n;

	if (host)
		n = snprintf(req, sizeof(req), "GET /debug/pprof/ HTTP/1.%c\r\nHost: %s\r\n\r\n",
			     version, host);
	else
		n = snprintf(req, sizeof(req), "GET /debug/pprof/ HTTP/1.%c\r\n\r\n", version);
	ask(sv, req, (size_t)n, status, say);
}

/*
 * DNS rebinding: a web page whose name is made to resolve to 127.0.0.1
 * asks with its own name in Host, and is refused (421), its profile
 * request too; the names of this server are answered.
 */
Test(serve, host_check, .timeout = 60)
{
	const struct interp *in = &test_pythons[1];
	const char *sargs[] = { test_target_for(in, "seed.py"), NULL };
	char ready[64], pidbuf[32], h[128];
	struct server sv;
	pid_t pid;

	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	serve_start(pidbuf, &sv);
	/* another's name, with or without the port, or an address not reached */
	snprintf(h, sizeof(h), "evil.example:%d", sv.port);
	ask_host(&sv, '1', h, "HTTP/1.1 421 ", "Host");
	ask_host(&sv, '1', "evil.example", "HTTP/1.1 421 ", "Host");
	ask_host(&sv, '0', "evil.example", "HTTP/1.1 421 ", "Host");
	ask_host(&sv, '1', "prof.internal.evil.example", "HTTP/1.1 421 ", "Host");
	ask_host(&sv, '1', "127.0.0.2", "HTTP/1.1 421 ", "Host");
	ask_host(&sv, '1', "[::1]", "HTTP/1.1 421 ", "Host");
	ask_host(&sv, '1', "", "HTTP/1.1 421 ", "Host");
	snprintf(h, sizeof(h), "GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\n"
		 "Host: evil.example:%d\r\n\r\n", sv.port);
	ask(&sv, h, strlen(h), "HTTP/1.1 421 ", "Host");
	/* HTTP/1.1 must say, once */
	ask_host(&sv, '1', NULL, "HTTP/1.1 400 ", "Host");
	snprintf(h, sizeof(h), "GET / HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n");
	ask(&sv, h, strlen(h), "HTTP/1.1 400 ", "Host");
	/* what this server is called */
	snprintf(h, sizeof(h), "127.0.0.1:%d", sv.port);
	ask_host(&sv, '1', h, "HTTP/1.1 200 ", "profile?seconds=");
	ask_host(&sv, '1', "127.0.0.1", "HTTP/1.1 200 ", "profile?seconds=");
	snprintf(h, sizeof(h), "localhost:%d", sv.port);
	ask_host(&sv, '1', h, "HTTP/1.1 200 ", "profile?seconds=");
	ask_host(&sv, '1', "LocalHost:7000", "HTTP/1.1 200 ", "profile?seconds=");
	ask_host(&sv, '0', NULL, "HTTP/1.1 200 ", "profile?seconds=");
	snprintf(h, sizeof(h), "GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\n"
		 "Host: 127.0.0.1:%d\r\n\r\n", sv.port);
	{
		int fd = test_connect(sv.port);

		test_send_all(fd, h, strlen(h));
		got_profile(fd);
	}
	serve_stop(&sv);
	test_stop(pid);
}

/* The names --allow-host gives are answered too, with any port; the others still are not. */
Test(serve, allow_host, .timeout = 60)
{
	const struct interp *in = &test_pythons[1];
	const char *sargs[] = { test_target_for(in, "seed.py"), NULL };
	const char *extra[] = { "--allow-host", "prof.internal", "--allow-host", "[fd00::7]",
				NULL };
	char ready[64], pidbuf[32];
	struct server sv;
	pid_t pid;

	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	serve_start_with(pidbuf, "127.0.0.1:0", extra, &sv);
	ask_host(&sv, '1', "PROF.internal:80", "HTTP/1.1 200 ", "profile?seconds=");
	ask_host(&sv, '1', "prof.internal", "HTTP/1.1 200 ", "profile?seconds=");
	ask_host(&sv, '1', "[fd00::7]:6060", "HTTP/1.1 200 ", "profile?seconds=");
	ask_host(&sv, '1', "localhost", "HTTP/1.1 200 ", "profile?seconds=");
	ask_host(&sv, '1', "prof.internal.evil.example", "HTTP/1.1 421 ", "Host");
	ask_host(&sv, '1', "evil.example", "HTTP/1.1 421 ", "Host");
	serve_stop(&sv);
	test_stop(pid);
}

/* A connection from src to dst:port. */
static int connect_from(const char *src, const char *dst, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET }, da = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert(fd >= 0);
	cr_assert_eq(inet_pton(AF_INET, src, &sa.sin_addr), 1);
	cr_assert_eq(inet_pton(AF_INET, dst, &da.sin_addr), 1);
	da.sin_port = htons((uint16_t)port);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "bind: %s", strerror(errno));
	cr_assert_eq(connect(fd, (struct sockaddr *)&da, sizeof(da)), 0, "connect: %s",
		     strerror(errno));
	return fd;
}

/* Is fd still open, nothing received (the server neither answered nor hung up)? */
static int still_open(int fd)
{
	char c;

	return recv(fd, &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN;
}

/*
 * One address other than loopback holds at most 8 connections: a 9th
 * closes that address's oldest idle one, long before its 5 s are up.
 * Loopback, every local user's address, is not held to it.  In a network
 * namespace of the test's own, where 10.77.0.1 is on lo.
 */
Test(serve, remote_share, .timeout = 60)
{
	const struct interp *in = &test_pythons[1];
	const char *sargs[] = { test_target_for(in, "seed.py"), NULL };
	char ready[64], pidbuf[32], req[160];
	int far[9], near[20], fd, n;
	struct pollfd p;
	struct server sv;
	pid_t pid;

	cr_assert_eq(unshare(CLONE_NEWNET), 0, "unshare: %s", strerror(errno));
	cr_assert_eq(system("ip link set lo up && ip addr add 10.77.0.1/32 dev lo"), 0);
	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	serve_start_with(pidbuf, "0.0.0.0:0", NULL, &sv);
	for (int i = 0; i < 8; i++)
		far[i] = connect_from("10.77.0.1", "10.77.0.1", sv.port);
	for (int i = 0; i < 20; i++)
		near[i] = connect_from("127.0.0.1", "127.0.0.1", sv.port);
	usleep(300 * 1000);
	for (int i = 0; i < 8; i++)
		cr_assert(still_open(far[i]), "connection %d of 10.77.0.1 closed", i);
	far[8] = connect_from("10.77.0.1", "10.77.0.1", sv.port);
	p = (struct pollfd){ far[0], POLLIN, 0 };
	cr_assert_eq(poll(&p, 1, 2000), 1, "the oldest of 10.77.0.1 still open after 2 s");
	cr_assert_eq(recv(far[0], req, sizeof(req), 0), 0, "not closed at once");
	usleep(300 * 1000);
	for (int i = 1; i < 9; i++)
		cr_assert(still_open(far[i]), "connection %d of 10.77.0.1 closed", i);
	for (int i = 0; i < 20; i++)
		cr_assert(still_open(near[i]), "connection %d of 127.0.0.1 closed", i);
	/* a scraper there is answered: the address's oldest idle one makes room */
	fd = connect_from("10.77.0.1", "10.77.0.1", sv.port);
	n = snprintf(req, sizeof(req), "GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\n"
		     "Host: 10.77.0.1:%d\r\n\r\n", sv.port);
	test_send_all(fd, req, (size_t)n);
	got_profile(fd);
	for (int i = 0; i < 9; i++)
		close(far[i]);
	for (int i = 0; i < 20; i++)
		close(near[i]);
	serve_stop(&sv);
	test_stop(pid);
}

/* Asked for an address it cannot have: said, and a status. */
Test(serve, bad_listen)
{
	const char *bad[] = { "serve", "--pid", "1", "--listen", ":6060", NULL };
	const char *ext[] = { "serve", "--pid", "1", "--listen", "[::1", NULL };
	/* a port, a path, spaces, nothing */
	const char *hosts[] = { "evil.example:80", "a/b", "a b", "", "[::1]:80" };
	char *out, *err;

	cr_assert_eq(test_pyrospy(bad, &out, &err), 2, "%s", err);
	cr_assert(strstr(err, "invalid --listen ':6060'"), "%s", err);
	free(out);
	free(err);
	cr_assert_eq(test_pyrospy(ext, &out, &err), 2, "%s", err);
	free(out);
	free(err);
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		const char *args[] = { "serve", "--pid", "1", "--allow-host", hosts[i], NULL };

		cr_assert_eq(test_pyrospy(args, &out, &err), 2, "%s: %s", hosts[i], err);
		cr_assert(strstr(err, "invalid --allow-host"), "%s", err);
		free(out);
		free(err);
	}
}
