import sys
import time

print("ready %d.%d.%d" % sys.version_info[:3], flush=True)
time.sleep(3600)
