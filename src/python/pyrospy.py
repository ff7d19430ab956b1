# SPDX-License-Identifier: MIT
"""Tags for pyrospy, the out-of-process profiler.

    import pyrospy

    with pyrospy.tag_wrapper({"route": "/cart"}):
        handle()                       # these samples carry route=/cart

    @pyrospy.tag_wrapper({"job": "mail"})
    def send(): ...

    pyrospy.set_tags({"region": "eu"}) # process-wide, every thread

Nothing runs in the background: pyrospy reads the marks from this
process's memory while it samples it.  Without pyrospy watching, a wrapper
costs a few dictionary operations and does nothing else.

What pyrospy reads (keep in step with src/pyreader.c):

  _pyrospy_sets   list of every tag set used so far, each a str
                  "key US value RS key US value..." (US = \\x1f,
                  RS = \\x1e); append-only, so a str found there stays
                  alive, and means the same, for good
  _pyrospy_tags   dict: threading.get_ident() of a thread (0: the whole
                  process) -> the str of _pyrospy_sets in force there.
                  An ident is its own hash, so pyrospy matches the table's
                  hash column against the threads it samples.  A thread
                  leaving its last wrapper keeps its key, with the empty
                  set: the table then keeps its place in memory, and
                  pyrospy reads it in the same syscall as the rest.
"""

import os
import threading

__all__ = ["tag_wrapper", "set_tags", "add_tags", "remove_tags", "get_tags"]

_US, _RS = "\x1f", "\x1e"
_MAX_SETS = 8192            # distinct tag sets kept; past it new ones are ignored
_MAX_VALUE = 1024           # characters kept of a value (pyrospy cuts there too)

_EMPTY = ""
_pyrospy_sets = [_EMPTY]
_pyrospy_tags = {}
_interned = {_EMPTY: _EMPTY}    # set str -> the same str, from _pyrospy_sets
_parsed = {_EMPTY: {}}          # set str -> dict
_merged = {}                # (set str or None, items) -> set str
_watched = set()            # idents whose thread-local holds a _Sentinel
_lock = threading.Lock()    # new sets only; the hot path takes no lock
_get_ident = threading.get_ident
_tags_get = _pyrospy_tags.get
_merged_get = _merged.get
_local = threading.local()


def _set_of(tags):
    """The registered str for dict `tags` (str keys and values), or None."""
    s = _RS.join(k + _US + v for k, v in sorted(tags.items()))
    got = _interned.get(s)
    if got is None:
        with _lock:
            got = _interned.get(s)
            if got is None:
                if len(_pyrospy_sets) >= _MAX_SETS:
                    return None
                _pyrospy_sets.append(s)
                _parsed[s] = dict(tags)
                _interned[s] = got = s
    return got


def _merge(old, items):
    """The set `old` (a str or None) updated with `items` (pairs)."""
    tags = dict(_parsed[old]) if old else {}
    for k, v in items:
        tags[str(k)] = str(v)[:_MAX_VALUE]
    new = _set_of(tags)
    if new is None:
        new = old                       # too many sets: keep the outer tags
    if len(_merged) < 4 * _MAX_SETS:
        _merged[(old, items)] = new
    return new


class _Sentinel:
    """Lives in a thread-local: when its thread ends, its tags go too."""

    __slots__ = ("ident",)

    def __init__(self, ident):
        self.ident = ident

    def __del__(self):
        try:
            _watched.discard(self.ident)
            _pyrospy_tags.pop(self.ident, None)
        except Exception:
            pass


def _watch(ident):
    _watched.add(ident)
    _local.s = _Sentinel(ident)


class tag_wrapper:
    """Tag what runs inside: a `with` block, or a decorated function.

    Wrappers nest (the inner one adds keys and wins on the same key) and
    restore the tags before them on the way out, exceptions included.  One
    wrapper object serves one thread at a time; a decorated function makes
    a new one per call, so it is safe everywhere.
    """

    __slots__ = ("_items", "_saved", "_ident")

    def __init__(self, tags):
        self._items = tuple(tags.items() if type(tags) is dict else dict(tags).items())
        self._saved = []

    def __enter__(self):
        ident = _get_ident()
        old = _tags_get(ident)
        new = _merged_get((old, self._items))
        if new is None:
            new = _merge(old, self._items)
        if new is not old:
            _pyrospy_tags[ident] = new
            if old is None and ident not in _watched:
                _watch(ident)
        self._saved.append(old)
        self._ident = ident
        return self

    def __exit__(self, typ, value, tb):
        old = self._saved.pop()
        _pyrospy_tags[self._ident] = _EMPTY if old is None else old
        return False

    def __call__(self, fn):
        items = dict(self._items)

        def wrapped(*args, **kwargs):
            with tag_wrapper(items):
                return fn(*args, **kwargs)

        wrapped.__name__ = getattr(fn, "__name__", "wrapped")
        wrapped.__qualname__ = getattr(fn, "__qualname__", wrapped.__name__)
        wrapped.__doc__ = getattr(fn, "__doc__", None)
        wrapped.__wrapped__ = fn
        return wrapped


def _thread_set(ident, tags):
    """Make dict `tags` the set in force on ident (0: process-wide)."""
    if not tags:
        if ident in _pyrospy_tags:
            _pyrospy_tags[ident] = _EMPTY
        return
    s = _set_of({str(k): str(v)[:_MAX_VALUE] for k, v in tags.items()})
    if s is not None:
        _pyrospy_tags[ident] = s
        if ident == _get_ident() and ident not in _watched:
            _watch(ident)


def _thread_tags(ident):
    s = _tags_get(ident)
    return dict(_parsed[s]) if s else {}


def get_tags():
    """The process-wide tags, as a dict."""
    return _thread_tags(0)


def set_tags(tags):
    """Replace the process-wide tags (a wrapper's tags win over them)."""
    _thread_set(0, dict(tags))


def add_tags(tags):
    """Add to (or change) the process-wide tags."""
    t = get_tags()
    t.update(tags)
    set_tags(t)


def remove_tags(*keys):
    """Remove process-wide tags by key."""
    t = get_tags()
    for k in keys:
        t.pop(str(k), None)
    set_tags(t)


def _after_fork():
    # the child has one thread: the others' tags must not outlive them
    me = _get_ident()
    for ident in [i for i in _pyrospy_tags if i not in (0, me)]:
        _pyrospy_tags.pop(ident, None)
    _watched.intersection_update((me,))


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
