# Three busy threads, each for good inside its own vehicle tag.
require "pyrospy"

def work
  i = 0
  loop { i += 1 }
end

def car
  Pyrospy.tag_wrapper({ "vehicle" => "car" }) { work }
end

def bike
  Pyrospy.tag_wrapper({ "vehicle" => "bike" }) { work }
end

def scooter
  Pyrospy.tag_wrapper({ "vehicle" => "scooter" }) { work }
end

%i[car bike scooter].each { |m| Thread.new { send(m) } }
sleep 0.2
puts "ready"
$stdout.flush
sleep
