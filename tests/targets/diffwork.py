# Diff: foo and bar loop in turn, foo 3 units and bar 1 (DIFFWORK=base),
# or foo 1 and bar 3 (DIFFWORK=new), or both phases in turn, each tagged
# phase=base or phase=new (DIFFWORK=tags), or base for 2 s after "ready"
# and new from then on (DIFFWORK=switch).  A unit is tens of milliseconds:
# a round spans several of the test's 500 Hz ticks, and foo's share goes
# 75 % -> 25 %.
import os
import time

UNIT = 300000


def foo(n):
    i = 0
    while i < n:
        i += 1


def bar(n):
    i = 0
    while i < n:
        i += 1


mode = os.environ.get("DIFFWORK", "base")
if mode == "tags":
    import pyrospy
print("ready", flush=True)
switch_at = time.monotonic() + 2.0
while True:
    phase = mode
    if mode == "switch":
        phase = "base" if time.monotonic() < switch_at else "new"
    if phase == "base":
        foo(3 * UNIT)
        bar(UNIT)
    elif phase == "new":
        foo(UNIT)
        bar(3 * UNIT)
    else:
        with pyrospy.tag_wrapper({"phase": "base"}):
            foo(3 * UNIT)
            bar(UNIT)
        with pyrospy.tag_wrapper({"phase": "new"}):
            foo(UNIT)
            bar(3 * UNIT)
