# pyrospy bench target: an app of 8 busy threads (the agent's fleet rows,
# section 13), each in a loop of its own, the GVL passed between them as
# CRuby does.  Prints "ready" once all run.
#     ruby busy8.rb
def spin(n)
  i = 0
  loop { i += n }
end

threads = (0...8).map { |k| Thread.new { spin(k) } }
puts "ready"
$stdout.flush
threads.each(&:join)
