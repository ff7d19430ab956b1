# A thread Python never sees: started by pthread_create from ctypes, with
# libc's sleep() as its start routine (it sleeps an hour and never enters
# Python), named "cworker" (the test finds its tid by that name): the
# kernel's name is inherited, so the main thread takes it for the while
# (pthread_setname_np would write /proc, which a chroot may lack).  The
# main thread waits.
import ctypes
import os
import time

PR_SET_NAME, PR_GET_NAME = 15, 16
libc = ctypes.CDLL(None, use_errno=True)
own = ctypes.create_string_buffer(16)
libc.prctl(PR_GET_NAME, own, 0, 0, 0)
libc.prctl(PR_SET_NAME, b"cworker", 0, 0, 0)
th = ctypes.c_ulong()
start = ctypes.cast(libc.sleep, ctypes.c_void_p)
err = libc.pthread_create(ctypes.byref(th), None, start, ctypes.c_void_p(3600))
libc.prctl(PR_SET_NAME, own, 0, 0, 0)
if err:
    raise SystemExit("cthread.py: pthread_create: %s" % os.strerror(err))
print("ready", flush=True)
while True:
    time.sleep(3600)
