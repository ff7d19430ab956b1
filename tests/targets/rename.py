# A thread renamed while it is profiled: "before-rename" for the first
# second after "ready", "after-rename" from then on.  And a thread that
# gets its name late: started by _thread (threading knows it not: no
# name), it names itself "late-name" one second after it started.  The
# ready line gives their native ids.
import _thread
import threading
import time

started = threading.Event()
late_started = threading.Event()
late_tid = []


def idle():
    started.set()
    while True:
        time.sleep(3600)


def late():
    late_tid.append(threading.get_native_id())
    late_started.set()
    time.sleep(1)
    # threading now knows it (a _DummyThread), by the name it is given
    threading.current_thread().name = "late-name"
    while True:
        time.sleep(3600)


t = threading.Thread(target=idle, name="before-rename", daemon=True)
t.start()
_thread.start_new_thread(late, ())
started.wait()
late_started.wait()
print("ready\t%d\t%d" % (t.native_id, late_tid[0]), flush=True)
time.sleep(1)
t.name = "after-rename"
while True:
    time.sleep(3600)
