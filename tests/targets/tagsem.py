# Tag semantics: nested wrappers, an exception escaping a wrapper, and a
# thread that ends tagged, whose ident the thread `reused' then has.
import sys
import threading
import time

import pyrospy


def work(n):
    i = 0
    while i < n:
        i += 1


def nested_inner():
    work(30000)


def nested_outer():
    work(30000)


def boom():
    work(30000)
    raise ValueError("escapes the wrapper")


def after_boom():
    work(30000)


def reused():
    if threading.get_ident() != gone:
        return          # not the dead thread's ident: the next try may be
    while True:
        work(30000)


def ends_tagged():
    # tagged without a wrapper, and never untagged: the thread just ends
    pyrospy._thread_set(threading.get_ident(), {"job": "gone"})
    work(1000)


t = threading.Thread(target=ends_tagged)
t.start()
t.join()
gone = t.ident
for _ in range(20):
    # let the thread finish exiting: its stack then goes back to glibc's
    # cache, where the next thread finds it (and so gets its pthread_t)
    time.sleep(0.1)
    r = threading.Thread(target=reused, daemon=True)
    r.start()
    r.join(0.05)
    if r.is_alive():
        break
else:
    sys.exit("tagsem.py: no new thread got the ident of the one that ended")
print("ready", flush=True)
while True:
    with pyrospy.tag_wrapper({"vehicle": "car"}):
        with pyrospy.tag_wrapper({"vehicle": "bike", "region": "eu"}):
            nested_inner()
        nested_outer()
    try:
        with pyrospy.tag_wrapper({"route": "/boom"}):
            boom()
    except ValueError:
        pass
    after_boom()
