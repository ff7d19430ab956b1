# SPDX-License-Identifier: MIT
"""Code written for the Pyroscope Python agent, run under pyrospy.

pyrospy exec puts this module ahead of the real one, so that an app
instrumented with `pyroscope.configure(...)` and `pyroscope.tag_wrapper`
is profiled from outside, unchanged.  configure() keeps the tags and
ignores everything else (server address, sample rate, ...): pyrospy's own
options decide those.  `pyroscope.otel` is pyroscope_otel.py: the span
processor of the pyroscope-otel package.
"""

import sys
import threading

import pyrospy
import pyroscope_otel as otel
from pyrospy import tag_wrapper

# import pyroscope.otel finds it here once pyroscope is imported
sys.modules[__name__ + ".otel"] = otel

__all__ = ["configure", "tag_wrapper", "add_thread_tag", "remove_thread_tag", "shutdown"]


def configure(tags=None, **ignored):
    if tags:
        pyrospy.add_tags(tags)


def _thread_args(args):
    # the agent's two APIs: (thread_id, key, value), and since its 1.0
    # (what pyroscope-otel 1.1 calls) (key, value) on the calling thread
    if len(args) == 2:
        return (threading.get_ident(),) + tuple(args)
    if len(args) == 3:
        return tuple(args)
    raise TypeError("expected (key, value) or (thread_id, key, value), got %d arguments"
                    % len(args))


def add_thread_tag(*args):
    thread_id, key, value = _thread_args(args)
    tags = pyrospy._thread_tags(thread_id)
    tags[key] = value
    pyrospy._thread_set(thread_id, tags)


def remove_thread_tag(*args):
    thread_id, key, value = _thread_args(args)
    tags = pyrospy._thread_tags(thread_id)
    tags.pop(str(key), None)
    pyrospy._thread_set(thread_id, tags)


def shutdown():
    pass
