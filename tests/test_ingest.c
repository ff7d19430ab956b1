/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "helpers.h"
#include "upload/ingest.h"
#include "upload/ingest_format.h"
#include "profile/profile.h"

static struct ingest_opts opts(void)
{
	return (struct ingest_opts){
		.server = "http://127.0.0.1:4040",
		.app_name = "shop",
		.spy_name = "pyrospy-python",
		.rate = 100,
	};
}

/*
 * Add n samples of stack ("a;b;c", root first) under tag set tags and
 * thread: frames have no file, so their text is their name.
 */
static void add(struct profile *p, const char *tags, const char *thread, const char *stack,
		uint64_t n)
{
	uint32_t ids[2048], k = 0;
	char *s = strdup(stack), *save = NULL;

	ids[k++] = profile_frame(p, PROFILE_TAGS, tags, "", 0);
	ids[k++] = profile_frame(p, PROFILE_THREAD, thread, "", 0);
	for (char *f = strtok_r(s, ";", &save); f; f = strtok_r(NULL, ";", &save))
		ids[k++] = profile_frame(p, PROFILE_CODE, f, "", 0);
	profile_add_path(p, ids, k, n);
	free(s);
}

static unsigned int count_reqs(const struct ingest_req *r)
{
	unsigned int n = 0;

	for (; r; r = r->next)
		n++;
	return n;
}

Test(ingest, align)
{
	cr_assert_eq(ingest_align(1700000005), 1700000000);
	cr_assert_eq(ingest_align(1700000000), 1700000000);
	cr_assert_eq(ingest_align(1700000019), 1700000010);
	cr_assert_eq(ingest_align(-5), -10);
}

Test(ingest, urlencode)
{
	char *s = ingest_urlencode("myapp.cpu{env=prod,region=us-east-1}");

	cr_assert_str_eq(s, "myapp.cpu%7Benv%3Dprod%2Cregion%3Dus-east-1%7D");
	free(s);
	/* '+' and ';' would be read as a space and drop the pair */
	s = ingest_urlencode("a b+c;d/\xc3\xa9~_");
	cr_assert_str_eq(s, "a%20b%2Bc%3Bd%2F%C3%A9~_");
	free(s);
}

Test(ingest, name)
{
	const char *tags[] = { "region=us-east-1", "env=prod", NULL };
	struct ingest_opts o = opts();
	char *s;

	s = ingest_name(&o, NULL);
	cr_assert_str_eq(s, "shop.cpu");
	free(s);
	o.app_name = "shop.cpu";
	s = ingest_name(&o, "");
	cr_assert_str_eq(s, "shop.cpu");
	free(s);
	o.tags = tags;
	s = ingest_name(&o, "route=/cart,env=staging");
	/* sorted; the program's tags win over the static --tag */
	cr_assert_str_eq(s, "shop.cpu{env=staging,region=us-east-1,route=/cart}");
	free(s);
}

/* Tag sets come from the profiled program: whatever they hold, the name stays valid. */
Test(ingest, hostile_tags)
{
	struct ingest_opts o = opts();
	char *s;

	s = ingest_name(&o, "__name__=evil,1x=a,k.y=b,profile_id=9,v=a}b,w= padded ,e=,"
			    "x=a\x01" "b,u=\xff,msg=a,b");
	cr_assert_str_eq(s, "shop.cpu{k_y=b,msg=a_b,tag_1x=a,tag___name__=evil,"
			    "tag_profile_id=9,u=?,v=a_b,w=padded,x=a?b}");
	free(s);
	/* white space Go's TrimSpace trims, U+00A0 included */
	s = ingest_name(&o, "k=\xc2\xa0v\xc2\xa0");
	cr_assert_str_eq(s, "shop.cpu{k=v}");
	free(s);
	/* pieces without '=' continue a value; an empty key gets the prefix */
	s = ingest_name(&o, "=,,,k=, ,");
	cr_assert_str_eq(s, "shop.cpu{k=_ _,tag_=__}");
	free(s);
	s = ingest_name(&o, "e=,f= ");
	cr_assert_str_eq(s, "shop.cpu");
	free(s);
}

Test(ingest, hostile_tag_budget)
{
	struct ingest_opts o = opts();
	char big[8000] = "", *s;
	const char *t[] = { "env=prod", NULL };
	size_t n = 0;

	/* 40 tags and a 3000-byte value: 26 tags at most, values cut */
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "k%02d=v,", i);
	memset(big + n, 'x', 3000);
	memcpy(big + n, "z=", 2);
	big[n + 3000] = '\0';
	o.tags = t;
	s = ingest_name(&o, big);
	cr_assert(strstr(s, "env=prod"), "%s", s);
	n = 0;
	for (const char *p = s; *p; p++)
		n += *p == '=';
	cr_assert_eq(n, 26);
	cr_assert_lt(strlen(s), 26 * (128 + 1024 + 2) + 16);
	free(s);
}

static int check(const struct ingest_opts *o, const char *want)
{
	char err[256] = "";
	int r = ingest_check(o, err, sizeof(err));

	if (want)
		cr_assert(strstr(err, want), "want '%s', got '%s'", want, err);
	return r;
}

Test(ingest, check)
{
	struct ingest_opts o = opts();
	const char *good[] = { "env=prod", "region=us-east-1", "_x=caf\xc3\xa9 au lait", NULL };
	const char *hdr[] = { "X-Api-Key: abc", NULL };

	o.tags = good;
	o.headers = hdr;
	o.auth_token = "t0ken";
	o.tenant_id = "team-a";
	cr_assert_eq(check(&o, NULL), 0);

	o = opts();
	o.app_name = "my app";
	cr_assert_eq(check(&o, "invalid app name 'my app'"), -1);
	o.app_name = "a/b";	/* Grafana takes it, the old server not */
	cr_assert_eq(check(&o, "invalid app name"), -1);
	o.app_name = "";
	cr_assert_eq(check(&o, "no app name"), -1);
	o.app_name = "shop";
	o.spy_name = "py spy";
	cr_assert_eq(check(&o, "invalid spy name"), -1);
}

Test(ingest, check_tags)
{
	static const struct {
		const char *tag, *want;
	} bad[] = {
		{ "noequals", "expected KEY=VALUE" },
		{ "=v", "a tag key is required" },
		{ "1x=v", "must not start with a digit" },
		{ "k.y=v", "only letters, digits and '_'" },
		{ "k-y=v", "only letters, digits and '_'" },
		{ "__name__=v", "reserved" },
		{ "__x=v", "reserved" },
		{ "service_name=v", "reserved" },
		{ "app_name=v", "reserved" },
		{ "profile_id=v", "reserved" },
		{ "pyroscope_spy=v", "reserved" },
		{ "k=", "empty" },
		{ "k=a,b", "',' and '}'" },
		{ "k=a}", "',' and '}'" },
		{ "k= a", "white space" },
		{ "k=a\xc2\xa0", "white space" },
		{ "k=\xff", "UTF-8" },
		{ "k=a\tb", "control" },
		{ "k=a\xc2\x9b" "b", "C1 control" },
		{ "k=a\xe2\x80\xae" "b", "bidi override" },
	};
	struct ingest_opts o = opts();
	const char *t[3] = { NULL };

	o.tags = t;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t[0] = bad[i].tag;
		cr_assert_eq(check(&o, bad[i].want), -1, "%s", bad[i].tag);
	}
	t[0] = "k=1";
	t[1] = "k=2";
	cr_assert_eq(check(&o, "given twice"), -1);
}

Test(ingest, check_connection)
{
	struct ingest_opts o = opts();
	const char *h[2] = { NULL };
	char err[256];

	o.server = "ftp://h";
	cr_assert_eq(check(&o, "scheme must be http or https"), -1);
	o.server = "http://user:s3cret@h:4040";
	cr_assert_eq(check(&o, "credentials"), -1);
	ingest_check(&o, err, sizeof(err));
	cr_assert_null(strstr(err, "s3cret"));
	o.server = "https://h/x?a=1";
	cr_assert_eq(check(&o, "query"), -1);
	o.server = "http:///x";
	cr_assert_eq(check(&o, "no host"), -1);
	o.server = "HTTPS://h.example/prefix/";
	cr_assert_eq(check(&o, NULL), 0);

	o.headers = h;
	h[0] = "Bad Name: x";
	cr_assert_eq(check(&o, "invalid header name (--header number 1)"), -1);
	h[0] = "X-A";
	cr_assert_eq(check(&o, "expected 'NAME: VALUE'"), -1);
	h[0] = "content-type: text/plain";
	cr_assert_eq(check(&o, "cannot be set"), -1);
	h[0] = "X-A: a\rb";
	cr_assert_eq(check(&o, "control character"), -1);
	h[0] = NULL;
	o.header_lines = "X-A: 1\n\n  X-B: 2  \nbroken";
	cr_assert_eq(check(&o, "invalid header (header 3 of $PYROSPY_HEADERS)"), -1);
	o.header_lines = NULL;

	o.auth_token = "t";
	o.basic_auth = "u:p";
	cr_assert_eq(check(&o, "cannot be used together"), -1);
	o.auth_token = NULL;
	o.basic_auth = "nocolon-s3cret";
	cr_assert_eq(check(&o, "USER:PASSWORD"), -1);
	ingest_check(&o, err, sizeof(err));
	cr_assert_null(strstr(err, "s3cret"));
	o.basic_auth = NULL;
	o.tenant_id = "a b";
	cr_assert_eq(check(&o, "invalid tenant ID"), -1);
	o.tenant_id = NULL;
	o.cacert = "/nonexistent/ca.pem";
	cr_assert_eq(check(&o, "cannot read CA file"), -1);
	o.cacert = NULL;
	o.rate = 0;
	cr_assert_eq(check(&o, "rate"), -1);
}

/*
 * A malformed header may hold a key, where its value should have been: the
 * message says which header it is, never what it holds.
 */
Test(ingest, check_header_shows_no_value)
{
	static const char *const bad[] = {
		"Authorization Bearer sk-Qx7Qx7Qx7Qx7",		/* no ':' */
		"Authorization Bearer sk-Qx7Qx7:Qx7Qx7",	/* a name with spaces */
		"Authorization=Bearer sk-Qx7Qx7Qx7Qx7",
		"sk-Qx7Qx7Qx7Qx7",
	};
	struct ingest_opts o = opts();
	const char *h[3] = { "X-Fine: 1", NULL, NULL };
	char err[256], env[128];

	o.headers = h;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h[1] = bad[i];
		cr_assert_eq(ingest_check(&o, err, sizeof(err)), -1, "%s", bad[i]);
		cr_assert(strstr(err, "(--header number 2)"), "%s: %s", bad[i], err);
		cr_assert_null(strstr(err, "Qx"), "%s: %s", bad[i], err);
		cr_assert_null(strstr(err, "sk-"), "%s: %s", bad[i], err);
		cr_assert_null(strstr(err, "Bearer"), "%s: %s", bad[i], err);
	}
	o.headers = NULL;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(env, sizeof(env), "X-Fine: 1\n%s\n", bad[i]);
		o.header_lines = env;
		cr_assert_eq(ingest_check(&o, err, sizeof(err)), -1, "%s", bad[i]);
		cr_assert(strstr(err, "(header 2 of $PYROSPY_HEADERS)"), "%s: %s", bad[i], err);
		cr_assert_null(strstr(err, "Qx"), "%s: %s", bad[i], err);
	}
}

/* Per tag set one request, threads merged, stacks sorted, frames made safe. */
Test(ingest, folded_golden)
{
	const char *tags[] = { "env=prod", NULL };
	struct ingest_opts o = opts();
	struct ingest_req *r;
	struct profile p;
	uint32_t ids[4];

	o.tags = tags;
	profile_init(&p);
	add(&p, "", "thread (1)", "main;work", 3);
	add(&p, "", "thread (1)", "main;idle", 1);
	add(&p, "", "thread (2)", "main;work", 2);
	add(&p, "route=/cart", "thread (1)", "main;cart", 5);
	ids[0] = profile_frame(&p, PROFILE_TAGS, "", "", 0);
	ids[1] = profile_frame(&p, PROFILE_THREAD, "thread (1)", "", 0);
	ids[2] = profile_frame(&p, PROFILE_CODE, "<module>", "app.py", 20);
	ids[3] = profile_frame(&p, PROFILE_CODE, "a;b\nc d", "we;ird.py", 0);
	profile_add_path(&p, ids, 4, 7);

	r = ingest_encode(&o, &p, 1700000000, 1700000010);
	cr_assert_eq(count_reqs(r), 2);
	cr_assert_str_eq(r->name, "shop.cpu{env=prod}");
	cr_assert_str_eq(r->query,
			 "name=shop.cpu%7Benv%3Dprod%7D&from=1700000000&until=1700000010"
			 "&format=folded&sampleRate=100&spyName=pyrospy-python"
			 "&units=samples&aggregationType=sum");
	cr_assert_str_eq(r->body,
			 "<module> (app.py:20);a:b?c d (we:ird.py) 7\n"
			 "main;idle 1\n"
			 "main;work 5\n");
	cr_assert_eq(r->len, strlen(r->body));
	cr_assert_eq(r->stacks, 3);
	cr_assert_eq(r->samples, 13);
	cr_assert_str_eq(r->next->name, "shop.cpu{env=prod,route=/cart}");
	cr_assert_str_eq(r->next->body, "main;cart 5\n");
	ingest_req_free(r);

	/* an empty window sends nothing */
	profile_release(&p);
	profile_init(&p);
	cr_assert_null(ingest_encode(&o, &p, 1700000000, 1700000010));
	profile_release(&p);
}

/* The study's verified vectors (3.3). */
Test(ingest, trie_golden)
{
	static const char want1[] = "\x00\x00\x01\x06" "foo;ba" "\x00\x02\x01r\x02\x00\x01z\x03\x00";
	static const char want2[] = "\x00\x00\x01\x01" "a" "\xac\x02\x00";
	static const char want3[] = "\x00\x00\x01\x01" "a" "\x01\x01\x02;b\x02\x00";
	struct ingest_opts o = opts();
	struct ingest_req *r;
	struct profile p;

	o.format = INGEST_FORMAT_TRIE;
	profile_init(&p);
	add(&p, "", "t", "foo;baz", 3);
	add(&p, "", "t", "foo;bar", 2);
	r = ingest_encode(&o, &p, 1700000000, 1700000010);
	cr_assert_eq(r->len, sizeof(want1) - 1);
	cr_assert_eq(memcmp(r->body, want1, r->len), 0);
	cr_assert(strstr(r->query, "&format=trie&"));
	ingest_req_free(r);
	profile_release(&p);

	profile_init(&p);
	add(&p, "", "t", "a", 300);
	r = ingest_encode(&o, &p, 1700000000, 1700000010);
	cr_assert_eq(r->len, sizeof(want2) - 1);
	cr_assert_eq(memcmp(r->body, want2, r->len), 0);
	ingest_req_free(r);
	profile_release(&p);

	/* a key that is a prefix of another: a node with a value and a child */
	profile_init(&p);
	add(&p, "", "t", "a;b", 2);
	add(&p, "", "t", "a", 1);
	r = ingest_encode(&o, &p, 1700000000, 1700000010);
	cr_assert_eq(r->len, sizeof(want3) - 1);
	cr_assert_eq(memcmp(r->body, want3, r->len), 0);
	ingest_req_free(r);
	profile_release(&p);
}

/* transporttrie.IterateRaw, as the servers read a trie. */
struct kv {
	char key[4096];
	unsigned long long value;
};

static int uvarint(const unsigned char *b, size_t len, size_t *pos, unsigned long long *v)
{
	unsigned int shift = 0;

	*v = 0;
	while (*pos < len && shift < 70) {
		unsigned char c = b[(*pos)++];

		*v |= (unsigned long long)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return 0;
		shift += 7;
	}
	return -1;
}

static size_t iterate_raw(const unsigned char *b, size_t len, struct kv *out, size_t max)
{
	char buf[8192];
	size_t blen = 0, pos = 0, nout = 0, noff = 0;
	unsigned long long desc[512], suffix[512], copied = 0;

	while (pos < len) {
		unsigned long long nl, value, nc;

		cr_assert_eq(uvarint(b, len, &pos, &nl), 0);
		if (nl) {
			cr_assert_leq(pos + nl, len);
			memcpy(buf + blen, b + pos, nl);
			blen += nl;
			pos += nl;
			copied = nl;
		}
		cr_assert_eq(uvarint(b, len, &pos, &value), 0);
		cr_assert_eq(uvarint(b, len, &pos, &nc), 0);
		if (value) {
			cr_assert_lt(nout, max);
			memcpy(out[nout].key, buf, blen);
			out[nout].key[blen] = '\0';
			out[nout++].value = value;
		}
		if (nc) {
			desc[noff] = nc;
			suffix[noff++] = copied;
			continue;
		}
		blen -= copied;
		if (!noff)
			continue;
		desc[noff - 1]--;
		for (size_t i = noff - 1; i > 0; i--) {
			if (desc[i])
				break;
			blen -= suffix[i];
			noff = i;
			if (noff - 1 > 0)
				desc[noff - 1]--;
		}
	}
	return nout;
}

Test(ingest, trie_round_trip)
{
	static struct kv kv[4000];
	struct ingest_opts o = opts();
	struct ingest_req *folded, *trie;
	struct profile p;
	char stack[256], *lines, *line, *save = NULL;
	size_t n, i = 0;

	profile_init(&p);
	for (int a = 0; a < 7; a++)
		for (int b = 0; b < 11; b++)
			for (int c = 0; c < 13; c++) {
				snprintf(stack, sizeof(stack), "main;mod%d (m.py:%d);f%d;g%d%s", a, a,
					 b, c, c % 3 ? "" : ";leaf");
				add(&p, "", "t", stack, (uint64_t)(a * 100 + b * 10 + c + 1));
				if (c == 5)
					add(&p, "", "t", "main", 1);
			}
	folded = ingest_encode(&o, &p, 1700000000, 1700000010);
	o.format = INGEST_FORMAT_TRIE;
	trie = ingest_encode(&o, &p, 1700000000, 1700000010);
	cr_assert_lt(trie->len, folded->len / 2);
	n = iterate_raw((const unsigned char *)trie->body, trie->len, kv, 4000);
	cr_assert_eq(n, folded->stacks);
	lines = strdup(folded->body);
	for (line = strtok_r(lines, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		char *sp = strrchr(line, ' ');

		*sp = '\0';
		cr_assert_str_eq(kv[i].key, line);
		cr_assert_eq(kv[i].value, strtoull(sp + 1, NULL, 10));
	}
	cr_assert_eq(i, n);
	free(lines);
	ingest_req_free(folded);
	ingest_req_free(trie);
	profile_release(&p);
}

/* 16 001 stacks: two requests of one name, nothing lost. */
Test(ingest, split_stacks)
{
	struct ingest_opts o = opts();
	struct ingest_req *r;
	struct profile p;
	char stack[64];
	uint64_t total = 0;

	profile_init(&p);
	for (int i = 0; i < 16001; i++) {
		snprintf(stack, sizeof(stack), "main;f%05d", i);
		add(&p, "", "t", stack, 1);
	}
	for (int trie = 0; trie < 2; trie++) {
		o.format = trie ? INGEST_FORMAT_TRIE : INGEST_FORMAT_FOLDED;
		r = ingest_encode(&o, &p, 1700000000, 1700000010);
		cr_assert_eq(count_reqs(r), 2);
		cr_assert_eq(r->stacks, 16000);
		cr_assert_eq(r->next->stacks, 1);
		cr_assert_str_eq(r->name, r->next->name);
		total = r->samples + r->next->samples;
		cr_assert_eq(total, 16001);
		ingest_req_free(r);
	}
	profile_release(&p);
}

/* Bodies stay under INGEST_MAX_BODY: big stacks spread over requests. */
Test(ingest, split_bytes)
{
	struct ingest_opts o = opts();
	struct ingest_req *r, *q;
	struct profile p;
	char stack[2100];
	uint64_t total = 0;

	profile_init(&p);
	memset(stack, 'x', 2000);
	for (int i = 0; i < 1500; i++) {
		snprintf(stack + 2000, 100, ";%d", i);
		stack[1000] = ';';
		add(&p, "", "t", stack, 2);
	}
	r = ingest_encode(&o, &p, 1700000000, 1700000010);
	cr_assert_geq(count_reqs(r), 3);
	for (q = r; q; q = q->next) {
		cr_assert_leq(q->len, INGEST_MAX_BODY);
		total += q->samples;
	}
	cr_assert_eq(total, 3000);
	ingest_req_free(r);
	profile_release(&p);
}

/* Bytes of r's body gunzipped (--protocol otlp); 0 if it is no whole gzip member. */
static size_t gunzipped(const struct ingest_req *r)
{
	static unsigned char buf[1 << 16];
	z_stream z = { 0 };
	size_t n = 0;
	int rc;

	cr_assert_eq(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
	z.next_in = (unsigned char *)r->body;
	z.avail_in = (uInt)r->len;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		rc = inflate(&z, Z_NO_FLUSH);
		n += sizeof(buf) - z.avail_out;
	} while (rc == Z_OK);
	inflateEnd(&z);
	return rc == Z_STREAM_END && !z.avail_in ? n : 0;
}

/*
 * --protocol otlp keeps the bounds of pprof chunks: at most
 * INGEST_MAX_STACKS samples a request, and a request closed once past
 * INGEST_MAX_BODY: 1000-frame stacks of 400-byte names (each name new, 400
 * KB a stack) go 3 to a request, under INGEST_MAX_PROFILE gunzipped;
 * nothing is lost.
 */
Test(ingest, otlp_split)
{
	struct ingest_opts o = opts();
	struct ingest_req *r, *q;
	struct profile p;
	static char stack[1100 * 1000];
	uint64_t total = 0;
	size_t len = 0;

	o.protocol = INGEST_PROTOCOL_OTLP;
	profile_init(&p);
	for (int i = 0; i < 16001; i++) {
		snprintf(stack, sizeof(stack), "main;f%05d", i);
		add(&p, "", "thread (7)", stack, 1);
	}
	r = ingest_encode(&o, &p, 1700000000, 1700000010);
	cr_log_info("16001 stacks: %u requests, the first %zu bytes gunzipped", count_reqs(r),
		    gunzipped(r));
	cr_assert_eq(count_reqs(r), 2);
	cr_assert_eq(r->stacks, 16000);
	cr_assert_eq(r->next->stacks, 1);
	cr_assert_eq(r->samples + r->next->samples, 16001);
	ingest_req_free(r);
	profile_release(&p);

	profile_init(&p);
	for (int i = 0; i < 8; i++) {
		len = 0;
		for (int f = 0; f < 1000; f++)
			len += (size_t)snprintf(stack + len, sizeof(stack) - len, "%s%04d%04d%0392d",
						f ? ";" : "", i, f, 0);
		add(&p, "", "thread (7)", stack, 3);
	}
	r = ingest_encode(&o, &p, 1700000000, 1700000010);
	cr_log_info("8 stacks of 1000 new 400-byte frames: %u requests", count_reqs(r));
	cr_assert_eq(count_reqs(r), 3);
	for (q = r; q; q = q->next) {
		size_t raw = gunzipped(q);

		cr_log_info("%u samples, %zu bytes gunzipped", q->stacks, raw);
		cr_assert_gt(raw, 0, "not gzip");
		cr_assert_leq(raw, INGEST_MAX_PROFILE, "%zu bytes", raw);
		total += q->samples;
	}
	cr_assert_eq(total, 24);
	ingest_req_free(r);
	profile_release(&p);
}

static char *first_line(const struct ingest_req *r)
{
	size_t n = strcspn(r->body, "\n");

	return strndup(r->body, n);
}

/* 1500 frames: the leaf side kept, the root side one "[truncated]" frame. */
Test(ingest, deep_stack)
{
	struct ingest_opts o = opts();
	struct ingest_req *r;
	struct profile p;
	uint32_t ids[1502];
	char name[16], *line;
	unsigned int frames = 1;

	profile_init(&p);
	ids[0] = profile_frame(&p, PROFILE_TAGS, "", "", 0);
	ids[1] = profile_frame(&p, PROFILE_THREAD, "t", "", 0);
	for (int i = 0; i < 1500; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ids[2 + i] = profile_frame(&p, PROFILE_CODE, name, "", 0);
	}
	profile_add_path(&p, ids, 1502, 4);
	r = ingest_encode(&o, &p, 1700000000, 1700000010);
	line = first_line(r);
	for (char *c = line; *c; c++)
		frames += *c == ';';
	cr_assert_eq(frames, INGEST_MAX_DEPTH);
	cr_assert(!strncmp(line, "[truncated];f501;", 17), "%.40s", line);
	cr_assert(strstr(line, ";f1499 4"));
	free(line);
	ingest_req_free(r);
	profile_release(&p);
}

/* A 70 KiB frame is cut with "..."; 200 frames of 1 KiB are cut to fit a line. */
Test(ingest, long_frames)
{
	struct ingest_opts o = opts();
	struct ingest_req *r;
	struct profile p;
	uint32_t ids[203];
	char *big = malloc(70 * 1024 + 1), *line;

	memset(big, 'n', 70 * 1024);
	big[70 * 1024] = '\0';
	profile_init(&p);
	ids[0] = profile_frame(&p, PROFILE_TAGS, "", "", 0);
	ids[1] = profile_frame(&p, PROFILE_THREAD, "t", "", 0);
	ids[2] = profile_frame(&p, PROFILE_CODE, big, "", 0);
	profile_add_path(&p, ids, 3, 1);
	r = ingest_encode(&o, &p, 1700000000, 1700000010);
	line = first_line(r);
	cr_assert_eq(strlen(line), INGEST_MAX_FRAME + 2);
	cr_assert(!strcmp(line + INGEST_MAX_FRAME - 3, "... 1"));
	free(line);
	ingest_req_free(r);
	profile_release(&p);

	profile_init(&p);
	ids[0] = profile_frame(&p, PROFILE_TAGS, "", "", 0);
	ids[1] = profile_frame(&p, PROFILE_THREAD, "t", "", 0);
	for (int i = 0; i < 200; i++) {
		snprintf(big, 16, "%03d", i);
		big[3] = 'x';
		big[1000] = '\0';
		ids[2 + i] = profile_frame(&p, PROFILE_CODE, big, "", 0);
	}
	profile_add_path(&p, ids, 202, 1);
	r = ingest_encode(&o, &p, 1700000000, 1700000010);
	line = first_line(r);
	cr_assert_leq(strlen(line), INGEST_MAX_LINE + 2);
	cr_assert_gt(strlen(line), INGEST_MAX_LINE - 1100);
	cr_assert(!strncmp(line, "[truncated];", 12));
	cr_assert(strstr(line, ";199x"));
	free(line);
	free(big);
	ingest_req_free(r);
	profile_release(&p);
}

/* --- against tests/receiver.py --- */

struct receiver {
	pid_t pid;
	int port;
	char log[64];
	char url[64];
};

static void receiver_start(struct receiver *rc, const char *const *extra)
{
	const char *argv[24] = { "python3", SRCDIR "/tests/receiver.py", "--port", "0", "--log" };
	int fds[2], fd, n = 5;
	char line[32] = "";
	FILE *f;

	snprintf(rc->log, sizeof(rc->log), "/tmp/pyrospy-ingest-XXXXXX");
	fd = mkstemp(rc->log);
	cr_assert_geq(fd, 0);
	close(fd);
	argv[n++] = rc->log;
	for (; extra && *extra; extra++)
		argv[n++] = *extra;
	cr_assert_eq(pipe(fds), 0);
	rc->pid = fork();
	cr_assert_geq(rc->pid, 0);
	if (!rc->pid) {
		/* dies with the test, should an assertion end it first */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	cr_assert(fgets(line, sizeof(line), f), "the receiver did not start");
	fclose(f);
	rc->port = atoi(line);
	cr_assert_gt(rc->port, 0);
	snprintf(rc->url, sizeof(rc->url), "http://127.0.0.1:%d/prefix/", rc->port);
}

/* Stop it; the log's lines in *lines (caller frees the returned buffer). */
static char *receiver_stop(struct receiver *rc, char **lines, size_t max, size_t *n)
{
	char *all;

	kill(rc->pid, SIGTERM);
	waitpid(rc->pid, NULL, 0);
	all = test_slurp(rc->log);
	unlink(rc->log);
	*n = 0;
	for (char *s = all, *e; *s && *n < max; s = e + 1) {
		e = strchr(s, '\n');
		cr_assert(e);
		*e = '\0';
		lines[(*n)++] = s;
	}
	return all;
}

static long long field(const char *line, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	p = strstr(line, pat);
	cr_assert(p, "no %s in %s", key, line);
	return atoll(p + strlen(pat));
}

/* One window of n samples of "main;work" plus one of "main;idle". */
static void send_window(struct ingest *in, time_t from, uint64_t n)
{
	struct profile p;

	profile_init(&p);
	add(&p, "", "thread (1)", "main;work", n);
	add(&p, "", "thread (2)", "main;work", 1);
	add(&p, "k=v", "thread (1)", "main;idle", 1);
	ingest_window(in, &p, from, from + INGEST_WINDOW);
	profile_release(&p);
}

static struct ingest_opts e2e_opts(const struct receiver *rc, FILE *log)
{
	struct ingest_opts o = opts();

	o.server = rc->url;
	o.retry_min = 0.2;
	o.retry_max = 0.5;
	o.flush_timeout = 10;
	o.log = log;
	return o;
}

/*
 * Two tag sets a window, three windows, with a token, a tenant and a
 * header, in each encoding: the same stacks arrive, as many series, with
 * the same tags.
 */
static void e2e(enum ingest_protocol proto, enum ingest_format fmt)
{
	static const char *const hdrs[] = { "X-Custom: hello", NULL };
	static const char *const tags[] = { "env=prod", NULL };
	struct receiver rc;
	struct ingest_opts o;
	struct ingest *in;
	char *lines[16], *all;
	size_t n;
	time_t t0 = ingest_align(time(NULL)) - 40;

	receiver_start(&rc, NULL);
	o = e2e_opts(&rc, NULL);
	o.protocol = proto;
	o.format = fmt;
	o.auth_token = "s3cr3t-token";
	o.tenant_id = "team-a";
	o.headers = hdrs;
	o.tags = tags;
	o.runtime_name = "cpython";
	o.runtime_version = "3.11.2";
	in = ingest_start(&o);
	cr_assert(in);
	for (int i = 0; i < 3; i++)
		send_window(in, t0 + i * INGEST_WINDOW, 10 + (uint64_t)i);
	cr_assert_eq(ingest_stop(in), 0);
	all = receiver_stop(&rc, lines, 16, &n);
	/* two tag sets a window, windows in order, none twice */
	cr_assert_eq(n, 6, "%s", n ? lines[0] : "");
	for (size_t i = 0; i < n; i++) {
		const char *l = lines[i];

		cr_assert_eq(field(l, "from"), t0 + (time_t)(i / 2) * INGEST_WINDOW, "%s", l);
		cr_assert_eq(field(l, "until"), t0 + (time_t)(i / 2 + 1) * INGEST_WINDOW);
		cr_assert_eq(field(l, "sampleRate"), 100);
		cr_assert(strstr(l, "\"auth\": \"Bearer\""));
		cr_assert(strstr(l, "\"token\": \"s3cr3t-token\""));
		cr_assert(strstr(l, "\"tenant\": \"team-a\""));
		cr_assert(strstr(l, "\"x-custom\": \"hello\""));
		if (proto == INGEST_PROTOCOL_PUSH) {
			cr_assert(strstr(l, "\"path\": \"/prefix/push.v1.PusherService/Push\""), "%s", l);
			cr_assert(strstr(l, "\"__name__\": \"process_cpu\""), "%s", l);
			cr_assert(strstr(l, "\"service_name\": \"shop\""), "%s", l);
			cr_assert(strstr(l, "\"runtime\": [\"cpython\", \"3.11.2\"]"), "%s", l);
		} else {
			cr_assert(strstr(l, "\"path\": \"/prefix/ingest\""));
			cr_assert(strstr(l, "\"spyName\": \"pyrospy-python\""));
		}
		if (i % 2 == 0) {
			if (fmt != INGEST_FORMAT_PPROF && proto != INGEST_PROTOCOL_PUSH)
				cr_assert(strstr(l, "\"name\": \"shop.cpu{env=prod}\""), "%s", l);
			cr_assert(strstr(l, "\"tags\": {\"env\": \"prod\"}"), "%s", l);
			cr_assert_eq(field(l, "main;work"), 11 + (long long)i / 2);
		} else {
			if (fmt != INGEST_FORMAT_PPROF && proto != INGEST_PROTOCOL_PUSH)
				cr_assert(strstr(l, "\"name\": \"shop.cpu{env=prod,k=v}\""), "%s", l);
			cr_assert(strstr(l, "\"tags\": {\"env\": \"prod\", \"k\": \"v\"}"), "%s", l);
			cr_assert_eq(field(l, "main;idle"), 1);
		}
	}
	free(all);
}

Test(ingest, e2e)
{
	e2e(INGEST_PROTOCOL_INGEST, INGEST_FORMAT_FOLDED);
}

Test(ingest, e2e_push)
{
	e2e(INGEST_PROTOCOL_PUSH, INGEST_FORMAT_FOLDED);
}

Test(ingest, e2e_ingest_pprof)
{
	e2e(INGEST_PROTOCOL_INGEST, INGEST_FORMAT_PPROF);
}

/* Basic auth and the trie format. */
Test(ingest, e2e_trie_basic)
{
	struct receiver rc;
	struct ingest_opts o;
	struct ingest *in;
	char *lines[4], *all;
	size_t n;
	time_t t0 = ingest_align(time(NULL)) - 10;

	receiver_start(&rc, NULL);
	o = e2e_opts(&rc, NULL);
	o.basic_auth = "user:pa:ss";
	o.format = INGEST_FORMAT_TRIE;
	o.spy_name = "pyrospy-ruby";
	in = ingest_start(&o);
	send_window(in, t0, 5);
	cr_assert_eq(ingest_stop(in), 0);
	all = receiver_stop(&rc, lines, 4, &n);
	cr_assert_eq(n, 2);
	cr_assert(strstr(lines[0], "\"format\": \"trie\""), "%s", lines[0]);
	cr_assert(strstr(lines[0], "\"auth\": \"Basic\""));
	cr_assert(strstr(lines[0], "\"user\": \"user\""));
	cr_assert(strstr(lines[0], "\"password\": \"pa:ss\""));
	cr_assert(strstr(lines[0], "\"spyName\": \"pyrospy-ruby\""));
	cr_assert_eq(field(lines[0], "main;work"), 6);
	cr_assert_eq(field(lines[0], "samples"), 6);
	free(all);
}

/* 503 for 3 s: the same windows arrive later, in order, once each. */
static void fail_first(enum ingest_protocol proto)
{
	static const char *const extra[] = { "--fail-first", "3", NULL };
	struct receiver rc;
	struct ingest_opts o;
	struct ingest_stats st;
	struct ingest *in;
	char *lines[16], *all, *msgs = NULL;
	size_t n, mlen;
	FILE *log = open_memstream(&msgs, &mlen);
	time_t t0 = ingest_align(time(NULL)) - 40;

	receiver_start(&rc, extra);
	o = e2e_opts(&rc, log);
	o.protocol = proto;
	in = ingest_start(&o);
	for (int i = 0; i < 3; i++)
		send_window(in, t0 + i * INGEST_WINDOW, 10 + (uint64_t)i);
	usleep(500000);
	ingest_stats(in, &st);
	cr_assert_eq(st.delivered, 0);
	cr_assert_gt(st.failures, 0);
	/* a request per tag set, or per window */
	cr_assert_eq(st.pending, proto == INGEST_PROTOCOL_PUSH ? 3 : 6);
	cr_assert_str_eq(st.last_error, "HTTP 503");
	cr_assert_eq(ingest_stop(in), 0);
	fclose(log);
	all = receiver_stop(&rc, lines, 16, &n);
	cr_assert_eq(n, 6);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(field(lines[i], "from"), t0 + (time_t)(i / 2) * INGEST_WINDOW);
	/* said once, not per attempt */
	cr_assert(strstr(msgs, "cannot upload to"));
	cr_assert_null(strstr(strstr(msgs, "cannot upload to") + 1, "cannot upload to"), "%s", msgs);
	cr_assert(strstr(msgs, "resumed"));
	free(msgs);
	free(all);
}

Test(ingest, e2e_fail_first)
{
	fail_first(INGEST_PROTOCOL_INGEST);
}

Test(ingest, e2e_push_fail_first)
{
	fail_first(INGEST_PROTOCOL_PUSH);
}

/* Connections refused for 1 s: nothing lost. */
static void refuse_first(enum ingest_protocol proto)
{
	static const char *const extra[] = { "--refuse-first", "1", NULL };
	struct receiver rc;
	struct ingest_opts o;
	struct ingest *in;
	char *lines[16], *all, *msgs = NULL;
	size_t n, mlen;
	FILE *log = open_memstream(&msgs, &mlen);
	time_t t0 = ingest_align(time(NULL)) - 20;

	receiver_start(&rc, extra);
	o = e2e_opts(&rc, log);
	o.protocol = proto;
	in = ingest_start(&o);
	send_window(in, t0, 1);
	send_window(in, t0 + INGEST_WINDOW, 2);
	cr_assert_eq(ingest_stop(in), 0);
	fclose(log);
	all = receiver_stop(&rc, lines, 16, &n);
	cr_assert_eq(n, 4);
	cr_assert_eq(field(lines[0], "from"), t0);
	cr_assert_eq(field(lines[3], "from"), t0 + INGEST_WINDOW);
	cr_assert(strstr(msgs, "ouldn't connect") || strstr(msgs, "onnection refused"), "%s", msgs);
	free(msgs);
	free(all);
}

Test(ingest, e2e_refuse_first)
{
	refuse_first(INGEST_PROTOCOL_INGEST);
}

Test(ingest, e2e_push_refuse_first)
{
	refuse_first(INGEST_PROTOCOL_PUSH);
}

/* A 400: that request is dropped and said, the rest goes on. */
static void refused(enum ingest_protocol proto)
{
	static const char *const extra[] = { "--fail-count", "1", "--fail-status", "400", NULL };
	struct receiver rc;
	struct ingest_opts o;
	struct ingest *in;
	char *lines[16], *all, *msgs = NULL;
	size_t n, mlen;
	FILE *log = open_memstream(&msgs, &mlen);
	time_t t0 = ingest_align(time(NULL)) - 30;

	receiver_start(&rc, extra);
	o = e2e_opts(&rc, log);
	o.auth_token = "s3cr3t-token";
	o.protocol = proto;
	in = ingest_start(&o);
	for (int i = 0; i < 3; i++)
		send_window(in, t0 + i * INGEST_WINDOW, 1);
	cr_assert_eq(ingest_stop(in), -1);
	fclose(log);
	all = receiver_stop(&rc, lines, 16, &n);
	if (proto == INGEST_PROTOCOL_PUSH) {
		/* the first window's one request, both tag sets, lost */
		cr_assert_eq(n, 4);
		cr_assert_eq(field(lines[0], "from"), t0 + INGEST_WINDOW);
		cr_assert(strstr(msgs, "refused the profile of 'shop.cpu and 1 more series'"), "%s", msgs);
	} else {
		cr_assert_eq(n, 5);
		/* the first window lost its first tag set only */
		cr_assert(strstr(lines[0], "shop.cpu{k=v}"), "%s", lines[0]);
		cr_assert_eq(field(lines[0], "from"), t0);
		cr_assert_eq(field(lines[1], "from"), t0 + INGEST_WINDOW);
	}
	cr_assert(strstr(msgs, "HTTP 400: receiver: injected failure 1 of 1"), "%s", msgs);
	cr_assert(strstr(msgs, "1 of 3 profile windows not delivered"), "%s", msgs);
	cr_assert_null(strstr(msgs, "s3cr3t"));
	free(msgs);
	free(all);
}

Test(ingest, e2e_refused)
{
	refused(INGEST_PROTOCOL_INGEST);
}

Test(ingest, e2e_push_refused)
{
	refused(INGEST_PROTOCOL_PUSH);
}

/* The older server has no push API: said once, with what to do, and lost. */
Test(ingest, e2e_push_to_old_server)
{
	static const char *const extra[] = { "--old-server", NULL };
	struct receiver rc;
	struct ingest_opts o;
	struct ingest *in;
	char *lines[4], *all, *msgs = NULL;
	size_t n, mlen;
	FILE *log = open_memstream(&msgs, &mlen);
	time_t t0 = ingest_align(time(NULL)) - 20;

	receiver_start(&rc, extra);
	o = e2e_opts(&rc, log);
	o.protocol = INGEST_PROTOCOL_PUSH;
	in = ingest_start(&o);
	send_window(in, t0, 1);
	send_window(in, t0 + INGEST_WINDOW, 1);
	cr_assert_eq(ingest_stop(in), -1);
	fclose(log);
	all = receiver_stop(&rc, lines, 4, &n);
	cr_assert_eq(n, 0);
	cr_assert(strstr(msgs, "HTTP 404: 404 page not found; dropping it\nhint: the server has no "
			 "push API (the older Pyroscope server?): use --protocol ingest\n"), "%s", msgs);
	cr_assert_null(strstr(strstr(msgs, "hint:") + 1, "hint:"), "%s", msgs);
	cr_assert(strstr(msgs, "2 of 2 profile windows not delivered"), "%s", msgs);
	free(msgs);
	free(all);
}

/* A token of len bytes (6 or more) that nothing else says: "sk-Qx7Qx7...". */
static char *odd_token(size_t len)
{
	char *t = malloc(len + 1);

	memcpy(t, "sk-", 3);
	for (size_t i = 3; i < len; i++)
		t[i] = "Qx7"[(i - 3) % 3];
	t[len] = '\0';
	return t;
}

/*
 * The receiver quotes the Authorization header it refuses (repeat times,
 * in a G-style 401 body): not one byte of the token is said, wherever the
 * quote falls on a cut (the 200 bytes of a message, the 4 KiB kept of a
 * body).
 */
static void echoed(size_t len, const char *repeat, enum ingest_protocol proto)
{
	const char *extra[] = { "--echo-auth", "5", "--echo-repeat", repeat, NULL };
	struct receiver rc;
	struct ingest_opts o;
	struct ingest *in;
	char *lines[4], *all, *msgs = NULL, *tok = odd_token(len);
	size_t n, mlen;
	FILE *log = open_memstream(&msgs, &mlen);
	time_t t0 = ingest_align(time(NULL)) - 10;

	receiver_start(&rc, extra);
	o = e2e_opts(&rc, log);
	o.auth_token = tok;
	o.protocol = proto;
	in = ingest_start(&o);
	cr_assert(in);
	send_window(in, t0, 1);
	cr_assert_eq(ingest_stop(in), -1);
	fclose(log);
	all = receiver_stop(&rc, lines, 4, &n);
	cr_assert(strstr(msgs, "HTTP 401: invalid credentials: 'Authorization: Bearer ***'"),
		  "token of %zu bytes: %s", len, msgs);
	cr_assert_null(strstr(msgs, "sk-"), "token of %zu bytes: %s", len, msgs);
	cr_assert_null(strstr(msgs, "Qx"), "token of %zu bytes: %s", len, msgs);
	cr_assert_null(strstr(msgs, "x7"), "token of %zu bytes: %s", len, msgs);
	free(msgs);
	free(all);
	free(tok);
}

/* Quoted past the 200 bytes of a message. */
Test(ingest, e2e_echoed_token)
{
	echoed(303, "1", INGEST_PROTOCOL_INGEST);
	echoed(303, "1", INGEST_PROTOCOL_PUSH);
}

/*
 * Quoted twice, the second cut by the 4 KiB kept of the body after d
 * bytes: the body is {"code":"unauthenticated","message":"invalid
 * credentials: 'Authorization: Bearer TOKEN', 'Authorization: Bearer TOKEN'"}
 * and its second token starts at 107 + len.
 */
Test(ingest, e2e_echoed_token_cut, .timeout = 60)
{
	for (size_t d = 1; d <= 12; d++)
		echoed(4096 - 107 - d, "2", d % 2 ? INGEST_PROTOCOL_INGEST : INGEST_PROTOCOL_PUSH);
}

/*
 * Nobody listening, in each protocol: the spool stays within its bound
 * (the request being tried aside), the oldest windows go first, said
 * once, and the flush gives up in time and says what was lost.
 */
static void unreachable(enum ingest_protocol proto)
{
	struct ingest_opts o = opts();
	struct ingest_stats st;
	struct ingest *in;
	struct timespec a, b;
	char *msgs = NULL, lost[64];
	size_t mlen, one = 0;
	FILE *log = open_memstream(&msgs, &mlen);
	time_t t0 = ingest_align(time(NULL)) - 80;

	o.server = "http://127.0.0.1:1";
	o.basic_auth = "user:hunter2-password";
	o.protocol = proto;
	o.log = log;
	o.retry_min = 0.1;
	o.flush_timeout = 0.5;
	o.spool_bytes = 3000;
	in = ingest_start(&o);
	for (int i = 0; i < 8; i++) {
		struct profile p;
		char stack[32];

		profile_init(&p);
		for (int k = 0; k < 20; k++) {
			snprintf(stack, sizeof(stack), "main;work%d;f%d", i, k);
			add(&p, "route=/cart", "t", stack, 1);
		}
		ingest_window(in, &p, t0 + i * INGEST_WINDOW, t0 + (i + 1) * INGEST_WINDOW);
		profile_release(&p);
		ingest_stats(in, &st);
		if (!one)
			one = st.spooled;
		cr_assert_leq(st.spooled, o.spool_bytes + one, "protocol %d: %zu bytes spooled",
			      (int)proto, st.spooled);
	}
	cr_log_info("protocol %d: a window is %zu bytes", (int)proto, one);
	/* a test of the bound only if a few windows fit and more do not */
	cr_assert(one > 0 && one * 2 <= o.spool_bytes && one * 8 > o.spool_bytes,
		  "protocol %d: a window is %zu bytes", (int)proto, one);
	ingest_stats(in, &st);
	cr_assert_eq(st.windows, 8);
	cr_assert_geq(st.dropped, 1);
	clock_gettime(CLOCK_MONOTONIC, &a);
	cr_assert_eq(ingest_stop(in), -1);
	clock_gettime(CLOCK_MONOTONIC, &b);
	cr_assert_lt(b.tv_sec - a.tv_sec + (b.tv_nsec - a.tv_nsec) / 1e9, 2.0);
	fclose(log);
	cr_assert(strstr(msgs, "spool full (3000 bytes)"), "%s", msgs);
	cr_assert_null(strstr(strstr(msgs, "spool full") + 1, "spool full"));
	snprintf(lost, sizeof(lost), "8 of 8 profile windows not delivered");
	cr_assert(strstr(msgs, lost), "%s", msgs);
	cr_assert_null(strstr(msgs, "hunter2"));
	free(msgs);
}

Test(ingest, unreachable)
{
	unreachable(INGEST_PROTOCOL_INGEST);
	unreachable(INGEST_PROTOCOL_PUSH);
	unreachable(INGEST_PROTOCOL_OTLP);
}

/*
 * The receiver's push route refuses what Grafana Pyroscope refuses (a
 * label set without __name__, bad or twice-given label names, more than
 * 16000 samples, over 4 MiB, invalid UTF-8, a wrong content type...),
 * with its status and Connect error: tests/receiver-check says which.
 */
Test(ingest, receiver_push_route_is_strict, .timeout = 60)
{
	int st;
	char *out = test_run("/usr/bin/python3.11 " SRCDIR "/tests/receiver-check 2>/dev/null", &st);

	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", out);
	cr_assert(strstr(out, "16001 samples: 400 "), "%s", out);
	free(out);
}

/* Frames deep and wide, names long: a window in several pprofs. */
static void add_deep(struct profile *p, int stacks, int depth, size_t namelen)
{
	uint32_t *ids = malloc((size_t)(depth + 2) * sizeof(*ids));
	char *name = malloc(namelen + 32);

	ids[0] = profile_frame(p, PROFILE_TAGS, "", "", 0);
	ids[1] = profile_frame(p, PROFILE_THREAD, "t", "", 0);
	for (int s = 0; s < stacks; s++) {
		for (int d = 0; d < depth; d++) {
			int n = snprintf(name, 32, "s%d_f%d_", s, d);

			memset(name + n, 'n', namelen - (size_t)n);
			name[namelen] = '\0';
			ids[2 + d] = profile_frame(p, PROFILE_CODE, name, "deep.py", d + 1);
		}
		profile_add_path(p, ids, (uint32_t)depth + 2, 2);
	}
	free(name);
	free(ids);
}

/*
 * Pushed windows stay within Grafana's limits, nothing lost: 16 001
 * stacks (two profiles), and 6 stacks of 1500 frames with names of 2000
 * bytes (over 4 MiB in one profile: cut to 1000 frames and 1024-byte
 * names, spread over profiles and requests); with basic auth.
 */
Test(ingest, e2e_push_limits, .timeout = 60)
{
	struct receiver rc;
	struct ingest_opts o;
	struct ingest *in;
	struct ingest_req *r;
	struct profile p;
	char *lines[16], *all, stack[64];
	size_t n;
	long long total = 0;
	int deep = 0, cut = 0;
	time_t t0 = ingest_align(time(NULL)) - 20;

	receiver_start(&rc, NULL);
	o = e2e_opts(&rc, NULL);
	o.protocol = INGEST_PROTOCOL_PUSH;
	o.basic_auth = "user:pa:ss";
	in = ingest_start(&o);
	profile_init(&p);
	for (int i = 0; i < 16001; i++) {
		snprintf(stack, sizeof(stack), "main;f%05d", i);
		add(&p, "", "t", stack, 1);
	}
	r = ingest_encode(&o, &p, t0, t0 + INGEST_WINDOW);
	cr_assert_eq(count_reqs(r), 1);
	cr_assert_null(r->query);
	cr_assert_eq(r->stacks, 16001);
	ingest_req_free(r);
	ingest_window(in, &p, t0, t0 + INGEST_WINDOW);
	profile_release(&p);
	profile_init(&p);
	add_deep(&p, 6, 1500, 2000);
	r = ingest_encode(&o, &p, t0, t0 + INGEST_WINDOW);
	cr_assert_geq(count_reqs(r), 2);
	ingest_req_free(r);
	ingest_window(in, &p, t0 + INGEST_WINDOW, t0 + 2 * INGEST_WINDOW);
	profile_release(&p);
	cr_assert_eq(ingest_stop(in), 0);
	all = receiver_stop(&rc, lines, 16, &n);
	cr_assert_geq(n, 4, "%zu series", n);
	for (size_t i = 0; i < n; i++) {
		total += field(lines[i], "samples");
		cr_assert(strstr(lines[i], "\"password\": \"pa:ss\""), "%.300s", lines[i]);
		deep += strstr(lines[i], "\"[truncated];s0_f501_nnn") != NULL;
		cut += strstr(lines[i], "nnnnnn... (deep.py:502);") != NULL;
	}
	cr_assert_eq(total, 16001 + 12);
	/* the deep stacks: 999 frames kept below a [truncated] mark, names cut */
	cr_assert(deep && cut, "%.300s", lines[n - 1]);
	free(all);
}

/*
 * The server's answer to an OTLP request it took (ingest_otlp.partial):
 * its partial_success read, nothing else believed; hostile bytes say
 * nothing and cost no more than their length.
 */
Test(ingest, otlp_partial_answer)
{
	/* { 1: { 1: 3, 2: "too old" } }, and an unknown field 7 before it */
	static const unsigned char real[] = { 0x38, 0x05, 0x0a, 0x0b, 0x08, 0x03, 0x12, 0x07,
					      't',  'o',  'o',  ' ',  'o',  'l',  'd' };
	static const unsigned char warn[] = { 0x0a, 0x04, 0x12, 0x02, 'h', 'i' };
	static const unsigned char none[] = { 0x0a, 0x00 };
	/* a message whose length runs past what was kept of a longer answer */
	static const unsigned char cut[] = { 0x0a, 0x7f, 0x08, 0x01, 0x12, 0x7b, 'a', 'b' };
	/* groups, a varint of eleven bytes, field 0, a length past the end */
	static const unsigned char bad[][12] = {
		{ 0x0a, 0x02, 0x0b, 0x0c },
		{ 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 },
		{ 0x02, 0x00 },
		{ 0x0a, 0x09, 0x08, 0x01 },
	};
	const struct ingest_format_ops *otlp =
		ingest_format_of(&(struct ingest_opts){ .protocol = INGEST_PROTOCOL_OTLP });
	char msg[64];
	uint64_t n;

	cr_assert_not_null(otlp->partial);
	cr_assert_eq(otlp->partial((const char *)real, sizeof(real), 0, &n, msg, sizeof(msg)), 1);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(msg, "too old");
	cr_assert_eq(otlp->partial((const char *)warn, sizeof(warn), 0, &n, msg, sizeof(msg)), 1);
	cr_assert_eq(n, 0);
	cr_assert_str_eq(msg, "hi");
	cr_assert_eq(otlp->partial((const char *)none, sizeof(none), 0, &n, msg, sizeof(msg)), 0);
	cr_assert_eq(otlp->partial("", 0, 0, &n, msg, sizeof(msg)), 0);
	cr_assert_eq(otlp->partial((const char *)cut, sizeof(cut), 0, &n, msg, sizeof(msg)), 0,
		     "a whole answer that lies about its length");
	cr_assert_eq(otlp->partial((const char *)cut, sizeof(cut), 1, &n, msg, sizeof(msg)), 1);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(msg, "ab");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(otlp->partial((const char *)bad[i], sizeof(bad[i]), 0, &n, msg, sizeof(msg)),
			     0, "malformed answer %zu believed", i);
	/* a long message, cut to what the caller has room for */
	{
		/* 298 bytes nested: key and length (3) and 295 of message */
		unsigned char big[301] = { 0x0a, 0xaa, 0x02, 0x12, 0xa7, 0x02 };

		memset(big + 6, 'x', sizeof(big) - 6);
		cr_assert_eq(otlp->partial((const char *)big, sizeof(big), 0, &n, msg, sizeof(msg)), 1);
		cr_assert_eq(strlen(msg), sizeof(msg) - 1);
	}
}
