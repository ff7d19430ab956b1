# pyrospy bench target: T threads (default 1), each recursing until its
# stack is DEPTH frames deep, then spinning in a loop whose stack never
# changes.
#     ruby deep.rb DEPTH [THREADS]
# Prints "ready" once every thread spins at the bottom of its recursion.
$depth = (ARGV[0] || 50).to_i
$nthreads = (ARGV[1] || 1).to_i
$lock = Mutex.new
$arrived = 0

def spin
  $lock.synchronize do
    $arrived += 1
    if $arrived == $nthreads
      puts "ready"
      $stdout.flush
    end
  end
  i = 0
  while true
    i += 1
  end
end

def rec(n)
  if n <= 1
    spin
  else
    rec(n - 1)
  end
end

# frames above rec: <main> (1); a thread has its block (1)
if $nthreads == 1
  rec([1, $depth - 2].max)
else
  threads = Array.new($nthreads) { Thread.new { rec([1, $depth - 3].max) } }
  threads.each(&:join)
end
