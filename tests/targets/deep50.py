# A recursion 50 frames deep (the module's frame, 48 of rec, spin) that
# spins at the bottom; "ready" once there.
import sys


def spin():
    print("ready", flush=True)
    while True:
        pass


def rec(n):
    if n <= 1:
        spin()
    rec(n - 1)


rec(48)
