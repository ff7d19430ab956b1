# A caller held off its call while its callee runs: the state a torn read
# of a stack puts together (a caller read before it called, under a callee
# frame of another moment).  No running program has it: a frame stays at
# its call while its callee runs.  CPython 3.11 to 3.13 (the frame layout).
# Lines matter to tests/test_exact.c: caller's condition is on line 28.
import ctypes
import dis
import sys
import threading


def callee():
    f = sys._getframe(1)
    # PyFrameObject: the object header, f_back, then f_frame, the
    # _PyInterpreterFrame, whose prev_instr (3.11, 3.12) or instr_ptr
    # (3.13) is at 56
    iframe = ctypes.c_void_p.from_address(id(f) + object.__basicsize__ + 8).value
    instr = ctypes.c_void_p.from_address(iframe + 56)
    start = instr.value - f.f_lasti
    instr.value = start + next(i.offset for i in dis.get_instructions(caller)
                               if i.positions.lineno == 28)
    print("ready", flush=True)
    while True:
        pass


def caller(x):
    if x == 0:
        return
    callee()


def spin():
    while True:
        pass


threading.Thread(target=spin, daemon=True).start()
caller(1)
