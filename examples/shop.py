# A small program to profile: a shop that prices baskets, where
# checkout() costs three times what report() does.
import threading


class Shop:
    def __init__(self):
        self.prices = {i: i * 1.5 for i in range(1000)}

    def price(self, basket):
        total = 0.0
        for item in basket:
            total += self.prices[item % 1000]
        return total

    def checkout(self):
        return self.price(range(30000))

    def report(self):
        return self.price(range(10000))


def customer(shop, stop):
    while not stop.is_set():
        shop.checkout()
        shop.report()


if __name__ == "__main__":
    shop, stop = Shop(), threading.Event()
    worker = threading.Thread(target=customer, args=(shop, stop), name="customer")
    worker.start()
    try:
        stop.wait(5)
    finally:
        stop.set()
        worker.join()
