# The process forks: the child spins in in_child(), the parent in
# in_parent().  Ready once both run.
import os


def spin():
    i = 0
    while True:
        i += 1


def in_child():
    spin()


def in_parent():
    spin()


r, w = os.pipe()
if os.fork() == 0:
    os.write(w, b"x")
    in_child()
os.read(r, 1)
print("ready", flush=True)
in_parent()
