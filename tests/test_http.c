/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/http.h"

/* The request heads pyrospy serve reads (src/http.c): what passes, what does not. */

static enum http_parse parse(const char *head, struct http_req *req, const char **why)
{
	return http_parse(head, strlen(head), req, why);
}

Test(http, a_scrape)
{
	const char *head = "GET /debug/pprof/profile?seconds=5&x=1 HTTP/1.1\r\n"
			   "Host: 127.0.0.1:6060\r\nUser-Agent: Go-http-client/1.1\r\n"
			   "Accept-Encoding: gzip\r\n\r\n";
	struct http_req req;
	const char *why, *v;
	size_t n;

	cr_assert_eq(parse(head, &req, &why), HTTP_PARSE_OK);
	cr_assert_eq(req.head_len, strlen(head));
	cr_assert_eq(req.method_len, 3);
	cr_assert(!strncmp(req.path, "/debug/pprof/profile", req.path_len));
	cr_assert_eq(req.path_len, strlen("/debug/pprof/profile"));
	cr_assert(http_query(req.query, req.query_len, "seconds", &v, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(*v, '5');
	cr_assert(http_query(req.query, req.query_len, "x", &v, &n) && n == 1 && *v == '1');
	cr_assert(!http_query(req.query, req.query_len, "second", &v, &n));
	/* bare LF lines are taken too */
	cr_assert_eq(parse("GET / HTTP/1.0\nHost: x\n\n", &req, &why), HTTP_PARSE_OK);
}

Test(http, incomplete_heads_ask_for_more)
{
	struct http_req req;
	const char *why;

	cr_assert_eq(parse("", &req, &why), HTTP_PARSE_MORE);
	cr_assert_eq(parse("GET /debug/pprof/ HTT", &req, &why), HTTP_PARSE_MORE);
	cr_assert_eq(parse("GET /debug/pprof/ HTTP/1.1\r\nHost: x\r\n", &req, &why),
		     HTTP_PARSE_MORE);
}

Test(http, bad_heads)
{
	static const char *const bad[] = {
		"\r\n\r\n",
		"GET\r\n\r\n",
		"GET  / HTTP/1.1\r\n\r\n",
		"GET http://x/ HTTP/1.1\r\n\r\n",
		"GET / HTTP/2.0\r\n\r\n",
		"GET / HTTP/1.1 x\r\n\r\n",
		"GET /\x01 HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nNo colon\r\n\r\n",
		"GET / HTTP/1.1\r\n: empty name\r\n\r\n",
		"GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n",
		"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n",
		"GET / HTTP/1.1\r\nX: a\r\n folded\r\n\r\n",
		"GET / HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
		"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
		"VERYVERYVERYLONGMETHOD / HTTP/1.1\r\n\r\n",
		/* HTTP/1.1 must name its host, once (RFC 9112 3.2) */
		"GET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nX-Host: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET / HTTP/1.0\r\nHost: a\r\nhost: a\r\n\r\n",
	};
	struct http_req req;
	const char *why;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(parse(bad[i], &req, &why), HTTP_PARSE_BAD, "taken: %s", bad[i]);
		cr_assert(why && *why && !strchr(why, '\n'), "%s", bad[i]);
	}
	/* a NUL: the length counts, not strlen */
	cr_assert_eq(http_parse("GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", 26, &req, &why),
		     HTTP_PARSE_BAD);
}

Test(http, head_bounded)
{
	char *big = malloc(HTTP_MAX_HEAD + 64);
	struct http_req req;
	const char *why;
	size_t len;

	len = (size_t)sprintf(big, "GET / HTTP/1.1\r\nX: ");
	memset(big + len, 'a', HTTP_MAX_HEAD - len);
	cr_assert_eq(http_parse(big, HTTP_MAX_HEAD - 1, &req, &why), HTTP_PARSE_MORE);
	cr_assert_eq(http_parse(big, HTTP_MAX_HEAD, &req, &why), HTTP_PARSE_BAD);
	cr_assert(strstr(why, "8192"), "%s", why);
	free(big);
}

Test(http, response)
{
	size_t len;
	char *r = http_response(404, "text/plain", "no\n", 3, &len);

	cr_assert_eq(len, strlen(r));
	cr_assert(!strncmp(r, "HTTP/1.1 404 Not Found\r\n", 24));
	cr_assert(strstr(r, "Content-Length: 3\r\n"));
	cr_assert(!memcmp(r + len - 7, "\r\n\r\nno\n", 7));
	free(r);
}

/* The Host a request names, and its host without the port. */
Test(http, host)
{
	struct http_req req;
	const char *why, *h;
	size_t n;

	cr_assert_eq(parse("GET / HTTP/1.1\r\nhOST: \t127.0.0.1:6060 \r\n\r\n", &req, &why),
		     HTTP_PARSE_OK);
	cr_assert_eq(req.host_len, 14);
	cr_assert(!memcmp(req.host, "127.0.0.1:6060", 14));
	cr_assert(!req.http10);
	n = http_host_name(req.host, req.host_len, &h);
	cr_assert(n == 9 && !memcmp(h, "127.0.0.1", 9));
	/* HTTP/1.0 may leave it out (what is done with that is serve.c's) */
	cr_assert_eq(parse("GET / HTTP/1.0\r\n\r\n", &req, &why), HTTP_PARSE_OK);
	cr_assert(req.http10 && !req.host);
	static const struct {
		const char *value, *host;
	} names[] = {
		{ "localhost", "localhost" },
		{ "localhost:6060", "localhost" },
		{ "evil.example:", "evil.example" },
		{ "[::1]:6060", "[::1]" },
		{ "[::1]", "[::1]" },
		{ "[::1]x", "[::1]x" },
		{ "::1:6060", "::1:6060" },
		{ "a:b", "a:b" },
		{ "a:6060:1", "a:6060:1" },
		{ "", "" },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		n = http_host_name(names[i].value, strlen(names[i].value), &h);
		cr_assert(n == strlen(names[i].host) && !memcmp(h, names[i].host, n),
			  "%s: %.*s", names[i].value, (int)n, h);
	}
}

Test(http, misdirected)
{
	size_t len;
	char *r = http_response(421, "text/plain", "", 0, &len);

	cr_assert(!strncmp(r, "HTTP/1.1 421 Misdirected Request\r\n", 34), "%s", r);
	free(r);
}
