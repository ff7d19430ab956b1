# The main thread under one tag set for good, from before pyrospy attaches,
# while other threads come and go under tags of their own: the tag table
# changes all the time, and grows and shrinks (it moves in memory).
import threading
import time

import pyrospy


def held():
    i = 0
    while True:
        i += 1


def visitor(n):
    with pyrospy.tag_wrapper({"visitor": str(n)}):
        for _ in range(200):
            pass


def churn():
    n = 0
    while True:
        batch = [threading.Thread(target=visitor, args=(n + k,)) for k in range(16)]
        for t in batch:
            t.start()
        for t in batch:
            t.join()
        n = (n + 16) % 4096
        time.sleep(0.0005)


threading.Thread(target=churn, daemon=True).start()
with pyrospy.tag_wrapper({"where": "main"}):
    time.sleep(0.2)
    print("ready", flush=True)
    held()
