# Hostile: asyncio tasks whose awaited-by links (3.14+: task_awaited_by,
# written through ctypes at the offsets the interpreter publishes, as in
# asynccycle.py) make a graph whose tree is cut at the depth limit many
# times over, each time above a dense mesh: a chain of 54 tasks ("top-0"
# awaits "top-1" ...), under it a ladder of 10 rungs of two tasks, each
# awaited by both of the rung above (1024 paths through it, each cut at
# its last rung, 63 tasks down), and under both tasks of the last rung
# argv[1] layers of argv[2] tasks ("mesh-L-I"), each awaited by every
# task of the layer above.  No cycle anywhere.  The tasks themselves are
# idle and never finish, so asyncio never reads the links.  Prints
# "ready" once they are set.
import asyncio
import ctypes
import sys

AWAITED_BY, IS_SET = 96, 109  # TaskObj, 3.14 and 3.15 (pyvm-structs/asyncio_tasks.c)
TOP, RUNGS, LAYERS, WIDTH = 54, 10, int(sys.argv[1]), int(sys.argv[2])
keep = []


async def idle(ev):
    await ev.wait()


def link(task, *awaiters):
    if len(awaiters) == 1:
        ctypes.c_void_p.from_address(id(task) + AWAITED_BY).value = id(awaiters[0])
        ctypes.c_char.from_address(id(task) + IS_SET).value = b"\0"
    else:
        link_set(task, set(awaiters))


def link_set(task, s):
    keep.append(s)
    ctypes.c_void_p.from_address(id(task) + AWAITED_BY).value = id(s)
    ctypes.c_char.from_address(id(task) + IS_SET).value = b"\1"


async def main():
    ev = asyncio.Event()
    new = lambda name: asyncio.create_task(idle(ev), name=name)
    top = [new("top-%d" % i) for i in range(TOP)]
    rungs = [(new("rung-%d-a" % i), new("rung-%d-b" % i)) for i in range(RUNGS)]
    mesh = [[new("mesh-%d-%d" % (i, j)) for j in range(WIDTH)] for i in range(LAYERS)]
    await asyncio.sleep(0)
    for i in range(1, TOP):
        link(top[i], top[i - 1])
    for t in rungs[0]:
        link(t, top[-1])
    for i in range(1, RUNGS):
        for t in rungs[i]:
            link(t, *rungs[i - 1])
    for t in mesh[0]:
        link(t, *rungs[-1])
    for i in range(1, LAYERS):
        above = set(mesh[i - 1])
        for t in mesh[i]:
            link_set(t, above)
    print("ready", flush=True)
    await ev.wait()


asyncio.run(main())
