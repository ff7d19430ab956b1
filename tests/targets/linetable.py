# Print every code object's line table and CPython's own offset -> line
# mapping, for the line-table decoder tests.
#   C <firstlineno> <table hex> <kind>
#   O <byte offset> <line or -1>
import dis
import sys
import types

KIND = "lnotab" if sys.version_info < (3, 10) else \
    "linetable" if sys.version_info < (3, 11) else "locations"


def walk(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from walk(c)


def emit(code):
    table = code.co_lnotab if KIND == "lnotab" else code.co_linetable
    print("C %d %s %s" % (code.co_firstlineno, table.hex() or "-", KIND))
    if KIND == "lnotab":
        starts = list(dis.findlinestarts(code))
        for off in range(0, len(code.co_code), 2):
            line = code.co_firstlineno
            for s, ln in starts:
                if s <= off:
                    line = ln
            print("O %d %d" % (off, line))
    else:
        for start, end, line in code.co_lines():
            for off in range(start, end, 2):
                print("O %d %d" % (off, -1 if line is None else line))


for name in ("json/decoder.py", "textwrap.py", "argparse.py", "string.py"):
    path = None
    for d in sys.path:
        try:
            with open(d + "/" + name) as f:
                src = f.read()
            path = d + "/" + name
            break
        except OSError:
            pass
    if path:
        for c in walk(compile(src, path, "exec")):
            emit(c)
