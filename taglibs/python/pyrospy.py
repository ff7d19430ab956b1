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
costs a few dictionary operations under a lock and does nothing else.

What pyrospy reads (keep in step with src/pyreader.c):

  _pyrospy_tags   dict: threading.get_ident() of a thread (0: the whole
                  process) -> the tag set in force there, a str "key US
                  value RS key US value..." (US = \\x1f, RS = \\x1e).
                  An ident is its own hash, so pyrospy matches the table's
                  hash column against the threads it samples.  A thread
                  leaving its last wrapper keeps its key, with the empty
                  set: the table then keeps its place in memory, and
                  pyrospy reads it in the same syscall as the rest.
  _pyrospy_epoch  array('Q') of one word: how many tag sets were reclaimed
                  so far.  A reclaimed set's str is kept alive for
                  _QUARANTINE more reclaims (the word goes up before the
                  oldest kept str is let go), so while this word has moved
                  by less than that, a str pyrospy found in the table (and
                  cached by address) is still the same str.

At most _MAX_SETS tag sets exist at once.  A set is held by the table
entries, the wrappers and the open spans that use it; one no longer held
stays registered (a wrapper entered again finds it) until a new set needs
its place, the oldest first.  So a program never runs out of sets unless
_MAX_SETS are in use at the same time; past that, new ones are ignored
(samples keep the tags around them, never wrong ones).

(An older layout, which pyrospy still reads, had _pyrospy_sets, an
append-only list of every set, and stopped at 8192 sets for good.  It is
not defined here, so that an older pyrospy, which would cache a reused
address for good, finds no tags rather than wrong ones.)
"""

import array
import collections
import os
import threading

__all__ = ["tag_wrapper", "set_tags", "add_tags", "remove_tags", "get_tags"]

_US, _RS = "\x1f", "\x1e"
_MAX_SETS = 8192            # tag sets at once; past it new ones are ignored
_QUARANTINE = 1024          # reclaims a reclaimed set's str outlives (pyrospy reads 512)
_MAX_VALUE = 1024           # characters kept of a value (pyrospy cuts there too)

_EMPTY = ""
_pyrospy_tags = {}
_pyrospy_epoch = array.array("Q", [0])
_interned = {_EMPTY: _EMPTY}    # set str -> the same str: the registered sets
_parsed = {_EMPTY: {}}          # set str -> dict
_refs = {}                  # set str -> holders (table entries, wrappers, spans)
_idle = collections.OrderedDict()   # sets without holders, oldest first
_dead = collections.deque(maxlen=_QUARANTINE)   # reclaimed strs, kept alive
_merged = {}                # (set str or None, items) -> set str
_watched = set()            # idents whose thread-local holds a _Sentinel
_lock = threading.RLock()   # every change of a set's holders (re-entered: a
                            # _Sentinel may go while its thread holds it)
_get_ident = threading.get_ident
_tags_get = _pyrospy_tags.get
_local = threading.local()


def _hold(s):
    """One more holder of set s (lock held)."""
    if s:
        n = _refs.get(s, 0)
        if not n:
            _idle.pop(s, None)
        _refs[s] = n + 1


def _release(s):
    """One holder less of set s (lock held): without any, it may be reclaimed."""
    if s:
        n = _refs.get(s, 0) - 1
        if n > 0:
            _refs[s] = n
        elif n == 0:
            del _refs[s]
            _idle[s] = None


def _reclaim():
    """Give up the oldest set no one holds (lock held); False if none."""
    if not _idle:
        return False
    s, _ = _idle.popitem(last=False)
    del _interned[s]
    del _parsed[s]
    # first the epoch, then the str of QUARANTINE reclaims ago may go
    _pyrospy_epoch[0] += 1
    _dead.append(s)
    return True


def _set_of(tags):
    """The registered str for dict `tags` (str keys and values), or None
    (lock held; the caller holds it before letting the lock go: a new set
    is not in _idle until its last holder lets it go)."""
    s = _RS.join(k + _US + v for k, v in sorted(tags.items()))
    got = _interned.get(s)
    if got is None:
        if len(_interned) > _MAX_SETS and not _reclaim():
            return None
        _interned[s] = got = s
        _parsed[s] = dict(tags)
    return got


def _merge(old, items):
    """The set `old` (a str or None) updated with `items` (pairs), lock held."""
    tags = dict(_parsed[old]) if old else {}
    for k, v in items:
        tags[str(k)] = str(v)[:_MAX_VALUE]
    new = _set_of(tags)
    if new is None:
        new = old                       # too many sets: keep the outer tags
    if len(_merged) >= 4 * _MAX_SETS:
        _merged.clear()                 # some name reclaimed sets: start over
    _merged[(old, items)] = new
    return new


class _Sentinel:
    """Lives in a thread-local: when its thread ends, its tags go too."""

    __slots__ = ("ident",)

    def __init__(self, ident):
        self.ident = ident

    def __del__(self):
        try:
            with _lock:
                _watched.discard(self.ident)
                _release(_pyrospy_tags.pop(self.ident, None))
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
        with _lock:
            old = _tags_get(ident)
            new = _merged.get((old, self._items))
            if new is None or _interned.get(new) is not new:
                new = _merge(old, self._items)
            # the table's hold on old passes to _saved
            _hold(new)
            _pyrospy_tags[ident] = _EMPTY if new is None else new
        if old is None and ident not in _watched:
            _watch(ident)
        self._saved.append(old)
        self._ident = ident
        return self

    def __exit__(self, typ, value, tb):
        old = self._saved.pop()
        ident = self._ident
        with _lock:
            now = _tags_get(ident)
            _pyrospy_tags[ident] = _EMPTY if old is None else old
            _release(now)
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


def _put(ident, s):
    """Make set s (registered, or the empty one) the one in force on ident
    (lock held)."""
    _hold(s)
    _release(_pyrospy_tags.get(ident))
    _pyrospy_tags[ident] = s


def _thread_set(ident, tags):
    """Make dict `tags` the set in force on ident (0: process-wide)."""
    with _lock:
        if not tags:
            if ident in _pyrospy_tags:
                _put(ident, _EMPTY)
            return
        s = _set_of({str(k): str(v)[:_MAX_VALUE] for k, v in tags.items()})
        if s is None:
            return
        _put(ident, s)
    if ident == _get_ident() and ident not in _watched:
        _watch(ident)


def _thread_tags(ident):
    with _lock:
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
    # the child has one thread: the others' tags must not outlive them (and
    # the lock may have been held by one of them)
    global _lock
    _lock = threading.RLock()
    me = _get_ident()
    for ident in [i for i in _pyrospy_tags if i not in (0, me)]:
        _release(_pyrospy_tags.pop(ident, None))
    _watched.intersection_update((me,))


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)
