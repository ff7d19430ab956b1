# A 10 000-deep recursion that spins at the bottom.
import sys

sys.setrecursionlimit(20000)


def spin():
    while True:
        pass


def rec(n):
    if n == 1:
        spin()
    rec(n - 1)


print("ready", flush=True)
rec(10000)
