# Rideshare: one thread orders a car (3 units of work), a bike (2) and a
# scooter (1) in turn, each inside its own tag_wrapper.  A unit takes tens of
# milliseconds, so a round spans a dozen or more 100 Hz ticks: the shares come
# out within about 1 % (with a round near one tick long they spread over +-5 %).
require "pyrospy"

def work(n)
  i = 0
  while i < n
    i += 1
  end
end

def order_car
  work(3_000_000)
end

def order_bike
  work(2_000_000)
end

def order_scooter
  work(1_000_000)
end

Pyrospy.tags = { "region" => "eu" }
puts "ready"
$stdout.flush
loop do
  Pyrospy.tag_wrapper({ "vehicle" => "car" }) { order_car }
  Pyrospy.tag_wrapper({ "vehicle" => "bike" }) { order_bike }
  Pyrospy.tag_wrapper({ "vehicle" => "scooter" }) { order_scooter }
end
