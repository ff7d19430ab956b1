# Hostile tags: what a buggy or malicious program could leave where
# pyrospy reads.  Through the helper: a 1 MB value, a lone surrogate, the
# characters that end a Pyroscope name.  Behind the helper's back: a raw
# 1 MB set, broken separators, control characters.
import threading

import pyrospy


def work(n):
    i = 0
    while i < n:
        i += 1


def helper_side():
    work(50000)


def raw_side():
    work(50000)


big = "x" * (1 << 20)
raw = "k\x1f" + "y" * (1 << 20) + "\x1e\x1f\x1e=\x1fv\x1ea}b,c;d\nq\x1fz\x1e\x01\x02\x1f\x7f"
# (pyrospy reads any str the table holds; raw keeps it alive)
ident = threading.get_ident()
print("ready", flush=True)
while True:
    with pyrospy.tag_wrapper({"big": big, "bad\udcff": "\udcff", "a}b,c=d\n;": "}{,;=\n"}):
        helper_side()
    pyrospy._pyrospy_tags[ident] = raw
    raw_side()
    pyrospy._pyrospy_tags[ident] = ""
