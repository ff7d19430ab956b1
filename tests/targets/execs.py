# Busy in before_exec() for 1.5 s, then exec()s: argv[1] "sleep" runs
# /bin/sleep (no interpreter), "self" this interpreter on seed.py.
import os
import sys
import time


def before_exec():
    t = time.monotonic()
    while time.monotonic() - t < 1.5:
        pass


print("ready", flush=True)
before_exec()
if sys.argv[1] == "sleep":
    os.execv("/bin/sleep", ["sleep", "30"])
seed = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seed.py")
os.execv(sys.executable, [sys.executable, seed])
