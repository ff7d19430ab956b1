#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A test receiver for pyrospy's uploads: the server side of Pyroscope's
legacy POST /ingest API, as /work/shared/research/pyroscope-ingest.md
describes it from the sources of both servers (Grafana Pyroscope, "G", and
the last pyroscope-io server, "OG").

It answers what the servers answer (status codes and G's JSON error
bodies) and accepts only what both accept: the name is parsed by ports of
both servers' state machines with their own character sets, the query the
way Go's url.ParseQuery reads it, folded bodies the way ParseGroups does
(bufio.Scanner's 64 KiB line limit included) and trie bodies the way
transporttrie.IterateRaw does.  On top of that it refuses, with 400 and a
message starting "receiver:", what a server would take but silently alter
or lose (a line it would stop at, a tag it would drop, an empty frame...):
those are client bugs.

Each accepted request appends one JSON line to --log.

    python3 tests/receiver.py --port 0 --log FILE [--fail-first SECS]
        [--refuse-first SECS] [--fail-count N] [--fail-status CODE]
        [--require-tenant] [--require-token TOKEN] [--max-body BYTES]
        [--echo-auth N [--echo-repeat K]]

The port is printed on stdout as the first line, before anything else
(with --refuse-first, before the port is bound).
"""

import argparse
import base64
import binascii
import json
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_STACKS = 16000          # G: max_profile_stacktrace_samples
MAX_DEPTH = 1000            # G truncates deeper stacks
MAX_TOKEN = 64 * 1024       # bufio.Scanner's default max token size
MAX_LABEL_VALUE = 2048      # G: validation.max-label-value-length
MAX_LABEL_NAMES = 30        # G: validation.max-label-names-per-series
SERVER_LABELS = 4           # __name__, __delta__, pyroscope_spy, service_name

# G's profile types by app-name suffix (ingest_adapter.go); others give 400
PROFILE_TYPES = {
    "cpu", "itimer", "wall", "seconds", "nanoseconds", "microseconds", "milliseconds",
    "inuse_objects", "alloc_objects", "inuse_space", "alloc_space", "goroutines",
    "mutex_count", "mutex_duration", "block_count", "block_duration", "lock_count",
    "lock_duration", "alloc_in_new_tlab_objects", "alloc_in_new_tlab_bytes",
    "alloc_outside_tlab_objects", "alloc_outside_tlab_bytes", "live", "exceptions", "bytes",
}

# keys a client must not send (see the study, 7.6)
RESERVED_KEYS = {"profile_id", "pyroscope_spy", "service_name", "app_name"}


class Reject(Exception):
    """An answer other than 200: status, G-style JSON message (or raw body)."""

    def __init__(self, status, message, code=None, raw=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.raw = raw


def connect_code(status):
    # pkg/util/http ErrorWithStatus: connectgrpc.HTTPToCode
    return {400: "invalid_argument", 401: "unauthenticated", 413: "invalid_argument",
            429: "resource_exhausted"}.get(status, "unknown")


def strict(message):
    """Something a server takes but alters or loses: a client bug."""
    return Reject(400, "receiver: " + message)


# --- Go's url.ParseQuery -----------------------------------------------------

def go_unescape(s):
    """url.QueryUnescape on the raw bytes (latin-1 str): None when invalid."""
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c == "%":
            h = s[i + 1:i + 3]
            if len(h) != 2 or not all(x in "0123456789abcdefABCDEF" for x in h):
                return None
            out.append(int(h, 16))
            i += 3
            continue
        out.append(0x20 if c == "+" else ord(c))
        i += 1
    return bytes(out)


def parse_query(raw):
    """Go >= 1.17 ParseQuery: pairs with ';' or bad escapes are dropped."""
    q, dropped = {}, []
    for pair in raw.split("&"):
        if ";" in pair:
            dropped.append(pair)
            continue
        if pair == "":
            continue
        k, _, v = pair.partition("=")
        k, v = go_unescape(k), go_unescape(v)
        if k is None or v is None:
            dropped.append(pair)
            continue
        q.setdefault(k.decode("utf-8", "replace"), []).append(v)
    return q, dropped


# --- the name: labelset.Parse (G) and segment.ParseKey (OG) ---------------------

GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006" \
           "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def go_trim(s):
    return s.strip(GO_SPACE)


def go_quote_rune(r):
    if r == "'":
        return "'\\''"
    if r == "\\":
        return "'\\\\'"
    if r.isprintable():
        return "'" + r + "'"
    c = ord(r)
    if c < 0x80:
        return "'\\x%02x'" % c
    return "'\\u%04x'" % c if c < 0x10000 else "'\\U%08x'" % c


def alnum(r):
    return ("a" <= r <= "z") or ("A" <= r <= "Z") or ("0" <= r <= "9")


VARIANTS = {
    # G: api/model/labelset/validate.go
    "G": dict(app=lambda r: r in "-./_" or alnum(r), key=lambda r: r in "_." or alnum(r),
              bad_app="invalid service name", app_required="service name is required",
              bad_key="invalid label name", key_required="label name is required"),
    # OG: pkg/flameql/flameql.go
    "OG": dict(app=lambda r: r in "-._" or alnum(r), key=lambda r: r == "_" or alnum(r),
               bad_app="invalid application name", app_required="application name is required",
               bad_key="invalid tag key", key_required="tag key is required"),
}


def parse_name(name, variant):
    """The servers' state machine, with variant's character sets."""
    v = VARIANTS[variant]
    labels = {}
    state, key, value = "name", "", ""
    for r in name + "{":
        if state == "name":
            if r == "{":
                state = "key"
                app = go_trim(value)
                if not app:
                    raise Reject(400, "name: " + v["app_required"])
                for c in app:
                    if not v["app"](c):
                        raise Reject(400, "name: %s: %s: character is not allowed: %s"
                                     % (v["bad_app"], app, go_quote_rune(c)))
                labels["__name__"] = app
            else:
                value += r
        elif state == "key":
            if r == "}":
                state = "done"
            elif r == "=":
                state = "value"
                value = ""
            else:
                key += r
        elif state == "value":
            if r in ",}":
                state = "key"
                k = go_trim(key)
                if k != "__name__":
                    if not k:
                        raise Reject(400, "name: " + v["key_required"])
                    for c in k:
                        if not v["key"](c):
                            raise Reject(400, "name: %s: %s: character is not allowed: %s"
                                         % (v["bad_key"], k, go_quote_rune(c)))
                labels[k] = go_trim(value)
                key = ""
            else:
                value += r
    return labels


def check_name(raw):
    """Both servers' verdict, G's labels, and the client-bug checks."""
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        name = None
    text = raw.decode("utf-8", "replace")
    labels = parse_name(text, "G")
    parse_name(text, "OG")
    if name is None:
        raise strict("name is not valid UTF-8")
    app = labels["__name__"]
    # G derives the profile type from the last dotted part (ingest_adapter.go)
    if "." in app and app.rsplit(".", 1)[1] not in PROFILE_TYPES:
        raise Reject(400, "unknown profile type: " + app.rsplit(".", 1)[1])
    tags = {k: v for k, v in labels.items() if k != "__name__"}
    if len(tags) + SERVER_LABELS > MAX_LABEL_NAMES:
        raise Reject(400, "profile series %s has %d label names; limit %d"
                     % (name, len(tags) + SERVER_LABELS, MAX_LABEL_NAMES))
    for k, v in tags.items():
        if len(v.encode()) > MAX_LABEL_VALUE:
            raise Reject(400, "label value too long: %d > %d" % (len(v.encode()), MAX_LABEL_VALUE))
    # what the servers take but alter: a client bug
    m = re.fullmatch(r"([^{]*)(?:\{(.*)\})?", name, re.S)
    if not m:
        raise strict("name %r is not app{k=v,...}" % name)
    if m.group(1) != app:
        raise strict("app name %r has white space the server trims" % m.group(1))
    seen = set()
    for piece in (m.group(2).split(",") if m.group(2) else []):
        k, eq, v = piece.partition("=")
        if not eq:
            raise strict("tag %r has no '=' (the server drops it)" % piece)
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            raise strict("tag key %r is not [A-Za-z_][A-Za-z0-9_]*" % k)
        if k.startswith("__"):
            raise strict("tag key %r starts with '__' (G drops or misreads it)" % k)
        if k in RESERVED_KEYS:
            raise strict("tag key %r is reserved" % k)
        if k in seen:
            raise strict("tag key %r given twice" % k)
        seen.add(k)
        if not v or go_trim(v) != v:
            raise strict("value of tag %r is empty or has white space the server trims" % k)
        if any(ord(c) < 0x20 or ord(c) == 0x7f for c in v):
            raise strict("value of tag %r holds a control character" % k)
    if list(tags) and sorted(seen) != sorted(tags):
        raise strict("tags parse differently: %r" % name)
    if not app.endswith(".cpu"):
        raise strict("app name %r has no .cpu suffix" % app)
    return name, app, tags


# --- bodies ----------------------------------------------------------------

def go_atoi(s):
    """strconv.Atoi for base 10; raises Reject(422) like the server."""
    t = s[1:] if s[:1] in (b"+", b"-") else s
    if not t or not t.isdigit() or not t.isascii():
        raise Reject(422, 'strconv.Atoi: parsing "%s": invalid syntax' % s.decode("utf-8", "replace"))
    v = int(s)
    if not -(1 << 63) <= v < (1 << 63):
        raise Reject(422, 'strconv.Atoi: parsing "%s": value out of range' % s.decode("utf-8", "replace"))
    return v


def parse_folded(body):
    """convert.ParseGroups: bufio.ScanLines (64 KiB), count after the last space."""
    out = []
    pos, n = 0, len(body)
    while pos < n:
        nl = body.find(b"\n", pos)
        line = body[pos:nl] if nl >= 0 else body[pos:]
        if len(line) >= MAX_TOKEN:
            # bufio.ErrTooLong, never checked: the rest is ignored, 200
            raise strict("line of %d bytes: the server silently ignores it and the rest" % len(line))
        pos = nl + 1 if nl >= 0 else n
        if line.endswith(b"\r"):
            line = line[:-1]
        i = line.rfind(b" ")
        if i < 0:
            if line:
                raise strict("line without a count (the server skips it): %r" % line[:80])
            continue
        count = go_atoi(line[i + 1:])
        if count <= 0:
            raise strict("count %d is not positive" % count)
        out.append((line[:i], count))
    return out


def read_uvarint(b, pos):
    """binary.ReadUvarint: (value, pos); None at a clean EOF; Reject if cut."""
    if pos >= len(b):
        return None
    v, shift = 0, 0
    for i in range(10):
        if pos >= len(b):
            raise Reject(422, "unexpected EOF")
        c = b[pos]
        pos += 1
        if c < 0x80:
            if i == 9 and c > 1:
                raise Reject(422, "binary: varint overflows a 64-bit integer")
            return v | c << shift, pos
        v |= (c & 0x7f) << shift
        shift += 7
    raise Reject(422, "binary: varint overflows a 64-bit integer")


def parse_trie(body):
    """transporttrie.IterateRaw, quirks included."""
    out = []
    buf = bytearray()
    offsets = []            # [descCount, suffixLen]
    copied = 0
    pos, first = 0, True
    while True:
        r = read_uvarint(body, pos)
        if r is None:
            return out
        name_len, pos = r
        if name_len:
            chunk = body[pos:pos + name_len]
            pos += len(chunk)
            buf += chunk
            copied = len(chunk)
        elif not first:
            raise strict("empty-named non-root trie node (the servers' reader mishandles it)")
        first = False
        for what in ("value", "children"):
            r = read_uvarint(body, pos)
            if r is None:
                raise Reject(422, "EOF")
            if what == "value":
                value, pos = r
            else:
                desc, pos = r
        if value > 0:
            out.append((bytes(buf), value))
        if desc != 0:
            offsets.append([desc, copied])
            continue
        del buf[len(buf) - copied:]
        i = len(offsets) - 1
        if i < 0:
            continue
        offsets[i][0] -= 1
        while i > 0:
            if offsets[i][0] != 0:
                break
            del buf[len(buf) - offsets[i][1]:]
            offsets = offsets[:i]
            p = len(offsets) - 1
            if p > 0:
                offsets[p][0] -= 1
            i -= 1


def check_stacks(pairs):
    """What G checks of the stacks, plus the client-bug checks."""
    stacks = {}
    for key, count in pairs:
        try:
            text = key.decode("utf-8")
        except UnicodeDecodeError:
            raise Reject(400, "invalid utf8 string hex: %s" % binascii.hexlify(key[:64]).decode())
        frames = text.split(";")
        if any(f == "" for f in frames):
            raise strict("empty frame in %r" % text[:200])
        if len(frames) > MAX_DEPTH:
            raise strict("stack of %d frames: the server truncates it to %d" % (len(frames), MAX_DEPTH))
        if any(len(f.encode()) > 65535 for f in frames):
            raise strict("frame over 65535 bytes: the server truncates it")
        if any(ord(c) < 0x20 or ord(c) == 0x7f for c in text):
            raise strict("control character in %r" % text[:200])
        stacks[text] = stacks.get(text, 0) + count
    if len(stacks) > MAX_STACKS:
        raise Reject(400, "profile has %d samples, exceeds the limit of %d" % (len(stacks), MAX_STACKS))
    return stacks


# --- HTTP --------------------------------------------------------------------

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "pyrospy-test-receiver"

    def log_message(self, fmt, *args):
        if self.server.opts.verbose:
            sys.stderr.write("receiver: " + (fmt % args) + "\n")

    def answer(self, status, body=b"", ctype=None):
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
            self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def reject(self, e):
        if e.raw is not None:
            self.answer(e.status, e.raw, "text/plain; charset=utf-8" if e.raw else None)
            return
        # Go's json.Encoder: no spaces, a newline after
        body = json.dumps({"code": e.code or connect_code(e.status), "message": e.message},
                          separators=(",", ":"))
        self.answer(e.status, (body + "\n").encode(), "application/json")

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def is_ingest(self):
        path = self.path.split("?", 1)[0]
        return path == "/ingest" or path.endswith("/ingest")

    def do_GET(self):
        self.answer(405 if self.is_ingest() else 404, b"")

    do_PUT = do_DELETE = do_PATCH = do_GET

    def do_POST(self):
        body = self.read_body()
        if not self.is_ingest():
            self.answer(404, b"404 page not found\n", "text/plain; charset=utf-8")
            return
        srv = self.server
        with srv.lock:
            srv.count += 1
            nth = srv.count
        opts = srv.opts
        try:
            if opts.fail_first and time.monotonic() - srv.started < opts.fail_first:
                self.answer(503)    # what a draining server says
                return
            if nth <= opts.fail_count:
                if opts.fail_status == 503:
                    self.answer(503)
                    return
                raise Reject(opts.fail_status, "receiver: injected failure %d of %d" % (nth, opts.fail_count))
            if nth <= opts.echo_auth:
                # a server or proxy that quotes the credentials it refuses
                # (G's 401 body; not logged: the test looks for the token)
                quote = "'Authorization: %s'" % self.headers.get("Authorization", "")
                self.reject(Reject(401, "invalid credentials: " + ", ".join([quote] * opts.echo_repeat)))
                return
            rec = self.ingest(body)
        except Reject as e:
            if opts.verbose or not e.message.startswith("receiver: injected"):
                sys.stderr.write("receiver: %d %s\n" % (e.status, e.message))
            self.reject(e)
            return
        line = json.dumps(rec, sort_keys=True)
        with srv.lock:
            srv.log.write(line + "\n")
            srv.log.flush()
        self.answer(200)

    def auth(self, rec):
        opts = self.server.opts
        h = self.headers.get("Authorization")
        rec["auth"] = None
        if h:
            parts = h.split(" ")
            if len(parts) == 2 and parts[0].lower() == "bearer":
                rec["auth"], rec["token"] = "Bearer", parts[1]
            elif len(parts) == 2 and parts[0].lower() == "basic":
                try:
                    user, colon, pw = base64.b64decode(parts[1], validate=True).decode().partition(":")
                except (binascii.Error, UnicodeDecodeError):
                    colon = ""
                if not colon:
                    raise Reject(401, "invalid basic auth")
                rec["auth"], rec["user"], rec["password"] = "Basic", user, pw
            else:
                raise Reject(401, "invalid credentials", raw=b'{"errors":["invalid credentials"]}\n')
        if opts.require_token and rec.get("token") != opts.require_token:
            raise Reject(401, "invalid credentials", raw=b'{"errors":["invalid credentials"]}\n')
        tenant = self.headers.get("X-Scope-OrgID")
        rec["tenant"] = tenant
        if tenant is not None:
            # dskit tenant.ValidTenantID
            if not tenant or len(tenant) > 150 or tenant in (".", "..") or \
                    not re.fullmatch(r"[A-Za-z0-9!\-_.*'()]+", tenant):
                raise Reject(401, "tenant ID is invalid")
        elif opts.require_tenant:
            raise Reject(401, "no org id")
        known = {"host", "user-agent", "accept", "content-type", "content-length",
                 "authorization", "x-scope-orgid", "expect", "transfer-encoding"}
        rec["headers"] = {k.lower(): v for k, v in self.headers.items() if k.lower() not in known}
        rec["user_agent"] = self.headers.get("User-Agent")

    def ingest(self, body):
        opts = self.server.opts
        rec = {"path": self.path.split("?", 1)[0]}
        self.auth(rec)
        if len(body) > opts.max_body:
            raise Reject(413, "request body too large: http: request body too large")
        raw = self.path.split("?", 1)[1] if "?" in self.path else ""
        q, dropped = parse_query(raw)
        if "name" not in q or not q["name"][0]:
            raise Reject(400, "name: service name is required")
        name, app, tags = check_name(q["name"][0])
        if dropped:
            raise strict("query pairs Go drops: %r" % dropped)
        dup = [k for k, v in q.items() if len(v) > 1]
        if dup:
            raise strict("parameters given twice: %r" % dup)

        def param(k):
            return q[k][0].decode("utf-8", "replace") if k in q else None

        frm, until = param("from"), param("until")
        for k, v in (("from", frm), ("until", until)):
            if v is None or not re.fullmatch(r"[0-9]{10}", v):
                raise strict("%s=%r is not 10-digit Unix seconds" % (k, v))
        frm, until = int(frm), int(until)
        if frm % 10 or until != frm + 10:
            raise strict("window %d..%d is not 10 s aligned" % (frm, until))
        # G's ingestion window: reject_older_than 1h, reject_newer_than 10m
        now = time.time()
        if not now - 3600 < frm < now + 600:
            raise Reject(400, "profile timestamp %d is outside the ingestion window" % frm)
        rate = param("sampleRate")
        if rate is None or not re.fullmatch(r"[1-9][0-9]*", rate):
            raise strict("sampleRate=%r is not a positive integer" % rate)
        spy = param("spyName")
        if not spy or not re.fullmatch(r"[A-Za-z0-9_.\-]+", spy):
            raise strict("spyName=%r" % spy)
        if param("units") not in (None, "samples") or param("aggregationType") not in (None, "sum"):
            raise strict("units=%r aggregationType=%r" % (param("units"), param("aggregationType")))
        enc = self.headers.get("Content-Encoding")
        if enc and enc.lower() != "identity":
            raise strict("Content-Encoding %r: G ignores it on /ingest" % enc)

        # format selection: ingest_handler.go readInputRawDataFromRequest
        fmt, ctype = param("format"), self.headers.get("Content-Type", "")
        if fmt == "trie" or ctype == "binary/octet-stream+trie":
            kind = "trie"
        elif fmt in ("tree", "lines", "jfr", "pprof", "speedscope") or \
                ctype == "binary/octet-stream+tree" or "multipart/form-data" in ctype:
            raise strict("format %r / Content-Type %r: not what pyrospy sends" % (fmt, ctype))
        else:
            kind = "folded"
        if fmt != kind:
            raise strict("format=%r but the body is read as %s (Content-Type %r)" % (fmt, kind, ctype))
        want = "binary/octet-stream+trie" if kind == "trie" else "binary/octet-stream"
        if ctype != want:
            raise strict("Content-Type %r, expected %r" % (ctype, want))
        if not body:
            raise strict("empty body")
        pairs = parse_trie(body) if kind == "trie" else parse_folded(body)
        stacks = check_stacks(pairs)
        rec.update(name=name, app=app, tags=tags, **{"from": frm}, until=until,
                   sampleRate=int(rate), spyName=spy, format=kind, bytes=len(body),
                   samples=sum(stacks.values()), stacks=stacks, content_type=ctype)
        return rec


def free_port(host):
    s = socket.socket()
    s.bind((host, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log", required=True, help="append one JSON line per accepted request")
    ap.add_argument("--fail-first", type=float, default=0, metavar="SECS",
                    help="answer 503 (a draining server) for the first SECS seconds")
    ap.add_argument("--refuse-first", type=float, default=0, metavar="SECS",
                    help="do not accept connections for the first SECS seconds")
    ap.add_argument("--fail-count", type=int, default=0, metavar="N",
                    help="answer --fail-status to the first N requests")
    ap.add_argument("--fail-status", type=int, default=503)
    ap.add_argument("--require-tenant", action="store_true",
                    help="multi-tenant G: 401 without X-Scope-OrgID")
    ap.add_argument("--require-token", metavar="TOKEN", help="OG ingestion auth: Bearer TOKEN")
    ap.add_argument("--max-body", type=int, default=256 << 20, help="413 above (G's default)")
    ap.add_argument("--echo-auth", type=int, default=0, metavar="N",
                    help="answer 401 to the first N requests, quoting their Authorization "
                         "header in the message")
    ap.add_argument("--echo-repeat", type=int, default=1, metavar="K",
                    help="with --echo-auth: quote it K times")
    ap.add_argument("--verbose", action="store_true")
    opts = ap.parse_args()

    port = opts.port
    if opts.refuse_first:
        port = port or free_port(opts.host)
        print(port, flush=True)
        time.sleep(opts.refuse_first)
    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer.daemon_threads = True
    srv = ThreadingHTTPServer((opts.host, port), Handler)
    if not opts.refuse_first:
        print(srv.server_address[1], flush=True)
    srv.opts = opts
    srv.lock = threading.Lock()
    srv.count = 0
    srv.started = time.monotonic()
    srv.log = open(opts.log, "a", encoding="utf-8")
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
