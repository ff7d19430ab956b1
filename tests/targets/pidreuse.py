# One of two processes on one pid (test_pidreuse.c): run as nobody, the
# target a user gives pyrospy; as root, the root job that gets its pid
# once it is gone, and must never be sampled or written into.  The root
# one checks the word CPython 3.15 keeps for out-of-process profilers,
# its thread's last_profiled_frame: 0 until a profiler writes it (the
# interpreter only moves it once set), and writes what it found into
# /tmp/pyrospy-pidreuse-PID-written.  Both have the same arguments and
# environment: started alike, their memory is laid out alike.
import ctypes
import os
import sys


def spin():
    x = 0
    for i in range(2000):
        x += i
    return x


def nobody_loop():
    while True:
        spin()


def profiled_word():
    """A function reading last_profiled_frame, or None before 3.15."""
    if sys.version_info < (3, 15):
        return None
    api = ctypes.pythonapi
    runtime = ctypes.addressof(ctypes.c_char.in_dll(api, "_PyRuntime"))
    # _Py_DebugOffsets opens _PyRuntime: its cookie, then at 224 (3.15)
    # offsetof(PyThreadState, last_profiled_frame)
    assert ctypes.string_at(runtime, 8) == b"xdebugpy"
    off = ctypes.c_uint64.from_address(runtime + 224).value
    api.PyThreadState_Get.restype = ctypes.c_void_p
    tstate = api.PyThreadState_Get()
    return lambda: ctypes.c_uint64.from_address(tstate + off).value


def root_only_secret_handler_for_payroll(word, report):
    if word and word():
        sys.exit("last_profiled_frame set before anything could write it")
    while True:
        spin()
        if word and word():
            with open(report, "w") as f:
                f.write("last_profiled_frame %#x\n" % word())
            word = None


if os.getuid() != 0:
    print("ready", flush=True)
    nobody_loop()
else:
    w = profiled_word()
    print("ready", flush=True)
    root_only_secret_handler_for_payroll(w, "/tmp/pyrospy-pidreuse-%d-written" % os.getpid())
