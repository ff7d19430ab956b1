# Qualified names: methods, class methods, lambdas, comprehensions,
# generators and coroutines, each spinning long enough to be sampled.
import asyncio


def spin(n=20000):
    i = 0
    while i < n:
        i += 1


class Shop:
    def checkout(self):
        spin()

    @classmethod
    def report(cls):
        spin()


def gen():
    while True:
        spin()
        yield 1


async def coro():
    spin()


lam = lambda: spin()  # noqa: E731
g = gen()
print("ready", flush=True)
while True:
    Shop().checkout()
    Shop.report()
    lam()
    [spin() for _ in range(1)]
    next(g)
    asyncio.run(coro())
