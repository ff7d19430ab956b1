/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/http.h"
#include "util/xalloc.h"

/* RFC 9110 token characters: a method, a header's name. */
static int is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A target's characters: visible ASCII (RFC 3986 is stricter; this keeps out controls). */
static int is_vchar(unsigned char c)
{
	return c > 0x20 && c < 0x7f;
}

/* Case-insensitive: is the header line [p, p+n) named name? */
static int header_is(const char *p, size_t n, const char *name)
{
	size_t k = strlen(name);

	return n > k && p[k] == ':' && !strncasecmp(p, name, k);
}

/* The request line "GET /path?query HTTP/1.1" of n bytes. */
static int parse_request_line(const char *p, size_t n, struct http_req *req, const char **why)
{
	const char *end = p + n, *sp, *target;

	for (sp = p; sp < end && is_tchar((unsigned char)*sp); sp++)
		;
	if (sp == p || sp == end || *sp != ' ' || sp - p > 16) {
		*why = "malformed request line: want METHOD /path HTTP/1.1";
		return -1;
	}
	req->method = p;
	req->method_len = (size_t)(sp - p);
	target = sp + 1;
	for (sp = target; sp < end && is_vchar((unsigned char)*sp); sp++)
		;
	if (sp == target || sp == end || *sp != ' ') {
		*why = "malformed request line: want METHOD /path HTTP/1.1";
		return -1;
	}
	if (*target != '/') {
		*why = "the request's target is not a path starting with /";
		return -1;
	}
	req->path = target;
	req->path_len = (size_t)(sp - target);
	req->query = NULL;
	req->query_len = 0;
	for (const char *q = target; q < sp; q++) {
		if (*q == '?') {
			req->path_len = (size_t)(q - target);
			req->query = q + 1;
			req->query_len = (size_t)(sp - q - 1);
			break;
		}
	}
	sp++;
	if ((size_t)(end - sp) != 8 || (strncmp(sp, "HTTP/1.1", 8) && strncmp(sp, "HTTP/1.0", 8))) {
		*why = "not an HTTP/1.0 or HTTP/1.1 request";
		return -1;
	}
	req->http10 = sp[7] == '0';
	return 0;
}

/* One header line of n bytes: "Name: value". */
static int parse_header(const char *p, size_t n, struct http_req *req, const char **why)
{
	const char *colon = p, *v;

	while (colon < p + n && is_tchar((unsigned char)*colon))
		colon++;
	if (colon == p || colon == p + n || *colon != ':') {
		*why = "malformed header line: want Name: value";
		return -1;
	}
	for (v = colon + 1; v < p + n; v++) {
		unsigned char c = (unsigned char)*v;

		if (c != '\t' && (c < 0x20 || c == 0x7f)) {
			*why = "a control character in a header's value";
			return -1;
		}
	}
	if (header_is(p, n, "host")) {
		const char *e = p + n;

		/* two could be read two ways (RFC 9110 7.2): neither is taken */
		if (req->host) {
			*why = "more than one Host header";
			return -1;
		}
		for (v = colon + 1; v < e && (*v == ' ' || *v == '\t'); v++)
			;
		while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		req->host = v;
		req->host_len = (size_t)(e - v);
	}
	if (header_is(p, n, "transfer-encoding")) {
		*why = "a request body is not accepted";
		return -1;
	}
	if (header_is(p, n, "content-length")) {
		for (v = colon + 1; v < p + n && (*v == ' ' || *v == '\t'); v++)
			;
		while (v < p + n && *v == '0')
			v++;
		while (v < p + n && (*v == ' ' || *v == '\t'))
			v++;
		if (v != p + n || p[n - 1] == ':') {
			*why = "a request body is not accepted";
			return -1;
		}
	}
	return 0;
}

enum http_parse http_parse(const char *buf, size_t len, struct http_req *req, const char **why)
{
	const char *p = buf, *end = buf + len;
	int first = 1;

	memset(req, 0, sizeof(*req));
	*why = NULL;
	/* lines end in CRLF; a bare LF is taken as well (RFC 9112, 2.2) */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n;

		if (!nl)
			break;
		n = (size_t)(nl - p);
		if (n && p[n - 1] == '\r')
			n--;
		if (memchr(p, '\0', n) || memchr(p, '\r', n)) {
			*why = "a NUL or a bare CR in the request head";
			return HTTP_PARSE_BAD;
		}
		if (first) {
			if (parse_request_line(p, n, req, why))
				return HTTP_PARSE_BAD;
			first = 0;
		} else if (!n) {
			req->head_len = (size_t)(nl + 1 - buf);
			if (req->head_len > HTTP_MAX_HEAD)
				break;
			if (!req->host && !req->http10) {
				*why = "an HTTP/1.1 request without a Host header";
				return HTTP_PARSE_BAD;
			}
			return HTTP_PARSE_OK;
		} else if (*p == ' ' || *p == '\t') {
			*why = "folded header lines are not accepted";
			return HTTP_PARSE_BAD;
		} else if (parse_header(p, n, req, why)) {
			return HTTP_PARSE_BAD;
		}
		p = nl + 1;
	}
	if (len >= HTTP_MAX_HEAD) {
		*why = "the request head is larger than 8192 bytes";
		return HTTP_PARSE_BAD;
	}
	return HTTP_PARSE_MORE;
}

int http_query(const char *query, size_t qlen, const char *key, const char **val, size_t *vlen)
{
	size_t klen = strlen(key);

	for (const char *p = query, *end = query + qlen; p && p < end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		size_t n = amp ? (size_t)(amp - p) : (size_t)(end - p);

		if (n >= klen + 1 && !memcmp(p, key, klen) && p[klen] == '=') {
			*val = p + klen + 1;
			*vlen = n - klen - 1;
			return 1;
		}
		if (n == klen && !memcmp(p, key, klen)) {
			*val = p + n;
			*vlen = 0;
			return 1;
		}
		p = amp ? amp + 1 : NULL;
	}
	return 0;
}

size_t http_host_name(const char *value, size_t len, const char **host)
{
	const char *colon = NULL;

	*host = value;
	if (len && value[0] == '[') {
		const char *rb = memchr(value, ']', len);

		if (rb && (rb + 1 == value + len || rb[1] == ':'))
			colon = rb + 1 == value + len ? NULL : rb + 1;
		else
			return len;	/* not an IPv6 literal: a name that matches nothing */
	} else {
		colon = memchr(value, ':', len);
		if (colon && memchr(colon + 1, ':', (size_t)(value + len - colon - 1)))
			return len;	/* two colons, no brackets: as it is */
	}
	if (!colon)
		return len;
	for (const char *d = colon + 1; d < value + len; d++)
		if (*d < '0' || *d > '9')
			return len;
	return (size_t)(colon - value);
}

static const char *status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 421: return "Misdirected Request";
	case 503: return "Service Unavailable";
	default: return "Internal Server Error";
	}
}

char *http_response(int status, const char *type, const void *body, size_t blen, size_t *len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
			 "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
			 status, status_text(status), type, blen,
			 status == 405 ? "Allow: GET\r\n" : "");
	char *buf;

	buf = xmalloc((size_t)n + blen + 1);
	memcpy(buf, head, (size_t)n);
	if (blen)
		memcpy(buf + n, body, blen);
	*len = (size_t)n + blen;
	buf[*len] = '\0';
	return buf;
}
