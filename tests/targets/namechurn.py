# SPDX-License-Identifier: MIT
# Threads, eight at a time, each named afresh with 4000 random characters
# and gone after a short burst of work in churn_work(): nearly every
# sample is of a thread (a tid and a name) no profile has seen.  Prints
# "ready" once they run.
import random
import string
import threading

rnd = random.Random()


def churn_work():
    i = 0
    while i < 20000:
        i += 1


def churn():
    while True:
        threads = [threading.Thread(target=churn_work, daemon=True,
                                    name="".join(rnd.choices(string.ascii_letters, k=4000)))
                   for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


threading.Thread(target=churn, daemon=True).start()
print("ready", flush=True)
threading.Event().wait()
