# Three busy threads, each for good inside its own vehicle tag.
import threading
import time

import pyrospy


def work():
    i = 0
    while True:
        i += 1


def car():
    with pyrospy.tag_wrapper({"vehicle": "car"}):
        work()


def bike():
    with pyrospy.tag_wrapper({"vehicle": "bike"}):
        work()


def scooter():
    with pyrospy.tag_wrapper({"vehicle": "scooter"}):
        work()


for f in (car, bike, scooter):
    threading.Thread(target=f, daemon=True).start()
time.sleep(0.2)
print("ready", flush=True)
while True:
    time.sleep(1)
