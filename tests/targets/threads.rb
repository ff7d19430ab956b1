# Four busy threads, one blocked in Queue#pop, the main thread in join.
def spin
  i = 0
  i += 1 while i < 100_000
end

def busy0
  loop { spin }
end

def busy1
  loop { spin }
end

def busy2
  loop { spin }
end

def busy3
  loop { spin }
end

q = Queue.new
waiter = Thread.new { q.pop }
busy = [:busy0, :busy1, :busy2, :busy3].map do |m|
  Thread.new { send(m) }
end
# say "ready" once the main thread is surely in join, then stay, asleep,
# so that the number of threads does not change
Thread.new do
  sleep 0.5
  puts "ready"
  $stdout.flush
  sleep
end
busy.each(&:join)
waiter.join
