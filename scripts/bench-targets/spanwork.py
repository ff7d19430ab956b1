# A root span every 10 ms around the seed's work (pyroscope.otel's
# processor on a minimal span): a new tag set at every span, for what
# spans cost pyrospy per sample.  Stops tagging past the registry's 8192
# sets (82 s): cost runs are shorter.
import os

from pyroscope.otel import PyroscopeSpanProcessor


class Context:
    __slots__ = ("trace_id", "span_id", "is_remote")

    def __init__(self):
        self.trace_id = int.from_bytes(os.urandom(16), "big")
        self.span_id = int.from_bytes(os.urandom(8), "big")
        self.is_remote = False


class Span:
    __slots__ = ("name", "context", "parent", "attributes")

    def __init__(self):
        self.name, self.context, self.parent, self.attributes = "unit", Context(), None, {}

    def set_attribute(self, key, value):
        self.attributes[key] = value


def work(n):
    i = 0
    while i < n:
        i += 1


proc = PyroscopeSpanProcessor()
print("ready", flush=True)
while True:
    s = Span()
    proc.on_start(s, None)
    work(100000)
    proc.on_end(s)
