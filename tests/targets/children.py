# Every ~1.2 s a child that is busy for 1.0 s in child_work() and exits
# (1.0 s of wall time: on a loaded machine it waits its turn for a CPU,
# runnable, and is sampled all the same): a fork (multiprocessing's fork start method), then a Python
# started by subprocess.Popen, twice.  Exits when the last is done.
import multiprocessing
import subprocess
import sys
import time


def child_work():
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.0:
        for _ in range(1000):
            pass


if __name__ == "__main__":
    if sys.argv[1:] == ["child"]:
        child_work()
        sys.exit(0)
    print("ready", flush=True)
    time.sleep(1.0)		# for the profiler to attach
    fork = multiprocessing.get_context("fork")
    for i in range(4):
        if i % 2 == 0:
            p = fork.Process(target=child_work)
            p.start()
            p.join()
        else:
            subprocess.Popen([sys.executable, sys.argv[0], "child"]).wait()
        time.sleep(0.2)
