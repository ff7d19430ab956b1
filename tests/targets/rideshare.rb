# Rideshare: one thread orders a car (3 units of work), a bike (2) and a
# scooter (1) in turn, each inside its own tag_wrapper.  A unit is 30 ms of
# a busy loop, timed (a JIT that compiles the loop must not shorten it), so
# a round spans a dozen or more 100 Hz ticks: the shares come out within
# about 1 % (with a round near one tick long they spread over +-5 %).
require "pyrospy"

def work(units)
  stop = Process.clock_gettime(Process::CLOCK_MONOTONIC) + units * 0.03
  i = 0
  while true
    i += 1
    break if i % 10_000 == 0 && Process.clock_gettime(Process::CLOCK_MONOTONIC) >= stop
  end
end

def order_car
  work(3)
end

def order_bike
  work(2)
end

def order_scooter
  work(1)
end

Pyrospy.tags = { "region" => "eu" }
puts "ready"
$stdout.flush
loop do
  Pyrospy.tag_wrapper({ "vehicle" => "car" }) { order_car }
  Pyrospy.tag_wrapper({ "vehicle" => "bike" }) { order_bike }
  Pyrospy.tag_wrapper({ "vehicle" => "scooter" }) { order_scooter }
end
