# Threads with names: plain, with a space and non-ASCII, one renamed after
# it started, one whose OS name (prctl) differs from its Python name.  The
# ready line says what the program itself sees, per thread:
#   ready<TAB>tid:name-hex<TAB>...
# (hex of the UTF-8 bytes: the names are not ASCII; the test reads the OS
# names in /proc, which a chroot may not have).
import ctypes
import threading
import time

started = threading.Barrier(7)


def idle_named():
    started.wait()
    while True:
        time.sleep(3600)


def idle_os_named():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(15, b"os-custom", 0, 0, 0)  # PR_SET_NAME
    started.wait()
    while True:
        time.sleep(3600)


threads = [
    threading.Thread(target=idle_named, name="worker-3", daemon=True),
    threading.Thread(target=idle_named, name="a b w\u00f6rker \u2603", daemon=True),
    threading.Thread(target=idle_named, name="renamed-from", daemon=True),
    threading.Thread(target=idle_os_named, name="pyname-x", daemon=True),
    # 3.14+ cut the OS name at 15 bytes, here in mid-character
    threading.Thread(target=idle_named, name="\u00e4" * 10, daemon=True),
    # what must not reach a terminal: an escape sequence, a bidi override
    threading.Thread(target=idle_named, name="evil\x1b[31m\u202ex", daemon=True),
]
for t in threads:
    t.start()
started.wait()
threads[2].name = "renamed-to \u2713"
time.sleep(0.2)

fields = ["ready"]
for t in [threading.main_thread()] + threads:
    fields.append("%d:%s" % (t.native_id, t.name.encode().hex()))
print("\t".join(fields), flush=True)
while True:
    time.sleep(3600)
