# SPDX-License-Identifier: MIT
# Random recursion up to 4000 deep: each level calls one of eight
# functions, picked at random, so nearly every sample is a stack not seen
# before.  Prints "ready" once it runs.
import random
import sys

sys.setrecursionlimit(10000)
rnd = random.Random()


def step(depth):
    if depth <= 0:
        return 0
    return FUNCS[rnd.randrange(8)](depth - 1)


def r0(d):
    return step(d) + 1


def r1(d):
    return step(d) + 1


def r2(d):
    return step(d) + 1


def r3(d):
    return step(d) + 1


def r4(d):
    return step(d) + 1


def r5(d):
    return step(d) + 1


def r6(d):
    return step(d) + 1


def r7(d):
    return step(d) + 1


FUNCS = [r0, r1, r2, r3, r4, r5, r6, r7]
print("ready", flush=True)
while True:
    step(rnd.randrange(1000, 4000))
