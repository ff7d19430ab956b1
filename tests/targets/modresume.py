# A module's code object run over and over (exec of compiled code, as
# template engines do) while another thread holds the GIL most of the time:
# the module's frame waits for the GIL at its first instruction, which
# CPython 3.11+ numbers line 0 (RESUME; so that line 1 raises a line event).
import threading

code = compile("x = 1\n", "generated.py", "exec")


def spin():
    while True:
        pass


threading.Thread(target=spin, daemon=True).start()
print("ready", flush=True)
while True:
    exec(code, {})
