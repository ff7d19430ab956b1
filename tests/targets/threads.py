# Four busy threads; the main thread sleeps in join().
import threading
import time


def busy0():
    while True:
        pass


def busy1():
    while True:
        pass


def busy2():
    while True:
        pass


def busy3():
    while True:
        pass


ts = [threading.Thread(target=f) for f in (busy0, busy1, busy2, busy3)]
for t in ts:
    t.daemon = True
    t.start()


def announce():
    # say "ready" once the main thread is surely asleep in join(), then
    # stay, asleep, so that the number of threads does not change
    time.sleep(0.5)
    print("ready", flush=True)
    while True:
        time.sleep(3600)


threading.Thread(target=announce, daemon=True).start()
ts[0].join()
