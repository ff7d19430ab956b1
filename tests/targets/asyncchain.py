# A linear chain of argv[1] asyncio tasks (2 at least), as a program that
# recurses through tasks makes one: "chain-N" (the main task) awaits
# "chain-N-1", which awaits "chain-N-2", ... down to "chain-1", which waits
# for an event that never comes.  No task awaits itself, however long the
# chain.  Prints "ready" once every task is started.
import asyncio
import sys

N = int(sys.argv[1])


async def chain(n, forever):
    if n == 1:
        print("ready", flush=True)
        await forever.wait()
    await asyncio.create_task(chain(n - 1, forever), name="chain-%d" % (n - 1))


async def main():
    asyncio.current_task().set_name("chain-%d" % N)
    await chain(N, asyncio.Event())


asyncio.run(main())
