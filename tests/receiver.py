#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A test receiver for pyrospy's uploads: the server side of Pyroscope's
legacy POST /ingest API, as /work/shared/research/pyroscope-ingest.md
describes it from the sources of both servers (Grafana Pyroscope, "G", and
the last pyroscope-io server, "OG"), and of G's push API
(POST /push.v1.PusherService/Push, Connect unary, section 8 there).

It answers what the servers answer (status codes and G's JSON error
bodies) and accepts only what both accept: the name is parsed by ports of
both servers' state machines with their own character sets, the query the
way Go's url.ParseQuery reads it, folded bodies the way ParseGroups does
(bufio.Scanner's 64 KiB line limit included) and trie bodies the way
transporttrie.IterateRaw does.  Protobuf (the PushRequest, and the pprof
of format=pprof and of each pushed sample) is decoded by hand, as strictly
as Go's proto3 unmarshalling: malformed wire data and invalid UTF-8 in a
string are refused.  On top of that it refuses, with 400 and a message
starting "receiver:", what a server would take but silently alter or lose
(a line it would stop at, a tag it would drop, an empty frame...): those
are client bugs.

Each accepted request appends one JSON line to --log per series: one for
folded and trie, one per sample label set of a pprof (as G splits it), one
per RawProfileSeries of a push.

    python3 tests/receiver.py --port 0 --log FILE [--fail-first SECS]
        [--refuse-first SECS] [--fail-count N] [--fail-status CODE]
        [--require-tenant] [--require-token TOKEN] [--max-body BYTES]
        [--echo-auth N [--echo-repeat K]] [--old-server]

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
import zlib
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

# keys a client must not send (see the study, 7.6), and the labels
# pyrospy's pushes carry besides the tags
RESERVED_KEYS = {"profile_id", "pyroscope_spy", "service_name", "app_name",
                 "process_runtime_name", "process_runtime_version"}
PUSH_LABELS = {"__name__", "service_name", "process_runtime_name", "process_runtime_version"}

PUSH_PATH = "/push.v1.PusherService/Push"
MAX_PROFILE = 4 << 20       # G: max_profile_size_bytes, uncompressed
MAX_LABEL_NAME = 1024       # G: validation.max-label-name-length
MAX_SYMBOL = 65535          # G: max_profile_symbol_value_length (cut beyond)


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


def param_of(q, k):
    return q[k][0].decode("utf-8", "replace") if k in q else None


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


# --- protobuf, by hand -------------------------------------------------------

def pb_varint(b, pos):
    v, shift = 0, 0
    for _ in range(10):
        if pos >= len(b):
            raise Reject(400, "proto: unexpected EOF")
        c = b[pos]
        pos += 1
        v |= (c & 0x7f) << shift
        if c < 0x80:
            if v >= 1 << 64:
                raise Reject(400, "proto: integer overflow")
            return v, pos
        shift += 7
    raise Reject(400, "proto: integer overflow")


def pb_fields(b):
    """(field, wire, value) of a message: ints for varints, bytes otherwise."""
    pos, out = 0, []
    while pos < len(b):
        key, pos = pb_varint(b, pos)
        field, wire = key >> 3, key & 7
        if field == 0 or field >= 1 << 29:
            raise Reject(400, "proto: invalid field number")
        if wire == 0:
            v, pos = pb_varint(b, pos)
        elif wire == 2:
            n, pos = pb_varint(b, pos)
            if pos + n > len(b):
                raise Reject(400, "proto: unexpected EOF")
            v, pos = bytes(b[pos:pos + n]), pos + n
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            if pos + n > len(b):
                raise Reject(400, "proto: unexpected EOF")
            v, pos = bytes(b[pos:pos + n]), pos + n
        else:
            raise Reject(400, "proto: cannot parse reserved wire type")
        out.append((field, wire, v))
    return out


def pb_string(v, what):
    if not isinstance(v, bytes):
        raise Reject(400, "proto: %s: wrong wire type" % what)
    try:
        return v.decode("utf-8")
    except UnicodeDecodeError:
        # Go's proto3 unmarshalling of a string field
        raise Reject(400, "proto: %s: string field contains invalid UTF-8" % what)


def pb_uints(wire, v, what):
    """A repeated integer field's occurrence, packed or not."""
    if wire == 0:
        return [v]
    if wire != 2:
        raise Reject(400, "proto: %s: wrong wire type" % what)
    out, pos = [], 0
    while pos < len(v):
        x, pos = pb_varint(v, pos)
        out.append(x)
    return out


def pb_int64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def pb_message(b, spec, what):
    """Fields of b by spec {field: (name, kind, repeated)}; unknown ones refused."""
    out = {name: [] if rep else None for name, _, rep in spec.values()}
    for field, wire, v in pb_fields(b):
        if field not in spec:
            raise strict("%s: unknown field %d" % (what, field))
        name, kind, rep = spec[field]
        if kind == "uints":
            vals = pb_uints(wire, v, what + "." + name)
        elif kind == "int":
            if wire != 0:
                raise Reject(400, "proto: %s.%s: wrong wire type" % (what, name))
            vals = [v]
        elif kind == "string":
            vals = [pb_string(v, what + "." + name)]
        else:
            if wire != 2:
                raise Reject(400, "proto: %s.%s: wrong wire type" % (what, name))
            vals = [v]
        if rep:
            out[name].extend(vals)
        else:
            out[name] = vals[-1]
    return out


# profile.proto (github.com/google/pprof), the fields a CPU profile uses
PPROF = {1: ("sample_type", "bytes", True), 2: ("sample", "bytes", True),
         3: ("mapping", "bytes", True), 4: ("location", "bytes", True),
         5: ("function", "bytes", True), 6: ("string_table", "string", True),
         7: ("drop_frames", "int", False), 8: ("keep_frames", "int", False),
         9: ("time_nanos", "int", False), 10: ("duration_nanos", "int", False),
         11: ("period_type", "bytes", False), 12: ("period", "int", False),
         13: ("comment", "uints", True), 14: ("default_sample_type", "int", False)}
VALUE_TYPE = {1: ("type", "int", False), 2: ("unit", "int", False)}
SAMPLE = {1: ("location_id", "uints", True), 2: ("value", "uints", True),
          3: ("label", "bytes", True)}
LABEL = {1: ("key", "int", False), 2: ("str", "int", False), 3: ("num", "int", False),
         4: ("num_unit", "int", False)}
LOCATION = {1: ("id", "int", False), 2: ("mapping_id", "int", False),
            3: ("address", "int", False), 4: ("line", "bytes", True),
            5: ("is_folded", "int", False)}
LINE = {1: ("function_id", "int", False), 2: ("line", "int", False)}
FUNCTION = {1: ("id", "int", False), 2: ("name", "int", False), 3: ("system_name", "int", False),
            4: ("filename", "int", False), 5: ("start_line", "int", False)}


def pprof_frame(name, file, line):
    """As pyrospy's text formats show a frame (out_frame_text)."""
    if not file:
        return name
    return "%s (%s:%d)" % (name, file, line) if line > 0 else "%s (%s)" % (name, file)


def check_pprof(raw, what):
    """A pprof as G reads and validates it (pprof.RawFromBytes, ValidateProfile),
    plus what pyrospy promises.  Returns (rate, {label set: {stack: count}},
    time_nanos, duration_nanos)."""
    if raw[:2] != b"\x1f\x8b":
        raise strict("%s: the pprof is not gzipped" % what)
    d = zlib.decompressobj(16 + 15)
    try:
        body = d.decompress(raw, MAX_PROFILE + 1)
        if len(body) > MAX_PROFILE:
            raise Reject(400, "the profile with labels '%s' exceeds the size limit "
                         "(max_profile_size_byte, actual: >%d, limit: %d)"
                         % (what, MAX_PROFILE, MAX_PROFILE))
        body += d.flush()
    except zlib.error as e:
        raise Reject(400, "failed to decompress profile: %s" % e)
    if not d.eof:
        raise Reject(400, "failed to decompress profile: unexpected EOF")
    if d.unused_data:
        raise strict("%s: bytes after the gzip member" % what)
    p = pb_message(body, PPROF, "Profile")
    st = p["string_table"]
    if not st or st[0] != "":
        raise Reject(400, "malformed profile: string_table[0] must be ''")

    def s(i, ctx):
        if not 0 <= i < len(st):
            raise strict("%s: string index %d out of range" % (ctx, i))
        return st[i]

    if len(p["sample"]) > MAX_STACKS:
        raise Reject(400, "the profile with labels '%s' exceeds the samples count limit "
                     "(max_profile_stacktrace_samples, actual: %d, limit: %d)"
                     % (what, len(p["sample"]), MAX_STACKS))
    types = [pb_message(v, VALUE_TYPE, "ValueType") for v in p["sample_type"]]
    for t in types:
        if "-" in s(t["type"] or 0, "sample_type"):
            raise Reject(400, "sample type contains -")
    names = [(s(t["type"] or 0, "type"), s(t["unit"] or 0, "unit")) for t in types]
    if names != [("samples", "count"), ("cpu", "nanoseconds")]:
        raise strict("%s: sample types %r" % (what, names))
    pt = pb_message(p["period_type"] or b"", VALUE_TYPE, "ValueType")
    if (s(pt["type"] or 0, "period_type"), s(pt["unit"] or 0, "period_type")) != ("cpu", "nanoseconds"):
        raise strict("%s: period type is not cpu/nanoseconds" % what)
    period = p["period"] or 0
    rate = round(1e9 / period) if period > 0 else 0
    if not rate or 10 ** 9 // rate != period:
        raise strict("%s: period %d ns is not 1e9 / a rate" % (what, period))
    funcs = {}
    for v in p["function"]:
        f = pb_message(v, FUNCTION, "Function")
        if not f["id"]:
            raise Reject(400, "function id is 0")
        if f["id"] in funcs:
            raise strict("%s: function id %d twice" % (what, f["id"]))
        funcs[f["id"]] = (s(f["name"] or 0, "Function.name"), s(f["filename"] or 0, "Function.filename"))
    locs = {}
    for v in p["location"]:
        loc = pb_message(v, LOCATION, "Location")
        if not loc["id"]:
            raise Reject(400, "location id is 0")
        if loc["id"] in locs:
            raise strict("%s: location id %d twice" % (what, loc["id"]))
        frames = []
        for lv in loc["line"]:
            ln = pb_message(lv, LINE, "Line")
            if ln["function_id"] not in funcs:
                raise strict("%s: line of unknown function %r" % (what, ln["function_id"]))
            name, file = funcs[ln["function_id"]]
            frames.append(pprof_frame(name, file, pb_int64(ln["line"] or 0)))
        if not frames:
            raise strict("%s: location %d without a line" % (what, loc["id"]))
        # the lines of a location are inlined calls, the caller last
        locs[loc["id"]] = list(reversed(frames))
    if any(len(x.encode()) > MAX_SYMBOL for x in st):
        raise strict("%s: a string of over %d bytes (the server cuts it)" % (what, MAX_SYMBOL))
    out = {}
    for v in p["sample"]:
        smp = pb_message(v, SAMPLE, "Sample")
        if len(smp["value"]) != len(types):
            raise Reject(400, "malformed profile: %d values for %d sample types"
                         % (len(smp["value"]), len(types)))
        count, cpu = (pb_int64(x) for x in smp["value"])
        if count <= 0 or cpu != count * period:
            raise strict("%s: sample values %d, %d (period %d)" % (what, count, cpu, period))
        if not smp["location_id"]:
            raise strict("%s: sample without a location" % what)
        if len(smp["location_id"]) > MAX_DEPTH:
            raise strict("stack of %d frames: the server truncates it to %d"
                         % (len(smp["location_id"]), MAX_DEPTH))
        stack = []
        for lid in reversed(smp["location_id"]):
            if lid not in locs:
                raise strict("%s: unknown location %d" % (what, lid))
            stack += locs[lid]
        labels = {}
        for lv in smp["label"]:
            lab = pb_message(lv, LABEL, "Label")
            k, val = s(lab["key"] or 0, "Label.key"), s(lab["str"] or 0, "Label.str")
            if k in labels:
                raise strict("%s: sample label %r twice" % (what, k))
            check_tag(k, val)
            labels[k] = val
        key = json.dumps(labels, sort_keys=True)
        text = ";".join(stack)
        if any(ord(c) < 0x20 or ord(c) == 0x7f for c in text):
            raise strict("control character in %r" % text[:200])
        series = out.setdefault(key, {})
        series[text] = series.get(text, 0) + count
    return rate, out, p["time_nanos"] or 0, p["duration_nanos"] or 0


def check_tag(k, v):
    """A tag pyrospy sends as a label: what both servers take unaltered."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) or len(k) > MAX_LABEL_NAME:
        raise strict("tag key %r is not [A-Za-z_][A-Za-z0-9_]*" % k)
    if k.startswith("__") or k in RESERVED_KEYS or k == "thread":
        raise strict("tag key %r is reserved (or a per-thread label)" % k)
    if not v or go_trim(v) != v or len(v.encode()) > MAX_LABEL_VALUE:
        raise strict("value of tag %r is empty, too long or has white space" % k)
    if any(ord(c) < 0x20 or ord(c) == 0x7f for c in v):
        raise strict("value of tag %r holds a control character" % k)


# push.proto and types.proto (api/push/v1, api/types/v1)
PUSH_REQUEST = {1: ("series", "bytes", True)}
RAW_SERIES = {1: ("labels", "bytes", True), 2: ("samples", "bytes", True),
              3: ("annotations", "bytes", True)}
LABEL_PAIR = {1: ("name", "string", False), 2: ("value", "string", False)}
RAW_SAMPLE = {1: ("raw_profile", "bytes", False), 2: ("ID", "string", False)}


def check_labels(pairs):
    """validation.ValidateLabels, after the distributor's own additions."""
    names = [n for n, _ in pairs]
    ls = dict(pairs)
    text = "{" + ", ".join('%s="%s"' % (n, v) for n, v in sorted(pairs)) + "}"
    if not pairs:
        raise Reject(400, "error at least one label pair is required per profile")
    if len(pairs) > MAX_LABEL_NAMES:
        raise Reject(400, "profile series '%s' has %d label names; limit %d"
                     % (text, len(pairs), MAX_LABEL_NAMES))
    if not re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", ls.get("__name__", "")):
        raise Reject(400, "invalid labels '%s' with error: invalid metric name" % text)
    if not ls.get("service_name"):
        raise Reject(400, "invalid labels '%s' with error: service name is not provided" % text)
    last = None
    for n, v in sorted(pairs):
        if len(n) > MAX_LABEL_NAME:
            raise Reject(400, "profile with labels '%s' has label name too long: '%s'" % (text, n))
        if len(v.encode()) > MAX_LABEL_VALUE:
            raise Reject(400, "profile with labels '%s' has label value too long: '%s'" % (text, v))
        if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", n):
            raise Reject(400, "invalid labels '%s' with error: invalid label name '%s'" % (text, n))
        if n == last:
            raise Reject(400, "profile with labels '%s' has duplicate label name: '%s'" % (text, n))
        last = n
    if len(set(names)) != len(names):
        raise Reject(400, "profile with labels '%s' has duplicate label name" % text)
    return ls


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

    def route(self):
        path = self.path.split("?", 1)[0]
        if path == PUSH_PATH or path.endswith(PUSH_PATH):
            return "push"
        if path == "/ingest" or path.endswith("/ingest"):
            return "ingest"
        return None

    def do_GET(self):
        self.answer(405 if self.route() else 404, b"")

    do_PUT = do_DELETE = do_PATCH = do_GET

    def do_POST(self):
        body = self.read_body()
        route = self.route()
        if route == "push" and self.server.opts.old_server:
            route = None
        if not route:
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
            recs = self.push(body) if route == "push" else self.ingest(body)
        except Reject as e:
            if opts.verbose or not e.message.startswith("receiver: injected"):
                sys.stderr.write("receiver: %d %s\n" % (e.status, e.message))
            self.reject(e)
            return
        with srv.lock:
            for rec in recs:
                srv.log.write(json.dumps(rec, sort_keys=True) + "\n")
            srv.log.flush()
        if route == "push":
            # an empty PushResponse
            self.answer(200, b"", "application/proto")
        else:
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
                 "authorization", "x-scope-orgid", "expect", "transfer-encoding",
                 "connect-protocol-version"}
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
        q_name = q["name"][0]
        if param_of(q, "format") == "pprof":
            name, app, tags = None, None, None
        else:
            name, app, tags = check_name(q_name)
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
        elif fmt == "pprof" and ctype == "binary/octet-stream":
            return self.ingest_pprof(rec, q_name, frm, until, int(rate), spy, body)
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
        return [rec]

    def ingest_pprof(self, rec, raw_name, frm, until, rate, spy, body):
        """format=pprof: G reads the body as a (gzipped) pprof, the whole name
        is the service name, and the samples' labels make the series."""
        try:
            name = raw_name.decode("utf-8")
        except UnicodeDecodeError:
            raise strict("name is not valid UTF-8")
        labels = parse_name(name, "G")
        parse_name(name, "OG")
        if list(labels) != ["__name__"] or labels["__name__"] != name:
            raise strict("name %r: with format=pprof the tags go in sample labels" % name)
        if name.endswith(".cpu"):
            raise strict("name %r: G would take the .cpu for part of the service name" % name)
        try:
            prate, series, t, d = check_pprof(body, name)
        except Reject as e:
            # G answers 422 to whatever fails in a pprof on /ingest
            raise Reject(422 if e.status == 400 and not e.message.startswith("receiver:")
                         else e.status, e.message, raw=e.raw)
        if t != frm * 10 ** 9 or d != (until - frm) * 10 ** 9:
            raise strict("time_nanos %d duration_nanos %d, want the window %d..%d"
                         % (t, d, frm, until))
        if prate != rate:
            raise strict("sampleRate=%d but the pprof's period says %d Hz" % (rate, prate))
        out = []
        for key, stacks in series.items():
            r = dict(rec)
            r.update(name=name, app=name, tags=json.loads(key), **{"from": frm}, until=until,
                     sampleRate=rate, spyName=spy, format="pprof", bytes=len(body),
                     samples=sum(stacks.values()), stacks=stacks,
                     content_type=self.headers.get("Content-Type"))
            out.append(r)
        return out

    def push(self, body):
        """POST /push.v1.PusherService/Push: Connect unary, binary proto."""
        opts = self.server.opts
        rec = {"path": self.path.split("?", 1)[0], "protocol": "push"}
        if "?" in self.path:
            raise strict("a query string on the push route")
        # connect-go: a media type it does not serve is 415, no body
        ctype = self.headers.get("Content-Type", "")
        if ctype != "application/proto":
            raise Reject(415, "unsupported content type %r" % ctype, raw=b"")
        ver = self.headers.get("Connect-Protocol-Version")
        if ver is None:
            raise strict("no Connect-Protocol-Version header")
        if ver != "1":
            raise Reject(400, 'connect-protocol-version must be "1": got "%s"' % ver)
        enc = self.headers.get("Content-Encoding")
        if enc and enc.lower() not in ("identity", "gzip"):
            raise Reject(400, "unknown compression %r" % enc, code="unimplemented")
        if enc and enc.lower() == "gzip":
            raise strict("Content-Encoding gzip: pyrospy gzips each pprof, not the request")
        self.auth(rec)
        if len(body) > opts.max_body:
            raise Reject(413, "request body too large: http: request body too large")
        req = pb_message(body, PUSH_REQUEST, "PushRequest")
        if not req["series"]:
            raise Reject(400, "no profiles received")
        now = time.time()
        out = []
        for sv in req["series"]:
            ser = pb_message(sv, RAW_SERIES, "RawProfileSeries")
            pairs = []
            for lv in ser["labels"]:
                lab = pb_message(lv, LABEL_PAIR, "LabelPair")
                pairs.append((lab["name"] or "", lab["value"] or ""))
            if not any(n == "service_name" for n, _ in pairs):
                # the distributor puts it in; pyrospy always sends it
                raise strict("series without service_name (the server says 'unspecified')")
            ls = check_labels(pairs)
            if ls["__name__"] != "process_cpu":
                raise strict("__name__ %r, want process_cpu" % ls["__name__"])
            tags = {k: v for k, v in ls.items() if k not in PUSH_LABELS}
            for k, v in tags.items():
                check_tag(k, v)
            if ser["annotations"]:
                raise strict("annotations: not what pyrospy sends")
            if not ser["samples"]:
                raise strict("series without samples")
            for smp in ser["samples"]:
                raw = pb_message(smp, RAW_SAMPLE, "RawSample")
                if not raw["raw_profile"]:
                    raise Reject(400, "empty profile")
                rate, series, t, d = check_pprof(raw["raw_profile"], ls["service_name"])
                if t % (10 * 10 ** 9) or d != 10 * 10 ** 9:
                    raise strict("time_nanos %d duration_nanos %d: not a 10 s aligned window"
                                 % (t, d))
                frm, until = t // 10 ** 9, t // 10 ** 9 + 10
                # G's ingestion window: reject_older_than 1h, reject_newer_than 10m
                if not now - 3600 < frm < now + 600:
                    raise Reject(400, "profile timestamp %d is outside the ingestion window" % frm)
                # tags belong in the series, but for span_id: G groups the
                # samples without it and keeps it with them (span profiles);
                # a series label span_id would make every span a series
                if "span_id" in tags:
                    raise strict("span_id as a series label: G reads span profiles from the "
                                 "sample label, and each span would be a series")
                first = True
                for key, stacks in series.items():
                    sl = json.loads(key)
                    if set(sl) - {"span_id"}:
                        raise strict("sample labels in a push: %r (tags belong in the series, "
                                     "span_id alone in the samples)" % key)
                    if "span_id" in sl and not re.fullmatch(r"[0-9a-f]{16}", sl["span_id"]):
                        raise strict("span_id %r: not 16 lowercase hex digits" % sl["span_id"])
                    r = dict(rec)
                    r.update(labels=ls, tags=dict(tags, **sl), sample_labels=sl,
                             app=ls["service_name"], **{"from": frm}, until=until,
                             sampleRate=rate, format="pprof",
                             bytes=len(raw["raw_profile"]) if first else 0,
                             samples=sum(stacks.values()), stacks=stacks, content_type=ctype,
                             runtime=[ls.get("process_runtime_name"),
                                      ls.get("process_runtime_version")])
                    first = False
                    out.append(r)
        return out


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
    ap.add_argument("--old-server", action="store_true",
                    help="the last pyroscope-io server: no push route (404)")
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
