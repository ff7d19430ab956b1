# Four busy threads; the main thread sleeps in join().
import threading


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
print("ready", flush=True)
ts[0].join()
