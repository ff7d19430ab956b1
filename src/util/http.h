/* SPDX-License-Identifier: MIT */
#ifndef PYROSPY_HTTP_H
#define PYROSPY_HTTP_H

#include <stddef.h>

/*
 * The least of HTTP/1.1 a pprof endpoint needs (serve.c): reading one
 * request head, which comes from anyone who can connect and so is
 * checked byte by byte and bounded, and writing one whole response.
 */

/* The largest request head read, request line and headers. */
#define HTTP_MAX_HEAD 8192

enum http_parse {
	HTTP_PARSE_MORE,	/* no end of the head yet: read more */
	HTTP_PARSE_OK,
	HTTP_PARSE_BAD,		/* not a request we answer: *why says why */
};

/* A request, its parts pointing into the head (not NUL-terminated). */
struct http_req {
	const char *method, *path, *query;
	size_t method_len, path_len, query_len;	/* query_len 0: none */
	size_t head_len;	/* bytes of the head, its blank line included */
	const char *host;	/* the Host header's value, OWS trimmed; NULL: none */
	size_t host_len;
	int http10;		/* an HTTP/1.0 request */
};

/*
 * Parse the head in buf[0..len): HTTP/1.0 or 1.1, an origin-form target,
 * headers of visible characters, no body, at most one Host (which HTTP/1.1
 * must send, RFC 9112 3.2).  HTTP_PARSE_BAD also when len reaches
 * HTTP_MAX_HEAD without the blank line.  *why: one line, static.
 */
enum http_parse http_parse(const char *buf, size_t len, struct http_req *req, const char **why);

/*
 * The value of key in query ("a=1&b=2"): 1 with *val and *vlen set (the
 * first occurrence, not decoded), 0 when key is absent.
 */
int http_query(const char *query, size_t qlen, const char *key, const char **val, size_t *vlen);

/*
 * A whole response (status line, Content-Type, Content-Length and
 * Connection: close, then body) in a new buffer (caller frees), its size
 * in *len, a NUL after it.
 */
/*
 * Split a Host value into its host and port: "[v6]:port" keeps the
 * brackets, "name:port" or "a.b.c.d:port" loses ":port" (only digits).
 * The host's length; *host points into value.
 */
size_t http_host_name(const char *value, size_t len, const char **host);

char *http_response(int status, const char *type, const void *body, size_t blen, size_t *len);

#endif
