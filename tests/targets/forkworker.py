# A server that starts a thread, then forks a worker (as uWSGI and
# preforking servers do): the worker prints its pid, then waits in a
# "request" that sleeps.  The worker's main thread is the forking thread.
import ctypes
import os
import threading
import time

threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
# fork() from C, as uWSGI does: none of os.fork()'s hooks run in the child
pid = ctypes.CDLL(None).fork()
if pid == 0:
    print(os.getpid(), flush=True)

    def handle_request():
        time.sleep(3600)

    handle_request()
else:
    os.waitpid(pid, 0)
