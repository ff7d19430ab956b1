import sys
print("ready %d.%d.%d" % sys.version_info[:3], flush=True)
sys.stdin.read() if False else __import__("time").sleep(3600)
