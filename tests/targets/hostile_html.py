# Names that would be markup in an html report (tests/test_report_html.c):
# functions, a file and a thread named to end the data's script element,
# add an element with an event handler, break a JavaScript string
# (U+2028, U+2029), turn the text around (RTL marks) or fill the screen
# (5000 characters).  Each handler would set window.pwned.
import threading

NAMES = [
    "</script><script>window.pwned=1</script>",
    "<img src=x onerror=\"window.pwned=2\">",
    "line\u2028sep\u2029end'\"\\",
    "\u200frtl\u200f mark",
    "L" * 5000,
]


def spin():
    i = 0
    while i < 20000:
        i += 1


def make(name, inner):
    ns = {"inner": inner}
    exec(compile("def f():\n    inner()\n", "</script><svg onload=window.pwned=3>.py", "exec"), ns)
    f = ns["f"]
    f.__code__ = f.__code__.replace(co_name=name, co_qualname=name)
    return f


fn = spin
for n in NAMES:
    fn = make(n, fn)
threading.current_thread().name = "</script><img src=x onerror=window.pwned=4>"
print("ready", flush=True)
while True:
    fn()
