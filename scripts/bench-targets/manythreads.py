# pyrospy bench target: N threads (default 16) each waiting 20 frames deep
# in Event.wait() (counting the thread's entry frames and those of
# threading.py), the main thread spinning in a pure bytecode loop.
#     python3 manythreads.py [N]
# Prints "ready" once every thread is parked at the bottom of its recursion.
import sys
import threading
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 16
ev = threading.Event()
lock = threading.Lock()
arrived = 0


def park():
    global arrived
    with lock:
        arrived += 1
    ev.wait()


def wait_at(depth):
    if depth:
        return wait_at(depth - 1)
    park()


# _bootstrap, _bootstrap_inner, run (3), wait_at (14), park, Event.wait,
# Condition.wait (3): 20
for _ in range(N):
    threading.Thread(target=wait_at, args=(13,), daemon=True).start()
while True:
    with lock:
        if arrived == N:
            break
    time.sleep(0.01)
time.sleep(0.2)     # the last ones from park() into the lock's wait
print("ready", flush=True)


def spin():
    x = 0
    while True:
        x += 1


spin()
