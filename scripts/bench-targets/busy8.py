# pyrospy bench target: an app of 8 busy threads (the agent's fleet rows,
# section 13), each in a pure bytecode loop of its own function, the GIL
# passed between them as CPython does.  Prints "ready" once all run.
#     python3 busy8.py
import threading
import time


def spin(n):
    i = 0
    while True:
        i += n


threads = [threading.Thread(target=spin, args=(k,), daemon=True) for k in range(8)]
for t in threads:
    t.start()
print("ready", flush=True)
while True:
    time.sleep(1)
