# A thread renamed while it is profiled: "before-rename" for the first
# second after "ready", "after-rename" from then on.  The ready line gives
# its native id.
import threading
import time

started = threading.Event()


def idle():
    started.set()
    while True:
        time.sleep(3600)


t = threading.Thread(target=idle, name="before-rename", daemon=True)
t.start()
started.wait()
print("ready\t%d" % t.native_id, flush=True)
time.sleep(1)
t.name = "after-rename"
while True:
    time.sleep(3600)
