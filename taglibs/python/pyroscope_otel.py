# SPDX-License-Identifier: MIT
"""Span profiles for OpenTelemetry users, under pyrospy.

Code written for the pyroscope-otel package runs unchanged under
`pyrospy exec` (pyroscope.py makes this module `pyroscope.otel` too):

    from pyroscope.otel import PyroscopeSpanProcessor
    provider.add_span_processor(PyroscopeSpanProcessor())

For a local root span (no parent, or a remote one), from its start to its
end, the thread that started it carries the tags

    span_id     the span's id, 16 lowercase hex digits
    span_name   its name
    trace_id    its trace's id, 32 lowercase hex digits

and the span gets the attribute pyroscope.profile.id = its span_id, the
link Grafana follows from a trace to the profile.  Spans inside a root
span change nothing: their samples count for the root.

Only the SDK's SpanProcessor interface is used (on_start, on_end); the
OpenTelemetry SDK is imported when the class is first asked for, and only
to inherit from its SpanProcessor.  Each root span is a new tag set, held
until the span ends; pyrospy.py reuses the place of sets no longer held, so
only 8192 root spans open at the same time are the limit (past it, a span
is not tagged, never mis-tagged).
"""

import threading

import pyrospy

__all__ = ["PyroscopeSpanProcessor"]

PROFILE_ID_SPAN_ATTRIBUTE_KEY = "pyroscope.profile.id"
PROFILE_ID_PYROSCOPE_TAG_KEY = "span_id"
SPAN_NAME_PYROSCOPE_TAG_KEY = "span_name"
TRACE_ID_PYROSCOPE_TAG_KEY = "trace_id"

_get_ident = threading.get_ident
# (trace_id, span_id) of a root span -> (thread ident, set before, set
# while it runs, span id in hex); the SDK hands on_end a ReadableSpan, not the Span itself
_open = {}


def _is_root_span(span):
    parent = span.parent
    return parent is None or bool(getattr(parent, "is_remote", False))


def _start(span):
    ctx = span.context
    span_id = format(ctx.span_id, "016x")
    span.set_attribute(PROFILE_ID_SPAN_ATTRIBUTE_KEY, span_id)
    ident = _get_ident()
    with pyrospy._lock:
        old = pyrospy._tags_get(ident)
        tags = dict(pyrospy._parsed[old]) if old else {}
        tags[PROFILE_ID_PYROSCOPE_TAG_KEY] = span_id
        tags[SPAN_NAME_PYROSCOPE_TAG_KEY] = str(span.name)[:pyrospy._MAX_VALUE]
        tags[TRACE_ID_PYROSCOPE_TAG_KEY] = format(ctx.trace_id, "032x")
        new = pyrospy._set_of(tags)
        if new is None:
            return                      # no room for another set: untagged
        # the table's hold on old passes to _open
        pyrospy._hold(new)
        pyrospy._pyrospy_tags[ident] = new
        _open[(ctx.trace_id, ctx.span_id)] = (ident, old, new, span_id)
    if old is None and ident not in pyrospy._watched:
        pyrospy._watch(ident)


def _end(span):
    ctx = span.context
    with pyrospy._lock:
        got = _open.pop((ctx.trace_id, ctx.span_id), None)
        if got is None:
            return
        ident, old, new, span_id = got
        tags = pyrospy._pyrospy_tags
        if tags.get(ident) is new:
            tags[ident] = pyrospy._EMPTY if old is None else old
            pyrospy._release(new)
            return
        # the thread's tags changed since (another root span, a wrapper left
        # open): take this span's keys out of whatever is there now
        pyrospy._release(old)
        now = tags.get(ident)
        now = dict(pyrospy._parsed[now]) if now else {}
        if now.get(PROFILE_ID_PYROSCOPE_TAG_KEY) != span_id:
            return
        for k in (PROFILE_ID_PYROSCOPE_TAG_KEY, SPAN_NAME_PYROSCOPE_TAG_KEY,
                  TRACE_ID_PYROSCOPE_TAG_KEY):
            now.pop(k, None)
        s = pyrospy._set_of(now) if now else pyrospy._EMPTY
        if s is not None:
            pyrospy._put(ident, s)


def _make_class():
    try:
        from opentelemetry.sdk.trace import SpanProcessor as base
    except ImportError:
        base = object

    class PyroscopeSpanProcessor(base):
        """A span processor that tags each local root span's samples with its id."""

        def on_start(self, span, parent_context=None):
            if _is_root_span(span):
                _start(span)

        def on_end(self, span):
            if _open:
                _end(span)

        def shutdown(self):
            pass

        def force_flush(self, timeout_millis=30000):
            return True

    PyroscopeSpanProcessor.__module__ = "pyroscope.otel"
    return PyroscopeSpanProcessor


def __getattr__(name):
    # the class is made on first use: importing pyroscope costs no SDK import
    if name == "PyroscopeSpanProcessor":
        cls = globals().get("_cls")
        if cls is None:
            with pyrospy._lock:
                cls = globals().get("_cls")
                if cls is None:
                    cls = globals()["_cls"] = _make_class()
        return cls
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
