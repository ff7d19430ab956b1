# The cyclic garbage collector runs much of the time: a live heap of
# 300 000 tracked lists, collected over and over from collect().  compute()
# allocates nothing the collector tracks, and a second thread sleeps.


import gc
import threading
import time

KEEP = [[i] for i in range(300000)]


def collect():
    gc.collect()


def compute():
    s = 0
    for i in range(100000):
        s += i * i
    return s


def idle():
    while True:
        time.sleep(1)


threading.Thread(target=idle, daemon=True).start()
print("ready", flush=True)
while True:
    collect()
    compute()
