# The seed workload (seed.py: foo() does three times the work of bar())
# in the main thread, and baz() in a thread named "side": the html
# report's browser test (tests/test_report_html.c).
import threading


def work(n):
    i = 0
    while i < n:
        i += 1


def foo():
    work(75000)


def bar():
    work(25000)


def baz():
    while True:
        work(25000)


threading.Thread(target=baz, name="side", daemon=True).start()
print("ready", flush=True)
while True:
    foo()
    bar()
