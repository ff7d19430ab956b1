# Exits on its own after 1.5 s of main_work() while four daemon threads
# still run (waking every millisecond), and spins 0.5 s more in an atexit
# handler, at_exit_work(), as the interpreter shuts down around it.
import atexit
import threading
import time


def tick():
    while True:
        time.sleep(0.001)


def main_work():
    t = time.monotonic()
    while time.monotonic() - t < 1.5:
        pass


def at_exit_work():
    t = time.monotonic()
    while time.monotonic() - t < 0.5:
        pass


atexit.register(at_exit_work)
for _ in range(4):
    threading.Thread(target=tick, daemon=True).start()
junk = [{"k%d" % i: [i] * 10} for i in range(200000)]	# for the finalizer
print("ready", flush=True)
main_work()
