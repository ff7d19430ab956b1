# Hostile: asyncio tasks whose awaited-by links (3.14+: task_awaited_by,
# at the offset the interpreter publishes, here written through ctypes)
# make a cycle no real program has: "self" says it awaits itself, "ping"
# and "pong" each other.  The tasks themselves are idle and never finish,
# so asyncio never reads the links.  Prints "ready" once they are set.
import asyncio
import ctypes

AWAITED_BY, IS_SET = 96, 109  # TaskObj, 3.14 and 3.15 (pyvm-structs/asyncio_tasks.c)


async def idle(ev):
    await ev.wait()


def link(task, awaiter):
    ctypes.c_void_p.from_address(id(task) + AWAITED_BY).value = id(awaiter)
    ctypes.c_char.from_address(id(task) + IS_SET).value = b"\0"


async def main():
    ev = asyncio.Event()
    me, ping, pong = (asyncio.create_task(idle(ev), name=n) for n in ("self", "ping", "pong"))
    await asyncio.sleep(0)
    link(me, me)
    link(ping, pong)
    link(pong, ping)
    print("ready", flush=True)
    await ev.wait()


asyncio.run(main())
