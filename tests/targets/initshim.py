# Objects made in a loop: once `Point(i)` is specialised (CPython 3.13+,
# CALL_ALLOC_AND_ENTER_INIT), __init__ runs under a shim frame of the
# interpreter's (_Py_InitCleanup, named and filed "__init__") that no
# traceback shows.  Lines are fixed: tests/test_exact.c names them.
import sys


class Point:
    def __init__(self, x):
        s = 0
        for i in range(300):
            s += i * x
        self.s = s


def main():
    print("ready", flush=True)
    while True:
        Point(3)


main()
