# A Python program that never imports asyncio (dump --tasks says so).
import time

print("ready", flush=True)
while True:
    time.sleep(3600)
