# A valid function whose name is 5000 characters long, spinning.
name = "f" * 4990 + "_long_name"
exec("def %s():\n    while True:\n        pass\n" % name)
print("ready", flush=True)
globals()[name]()
