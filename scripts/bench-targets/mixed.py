# pyrospy bench target: a "realistic" profile, for memory and upload size.
#     python3 mixed.py [ROUTES]
# Prints "ready", then serves fake requests forever: each request takes one
# of ROUTES (default 40) routes, a fixed chain of 3 to 30 calls through a
# dozen middle-layer functions chosen once (seeded), ending in one of five
# leaf workloads chosen per request.  That gives a few thousand distinct
# stacks of varied depth, a bounded set as a real service has.
import random
import sys


def leaf_sum(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def leaf_sort(n):
    return sorted((i * 7919) % 1009 for i in range(n))


def leaf_str(n):
    return ",".join(str(i) for i in range(n // 4))


def leaf_dict(n):
    d = {}
    for i in range(n):
        d[i % 97] = d.get(i % 97, 0) + 1
    return d


def leaf_list(n):
    return [x for x in range(n) if x % 3]


LEAVES = [leaf_sum, leaf_sort, leaf_str, leaf_dict, leaf_list]


def call(path, i, leaf):
    if i == len(path):
        return LEAVES[leaf](2000)
    return MIDDLE[path[i]](path, i + 1, leaf)


def parse(path, i, leaf):
    return call(path, i, leaf)


def validate(path, i, leaf):
    return call(path, i, leaf)


def authorize(path, i, leaf):
    return call(path, i, leaf)


def load(path, i, leaf):
    return call(path, i, leaf)


def query(path, i, leaf):
    return call(path, i, leaf)


def transform(path, i, leaf):
    return call(path, i, leaf)


def render(path, i, leaf):
    return call(path, i, leaf)


def serialize(path, i, leaf):
    return call(path, i, leaf)


class Handler:
    def dispatch(self, path, i, leaf):
        return call(path, i, leaf)

    def middleware(self, path, i, leaf):
        return call(path, i, leaf)


H = Handler()
MIDDLE = [parse, validate, authorize, load, query, transform, render, serialize,
          H.dispatch, H.middleware, lambda p, i, l: call(p, i, l)]


def serve(routes):
    rng = random.Random(1)
    table = [[rng.randrange(len(MIDDLE)) for _ in range(rng.randint(3, 30))]
             for _ in range(routes)]
    n = 0
    while True:
        call(table[n % routes], 0, rng.randrange(len(LEAVES)))
        n += 1


print("ready", flush=True)
serve(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
