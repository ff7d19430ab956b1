# pyrospy bench target: N threads (default 16) each waiting 20 frames deep
# in Queue#pop, the main thread spinning in a loop whose stack never changes.
#     ruby manythreads.rb [N]
# Prints "ready" once every thread is parked at the bottom of its recursion.
N = (ARGV[0] || 16).to_i
$q = Queue.new
$lock = Mutex.new
$arrived = 0

def park
  $lock.synchronize { $arrived += 1 }
  $q.pop
end

def wait_at(depth)
  return wait_at(depth - 1) if depth > 0

  park
end

# the thread's block (1), wait_at (17), park, Queue#pop (2): 20
N.times { Thread.new { wait_at(16) } }
sleep 0.01 while $lock.synchronize { $arrived } < N
sleep 0.2 # the last ones from park into the queue's wait
puts "ready"
$stdout.flush

def spin
  i = 0
  while true
    i += 1
  end
end

spin
