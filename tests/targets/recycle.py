# Run a new function every 0.2 s, each a fresh code object named f_N, and
# let the last one go first: the allocator may put the next one where the
# last one was.  Like template engines and eval-heavy code.
import sys
import time
import types


def template():
    t = time.time()
    while time.time() - t < 0.2:
        pass


print("ready", flush=True)
i = 0
while True:
    name = "f_%d" % i
    if sys.version_info >= (3, 11):
        code = template.__code__.replace(co_name=name, co_qualname=name)
    else:
        code = template.__code__.replace(co_name=name)
    f = types.FunctionType(code, globals(), name)
    f()
    del f, code
    i += 1
