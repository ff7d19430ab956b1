# Tag semantics: nested wrappers, an exception escaping a wrapper, and a
# thread that ends tagged, whose ident the next thread is likely to reuse.
import threading

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
    while True:
        work(30000)


def ends_tagged():
    # tagged without a wrapper, and never untagged: the thread just ends
    pyrospy._thread_set(threading.get_ident(), {"job": "gone"})
    work(1000)


t = threading.Thread(target=ends_tagged)
t.start()
t.join()
threading.Thread(target=reused, daemon=True).start()
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
