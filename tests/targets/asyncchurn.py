# Tasks that start and finish all the time (a spawner makes 50 at a time,
# each awaits twice and ends) beside 20 idle tasks that never change: what
# dump --tasks reads must never be torn.  Prints "ready" once running.
import asyncio

forever = None


async def idle():
    await forever.wait()


async def churn():
    await asyncio.sleep(0)
    await asyncio.sleep(0)


async def spawner():
    n = 0
    while True:
        for _ in range(50):
            n += 1
            asyncio.create_task(churn(), name="churn-%d" % n)
        await asyncio.sleep(0)


async def main():
    global forever
    forever = asyncio.Event()
    idles = [asyncio.create_task(idle(), name="idle-%d" % i) for i in range(20)]
    s = asyncio.create_task(spawner(), name="spawner")
    await asyncio.sleep(0.05)
    print("ready", flush=True)
    await asyncio.gather(s, *idles)


asyncio.run(main())
