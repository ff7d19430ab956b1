# Sampled for a second, then becomes the program argv[1] names (a shell
# whose file name drives a terminal): pyrospy says what it exec()'d.
import os
import sys
import time


def spin():
    i = 0
    while i < 20000:
        i += 1


print("ready", flush=True)
end = time.monotonic() + 1
while time.monotonic() < end:
    spin()
os.execv(sys.argv[1], [sys.argv[1], "-c", "while :; do sleep 1; done"])
