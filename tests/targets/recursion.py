# A 400-deep recursion that spins at the bottom.
import sys

sys.setrecursionlimit(5000)


def spin():
    while True:
        pass


def rec(n):
    if n == 1:
        spin()
    rec(n - 1)


if sys.argv[1:] == ["thread"]:
    # 300 deep in a thread of its own: its frames fill more than one data
    # stack chunk (3.11+), the second mapped right below the thread's C
    # stack, whose lowest page glibc 2.42+ makes a guard region that
    # /proc/PID/maps still shows readable
    import threading

    t = threading.Thread(target=rec, args=(300,), daemon=True)
    t.start()
    print("ready", flush=True)
    t.join()
print("ready", flush=True)
rec(400)
