# Tag sets made and given up fast, far past the 8192 the helper keeps at
# once: two threads run NSPANS (argv[1]) root spans in all, span number N
# around unit_K (K = N % 64, a function of its own) with a nested span
# inside, and gap() outside any span.  MODE (argv[2]):
#   span  a minimal OpenTelemetry-like span API, calling the span
#         processor as the SDK does (on_end with another object)
#   sdk   the OpenTelemetry SDK itself, where Debian has it
#   wrap  no spans: pyrospy.tag_wrapper({"fn": "unit_K", "seq": "N"}), a
#         new tag set each time
# UNIT (argv[3], default 0.00015) is the seconds a unit spins, gap() a
# third of it.
# Prints one line per unit: "root N K SPAN_ID" (wrap: "wrap N K -"), so
# that each sample checks itself (tests/spanchurn-check): one in unit_K
# must carry span_name unit_K and the id of a span logged with K.
import itertools
import sys
import threading
import time

import pyrospy
from pyroscope.otel import PyroscopeSpanProcessor

NSPANS = int(sys.argv[1]) if len(sys.argv) > 1 else 30000
MODE = sys.argv[2] if len(sys.argv) > 2 else "span"
UNIT = float(sys.argv[3]) if len(sys.argv) > 3 else 0.00015
KINDS = 64


class Ctx:
    def __init__(self, trace_id, span_id):
        self.trace_id, self.span_id, self.is_remote = trace_id, span_id, False


class Span:
    def __init__(self, name, ctx, parent):
        self.name, self.context, self.parent = name, ctx, parent
        self.attributes = {}

    def set_attribute(self, key, value):
        self.attributes[key] = value


class Ended:
    def __init__(self, span):
        self.name, self.context, self.parent = span.name, span.context, span.parent


class MiniTracer:
    def __init__(self, processor):
        self.processor = processor
        self.ids = itertools.count(1)

    def start(self, name, parent=None):
        n = next(self.ids)
        trace_id = parent.trace_id if parent else (n << 64) | 0x5eed
        span = Span(name, Ctx(trace_id, (n * 0x9E3779B97F4A7C15) & (2**64 - 1) | 1), parent)
        self.processor.on_start(span, parent_context=None)
        return span

    def end(self, span):
        self.processor.on_end(Ended(span))


class SdkTracer:
    def __init__(self, processor):
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider

        self.api = trace
        provider = TracerProvider()
        provider.add_span_processor(processor)
        self.tracer = provider.get_tracer("spanchurn")

    def start(self, name, parent=None):
        api = self.api
        p = api.NonRecordingSpan(parent) if parent else api.INVALID_SPAN
        span = self.tracer.start_span(name, context=api.set_span_in_context(p))
        span.context_ = span.get_span_context()
        return span

    def end(self, span):
        span.end()


def span_ctx(span):
    return span.context_ if MODE == "sdk" else span.context


def spin(secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        pass


def make_unit(k):
    def unit():
        spin(UNIT)
    name = "unit_%d" % k
    code = unit.__code__.replace(co_name=name)
    if hasattr(code, "co_qualname"):
        code = code.replace(co_qualname=name)
    unit.__code__ = code
    return unit


def gap():
    spin(UNIT / 3)


UNITS = [make_unit(k) for k in range(KINDS)]
tracer = None if MODE == "wrap" else (SdkTracer if MODE == "sdk" else MiniTracer)(
    PyroscopeSpanProcessor())
numbers = itertools.count()
log = []


def worker():
    out = []
    while True:
        n = next(numbers)
        if n >= NSPANS:
            break
        k = n % KINDS
        if tracer is None:
            with pyrospy.tag_wrapper({"fn": "unit_%d" % k, "seq": str(n)}):
                UNITS[k]()
            out.append("wrap %d %d -" % (n, k))
        else:
            root = tracer.start("unit_%d" % k)
            inner = tracer.start("inner", span_ctx(root))
            UNITS[k]()
            tracer.end(inner)
            tracer.end(root)
            out.append("root %d %d %016x" % (n, k, span_ctx(root).span_id))
        gap()
    log.extend(out)


time.sleep(0.5)
threads = [threading.Thread(target=worker) for _ in range(2)]
for th in threads:
    th.start()
for th in threads:
    th.join()
print("\n".join(log), flush=True)
