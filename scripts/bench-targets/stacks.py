# pyrospy bench (section 11): a folded profile of N distinct stacks, as a
# large Python service would give: a few hundred modules (app code,
# site-packages, the standard library), a few thousand functions, stacks
# 10 to 60 deep that share their outer frames (the request loop, the
# framework) and part where a rarer call was taken, each seen 1 to 50
# times.  Deterministic:
# the same N and seed give the same file.
#
#   python3 stacks.py N SEED [wide] > profile.folded
#
# wide: the worst case: stacks 60 to 120 deep, names and paths about
# five times as long (long generated class and method names, deep paths).
import random
import sys

n, seed = int(sys.argv[1]), int(sys.argv[2])
wide = len(sys.argv) > 3 and sys.argv[3] == "wide"
rnd = random.Random(seed)
WORDS = ("order cart price user session cache query render template route handler "
         "payment invoice stock item search index token auth login account report "
         "export import parse encode decode fetch store load save update delete "
         "create validate serialize schedule retry queue worker batch stream chunk "
         "buffer socket request response middleware signal event hook plugin").split()
ROOTS = ["/srv/app/shop", "/usr/lib/python3.11", "/usr/lib/python3/dist-packages",
         "/opt/venv/lib/python3.11/site-packages"]
PKGS = ["flask", "werkzeug", "jinja2", "sqlalchemy", "requests", "urllib3", "json",
        "email", "asyncio", "logging", "decimal", "pydantic", "celery", "redis"]


def name(k):
    parts = [rnd.choice(WORDS) for _ in range(k)]
    return "_".join(parts)


def module():
    root = rnd.choice(ROOTS)
    depth = rnd.randint(1, 3) * (4 if wide else 1)
    dirs = [rnd.choice(PKGS)] + [name(1) for _ in range(depth)]
    return root + "/" + "/".join(dirs) + ".py"


modules = [module() for _ in range(300)]
funcs = []
for _ in range(4000):
    cls = name(rnd.randint(1, 2)).title().replace("_", "")
    meth = name(rnd.randint(1, 3) * (5 if wide else 1))
    fn = (cls + "." + meth) if rnd.random() < 0.6 else meth
    funcs.append("%s (%s:%d)" % (fn, rnd.choice(modules), rnd.randint(1, 2000)))
# a call graph: each function calls a few others, some far more often
# than the rest (a Zipf-like choice), as code does; a stack is a walk
# down it from an entry point, stopped at its depth: stacks share their
# outer frames and part where a rarer call was taken
callees = [[rnd.randrange(len(funcs)) for _ in range(rnd.randint(2, 6))] for _ in funcs]
entries = [rnd.randrange(len(funcs)) for _ in range(20)]
weights = [1.0 / (i + 1) ** 2 for i in range(6)]
lo, hi = (60, 120) if wide else (10, 60)
seen = set()
out = sys.stdout
while len(seen) < n:
    f = rnd.choice(entries)
    stack = [f]
    depth = rnd.randint(lo, hi)
    while len(stack) < depth:
        c = callees[f]
        f = rnd.choices(c, weights[:len(c)])[0]
        stack.append(f)
    key = tuple(stack)
    if key in seen:
        continue
    seen.add(key)
    out.write("%s %d\n" % (";".join(funcs[x] for x in stack), rnd.randint(1, 50)))
