# SPDX-License-Identifier: MIT
# A process whose children have maps pyrospy must not keep: six with 60000
# maps of one 3984-character path (243 MB of /proc/PID/maps each), five
# with 3900 maps of as many distinct such paths (15.5 MB of paths each), and
# one busy child, in normal_work(), to be sampled all the while.  Prints
# "ready" once every child has mapped its files.
#
#   longmaps_family.py DIR
import os
import subprocess
import sys
import threading

here = os.path.dirname(os.path.abspath(__file__))


def normal_work():
    i = 0
    while True:
        i += 1


def main():
    base = sys.argv[1]
    kids = []
    for i in range(6):
        kids.append((os.path.join(base, "shared%d" % i), 60000, 1))
    for i in range(5):
        kids.append((os.path.join(base, "distinct%d" % i), 3900, 3900))
    procs = [subprocess.Popen([sys.executable, os.path.join(here, "longmaps.py"), d, str(n),
                               str(k)], stdout=subprocess.PIPE) for d, n, k in kids]
    for p in procs:
        if p.stdout.readline().strip() != b"ready":
            sys.exit("a child did not map its files")
    if os.fork() == 0:
        normal_work()
    print("ready", flush=True)
    threading.Event().wait()


main()
