# A task that renames itself on every turn of the loop (a loop that never
# rests) beside N idle tasks (argv[1], default 20) that never change: two
# reads of the task tree hardly ever agree.  dump --tasks shows what stayed
# the same, and says what it left out.  Prints "ready" once running.
import asyncio
import sys

forever = None


async def idle():
    await forever.wait()


async def ticker():
    n = 0
    me = asyncio.current_task()
    while True:
        n += 1
        me.set_name("tick-%d" % n)
        await asyncio.sleep(0)


async def main():
    global forever
    forever = asyncio.Event()
    idles = [asyncio.create_task(idle(), name="idle-%d" % i) for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 20)]
    t = asyncio.create_task(ticker(), name="tick-0")
    await asyncio.sleep(0.05)
    print("ready", flush=True)
    await asyncio.gather(t, *idles)


asyncio.run(main())
