# A worker that sets the process-wide tags (Pyrospy.tags=, kept in the main
# thread's fiber-local variables) to phase=a, runs in_a for 1 ms, sets
# phase=b and runs in_b for 1 ms, over and over; the main thread waits.
# A stack with in_a under phase=b (or in_b under phase=a) pairs the tags
# of one moment with the frames of another.
require "pyrospy"

def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def in_a(stop)
  nil while now < stop
end

def in_b(stop)
  nil while now < stop
end

def worker
  loop do
    Pyrospy.tags = { "phase" => "a" }
    in_a(now + 0.001)
    Pyrospy.tags = { "phase" => "b" }
    in_b(now + 0.001)
  end
end

t = Thread.new { worker }
sleep 0.1
puts "ready"
$stdout.flush
t.join
