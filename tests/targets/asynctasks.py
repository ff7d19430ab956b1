# asyncio tasks for dump --tasks: gather, TaskGroup (3.11+), nested tasks,
# an async generator, an eager task factory (3.12+), a task awaited by two
# others, and a second event loop in a thread of its own.  Every task has a
# name of its own and stays suspended; "ready" is printed once they all
# are.  argv[1], if given, is a number of extra idle tasks (the benchmark);
# argv[2] a file where, once every loop is idle, the program writes what
# it sees itself: one line per task of asyncio.all_tasks(), name, then
# function, file and line of its coroutine (the frame Task.get_stack()
# gives) and of each coroutine it awaits (cr_await), tab-separated; after
# the name, "<by:A,B>": the tasks awaiting it, as the program's own objects
# say (a task's _fut_waiter, gather()'s _children, a TaskGroup's tasks),
# and "<thread:TID>", the native id of the thread running its loop.
import asyncio
import os
import sys
import threading
import time

IDLE = int(sys.argv[1]) if len(sys.argv) > 1 else 0
REPORT = sys.argv[2] if len(sys.argv) > 2 else None
forever = None
loops = []
natives = {}
groups = []


def awaiting(tasks):
    """{task: names of the tasks awaiting it}"""
    by = {t: set() for t in tasks}
    for p in tasks:
        w = p._fut_waiter
        for c in [w] + list(getattr(w, "_children", None) or []):
            if c in by:
                by[c].add(p.get_name())
    for tg in groups:
        for c in tg._tasks:
            by[c].add(tg._parent_task.get_name())
    return by


def report():
    time.sleep(0.3)
    lines = []
    tasks = [t for loop in loops for t in asyncio.all_tasks(loop)]
    by = awaiting(tasks)
    for loop in loops:
        for t in asyncio.all_tasks(loop):
            # get_stack() has the task's own coroutine; cr_await leads on
            # through the coroutines it awaits, outermost first
            fields = [t.get_name(), "<by:%s>" % ",".join(sorted(by[t])),
                      "<thread:%d>" % natives[loop]]
            stack = t.get_stack()
            c = t.get_coro()
            assert len(stack) == 1 and stack[0] is c.cr_frame
            while c is not None and getattr(c, "cr_frame", None) is not None:
                f = c.cr_frame
                code = f.f_code
                fields += [getattr(code, "co_qualname", code.co_name), code.co_filename,
                           str(f.f_lineno)]
                c = c.cr_await
            lines.append("\t".join(fields))
    with open(REPORT + ".tmp", "w") as out:
        out.write("".join(line + "\n" for line in sorted(lines)))
    os.rename(REPORT + ".tmp", REPORT)


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
        groups.append(tg)
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
    loops.append(asyncio.get_running_loop())
    natives[loops[-1]] = threading.get_native_id()
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
        loops.append(asyncio.get_running_loop())
        natives[loops[-1]] = threading.get_native_id()

        class Flag:
            def set(self):
                if REPORT:
                    threading.Thread(target=report, daemon=True).start()
                print("ready", flush=True)

        await main(Flag())

    asyncio.run(start())
