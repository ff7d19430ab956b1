# An application the agent finds (tests/test_agent.c): busy under the tag
# app_tag=ARGV[1], for as long as it runs.
import sys

import pyrospy


def work():
    i = 0
    while i < 20000:
        i += 1


with pyrospy.tag_wrapper({"app_tag": sys.argv[1]}):
    print("ready", flush=True)
    while True:
        work()
