# Waiters that wake briefly and wait again at the same depth, in another
# function: N threads (argv[1], default 16) wait in park_0 while the phase
# is 0 and in park_1 while it is 1; the main thread flips the phase, waits
# until every waiter is parked in the new phase's function, then holds it
# under the process-wide tag phase=P (phase=moving around the flip).  A
# waiter's stack tagged phase=P always holds park_P.  On SIGTERM the wakes
# are written to argv[2] (a path) and the process exits.
import os
import signal
import sys
import threading
import time

import pyrospy

N = int(sys.argv[1]) if len(sys.argv) > 1 else 16
OUT = sys.argv[2] if len(sys.argv) > 2 else None
lock = threading.Lock()
flip = threading.Condition(lock)        # waiters wait on it for the phase
done = threading.Condition(lock)        # main waits on it for the waiters
phase = 0
parked = 0
wakes = 0


def park_0():
    global parked, wakes
    with lock:
        parked += 1
        if parked == N:
            done.notify()
        while phase == 0:
            flip.wait()
        wakes += 1


def park_1():
    global parked, wakes
    with lock:
        parked += 1
        if parked == N:
            done.notify()
        while phase == 1:
            flip.wait()
        wakes += 1


def waiter():
    while True:
        park_0()
        park_1()


def hold_0(secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        pass


def hold_1(secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        pass


def term(signum, frame):
    if OUT:
        with open(OUT + ".tmp", "w") as f:
            f.write("%d\n" % wakes)
        os.rename(OUT + ".tmp", OUT)
    os._exit(0)


def settle(secs):
    # a gap either side of the flip under phase=moving: a sample's stack and
    # tags are read apart (Ruby reads the process tags once a tick, before
    # its threads' stacks: a tick kept off the CPU for 12 ms beside other
    # work paired phase=0 read before the flip with waiters read after it)
    time.sleep(secs)


signal.signal(signal.SIGTERM, term)
for _ in range(N):
    threading.Thread(target=waiter, daemon=True).start()
with lock:
    while parked < N:
        done.wait()
pyrospy.set_tags({"phase": "0"})
print("ready", flush=True)
k = 0
while True:
    (hold_0 if phase == 0 else hold_1)(0.004 + 0.001 * (k % 12))
    k += 1
    pyrospy.set_tags({"phase": "moving"})
    settle(0.025)
    with lock:
        phase ^= 1
        parked = 0
        flip.notify_all()
        while parked < N:
            done.wait()
    settle(0.002)
    pyrospy.set_tags({"phase": str(phase)})
