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


print("ready", flush=True)
rec(400)
