# The seed workload: foo() does three times the work of bar().
def work(n):
    i = 0
    while i < n:
        i += 1


def foo():
    work(75000)


def bar():
    work(25000)


print("ready", flush=True)
while True:
    foo()
    bar()
