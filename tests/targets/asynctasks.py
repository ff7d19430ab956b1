# asyncio tasks for dump --tasks: gather, TaskGroup (3.11+), nested tasks,
# an async generator, an eager task factory (3.12+), a task awaited by two
# others, and a second event loop in a thread of its own.  Every task has a
# name of its own and stays suspended; "ready" is printed once they all
# are.  argv[1], if given, is a number of extra idle tasks (the benchmark).
import asyncio
import sys
import threading

IDLE = int(sys.argv[1]) if len(sys.argv) > 1 else 0
forever = None


async def leaf_sleep():
    await forever.wait()


async def middle():
    await leaf_sleep()


async def gathered(i):
    await middle()


async def gatherer():
    await asyncio.gather(*[asyncio.create_task(gathered(i), name="gathered-%d" % i)
                           for i in range(2)])


async def grouped():
    await forever.wait()


async def group_owner():
    async with asyncio.TaskGroup() as tg:
        tg.create_task(grouped(), name="grouped-0")
        tg.create_task(grouped(), name="grouped-1")


async def inner_task():
    await forever.wait()


async def nested():
    await asyncio.create_task(inner_task(), name="nested-inner")


async def agen():
    yield 1
    await forever.wait()
    yield 2


async def agen_user():
    async for _ in agen():
        pass


async def shared():
    await forever.wait()


async def waiter(t):
    await t


async def idle():
    await forever.wait()


async def eager_owner():
    await asyncio.create_task(idle(), name="eager-child")


async def main(ready):
    global forever
    forever = asyncio.Event()
    loop = asyncio.get_running_loop()
    tasks = [
        asyncio.create_task(gatherer(), name="gatherer"),
        asyncio.create_task(nested(), name="nested"),
        asyncio.create_task(agen_user(), name="agen-user"),
    ]
    if hasattr(asyncio, "TaskGroup"):
        tasks.append(asyncio.create_task(group_owner(), name="group-owner"))
    s = asyncio.create_task(shared(), name="shared")
    tasks += [asyncio.create_task(waiter(s), name="waiter-a"),
              asyncio.create_task(waiter(s), name="waiter-b")]
    if hasattr(asyncio, "eager_task_factory"):
        loop.set_task_factory(asyncio.eager_task_factory)
        tasks.append(asyncio.create_task(eager_owner(), name="eager-owner"))
        loop.set_task_factory(None)
    for i in range(IDLE):
        tasks.append(asyncio.create_task(idle(), name="idle-%d" % i))
    for _ in range(5):
        await asyncio.sleep(0)
    ready.set()
    await asyncio.gather(*tasks)


async def thread_main(ready):
    global forever
    forever = asyncio.Event()
    t = asyncio.create_task(idle(), name="thread-idle")
    await asyncio.sleep(0)
    ready.set()
    await t


def in_thread(ready):
    asyncio.run(thread_main(ready), debug=False)


if __name__ == "__main__":
    other = threading.Event()
    threading.Thread(target=in_thread, args=(other,), name="loop-thread", daemon=True).start()
    other.wait()

    async def start():
        class Flag:
            def set(self):
                print("ready", flush=True)

        await main(Flag())

    asyncio.run(start())
