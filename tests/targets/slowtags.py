# The tag helper takes 100 ms to import: pyrospy sees it in sys.modules
# before its body has run, and must look for it again.  Then every thread
# works under a tag for ever (under pyrospy exec, which attaches first).
import importlib.abc
import importlib.machinery
import sys
import threading
import time


class SlowLoader(importlib.abc.Loader):
    def __init__(self, real):
        self.real = real

    def create_module(self, spec):
        return self.real.create_module(spec)

    def exec_module(self, module):
        time.sleep(0.1)          # in sys.modules, body not run yet
        self.real.exec_module(module)


class SlowFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "pyrospy":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec:
            spec.loader = SlowLoader(spec.loader)
        return spec


sys.meta_path.insert(0, SlowFinder())
import pyrospy  # noqa: E402


def spin(n):
    with pyrospy.tag_wrapper({"worker": str(n)}):
        while True:
            pass


for n in range(2):
    threading.Thread(target=spin, args=(n,), daemon=True).start()
print("ready", flush=True)
spin(2)
