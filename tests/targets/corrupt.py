# Scribbles on its own interpreter: each round compiles a new function,
# victim_N, points its code object's name (and qualified name) or file
# name at garbage, runs it for 0.1 s, and puts the pointers back.  Between
# rounds clean() runs for 0.1 s untouched.  Nothing of the interpreter's
# reads those pointers while the victim runs (code objects are not
# garbage collected, no exception is raised), so only an outside reader
# meets the garbage.
import ctypes
import gc
import time

SRC = """
def victim_%d():
    t = time.monotonic()
    while time.monotonic() - t < 0.1:
        pass
"""


def clean():
    t = time.monotonic()
    while time.monotonic() - t < 0.1:
        pass


def slots(obj, targets):
    """Offsets of the words of obj that hold the address of one of targets."""
    words = (ctypes.c_uint64 * 32).from_address(id(obj))
    want = {id(t) for t in targets}
    return [i for i in range(32) if words[i] in want]


# a str header that claims 2**40 characters
fake = (ctypes.c_uint64 * 8)(1, id(str), 1 << 40, 0, 0xffffffff, 0, 0, 0)
decoys = [ctypes.addressof(fake), 0, 8, 0xdeadbee1, 0x7ffffffff000, id([1, 2, 3]), id(3.5),
          ctypes.addressof(fake) + 4]
kept = []
print("ready", flush=True)
n = 0
while True:
    n += 1
    exec(SRC % n)
    f = globals()["victim_%d" % n]
    kept.append(f)
    code = f.__code__
    if n % 2:
        targets = [code.co_name, getattr(code, "co_qualname", code.co_name)]
    else:
        targets = [code.co_filename]
    words = (ctypes.c_uint64 * 32).from_address(id(code))
    where = slots(code, targets)
    saved = [words[i] for i in where]
    gc.disable()
    for i in where:
        words[i] = decoys[n % len(decoys)]
    f()
    for i, v in zip(where, saved):
        words[i] = v
    gc.enable()
    clean()
