# pyrospy bench target: a fixed CPU-bound workload, for the target slowdown.
#     python3 work.py REPS [PAUSE]
# Prints "ready", sleeps PAUSE seconds (default 0.5: time for a profiler to
# attach), runs REPS rounds of recursive fib (stacks ~25 deep that change
# all the time) and prints the seconds the work took (perf_counter).
import sys
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def work(reps):
    total = 0
    for _ in range(reps):
        total += fib(20)
    return total


reps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
print("ready", flush=True)
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0.5)
t0 = time.perf_counter()
work(reps)
print("%.6f" % (time.perf_counter() - t0), flush=True)
