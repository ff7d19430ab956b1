# Recurse 20 deep and return, over and over: stacks change all the time.
# Lines matter to tests/test_exact.c: the call is on line 8, the loop on 13.


def recurse(x):
    if x == 0:
        return
    recurse(x - 1)


print("ready", flush=True)
while True:
    recurse(20)
