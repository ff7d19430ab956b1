# Threads start and end all the time: 8 at once, each living ~1 ms in
# short_job(); the main thread keeps starting them in churn().
import threading


def work(n):
    i = 0
    while i < n:
        i += 1


def short_job():
    work(20000)


def churn():
    while True:
        threads = [threading.Thread(target=short_job) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


print("ready", flush=True)
churn()
