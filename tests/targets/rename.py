# A thread renamed while it is profiled: "before-rename" for the first
# second after "ready", "after-rename" from then on.  A thread that gets
# its name late: started by _thread (threading knows it not: no name), it
# names itself "late-name" one second after it started.  And one renamed
# and back: "first-name", "second-name" from 0.5 s after ready, then
# "first-name" again from 2 s on.  The ready line gives their native ids.
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
started.clear()
back = threading.Thread(target=idle, name="first-name", daemon=True)
back.start()
started.wait()
print("ready\t%d\t%d\t%d" % (t.native_id, late_tid[0], back.native_id), flush=True)
time.sleep(0.5)
back.name = "second-name"
time.sleep(0.5)
t.name = "after-rename"
time.sleep(1)
back.name = "first-name"
while True:
    time.sleep(3600)
