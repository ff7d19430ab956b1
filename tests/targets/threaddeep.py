# A thread (not the main one) 300 frames deep, spinning at the bottom: its
# frames fill more than one data stack chunk (3.11+), the second one
# mapped right below the thread's own C stack, whose lowest page glibc
# 2.42+ makes a guard region that /proc/PID/maps still shows readable.
import sys
import threading

sys.setrecursionlimit(5000)


def spin():
    while True:
        pass


def rec(n):
    if n == 1:
        spin()
    rec(n - 1)


t = threading.Thread(target=rec, args=(300,), daemon=True)
t.start()
print("ready", flush=True)
t.join()
