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

import pyrospy
import pyroscope_otel as otel
from pyrospy import tag_wrapper

# import pyroscope.otel finds it here once pyroscope is imported
sys.modules[__name__ + ".otel"] = otel

__all__ = ["configure", "tag_wrapper", "add_thread_tag", "remove_thread_tag", "shutdown"]


def configure(tags=None, **ignored):
    if tags:
        pyrospy.add_tags(tags)


def add_thread_tag(thread_id, key, value):
    tags = pyrospy._thread_tags(thread_id)
    tags[key] = value
    pyrospy._thread_set(thread_id, tags)


def remove_thread_tag(thread_id, key, value):
    tags = pyrospy._thread_tags(thread_id)
    tags.pop(str(key), None)
    pyrospy._thread_set(thread_id, tags)


def shutdown():
    pass
