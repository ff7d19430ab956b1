# A frame that sleeps holding known locals.  The ready line says what the
# program itself makes of each, as dump --locals should show it:
#   ready<TAB>name-hex:type-hex:repr-hex<TAB>...
# repr() of the value, with the bounds pyrospy(1) documents: str and bytes
# cut at 64 characters (then "..."), ints past 100 digits as their number
# of digits, containers as their length, other objects as <Type object>.
import sys
import time


class Widget:
    pass


class Name(str):
    pass


def shown(v):
    if type(v) in (str, bytes):
        return repr(v[:64]) + ("..." if len(v) > 64 else "")
    if type(v) is int:
        digits = len(str(abs(v)))
        return repr(v) if digits <= 100 else "<int, %d digits>" % digits
    if type(v) in (list, tuple, dict, set, frozenset):
        return "<%s, len %d>" % (type(v).__name__, len(v))
    if type(v) in (type(None), bool, float):
        return repr(v)
    return "<%s object>" % type(v).__name__


def hold(arg_one, arg_two="default"):
    none = None
    yes = True
    no = False
    small = 42
    negative = -7
    zero = 0
    big = 2 ** 100 + 12345
    negbig = -(10 ** 40) - 1
    huge = 10 ** 700
    pi = 3.14159
    tiny = 1e-300
    large = 1e22
    whole = 100000.0
    third = 1 / 3
    negzero = -0.0
    text = "h\u00e9llo 'world'\n\u2603\t\\"
    quoted = 'say "hi" and \'bye\''
    long_text = "x" * 100 + "y"
    raw = b"\x00\x01abc'\xff\x7f"
    items = [1, 2, 3]
    pair = (1, 2)
    mapping = {"a": 1, "b": 2}
    uniq = {1, 2, 3, 4}
    frozen = frozenset([1])
    obj = Widget()
    # what must reach a terminal escaped: an escape, a bidi override, a
    # lone surrogate, a C1 control
    hostile = "\x1b[31m\u202e\ud800\x85end"
    subclass = Name("not shown as a str")
    ünïcöde = 1.5
    fields = ["ready"]
    for name, value in list(locals().items()):
        if name == "fields":
            continue
        fields.append("%s:%s:%s" % (name.encode().hex(), type(value).__name__.encode().hex(),
                                    shown(value).encode().hex()))
    print("\t".join(fields), flush=True)
    while True:
        time.sleep(3600)


if hasattr(sys, "set_int_max_str_digits"):
    sys.set_int_max_str_digits(0)
hold(12, arg_two=b"kw")
