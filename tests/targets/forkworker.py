# A server that starts a thread, then forks a worker (as uWSGI and
# preforking servers do): the worker prints its pid, then waits in a
# "request" that sleeps.  The worker's main thread is the forking thread.
# A worker that dies before it prints makes the server say so and exit 1
# (the test then reports its status, not a silent exit).
import ctypes
import os
import sys
import threading
import time

threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
# the thread asleep, without the GIL, before the fork: a child forked
# while it held the GIL would wait for it for good (no thread there)
time.sleep(0.2)
# fork() from C, as uWSGI does: none of os.fork()'s hooks run in the child
pid = ctypes.CDLL(None).fork()
if pid == 0:
    print(os.getpid(), flush=True)

    def handle_request():
        time.sleep(3600)

    handle_request()
else:
    _, status = os.waitpid(pid, 0)
    sys.exit("forkworker.py: the worker %d ended before its request (status %#x)"
             % (pid, status))
