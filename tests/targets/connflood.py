# What any local user can do to `pyrospy serve' (tests/test_serve.c):
# hold N connections to 127.0.0.1:PORT that never send a byte, and open a
# new one for each that closes.  "ready" once N are open; runs until killed.
import selectors
import socket
import sys

port, want = int(sys.argv[1]), int(sys.argv[2])
sel = selectors.DefaultSelector()


def fill():
    while len(sel.get_map()) < want:
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
        except OSError:
            s.close()
            continue
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)


fill()
print("ready", flush=True)
while True:
    for key, _ in sel.select(timeout=1):
        s = key.fileobj
        try:
            data = s.recv(4096)
        except BlockingIOError:
            continue
        except OSError:
            data = b""
        if not data:
            sel.unregister(s)
            s.close()
    fill()
