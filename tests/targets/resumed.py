# Frames that leave the stack without a return (a generator's yield; a
# frame called back by C, under the C call's entry frame) and come back
# under another caller at the same depth: via_a and via_b each resume the
# generator, or call sorted() with a key, every other round, and spin()
# under it takes the same time in both.  tests/test_exact.c expects
# about half of spin()'s samples under each.
#     python3 resumed.py gen|key
import sys

MODE = sys.argv[1]


def spin():
    i = 0
    while i < 100000:
        i += 1


def gen():
    while True:
        spin()
        yield


def key(x):
    spin()
    return x


def via_a(g):
    if MODE == "gen":
        next(g)
    else:
        sorted([1], key=key)


def via_b(g):
    if MODE == "gen":
        next(g)
    else:
        sorted([1], key=key)


print("ready", flush=True)
g = gen()
while True:
    via_a(g)
    via_b(g)
