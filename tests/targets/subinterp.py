# A named main thread and a "worker" thread, each with a stack of its own,
# while two more threads run code in subinterpreters (3.12:
# _xxsubinterpreters, 3.13: _interpreters, 3.14+: concurrent.interpreters):
# "runner" a busy loop in one that names its thread "subloop" in its own
# threading module, "sleeper" a sleeping loop in one created last (the
# first on the runtime's list of interpreters) that never imports
# threading.  Each thread creates its interpreter, as
# interpreters.create().exec(...) does.  The ready line:
#   ready<TAB>main<TAB>worker<TAB>runner<TAB>sleeper<TAB>runner's-id<TAB>sleeper's-id
# (native thread ids, then the two subinterpreters' ids).
import os
import threading
import time

# each subinterpreter says on this pipe that it runs its loop
r, w = os.pipe()

SPIN = """
import os, threading
threading.current_thread().name = "subloop"
os.write(%d, b"x")

def subspin():
    while True:
        pass

subspin()
""" % w

SLEEP = """
import os, time
os.write(%d, b"x")

def subsleep():
    while True:
        time.sleep(0.01)

subsleep()
""" % w

try:
    from concurrent import interpreters

    def make(code):
        interp = interpreters.create()
        return interp.id, lambda: interp.exec(code)
except ImportError:
    try:
        import _interpreters as _i
    except ImportError:
        import _xxsubinterpreters as _i

    def make(code):
        iid = _i.create()
        return int(iid), lambda: _i.run_string(iid, code)

started = threading.Barrier(4)
ids = {}


def worker_wait():
    started.wait()
    while True:
        time.sleep(0.01)


# Each thread creates the interpreter it runs: 3.12 runs code in the
# thread state made by create(), with the ids of the thread that made it.
def runner_enter():
    ids["spin"], run = make(SPIN)
    started.wait()
    run()


def sleeper_enter():
    started.wait()  # made after runner's: first on the list
    ids["sleep"], run = make(SLEEP)
    run()


worker = threading.Thread(target=worker_wait, name="worker", daemon=True)
runner = threading.Thread(target=runner_enter, name="runner", daemon=True)
sleeper = threading.Thread(target=sleeper_enter, name="sleeper", daemon=True)
for t in (worker, runner, sleeper):
    t.start()
started.wait()
said = b""
while len(said) < 2:
    said += os.read(r, 2 - len(said))
time.sleep(0.3)
print("ready\t%d\t%d\t%d\t%d\t%d\t%d" % (threading.main_thread().native_id, worker.native_id,
                                          runner.native_id, sleeper.native_id, ids["spin"],
                                          ids["sleep"]), flush=True)


def main_wait():
    while True:
        time.sleep(0.01)


main_wait()
