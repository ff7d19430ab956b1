# N threads (ARGV[0], default 200) each wait 20 calls deep in Queue#pop;
# says "ready" once every one of them waits, then spins on the main thread.
n = (ARGV[0] || 200).to_i

def deep(d, q)
  return q.pop if d == 0
  deep(d - 1, q)
end

qs = Array.new(n) { Queue.new }
qs.each { |q| Thread.new { deep(20, q) } }
sleep 0.01 until qs.all? { |q| q.num_waiting == 1 }
$stdout.puts "ready"
$stdout.flush
x = 0
loop { x += 1 }
