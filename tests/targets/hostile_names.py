# Names that would drive a terminal (tests/test_hostile_names.c): the
# process names itself, and a function and its file are named, with ESC
# sequences (clear the screen, set the title, ring), C1 controls (U+009B
# is a one-character CSI) and bidi overrides and isolates.  Next to them,
# names in other scripts, which must come out whole.
EVIL = "\x1b[2J\x1b]2;PWN\x07\u009b31m\u202eevil\u2066x\u2069"

# 14 bytes of the 15 a name holds: OSC title, C1 CSI as UTF-8, RLO, a raw CSI byte
with open("/proc/self/comm", "wb") as f:
    f.write(b"\x1b]2;PWN\x07\xc2\x9b\xe2\x80\xae\x9b")


def spin():
    i = 0
    while i < 20000:
        i += 1


ns = {"spin": spin}
exec(compile("def hostile():\n    spin()\n", EVIL + "file.py", "exec"), ns)
hostile = ns["hostile"]
hostile.__code__ = hostile.__code__.replace(co_name=EVIL + "func", co_qualname=EVIL + "func")


def café_日本():
    hostile()


print("ready", flush=True)
while True:
    café_日本()
