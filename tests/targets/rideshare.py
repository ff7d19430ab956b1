# Rideshare: one thread orders a car (3 units of work), a bike (2) and a
# scooter (1) in turn, each inside its own tag_wrapper.  A unit takes tens of
# milliseconds, so a round spans a dozen or more 100 Hz ticks: the shares come
# out within about 1 % (with a round near one tick long they spread over +-5 %).
import pyrospy


def work(n):
    i = 0
    while i < n:
        i += 1


def order_car():
    work(1500000)


def order_bike():
    work(1000000)


def order_scooter():
    work(500000)


pyrospy.set_tags({"region": "eu"})
print("ready", flush=True)
while True:
    with pyrospy.tag_wrapper({"vehicle": "car"}):
        order_car()
    with pyrospy.tag_wrapper({"vehicle": "bike"}):
        order_bike()
    with pyrospy.tag_wrapper({"vehicle": "scooter"}):
        order_scooter()
