# What a tag_wrapper costs the program: ns per `with` (entered and left),
# against a `with` of an empty class of the same shape.  Prints
# "tagged_ns empty_ns", medians of 5 runs.
import statistics
import time

import pyrospy


class Empty:
    __slots__ = ("tags",)

    def __init__(self, tags):
        self.tags = tags

    def __enter__(self):
        return self

    def __exit__(self, typ, value, tb):
        return False


def run(cls, n):
    t = time.perf_counter()
    for _ in range(n):
        with cls({"route": "/cart"}):
            pass
    return (time.perf_counter() - t) / n * 1e9


res = {pyrospy.tag_wrapper: [], Empty: []}
for _ in range(5):
    for cls in res:
        res[cls].append(run(cls, 200000))
print("%.0f %.0f" % (statistics.median(res[pyrospy.tag_wrapper]), statistics.median(res[Empty])))
