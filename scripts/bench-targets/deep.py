# pyrospy bench target: T threads (default 1), each recursing until its
# stack is DEPTH frames deep (counting the module or thread entry frames),
# then spinning in a pure bytecode loop whose stack never changes.
#     python3 deep.py DEPTH [THREADS]
# Prints "ready" once every thread spins at the bottom of its recursion.
import sys
import threading

depth = int(sys.argv[1]) if len(sys.argv) > 1 else 50
nthreads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
sys.setrecursionlimit(depth + 1000)
lock = threading.Lock()
arrived = 0


def spin():
    global arrived
    with lock:
        arrived += 1
        if arrived == nthreads:
            print("ready", flush=True)
    i = 0
    while True:
        i += 1


def rec(n):
    if n <= 1:
        spin()
    else:
        rec(n - 1)


# frames above rec: <module> (1); a thread has run and _bootstrap_inner and
# _bootstrap (3) before the target function
if nthreads == 1:
    rec(max(1, depth - 2))
else:
    threads = [threading.Thread(target=rec, args=(max(1, depth - 4),), daemon=True)
               for _ in range(nthreads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
