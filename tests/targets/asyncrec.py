# asyncio tasks for record --async: every task runs a function of its own
# (work_<name>, busy on the CPU) and only there, so that a sample of that
# function must sit under that task and the chain of tasks awaiting it.
# argv[1] is the mode:
#   direct   main (Task-1) awaits "server", which awaits "handler-0", then
#            "handler-1", over and over; "ticker" runs beside them, awaited
#            by nobody
#   gather   "server" awaits asyncio.gather() of "handler-0" and "handler-1"
#   group    "server" runs "handler-0" and "handler-1" in a TaskGroup (3.11+)
#   thread   as direct, in a loop of a second thread ("loop-thread"); the
#            main thread sleeps
#   churn    "server" awaits short tasks "short-<k>" (k = 0, 1, 2), each
#            a few milliseconds long, one after the other: a new task at
#            nearly every sample
#   shared   "server" starts "handler-0" and awaits it with "waiter" (a
#            task awaiting it too): handler-0 is awaited by two tasks
#   eager    as direct, under asyncio.eager_task_factory (3.12+): each
#            handler's first round runs inside create_task(), in server's
#            step, before server awaits it
# "ready" is printed once the tasks run.
import asyncio
import sys
import threading
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "direct"


def spin(seconds):
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


def work_handler_0():
    return spin(0.004)


def work_handler_1():
    return spin(0.004)


def work_ticker():
    return spin(0.001 if MODE == "churn" else 0.004)


def work_short_0():
    return spin(0.001)


def work_short_1():
    return spin(0.001)


def work_short_2():
    return spin(0.001)


WORK = {"handler-0": work_handler_0, "handler-1": work_handler_1, "ticker": work_ticker,
        "short-0": work_short_0, "short-1": work_short_1, "short-2": work_short_2}


async def handler(name, rounds):
    work = WORK[name]
    for _ in range(rounds):
        work()
        await asyncio.sleep(0)


async def ticker():
    while True:
        work_ticker()
        await asyncio.sleep(0.001)


async def server():
    while True:
        if MODE in ("direct", "thread", "eager"):
            for k in range(2):
                await asyncio.create_task(handler("handler-%d" % k, 10), name="handler-%d" % k)
        elif MODE == "gather":
            await asyncio.gather(
                asyncio.create_task(handler("handler-0", 10), name="handler-0"),
                asyncio.create_task(handler("handler-1", 10), name="handler-1"))
        elif MODE == "group":
            async with asyncio.TaskGroup() as tg:
                for k in range(2):
                    tg.create_task(handler("handler-%d" % k, 10), name="handler-%d" % k)
        elif MODE == "shared":
            h = asyncio.create_task(handler("handler-0", 10), name="handler-0")

            async def wait_too():
                await h

            w = asyncio.create_task(wait_too(), name="waiter")
            await h
            await w
        elif MODE == "churn":
            for k in range(3):
                await asyncio.create_task(handler("short-%d" % k, 1), name="short-%d" % k)


async def main():
    if MODE == "eager":
        asyncio.get_running_loop().set_task_factory(asyncio.eager_task_factory)
    tick = asyncio.create_task(ticker(), name="ticker")
    serve = asyncio.create_task(server(), name="server")
    # awaited at once: no moment where server runs awaited by nobody
    asyncio.get_running_loop().call_later(0.05, lambda: print("ready", flush=True))
    await serve
    await tick


def run_loop():
    asyncio.run(main())


if MODE == "thread":
    th = threading.Thread(target=run_loop, name="loop-thread")
    th.start()
    while True:
        time.sleep(1)
else:
    run_loop()
