/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
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
#include "target.h"

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

/* Start `pyrospy serve --pid PID --listen 127.0.0.1:0 ...' and find its address. */
static void serve_start(const char *pid, struct server *sv)
{
	const char *bin = getenv("PYROSPY");
	char path[1024], line[512];
	size_t len = 0;
	int fds[2];

	if (!bin) {
		snprintf(path, sizeof(path), "%s/pyrospy", BUILDDIR);
		bin = path;
	}
	cr_assert(pipe(fds) == 0);
	sv->pid = fork();
	cr_assert(sv->pid >= 0);
	if (sv->pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		execl(bin, bin, "serve", "--pid", pid, "--listen", "127.0.0.1:0", "-r", "100",
		      "--idle", (char *)NULL);
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
		cr_assert_eq(sscanf(sv->url, "http://127.0.0.1:%d", &sv->port), 1, "%s", line);
		break;
	}
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

static int connect_to(int port)
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

static void send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		cr_assert_gt(n, 0, "send: %s", strerror(errno));
		buf += n;
		len -= (size_t)n;
	}
}

/* The whole response on fd, until the server hangs up (15 s at most); closes fd. */
static char *read_all(int fd, size_t *len)
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

/* Ask req; the response must have status and a body holding say. */
static void ask(const struct server *sv, const char *req, size_t rlen, const char *status,
		const char *say)
{
	int fd = connect_to(sv->port);
	char *resp, *body;
	size_t len;

	send_all(fd, req, rlen);
	resp = read_all(fd, &len);
	cr_assert(!strncmp(resp, status, strlen(status)), "want %s, got: %.200s", status, resp);
	body = strstr(resp, "\r\n\r\n");
	cr_assert(body && strstr(body, say), "want '%s' in: %s", say, resp);
	free(resp);
}

/* A profile request sent: the connection. */
static int profile_request(const struct server *sv, const char *secs)
{
	char req[128];
	int fd = connect_to(sv->port);
	int n = snprintf(req, sizeof(req), "GET /debug/pprof/profile?seconds=%s HTTP/1.1\r\n"
			 "Host: x\r\n\r\n", secs);

	send_all(fd, req, (size_t)n);
	return fd;
}

/* The response on fd is a gzipped profile. */
static void got_profile(int fd)
{
	size_t len;
	char *resp = read_all(fd, &len), *body = strstr(resp, "\r\n\r\n");

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
 * head, a 17th request at once.
 */
Test(serve, hostile_requests, .timeout = 90)
{
	const struct interp *in = &test_pythons[1];
	const char *sargs[] = { test_target_for(in, "seed.py"), NULL };
	char ready[64], pidbuf[32], *big, *resp;
	int slow, fds[15];
	struct server sv;
	size_t len;
	pid_t pid;

	pid = test_start(in, sargs, ready, sizeof(ready));
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	serve_start(pidbuf, &sv);
	/* half a head, and then nothing: 408 after 10 s */
	slow = connect_to(sv.port);
	send_all(slow, "GET /debug/pprof/ HTTP/1.1\r\n", 28);

#define ASK(req, status, say) ask(&sv, req, sizeof(req) - 1, status, say)
	ASK("GET /debug/pprof/profile?seconds=0 HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 ",
	    "seconds");
	ASK("GET /debug/pprof/profile?seconds=abc HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 ",
	    "seconds");
	ASK("GET /debug/pprof/profile?seconds=301 HTTP/1.1\r\n\r\n", "HTTP/1.1 400 ", "seconds");
	ASK("GET /debug/pprof/profile?seconds=99999999999999999999 HTTP/1.1\r\n\r\n",
	    "HTTP/1.1 400 ", "seconds");
	ASK("GET /debug/pprof/profile?seconds=-1 HTTP/1.1\r\n\r\n", "HTTP/1.1 400 ", "seconds");
	ASK("GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 ", "no such page");
	ASK("GET /debug/pprof/heap HTTP/1.1\r\n\r\n", "HTTP/1.1 404 ", "no such page");
	ASK("POST /debug/pprof/profile HTTP/1.1\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 405 ",
	    "GET");
	ASK("\x01\x02\x03 garbage\r\n\r\n", "HTTP/1.1 400 ", "request line");
	ASK("GET /debug/pprof/ HTTP/9.9\r\n\r\n", "HTTP/1.1 400 ", "HTTP/1.1");
	ASK("GET /debug/pprof/ HTTP/1.1\r\nBad Header\r\n\r\n", "HTTP/1.1 400 ", "header");
	ASK("GET /debug/pprof/ HTTP/1.1\r\nX: a\x01z\r\n\r\n", "HTTP/1.1 400 ", "control");
	ASK("GET /debug/pprof/ HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", "HTTP/1.1 400 ",
	    "body");
	ASK("GET /debug/pprof/ HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 200 ", "profile?seconds=");
	/* a 9 KiB header */
	big = malloc(10000);
	len = (size_t)snprintf(big, 10000, "GET /debug/pprof/ HTTP/1.1\r\nX-Big: ");
	memset(big + len, 'a', 9 * 1024);
	len += 9 * 1024;
	len += (size_t)snprintf(big + len, 10000 - len, "\r\n\r\n");
	ask(&sv, big, len, "HTTP/1.1 400 ", "8192");
	free(big);
	/* 16 at once are served (the slow one among them), the 17th is told to come back */
	for (int i = 0; i < 15; i++)
		fds[i] = profile_request(&sv, "2");
	ASK("GET /debug/pprof/ HTTP/1.1\r\n\r\n", "HTTP/1.1 503 ", "too many");
	for (int i = 0; i < 15; i++)
		got_profile(fds[i]);
	/* and it still serves */
	got_profile(profile_request(&sv, "1"));
	resp = read_all(slow, &len);
	cr_assert(!strncmp(resp, "HTTP/1.1 408 ", 13), "%s", resp);
	free(resp);
	serve_stop(&sv);
	test_stop(pid);
}

/* Asked for an address it cannot have: said, and a status. */
Test(serve, bad_listen)
{
	const char *bad[] = { "serve", "--pid", "1", "--listen", ":6060", NULL };
	const char *ext[] = { "serve", "--pid", "1", "--listen", "[::1", NULL };
	char *out, *err;

	cr_assert_eq(test_pyrospy(bad, &out, &err), 2, "%s", err);
	cr_assert(strstr(err, "invalid --listen ':6060'"), "%s", err);
	free(out);
	free(err);
	cr_assert_eq(test_pyrospy(ext, &out, &err), 2, "%s", err);
	free(out);
	free(err);
}
