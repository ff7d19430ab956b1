# A traced app: two threads, each running root spans around units of work
# (unit_T_I, with a nested span inside), and idle() outside any span.  The
# tracer is a minimal OpenTelemetry-like span API (the SDK is not in every
# Debian of the matrix): it calls the span processor the way the SDK does
# (on_start with the Span, on_end with a ReadableSpan made of it), or the
# SDK itself: span.py SECS sdk.
# Prints one line per span: "root unit_T_I SPAN_ID TRACE_ID ATTR" or
# "inner unit_T_I - - ATTR" (ATTR: pyroscope.profile.id, or "-").
import os
import sys
import threading
import time

from pyroscope.otel import PyroscopeSpanProcessor

UNITS = 6
SPIN = 0.3


class SpanContext:
    def __init__(self, trace_id, span_id, is_remote=False):
        self.trace_id, self.span_id, self.is_remote = trace_id, span_id, is_remote


class Span:
    def __init__(self, tracer, name, context, parent):
        self.name, self.context, self.parent = name, context, parent
        self.attributes = {}
        self._tracer = tracer

    def set_attribute(self, key, value):
        self.attributes[key] = value

    def end(self):
        # as the SDK does: on_end gets a ReadableSpan, another object
        self._tracer.processor.on_end(ReadableSpan(self))


class ReadableSpan:
    def __init__(self, span):
        self.name, self.context, self.parent = span.name, span.context, span.parent
        self.attributes = dict(span.attributes)


class Tracer:
    def __init__(self, processor):
        self.processor = processor
        self.local = threading.local()

    def start(self, name, remote_parent=None):
        stack = self.local.__dict__.setdefault("stack", [])
        parent = stack[-1].context if stack else remote_parent
        trace_id = parent.trace_id if parent else int.from_bytes(os.urandom(16), "big") | 1
        ctx = SpanContext(trace_id, int.from_bytes(os.urandom(8), "big") | 1)
        span = Span(self, name, ctx, parent)
        self.processor.on_start(span, parent_context=None)
        stack.append(span)
        return span

    def finish(self, span):
        self.local.stack.pop()
        span.end()


class SdkTracer:
    """The same on the OpenTelemetry SDK (argument "sdk"), where Debian has it."""

    def __init__(self, processor):
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider

        self.api = trace
        provider = TracerProvider()
        provider.add_span_processor(processor)
        self.tracer = provider.get_tracer("span")
        self.local = threading.local()

    def start(self, name, remote_parent=None):
        api = self.api
        stack = self.local.__dict__.setdefault("stack", [])
        if stack:
            parent = stack[-1]
        elif remote_parent:
            parent = api.NonRecordingSpan(api.SpanContext(
                remote_parent.trace_id, remote_parent.span_id, is_remote=True,
                trace_flags=api.TraceFlags(1)))
        else:
            parent = api.INVALID_SPAN
        span = self.tracer.start_span(name, context=api.set_span_in_context(parent))
        stack.append(span)
        return span

    def finish(self, span):
        self.local.stack.pop()
        span.end()


sdk = len(sys.argv) > 2 and sys.argv[2] == "sdk"
tracer = (SdkTracer if sdk else Tracer)(PyroscopeSpanProcessor())
lock = threading.Lock()
log = []


def spin(secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        pass


def inner_work():
    spin(SPIN / 2)


def make_unit(name):
    def unit():
        spin(SPIN / 2)
        inner = tracer.start("inner")
        inner_work()
        tracer.finish(inner)
        with lock:
            log.append("inner %s - - %s" % (name, inner.attributes.get("pyroscope.profile.id", "-")))
    # the frame's name is the code object's: one per unit
    code = unit.__code__.replace(co_name=name)
    if hasattr(code, "co_qualname"):
        code = code.replace(co_qualname=name)
    unit.__code__ = code
    unit.__name__ = unit.__qualname__ = name
    return unit


def idle():
    spin(0.1)


def worker(t):
    for i in range(UNITS):
        name = "unit_%d_%d" % (t, i)
        unit = make_unit(name)
        # the third unit of each thread continues a trace from elsewhere
        remote = SpanContext(0xabc0 + t, 0xdef0 + i, is_remote=True) if i == 2 else None
        span = tracer.start("unit-of-work", remote)
        unit()
        tracer.finish(span)
        with lock:
            log.append("root %s %016x %032x %s" % (name, span.context.span_id,
                                                  span.context.trace_id,
                                                  span.attributes.get("pyroscope.profile.id", "-")))
        idle()


time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 0.5)
threads = [threading.Thread(target=worker, args=(t,)) for t in range(2)]
for th in threads:
    th.start()
for th in threads:
    th.join()
print("\n".join(log), flush=True)
